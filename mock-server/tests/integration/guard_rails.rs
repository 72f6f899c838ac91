//! The runbook as guard rails: the preflight of each flag, refusals that name the failing
//! prerequisite and change nothing, the forced path (sys_admin only, audited), and the rollback
//! alarm of a reconciliation that regresses.

use crate::common;

use common::{assert_error, spawn, spawn_with, Server};
use mock_server::settings::Settings;
use serde_json::{json, Value};

fn checks(block: &Value) -> Vec<(String, bool)> {
    block["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["check"].as_str().unwrap().to_owned(), c["ok"].as_bool().unwrap()))
        .collect()
}

async fn tenant(s: &Server, admin: &str, id: &str) -> Value {
    let fleet = s.get("/admin/rolling-db/tenants", Some(admin)).await.body;
    fleet["tenants"].as_array().unwrap().iter().find(|t| t["companyId"] == id).unwrap().clone()
}

#[tokio::test]
async fn the_preflight_answers_every_check_with_its_detail_and_runbook_step() {
    let s = spawn().await;
    let keys = s.token("keys").await;
    let p = s.get("/admin/rolling-db/tenants/acme/preflight", Some(&keys)).await;
    assert_eq!(p.status, 200, "key_manager may read it: {:?}", p.body);
    let on = &p.body["rollingDb"];
    assert_eq!(checks(on), [("schema".into(), true), ("headroom".into(), true), ("sdk_adoption".into(), true)]);
    assert_eq!(on["ready"], true);
    for c in on["checks"].as_array().unwrap() {
        assert!(!c["detail"].as_str().unwrap().is_empty() && !c["runbookStep"].as_str().unwrap().is_empty(), "{c}");
    }
    assert!(
        on["checks"][0]["detail"].as_str().unwrap().contains(mock_server::store::migrate::last_migration()),
        "{on}"
    );
    let drop = &p.body["rollingDbDrop"];
    assert_eq!(drop["ready"], false);
    assert_eq!(
        checks(drop),
        [
            ("rolling_db_on".into(), false),
            ("conflicts_enabled".into(), false),
            ("backups_enabled".into(), true),
            ("reconciliation_green".into(), false)
        ]
    );
    assert!(drop["checks"][3]["detail"].as_str().unwrap().contains("14 day(s) have no day database yet"), "{drop}");

    // Adoption is measured on the devices seen lately.
    let bob = s.token("bob").await;
    s.post("/auth/connect", Some(&bob), json!({"sdkVersion": "1.4.16"})).await;
    s.post("/auth/connect", Some(&bob), json!({"sdkVersion": "1.4.17"})).await;
    let globex = s.get("/admin/rolling-db/tenants/globex/preflight", Some(&keys)).await.body;
    let adoption = &globex["rollingDb"]["checks"][2];
    assert_eq!(adoption["ok"], false);
    assert!(
        adoption["detail"]
            .as_str()
            .unwrap()
            .starts_with("1 of 2 device(s) seen in the last 7 day(s) report SDK ≥ 1.4.17 (50%)"),
        "{adoption}"
    );

    assert_error(
        &s.get("/admin/rolling-db/tenants/acme/preflight", Some(&s.token("alice").await)).await,
        403,
        "forbidden",
    );
    assert_error(&s.get("/admin/rolling-db/tenants/nosuch/preflight", Some(&keys)).await, 404, "unknown_tenant");
}

#[tokio::test]
async fn a_store_behind_the_last_migration_refuses_rolling_db() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    s.state
        .store
        .lock()
        .unwrap()
        .execute("DELETE FROM __drizzle_migrations WHERE id = (SELECT MAX(id) FROM __drizzle_migrations)", [])
        .unwrap();
    let refused = s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": true})).await;
    assert_error(&refused, 409, "schema_behind");
    assert_eq!(refused.body["checks"].as_array().unwrap().len(), 1, "only the failing checks: {:?}", refused.body);
    assert_eq!(tenant(&s, &admin, "acme").await["rollingDb"], false);
}

#[tokio::test]
async fn the_runbook_walk_with_the_rails_in_place() {
    // Conflicts on, two green days needed.
    let s = spawn_with(Settings {
        test_controls: true,
        conflicts_enabled: true,
        drop_green_days: 2,
        ..Settings::default()
    })
    .await;
    let admin = s.token("admin").await;
    let keys = s.token("keys").await;
    // Canary on, rotate.
    let on = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDb": true})).await;
    assert_eq!(on.body["rollingDb"], true, "{:?}", on.body);
    s.run_cron(&admin, "rolling-db-rotate").await;
    // The drop is refused until two past days are archived green, on the test clock.
    for day in 0..2 {
        let (keys, admin) = (s.token("keys").await, s.token("admin").await);
        let refused = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDbDrop": true})).await;
        assert_error(&refused, 409, "reconciliation_not_green");
        assert_eq!(tenant(&s, &admin, "acme").await["rollingDbDrop"], false, "day {day}: nothing changed");
        s.advance_days(1.0).await;
        let admin = s.token("admin").await;
        s.run_cron(&admin, "rolling-db-rotate").await;
        let archive = s.run_cron(&admin, "rolling-db-archive").await;
        assert_eq!(archive["status"], "succeeded", "{archive}");
    }
    let keys = s.token("keys").await;
    let allowed = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDbDrop": true})).await;
    assert_eq!(allowed.body["rollingDbDrop"], true, "{:?}", allowed.body);
    let admin = s.token("admin").await;
    let audit = s.get("/admin/audit?companyId=acme&limit=1", Some(&admin)).await.body;
    assert_eq!(
        (audit["entries"][0]["action"].clone(), audit["entries"][0]["detail"]["overridden"].clone()),
        (json!("flags.change"), json!([]))
    );
}

#[tokio::test]
async fn a_reconciliation_that_regresses_raises_the_rollback_alarm_until_the_rollback() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": true})).await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let day0 = mock_server::docdb::naming::day_of(s.now());
    let db0 = format!("daily_dev_acme_main_{day0}");
    let alice = s.token("alice").await;
    let put = s
        .call(
            reqwest::Method::PUT,
            &format!("/docdb/{db0}/order-1"),
            Some(&alice),
            Some(json!({"type": "order", "class": "DYNAMIC", "status": "paid"})),
        )
        .await;
    assert_eq!(put.status, 200, "{:?}", put.body);
    s.advance_days(1.0).await;
    let admin = s.token("admin").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    s.run_cron(&admin, "rolling-db-archive").await;
    assert!(tenant(&s, &admin, "acme").await["attention"].is_null());

    // After the archive, a paid order vanishes from the day database: a loss of orders.
    mock_server::docdb::drop_database(&s.state.cluster(&s.state.store.lock().unwrap()), &db0).ok();
    s.state
        .store
        .lock()
        .unwrap()
        .execute(
            "INSERT INTO docdb_databases (name, company_id, kind, created_at) VALUES (?1, 'acme', 'day', 0)",
            [&db0],
        )
        .unwrap();
    let run = s.run_cron(&admin, "rolling-db-archive").await;
    assert!(run["log"].to_string().contains("REGRESSED since reconciled"), "{run}");
    let attention = tenant(&s, &admin, "acme").await["attention"].clone();
    assert_eq!(attention["alarms"][0]["kind"], "reconciliation-regressed", "{attention}");
    assert_eq!(attention["alarms"][0]["subject"], db0.as_str());
    assert!(attention["instruction"].as_str().unwrap().starts_with("Roll back now"));
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    assert_eq!(cluster["attention"][0]["companyId"], "acme", "{}", cluster["attention"]);

    // The rollback clears it.
    s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": false})).await;
    assert!(tenant(&s, &admin, "acme").await["attention"].is_null());
    assert_eq!(s.get("/admin/rolling-db/cluster", Some(&admin)).await.body["attention"], json!([]));
}

#[tokio::test]
async fn a_loss_still_there_after_the_rollback_asks_for_the_restore_until_the_day_is_whole() {
    lost_after_the_rollback(spawn().await).await;
}

// Several workers: the server seeds its engine at start-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_day_is_restored_on_pouchdb_server_too() {
    let engine = common::engine::Engine::start().await;
    let url = mock_server::docdb::engine::EngineUrl::parse(&engine.url_with_credentials()).unwrap();
    lost_after_the_rollback(
        spawn_with(Settings { test_controls: true, docdb_url: Some(url), ..Settings::default() }).await,
    )
    .await;
}

/// An order's row lost after its day's archive: "roll back now" while rolling; once rolled back,
/// the restore asked for until the day, restored from its snapshot, is found whole.
async fn lost_after_the_rollback(s: Server) {
    let admin = s.token("admin").await;
    s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": true})).await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let db0 = format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(s.now()));
    let alice = s.token("alice").await;
    let order = json!({"type": "order", "class": "DYNAMIC", "status": "paid", "totalCents": 1250});
    let put = s.call(reqwest::Method::PUT, &format!("/docdb/{db0}/order-1"), Some(&alice), Some(order)).await;
    assert!(put.status.is_success(), "{:?}", put.body);
    s.advance_days(1.0).await;
    let admin = s.token("admin").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    s.run_cron(&admin, "rolling-db-archive").await;
    s.run_cron(&admin, "rolling-db-backup").await;
    assert!(tenant(&s, &admin, "acme").await["attention"].is_null());

    // The relational store loses the order's row the archive took: roll back now.
    let row = mock_server::store::relational_archive::row_id(&db0, "order-1");
    assert_eq!(s.state.store.lock().unwrap().execute("DELETE FROM orders WHERE id = ?1", [&row]).unwrap(), 1);
    s.run_cron(&admin, "rolling-db-archive").await;
    let attention = tenant(&s, &admin, "acme").await["attention"].clone();
    assert_eq!(attention["alarms"][0]["kind"], "reconciliation-regressed", "{attention}");
    assert!(attention["instruction"].as_str().unwrap().starts_with("Roll back now"), "{attention}");
    s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": false})).await;
    assert!(tenant(&s, &admin, "acme").await["attention"].is_null());

    // Rolled back, the loss is still there: the next archive run says what to do now.
    s.run_cron(&admin, "rolling-db-archive").await;
    let attention = tenant(&s, &admin, "acme").await["attention"].clone();
    let kinds: Vec<&Value> = attention["alarms"].as_array().unwrap().iter().map(|a| &a["kind"]).collect();
    assert_eq!(kinds, [&json!("archived-day-lost")], "{attention}");
    assert_eq!(attention["alarms"][0]["subject"], db0.as_str());
    let told = attention["instruction"].as_str().unwrap();
    assert!(told.starts_with("Restore the day") && !told.contains("Roll back"), "{told}");
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    assert_eq!(cluster["attention"][0]["instruction"], told, "{}", cluster["attention"]);
    // Another run does not tell it otherwise.
    s.run_cron(&admin, "rolling-db-archive").await;
    assert_eq!(tenant(&s, &admin, "acme").await["attention"]["instruction"], told);

    // The restore it asks for: the day from its snapshot, then the next archive run finds it whole.
    let dir = mock_server::rolling::RollingSettings::from(&*s.state.settings).backup_dir;
    let restore = |now| {
        let conn = s.state.store.lock().unwrap();
        let restored =
            mock_server::rolling::backup::restore_audited(&s.state.cluster(&conn), &dir, "dev", &db0, None, now);
        restored
    };
    let restored = restore(s.now()).expect("the lost day restored from its snapshot");
    assert_eq!((restored.db.as_str(), restored.company_id.as_str()), (db0.as_str(), "acme"));
    assert!(
        s.state
            .store
            .lock()
            .unwrap()
            .query_row("SELECT COUNT(*) FROM orders WHERE id = ?1", [&row], |r| r.get::<_, i64>(0))
            .unwrap()
            == 1
    );
    s.run_cron(&admin, "rolling-db-archive").await;
    assert!(tenant(&s, &admin, "acme").await["attention"].is_null());
    // A day whole, with no loss to put back, is live data: a restore never mixes into it.
    assert!(restore(s.now()).is_err());
}
