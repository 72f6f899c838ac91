//! The session state machine: login, refresh (single flight, one tab at a time), sign-out,
//! following other tabs, device registration and the local-data cleanup that keeps one tenant's
//! offline data from reaching another. Every order is the one docs/sdk.md states.
//!
//! **Re-entrancy rule.** No path awaits itself: hooks may call any method.
//! - The refresh flight's slot is cleared *before* its hooks run, so a hook's `getToken()` never
//!   joins the flight that is running it; during the token-refresh hooks it answers the new token.
//! - A sign-out in progress is a state ([`Phase::SigningOut`]), not a lock: `getToken()` answers
//!   at once (the still-valid token during `logout()` or a login's cleanup, so a final
//!   replication can run; otherwise `null`), never refreshes, and a second sign-out returns at once.
//! - Every handler is bounded by `hookTimeoutMs`, so a handler that never settles cannot hold a
//!   sign-out (or anything else) forever.

mod auth_state;
mod auto_refresh;
mod device;
mod follow;
mod http;
mod local_databases;
mod login;
mod losses;
mod reads;
mod refresh;
mod sign_out;

use crate::core::cell::RefCell;
use std::cell::Cell;
use std::rc::Rc;

use serde_json::{Map, Value};

pub use self::auth_state::{changes, AuthEvent, Listener};
pub use self::refresh::{Flight, RefreshOutcome, TokenAnswer};
pub use super::ports::PushReport;
pub use local_databases::{push_headers, push_target, DestroyReport, Entry};
pub use reads::{ReadSnapshot, Refusal};

use super::hooks::{HookContext, HookList, Hooks, SignOutReason, DEFAULT_HOOK_TIMEOUT_MS};
use super::json;
use super::keys;
use super::permissions::PermissionMap;
use super::ports::{Clock, DeviceKey, LocalDatabases, RefreshLock, Reporter, Storage, StorageError, Transport};
use super::token::Claims;
use super::url;
use crate::protocol::AuthResponse;

/// Where the refresh token is spent unless `options.refreshPath` says otherwise.
pub const DEFAULT_REFRESH_PATH: &str = crate::protocol::routes::REFRESH.path;
/// `timeoutMs` default: one HTTP request.
pub const DEFAULT_TIMEOUT_MS: u32 = 15_000;

/// What the app configures (the constructor's options).
pub struct SessionConfig {
    /// The server's origin (and path prefix), without a trailing slash.
    pub base_url: String,
    /// The refresh route's path.
    pub refresh_path: String,
    /// The initial device info.
    pub device_info: Map<String, Value>,
    /// Roles per action.
    pub permissions: PermissionMap,
    /// Per request; a tab waits this long (plus a margin) for another tab's refresh.
    pub timeout_ms: u32,
    /// Per hook handler (`hookTimeoutMs`).
    pub hook_timeout_ms: u32,
    /// Refresh shortly before expiry without being asked (`autoRefresh`).
    pub auto_refresh: bool,
}

impl SessionConfig {
    /// Validates `base_url`; the other settings take their defaults (docs/sdk.md's `AuthManager`
    /// options: this is where they are decided, the facade only reads what the app overrides).
    pub fn new(base_url: &str) -> Result<Self, String> {
        Ok(SessionConfig {
            base_url: url::normalize_base_url(base_url)?,
            refresh_path: DEFAULT_REFRESH_PATH.to_owned(),
            device_info: Map::new(),
            permissions: PermissionMap::default(),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            hook_timeout_ms: DEFAULT_HOOK_TIMEOUT_MS,
            auto_refresh: true,
        })
    }
}

/// The ports the core drives: the browser's, or the native fakes.
#[derive(Clone)]
pub struct Ports {
    /// The token store (`localStorage`).
    pub storage: Rc<dyn Storage>,
    /// HTTP.
    pub transport: Rc<dyn Transport>,
    /// Time and sleeping.
    pub clock: Rc<dyn Clock>,
    /// The browser's local databases (IndexedDB).
    pub local_databases: Rc<dyn LocalDatabases>,
    /// Where failures that reach no caller are reported (the console).
    pub reporter: Rc<dyn Reporter>,
    /// One refresh at a time across the tabs of an origin.
    pub lock: Rc<dyn RefreshLock>,
    /// The device's key.
    pub device_key: Rc<dyn DeviceKey>,
}

/// Input the session refuses, before anything is changed.
#[derive(Debug, Clone, PartialEq)]
pub enum InputError {
    /// `saveToken` with a kind other than `Auth` or `Refresh`.
    UnknownTokenKind(String),
    /// An access token that is not a JWT.
    NotAJwt(String),
    /// A lifetime that is not a finite number.
    BadDuration,
    /// An empty database name.
    EmptyName,
    /// `localStorage` refused the write (quota, private mode).
    Storage(StorageError),
}

impl InputError {
    /// What the caller is told (the `Display` text; called directly, a `to_string` instance
    /// per error type stays out of the module).
    pub fn message(&self) -> String {
        match self {
            InputError::UnknownTokenKind(k) => ["token kind must be \"Auth\" or \"Refresh\", got \"", k, "\""].concat(),
            InputError::NotAJwt(e) => ["an Auth token must be a JWT: ", e].concat(),
            InputError::BadDuration => "expiresInSeconds must be a finite number".into(),
            InputError::EmptyName => "a local database name must not be empty".into(),
            InputError::Storage(e) => ["localStorage refused the write: ", &e.0].concat(),
        }
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

/// What the session keeps in memory only: the token last told, the last user name, the current
/// company, the device info.
#[derive(Default)]
struct Memory {
    /// The session this tab's app was last told about (at start, or by a login, refresh or
    /// sign-out handler). Storage is the truth; this is what changes are measured against when
    /// another tab writes.
    token: Option<String>,
    /// Only the user name: a password is never kept after the request that carried it.
    last_credentials: Option<String>,
    current_company: Option<Map<String, Value>>,
    device_info: Map<String, Value>,
    /// The last realtime `ready`'s tenant and routed day database.
    routed: Option<(String, String)>,
    /// During a login's or company change's cleanup: the incoming tenant (whose fresh local
    /// data is, once the destruction has begun).
    incoming: Option<String>,
    /// This tab is destroying the tracked databases (after their last push): a database tracked
    /// now holds fresh data.
    destroying: bool,
}

/// What the session is doing that other calls must not wait on (see the re-entrancy rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing that other calls must wait on.
    Idle,
    /// Sign-out handlers are running (a sign-out, a login's cleanup, a company change).
    SigningOut(SignOutReason),
    /// Sign-out handlers run because another tab ended the session: storage already holds the
    /// next one (or none), so no token is handed out.
    EndedElsewhere,
}

struct Inner {
    config: SessionConfig,
    ports: Ports,
    memory: RefCell<Memory>,
    hooks: Hooks,
    hook_context: HookContext,
    /// Fired after every sign-out, so a realtime session can stop.
    ended: HookList,
    flight: RefCell<Option<refresh::Flight>>,
    phase: Cell<Phase>,
    /// The new token while the token-refresh handlers run: their `getToken()` answers it.
    refreshed: RefCell<Option<String>>,
    /// The access token decoded last, text and claims (see `stored_token`).
    decoded: RefCell<Option<(String, Rc<Claims>)>>,
    follow: follow::FollowState,
    auto: auto_refresh::AutoState,
    /// Called after this session wrote or followed a change (the auto-refresh timer re-arms).
    changed: RefCell<Option<Rc<dyn Fn()>>>,
    /// Sign-outs asked for so far: a login that sees it change while it runs stores nothing.
    sign_outs: Cell<u32>,
    /// The stored session the auth-state listeners were last told of.
    announced: RefCell<auth_state::Told>,
    listener: RefCell<Option<Listener>>,
}

/// The session broker. Cheap to clone: clones share one state.
#[derive(Clone)]
pub struct Session(Rc<Inner>);

/// A handle that does not keep the session alive (for timers and listeners it owns).
#[derive(Clone)]
pub struct WeakSession(std::rc::Weak<Inner>);

impl WeakSession {
    /// The session, while something else still holds it.
    pub fn upgrade(&self) -> Option<Session> {
        self.0.upgrade().map(Session)
    }
}

impl Session {
    /// A session over the given ports (the device id is read from storage at each use).
    pub fn new(config: SessionConfig, ports: Ports) -> Session {
        let device_info = config.device_info.clone();
        // Decoded once here and kept: the first read (a page's first `getToken()`) finds it.
        let stored = keys::read_jwt(&*ports.storage, keys::AUTH).map(|(t, c)| (t, Rc::new(c)));
        let token = stored.as_ref().map(|(t, _)| t.clone());
        let hook_context = HookContext {
            reporter: ports.reporter.clone(),
            clock: ports.clock.clone(),
            timeout_ms: config.hook_timeout_ms,
        };
        let session = Session(Rc::new(Inner {
            config,
            ports,
            memory: RefCell::new(Memory { device_info, token, ..Memory::default() }),
            announced: RefCell::new(stored.clone()),
            listener: RefCell::new(None),
            hooks: Hooks::default(),
            hook_context,
            ended: HookList::new("session end"),
            flight: RefCell::new(None),
            phase: Cell::new(Phase::Idle),
            refreshed: RefCell::new(None),
            decoded: RefCell::new(stored),
            follow: follow::FollowState::default(),
            auto: auto_refresh::AutoState::default(),
            changed: RefCell::new(None),
            sign_outs: Cell::new(0),
        }));
        session.force_device_identity();
        session
    }

    /// A handle that does not keep the session alive.
    pub fn downgrade(&self) -> WeakSession {
        WeakSession(Rc::downgrade(&self.0))
    }

    /// What hook lists of this session and its companions run with.
    pub fn hook_context(&self) -> &HookContext {
        &self.0.hook_context
    }

    /// Registers the one observer of this session's own changes (the browser's auto-refresh timer).
    pub fn set_on_change(&self, f: Option<Rc<dyn Fn()>>) {
        *self.0.changed.borrow_mut() = f;
    }

    fn notify_changed(&self) {
        let f = self.0.changed.borrow().clone();
        if let Some(f) = f {
            f();
        }
    }

    /// Every phase change goes through here: `getToken()` answers differently while handlers
    /// run, so a cache of the reads in front of the storage must hear of it.
    fn set_phase(&self, phase: Phase) {
        self.0.phase.set(phase);
        self.storage().reads_changed();
    }

    /// Records the session this tab now stands on (see `Memory::token`).
    fn adopt(&self, token: Option<String>) {
        self.0.memory.borrow_mut().token = token;
    }

    fn adopted(&self) -> Option<String> {
        self.0.memory.borrow().token.clone()
    }

    /// The session's hook lists.
    pub fn hooks(&self) -> &Hooks {
        &self.0.hooks
    }

    /// Runs with `{reason}` whenever the session ends for its user or tenant: sign-out, a new
    /// login, a company change.
    pub fn on_ended(&self) -> &HookList {
        &self.0.ended
    }

    /// The configured server origin.
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

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
