//! The runbook, walked against the mock server: all-off parity, canary activation, idempotent
//! rotate, archive and the drop after the TTL and three locks, rollback, and the guards.

use crate::common;

use common::{assert_error, spawn, spawn_with, ws, Server};
use mock_server::docdb::naming::day_of;
use mock_server::settings::Settings;
use reqwest::StatusCode;
use serde_json::{json, Value};

const READS: [&str; 5] = [
    "/admin/rolling-db/cluster",
    "/admin/rolling-db/tenants",
    "/admin/rolling-db/tenants/acme/reconciliation",
    "/admin/rolling-db/tenants/acme/cleanup-candidates",
    "/admin/rolling-db/tenants/acme/topology",
];

fn database<'a>(cluster: &'a Value, name: &str) -> Option<&'a Value> {
    cluster["databases"].as_array().unwrap().iter().find(|d| d["name"] == name)
}

async fn tenant(s: &Server, admin: &str, id: &str) -> Value {
    let fleet = s.get("/admin/rolling-db/tenants", Some(admin)).await.body;
    fleet["tenants"].as_array().unwrap().iter().find(|t| t["companyId"] == id).unwrap().clone()
}

async fn enable(s: &Server, token: &str, id: &str) {
    let a = s.patch(&format!("/admin/rolling-db/flags/{id}"), Some(token), json!({"rollingDb": true})).await;
    assert_eq!(a.status, StatusCode::OK, "{:?}", a.body);
}

#[tokio::test]
async fn all_flags_off_is_parity() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let keys = s.token("keys").await;
    let alice = s.token("alice").await;
    for path in READS {
        assert_eq!(s.get(path, Some(&admin)).await.status, StatusCode::OK, "{path}");
        assert_error(&s.get(path, Some(&alice)).await, 403, "forbidden");
        assert_error(&s.get(path, Some(&keys)).await, 403, "forbidden");
        assert_error(&s.get(path, None).await, 401, "missing_token");
    }
    // Reads need sys_admin, the crons' state too (crons:read); key_manager runs them (crons:run)
    // and is told which exist, their state null.
    let listed = s.get("/admin/crons", Some(&keys)).await;
    assert_eq!(listed.status, StatusCode::OK);
    let names: Vec<&str> =
        listed.body["crons"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, protocol::ops::CRONS.map(|c| c.name));
    assert!(
        listed.body["crons"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["schedule"].is_null() && c["lastResult"].is_null() && c["running"].is_null()),
        "{}",
        listed.body
    );
    assert_error(&s.get("/admin/crons", Some(&alice)).await, 403, "forbidden");
    let health = s.get("/health", None).await;
    assert_eq!(health.body, json!({"status": "ok", "db": true}));
    let fleet = s.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
    let tenants = fleet["tenants"].as_array().unwrap();
    assert_eq!(tenants.len(), 3);
    for t in tenants {
        assert_eq!(
            (t["rollingDb"].clone(), t["rollingDbDrop"].clone(), t["coreExists"].clone(), t["dayDatabases"].clone()),
            (json!(false), json!(false), json!(false), json!(0))
        );
    }
    let crons = s.get("/admin/crons", Some(&admin)).await.body;
    let names: Vec<&str> = crons["crons"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["rolling-db-rotate", "rolling-db-drop-eval", "rolling-db-archive", "rolling-db-backup", "session-prune"]
    );
    assert_eq!(crons["crons"][0]["schedule"], "05:00");
    assert_eq!(crons["crons"][1]["schedule"], "04:00");
    assert!(crons["crons"][0]["nextRunAt"].as_i64().unwrap() > s.now());

    let run = s.run_cron(&keys, "rolling-db-rotate").await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["log"][0], "rotate-cycle 0 tenant(s) rolling-enabled");
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    assert_eq!(cluster["maxDbsOpen"], 5000);
    assert_eq!(cluster["openDbs"], 3, "only the legacy catalogues: {cluster}");
    assert!(cluster["databases"].as_array().unwrap().iter().all(|d| d["kind"] == "legacy"));
    // Legacy behaviour: a single database and the daily invalidation.
    assert_eq!(s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body["database"], "legacy");
    let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert_eq!(topo["invalidation"]["reason"], "invalidate_daily");
    let boot = s.get("/bootstrap?database=legacy", Some(&alice)).await;
    assert_eq!(
        (boot.body["database"].clone(), boot.body["db"].clone()),
        (json!("legacy"), json!("dev_acme_main_catalog"))
    );
    assert_eq!(boot.body["docs"].as_array().unwrap().len(), 17);
    assert_error(&s.get("/bootstrap?database=core", Some(&alice)).await, 404, "core_missing");
    assert_error(&s.get("/bootstrap?database=elsewhere", Some(&alice)).await, 400, "bad_request");
    assert_error(&s.get("/bootstrap", None).await, 401, "missing_token");
}

#[tokio::test]
async fn canary_activation_then_an_idempotent_second_rotate() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let keys = s.token("keys").await;
    let alice = s.token("alice").await;
    let before = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;

    let flags = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDb": true})).await;
    assert_eq!(flags.status, StatusCode::OK);
    assert_eq!(
        (flags.body["companyId"].clone(), flags.body["rollingDb"].clone(), flags.body["rollingDbDrop"].clone()),
        (json!("acme"), json!(true), json!(false))
    );
    assert_eq!(flags.body["updatedBy"], "user-keys");
    assert!(flags.body["updatedAt"].as_i64().is_some());
    // A flag alone changes nothing until the rotate runs.
    assert_eq!(s.get("/admin/rolling-db/cluster", Some(&admin)).await.body, before);
    assert_eq!(s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body["database"], "legacy");

    let run = s.run_cron(&keys, "rolling-db-rotate").await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["log"][0], "rotate-cycle 1 tenant(s) rolling-enabled");
    assert_eq!(run["progress"]["done"], run["progress"]["total"]);
    let today = day_of(s.now());
    let tomorrow = mock_server::docdb::naming::next_day(&today);
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    let core = database(&cluster, "dev_acme_main_core").expect("CORE exists");
    let legacy = database(&cluster, "dev_acme_main_catalog").unwrap();
    assert_eq!(core["kind"], "core");
    assert_eq!(core["docCount"], 17, "the STATIC catalogue");
    assert_eq!(core["updateSeq"], core["docCount"], "fresh revisions: no inherited update sequence");
    assert!(legacy["updateSeq"].as_u64().unwrap() > 2 * legacy["docCount"].as_u64().unwrap());
    assert_eq!(database(&cluster, &format!("daily_dev_acme_main_{today}")).unwrap()["status"], "ACTIVE");
    assert_eq!(database(&cluster, &format!("daily_dev_acme_main_{tomorrow}")).unwrap()["status"], "PREWARMED");
    assert!(database(&cluster, "dev_globex_main_core").is_none(), "non-canary tenants untouched");
    let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert_eq!(topo["database"], "core");
    assert_eq!(topo["invalidation"]["reason"], "rolling-db-cutover");
    assert_eq!(topo["invalidation"]["routing"], "core");
    assert_eq!(topo["manifest"]["today"], format!("daily_dev_acme_main_{today}"));
    assert_eq!(topo["core"]["indexes"], json!(["type", "type,name"]));
    let invalidated_at = topo["invalidation"]["invalidatedAt"].clone();
    assert_eq!(s.get("/admin/rolling-db/tenants/globex/topology", Some(&admin)).await.body["database"], "legacy");
    let acme = tenant(&s, &admin, "acme").await;
    assert_eq!((acme["coreExists"].clone(), acme["dayDatabases"].clone()), (json!(true), json!(2)));
    assert_eq!(s.get("/admin/rolling-db/tenants/acme/reconciliation", Some(&admin)).await.body["diff"], 0);

    let boot = s.get("/bootstrap?database=core", Some(&alice)).await.body;
    assert_eq!(
        (boot["database"].clone(), boot["db"].clone(), boot["updateSeq"].clone()),
        (json!("core"), json!("dev_acme_main_core"), json!(17))
    );
    let docs = boot["docs"].as_array().unwrap();
    assert_eq!(docs.len(), 17);
    assert!(docs.iter().all(|d| d["_rev"].as_str().unwrap().starts_with("1-")), "fresh revisions");

    // The same day again: nothing new.
    let again = s.run_cron(&keys, "rolling-db-rotate").await;
    assert_eq!(again["status"], "succeeded");
    assert!(again["log"][1].as_str().unwrap().contains("warm is a no-op"), "{again}");
    assert_eq!(s.get("/admin/rolling-db/cluster", Some(&admin)).await.body, cluster);
    let topo2 = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert_eq!(topo2["invalidation"]["invalidatedAt"], invalidated_at, "no second invalidation");
}

#[tokio::test]
async fn flag_changes_follow_the_rules_and_bad_input_changes_nothing() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let alice = s.token("alice").await;
    let path = "/admin/rolling-db/flags/acme";
    assert_error(&s.patch(path, Some(&admin), json!({"rollingDb": "yes"})).await, 400, "invalid_body");
    assert_error(&s.patch(path, Some(&admin), json!({"rollingDb": 1})).await, 400, "invalid_body");
    assert_error(&s.patch(path, Some(&admin), json!({"rollingDb": true, "extra": true})).await, 400, "invalid_body");
    assert_error(&s.patch(path, Some(&admin), json!([true])).await, 400, "invalid_body");
    assert_error(&s.patch(path, Some(&admin), json!({})).await, 400, "bad_request");
    let raw = s
        .client
        .patch(format!("{}{path}", s.base))
        .bearer_auth(&admin)
        .header("content-type", "application/json")
        .body("{\"rollingDb\": tru")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 400);
    assert_eq!(raw.json::<Value>().await.unwrap()["error"], "malformed_json");
    let big = format!("{{\"rollingDb\": true, \"pad\": \"{}\"}}", "x".repeat(70_000));
    let raw = s
        .client
        .patch(format!("{}{path}", s.base))
        .bearer_auth(&admin)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 413);
    assert_error(
        &s.patch("/admin/rolling-db/flags/nosuch", Some(&admin), json!({"rollingDb": true})).await,
        404,
        "unknown_tenant",
    );
    assert_error(&s.patch(path, Some(&alice), json!({"rollingDb": true})).await, 403, "forbidden");
    assert_error(&s.patch(path, None, json!({"rollingDb": true})).await, 401, "missing_token");
    assert_error(&s.patch(path, Some(&admin), json!({"rollingDbDrop": true})).await, 409, "drop_requires_rolling_db");
    assert_error(
        &s.patch(&format!("{path}?force=maybe"), Some(&admin), json!({"rollingDb": true})).await,
        400,
        "bad_request",
    );
    assert_eq!(tenant(&s, &admin, "acme").await["rollingDb"], false, "nothing changed");

    // The drop's prerequisites (CONFLICTS_ENABLED, green reconciliation) are not met: refused
    // with every failing check listed, nothing changed; sys_admin may force it.
    let refused = s.patch(path, Some(&admin), json!({"rollingDb": true, "rollingDbDrop": true})).await;
    assert_error(&refused, 409, "conflicts_disabled");
    let failing: Vec<&str> =
        refused.body["checks"].as_array().unwrap().iter().map(|c| c["check"].as_str().unwrap()).collect();
    assert_eq!(failing, ["conflicts_enabled", "reconciliation_green"]);
    assert_eq!(tenant(&s, &admin, "acme").await["rollingDb"], false, "nothing changed, not even rollingDb");
    let both =
        s.patch(&format!("{path}?force=true"), Some(&admin), json!({"rollingDb": true, "rollingDbDrop": true})).await;
    assert_eq!((both.body["rollingDb"].clone(), both.body["rollingDbDrop"].clone()), (json!(true), json!(true)));
    let off = s.patch(path, Some(&admin), json!({"rollingDb": false})).await;
    assert_eq!(
        (off.body["rollingDb"].clone(), off.body["rollingDbDrop"].clone()),
        (json!(false), json!(false)),
        "rollingDb off clears drop"
    );

    // A device on an SDK without the cutover switch blocks enabling, unless forced.
    let bob = s.token("bob").await;
    s.post("/auth/connect", Some(&bob), json!({"sdkVersion": "1.4.16"})).await;
    s.post("/auth/connect", Some(&bob), json!({"sdkVersion": "1.4.17"})).await;
    let refused = s.patch("/admin/rolling-db/flags/globex", Some(&admin), json!({"rollingDb": true})).await;
    assert_error(&refused, 409, "sdk_too_old");
    assert!(refused.body["message"].as_str().unwrap().contains("1.4.16"));
    assert_eq!(tenant(&s, &admin, "globex").await["rollingDb"], false);
    let versions: Vec<Value> = tenant(&s, &admin, "globex").await["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["sdkVersion"].clone())
        .collect();
    assert_eq!(versions, vec![json!("1.4.16"), json!("1.4.17")]);
    let forced = s.patch("/admin/rolling-db/flags/globex?force=true", Some(&admin), json!({"rollingDb": true})).await;
    assert_eq!(forced.body["rollingDb"], true);
}

#[tokio::test]
async fn cron_and_invalidation_guards() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let alice = s.token("alice").await;
    assert_error(&s.post("/admin/crons/rolling-db-rotate/run", Some(&alice), json!({})).await, 403, "forbidden");
    assert_error(&s.post("/admin/crons/rolling-db-rotate/run", None, json!({})).await, 401, "missing_token");
    assert_error(&s.post("/admin/crons/nosuch/run", Some(&admin), json!({})).await, 404, "unknown_cron");
    assert_error(&s.get("/admin/crons/runs/nosuch", Some(&admin)).await, 404, "unknown_run");
    assert_error(&s.post("/admin/invalidate-clients/nosuch", Some(&admin), json!({})).await, 404, "unknown_tenant");
    assert_error(&s.post("/admin/invalidate-clients/acme", Some(&alice), json!({})).await, 403, "forbidden");
    assert_error(&s.get("/admin/rolling-db/tenants/nosuch/topology", Some(&admin)).await, 404, "unknown_tenant");
    let inv = s.post("/admin/invalidate-clients/acme", Some(&s.token("keys").await), json!({})).await;
    assert_eq!(inv.status, StatusCode::OK);
    assert_eq!(inv.body["companyId"], "acme");
    assert!(inv.body["invalidatedAt"].as_i64().unwrap() >= s.now() - 5_000);
}

#[tokio::test]
async fn a_run_in_progress_is_returned_never_doubled() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    enable(&s, &admin, "acme").await;
    enable(&s, &admin, "globex").await;
    s.post("/__mock/slow", None, json!({"stepDelayMs": 300})).await;
    let first = s.post("/admin/crons/rolling-db-rotate/run", Some(&admin), json!({})).await;
    let second = s.post("/admin/crons/rolling-db-rotate/run", Some(&admin), json!({})).await;
    assert_eq!(
        (first.body["alreadyRunning"].clone(), second.body["alreadyRunning"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(first.body["runId"], second.body["runId"]);
    let listing = s.get("/admin/crons", Some(&admin)).await.body;
    assert_eq!(listing["crons"][0]["running"], true);
    let done = s.wait_run(&admin, first.body["runId"].as_str().unwrap()).await;
    assert_eq!(done["status"], "succeeded");
    let listing = s.get("/admin/crons", Some(&admin)).await.body;
    assert_eq!(
        (listing["crons"][0]["running"].clone(), listing["crons"][0]["lastResult"].clone()),
        (json!(false), json!("succeeded"))
    );
}

#[tokio::test]
async fn a_rotate_without_headroom_is_refused_before_any_tenant_and_changes_nothing() {
    // acme and globex would each keep CORE and two day databases open and in use (6 handles):
    // over ROLLING_DB_MAX_OPEN=5. The 3 open legacy catalogues do not count: they are idle.
    let s = spawn_with(Settings { test_controls: true, rolling_db_max_open: 5, ..Settings::default() }).await;
    let admin = s.token("admin").await;
    enable(&s, &admin, "acme").await;
    // The flag's preflight sees it first; forced past it, the rotate checks again.
    let refused = s.patch("/admin/rolling-db/flags/globex", Some(&admin), json!({"rollingDb": true})).await;
    assert_error(&refused, 409, "no_headroom");
    assert!(
        refused.body["checks"][0]["detail"].as_str().unwrap().contains("6 handles in use once on"),
        "{:?}",
        refused.body
    );
    let forced = s.patch("/admin/rolling-db/flags/globex?force=true", Some(&admin), json!({"rollingDb": true})).await;
    assert_eq!(forced.body["rollingDb"], true);
    let run = s.run_cron(&admin, "rolling-db-rotate").await;
    assert_eq!(run["status"], "failed", "{run}");
    let log: Vec<&str> = run["log"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(
        log.iter().any(|l| l.contains("no headroom: the rotate keeps 6 database(s) open and in use (CORE, today, tomorrow for each of 2 tenant(s)), 0 more are in use by other tenants, ROLLING_DB_MAX_OPEN=5")),
        "{log:?}"
    );
    assert!(!log.iter().any(|l| l.starts_with("acme:") || l.starts_with("globex:")), "no tenant was touched: {log:?}");
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    assert_eq!((cluster["existingDbs"].clone(), cluster["inUseDbs"].clone()), (json!(3), json!(0)));
    assert_eq!(tenant(&s, &admin, "acme").await["dayDatabases"], 0);

    // With room for one tenant, its rotate goes ahead: 6 databases exist, 5 handles are open
    // (the idle legacy catalogue used least recently was closed), 3 of them in use.
    s.patch("/admin/rolling-db/flags/globex", Some(&admin), json!({"rollingDb": false})).await;
    let run = s.run_cron(&admin, "rolling-db-rotate").await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    assert_eq!(
        (cluster["existingDbs"].clone(), cluster["openDbs"].clone(), cluster["inUseDbs"].clone()),
        (json!(6), json!(5), json!(3)),
        "{cluster}"
    );
    let in_use: Vec<&str> = cluster["databases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["inUse"] == true)
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(in_use.iter().all(|n| n.contains("acme")) && in_use.iter().any(|n| n.ends_with("_core")), "{in_use:?}");
}

/// The run lists its tenants at its start; a tenant switched off before its turn is left as it
/// is: no CORE warmed, no day database, no invalidation, no "cut over" in the log.
#[tokio::test]
async fn a_tenant_switched_off_during_a_rotate_is_not_rotated() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    enable(&s, &admin, "acme").await;
    let listed = mock_server::rolling::flags::rolling_tenants(&s.state.store.lock().unwrap()).unwrap();
    assert!(listed.iter().any(|t| t == "acme"));
    let off = s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": false})).await;
    assert_eq!(off.status, 200, "{}", off.body);
    let settings = mock_server::rolling::RollingSettings::from(&*s.state.settings);
    let now = s.state.clock.now_ms();
    let rotation = {
        let conn = s.state.store.lock().unwrap();
        let acme = mock_server::rolling::tenants::get(&conn, "acme").unwrap();
        let rotated = mock_server::rolling::rotate::rotate_tenant(&s.state.cluster(&conn), &settings, &acme, now);
        rotated.unwrap()
    };
    assert!(rotation.skipped.is_some() && !rotation.invalidated && rotation.created_days.is_empty(), "{rotation:?}");
    let t = tenant(&s, &admin, "acme").await;
    assert_eq!((t["coreExists"].clone(), t["dayDatabases"].clone()), (json!(false), json!(0)), "{t}");
}

#[tokio::test]
async fn a_tenant_failing_inside_a_batch_changes_nothing_of_its_own_and_the_others_land() {
    // All three tenants go in one transaction (CRON_BATCH_SIZE 20). A corrupt document in
    // globex's catalogue fails its warm half-way (CORE already created): its savepoint rolls
    // that back, and acme and initech are rotated.
    let s = spawn().await;
    let admin = s.token("admin").await;
    for id in ["acme", "globex", "initech"] {
        enable(&s, &admin, id).await;
    }
    s.state
        .store
        .lock()
        .unwrap()
        .execute("UPDATE docdb_documents SET body = 'not json' WHERE db = 'dev_globex_main_catalog'", [])
        .unwrap();
    let run = s.run_cron(&admin, "rolling-db-rotate").await;
    assert_eq!(run["status"], "failed", "{run}");
    let log: Vec<&str> = run["log"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(log.iter().any(|l| l.starts_with("globex: failed, nothing changed")), "{log:?}");
    assert!(log.iter().any(|l| l.starts_with("summary: 2 tenant(s) done, 1 failed")), "{log:?}");
    for (id, rotated) in [("acme", true), ("globex", false), ("initech", true)] {
        let t = tenant(&s, &admin, id).await;
        assert_eq!(
            (t["coreExists"].clone(), t["dayDatabases"].clone()),
            if rotated { (json!(true), json!(2)) } else { (json!(false), json!(0)) },
            "{id}: {t}"
        );
    }
}

async fn put_doc(s: &Server, token: &str, db: &str, id: &str, body: Value) -> Value {
    let a = s.call(reqwest::Method::PUT, &format!("/docdb/{db}/{id}"), Some(token), Some(body)).await;
    assert_eq!(a.status, StatusCode::OK, "{:?}", a.body);
    a.body
}

#[tokio::test]
async fn archive_reconcile_and_drop_only_after_the_ttl_and_three_locks() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    enable(&s, &admin, "acme").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let day0 = day_of(s.now());
    let db0 = format!("daily_dev_acme_main_{day0}");
    let alice = s.token("alice").await;
    // A device writes today's orders into the day database; one stays open overnight.
    put_doc(
        &s,
        &alice,
        &db0,
        "order-1",
        json!({"type": "order", "class": "DYNAMIC", "status": "paid", "totalCents": 450}),
    )
    .await;
    let open = put_doc(
        &s,
        &alice,
        &db0,
        "order-2",
        json!({"type": "order", "class": "DYNAMIC", "status": "open", "totalCents": 260}),
    )
    .await;
    let bob = s.token("bob").await;
    assert_error(
        &s.call(reqwest::Method::PUT, &format!("/docdb/{db0}/x"), Some(&bob), Some(json!({}))).await,
        403,
        "forbidden",
    );
    assert_error(
        &s.call(reqwest::Method::PUT, &format!("/docdb/{db0}/order-1"), Some(&alice), Some(json!({"status": "void"})))
            .await,
        409,
        "conflict",
    );

    s.advance_days(1.0).await;
    let admin = s.token("admin").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let arch = s.run_cron(&admin, "rolling-db-archive").await;
    assert!(arch["log"].to_string().contains(&format!("still open [{db0}]")), "{arch}");
    let candidates = s.get("/admin/rolling-db/tenants/acme/cleanup-candidates", Some(&admin)).await.body;
    assert_eq!(candidates["candidates"][0]["drained"], false);

    // Yesterday's open order is still payable (the overlay), then the day drains.
    let alice = s.token("alice").await;
    put_doc(
        &s,
        &alice,
        &db0,
        "order-2",
        json!({"_rev": open["rev"], "type": "order", "class": "DYNAMIC", "status": "paid", "totalCents": 260}),
    )
    .await;
    let arch = s.run_cron(&admin, "rolling-db-archive").await;
    assert_eq!(arch["status"], "succeeded");
    let recon = s.get("/admin/rolling-db/tenants/acme/reconciliation", Some(&admin)).await.body;
    assert_eq!(recon["diff"], 0);
    assert_eq!(recon["days"][0]["name"], db0.as_str());
    assert_eq!(recon["days"][0]["status"], "ARCHIVED");
    let archived = s.get("/docdb/dev_acme_main_archive/_all_docs", Some(&alice)).await.body;
    let rows = archived["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(
        |r| r["doc"]["source_db"] == db0.as_str() && r["doc"]["source_db"].as_str().unwrap().starts_with("daily_")
    ));
    assert_error(
        &s.call(reqwest::Method::PUT, "/docdb/dev_acme_main_archive/x", Some(&alice), Some(json!({}))).await,
        403,
        "forbidden",
    );
    // The relational archive: the day's orders as rows, type by type, checksums equal.
    let orders = &recon["days"][0]["relational"][0];
    assert_eq!(
        (orders["type"].clone(), orders["dayCount"].clone(), orders["rowCount"].clone(), orders["diff"].clone()),
        (json!("order"), json!(2), json!(2), json!(0)),
        "{recon}"
    );
    assert_eq!(orders["dayChecksum"], orders["rowChecksum"]);
    assert_eq!(recon["days"][0]["relational"][1]["rowCount"], 0, "no sales that day");

    // The drop flag: its prerequisites are not met (CONFLICTS_ENABLED is off, one green day of
    // 14), so key_manager is refused and may not force; sys_admin forces it, audited with the
    // checks it overrode.
    let keys = s.token("keys").await;
    let refused = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDbDrop": true})).await;
    assert_error(&refused, 409, "conflicts_disabled");
    assert_error(
        &s.patch("/admin/rolling-db/flags/acme?force=true", Some(&keys), json!({"rollingDbDrop": true})).await,
        403,
        "forbidden",
    );
    let forced = s.patch("/admin/rolling-db/flags/acme?force=true", Some(&admin), json!({"rollingDbDrop": true})).await;
    assert_eq!(forced.body["rollingDbDrop"], true, "{:?}", forced.body);
    let audit = s.get("/admin/audit?companyId=acme&limit=1", Some(&admin)).await.body;
    let entry = &audit["entries"][0];
    assert_eq!(entry["action"], "flags.force");
    let overridden: Vec<&str> =
        entry["detail"]["overridden"].as_array().unwrap().iter().map(|c| c["check"].as_str().unwrap()).collect();
    assert_eq!(overridden, ["conflicts_enabled", "reconciliation_green"]);
    // On, but the day is one day old: nothing is dropped.
    let eval = s.run_cron(&admin, "rolling-db-drop-eval").await;
    assert!(eval["log"].to_string().contains("acme: nothing eligible"), "{eval}");
    // Exactly 30 days old is not older than the TTL.
    s.advance_days(29.0).await;
    let admin = s.token("admin").await;
    let c = s.get("/admin/rolling-db/tenants/acme/cleanup-candidates", Some(&admin)).await.body;
    assert_eq!(
        (c["candidates"][0]["ageDays"].clone(), c["candidates"][0]["eligible"].clone()),
        (json!(30), json!(false))
    );
    s.run_cron(&admin, "rolling-db-drop-eval").await;
    assert!(database(&s.get("/admin/rolling-db/cluster", Some(&admin)).await.body, &db0).is_some());

    s.advance_days(1.0).await;
    let admin = s.token("admin").await;
    // The fourth lock: no snapshot of it yet, so not eligible; the backup takes one.
    let c = s.get("/admin/rolling-db/tenants/acme/cleanup-candidates", Some(&admin)).await.body;
    assert_eq!(
        (c["candidates"][0]["backedUp"].clone(), c["candidates"][0]["eligible"].clone()),
        (json!(false), json!(false)),
        "{c}"
    );
    let backup = s.run_cron(&admin, "rolling-db-backup").await;
    assert!(backup["log"].to_string().contains(&format!("snapshots [{db0}@")), "{backup}");
    let c = s.get("/admin/rolling-db/tenants/acme/cleanup-candidates", Some(&admin)).await.body;
    let first = &c["candidates"][0];
    assert_eq!(
        (
            first["drained"].clone(),
            first["archived"].clone(),
            first["reconciled"].clone(),
            first["backedUp"].clone(),
            first["ageDays"].clone(),
            first["eligible"].clone()
        ),
        (json!(true), json!(true), json!(true), json!(true), json!(31), json!(true))
    );
    // The later days are as old but were never drained and archived: the locks hold them.
    assert!(c["candidates"].as_array().unwrap()[1..].iter().all(|d| d["eligible"] == false));
    let eval = s.run_cron(&admin, "rolling-db-drop-eval").await;
    assert!(eval["log"].to_string().contains(&format!("acme: dropped [{db0}]")), "{eval}");
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    assert!(database(&cluster, &db0).is_none(), "the cluster no longer lists it");
    assert!(
        eval["log"].to_string().contains(&format!(
            "{db0}: gone from the engine, replicator clean, relational store: 2 order(s), 0 sale(s)"
        )),
        "{eval}"
    );
    let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert_eq!(topo["days"][0]["status"], "DROPPED");
    // The runbook's checks after a drop, as fields an operator reads, and in the drop's audit entry.
    let after = &topo["days"][0]["afterDrop"];
    assert_eq!(
        (
            after["goneFromEngine"].clone(),
            after["replicatorClean"].clone(),
            after["relationalOrders"].clone(),
            after["relationalSales"].clone()
        ),
        (json!(true), json!(true), json!(2), json!(0)),
        "{topo}"
    );
    let audit = s.get("/admin/audit?companyId=acme&limit=1", Some(&admin)).await.body;
    assert_eq!(
        (audit["entries"][0]["action"].clone(), audit["entries"][0]["detail"]["after"].clone()),
        (json!("day.drop"), after.clone())
    );
    let alice = s.token("alice").await;
    assert_eq!(
        s.get("/docdb/dev_acme_main_archive/_all_docs", Some(&alice)).await.body["total_rows"],
        2,
        "its data stays in the archive"
    );
    let kept = mock_server::store::relational_archive::revisions(
        &s.state.store.lock().unwrap(),
        mock_server::store::relational_archive::Table::Orders,
        &db0,
    )
    .unwrap();
    assert_eq!(
        kept.iter().map(|(id, rev)| (id.as_str(), rev.starts_with("2-"))).collect::<Vec<_>>(),
        [("order-1", false), ("order-2", true)],
        "and its orders in the relational store"
    );

    // rollingDbDrop off stops the drops.
    let keys = s.token("keys").await;
    s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDbDrop": false})).await;
    s.run_cron(&admin, "rolling-db-archive").await;
    s.advance_days(40.0).await;
    let admin = s.token("admin").await;
    let eval = s.run_cron(&admin, "rolling-db-drop-eval").await;
    assert!(eval["log"].to_string().contains("acme: skipped (rollingDbDrop is off)"), "{eval}");
}

/// The relational archive is keyed by its source: a re-run writes no second row, a sale names its
/// order's row, and a row lost afterwards is a reconciliation regression (an alarm), not silence.
#[tokio::test]
async fn the_relational_archive_is_idempotent_and_reconciled() {
    use mock_server::store::relational_archive::{self as relational, Table};
    let s = spawn().await;
    let admin = s.token("admin").await;
    enable(&s, &admin, "acme").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let db0 = format!("daily_dev_acme_main_{}", day_of(s.now()));
    let alice = s.token("alice").await;
    put_doc(&s, &alice, &db0, "order-7", json!({"type": "order", "status": "paid", "totalCents": 990})).await;
    put_doc(&s, &alice, &db0, "sale-7", json!({"type": "sale", "orderId": "order-7", "amountCents": 990})).await;
    put_doc(&s, &alice, &db0, "note-1", json!({"type": "note"})).await;
    s.advance_days(1.0).await;
    let admin = s.token("admin").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    for _ in 0..2 {
        assert_eq!(s.run_cron(&admin, "rolling-db-archive").await["status"], "succeeded");
    }
    let recon = s.get("/admin/rolling-db/tenants/acme/reconciliation", Some(&admin)).await.body;
    assert_eq!(recon["diff"], 0, "{recon}");
    {
        let conn = s.state.store.lock().unwrap();
        assert_eq!(
            relational::counts(&conn, &db0).unwrap(),
            (1, 1),
            "one row each after two runs; the note is no order or sale"
        );
        let (order_id, amount): (Option<String>, i64) = conn
            .query_row(
                "SELECT order_id, amount_cents FROM sales WHERE id = ?1",
                [relational::row_id(&db0, "sale-7")],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((order_id.as_deref(), amount), (Some(relational::row_id(&db0, "order-7").as_str()), 990));
        assert_eq!(relational::revisions(&conn, Table::Sales, &db0).unwrap()[0].0, "sale-7");
        conn.execute("DELETE FROM sales WHERE id = ?1", [relational::row_id(&db0, "sale-7")]).unwrap();
    }
    let recon = s.get("/admin/rolling-db/tenants/acme/reconciliation", Some(&admin)).await.body;
    let sales = &recon["days"][0]["relational"][1];
    assert_eq!(
        (recon["diff"].clone(), sales["dayCount"].clone(), sales["rowCount"].clone()),
        (json!(1), json!(1), json!(0)),
        "{recon}"
    );
    assert_ne!(sales["dayChecksum"], sales["rowChecksum"]);
    let arch = s.run_cron(&admin, "rolling-db-archive").await;
    assert!(arch["log"].to_string().contains(&format!("REGRESSED since reconciled [{db0}]")), "{arch}");
}

/// acme rolling, a day with one paid order (`order-1`), archived the next morning: its name, and
/// a sys_admin's token of that morning.
async fn an_archived_day(s: &Server) -> (String, String) {
    let admin = s.token("admin").await;
    enable(s, &admin, "acme").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let db0 = format!("daily_dev_acme_main_{}", day_of(s.now()));
    let alice = s.token("alice").await;
    put_doc(s, &alice, &db0, "order-1", json!({"type": "order", "status": "paid", "totalCents": 300})).await;
    s.advance_days(1.0).await;
    let admin = s.token("admin").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let arch = s.run_cron(&admin, "rolling-db-archive").await;
    assert!(arch["log"].to_string().contains(&format!("archived [{db0}]")), "{arch}");
    (db0, admin)
}

/// A device offline since before its day was archived pushes its orders late, into the archived
/// day: nothing was lost, so no rollback is paged; the next archive run takes them into the archive
/// and the relational store, and the drop waits until it has. A row the archive took and lost is
/// still a regression.
#[tokio::test]
async fn late_orders_into_an_archived_day_are_archived_not_alarmed() {
    use mock_server::store::relational_archive as relational;
    let s = spawn().await;
    let (db0, admin) = an_archived_day(&s).await;

    // The offline device's order of yesterday reaches the archived day now.
    let alice = s.token("alice").await;
    put_doc(&s, &alice, &db0, "order-late", json!({"type": "order", "status": "paid", "totalCents": 700})).await;
    let c = s.get("/admin/rolling-db/tenants/acme/cleanup-candidates", Some(&admin)).await.body;
    let day = c["candidates"].as_array().unwrap().iter().find(|d| d["name"] == db0.as_str()).cloned().unwrap();
    assert_eq!(day["reconciled"], false, "not dropped before the archive holds it: {c}");
    let arch = s.run_cron(&admin, "rolling-db-archive").await;
    let log = arch["log"].to_string();
    assert!(log.contains(&format!("late writes archived [{db0}]")) && !log.contains("REGRESSED"), "{log}");
    assert!(tenant(&s, &admin, "acme").await["attention"].is_null(), "nothing lost, no rollback");
    let copy = s.get(&format!("/docdb/dev_acme_main_archive/{db0}:order-late"), Some(&admin)).await;
    assert_eq!((copy.status, copy.body["totalCents"].clone()), (StatusCode::OK, json!(700)), "{:?}", copy.body);
    assert_eq!(relational::counts(&s.state.store.lock().unwrap(), &db0).unwrap(), (2, 0));
    let recon = s.get("/admin/rolling-db/tenants/acme/reconciliation", Some(&admin)).await.body;
    assert_eq!(recon["diff"], 0, "{recon}");
    assert_eq!(recon["days"][0]["status"], "ARCHIVED", "{recon}");

    // A late edit of an archived order is taken too; the archive holds its newest revision.
    let rev =
        s.call(reqwest::Method::GET, &format!("/docdb/{db0}/order-1"), Some(&alice), None).await.body["_rev"].clone();
    put_doc(
        &s,
        &alice,
        &db0,
        "order-1",
        json!({"_rev": rev, "type": "order", "status": "refunded", "totalCents": 300}),
    )
    .await;
    let arch = s.run_cron(&admin, "rolling-db-archive").await;
    assert!(!arch["log"].to_string().contains("REGRESSED"), "{arch}");
    let copy = s.get(&format!("/docdb/dev_acme_main_archive/{db0}:order-1"), Some(&admin)).await.body;
    assert_eq!(copy["status"], "refunded", "{copy}");
    assert!(tenant(&s, &admin, "acme").await["attention"].is_null());

    // A row the archive took, gone from the relational store: a true loss, paged.
    s.state
        .store
        .lock()
        .unwrap()
        .execute("DELETE FROM orders WHERE id = ?1", [relational::row_id(&db0, "order-late")])
        .unwrap();
    let arch = s.run_cron(&admin, "rolling-db-archive").await;
    assert!(arch["log"].to_string().contains(&format!("REGRESSED since reconciled [{db0}]")), "{arch}");
    assert_eq!(relational::counts(&s.state.store.lock().unwrap(), &db0).unwrap(), (1, 0), "a loss is not papered over");
}

/// Every row of an archived day gone from the relational store is a loss like one row gone: an
/// alarm, not a silent refill taken for a day archived before rows were recorded.
#[tokio::test]
async fn a_day_losing_all_its_relational_rows_regresses() {
    use mock_server::store::relational_archive as relational;
    let s = spawn().await;
    let (db0, admin) = an_archived_day(&s).await;
    s.state
        .store
        .lock()
        .unwrap()
        .execute("DELETE FROM orders WHERE id = ?1", [relational::row_id(&db0, "order-1")])
        .unwrap();
    let arch = s.run_cron(&admin, "rolling-db-archive").await;
    assert!(arch["log"].to_string().contains(&format!("REGRESSED since reconciled [{db0}]")), "{arch}");
    assert_eq!(tenant(&s, &admin, "acme").await["attention"]["alarms"][0]["kind"], "reconciliation-regressed");
}

/// Re-warm (the runbook: drop CORE and let the next rotate recreate it): sys_admin only, refused
/// while devices are routed to CORE unless they are invalidated with it; the next rotate warms a
/// fresh CORE and cuts them over again.
#[tokio::test]
async fn rewarm_drops_core_for_the_next_rotate_and_refuses_under_routed_devices() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let rewarm = |body: serde_json::Value, token: String| {
        let s = &s;
        async move { s.post("/admin/rolling-db/tenants/acme/rewarm", Some(&token), body).await }
    };
    assert_error(&rewarm(json!({}), admin.clone()).await, 404, "core_missing");
    enable(&s, &admin, "acme").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    assert_error(&rewarm(json!({"invalidate": true}), s.token("keys").await).await, 403, "forbidden");
    let refused = rewarm(json!({}), admin.clone()).await;
    assert_error(&refused, 409, "rewarm_needs_invalidation");
    assert!(refused.body["message"].as_str().unwrap().contains("routed to CORE"), "{:?}", refused.body);
    assert_eq!(
        s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body["database"],
        "core",
        "the refusal changed nothing"
    );
    assert_error(&rewarm(json!({"invalidate": "yes"}), admin.clone()).await, 400, "invalid_body");

    let done = rewarm(json!({"invalidate": true}), admin.clone()).await;
    assert_eq!(
        (done.status, done.body["dropped"].clone()),
        (StatusCode::OK, json!("dev_acme_main_core")),
        "{:?}",
        done.body
    );
    let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert_eq!((topo["database"].clone(), topo["core"]["exists"].clone()), (json!("legacy"), json!(false)), "{topo}");
    assert_eq!(
        (topo["invalidation"]["reason"].clone(), topo["invalidation"]["routing"].clone()),
        (json!("rewarm"), json!("legacy"))
    );
    let audit = s.get("/admin/audit?companyId=acme&limit=1", Some(&admin)).await.body;
    assert_eq!(
        (audit["entries"][0]["action"].clone(), audit["entries"][0]["detail"]["dropped"].clone()),
        (json!("core.rewarm"), json!("dev_acme_main_core"))
    );

    // The next rotate recreates CORE with fresh revisions and cuts the devices over again.
    s.run_cron(&admin, "rolling-db-rotate").await;
    let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert_eq!(
        (topo["database"].clone(), topo["core"]["docCount"].clone(), topo["core"]["updateSeq"].clone()),
        (json!("core"), json!(17), json!(17)),
        "{topo}"
    );
    assert_eq!(topo["invalidation"]["reason"], "rolling-db-cutover");

    // Rolled back, nobody is routed to CORE: a re-warm needs no invalidation.
    s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": false})).await;
    let quiet = rewarm(json!({}), admin.clone()).await;
    assert_eq!((quiet.status, quiet.body["invalidatedAt"].clone()), (StatusCode::OK, json!(null)), "{:?}", quiet.body);
}

#[tokio::test]
async fn drop_needs_backups() {
    let s = spawn_with(Settings {
        test_controls: true,
        backup_enabled: false,
        conflicts_enabled: true,
        drop_green_days: 0,
        ..Settings::default()
    })
    .await;
    let admin = s.token("admin").await;
    let refused =
        s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": true, "rollingDbDrop": true})).await;
    assert_error(&refused, 409, "backups_disabled");
    // Forced past the flag's preflight, the drop evaluation still refuses to drop.
    s.patch("/admin/rolling-db/flags/acme?force=true", Some(&admin), json!({"rollingDb": true, "rollingDbDrop": true}))
        .await;
    let eval = s.run_cron(&admin, "rolling-db-drop-eval").await;
    assert!(eval["log"].to_string().contains("BACKUP_ENABLED is false"), "{eval}");
}

#[tokio::test]
async fn rollback_returns_the_tenant_to_legacy_and_daily_invalidation() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    enable(&s, &admin, "acme").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let before = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert_eq!(before["database"], "core");

    let off = s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": false})).await;
    assert_eq!(off.body["rollingDb"], false);
    let inv = s.post("/admin/invalidate-clients/acme", Some(&admin), json!({})).await.body;
    assert!(inv["invalidatedAt"].as_i64() > before["invalidation"]["invalidatedAt"].as_i64());
    let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert_eq!((topo["database"].clone(), topo["invalidation"]["routing"].clone()), (json!("legacy"), json!("legacy")));
    let alice = s.token("alice").await;
    assert_eq!(s.get("/bootstrap?database=legacy", Some(&alice)).await.body["db"], "dev_acme_main_catalog");
    // The next day's cycle treats acme as legacy again: no rotation, the daily invalidation.
    s.advance_days(1.0).await;
    let admin = s.token("admin").await;
    let run = s.run_cron(&admin, "rolling-db-rotate").await;
    assert_eq!(run["log"][0], "rotate-cycle 0 tenant(s) rolling-enabled");
    let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert_eq!(topo["invalidation"]["reason"], "invalidate_daily");
    assert_eq!(topo["days"].as_array().unwrap().len(), 2, "no new day databases");
}

#[tokio::test]
async fn the_schedule_runs_the_rotate_at_five_on_the_server_clock() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    enable(&s, &admin, "acme").await;
    // 04:59:58 today, then start the scheduler and cross 05:00.
    let now = s.now();
    let day_start = now - now.rem_euclid(86_400_000);
    s.post("/__mock/clock", None, json!({"now": day_start + 5 * 3_600_000 - 2_000})).await;
    let _scheduler = mock_server::crons::scheduler::start(s.state.clone());
    s.post("/__mock/clock", None, json!({"now": day_start + 5 * 3_600_000 + 1_000})).await;
    let admin = s.token("admin").await;
    for _ in 0..100 {
        let crons = s.get("/admin/crons", Some(&admin)).await.body;
        if crons["crons"][0]["lastResult"] == "succeeded" {
            assert!(crons["crons"][0]["nextRunAt"].as_i64().unwrap() > s.now() + 23 * 3_600_000);
            assert_eq!(tenant(&s, &admin, "acme").await["coreExists"], true);
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the scheduled rotate did not run");
}

#[tokio::test]
async fn with_conflicts_enabled_a_stale_write_is_kept_and_recorded_for_review() {
    for enabled in [false, true] {
        let s = spawn_with(Settings { test_controls: true, conflicts_enabled: enabled, ..Settings::default() }).await;
        let admin = s.token("admin").await;
        enable(&s, &admin, "acme").await;
        s.run_cron(&admin, "rolling-db-rotate").await;
        let db = format!("daily_dev_acme_main_{}", day_of(s.now()));
        let alice = s.token("alice").await;
        let first = put_doc(&s, &alice, &db, "order-9", json!({"type": "order", "status": "open"})).await;
        // Two tills pay the same order from the same revision.
        put_doc(
            &s,
            &alice,
            &db,
            "order-9",
            json!({"_rev": first["rev"], "type": "order", "status": "paid", "till": 1}),
        )
        .await;
        let second = s
            .call(
                reqwest::Method::PUT,
                &format!("/docdb/{db}/order-9"),
                Some(&alice),
                Some(json!({"_rev": first["rev"], "type": "order", "status": "paid", "till": 2})),
            )
            .await;
        let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
        if enabled {
            assert_eq!((second.status, second.body["conflict"].clone()), (StatusCode::OK, json!(true)));
            assert_eq!(topo["openConflicts"], 1);
        } else {
            assert_error(&second, 409, "conflict");
            assert_eq!(topo["openConflicts"], 0);
        }
    }
}

#[tokio::test]
async fn a_runs_log_is_kept_line_by_line_and_read_in_pages_with_a_summary() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    for id in ["acme", "globex", "initech"] {
        s.patch(&format!("/admin/rolling-db/flags/{id}"), Some(&admin), json!({"rollingDb": true})).await;
    }
    let run = s.run_cron(&admin, "rolling-db-rotate").await;
    let log: Vec<String> = run["log"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_owned()).collect();
    assert_eq!(run["logTotal"], log.len());
    assert!(log.iter().any(|l| l == "summary: 3 tenant(s) done, 0 failed"), "{log:?}");
    let rows: i64 = s
        .state
        .store
        .lock()
        .unwrap()
        .query_row("SELECT COUNT(*) FROM cron_run_log WHERE run_id = ?1", [run["runId"].as_str().unwrap()], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(rows as usize, log.len(), "one row a line: appending never rewrites the log");
    let page = s
        .get(&format!("/admin/crons/runs/{}?logFrom=1&logLimit=2", run["runId"].as_str().unwrap()), Some(&admin))
        .await
        .body;
    assert_eq!(page["log"], json!([log[1], log[2]]));
    assert_eq!(page["logTotal"], log.len());
    assert_error(
        &s.get(&format!("/admin/crons/runs/{}?logFrom=x", run["runId"].as_str().unwrap()), Some(&admin)).await,
        400,
        "bad_request",
    );
}

/// The legacy archive: a tenant without rollingDb (and the legacy database after a cutover) has
/// its legacy database's closed orders and sales older than a day copied into the relational
/// store and `*_archive` with `source_db` naming the legacy database, idempotently and reconciled;
/// open orders and recent ones stay, and the legacy database itself is never dropped.
#[tokio::test]
async fn the_legacy_database_is_archived_in_part_and_never_dropped() {
    let s = spawn().await;
    let bob = s.token("bob").await; // manager, globex: no rollingDb
    let legacy = "dev_globex_main_catalog";
    let day = 86_400_000;
    for (id, doc) in [
        (
            "order-closed-old",
            json!({"type": "order", "status": "paid", "totalCents": 700, "createdAt": s.now() - 2 * day}),
        ),
        (
            "order-open-old",
            json!({"type": "order", "status": "open", "totalCents": 300, "createdAt": s.now() - 2 * day}),
        ),
        ("order-closed-new", json!({"type": "order", "status": "paid", "totalCents": 100, "createdAt": s.now()})),
        (
            "sale-old",
            json!({"type": "sale", "orderId": "order-closed-old", "amountCents": 700, "createdAt": s.now() - 2 * day}),
        ),
    ] {
        let a = s.call(reqwest::Method::PUT, &format!("/docdb/{legacy}/{id}"), Some(&bob), Some(doc)).await;
        assert_eq!(a.status, StatusCode::OK, "{id}: {:?}", a.body);
    }
    let before = s.get(&format!("/docdb/{legacy}/_all_docs"), Some(&bob)).await.body["rows"].as_array().unwrap().len();
    let admin = s.token("admin").await;
    for round in 0..2 {
        let run = s.run_cron(&admin, "rolling-db-archive").await;
        assert!(
            run["log"]
                .to_string()
                .contains(&format!("legacy {legacy}: 2 closed order(s) and sale(s) archived, reconciled")),
            "round {round}: {run}"
        );
        let archive = s.get("/docdb/dev_globex_main_archive/_all_docs", Some(&bob)).await.body;
        let ids: Vec<&str> = archive["rows"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            [format!("{legacy}:order-closed-old"), format!("{legacy}:sale-old")],
            "round {round}: only once each"
        );
        let copy = s.get(&format!("/docdb/dev_globex_main_archive/{legacy}:order-closed-old"), Some(&bob)).await.body;
        assert_eq!((copy["source_db"].as_str(), copy["totalCents"].as_i64()), (Some(legacy), Some(700)));
        let rows = mock_server::store::relational_archive::counts(&s.state.store.lock().unwrap(), legacy).unwrap();
        assert_eq!(rows, (1, 1), "round {round}: one order row and one sale row");
    }
    let recon = s.get("/admin/rolling-db/tenants/globex/reconciliation", Some(&admin)).await.body;
    assert_eq!(recon["legacy"], json!({"db": legacy, "documents": 2, "diff": 0}), "{recon}");
    let after = s.get(&format!("/docdb/{legacy}/_all_docs"), Some(&bob)).await.body["rows"].as_array().unwrap().len();
    assert_eq!(after, before, "the legacy database keeps every document");
}

/// A device's handshake: the `invalidate-local` frame it got (if any) and where `ready` routes it.
async fn handshake(s: &Server, token: &str, device: &str, last: Option<i64>) -> (Option<Value>, Value) {
    let (_, frames) = ws::hello(s, token, Some(device), "1.4.17", last).await;
    let ready = frames.last().filter(|f| f["type"] == "ready").unwrap_or_else(|| panic!("{frames:?}"));
    let invalidate = frames.iter().find(|f| f["type"] == "invalidate-local").map(|f| f["payload"].clone());
    (invalidate, ready["payload"].clone())
}

#[tokio::test]
async fn re_enabling_after_a_rollback_waits_for_a_rotate_that_catches_core_up() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let alice = s.token("alice").await;
    let device = s.register_device(&alice).await;
    enable(&s, &admin, "acme").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let (cutover, ready) = handshake(&s, &alice, &device, None).await;
    assert_eq!(ready["database"], "core");
    let last = cutover.expect("the cutover's invalidation")["invalidatedAt"].as_i64();

    // Rollback: the devices return to the legacy catalogue, which keeps receiving writes.
    s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": false})).await;
    s.post("/admin/invalidate-clients/acme", Some(&admin), json!({})).await;
    let (back, ready) = handshake(&s, &alice, &device, last).await;
    assert_eq!(ready["database"], "legacy");
    let last = back.expect("the rollback's invalidation")["invalidatedAt"].as_i64();
    put_doc(&s, &admin, "dev_acme_main_catalog", "item-after-rollback", json!({"class": "STATIC", "type": "item"}))
        .await;
    // And an edit there of a warmed document, which the catch-up writes onto CORE's revision.
    let legacy = s.get("/bootstrap?database=legacy", Some(&alice)).await.body["docs"].clone();
    let mut edited = legacy.as_array().unwrap().iter().find(|d| d["class"] == "STATIC").unwrap().clone();
    let edited_id = edited.as_object_mut().unwrap().remove("_id").unwrap();
    edited["name"] = json!("renamed in legacy");
    put_doc(&s, &admin, "dev_acme_main_catalog", edited_id.as_str().unwrap(), edited).await;

    // Re-enabled: nothing changes for the devices until a rotate runs.
    enable(&s, &admin, "acme").await;
    let (invalidate, ready) = handshake(&s, &alice, &device, last).await;
    assert_eq!((invalidate, ready["database"].clone()), (None, json!("legacy")), "routed before a rotate");
    let topo = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    assert_eq!(topo["database"], "legacy");

    // The rotate brings CORE up to the legacy catalogue, then cuts the devices over.
    s.run_cron(&admin, "rolling-db-rotate").await;
    let (cutover, ready) = handshake(&s, &alice, &device, last).await;
    assert_eq!(ready["database"], "core");
    assert_eq!(cutover.expect("the new cutover's invalidation")["reason"], "rolling-db-cutover");
    let core = s.get("/docdb/dev_acme_main_core/item-after-rollback", Some(&admin)).await;
    assert_eq!((core.status, core.body["class"].clone()), (StatusCode::OK, json!("STATIC")), "{:?}", core.body);
    // What the catch-up wrote is legacy's own: nothing CORE holds that legacy lacks.
    let core = s.get(&format!("/docdb/dev_acme_main_core/{}", edited_id.as_str().unwrap()), Some(&admin)).await.body;
    assert!(core["_rev"].as_str().unwrap().starts_with("2-") && core["name"] == "renamed in legacy", "{core}");
    let left = s.get("/admin/rolling-db/tenants/acme/core-writes", Some(&admin)).await.body;
    assert_eq!(left["coreWrittenSinceWarm"], json!({"count": 0, "ids": []}), "{left}");
}

/// The rollback says what it leaves behind: CORE's documents written since the warm that the
/// legacy catalogue lacks (counted as the re-warm counts them), read before the rollback and
/// carried by the flag-off answer; none written, it says zero.
#[tokio::test]
async fn a_rollback_says_what_core_holds_that_legacy_lacks() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let keys = s.token("keys").await;
    let on = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDb": true})).await;
    assert_eq!(on.body["coreWrittenSinceWarm"], json!(null), "only a rollback says it: {:?}", on.body);
    enable(&s, &admin, "globex").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let none = json!({"count": 0, "ids": []});
    let cost = |id: &'static str| {
        let (s, keys) = (&s, keys.clone());
        async move { s.get(&format!("/admin/rolling-db/tenants/{id}/core-writes"), Some(&keys)).await }
    };
    assert_eq!(cost("acme").await.body, json!({"companyId": "acme", "rollingDb": true, "coreWrittenSinceWarm": none}));
    assert_error(&cost("nowhere").await, 404, "unknown_tenant");
    assert_error(
        &s.get("/admin/rolling-db/tenants/acme/core-writes", Some(&s.token("alice").await)).await,
        403,
        "forbidden",
    );

    // A catalogue manager's edits in CORE since the warm: a new item, and a warmed one re-priced.
    let core = "dev_acme_main_core";
    put_doc(&s, &admin, core, "item-core-only", json!({"class": "STATIC", "type": "item", "name": "new"})).await;
    let warmed = s.get("/bootstrap?database=core", Some(&s.token("alice").await)).await.body["docs"][0].clone();
    let id = warmed["_id"].as_str().unwrap().to_owned();
    let mut edited = warmed.clone();
    edited.as_object_mut().unwrap().remove("_id");
    edited["priceCents"] = json!(12_345);
    put_doc(&s, &admin, core, &id, edited).await;
    let mut ids = vec![id, "item-core-only".to_owned()];
    ids.sort();
    let written = json!({"count": 2, "ids": ids});
    assert_eq!(cost("acme").await.body["coreWrittenSinceWarm"], written);
    // The re-warm counts the same documents (one rule).
    let rewarm = s.post("/admin/rolling-db/tenants/acme/rewarm", Some(&admin), json!({"invalidate": true})).await;
    assert_error(&rewarm, 409, "core_edited");
    assert_eq!(rewarm.body["checks"]["count"], 2, "{:?}", rewarm.body);

    // A change that is no rollback says nothing; the rollback says what the devices leave behind.
    let drop_off = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDbDrop": false})).await;
    assert_eq!(drop_off.body["coreWrittenSinceWarm"], json!(null));
    let off = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDb": false})).await;
    assert_eq!((off.status, off.body["rollingDb"].clone()), (StatusCode::OK, json!(false)), "{:?}", off.body);
    assert_eq!(off.body["coreWrittenSinceWarm"], written);
    let audit = s.get("/admin/audit?companyId=acme&limit=1", Some(&admin)).await.body;
    assert_eq!(audit["entries"][0]["detail"]["coreWrittenSinceWarm"], written);
    // Nothing written in globex's CORE: its rollback says zero.
    let off = s.patch("/admin/rolling-db/flags/globex", Some(&keys), json!({"rollingDb": false})).await;
    assert_eq!(off.body["coreWrittenSinceWarm"], none, "{:?}", off.body);
}

/// Two midnights without a rotate (the rotate prewarms only tomorrow's): today's day database is
/// missing. A device routed to CORE writes to the latest day database, which takes a cashier's
/// order (CORE refuses it); the operators see an alarm that says to run the rotate; the archive
/// leaves that day alone while devices write to it; the rotate creates today's and clears the
/// alarm, and the late order is archived with its day.
#[tokio::test]
async fn without_a_rotate_since_midnight_writes_land_in_the_latest_day_and_an_alarm_asks_for_the_rotate() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let alice = s.token("alice").await;
    let device = s.register_device(&alice).await;
    enable(&s, &admin, "acme").await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let day = |d: String| format!("daily_dev_acme_main_{d}");
    let day0 = day_of(s.now());
    let day1 = mock_server::docdb::naming::next_day(&day0);
    let day2 = mock_server::docdb::naming::next_day(&day1);
    let (cutover, ready) = handshake(&s, &alice, &device, None).await;
    assert_eq!(ready["dynamicDb"], day(day0.clone()));
    let last = cutover.expect("the cutover's invalidation")["invalidatedAt"].as_i64();

    s.advance_days(2.0).await;
    let (admin, alice) = (s.token("admin").await, s.token("alice").await);
    assert_eq!(day_of(s.now()), day2);
    assert!(tenant(&s, &admin, "acme").await["attention"].is_null(), "no alarm before a device finds the day missing");
    let (_, ready) = handshake(&s, &alice, &device, last).await;
    assert_eq!((ready["database"].clone(), ready["dynamicDb"].clone()), (json!("core"), json!(day(day1.clone()))));
    // CORE refuses a cashier's writes; the routed day takes the order.
    assert_error(
        &s.call(
            reqwest::Method::PUT,
            "/docdb/dev_acme_main_core/order-late",
            Some(&alice),
            Some(json!({"type": "order"})),
        )
        .await,
        403,
        "forbidden",
    );
    let order = json!({"type": "order", "class": "DYNAMIC", "status": "paid", "totalCents": 990, "createdAt": s.now()});
    put_doc(&s, &alice, ready["dynamicDb"].as_str().unwrap(), "order-late", order).await;
    // The alarm, raised once however many handshakes, with what to do.
    handshake(&s, &alice, &device, last).await;
    let attention = tenant(&s, &admin, "acme").await["attention"].clone();
    let alarms = attention["alarms"].as_array().unwrap();
    assert_eq!(alarms.len(), 1, "{attention}");
    assert_eq!(
        (alarms[0]["kind"].clone(), alarms[0]["subject"].clone()),
        (json!("day-database-missing"), json!(day(day2.clone())))
    );
    assert!(attention["instruction"].as_str().unwrap().starts_with("Run the rotate"), "{attention}");
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    assert_eq!(cluster["attention"][0]["alarms"][0]["kind"], "day-database-missing", "{cluster}");

    // The archive takes the day before, and leaves the day devices still write to.
    let arch = s.run_cron(&admin, "rolling-db-archive").await;
    let log = arch["log"].to_string();
    assert!(log.contains(&format!("archived [{}]", day(day0.clone()))), "{log}");
    assert!(log.contains(&format!("still routed {}", day(day1.clone()))), "{log}");
    // Orders keep landing there after the archive run, never after their day was archived.
    let order = json!({"type": "order", "class": "DYNAMIC", "status": "paid", "totalCents": 120, "createdAt": s.now()});
    put_doc(&s, &alice, &day(day1.clone()), "order-later", order).await;

    // The rotate creates today's day database: the alarm clears, devices write there again.
    s.run_cron(&admin, "rolling-db-rotate").await;
    assert!(tenant(&s, &admin, "acme").await["attention"].is_null());
    let (_, ready) = handshake(&s, &alice, &device, last).await;
    assert_eq!(ready["dynamicDb"], day(day2));
    let arch = s.run_cron(&admin, "rolling-db-archive").await;
    assert!(arch["log"].to_string().contains(&format!("archived [{}]", day(day1.clone()))), "{arch}");
    for (id, cents) in [("order-late", 990), ("order-later", 120)] {
        let archived = s.get(&format!("/docdb/dev_acme_main_archive/{}:{id}", day(day1.clone())), Some(&admin)).await;
        assert_eq!(
            (archived.status, archived.body["totalCents"].clone()),
            (StatusCode::OK, json!(cents)),
            "{:?}",
            archived.body
        );
    }
    let recon = s.get("/admin/rolling-db/tenants/acme/reconciliation", Some(&admin)).await.body;
    assert_eq!(recon["diff"], 0, "{recon}");
    assert!(tenant(&s, &admin, "acme").await["attention"].is_null(), "no regression to roll back for");
}
