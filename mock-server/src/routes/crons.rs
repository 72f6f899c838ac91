//! The crons: listing (`sys_admin`), runs on demand and their progress (`sys_admin` or
//! `key_manager`, who trigger them and must be able to watch them).

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use protocol::routes;
use serde_json::{json, Value};

use crate::crons::{self, runner, runs, CRONS};
use crate::error::{AppError, AppResult};
use crate::extract::{query_number, AuthUser, ClientIp};
use crate::state::AppState;
use crate::store::audit::Actor;
use protocol::errors as code;
use protocol::permissions::{CRONS_READ, CRONS_RUN};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(routes::CRONS.path, get(list))
        .route(routes::CRON_RUN.path, get(run_status))
        .route(routes::RUN_CRON.path, post(run))
}

/// The crons' state needs `crons:read` (sys_admin), as the rest of the operators' reads do. Who
/// may only start them (`crons:run`, key_manager) is told which exist, with their state null:
/// knowing what one may start is part of being allowed to start it.
async fn list(State(state): State<AppState>, user: AuthUser) -> AppResult<Json<Value>> {
    if !user.may(CRONS_READ) {
        user.require_action(CRONS_RUN)?;
        let names: Vec<Value> = CRONS
            .iter()
            .map(|c| json!({"name": c.name, "description": c.description, "schedule": null, "scheduled": null, "running": null, "runId": null, "lastRunAt": null, "lastResult": null, "nextRunAt": null}))
            .collect();
        return Ok(Json(json!({ "crons": names })));
    }
    let now = state.clock.now_ms();
    let conn = state.store.lock()?;
    let mut out = Vec::new();
    for cron in &CRONS {
        let last = runs::last_finished(&conn, cron.name)?;
        let running = crate::crons::cluster_lock::holding(&conn, cron.name, now)?;
        let scheduled = crons::is_scheduled(cron, &state.settings);
        out.push(json!({
            "name": cron.name,
            "description": cron.description,
            "schedule": cron.schedule(),
            "scheduled": scheduled,
            "running": running.is_some(),
            "runId": running,
            "lastRunAt": last.as_ref().map(|r| r.started_at),
            "lastResult": last.as_ref().map(|r| r.status.clone()),
            "nextRunAt": if scheduled { Some(state.schedule.get(cron.name).unwrap_or_else(|| cron.next_after(now))) } else { None },
        }));
    }
    Ok(Json(json!({ "crons": out })))
}

/// 202 with the run (an already running one is returned, never doubled) and its `Location`.
async fn run(
    State(state): State<AppState>,
    user: AuthUser,
    ip: ClientIp,
    Path(name): Path<String>,
) -> AppResult<impl IntoResponse> {
    user.require_action(CRONS_RUN)?;
    let cron = crons::find(&name).ok_or_else(|| AppError::NotFound(code::UNKNOWN_CRON, format!("no cron {name:?}")))?;
    let (run_id, already) = runner::trigger(&state, cron, &Actor::user(&user.0, ip.0))?;
    tracing::info!(cron = cron.name, run = %run_id, already_running = already, by = %user.0.user_id, "cron run requested");
    let location = format!("/admin/crons/runs/{run_id}");
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        Json(json!({ "runId": run_id, "status": "running", "alreadyRunning": already })),
    ))
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogPage {
    log_from: Option<String>,
    log_limit: Option<String>,
}

/// A run; `?logFrom=&logLimit=` returns a page of its log (a 10,000-tenant rotate logs a line a
/// tenant), with `logTotal` the number of lines.
async fn run_status(
    State(state): State<AppState>,
    user: AuthUser,
    Path(run_id): Path<String>,
    Query(page): Query<LogPage>,
) -> AppResult<Json<Value>> {
    user.require_action(CRONS_READ)?;
    let (from, limit) = (
        query_number::<u64>(page.log_from.as_deref(), "logFrom")?,
        query_number::<u64>(page.log_limit.as_deref(), "logLimit")?,
    );
    let conn = state.store.lock()?;
    let (run, total) = runs::page(&conn, &run_id, from.unwrap_or(0), limit.unwrap_or(u64::MAX))?
        .ok_or_else(|| AppError::NotFound(code::UNKNOWN_RUN, format!("no run {run_id:?}")))?;
    let mut body = serde_json::to_value(&run)?;
    body["logTotal"] = json!(total);
    Ok(Json(body))
}
