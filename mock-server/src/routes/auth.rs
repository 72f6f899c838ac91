//! Session routes: login (password and Google mock), refresh with rotation and reuse
//! detection, registration, logout, and the mock-only company switch.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use session_broker::protocol::{AuthResponse, GoogleLoginRequest, LoginRequest, LogoutRequest, OkBody, RefreshRequest};

use crate::auth::secrets::{docdb_headers, password_hash, random_id, random_token, token_hash};
use crate::error::{AppError, AppResult};
use crate::extract::{ApiJson, AuthUser, MaybeAuthUser, SignedUser};
use crate::state::AppState;
use crate::store::users::User;
use crate::store::{devices, refresh_tokens, users};

pub const GOOGLE_PREFIX: &str = "mock-google:";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/auth", post(login))
        .route("/auth/google", post(login_with_google))
        .route("/auth/refresh", post(refresh))
        .route("/auth/register", post(register))
        .route("/register-user", post(register))
        .route("/auth/logout", post(logout))
        .route("/auth/company", post(switch_company))
}

fn bad_credentials() -> AppError {
    AppError::Unauthorized("invalid_credentials", "wrong user name or password".into())
}

/// A new refresh token in `family` and an access token for the user's active company.
fn issue(state: &AppState, tx: &rusqlite::Connection, user: &User, family: &str) -> AppResult<AuthResponse> {
    let now = state.clock.now_ms();
    let refresh = random_token();
    let ttl = state.settings.refresh_token_ttl_secs;
    refresh_tokens::insert(tx, &token_hash(&refresh), family, &user.id, now + ttl as i64 * 1000, now)?;
    let token = state.tokens.issue(&user.id, &user.company_id, &user.roles, family, now.div_euclid(1000))?;
    Ok(AuthResponse {
        token,
        expires_in: state.tokens.access_ttl_secs,
        refresh_token: refresh,
        refresh_expires_in: ttl,
        docdb_headers: Some(docdb_headers(&state.settings.jwt_secret, &user.id, &user.company_id, &user.roles)),
    })
}

fn start_session(state: &AppState, user: Option<User>) -> AppResult<Json<AuthResponse>> {
    let user = user.ok_or_else(bad_credentials)?;
    state.store.tx(|tx| issue(state, tx, &user, &random_id("sess"))).map(Json)
}

async fn login(State(state): State<AppState>, ApiJson(req): ApiJson<LoginRequest>) -> AppResult<Json<AuthResponse>> {
    if req.username.is_empty() || req.password.is_empty() {
        return Err(AppError::bad_request("username and password are required"));
    }
    let user = users::by_username(&state.store.lock(), &req.username)?;
    let user = user.filter(|u| u.password_hash == password_hash(&req.username, &req.password));
    start_session(&state, user)
}

async fn login_with_google(State(state): State<AppState>, ApiJson(req): ApiJson<GoogleLoginRequest>) -> AppResult<Json<AuthResponse>> {
    let username = req.credential.strip_prefix(GOOGLE_PREFIX).filter(|u| !u.is_empty()).ok_or_else(|| {
        AppError::Unauthorized("invalid_credential", format!("the identity provider did not vouch for this credential (expected {GOOGLE_PREFIX}<username>)"))
    })?;
    let user = users::by_username(&state.store.lock(), username)?;
    start_session(&state, user)
}

enum RefreshOutcome {
    Issued(AuthResponse),
    Reused,
    /// A second replay inside the grace window: refused, the family kept.
    Replayed,
}

async fn refresh(State(state): State<AppState>, ApiJson(req): ApiJson<RefreshRequest>) -> AppResult<Json<AuthResponse>> {
    let now = state.clock.now_ms();
    let hash = token_hash(&req.refresh_token);
    // The family's revocation must commit even though the answer is an error: decide inside,
    // answer outside.
    let outcome = state.store.tx(|tx| {
        let rt = refresh_tokens::find(tx, &hash)?.ok_or_else(|| AppError::Unauthorized("invalid_refresh_token", "unknown refresh token".into()))?;
        if rt.revoked_at.is_some() {
            return Err(AppError::Unauthorized("refresh_token_revoked", "this session has ended; log in again".into()));
        }
        if rt.expires_at <= now {
            return Err(AppError::Unauthorized("refresh_token_expired", "the refresh token has expired; log in again".into()));
        }
        if let Some(used_at) = rt.used_at {
            let grace_ms = i64::try_from(state.settings.refresh_reuse_grace_secs).unwrap_or(i64::MAX).saturating_mul(1000);
            if grace_ms == 0 || now.saturating_sub(used_at) > grace_ms {
                refresh_tokens::revoke_family(tx, &rt.family_id, now)?;
                tracing::warn!(family = %rt.family_id, "refresh token reused after the grace window: family revoked");
                return Ok(RefreshOutcome::Reused);
            }
            // Inside the window a racing tab gets one successor, a replaying thief no more.
            if !state.grace_replays.first(&hash, now, grace_ms) {
                return Ok(RefreshOutcome::Replayed);
            }
        }
        refresh_tokens::mark_used(tx, &hash, now)?;
        let user = users::by_id(tx, &rt.user_id)?.ok_or_else(|| AppError::Unauthorized("invalid_refresh_token", "the user no longer exists".into()))?;
        issue(&state, tx, &user, &rt.family_id).map(RefreshOutcome::Issued)
    })?;
    match outcome {
        RefreshOutcome::Issued(auth) => Ok(Json(auth)),
        RefreshOutcome::Reused => Err(AppError::Unauthorized(
            "refresh_token_reused",
            "this refresh token was already used; the whole session is revoked".into(),
        )),
        RefreshOutcome::Replayed => Err(AppError::Unauthorized(
            "refresh_token_replayed",
            "this refresh token was already used and replayed once; use the newest refresh token".into(),
        )),
    }
}

#[derive(Deserialize)]
struct NewUserRequest {
    username: String,
    password: String,
    #[serde(rename = "companyId")]
    company_id: Option<String>,
    roles: Option<Vec<String>>,
}

fn valid_username(u: &str) -> bool {
    (3..=64).contains(&u.len()) && u.chars().all(|c| c.is_ascii_alphanumeric() || "._@-".contains(c))
}

/// `/auth/register` and `/register-user`: anyone may create a cashier in a named company; a
/// signed-in user defaults to their own company; only `sys_admin` may choose roles or another
/// company than its own.
async fn register(State(state): State<AppState>, MaybeAuthUser(caller): MaybeAuthUser, ApiJson(req): ApiJson<NewUserRequest>) -> AppResult<(StatusCode, Json<Value>)> {
    if !valid_username(&req.username) {
        return Err(AppError::bad_request("username: 3 to 64 letters, digits or . _ @ -"));
    }
    if req.password.chars().count() < 8 {
        return Err(AppError::bad_request("password: at least 8 characters"));
    }
    let is_admin = caller.as_ref().is_some_and(|c| c.roles.iter().any(|r| r == "sys_admin"));
    let company_id = match (req.company_id, &caller) {
        (Some(c), _) => c,
        (None, Some(caller)) => caller.company_id.clone(),
        (None, None) => return Err(AppError::bad_request("companyId is required")),
    };
    if let Some(caller) = &caller {
        if !is_admin && caller.company_id != company_id {
            return Err(AppError::Forbidden("only sys_admin may create users in another company".into()));
        }
    }
    let roles = match req.roles {
        Some(roles) if !is_admin => return Err(AppError::Forbidden(format!("only sys_admin may assign roles ({})", roles.join(", ")))),
        Some(roles) => roles,
        None => vec!["cashier".to_owned()],
    };
    let user = User {
        id: random_id("user"),
        username: req.username.clone(),
        company_id: company_id.clone(),
        companies: vec![company_id.clone()],
        roles,
        password_hash: password_hash(&req.username, &req.password),
    };
    let now = state.clock.now_ms();
    state.store.tx(|tx| {
        if !users::company_exists(tx, &company_id)? {
            return Err(AppError::NotFound("unknown_company", format!("no company {company_id:?}")));
        }
        if users::by_username(tx, &user.username)?.is_some() {
            return Err(AppError::Conflict("username_taken", format!("the user name {:?} is taken", user.username)));
        }
        users::insert(tx, &user, now)?;
        Ok(())
    })?;
    Ok((StatusCode::CREATED, Json(json!({"user": user}))))
}

/// Accepts an expired token: ending a session must not need a fresh one.
async fn logout(State(state): State<AppState>, SignedUser(claims): SignedUser, ApiJson(req): ApiJson<LogoutRequest>) -> AppResult<Json<OkBody>> {
    let now = state.clock.now_ms();
    state.store.tx(|tx| {
        if let Some(sid) = &claims.sid {
            refresh_tokens::revoke_family(tx, sid, now)?;
        }
        if let Some(device_id) = &req.device_id {
            if devices::by_id(tx, device_id)?.is_some_and(|d| d.user_id == claims.user_id) {
                devices::set_online(tx, device_id, false, now)?;
            }
        }
        Ok(())
    })?;
    Ok(Json(OkBody { ok: true }))
}

#[derive(Deserialize)]
struct SwitchCompany {
    #[serde(rename = "companyId")]
    company_id: String,
}

/// Mock-only: a multi-company user picks the company the next refresh carries.
async fn switch_company(State(state): State<AppState>, AuthUser(claims): AuthUser, ApiJson(req): ApiJson<SwitchCompany>) -> AppResult<Json<Value>> {
    state.store.tx(|tx| {
        let user = users::by_id(tx, &claims.user_id)?.ok_or_else(|| AppError::NotFound("unknown_user", "the user no longer exists".into()))?;
        if !user.companies.contains(&req.company_id) {
            return Err(AppError::Forbidden(format!("the user does not belong to company {:?}", req.company_id)));
        }
        users::set_active_company(tx, &user.id, &req.company_id)?;
        Ok(())
    })?;
    Ok(Json(json!({"companyId": req.company_id})))
}
