//! The document routes a device uses on its tenant's databases. With a document engine
//! (`DOCDB_URL`) they are the document database proxy: the CouchDB replication protocol
//! forwarded to the engine after the `X-Docdb-*` headers, the tenant and the database's kind
//! allow it (`docdb::access`), responses streamed back. Without one, the embedded model serves
//! documents and `_all_docs` (orders into the day database, paying yesterday's open order through
//! the overlay, with CouchDB's revision check) and refuses the rest of the protocol, naming
//! `DOCDB_URL`. Archives are read-only; other tenants' databases are off limits.

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use futures_util::StreamExt;
use protocol::permissions::PermissionMap;
use protocol::routes;
use serde_json::{Map, Value};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::docdb::access::{self, Op, Refusal};
use crate::docdb::{self, Kind};
use crate::error::{AppError, AppResult, Cause};
use crate::extract::{ApiJson, DocdbUser};
use crate::rolling::{conflicts, tenants};
use crate::routes::table::Rows;
use crate::state::AppState;
use protocol::errors as code;

/// The largest request body the proxy forwards (a replication pushes `_bulk_docs` in batches of
/// 100 documents by default: this leaves room for large documents, and bounds a hostile one).
pub const PROXY_BODY_LIMIT_BYTES: usize = 4 * 1024 * 1024;

/// The response headers a device gets from the engine; anything else (a `Location` naming the
/// engine, its cookies, a `WWW-Authenticate` that would open the browser's login dialog) stays.
const PASSED_BACK: [header::HeaderName; 3] = [header::CONTENT_TYPE, header::ETAG, header::CACHE_CONTROL];

pub fn router(state: &AppState) -> Router<AppState> {
    let routes = match state.engine {
        Some(_) => {
            Router::new().row(routes::DOCDB, proxy).row(routes::DOCDB_SLASH, proxy).row(routes::DOCDB_WITHIN, proxy)
        }
        None => Router::new()
            .row(routes::DOCDB, engine_required)
            .row(routes::DOCDB_SLASH, engine_required)
            .row(routes::DOCDB_WITHIN, embedded),
    };
    // Replicas' feeds for each other: no browser reaches them, so no CORS.
    routes.layer(cors(&state.settings.docdb_cors_origins)).merge(crate::routes::replica_feeds::router())
}

/// Credentialed CORS for the allowed origins, named (a wildcard is refused by browsers when
/// PouchDB sends `credentials: 'include'`); the `X-Docdb-*` headers allowed.
fn cors(origins: &[String]) -> CorsLayer {
    let origins = origins.to_vec();
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin: &HeaderValue, _| {
            origin.to_str().is_ok_and(|o| docdb::cors::allows(&origins, o))
        }))
        .allow_credentials(true)
        .allow_methods(tower_http::cors::AllowMethods::mirror_request())
        .allow_headers(tower_http::cors::AllowHeaders::mirror_request())
        .expose_headers([header::ETAG, header::CONTENT_TYPE])
        .max_age(std::time::Duration::from_secs(600))
}

/// What the embedded model serves under a database: `GET _all_docs`, and `GET` or `PUT` of one
/// document (its id one raw segment); the rest of the protocol needs the engine.
async fn embedded(State(state): State<AppState>, request: Request) -> Response {
    use axum::handler::Handler;
    use axum::http::Method;
    // The raw path, not the decoded parameter: `a%2Fb` is one document's id, `a/b` an attachment.
    let within = request.uri().path().splitn(4, '/').nth(3).unwrap_or_default();
    let one_segment = !within.is_empty() && !within.contains('/');
    let reads = matches!(*request.method(), Method::GET | Method::HEAD);
    match within {
        "_all_docs" if reads => all_docs.call(request, state).await,
        _ if one_segment && reads => get_doc.call(request, state).await,
        _ if one_segment && request.method() == Method::PUT => put_doc.call(request, state).await,
        _ => engine_required().await.into_response(),
    }
}

async fn engine_required() -> AppError {
    AppError::EngineRequired(
        "the embedded document model serves documents and _all_docs only; the replication protocol needs a CouchDB-protocol engine: start the server with DOCDB_URL".into(),
    )
}

/// Whether the caller's roles may write CORE (`catalog:write`, the SDK's permission map).
fn may_write_catalogue(caller: &DocdbUser) -> bool {
    PermissionMap::default().allows(protocol::permissions::CATALOG_WRITE, &caller.roles)
}

fn refused(r: Refusal) -> AppError {
    match r {
        Refusal::Unauthenticated => AppError::Unauthorized(
            code::MISSING_TOKEN,
            "the document routes need a session's Bearer token or X-Docdb-* headers".into(),
        ),
        Refusal::Forbidden(why) => AppError::Forbidden(why),
        Refusal::Unreadable(why) => AppError::BadRequest(code::MALFORMED_JSON, why),
    }
}

/// One request of the replication protocol: read whole (within `PROXY_BODY_LIMIT_BYTES`), judged
/// by `access::decide`, and what it answers forwarded to the engine (never the request itself);
/// the engine's answer streamed back. A live `_changes` feed takes one of its session's places.
async fn proxy(State(state): State<AppState>, caller: DocdbUser, request: Request) -> Response {
    // Counted by what the rule judged it to be, `refused` when the rule turned it away.
    let mut class = "refused";
    let response = forward_request(&state, caller, request, &mut class).await.into_response();
    crate::recorded::proxy_request(class, response.extensions().get::<crate::error::ErrorCode>().map_or("ok", |c| c.0));
    response
}

async fn forward_request(
    state: &AppState,
    caller: DocdbUser,
    request: Request,
    class: &mut &'static str,
) -> AppResult<Response> {
    let Some(engine) = state.engine.clone() else { return Err(engine_required().await) };
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, PROXY_BODY_LIMIT_BYTES).await.map_err(|_| AppError::PayloadTooLarge)?;
    let names = match caller.names.clone() {
        Some(names) => names,
        None => tenants::get(&state.store.lock()?, &caller.company_id)?.names(&state.settings.db_prefix),
    };
    let kind_of = |db: &str| names.kind_of(db);
    let incoming = access::Incoming {
        method: parts.method.as_str(),
        path: parts.uri.path().strip_prefix("/docdb/").unwrap_or(""),
        query: parts.uri.query(),
        content_type: parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()),
        body: &body,
    };
    let who = access::Caller { company_id: &caller.company_id, may_write_catalogue: may_write_catalogue(&caller) };
    let forward = access::decide(&incoming, Some(who), kind_of).map_err(refused)?;
    *class = forward.op.as_str();
    if forward.live_feed && caller.signing_out {
        return Err(AppError::Unauthorized(
            code::SESSION_ENDED,
            "this session is signing out: it may finish its replication, not open a live feed".into(),
        ));
    }
    let place = match forward.live_feed {
        true => {
            Some(state.sessions.feeds.hold(&caller.session_id, state.settings.docdb_feeds_per_session).ok_or_else(
                || AppError::TooMany {
                    code: code::TOO_MANY_FEEDS,
                    message: format!(
                        "this session already holds {} open _changes feeds (DOCDB_FEEDS_PER_SESSION); close one first",
                        state.settings.docdb_feeds_per_session
                    ),
                    retry_after_secs: None,
                },
            )?)
        }
        false => None,
    };
    // The session was checked before the body was awaited: a logout meanwhile cut the feeds the
    // session held then, not this one, whose place was taken after. Once the place is held, a
    // logout cuts it; before, the list of ended sessions says so.
    if place.is_some() && state.sessions.ended.contains(&caller.session_id, state.clock.now_secs()) {
        return Err(AppError::Unauthorized(
            code::SESSION_ENDED,
            "this session ended while the request was being received: no live feed".into(),
        ));
    }
    let place = match place {
        Some(place) => Some((place, access_until(state, &caller)?)),
        None => None,
    };

    if let Some(stream) = from_hub(state, &forward, kind_of(&forward.db), parts.method.as_str()).await {
        let mut response = Response::new(streamed(state, place, stream.map(Ok::<_, std::convert::Infallible>)));
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("must-revalidate"));
        return Ok(response);
    }

    let mut request = engine.request(parts.method, &forward.path);
    if let Some(content_type) = &forward.content_type {
        request = request.header(header::CONTENT_TYPE, content_type);
    }
    if let Some(accept) = parts.headers.get(header::ACCEPT) {
        request = request.header(header::ACCEPT, accept);
    }
    crate::recorded::proxied_to_engine(forward.body.len());
    let asked = std::time::Instant::now();
    // A read is sent again on a fresh connection when its pooled one broke before the answer;
    // a write is not (it may have been done), and the device is told to try again.
    let replayable = forward.op == access::Op::Read;
    let sent = engine.send(request.body(forward.body), replayable);
    let answered = match forward.live_feed {
        true => sent.await,
        false => match tokio::time::timeout(docdb::engine::ANSWER_WITHIN, sent).await {
            Ok(answered) => answered,
            Err(_) => {
                tracing::warn!(
                    "document engine at {}: no answer within {:?}",
                    engine.url().root(),
                    docdb::engine::ANSWER_WITHIN
                );
                return Err(AppError::EngineUnavailable(format!(
                    "the document engine did not answer within {} s; try again",
                    docdb::engine::ANSWER_WITHIN.as_secs()
                )));
            }
        },
    };
    let answer = answered.map_err(|e| {
        tracing::warn!("document engine at {}: {e}", engine.url().root());
        AppError::EngineUnavailable("the document engine did not answer; try again".into())
    })?;
    crate::recorded::engine_answered(asked.elapsed().as_secs_f64());
    let status =
        axum::http::StatusCode::from_u16(answer.status().as_u16()).map_err(|e| AppError::Internal(Cause::new(e)))?;
    let mut headers = HeaderMap::new();
    copy_headers(answer.headers(), &mut headers);
    let mut response = Response::new(streamed(state, place, answer.bytes_stream()));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

/// When a live feed's access ends by itself: its Bearer token's expiry, or for the headers the
/// end of their session (its refresh family's newest token), read once as the feed opens.
fn access_until(state: &AppState, caller: &DocdbUser) -> AppResult<i64> {
    if let Some(until) = caller.access_until_ms {
        return Ok(until);
    }
    let now = state.clock.now_ms();
    crate::store::refresh_tokens::live_until(&state.store.lock()?, &caller.session_id, now)?.ok_or_else(|| {
        AppError::Unauthorized(
            code::SESSION_ENDED,
            "the session these headers belong to has ended; log in again".into(),
        )
    })
}

/// Resolves once the server clock reaches `until_ms`. The clock is looked at again at least
/// every second: the test clock moves by jumps, and a feed must not outlive its access by more.
async fn access_ends(clock: std::sync::Arc<crate::clock::Clock>, until_ms: i64) {
    loop {
        let left = until_ms.saturating_sub(clock.now_ms());
        if left <= 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(left.min(1_000) as u64)).await;
    }
}

/// An answer's body streamed to the device, its bytes counted; a live feed's ended with its
/// session, or when its access expires.
fn streamed<E>(
    state: &AppState,
    place: Option<(crate::docdb::feeds::Held, i64)>,
    stream: impl futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
) -> Body
where
    E: Into<axum::BoxError> + 'static,
{
    let stream = crate::recorded::counting_to_device(stream);
    match place {
        Some((place, until_ms)) => {
            Body::from_stream(place.carry(stream.take_until(Box::pin(access_ends(state.clock.clone(), until_ms)))))
        }
        None => Body::from_stream(stream),
    }
}

/// A `_changes` request answered by its database's hub (`docdb::changes_hub`): the live feeds of every
/// database, and CORE's normal feeds (every device reads CORE whole after an invalidation).
/// `None`: the engine answers it as it did before the hub.
async fn from_hub(
    state: &AppState,
    forward: &access::Forward,
    kind: Option<Kind>,
    method: &str,
) -> Option<futures_util::stream::BoxStream<'static, bytes::Bytes>> {
    let hubs = state.changes_hubs.as_ref().filter(|_| forward.changes)?;
    let request = docdb::changes_hub::FeedRequest::read(method, &forward.query, &forward.body)?;
    let core = kind == Some(Kind::Core);
    if !request.live() && !core {
        return None;
    }
    hubs.serve(&forward.db, core, request).await
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
    let (owner, kind) =
        docdb::owner(conn, db)?.ok_or_else(|| AppError::NotFound(code::NOT_FOUND, format!("no database {db}")))?;
    if owner != company_id {
        return Err(AppError::Forbidden(format!("{db} belongs to another tenant")));
    }
    Ok(kind)
}

/// `GET /docdb/{db}/_all_docs`, in the document protocol's shape (with every document included).
#[derive(serde::Serialize)]
struct AllDocs {
    total_rows: usize,
    rows: Vec<AllDocsRow>,
}

#[derive(serde::Serialize)]
struct AllDocsRow {
    id: String,
    rev: String,
    doc: Value,
}

/// A document written, in the document protocol's shape, saying whether it made a conflict.
#[derive(serde::Serialize)]
struct DocWritten {
    ok: bool,
    id: String,
    rev: String,
    conflict: bool,
}

async fn all_docs(
    State(state): State<AppState>,
    claims: DocdbUser,
    Path((db, _)): Path<(String, String)>,
) -> AppResult<Json<AllDocs>> {
    let conn = state.store.lock()?;
    owned(&conn, &db, &claims.company_id)?;
    let rows: Vec<AllDocsRow> = docdb::all_docs(&docdb::Cluster::embedded(&conn), &db)?
        .into_iter()
        .map(|d| AllDocsRow { doc: d.to_json(), id: d.id, rev: d.rev })
        .collect();
    Ok(Json(AllDocs { total_rows: rows.len(), rows }))
}

async fn get_doc(
    State(state): State<AppState>,
    claims: DocdbUser,
    Path((db, doc_id)): Path<(String, String)>,
) -> AppResult<Json<Value>> {
    if doc_id.starts_with('_') {
        // `_changes`, `_local/…`, `_revs_diff`…: the replication protocol, not documents.
        return Err(engine_required().await);
    }
    let conn = state.store.lock()?;
    owned(&conn, &db, &claims.company_id)?;
    let doc = docdb::get(&docdb::Cluster::embedded(&conn), &db, &doc_id)?
        .ok_or_else(|| AppError::NotFound(code::NOT_FOUND, format!("no document {doc_id} in {db}")))?;
    Ok(Json(doc.to_json()))
}

async fn put_doc(
    State(state): State<AppState>,
    claims: DocdbUser,
    Path((db, doc_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> AppResult<Json<DocWritten>> {
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
        access::allow(owned(tx, &db, &claims.company_id)?, Op::Write, may_write_catalogue(&claims)).map_err(
            |r| match r {
                Refusal::Forbidden(why) => AppError::Forbidden(format!("{db}: {why}")),
                other => refused(other),
            },
        )?;
        let doc = conflicts::DocRef { company_id: &claims.company_id, db: &db, id: &doc_id };
        Ok(conflicts::write(
            &docdb::Cluster::embedded(tx),
            doc,
            body,
            rev.as_deref(),
            state.settings.conflicts_enabled,
            now,
        )?)
    })?;
    Ok(Json(DocWritten { ok: true, id: doc_id, rev: written.rev, conflict: written.conflict_with.is_some() }))
}
