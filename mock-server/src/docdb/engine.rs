//! The CouchDB-protocol engine behind the document proxy, reached over HTTP at `DOCDB_URL`:
//! Apache CouchDB 3 in production, PouchDB Server on these machines. The URL's userinfo holds the
//! engine's admin credentials: they are taken out of the URL, sent only to the engine (basic
//! auth added by the proxy), and never printed, logged or handed to a device.

use std::fmt;

pub use crate::bridge::{wait, BridgeError};
use std::time::Duration;

/// `DOCDB_URL`, parsed: the engine's root and, apart, its credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct EngineUrl {
    root: reqwest::Url,
    user: String,
    password: String,
}

/// Why a `DOCDB_URL` is not an engine's root.
#[derive(Debug, thiserror::Error)]
pub enum EngineUrlError {
    #[error("not a URL")]
    NotUrl(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("the engine is reached over http:// here, got {0}://")]
    NotHttp(String),
    #[error("give the engine's root URL: http://user:password@host:port/")]
    NotRoot,
}

impl EngineUrl {
    pub fn parse(value: &str) -> Result<EngineUrl, EngineUrlError> {
        let mut root = reqwest::Url::parse(value).map_err(|e| EngineUrlError::NotUrl(Box::new(e)))?;
        if root.scheme() != "http" {
            return Err(EngineUrlError::NotHttp(root.scheme().to_owned()));
        }
        if root.host_str().is_none() || root.query().is_some() || root.fragment().is_some() {
            return Err(EngineUrlError::NotRoot);
        }
        let decode = super::percent_decoded;
        let (user, password) = (decode(root.username()), decode(root.password().unwrap_or("")));
        // Cannot fail for an http URL with a host.
        let _ = root.set_username("");
        let _ = root.set_password(None);
        if !root.path().ends_with('/') {
            let path = format!("{}/", root.path());
            root.set_path(&path);
        }
        Ok(EngineUrl { root, user, password })
    }

    /// The root without credentials (safe to print).
    pub fn root(&self) -> &str {
        self.root.as_str()
    }
}

impl fmt::Debug for EngineUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let credentials = if self.user.is_empty() { "none" } else { "redacted" };
        write!(f, "EngineUrl({}, credentials {credentials})", self.root)
    }
}

/// How long a pooled connection to the engine is kept idle: under what the far side keeps it.
/// PouchDB Server (Node) closes a keep-alive connection idle for 5 s, and a relay in front of it
/// closes its side then too; a connection taken from the pool after that meets a closed socket
/// with the request already written, and the request fails though the engine is up. Taken well
/// under, so a connection is never reused at the moment the far side lets it go.
pub const POOL_IDLE: std::time::Duration = Duration::from_secs(3);

/// How long the engine has to begin answering a device's request that is not a live feed (a
/// live feed may send nothing before its first heartbeat): under the SDK's default request
/// timeout (15 s), so the device is told the proxy's retryable error rather than timing out
/// itself, and a black-holed engine never holds a request past it.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// An HTTP client for the engine and its twin without a pool (a request sent again goes on a
/// connection of its own, never on another pooled one that may be as dead as the first).
#[derive(Clone, Debug)]
struct Clients {
    pooled: reqwest::Client,
    fresh: reqwest::Client,
}

impl Clients {
    fn new(timeout: Option<Duration>) -> Result<Clients, reqwest::Error> {
        let builder = || {
            let b = reqwest::Client::builder().connect_timeout(Duration::from_secs(5)).pool_idle_timeout(POOL_IDLE);
            match timeout {
                Some(t) => b.timeout(t),
                None => b,
            }
        };
        Ok(Clients { pooled: builder().build()?, fresh: builder().pool_max_idle_per_host(0).build()? })
    }
}

/// Pooled HTTP clients for the engine: one for the proxy (on the server's runtime), one for the
/// synchronous callers (the rolling machine, the views) on the bridge's runtime.
#[derive(Clone, Debug)]
pub struct Engine {
    url: EngineUrl,
    http: Clients,
    bridged: Clients,
}

/// Whether a request that failed with `e` before any answer is sent again: always when no
/// connection was made (it reached nothing); when `replayable` (a read: the engine doing it twice
/// changes nothing) also when the connection broke before the answer began. A write whose
/// connection broke may have been done: it is not sent twice, and the caller answers an error
/// the device may retry. A timeout is not retried: the engine is slow, not the connection dead.
fn retried(e: &reqwest::Error, replayable: bool) -> bool {
    !e.is_timeout() && (e.is_connect() || (replayable && e.is_request()))
}

/// Sends `request` on `clients`, once more on a fresh connection when [`retried`] says so.
async fn send_on(
    clients: Clients,
    request: reqwest::Request,
    replayable: bool,
) -> Result<reqwest::Response, reqwest::Error> {
    use crate::recorded::{connection_failed, retried as count_retry, Upstream};
    let again = request.try_clone();
    match clients.pooled.execute(request).await {
        Err(e) => {
            connection_failed(Upstream::Engine);
            let Some(again) = again.filter(|_| retried(&e, replayable)) else { return Err(e) };
            count_retry(Upstream::Engine);
            clients.fresh.execute(again).await.inspect_err(|_| connection_failed(Upstream::Engine))
        }
        answered => answered,
    }
}

impl Engine {
    pub fn new(url: EngineUrl) -> Result<Engine, reqwest::Error> {
        // No overall timeout: a continuous `_changes` feed lasts as long as its device wants.
        let http = Clients::new(None)?;
        // The rolling machine's requests are bounded (no feeds): a stuck engine fails the step.
        let bridged = Clients::new(Some(Duration::from_secs(120)))?;
        Ok(Engine { url, http, bridged })
    }

    pub fn url(&self) -> &EngineUrl {
        &self.url
    }

    /// A request to `path` (already percent-encoded, with its query, relative to the root), as
    /// the engine's admin; sent with [`Engine::send`].
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.request_with(&self.http.pooled, method, path)
    }

    /// The same, for the bridge (`wait`); sent with [`Engine::send_bridged`].
    pub fn bridged_request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.request_with(&self.bridged.pooled, method, path)
    }

    /// Sends a request made by [`Engine::request`], sent again on a fresh connection when the
    /// first could not have been answered (see [`retried`]; `replayable`: a read).
    pub fn send(
        &self,
        request: reqwest::RequestBuilder,
        replayable: bool,
    ) -> impl std::future::Future<Output = Result<reqwest::Response, reqwest::Error>> + Send + 'static {
        let clients = self.http.clone();
        async move { send_on(clients, request.build()?, replayable).await }
    }

    /// The same for a request made by [`Engine::bridged_request`].
    pub fn send_bridged(
        &self,
        request: reqwest::RequestBuilder,
        replayable: bool,
    ) -> impl std::future::Future<Output = Result<reqwest::Response, reqwest::Error>> + Send + 'static {
        let clients = self.bridged.clone();
        async move { send_on(clients, request.build()?, replayable).await }
    }

    fn request_with(&self, http: &reqwest::Client, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let url = format!("{}{}", self.url.root, path.trim_start_matches('/'));
        let builder = http.request(method, url);
        if self.url.user.is_empty() {
            builder
        } else {
            builder.basic_auth(&self.url.user, Some(&self.url.password))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_kept_apart_and_never_printed() {
        let url = EngineUrl::parse("http://admin:s%40cret@127.0.0.1:5984").unwrap();
        assert_eq!(url.root(), "http://127.0.0.1:5984/");
        assert_eq!((url.user.as_str(), url.password.as_str()), ("admin", "s@cret"));
        let shown = format!("{url:?}");
        assert!(!shown.contains("cret") && !shown.contains("admin"), "{shown}");
        assert_eq!(EngineUrl::parse("http://127.0.0.1:5984/couch").unwrap().root(), "http://127.0.0.1:5984/couch/");
    }

    #[test]
    fn what_is_not_an_engine_root_is_refused() {
        for bad in ["", "127.0.0.1:5984", "ftp://h/", "https://h/", "http://h/?x=1"] {
            assert!(EngineUrl::parse(bad).is_err(), "{bad:?}");
        }
    }
}
