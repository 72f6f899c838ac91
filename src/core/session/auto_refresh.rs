//! Proactive refresh (`autoRefresh`): inside the one-minute expiry margin the session refreshes
//! without being asked, through the same flight and cross-tab lock as `getToken()`, so one tab
//! refreshes and the others adopt its token. The platform calls [`Session::auto_refresh_step`]
//! from a timer and on `visibilitychange` and `online` (long timers are throttled in background
//! tabs, so they are re-checked rather than trusted). Offline there is no retry storm: nothing
//! is scheduled until the device is back online, which tries once.

use std::cell::Cell;

use super::{Phase, RefreshOutcome, Session};
use crate::core::time::delay_until;
use crate::core::token::EXPIRY_MARGIN_MS;

/// The longest single timer: a check at least this often survives clock changes and sleep.
pub const MAX_TIMER_MS: u32 = 10 * 60_000;
/// No two proactive refreshes closer than this (a token shorter-lived than the margin would
/// otherwise be refreshed in a loop).
const MIN_SPACING_MS: i64 = 30_000;
const RETRY_BASE_MS: i64 = 30_000;
const RETRY_MAX_MS: i64 = 5 * 60_000;

#[derive(Default)]
pub(super) struct AutoState {
    last_run_at: Cell<Option<i64>>,
    failures: Cell<u32>,
    retry_at: Cell<Option<i64>>,
}

impl Session {
    /// Milliseconds until the next proactive refresh is due (0: now); `None` when nothing is to
    /// be watched (no session, the option off, a sign-out running).
    pub fn auto_refresh_delay(&self) -> Option<u32> {
        if !self.0.config.auto_refresh || self.0.phase.get() != Phase::Idle {
            return None;
        }
        let (_, claims) = self.stored_token()?;
        let now = self.now();
        let due = self.expires_at_auth(&claims).map_or(now, |at| at.saturating_sub(EXPIRY_MARGIN_MS));
        let spaced = self.0.auto.last_run_at.get().map_or(i64::MIN, |t| t.saturating_add(MIN_SPACING_MS));
        let not_before = due.max(spaced).max(self.0.auto.retry_at.get().unwrap_or(i64::MIN));
        Some(delay_until(not_before, now, MAX_TIMER_MS))
    }

    /// Refreshes when due (and `online`); answers when to look again (see `auto_refresh_delay`).
    pub async fn auto_refresh_step(&self, online: bool) -> Option<u32> {
        let delay = self.auto_refresh_delay()?;
        if delay > 0 {
            return Some(delay);
        }
        if !online {
            return None;
        }
        let now = self.now();
        self.0.auto.last_run_at.set(Some(now));
        match self.refresh().await {
            RefreshOutcome::Refreshed(_) => {
                self.0.auto.failures.set(0);
                self.0.auto.retry_at.set(None);
            }
            RefreshOutcome::Transient(_) => {
                let failures = self.0.auto.failures.get().saturating_add(1);
                self.0.auto.failures.set(failures);
                let backoff = RETRY_BASE_MS.saturating_mul(1 << failures.min(4)).min(RETRY_MAX_MS);
                self.0.auto.retry_at.set(Some(now.saturating_add(backoff)));
            }
            RefreshOutcome::Rejected(..) => return None,
        }
        self.auto_refresh_delay()
    }
}
