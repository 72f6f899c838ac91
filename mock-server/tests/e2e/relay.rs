//! A relay in front of the mock server, for the browser tests: it passes every request on, and
//! for one path at a time answers in the server's place (any status and body, without asking the
//! server), holds its next request a while before passing it on, or holds the answer to it (the
//! server has acted on it). It keeps the paths it was
//! asked for.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::response::Response;

/// What the relay does to the requests of one path.
#[derive(Clone, Debug)]
pub enum Rewrite {
    /// Answered by the relay with this status and body; the server never sees the request.
    Answer(u16, &'static str),
    /// The next request passed on after this long (the rule then ends).
    HoldOnce(Duration),
    /// The next request passed on at once, its answer held this long (the rule then ends).
    DelayOnce(Duration),
}

#[derive(Default)]
struct Rules {
    rules: Vec<(String, Rewrite)>,
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

    /// From now on `path`'s requests get `rewrite` (beside the rules of other paths); `None`
    /// passes everything on again.
    pub fn set(&self, rule: Option<(&str, Rewrite)>) {
        let rules = &mut self.rules.lock().unwrap().rules;
        match rule {
            Some((path, rewrite)) => rules.push((path.to_owned(), rewrite)),
            None => rules.clear(),
        }
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
        let at = rules.rules.iter().position(|(p, _)| *p == path);
        let rule = at.map(|at| rules.rules[at].1.clone());
        if let (Some(at), Some(Rewrite::HoldOnce(_) | Rewrite::DelayOnce(_))) = (at, &rule) {
            rules.rules.remove(at);
        }
        rule
    };
    match rule {
        Some(Rewrite::Answer(status, body)) => {
            let answer = Response::builder().status(status).header("content-type", "application/json");
            return answer.body(Body::from(body)).unwrap();
        }
        Some(Rewrite::HoldOnce(by)) => tokio::time::sleep(by).await,
        _ => {}
    }
    let (parts, body) = request.into_parts();
    let url = format!("{}{}", relay.target, parts.uri.path_and_query().map_or("/", |p| p.as_str()));
    let body = to_bytes(body, usize::MAX).await.unwrap();
    let mut headers = parts.headers;
    headers.remove("host");
    let answer = reqwest::Client::new().request(parts.method, url).headers(headers).body(body).send().await.unwrap();
    let (status, headers) = (answer.status(), answer.headers().clone());
    let body = answer.bytes().await.unwrap();
    if let Some(Rewrite::DelayOnce(by)) = rule {
        tokio::time::sleep(by).await;
    }
    let mut response = Response::builder().status(status);
    for (name, value) in &headers {
        if name != "transfer-encoding" && name != "content-length" {
            response = response.header(name, value);
        }
    }
    response.body(Body::from(body)).unwrap()
}
