//! Browser adapters: each implements one port of `core::ports` and decides nothing.

pub mod idb;
pub mod storage;
pub mod transport;

use crate::core::ports::{Clock, Reporter};

pub struct BrowserClock;

impl Clock for BrowserClock {
    fn now_ms(&self) -> i64 {
        js_sys::Date::now() as i64
    }
}

pub struct ConsoleReporter;

impl Reporter for ConsoleReporter {
    fn error(&self, message: &str) {
        web_sys::console::error_1(&message.into());
    }
}
