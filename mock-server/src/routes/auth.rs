//! Session routes: login (password and Google mock), refresh with rotation and reuse
//! detection, registration, logout, and the mock-only company switch.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use protocol::ops::audit as actions;
use protocol::records::{NewCompany, NewUserRequest, SignedUp, UserAnswer};
use protocol::routes;
use protocol::routes::Call;
use protocol::{
    ActiveCompany, AuthResponse, DeviceNonce, DeviceProof, GoogleLoginRequest, LoginRequest, LogoutRequest,
    LogoutScope, OkBody, RefreshRequest,
};
use serde_json::{json, Value};

use crate::auth::device_keys;
use crate::auth::passwords::{self, Checked};
use crate::auth::secrets::{docdb_headers, random_id, random_token, token_hash};
use crate::auth::throttle;
use crate::error::{AppError, AppResult};
use crate::extract::{ApiJson, AuthUser, ClientIp, SignedUser};
use crate::seed;
use crate::state::AppState;
use crate::store::audit::{self, Actor};
use crate::store::refresh_tokens::SessionState;
use crate::store::users::User;
use crate::store::{devices, login_failures, refresh_tokens, users};
use protocol::errors as code;

pub const GOOGLE_PREFIX: &str = "mock-google:";

/// Outside the sign-in rate limit: a nonce stores nothing and costs one HMAC, and drawn from the
/// sign-in bucket every keyed refresh would cost two of its tokens (a busy shop's shared address
/// could then run dry, and a refresh without its proof is refused).
pub fn nonce_router() -> Router<AppState> {
    Router::new().route(routes::DEVICE_NONCE.path, post(device_nonce))
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route(routes::LOGIN.path, post(login))
        .route(routes::LOGIN_GOOGLE.path, post(login_with_google))
        .route(routes::REFRESH.path, post(refresh))
        .route(routes::REGISTER.path, post(sign_up))
        .route(routes::CREATE_USER.path, post(create_user))
        .route(routes::LOGOUT.path, post(logout))
        .route("/auth/company", post(switch_company))
}

fn bad_credentials() -> AppError {
    AppError::Unauthorized(code::INVALID_CREDENTIALS, "wrong user name or password".into())
}

/// A new refresh token in `family` and an access token for the user's active company.
fn issue(state: &AppState, tx: &crate::store::sql::Connection, user: &User, family: &str) -> AppResult<AuthResponse> {
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
        docdb_headers: Some(docdb_headers(&state.tokens.docdb_key, &user.id, &user.company_id, &user.roles, family)),
    })
}

/// A new session of `user`; on `device` (its `deviceInfo.id`) when that is a device the user
/// registered, so that deleting the device ends the session.
fn start_session(state: &AppState, user: Option<User>, device: Option<&str>) -> AppResult<Json<AuthResponse>> {
    let user = user.ok_or_else(bad_credentials)?;
    let now = state.clock.now_ms();
    // A new family: nothing another transaction touches.
    state
        .store
        .shared_tx(|tx| {
            let family = random_id("sess");
            if let Some(device) = device {
                if devices::by_id(tx, device)?.is_some_and(|d| d.user_id == user.id) {
                    devices::link_session(tx, device, &family, now)?;
                }
            }
            issue(state, tx, &user, &family)
        })
        .map(Json)
}

/// `POST /auth/device-nonce`: what a device signs to prove it holds its key (`auth::device_keys`).
async fn device_nonce(State(state): State<AppState>) -> Json<DeviceNonce> {
    Json(DeviceNonce { nonce: device_keys::nonce(&state.tokens.docdb_key, state.clock.now_ms()) })
}

/// Whether `proof` is a proof for `route` by one of `keys`, over a fresh nonce of this server
/// never used before; the nonce is spent by it.
fn proven(
    state: &AppState,
    tx: &crate::store::sql::Connection,
    keys: &[String],
    proof: Option<&DeviceProof>,
    route: Call,
) -> AppResult<bool> {
    let Some(proof) = proof else { return Ok(false) };
    let now = state.clock.now_ms();
    if !device_keys::nonce_fresh(&state.tokens.docdb_key, &proof.nonce, now)
        || !keys.iter().any(|key| device_keys::signed_by(key, route.method.as_str(), route.path, proof))
    {
        return Ok(false);
    }
    Ok(devices::spend_nonce(tx, &proof.nonce, now.saturating_add(device_keys::NONCE_TTL_MS), now)?)
}

/// A proof that was presented but not taken is spent all the same: it is good for one request,
/// whatever that request was, so a proof sent on another user's sign-in or on an unbound
/// session's refresh cannot be kept for later.
fn spend_unused(state: &AppState, tx: &crate::store::sql::Connection, proof: Option<&DeviceProof>) -> AppResult<()> {
    let now = state.clock.now_ms();
    if let Some(proof) = proof.filter(|p| device_keys::nonce_fresh(&state.tokens.docdb_key, &p.nonce, now)) {
        devices::spend_nonce(tx, &proof.nonce, now.saturating_add(device_keys::NONCE_TTL_MS), now)?;
    }
    Ok(())
}

async fn login(
    State(state): State<AppState>,
    ip: ClientIp,
    ApiJson(req): ApiJson<LoginRequest>,
) -> AppResult<Json<AuthResponse>> {
    if req.username.is_empty() || req.password.is_empty() {
        return Err(AppError::bad_request("username and password are required"));
    }
    let now = state.clock.now_ms();
    let device = req.device_info.get("id").and_then(Value::as_str);
    let (user, failed_before, locked_until, on_device, proved) = state.store.shared_tx(|tx| {
        let user = users::by_username(tx, &req.username)?;
        // A device of the user that proves it holds its key, and has signed in with it before,
        // is never locked out of its own account; its id alone (which listings show) earns
        // nothing, nor a key added with an access token alone.
        let (mut known, mut proved, mut exempt) = (false, false, false);
        if let (Some(u), Some(id)) = (&user, device) {
            known = devices::by_id(tx, id)?.is_some_and(|d| d.user_id == u.id);
            if let Some(key) = devices::key_of(tx, id)?.filter(|_| known) {
                proved = proven(&state, tx, &[key], req.device_proof.as_ref(), routes::LOGIN)?;
                exempt = proved && devices::signed_in_with_key(tx, id)?;
                // The session runs on a keyed device (its refresh bound to the key) only when proven.
                known = proved;
            }
        }
        if !proved {
            spend_unused(&state, tx, req.device_proof.as_ref())?;
        }
        let failures = login_failures::get(tx, &req.username)?;
        Ok((user, failures.is_some(), failures.map(|(_, until)| until).filter(|_| !exempt), known, proved))
    })?;
    if let Some(until) = locked_until.filter(|until| *until > now) {
        return Err(account_throttled(until - now));
    }
    // Checked even for an unknown user (against a decoy): same work, same answer.
    let stored = user.as_ref().map(|u| u.password_hash.clone());
    let (username, password) = (req.username.clone(), req.password.clone());
    let checked = state.hashing.run(move || passwords::check(stored.as_deref(), &username, &password)).await?;
    let Some(user) = user.filter(|_| checked.ok()) else {
        sign_in_failed(&state, &req.username, ip)?;
        return Err(bad_credentials());
    };
    if failed_before {
        login_failures::clear(&state.store.lock()?, &user.username)?;
    }
    if let Some(id) = device.filter(|_| proved) {
        devices::mark_signed_in_with_key(&state.store.lock()?, id, now)?;
    }
    if checked == Checked::ValidLegacy {
        let password = req.password.clone();
        let rehashed = state.hashing.run(move || passwords::hash(&password)).await?;
        users::set_password_hash(&state.store.lock()?, &user.id, &rehashed)?;
    }
    start_session(&state, Some(user), device.filter(|_| on_device))
}

fn account_throttled(wait_ms: i64) -> AppError {
    let secs = u64::try_from(wait_ms.saturating_add(999) / 1000).unwrap_or(1).max(1);
    AppError::TooMany {
        code: code::ACCOUNT_THROTTLED,
        message: format!(
            "too many failed sign-ins for this account; try again in {secs} s, or sign in on a device you used before"
        ),
        retry_after_secs: Some(secs),
    }
}

/// Counts a failed sign-in of `username`; past the free failures it locks the account for a
/// while (`auth::throttle`), which the audit log records.
fn sign_in_failed(state: &AppState, username: &str, ip: ClientIp) -> AppResult<()> {
    let now = state.clock.now_ms();
    let settings = &state.settings;
    state.store.shared_tx(|tx| {
        let failures = login_failures::failed(tx, username, now)?;
        let secs =
            throttle::lock_secs(failures, settings.auth_account_free_failures, settings.auth_account_lock_max_secs);
        if secs > 0 {
            let until = now.saturating_add(i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX));
            login_failures::lock(tx, username, until)?;
            let company_id = users::by_username(tx, username)?.map(|u| u.record.company_id);
            let detail =
                json!({"username": username, "companyId": company_id, "failures": failures, "lockedForSecs": secs});
            audit::record(tx, &Actor { id: "anonymous".into(), ip: ip.0 }, actions::ACCOUNT_THROTTLED, detail, now)?;
            tracing::warn!(failures, secs, "sign-ins of one account throttled");
        }
        Ok(())
    })
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
    let user = users::by_username(&state.store.lock()?, username)?;
    start_session(&state, user, None)
}

enum RefreshOutcome {
    Issued(AuthResponse),
    /// The family that was revoked for it.
    Reused(String),
    /// A second replay inside the grace window: refused, the family kept.
    Replayed,
}

async fn refresh(
    State(state): State<AppState>,
    ApiJson(req): ApiJson<RefreshRequest>,
) -> AppResult<Json<AuthResponse>> {
    let now = state.clock.now_ms();
    let hash = token_hash(&req.refresh_token);
    // The family's revocation must commit even though the answer is an error: decide inside,
    // answer outside.
    let outcome = state.store.shared_tx(|tx| {
        let unknown = || AppError::Unauthorized(code::INVALID_REFRESH_TOKEN, "unknown refresh token".into());
        // The token's family is this transaction's alone from here; the token is read under its lock.
        refresh_tokens::lock_family_of(tx, &hash)?;
        let rt = refresh_tokens::find(tx, &hash)?.ok_or_else(unknown)?;
        if rt.revoked_at.is_some() {
            return Err(AppError::Unauthorized(
                code::REFRESH_TOKEN_REVOKED,
                "this session has ended; log in again".into(),
            ));
        }
        if rt.expires_at <= now {
            return Err(AppError::Unauthorized(
                code::REFRESH_TOKEN_EXPIRED,
                "the refresh token has expired; log in again".into(),
            ));
        }
        // A session on a device with a key is bound to it: its refresh token, copied elsewhere,
        // is refused, and refused before the reuse rule, so a copy cannot end the session either.
        let keys = devices::keys_of_session(tx, &rt.family_id)?;
        if keys.is_empty() {
            spend_unused(&state, tx, req.device_proof.as_ref())?;
        } else if !proven(&state, tx, &keys, req.device_proof.as_ref(), routes::REFRESH)? {
            return Err(AppError::Unauthorized(
                code::DEVICE_PROOF_REQUIRED,
                "this session is bound to its device's key: a refresh needs a valid proof from that device".into(),
            ));
        }
        if let Some(used_at) = rt.used_at {
            let grace_ms =
                i64::try_from(state.settings.refresh_reuse_grace_secs).unwrap_or(i64::MAX).saturating_mul(1000);
            if grace_ms == 0 || now.saturating_sub(used_at) > grace_ms {
                refresh_tokens::revoke_family(tx, &rt.family_id, now)?;
                tracing::warn!(family = %rt.family_id, "refresh token reused after the grace window: family revoked");
                return Ok(RefreshOutcome::Reused(rt.family_id));
            }
            // Inside the window a racing tab gets one successor, a replaying thief no more.
            if !refresh_tokens::first_replay(tx, &hash, now, grace_ms)? {
                return Ok(RefreshOutcome::Replayed);
            }
        }
        refresh_tokens::mark_used(tx, &hash, now)?;
        let user = rt
            .holder
            .ok_or_else(|| AppError::Unauthorized(code::INVALID_REFRESH_TOKEN, "the user no longer exists".into()))?;
        issue(&state, tx, &user, &rt.family_id).map(RefreshOutcome::Issued)
    })?;
    match outcome {
        RefreshOutcome::Issued(auth) => Ok(Json(auth)),
        RefreshOutcome::Reused(family) => {
            state.sessions_ended(&[family]);
            Err(AppError::Unauthorized(
                code::REFRESH_TOKEN_REUSED,
                "this refresh token was already used; the whole session is revoked".into(),
            ))
        }
        RefreshOutcome::Replayed => Err(AppError::Unauthorized(
            code::REFRESH_TOKEN_REPLAYED,
            "this refresh token was already used and replayed once; use the newest refresh token".into(),
        )),
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

/// Accepts an expired token: ending a session must not need a fresh one. The first call ends the
/// session's refresh at once, and opens its sign-out window: the access token and the document
/// headers keep working for the sign-out's handlers (a device status, a final replication) until
/// a call with `complete` or `SIGN_OUT_GRACE_SECS`, whichever comes first. With `scope`
/// `others` the user's other sessions end at once (as a deleted device's do) and this one goes
/// on; with `global`, those and this one; either needs a live session (its token may have
/// expired, as for any logout; an ended or signing-out session's is refused).
async fn logout(
    State(state): State<AppState>,
    SignedUser(claims): SignedUser,
    ApiJson(req): ApiJson<LogoutRequest>,
) -> AppResult<Json<OkBody>> {
    let now = state.clock.now_ms();
    let window_ms = i64::try_from(state.settings.sign_out_grace_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    let this = claims.sid.clone().filter(|_| req.scope != LogoutScope::Others);
    let mut ended = state.store.tx(|tx| {
        let mut others = Vec::new();
        // The completion call ends nothing more: the first call ended the others.
        if req.scope != LogoutScope::Local && !req.complete {
            let live = match &claims.sid {
                Some(sid) => refresh_tokens::session_state(tx, sid, now)? == SessionState::Live,
                None => false,
            };
            if !live {
                return Err(AppError::Unauthorized(
                    code::SESSION_ENDED,
                    "ending the user's other sessions needs a live session; log in again".into(),
                ));
            }
            others = refresh_tokens::sessions_of_user(tx, &claims.user_id, now)?;
            others.retain(|s| Some(s) != claims.sid.as_ref());
            refresh_tokens::end_now(tx, &others, now)?;
        }
        if req.scope == LogoutScope::Others {
            return Ok(others);
        }
        match &this {
            Some(sid) if req.complete => refresh_tokens::signed_out(tx, sid, now)?,
            Some(sid) => refresh_tokens::signing_out(tx, sid, now, now.saturating_add(window_ms))?,
            None => {}
        }
        if let Some(device_id) = &req.device_id {
            if devices::by_id(tx, device_id)?.is_some_and(|d| d.user_id == claims.user_id) {
                devices::set_online(tx, device_id, false, now)?;
            }
        }
        Ok(others)
    })?;
    ended.extend(this);
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
