//! Test controls, mounted only with `MOCK_TEST_CONTROLS`: move the clock, restore the demo data,
//! count requests. They answer only callers on this machine (loopback): `make demo` turns them
//! on, and a demo reachable from a network must not let anyone wipe or time-travel its data.

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use protocol::OkBody;
use serde::{Deserialize, Serialize};

use crate::clock::{Clock, DAY_MS};
use crate::error::{AppError, AppResult};
use crate::extract::{ApiJson, ClientIp};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/__mock/clock", post(clock).get(now))
        .route("/__mock/reset", post(reset))
        .route("/__mock/stats", get(stats))
        .route("/__mock/slow", post(slow))
        .route_layer(middleware::from_fn(loopback_only))
}

async fn loopback_only(ip: ClientIp, request: Request, next: Next) -> Response {
    match ip.0 {
        Some(addr) if !addr.is_loopback() => {
            AppError::Forbidden("the test controls answer only callers on the server's own machine".into())
                .into_response()
        }
        _ => next.run(request).await,
    }
}

/// The pause between tenants, asked for and (capped at a minute) answered.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
struct SlowRequest {
    step_delay_ms: u64,
}

/// Pauses every cron between tenants, so a test can stop the server in the middle of a run.
async fn slow(State(state): State<AppState>, ApiJson(req): ApiJson<SlowRequest>) -> Json<SlowRequest> {
    state.test.set_step_delay_ms(req.step_delay_ms.min(60_000));
    Json(SlowRequest { step_delay_ms: state.test.step_delay_ms() })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
struct ClockRequest {
    now: Option<i64>,
    advance_days: Option<f64>,
}

/// The server's time (ms since the epoch).
#[derive(Serialize)]
struct Now {
    now: i64,
}

/// Requests counted by route template.
#[derive(Serialize)]
struct Stats {
    requests: std::collections::BTreeMap<String, u64>,
}

async fn clock(State(state): State<AppState>, ApiJson(req): ApiJson<ClockRequest>) -> AppResult<Json<Now>> {
    let offset = match (req.now, req.advance_days) {
        (Some(now), None) => Clock::offset_for(now),
        (None, Some(days)) if days.is_finite() => state.clock.offset_ms().saturating_add((days * DAY_MS as f64) as i64),
        _ => return Err(AppError::bad_request("send exactly one of {now: <ms>} or {advanceDays: <number>}")),
    };
    state.move_clock(offset)?;
    Ok(Json(Now { now: state.clock.now_ms() }))
}

async fn now(State(state): State<AppState>) -> Json<Now> {
    Json(Now { now: state.clock.now_ms() })
}

async fn reset(State(state): State<AppState>) -> AppResult<Json<OkBody>> {
    state.move_clock(0)?;
    state.test.set_step_delay_ms(0);
    crate::seed::reset(&state.store, &state.settings, state.engine.as_ref(), state.clock.now_ms())?;
    Ok(Json(OkBody { ok: true }))
}

async fn stats(State(state): State<AppState>) -> Json<Stats> {
    Json(Stats { requests: state.stats.snapshot() })
}
