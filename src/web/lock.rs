//! The cross-tab refresh lock: the Web Locks API where the browser has it (held only while one
//! tab refreshes, released by dropping the guard), else a `localStorage` lease from the core;
//! and its record of the last refresh token spent, in IndexedDB.

use std::rc::Rc;

use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::core::lease::StorageLease;
use crate::core::ports::{LocalBoxFuture, LockError, LockGuard, RefreshLock};

/// One lock name per origin (Web Locks are scoped to the origin already).
const LOCK_NAME: &str = "session-broker:serviceProxyToken-refresh";

// The lock's callback must return a promise that settles when the guard drops, which is plainer
// to say in JS than through closures (src/web/browser.js). `null` when there are no Web Locks.
#[wasm_bindgen(module = "/src/web/browser.js")]
extern "C" {
    #[wasm_bindgen(js_name = sbLockRequest)]
    fn lock_request(name: &str, wait_ms: u32, steal: bool) -> JsValue;
    #[wasm_bindgen(js_name = sbSpent)]
    fn spent_record(tail: Option<&str>) -> Promise;
}

pub struct BrowserLock {
    pub fallback: Rc<StorageLease>,
}

/// Releases the Web Lock when dropped.
struct WebLockGuard(Function);

impl LockGuard for WebLockGuard {}

impl Drop for WebLockGuard {
    fn drop(&mut self) {
        // Resolving the held promise cannot throw.
        let _ = self.0.call0(&JsValue::UNDEFINED);
    }
}

fn request(wait_ms: u32, steal: bool) -> Option<LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>>> {
    let pending = lock_request(LOCK_NAME, wait_ms, steal);
    let promise = pending.dyn_into::<Promise>().ok()?;
    Some(Box::pin(async move {
        match JsFuture::from(promise).await {
            Ok(release) => release
                .dyn_into::<Function>()
                .map(|f| Box::new(WebLockGuard(f)) as Box<dyn LockGuard>)
                .map_err(|_| LockError::Unavailable("the lock granted no release".into())),
            Err(e) if e.as_string().as_deref() == Some("timeout") => Err(LockError::TimedOut),
            Err(e) => {
                Err(LockError::Unavailable(e.as_string().unwrap_or_else(|| "Web Locks refused the request".into())))
            }
        }
    }))
}

impl RefreshLock for BrowserLock {
    fn acquire(&self, wait_ms: u32) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        request(wait_ms, false).unwrap_or_else(|| self.fallback.acquire(wait_ms))
    }

    fn steal(&self) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>> {
        request(0, true).unwrap_or_else(|| self.fallback.steal())
    }

    fn spent(&self, write: Option<&str>) -> LocalBoxFuture<'static, Option<String>> {
        let promise = spent_record(write);
        Box::pin(async move { JsFuture::from(promise).await.ok()?.as_string() })
    }
}
