//! The document proxy against its engine (PouchDB Server), in one run: a catalogue replicated
//! into PouchDB (Node) through the proxy and straight from the engine, each way, documents per
//! second and the proxy's share; then how fast a continuous `_changes` feed through the proxy
//! delivers a document written to the engine, and streamed answers fetched one after another on
//! one connection (where a Nagle stall would show). Prints a table; asserts nothing (shared, noisy
//! machines). Bounded: fixed counts, every wait with a deadline.
//!
//! `cargo bench -p mock-server --bench docdb [-- quick]` (`quick`: 1,000 documents, not 10,000).

#[path = "../tests/common/engine.rs"]
mod engine;

use std::time::{Duration, Instant};

use engine::Engine;
use mock_server::docdb::engine::EngineUrl;
use mock_server::settings::Settings;
use mock_server::state::{AppState, StaticDirs};
use serde_json::{json, Value};

const ROUNDS: usize = 3;
const FEED_WRITES: usize = 200;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

/// `req` with the session's `X-Docdb-*` headers.
fn signed(mut req: reqwest::RequestBuilder, headers: &Value) -> reqwest::RequestBuilder {
    for (k, v) in headers.as_object().into_iter().flatten() {
        req = req.header(k, v.as_str().unwrap_or_default());
    }
    req
}

fn percentile(mut xs: Vec<f64>, p: f64) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[((xs.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let docs = if quick { 1_000 } else { 10_000 };
    let e = Engine::start().await;
    let settings =
        Settings { docdb_url: Some(EngineUrl::parse(&e.url_with_credentials()).unwrap()), ..Settings::default() };
    let state = AppState::new(settings, StaticDirs::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(
        async move { axum::serve(mock_server::app::listener(listener), mock_server::app(state)).await.unwrap() },
    );

    let http = reqwest::Client::new();
    let login: Value = http
        .post(format!("{base}/auth"))
        .json(&json!({"username": "alice", "password": "alice-pass", "deviceInfo": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let headers = login["docdbHeaders"]["Remote"].clone();
    let headers_json = headers.to_string();

    // The server seeded acme's legacy catalogue on start: replaced by one of the bench's size.
    let catalogue = "dev_acme_main_catalog";
    e.admin(reqwest::Method::DELETE, catalogue).send().await.unwrap();
    e.create_db(catalogue).await;
    for chunk in (0..docs).collect::<Vec<_>>().chunks(1000) {
        let batch: Vec<Value> = chunk.iter().map(|i| json!({"_id": format!("product-{i:05}"), "type": "product", "name": format!("Product {i}"), "priceCents": 100 + i})).collect();
        e.bulk(catalogue, json!(batch)).await;
    }
    println!("document proxy: {docs} documents, median of {ROUNDS} rounds, proxy and engine on this machine's 2 cores with Node");
    println!("{:<34} {:>12} {:>12} {:>10}", "replication", "direct doc/s", "proxy doc/s", "proxy/direct");

    // Pull: the catalogue into a fresh local PouchDB each time, alternating which goes first.
    let (mut direct, mut proxied) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let through = format!("{base}/docdb/{catalogue}");
        let straight = format!("{}{catalogue}", e.url_with_credentials());
        let once = |url: String, h: String| async move {
            engine::pouchdb(&["pull", &url, &h, &engine::temp_dir("pull")]).await
        };
        let (d, p) = if round % 2 == 0 {
            let d = once(straight, "{}".into()).await;
            (d, once(through, headers_json.clone()).await)
        } else {
            let p = once(through, headers_json.clone()).await;
            (once(straight, "{}".into()).await, p)
        };
        assert_eq!(
            (d["read"].as_u64(), p["read"].as_u64()),
            (Some(docs as u64), Some(docs as u64)),
            "whole pulls: {d} {p}"
        );
        direct.push(docs as f64 / (d["ms"].as_f64().unwrap() / 1000.0));
        proxied.push(docs as f64 / (p["ms"].as_f64().unwrap() / 1000.0));
    }
    let (d, p) = (median(direct), median(proxied));
    println!("{:<34} {:>12.0} {:>12.0} {:>9.2}x", "pull (engine -> PouchDB)", d, p, p / d);

    // Push: fresh local documents into a fresh day database on the engine each time.
    let (mut direct, mut proxied) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let day = |n: usize| format!("daily_dev_acme_main_{}", 20300101 + n);
        let (through_db, straight_db) = (day(2 * round), day(2 * round + 1));
        e.create_db(&through_db).await;
        e.create_db(&straight_db).await;
        let n = docs.to_string();
        let p = engine::pouchdb(&[
            "push",
            &format!("{base}/docdb/{through_db}"),
            &headers_json,
            &engine::temp_dir("push"),
            &n,
        ])
        .await;
        let d = engine::pouchdb(&[
            "push",
            &format!("{}{straight_db}", e.url_with_credentials()),
            "{}",
            &engine::temp_dir("push"),
            &n,
        ])
        .await;
        assert_eq!(
            (d["written"].as_u64(), p["written"].as_u64()),
            (Some(docs as u64), Some(docs as u64)),
            "whole pushes: {d} {p}"
        );
        direct.push(docs as f64 / (d["ms"].as_f64().unwrap() / 1000.0));
        proxied.push(docs as f64 / (p["ms"].as_f64().unwrap() / 1000.0));
    }
    let (d, p) = (median(direct), median(proxied));
    println!("{:<34} {:>12.0} {:>12.0} {:>9.2}x", "push (PouchDB -> engine)", d, p, p / d);

    // The continuous feed: a write to the engine, then the wait for its line on the open feed.
    let feed_db = "daily_dev_acme_main_20291231";
    e.create_db(feed_db).await;
    let mut feed =
        signed(http.get(format!("{base}/docdb/{feed_db}/_changes?feed=continuous&since=now&heartbeat=1000")), &headers)
            .send()
            .await
            .unwrap();
    let mut pending = String::new();
    let mut latencies = Vec::with_capacity(FEED_WRITES);
    for i in 0..FEED_WRITES {
        let id = format!("feed-{i:04}");
        let sent = Instant::now();
        e.bulk(feed_db, json!([{"_id": id, "type": "order"}])).await;
        let arrived = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if pending.contains(&format!("\"{id}\"")) {
                    pending.clear();
                    return;
                }
                let chunk = feed.chunk().await.unwrap().expect("the feed stays open");
                pending.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await;
        assert!(arrived.is_ok(), "{id} never arrived on the feed");
        latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "continuous _changes through the proxy, {FEED_WRITES} writes: write-to-arrival p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (the write's own round trip included)",
        percentile(latencies.clone(), 0.5),
        percentile(latencies.clone(), 0.99),
        percentile(latencies, 1.0)
    );

    // Streamed answers one after another on one keep-alive connection, as a replication asks:
    // without TCP_NODELAY on the server's side each after the first would stall about 40 ms.
    let one = reqwest::Client::builder().pool_max_idle_per_host(1).build().unwrap();
    let mut times = Vec::new();
    for i in 0..50 {
        for path in
            [format!("{catalogue}/_all_docs?limit=100&include_docs=true"), format!("{catalogue}/product-{i:05}")]
        {
            let t = Instant::now();
            signed(one.get(format!("{base}/docdb/{path}")), &headers).send().await.unwrap().bytes().await.unwrap();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    println!(
        "streamed proxy answers, 100 in a row on one connection: p50 {:.1} ms, p99 {:.1} ms (a Nagle stall would be about 40 ms)",
        percentile(times.clone(), 0.5),
        percentile(times, 0.99)
    );
}
