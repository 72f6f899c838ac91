//! The device's local databases in IndexedDB: destroying one deletes the IndexedDB database of
//! that name and PouchDB's `_pouch_<name>`.

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::describe;
use crate::core::ports::{LocalBoxFuture, LocalDatabases};

// IndexedDB's requests are events; src/js/browser.js turns each into a promise, so the module
// holds no listeners or closures of its own for them (about 2.7 KB of the package).
#[wasm_bindgen(module = "/src/js/browser.js")]
extern "C" {
    #[wasm_bindgen(js_name = sbIdbDelete)]
    fn delete_database(name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = sbIdbExists)]
    fn database_exists(name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = sbIdbWrite)]
    fn write(name: &str, store: &str, records: js_sys::Array) -> js_sys::Promise;
}

pub struct IndexedDbDatabases;

async fn delete(name: String) -> Result<(), String> {
    JsFuture::from(delete_database(&name)).await.map(drop).map_err(|e| ["deleting \"", &name, "\": ", &describe(&e)].concat())
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
    JsFuture::from(database_exists(&name)).await.is_ok_and(|found| found.is_truthy())
}

/// The object store of a local catalogue: one record per document, keyed by `_id`.
pub const CATALOG_STORE: &str = "docs";

/// Writes `docs` into the local catalogue database `name` (created when missing).
pub async fn write_catalog(name: String, docs: Vec<serde_json::Value>) -> Result<(), String> {
    let records: js_sys::Array = docs.iter().map(super::codec::to_js).collect();
    JsFuture::from(write(&name, CATALOG_STORE, records)).await.map(drop).map_err(|e| describe(&e))
}
