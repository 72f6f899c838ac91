//! A device's loss reports are bounded and proven (docs/operations.md, "Device losses"): at most
//! 20 a device in 10 minutes (then 429 with `Retry-After`, nothing stored), one audit line a
//! device a day summing them up, a keyed device's report carries its key's proof for this route
//! (else 401 `device_proof_required`, nothing stored), and a report never waits for the store's
//! exclusive lock (on PostgreSQL it runs beside the logins and refreshes holding it shared).

use crate::common;

use common::device_key::Key;
use common::pg::Cluster;
use common::prom::{metrics_listener, scraped};
use common::{assert_error, spawn, spawn_with, Server};
use mock_server::settings::Settings;
use protocol::routes;
use serde_json::{json, Value};

const LOST: &str = r#"device_lost_documents_total{tenant="acme",reason="invalidation"}"#;
/// Midday (UTC), so a test's ten minutes stay in one day.
const NOON: i64 = 1_800_014_400_000;

fn report(id: &str, device: &str, lost: Value) -> Value {
    json!({"id": id, "deviceId": device, "companyId": "acme", "reason": "invalidation", "lost": lost})
}

async fn set_clock(s: &Server, now: i64) {
    assert_eq!(s.post("/__mock/clock", None, json!({"now": now})).await.status.as_u16(), 200);
}

#[tokio::test]
async fn a_devices_reports_are_rate_limited_and_summed_up_in_one_audit_line_a_day() {
    let s = spawn().await;
    set_clock(&s, NOON).await;
    let target = metrics_listener(&s).await;
    let alice = s.token("alice").await;
    let device = s.register_device(&alice).await;
    for i in 0..20 {
        let a = s
            .post("/devices/losses", Some(&alice), report(&format!("r-rate-{i:04}"), &device, json!({"till": 1})))
            .await;
        assert_eq!((a.status.as_u16(), a.body.clone()), (200, json!({"recorded": true})), "report {i}");
    }
    let refused = s.post("/devices/losses", Some(&alice), report("r-rate-0020", &device, json!({"till": 1}))).await;
    assert_error(&refused, 429, "rate_limited");
    let wait: u64 = refused.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=600).contains(&wait), "{wait}");
    assert_eq!(scraped(&target, LOST.to_owned()).await, 20.0, "nothing stored for the refusal");
    // A report the server has is answered as such, limit or not: the device forgets it.
    let again = s.post("/devices/losses", Some(&alice), report("r-rate-0001", &device, json!({"till": 1}))).await;
    assert_eq!((again.status.as_u16(), again.body.clone()), (200, json!({"recorded": false})));
    // Another device of the tenant is not held back by this one.
    let carol = s.token("carol").await;
    let carols = s.register_device(&carol).await;
    let other = s.post("/devices/losses", Some(&carol), report("r-carol-0001", &carols, json!({"till": 2}))).await;
    assert_eq!(other.body, json!({"recorded": true}));
    // Once the oldest report is out of the window, the device reports again.
    set_clock(&s, NOON + 601_000).await;
    let later = s.post("/devices/losses", Some(&alice), report("r-rate-0020", &device, json!({"till": 1}))).await;
    assert_eq!(later.body, json!({"recorded": true}));
    assert_eq!(scraped(&target, LOST.to_owned()).await, 23.0);

    let admin = s.token("admin").await;
    let audit = s.get("/admin/audit?limit=500", Some(&admin)).await.body;
    let lines: Vec<&Value> =
        audit["entries"].as_array().unwrap().iter().filter(|e| e["action"] == "device.loss").collect();
    assert_eq!(lines.len(), 2, "one line a device a day: {lines:?}");
    let alices =
        lines.iter().find(|l| l["detail"]["deviceId"] == device.as_str()).unwrap_or_else(|| panic!("{lines:?}"));
    let detail = &alices["detail"];
    assert_eq!((detail["reports"].clone(), detail["documents"].clone()), (json!(21), json!(21)), "{detail}");
    assert_eq!(detail["byReason"], json!({"invalidation": 21}));
    assert_eq!(detail["reportIds"].as_array().unwrap().len(), 20, "the first ids, the totals for all: {detail}");
    assert_eq!(detail["lastReportId"], "r-rate-0020");
    assert_eq!(detail["companyId"], "acme");
    // The next day starts a line of its own.
    set_clock(&s, NOON + 86_400_000).await;
    let (alice, admin) = (s.token("alice").await, s.token("admin").await);
    let next = s.post("/devices/losses", Some(&alice), report("r-next-0001", &device, json!({"till": 1}))).await;
    assert_eq!(next.body, json!({"recorded": true}));
    let audit = s.get("/admin/audit?limit=500", Some(&admin)).await.body;
    let lines = audit["entries"].as_array().unwrap().iter().filter(|e| e["action"] == "device.loss").count();
    assert_eq!(lines, 3);
}

fn proven(mut body: Value, proof: Value) -> Value {
    body["deviceProof"] = proof;
    body
}

#[tokio::test]
async fn a_keyed_devices_report_carries_its_proof() {
    let s = spawn().await;
    let target = metrics_listener(&s).await;
    let alice = s.token("alice").await;
    let key = Key::new();
    let connect =
        s.post("/auth/connect", Some(&alice), json!({"sdkVersion": "1.4.17", "publicKey": key.public()})).await;
    let device = connect.body["deviceId"].as_str().unwrap().to_owned();
    let body = report("r-keyed-0001", &device, json!({"till": 3}));
    // A copied access token alone reports nothing for the device.
    assert_error(&s.post("/devices/losses", Some(&alice), body.clone()).await, 401, "device_proof_required");
    let elsewhere = key.prove(&s, routes::REFRESH).await;
    assert_error(
        &s.post("/devices/losses", Some(&alice), proven(body.clone(), elsewhere)).await,
        401,
        "device_proof_required",
    );
    let by_another = Key::new().prove(&s, routes::DEVICE_LOSSES).await;
    assert_error(
        &s.post("/devices/losses", Some(&alice), proven(body.clone(), by_another)).await,
        401,
        "device_proof_required",
    );
    assert_eq!(scraped(&target, LOST.to_owned()).await, 0.0, "nothing stored without the proof");
    let proof = key.prove(&s, routes::DEVICE_LOSSES).await;
    let a = s.post("/devices/losses", Some(&alice), proven(body, proof.clone())).await;
    assert_eq!((a.status.as_u16(), a.body.clone()), (200, json!({"recorded": true})));
    // A proof is good once.
    let replayed = s
        .post("/devices/losses", Some(&alice), proven(report("r-keyed-0002", &device, json!({"till": 1})), proof))
        .await;
    assert_error(&replayed, 401, "device_proof_required");
    assert_eq!(scraped(&target, LOST.to_owned()).await, 3.0);
    // A device the server holds no key for reports unproven.
    let bob = s.token("carol").await;
    let unkeyed = s.register_device(&bob).await;
    let plain = s.post("/devices/losses", Some(&bob), report("r-plain-0001", &unkeyed, json!({"till": 1}))).await;
    assert_eq!(plain.body, json!({"recorded": true}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_runs_beside_the_shared_holders_of_the_store_lock() {
    let cluster = Cluster::start();
    let url = cluster.migrated("reports");
    let s = spawn_with(Settings {
        database_url: Some(url.clone()),
        jwt_secret: Some("0123456789abcdef-loss-reports".into()),
        test_controls: true,
        ..Settings::default()
    })
    .await;
    let alice = s.token("alice").await;
    let device = s.register_device(&alice).await;
    // Another transaction holds the store's lock shared, as a login or a refresh does, until told.
    let (held_tx, held) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let mut tx = client.transaction().unwrap();
        let lock = mock_server::store::on_postgres::STORE_LOCK;
        tx.execute(&format!("SELECT pg_advisory_xact_lock_shared({lock})::text"), &[]).unwrap();
        held_tx.send(()).unwrap();
        release_rx.recv().unwrap();
        tx.commit().unwrap();
    });
    tokio::task::spawn_blocking(move || held.recv().unwrap()).await.unwrap();
    // Were the report to take the lock exclusively, it would wait for the holder, which waits for it.
    let answered = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        s.post("/devices/losses", Some(&alice), report("r-shared-0001", &device, json!({"till": 1}))),
    )
    .await;
    release.send(()).unwrap();
    holder.join().unwrap();
    let answered = answered.expect("the report answered while the lock was held shared");
    assert_eq!((answered.status.as_u16(), answered.body), (200, json!({"recorded": true})));
    // Side by side, one report carried by many tabs at once is still counted once.
    let s = std::sync::Arc::new(s);
    let tabs: Vec<_> = (0..8)
        .map(|_| {
            let (s, alice, device) = (s.clone(), alice.clone(), device.clone());
            tokio::spawn(async move {
                s.post("/devices/losses", Some(&alice), report("r-shared-0002", &device, json!({"till": 5}))).await.body
            })
        })
        .collect();
    let mut recorded = 0;
    for tab in tabs {
        let body = tab.await.unwrap();
        recorded += usize::from(body == json!({"recorded": true}));
        assert!(body == json!({"recorded": true}) || body == json!({"recorded": false}), "{body}");
    }
    assert_eq!(recorded, 1);
    let target = metrics_listener(&s).await;
    assert_eq!(scraped(&target, LOST.to_owned()).await, 6.0);
}
