//! `localStorage` through gloo-storage. Values are raw strings (a JWT is not JSON), so the raw
//! `web_sys::Storage` handle is used; the core parses.

use gloo_storage::{LocalStorage, Storage as _};

use crate::core::ports::{Storage, StorageError};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/web/browser.js")]
extern "C" {
    /// Tells the package's read cache (its entry module) that its snapshots are stale: storage
    /// was written here, or the session's phase changed. Other tabs' writes arrive as `storage`
    /// events, which browser.js hears itself.
    #[wasm_bindgen(js_name = sbReadsChanged)]
    fn reads_changed();

    /// Every key of `localStorage`, as a JSON list.
    #[wasm_bindgen(js_name = sbStorageKeys)]
    fn storage_keys() -> String;
}

pub struct BrowserStorage(web_sys::Storage);

impl BrowserStorage {
    /// Fails where the page has no `localStorage` (a worker, or storage disabled).
    pub fn open() -> Result<Self, StorageError> {
        let window = web_sys::window().ok_or_else(|| StorageError("no window: localStorage needs a page".into()))?;
        // gloo's raw() throws where storage is unavailable; ask first so that becomes an error.
        match window.local_storage() {
            Ok(Some(_)) => Ok(BrowserStorage(LocalStorage::raw())),
            _ => Err(StorageError("localStorage is not available in this page".into())),
        }
    }
}

impl Storage for BrowserStorage {
    fn get(&self, key: &str) -> Option<String> {
        self.0.get_item(key).ok().flatten()
    }

    fn set(&self, key: &str, value: &str) -> Result<(), StorageError> {
        reads_changed();
        self.0.set_item(key, value).map_err(|e| StorageError(super::describe(&e)))
    }

    fn remove(&self, key: &str) {
        reads_changed();
        // Removal cannot meaningfully fail; a storage that refuses it has nothing to remove.
        let _ = self.0.remove_item(key);
    }

    fn keys(&self) -> Vec<String> {
        crate::core::json::parse(&storage_keys()).and_then(|v| crate::core::json::string_list(&v)).unwrap_or_default()
    }

    fn reads_changed(&self) {
        reads_changed();
    }
}
