//! The device's key: WebCrypto and IndexedDB, in src/web/browser.js (its proofs are the
//! transport's: `HttpRequest::prove`).

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::core::ports::{DeviceKey, LocalBoxFuture};

#[wasm_bindgen(module = "/src/web/browser.js")]
extern "C" {
    #[wasm_bindgen(js_name = sbKey)]
    fn key() -> js_sys::Promise;
}

pub struct BrowserKey;

impl DeviceKey for BrowserKey {
    fn public_key(&self) -> LocalBoxFuture<'static, Option<String>> {
        let answer = JsFuture::from(key());
        Box::pin(async move { answer.await.ok()?.as_string() })
    }
}
