//! Operators' routes: the fleet and cluster reads (`sys_admin`), flag changes and tenant
//! invalidation (`sys_admin` or `key_manager`), a tenant's device losses and their
//! acknowledgement (`rollingDb:losses`).

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::{Json, Router};
use protocol::losses::{AcknowledgeLosses, LossesAcknowledged, TenantLosses, MAX_ACKNOWLEDGED};
use protocol::ops::audit as actions;
use protocol::records::AuditPage;
use protocol::routes;
use protocol::views::{DayReleased, FlagsChanged, Rewarm, RewarmRequest, TenantCoreWrites};
use serde::Deserialize;
use serde_json::json;

use crate::error::{AppError, AppResult};
use crate::extract::{query_number, ApiJson, AuthUser, ClientIp};
use crate::rolling::checkpoints::{Checkpoint, Request};
use crate::rolling::flags::{self, FlagPatch};
use crate::rolling::invalidation;
use crate::rolling::{flag_change, preflight, tenants, views, RollingSettings};
use crate::routes::table::Rows;
use crate::state::AppState;
use crate::store::audit::{self, Actor};
use protocol::errors as code;
use protocol::permissions::ROLLING_DB_FORCE;

pub fn router() -> Router<AppState> {
    Router::new()
        .row(routes::CLUSTER, cluster)
        .row(routes::TENANTS, fleet)
        .row(routes::RECONCILIATION, reconciliation)
        .row(routes::CLEANUP_CANDIDATES, cleanup_candidates)
        .row(routes::TOPOLOGY, topology)
        .row(routes::PREFLIGHT, preflight)
        .row(routes::FLAGS, set_flags)
        .row(routes::INVALIDATE_CLIENTS, invalidate_clients)
        .row(routes::CORE_WRITES, core_writes)
        .row(routes::REWARM, rewarm)
        .row(routes::RELEASE_DAY, release_day)
        .row(routes::AUDIT, audit_log)
        .row(routes::TENANT_LOSSES, tenant_losses)
        .row(routes::ACKNOWLEDGE_LOSSES, acknowledge_losses)
}

/// Query strings are read as text, so a malformed number gets the error body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuditQuery {
    company_id: Option<String>,
    before: Option<String>,
    limit: Option<String>,
}

/// `GET /admin/audit?companyId=&before=&limit=`: newest first, a page at a time (`before` is the
/// last `id` of the previous page; `nextBefore` is `null` on the last page).
async fn audit_log(State(state): State<AppState>, Query(q): Query<AuditQuery>) -> AppResult<Json<AuditPage>> {
    let limit = query_number::<u32>(q.limit.as_deref(), "limit")?.unwrap_or(50).clamp(1, 500);
    let before = query_number::<i64>(q.before.as_deref(), "before")?;
    let entries = audit::list(&state.store.lock()?, q.company_id.as_deref(), before, limit)?;
    let next_before = if entries.len() == limit as usize { entries.last().map(|e| e.id) } else { None };
    Ok(Json(AuditPage { entries, next_before }))
}

fn settings(state: &AppState) -> RollingSettings {
    RollingSettings::from(&*state.settings)
}

async fn cluster(State(state): State<AppState>) -> AppResult<Json<protocol::views::ClusterView>> {
    Ok(Json(views::cluster(&state.cluster(&state.store.lock()?))?))
}

async fn fleet(State(state): State<AppState>) -> AppResult<Json<protocol::views::TenantsView>> {
    Ok(Json(views::tenants(&state.store.lock()?, &settings(&state))?))
}

async fn reconciliation(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> AppResult<Json<protocol::views::Reconciliation>> {
    let conn = state.store.lock()?;
    let tenant = tenants::get(&conn, &id)?;
    let cluster = state.cluster(&conn);
    Ok(Json(views::reconciliation(&cluster, &settings(&state), &tenant, state.clock.now_ms())?))
}

async fn cleanup_candidates(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> AppResult<Json<protocol::views::CleanupCandidates>> {
    let conn = state.store.lock()?;
    let tenant = tenants::get(&conn, &id)?;
    let cluster = state.cluster(&conn);
    Ok(Json(views::cleanup_candidates(&cluster, &settings(&state), &tenant, state.clock.now_ms())?))
}

async fn topology(State(state): State<AppState>, Path(id): Path<String>) -> AppResult<Json<protocol::views::Topology>> {
    let conn = state.store.lock()?;
    let tenant = tenants::get(&conn, &id)?;
    let cluster = state.cluster(&conn);
    Ok(Json(views::topology(&cluster, &settings(&state), &tenant)?))
}

/// The rollout's prerequisites for each flag, for whoever may switch flags.
async fn preflight(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> AppResult<Json<protocol::views::Preflight>> {
    let now = state.clock.now_ms();
    Ok(Json(preflight::both(&state.cluster(&state.store.lock()?), &settings(&state), &id, now)?))
}

#[derive(Deserialize)]
struct ForceQuery {
    force: Option<String>,
}

fn parse_force(q: &ForceQuery) -> AppResult<bool> {
    match q.force.as_deref() {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(AppError::bad_request(format!("force must be true or false, got {other:?}"))),
    }
}

/// Changes flags and nothing else: the next rotate acts on them.
async fn set_flags(
    State(state): State<AppState>,
    user: AuthUser,
    ip: ClientIp,
    Path(id): Path<String>,
    Query(query): Query<ForceQuery>,
    ApiJson(patch): ApiJson<FlagPatch>,
) -> AppResult<Json<FlagsChanged>> {
    let force = parse_force(&query)?;
    if force && !user.may(ROLLING_DB_FORCE) {
        return Err(AppError::Forbidden("?force=true overrides the flag's prerequisites: sys_admin only".into()));
    }
    let now = state.clock.now_ms();
    let rolling = settings(&state);
    state.test.checkpoints.pass(Checkpoint::Before { request: Request::Flags, tenant: &id }).await;
    let flags = state.store.tx(|tx| {
        let applied = flag_change::apply(&state.cluster(tx), &rolling, &id, patch, &user.0.user_id, force, now)?;
        let detail = json!({"companyId": id, "request": patch, "before": applied.before, "after": applied.flags, "forced": force, "overridden": applied.overridden, "coreWrittenSinceWarm": applied.core_written_since_warm});
        audit::record(tx, &Actor::user(&user.0, ip.0), if force { actions::FLAGS_FORCE } else { actions::FLAGS_CHANGE }, detail, now)?;
        Ok::<_, AppError>(FlagsChanged { flags: applied.flags, core_written_since_warm: applied.core_written_since_warm })
    })?;
    state.test.checkpoints.pass(Checkpoint::Committed { request: Request::Flags, tenant: &id }).await;
    let left = flags.core_written_since_warm.as_ref().map_or(0, |w| w.count);
    tracing::info!(tenant = %id, by = %user.0.user_id, rolling_db = flags.flags.rolling_db, rolling_db_drop = flags.flags.rolling_db_drop, core_written_since_warm = left, "flags changed");
    Ok(Json(flags))
}

/// What a rollback would leave behind in CORE now (documents written there since its warm that
/// the legacy catalogue lacks), for whoever may switch flags: the console shows it before asking.
async fn core_writes(State(state): State<AppState>, Path(id): Path<String>) -> AppResult<Json<TenantCoreWrites>> {
    let conn = state.store.lock()?;
    let tenant = tenants::get(&conn, &id)?;
    let cluster = state.cluster(&conn);
    let writes = crate::rolling::warm::core_writes(&cluster, &tenant.names(&state.settings.db_prefix))?;
    let rolling_db = flags::get(&conn, &tenant.id)?.rolling_db;
    Ok(Json(TenantCoreWrites { company_id: tenant.id, rolling_db, core_written_since_warm: writes }))
}

/// Re-warm: CORE snapshotted, then dropped for the next rotate to recreate with fresh revisions
/// (sys_admin only, audited with the snapshot); refused while devices are routed to CORE unless
/// they are invalidated with it, and while CORE holds documents written since its warm unless
/// `?confirm=` names their count.
async fn rewarm(
    State(state): State<AppState>,
    user: AuthUser,
    ip: ClientIp,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    ApiJson(req): ApiJson<RewarmRequest>,
) -> AppResult<Json<Rewarm>> {
    let confirm = query_number::<usize>(query.get("confirm").map(String::as_str), "confirm")?;
    let backup_dir = RollingSettings::from(&*state.settings).backup_dir;
    let now = state.clock.now_ms();
    state.test.checkpoints.pass(Checkpoint::Before { request: Request::Rewarm, tenant: &id }).await;
    let done = state.store.tx(|tx| {
        let done = crate::rolling::rewarm::rewarm(
            &state.cluster(tx),
            &state.settings.db_prefix,
            &backup_dir,
            &id,
            req.invalidate.unwrap_or(false),
            confirm,
            now,
        )?;
        audit::record(tx, &Actor::user(&user.0, ip.0), actions::CORE_REWARM, json!(done), now)?;
        Ok::<_, AppError>(done)
    })?;
    state.test.checkpoints.pass(Checkpoint::Committed { request: Request::Rewarm, tenant: &id }).await;
    if done.invalidated_at.is_some() {
        state.tenant_invalidated(&id);
    }
    tracing::info!(tenant = %id, core = %done.dropped, by = %user.0.user_id, "CORE dropped for a re-warm");
    Ok(Json(done))
}

/// A held day database (a restored one) released to the drop's usual locks: `rollingDb:release`
/// (sys_admin only), audited. 404 when the tenant holds no such day.
async fn release_day(
    State(state): State<AppState>,
    user: AuthUser,
    ip: ClientIp,
    Path((id, db)): Path<(String, String)>,
) -> AppResult<Json<DayReleased>> {
    let now = state.clock.now_ms();
    state.store.tx(|tx| {
        let ours = crate::rolling::days::day_databases(tx, &id)?.into_iter().any(|d| d.name == db && d.held);
        if !ours || !crate::rolling::days::release(tx, &db)? {
            return Err(AppError::NotFound(code::NOT_FOUND, format!("{id} holds no day database {db}")));
        }
        audit::record(tx, &Actor::user(&user.0, ip.0), actions::DAY_RELEASE, json!({"companyId": id, "db": db}), now)?;
        Ok(())
    })?;
    tracing::info!(tenant = %id, db = %db, by = %user.0.user_id, "held day database released");
    Ok(Json(DayReleased { company_id: id, db, held: false }))
}

/// Every device of the tenant re-bootstraps at its next handshake, from where the tenant's
/// catalogue lives now (CORE, or the legacy database after a rollback).
async fn invalidate_clients(
    State(state): State<AppState>,
    user: AuthUser,
    ip: ClientIp,
    Path(id): Path<String>,
) -> AppResult<Json<protocol::views::InvalidationResult>> {
    let now = state.clock.now_ms();
    state.test.checkpoints.pass(Checkpoint::Before { request: Request::Invalidate, tenant: &id }).await;
    let (at, routing) = state.store.tx(|tx| {
        let (at, routing) = invalidation::invalidate_tenant(tx, &state.settings.db_prefix, &id, now)?;
        audit::record(
            tx,
            &Actor::user(&user.0, ip.0),
            actions::CLIENTS_INVALIDATE,
            json!({"companyId": id, "invalidatedAt": at, "routing": routing.as_str()}),
            now,
        )?;
        Ok::<_, AppError>((at, routing))
    })?;
    state.test.checkpoints.pass(Checkpoint::Committed { request: Request::Invalidate, tenant: &id }).await;
    state.tenant_invalidated(&id);
    tracing::info!(tenant = %id, routing = routing.as_str(), by = %user.0.user_id, "clients invalidated");
    Ok(Json(protocol::views::InvalidationResult { company_id: id, invalidated_at: at }))
}

/// `GET /admin/rolling-db/tenants/{id}/losses`: the tenant's unresolved loss reports, oldest
/// first (at most `MAX_ACKNOWLEDGED`), what an operator reviews before acknowledging them.
async fn tenant_losses(State(state): State<AppState>, Path(id): Path<String>) -> AppResult<Json<TenantLosses>> {
    let conn = state.store.lock()?;
    let tenant = tenants::get(&conn, &id)?;
    let reports = crate::store::device_losses::unresolved(&conn, &tenant.id, MAX_ACKNOWLEDGED)?;
    Ok(Json(TenantLosses { company_id: tenant.id, reports }))
}

/// `POST /admin/rolling-db/tenants/{id}/losses/acknowledge`: the operator recovered the reports it
/// names, of a tenant the rollback does not apply to (`rolling::losses`); audited with them.
async fn acknowledge_losses(
    State(state): State<AppState>,
    user: AuthUser,
    ip: ClientIp,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<AcknowledgeLosses>,
) -> AppResult<Json<LossesAcknowledged>> {
    let now = state.clock.now_ms();
    let done = state.store.tx(|tx| {
        let done = crate::rolling::losses::acknowledge(tx, &id, &body.report_ids, now)?;
        audit::record(
            tx,
            &Actor::user(&user.0, ip.0),
            actions::DEVICE_LOSS_ACKNOWLEDGED,
            json!({"companyId": id, "reportIds": body.report_ids, "acknowledged": done.acknowledged, "open": done.open}),
            now,
        )?;
        Ok::<_, AppError>(done)
    })?;
    tracing::info!(tenant = %id, by = %user.0.user_id, acknowledged = done.acknowledged.len(), open = done.open, "device losses acknowledged");
    Ok(Json(done))
}
