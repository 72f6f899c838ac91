//! The crons: listing (`sys_admin`), runs on demand and their progress (`sys_admin` or
//! `key_manager`, who trigger them and must be able to watch them).

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::{Json, Router};
use protocol::routes;
use protocol::views::{CronInfo, CronRun, CronRunStarted, CronsView, RunStatus};

use crate::crons::{self, runner, runs, CRONS};
use crate::error::{AppError, AppResult};
use crate::extract::{query_number, AuthUser, ClientIp};
use crate::routes::table::Rows;
use crate::state::AppState;
use crate::store::audit::Actor;
use protocol::errors as code;
use protocol::permissions::CRONS_READ;

pub fn router() -> Router<AppState> {
    Router::new().row(routes::CRONS, list).row(routes::CRON_RUN, run_status).row(routes::RUN_CRON, run)
}

/// The crons' state needs `crons:read` (sys_admin), as the rest of the operators' reads do. Who
/// may only start them (`crons:run`, key_manager) is told which exist, with their state null:
/// knowing what one may start is part of being allowed to start it.
async fn list(State(state): State<AppState>, user: AuthUser) -> AppResult<Json<CronsView>> {
    let named = |c: &crate::crons::CronDef| CronInfo {
        name: c.name.to_owned(),
        description: c.description.to_owned(),
        schedule: None,
        scheduled: None,
        running: None,
        run_id: None,
        last_run_at: None,
        last_result: None,
        next_run_at: None,
    };
    if !user.may(CRONS_READ) {
        return Ok(Json(CronsView { crons: CRONS.iter().map(named).collect() }));
    }
    let now = state.clock.now_ms();
    let conn = state.store.lock()?;
    let mut out = Vec::new();
    for cron in &CRONS {
        let last = runs::last_finished(&conn, cron.name)?;
        let running = crate::crons::cluster_lock::holding(&conn, cron.name, now)?;
        let scheduled = crons::is_scheduled(cron, &state.settings);
        out.push(CronInfo {
            schedule: Some(cron.schedule()),
            scheduled: Some(scheduled),
            running: Some(running.is_some()),
            run_id: running,
            last_run_at: last.as_ref().map(|r| r.started_at),
            last_result: last.as_ref().map(|r| r.status),
            next_run_at: scheduled.then(|| state.schedule.get(cron.name).unwrap_or_else(|| cron.next_after(now))),
            ..named(cron)
        });
    }
    Ok(Json(CronsView { crons: out }))
}

/// 202 with the run (an already running one is returned, never doubled) and its `Location`.
async fn run(
    State(state): State<AppState>,
    user: AuthUser,
    ip: ClientIp,
    Path(name): Path<String>,
) -> AppResult<impl IntoResponse> {
    let cron = crons::find(&name).ok_or_else(|| AppError::NotFound(code::UNKNOWN_CRON, format!("no cron {name:?}")))?;
    let (run_id, already) = runner::trigger(&state, cron, &Actor::user(&user.0, ip.0))?;
    tracing::info!(cron = cron.name, run = %run_id, already_running = already, by = %user.0.user_id, "cron run requested");
    let location = format!("/admin/crons/runs/{run_id}");
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        Json(CronRunStarted { run_id, status: RunStatus::Running, already_running: already }),
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
    Path(run_id): Path<String>,
    Query(page): Query<LogPage>,
) -> AppResult<Json<CronRun>> {
    let (from, limit) = (
        query_number::<u64>(page.log_from.as_deref(), "logFrom")?,
        query_number::<u64>(page.log_limit.as_deref(), "logLimit")?,
    );
    let conn = state.store.lock()?;
    let (run, _) = runs::page(&conn, &run_id, from.unwrap_or(0), limit.unwrap_or(u64::MAX))?
        .ok_or_else(|| AppError::NotFound(code::UNKNOWN_RUN, format!("no run {run_id:?}")))?;
    Ok(Json(run))
}
