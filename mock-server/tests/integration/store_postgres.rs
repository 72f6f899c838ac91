//! The mock server on PostgreSQL (`DATABASE_URL`), against a cluster these tests start: the same
//! routes, rules and crons as on the embedded store, and what only PostgreSQL brings (replicas on
//! one database, a database behind the journal refused).

use crate::common;

use common::pg::Cluster;
use common::{assert_error, spawn_with, Server};
use mock_server::settings::Settings;
use reqwest::StatusCode;
use serde_json::json;

const SECRET: &str = "0123456789abcdef-replicas";

fn on(url: &str) -> Settings {
    Settings {
        database_url: Some(url.to_owned()),
        jwt_secret: Some(SECRET.into()),
        test_controls: true,
        ..Settings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_runs_on_postgres_as_on_the_embedded_store() {
    let cluster = Cluster::start();
    let url = cluster.migrated("walk");
    let s = spawn_with(on(&url)).await;
    // Sessions: login, refresh (rotated), device, logout.
    let login = s.login("alice").await;
    let refreshed = s.post("/auth/refresh", None, json!({"refreshToken": login["refreshToken"]})).await;
    assert_eq!(refreshed.status, StatusCode::OK, "{:?}", refreshed.body);
    let token = refreshed.body["token"].as_str().unwrap().to_owned();
    let device = s.post("/auth/connect", Some(&token), json!({"sdkVersion": "1.4.17"})).await;
    assert_eq!(device.status, StatusCode::OK, "{:?}", device.body);
    assert_error(&s.post("/auth/refresh", None, json!({"refreshToken": "nope"})).await, 401, "invalid_refresh_token");
    // The rollout: a flag through its preflight, the rotate cron, the views, the audit log.
    let admin = s.token("admin").await;
    let flags = s.patch("/admin/rolling-db/flags/acme?force=true", Some(&admin), json!({"rollingDb": true})).await;
    assert_eq!(flags.status, StatusCode::OK, "{:?}", flags.body);
    let run = s.run_cron(&admin, "rolling-db-rotate").await;
    assert_eq!(run["status"], "succeeded", "{run}");
    // The log read a page at a time, as the operator's console polls it.
    let log = run["log"].as_array().unwrap().clone();
    let page = s
        .get(&format!("/admin/crons/runs/{}?logFrom=1&logLimit=1", run["runId"].as_str().unwrap()), Some(&admin))
        .await
        .body;
    assert_eq!((&page["log"], &page["logTotal"]), (&json!([log[1]]), &json!(log.len())), "{page}");
    let topology = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await;
    assert_eq!(topology.status, StatusCode::OK, "{:?}", topology.body);
    let fleet = s.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
    assert_eq!(fleet["tenants"][0]["coreExists"], true, "{fleet}");
    let audit = s.get("/admin/audit?companyId=acme&limit=5", Some(&admin)).await;
    assert_eq!(audit.status, StatusCode::OK, "{:?}", audit.body);
    let actions: Vec<&str> =
        audit.body["entries"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert!(actions.contains(&"flags.force"), "{actions:?}");
    let health = s.get("/health", None).await;
    assert_eq!(health.body, json!({"status": "ok", "db": true}));
    for ended in ["session-prune", "rolling-db-drop-eval", "rolling-db-archive"] {
        let run = s.run_cron(&admin, ended).await;
        assert_eq!(run["status"], "succeeded", "{ended}: {run}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_token_is_spent_once_whichever_replica_gets_it() {
    let cluster = Cluster::start();
    let url = cluster.migrated("race");
    let strict = |url: &str| Settings { refresh_reuse_grace_secs: 0, ..on(url) };
    let (a, b) = (spawn_with(strict(&url)).await, spawn_with(strict(&url)).await);
    for _ in 0..5 {
        let refresh = a.login("carol").await["refreshToken"].clone();
        let body = json!({"refreshToken": refresh});
        let (x, y) = tokio::join!(a.post("/auth/refresh", None, body.clone()), b.post("/auth/refresh", None, body));
        let mut statuses = [x.status.as_u16(), y.status.as_u16()];
        statuses.sort();
        assert_eq!(statuses, [200, 401], "{:?} {:?}", x.body, y.body);
        let refused = if x.status == StatusCode::OK { &y } else { &x };
        assert_eq!(refused.body["error"], "refresh_token_reused", "{:?}", refused.body);
    }
    // With the grace window (the default 10 s) a racing tab gets one successor, whichever replica
    // it reaches; a third presentation is a replay.
    let (c, d) = (spawn_with(on(&url)).await, spawn_with(on(&url)).await);
    let body = json!({"refreshToken": c.login("carol").await["refreshToken"].clone()});
    let (x, y) = tokio::join!(c.post("/auth/refresh", None, body.clone()), d.post("/auth/refresh", None, body.clone()));
    assert_eq!((x.status, y.status), (StatusCode::OK, StatusCode::OK), "{:?} {:?}", x.body, y.body);
    for r in [&c, &d] {
        assert_error(&r.post("/auth/refresh", None, body.clone()).await, 401, "refresh_token_replayed");
    }
    // A login on one replica is a session on the other: one store, one signing secret.
    let token = a.token("bob").await;
    assert_eq!(b.get("/users/me", Some(&token)).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_behind_the_journal_is_refused_naming_what_is_missing() {
    let cluster = Cluster::start();
    let empty = cluster.database("empty");
    let refused =
        mock_server::state::AppState::new(on(&empty), Default::default()).err().expect("an empty database is refused");
    let told = mock_server::causes::chain(&refused);
    assert!(told.contains("0000_create_companies") && told.contains("mock-server migrate"), "{told}");
    // Without JWT_SECRET a replica refuses to start: a secret per replica would split the fleet.
    let url = cluster.migrated("secretless");
    let refused = mock_server::state::AppState::new(Settings { jwt_secret: None, ..on(&url) }, Default::default())
        .err()
        .expect("no secret, no replica");
    assert!(mock_server::causes::chain(&refused).contains("JWT_SECRET"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_starting_together_seed_once() {
    let cluster = Cluster::start();
    let url = cluster.migrated("seed");
    let starts: Vec<_> = (0..3)
        .map(|_| {
            let url = url.clone();
            tokio::task::spawn_blocking(move || {
                mock_server::state::AppState::new(on(&url), Default::default()).map(|_| ())
            })
        })
        .collect();
    for s in starts {
        s.await.unwrap().expect("each replica starts");
    }
    let server: Server = spawn_with(on(&url)).await;
    let admin = server.token("admin").await;
    let fleet = server.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
    assert_eq!(fleet["tenants"].as_array().unwrap().len(), 3, "{fleet}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalidation_through_any_replica_reaches_the_devices_of_every_replica_once() {
    use common::ws::{close_code, hello};
    let cluster = Cluster::start();
    let url = cluster.migrated("invalidate");
    let replicas = [spawn_with(on(&url)).await, spawn_with(on(&url)).await, spawn_with(on(&url)).await];
    let alice = replicas[0].token("alice").await;
    // A device on each replica, each told nothing yet.
    let mut sockets = Vec::new();
    for (i, r) in replicas.iter().enumerate() {
        let (ws, frames) = hello(r, &alice, Some(&format!("dev-{i}")), "1.4.17", None).await;
        assert_eq!(frames.len(), 1, "{frames:?}");
        sockets.push(ws);
    }
    let keys = replicas[1].token("keys").await;
    let done = replicas[1].post("/admin/invalidate-clients/acme", Some(&keys), json!({})).await;
    assert_eq!(done.status, StatusCode::OK, "{:?}", done.body);
    let at = done.body["invalidatedAt"].as_i64().unwrap();
    for ws in &mut sockets {
        assert_eq!(close_code(ws).await, Some(4000.into()), "every replica closes the tenant's sockets");
    }
    // Each device comes back on another replica: invalidated once, then not again.
    for i in 0..3 {
        let r = &replicas[(i + 1) % 3];
        let (_ws, frames) = hello(r, &alice, Some(&format!("dev-{i}")), "1.4.17", None).await;
        assert_eq!(frames[0]["type"], "invalidate-local", "{frames:?}");
        assert_eq!(frames[0]["payload"]["invalidatedAt"], at);
        let (_ws, frames) = hello(&replicas[i], &alice, Some(&format!("dev-{i}")), "1.4.17", Some(at)).await;
        assert_eq!(frames.len(), 1, "obeyed: only ready: {frames:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_clock_is_the_same_on_every_replica() {
    let cluster = Cluster::start();
    let url = cluster.migrated("clock");
    let (a, b) = (spawn_with(on(&url)).await, spawn_with(on(&url)).await);
    let moved = a.post("/__mock/clock", None, json!({"advanceDays": 3})).await.body["now"].as_i64().unwrap();
    // The other replica hears it (a notification): within a moment, the same clock.
    let mut seen = 0;
    for _ in 0..100 {
        seen = b.get("/__mock/clock", None).await.body["now"].as_i64().unwrap();
        if seen >= moved {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(seen >= moved && seen - moved < 60_000, "moved {moved}, the other replica says {seen}");
    // A replica started later starts on it.
    let c = spawn_with(on(&url)).await;
    assert!(c.now() >= moved, "{} < {moved}", c.now());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_outage_answers_503_and_the_replicas_serve_again_without_a_restart() {
    let cluster = std::sync::Arc::new(Cluster::start());
    let url = cluster.migrated("outage");
    let replicas = std::sync::Arc::new([spawn_with(on(&url)).await, spawn_with(on(&url)).await]);
    let token = replicas[0].token("alice").await;
    let stopped = cluster.clone();
    tokio::task::spawn_blocking(move || stopped.stop()).await.unwrap();
    // Ten seconds of load on both replicas while the store is down.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut answers = std::collections::BTreeMap::<u16, u32>::new();
    while std::time::Instant::now() < until {
        for r in replicas.iter() {
            let a = r.get("/users/me", Some(&token)).await;
            *answers.entry(a.status.as_u16()).or_default() += 1;
            if a.status != StatusCode::OK {
                assert_error(&a, 503, "store_unavailable");
            }
        }
    }
    assert!(answers.get(&503).is_some_and(|n| *n > 0), "{answers:?}");
    let restarted = cluster.clone();
    tokio::task::spawn_blocking(move || restarted.restart()).await.unwrap();
    let back = std::time::Instant::now();
    for r in replicas.iter() {
        loop {
            if r.get("/users/me", Some(&token)).await.status == StatusCode::OK {
                break;
            }
            assert!(
                back.elapsed() < std::time::Duration::from_secs(5),
                "a replica still fails {:?} after the store returned",
                back.elapsed()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    // Writes too: a login on each.
    for r in replicas.iter() {
        r.login("bob").await;
    }
}

/// Polls `replica` with `token` on `/users/me` until it is refused (every 10 ms, for up to 5 s),
/// and answers how long that took: the ended session reaches another replica by the store's
/// notification, the moment it commits.
async fn refused_after(replica: &Server, token: &str) -> std::time::Duration {
    let start = std::time::Instant::now();
    for _ in 0..500 {
        let a = replica.get("/users/me", Some(token)).await;
        if a.status == StatusCode::UNAUTHORIZED {
            assert_error(&a, 401, "session_ended");
            return start.elapsed();
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the ended session still reaches {} after 5 s", replica.base);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ended_on_one_replica_is_refused_on_every_replica() {
    let cluster = Cluster::start();
    let url = cluster.migrated("ended");
    let replicas = [spawn_with(on(&url)).await, spawn_with(on(&url)).await, spawn_with(on(&url)).await];
    let alice = replicas[0].token("alice").await;
    for r in &replicas {
        assert_eq!(r.get("/users/me", Some(&alice)).await.status, StatusCode::OK);
    }
    assert_eq!(replicas[0].post("/auth/logout", Some(&alice), json!({})).await.status, StatusCode::OK);
    // Its sign-out window, open in the store for every replica, closed by the completion.
    assert_eq!(replicas[1].get("/users/me", Some(&alice)).await.status, StatusCode::OK);
    assert_eq!(replicas[0].post("/auth/logout", Some(&alice), json!({"complete": true})).await.status, StatusCode::OK);
    // The replica that ended it refuses at once; the others as soon as they hear it.
    assert_error(&replicas[0].get("/users/me", Some(&alice)).await, 401, "session_ended");
    for r in &replicas[1..] {
        let took = refused_after(r, &alice).await;
        eprintln!("logout heard by another replica after {took:?}");
    }
    // A role taken away on one replica ends the operator's token on the others.
    let keys = replicas[2].token("keys").await;
    let admin = replicas[0].token("admin").await;
    assert_eq!(
        replicas[1].patch("/users/user-keys", Some(&admin), json!({"roles": ["cashier"]})).await.status,
        StatusCode::OK
    );
    refused_after(&replicas[2], &keys).await;
    assert_error(
        &replicas[0].patch("/admin/rolling-db/flags/globex", Some(&keys), json!({"rollingDb": false})).await,
        401,
        "session_ended",
    );
    // A replica that starts later learns every ended session from the store.
    let late = spawn_with(on(&url)).await;
    assert_error(&late.get("/users/me", Some(&alice)).await, 401, "session_ended");
    assert_error(&late.get("/users/me", Some(&keys)).await, 401, "session_ended");
}

/// Every replica of one store backs up into, drops against and restores from the same
/// snapshots: the first marks its BACKUP_DIR, a replica that shares it works, and one with a
/// directory of its own takes no backup and drops nothing, saying why in its run's log and /health.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_their_backup_directory_or_take_no_backup() {
    let cluster = Cluster::start();
    let url = cluster.migrated("shared_backups");
    let (shared, own) = (
        std::env::temp_dir().join(mock_server::auth::secrets::random_id("shared")),
        std::env::temp_dir().join(mock_server::auth::secrets::random_id("own")),
    );
    let with = |dir: &std::path::PathBuf| Settings {
        backup_dir: Some(dir.clone()),
        drop_green_days: 0,
        conflicts_enabled: true,
        ..on(&url)
    };
    let first = spawn_with(with(&shared)).await;
    let sharing = spawn_with(with(&shared)).await;
    let apart = spawn_with(with(&own)).await;
    for r in [&first, &sharing] {
        assert_eq!(r.get("/health", None).await.body, json!({"status": "ok", "db": true}));
    }
    let health = apart.get("/health", None).await.body;
    assert!(health["backups"].as_str().is_some_and(|w| w.contains("BACKUP_DIR") && w.contains("shared")), "{health}");

    let admin = first.token("admin").await;
    first
        .patch(
            "/admin/rolling-db/flags/acme?force=true",
            Some(&admin),
            json!({"rollingDb": true, "rollingDbDrop": true}),
        )
        .await;
    first.run_cron(&admin, "rolling-db-rotate").await;
    for cron in ["rolling-db-backup", "rolling-db-drop-eval"] {
        let run = apart.run_cron(&admin, cron).await;
        assert_eq!(run["status"], "failed", "{cron}: {run}");
        assert!(run["log"].to_string().contains("does not hold this store's marker"), "{cron}: {run}");
    }
    assert!(std::fs::read_dir(&own).map_or(true, |d| d.count() == 0), "no snapshot written apart");
    let run = sharing.run_cron(&admin, "rolling-db-backup").await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let day = format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(first.now()));
    assert!(shared.join(&day).is_dir(), "the snapshot is where every sharing replica sees it");
    let _ = (std::fs::remove_dir_all(&shared), std::fs::remove_dir_all(&own));
}

/// A database migrated by the former journal, whose 0016 added source columns to `orders` and
/// `sales` and whose 0017 widened the time columns, keeps working: nothing runs again, the
/// server's own tables are added, and the server archives into them (the extra columns stay,
/// unused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_migrated_through_the_former_0017_keeps_working() {
    let cluster = Cluster::start();
    let url = cluster.migrated("former");
    let target = url.clone();
    common::pg::off_runtime(move || {
        let mut c = postgres::Client::connect(&target, postgres::NoTls).unwrap();
        c.batch_execute(
            "ALTER TABLE orders ADD COLUMN source_db TEXT; ALTER TABLE orders ADD COLUMN source_rev TEXT;
             ALTER TABLE sales ADD COLUMN source_db TEXT; ALTER TABLE sales ADD COLUMN source_rev TEXT;
             INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('former-0016', 1700000016000), ('former-0017', 1700000017000);",
        )
        .unwrap();
        let report = mock_server::store::postgres::apply(&mut c, false, &mut |_| {}).unwrap();
        assert!(report.applied.is_empty(), "{report:?}");
    });
    let s = spawn_with(on(&url)).await;
    let admin = s.token("admin").await;
    s.patch("/admin/rolling-db/flags/acme?force=true", Some(&admin), json!({"rollingDb": true})).await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let day = format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(s.now()));
    let alice = s.token("alice").await;
    let put = s
        .call(
            reqwest::Method::PUT,
            &format!("/docdb/{day}/order-1"),
            Some(&alice),
            Some(json!({"type": "order", "status": "paid", "totalCents": 400})),
        )
        .await;
    assert_eq!(put.status, StatusCode::OK, "{:?}", put.body);
    s.advance_days(1.0).await;
    let admin = s.token("admin").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let run = s.run_cron(&admin, "rolling-db-archive").await;
    assert!(run["status"] == "succeeded" && run["log"].to_string().contains(&format!("archived [{day}]")), "{run}");
    let recon = s.get("/admin/rolling-db/tenants/acme/reconciliation", Some(&admin)).await.body;
    assert_eq!(recon["diff"], 0, "{recon}");
}
