//! A real CouchDB-protocol engine for a test: PouchDB Server (pinned, installed under
//! target/pouchdb by `make setup`) on a free port, its data in a temp dir, with an admin, ended
//! with the test (pass or fail) by dropping it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const ADMIN: (&str, &str) = ("admin", "engine-pw");

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Where `make setup` installs PouchDB Server and PouchDB (for Node).
pub fn node_modules() -> PathBuf {
    repo_root().join("target/pouchdb/node_modules")
}

pub struct Engine {
    pub port: u16,
    child: Child,
    dir: PathBuf,
    pub http: reqwest::Client,
}

impl Engine {
    pub async fn start() -> Engine {
        // A free port is only free until someone binds it: an engine that exits at once (its port
        // taken meanwhile) is started again on another; one answering is checked to be ours.
        for _ in 0..5 {
            if let Some(engine) = Engine::start_on_a_free_port().await {
                return engine;
            }
        }
        panic!("pouchdb-server exited at start five times");
    }

    async fn start_on_a_free_port() -> Option<Engine> {
        let bin = node_modules().join(".bin/pouchdb-server");
        assert!(bin.exists(), "{} is missing: run make setup", bin.display());
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("engine-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = Command::new(bin);
        // Its config.json and log.txt go to the working directory: the temp dir too.
        command.args(["--host", "127.0.0.1", "--port", &port.to_string(), "--dir"]).arg(&dir).current_dir(&dir);
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("pouchdb-server starts");
        let mut engine = Engine { port, child, dir, http: reqwest::Client::new() };
        for _ in 0..300 {
            if engine.child.try_wait().unwrap().is_some() {
                return None;
            }
            let answer = match engine.http.get(engine.root()).send().await {
                Ok(r) if r.status().is_success() => r.text().await.unwrap_or_default(),
                _ => String::new(),
            };
            if answer.contains("express-pouchdb") {
                // Ends the admin party: from now on the engine needs the credentials the proxy adds.
                let set = engine
                    .http
                    .put(format!("{}_config/admins/{}", engine.root(), ADMIN.0))
                    .body(format!("\"{}\"", ADMIN.1))
                    .send()
                    .await
                    .unwrap();
                assert!(set.status().is_success(), "the engine's admin: {}", set.status());
                return Some(engine);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("pouchdb-server did not answer on port {port}");
    }

    pub fn root(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// `DOCDB_URL`: the root with the admin's credentials.
    pub fn url_with_credentials(&self) -> String {
        format!("http://{}:{}@127.0.0.1:{}/", ADMIN.0, ADMIN.1, self.port)
    }

    /// A request to the engine as its admin (the test's own view, not through the proxy).
    pub fn admin(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, format!("{}{path}", self.root())).basic_auth(ADMIN.0, Some(ADMIN.1))
    }

    pub async fn create_db(&self, db: &str) {
        let r = self.admin(reqwest::Method::PUT, db).send().await.unwrap();
        assert!(r.status().is_success(), "creating {db}: {}", r.status());
    }

    pub async fn bulk(&self, db: &str, docs: serde_json::Value) -> serde_json::Value {
        let r = self
            .admin(reqwest::Method::POST, &format!("{db}/_bulk_docs"))
            .json(&serde_json::json!({ "docs": docs }))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "writing to {db}: {}", r.status());
        r.json().await.unwrap()
    }

    pub async fn get(&self, path: &str) -> serde_json::Value {
        self.admin(reqwest::Method::GET, path).send().await.unwrap().json().await.unwrap()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ =
            Command::new("kill").args(["-TERM", "--", &format!("-{}", self.child.id())]).stderr(Stdio::null()).status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A new directory under the system's temp dir (a local PouchDB's home, say).
pub fn temp_dir(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!(
        "{name}-{}-{}",
        std::process::id(),
        mock_server::auth::secrets::random_id("t")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir.to_string_lossy().into_owned()
}

/// What tests/pouchdb/replicate.cjs printed: a PouchDB (Node) replication, as an app runs it.
/// Awaited, never blocking: the server under test runs on the same runtime.
pub async fn pouchdb(args: &[&str]) -> serde_json::Value {
    let script = repo_root().join("mock-server/tests/pouchdb/replicate.cjs");
    let run = tokio::process::Command::new("node")
        .arg(script)
        .args(args)
        .env("NODE_PATH", node_modules())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the replication ends within 120 s")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "replicate.cjs {args:?}: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// Forwards requests to an engine as they came (every header but `Host`) and answers what the
/// engine answered: what a test's pass-through in front of the engine does with each request.
#[derive(Clone)]
pub struct Forwarder {
    root: String,
    http: reqwest::Client,
}

impl Forwarder {
    pub async fn forward(&self, request: axum::extract::Request) -> (reqwest::StatusCode, axum::body::Bytes) {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str()).trim_start_matches('/');
        let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        let mut forward = self.http.request(parts.method, format!("{}{path}", self.root)).body(body);
        for (name, value) in &parts.headers {
            if name != "host" {
                forward = forward.header(name, value);
            }
        }
        let answer = forward.send().await.unwrap();
        (answer.status(), answer.bytes().await.unwrap())
    }
}

impl Engine {
    pub fn forwarder(&self) -> Forwarder {
        Forwarder { root: self.root(), http: self.http.clone() }
    }
}

/// Serves a pass-through `app` on a free port; answers the `DOCDB_URL` that names it (with the
/// engine's admin credentials, which it forwards).
pub async fn serve_pass_through(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{}:{}@{addr}/", ADMIN.0, ADMIN.1)
}
