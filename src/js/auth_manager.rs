//! `AuthManager`: the JS face of `core::session::Session`.

use crate::core::cell::RefCell;
use std::rc::Rc;

use js_sys::{Function, Promise};
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;

use super::convert::{function_arg, object_arg, promise, string_arg, to_js};
use super::errors::{error, invalid};
use super::hooks::subscribe;
use crate::core::json;
use crate::core::keys::{HeaderKind, TOKEN_PREFIX};
use crate::core::lease::StorageLease;
use crate::core::permissions::PermissionMap;
use crate::core::ports::{Clock, Storage, StorageError};
use crate::core::session::{InputError, Ports, Refusal, Session, SessionConfig};
use crate::protocol::LogoutScope;
use crate::web::lock::BrowserLock;
use crate::web::tabs::Coordinator;
use crate::web::{
    idb::IndexedDbDatabases, storage::BrowserStorage, transport::FetchTransport, BrowserClock, ConsoleReporter,
};

#[wasm_bindgen(module = "/src/web/browser.js")]
extern "C" {
    #[wasm_bindgen(js_name = sbScope)]
    fn logout_scope(options: &JsValue) -> i32;
}

const OPTION_NAMES: [&str; 7] =
    ["baseUrl", "refreshPath", "deviceInfo", "permissions", "timeoutMs", "hookTimeoutMs", "autoRefresh"];

/// A positive number of milliseconds, or the default when absent.
fn millis(options: &Map<String, Value>, name: &str, default: u32) -> Result<u32, String> {
    match options.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(t) => match t.as_f64() {
            Some(t) if t >= 1.0 && t <= u32::MAX as f64 => Ok(t as u32),
            _ => Err([name, " must be a positive number of milliseconds"].concat()),
        },
    }
}

/// The error `requirePermission` throws.
pub(super) fn refused(refusal: Refusal, action: &str) -> JsValue {
    let [before, after] = match refusal {
        Refusal::UnknownAction => ["unknown action: ", ""],
        Refusal::NotSignedIn => ["not signed in: ", ""],
        Refusal::Expired => ["token expired: call hasPermission(), which refreshes first: ", ""],
        Refusal::Denied => ["Not allowed: ", " needs a role the current user does not have."],
    };
    error(refusal.code(), &[before, action, after].concat())
}

/// The session configuration the options object describes; every mistake named.
fn parse_options(options: &Map<String, Value>) -> Result<SessionConfig, String> {
    if let Some(unknown) = options.keys().find(|k| !OPTION_NAMES.contains(&k.as_str())) {
        let mut words = ["unknown option \"", unknown, "\" (known: "].concat();
        for (i, name) in OPTION_NAMES.iter().enumerate() {
            if i > 0 {
                words.push_str(", ");
            }
            words.push_str(name);
        }
        words.push(')');
        return Err(words);
    }
    let base_url = options.get("baseUrl").and_then(Value::as_str).ok_or("baseUrl must be a string")?;
    let mut config = SessionConfig::new(base_url)?;
    match options.get("refreshPath") {
        None | Some(Value::Null) => {}
        Some(Value::String(path)) if path.starts_with('/') => config.refresh_path = path.clone(),
        Some(_) => return Err("refreshPath must be a string starting with '/'".into()),
    }
    match options.get("deviceInfo") {
        None | Some(Value::Null) => {}
        Some(Value::Object(info)) => config.device_info = info.clone(),
        Some(_) => return Err("deviceInfo must be an object".into()),
    }
    match options.get("permissions") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            let mut overrides = Vec::new();
            for (action, roles) in map {
                let roles = json::string_list(roles)
                    .ok_or_else(|| ["permissions.", action, " must be an array of role names"].concat())?;
                overrides.push((action.clone(), roles));
            }
            config.permissions = PermissionMap::with_overrides(overrides);
        }
        Some(_) => return Err("permissions must be an object of action → role names".into()),
    }
    config.timeout_ms = millis(options, "timeoutMs", config.timeout_ms)?;
    config.hook_timeout_ms = millis(options, "hookTimeoutMs", config.hook_timeout_ms)?;
    match options.get("autoRefresh") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(on)) => config.auto_refresh = *on,
        Some(_) => return Err("autoRefresh must be a boolean".into()),
    }
    Ok(config)
}

/// The session broker: login, tokens in `localStorage`, refresh, device, roles, hooks.
#[wasm_bindgen]
pub struct AuthManager {
    session: Session,
    /// This tab's listeners and timer; `None` once disposed.
    coordinator: RefCell<Option<Coordinator>>,
}

impl AuthManager {
    /// The core session, for the other facade classes.
    pub fn session(&self) -> &Session {
        &self.session
    }
}

#[wasm_bindgen]
impl AuthManager {
    /// `new AuthManager({ baseUrl, refreshPath?, deviceInfo?, permissions?, timeoutMs?, hookTimeoutMs?,
    /// autoRefresh? })` (see `AuthManagerOptions`). Throws `invalid_argument` for a missing `baseUrl`, an unknown
    /// option or a value of the wrong kind, `storage_unavailable` without a usable `localStorage`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "AuthManagerOptions")] options: JsValue,
    ) -> Result<AuthManager, JsValue> {
        // Every other class needs an AuthManager, so JSON is ready for all of them from here.
        crate::web::codec::install();
        if !options.is_object() {
            return Err(invalid("AuthManager needs an options object with a baseUrl"));
        }
        let config = parse_options(&object_arg(&options, "AuthManager options")?).map_err(invalid)?;
        let storage: Rc<dyn Storage> = Rc::new(BrowserStorage::open().map_err(|e| error(StorageError::CODE, &e.0))?);
        let clock: Rc<dyn Clock> = Rc::new(BrowserClock);
        // An integer: formatting a float would pull float printing into the module.
        let owner = ((js_sys::Math::random() * 1e15) as u64).to_string();
        let fallback = Rc::new(StorageLease { storage: storage.clone(), clock: clock.clone(), owner });
        let (timeout_ms, auto_refresh) = (config.timeout_ms, config.auto_refresh);
        let ports = Ports {
            storage,
            transport: Rc::new(FetchTransport { timeout_ms }),
            clock,
            local_databases: Rc::new(IndexedDbDatabases),
            reporter: Rc::new(ConsoleReporter),
            lock: Rc::new(BrowserLock { fallback }),
            device_key: Rc::new(crate::web::key::BrowserKey),
        };
        let session = Session::new(config, ports);
        let coordinator = Coordinator::start(&session, auto_refresh);
        Ok(AuthManager { session, coordinator: RefCell::new(Some(coordinator)) })
    }

    /// Removes this manager's listeners (other tabs, visibility, online, the auth-state stream's) and its auto-refresh
    /// timer. The stored session is untouched and the methods still work; only the following
    /// of other tabs, the stream and the proactive refresh stop. Idempotent.
    pub fn dispose(&self) {
        self.coordinator.borrow_mut().take();
        // The stream's listener holds the manager's JS object: without this, never collected.
        self.session.set_listener(None);
    }

    /// `"serviceProxyToken"`: the prefix of every storage key.
    #[wasm_bindgen(getter = tokenPrefix)]
    pub fn token_prefix() -> String {
        TOKEN_PREFIX.to_owned()
    }

    #[wasm_bindgen(unchecked_return_type = "Promise<LoginResult>")]
    /// Logs in with a user name and password. Resolves `{success: true, user}` or `{success: false, error,
    /// code, status}` (status 0: unreachable); never rejects. A `logout()` called while it runs wins: the new session is
    /// ended on the server, nothing is stored, and the answer is `code: "signed_out"`. Throws `invalid_argument` before
    /// sending anything for a missing or empty `username` or `password`.
    pub fn login(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Credentials")] credentials: JsValue,
    ) -> Result<Promise, JsValue> {
        // Thrown before anything is sent: a form's empty field is the app's to catch.
        let c = object_arg(&credentials, "credentials")?;
        let field = |k| c.get(k).and_then(Value::as_str).filter(|v| !v.is_empty()).map(str::to_owned);
        let (Some(username), Some(password)) = (field("username"), field("password")) else {
            return Err(invalid("username and password must be non-empty strings"));
        };
        let session = self.session.clone();
        Ok(promise(async move { session.login(&username, &password).await.to_value() }))
    }

    #[wasm_bindgen(js_name = loginWithGoogle, unchecked_return_type = "Promise<LoginResult>")]
    /// Logs in with an identity provider's credential (the mock server accepts `mock-google:<username>`). Throws `invalid_argument`, nothing sent, for a credential that is not a non-empty string.
    pub fn login_with_google(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] credential: JsValue,
    ) -> Result<Promise, JsValue> {
        let credential = credential.as_string().filter(|c| !c.is_empty());
        let credential = credential.ok_or_else(|| invalid("credential must be a non-empty string"))?;
        let session = self.session.clone();
        Ok(promise(async move { session.login_with_google(&credential).await.to_value() }))
    }

    #[wasm_bindgen(js_name = registerUser, unchecked_return_type = "Promise<CallResult<Answer<\"REGISTER\">>>")]
    /// Public sign-up: creates the user's own new company (`POST /auth/register`); `data` is `{user, company}`.
    pub fn register_user(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RegisterCredentials")] credentials: JsValue,
    ) -> Result<Promise, JsValue> {
        let credentials = Value::Object(object_arg(&credentials, "credentials")?);
        let session = self.session.clone();
        Ok(promise(async move { session.register_user(&credentials).await.to_value() }))
    }

    #[wasm_bindgen(js_name = createUser, unchecked_return_type = "Promise<CallResult<Answer<\"CREATE_USER\">>>")]
    /// Creates a user in an existing company: a manager's or sys_admin's act (`POST /register-user`); `data` is
    /// `{user}`.
    pub fn create_user(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RegisterCredentials")] credentials: JsValue,
    ) -> Result<Promise, JsValue> {
        let credentials = Value::Object(object_arg(&credentials, "credentials")?);
        let session = self.session.clone();
        Ok(promise(async move { session.create_user(&credentials).await.to_value() }))
    }

    /// Ends the sessions `scope` names (see `LogoutOptions`); resolves the server's answer. With `"local"` (the
    /// default) and `"global"`: tells the server, runs the sign-out handlers (their final push still works), tells the
    /// server the sign-out is complete and clears the session here, whatever the answer (a failure is also logged).
    /// With `"others"`: the server call only; this session goes on. Without a session: `not_signed_in`, nothing sent.
    /// On a registered device each call carries the device key's proof; refused for want of it
    /// (`device_proof_required`: this browser holds a copy of another's session), it clears this browser's copy alone
    /// (reason `"device-unproven"`) and sends nothing more. Rejects (with `invalid_argument`) only for another scope, or options that are not an object.
    #[wasm_bindgen(unchecked_return_type = "Promise<CallResult<{ ok: true }>>")]
    pub fn logout(&self, options: Option<super::types::LogoutOptionsArg>) -> Promise {
        // Read in JS (no string crosses) and refused by a rejected promise rather than a throw:
        // the smaller module.
        let scope = match logout_scope(&options.map_or(JsValue::UNDEFINED, JsValue::from)) {
            0 => LogoutScope::Local,
            1 => LogoutScope::Others,
            2 => LogoutScope::Global,
            _ => return Promise::reject(&invalid("options must be { scope: \"local\" | \"others\" | \"global\" }")),
        };
        let session = self.session.clone();
        promise(async move { session.logout(scope).await.to_value() })
    }

    #[wasm_bindgen(js_name = signOut, unchecked_return_type = "Promise<CallResult<{ ok: true }>>")]
    /// `logout()` with its default scope (`"local"`).
    pub fn sign_out(&self) -> Promise {
        self.logout(None)
    }

    /// The refresh token, or `null` (not `undefined`) without one.
    #[wasm_bindgen(js_name = getRefreshToken, unchecked_return_type = "string | null")]
    pub fn get_refresh_token(&self) -> JsValue {
        self.session.refresh_token().map_or(JsValue::NULL, |t| JsValue::from_str(&t))
    }

    #[wasm_bindgen(js_name = saveToken)]
    /// Stores a token and its expiry (`now + expiresInSeconds`); an `Auth` token must be a JWT.
    pub fn save_token(
        &self,
        #[wasm_bindgen(unchecked_param_type = "TokenKind")] kind: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] token: JsValue,
        #[wasm_bindgen(js_name = expiresInSeconds, unchecked_param_type = "number")] expires_in_seconds: JsValue,
    ) -> Result<(), JsValue> {
        let kind = string_arg(&kind, "kind")?;
        let token = string_arg(&token, "token")?;
        let seconds = expires_in_seconds.as_f64().ok_or_else(|| invalid("expiresInSeconds must be a number"))?;
        self.session.save_token(&kind, &token, seconds).map_err(|e| invalid(e.message()))
    }

    #[wasm_bindgen(js_name = refreshAuthentication, unchecked_return_type = "Promise<boolean>")]
    /// Refreshes now; `true` when a fresh token is stored. A rejected refresh signs out.
    pub fn refresh_authentication(&self) -> Promise {
        let session = self.session.clone();
        promise(async move { Value::Bool(session.refresh_authentication().await) })
    }

    #[wasm_bindgen(js_name = getCurrentCompany, unchecked_return_type = "Company | null")]
    /// `{id}` of the token's company (plus details once fetched), or `null`.
    pub fn get_current_company(&self) -> JsValue {
        to_js(&self.session.current_company().unwrap_or(Value::Null))
    }

    #[wasm_bindgen(js_name = hasPermission, unchecked_return_type = "Promise<boolean>")]
    /// Whether the current roles allow `action`, after refreshing the token if needed. Rejects with `invalid_argument` for an action neither the SDK nor the `permissions` option knows.
    pub fn has_permission(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] action: JsValue,
    ) -> Result<Promise, JsValue> {
        let action = string_arg(&action, "action")?;
        // Thrown here, rejected by the entry module's `hasPermission` (an async method).
        if !self.session.knows_action(&action) {
            return Err(refused(Refusal::UnknownAction, &action));
        }
        let session = self.session.clone();
        Ok(promise(async move { Value::Bool(session.has_permission(&action).await) }))
    }

    /// Throws a `SessionBrokerError` when the current roles do not allow `action` (`permission_denied`), without a session (`not_signed_in`), on an expired token (`session_expired`: `hasPermission()` refreshes first) or for an action neither the SDK nor the `permissions` option knows (`invalid_argument`).
    #[wasm_bindgen(js_name = requirePermission)]
    pub fn require_permission(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] action: JsValue,
    ) -> Result<(), JsValue> {
        let action = string_arg(&action, "action")?;
        self.session.judge_permission(&action, true).map_err(|r| refused(r, &action))
    }

    #[wasm_bindgen(js_name = registerDevice, unchecked_return_type = "Promise<RegisterDeviceResult>")]
    /// Registers this device (`POST /auth/connect`, with the public half of its key where the browser can make one)
    /// and stores its id. An answer without `deviceId` is a success that keeps the id the device had (`null` if none).
    pub fn register_device(&self) -> Promise {
        let session = self.session.clone();
        promise(async move { session.register_device().await.to_value() })
    }

    #[wasm_bindgen(js_name = updateDeviceStatus, unchecked_return_type = "Promise<CallResult<Answer<\"STATUS\">>>")]
    /// Reports this device online or offline (`{isOnline}`).
    pub fn update_device_status(
        &self,
        #[wasm_bindgen(unchecked_param_type = "DeviceStatus")] status: JsValue,
    ) -> Result<Promise, JsValue> {
        let is_online = object_arg(&status, "status")?.get("isOnline").and_then(Value::as_bool);
        let is_online = is_online.ok_or_else(|| invalid("updateDeviceStatus expects { isOnline: boolean }"))?;
        let session = self.session.clone();
        Ok(promise(async move { session.update_device_status(is_online).await.to_value() }))
    }

    #[wasm_bindgen(js_name = updateDeviceInfo)]
    /// Merges fields into the device description (its `sdkVersion` and `platform` always stay this SDK's).
    pub fn update_device_info(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Partial<DeviceInfo>")] partial: JsValue,
    ) -> Result<(), JsValue> {
        self.session.update_device_info(object_arg(&partial, "updateDeviceInfo's argument")?);
        Ok(())
    }

    #[wasm_bindgen(js_name = getDeviceInfo, unchecked_return_type = "DeviceInfo")]
    /// The device description sent at login and registration; always with this SDK's `sdkVersion` and
    /// `platform: "web"`.
    pub fn get_device_info(&self) -> JsValue {
        to_js(&Value::Object(self.session.device_info()))
    }

    #[wasm_bindgen(js_name = registerOnLogin, unchecked_return_type = "Unsubscribe")]
    /// Runs `handler(user)` after every login (also one in another tab); returns an unsubscribe function.
    pub fn register_on_login(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(user: SessionUser) => unknown")] handler: JsValue,
    ) -> Result<Function, JsValue> {
        Ok(subscribe(self.session.clone(), |s| &s.hooks().login, function_arg(handler)?))
    }

    #[wasm_bindgen(js_name = registerOnTokenRefresh, unchecked_return_type = "Unsubscribe")]
    /// Runs `handler({user, roles, companyChanged})` after every refresh (also one in another tab); returns an unsubscribe function.
    pub fn register_on_token_refresh(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(event: TokenRefreshEvent) => unknown")] handler: JsValue,
    ) -> Result<Function, JsValue> {
        Ok(subscribe(self.session.clone(), |s| &s.hooks().token_refresh, function_arg(handler)?))
    }

    #[wasm_bindgen(js_name = registerOnSignOut, unchecked_return_type = "Unsubscribe")]
    /// Runs `handler({reason, hadSession, otherTab?, headers?, pushed?, unpushed?})` (see `SignOutEvent`) before the tokens are
    /// cleared (a handler may still use the token); returns an unsubscribe function.
    pub fn register_on_sign_out(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(event: SignOutEvent) => unknown")] handler: JsValue,
    ) -> Result<Function, JsValue> {
        Ok(subscribe(self.session.clone(), |s| &s.hooks().sign_out, function_arg(handler)?))
    }

    /// For the entry module only: its one listener of the auth-state stream, `f(event, reason, otherTab)` (`event`: the index of the name in `AuthEvent`'s order). It tells the app's listeners with the session storage holds.
    #[wasm_bindgen(js_name = __sbListen, skip_typescript)]
    pub fn listen(&self, f: Function) {
        self.session.set_listener(Some(Rc::new(move |event, reason, other_tab| {
            let _ = f.call3(&JsValue::UNDEFINED, &(event as u32).into(), &reason.into(), &other_tab.into());
        })));
    }

    /// For the entry module only: what `getToken()` and `getSession()` are made from, the token (refreshed first when it expires within a minute, one refresh for every tab) or `[code, message]` saying why there is none.
    #[wasm_bindgen(js_name = __sbToken, skip_typescript)]
    pub fn token(&self) -> Promise {
        match self.session.token_answer().ready() {
            // At once: inside a sign-out handler, on a valid token, without a session.
            Ok(outcome) => Promise::resolve(&to_js(&outcome.answer())),
            Err(flight) => promise(async move { flight.await.answer() }),
        }
    }

    #[wasm_bindgen(js_name = trackLocalDatabase)]
    /// Tracks a local database in the device's ledger (shared by every tab, kept across reloads) for destruction at the next login, company change or invalidation: a local PouchDB instance (destroyed through PouchDB, on any adapter, by whichever tab destroys it: a tab opens it with the constructor of an instance it tracked, or a global `PouchDB`; without either, its documents are counted from IndexedDB) or a database name (`_pouch_<name>` and the IndexedDB database `name` deleted). With `pushTo` (a PouchDB instance only), the SDK pushes its documents there before destroying it, and at `logout()`; what it cannot push is counted. Throws `storage_unavailable` when `localStorage` refuses the write.
    pub fn track_local_database(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string | LocalPouchDB")] db: JsValue,
        options: Option<super::types::TrackOptionsArg>,
    ) -> Result<(), JsValue> {
        let options = options.map_or(JsValue::UNDEFINED, JsValue::from);
        let [name, adapter, push_to] = crate::web::idb::track(&db, &options).map_err(invalid)?;
        self.session.track_local_database(&name, &adapter, &push_to).map_err(|e| match e {
            // A full `localStorage`: the database is not tracked, and the app is told so.
            InputError::Storage(_) => error(StorageError::CODE, &e.message()),
            e => invalid(e.message()),
        })
    }

    #[wasm_bindgen(js_name = getTrackedLocalDatabases, unchecked_return_type = "string[]")]
    /// The tracked local database names.
    pub fn tracked_local_databases(&self) -> JsValue {
        // Built as a JS array here: a `Vec<String>` return brings the glue's slice decoder along.
        self.session.tracked_local_databases().iter().map(|n| JsValue::from_str(n)).collect::<js_sys::Array>().into()
    }

    #[wasm_bindgen(js_name = destroyAllLocalDatabases, unchecked_return_type = "Promise<DestroyResult>")]
    /// Destroys every tracked local database now, after the SDK's final push of those tracked with `pushTo`; resolves
    /// `{destroyed, failed, pushed?, unpushed?}`.
    pub fn destroy_all_local_databases(&self) -> Promise {
        let session = self.session.clone();
        promise(async move { session.destroy_all_local_databases().await.to_value() })
    }

    #[wasm_bindgen(js_name = getDocdbHeaders, unchecked_return_type = "Record<string, string> | null")]
    /// The document-database header set (`"Remote"` or `"Local"`) issued with the session, or `null`.
    pub fn get_docdb_headers(
        &self,
        #[wasm_bindgen(unchecked_param_type = "HeaderKind")] kind: JsValue,
    ) -> Result<JsValue, JsValue> {
        let kind = string_arg(&kind, "kind")?;
        let kind = HeaderKind::parse(&kind)
            .ok_or_else(|| invalid(["kind must be \"Remote\" or \"Local\", got \"", &kind, "\""].concat()))?;
        Ok(to_js(&self.session.docdb_headers(kind).map_or(Value::Null, Value::Object)))
    }
}
