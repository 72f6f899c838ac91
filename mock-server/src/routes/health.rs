//! `GET /health`: `db` is true only on the two-flag schema of `company_feature_flags`; `backups`
//! appears, saying why, when this server does not see its store's snapshots (`BACKUP_DIR` not
//! shared with the store's other servers): it then takes no backup and drops nothing.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use protocol::routes;
use serde_json::{json, Value};

use crate::error::AppResult;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route(routes::HEALTH.path, get(health))
}

async fn health(State(state): State<AppState>) -> AppResult<Json<Value>> {
    let conn = state.store.lock()?;
    let db = crate::store::catalog::two_flag_schema(&conn)?;
    let mut answer = json!({"status": "ok", "db": db});
    if state.settings.backup_enabled {
        let dir = crate::rolling::RollingSettings::from(&*state.settings).backup_dir;
        if let Some(why) = crate::rolling::backup::unshared(&conn, &dir)? {
            answer["backups"] = json!(why);
        }
    }
    Ok(Json(answer))
}
