//! Devices' losses (docs/operations.md, "Device losses"): a device's report of local data it
//! destroyed unpushed is counted once per report id, raises the tenant's attention with what to
//! do (the rollback on a rolling tenant, the recovery and acknowledgement otherwise), shows on
//! `/metrics` by tenant and reason until answered; a report for another tenant, from another
//! user's session or with counts that are not counts is refused and changes nothing.

use crate::common;

use common::prom::{metrics_listener, scraped};
use common::{assert_error, spawn, Server};
use serde_json::{json, Value};

fn report(id: &str, device: &str, company: &str, lost: Value) -> Value {
    json!({"id": id, "deviceId": device, "companyId": company, "reason": "invalidation", "lost": lost})
}

async fn metric(s: &Server, series: &str) -> f64 {
    scraped(&metrics_listener(s).await, series.to_owned()).await
}

async fn attention(s: &Server, admin: &str) -> Value {
    let tenants = s.get("/admin/rolling-db/tenants", Some(admin)).await.body;
    tenants["tenants"].as_array().unwrap().iter().find(|t| t["companyId"] == "acme").unwrap()["attention"].clone()
}

const LOST: &str = r#"device_lost_documents_total{tenant="acme",reason="invalidation"}"#;
const UNRESOLVED: &str = r#"device_lost_documents_unresolved{tenant="acme",reason="invalidation"}"#;

#[tokio::test]
async fn a_devices_loss_is_counted_once_raised_and_answered() {
    let s = spawn().await;
    let (alice, admin) = (s.token("alice").await, s.token("admin").await);
    let device = s.register_device(&alice).await;
    assert!(attention(&s, &admin).await.is_null());

    let first =
        s.post("/devices/losses", Some(&alice), report("r-00000001", &device, "acme", json!({"till": 3}))).await;
    assert_eq!((first.status.as_u16(), first.body.clone()), (200, json!({"recorded": true})));
    // Another tab, a retry, a reload: the same report again.
    let again =
        s.post("/devices/losses", Some(&alice), report("r-00000001", &device, "acme", json!({"till": 3}))).await;
    assert_eq!((again.status.as_u16(), again.body.clone()), (200, json!({"recorded": false})));
    assert_eq!(metric(&s, LOST).await, 3.0);
    assert_eq!(metric(&s, UNRESOLVED).await, 3.0);
    assert_eq!(metric(&s, r#"rolling_alarms_open{kind="device-data-lost"}"#).await, 1.0);
    let a = attention(&s, &admin).await;
    assert_eq!(a["alarms"][0]["kind"], "device-data-lost", "{a}");
    assert_eq!(a["alarms"][0]["subject"], device.as_str());
    assert!(a["alarms"][0]["detail"].as_str().unwrap().contains("3 document(s)"), "{a}");
    let tenants = s.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
    let acme = tenants["tenants"].as_array().unwrap().iter().find(|t| t["companyId"] == "acme").unwrap().clone();
    assert_eq!(acme["deviceLosses"], json!({"invalidation": 3}), "the console's per-tenant losses by reason");
    // acme is not on the rolling database: no rollback applies.
    let instruction = a["instruction"].as_str().unwrap();
    assert!(instruction.starts_with("Recover the lost orders") && !instruction.contains("Roll back"), "{instruction}");
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    assert!(cluster.to_string().contains("device-data-lost"), "the cluster view's attention too");
    let audit = s.get("/admin/audit", Some(&admin)).await.body.to_string();
    assert_eq!(audit.matches("device.loss\"").count(), 1, "audited once: {audit}");

    // Refused, and nothing changes.
    let bob = s.token("bob").await;
    let bobs_device = s.register_device(&bob).await;
    for (token, body, status, code) in [
        (&alice, report("r-00000002", &device, "globex", json!({"till": 3})), 403, "forbidden"),
        (&bob, report("r-00000003", &bobs_device, "acme", json!({"till": 3})), 403, "forbidden"),
        (&alice, report("r-00000006", &device, "acme", json!({"till": "3"})), 400, "bad_request"),
        (&alice, report("r-00000007", &device, "acme", json!({"till": -1})), 400, "bad_request"),
        (&alice, report("r-00000008", &device, "acme", json!({"till": 1.5})), 400, "bad_request"),
        (&alice, report("r-00000012", &device, "acme", json!({"till": 0})), 400, "bad_request"),
        (&alice, report("r-00000013", &device, "acme", json!({"till": 2, "web": 0})), 400, "bad_request"),
        (&alice, report("r-00000009", &device, "acme", json!({})), 400, "bad_request"),
        (&alice, report("short", &device, "acme", json!({"till": 3})), 400, "bad_request"),
    ] {
        assert_error(&s.post("/devices/losses", Some(token), body.clone()).await, status, code);
    }
    let unknown_reason =
        json!({"id": "r-00000010", "deviceId": device, "companyId": "acme", "reason": "boredom", "lost": {"till": 1}});
    assert_eq!(s.post("/devices/losses", Some(&alice), unknown_reason).await.status.as_u16(), 400);
    assert_eq!(
        s.post("/devices/losses", None, report("r-00000011", &device, "acme", json!({"till": 3})))
            .await
            .status
            .as_u16(),
        401
    );
    assert_eq!(metric(&s, LOST).await, 3.0, "nothing counted for a refusal");
    assert_eq!(metric(&s, r#"device_lost_documents_total{tenant="globex",reason="invalidation"}"#).await, 0.0);
    // A till is shared: acme's orders lost on the device bob registered for globex, found at
    // alice's login there, are reported with her session.
    let shared =
        s.post("/devices/losses", Some(&alice), report("r-00000004", &bobs_device, "acme", json!({"till": 2})));
    assert_eq!(shared.await.body, json!({"recorded": true}));
    // And a deleted device's orders, found at the next login on it: the server no longer knows it.
    let deleted =
        s.post("/devices/losses", Some(&alice), report("r-00000005", "dev-deleted", "acme", json!({"till": 1})));
    assert_eq!(deleted.await.body, json!({"recorded": true}));
    assert_eq!(metric(&s, LOST).await, 6.0);

    // A cashier cannot acknowledge; the operator, having recovered the orders, does.
    let path = "/admin/rolling-db/tenants/acme/losses/acknowledge";
    let ids = json!({"reportIds": ["r-00000001"]});
    assert_eq!(s.post(path, Some(&alice), ids.clone()).await.status.as_u16(), 403);
    assert_eq!(s.post(path, Some(&admin), ids).await.status.as_u16(), 200);
    assert!(!attention(&s, &admin).await.is_null(), "the shared till's and the deleted device's reports stay open");
    let rest = json!({"reportIds": ["r-00000004", "r-00000005"]});
    assert_eq!(s.post(path, Some(&admin), rest).await.status.as_u16(), 200);
    assert!(attention(&s, &admin).await.is_null());
    assert_eq!(metric(&s, UNRESOLVED).await, 0.0);
    assert_eq!(metric(&s, LOST).await, 6.0, "the count of what was lost stays");
}

#[tokio::test]
async fn on_a_rolling_tenant_a_loss_calls_for_the_rollback_which_answers_it() {
    let s = spawn().await;
    let (alice, keys) = (s.token("alice").await, s.token("keys").await);
    let device = s.register_device(&alice).await;
    let on = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDb": true})).await;
    assert_eq!(on.status.as_u16(), 200, "{:?}", on.body);
    let a = s
        .post("/devices/losses", Some(&alice), report("r-00000021", &device, "acme", json!({"till": 2, "payments": 1})))
        .await;
    assert_eq!(a.body, json!({"recorded": true}));
    let admin = s.token("admin").await;
    let instruction = attention(&s, &admin).await["instruction"].as_str().unwrap().to_owned();
    assert!(instruction.starts_with("Roll back now"), "{instruction}");
    assert_eq!(metric(&s, UNRESOLVED).await, 3.0);
    let off = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDb": false})).await;
    assert_eq!(off.status.as_u16(), 200, "{:?}", off.body);
    assert!(attention(&s, &admin).await.is_null(), "the rollback answers it");
    assert_eq!(metric(&s, UNRESOLVED).await, 0.0);
}

#[tokio::test]
async fn a_reset_forgets_the_losses_their_alarm_and_their_ids() {
    let s = spawn().await;
    let alice = s.token("alice").await;
    let device = s.register_device(&alice).await;
    let first =
        s.post("/devices/losses", Some(&alice), report("r-00000031", &device, "acme", json!({"till": 4}))).await;
    assert_eq!(first.body, json!({"recorded": true}));
    assert_eq!(metric(&s, LOST).await, 4.0);
    assert_eq!(s.post("/__mock/reset", None, json!({})).await.status.as_u16(), 200);
    assert_eq!(metric(&s, LOST).await, 0.0, "the counts are gone");
    assert_eq!(metric(&s, r#"rolling_alarms_open{kind="device-data-lost"}"#).await, 0.0, "the alert is gone");
    let admin = s.token("admin").await;
    assert!(attention(&s, &admin).await.is_null());
    // The seed again: the device and its report id are new to the server.
    let alice = s.token("alice").await;
    let device = s.register_device(&alice).await;
    let again =
        s.post("/devices/losses", Some(&alice), report("r-00000031", &device, "acme", json!({"till": 4}))).await;
    assert_eq!(again.body, json!({"recorded": true}), "the used report id is forgotten");
}
