//! The small traits the core needs from its platform. Browser adapters live in `web/`; tests use
//! the fakes in `core/fakes.rs`.

use std::future::Future;
use std::pin::Pin;

/// A boxed future that need not be `Send`: the browser is single-threaded.
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// `localStorage` refused a write, or the page has none (quota, private mode, a worker): the
/// platform's words (a `DOMException`'s name and message, say). A newtype rather than one port
/// error with a kind field: that field cost the package about 100 B (measured).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageError(pub String);

impl StorageError {
    /// The SDK's code where a storage failure reaches the app (a login's result,
    /// `trackLocalDatabase`, the constructor).
    pub const CODE: &'static str = super::codes::STORAGE_UNAVAILABLE;
}

/// The realtime socket could not be opened or written to, in the platform's words. It has no
/// code of its own: the session retries, and a session that never became ready fails
/// `connection_failed`, these words its cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketError(pub String);

/// A local database the platform could not destroy (IndexedDB, PouchDB), in its words. It has no
/// code: the database stays tracked, listed as failed and reported, and nothing is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestroyError(pub String);

/// Key/value string storage (the browser's `localStorage`).
pub trait Storage {
    /// The value, or `None` when absent.
    fn get(&self, key: &str) -> Option<String>;
    /// Fails when the platform refuses the write (quota, private mode).
    fn set(&self, key: &str, value: &str) -> Result<(), StorageError>;
    /// Removes the key (absent is fine).
    fn remove(&self, key: &str);
    /// Every key stored now (the ledger of local databases enumerates its lines).
    fn keys(&self) -> Vec<String> {
        Vec::new()
    }
    /// What the synchronous reads answer changed without a write here (a sign-out began or
    /// ended): a platform that caches those answers in front of the storage drops them.
    fn reads_changed(&self) {}
}

/// Milliseconds since the Unix epoch, and waiting.
pub trait Clock {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
    /// Resolves after `ms` milliseconds (bounds hook handlers and lock waits).
    fn sleep(&self, ms: u32) -> LocalBoxFuture<'static, ()>;
}

/// Held while this tab refreshes; dropping it releases the lock.
pub trait LockGuard {}

/// Why the refresh lock was not granted in time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// Nobody released it within the wait: the holder is presumed gone (a frozen or closed tab).
    TimedOut,
    /// The platform's lock failed; the caller may go ahead without it.
    Unavailable(String),
}

/// One refresh at a time across the tabs of an origin (Web Locks in the browser).
pub trait RefreshLock {
    /// Waits up to `wait_ms` for the lock.
    fn acquire(&self, wait_ms: u32) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>>;
    /// Takes the lock from a holder that never released it (the orphaned-lock path).
    fn steal(&self) -> LocalBoxFuture<'static, Result<Box<dyn LockGuard>, LockError>>;
    /// The record of the refresh token the last refresh of any tab spent (its last 16
    /// characters), in a store every tab reads alike at once (IndexedDB in the browser): a tab's
    /// view of `localStorage` learns another tab's writes later, not when the lock is released.
    /// With `Some(tail)`, writes it (before the lock is released); else reads it. `None` where no
    /// such store is.
    fn spent(&self, _write: Option<&str>) -> LocalBoxFuture<'static, Option<String>> {
        Box::pin(std::future::ready(None))
    }
}

pub use crate::protocol::routes::Method;

/// One HTTP request.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    /// The method.
    pub method: Method,
    /// The absolute URL.
    pub url: String,
    /// Sent as `Authorization: Bearer <jwt>`.
    pub bearer: Option<String>,
    /// A JSON document, sent with `Content-Type: application/json`.
    pub body: Option<String>,
    /// The nonce URL and the route (`"POST /auth"`) of a proof of the device's key: the
    /// transport fetches a nonce, has the key sign it with the route and adds `deviceProof` to
    /// the body; with no key kept the body goes as it is. A proof that cannot be made (no nonce,
    /// a signature refused) fails the request. (In the transport, so the module's sign-in and
    /// refresh wait on one future, not two.)
    pub prove: Option<(String, String)>,
    /// With `prove`: the device is known to be keyed (registered with this browser's key), so a
    /// key store that cannot be read fails the request too. Otherwise such a store keeps no key
    /// (a browser where IndexedDB never opens): the request goes unproven, as a device the server
    /// holds no key for may.
    pub keyed: bool,
}

/// An HTTP answer (any status).
#[derive(Debug, Clone, PartialEq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The body as text.
    pub body: String,
    /// The seconds `Retry-After` asked the client to wait (a 429's), 0 when it said nothing.
    pub retry_after: u32,
}

/// Why no HTTP status came back.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportError {
    /// The request failed before any answer (offline, DNS, CORS), with the platform's words.
    Network(String),
    /// No answer within the request timeout.
    Timeout,
}

impl TransportError {
    /// The `Display` text (called directly: no `to_string` instance per error type).
    pub fn message(&self) -> String {
        match self {
            TransportError::Network(m) => ["network error: ", m].concat(),
            TransportError::Timeout => "request timed out".into(),
        }
    }
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

/// HTTP (`fetch` in the browser).
pub trait Transport {
    /// Sends the request; any status is an answer.
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>>;
}

/// The device's local databases (IndexedDB, PouchDB).
pub trait LocalDatabases {
    /// Deletes the database `name` and everything stored for it; `adapter`: PouchDB's adapter
    /// it was opened with (from the ledger; `""`: tracked by name), so any tab destroys it
    /// through PouchDB.
    fn destroy(&self, name: &str, adapter: &str) -> LocalBoxFuture<'static, Result<(), DestroyError>>;
    /// The SDK's final push: each planned database is opened (by whichever tab runs it) and
    /// replicated to its target, each given up after `bound_ms`; what is left is counted from the
    /// database's own record of its last complete push. Failures are reported by the adapter;
    /// what it answers is the report.
    fn push(&self, plans: Vec<PushPlan>, bound_ms: u32) -> LocalBoxFuture<'static, PushReport>;
}

/// One database of a final push.
#[derive(Debug, Clone, PartialEq)]
pub struct PushPlan {
    /// The local database.
    pub name: String,
    /// PouchDB's adapter it was opened with (`""`: unknown).
    pub adapter: String,
    /// The remote database's URL and the `X-Docdb-*` headers to send; `None`: no push is
    /// allowed or possible, the documents are only counted.
    pub to: Option<(String, serde_json::Map<String, serde_json::Value>)>,
}

/// What the SDK's final push did, database → documents: the ones the server took (for every
/// database a push was tried for), and the ones it could not push where any were left (still on
/// the device, or destroyed and logged).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PushReport {
    /// Database → documents written.
    pub pushed: serde_json::Map<String, serde_json::Value>,
    /// Database → documents not pushed.
    pub unpushed: serde_json::Map<String, serde_json::Value>,
}

impl PushReport {
    /// Adds `pushed` and `unpushed` to an event object when there is something to say (nothing
    /// tried and nothing left: the event keeps its plain shape).
    pub fn annotate(&self, event: &mut serde_json::Value) {
        if let (serde_json::Value::Object(map), false) = (event, self.pushed.is_empty() && self.unpushed.is_empty()) {
            map.insert("pushed".into(), serde_json::Value::Object(self.pushed.clone()));
            map.insert("unpushed".into(), serde_json::Value::Object(self.unpushed.clone()));
        }
    }
}

/// The device's key pair (ECDSA P-256), kept where the page's storage cannot hand it out: a
/// non-extractable WebCrypto key in IndexedDB in the browser. Its public half is registered with
/// the device; its proofs spare the device the sign-in throttle and bind its refresh tokens.
pub trait DeviceKey {
    /// The public half (hex of the uncompressed point), the pair made on first use; `None` where
    /// the platform keeps no key. (Its proofs: `HttpRequest::prove`.)
    fn public_key(&self) -> LocalBoxFuture<'static, Option<String>>;
}

/// Where failures that must not interrupt a sequence are reported (`console.error` in the browser).
pub trait Reporter {
    /// Reports a failure.
    fn error(&self, message: &str);
}
