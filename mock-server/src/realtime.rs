//! The realtime hub: which sockets are open for which tenant, so an invalidation can close them
//! (`CLOSE_INVALIDATED`) and every device meets the invalidation at its reconnect handshake.

use std::collections::BTreeMap;
use std::sync::Mutex;

use tokio::sync::watch;

#[derive(Debug, Default)]
pub struct Hub {
    /// One channel per tenant; its value counts the tenant's invalidations.
    tenants: Mutex<BTreeMap<String, watch::Sender<u64>>>,
}

impl Hub {
    /// A receiver that changes each time `company_id` is invalidated.
    pub fn subscribe(&self, company_id: &str) -> watch::Receiver<u64> {
        let mut tenants = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
        tenants.entry(company_id.to_owned()).or_insert_with(|| watch::channel(0).0).subscribe()
    }

    /// Tells every open socket of the tenant to close.
    pub fn close_tenant(&self, company_id: &str) {
        let tenants = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = tenants.get(company_id) {
            tx.send_modify(|n| *n += 1);
        }
    }
}
