//! Replicas (processes of the server's binary) on one PostgreSQL and one PouchDB Server, every hop
//! through a fault proxy of its own: the replica to the engine, the replica to PostgreSQL, and
//! the address the other replicas reach it at (`REPLICA_URL`, the owner's feeds).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::engine::ADMIN;
use super::fault_proxy::FaultProxy;

pub const SECRET: &str = "0123456789abcdef-fleet-faults";

/// A replica's hops, each through its own proxy.
pub struct Hops {
    pub engine: FaultProxy,
    pub pg: FaultProxy,
    /// In front of the replica, as the others reach it.
    pub peer: FaultProxy,
}

pub struct Replica {
    child: Child,
    /// Where devices reach it (not through a proxy).
    pub base: String,
    /// Where its `/metrics` is served (`host:port`).
    pub metrics: String,
    pub hops: Hops,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `url`'s `127.0.0.1:port` replaced with `127.0.0.1:{to}`.
fn through(url: &str, port: u16, to: u16) -> String {
    let at = format!("127.0.0.1:{port}");
    assert!(url.contains(&at), "{url} is not on {at}");
    url.replace(&at, &format!("127.0.0.1:{to}"))
}

/// The port of a `scheme://user@127.0.0.1:port/…` URL.
pub fn port_of(url: &str) -> u16 {
    let rest = url.split("127.0.0.1:").nth(1).expect("a URL on 127.0.0.1");
    rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

impl Replica {
    /// A replica of the store at `database_url` with the engine on `engine_port`, `env` added.
    pub async fn start(database_url: &str, engine_port: u16, env: &[(&str, &str)]) -> Replica {
        let pg_port = port_of(database_url);
        let hops = Hops {
            engine: FaultProxy::to_port(engine_port).await,
            pg: FaultProxy::to_port(pg_port).await,
            peer: FaultProxy::start(None).await,
        };
        let database_url = through(database_url, pg_port, hops.pg.port());
        let docdb_url = format!("http://{}:{}@127.0.0.1:{}/", ADMIN.0, ADMIN.1, hops.engine.port());
        let replica_url = format!("http://127.0.0.1:{}", hops.peer.port());
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        // Reading its first lines blocks: off the test's runtime, which serves the proxies.
        let (child, base, metrics) = tokio::task::spawn_blocking(move || {
            let mut command = Command::new(env!("CARGO_BIN_EXE_mock-server"));
            command
                .args(["--listen", "127.0.0.1:0"])
                .env("DATABASE_URL", &database_url)
                .env("DOCDB_URL", &docdb_url)
                .env("REPLICA_URL", &replica_url)
                .env("JWT_SECRET", SECRET)
                .env("METRICS_LISTEN", "127.0.0.1:0")
                .env("DOCDB_FEEDS_PER_SESSION", "64")
                .env("RUST_LOG", "warn");
            for (k, v) in &env {
                command.env(k, v);
            }
            let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("the server starts");
            let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
            let mut line = |what: &str| {
                let mut l = String::new();
                std::io::BufRead::read_line(&mut out, &mut l).unwrap();
                l.split(" on ").nth(1).unwrap_or_else(|| panic!("no {what} line: {l:?}")).trim().to_owned()
            };
            let base = line("listening");
            let metrics = line("metrics");
            let metrics = metrics.trim_start_matches("http://").trim_end_matches("/metrics").to_owned();
            (child, base, metrics)
        })
        .await
        .unwrap();
        let listening: SocketAddr = base.trim_start_matches("http://").parse().unwrap();
        hops.peer.to(listening);
        Replica { child, base, metrics, hops }
    }

    pub async fn metric(&self, name: &str) -> f64 {
        super::prom::scraped(&self.metrics, name.to_owned()).await
    }
}

/// Waits (up to `within`, looking every 100 ms) until `f` holds.
pub async fn eventually(what: &str, within: Duration, mut f: impl AsyncFnMut() -> bool) {
    let until = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < until {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within {within:?}");
}

/// A device of alice's signed in at `base`: its login's answer.
pub async fn alices_login(base: &str) -> Value {
    reqwest::Client::new()
        .post(format!("{base}/auth"))
        .json(&json!({"username": "alice", "password": "alice-pass", "deviceInfo": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Its session's document headers.
pub fn docdb_headers(login: &Value) -> Map<String, Value> {
    login["docdbHeaders"]["Remote"].as_object().unwrap_or_else(|| panic!("{login}")).clone()
}

/// A device's live feed through `base`, from `since`.
pub async fn listen(base: &str, db: &str, headers: &Map<String, Value>, since: &str) -> reqwest::Response {
    let mut r =
        reqwest::Client::new().get(format!("{base}/docdb/{db}/_changes?feed=continuous&heartbeat=500&since={since}"));
    for (k, v) in headers {
        r = r.header(k, v.as_str().unwrap());
    }
    let r = r.send().await.unwrap();
    assert!(r.status().is_success(), "{base}: {}", r.status());
    r
}

/// A live feed's rows as they come, kept with what was left of a line.
#[derive(Default)]
pub struct Rows {
    pub ids: Vec<String>,
    pending: Vec<u8>,
}

impl Rows {
    /// Reads `feed` until every id of `want` is among the rows (`true`) or it ends (`false`).
    pub async fn until(&mut self, feed: &mut reqwest::Response, want: &[String]) -> bool {
        loop {
            if want.iter().all(|w| self.ids.contains(w)) {
                return true;
            }
            match feed.chunk().await {
                Ok(Some(chunk)) => self.pending.extend_from_slice(&chunk),
                _ => return false,
            }
            while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                if let Ok(row) = serde_json::from_slice::<Value>(&line) {
                    if let Some(id) = row["id"].as_str() {
                        self.ids.push(id.to_owned());
                    }
                }
            }
        }
    }
}

/// Today's day database of acme's main shop.
pub fn todays_db() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(now))
}
