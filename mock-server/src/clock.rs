//! The server clock: system time plus an offset that tests move (`POST /__mock/clock`).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub const DAY_MS: i64 = 24 * 3600 * 1000;

#[derive(Debug, Default)]
pub struct Clock {
    offset_ms: AtomicI64,
    /// The version of the shared offset this clock holds (replicas on PostgreSQL; 0 before any);
    /// held while the offset is replaced, so two versions never cross.
    version: parking_lot::Mutex<i64>,
    /// Held still (`freeze_at`): now is the offset itself. Generated histories compare exact
    /// times with a model's, which a clock that keeps running between two steps would blur.
    frozen: AtomicBool,
}

fn system_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl Clock {
    pub fn now_ms(&self) -> i64 {
        let offset = self.offset_ms.load(Ordering::SeqCst);
        if self.frozen.load(Ordering::SeqCst) {
            offset
        } else {
            system_ms() + offset
        }
    }

    /// Stops the clock at `at_ms` (in-process tests only; moving it again means another call).
    pub fn freeze_at(&self, at_ms: i64) {
        self.offset_ms.store(at_ms, Ordering::SeqCst);
        self.frozen.store(true, Ordering::SeqCst);
    }

    pub fn now_secs(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }

    /// Moves this process's clock (`AppState::move_clock` moves every replica's).
    pub fn set_offset(&self, offset_ms: i64) {
        self.offset_ms.store(offset_ms, Ordering::SeqCst);
    }

    pub fn offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::SeqCst)
    }

    /// The offset every replica shares, at `version`: taken only when newer than the one held,
    /// so a late notification never moves the clock back to an offset already replaced.
    pub fn apply_shared(&self, version: i64, offset_ms: i64) {
        let mut held = self.version.lock();
        if version > *held {
            *held = version;
            self.offset_ms.store(offset_ms, Ordering::SeqCst);
        }
    }

    /// The offset that makes now `at_ms`.
    pub fn offset_for(at_ms: i64) -> i64 {
        at_ms - system_ms()
    }
}
