//! The proxy against the engine, on the same requests: generated `_changes` queries (parameter
//! names in several cases, given twice, values JSON-quoted, escaped, percent-encoded) sent through
//! the proxy and straight to PouchDB Server. What the proxy forwards is classified as the engine
//! treats it: a feed the engine holds open took a live feed's place (`DOCDB_FEEDS_PER_SESSION`,
//! cut at logout, refused while signing out). What it refuses gets the error body and never
//! reaches the engine, and no forwarded request stops the engine. And `_local` writes spelled
//! every way: what the engine reads as the server's day manifest the proxy refuses, a device's
//! checkpoint it lets through.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::IntoResponse;
use common::engine::{self, Engine};
use common::{spawn_with, Server};
use mock_server::docdb::engine::EngineUrl;
use mock_server::settings::Settings;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use reqwest::{Method, StatusCode};
use serde_json::{Map, Value};

const CASES: usize = 120;
/// How long the engine keeps a request unanswered before the test takes it as held open. Only
/// an answer the proxy did not count is looked at again, for `CONFIRM`, before it fails the test.
const HELD: Duration = Duration::from_secs(3);
const CONFIRM: Duration = Duration::from_secs(15);
const DB: &str = "dev_acme_main_catalog";

/// Parameters with the spellings a replication sends.
const PLAIN: [(&str, &[&str]); 9] = [
    ("feed", &["continuous", "longpoll", "normal", "eventsource"]),
    ("since", &["now", "0", "250"]),
    ("heartbeat", &["250", "true"]),
    ("timeout", &["250"]),
    ("limit", &["1", "250"]),
    ("style", &["all_docs", "main_only"]),
    ("include_docs", &["true", "false"]),
    ("conflicts", &["true"]),
    ("filter", &["_doc_ids&doc_ids=%5B%22a%22%5D"]),
];

/// Other spellings of names: another case, percent-encoded, `qs`'s brackets.
const NAMES: [&str; 9] =
    ["Feed", "FEED", "fe%65d", "feed%5B%5D", "feed%5Ba%5D", "SINCE", "Heartbeat", "filter", "doc_ids"];

/// Other spellings of values: JSON-quoted, escaped, another case, a leading zero, empty.
const VALUES: [&str; 15] = [
    "%22continuous%22",
    "%22longpoll%22",
    "%22eventsource%22",
    "%22contin%5Cu0075ous%22",
    "contin%5Cu0075ous",
    "%22normal%22",
    "Continuous",
    "%22now%22",
    "007",
    "%22true%22",
    "%5B%22a%22%5D",
    "_doc_ids",
    "app/by_type",
    "-1",
    "",
];

/// One pair (of `feed` when `feed`): most often as a replication spells it, else a name or a
/// value spelled otherwise.
fn pair(rng: &mut StdRng, feed: bool) -> String {
    let (name, values) = PLAIN[if feed { 0 } else { rng.random_range(0..PLAIN.len()) }];
    let value = values[rng.random_range(0..values.len())];
    match rng.random_range(0..10) {
        0..=5 => format!("{name}={value}"),
        6 | 7 => format!("{name}={}", VALUES[rng.random_range(0..VALUES.len())]),
        8 => format!("{}={value}", NAMES[rng.random_range(0..NAMES.len())]),
        _ => format!("{}={}", NAMES[rng.random_range(0..NAMES.len())], VALUES[rng.random_range(0..VALUES.len())]),
    }
}

/// A query of a feed and up to two more pairs, now and then a name twice (as written or in
/// capitals), most often from now.
fn generate(rng: &mut StdRng, case: usize) -> String {
    let mut pairs = Vec::new();
    for i in 0..rng.random_range(1..=3) {
        let p = pair(rng, i == 0);
        if rng.random_range(0..8) == 0 {
            let name = p.split('=').next().unwrap_or_default();
            let again = if rng.random_bool(0.5) { name.to_owned() } else { name.to_uppercase() };
            pairs.push(format!("{again}={}", pair(rng, i == 0).split_once('=').map_or("", |(_, v)| v)));
        }
        pairs.push(p);
    }
    if rng.random_bool(0.6) {
        pairs.push("since=now".to_owned());
    }
    pairs.shuffle(rng);
    // A name neither the proxy nor the hub reads, so the case goes to the engine, found there.
    pairs.push(format!("probe=case{case}end"));
    pairs.join("&")
}

/// A streaming pass-through in front of the engine noting the path and query of every request.
async fn noting_engine(real: &Engine) -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (noted, root, http) = (seen.clone(), real.root(), real.http.clone());
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let (noted, root, http) = (noted.clone(), root.clone(), http.clone());
        async move {
            let (parts, body) = request.into_parts();
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str()).trim_start_matches('/').to_owned();
            noted.lock().unwrap().push(path.clone());
            let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            let mut forward = http.request(parts.method, format!("{root}{path}")).body(body);
            for (name, value) in &parts.headers {
                if name != "host" {
                    forward = forward.header(name, value);
                }
            }
            match forward.send().await {
                Ok(answer) => {
                    let status = answer.status();
                    let mut response = axum::body::Body::from_stream(answer.bytes_stream()).into_response();
                    *response.status_mut() = status;
                    response
                }
                Err(_) => StatusCode::BAD_GATEWAY.into_response(),
            }
        }
    });
    (engine::serve_pass_through(app).await, seen)
}

/// Whether the engine, asked straight, leaves `query` unanswered for `wait`.
async fn held_open(real: &Engine, query: &str, wait: Duration) -> bool {
    let ask = real.admin(Method::GET, &format!("{DB}/_changes?{query}"));
    tokio::time::timeout(wait, async move {
        match ask.send().await {
            Ok(answer) => drop(answer.bytes().await),
            Err(e) => panic!("the engine did not answer {query}: {e}"),
        }
    })
    .await
    .is_err()
}

enum Proxied {
    /// 4xx with the error body's code.
    Refused(StatusCode, Value),
    /// Reached the engine; whether the proxy held a live feed's place for it then.
    Forwarded { counted: bool },
}

/// `query` through the proxy with a session of its own, until the proxy refused it or the
/// engine got it; then the session ends (its feeds cut).
async fn through_proxy(s: &Server, query: &str, case: usize, seen: &Mutex<Vec<String>>) -> Proxied {
    let login = s.login("alice").await;
    let headers: Map<String, Value> = login["docdbHeaders"]["Remote"].as_object().unwrap().clone();
    let session = headers["X-Docdb-Session"].as_str().unwrap().to_owned();
    let mut request = s.client.get(format!("{}/docdb/{DB}/_changes?{query}", s.base));
    for (k, v) in &headers {
        request = request.header(k, v.as_str().unwrap());
    }
    let marker = format!("probe=case{case}end");
    let reached = || seen.lock().unwrap().iter().any(|p| p.contains(&marker));
    let sending = request.send();
    tokio::pin!(sending);
    let mut answer = None;
    let deciding = async {
        loop {
            // The proxy holds a feed's place before it asks the engine: once the engine has the
            // request, the place is taken or never will be.
            if reached() {
                break Proxied::Forwarded { counted: s.state.sessions.feeds.held(&session) > 0 };
            }
            tokio::select! {
                sent = &mut sending, if answer.is_none() => {
                    let sent = sent.unwrap();
                    if sent.status().is_client_error() {
                        let status = sent.status();
                        break Proxied::Refused(status, sent.json().await.unwrap_or(Value::Null));
                    }
                    answer = Some(sent);
                }
                () = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
        }
    };
    let outcome = tokio::time::timeout(Duration::from_secs(60), deciding)
        .await
        .unwrap_or_else(|_| panic!("{query}: neither refused nor sent to the engine"));
    drop(answer);
    s.post("/auth/logout", login["token"].as_str(), serde_json::json!({"complete": true})).await;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_the_engine_holds_open_took_a_live_feeds_place_at_the_proxy() {
    let real = Engine::start().await;
    let (url, seen) = noting_engine(&real).await;
    let s = spawn_with(Settings {
        test_controls: true,
        auth_rate_per_min: 0,
        docdb_url: Some(EngineUrl::parse(&url).unwrap()),
        ..Settings::default()
    })
    .await;
    let mut rng = StdRng::seed_from_u64(0x51);
    let cases: Vec<String> = (0..CASES).map(|case| generate(&mut rng, case)).collect();

    // Through the proxy, one case at a time.
    let mut forwarded = Vec::new();
    for (case, query) in cases.iter().enumerate() {
        match through_proxy(&s, query, case, &seen).await {
            Proxied::Refused(status, body) => {
                assert_eq!(status.as_u16() / 100, 4, "{query}: {body}");
                assert!(body["error"].is_string() && body["message"].is_string(), "{query}: the error body {body}");
                let marker = format!("probe=case{case}end");
                assert!(
                    !seen.lock().unwrap().iter().any(|p| p.contains(&marker)),
                    "{query}: refused, yet it reached the engine"
                );
            }
            Proxied::Forwarded { counted } => forwarded.push((query, counted)),
        }
        // A request that stops the engine stops it for every tenant.
        assert!(
            real.admin(Method::GET, "").send().await.is_ok_and(|r| r.status().is_success()),
            "the engine stopped answering after {query}"
        );
    }
    // The engine's own reading of every case the proxy forwarded, asked at once.
    let held: Vec<bool> =
        futures_util::future::join_all(forwarded.iter().map(|(query, _)| held_open(&real, query, HELD))).await;
    for ((query, counted), held) in forwarded.iter().zip(&held) {
        if *held && !counted {
            // Looked at again for longer: an engine slow to answer a normal feed is not a hole.
            assert!(
                !held_open(&real, query, CONFIRM).await,
                "{query}: the engine holds it open, the proxy did not count it as a live feed"
            );
        }
    }
    // The generator reaches both sides of the rule, and feeds that stay open.
    let live = forwarded.iter().filter(|(_, counted)| *counted).count();
    let held_open_count = held.iter().filter(|h| **h).count();
    assert!(
        !forwarded.is_empty() && forwarded.len() < CASES && live > 0 && held_open_count > 0,
        "forwarded {} of {CASES}, {live} counted live, {held_open_count} held open by the engine",
        forwarded.len()
    );
}

/// `text` with some characters percent-encoded, in upper or lower case hex.
fn spelled(rng: &mut StdRng, text: &str) -> String {
    text.chars()
        .map(|c| match rng.random_range(0..6) {
            0 => format!("%{:02X}", c as u32),
            1 => format!("%{:02x}", c as u32),
            _ => c.to_string(),
        })
        .collect()
}

/// A write of a `_local` document as a device may spell it: `_local` and the id each spelled,
/// joined by `/` or an encoded one, the manifest's id or a replication's (or one near the
/// manifest's), now and then with `new_edits=false`. Answers the method and the path after the
/// database.
fn local_write(rng: &mut StdRng) -> (Method, String) {
    let id = match rng.random_range(0..8) {
        0..=3 => "day-manifest".to_owned(),
        4 => "Day-Manifest".to_owned(),
        5 => "day-manifest-2".to_owned(),
        _ => format!("{:016x}", rng.random::<u64>()),
    };
    let slash = ["/", "/", "/", "%2F", "%2f"][rng.random_range(0..5)];
    let mut path = format!("{}{slash}{}", spelled(rng, "_local"), spelled(rng, &id));
    let method = if rng.random_range(0..5) == 0 { Method::DELETE } else { Method::PUT };
    if method == Method::DELETE {
        path.push_str("?rev=0-1");
    } else if rng.random_bool(0.3) {
        path.push_str("?new_edits=false");
    }
    (method, path)
}

/// `_local` writes, spelled every way, sent straight to the engine on a database of their own:
/// whatever the engine reads as the server's day manifest, the proxy refuses with the error body
/// (and the tenant's manifest stays the server's); what the engine writes as another `_local`
/// document, a device's checkpoint, passes the proxy when it comes as the protocol's two segments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_engine_reads_as_the_server_s_manifest_the_proxy_refuses() {
    const DB: &str = "dev_acme_main_catalog";
    let real = Engine::start().await;
    let s = spawn_with(Settings {
        test_controls: true,
        auth_rate_per_min: 0,
        docdb_url: Some(EngineUrl::parse(&real.url_with_credentials()).unwrap()),
        ..Settings::default()
    })
    .await;
    // The server's manifest, as the rotate keeps it (the catalogue stands in for CORE: the rule
    // names the id in any database).
    let sentinel = serde_json::json!({"days": ["sentinel"]});
    let put = real.admin(Method::PUT, &format!("{DB}/_local/day-manifest")).json(&sentinel).send().await.unwrap();
    assert!(put.status().is_success(), "the manifest: {}", put.status());
    let login = s.login("alice").await;
    let headers: Map<String, Value> = login["docdbHeaders"]["Remote"].as_object().unwrap().clone();

    let mut rng = StdRng::seed_from_u64(0x10ca1);
    let (mut manifests, mut checkpoints) = (0, 0);
    for case in 0..48 {
        let (method, path) = local_write(&mut rng);
        let body = serde_json::json!({"probe": case});
        // The engine's reading, on a database of the case's own.
        let scratch = format!("scratch{case}");
        real.create_db(&scratch).await;
        if method == Method::DELETE {
            let r = real.admin(Method::PUT, &format!("{scratch}/_local/day-manifest")).json(&body).send().await;
            assert!(r.unwrap().status().is_success());
        }
        let mut straight = real.admin(method.clone(), &format!("{scratch}/{path}"));
        if method == Method::PUT {
            straight = straight.json(&body);
        }
        let straight = straight.send().await.unwrap().status();
        let manifest = real.get(&format!("{scratch}/_local/day-manifest")).await;
        let as_manifest = if method == Method::DELETE {
            manifest.get("error").is_some()
        } else {
            manifest.get("probe") == Some(&serde_json::json!(case))
        };
        real.admin(Method::DELETE, &scratch).send().await.unwrap();

        let mut request = s.client.request(method.clone(), format!("{}/docdb/{DB}/{path}", s.base));
        for (k, v) in &headers {
            request = request.header(k, v.as_str().unwrap());
        }
        if method == Method::PUT {
            request = request.json(&body);
        }
        let answer = request.send().await.unwrap();
        let status = answer.status();
        let said: Value = answer.json().await.unwrap_or(Value::Null);
        if as_manifest {
            manifests += 1;
            assert_eq!(
                (status, said["error"].as_str()),
                (StatusCode::FORBIDDEN, Some("forbidden")),
                "{method} {path}: the engine writes the manifest; the proxy answered {said}"
            );
            assert!(said["message"].is_string(), "{method} {path}: the error body {said}");
        } else if straight.is_success() && !path.to_ascii_lowercase().contains("%2f") {
            checkpoints += 1;
            // A conflict is the engine's own answer: an id near the manifest's, written before.
            let reached = status.is_success() || (status == StatusCode::CONFLICT && said["error"] == "conflict");
            assert!(reached, "{method} {path}: a device's checkpoint, refused: {status} {said}");
        }
        let kept = real.get(&format!("{DB}/_local/day-manifest")).await;
        assert_eq!(kept["days"], sentinel["days"], "{method} {path}: the server's manifest was replaced");
    }
    assert!(manifests > 0 && checkpoints > 0, "{manifests} manifest writes, {checkpoints} checkpoints");
}
