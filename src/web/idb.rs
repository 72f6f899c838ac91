//! The device's local databases in IndexedDB: destroying one deletes the IndexedDB database of
//! that name and PouchDB's `_pouch_<name>`.

use gloo_events::EventListener;
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::{describe, settled_by};
use crate::core::ports::{LocalBoxFuture, LocalDatabases};

pub struct IndexedDbDatabases;

pub fn factory() -> Result<web_sys::IdbFactory, String> {
    let window = web_sys::window().ok_or("no window: IndexedDB needs a page")?;
    window.indexed_db().map_err(|e| describe(&e))?.ok_or_else(|| "IndexedDB is not available".into())
}


/// Resolves when the request succeeds; rejects on its error event, and on `blocked` when
/// `fail_when_blocked` (a deletion another tab's open connection holds up). The listeners are
/// removed once it settles, whichever event came (gloo's `EventListener` is RAII).
pub async fn request_done(request: &web_sys::IdbRequest, fail_when_blocked: bool) -> Result<JsValue, JsValue> {
    let (promise, resolve, reject) = settled_by();
    let target: &web_sys::EventTarget = request.as_ref();
    let _success = EventListener::once(target, "success", move |_| {
        let _ = resolve.call0(&JsValue::UNDEFINED);
    });
    let (req, fail) = (request.clone(), reject.clone());
    let _error = EventListener::once(target, "error", move |_| {
        let error = req.error().ok().flatten().map(JsValue::from).unwrap_or_else(|| "IndexedDB request failed".into());
        let _ = fail.call1(&JsValue::UNDEFINED, &error);
    });
    let _blocked = fail_when_blocked.then(|| {
        EventListener::once(target, "blocked", move |_| {
            let _ = reject.call1(&JsValue::UNDEFINED, &"blocked by a connection another tab keeps open".into());
        })
    });
    JsFuture::from(promise).await
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

/// Whether an IndexedDB database of that name exists (without creating it).
pub async fn exists(name: String) -> bool {
    let Ok(factory) = factory() else { return false };
    // indexedDB.databases() is not in web-sys's stable API; call it directly.
    let Ok(databases) = js_sys::Reflect::get(&factory, &"databases".into()) else { return false };
    let Some(databases) = databases.dyn_ref::<js_sys::Function>() else { return false };
    let Ok(list) = databases.call0(&factory) else { return false };
    let Ok(list) = JsFuture::from(Promise::resolve(&list)).await else { return false };
    js_sys::Array::from(&list).iter().any(|d| js_sys::Reflect::get(&d, &"name".into()).ok().and_then(|n| n.as_string()).as_deref() == Some(name.as_str()))
}

/// The object store of a local catalogue: one record per document, keyed by `_id`.
pub const CATALOG_STORE: &str = "docs";

/// Writes `docs` into the local catalogue database `name` (created when missing).
pub async fn write_catalog(name: String, docs: Vec<serde_json::Value>) -> Result<(), String> {
    let request = factory()?.open_with_u32(&name, 1).map_err(|e| describe(&e))?;
    let _upgrade = EventListener::once(request.as_ref(), "upgradeneeded", move |e| {
        let Some(target) = e.target() else { return };
        let Ok(result) = target.unchecked_into::<web_sys::IdbOpenDbRequest>().result() else { return };
        let db: web_sys::IdbDatabase = result.unchecked_into();
        if !db.object_store_names().contains(CATALOG_STORE) {
            let params = web_sys::IdbObjectStoreParameters::new();
            params.set_key_path(&"_id".into());
            let _ = db.create_object_store_with_optional_parameters(CATALOG_STORE, &params);
        }
    });
    request_done(&request, true).await.map_err(|e| describe(&e))?;
    let db: web_sys::IdbDatabase = request.result().map_err(|e| describe(&e))?.unchecked_into();
    let written = async {
        let tx = db.transaction_with_str_and_mode(CATALOG_STORE, web_sys::IdbTransactionMode::Readwrite).map_err(|e| describe(&e))?;
        let store = tx.object_store(CATALOG_STORE).map_err(|e| describe(&e))?;
        for doc in docs {
            let record = super::codec::to_js(&doc);
            store.put(&record).map_err(|e| describe(&e))?;
        }
        let (done, resolve, reject) = settled_by();
        let target: &web_sys::EventTarget = tx.as_ref();
        let _complete = EventListener::once(target, "complete", move |_| {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        });
        let failed = reject.clone();
        let _error = EventListener::once(target, "error", move |e| {
            let _ = failed.call1(&JsValue::UNDEFINED, e);
        });
        let _abort = EventListener::once(target, "abort", move |e| {
            let _ = reject.call1(&JsValue::UNDEFINED, e);
        });
        JsFuture::from(done).await.map(|_| ()).map_err(|e| describe(&e))
    }
    .await;
    db.close();
    written
}
