//! The document routes a device uses on its tenant's databases: read and write documents
//! (orders into the day database, paying yesterday's open order through the overlay), with
//! CouchDB's revision check. Archives are read-only; other tenants' databases are off limits.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use crate::docdb::{self, Kind};
use crate::rolling::conflicts;
use session_broker::protocol::errors as code;
use crate::error::{AppError, AppResult};
use crate::extract::{ApiJson, DocdbUser};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/docdb/{db}/_all_docs", get(all_docs)).route("/docdb/{db}/{doc_id}", get(get_doc).put(put_doc))
}

/// The database, when it belongs to the caller's tenant.
fn owned(conn: &rusqlite::Connection, db: &str, company_id: &str) -> AppResult<docdb::DbInfo> {
    let info = docdb::info(conn, db)?.ok_or_else(|| AppError::NotFound(code::NOT_FOUND, format!("no database {db}")))?;
    if info.company_id != company_id {
        return Err(AppError::Forbidden(format!("{db} belongs to another tenant")));
    }
    Ok(info)
}

async fn all_docs(State(state): State<AppState>, claims: DocdbUser, Path(db): Path<String>) -> AppResult<Json<Value>> {
    let conn = state.store.lock();
    owned(&conn, &db, &claims.company_id)?;
    let rows: Vec<Value> = docdb::all_docs(&conn, &db)?.into_iter().map(|d| json!({ "id": d.id, "rev": d.rev, "doc": d.to_json() })).collect();
    Ok(Json(json!({ "total_rows": rows.len(), "rows": rows })))
}

async fn get_doc(State(state): State<AppState>, claims: DocdbUser, Path((db, doc_id)): Path<(String, String)>) -> AppResult<Json<Value>> {
    let conn = state.store.lock();
    owned(&conn, &db, &claims.company_id)?;
    let doc = docdb::get(&conn, &db, &doc_id)?.ok_or_else(|| AppError::NotFound(code::NOT_FOUND, format!("no document {doc_id} in {db}")))?;
    Ok(Json(doc.to_json()))
}

async fn put_doc(
    State(state): State<AppState>,
    claims: DocdbUser,
    Path((db, doc_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> AppResult<Json<Value>> {
    if doc_id.starts_with('_') {
        return Err(AppError::BadRequest(code::BAD_REQUEST, "document ids starting with _ are reserved".into()));
    }
    let rev = match body.get("_rev") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) => Some(r.clone()),
        Some(_) => return Err(AppError::bad_request("_rev must be a string")),
    };
    let now = state.clock.now_ms();
    let written = state.store.tx(|tx| {
        let info = owned(tx, &db, &claims.company_id)?;
        if info.kind == Kind::Archive {
            return Err(AppError::Forbidden(format!("{db} is an archive: read-only")));
        }
        let doc = conflicts::DocRef { company_id: &claims.company_id, db: &db, id: &doc_id };
        Ok(conflicts::write(tx, doc, body, rev.as_deref(), state.settings.conflicts_enabled, now)?)
    })?;
    Ok(Json(json!({ "ok": true, "id": doc_id, "rev": written.rev, "conflict": written.conflict_with.is_some() })))
}
