//! `GET /health`: `db` is true only on the two-flag schema of `company_feature_flags`.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use session_broker::protocol::routes;

use crate::error::AppResult;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route(routes::HEALTH.path, get(health))
}

async fn health(State(state): State<AppState>) -> AppResult<Json<Value>> {
    let db = crate::store::catalog::two_flag_schema(&state.store.lock()?)?;
    Ok(Json(json!({"status": "ok", "db": db})))
}
