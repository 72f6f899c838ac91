//! The tenants' sync sockets (`GET /realtime`, routes/sync_socket.rs): which are open for which
//! tenant, so an invalidation can close them
//! (`CLOSE_INVALIDATED`) and every device meets the invalidation at its reconnect handshake.
//! A tenant with many devices is closed in waves ("re-bootstrap peak; consider
//! batches for tenants with many devices"), so they do not all reconnect in the same instant.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

/// What an invalidation tells the tenant's sockets: that it happened (`seq` moves) and how many
/// sockets were open then, which sets the number of waves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Invalidated {
    pub seq: u64,
    pub open: u64,
}

#[derive(Debug, Default)]
struct Tenant {
    invalidations: Option<watch::Sender<Invalidated>>,
    /// Numbers the tenant's sockets as they subscribe; a socket's number picks its wave.
    next_ticket: u64,
}

#[derive(Debug, Default)]
pub struct TenantSockets {
    tenants: Mutex<BTreeMap<String, Tenant>>,
}

/// How a tenant's sockets are closed: about `size` sockets a wave, `spacing` between waves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waves {
    pub size: u64,
    pub spacing: Duration,
}

/// One socket's place in its tenant: the invalidations it watches and its number.
pub struct Subscription {
    pub invalidations: watch::Receiver<Invalidated>,
    ticket: u64,
}

impl Subscription {
    /// How long this socket waits before it closes after `invalidated`: the sockets open then
    /// are split into waves of about `waves.size`, and the socket's number picks its wave.
    pub fn wave_delay(&self, invalidated: Invalidated, waves: Waves) -> Duration {
        wave_delay(self.ticket, invalidated.open, waves)
    }
}

fn wave_delay(ticket: u64, open: u64, waves: Waves) -> Duration {
    let count = open.div_ceil(waves.size.max(1)).max(1);
    let wave = ticket % count;
    waves.spacing.saturating_mul(u32::try_from(wave).unwrap_or(u32::MAX))
}

impl TenantSockets {
    /// Watches `company_id`'s invalidations.
    pub fn subscribe(&self, company_id: &str) -> Subscription {
        let mut tenants = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
        let tenant = tenants.entry(company_id.to_owned()).or_default();
        let sender = tenant.invalidations.get_or_insert_with(|| watch::channel(Invalidated::default()).0);
        let ticket = tenant.next_ticket;
        tenant.next_ticket = tenant.next_ticket.wrapping_add(1);
        Subscription { invalidations: sender.subscribe(), ticket }
    }

    /// Tells every open socket of the tenant to close, each in its wave.
    pub fn close_tenant(&self, company_id: &str) {
        let tenants = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = tenants.get(company_id).and_then(|t| t.invalidations.as_ref()) {
            let open = tx.receiver_count() as u64;
            tx.send_modify(|i| *i = Invalidated { seq: i.seq.wrapping_add(1), open });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_are_spread_over_waves_of_the_configured_size() {
        let waves = Waves { size: 500, spacing: Duration::from_millis(200) };
        assert_eq!(wave_delay(7, 300, waves), Duration::ZERO, "one wave: everyone at once");
        let delays: Vec<Duration> = (0..5_000).map(|t| wave_delay(t, 5_000, waves)).collect();
        assert_eq!(delays.iter().filter(|d| d.is_zero()).count(), 500, "10 waves of 500");
        assert_eq!(delays.iter().max(), Some(&Duration::from_millis(1_800)));
        assert_eq!(
            wave_delay(3, 10, Waves { size: 0, spacing: Duration::from_secs(1) }),
            Duration::from_secs(3),
            "size 0 counts as 1"
        );
    }
}
