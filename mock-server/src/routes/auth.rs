//! Session routes: login (password and Google mock), refresh, registration, logout, and the
//! mock-only company switch. The session rules (sign-in and the account's lock, rotation and
//! reuse, the sign-out window) are `auth/`'s; these handlers read the request, run them in a
//! transaction and answer.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Json, Router};
use protocol::errors as code;
use protocol::ops::audit as actions;
use protocol::records::{NewCompany, NewUserRequest, SignedUp, UserAnswer};
use protocol::routes;
use protocol::{
    ActiveCompany, AuthResponse, DeviceNonce, GoogleLoginRequest, LoginRequest, LogoutRequest, OkBody, RefreshRequest,
};
use serde_json::json;

use crate::auth::errors::AuthError;
use crate::auth::passwords::{self, Checked};
use crate::auth::refresh::{self, Outcome};
use crate::auth::secrets::random_id;
use crate::auth::{device_keys, sign_in, sign_out};
use crate::error::{AppError, AppResult};
use crate::extract::{ApiJson, AuthUser, ClientIp, SignedUser};
use crate::routes::table::Rows;
use crate::seed;
use crate::state::AppState;
use crate::store::audit::{self, Actor};
use crate::store::users::{self, User};

pub const GOOGLE_PREFIX: &str = "mock-google:";

/// Outside the sign-in rate limit: a nonce stores nothing and costs one HMAC, and drawn from the
/// sign-in bucket every keyed refresh would cost two of its tokens (a busy shop's shared address
/// could then run dry, and a refresh without its proof is refused).
pub fn nonce_router() -> Router<AppState> {
    Router::new().row(routes::DEVICE_NONCE, device_nonce)
}

pub fn router() -> Router<AppState> {
    Router::new()
        .row(routes::LOGIN, login)
        .row(routes::LOGIN_GOOGLE, login_with_google)
        .row(routes::REFRESH, refresh)
        .row(routes::REGISTER, sign_up)
        .row(routes::CREATE_USER, create_user)
        .row(routes::LOGOUT, logout)
        .row(routes::SWITCH_COMPANY, switch_company)
}

/// `POST /auth/device-nonce`: what a device signs to prove it holds its key (`auth::device_keys`).
async fn device_nonce(State(state): State<AppState>) -> Json<DeviceNonce> {
    Json(DeviceNonce { nonce: device_keys::nonce(&state.tokens.docdb_key, state.clock.now_ms()) })
}

/// A sign-in by password (`auth::sign_in`): the password is checked off the async workers.
async fn login(
    State(state): State<AppState>,
    ip: ClientIp,
    ApiJson(req): ApiJson<LoginRequest>,
) -> AppResult<Json<AuthResponse>> {
    sign_in::credentials_given(&req)?;
    let now = state.clock.now_ms();
    let sign_in = sign_in::SignIn::password(&req);
    let gate = state.store.shared_transaction(|tx| sign_in::gate(tx, &state.tokens.docdb_key, &sign_in, now))?;
    gate.open(now)?;
    // Checked even for an unknown user (against a decoy): same work, same answer.
    let stored = gate.user.as_ref().map(|u| u.password_hash.clone());
    let (username, password) = (req.username.clone(), req.password.clone());
    let checked = state.hashing.run(move || passwords::check(stored.as_deref(), &username, &password)).await?;
    let Some(user) = gate.user.as_ref().filter(|_| checked.ok()) else {
        state.store.shared_transaction(|tx| sign_in::failed(tx, &state.settings, &req.username, ip.0, now))?;
        return Err(AuthError::InvalidCredentials.into());
    };
    let device = sign_in.device;
    sign_in::succeeded(&state.store.lock()?, &gate, user, device, now)?;
    if checked == Checked::ValidLegacy {
        let password = req.password.clone();
        let rehashed = state.hashing.run(move || passwords::hash(&password)).await?;
        users::set_password_hash(&state.store.lock()?, &user.id, &rehashed)?;
    }
    let device = device.filter(|_| gate.on_device);
    Ok(Json(state.store.shared_transaction(|tx| state.issuer().start(tx, user, device, now))?))
}

async fn login_with_google(
    State(state): State<AppState>,
    ApiJson(req): ApiJson<GoogleLoginRequest>,
) -> AppResult<Json<AuthResponse>> {
    let username = req.credential.strip_prefix(GOOGLE_PREFIX).filter(|u| !u.is_empty()).ok_or_else(|| {
        AppError::Unauthorized(
            code::INVALID_CREDENTIAL,
            format!("the identity provider did not vouch for this credential (expected {GOOGLE_PREFIX}<username>)"),
        )
    })?;
    // The device rule of a password's sign-in: on a keyed device the session runs on it (bound to
    // its key, ended with it) only when the sign-in proves the key.
    let now = state.clock.now_ms();
    let sign_in = sign_in::SignIn::google(&req, username);
    let gate = state.store.shared_transaction(|tx| sign_in::gate(tx, &state.tokens.docdb_key, &sign_in, now))?;
    let user = gate.user.as_ref().ok_or(AuthError::InvalidCredentials)?;
    sign_in::succeeded(&state.store.lock()?, &gate, user, sign_in.device, now)?;
    let device = sign_in.device.filter(|_| gate.on_device);
    Ok(Json(state.store.shared_transaction(|tx| state.issuer().start(tx, user, device, now))?))
}

/// Rotation and reuse (`auth::refresh`).
async fn refresh(
    State(state): State<AppState>,
    ApiJson(req): ApiJson<RefreshRequest>,
) -> AppResult<Json<AuthResponse>> {
    let now = state.clock.now_ms();
    match state.store.shared_transaction(|tx| refresh::rotate(tx, state.issuer(), &req, now))? {
        Outcome::Issued(auth) => Ok(Json(auth)),
        Outcome::Reused(family) => {
            state.sessions_ended(&[family]);
            Err(AuthError::RefreshTokenReused.into())
        }
        Outcome::Replayed => Err(AuthError::RefreshTokenReplayed.into()),
    }
}

fn valid_username(u: &str) -> bool {
    (3..=64).contains(&u.len()) && u.chars().all(|c| c.is_ascii_alphanumeric() || "._@-".contains(c))
}

/// A company id that names databases safely: lowercase letters, digits and `-`.
fn valid_company_id(id: &str) -> bool {
    (3..=40).contains(&id.len())
        && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !id.starts_with('-')
}

fn check_credentials(req: &NewUserRequest) -> AppResult<()> {
    if !valid_username(&req.username) {
        return Err(AppError::bad_request("username: 3 to 64 letters, digits or . _ @ -"));
    }
    if req.password.chars().count() < 8 {
        return Err(AppError::bad_request("password: at least 8 characters"));
    }
    Ok(())
}

fn new_user(req: &NewUserRequest, company_id: &str, roles: Vec<String>) -> User {
    let record = protocol::records::User {
        id: random_id("user"),
        username: req.username.clone(),
        company_id: company_id.to_owned(),
        companies: vec![company_id.to_owned()],
        roles,
    };
    User { record, password_hash: passwords::hash(&req.password) }
}

fn insert_user(tx: &crate::store::sql::Connection, user: &User, now: i64) -> AppResult<()> {
    if users::by_username(tx, &user.username)?.is_some() {
        return Err(AppError::Conflict(code::USERNAME_TAKEN, format!("the user name {:?} is taken", user.username)));
    }
    users::insert(tx, user, now)?;
    Ok(())
}

/// `/register-user`: creating a user in an existing company is a manager's or sys_admin's act.
/// A manager creates users (cashiers) in its own active company; only sys_admin picks roles or
/// another company.
async fn create_user(
    State(state): State<AppState>,
    caller: AuthUser,
    ip: ClientIp,
    ApiJson(req): ApiJson<NewUserRequest>,
) -> AppResult<(StatusCode, Json<UserAnswer>)> {
    check_credentials(&req)?;
    let is_admin = caller.has("sys_admin");
    let company_id = req.company_id.clone().unwrap_or_else(|| caller.0.company_id.clone());
    if !is_admin {
        caller.require_any(&["manager"])?;
        if company_id != caller.0.company_id {
            return Err(AppError::Forbidden("a manager creates users in its own company only".into()));
        }
        if let Some(roles) = &req.roles {
            return Err(AppError::Forbidden(format!("only sys_admin may assign roles ({})", roles.join(", "))));
        }
    }
    let user = new_user(&req, &company_id, req.roles.clone().unwrap_or_else(|| vec!["cashier".to_owned()]));
    let now = state.clock.now_ms();
    state.store.tx(|tx| {
        if !users::company_exists(tx, &company_id)? {
            return Err(AppError::NotFound(code::UNKNOWN_COMPANY, format!("no company {company_id:?}")));
        }
        insert_user(tx, &user, now)?;
        audit::record(
            tx,
            &Actor::user(&caller.0, ip.0),
            actions::USER_CREATE,
            json!({"companyId": company_id, "userId": user.id, "username": user.username, "roles": user.roles}),
            now,
        )?;
        Ok(())
    })?;
    Ok((StatusCode::CREATED, Json(UserAnswer { user: user.record })))
}

/// `/auth/register`: public sign-up. It never joins an existing company: it creates the user's
/// own new tenant (seeded as the demo's are, with a legacy catalogue) with the user as its
/// manager. `companyId` (default: derived from the user name) must be free.
async fn sign_up(
    State(state): State<AppState>,
    ip: ClientIp,
    ApiJson(req): ApiJson<NewUserRequest>,
) -> AppResult<(StatusCode, Json<SignedUp>)> {
    check_credentials(&req)?;
    if req.roles.is_some() {
        return Err(AppError::Forbidden(
            "roles cannot be chosen at sign-up: the new company's first user is its manager".into(),
        ));
    }
    let company_id = match &req.company_id {
        Some(id) => id.clone(),
        None => {
            req.username.to_ascii_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
        }
    };
    if !valid_company_id(&company_id) {
        return Err(AppError::bad_request("companyId: 3 to 40 lowercase letters, digits or -"));
    }
    let name = req.company_name.clone().filter(|n| !n.trim().is_empty()).unwrap_or_else(|| company_id.clone());
    let user = new_user(&req, &company_id, vec!["manager".to_owned()]);
    let now = state.clock.now_ms();
    state.store.tx(|tx| {
        if users::company_exists(tx, &company_id)? {
            return Err(AppError::Conflict(
                code::COMPANY_EXISTS,
                format!("the company {company_id:?} exists: sign-up creates a new company; ask a manager of {company_id:?} to create your user"),
            ));
        }
        seed::create_tenant(&state.cluster(tx), &state.settings, &company_id, &name, now)?;
        insert_user(tx, &user, now)?;
        let actor = Actor { id: user.id.clone(), ip: ip.0 };
        audit::record(tx, &actor, actions::COMPANY_SIGN_UP, json!({"companyId": company_id, "userId": user.id, "username": user.username}), now)?;
        Ok(())
    })?;
    Ok((StatusCode::CREATED, Json(SignedUp { user: user.record, company: NewCompany { id: company_id, name } })))
}

/// Accepts an expired token: ending a session must not need a fresh one; a session bound to its
/// device's key needs that key's proof (`auth::sign_out`).
async fn logout(
    State(state): State<AppState>,
    SignedUser(claims): SignedUser,
    ApiJson(req): ApiJson<LogoutRequest>,
) -> AppResult<Json<OkBody>> {
    let now = state.clock.now_ms();
    let ended = state
        .store
        .transaction(|tx| sign_out::logout(tx, &state.settings, &state.tokens.docdb_key, &claims, &req, now))?;
    state.sessions_ended(&ended);
    Ok(Json(OkBody { ok: true }))
}

/// Mock-only: a multi-company user picks the company the next refresh carries.
async fn switch_company(
    State(state): State<AppState>,
    AuthUser(claims): AuthUser,
    ApiJson(req): ApiJson<ActiveCompany>,
) -> AppResult<Json<ActiveCompany>> {
    state.store.tx(|tx| {
        let user = users::by_id(tx, &claims.user_id)?
            .ok_or_else(|| AppError::NotFound(code::UNKNOWN_USER, "the user no longer exists".into()))?;
        if !user.companies.contains(&req.company_id) {
            return Err(AppError::Forbidden(format!("the user does not belong to company {:?}", req.company_id)));
        }
        if user.company_id != req.company_id {
            users::set_active_company(tx, &user.id, &req.company_id)?;
            crate::rolling::alarms::company_changed(tx, &user.id)?;
        }
        Ok(())
    })?;
    Ok(Json(req))
}
