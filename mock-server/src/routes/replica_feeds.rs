//! `GET /_replica/changes/{db}?since=…`: a database's continuous feed, every leaf revision with
//! its document, served by this replica's hub to another replica's hub (`replicas::feeds`). Only
//! replicas hold the key; only the database's owner answers (another asks the engine itself
//! rather than chain through a third).

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::StreamExt;
use protocol::errors as code;
use subtle::ConstantTimeEq;

use crate::docdb::changes_hub::FeedRequest;
use crate::docdb::naming::split;
use crate::docdb::Kind;
use crate::error::AppError;
use crate::replicas::feeds::{FEED_PATH, KEY_HEADER, OWNER_HEARTBEAT};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route(&format!("{FEED_PATH}/{{db}}"), get(feed))
}

#[derive(serde::Deserialize)]
struct Since {
    since: String,
}

async fn feed(
    State(state): State<AppState>,
    Path(db): Path<String>,
    Query(Since { since }): Query<Since>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let (Some(hubs), Some(replicas)) = (&state.changes_hubs, &state.replicas) else {
        return Err(AppError::NotFound(code::NOT_FOUND, "this server shares no feeds".into()));
    };
    let shown = headers.get(KEY_HEADER).and_then(|v| hex::decode(v.as_bytes()).ok()).unwrap_or_default();
    if !bool::from(shown.ct_eq(&replicas.key)) {
        return Err(AppError::Unauthorized(code::INVALID_CREDENTIAL, "not a replica of this store".into()));
    }
    let (key, kind) = split(&db).map_or((db.as_str(), None), |(base, kind)| (base, Some(kind)));
    // Asked before this replica's own list is settled, it answers by the settled list, as the
    // asker does.
    replicas.members.settled().await;
    if replicas.members.owner(key).id != replicas.members.me().id {
        return Err(AppError::Conflict(code::CONFLICT, format!("this replica does not own {key}'s feeds")));
    }
    let query = [
        ("feed", "continuous".to_owned()),
        ("style", "all_docs".to_owned()),
        ("include_docs", "true".to_owned()),
        // Often enough for the reader to tell a silent partition from a quiet database.
        ("heartbeat", OWNER_HEARTBEAT.as_millis().to_string()),
        ("since", since),
    ]
    .map(|(k, v)| (k.to_owned(), v));
    let request = FeedRequest::read("GET", &query, b"").ok_or_else(|| AppError::bad_request("not a sequence"))?;
    // CORE's hub holds the whole database, as a device's request makes it.
    let whole = kind == Some(Kind::Core);
    // The feed ends when this replica stops owning the tenant or leaves (a graceful stop does not
    // wait on the others' feeds): the reader goes on from its last sequence at the new owner.
    let members = replicas.members.clone();
    let (key, me) = (key.to_owned(), members.me().id.clone());
    let ends = async move {
        tokio::select! {
            () = members.moved(&key, &me) => {}
            () = members.left() => {}
        }
    };
    match hubs.serve(&db, whole, request).await {
        Some(stream) => Ok((
            [(header::CONTENT_TYPE, "application/json")],
            Body::from_stream(stream.take_until(Box::pin(ends)).map(Ok::<_, std::convert::Infallible>)),
        )
            .into_response()),
        None => Err(AppError::EngineUnavailable(format!("the hub of {db} could not open"))),
    }
}
