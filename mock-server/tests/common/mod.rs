//! A real server on port 0 for each test, and a small client for it.
#![allow(dead_code)]

use mock_server::settings::Settings;
use mock_server::state::{AppState, StaticDirs};
use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};

pub struct Server {
    pub base: String,
    pub state: AppState,
    pub client: Client,
}

pub async fn spawn_with(mut settings: Settings) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // As the binary does: replicas of one store reach each other where they listen.
    if settings.database_url.is_some() && settings.replica_url.is_none() {
        settings.replica_url = Some(format!("http://{addr}"));
    }
    let state = AppState::new(settings, StaticDirs::default()).expect("state");
    let app = mock_server::app(state.clone());
    tokio::spawn(async move { axum::serve(mock_server::app::listener(listener), app).await.unwrap() });
    Server { base: format!("http://{addr}"), state, client: Client::new() }
}

pub async fn spawn() -> Server {
    spawn_with(Settings { test_controls: true, ..Settings::default() }).await
}

pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Server {
    pub async fn call(&self, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> Answer {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap();
        let body =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        Answer { status, body, headers }
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Answer {
        self.call(Method::POST, path, token, Some(body)).await
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Answer {
        self.call(Method::GET, path, token, None).await
    }

    /// Logs in and returns the whole `/auth` answer.
    pub async fn login(&self, username: &str) -> Value {
        let a = self
            .post(
                "/auth",
                None,
                json!({"username": username, "password": format!("{username}-pass"), "deviceInfo": {}}),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{:?}", a.body);
        a.body
    }

    pub async fn token(&self, username: &str) -> String {
        self.login(username).await["token"].as_str().unwrap().to_owned()
    }

    /// Registers the session's device with an SDK that has the cutover switch; its id.
    pub async fn register_device(&self, token: &str) -> String {
        let answer = self.post("/auth/connect", Some(token), json!({"sdkVersion": "1.4.17"})).await;
        answer.body["deviceId"].as_str().unwrap_or_else(|| panic!("{:?}", answer.body)).to_owned()
    }

    /// An operator's invalidation of `tenant`; its `invalidatedAt`.
    pub async fn invalidate(&self, token: &str, tenant: &str) -> i64 {
        let answer = self.post(&format!("/admin/invalidate-clients/{tenant}"), Some(token), json!({})).await;
        answer.body["invalidatedAt"].as_i64().unwrap_or_else(|| panic!("{:?}", answer.body))
    }
}

/// Asserts the error body (`{error, message}`) and status.
pub fn assert_error(a: &Answer, status: u16, code: &str) {
    assert_eq!(a.status.as_u16(), status, "{:?}", a.body);
    assert_eq!(a.body["error"], code, "{:?}", a.body);
    assert!(a.body["message"].as_str().is_some_and(|m| !m.is_empty()), "{:?}", a.body);
}

impl Server {
    pub async fn patch(&self, path: &str, token: Option<&str>, body: Value) -> Answer {
        self.call(Method::PATCH, path, token, Some(body)).await
    }

    /// Triggers `cron` and waits for its run to finish; returns the finished run.
    pub async fn run_cron(&self, token: &str, cron: &str) -> Value {
        let started = self.post(&format!("/admin/crons/{cron}/run"), Some(token), json!({})).await;
        assert_eq!(started.status, StatusCode::ACCEPTED, "{:?}", started.body);
        let run_id = started.body["runId"].as_str().unwrap().to_owned();
        assert_eq!(started.headers["location"], format!("/admin/crons/runs/{run_id}").as_str());
        // Following a run is a read (crons:read, sys_admin), as the runbook's verification is.
        let verifier = self.token("admin").await;
        self.wait_run(&verifier, &run_id).await
    }

    pub async fn wait_run(&self, token: &str, run_id: &str) -> Value {
        for _ in 0..400 {
            let run = self.get(&format!("/admin/crons/runs/{run_id}"), Some(token)).await;
            assert_eq!(run.status, StatusCode::OK, "{:?}", run.body);
            if run.body["status"] != "running" {
                return run.body;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("run {run_id} did not finish");
    }

    pub fn now(&self) -> i64 {
        self.state.clock.now_ms()
    }

    pub async fn advance_days(&self, days: f64) {
        let a = self.post("/__mock/clock", None, json!({"advanceDays": days})).await;
        assert_eq!(a.status, StatusCode::OK);
    }
}
pub mod alerts;
pub mod device_key;
pub mod engine;
pub mod fault_proxy;
pub mod fleet;
pub mod histories;
pub mod pg;
pub mod prom;
pub mod ws;
