//! The document routes a device uses on its tenant's databases. With a document engine
//! (`DOCDB_URL`) they are the seeds' document database proxy: the CouchDB replication protocol
//! forwarded to the engine after the `X-Docdb-*` headers, the tenant and the database's kind
//! allow it (`docdb::access`), responses streamed back. Without one, the embedded model serves
//! documents and `_all_docs` (orders into the day database, paying yesterday's open order through
//! the overlay, with CouchDB's revision check) and refuses the rest of the protocol, naming
//! `DOCDB_URL`. Archives are read-only; other tenants' databases are off limits.

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;
use axum::routing::{any, get};
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use session_broker::core::permissions::PermissionMap;
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::docdb::access::{self, Op, Refusal};
use crate::docdb::{self, Kind};
use crate::error::{AppError, AppResult, Cause};
use crate::extract::{ApiJson, DocdbUser};
use crate::rolling::{conflicts, tenants};
use crate::state::AppState;
use session_broker::protocol::errors as code;

/// The largest request body the proxy forwards (a replication pushes `_bulk_docs` in batches of
/// 100 documents by default: this leaves room for large documents, and bounds a hostile one).
pub const PROXY_BODY_LIMIT_BYTES: usize = 4 * 1024 * 1024;

/// The response headers a device gets from the engine; anything else (a `Location` naming the
/// engine, its cookies, a `WWW-Authenticate` that would open the browser's login dialog) stays.
const PASSED_BACK: [header::HeaderName; 3] = [header::CONTENT_TYPE, header::ETAG, header::CACHE_CONTROL];

pub fn router(state: &AppState) -> Router<AppState> {
    let routes = match state.engine {
        Some(_) => Router::new().route("/docdb/{db}", any(proxy)).route("/docdb/{db}/", any(proxy)).route("/docdb/{db}/{*rest}", any(proxy)),
        None => Router::new()
            .route("/docdb/{db}", any(engine_required))
            .route("/docdb/{db}/", any(engine_required))
            .route("/docdb/{db}/_all_docs", get(all_docs).fallback(engine_required))
            .route("/docdb/{db}/{doc_id}", get(get_doc).put(put_doc).fallback(engine_required))
            .route("/docdb/{db}/{doc_id}/{*rest}", any(engine_required)),
    };
    routes.layer(cors(&state.settings.docdb_cors_origins))
}

/// Credentialed CORS for the allowed origins, named (a wildcard is refused by browsers when
/// PouchDB sends `credentials: 'include'`); the `X-Docdb-*` headers allowed.
fn cors(origins: &[String]) -> CorsLayer {
    let origins = origins.to_vec();
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin: &HeaderValue, _| origin.to_str().is_ok_and(|o| docdb::cors::allows(&origins, o))))
        .allow_credentials(true)
        .allow_methods(tower_http::cors::AllowMethods::mirror_request())
        .allow_headers(tower_http::cors::AllowHeaders::mirror_request())
        .expose_headers([header::ETAG, header::CONTENT_TYPE])
        .max_age(std::time::Duration::from_secs(600))
}

async fn engine_required() -> AppError {
    AppError::EngineRequired(
        "the embedded document model serves documents and _all_docs only; the replication protocol needs a CouchDB-protocol engine: start the server with DOCDB_URL".into(),
    )
}

/// Whether the caller's roles may write CORE (`catalog:write`, the SDK's permission map).
fn may_write_catalogue(caller: &DocdbUser) -> bool {
    PermissionMap::default().allows(session_broker::core::permissions::CATALOG_WRITE, &caller.roles)
}

fn refused(r: Refusal) -> AppError {
    AppError::Forbidden(r.0)
}

/// One request of the replication protocol, checked, then forwarded to the engine.
async fn proxy(State(state): State<AppState>, caller: DocdbUser, request: Request) -> AppResult<Response> {
    let Some(engine) = state.engine.clone() else { return Err(engine_required().await) };
    // The raw path, so a document id's own escaping (`a%2Fb`) reaches the engine as it came.
    let uri = request.uri().clone();
    let raw = uri.path().strip_prefix("/docdb/").unwrap_or("");
    let (db_raw, rest_raw) = match raw.split_once('/') {
        Some((db, rest)) => (db, Some(rest)),
        None => (raw, None),
    };
    let db = docdb::percent_decoded(db_raw);
    let rest: Vec<String> = rest_raw.map(|r| r.split('/').map(docdb::percent_decoded).collect()).unwrap_or_default();
    let kind = {
        let conn = state.store.lock()?;
        let tenant = tenants::get(&conn, &caller.company_id)?;
        tenant.names(&state.settings.db_prefix).kind_of(&db)
    };
    let kind = kind.ok_or_else(|| AppError::Forbidden(format!("{db} is not a database of tenant {}", caller.company_id)))?;
    let method = request.method().clone();
    let op = access::classify(method.as_str(), &rest).map_err(refused)?;
    access::allow(kind, op, may_write_catalogue(&caller)).map_err(refused)?;

    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, PROXY_BODY_LIMIT_BYTES).await.map_err(|_| AppError::PayloadTooLarge)?;
    if op == Op::BulkWrite {
        let docs: Value = serde_json::from_slice(&body).map_err(|e| AppError::BadRequest(code::MALFORMED_JSON, format!("the _bulk_docs body is not JSON: {e}")))?;
        access::check_bulk(&docs).map_err(refused)?;
    }

    let mut path = String::from(db_raw);
    if let Some(rest) = rest_raw {
        path.push('/');
        path.push_str(rest);
    }
    if let Some(query) = uri.query() {
        path.push('?');
        path.push_str(query);
    }
    let mut forward = engine.request(method, &path);
    for name in [header::CONTENT_TYPE, header::ACCEPT] {
        if let Some(value) = parts.headers.get(&name) {
            forward = forward.header(name, value);
        }
    }
    let answer = forward.body(body).send().await.map_err(|e| {
        tracing::warn!("document engine at {}: {e}", engine.url().root());
        AppError::EngineUnavailable("the document engine did not answer; try again".into())
    })?;
    let status = axum::http::StatusCode::from_u16(answer.status().as_u16()).map_err(|e| AppError::Internal(Cause::new(e)))?;
    let mut headers = HeaderMap::new();
    copy_headers(answer.headers(), &mut headers);
    let mut response = Response::new(Body::from_stream(answer.bytes_stream()));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

fn copy_headers(from: &reqwest::header::HeaderMap, to: &mut HeaderMap) {
    for name in PASSED_BACK {
        if let Some(value) = from.get(name.as_str()).and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok()) {
            to.insert(name, value);
        }
    }
}

/// The database, when it belongs to the caller's tenant.
fn owned(conn: &crate::store::sql::Connection, db: &str, company_id: &str) -> AppResult<Kind> {
    let (owner, kind) = docdb::owner(conn, db)?.ok_or_else(|| AppError::NotFound(code::NOT_FOUND, format!("no database {db}")))?;
    if owner != company_id {
        return Err(AppError::Forbidden(format!("{db} belongs to another tenant")));
    }
    Ok(kind)
}

async fn all_docs(State(state): State<AppState>, claims: DocdbUser, Path(db): Path<String>) -> AppResult<Json<Value>> {
    let conn = state.store.lock()?;
    owned(&conn, &db, &claims.company_id)?;
    let rows: Vec<Value> = docdb::all_docs(&docdb::Cluster::embedded(&conn), &db)?.into_iter().map(|d| json!({ "id": d.id, "rev": d.rev, "doc": d.to_json() })).collect();
    Ok(Json(json!({ "total_rows": rows.len(), "rows": rows })))
}

async fn get_doc(State(state): State<AppState>, claims: DocdbUser, Path((db, doc_id)): Path<(String, String)>) -> AppResult<Json<Value>> {
    if doc_id.starts_with('_') {
        // `_changes`, `_local/…`, `_revs_diff`…: the replication protocol, not documents.
        return Err(engine_required().await);
    }
    let conn = state.store.lock()?;
    owned(&conn, &db, &claims.company_id)?;
    let doc = docdb::get(&docdb::Cluster::embedded(&conn), &db, &doc_id)?.ok_or_else(|| AppError::NotFound(code::NOT_FOUND, format!("no document {doc_id} in {db}")))?;
    Ok(Json(doc.to_json()))
}

async fn put_doc(
    State(state): State<AppState>,
    claims: DocdbUser,
    Path((db, doc_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> AppResult<Json<Value>> {
    if doc_id.starts_with('_') {
        return Err(engine_required().await);
    }
    let rev = match body.get("_rev") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) => Some(r.clone()),
        Some(_) => return Err(AppError::bad_request("_rev must be a string")),
    };
    let now = state.clock.now_ms();
    let written = state.store.tx(|tx| {
        // The proxy's rule on the embedded route too: archives read-only, CORE for catalog:write.
        access::allow(owned(tx, &db, &claims.company_id)?, Op::Write, may_write_catalogue(&claims)).map_err(|r| AppError::Forbidden(format!("{db}: {}", r.0)))?;
        let doc = conflicts::DocRef { company_id: &claims.company_id, db: &db, id: &doc_id };
        Ok(conflicts::write(&docdb::Cluster::embedded(tx), doc, body, rev.as_deref(), state.settings.conflicts_enabled, now)?)
    })?;
    Ok(Json(json!({ "ok": true, "id": doc_id, "rev": written.rev, "conflict": written.conflict_with.is_some() })))
}
