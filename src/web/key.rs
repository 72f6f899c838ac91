//! The device's key: WebCrypto and IndexedDB, in src/js/browser.js (one call for both uses).

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::core::json;
use crate::core::ports::{DeviceKey, LocalBoxFuture};

#[wasm_bindgen(module = "/src/js/browser.js")]
extern "C" {
    #[wasm_bindgen(js_name = sbKey)]
    fn key(nonce_url: Option<String>, method: &str, path: &str) -> js_sys::Promise;
}

pub struct BrowserKey;

async fn ask(nonce_url: Option<String>, method: &str, path: &str) -> Option<String> {
    JsFuture::from(key(nonce_url, method, path)).await.ok()?.as_string()
}

impl DeviceKey for BrowserKey {
    fn public_key(&self) -> LocalBoxFuture<'static, Option<String>> {
        Box::pin(ask(None, "", ""))
    }

    fn prove(
        &self,
        nonce_url: String,
        method: &'static str,
        path: &'static str,
    ) -> LocalBoxFuture<'static, Option<serde_json::Value>> {
        Box::pin(async move { json::parse(&ask(Some(nonce_url), method, path).await?) })
    }
}
