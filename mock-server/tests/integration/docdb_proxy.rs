//! The document proxy (`/docdb/{db}/…` with `DOCDB_URL`): what it refuses reaches nothing (a
//! counting stand-in engine sees no request), what it serves is the CouchDB replication protocol
//! on a real engine (PouchDB Server), replicated by PouchDB (Node) both ways; and without an
//! engine, the embedded model refuses the protocol naming `DOCDB_URL`.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::http::HeaderMap;
use common::engine::{self, Engine};
use common::{assert_error, spawn_with, Answer, Server};
use mock_server::docdb::engine::EngineUrl;
use mock_server::settings::Settings;
use reqwest::{Method, StatusCode};
use serde_json::{json, Map, Value};

fn with_engine(url: &str) -> Settings {
    Settings {
        test_controls: true,
        docdb_url: Some(EngineUrl::parse(url).unwrap()),
        docdb_cors_origins: vec!["http://127.0.0.1:*".into()],
        ..Settings::default()
    }
}

/// A counting pass-through in front of a real engine: every request that reaches the engine is
/// counted and its headers kept. The server's own start-up (seeding the legacy catalogues) goes
/// through it too; the test resets the count after.
async fn counting_engine(real: &Engine) -> (String, Arc<AtomicUsize>, Arc<Mutex<Vec<HeaderMap>>>) {
    let (hits, seen) = (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(Vec::new())));
    let (h, s, engine) = (hits.clone(), seen.clone(), real.forwarder());
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let (h, s, engine) = (h.clone(), s.clone(), engine.clone());
        async move {
            h.fetch_add(1, Ordering::SeqCst);
            s.lock().unwrap().push(request.headers().clone());
            engine.forward(request).await
        }
    });
    (engine::serve_pass_through(app).await, hits, seen)
}

/// A request with the SDK's `X-Docdb-*` headers, as a replication client sends it.
async fn docdb(s: &Server, method: Method, path: &str, headers: &Map<String, Value>, body: Option<Vec<u8>>) -> Answer {
    let mut req = s.client.request(method, format!("{}/docdb/{path}", s.base));
    for (k, v) in headers {
        req = req.header(k, v.as_str().unwrap_or_default());
    }
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b);
    }
    let res = req.send().await.unwrap();
    let (status, headers) = (res.status(), res.headers().clone());
    let text = res.text().await.unwrap();
    Answer { status, body: serde_json::from_str(&text).unwrap_or(Value::String(text)), headers }
}

/// A GET written byte for byte on a socket, its path exactly as given; answers the status line.
async fn raw_get(s: &Server, path: &str, headers: &Map<String, Value>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = s.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {}\r\n", v.as_str().unwrap_or_default()));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8_lossy(&answer).lines().next().unwrap_or_default().to_owned()
}

fn remote_headers(login: &Value) -> Map<String, Value> {
    login["docdbHeaders"]["Remote"].as_object().expect("the login's docdb headers").clone()
}

/// What is sent, and the status and code it must get.
type Case = (&'static str, Method, &'static str, Option<Vec<u8>>, u16, &'static str);

// Several workers: the server seeds its engine at start-up, through the counting
// pass-through, which must go on answering while the start waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_reaches_nothing() {
    let real = Engine::start().await;
    let (url, hits, _) = counting_engine(&real).await;
    let s = spawn_with(with_engine(&url)).await;
    let metrics = common::prom::metrics_listener(&s).await;
    // Other tests of this file count beside this one: the counters only go up.
    let counted = |class: &str, outcome: &str| {
        common::prom::scraped(
            &metrics,
            format!("docdb_proxy_requests_total{{class=\"{class}\",outcome=\"{outcome}\"}}"),
        )
    };
    let before = (
        counted("refused", "forbidden").await,
        counted("refused", "malformed_json").await,
        counted("bulk_write", "ok").await,
    );
    hits.store(0, Ordering::SeqCst);
    let alice = s.login("alice").await; // cashier, acme
    let h = remote_headers(&alice);
    let json = |v: Value| Some(serde_json::to_vec(&v).unwrap());
    let refusals: Vec<Case> = vec![
        ("a foreign tenant's database", Method::GET, "dev_globex_main_catalog/", None, 403, "forbidden"),
        ("a foreign tenant's changes", Method::GET, "dev_globex_main_catalog/_changes", None, 403, "forbidden"),
        ("_all_dbs", Method::GET, "_all_dbs", None, 403, "forbidden"),
        ("_users", Method::GET, "_users/", None, 403, "forbidden"),
        ("_replicator", Method::GET, "_replicator/_all_docs", None, 403, "forbidden"),
        ("_config", Method::GET, "_config", None, 403, "forbidden"),
        ("_replicate", Method::POST, "_replicate", json(json!({"source": "a", "target": "b"})), 403, "forbidden"),
        ("_security", Method::GET, "dev_acme_main_catalog/_security", None, 403, "forbidden"),
        ("_compact", Method::POST, "dev_acme_main_catalog/_compact", json(json!({})), 403, "forbidden"),
        (
            "a design document",
            Method::PUT,
            "dev_acme_main_catalog/_design/app",
            json(json!({"views": {}})),
            403,
            "forbidden",
        ),
        (
            "a design document, escaped",
            Method::PUT,
            "dev_acme_main_catalog/_design%2Fapp",
            json(json!({"views": {}})),
            403,
            "forbidden",
        ),
        (
            "a design document in bulk",
            Method::POST,
            "dev_acme_main_catalog/_bulk_docs",
            json(json!({"docs": [{"_id": "a"}, {"_id": "_design/x"}]})),
            403,
            "forbidden",
        ),
        (
            "a design document in bulk, as a replication writes",
            Method::POST,
            "dev_acme_main_catalog/_bulk_docs",
            json(json!({"new_edits": false, "docs": [{"_id": "_design/x", "_rev": "1-a"}]})),
            403,
            "forbidden",
        ),
        (
            "a design document posted to the database",
            Method::POST,
            "dev_acme_main_catalog",
            json(json!({"_id": "_design/evil", "validate_doc_update": "function () { throw({forbidden: 'no'}); }"})),
            403,
            "forbidden",
        ),
        (
            "a design document posted to the database/",
            Method::POST,
            "dev_acme_main_catalog/",
            json(json!({"_id": "_design/evil", "views": {}})),
            403,
            "forbidden",
        ),
        (
            "a design document's id escaped in JSON",
            Method::POST,
            "dev_acme_main_catalog",
            Some(br#"{"_id": "\u005fdesign/evil", "views": {}}"#.to_vec()),
            403,
            "forbidden",
        ),
        (
            "a key given twice",
            Method::POST,
            "dev_acme_main_catalog",
            Some(br#"{"_id": "order-1", "_id": "_design/evil"}"#.to_vec()),
            400,
            "malformed_json",
        ),
        (
            "a key given twice in bulk",
            Method::POST,
            "dev_acme_main_catalog/_bulk_docs",
            Some(br#"{"docs": [{"_id": "a"}], "docs": [{"_id": "_design/x"}]}"#.to_vec()),
            400,
            "malformed_json",
        ),
        (
            "invalid UTF-8",
            Method::POST,
            "dev_acme_main_catalog",
            Some(b"{\"_id\": \"\xff\"}".to_vec()),
            400,
            "malformed_json",
        ),
        (
            "a query name given twice",
            Method::GET,
            "dev_acme_main_catalog/_changes?feed=normal&feed=continuous",
            None,
            400,
            "malformed_json",
        ),
        ("creating a database", Method::PUT, "daily_dev_acme_main_20300101", None, 403, "forbidden"),
        ("deleting a database", Method::DELETE, "dev_acme_main_catalog", None, 403, "forbidden"),
        ("writing an archive", Method::PUT, "dev_acme_main_archive/order-1", json(json!({"a": 1})), 403, "forbidden"),
        (
            "a cashier writing CORE",
            Method::POST,
            "dev_acme_main_core/_bulk_docs",
            json(json!({"docs": [{"_id": "p1"}]})),
            403,
            "forbidden",
        ),
        (
            "the server's day manifest",
            Method::PUT,
            "dev_acme_main_core/_local/day-manifest",
            json(json!({"days": []})),
            403,
            "forbidden",
        ),
        (
            "the day manifest, its id in one segment",
            Method::PUT,
            "dev_acme_main_core/_local%2Fday-manifest",
            json(json!({"days": []})),
            403,
            "forbidden",
        ),
        (
            "the day manifest, as a replication writes",
            Method::PUT,
            "dev_acme_main_core/_local/day-manifest?new_edits=false",
            json(json!({"_id": "_local/day-manifest", "days": []})),
            403,
            "forbidden",
        ),
        ("the day manifest deleted", Method::DELETE, "dev_acme_main_core/_local/day-manifest", None, 403, "forbidden"),
        (
            "the day manifest in bulk",
            Method::POST,
            "dev_acme_main_catalog/_bulk_docs",
            json(json!({"new_edits": false, "docs": [{"_id": "_local/day-manifest", "days": []}]})),
            403,
            "forbidden",
        ),
        (
            "the day manifest posted",
            Method::POST,
            "dev_acme_main_catalog",
            json(json!({"_id": "_local/day-manifest", "days": []})),
            403,
            "forbidden",
        ),
        (
            "an oversize body",
            Method::POST,
            "dev_acme_main_catalog/_bulk_docs",
            Some(vec![b' '; 5 * 1024 * 1024]),
            413,
            "payload_too_large",
        ),
    ];
    let refused_with = |code: &str| refusals.iter().filter(|c| c.5 == code).count() as f64;
    let (forbidden, malformed) = (refused_with("forbidden") + 4.0, refused_with("malformed_json"));
    for (what, method, path, body, status, code) in refusals {
        let a = docdb(&s, method, path, &h, body).await;
        assert_eq!((a.status.as_u16(), a.body["error"].as_str()), (status, Some(code)), "{what}: {:?}", a.body);
        assert!(a.body["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: the error body");
        if status == 413 {
            // Its body was left unread: the connection is closed, never reused from a pool.
            assert_eq!(a.headers.get("connection").map(|v| v.to_str().unwrap_or("")), Some("close"), "{what}");
        }
    }

    // Dot segments, sent raw (an HTTP client would resolve them before sending): a URL parser on
    // the way to the engine would make `db/../_all_dbs` the engine's `/_all_dbs`.
    for path in [
        "dev_acme_main_catalog/../_all_dbs",
        "dev_acme_main_catalog/%2E%2E/_all_dbs",
        "dev_acme_main_catalog/x/../../_config",
    ] {
        let status = raw_get(&s, &format!("/docdb/{path}"), &h).await;
        assert!(status.starts_with("HTTP/1.1 403"), "{path}: {status}");
    }

    let mut forged = h.clone();
    forged.insert("X-Docdb-Company".into(), json!("globex"));
    assert_error(&docdb(&s, Method::GET, "dev_globex_main_catalog/", &forged, None).await, 401, "invalid_token");
    assert_eq!(
        docdb(&s, Method::GET, "dev_acme_main_catalog/", &Map::new(), None).await.status,
        StatusCode::UNAUTHORIZED,
        "no headers"
    );
    let carol = s.login("carol").await;
    s.post("/auth/logout", carol["token"].as_str(), json!({"complete": true})).await;
    assert_error(
        &docdb(&s, Method::GET, "dev_acme_main_catalog/", &remote_headers(&carol), None).await,
        401,
        "session_ended",
    );
    let bearer =
        Map::from_iter([("Authorization".to_owned(), json!(format!("Bearer {}", carol["token"].as_str().unwrap())))]);
    assert_error(&docdb(&s, Method::GET, "dev_acme_main_catalog/", &bearer, None).await, 401, "session_ended");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a refused request reached the engine");
    let designs = real.get("dev_acme_main_catalog/_all_docs?startkey=%22_design%2F%22&endkey=%22_design0%22").await;
    assert_eq!(designs["rows"], json!([]), "the engine holds no design document");

    // The same caller on its own databases does reach it (the counter counts), its checkpoints
    // too.
    assert_eq!(docdb(&s, Method::GET, "dev_acme_main_catalog/", &h, None).await.status, StatusCode::OK);
    let checkpoint =
        docdb(&s, Method::PUT, "dev_acme_main_catalog/_local/4f1e0a9c", &h, json(json!({"last_seq": "3-x"}))).await;
    assert_eq!(checkpoint.status, StatusCode::CREATED, "a device's checkpoint: {:?}", checkpoint.body);
    let manager = remote_headers(&s.login("admin").await);
    // Not even a catalogue writer writes the server's own manifest.
    let manifest =
        docdb(&s, Method::PUT, "dev_acme_main_core/_local/day-manifest", &manager, json(json!({"days": []}))).await;
    assert_eq!((manifest.status.as_u16(), manifest.body["error"].as_str()), (403, Some("forbidden")));
    let catalogue_write =
        docdb(&s, Method::POST, "dev_acme_main_core/_bulk_docs", &manager, json(json!({"docs": [{"_id": "p1"}]})))
            .await;
    // acme's CORE is not warmed yet: the engine's own answer, so the write was let through.
    assert_eq!(
        (catalogue_write.status, catalogue_write.body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found")),
        "catalog:write may write CORE: {:?}",
        catalogue_write.body
    );
    assert_eq!(hits.load(Ordering::SeqCst), 3);

    // The metrics count each refusal by its reason, and the write let through by its class.
    assert!(counted("refused", "forbidden").await - before.0 >= forbidden, "the forbidden ones, dot segments included");
    assert!(counted("refused", "malformed_json").await - before.1 >= malformed);
    assert!(counted("bulk_write", "ok").await - before.2 >= 1.0);
}

// Several workers: the server seeds its engine at start-up, through the counting
// pass-through, which must go on answering while the start waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_sees_its_own_credentials_and_nothing_of_the_device() {
    let real = Engine::start().await;
    let (url, _, seen) = counting_engine(&real).await;
    let s = spawn_with(with_engine(&url)).await;
    let h = remote_headers(&s.login("alice").await);
    let mut req = s
        .client
        .get(format!("{}/docdb/dev_acme_main_catalog/category:drinks?revs=true", s.base))
        .header("cookie", "AuthSession=device")
        .bearer_auth("not-forwarded");
    for (k, v) in &h {
        req = req.header(k, v.as_str().unwrap());
    }
    // A Bearer token takes precedence over the headers in DocdbUser: an invalid one is refused.
    assert_eq!(req.send().await.unwrap().status(), StatusCode::UNAUTHORIZED);
    let mut req = s
        .client
        .get(format!("{}/docdb/dev_acme_main_catalog/category:drinks?revs=true", s.base))
        .header("cookie", "AuthSession=device");
    for (k, v) in &h {
        req = req.header(k, v.as_str().unwrap());
    }
    assert_eq!(req.send().await.unwrap().status(), StatusCode::OK);
    let seen = seen.lock().unwrap();
    let forwarded = seen.last().expect("one request reached the engine");
    let basic = forwarded.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert_eq!(basic, "Basic YWRtaW46ZW5naW5lLXB3", "the engine's own credentials (admin:engine-pw)");
    assert!(forwarded.get("cookie").is_none(), "no cookie of the device");
    assert!(forwarded.keys().all(|k| !k.as_str().starts_with("x-docdb")), "no X-Docdb-* header: {forwarded:?}");
}

#[tokio::test]
async fn other_origins_get_credentialed_cors_by_name() {
    let real = Engine::start().await;
    let s = spawn_with(with_engine(&real.url_with_credentials())).await;
    let preflight = |origin: &'static str| {
        s.client
            .request(Method::OPTIONS, format!("{}/docdb/dev_acme_main_catalog/_changes", s.base))
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "x-docdb-token,x-docdb-user,content-type")
            .send()
    };
    let allowed = preflight("http://127.0.0.1:41234").await.unwrap();
    let header = |r: &reqwest::Response, n: &str| r.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(header(&allowed, "access-control-allow-origin").as_deref(), Some("http://127.0.0.1:41234"));
    assert_eq!(header(&allowed, "access-control-allow-credentials").as_deref(), Some("true"));
    assert!(header(&allowed, "access-control-allow-headers").unwrap_or_default().contains("x-docdb-token"));
    let other = preflight("http://evil.test").await.unwrap();
    assert_eq!(header(&other, "access-control-allow-origin"), None, "an origin off the list is not named");
}

#[tokio::test]
async fn without_an_engine_the_protocol_is_refused_naming_docdb_url() {
    let s = spawn_with(Settings { test_controls: true, ..Settings::default() }).await;
    let h = remote_headers(&s.login("alice").await);
    for (method, path) in [
        (Method::GET, "dev_acme_main_catalog"),
        (Method::GET, "dev_acme_main_catalog/"),
        (Method::GET, "dev_acme_main_catalog/_changes?feed=longpoll"),
        (Method::POST, "dev_acme_main_catalog/_revs_diff"),
        (Method::POST, "dev_acme_main_catalog/_bulk_docs"),
        (Method::POST, "dev_acme_main_catalog/_all_docs"),
        (Method::GET, "dev_acme_main_catalog/_local/checkpoint"),
        (Method::PUT, "dev_acme_main_catalog/_local/checkpoint"),
    ] {
        let a = docdb(&s, method.clone(), path, &h, Some(b"{}".to_vec())).await;
        assert_error(&a, 501, "docdb_engine_required");
        assert!(a.body["message"].as_str().unwrap().contains("DOCDB_URL"), "{method} {path}: {:?}", a.body);
    }
    assert_eq!(
        docdb(&s, Method::GET, "dev_acme_main_catalog/_all_docs", &h, None).await.status,
        StatusCode::OK,
        "the embedded model still serves _all_docs"
    );
}

/// PouchDB (Node) pulls a catalogue with an edit history through the proxy and gets what a pull
/// straight from the engine gets; then pushes orders into a day database through the proxy, and
/// the engine holds them with the device's revisions.
#[tokio::test]
async fn pouchdb_replicates_both_ways_through_the_proxy() {
    let e = Engine::start().await;
    let s = spawn_with(with_engine(&e.url_with_credentials())).await;
    // The legacy catalogue the server seeded at start-up, and 120 products more.
    let catalogue = "dev_acme_main_catalog";
    let docs: Vec<Value> =
        (0..120).map(|i| json!({"_id": format!("product-{i:04}"), "type": "product", "priceCents": 100 + i})).collect();
    let written = e.bulk(catalogue, json!(docs)).await;
    // A second revision of some, so revisions and the edit history matter.
    let edits: Vec<Value> = written
        .as_array()
        .unwrap()
        .iter()
        .take(30)
        .map(|r| json!({"_id": r["id"], "_rev": r["rev"], "type": "product", "priceCents": 1}))
        .collect();
    e.bulk(catalogue, json!(edits)).await;

    let alice = s.login("alice").await;
    let headers = serde_json::to_string(&remote_headers(&alice)).unwrap();
    let pull_dir = engine::temp_dir("pull-proxy");
    let proxied = engine::pouchdb(&["pull", &format!("{}/docdb/{catalogue}", s.base), &headers, &pull_dir]).await;
    let direct = engine::pouchdb(&[
        "pull",
        &format!("{}{catalogue}", e.url_with_credentials()),
        "{}",
        &engine::temp_dir("pull-direct"),
    ])
    .await;
    assert_eq!(proxied["errors"], 0, "{proxied}");
    let on_engine = e.get(catalogue).await["doc_count"].as_u64().unwrap();
    assert!(on_engine > 120, "the seed's and the test's documents: {on_engine}");
    assert_eq!(proxied["docs"].as_object().unwrap().len() as u64, on_engine);
    assert_eq!(proxied["docs"], direct["docs"], "the same documents and revisions as straight from the engine");
    assert!(proxied["docs"]["product-0000"].as_str().unwrap().starts_with("2-"));
    // The checkpoint went through the proxy to the engine (`_local/…`): the next pull resumes
    // from it and reads nothing again.
    let again = engine::pouchdb(&["pull", &format!("{}/docdb/{catalogue}", s.base), &headers, &pull_dir]).await;
    assert_eq!((again["read"].as_u64(), again["errors"].as_u64()), (Some(0), Some(0)), "{again}");

    let day = format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(s.now()));
    e.create_db(&day).await;
    let pushed =
        engine::pouchdb(&["push", &format!("{}/docdb/{day}", s.base), &headers, &engine::temp_dir("push-proxy"), "25"])
            .await;
    assert_eq!((pushed["written"].as_u64(), pushed["errors"].as_u64()), (Some(25), Some(0)), "{pushed}");
    let on_engine = e.get(&format!("{day}/_all_docs")).await;
    let rows = on_engine["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 25);
    for row in rows {
        assert_eq!(
            row["value"]["rev"],
            pushed["docs"][row["id"].as_str().unwrap()],
            "the device's revision on the engine"
        );
    }
    let info = e.get(&day).await;
    assert_eq!(info["doc_count"], 25);
}

/// A continuous `_changes` feed through the proxy is streamed: a document written to the engine
/// after the feed opened arrives while the feed stays open (a buffering proxy never delivers it).
#[tokio::test]
async fn a_continuous_feed_is_streamed_through_the_proxy() {
    let e = Engine::start().await;
    let s = spawn_with(with_engine(&e.url_with_credentials())).await;
    let day = format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(s.now()));
    e.create_db(&day).await;
    let h = remote_headers(&s.login("alice").await);
    let mut req = s.client.get(format!("{}/docdb/{day}/_changes?feed=continuous&since=now&heartbeat=500", s.base));
    for (k, v) in &h {
        req = req.header(k, v.as_str().unwrap());
    }
    let mut feed = req.send().await.unwrap();
    assert_eq!(feed.status(), StatusCode::OK);
    e.bulk(&day, json!([{"_id": "order-after-the-feed-opened", "type": "order"}])).await;
    let mut seen = String::new();
    let arrived = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while let Some(chunk) = feed.chunk().await.unwrap() {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("order-after-the-feed-opened") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(arrived, Ok(true), "the change arrived on the open feed; read so far: {seen:?}");
}

/// Connections to the engine that carry a continuous feed, counted at the TCP level in front of
/// it (what the proxy holds towards the engine, whatever its client pools): a connection counts
/// from the request that opens a feed on it until it closes.
async fn counting_feed_connections(engine: &Engine) -> (String, Arc<AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = engine.root().trim_start_matches("http://").trim_end_matches('/').to_owned();
    let feeds = Arc::new(AtomicUsize::new(0));
    let counter = feeds.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let (counter, upstream) = (counter.clone(), upstream.clone());
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else { return };
                let ((mut client_read, mut client_write), (mut server_read, mut server_write)) =
                    (client.into_split(), server.into_split());
                let answers = tokio::spawn(async move { tokio::io::copy(&mut server_read, &mut client_write).await });
                let mut is_feed = false;
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = client_read.read(&mut buf).await {
                    if n == 0 || server_write.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    if !is_feed && String::from_utf8_lossy(&buf[..n]).contains("feed=continuous") {
                        is_feed = true;
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                }
                let _ = server_write.shutdown().await;
                let _ = answers.await;
                if is_feed {
                    counter.fetch_sub(1, Ordering::SeqCst);
                }
            });
        }
    });
    (format!("http://{}:{}@{addr}/", engine::ADMIN.0, engine::ADMIN.1), feeds)
}

async fn open_feed(s: &Server, day: &str, headers: &Map<String, Value>) -> reqwest::Response {
    let mut req = s.client.get(format!("{}/docdb/{day}/_changes?feed=continuous&since=now&heartbeat=100", s.base));
    for (k, v) in headers {
        req = req.header(k, v.as_str().unwrap());
    }
    req.send().await.unwrap()
}

/// Polls `check` every 50 ms for up to 10 s.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..200 {
        if check() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{what}: not within 10 s");
}

/// A session holds at most `DOCDB_FEEDS_PER_SESSION` open feeds (then 429 with the error body);
/// a feed its client closed gives its place back and is closed towards the engine; and every
/// feed of a session is cut when the session ends. Without the hub each device's feed is one
/// of the engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_feeds_are_bounded_per_session_closed_with_their_client_and_cut_at_logout() {
    open_feeds_bounded_and_cut(false, [3, 2, 1, 0]).await;
}

/// The same with the hub: the engine holds one feed for all of them, closed when the last
/// device left (`DOCDB_HUB_LINGER_MS` 0 here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_hub_the_engine_holds_one_feed_for_every_device() {
    open_feeds_bounded_and_cut(true, [1, 1, 1, 0]).await;
}

/// `engine_feeds`: how many feeds the engine holds with three devices listening, after one
/// closed, after a session's were cut, after the last closed.
async fn open_feeds_bounded_and_cut(hub: bool, engine_feeds: [usize; 4]) {
    let real = Engine::start().await;
    let (url, feeds) = counting_feed_connections(&real).await;
    let s = spawn_with(Settings {
        docdb_feeds_per_session: 2,
        docdb_hub: hub,
        docdb_hub_linger_ms: 0,
        ..with_engine(&url)
    })
    .await;
    let day = format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(s.now()));
    real.create_db(&day).await;
    let alice = s.login("alice").await;
    let h = remote_headers(&alice);
    let first = open_feed(&s, &day, &h).await;
    let mut second = open_feed(&s, &day, &h).await;
    assert_eq!((first.status(), second.status()), (StatusCode::OK, StatusCode::OK));
    let third = open_feed(&s, &day, &h).await;
    assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(third.json::<Value>().await.unwrap()["error"], "too_many_feeds");
    let other = s.login("alice").await;
    let others = open_feed(&s, &day, &remote_headers(&other)).await;
    assert_eq!(others.status(), StatusCode::OK, "another session has its own places");
    eventually("three devices' feeds open towards the engine", || feeds.load(Ordering::SeqCst) == engine_feeds[0])
        .await;
    drop(first);
    eventually("one device's feed closed", || feeds.load(Ordering::SeqCst) == engine_feeds[1]).await;
    let mut again = None;
    for _ in 0..200 {
        let feed = open_feed(&s, &day, &h).await;
        if feed.status() == StatusCode::OK {
            again = Some(feed);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let mut again = again.expect("the closed feed's place was given back");

    s.post("/auth/logout", alice["token"].as_str(), json!({})).await;
    for feed in [&mut second, &mut again] {
        let ended = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            loop {
                match feed.chunk().await {
                    Ok(Some(_)) => continue,
                    _ => return true,
                }
            }
        })
        .await;
        assert_eq!(ended, Ok(true), "an ended session's feed is cut");
    }
    eventually("the cut feeds closed towards the engine", || feeds.load(Ordering::SeqCst) == engine_feeds[2]).await;
    drop(others);
    eventually("the last device's feed closed towards the engine", || feeds.load(Ordering::SeqCst) == engine_feeds[3])
        .await;
    assert_error(
        &docdb(&s, Method::GET, &format!("{day}/_changes?feed=continuous"), &h, None).await,
        401,
        "session_ended",
    );
}

/// Reads from `stream` into `into` until `until` is in it (`None` when the stream ended first).
async fn read_until_seen(stream: &mut tokio::net::TcpStream, into: &mut Vec<u8>, until: &[u8]) -> Option<()> {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 4096];
    while !into.windows(until.len()).any(|w| w == until) {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        into.extend_from_slice(&buf[..n]);
    }
    Some(())
}

/// A live feed's request whose body arrives one byte at a time across a logout: the session was
/// alive when the headers came and the server asked for the body (`100 Continue`), ended before
/// the body was in. The feed is refused; it never streams what is written after the logout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_whose_body_arrives_after_the_logout_streams_nothing() {
    use tokio::io::AsyncWriteExt;
    let real = Engine::start().await;
    let s = spawn_with(with_engine(&real.url_with_credentials())).await;
    let db = "dev_acme_main_catalog";
    let alice = s.login("alice").await;
    let body = br#"{"doc_ids":["written-after-the-logout"]}"#;
    let addr = s.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!(
        "POST /docdb/{db}/_changes?feed=continuous&since=now&filter=_doc_ids&heartbeat=200 HTTP/1.1\r\nHost: {addr}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n",
        body.len()
    );
    for (k, v) in &remote_headers(&alice) {
        head.push_str(&format!("{k}: {}\r\n", v.as_str().unwrap()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    // The server asks for the body once it has checked the session and begins to read it.
    let mut answer = Vec::new();
    let asked = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        read_until_seen(&mut stream, &mut answer, b"100 Continue\r\n\r\n"),
    )
    .await;
    assert_eq!(asked, Ok(Some(())), "{}", String::from_utf8_lossy(&answer));
    assert_eq!(s.post("/auth/logout", alice["token"].as_str(), json!({})).await.status, StatusCode::OK);
    for byte in body {
        stream.write_all(&[*byte]).await.unwrap();
        stream.flush().await.unwrap();
        tokio::task::yield_now().await;
    }
    answer.clear();
    let answered = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        read_until_seen(&mut stream, &mut answer, b"\r\n\r\n"),
    )
    .await;
    assert_eq!(answered, Ok(Some(())), "{}", String::from_utf8_lossy(&answer));
    let status = String::from_utf8_lossy(&answer).lines().next().unwrap_or_default().to_owned();
    if status.starts_with("HTTP/1.1 200") {
        // Let through: it must be cut, never stream what is written after the logout.
        real.bulk(db, json!([{"_id": "written-after-the-logout"}])).await;
        let streamed = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            read_until_seen(&mut stream, &mut answer, b"written-after-the-logout"),
        )
        .await;
        assert_eq!(
            streamed,
            Ok(None),
            "the feed stays open after the logout and streams: {}",
            String::from_utf8_lossy(&answer)
        );
    } else {
        assert!(status.starts_with("HTTP/1.1 401"), "{status}");
        read_until_seen(&mut stream, &mut answer, b"session_ended").await.expect("the error body");
    }
}

/// A live feed ends when its access does, as the server's clock says: a feed opened with a Bearer
/// token when the token expires, one opened with the session's headers when the session does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_feed_ends_when_its_access_expires() {
    let real = Engine::start().await;
    let s = spawn_with(with_engine(&real.url_with_credentials())).await;
    let alice = s.login("alice").await;
    let bearer =
        Map::from_iter([("Authorization".to_owned(), json!(format!("Bearer {}", alice["token"].as_str().unwrap())))]);
    let open = |headers: Map<String, Value>| {
        let mut req = s
            .client
            .get(format!("{}/docdb/dev_acme_main_catalog/_changes?feed=continuous&since=now&heartbeat=100", s.base));
        for (k, v) in &headers {
            req = req.header(k, v.as_str().unwrap());
        }
        req.send()
    };
    let mut by_token = open(bearer).await.unwrap();
    let mut by_headers = open(remote_headers(&alice)).await.unwrap();
    assert_eq!((by_token.status(), by_headers.status()), (StatusCode::OK, StatusCode::OK));
    /// Heartbeats for a good second (the feed is looked at every second): it stays open.
    async fn stays_open(feed: &mut reqwest::Response) {
        for _ in 0..15 {
            assert!(matches!(feed.chunk().await, Ok(Some(_))), "the feed ended before its access did");
        }
    }
    async fn ends(feed: &mut reqwest::Response) {
        let ended = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while let Ok(Some(_)) = feed.chunk().await {}
        })
        .await;
        assert!(ended.is_ok(), "the feed outlived its access");
    }
    let token_ttl_ms = s.state.settings.access_token_ttl_secs as i64 * 1000;
    let offset = s.state.clock.offset_ms();
    s.state.clock.set_offset(offset + token_ttl_ms - 5_000);
    stays_open(&mut by_token).await;
    s.state.clock.set_offset(offset + token_ttl_ms + 1_000);
    ends(&mut by_token).await;
    stays_open(&mut by_headers).await;
    s.state.clock.set_offset(offset + s.state.settings.refresh_token_ttl_secs as i64 * 1000 + 1_000);
    ends(&mut by_headers).await;
}

/// Inside a logout's sign-out window the access token reaches the engine as the headers do, for
/// the handlers' final work, never for a live feed; after the completion, not at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signing_out_session_s_bearer_token_opens_no_live_feed() {
    let real = Engine::start().await;
    let s = spawn_with(with_engine(&real.url_with_credentials())).await;
    let alice = s.login("alice").await;
    let token = alice["token"].as_str().unwrap();
    let bearer = Map::from_iter([("Authorization".to_owned(), json!(format!("Bearer {token}")))]);
    s.post("/auth/logout", Some(token), json!({})).await;
    assert_eq!(docdb(&s, Method::GET, "dev_acme_main_catalog/", &bearer, None).await.status, StatusCode::OK);
    assert_error(
        &docdb(&s, Method::GET, "dev_acme_main_catalog/_changes?feed=continuous&since=now", &bearer, None).await,
        401,
        "session_ended",
    );
    s.post("/auth/logout", Some(token), json!({"complete": true})).await;
    assert_error(&docdb(&s, Method::GET, "dev_acme_main_catalog/", &bearer, None).await, 401, "session_ended");
}
