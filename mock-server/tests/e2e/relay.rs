//! A relay in front of the mock server, for the browser tests: it passes every request on, and
//! for one path at a time answers in the server's place (any status and body, without asking the
//! server). It keeps the paths it was asked for.

use std::sync::{Arc, Mutex};

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::response::Response;

/// What the relay does to the requests of one path.
#[derive(Clone, Debug)]
pub enum Rewrite {
    /// Answered by the relay with this status and body; the server never sees the request.
    Answer(u16, &'static str),
}

#[derive(Default)]
struct Rules {
    rule: Option<(String, Rewrite)>,
    seen: Vec<String>,
}

#[derive(Clone)]
pub struct Relay {
    pub base: String,
    target: String,
    rules: Arc<Mutex<Rules>>,
}

impl Relay {
    /// A relay on a free port in front of `target` (an `http://host:port`).
    pub async fn start(target: &str) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let relay = Relay { base, target: target.to_owned(), rules: Arc::default() };
        let app = axum::Router::new().fallback(pass).with_state(relay.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        relay
    }

    /// From now on `path`'s requests get `rewrite`; `None` passes everything on again.
    pub fn set(&self, rule: Option<(&str, Rewrite)>) {
        self.rules.lock().unwrap().rule = rule.map(|(path, rewrite)| (path.to_owned(), rewrite));
    }

    /// The paths asked for since the last call, in order.
    pub fn take_seen(&self) -> Vec<String> {
        std::mem::take(&mut self.rules.lock().unwrap().seen)
    }
}

async fn pass(State(relay): State<Relay>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let rule = {
        let mut rules = relay.rules.lock().unwrap();
        rules.seen.push(path.clone());
        rules.rule.clone().filter(|(p, _)| *p == path).map(|(_, r)| r)
    };
    if let Some(Rewrite::Answer(status, body)) = rule {
        return Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
    }
    let (parts, body) = request.into_parts();
    let url = format!("{}{}", relay.target, parts.uri.path_and_query().map_or("/", |p| p.as_str()));
    let body = to_bytes(body, usize::MAX).await.unwrap();
    let mut headers = parts.headers;
    headers.remove("host");
    let answer = reqwest::Client::new().request(parts.method, url).headers(headers).body(body).send().await.unwrap();
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if name != "transfer-encoding" && name != "content-length" {
            response = response.header(name, value);
        }
    }
    response.body(Body::from(answer.bytes().await.unwrap())).unwrap()
}
