//! The real mock server in process: its router, the embedded store, its test clock held at the
//! simulated time. Requests reach it without sockets (the router as a tower service), one at a
//! time in the order the network delivers them; the realtime socket is served by hyper over an
//! in-memory stream. Nothing here waits on the host's time or threads.

use axum::body::Body;
use axum::http::Request;
use mock_server::settings::Settings;
use mock_server::state::{AppState, StaticDirs};
use mock_server::store::{devices, refresh_tokens, StoreError};
use tokio::io::DuplexStream;
use tokio_tungstenite::WebSocketStream;
use tower::ServiceExt;

use super::env::SimClock;

pub struct SimServer {
    pub state: AppState,
    router: axum::Router,
    clock: SimClock,
    /// One request at a time, first come first served (tokio's mutex is fair).
    serial: tokio::sync::Mutex<()>,
    /// Every `METHOD /path` the server was sent (the alphabet's check).
    pub seen: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

/// An answer: status and body text.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: String,
    /// `Retry-After`'s seconds, 0 without one.
    pub retry_after: u32,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// What a run's server is: the test controls on, no per-address limit (every simulated browser
/// shares one address), the shortest lifetimes the rules allow so expiry happens inside a run.
pub fn settings() -> Settings {
    Settings { test_controls: true, auth_rate_per_min: 0, ..Settings::default() }
}

impl SimServer {
    pub fn new(clock: SimClock) -> SimServer {
        let state = AppState::new(settings(), StaticDirs::default()).expect("the server's state");
        state.clock.freeze_at(clock.now());
        let router = mock_server::app(state.clone());
        SimServer { state, router, clock, serial: tokio::sync::Mutex::new(()), seen: Default::default() }
    }

    /// Holds the server's clock at the simulated now (before it is handed anything).
    pub fn tick(&self) {
        self.state.clock.freeze_at(self.clock.now());
    }

    /// One request, served whole before the next one starts.
    pub async fn handle(
        &self,
        method: &str,
        path: &str,
        bearer: Option<&str>,
        headers: &[(String, String)],
        body: Option<String>,
    ) -> Answer {
        let _turn = self.serial.lock().await;
        self.tick();
        self.seen.borrow_mut().insert(format!("{method} {}", path.split('?').next().unwrap_or(path)));
        let mut req = Request::builder().method(method).uri(path);
        if let Some(token) = bearer {
            req = req.header("Authorization", format!("Bearer {token}"));
        }
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        if body.is_some() {
            req = req.header("Content-Type", "application/json");
        }
        let req = req.body(body.map(Body::from).unwrap_or_else(Body::empty)).expect("a request the simulator built");
        let res = self.router.clone().oneshot(req).await.expect("the router is infallible");
        let status = res.status().as_u16();
        let retry_after =
            res.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).unwrap_or(0);
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap_or_default();
        Answer { status, body: String::from_utf8_lossy(&bytes).into_owned(), retry_after }
    }

    /// A WebSocket to `path`, served by the router over an in-memory stream.
    pub async fn socket(&self, path: &str) -> Result<WebSocketStream<DuplexStream>, String> {
        self.seen.borrow_mut().insert(format!("GET {}", path.split('?').next().unwrap_or(path)));
        let (client, server) = tokio::io::duplex(64 * 1024);
        let service = hyper_util::service::TowerToHyperService::new(self.router.clone());
        tokio::task::spawn_local(async move {
            let io = hyper_util::rt::TokioIo::new(server);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).with_upgrades().await;
        });
        self.tick();
        let (ws, _) =
            tokio_tungstenite::client_async(format!("ws://sim{path}"), client).await.map_err(|e| e.to_string())?;
        Ok(ws)
    }

    /// Where the session `sid` stands on the server now.
    pub fn session_state(&self, sid: &str) -> refresh_tokens::SessionState {
        let now = self.clock.now();
        self.state
            .store
            .transaction(|tx| refresh_tokens::session_state(tx, sid, now).map_err(StoreError::from))
            .expect("the store answers")
    }

    /// Whether any refresh token of `sid` was revoked (as against the session running out).
    pub fn revoked(&self, sid: &str) -> bool {
        self.state
            .store
            .transaction(|tx| {
                tx.query_row(
                    "SELECT COUNT(*) FROM refresh_tokens WHERE family_id = ?1 AND revoked_at IS NOT NULL",
                    [sid],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(StoreError::from)
            })
            .expect("the store answers")
            > 0
    }

    /// The devices `sid` runs on, and whether the session is bound to a key.
    pub fn bound_keys(&self, sid: &str) -> Vec<String> {
        self.state
            .store
            .transaction(|tx| devices::keys_of_session(tx, sid).map_err(StoreError::from))
            .expect("the store answers")
    }

    /// A device's user, company and sessions (`None`: no such device).
    pub fn device(&self, id: &str) -> Option<(String, String, Vec<String>)> {
        self.state
            .store
            .transaction(|tx| {
                let Some(d) = devices::by_id(tx, id)? else { return Ok(None) };
                Ok(Some((d.user_id, d.company_id, devices::sessions_of(tx, id)?)))
            })
            .map_err(|e: StoreError| e)
            .expect("the store answers")
    }

    /// The public key the server holds for a device.
    pub fn device_key(&self, id: &str) -> Option<String> {
        self.state.store.transaction(|tx| devices::key_of(tx, id).map_err(StoreError::from)).expect("the store answers")
    }

    pub fn devices_of_session(&self, sid: &str) -> Vec<String> {
        self.state
            .store
            .transaction(|tx| {
                tx.query_map("SELECT device_id FROM guard_device_sessions WHERE family_id = ?1", [sid], |r| r.get(0))
                    .map_err(StoreError::from)
            })
            .expect("the store answers")
    }
}
