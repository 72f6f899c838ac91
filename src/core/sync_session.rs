//! The device side of the catalogue cutover (docs/sdk.md, "Realtime: `SyncSession`"): the sync session that performs the
//! `sdk:init` → (`invalidate-local`) → `ready` handshake, destroys the local databases when told,
//! bootstraps the catalogue from where the tenant routes, and reconnects with jittered
//! exponential backoff until it is closed or the user signs out.

use crate::core::cell::RefCell;
use crate::protocol::routes::BOOTSTRAP;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use crate::core::json;
use serde_json::Value;

use super::codes;
use super::hooks::HookList;
use super::ports::{LocalBoxFuture, SocketError, StorageError};
use super::session::Session;
pub use crate::protocol::sync_frames::{is_refusal, CLOSE_BAD_REQUEST, CLOSE_INVALIDATED, CLOSE_UNAUTHORIZED};
use crate::protocol::sync_frames::{ClientFrame, InvalidateLocal, Ready, SdkInit, ServerFrame};
use crate::protocol::SDK_VERSION;

/// Backoff bounds, milliseconds.
pub const BACKOFF_BASE_MS: u32 = 500;
/// Upper bound of one reconnect delay.
pub const BACKOFF_MAX_MS: u32 = 30_000;

/// What a socket's next read brings.
pub enum Incoming {
    /// A text frame.
    Text(String),
    /// The socket closed, with its close code (1006 when it dropped without one).
    Closed(u16),
}

/// One open WebSocket, as the supervisor drives it.
pub trait Socket {
    /// Sends a text frame.
    fn send(&self, text: String) -> LocalBoxFuture<'static, Result<(), SocketError>>;
    /// The next message; only the session's supervisor calls it, one call at a time.
    fn recv(&self) -> LocalBoxFuture<'static, Incoming>;
    /// Closes the socket (normal closure).
    fn close(&self);
}

/// Opens a socket to the URL.
pub type Connect = Rc<dyn Fn(&str) -> LocalBoxFuture<'static, Result<Rc<dyn Socket>, SocketError>>>;
/// Whether a local catalogue database exists.
pub type CatalogExists = Rc<dyn Fn(&str) -> LocalBoxFuture<'static, bool>>;
/// Writes documents into a local catalogue database (a refusal is the storage's: quota, a
/// blocked database).
pub type CatalogWrite = Rc<dyn Fn(&str, Vec<Value>) -> LocalBoxFuture<'static, Result<(), StorageError>>>;
/// Resolves after the given milliseconds.
pub type Sleep = Rc<dyn Fn(u32) -> LocalBoxFuture<'static, ()>>;
/// Runs a future in the background (the supervisor).
pub type Spawn = Rc<dyn Fn(LocalBoxFuture<'static, ()>)>;

/// What the realtime session needs from its platform.
#[derive(Clone)]
pub struct SyncPorts {
    /// Opens a socket.
    pub connect: Connect,
    /// Whether a local catalogue database of that name exists.
    pub catalog_exists: CatalogExists,
    /// Writes the bootstrapped documents into a local database of that name.
    pub catalog_write: CatalogWrite,
    /// Waits between reconnects.
    pub sleep: Sleep,
    /// A number in [0, 1), for the jitter.
    pub random: Rc<dyn Fn() -> f64>,
    /// Starts the supervisor.
    pub spawn: Spawn,
}

/// The wait before reconnecting. An invalidation asks every device of a tenant back at once:
/// they spread uniformly over 50–300 ms (the server's close waves spread them further), where a
/// dropped connection backs off exponentially.
pub fn reconnect_delay_ms(attempt: u32, last_close: Option<u16>, random: f64) -> u32 {
    if attempt == 0 && last_close == Some(CLOSE_INVALIDATED) {
        50 + (250.0 * random.clamp(0.0, 1.0)) as u32
    } else {
        backoff_ms(attempt, random)
    }
}

/// "Equal jitter": half the exponential delay, plus a random part of the other half.
pub fn backoff_ms(attempt: u32, random: f64) -> u32 {
    let exp = BACKOFF_BASE_MS.saturating_mul(1u32 << attempt.min(16)).min(BACKOFF_MAX_MS);
    exp / 2 + ((exp / 2) as f64 * random.clamp(0.0, 1.0)) as u32
}

/// A server frame of the protocol, or `None` for anything else. Parsed by the platform's JSON
/// codec (into a `Value`), then typed by the protocol's reader.
fn read_frame(text: &str) -> Option<ServerFrame> {
    ServerFrame::from_json(super::json::parse(text)?)
}

/// The `sdk:init` frame's text.
pub fn init_frame(token: &str, device_id: Option<String>, last_invalidation: Option<i64>) -> String {
    let init =
        SdkInit { token: token.to_owned(), device_id, sdk_version: Some(SDK_VERSION.to_owned()), last_invalidation };
    json::stringify(&ClientFrame::SdkInit(init).to_json())
}

/// Where the realtime session is (the `state` event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncState {
    /// Not connected, never asked to.
    Idle,
    /// Opening the socket or waiting for `ready`.
    Connecting,
    /// Routed: `ready` arrived.
    Ready,
    /// Closed by `close()` or a sign-out, or refused.
    Closed,
}

impl SyncState {
    /// The wire name (`"idle"`, `"connecting"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            SyncState::Idle => "idle",
            SyncState::Connecting => "connecting",
            SyncState::Ready => "ready",
            SyncState::Closed => "closed",
        }
    }
}

/// Why `connect()` failed for good.
#[derive(Debug, Clone, PartialEq)]
pub enum SyncFailure {
    /// No access token is stored.
    NotSignedIn,
    /// The server refused the session (`error` frame): `{code, message}`.
    Refused {
        /// The server's code.
        code: String,
        /// The server's words.
        message: String,
    },
    /// `close()` or a sign-out ended the session before it was ready.
    Closed,
}

impl SyncFailure {
    /// The words `connect()` rejects with.
    pub fn message(&self) -> String {
        match self {
            SyncFailure::NotSignedIn => "no session: log in before connecting".into(),
            SyncFailure::Refused { code, message } => {
                ["the realtime server refused the session (", code, "): ", message].concat()
            }
            SyncFailure::Closed => "the realtime session was closed before it was ready".into(),
        }
    }
}

/// A one-shot outcome any number of futures can wait for.
#[derive(Default)]
struct Signal {
    value: RefCell<Option<Result<(), SyncFailure>>>,
    wakers: RefCell<Vec<Waker>>,
}

impl Signal {
    fn set(&self, value: Result<(), SyncFailure>) {
        if self.value.borrow().is_none() {
            *self.value.borrow_mut() = Some(value);
            for w in self.wakers.borrow_mut().drain(..) {
                w.wake();
            }
        }
    }
}

struct Wait(Rc<Signal>);

impl Future for Wait {
    type Output = Result<(), SyncFailure>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.0.value.borrow().clone() {
            Some(v) => Poll::Ready(v),
            None => {
                self.0.wakers.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// The events of `on(event, fn)`.
pub struct SyncEvents {
    /// `ready` handlers.
    pub ready: HookList,
    /// `invalidate-local` handlers (run before the local databases are destroyed).
    pub invalidate_local: HookList,
    /// `bootstrapped` handlers.
    pub bootstrapped: HookList,
    /// `error` handlers.
    pub error: HookList,
    /// `state` handlers.
    pub state: HookList,
}

impl SyncEvents {
    /// The hook list of a JS event name.
    pub fn by_name(&self, name: &str) -> Option<&HookList> {
        match name {
            "ready" => Some(&self.ready),
            "invalidate-local" => Some(&self.invalidate_local),
            "bootstrapped" => Some(&self.bootstrapped),
            "error" => Some(&self.error),
            "state" => Some(&self.state),
            _ => None,
        }
    }
}

enum Attempt {
    Ready(Rc<dyn Socket>),
    Refused(SyncFailure),
    Transient(String),
}

struct Inner {
    session: Session,
    url: String,
    ports: SyncPorts,
    state: Cell<SyncState>,
    routing: RefCell<Option<Value>>,
    events: SyncEvents,
    stopped: Cell<bool>,
    /// Bumped by each connect after a close, so an old supervisor retires.
    generation: Cell<u64>,
    socket: RefCell<Option<Rc<dyn Socket>>>,
    first_ready: RefCell<Rc<Signal>>,
}

/// The realtime session: connects, follows invalidations, bootstraps the catalogue.
#[derive(Clone)]
pub struct SyncSession(Rc<Inner>);

impl SyncSession {
    /// A session on `url`, not yet connected.
    pub fn new(session: Session, url: String, ports: SyncPorts) -> SyncSession {
        let sync = SyncSession(Rc::new(Inner {
            session: session.clone(),
            url,
            ports,
            state: Cell::new(SyncState::Idle),
            routing: RefCell::new(None),
            events: SyncEvents {
                ready: HookList::new("ready"),
                invalidate_local: HookList::new("invalidate-local"),
                bootstrapped: HookList::new("bootstrapped"),
                error: HookList::new("error"),
                state: HookList::new("state"),
            },
            stopped: Cell::new(true),
            generation: Cell::new(0),
            socket: RefCell::new(None),
            first_ready: RefCell::new(Rc::default()),
        }));
        // Sign-out ends the realtime session; a weak link, so the session does not keep it alive.
        let weak: Weak<Inner> = Rc::downgrade(&sync.0);
        session.on_ended().register(Rc::new(move |_| {
            if let Some(inner) = weak.upgrade() {
                SyncSession(inner).close();
            }
            Box::pin(async { Ok(()) })
        }));
        sync
    }

    /// The event lists.
    pub fn events(&self) -> &SyncEvents {
        &self.0.events
    }

    /// The current state.
    pub fn state(&self) -> SyncState {
        self.0.state.get()
    }

    /// The last `ready` payload, or `None` before one.
    pub fn routing(&self) -> Option<Value> {
        self.0.routing.borrow().clone()
    }

    fn reporter(&self) -> Rc<dyn super::ports::Reporter> {
        self.0.session.reporter_handle()
    }

    async fn set_state(&self, state: SyncState) {
        if self.0.state.get() != state {
            self.0.state.set(state);
            self.0.events.state.run(&Value::String(state.as_str().into()), self.0.session.hook_context()).await;
        }
    }

    async fn emit_error(&self, code: &str, message: &str) {
        self.0
            .events
            .error
            .run(&json::object([("code", code.into()), ("message", message.into())]), self.0.session.hook_context())
            .await;
    }

    /// Resolves at the first `ready`; starts the session when it is not running.
    pub async fn connect(&self) -> Result<(), SyncFailure> {
        if self.0.stopped.get() {
            self.0.stopped.set(false);
            self.0.generation.set(self.0.generation.get() + 1);
            *self.0.first_ready.borrow_mut() = Rc::default();
            let me = self.clone();
            let generation = self.0.generation.get();
            (self.0.ports.spawn)(Box::pin(async move { me.supervise(generation).await }));
        }
        let signal = self.0.first_ready.borrow().clone();
        Wait(signal).await
    }

    /// Stops the session: closes the socket, no reconnect.
    pub fn close(&self) {
        self.0.stopped.set(true);
        if let Some(socket) = self.0.socket.borrow_mut().take() {
            socket.close();
        }
        self.0.first_ready.borrow().set(Err(SyncFailure::Closed));
        if self.0.state.get() != SyncState::Closed && self.0.state.get() != SyncState::Idle {
            let me = self.clone();
            (self.0.ports.spawn)(Box::pin(async move { me.set_state(SyncState::Closed).await }));
        }
    }

    fn retired(&self, generation: u64) -> bool {
        self.0.stopped.get() || self.0.generation.get() != generation
    }

    async fn supervise(self, generation: u64) {
        let mut attempt: u32 = 0;
        let mut last_close: Option<u16> = None;
        loop {
            if self.retired(generation) {
                return;
            }
            if attempt > 0 || last_close.is_some() {
                let delay = reconnect_delay_ms(attempt, last_close, (self.0.ports.random)());
                (self.0.ports.sleep)(delay).await;
                if self.retired(generation) {
                    return;
                }
            }
            match self.attempt().await {
                Attempt::Ready(socket) => {
                    attempt = 0;
                    self.0.first_ready.borrow().set(Ok(()));
                    let code = self.pump(socket).await;
                    last_close = Some(code);
                    if self.retired(generation) {
                        return;
                    }
                    self.set_state(SyncState::Connecting).await;
                    if is_refusal(code) {
                        self.stop_refused(SyncFailure::Refused {
                            code: "closed".into(),
                            message: ["closed by the server with ", &super::codec::decimal(code)].concat(),
                        })
                        .await;
                        return;
                    }
                }
                Attempt::Refused(failure) => {
                    self.stop_refused(failure).await;
                    return;
                }
                Attempt::Transient(why) => {
                    self.emit_error(codes::CONNECTION_FAILED, &why).await;
                    attempt = attempt.saturating_add(1);
                }
            }
        }
    }

    async fn stop_refused(&self, failure: SyncFailure) {
        self.0.stopped.set(true);
        self.0.first_ready.borrow().set(Err(failure));
        self.set_state(SyncState::Closed).await;
    }

    /// One connection up to its `ready`.
    async fn attempt(&self) -> Attempt {
        self.set_state(SyncState::Connecting).await;
        let session = &self.0.session;
        if !session.check_if_logged_in() {
            return Attempt::Refused(SyncFailure::NotSignedIn);
        }
        let Some(token) = session.get_token().await else {
            return if session.check_if_logged_in() {
                Attempt::Transient("the token could not be refreshed".into())
            } else {
                Attempt::Refused(SyncFailure::NotSignedIn)
            };
        };
        if session.device_id().is_none() {
            // Best effort: the handshake works without a device id, it just records nothing.
            session.register_device().await;
        }
        let socket = match (self.0.ports.connect)(&self.0.url).await {
            Ok(s) => s,
            Err(e) => return Attempt::Transient(e.0),
        };
        *self.0.socket.borrow_mut() = Some(socket.clone());
        if let Err(e) = socket.send(init_frame(&token, session.device_id(), session.last_invalidation())).await {
            return Attempt::Transient(e.0);
        }
        loop {
            match socket.recv().await {
                // A frame that is not one of the protocol's is ignored.
                Incoming::Text(text) => match read_frame(&text) {
                    Some(ServerFrame::InvalidateLocal(payload)) => self.invalidate_local(&payload).await,
                    Some(ServerFrame::Ready(payload)) => {
                        if let Err(e) = self.ready(&payload).await {
                            socket.close();
                            return Attempt::Transient(e);
                        }
                        return Attempt::Ready(socket);
                    }
                    Some(ServerFrame::Error(e)) => {
                        self.emit_error(&e.code, &e.message).await;
                        socket.close();
                        return Attempt::Refused(SyncFailure::Refused { code: e.code, message: e.message });
                    }
                    Some(ServerFrame::Pong(_)) | None => {}
                },
                Incoming::Closed(code) if is_refusal(code) => {
                    return Attempt::Refused(SyncFailure::Refused {
                        code: "closed".into(),
                        message: ["closed by the server with ", &super::codec::decimal(code)].concat(),
                    })
                }
                Incoming::Closed(code) => {
                    return Attempt::Transient(
                        ["closed during the handshake (", &super::codec::decimal(code), ")"].concat(),
                    )
                }
            }
        }
    }

    /// Reads the established socket until it closes; returns the close code.
    async fn pump(&self, socket: Rc<dyn Socket>) -> u16 {
        loop {
            match socket.recv().await {
                Incoming::Text(text) => {
                    if let Some(ServerFrame::InvalidateLocal(payload)) = read_frame(&text) {
                        self.invalidate_local(&payload).await;
                    }
                }
                Incoming::Closed(code) => {
                    self.0.socket.borrow_mut().take();
                    return code;
                }
            }
        }
    }

    /// Pushes what the device wrote (`pushTo` databases, the report added to the event), runs the
    /// handlers, destroys the tracked local databases and remembers the invalidation obeyed.
    async fn invalidate_local(&self, payload: &InvalidateLocal) {
        let session = &self.0.session;
        let mut event = payload.to_json();
        session.push_tracked(None).await.annotate(&mut event);
        self.0.events.invalidate_local.run(&event, session.hook_context()).await;
        // Counted again after the handlers: what they wrote is pushed or reported.
        session.destroy_tracked(None, Some(crate::protocol::losses::LossReason::Invalidation)).await;
        if let Err(e) = self.0.session.set_last_invalidation(payload.invalidated_at) {
            self.reporter().error(&["session-broker: could not record the invalidation obeyed: ", &e.0].concat());
        }
    }

    /// Records the routing, bootstraps the catalogue when the device has none, then is ready.
    async fn ready(&self, payload: &Ready) -> Result<(), String> {
        let value = payload.to_json();
        *self.0.routing.borrow_mut() = Some(value.clone());
        self.0.session.note_routing(&payload.company_id, &payload.dynamic_db);
        // A connection: the device's losses kept for this tenant go now.
        self.0.session.send_losses().await;
        let static_db = &payload.static_db;
        let tracked = self.0.session.tracked_local_databases().contains(static_db);
        if static_db.is_empty() || !tracked || !(self.0.ports.catalog_exists)(static_db).await {
            self.bootstrap(payload).await?;
        }
        self.set_state(SyncState::Ready).await;
        self.0.events.ready.run(&value, self.0.session.hook_context()).await;
        Ok(())
    }

    async fn bootstrap(&self, ready: &Ready) -> Result<(), String> {
        let database = ready.database.as_str();
        let result =
            self.0.session.call(BOOTSTRAP.method, &[BOOTSTRAP.path, "?database=", database].concat(), None).await;
        let data = match (result.success, result.data) {
            (true, Some(data)) => data,
            _ => return Err(["bootstrap failed: ", &result.error.unwrap_or_default()].concat()),
        };
        let db = data.get("db").and_then(Value::as_str).ok_or("the bootstrap answer names no database")?.to_owned();
        // Only the tenant's own static database named by `ready` may be written and tracked:
        // a server must not make the SDK track (and later delete) an app's own database.
        let static_db = ready.static_db.as_str();
        if db != static_db {
            return Err([
                "the bootstrap answer names database \"",
                &db,
                "\", not the static database \"",
                static_db,
                "\" that ready announced; refused",
            ]
            .concat());
        }
        let docs = data.get("docs").and_then(Value::as_array).cloned().unwrap_or_default();
        let count = docs.len();
        (self.0.ports.catalog_write)(&db, docs).await.map_err(|e| e.0)?;
        self.0.session.track_local_database(&db, "", "").map_err(|e| e.message())?;
        self.0
            .events
            .bootstrapped
            .run(
                &json::object([("database", database.into()), ("db", db.into()), ("docCount", count.into())]),
                self.0.session.hook_context(),
            )
            .await;
        Ok(())
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
