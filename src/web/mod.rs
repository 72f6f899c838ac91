//! Browser adapters: each implements one port of `core::ports` and decides nothing.

pub mod codec;
pub mod idb;
pub mod key;
pub mod lock;
pub mod socket;
pub mod storage;
pub mod tabs;
pub mod transport;

use crate::core::ports::{Clock, Reporter};

/// Words for a thrown JS value: an `Error`'s name and message, a string, or its JSON.
pub fn describe(value: &wasm_bindgen::JsValue) -> String {
    use wasm_bindgen::JsCast;
    if let Some(e) = value.dyn_ref::<js_sys::Error>() {
        let (name, message) = (String::from(e.name()), String::from(e.message()));
        return [name.as_str(), ": ", message.as_str()].concat();
    }
    if let Some(s) = value.as_string() {
        return s;
    }
    js_sys::JSON::stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| "a non-Error value was thrown".into())
}

pub struct BrowserClock;

impl Clock for BrowserClock {
    fn now_ms(&self) -> i64 {
        js_sys::Date::now() as i64
    }

    fn sleep(&self, ms: u32) -> crate::core::ports::LocalBoxFuture<'static, ()> {
        // Dropping a TimeoutFuture clears its timer (a hook that settled in time leaves none).
        Box::pin(gloo_timers::future::TimeoutFuture::new(ms))
    }
}

pub struct ConsoleReporter;

impl Reporter for ConsoleReporter {
    fn error(&self, message: &str) {
        web_sys::console::error_1(&message.into());
    }
}

use std::rc::Rc;

use crate::core::sync_session::SyncPorts;

/// The browser's ports for the realtime session.
pub fn sync_ports() -> SyncPorts {
    SyncPorts {
        connect: Rc::new(socket::connect),
        catalog_exists: Rc::new(|name: &str| Box::pin(idb::exists(name.to_owned()))),
        catalog_write: Rc::new(|name: &str, docs| Box::pin(idb::write_catalog(name.to_owned(), docs))),
        sleep: Rc::new(|ms| BrowserClock.sleep(ms)),
        random: Rc::new(js_sys::Math::random),
        spawn: Rc::new(wasm_bindgen_futures::spawn_local),
    }
}
