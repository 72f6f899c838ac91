//! The fleet through a network that fails: replicas (processes of the server's binary) on one
//! PostgreSQL and one PouchDB Server, every hop through a fault proxy of its own
//! (common::fleet): each replica to the engine, each to PostgreSQL, and the address the others
//! read its feeds at. A partition between the replicas, an engine out of a replica's reach, a
//! replica cut from PostgreSQL, a heartbeat connection that dies after each read: devices' feeds
//! see every write once the fault heals, the engine holds one feed of a database again and never
//! none, and what a cut replica answered is neither lost nor doubled.

mod common;

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
    let healed = async || post(&b.base, "/auth/refresh", refresh.clone()).await;
    let mut answer = (0, Value::Null);
    eventually("the cut replica answers again", Duration::from_secs(30), async || {
        answer = healed().await;
        answer.0 != 503
    })
    .await;
    assert_eq!(answer.0, 200, "the refused refresh changed nothing: {:?}", answer.1);
    let again = post(&a.base, "/auth/refresh", refresh).await;
    assert_eq!(
        (again.0, again.1["error"].as_str()),
        (401, Some("refresh_token_reused")),
        "rotated once: {:?}",
        again.1
    );
}
