//! The acknowledgement of a tenant's device losses names what was reviewed (docs/operations.md,
//! "Device losses"): `GET …/tenants/{id}/losses` lists the open reports, oldest first; the
//! acknowledgement resolves exactly the reports it names (a report that came after stays open, and
//! so does the alarm while any is); a bad list changes nothing; a rolling tenant is refused (the
//! rollback answers there); whoever may acknowledge may read what they acknowledge.

use crate::common;

use common::prom::{metrics_listener, scraped};
use common::{assert_error, spawn, Server};
use serde_json::{json, Value};

const ACK: &str = "/admin/rolling-db/tenants/acme/losses/acknowledge";
const LIST: &str = "/admin/rolling-db/tenants/acme/losses";
const UNRESOLVED: &str = r#"device_lost_documents_unresolved{tenant="acme",reason="invalidation"}"#;

async fn lose(s: &Server, token: &str, device: &str, company: &str, id: &str, n: u64) {
    let body =
        json!({"id": id, "deviceId": device, "companyId": company, "reason": "invalidation", "lost": {"till": n}});
    let a = s.post("/devices/losses", Some(token), body).await;
    assert_eq!(a.body, json!({"recorded": true}), "{id}");
}

async fn open_ids(s: &Server, token: &str) -> Vec<String> {
    let a = s.get(LIST, Some(token)).await;
    assert_eq!(a.status.as_u16(), 200, "{:?}", a.body);
    a.body["reports"].as_array().unwrap().iter().map(|r| r["reportId"].as_str().unwrap().to_owned()).collect()
}

async fn attention(s: &Server, admin: &str) -> Value {
    let tenants = s.get("/admin/rolling-db/tenants", Some(admin)).await.body;
    tenants["tenants"].as_array().unwrap().iter().find(|t| t["companyId"] == "acme").unwrap()["attention"].clone()
}

#[tokio::test]
async fn the_acknowledgement_resolves_exactly_the_reports_it_names() {
    let s = spawn().await;
    let target = metrics_listener(&s).await;
    let (alice, keys, admin) = (s.token("alice").await, s.token("keys").await, s.token("admin").await);
    let device = s.register_device(&alice).await;
    lose(&s, &alice, &device, "acme", "r-ack-000001", 2).await;
    lose(&s, &alice, &device, "acme", "r-ack-000002", 3).await;

    // What the operator reviews: the open reports, oldest first, readable by who acknowledges.
    let listed = s.get(LIST, Some(&keys)).await;
    assert_eq!(listed.status.as_u16(), 200, "{:?}", listed.body);
    assert_eq!(listed.body["companyId"], "acme");
    let first = &listed.body["reports"][0];
    assert_eq!(
        (first["reportId"].clone(), first["deviceId"].clone(), first["reason"].clone()),
        (json!("r-ack-000001"), json!(device), json!("invalidation"))
    );
    assert_eq!((first["documents"].clone(), first["lost"].clone()), (json!(2), json!({"till": 2})));
    assert!(first["reportedAt"].as_i64().is_some(), "{first}");
    assert_eq!(open_ids(&s, &admin).await, ["r-ack-000001", "r-ack-000002"]);
    assert_error(&s.get(LIST, Some(&alice)).await, 403, "forbidden");
    assert_error(&s.post(ACK, Some(&alice), json!({"reportIds": ["r-ack-000001"]})).await, 403, "forbidden");

    // A list that is not the tenant's reports changes nothing.
    let bob = s.token("bob").await;
    let bobs = s.register_device(&bob).await;
    lose(&s, &bob, &bobs, "globex", "r-globex-0001", 1).await;
    let too_many: Vec<String> = (0..501).map(|i| format!("r-ack-{i:06}")).collect();
    for body in [
        json!({"reportIds": []}),
        json!({"reportIds": too_many}),
        json!({"reportIds": ["r-ack-000001", "r-nobody-001"]}),
        json!({"reportIds": ["r-globex-0001"]}),
    ] {
        assert_error(&s.post(ACK, Some(&keys), body).await, 400, "bad_request");
    }
    assert_eq!(s.post(ACK, Some(&keys), json!({})).await.status.as_u16(), 400);
    assert_eq!(open_ids(&s, &admin).await, ["r-ack-000001", "r-ack-000002"], "nothing changed");

    // The first reviewed: it alone is resolved; the alarm stays for the other.
    let a = s.post(ACK, Some(&keys), json!({"reportIds": ["r-ack-000001"]})).await;
    assert_eq!(a.body, json!({"companyId": "acme", "acknowledged": ["r-ack-000001"], "open": 1}));
    assert!(!attention(&s, &admin).await.is_null());
    assert_eq!(scraped(&target, UNRESOLVED.to_owned()).await, 3.0);
    // A report that comes after the operator looked stays open through an acknowledgement of what
    // was seen; one resolved already is no error.
    lose(&s, &alice, &device, "acme", "r-ack-000003", 4).await;
    let a = s.post(ACK, Some(&keys), json!({"reportIds": ["r-ack-000001", "r-ack-000002"]})).await;
    assert_eq!(a.body, json!({"companyId": "acme", "acknowledged": ["r-ack-000002"], "open": 1}));
    assert_eq!(open_ids(&s, &admin).await, ["r-ack-000003"]);
    assert!(!attention(&s, &admin).await.is_null(), "the late report keeps the alarm");
    assert_eq!(scraped(&target, UNRESOLVED.to_owned()).await, 4.0);
    let a = s.post(ACK, Some(&admin), json!({"reportIds": ["r-ack-000003"]})).await;
    assert_eq!(a.body, json!({"companyId": "acme", "acknowledged": ["r-ack-000003"], "open": 0}));
    assert!(attention(&s, &admin).await.is_null(), "nothing open: the alarm clears");
    assert_eq!(scraped(&target, UNRESOLVED.to_owned()).await, 0.0);
    let a = s.post(ACK, Some(&admin), json!({"reportIds": ["r-ack-000003"]})).await;
    assert_eq!(a.body, json!({"companyId": "acme", "acknowledged": [], "open": 0}), "idempotent");

    let audit = s.get("/admin/audit", Some(&admin)).await.body;
    let acks: Vec<&Value> =
        audit["entries"].as_array().unwrap().iter().filter(|e| e["action"] == "device.loss_acknowledged").collect();
    assert_eq!(acks.len(), 4, "{acks:?}");
    assert_eq!(acks[1]["detail"]["acknowledged"], json!(["r-ack-000003"]), "newest first: {acks:?}");
}

#[tokio::test]
async fn on_a_rolling_tenant_the_acknowledgement_is_refused_the_rollback_answers() {
    let s = spawn().await;
    let (alice, keys, admin) = (s.token("alice").await, s.token("keys").await, s.token("admin").await);
    let device = s.register_device(&alice).await;
    let on = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDb": true})).await;
    assert_eq!(on.status.as_u16(), 200, "{:?}", on.body);
    lose(&s, &alice, &device, "acme", "r-roll-00001", 1).await;
    assert_error(&s.post(ACK, Some(&keys), json!({"reportIds": ["r-roll-00001"]})).await, 409, "conflict");
    assert_eq!(open_ids(&s, &admin).await, ["r-roll-00001"], "nothing changed");
    assert!(attention(&s, &admin).await["instruction"].as_str().unwrap().starts_with("Roll back now"));
    let off = s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDb": false})).await;
    assert_eq!(off.status.as_u16(), 200, "{:?}", off.body);
    assert!(open_ids(&s, &admin).await.is_empty(), "the rollback answered it");
    assert_error(&s.get("/admin/rolling-db/tenants/nowhere/losses", Some(&admin)).await, 404, "unknown_tenant");
}
