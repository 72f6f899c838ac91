//! The device's local databases in IndexedDB: destroying one deletes the IndexedDB database of
//! that name and PouchDB's `_pouch_<name>`.

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::core::ports::{LocalBoxFuture, LocalDatabases};
use crate::js::errors::describe;

pub struct IndexedDbDatabases;

pub fn factory() -> Result<web_sys::IdbFactory, String> {
    let window = web_sys::window().ok_or("no window: IndexedDB needs a page")?;
    window.indexed_db().map_err(|e| describe(&e))?.ok_or_else(|| "IndexedDB is not available".into())
}

/// Resolves when the request succeeds; rejects on its error event, and on `blocked` when
/// `fail_when_blocked` (a deletion another tab's open connection holds up).
pub fn request_done(request: &web_sys::IdbRequest, fail_when_blocked: bool) -> JsFuture {
    let promise = Promise::new(&mut |resolve, reject| {
        let ok = Closure::once_into_js(move |_e: web_sys::Event| {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        });
        let req = request.clone();
        let fail = reject.clone();
        let err = Closure::once_into_js(move |_e: web_sys::Event| {
            let error = req.error().ok().flatten().map(JsValue::from).unwrap_or_else(|| "IndexedDB request failed".into());
            let _ = fail.call1(&JsValue::UNDEFINED, &error);
        });
        request.set_onsuccess(Some(ok.unchecked_ref()));
        request.set_onerror(Some(err.unchecked_ref()));
        if fail_when_blocked {
            let blocked = Closure::once_into_js(move |_e: web_sys::Event| {
                let _ = reject.call1(&JsValue::UNDEFINED, &"blocked by a connection another tab keeps open".into());
            });
            request.unchecked_ref::<web_sys::IdbOpenDbRequest>().set_onblocked(Some(blocked.unchecked_ref()));
        }
    });
    JsFuture::from(promise)
}

async fn delete(name: String) -> Result<(), String> {
    let request = factory()?.delete_database(&name).map_err(|e| describe(&e))?;
    request_done(&request, true).await.map(|_| ()).map_err(|e| ["deleting \"", &name, "\": ", &describe(&e)].concat())
}

impl LocalDatabases for IndexedDbDatabases {
    fn destroy(&self, name: &str) -> LocalBoxFuture<'static, Result<(), String>> {
        let name = name.to_owned();
        Box::pin(async move {
            delete(name.clone()).await?;
            delete(["_pouch_", &name].concat()).await
        })
    }
}
