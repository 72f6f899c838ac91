//! Management routes (docs/server.md, management), role- and tenant-checked: devices, companies, users and a
//! sale's payment reference. `sys_admin` sees every tenant; a `manager` manages its company; any
//! user sees and manages what is its own.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Json, Router};
use protocol::ops::audit as actions;
use protocol::records::{
    CompanyAnswer, CompanyChanges, CompanyList, DeviceAnswer, DeviceList, PaymentReference, SaleAnswer, UserAnswer,
    UserChanges, UserList,
};
use protocol::{routes, OkBody};
use serde_json::{json, Map, Value};

use crate::auth::passwords;
use crate::auth::secrets::random_id;
use crate::error::{AppError, AppResult};
use crate::extract::{ApiJson, AuthUser, ClientIp};
use crate::routes::table::Rows;
use crate::state::AppState;
use crate::store::audit::{self, Actor};
use crate::store::devices::{self, Device};
use crate::store::{companies, refresh_tokens, users};
use protocol::errors as code;

fn is_admin(user: &AuthUser) -> bool {
    user.0.roles.iter().any(|r| r == "sys_admin")
}

fn is_manager(user: &AuthUser) -> bool {
    is_admin(user) || user.0.roles.iter().any(|r| r == "manager")
}

pub fn router() -> Router<AppState> {
    Router::new()
        .row(routes::DEVICES, list_devices)
        .row(routes::ADD_DEVICE, add_device)
        .row(routes::DELETE_DEVICE, delete_device)
        .row(routes::COMPANIES, list_companies)
        .row(routes::COMPANY, get_company)
        .row(routes::UPDATE_COMPANY, update_company)
        .row(routes::DELETE_COMPANY, delete_company)
        .row(routes::PAYMENT_REFERENCE, update_payment_reference)
        .row(routes::USERS, list_users)
        .row(routes::ME, me)
        .row(routes::UPDATE_USER, update_user)
        .row(routes::DELETE_USER, delete_user)
}

async fn list_devices(State(state): State<AppState>, user: AuthUser) -> AppResult<Json<DeviceList>> {
    let conn = state.store.lock()?;
    let list = if is_manager(&user) {
        devices::for_company(&conn, &user.0.company_id)?
    } else {
        devices::for_user(&conn, &user.0.user_id)?
    };
    Ok(Json(DeviceList { devices: list }))
}

async fn add_device(
    State(state): State<AppState>,
    user: AuthUser,
    ApiJson(info): ApiJson<Map<String, Value>>,
) -> AppResult<(StatusCode, Json<DeviceAnswer>)> {
    let sdk_version = super::devices::sdk_version(&info)?;
    let now = state.clock.now_ms();
    let device = Device {
        id: random_id("dev"),
        user_id: user.0.user_id.clone(),
        company_id: user.0.company_id.clone(),
        sdk_version,
        is_online: true,
        last_seen_at: Some(now),
        info: Value::Object(info),
    };
    state.store.tx(|tx| Ok(devices::upsert(tx, &device, now)?))?;
    Ok((StatusCode::CREATED, Json(DeviceAnswer { device })))
}

async fn delete_device(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
) -> AppResult<Json<OkBody>> {
    let now = state.clock.now_ms();
    // A deleted device keeps nothing of its sessions: their refresh tokens, access tokens,
    // document headers (no sign-out window), live feeds and realtime sockets end with it.
    let ended = state.store.tx(|tx| {
        // Its own user sees it from any of their companies (GET /devices lists it there too).
        let device = devices::by_id(tx, &id)?
            .filter(|d| d.company_id == user.0.company_id || d.user_id == user.0.user_id || is_admin(&user));
        let device = device.ok_or_else(|| AppError::NotFound(code::UNKNOWN_DEVICE, format!("no device {id:?}")))?;
        // Its user's sessions end with it: only a caller who may manage that user removes it.
        let holder = users::by_id(tx, &device.user_id)?.map(|u| u.record.roles).unwrap_or_default();
        if !protocol::permissions::may_end_sessions_of(&user.0.roles, &holder, device.user_id == user.0.user_id) {
            return Err(AppError::Forbidden(
                "only its user, a manager for a user below sys_admin and key_manager, or sys_admin may remove a device"
                    .into(),
            ));
        }
        let sessions = devices::sessions_of(tx, &id)?;
        refresh_tokens::end_now(tx, &sessions, now)?;
        devices::delete(tx, &id)?;
        Ok(sessions)
    })?;
    state.sessions_ended(&ended);
    Ok(Json(OkBody { ok: true }))
}

/// The company `id`, or 404 `unknown_company`.
fn company(conn: &crate::store::sql::Connection, id: &str) -> AppResult<companies::Company> {
    companies::get(conn, id)?.ok_or_else(|| AppError::NotFound(code::UNKNOWN_COMPANY, format!("no company {id:?}")))
}

/// The user `id`, or 404 `unknown_user`.
fn user_by_id(conn: &crate::store::sql::Connection, id: &str) -> AppResult<users::User> {
    users::by_id(conn, id)?.ok_or_else(|| AppError::NotFound(code::UNKNOWN_USER, format!("no user {id:?}")))
}

/// The company, when the caller may see it.
fn visible_company(conn: &crate::store::sql::Connection, user: &AuthUser, id: &str) -> AppResult<companies::Company> {
    let company = company(conn, id)?;
    let member = users::by_id(conn, &user.0.user_id)?.is_some_and(|u| u.companies.iter().any(|c| c == id));
    if !member && !is_admin(user) {
        return Err(AppError::Forbidden(format!("not a member of {id}")));
    }
    Ok(company)
}

async fn list_companies(State(state): State<AppState>, user: AuthUser) -> AppResult<Json<CompanyList>> {
    let conn = state.store.lock()?;
    let all = companies::all(&conn)?;
    let list: Vec<companies::Company> = if is_admin(&user) {
        all
    } else {
        let mine = users::by_id(&conn, &user.0.user_id)?.map(|u| u.record.companies).unwrap_or_default();
        all.into_iter().filter(|c| mine.contains(&c.id)).collect()
    };
    Ok(Json(CompanyList { companies: list }))
}

async fn get_company(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
) -> AppResult<Json<CompanyAnswer>> {
    let conn = state.store.lock()?;
    Ok(Json(CompanyAnswer { company: visible_company(&conn, &user, &id)? }))
}

async fn update_company(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<CompanyChanges>,
) -> AppResult<Json<CompanyAnswer>> {
    let name = body.name.trim().to_owned();
    if name.is_empty() || name.len() > 100 {
        return Err(AppError::bad_request("name: a non-empty string of at most 100 characters"));
    }
    let company = state.store.tx(|tx| {
        visible_company(tx, &user, &id)?;
        if !is_manager(&user) {
            return Err(AppError::Forbidden("renaming a company needs manager or sys_admin".into()));
        }
        companies::rename(tx, &id, &name)?;
        company(tx, &id)
    })?;
    Ok(Json(CompanyAnswer { company }))
}

async fn delete_company(State(state): State<AppState>, Path(id): Path<String>) -> AppResult<Json<OkBody>> {
    state.store.tx(|tx| {
        company(tx, &id)?;
        if companies::references(tx, &id)? > 0 {
            return Err(AppError::Conflict(
                code::COMPANY_NOT_EMPTY,
                format!("{id} still has users, devices or databases; remove them first"),
            ));
        }
        companies::delete(tx, &id)?;
        Ok(())
    })?;
    Ok(Json(OkBody { ok: true }))
}

async fn update_payment_reference(
    State(state): State<AppState>,
    user: AuthUser,
    Path((company_id, sale_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<PaymentReference>,
) -> AppResult<Json<SaleAnswer>> {
    let reference = body.reference.trim().to_owned();
    if reference.is_empty() || reference.len() > 64 {
        return Err(AppError::bad_request("reference: a non-empty string of at most 64 characters"));
    }
    let sale = state.store.tx(|tx| {
        visible_company(tx, &user, &company_id)?;
        if companies::set_payment_reference(tx, &company_id, &sale_id, &reference)? == 0 {
            return Err(AppError::NotFound(code::UNKNOWN_SALE, format!("no sale {sale_id:?} in {company_id}")));
        }
        companies::sale(tx, &company_id, &sale_id)?
            .ok_or_else(|| AppError::NotFound(code::UNKNOWN_SALE, format!("no sale {sale_id:?} in {company_id}")))
    })?;
    Ok(Json(SaleAnswer { sale }))
}

async fn list_users(State(state): State<AppState>, user: AuthUser) -> AppResult<Json<UserList>> {
    let conn = state.store.lock()?;
    let list = if is_admin(&user) {
        users::all(&conn)?
    } else if is_manager(&user) {
        users::members(&conn, &user.0.company_id)?
    } else {
        return Err(AppError::Forbidden("listing users needs manager or sys_admin".into()));
    };
    Ok(Json(UserList { users: list.into_iter().map(|u| u.record).collect() }))
}

async fn me(State(state): State<AppState>, user: AuthUser) -> AppResult<Json<UserAnswer>> {
    let me = users::by_id(&state.store.lock()?, &user.0.user_id)?
        .ok_or_else(|| AppError::NotFound(code::UNKNOWN_USER, "the user no longer exists".into()))?;
    Ok(Json(UserAnswer { user: me.record }))
}

/// A password change needs the current password (a stolen access token is not enough), except
/// sys_admin resetting another user's; a password or role change ends every session of the user
/// (its refresh families are revoked: roles live in tokens, which must be re-issued).
async fn update_user(
    State(state): State<AppState>,
    user: AuthUser,
    ip: ClientIp,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<UserChanges>,
) -> AppResult<Json<UserAnswer>> {
    let UserChanges { password, current_password: current, roles } = body;
    if password.as_ref().is_some_and(|p| p.chars().count() < 8) {
        return Err(AppError::bad_request("password: at least 8 characters"));
    }
    if roles.as_ref().is_some_and(|r| r.iter().any(String::is_empty)) {
        return Err(AppError::bad_request("roles: an array of role names"));
    }
    let now = state.clock.now_ms();
    let updated = state.store.tx(|tx| {
        let target = user_by_id(tx, &id)?;
        if target.id != user.0.user_id && !is_admin(&user) {
            return Err(AppError::Forbidden("only the user or sys_admin may change a user".into()));
        }
        if roles.is_some() && !is_admin(&user) {
            return Err(AppError::Forbidden("only sys_admin may change roles".into()));
        }
        if let Some(p) = &password {
            let resetting_another = is_admin(&user) && target.id != user.0.user_id;
            if !resetting_another {
                let current = current.as_deref().ok_or_else(|| AppError::BadRequest(code::CURRENT_PASSWORD_REQUIRED, "changing a password needs currentPassword".into()))?;
                if !passwords::check(Some(&target.password_hash), &target.username, current).ok() {
                    return Err(AppError::Unauthorized(code::INVALID_CREDENTIALS, "the current password is wrong".into()));
                }
            }
            users::set_password_hash(tx, &id, &passwords::hash(p))?;
        }
        if let Some(r) = &roles {
            users::set_roles(tx, &id, r)?;
        }
        let mut ended = Vec::new();
        if password.is_some() || roles.is_some() {
            ended = refresh_tokens::revoke_user(tx, &id, now)?;
            let detail = json!({"companyId": target.company_id, "userId": id, "passwordChanged": password.is_some(), "roles": roles, "previousRoles": target.roles, "sessionsRevoked": ended.len()});
            audit::record(tx, &Actor::user(&user.0, ip.0), if roles.is_some() { actions::USER_ROLES } else { actions::USER_PASSWORD }, detail, now)?;
        }
        Ok((user_by_id(tx, &id)?, ended))
    })?;
    let (updated, ended) = updated;
    state.sessions_ended(&ended);
    Ok(Json(UserAnswer { user: updated.record }))
}

async fn delete_user(
    State(state): State<AppState>,
    user: AuthUser,
    ip: ClientIp,
    Path(id): Path<String>,
) -> AppResult<Json<OkBody>> {
    if id == user.0.user_id {
        return Err(AppError::Conflict(code::CANNOT_DELETE_SELF, "sys_admin cannot delete its own user".into()));
    }
    let now = state.clock.now_ms();
    let ended = state.store.tx(|tx| {
        let target = user_by_id(tx, &id)?;
        // Its sessions end before its rows go, so every replica refuses its access tokens.
        let ended = refresh_tokens::revoke_user(tx, &id, now)?;
        users::delete(tx, &id)?;
        audit::record(
            tx,
            &Actor::user(&user.0, ip.0),
            actions::USER_DELETE,
            json!({"companyId": target.company_id, "userId": id, "username": target.username}),
            now,
        )?;
        Ok(ended)
    })?;
    state.sessions_ended(&ended);
    Ok(Json(OkBody { ok: true }))
}
