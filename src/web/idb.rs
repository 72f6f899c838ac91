//! The device's local databases in IndexedDB: destroying one deletes the IndexedDB database of
//! that name and PouchDB's `_pouch_<name>`.

use gloo_timers::future::TimeoutFuture;
use futures_util::future::{select, Either};
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::core::ports::{LocalBoxFuture, LocalDatabases};
use crate::js::errors::describe;

/// A deletion blocked this long by a connection that will not close is reported as failed.
const BLOCKED_LIMIT_MS: u32 = 10_000;

pub struct IndexedDbDatabases;

pub fn factory() -> Result<web_sys::IdbFactory, String> {
    let window = web_sys::window().ok_or("no window: IndexedDB needs a page")?;
    window.indexed_db().map_err(|e| describe(&e))?.ok_or_else(|| "IndexedDB is not available".into())
}

/// Resolves when the request succeeds, rejects on its error event.
pub fn request_done(request: &web_sys::IdbRequest) -> JsFuture {
    let promise = Promise::new(&mut |resolve, reject| {
        let ok = Closure::once_into_js(move |_e: web_sys::Event| {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        });
        let req = request.clone();
        let err = Closure::once_into_js(move |_e: web_sys::Event| {
            let error = req.error().ok().flatten().map(JsValue::from).unwrap_or_else(|| JsValue::from_str("IndexedDB request failed"));
            let _ = reject.call1(&JsValue::UNDEFINED, &error);
        });
        request.set_onsuccess(Some(ok.unchecked_ref()));
        request.set_onerror(Some(err.unchecked_ref()));
    });
    JsFuture::from(promise)
}

async fn delete(name: String) -> Result<(), String> {
    let request = factory()?.delete_database(&name).map_err(|e| describe(&e))?;
    let done = request_done(&request);
    match select(done, TimeoutFuture::new(BLOCKED_LIMIT_MS)).await {
        Either::Left((result, _)) => result.map(|_| ()).map_err(|e| describe(&e)),
        Either::Right(_) => Err(format!("deleting \"{name}\" is blocked by a connection that stays open")),
    }
}

impl LocalDatabases for IndexedDbDatabases {
    fn destroy(&self, name: &str) -> LocalBoxFuture<'static, Result<(), String>> {
        let name = name.to_owned();
        Box::pin(async move {
            delete(name.clone()).await?;
            delete(format!("_pouch_{name}")).await
        })
    }
}
