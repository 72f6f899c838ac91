//! The server clock: system time plus an offset that tests move (`POST /__mock/clock`).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub const DAY_MS: i64 = 24 * 3600 * 1000;

#[derive(Debug, Default)]
pub struct Clock {
    offset_ms: AtomicI64,
}

fn system_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl Clock {
    pub fn now_ms(&self) -> i64 {
        system_ms() + self.offset_ms.load(Ordering::SeqCst)
    }

    pub fn now_secs(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }

    /// Moves the clock so that now is `at_ms`.
    pub fn set(&self, at_ms: i64) {
        self.offset_ms.store(at_ms - system_ms(), Ordering::SeqCst);
    }

    pub fn advance(&self, ms: i64) {
        self.offset_ms.fetch_add(ms, Ordering::SeqCst);
    }

    pub fn reset(&self) {
        self.offset_ms.store(0, Ordering::SeqCst);
    }
}
