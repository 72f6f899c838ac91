//! The changes hub against a real engine (PouchDB Server): the same listeners through the proxy
//! (served by the hub) and straight to the engine, under generated writes (new documents,
//! updates, deletions, conflicting branches), find the same changes in the same order for every
//! parameter the hub serves; and when the engine's feed drops (every connection to the engine
//! cut, and refused for a while, as a restart does), the devices listening see no gap and no
//! change twice.

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::engine::{self, Engine};
use common::{spawn_with, Server};
use mock_server::docdb::engine::EngineUrl;
use mock_server::settings::Settings;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

fn with_engine(url: &str) -> Settings {
    Settings {
        test_controls: true,
        docdb_url: Some(EngineUrl::parse(url).unwrap()),
        docdb_feeds_per_session: 64,
        ..Settings::default()
    }
}

fn remote_headers(login: &Value) -> Map<String, Value> {
    login["docdbHeaders"]["Remote"].as_object().expect("the login's docdb headers").clone()
}

/// One way to the database: through the proxy with a device's headers, or to the engine.
#[derive(Clone)]
struct Way {
    url: String,
    http: reqwest::Client,
    headers: Map<String, Value>,
    admin: bool,
}

impl Way {
    fn request(&self, method: reqwest::Method, query: &str) -> reqwest::RequestBuilder {
        let mut r = self.http.request(method, format!("{}/_changes?{query}", self.url));
        for (k, v) in &self.headers {
            r = r.header(k, v.as_str().unwrap());
        }
        if self.admin {
            r = r.basic_auth(engine::ADMIN.0, Some(engine::ADMIN.1));
        }
        r
    }

    /// `query` (plus `doc_ids` as a POST body when given).
    async fn open(&self, query: &str, doc_ids: Option<&[String]>) -> reqwest::Response {
        let r = match doc_ids {
            None => self.request(reqwest::Method::GET, query),
            Some(ids) => self
                .request(reqwest::Method::POST, &format!("{query}&filter=_doc_ids"))
                .json(&json!({ "doc_ids": ids })),
        };
        let r = r.send().await.unwrap();
        assert!(r.status().is_success(), "{query}: {}", r.status());
        r
    }

    async fn answer(&self, query: &str, doc_ids: Option<&[String]>) -> Value {
        let r = self.open(query, doc_ids).await;
        let text = tokio::time::timeout(Duration::from_secs(20), r.text()).await.expect("answered").unwrap();
        serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
    }
}

/// A continuous feed's rows, read until the document `until` has arrived.
async fn rows_until(r: &mut reqwest::Response, rows: &mut Vec<Value>, until: &str) {
    let mut pending = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while !rows.iter().any(|r| r["id"] == until) {
            let chunk = r.chunk().await.unwrap().expect("the feed stays open");
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                if !line.trim_ascii().is_empty() {
                    rows.push(serde_json::from_slice(&line).unwrap_or_else(|_| deeper_than_value_reads(&line)));
                }
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{until} did not arrive: {rows:?}"));
}

/// A row nesting deeper than serde_json's `Value` reads (128 levels): its id, read without
/// building the rest.
fn deeper_than_value_reads(line: &[u8]) -> Value {
    #[derive(serde::Deserialize)]
    struct Id {
        id: String,
    }
    let row: Id = serde_json::from_slice(line).unwrap_or_else(|e| panic!("not a row: {e}"));
    json!({ "id": row.id, "deeper_than_value_reads": true })
}

/// Each document at the last row a device received of it, by sequence.
fn known(rows: &[Value]) -> Vec<Value> {
    let mut last: BTreeMap<String, Value> = BTreeMap::new();
    for r in rows {
        last.insert(r["id"].as_str().unwrap().to_owned(), r.clone());
    }
    let mut rows: Vec<Value> = last.into_values().collect();
    rows.sort_by_key(|r| r["seq"].as_u64());
    rows
}

fn increasing(rows: &[Value]) -> bool {
    rows.windows(2).all(|w| w[0]["seq"].as_u64() < w[1]["seq"].as_u64())
}

/// Writes generated from `rng`: new documents, updates, deletions and, with `new_edits:false`,
/// a second branch of a document (a conflict, so `style=all_docs` lists two leaves).
async fn write_some(e: &Engine, db: &str, rng: &mut rand::rngs::StdRng, n: usize, tag: &str) {
    for i in 0..n {
        let id = format!("doc-{}", rng.random_range(0..8));
        let current = e.get(&format!("{db}/{id}")).await;
        let doc = match (current.get("_rev"), rng.random_range(0..4)) {
            (None, _) => json!({"_id": id, "n": i, "tag": tag}),
            (Some(rev), 0) => json!({"_id": id, "_rev": rev, "_deleted": true}),
            (Some(_), 1) => {
                let branch = json!([{"_id": id, "_rev": format!("1-{:032x}", rng.random::<u128>()), "tag": tag}]);
                let r = e
                    .admin(reqwest::Method::POST, &format!("{db}/_bulk_docs"))
                    .json(&json!({"docs": branch, "new_edits": false}))
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success());
                continue;
            }
            (Some(rev), _) => json!({"_id": id, "_rev": rev, "n": i, "tag": tag}),
        };
        e.bulk(db, json!([doc])).await;
    }
}

struct Setup {
    e: Engine,
    s: Server,
    db: String,
    proxy: Way,
    direct: Way,
}

async fn setup(url: Option<String>, e: Engine) -> Setup {
    let url = url.unwrap_or_else(|| e.url_with_credentials());
    let s = spawn_with(with_engine(&url)).await;
    let db = format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(s.now()));
    e.create_db(&db).await;
    let login = s.login("alice").await;
    let http = reqwest::Client::new();
    let proxy = Way {
        url: format!("{}/docdb/{db}", s.base),
        http: http.clone(),
        headers: remote_headers(&login),
        admin: false,
    };
    let direct = Way { url: format!("{}{db}", e.root()), http, headers: Map::new(), admin: true };
    Setup { e, s, db, proxy, direct }
}

/// The parameters a listener is opened with.
fn views() -> Vec<String> {
    let mut out = Vec::new();
    for include_docs in ["", "&include_docs=true"] {
        for style in ["", "&style=all_docs", "&style=main_only"] {
            out.push(format!("{include_docs}{style}"));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_hub_as_straight_from_the_engine() {
    let t = setup(None, Engine::start().await).await;
    for seed in [1u64, 2, 3] {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let db = &t.db;
        write_some(&t.e, db, &mut rng, 12, "before").await;
        let mid: u64 = t.e.get(db).await["update_seq"].as_u64().unwrap() / 2;
        let end = format!("end-{seed}");

        // Continuous feeds, each opened both ways with the same parameters.
        let mut open = Vec::new();
        for (i, view) in views().into_iter().enumerate() {
            let since = ["0".to_owned(), mid.to_string(), "now".to_owned()][i % 3].clone();
            let ids: Option<Vec<String>> =
                (i % 2 == 1).then(|| vec!["doc-1".into(), "doc-2".into(), "doc-5".into(), end.clone()]);
            let query = format!("feed=continuous&since={since}&heartbeat=500{view}");
            let through = t.proxy.open(&query, ids.as_deref()).await;
            let straight = t.direct.open(&query, ids.as_deref()).await;
            open.push((query, through, straight));
        }
        write_some(&t.e, db, &mut rng, 20, "during").await;
        t.e.bulk(db, json!([{"_id": end}])).await;
        for (query, mut through, mut straight) in open {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            rows_until(&mut through, &mut a, &end).await;
            rows_until(&mut straight, &mut b, &end).await;
            assert!(increasing(&a), "through the hub, {query}: {a:?}");
            assert_eq!(known(&a), known(&b), "{query}");
        }

        // Normal answers (longpoll with changes waiting) and longpoll waiting for the next one.
        for view in views() {
            for since in ["0".to_owned(), mid.to_string()] {
                for limit in ["", "&limit=3", "&limit=0"] {
                    for ids in [None, Some(vec!["doc-3".to_owned(), "doc-4".to_owned()])] {
                        let query = format!("feed=longpoll&since={since}{limit}{view}");
                        let (a, b) = (
                            t.proxy.answer(&query, ids.as_deref()).await,
                            t.direct.answer(&query, ids.as_deref()).await,
                        );
                        assert_eq!(a, b, "{query} {ids:?}");
                    }
                }
            }
        }
        let head = t.e.get(db).await["update_seq"].clone();
        let waiting: Vec<_> = [
            format!("feed=longpoll&since={head}&include_docs=true"),
            format!("feed=longpoll&since={head}&style=all_docs&heartbeat=100"),
        ]
        .into_iter()
        .map(|q| {
            let (proxy, direct) = (t.proxy.clone(), t.direct.clone());
            tokio::spawn(async move {
                let (a, b) = tokio::join!(proxy.answer(&q, None), direct.answer(&q, None));
                (a, b, q)
            })
        })
        .collect();
        // Either answer waits for the write whenever its request arrives: it names the head.
        tokio::time::sleep(Duration::from_millis(100)).await;
        write_some(&t.e, db, &mut rng, 1, "waited").await;
        for w in waiting {
            let (a, b, q) = w.await.unwrap();
            assert_eq!(a, b, "{q}");
            assert_eq!(a["results"].as_array().unwrap().len(), 1, "{q}");
        }
    }
    let hubs = t.s.state.changes_hubs.as_ref().expect("the hub is on by default").counts();
    assert_eq!(hubs.upstream_feeds, 1, "one feed of the engine for every device: {hubs:?}");
    // Every request through the proxy was the hub's: 6 continuous, 72 longpoll, 2 waiting, 3 times.
    assert_eq!(hubs.answered, 3 * (6 + 72 + 2), "{hubs:?}");
}

/// A TCP relay in front of the engine that can cut every connection and refuse new ones, as
/// an engine's restart does.
struct Relay {
    url: String,
    down: Arc<AtomicBool>,
    generation: Arc<AtomicU64>,
}

async fn relay(e: &Engine) -> Relay {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = format!("127.0.0.1:{}", e.port);
    let (down, generation) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let (d, g) = (down.clone(), generation.clone());
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            if d.load(Ordering::SeqCst) {
                let _ = client.shutdown().await;
                continue;
            }
            let (g, born, upstream) = (g.clone(), g.load(Ordering::SeqCst), upstream.clone());
            tokio::spawn(async move {
                let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await else { return };
                let copy = tokio::io::copy_bidirectional(&mut client, &mut server);
                let cut = async {
                    while g.load(Ordering::SeqCst) == born {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                };
                tokio::select! { _ = copy => {}, () = cut => {} }
            });
        }
    });
    Relay { url: format!("http://{}:{}@{addr}/", engine::ADMIN.0, engine::ADMIN.1), down, generation }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_engine_feed_comes_back_without_a_gap_or_a_repeat() {
    let e = Engine::start().await;
    let r = relay(&e).await;
    let t = setup(Some(r.url.clone()), e).await;
    let mut devices = Vec::new();
    for _ in 0..5 {
        devices.push((t.proxy.open("feed=continuous&since=now&heartbeat=200", None).await, Vec::new()));
    }
    let mut written = 0;
    for round in 0..3 {
        for i in 0..5 {
            t.e.bulk(&t.db, json!([{"_id": format!("r{round}-{i}")}])).await;
            written += 1;
        }
        let mark = format!("r{round}-4");
        for (feed, rows) in &mut devices {
            rows_until(feed, rows, &mark).await;
        }
        // The engine goes away: its feed is cut and new connections refused for a while; the
        // writes meanwhile reach it by another way.
        r.down.store(true, Ordering::SeqCst);
        r.generation.fetch_add(1, Ordering::SeqCst);
        for i in 0..3 {
            t.e.bulk(&t.db, json!([{"_id": format!("gap{round}-{i}")}])).await;
            written += 1;
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
        r.down.store(false, Ordering::SeqCst);
    }
    t.e.bulk(&t.db, json!([{"_id": "end"}])).await;
    written += 1;
    for (feed, rows) in &mut devices {
        rows_until(feed, rows, "end").await;
        let seqs: Vec<u64> = rows.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs.len(), written, "every change once: {seqs:?}");
        assert!(increasing(rows), "{seqs:?}");
    }
    let hubs = t.s.state.changes_hubs.as_ref().unwrap().counts();
    assert!(hubs.reconnects >= 3, "{hubs:?}");
}

/// A document nested as deep as the engine takes (127 levels, written straight to it; the proxy
/// refuses it) holds back no change: the hub keeps the document as the engine wrote it without
/// parsing it, every device listening sees it and the next write, with the engine's feed never
/// opened again for it; the hub ends after its linger once the devices left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_deeper_than_the_proxy_writes_holds_back_no_change() {
    let e = Engine::start().await;
    let s = spawn_with(Settings { docdb_hub_linger_ms: 200, ..with_engine(&e.url_with_credentials()) }).await;
    let db = format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(s.now()));
    e.create_db(&db).await;
    let proxy = Way {
        url: format!("{}/docdb/{db}", s.base),
        http: reqwest::Client::new(),
        headers: remote_headers(&s.login("alice").await),
        admin: false,
    };
    let deep = format!(r#"{{"_id":"deep","n":{}1{}}}"#, "[".repeat(126), "]".repeat(126));
    let mut put = proxy.http.put(format!("{}/deep", proxy.url)).header("content-type", "application/json");
    for (k, v) in &proxy.headers {
        put = put.header(k, v.as_str().unwrap());
    }
    let refused = put.body(deep.clone()).send().await.unwrap();
    assert_eq!(refused.status(), reqwest::StatusCode::BAD_REQUEST, "the proxy writes no document the hub cannot read");

    let mut devices = Vec::new();
    for query in
        ["feed=continuous&since=now&include_docs=true&heartbeat=1000", "feed=continuous&since=now&heartbeat=1000"]
    {
        devices.push(proxy.open(query, None).await);
    }
    let written = e
        .admin(reqwest::Method::PUT, &format!("{db}/deep"))
        .header("content-type", "application/json")
        .body(deep)
        .send()
        .await
        .unwrap();
    assert!(written.status().is_success(), "the engine takes it: {}", written.status());
    e.bulk(&db, json!([{"_id": "after-the-deep-one"}])).await;
    for device in &mut devices {
        let mut rows = Vec::new();
        rows_until(device, &mut rows, "after-the-deep-one").await;
        assert_eq!(rows.iter().map(|r| r["id"].as_str().unwrap()).collect::<Vec<_>>(), ["deep", "after-the-deep-one"]);
    }
    let hubs = s.state.changes_hubs.clone().unwrap();
    assert_eq!(hubs.counts().reconnects, 0, "the engine's feed was not opened again");
    assert_eq!(hubs.counts().unreadable_rows, 0, "{:?}", hubs.counts());
    drop(devices);
    for _ in 0..200 {
        if hubs.counts().upstream_feeds == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the hub did not end within 10 s of its last device leaving: {:?}", hubs.counts());
}
