//! The refresh lock where the browser has no Web Locks (older engines, insecure contexts): a
//! lease in `localStorage` under `serviceProxyToken-refreshLock` (`<owner> <until ms>`),
//! written, then read back after a pause to confirm no other tab wrote over it. A storage mutex
//! is racy in theory (two tabs may both read it free); the read-back narrows that window, and
//! the refresh's commit guard keeps even a lost race from writing a stale answer. The lease
//! expires on its own, so a tab closed while holding it blocks nobody for long.

use std::rc::Rc;

use super::keys::REFRESH_LOCK;
use super::ports::{Clock, LocalBoxFuture, LockError, LockGuard, RefreshLock, Storage};

/// Pause between writing the lease and reading it back.
const CONFIRM_MS: u32 = 25;
/// Pause between two looks at a lease another tab holds.
const RETRY_MS: u32 = 50;

/// The `localStorage` lease: the refresh lock where Web Locks are missing.
pub struct StorageLease {
    /// Where the lease is written (the origin's `localStorage`).
    pub storage: Rc<dyn Storage>,
    /// The clock that dates the lease and paces the retries.
    pub clock: Rc<dyn Clock>,
    /// Unique to this tab's session object.
    pub owner: String,
}

struct LeaseGuard {
    storage: Rc<dyn Storage>,
    owner: String,
}

impl LockGuard for LeaseGuard {}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if holder(self.storage.get(REFRESH_LOCK).as_deref()).is_some_and(|(owner, _)| owner == self.owner) {
            self.storage.remove(REFRESH_LOCK);
        }
    }
}

/// `(owner, until)` of a stored lease; anything unreadable counts as free.
fn holder(raw: Option<&str>) -> Option<(&str, i64)> {
    let (owner, until) = raw?.split_once(' ')?;
    Some((owner, until.parse().ok()?))
}

impl StorageLease {
    fn write(&self, lease_ms: u32) -> Result<(), LockError> {
        let until = self.clock.now_ms().saturating_add(i64::from(lease_ms));
        self.storage
            .set(REFRESH_LOCK, &[self.owner.as_str(), " ", &until.to_string()].concat())
            .map_err(|e| LockError::Unavailable(e.0))
    }

    fn guard(&self) -> Box<dyn LockGuard> {
        Box::new(LeaseGuard { storage: self.storage.clone(), owner: self.owner.clone() })
    }

    fn mine(&self) -> bool {
        holder(self.storage.get(REFRESH_LOCK).as_deref()).is_some_and(|(owner, _)| owner == self.owner)
    }
}

impl RefreshLock for StorageLease {
    fn acquire(&self, wait_ms: u32) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        let me = StorageLease { storage: self.storage.clone(), clock: self.clock.clone(), owner: self.owner.clone() };
        Box::pin(async move {
            // Counted rather than timed, so a clock that stands still cannot wait forever.
            for _ in 0..=(wait_ms / (RETRY_MS + CONFIRM_MS)) {
                let free =
                    holder(me.storage.get(REFRESH_LOCK).as_deref()).is_none_or(|(_, until)| until <= me.clock.now_ms());
                if free {
                    me.write(wait_ms)?;
                    me.clock.sleep(CONFIRM_MS).await;
                    if me.mine() {
                        return Ok(me.guard());
                    }
                }
                me.clock.sleep(RETRY_MS).await;
            }
            Err(LockError::TimedOut)
        })
    }

    fn steal(&self) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        let result = self.write(60_000).map(|()| self.guard());
        Box::pin(async move { result })
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::core::fakes::{FakeClock, MemoryStorage};
    use futures::executor::block_on;

    fn lease(storage: &Rc<MemoryStorage>, owner: &str) -> StorageLease {
        StorageLease { storage: storage.clone(), clock: Rc::new(FakeClock::at(1_000)), owner: owner.into() }
    }

    #[test]
    fn one_holder_at_a_time_released_on_drop() {
        let storage = Rc::new(MemoryStorage::default());
        let (a, b) = (lease(&storage, "a"), lease(&storage, "b"));
        let held = block_on(a.acquire(10_000)).unwrap();
        assert!(storage.get(REFRESH_LOCK).unwrap().starts_with("a "));
        assert_eq!(block_on(b.acquire(200)).err(), Some(LockError::TimedOut));
        drop(held);
        assert_eq!(storage.get(REFRESH_LOCK), None);
        assert!(block_on(b.acquire(200)).is_ok());
    }

    #[test]
    fn an_expired_or_unreadable_lease_is_free_and_a_steal_always_wins() {
        let storage = Rc::new(MemoryStorage::default());
        storage.set(REFRESH_LOCK, "gone 999").unwrap();
        assert!(block_on(lease(&storage, "a").acquire(100)).is_ok());
        storage.set(REFRESH_LOCK, "garbage").unwrap();
        assert!(block_on(lease(&storage, "b").acquire(100)).is_ok());
        storage.set(REFRESH_LOCK, "c 99999999").unwrap();
        let stolen = block_on(lease(&storage, "d").steal()).unwrap();
        assert!(storage.get(REFRESH_LOCK).unwrap().starts_with("d "));
        drop(stolen);
        assert_eq!(storage.get(REFRESH_LOCK), None);
    }
}
