//! Device losses' counts are bounded and their sums cannot fail (docs/operations.md, "Device
//! losses"): a count past a report's or a device's day's bound is refused with nothing stored, and
//! whatever the store holds (the largest counts, many times over), `/metrics`, the tenants view and
//! the cluster view answer, on the embedded store and on PostgreSQL. A family of series the store
//! cannot read is left out of a scrape, and the others are served.

use crate::common;

use common::pg::Cluster;
use common::prom::metrics_listener;
use common::{assert_error, spawn, spawn_with, Server};
use mock_server::settings::Settings;
use protocol::losses::{MAX_LOST_DATABASES, MAX_LOST_PER_DATABASE, MAX_LOST_PER_REPORT};
use serde_json::{json, Map, Value};

const LOST: &str = r#"device_lost_documents_total{tenant="acme",reason="invalidation"}"#;

fn report(id: &str, device: &str, lost: Value) -> Value {
    json!({"id": id, "deviceId": device, "companyId": "acme", "reason": "invalidation", "lost": lost})
}

/// `n` local databases, each counting `each`.
fn databases(n: usize, each: u64) -> Value {
    Value::Object((0..n).map(|i| (format!("db{i}"), json!(each))).collect::<Map<_, _>>())
}

/// The scrape's status and text.
async fn scrape(target: &str) -> (u16, String) {
    let answer = reqwest::get(format!("http://{target}/metrics")).await.unwrap();
    (answer.status().as_u16(), answer.text().await.unwrap())
}

fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

async fn bounded_and_never_failing(s: &Server) {
    let target = metrics_listener(s).await;
    let alice = s.token("alice").await;
    let device = s.register_device(&alice).await;
    // Past each bound of a report: refused, nothing stored.
    let per_report = (MAX_LOST_PER_REPORT / MAX_LOST_PER_DATABASE) as usize;
    for lost in [
        json!({"till": MAX_LOST_PER_DATABASE + 1}),
        json!({"till": u64::MAX}),
        databases(per_report + 1, MAX_LOST_PER_DATABASE),
        databases(MAX_LOST_DATABASES + 1, 1),
    ] {
        let refused = s.post("/devices/losses", Some(&alice), report("r-past-0001", &device, lost.clone())).await;
        assert_error(&refused, 400, "bad_request");
    }
    assert_eq!(value(&scrape(&target).await.1, LOST), None, "nothing stored for a refusal");
    // The largest a report counts, twice: the device's day is full; one more document is refused.
    let largest = databases(per_report, MAX_LOST_PER_DATABASE);
    for id in ["r-large-001", "r-large-002"] {
        let a = s.post("/devices/losses", Some(&alice), report(id, &device, largest.clone())).await;
        assert_eq!((a.status.as_u16(), a.body.clone()), (200, json!({"recorded": true})), "{id}");
    }
    let past_the_day =
        s.post("/devices/losses", Some(&alice), report("r-large-003", &device, json!({"till": 1}))).await;
    assert_error(&past_the_day, 400, "bad_request");
    assert_eq!(value(&scrape(&target).await.1, LOST), Some(2.0 * MAX_LOST_PER_REPORT as f64));
    // Whatever the store holds beside them (rows written before the bounds, by hand): the largest
    // values it keeps, many times over, in two tenants.
    let now = s.now();
    s.state
        .store
        .transaction(|tx| {
            for i in 0..200 {
                let tenant = if i % 2 == 0 { "acme" } else { "globex" };
                tx.execute(
                    &format!(
                        "INSERT INTO guard_device_losses (report_id, company_id, device_id, reason, documents, lost, reported_at) VALUES ('r-stored-{i:05}', '{tenant}', 'dev-old', 'invalidation', {}, '{{}}', {now})",
                        i64::MAX
                    ),
                    [],
                )?;
            }
            Ok::<_, mock_server::store::sql::Error>(())
        })
        .unwrap();
    let (status, text) = scrape(&target).await;
    assert_eq!(status, 200, "{text}");
    assert!(value(&text, LOST).is_some_and(|n| n >= u64::MAX as f64), "the sum saturates: {text}");
    let unresolved = r#"device_lost_documents_unresolved{tenant="globex",reason="invalidation"}"#;
    assert!(value(&text, unresolved).is_some_and(|n| n >= i64::MAX as f64), "{text}");
    assert_eq!(value(&text, r#"metrics_scrape_failed{family="device_losses"}"#), Some(0.0));
    let admin = s.token("admin").await;
    let tenants = s.get("/admin/rolling-db/tenants", Some(&admin)).await;
    assert_eq!(tenants.status.as_u16(), 200, "{:?}", tenants.body);
    let acme = tenants.body["tenants"].as_array().unwrap().iter().find(|t| t["companyId"] == "acme").unwrap().clone();
    assert_eq!(acme["deviceLosses"]["invalidation"], json!(u64::MAX), "{acme}");
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await;
    assert_eq!(cluster.status.as_u16(), 200, "{:?}", cluster.body);
}

#[tokio::test]
async fn on_the_embedded_store_counts_are_bounded_and_sums_never_fail() {
    bounded_and_never_failing(&spawn().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_counts_are_bounded_and_sums_never_fail() {
    let cluster = Cluster::start();
    let url = cluster.migrated("sums");
    let s = spawn_with(Settings {
        database_url: Some(url),
        jwt_secret: Some("0123456789abcdef-loss-sums".into()),
        test_controls: true,
        ..Settings::default()
    })
    .await;
    bounded_and_never_failing(&s).await;
}

#[tokio::test]
async fn a_family_the_store_cannot_read_is_left_out_and_the_others_are_served() {
    let s = spawn().await;
    let target = metrics_listener(&s).await;
    s.state.store.transaction(|tx| tx.execute("DROP TABLE guard_device_losses", []).map(|_| ())).unwrap();
    let (status, text) = scrape(&target).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(value(&text, r#"metrics_scrape_failed{family="device_losses"}"#), Some(1.0), "{text}");
    assert!(!text.contains("device_lost_documents"), "{text}");
    for (series, expected) in [
        (r#"metrics_scrape_failed{family="alarms"}"#, 0.0),
        (r#"rolling_tenants{state="off"}"#, 3.0),
        (r#"rolling_alarms_open{kind="device-data-lost"}"#, 0.0),
    ] {
        assert_eq!(value(&text, series), Some(expected), "{series}: {text}");
    }
    assert!(value(&text, "process_start_time_seconds").is_some(), "{text}");
}
