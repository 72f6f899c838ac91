//! `GET /health`: `db` is true only on the two-flag schema of `company_feature_flags`; `backups`
//! appears, saying why, when this server does not see its store's snapshots (`BACKUP_DIR` not
//! shared with the store's other servers): it then takes no backup and drops nothing.

use axum::extract::State;
use axum::{Json, Router};
use protocol::routes;
use protocol::views::{HealthState, HealthStatus};

use crate::error::AppResult;
use crate::routes::table::Rows;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().row(routes::HEALTH, health)
}

async fn health(State(state): State<AppState>) -> AppResult<Json<HealthStatus>> {
    let conn = state.store.lock()?;
    let db = crate::store::catalog::two_flag_schema(&conn)?;
    let backups = match state.settings.backup_enabled {
        true => crate::rolling::backup::unshared(
            &conn,
            &crate::rolling::RollingSettings::from(&*state.settings).backup_dir,
        )?,
        false => None,
    };
    Ok(Json(HealthStatus { status: HealthState::Ok, db, backups }))
}
