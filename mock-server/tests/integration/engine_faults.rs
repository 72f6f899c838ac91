//! The document proxy through a network that fails between the server and its engine: a fault
//! proxy (common::fault_proxy) sits in front of a real PouchDB Server. Connections the far side
//! let go while idle never turn a device's write or read into a 502; a request that may have
//! reached the engine is not sent twice; what a broken connection answers is an error a device
//! may retry, and nothing answered 201 is missing.

use crate::common;

use std::time::Duration;

use common::engine::{self, Engine};
use common::fault_proxy::{FaultProxy, Faults};
use common::{spawn_with, Server};
use mock_server::docdb::engine::EngineUrl;
use mock_server::settings::Settings;
use reqwest::{Method, StatusCode};
use serde_json::{json, Map, Value};

/// A server whose engine is reached through `proxy`.
async fn server_through(proxy: &FaultProxy) -> Server {
    let url = format!("http://{}:{}@127.0.0.1:{}/", engine::ADMIN.0, engine::ADMIN.1, proxy.port());
    spawn_with(Settings {
        test_controls: true,
        docdb_url: Some(EngineUrl::parse(&url).unwrap()),
        ..Settings::default()
    })
    .await
}

fn signed(mut request: reqwest::RequestBuilder, h: &Map<String, Value>) -> reqwest::RequestBuilder {
    for (k, v) in h {
        request = request.header(k, v.as_str().unwrap());
    }
    request
}

/// A request with alice's document headers; its status and JSON body.
async fn docdb(s: &Server, h: &Map<String, Value>, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = signed(s.client.request(method, format!("{}/docdb/{path}", s.base)), h);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let answer = request.send().await.unwrap();
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap_or(Value::Null))
}

struct Setup {
    engine: Engine,
    proxy: FaultProxy,
    s: Server,
    headers: Map<String, Value>,
    db: String,
}

async fn setup() -> Setup {
    let engine = Engine::start().await;
    let proxy = FaultProxy::to_port(engine.port).await;
    let s = server_through(&proxy).await;
    let db = format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(s.now()));
    engine.create_db(&db).await;
    let login = s.login("alice").await;
    let headers = login["docdbHeaders"]["Remote"].as_object().expect("docdb headers").clone();
    Setup { engine, proxy, s, headers, db }
}

/// The engine's own count of the database's documents (asked directly, not through the proxy).
async fn doc_count(e: &Engine, db: &str) -> u64 {
    e.get(db).await["doc_count"].as_u64().unwrap()
}

/// PouchDB Server (Node) forgets an idle keep-alive connection after 5 s, and a load balancer or
/// NAT between may forget it silently: the next request on it meets a reset. A write, a read and
/// a feed's first reads after such an idle spell are answered, not 502.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_a_read_and_a_feed_after_the_connections_went_idle_are_answered() {
    let Setup { engine, proxy, s, headers, db } = setup().await;
    let (status, body) = docdb(&s, &headers, Method::PUT, &format!("{db}/order-1"), Some(json!({"n": 1}))).await;
    assert_eq!(status, 201, "{body}");
    // Every pooled connection now idle; anything idle 4 s is forgotten by the hop.
    proxy.set(Faults { idle_forget: Some(Duration::from_secs(4)), ..Faults::default() });
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    let (status, body) = docdb(&s, &headers, Method::PUT, &format!("{db}/order-2"), Some(json!({"n": 2}))).await;
    assert_eq!(status, 201, "a write after an idle spell: {body}");
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    let (status, body) = docdb(&s, &headers, Method::GET, &format!("{db}/order-2"), None).await;
    assert_eq!((status, &body["n"]), (200, &json!(2)), "a read after an idle spell: {body}");
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    // A live feed from the start: the hub's first reads of the engine after an idle spell.
    let mut feed =
        signed(s.client.get(format!("{}/docdb/{db}/_changes?feed=continuous&since=0&heartbeat=500", s.base)), &headers)
            .send()
            .await
            .unwrap();
    assert_eq!(feed.status(), StatusCode::OK);
    let mut seen = String::new();
    let both = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(chunk)) = feed.chunk().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("order-1") && seen.contains("order-2") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(both, Ok(true), "the feed read both writes: {seen:?}");
    assert_eq!(doc_count(&engine, &db).await, 2);
}

/// A hop that forgets idle connections sooner than the pool lets them go (a relay with a short
/// idle timeout): a read whose pooled connection was dead is sent again on a fresh one and
/// answered; a write is not sent twice (it may have been done), its answer is an error the
/// device may retry, nothing was written, and the device's retry is written once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_is_sent_again_on_a_fresh_connection_and_a_write_is_answered_truly() {
    let Setup { engine, proxy, s, headers, db } = setup().await;
    let metrics = common::prom::metrics_listener(&s).await;
    let retries = || common::prom::scraped(&metrics, "upstream_retries_total{upstream=\"engine\"}".into());
    let (status, _) = docdb(&s, &headers, Method::PUT, &format!("{db}/order-1"), Some(json!({"n": 1}))).await;
    assert_eq!(status, 201);
    proxy.set(Faults { idle_forget: Some(Duration::from_secs(1)), ..Faults::default() });
    let before = retries().await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let (status, body) = docdb(&s, &headers, Method::GET, &format!("{db}/order-1"), None).await;
    assert_eq!((status, &body["n"]), (200, &json!(1)), "{body}");
    assert!(retries().await > before, "the read was sent again");

    // A connection pooled again, then forgotten by the hop while idle.
    let (status, _) = docdb(&s, &headers, Method::GET, &format!("{db}/order-1"), None).await;
    assert_eq!(status, 200);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let (status, body) = docdb(&s, &headers, Method::PUT, &format!("{db}/order-2"), Some(json!({"n": 2}))).await;
    assert_eq!((status, body["error"].as_str()), (502, Some("docdb_engine_unavailable")), "{body}");
    assert_eq!(doc_count(&engine, &db).await, 1, "the refused write was not done");
    let (status, body) = docdb(&s, &headers, Method::PUT, &format!("{db}/order-2"), Some(json!({"n": 2}))).await;
    assert_eq!(status, 201, "the device's retry: {body}");
    assert_eq!(doc_count(&engine, &db).await, 2);
}

/// An answer reset half way, a connection cut after a few bytes: a write is never told 201
/// unless the engine wrote it, its error is one a device may retry, and retrying writes it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_answer_never_says_written_and_the_retry_writes_once() {
    let Setup { engine, proxy, s, headers, db } = setup().await;
    for (i, faults) in [
        Faults { reset_answer_after: Some(20), ..Faults::default() },
        Faults { cut_after: Some(40), ..Faults::default() },
    ]
    .into_iter()
    .enumerate()
    {
        proxy.set(faults.clone());
        let path = format!("{db}/order-{i}");
        let (status, body) = docdb(&s, &headers, Method::PUT, &path, Some(json!({"n": i}))).await;
        assert_eq!((status, body["error"].as_str()), (502, Some("docdb_engine_unavailable")), "{faults:?}: {body}");
        proxy.heal();
        // Whether the engine wrote it is the engine's to say: the retry either writes it or
        // finds it written (409), never twice.
        let (status, body) = docdb(&s, &headers, Method::PUT, &path, Some(json!({"n": i}))).await;
        assert!(status == 201 || status == 409, "{faults:?}: the retry answered {status} {body}");
        let doc = engine.get(&format!("{db}/order-{i}")).await;
        assert!(doc["_rev"].as_str().unwrap().starts_with("1-"), "{faults:?}: written once: {doc}");
    }
    assert_eq!(doc_count(&engine, &db).await, 2);
}

/// An engine behind a black hole (connections accepted, nothing answered): a write and a read
/// are answered the retryable 502 within the proxy's bound, never held; once the hole closes the
/// write held in it may land, and the device's retry writes it at most once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_engine_is_answered_within_the_bound_and_the_retry_writes_once() {
    let Setup { engine, proxy, s, headers, db } = setup().await;
    proxy.set(Faults { black_hole: true, ..Faults::default() });
    let bound = mock_server::docdb::engine::ANSWER_WITHIN + Duration::from_secs(5);
    for (method, path, body) in
        [(Method::PUT, format!("{db}/order-1"), Some(json!({"n": 1}))), (Method::GET, format!("{db}/order-1"), None)]
    {
        let answered = tokio::time::timeout(bound, docdb(&s, &headers, method.clone(), &path, body)).await;
        let (status, body) = answered.unwrap_or_else(|_| panic!("{method} {path}: no answer within {bound:?}"));
        assert_eq!((status, body["error"].as_str()), (502, Some("docdb_engine_unavailable")), "{method}: {body}");
    }
    proxy.heal();
    let (status, body) = docdb(&s, &headers, Method::PUT, &format!("{db}/order-1"), Some(json!({"n": 1}))).await;
    assert!(status == 201 || status == 409, "the retry answered {status} {body}");
    let doc = engine.get(&format!("{db}/order-1")).await;
    assert!(doc["_rev"].as_str().unwrap().starts_with("1-"), "written once: {doc}");
}

/// A slow hop (300 ms each way a chunk, 64 KiB/s): a large write, its read and a feed are
/// answered in full, nothing given up early or sent twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_narrow_hop_answers_everything_in_full() {
    let Setup { engine, proxy, s, headers, db } = setup().await;
    proxy.set(Faults { latency: Duration::from_millis(300), bytes_per_sec: Some(64 * 1024), ..Faults::default() });
    let big = "x".repeat(96 * 1024);
    let (status, body) = docdb(&s, &headers, Method::PUT, &format!("{db}/big"), Some(json!({"big": big}))).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = docdb(&s, &headers, Method::GET, &format!("{db}/big"), None).await;
    assert_eq!((status, body["big"].as_str().map(str::len)), (200, Some(big.len())));
    let (status, body) = docdb(&s, &headers, Method::GET, &format!("{db}/_changes?since=0"), None).await;
    assert_eq!((status, body["results"].as_array().map(Vec::len)), (200, Some(1)), "{body}");
    let doc = engine.get(&format!("{db}/big")).await;
    assert!(doc["_rev"].as_str().unwrap().starts_with("1-"), "written once: {}", &doc["_rev"]);
}
