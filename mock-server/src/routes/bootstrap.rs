//! `GET /bootstrap?database=core|legacy`: a device's fresh catalogue, for the tenant of its token.

use axum::extract::{Query, State};
use axum::{Json, Router};
use protocol::routes;
use serde::Deserialize;

use crate::error::{AppError, AppResult};
use crate::extract::AuthUser;
use crate::rolling::invalidation::Routing;
use crate::rolling::views::{self, BootstrapError};
use crate::rolling::{tenants, RollingSettings};
use crate::routes::table::Rows;
use crate::state::AppState;
use protocol::errors as code;

pub fn router() -> Router<AppState> {
    Router::new().row(routes::BOOTSTRAP, bootstrap)
}

#[derive(Deserialize)]
struct BootstrapQuery {
    database: Option<String>,
}

async fn bootstrap(
    State(state): State<AppState>,
    AuthUser(claims): AuthUser,
    Query(q): Query<BootstrapQuery>,
) -> AppResult<Json<protocol::sync_frames::Bootstrap>> {
    let started = std::time::Instant::now();
    let (database, label) = match q.database.as_deref() {
        Some("core") => (Routing::Core, "core"),
        Some("legacy") => (Routing::Legacy, "legacy"),
        _ => return Err(AppError::bad_request("database must be core or legacy")),
    };
    let read = {
        let conn = state.store.lock()?;
        let tenant = tenants::get(&conn, &claims.company_id)?;
        let cluster = state.cluster(&conn);
        views::bootstrap(&cluster, &RollingSettings::from(&*state.settings), &tenant, database)
    };
    // The lock is released: parsing and building the answer hold no one up.
    let answer = read.and_then(views::BootstrapRows::into_answer).map(Json).map_err(|e| match e {
        BootstrapError::CoreMissing(db) => AppError::NotFound(
            code::CORE_MISSING,
            format!("{db} does not exist yet: the tenant is not cut over (run the rotate)"),
        ),
        BootstrapError::Rolling(e) => e.into(),
    })?;
    crate::recorded::bootstrap_answered(label, started.elapsed().as_secs_f64());
    Ok(answer)
}
