//! Replicas of one store share the engine's feeds: three replicas (processes of the release
//! commands' binary) on one PostgreSQL and one PouchDB Server, a device listening to one database
//! through each. The engine holds one continuous feed of it (counted by a relay in front of the
//! engine that reads each request, not by the server), and the feed's owner killed, its device
//! comes back through another replica: every device gets every change once, in order.

use crate::common;

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::engine::{self, Engine};
use common::pg::Cluster;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &str = "0123456789abcdef-replica-feeds";

/// A replica: the server binary as its own process.
struct Replica {
    child: Child,
    base: String,
    /// Where its `/metrics` is served (`host:port`).
    metrics: String,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Replica {
    /// Started off the test's runtime (reading its first lines blocks), which serves the relay.
    async fn start(database_url: &str, docdb_url: &str) -> Replica {
        let (database_url, docdb_url) = (database_url.to_owned(), docdb_url.to_owned());
        tokio::task::spawn_blocking(move || Replica::start_here(&database_url, &docdb_url)).await.unwrap()
    }

    fn start_here(database_url: &str, docdb_url: &str) -> Replica {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mock-server"))
            .args(["--listen", "127.0.0.1:0"])
            .env("DATABASE_URL", database_url)
            .env("DOCDB_URL", docdb_url)
            .env("JWT_SECRET", SECRET)
            .env("METRICS_LISTEN", "127.0.0.1:0")
            .env("DOCDB_FEEDS_PER_SESSION", "64")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the server starts");
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = |what: &str| {
            let mut l = String::new();
            std::io::BufRead::read_line(&mut out, &mut l).unwrap();
            l.split(" on ").nth(1).unwrap_or_else(|| panic!("no {what} line: {l:?}")).trim().to_owned()
        };
        let base = line("listening");
        let metrics = line("metrics");
        let metrics = metrics.trim_start_matches("http://").trim_end_matches("/metrics").to_owned();
        Replica { child, base, metrics }
    }

    async fn metric(&self, name: &str) -> f64 {
        common::prom::scraped(&self.metrics, name.to_owned()).await
    }
}

/// A relay in front of the engine counting its connections whose last request is a continuous
/// `_changes` (a connection that held a feed and is still open holds it still).
async fn feed_counting_relay(engine_port: u16) -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let feeds = Arc::new(AtomicUsize::new(0));
    let counted = feeds.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let feeds = counted.clone();
            tokio::spawn(async move {
                let Ok(mut engine) = tokio::net::TcpStream::connect(("127.0.0.1", engine_port)).await else { return };
                let (mut from_client, mut to_client) = client.split();
                let (mut from_engine, mut to_engine) = engine.split();
                let mut continuous = false;
                let upstream = async {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        let n = match from_client.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        // A request's first line starts a packet here (requests are small).
                        let text = String::from_utf8_lossy(&buf[..n]);
                        if let Some(first) = text.lines().next().filter(|l| l.ends_with("HTTP/1.1")) {
                            let now = first.contains("_changes") && first.contains("feed=continuous");
                            if now != continuous {
                                if now {
                                    feeds.fetch_add(1, Ordering::SeqCst)
                                } else {
                                    feeds.fetch_sub(1, Ordering::SeqCst)
                                };
                                continuous = now;
                            }
                        }
                        if to_engine.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                let downstream = tokio::io::copy(&mut from_engine, &mut to_client);
                tokio::select! {
                    _ = upstream => {}
                    _ = downstream => {}
                }
                if continuous {
                    feeds.fetch_sub(1, Ordering::SeqCst);
                }
            });
        }
    });
    (port, feeds)
}

/// A device's live feed through `base`, from `since`; each row as it comes.
async fn listen(base: &str, db: &str, headers: &Map<String, Value>, since: &str) -> reqwest::Response {
    let mut r =
        reqwest::Client::new().get(format!("{base}/docdb/{db}/_changes?feed=continuous&heartbeat=500&since={since}"));
    for (k, v) in headers {
        r = r.header(k, v.as_str().unwrap());
    }
    let r = r.send().await.unwrap();
    assert!(r.status().is_success(), "{base}: {}", r.status());
    r
}

/// Rows of `feed` into `rows` until it ends (`false`) or the documents `doc-000` to `doc-{n-1}`
/// are all among them (`true`; a bulk's rows come in the engine's order, not the ids').
async fn read_rows(feed: &mut reqwest::Response, rows: &mut Vec<Value>, n: usize) -> bool {
    let mut pending = Vec::new();
    loop {
        let seen: std::collections::HashSet<&str> = rows.iter().filter_map(|r| r["id"].as_str()).collect();
        if (0..n).all(|i| seen.contains(format!("doc-{i:03}").as_str())) {
            return true;
        }
        match feed.chunk().await {
            Ok(Some(chunk)) => pending.extend_from_slice(&chunk),
            _ => return false,
        }
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if !line.trim_ascii().is_empty() {
                let row: Value = serde_json::from_slice(&line).unwrap();
                if row.get("id").is_some() {
                    rows.push(row);
                }
            }
        }
    }
}

async fn write(e: &Engine, db: &str, ids: std::ops::Range<usize>) {
    let docs: Vec<Value> = ids.map(|i| json!({"_id": format!("doc-{i:03}"), "n": i})).collect();
    e.bulk(db, Value::Array(docs)).await;
}

/// Waits (up to 30 s) until `f` holds.
async fn eventually(what: &str, mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..300 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within 30 s");
}

/// A device of alice's signed in at `base`: its session's document headers.
async fn alices_headers(base: &str) -> Map<String, Value> {
    let login: Value = reqwest::Client::new()
        .post(format!("{base}/auth"))
        .json(&json!({"username": "alice", "password": "alice-pass", "deviceInfo": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    login["docdbHeaders"]["Remote"].as_object().unwrap_or_else(|| panic!("{login}")).clone()
}

fn ids(rows: &[Value]) -> Vec<String> {
    rows.iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_hold_one_engine_feed_and_a_replicas_death_loses_no_change() {
    let pg = Cluster::start();
    let database_url = pg.migrated("replica_feeds");
    let e = Engine::start().await;
    let (relay_port, engine_feeds) = feed_counting_relay(e.port).await;
    let docdb_url = format!("http://{}:{}@127.0.0.1:{relay_port}/", engine::ADMIN.0, engine::ADMIN.1);
    // One at a time: the first seeds the store.
    let mut replicas: Vec<Option<Replica>> = Vec::new();
    for _ in 0..3 {
        replicas.push(Some(Replica::start(&database_url, &docdb_url).await));
    }
    let first = replicas[0].as_ref().unwrap();
    eventually("every replica hears the others", async || first.metric("replicas_alive").await == 3.0).await;
    let headers = alices_headers(&first.base).await;
    let day = mock_server::docdb::naming::day_of(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64,
    );
    let db = format!("daily_dev_acme_main_{day}");
    e.create_db(&db).await;

    // A device on each replica, each reading the database from its start; nothing written yet,
    // so the engine has sent nothing on its feed (not even its headers), and holds it all the same.
    let mut feeds = Vec::new();
    for r in replicas.iter().flatten() {
        feeds.push(listen(&r.base, &db, &headers, "0").await);
    }
    eventually("the engine holds one feed of the database", async || engine_feeds.load(Ordering::SeqCst) == 1).await;
    let mut by_replica = HashMap::new();
    eventually("the replicas count one engine feed and two between them", async || {
        by_replica.clear();
        for (i, r) in replicas.iter().flatten().enumerate() {
            by_replica
                .insert(i, (r.metric("docdb_hub_engine_feeds").await, r.metric("docdb_hub_forwarded_feeds").await));
        }
        by_replica.values().fold((0.0, 0.0), |(a, b), (e, f)| (a + e, b + f)) == (1.0, 2.0)
    })
    .await;
    let owners: Vec<usize> = by_replica.iter().filter(|(_, (own, _))| *own == 1.0).map(|(i, _)| *i).collect();
    assert_eq!(owners.len(), 1, "one replica reads the engine: {by_replica:?}");
    let mut rows: Vec<Vec<Value>> = vec![Vec::new(); 3];
    write(&e, &db, 0..20).await;
    for (feed, rows) in feeds.iter_mut().zip(rows.iter_mut()) {
        assert!(read_rows(feed, rows, 20).await, "the feed stays open");
    }
    assert_eq!(engine_feeds.load(Ordering::SeqCst), 1, "still one engine feed");

    // The owner dies (killed: no goodbye); changes keep coming.
    let owner = owners[0];
    let gone = replicas[owner].take().unwrap();
    drop(gone);
    write(&e, &db, 20..30).await;
    // Its device comes back through the next replica, from the last change it had.
    let next = replicas[(owner + 1) % 3].as_ref().unwrap();
    let last = rows[owner].last().unwrap()["seq"].to_string();
    let ended = !read_rows(&mut feeds[owner], &mut rows[owner], 30).await;
    if ended {
        feeds[owner] = listen(&next.base, &db, &headers, last.trim_matches('"')).await;
    }
    write(&e, &db, 30..40).await;
    for (i, (feed, rows)) in feeds.iter_mut().zip(rows.iter_mut()).enumerate() {
        let got = tokio::time::timeout(Duration::from_secs(30), read_rows(feed, rows, 40)).await;
        assert_eq!(got.ok(), Some(true), "device {i} got every change: {:?}", ids(rows));
    }
    // The engine's own order of the changes, read from it.
    let engine_rows = e.get(&format!("{db}/_changes")).await["results"].as_array().unwrap().clone();
    let all = ids(&engine_rows);
    assert_eq!(all.len(), 40);
    for (i, rows) in rows.iter().enumerate() {
        assert_eq!(ids(rows), all, "device {i}: every change once, in the engine's order");
        assert!(rows.windows(2).all(|w| w[0]["seq"].as_u64() < w[1]["seq"].as_u64()));
    }
    // The survivors settle on one owner: one engine feed again.
    eventually("one engine feed after the death", async || engine_feeds.load(Ordering::SeqCst) == 1).await;
    for r in replicas.iter().flatten() {
        eventually("the dead replica left the lists", async || r.metric("replicas_alive").await == 2.0).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replicas_feed_is_refused_without_the_key() {
    let pg = Cluster::start();
    let database_url = pg.migrated("replica_key");
    let e = Engine::start().await;
    let r = Replica::start(&database_url, &e.url_with_credentials()).await;
    let url = format!("{}/_replica/changes/daily_dev_acme_main_20260101?since=0", r.base);
    for key in [None, Some("00"), Some("not hex")] {
        let mut request = reqwest::Client::new().get(&url);
        if let Some(k) = key {
            request = request.header("x-replica-key", k);
        }
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), 401, "key {key:?}");
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"], "invalid_credential");
    }
}

/// Replicas started together decide no owner before they have heard each other: from the first
/// feed a device opens, the engine holds one feed of the database (sampled every 10 ms), not one
/// a replica until their lists agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_started_together_hold_one_engine_feed_from_the_first_second() {
    let pg = Cluster::start();
    let database_url = pg.migrated("replica_start");
    let e = Engine::start().await;
    let (relay_port, engine_feeds) = feed_counting_relay(e.port).await;
    let docdb_url = format!("http://{}:{}@127.0.0.1:{relay_port}/", engine::ADMIN.0, engine::ADMIN.1);
    // One replica seeds the store and signs a device in, then dies and is forgotten: the three
    // below start on a seeded store with nobody alive.
    let seeding = Replica::start(&database_url, &docdb_url).await;
    let headers = alices_headers(&seeding.base).await;
    drop(seeding);
    let (client, connection) = tokio_postgres::connect(&database_url, tokio_postgres::NoTls).await.unwrap();
    let driver = tokio::spawn(connection);
    client.execute("DELETE FROM mock_replicas", &[]).await.unwrap();
    driver.abort();
    let day = mock_server::docdb::naming::day_of(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64,
    );
    let db = format!("daily_dev_acme_main_{day}");
    e.create_db(&db).await;

    let most = Arc::new(AtomicUsize::new(0));
    let sampling = {
        let (most, engine_feeds) = (most.clone(), engine_feeds.clone());
        tokio::spawn(async move {
            loop {
                most.fetch_max(engine_feeds.load(Ordering::SeqCst), Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    let (a, b, c) = tokio::join!(
        Replica::start(&database_url, &docdb_url),
        Replica::start(&database_url, &docdb_url),
        Replica::start(&database_url, &docdb_url)
    );
    // A device on each, as soon as it listens.
    let (fa, fb, fc) = tokio::join!(
        listen(&a.base, &db, &headers, "0"),
        listen(&b.base, &db, &headers, "0"),
        listen(&c.base, &db, &headers, "0")
    );
    let mut feeds = [fa, fb, fc];
    eventually("the engine holds a feed of the database", async || engine_feeds.load(Ordering::SeqCst) >= 1).await;
    // Past the heartbeats' settling (a heartbeat a second) and the engine fallback's 6 s.
    tokio::time::sleep(Duration::from_secs(8)).await;
    sampling.abort();
    assert_eq!(most.load(Ordering::SeqCst), 1, "the engine held more than one feed of the database at once");
    assert_eq!(engine_feeds.load(Ordering::SeqCst), 1);
    write(&e, &db, 0..5).await;
    for (i, feed) in feeds.iter_mut().enumerate() {
        let mut rows = Vec::new();
        let got = tokio::time::timeout(Duration::from_secs(30), read_rows(feed, &mut rows, 5)).await;
        assert_eq!(got.ok(), Some(true), "device {i} got every change: {:?}", ids(&rows));
    }
}
