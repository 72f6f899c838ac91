//! Backups that exist: the backup cron's snapshots, the drop gated by a verified snapshot taken
//! after the database's last write, and a restore (`mock-server restore`) that gives back the
//! dropped database's documents with their revisions.

use crate::common;

use std::process::Command;

use common::{assert_error, spawn_with, Server};
use mock_server::docdb::naming::day_of;
use mock_server::docdb::{self, Doc};
use mock_server::settings::Settings;
use mock_server::store::backups;
use serde_json::{json, Value};

async fn put(s: &Server, token: &str, db: &str, id: &str, body: Value) {
    let a = s.call(reqwest::Method::PUT, &format!("/docdb/{db}/{id}"), Some(token), Some(body)).await;
    assert_eq!(a.status, reqwest::StatusCode::OK, "{:?}", a.body);
}

fn docs(s: &Server, db: &str) -> Vec<(String, String, Value)> {
    let conn = s.state.store.lock().unwrap();
    let all = docdb::all_docs(&s.state.cluster(&conn), db).unwrap();
    all.into_iter().map(|d: Doc| (d.id.clone(), d.rev.clone(), Value::Object(d.body))).collect()
}

fn candidate(c: &Value, db: &str) -> Value {
    c["candidates"].as_array().unwrap().iter().find(|d| d["name"] == db).cloned().unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_dropped_day_comes_back_from_its_snapshot_with_the_same_revisions() {
    let data = std::env::temp_dir().join(mock_server::auth::secrets::random_id("backups-test"));
    let settings = Settings {
        test_controls: true,
        data_dir: Some(data.clone()),
        conflicts_enabled: true,
        drop_green_days: 0,
        ..Settings::default()
    };
    let s = spawn_with(settings).await;
    let admin = s.token("admin").await;
    let on = s
        .patch(
            "/admin/rolling-db/flags/acme?force=true",
            Some(&admin),
            json!({"rollingDb": true, "rollingDbDrop": true}),
        )
        .await;
    assert_eq!(on.status, reqwest::StatusCode::OK, "{:?}", on.body);
    s.run_cron(&admin, "rolling-db-rotate").await;
    let db0 = format!("daily_dev_acme_main_{}", day_of(s.now()));
    let alice = s.token("alice").await;
    put(&s, &alice, &db0, "order-1", json!({"type": "order", "status": "paid", "totalCents": 450})).await;
    put(&s, &alice, &db0, "sale-1", json!({"type": "sale", "orderId": "order-1", "amountCents": 450})).await;
    let first = s.call(reqwest::Method::GET, &format!("/docdb/{db0}/order-1"), Some(&alice), None).await.body;
    put(
        &s,
        &alice,
        &db0,
        "order-1",
        json!({"_rev": first["_rev"], "type": "order", "status": "paid", "totalCents": 500}),
    )
    .await;

    s.advance_days(1.0).await;
    let admin = s.token("admin").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    s.run_cron(&admin, "rolling-db-archive").await;
    let backup = s.run_cron(&admin, "rolling-db-backup").await;
    assert!(backup["log"].to_string().contains(&format!("snapshots [{db0}@")), "{backup}");
    let again = s.run_cron(&admin, "rolling-db-backup").await;
    assert!(
        again["log"].to_string().contains(&format!("unchanged [{db0}")),
        "an unchanged database is not snapshotted twice: {again}"
    );

    s.advance_days(31.0).await;
    let admin = s.token("admin").await;
    let c = s.get("/admin/rolling-db/tenants/acme/cleanup-candidates", Some(&admin)).await.body;
    assert_eq!(
        (candidate(&c, &db0)["backedUp"].clone(), candidate(&c, &db0)["eligible"].clone()),
        (json!(true), json!(true)),
        "{c}"
    );
    let before = docs(&s, &db0);
    assert_eq!(before.len(), 2);
    assert!(before.iter().any(|(id, rev, _)| id == "order-1" && rev.starts_with("2-")));
    let eval = s.run_cron(&admin, "rolling-db-drop-eval").await;
    assert!(eval["log"].to_string().contains(&format!("dropped [{db0}")), "{eval}");
    assert!(!docdb::exists(&s.state.store.lock().unwrap(), &db0).unwrap());

    // The operator's restore, as a command on the same data (the server stays up).
    let out = Command::new(env!("CARGO_BIN_EXE_mock-server"))
        .args(["restore", &db0])
        .env("DATA_DIR", &data)
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.contains(&format!("restored {db0} (2 documents)")), "{said}");
    assert_eq!(docs(&s, &db0), before, "the same documents with the same revisions");
    let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    let day = topo["days"].as_array().unwrap().iter().find(|d| d["name"] == db0.as_str()).cloned().unwrap();
    assert_eq!(day["status"], "ARCHIVED");
    let audit = s.get("/admin/audit?companyId=acme&limit=1", Some(&admin)).await.body;
    assert_eq!(audit["entries"][0]["action"], "day.restore");

    // Restoring over a live database is refused, and so is a name that is no day database.
    let twice = Command::new(env!("CARGO_BIN_EXE_mock-server"))
        .args(["restore", &db0])
        .env("DATA_DIR", &data)
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(
        !twice.status.success() && String::from_utf8_lossy(&twice.stderr).contains("exists"),
        "{}",
        String::from_utf8_lossy(&twice.stderr)
    );
    let unknown = Command::new(env!("CARGO_BIN_EXE_mock-server"))
        .args(["restore", "daily_dev_acme_main_19990101"])
        .env("DATA_DIR", &data)
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(
        !unknown.status.success() && String::from_utf8_lossy(&unknown.stderr).contains("no day database"),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );

    // The restored day is held: a later morning of crons past the TTL (archive, backup, drop
    // evaluation) leaves it there with the same revisions, until an operator releases it.
    let held = docs(&s, &db0);
    let c = s.get("/admin/rolling-db/tenants/acme/cleanup-candidates", Some(&admin)).await.body;
    assert_eq!(
        (candidate(&c, &db0)["held"].clone(), candidate(&c, &db0)["eligible"].clone()),
        (json!(true), json!(false)),
        "{c}"
    );
    let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert!(topo["days"].as_array().unwrap().iter().any(|d| d["name"] == db0.as_str() && d["held"] == true), "{topo}");
    s.advance_days(2.0).await;
    let admin = s.token("admin").await;
    for cron in ["rolling-db-archive", "rolling-db-backup", "rolling-db-drop-eval"] {
        let run = s.run_cron(&admin, cron).await;
        assert_eq!(run["status"], "succeeded", "{cron}: {run}");
    }
    assert_eq!(docs(&s, &db0), held, "still there, the same documents and revisions");
    let c = s.get("/admin/rolling-db/tenants/acme/cleanup-candidates", Some(&admin)).await.body;
    let kept = candidate(&c, &db0);
    assert_eq!(
        (kept["backedUp"].clone(), kept["reconciled"].clone(), kept["held"].clone(), kept["eligible"].clone()),
        (json!(true), json!(true), json!(true), json!(false)),
        "{c}"
    );
    // Released by sys_admin only, audited; then the usual locks apply again.
    let release = format!("/admin/rolling-db/tenants/acme/days/{db0}/release");
    let keys = s.token("keys").await;
    assert_error(&s.post(&release, Some(&keys), json!({})).await, 403, "forbidden");
    assert_error(
        &s.post("/admin/rolling-db/tenants/globex/days/nope/release", Some(&admin), json!({})).await,
        404,
        "not_found",
    );
    assert_eq!(
        s.post(&release, Some(&admin), json!({})).await.body,
        json!({"companyId": "acme", "db": db0, "held": false})
    );
    assert_error(&s.post(&release, Some(&admin), json!({})).await, 404, "not_found");
    let audit = s.get("/admin/audit?companyId=acme&limit=1", Some(&admin)).await.body;
    assert_eq!(audit["entries"][0]["action"], "day.release", "{audit}");
    let eval = s.run_cron(&admin, "rolling-db-drop-eval").await;
    assert!(eval["log"].to_string().contains(&format!("dropped [{db0}")), "{eval}");

    // A write after the newest snapshot makes it stale: the fourth lock opens only at the next backup.
    s.run_cron(&admin, "rolling-db-rotate").await;
    s.run_cron(&admin, "rolling-db-backup").await;
    let db1 = format!("daily_dev_acme_main_{}", day_of(s.now()));
    let c = s.get("/admin/rolling-db/tenants/acme/cleanup-candidates", Some(&admin)).await.body;
    assert_eq!(candidate(&c, &db1)["backedUp"], true, "{c}");
    put(&s, &s.token("alice").await, &db1, "late", json!({"type": "note"})).await;
    let c = s.get("/admin/rolling-db/tenants/acme/cleanup-candidates", Some(&admin)).await.body;
    assert_eq!(candidate(&c, &db1)["backedUp"], false, "{c}");
    let _ = std::fs::remove_dir_all(&data);
}

/// A re-warm keeps a way back: CORE's documents written since its warm are counted and must be
/// confirmed, CORE is snapshotted (verified) before it is dropped, and `mock-server restore`
/// brings that CORE back with the same documents and revisions.
#[tokio::test]
async fn a_rewarm_snapshots_core_and_refuses_unconfirmed_edits() {
    let data = std::env::temp_dir().join(mock_server::auth::secrets::random_id("rewarm-test"));
    let s = spawn_with(Settings { test_controls: true, data_dir: Some(data.clone()), ..Settings::default() }).await;
    let admin = s.token("admin").await;
    s.patch("/admin/rolling-db/flags/acme?force=true", Some(&admin), json!({"rollingDb": true})).await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let core = "dev_acme_main_core";
    // An edit of a warmed document and a new one, written in CORE by a catalogue writer.
    let first = docs(&s, core).into_iter().next().unwrap();
    put(&s, &admin, core, &first.0, json!({"_rev": first.1, "class": "STATIC", "type": "product", "name": "edited"}))
        .await;
    put(&s, &admin, core, "product-new", json!({"class": "STATIC", "type": "product", "name": "new"})).await;
    let before = docs(&s, core);
    let rewarm = |query: &'static str| {
        let (s, admin) = (&s, admin.clone());
        async move {
            s.post(&format!("/admin/rolling-db/tenants/acme/rewarm{query}"), Some(&admin), json!({"invalidate": true}))
                .await
        }
    };
    let refused = rewarm("").await;
    assert_error(&refused, 409, "core_edited");
    assert_eq!(refused.body["checks"]["count"], 2, "{:?}", refused.body);
    let ids = refused.body["checks"]["ids"].as_array().unwrap();
    assert!(ids.contains(&json!(first.0)) && ids.contains(&json!("product-new")), "{ids:?}");
    assert!(refused.body["message"].as_str().unwrap().contains("?confirm=2"), "{:?}", refused.body);
    assert_error(&rewarm("?confirm=1").await, 409, "core_edited");
    assert_eq!(docs(&s, core), before, "a refusal drops nothing");

    let done = rewarm("?confirm=2").await;
    assert_eq!(done.status, reqwest::StatusCode::OK, "{:?}", done.body);
    assert_eq!(
        (done.body["editedSinceWarm"].clone(), done.body["snapshot"]["docCount"].clone()),
        (json!(2), json!(before.len())),
        "{:?}",
        done.body
    );
    let audit = s.get("/admin/audit?companyId=acme&limit=1", Some(&admin)).await.body;
    assert_eq!(audit["entries"][0]["detail"]["snapshot"]["snapshotId"], done.body["snapshot"]["snapshotId"], "{audit}");
    assert!(!docdb::exists(&s.state.store.lock().unwrap(), core).unwrap());

    let out = Command::new(env!("CARGO_BIN_EXE_mock-server"))
        .args(["restore", core])
        .env("DATA_DIR", &data)
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.contains(&format!("{core} is back")), "{said}");
    assert_eq!(docs(&s, core), before, "CORE back with the same documents and revisions");
    let _ = std::fs::remove_dir_all(&data);
}

/// With `DATA_DIR` on disk the test clock is kept with the data: a server restarted after "+7 days"
/// (the demo's button, or days moved before a restore) is on the same day as its databases.
#[tokio::test]
async fn the_test_clock_survives_a_restart_with_the_data() {
    let data = std::env::temp_dir().join(mock_server::auth::secrets::random_id("clock-test"));
    let settings = || Settings { test_controls: true, data_dir: Some(data.clone()), ..Settings::default() };
    let first = spawn_with(settings()).await;
    first.advance_days(7.0).await;
    let moved = first.now();
    drop(first);
    let second = spawn_with(settings()).await;
    let now = second.now();
    assert!(now >= moved && now - moved < 60_000, "moved to {moved}, the restarted server says {now}");
    // A reset goes back to today, and stays there across a restart too.
    second.post("/__mock/reset", None, json!({})).await;
    drop(second);
    let third = spawn_with(settings()).await;
    assert!(third.now() < moved - 6 * 86_400_000, "back to today");
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn snapshots_verify_against_their_manifest_and_the_newest_thirty_are_kept() {
    let dir = std::env::temp_dir().join(mock_server::auth::secrets::random_id("snapshots"));
    let db = "daily_dev_acme_main_20300101";
    let doc = |n: u64| json!({"_id": format!("order-{n}"), "_rev": format!("1-{n:032x}"), "type": "order"});
    let mut ids = Vec::new();
    for n in 0..32u64 {
        ids.push(backups::write(&dir, db, 1_000 + n as i64, n, &[doc(n)]).unwrap().snapshot_id);
    }
    let newest = backups::list(&dir, db).unwrap().pop().unwrap();
    assert_eq!(backups::read_verified(&dir, &newest).unwrap(), vec![doc(31)]);
    // A snapshot cut short (its data without a manifest) is no snapshot, and goes at the prune.
    std::fs::write(dir.join(db).join("0000000009999-99.json.gz"), b"partial").unwrap();
    assert_eq!(backups::list(&dir, db).unwrap().len(), 32);
    assert_eq!(backups::prune(&dir, db, 30).unwrap(), ids[..2].to_vec(), "the two oldest go, and are named");
    let kept = backups::list(&dir, db).unwrap();
    assert_eq!(kept.iter().map(|m| m.snapshot_id.clone()).collect::<Vec<_>>(), ids[2..].to_vec());
    assert_eq!(std::fs::read_dir(dir.join(db)).unwrap().count(), 60, "30 data files and 30 manifests, nothing else");
    // A damaged data file fails its verification.
    let path = dir.join(db).join(format!("{}.json.gz", newest.snapshot_id));
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 12;
    bytes[last] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    assert!(backups::read_verified(&dir, &newest).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the cron alerts join on: a cron this server does not schedule (`BACKUP_ENABLED` off) but
/// run once by hand has its success timestamp and no `cron_scheduled` of 1, so the alert rules
/// (their promtool case) expect nothing of it, however long ago that run was.
#[tokio::test]
async fn a_cron_run_by_hand_but_not_scheduled_here_is_told_apart() {
    let s = spawn_with(Settings { test_controls: true, backup_enabled: false, ..Settings::default() }).await;
    let target = common::prom::metrics_listener(&s).await;
    let admin = s.token("admin").await;
    s.run_cron(&admin, "rolling-db-backup").await;
    let series = |name: &str, cron: &str| common::prom::scraped(&target, format!("{name}{{cron=\"{cron}\"}}"));
    assert!(series("cron_last_success_timestamp_seconds", "rolling-db-backup").await > 0.0, "the run by hand");
    assert_eq!(series("cron_last_run_succeeded", "rolling-db-backup").await, 1.0);
    assert_eq!(series("cron_scheduled", "rolling-db-backup").await, 0.0, "not scheduled here");
    assert_eq!(series("cron_scheduled", "rolling-db-rotate").await, 1.0);
}
