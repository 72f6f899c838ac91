//! `/metrics` as an operator's Prometheus sees it: the alert rules pass `promtool check rules` and
//! their unit tests; a real Prometheus scrapes the server through a rollout (a canary on, the
//! rotate, a device's login, registration, handshake, bootstrap and orders, the next day's rotate,
//! archive and backup, and a month later the drop) and the series it holds tell what the console
//! tells; a scrape passes `promtool check metrics`; no alert fires on a healthy rollout.

use crate::common;

use std::process::Command;

use common::prom::{metrics_listener, rules_dir, Prometheus};
use common::{spawn_with, ws, Server};
use mock_server::settings::Settings;
use reqwest::StatusCode;
use serde_json::{json, Value};

#[test]
fn the_alert_rules_pass_promtool_and_their_unit_tests() {
    for args in [vec!["check", "rules", "alerts.yml"], vec!["test", "rules", "alerts_test.yml"]] {
        let out = Command::new("promtool")
            .args(&args)
            .current_dir(rules_dir())
            .output()
            .expect("promtool runs: make setup installs it");
        assert!(
            out.status.success(),
            "promtool {args:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

async fn put_order(s: &Server, token: &str, db: &str, id: &str) {
    let a = s
        .call(
            reqwest::Method::PUT,
            &format!("/docdb/{db}/{id}"),
            Some(token),
            Some(json!({"type": "order", "class": "DYNAMIC", "status": "paid", "totalCents": 450})),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{:?}", a.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_tells_what_the_console_tells() {
    let data = std::env::temp_dir().join(mock_server::auth::secrets::random_id("metrics-test"));
    let s = spawn_with(Settings {
        test_controls: true,
        data_dir: Some(data.clone()),
        conflicts_enabled: true,
        drop_green_days: 0,
        ..Settings::default()
    })
    .await;
    let target = metrics_listener(&s).await;
    let scrape = reqwest::get(format!("http://{target}/metrics")).await.unwrap().text().await.unwrap();
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut check.stdin.take().unwrap(), scrape.as_bytes()).unwrap();
    let checked = check.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics:\n{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    let newest = "rolling_snapshot_newest_timestamp_seconds";
    assert!(!scrape.lines().any(|l| l.starts_with(newest)), "no snapshot yet, no time of one (never a 0)");
    let p = Prometheus::start(&target).await;

    // The rollout: the canary on (with the drop), the rotate; a device signs in (once wrongly),
    // registers, says hello on its socket, bootstraps and takes orders; the next day the rotate,
    // the archive and the backup; a month later the drop.
    let admin = s.token("admin").await;
    let flags = s
        .patch(
            "/admin/rolling-db/flags/acme?force=true",
            Some(&admin),
            json!({"rollingDb": true, "rollingDbDrop": true}),
        )
        .await;
    assert_eq!(flags.status, StatusCode::OK, "{:?}", flags.body);
    assert_eq!(s.run_cron(&admin, "rolling-db-rotate").await["status"], "succeeded");
    let wrong = s.post("/auth", None, json!({"username": "alice", "password": "not-hers"})).await;
    assert_eq!(wrong.body["error"], "invalid_credentials", "{:?}", wrong.body);
    let alice = s.token("alice").await;
    let device = s.post("/devices", Some(&alice), json!({"name": "till 1", "sdkVersion": "1.4.17"})).await;
    assert_eq!(device.status, StatusCode::CREATED, "{:?}", device.body);
    let (_socket, frames) = ws::hello(&s, &alice, Some("till-1"), "1.4.17", None).await;
    let invalidations = frames.iter().filter(|f| f["type"] == "invalidate-local").count() as f64;
    assert_eq!(frames.last().unwrap()["type"], "ready", "{frames:?}");
    assert_eq!(s.get("/bootstrap?database=core", Some(&alice)).await.status, StatusCode::OK);
    let day = format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(s.now()));
    put_order(&s, &alice, &day, "order-1").await;
    put_order(&s, &alice, &day, "order-2").await;
    s.advance_days(1.0).await;
    let admin = s.token("admin").await;
    for cron in ["rolling-db-rotate", "rolling-db-archive"] {
        assert_eq!(s.run_cron(&admin, cron).await["status"], "succeeded", "{cron}");
    }
    let backed_up_at = s.now();
    let backup = s.run_cron(&admin, "rolling-db-backup").await;
    assert_eq!(backup["status"], "succeeded", "{backup}");
    let taken = snapshots_in(&backup);
    assert!(taken >= 1.0, "{backup}");
    s.advance_days(31.0).await;
    let admin = s.token("admin").await;
    let eval = s.run_cron(&admin, "rolling-db-drop-eval").await;
    assert!(eval["log"].to_string().contains(&format!("dropped [{day}")), "{eval}");

    let scrape = reqwest::get(format!("http://{target}/metrics")).await.unwrap().text().await.unwrap();
    the_console_names_what_the_server_exposes(&scrape);

    // What the console shows now.
    let fleet = s.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    let recon = s.get("/admin/rolling-db/tenants/acme/reconciliation", Some(&admin)).await.body;
    let tenants = fleet["tenants"].as_array().unwrap();
    let rolling = tenants.iter().filter(|t| t["rollingDb"] == true).count() as f64;
    let off = tenants.iter().filter(|t| t["rollingDb"] == false).count() as f64;
    let core: &Value = cluster["databases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "dev_acme_main_core")
        .expect("CORE in the console");

    p.scraped_after_now().await;
    assert_eq!(
        p.value("rolling_tenants{state=\"rolling_with_drop\"}").await,
        Some(rolling),
        "the canary rolls with the drop on"
    );
    assert_eq!(p.value("rolling_tenants{state=\"off\"}").await, Some(off));
    assert_eq!(p.value("docdb_open_handles").await, cluster["openDbs"].as_f64());
    assert_eq!(p.value("docdb_max_open_handles").await, cluster["maxDbsOpen"].as_f64());
    assert_eq!(p.value("rolling_core_doc_count{tenant=\"acme\"}").await, core["docCount"].as_f64());
    assert_eq!(p.value("rolling_core_update_seq{tenant=\"acme\"}").await, core["updateSeq"].as_f64());
    assert_eq!(
        p.query("rolling_core_doc_count").await.len(),
        rolling as usize,
        "per-tenant series for the rolling tenants only"
    );
    let topology = s.get("/admin/rolling-db/tenants/acme/topology", Some(&admin)).await.body;
    let dropped = topology["days"].as_array().unwrap().iter().filter(|d| d["status"] == "DROPPED").count() as f64;
    assert_eq!(dropped, 1.0, "{topology}");
    assert_eq!(p.value("rolling_day_databases{status=\"DROPPED\"}").await, Some(dropped));
    let days: f64 = tenants.iter().map(|t| t["dayDatabases"].as_f64().unwrap()).sum();
    assert_eq!(p.value("sum(rolling_day_databases{status!=\"DROPPED\"})").await, Some(days));
    assert_eq!(p.value("rolling_reconciliation_diff{tenant=\"acme\"}").await, recon["diff"].as_f64(), "{recon}");
    assert_eq!(p.value("rolling_snapshots_taken_total").await, Some(taken), "what the backup run's log lists");
    assert_eq!(p.value("rolling_snapshot_failures_total").await, Some(0.0));
    let at = p.value(newest).await.expect("a snapshot's time");
    let (from, to) = (backed_up_at as f64 / 1000.0, (backed_up_at + 60_000) as f64 / 1000.0);
    assert!(from <= at && at <= to, "the backup's time on the server's clock: {at} in {from}..{to}");
    assert_eq!(p.value("cron_runs_total{cron=\"rolling-db-rotate\",outcome=\"succeeded\"}").await, Some(2.0));
    assert_eq!(p.query("cron_runs_total{outcome=\"failed\"}").await, Vec::new());
    assert_eq!(p.value("cron_run_duration_seconds_count{cron=\"rolling-db-backup\"}").await, Some(1.0));
    for cron in ["rolling-db-rotate", "rolling-db-archive", "rolling-db-backup", "rolling-db-drop-eval"] {
        assert_eq!(p.value(&format!("cron_last_run_succeeded{{cron=\"{cron}\"}}")).await, Some(1.0), "{cron}");
        assert!(p.value(&format!("cron_last_success_timestamp_seconds{{cron=\"{cron}\"}}")).await.is_some(), "{cron}");
        // Every cron is scheduled here (the defaults: AUTO_ARCHIVE_ENABLED and BACKUP_ENABLED on).
        assert_eq!(p.value(&format!("cron_scheduled{{cron=\"{cron}\"}}")).await, Some(1.0), "{cron}");
    }
    let started = p.value("process_start_time_seconds").await.expect("the server's start");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    assert!(started > 0.0 && started <= now, "started {started}, now {now}");
    assert_eq!(p.value("sum(rolling_alarms_open)").await, Some(0.0));
    assert_eq!(p.value("bootstrap_duration_seconds_count{database=\"core\"}").await, Some(1.0));
    assert_eq!(p.value("http_requests_total{route=\"PUT /docdb/{db}/{*rest}\",outcome=\"ok\"}").await, Some(2.0));
    assert_eq!(p.value("session_logins_total{provider=\"password\",outcome=\"invalid_credentials\"}").await, Some(1.0));
    assert_eq!(p.value("session_devices_registered_total{outcome=\"ok\"}").await, Some(1.0));
    assert_eq!(p.value("realtime_handshakes_total{outcome=\"ok\"}").await, Some(1.0));
    assert_eq!(p.value("realtime_invalidate_local_delivered_total").await, Some(invalidations));
    assert_eq!(p.query("ALERTS{alertstate=\"firing\"}").await, Vec::new(), "a healthy rollout fires nothing");
    let _ = std::fs::remove_dir_all(&data);
}

/// The snapshots a backup run's log lists (`acme: snapshots [db@id, …], …`).
fn snapshots_in(run: &Value) -> f64 {
    let lines = run["log"].as_array().unwrap().iter().filter_map(Value::as_str);
    let listed = lines
        .filter_map(|l| l.split_once("snapshots [")?.1.split_once(']'))
        .map(|(list, _)| list.split(", ").filter(|s| !s.is_empty()).count());
    listed.sum::<usize>() as f64
}

/// Every metric and alert the console's cards name (their "metric" hints) exists: a family in
/// `scrape`, an alert in the rules.
fn the_console_names_what_the_server_exposes(scrape: &str) {
    let page = std::fs::read_to_string(rules_dir().join("../../www/index.html")).unwrap();
    let rules = std::fs::read_to_string(rules_dir().join("alerts.yml")).unwrap();
    let families: Vec<&str> = scrape.lines().filter_map(|l| l.strip_prefix("# TYPE ")?.split(' ').next()).collect();
    let mut named = 0;
    for hint in page.split("<p class=\"hint metric\">").skip(1) {
        let hint = hint.split("</p>").next().unwrap();
        for code in hint.split("<code>").skip(1) {
            let name = code.split("</code>").next().unwrap().split('{').next().unwrap();
            let known = families.iter().any(|f| *f == name || f.strip_suffix("_total") == Some(name))
                || rules.contains(&format!("alert: {name}\n"));
            assert!(known, "the console names {name}, which the server does not expose");
            named += 1;
        }
    }
    assert!(named >= 10, "the console's hints: {named}");
}
