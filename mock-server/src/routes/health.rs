//! `GET /health`: `db` is true only on the two-flag schema of `company_feature_flags`.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::error::AppResult;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/health", get(health))
}

/// The flag columns after migration 0015; anything else (missing table, the four pre-0015
/// columns) is not the schema the rollout needs.
pub fn two_flag_schema(conn: &rusqlite::Connection) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('company_feature_flags')")?;
    let columns: Vec<String> = stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    let flags: Vec<&String> = columns.iter().filter(|c| c.starts_with("rolling_db")).collect();
    Ok(flags.len() == 2 && columns.iter().any(|c| c == "rolling_db") && columns.iter().any(|c| c == "rolling_db_drop"))
}

async fn health(State(state): State<AppState>) -> AppResult<Json<Value>> {
    let db = two_flag_schema(&state.store.lock())?;
    Ok(Json(json!({"status": "ok", "db": db})))
}
