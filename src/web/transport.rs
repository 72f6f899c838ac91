//! HTTP over the browser's `fetch`. The timeout is the browser's own `AbortSignal.timeout()`; a
//! failed fetch is a timeout exactly when that signal has aborted.

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::core::ports::{HttpRequest, HttpResponse, LocalBoxFuture, Transport, TransportError};

// One call of `fetch` in JS (src/web/browser.js): a request builder in the module (gloo-net's,
// with the `http` crate's methods) cost about 3.6 KB of the package for the two headers JS sets
// directly. Resolves `[status, body text]`; rejects with `null` on our timeout.
#[wasm_bindgen(module = "/src/web/browser.js")]
extern "C" {
    #[wasm_bindgen(js_name = sbFetch)]
    fn fetch(
        method: &str,
        url: &str,
        bearer: Option<String>,
        body: Option<String>,
        timeout_ms: u32,
        nonce_url: Option<String>,
        route: Option<String>,
        keyed: bool,
    ) -> js_sys::Promise;
}

pub struct FetchTransport {
    pub timeout_ms: u32,
}

impl Transport for FetchTransport {
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        let (nonce_url, route) = request.prove.unzip();
        let answer = JsFuture::from(fetch(
            request.method.as_str(),
            &request.url,
            request.bearer,
            request.body,
            self.timeout_ms,
            nonce_url,
            route,
            request.keyed,
        ));
        Box::pin(async move {
            match answer.await {
                Ok(pair) => {
                    let pair = js_sys::Array::from(&pair);
                    let status = pair.get(0).as_f64().unwrap_or(0.0) as u16;
                    let retry_after = pair.get(2).as_f64().unwrap_or(0.0) as u32;
                    Ok(HttpResponse { status, body: pair.get(1).as_string().unwrap_or_default(), retry_after })
                }
                Err(e) if e.is_null() => Err(TransportError::Timeout),
                Err(e) => Err(TransportError::Network(crate::web::describe(&e))),
            }
        })
    }
}
