//! The session state machine: login, refresh (single flight), sign-out, device registration and
//! the local-data cleanup that keeps one tenant's offline data from reaching another.
//! Every order below is the contract's (CONTRACT §3 "Sequences") and is observable.

use std::cell::RefCell;
use std::rc::Rc;

use futures_util::future::{FutureExt, Shared};
use serde_json::{json, Map, Value};

use super::hooks::{sign_out_event, token_refresh_event, HookList, Hooks, SignOutReason};
use super::json;
use super::keys::{self, HeaderKind, TokenKind};
use super::permissions::PermissionMap;
use super::ports::{Clock, HttpRequest, HttpResponse, LocalBoxFuture, LocalDatabases, Method, Reporter, Storage, Transport, TransportError};
use super::results::{failure_message, CallResult, DeviceResult, LoginResult};
use super::token::{self, Claims};
use super::url;
use crate::protocol::{AuthResponse, SDK_VERSION};

pub const DEFAULT_REFRESH_PATH: &str = "/auth/refresh";

pub struct SessionConfig {
    pub base_url: String,
    pub refresh_path: String,
    pub device_info: Map<String, Value>,
    pub permissions: PermissionMap,
}

impl SessionConfig {
    /// Validates `base_url`; the other settings take the contract's defaults.
    pub fn new(base_url: &str) -> Result<Self, String> {
        Ok(SessionConfig {
            base_url: url::normalize_base_url(base_url)?,
            refresh_path: DEFAULT_REFRESH_PATH.to_owned(),
            device_info: Map::new(),
            permissions: PermissionMap::default(),
        })
    }
}

#[derive(Clone)]
pub struct Ports {
    pub storage: Rc<dyn Storage>,
    pub transport: Rc<dyn Transport>,
    pub clock: Rc<dyn Clock>,
    pub local_databases: Rc<dyn LocalDatabases>,
    pub reporter: Rc<dyn Reporter>,
}

/// What one refresh attempt came to; shared by every caller of the same flight.
#[derive(Debug, Clone, PartialEq)]
pub enum RefreshOutcome {
    Refreshed(String),
    /// The server refused the refresh token (400/401/403) or none is stored: the session is over.
    Rejected(String),
    /// Network, timeout, 5xx or an unreadable answer: the session is kept for the next try.
    Transient(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct DestroyReport {
    pub destroyed: Vec<String>,
    pub failed: Vec<String>,
}

impl DestroyReport {
    pub fn to_value(&self) -> Value {
        json!({ "destroyed": self.destroyed, "failed": self.failed })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum InputError {
    UnknownTokenKind(String),
    NotAJwt(String),
    BadDuration,
    EmptyName,
    Storage(String),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::UnknownTokenKind(k) => f.write_str(&["token kind must be \"Auth\" or \"Refresh\", got \"", k, "\""].concat()),
            InputError::NotAJwt(e) => f.write_str(&["an Auth token must be a JWT: ", e].concat()),
            InputError::BadDuration => f.write_str("expiresInSeconds must be a finite number"),
            InputError::EmptyName => f.write_str("a local database name must not be empty"),
            InputError::Storage(e) => f.write_str(&["localStorage refused the write: ", e].concat()),
        }
    }
}

/// In-memory state of the service (spec: token, lastCredentials, currentCompany, deviceInfo).
#[derive(Default)]
struct Memory {
    token: Option<String>,
    /// Only the user name: a password is never kept after the request that carried it.
    last_credentials: Option<String>,
    current_company: Option<Map<String, Value>>,
    device_info: Map<String, Value>,
}

type Flight = Shared<LocalBoxFuture<'static, RefreshOutcome>>;

struct Inner {
    config: SessionConfig,
    ports: Ports,
    memory: RefCell<Memory>,
    hooks: Hooks,
    /// Fired after every sign-out, so a realtime session can stop.
    ended: HookList,
    flight: RefCell<Option<Flight>>,
}

/// The session broker. Cheap to clone: clones share one state.
#[derive(Clone)]
pub struct Session(Rc<Inner>);

impl Session {
    pub fn new(config: SessionConfig, ports: Ports) -> Session {
        let mut device_info = config.device_info.clone();
        if let Some(id) = keys::read_opaque(&*ports.storage, keys::DEVICE_ID) {
            device_info.insert("id".into(), Value::String(id));
        }
        let session = Session(Rc::new(Inner {
            config,
            ports,
            memory: RefCell::new(Memory { device_info, ..Memory::default() }),
            hooks: Hooks::default(),
            ended: HookList::new("session end"),
            flight: RefCell::new(None),
        }));
        session.force_device_identity();
        session
    }

    pub fn hooks(&self) -> &Hooks {
        &self.0.hooks
    }

    /// Runs with `{reason}` whenever the session ends for its user or tenant: sign-out, a new
    /// login, a company change.
    pub fn on_ended(&self) -> &HookList {
        &self.0.ended
    }

    pub fn base_url(&self) -> &str {
        &self.0.config.base_url
    }

    fn storage(&self) -> &dyn Storage {
        &*self.0.ports.storage
    }

    fn reporter(&self) -> &dyn Reporter {
        &*self.0.ports.reporter
    }

    /// The reporter, for companions of the session (the realtime session).
    pub fn reporter_handle(&self) -> Rc<dyn Reporter> {
        self.0.ports.reporter.clone()
    }

    fn now(&self) -> i64 {
        self.0.ports.clock.now_ms()
    }

    // ----- reads ---------------------------------------------------------------------------

    /// The stored access JWT and its claims; `localStorage` is the truth, shared across tabs.
    fn stored_token(&self) -> Option<(String, Claims)> {
        let found = keys::read_jwt(self.storage(), keys::AUTH);
        self.0.memory.borrow_mut().token = found.as_ref().map(|(t, _)| t.clone());
        found
    }

    fn expires_at_auth(&self, claims: &Claims) -> Option<i64> {
        keys::read_ms(self.storage(), keys::EXPIRES_AT_AUTH).or_else(|| claims.expires_at_ms())
    }

    pub fn is_token_expired(&self) -> bool {
        self.stored_token().is_none_or(|(_, claims)| self.expired(&claims))
    }

    /// Expired, margin included, for a token already read.
    fn expired(&self, claims: &Claims) -> bool {
        token::is_expired(self.expires_at_auth(claims), self.now())
    }

    pub fn is_about_to_expire(&self) -> bool {
        match self.stored_token() {
            Some((_, claims)) => token::is_about_to_expire(self.expires_at_auth(&claims), self.now()),
            None => false,
        }
    }

    pub fn check_if_logged_in(&self) -> bool {
        self.stored_token().is_some()
    }

    pub fn current_user(&self) -> Option<Value> {
        self.stored_token().map(|(_, c)| c.to_value())
    }

    pub fn current_roles(&self) -> Vec<String> {
        self.stored_token().map(|(_, c)| c.roles()).unwrap_or_default()
    }

    /// `{id}` from the JWT, plus details once fetched; the cache follows the token's company.
    pub fn current_company(&self) -> Option<Value> {
        let company_id = self.stored_token()?.1.company_id()?;
        let mut memory = self.0.memory.borrow_mut();
        let cached_matches = memory
            .current_company
            .as_ref()
            .is_some_and(|c| c.get("id").and_then(Value::as_str) == Some(company_id.as_str()));
        if !cached_matches {
            memory.current_company = Some(company_record(&company_id));
        }
        memory.current_company.clone().map(Value::Object)
    }

    /// Merges fetched details into the cached company (only when it is still the current one).
    pub fn cache_company_details(&self, details: &Map<String, Value>) {
        if let Some(Value::Object(mut company)) = self.current_company() {
            let id = company.get("id").cloned();
            company.extend(details.iter().map(|(k, v)| (k.clone(), v.clone())));
            if let Some(id) = id {
                company.insert("id".into(), id);
            }
            self.0.memory.borrow_mut().current_company = Some(company);
        }
    }

    pub fn last_username(&self) -> Option<String> {
        self.0.memory.borrow().last_credentials.clone()
    }

    pub fn refresh_token(&self) -> Option<String> {
        keys::read_opaque(self.storage(), keys::REFRESH)
    }

    pub fn docdb_headers(&self, kind: HeaderKind) -> Option<Map<String, Value>> {
        keys::read_headers(self.storage(), kind)
    }

    /// Synchronous check against the stored token's roles (`requirePermission`).
    pub fn allows(&self, action: &str) -> bool {
        self.0.config.permissions.allows(action, &self.current_roles())
    }

    /// Asynchronous check: a fresh token first, then its roles (`hasPermission`).
    pub async fn has_permission(&self, action: &str) -> bool {
        match self.get_token().await.and_then(|t| Claims::decode(&t).ok()) {
            Some(claims) => self.0.config.permissions.allows(action, &claims.roles()),
            None => false,
        }
    }

    // ----- device ---------------------------------------------------------------------------

    /// `sdkVersion` and `platform` always describe this SDK, whatever the caller merged in.
    fn force_device_identity(&self) {
        let mut memory = self.0.memory.borrow_mut();
        memory.device_info.insert("sdkVersion".into(), Value::String(SDK_VERSION.into()));
        memory.device_info.insert("platform".into(), Value::String("web".into()));
    }

    pub fn device_info(&self) -> Map<String, Value> {
        self.0.memory.borrow().device_info.clone()
    }

    pub fn update_device_info(&self, partial: Map<String, Value>) {
        self.0.memory.borrow_mut().device_info.extend(partial);
        self.force_device_identity();
    }

    pub fn device_id(&self) -> Option<String> {
        keys::read_opaque(self.storage(), keys::DEVICE_ID)
            .or_else(|| self.0.memory.borrow().device_info.get("id").and_then(Value::as_str).map(str::to_owned))
    }

    pub async fn register_device(&self) -> DeviceResult {
        let body = Value::Object(self.device_info()).to_string();
        let response = match self.authorized(Method::Post, "/auth/connect", Some(body)).await {
            Ok(r) => r,
            Err(failure) => return DeviceResult::Failure(failure),
        };
        if !(200..300).contains(&response.status) {
            return DeviceResult::Failure(CallResult::from_response(&response));
        }
        let Some(device_id) = json::parse(&response.body).and_then(|v| json::str_field(&v, "deviceId").map(str::to_owned)) else {
            return DeviceResult::Failure(CallResult::failure("the server's answer carried no deviceId", Some(response.status)));
        };
        if let Err(e) = self.storage().set(keys::DEVICE_ID, &device_id) {
            self.reporter().error(&["session-broker: could not store the device id: ", &e].concat());
        }
        self.0.memory.borrow_mut().device_info.insert("id".into(), Value::String(device_id.clone()));
        DeviceResult::Success { device_id }
    }

    pub async fn update_device_status(&self, is_online: bool) -> CallResult {
        self.call(Method::Put, "/auth/status", Some(json!({ "isOnline": is_online }).to_string())).await
    }

    // ----- HTTP -----------------------------------------------------------------------------

    async fn send(&self, method: Method, path: &str, body: Option<String>, bearer: Option<String>) -> Result<HttpResponse, TransportError> {
        let request = HttpRequest { method, url: url::join(&self.0.config.base_url, path), bearer, body };
        self.0.ports.transport.send(request).await
    }

    /// A call that needs the session: no token → a failure and no request.
    async fn authorized(&self, method: Method, path: &str, body: Option<String>) -> Result<HttpResponse, CallResult> {
        if self.stored_token().is_none() {
            return Err(CallResult::failure("not signed in: this call needs a session token", None));
        }
        let Some(token) = self.get_token().await else {
            return Err(CallResult::failure("the session token expired and could not be refreshed", Some(401)));
        };
        self.send(method, path, body, Some(token)).await.map_err(|e| CallResult::from_transport_error(&e))
    }

    /// An authenticated JSON call resolving to `{success, data?, error?, status?}`.
    pub async fn call(&self, method: Method, path: &str, body: Option<String>) -> CallResult {
        match self.authorized(method, path, body).await {
            Ok(response) => CallResult::from_response(&response),
            Err(failure) => failure,
        }
    }

    /// A call open to anonymous users; the token goes along when there is a session.
    async fn call_optional_auth(&self, method: Method, path: &str, body: Option<String>) -> CallResult {
        let bearer = if self.stored_token().is_some() { self.get_token().await } else { None };
        match self.send(method, path, body, bearer).await {
            Ok(response) => CallResult::from_response(&response),
            Err(e) => CallResult::from_transport_error(&e),
        }
    }

    /// Sends a management or operations call; a fetched current company is cached.
    pub async fn send_route(&self, route: super::calls::Route) -> CallResult {
        let body = route.body.map(|b| b.to_string());
        if route.needs_session {
            self.call(route.method, &route.path, body).await
        } else {
            self.call_optional_auth(route.method, &route.path, body).await
        }
    }

    pub async fn manage(&self, call: super::calls::Management) -> CallResult {
        let route = match call.route() {
            Ok(r) => r,
            Err(e) => return CallResult::failure(e, None),
        };
        let result = self.send_route(route).await;
        if let (super::calls::Management::GetCompany(id), true) = (&call, result.success) {
            let current = self.stored_token().and_then(|(_, c)| c.company_id());
            if current.as_deref() == Some(id.as_str()) {
                if let Some(Value::Object(details)) = result.data.as_ref().and_then(|d| d.get("company")) {
                    self.cache_company_details(details);
                }
            }
        }
        result
    }

    pub async fn register_user(&self, credentials: &Value) -> CallResult {
        self.call_optional_auth(Method::Post, "/auth/register", Some(credentials.to_string())).await
    }

    pub async fn create_user(&self, credentials: &Value) -> CallResult {
        self.call_optional_auth(Method::Post, "/register-user", Some(credentials.to_string())).await
    }

    // ----- login ----------------------------------------------------------------------------

    pub async fn login(&self, username: &str, password: &str) -> LoginResult {
        let body = json!({ "username": username, "password": password, "deviceInfo": self.device_info() }).to_string();
        let response = self.send(Method::Post, "/auth", Some(body), None).await;
        self.complete_login(response, Some(username)).await
    }

    pub async fn login_with_google(&self, credential: &str) -> LoginResult {
        let body = json!({ "credential": credential }).to_string();
        let response = self.send(Method::Post, "/auth/google", Some(body), None).await;
        self.complete_login(response, None).await
    }

    /// Validates the answer before anything local is touched; then cleanup, persist, handlers.
    async fn complete_login(&self, response: Result<HttpResponse, TransportError>, username: Option<&str>) -> LoginResult {
        let response = match response {
            Ok(r) => r,
            Err(e) => return LoginResult::failure(e.to_string(), 0),
        };
        if response.status != 200 {
            return LoginResult::failure(failure_message(&response), response.status);
        }
        let Some((auth, claims)) = parse_auth_response(&response.body) else {
            return LoginResult::failure("the server's login answer carried no valid token", response.status);
        };
        self.cleanup_before_login(SignOutReason::Login).await;
        if let Err(e) = self.persist(&auth, true) {
            return LoginResult::failure(["the session could not be stored: ", &e].concat(), response.status);
        }
        {
            let mut memory = self.0.memory.borrow_mut();
            memory.current_company = claims.company_id().map(|id| company_record(&id));
            memory.last_credentials = username.map(str::to_owned);
        }
        let user = claims.to_value();
        self.0.hooks.login.run(&user, self.reporter()).await;
        LoginResult::Success { user }
    }

    /// Deliberately aggressive: the previous user's handlers and local data go before the new
    /// user's tokens are written, so nothing of a previous tenant reaches the new one.
    async fn cleanup_before_login(&self, reason: SignOutReason) {
        let event = sign_out_event(reason);
        self.0.hooks.sign_out.run(&event, self.reporter()).await;
        // The previous user's (or tenant's) realtime session ends here too.
        self.0.ended.run(&event, self.reporter()).await;
        self.destroy_all_local_databases().await;
        self.storage().remove(keys::LAST_INVALIDATION);
    }

    /// Writes tokens and expiries; header sets are replaced at login and updated when present.
    fn persist(&self, auth: &AuthResponse, replace_headers: bool) -> Result<(), String> {
        let result = self.write_session(auth, replace_headers);
        if result.is_err() {
            // Never leave half a session behind.
            for key in keys::SESSION_KEYS {
                self.storage().remove(key);
            }
            self.0.memory.borrow_mut().token = None;
        }
        result
    }

    fn write_session(&self, auth: &AuthResponse, replace_headers: bool) -> Result<(), String> {
        let storage = self.storage();
        let now = self.now();
        let expires = |secs: u64| (now + (secs as i64).saturating_mul(1000)).to_string();
        storage.set(keys::AUTH, &auth.token)?;
        storage.set(keys::EXPIRES_AT_AUTH, &expires(auth.expires_in))?;
        storage.set(keys::REFRESH, &auth.refresh_token)?;
        storage.set(keys::EXPIRES_AT_REFRESH, &expires(auth.refresh_expires_in))?;
        let headers = auth.docdb_headers.clone().unwrap_or_default();
        for (kind, set) in [(HeaderKind::Remote, headers.remote), (HeaderKind::Local, headers.local)] {
            match set {
                Some(set) => storage.set(kind.key(), &Value::Object(set).to_string())?,
                None if replace_headers => storage.remove(kind.key()),
                None => {}
            }
        }
        self.0.memory.borrow_mut().token = Some(auth.token.clone());
        Ok(())
    }

    pub fn save_token(&self, kind: &str, token: &str, expires_in_seconds: f64) -> Result<(), InputError> {
        let kind = TokenKind::parse(kind).ok_or_else(|| InputError::UnknownTokenKind(kind.to_owned()))?;
        // A negative lifetime is allowed: it stores a token that has already expired.
        if !expires_in_seconds.is_finite() {
            return Err(InputError::BadDuration);
        }
        if kind == TokenKind::Auth {
            Claims::decode(token).map_err(|e| InputError::NotAJwt(e.to_string()))?;
        } else if token.trim().is_empty() {
            return Err(InputError::NotAJwt("a refresh token must not be empty".into()));
        }
        let expires_at = self.now() + (expires_in_seconds * 1000.0) as i64;
        self.storage().set(kind.key(), token).map_err(InputError::Storage)?;
        self.storage().set(kind.expires_at_key(), &expires_at.to_string()).map_err(InputError::Storage)?;
        if kind == TokenKind::Auth {
            self.0.memory.borrow_mut().token = Some(token.to_owned());
        }
        Ok(())
    }

    // ----- token and refresh -------------------------------------------------------------

    /// The current JWT; refreshed first when expired (margin included).
    pub async fn get_token(&self) -> Option<String> {
        let (token, claims) = self.stored_token()?;
        if !self.expired(&claims) {
            return Some(token);
        }
        match self.refresh().await {
            RefreshOutcome::Refreshed(token) => Some(token),
            RefreshOutcome::Rejected(_) | RefreshOutcome::Transient(_) => None,
        }
    }

    pub async fn refresh_authentication(&self) -> bool {
        matches!(self.refresh().await, RefreshOutcome::Refreshed(_))
    }

    /// Joins the refresh in flight, or starts one: concurrent callers send one request.
    pub fn refresh(&self) -> Flight {
        let mut slot = self.0.flight.borrow_mut();
        if let Some(flight) = slot.as_ref() {
            return flight.clone();
        }
        let session = self.clone();
        let attempt: LocalBoxFuture<'static, RefreshOutcome> = Box::pin(async move {
            let outcome = session.refresh_once().await;
            session.0.flight.borrow_mut().take();
            outcome
        });
        let flight = attempt.shared();
        *slot = Some(flight.clone());
        flight
    }

    async fn refresh_once(&self) -> RefreshOutcome {
        let Some(refresh_token) = self.refresh_token() else {
            if self.stored_token().is_some() {
                self.sign_out(SignOutReason::RefreshRejected).await;
            }
            return RefreshOutcome::Rejected("no refresh token is stored".into());
        };
        let previous_company = self.stored_token().and_then(|(_, c)| c.company_id());
        let body = json!({ "refreshToken": refresh_token }).to_string();
        let path = self.0.config.refresh_path.clone();
        let response = match self.send(Method::Post, &path, Some(body), None).await {
            Ok(r) => r,
            Err(e) => return self.transient(e.to_string()),
        };
        if matches!(response.status, 400 | 401 | 403) {
            let reason = failure_message(&response);
            self.reporter().error(&["session-broker: refresh rejected (HTTP ", &response.status.to_string(), "): ", &reason, "; signing out"].concat());
            self.sign_out(SignOutReason::RefreshRejected).await;
            return RefreshOutcome::Rejected(reason);
        }
        if response.status != 200 {
            return self.transient(failure_message(&response));
        }
        let Some((auth, claims)) = parse_auth_response(&response.body) else {
            return self.transient("the refresh answer carried no valid token".into());
        };
        if let Err(e) = self.persist(&auth, false) {
            return self.transient(["the refreshed session could not be stored: ", &e].concat());
        }
        let new_company = claims.company_id();
        let company_changed = previous_company.is_some() && new_company != previous_company;
        if company_changed {
            self.0.memory.borrow_mut().current_company = None;
            self.cleanup_before_login(SignOutReason::CompanyChange).await;
        }
        let event = token_refresh_event(claims.to_value(), claims.roles(), company_changed);
        self.0.hooks.token_refresh.run(&event, self.reporter()).await;
        RefreshOutcome::Refreshed(auth.token)
    }

    fn transient(&self, reason: String) -> RefreshOutcome {
        self.reporter().error(&["session-broker: refresh failed, session kept for a later try: ", &reason].concat());
        RefreshOutcome::Transient(reason)
    }

    // ----- sign-out ----------------------------------------------------------------------

    /// Server first (only with a token), then handlers, then memory, then keys. Never fails.
    pub async fn sign_out(&self, reason: SignOutReason) {
        if let Some((token, _)) = self.stored_token() {
            let body = json!({ "deviceId": self.device_id() }).to_string();
            match self.send(Method::Post, "/auth/logout", Some(body), Some(token)).await {
                Ok(r) if (200..300).contains(&r.status) => {}
                Ok(r) => self.reporter().error(&["session-broker: the server refused the logout: ", &failure_message(&r)].concat()),
                Err(e) => self.reporter().error(&["session-broker: the logout call failed (", &e.to_string(), "); signing out locally"].concat()),
            }
        }
        let event = sign_out_event(reason);
        self.0.hooks.sign_out.run(&event, self.reporter()).await;
        {
            let mut memory = self.0.memory.borrow_mut();
            memory.token = None;
            memory.last_credentials = None;
            memory.current_company = None;
        }
        for key in keys::SESSION_KEYS {
            self.storage().remove(key);
        }
        self.0.ended.run(&event, self.reporter()).await;
    }

    // ----- local databases ------------------------------------------------------------------

    pub fn tracked_local_databases(&self) -> Vec<String> {
        keys::read_string_list(self.storage(), keys::LOCAL_DATABASES)
    }

    pub fn track_local_database(&self, name: &str) -> Result<(), InputError> {
        if name.trim().is_empty() {
            return Err(InputError::EmptyName);
        }
        let mut names = self.tracked_local_databases();
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
            keys::write_string_list(self.storage(), keys::LOCAL_DATABASES, &names).map_err(InputError::Storage)?;
        }
        Ok(())
    }

    /// Destroys every tracked database; the ones that failed stay tracked for the next cleanup.
    pub async fn destroy_all_local_databases(&self) -> DestroyReport {
        let mut report = DestroyReport { destroyed: Vec::new(), failed: Vec::new() };
        for name in self.tracked_local_databases() {
            match self.0.ports.local_databases.destroy(&name).await {
                Ok(()) => report.destroyed.push(name),
                Err(e) => {
                    self.reporter().error(&["session-broker: could not destroy local database \"", &name, "\": ", &e].concat());
                    report.failed.push(name);
                }
            }
        }
        // Re-read: a database may have been tracked while the deletions ran.
        let remaining: Vec<String> = self.tracked_local_databases().into_iter().filter(|n| !report.destroyed.contains(n)).collect();
        if let Err(e) = keys::write_string_list(self.storage(), keys::LOCAL_DATABASES, &remaining) {
            self.reporter().error(&["session-broker: could not update the local database list: ", &e].concat());
        }
        report
    }

    pub fn last_invalidation(&self) -> Option<i64> {
        keys::read_ms(self.storage(), keys::LAST_INVALIDATION)
    }

    pub fn set_last_invalidation(&self, invalidated_at: i64) -> Result<(), String> {
        self.storage().set(keys::LAST_INVALIDATION, &invalidated_at.to_string())
    }
}

fn company_record(id: &str) -> Map<String, Value> {
    let mut company = Map::new();
    company.insert("id".into(), Value::String(id.to_owned()));
    company
}

/// The login/refresh answer, accepted only when its token decodes as a JWT.
fn parse_auth_response(body: &str) -> Option<(AuthResponse, Claims)> {
    let auth = AuthResponse::from_json(&json::parse(body)?)?;
    let claims = Claims::decode(&auth.token).ok()?;
    (!auth.refresh_token.trim().is_empty()).then_some((auth, claims))
}
