//! The device's local databases in IndexedDB: destroying one destroys the PouchDB of that name
//! through PouchDB when the app tracked the instance, then deletes PouchDB's `_pouch_<name>` and
//! the IndexedDB database of that name (the SDK's bootstrap) if they are still there.

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::describe;
use crate::core::json;
use crate::core::ports::{DestroyError, LocalBoxFuture, LocalDatabases, PushPlan, PushReport, StorageError};
use serde_json::Value;

// IndexedDB's requests are events; src/web/browser.js turns each into a promise, so the module
// holds no listeners or closures of its own for them (about 2.7 KB of the package).
#[wasm_bindgen(module = "/src/web/browser.js")]
extern "C" {
    #[wasm_bindgen(js_name = sbIdbDestroy)]
    fn destroy_database(name: &str, adapter: &str, bound_ms: u32) -> js_sys::Promise;
    #[wasm_bindgen(js_name = sbTrack, catch)]
    fn remember(db: &JsValue, options: &JsValue) -> Result<String, JsValue>;
    #[wasm_bindgen(js_name = sbPlan)]
    fn plan(name: &str, adapter: &str, url: Option<String>, headers: Option<String>);
    #[wasm_bindgen(js_name = sbPush)]
    fn push_databases(bound_ms: u32) -> js_sys::Promise;
    #[wasm_bindgen(js_name = sbIdbExists)]
    fn database_exists(name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = sbIdbWrite)]
    fn write(name: &str, store: &str, records: js_sys::Array, bound_ms: u32) -> js_sys::Promise;
}

/// How long a destroy (or the bootstrap's write) may wait for a connection it needs closed: a
/// page's PouchDB closes its handles on `versionchange` at once, so what is still open after this
/// is a handle nobody will close soon; the login or invalidation goes on and reports the database
/// in `failed` (it stays tracked, and its deletion stays queued in the browser).
const BOUND_MS: u32 = 3_000;

pub struct IndexedDbDatabases;

impl LocalDatabases for IndexedDbDatabases {
    fn destroy(&self, name: &str, adapter: &str) -> LocalBoxFuture<'static, Result<(), DestroyError>> {
        let promise = destroy_database(name, adapter, BOUND_MS);
        Box::pin(async move { JsFuture::from(promise).await.map(drop).map_err(|e| DestroyError(describe(&e))) })
    }

    fn push(&self, plans: Vec<PushPlan>, bound_ms: u32) -> LocalBoxFuture<'static, PushReport> {
        // Handed over one database a call, then run at once (nothing runs in between).
        for p in plans {
            let (url, headers) = p.to.map(|(u, h)| (u, json::stringify(&Value::Object(h)))).unzip();
            plan(&p.name, &p.adapter, url, headers);
        }
        let promise = push_databases(bound_ms);
        Box::pin(async move {
            // The adapter never rejects; an answer that does not read is an empty report.
            let answer =
                JsFuture::from(promise).await.ok().and_then(|a| json::parse(&a.as_string()?)).unwrap_or_default();
            let field = |k| answer.get(k).and_then(Value::as_object).cloned().unwrap_or_default();
            PushReport { pushed: field("pushed"), unpushed: field("unpushed") }
        })
    }
}

/// A tracked database (`trackLocalDatabase`'s arguments: a name, or a local PouchDB instance,
/// whose constructor the page remembers to open it again): `[name, adapter, pushTo]` as the
/// ledger records them (see `session::Entry`); the reason otherwise.
pub fn track(db: &JsValue, options: &JsValue) -> Result<[String; 3], String> {
    let answer = remember(db, options).map_err(|e| describe(&e))?;
    json::parse(&answer).and_then(|v| json::string_list(&v)).and_then(|l| l.try_into().ok()).ok_or(answer)
}

/// Whether an IndexedDB database of that name exists (without creating it).
pub async fn exists(name: String) -> bool {
    JsFuture::from(database_exists(&name)).await.is_ok_and(|found| found.is_truthy())
}

/// The object store of a local catalogue: one record per document, keyed by `_id`.
pub const CATALOG_STORE: &str = "docs";

/// Writes `docs` into the local catalogue database `name` (created when missing).
pub async fn write_catalog(name: String, docs: Vec<serde_json::Value>) -> Result<(), StorageError> {
    let records: js_sys::Array = docs.iter().map(super::codec::to_js).collect();
    JsFuture::from(write(&name, CATALOG_STORE, records, BOUND_MS))
        .await
        .map(drop)
        .map_err(|e| StorageError(describe(&e)))
}
