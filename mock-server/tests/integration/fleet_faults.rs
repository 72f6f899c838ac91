//! The fleet through a network that fails: replicas (processes of the server's binary) on one
//! PostgreSQL and one PouchDB Server, every hop through a fault proxy of its own
//! (common::fleet): each replica to the engine, each to PostgreSQL, and the address the others
//! read its feeds at. A partition between the replicas, an engine out of a replica's reach, a
//! replica cut from PostgreSQL, a heartbeat connection that dies after each read: devices' feeds
//! see every write once the fault heals, the engine holds one feed of a database again and never
//! none, and what a cut replica answered is neither lost nor doubled.

use crate::common;

use std::time::Duration;

use common::engine::Engine;
use common::fault_proxy::{FaultProxy, Faults};
use common::fleet::{self, alices_login, docdb_headers, eventually, listen, Replica, Rows};
use common::pg::Cluster;
use mock_server::replicas::members::Members;
use mock_server::replicas::owner::Member;
use serde_json::{json, Value};

/// A heartbeat connection that a pooler or balancer closes after its first read, every time:
/// the replica still settles its list (counted over connections) and decides owners.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_connection_cut_after_each_first_read_still_settles() {
    let pg = Cluster::start();
    let url = pg.migrated("heartbeat_cut");
    let port = fleet::port_of(&url);
    let proxy = FaultProxy::to_port(port).await;
    proxy.set(Faults { lifetime: Some(Duration::from_millis(500)), ..Faults::default() });
    let through = url.replace(&format!("127.0.0.1:{port}"), &format!("127.0.0.1:{}", proxy.port()));
    let me = Member { id: "heartbeat-cut".into(), url: "http://127.0.0.1:9".into() };
    let members = Members::join(through, me);
    // A heartbeat a second: the second read comes on the second connection.
    let settled = tokio::time::timeout(Duration::from_secs(10), members.settled()).await;
    assert!(settled.is_ok(), "not settled within 10 s with {} connections cut", proxy.broken());
    assert!(proxy.broken() >= 1, "the connections were cut");
}

/// Three replicas, a device listening to one database through each.
struct Fleet {
    engine: Engine,
    replicas: Vec<Replica>,
    db: String,
    feeds: Vec<reqwest::Response>,
    rows: Vec<Rows>,
    written: Vec<String>,
    _pg: Cluster,
}

impl Fleet {
    async fn start(name: &str) -> Fleet {
        let pg = Cluster::start();
        let database_url = pg.migrated(name);
        let engine = Engine::start().await;
        let mut replicas = Vec::new();
        // One at a time: the first seeds the store.
        for _ in 0..3 {
            replicas.push(Replica::start(&database_url, engine.port, &[]).await);
        }
        for r in &replicas {
            eventually("every replica hears the others", Duration::from_secs(30), async || {
                r.metric("replicas_alive").await == 3.0
            })
            .await;
        }
        let headers = docdb_headers(&alices_login(&replicas[0].base).await);
        let db = fleet::todays_db();
        engine.create_db(&db).await;
        let mut feeds = Vec::new();
        for r in &replicas {
            feeds.push(listen(&r.base, &db, &headers, "0").await);
        }
        let rows = (0..3).map(|_| Rows::default()).collect();
        Fleet { engine, replicas, db, feeds, rows, written: Vec::new(), _pg: pg }
    }

    /// Each replica's (engine feeds, forwarded feeds).
    async fn feeds_held(&self) -> Vec<(f64, f64)> {
        let mut held = Vec::new();
        for r in &self.replicas {
            held.push((r.metric("docdb_hub_engine_feeds").await, r.metric("docdb_hub_forwarded_feeds").await));
        }
        held
    }

    async fn engine_feeds(&self) -> f64 {
        self.feeds_held().await.iter().map(|(e, _)| e).sum()
    }

    /// The replica holding the engine's feed, once there is one.
    async fn owner(&self) -> usize {
        let mut owner = None;
        eventually("one engine feed and two forwarded", Duration::from_secs(30), async || {
            let held = self.feeds_held().await;
            let totals = held.iter().fold((0.0, 0.0), |(a, b), (e, f)| (a + e, b + f));
            owner = held.iter().position(|(e, _)| *e == 1.0);
            totals == (1.0, 2.0)
        })
        .await;
        owner.unwrap()
    }

    /// Writes `n` more documents (to the engine itself).
    async fn write(&mut self, n: usize) {
        let from = self.written.len();
        let ids: Vec<String> = (from..from + n).map(|i| format!("doc-{i:03}")).collect();
        let docs: Vec<Value> = ids.iter().map(|id| json!({"_id": id})).collect();
        self.engine.bulk(&self.db, Value::Array(docs)).await;
        self.written.extend(ids);
    }

    /// Every device sees every write within `within`, each once.
    async fn all_seen(&mut self, within: Duration, after: &str) {
        for (i, (feed, rows)) in self.feeds.iter_mut().zip(self.rows.iter_mut()).enumerate() {
            let got = tokio::time::timeout(within, rows.until(feed, &self.written)).await;
            assert_eq!(got.ok(), Some(true), "{after}: device {i} saw {:?} of {:?}", rows.ids, self.written);
            let mut seen = rows.ids.clone();
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), rows.ids.len(), "{after}: device {i} saw a change twice: {:?}", rows.ids);
        }
    }
}

/// The owner of a database's feeds partitioned from the other replicas (what they send it is
/// held, never answered), then its engine hop down: devices on every replica see every write
/// within a bound once each fault heals (and through the partition, from the engine), the engine
/// holds at least one feed of the database all along and one again after the heal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_and_a_lost_engine_heal_with_every_write_seen_once_and_one_engine_feed() {
    let mut f = Fleet::start("fleet_partition").await;
    let owner = f.owner().await;
    f.write(3).await;
    f.all_seen(Duration::from_secs(20), "before any fault").await;

    // The others cannot reach the owner: its feeds to them go silent, their asks go unanswered.
    f.replicas[owner].hops.peer.set(Faults { black_hole: true, ..Faults::default() });
    f.write(3).await;
    f.all_seen(Duration::from_secs(20), "through the partition").await;
    assert!(f.engine_feeds().await >= 1.0, "the engine holds a feed of the database through the partition");
    f.replicas[owner].hops.peer.heal();
    f.write(3).await;
    f.all_seen(Duration::from_secs(20), "after the partition healed").await;
    eventually("one engine feed again after the partition", Duration::from_secs(30), async || {
        f.engine_feeds().await == 1.0
    })
    .await;

    // The owner loses the engine: its feed is reset, it cannot open another.
    let owner = f.owner().await;
    f.replicas[owner].hops.engine.set(Faults { down: true, ..Faults::default() });
    f.write(3).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    f.replicas[owner].hops.engine.heal();
    f.all_seen(Duration::from_secs(20), "after the engine came back").await;
    eventually("one engine feed again after the engine came back", Duration::from_secs(30), async || {
        f.engine_feeds().await == 1.0
    })
    .await;
}

async fn post(base: &str, path: &str, body: Value) -> (u16, Value) {
    let answer = reqwest::Client::new().post(format!("{base}{path}")).json(&body).send().await.unwrap();
    (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
}

/// A replica cut from PostgreSQL refuses logins and refreshes with the store's clear error (503
/// `store_unavailable`), never hanging; another replica goes on; once the cut heals the refresh
/// it refused works, once (it changed nothing), and the login it refused was never made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_cut_from_postgres_refuses_what_it_cannot_order_and_loses_nothing() {
    let pg = Cluster::start();
    let database_url = pg.migrated("fleet_pg_cut");
    let engine = Engine::start().await;
    // No grace for a refresh token's reuse: a second use is told as one.
    let env = [("REFRESH_REUSE_GRACE_SECS", "0")];
    let a = Replica::start(&database_url, engine.port, &env).await;
    let b = Replica::start(&database_url, engine.port, &env).await;
    let before = alices_login(&b.base).await;
    let refresh = json!({"refreshToken": before["refreshToken"]});

    b.hops.pg.set(Faults { down: true, ..Faults::default() });
    let bound = Duration::from_secs(15);
    let cut_login = tokio::time::timeout(
        bound,
        post(&b.base, "/auth", json!({"username": "bob", "password": "bob-pass", "deviceInfo": {}})),
    )
    .await
    .expect("a login on a cut replica is answered");
    assert_eq!((cut_login.0, cut_login.1["error"].as_str()), (503, Some("store_unavailable")), "{:?}", cut_login.1);
    let cut_refresh = tokio::time::timeout(bound, post(&b.base, "/auth/refresh", refresh.clone()))
        .await
        .expect("a refresh on a cut replica is answered");
    assert_eq!((cut_refresh.0, cut_refresh.1["error"].as_str()), (503, Some("store_unavailable")));
    // The other replica is not cut.
    assert!(alices_login(&a.base).await["token"].is_string(), "the other replica signs in");
    let scrape = reqwest::get(format!("http://{}/metrics", b.metrics)).await.unwrap().text().await.unwrap();
    assert!(b.metric("upstream_connection_failures_total{upstream=\"postgres\"}").await >= 1.0, "{scrape}");

    b.hops.pg.heal();
    // The first request once PostgreSQL is reachable is served, though the pool's connections
    // were closed by the cut.
    b.hops.pg.listening().await;
    let answer = post(&b.base, "/auth/refresh", refresh.clone()).await;
    assert_eq!(answer.0, 200, "the refused refresh changed nothing: {:?}", answer.1);
    let again = post(&a.base, "/auth/refresh", refresh).await;
    assert_eq!(
        (again.0, again.1["error"].as_str()),
        (401, Some("refresh_token_reused")),
        "rotated once: {:?}",
        again.1
    );
}

/// A request to `base` with an optional Bearer token; its status and JSON body.
async fn call(
    base: &str,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, format!("{base}{path}"));
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    if let Some(b) = body {
        request = request.json(&b);
    }
    let answer = request.send().await.unwrap();
    (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
}

/// Runs `cron` on `base` to its end; answers the run.
async fn run_to_end(base: &str, token: &str, cron: &str) -> Value {
    let (status, run) =
        call(base, reqwest::Method::POST, &format!("/admin/crons/{cron}/run"), Some(token), Some(json!({}))).await;
    assert_eq!(status, 202, "{cron} on {base}: {run}");
    let id = run["runId"].as_str().unwrap().to_owned();
    let mut last = Value::Null;
    eventually("the run ends", Duration::from_secs(30), async || {
        last = call(base, reqwest::Method::GET, &format!("/admin/crons/runs/{id}"), Some(token), None).await.1;
        last["status"] != "running"
    })
    .await;
    assert_eq!(last["status"], "succeeded", "{cron} on {base}: {last}");
    last
}

/// `step` refused by `cut` while it cannot reach PostgreSQL (503 `store_unavailable`, never
/// started), run to its end by `up`, then run again by `cut` once healed (a run that finds the
/// step done).
async fn step_while_cut(cut: &Replica, up: &Replica, token: &str, cron: &str) {
    cut.hops.pg.set(Faults { down: true, ..Faults::default() });
    let refused =
        call(&cut.base, reqwest::Method::POST, &format!("/admin/crons/{cron}/run"), Some(token), Some(json!({}))).await;
    assert_eq!((refused.0, refused.1["error"].as_str()), (503, Some("store_unavailable")), "{cron}: {:?}", refused.1);
    run_to_end(&up.base, token, cron).await;
    cut.hops.pg.heal();
    // Its pooled connections were closed by the cut: the first request after it is served all
    // the same (each found closed and let go, a new one made).
    cut.hops.pg.listening().await;
    run_to_end(&cut.base, token, cron).await;
}

/// Moves the test clock `days` on at `at`, and waits until `other` tells the same time. A
/// replica hears of the move by a notification; one cut from PostgreSQL before it arrived learns
/// it only when its listener reconnects, and until then serves on the old clock (a hole of the
/// product, docs/operations.md): a step it ran then would see its own lease expire.
async fn move_clock(at: &Replica, other: &Replica, days: u32) {
    let (status, moved) =
        call(&at.base, reqwest::Method::POST, "/__mock/clock", None, Some(json!({"advanceDays": days}))).await;
    assert_eq!(status, 200, "{moved}");
    let now = moved["now"].as_i64().unwrap();
    eventually("the other replica on the moved clock", Duration::from_secs(10), async || {
        call(&other.base, reqwest::Method::GET, "/__mock/clock", None, None).await.1["now"].as_i64() >= Some(now)
    })
    .await;
}

async fn admin_token(base: &str) -> String {
    let body = json!({"username": "admin", "password": "admin-pass", "deviceInfo": {}});
    let login = call(base, reqwest::Method::POST, "/auth", None, Some(body)).await.1;
    login["token"].as_str().unwrap_or_else(|| panic!("{login}")).to_owned()
}

async fn topology(base: &str, token: &str, tenant: &str) -> Value {
    call(base, reqwest::Method::GET, &format!("/admin/rolling-db/tenants/{tenant}/topology"), Some(token), None).await.1
}

/// The operator's steps (rotate, archive, backup, drop evaluation) each run by one replica while
/// another is cut from PostgreSQL, then by that one once healed: the cut replica refuses to
/// start them, each step is done once (one cutover a tenant, each order archived once, one
/// snapshot a database, every day due dropped with the checks after a drop), nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_steps_run_once_while_another_replica_is_cut_from_postgres() {
    let pg = Cluster::start();
    let database_url = pg.migrated("fleet_steps");
    let engine = Engine::start().await;
    let backups = common::engine::temp_dir("fleet-backups");
    let env = [("MOCK_TEST_CONTROLS", "1"), ("BACKUP_DIR", backups.as_str())];
    let a = Replica::start(&database_url, engine.port, &env).await;
    let b = Replica::start(&database_url, engine.port, &env).await;
    let mut token = admin_token(&a.base).await;
    let tenants = ["acme", "globex", "initech"];
    for id in tenants {
        let (status, on) = call(
            &a.base,
            reqwest::Method::PATCH,
            &format!("/admin/rolling-db/flags/{id}?force=true"),
            Some(&token),
            Some(json!({"rollingDb": true, "rollingDbDrop": true})),
        )
        .await;
        assert_eq!((status, &on["rollingDbDrop"]), (200, &json!(true)), "{on}");
    }

    step_while_cut(&b, &a, &token, "rolling-db-rotate").await;
    let day0 = topology(&a.base, &token, "acme").await["days"][0]["name"].as_str().unwrap().to_owned();
    let day = day0.trim_start_matches("daily_dev_acme_main_").to_owned();
    for id in tenants {
        let (status, audit) =
            call(&a.base, reqwest::Method::GET, &format!("/admin/audit?companyId={id}&limit=100"), Some(&token), None)
                .await;
        assert_eq!(status, 200, "{audit}");
        let cutovers =
            audit["entries"].as_array().unwrap().iter().filter(|e| e["action"] == "clients.invalidate").count();
        assert_eq!(cutovers, 1, "{id} cut over once: {audit}");
    }
    for (user, company) in [("alice", "acme"), ("bob", "globex")] {
        let login = call(
            &a.base,
            reqwest::Method::POST,
            "/auth",
            None,
            Some(json!({"username": user, "password": format!("{user}-pass"), "deviceInfo": {}})),
        )
        .await
        .1;
        let t = login["token"].as_str().unwrap().to_owned();
        for n in 0..2 {
            let (status, put) = call(
                &a.base,
                reqwest::Method::PUT,
                &format!("/docdb/daily_dev_{company}_main_{day}/order-{n}"),
                Some(&t),
                Some(json!({"type": "order", "status": "paid", "totalCents": 100 + n})),
            )
            .await;
            assert_eq!(status, 201, "{put}");
        }
    }
    move_clock(&a, &b, 1).await;
    // A day on: the admin's access token expired with it.
    token = admin_token(&a.base).await;
    run_to_end(&a.base, &token, "rolling-db-rotate").await;

    step_while_cut(&b, &a, &token, "rolling-db-archive").await;
    for (company, orders) in [("acme", 2), ("globex", 2), ("initech", 0)] {
        let recon = call(
            &b.base,
            reqwest::Method::GET,
            &format!("/admin/rolling-db/tenants/{company}/reconciliation"),
            Some(&token),
            None,
        )
        .await
        .1;
        let first = &recon["days"][0];
        assert_eq!(
            (recon["diff"].clone(), first["status"].clone(), first["relational"][0]["rowCount"].clone()),
            (json!(0), json!("ARCHIVED"), json!(orders)),
            "{company}: each order archived once: {recon}"
        );
    }

    step_while_cut(&b, &a, &token, "rolling-db-backup").await;
    for company in tenants {
        let db = format!("daily_dev_{company}_main_{day}");
        let files: Vec<String> = std::fs::read_dir(std::path::Path::new(&backups).join(&db))
            .unwrap_or_else(|e| panic!("{db}: {e}"))
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files.iter().filter(|f| f.ends_with(".manifest.json")).count(), 1, "{db}: one snapshot: {files:?}");
    }

    move_clock(&a, &b, 31).await;
    token = admin_token(&a.base).await;
    step_while_cut(&b, &a, &token, "rolling-db-drop-eval").await;
    for company in tenants {
        let topo = topology(&b.base, &token, company).await;
        let first = &topo["days"][0];
        assert_eq!(first["status"], "DROPPED", "{company}: {topo}");
        let after = &first["afterDrop"];
        assert_eq!(
            (after["goneFromEngine"].clone(), after["replicatorClean"].clone()),
            (json!(true), json!(true)),
            "{company}: {topo}"
        );
    }
    let _ = std::fs::remove_dir_all(&backups);
}

/// A replica whose PostgreSQL is black-holed (its pooled connection open and silent): a login
/// there is refused with 503 `store_unavailable` within the store's round-trip bound, not held;
/// the other replica signs in meanwhile; once the hole closes the replica serves again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_whose_postgres_is_black_holed_refuses_within_the_bound() {
    let pg = Cluster::start();
    let database_url = pg.migrated("fleet_pg_hole");
    let engine = Engine::start().await;
    let a = Replica::start(&database_url, engine.port, &[]).await;
    let b = Replica::start(&database_url, engine.port, &[]).await;
    assert!(alices_login(&b.base).await["token"].is_string(), "a pooled connection, used and idle");
    b.hops.pg.set(Faults { black_hole: true, ..Faults::default() });
    let bound = mock_server::store::on_postgres::ROUND_TRIP + Duration::from_secs(10);
    let login = json!({"username": "bob", "password": "bob-pass", "deviceInfo": {}});
    let held = tokio::time::timeout(bound, post(&b.base, "/auth", login.clone())).await;
    let (status, body) = held.unwrap_or_else(|_| panic!("the login was held past {bound:?}"));
    assert_eq!((status, body["error"].as_str()), (503, Some("store_unavailable")), "{body}");
    assert!(alices_login(&a.base).await["token"].is_string(), "the other replica signs in");
    b.hops.pg.heal();
    let (status, body) = post(&b.base, "/auth", login).await;
    assert_eq!(status, 200, "served again: {body}");
}
