//! Management routes (docs/server.md, management): devices, companies, users, payment references, each with
//! its role and tenant checks and the error body on bad input.

use crate::common;

use common::{assert_error, spawn};
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test]
async fn devices_are_listed_added_and_removed_within_the_tenant() {
    let s = spawn().await;
    let alice = s.token("alice").await;
    let added = s.post("/devices", Some(&alice), json!({"name": "till 1", "sdkVersion": "1.4.17"})).await;
    assert_eq!(added.status, StatusCode::CREATED);
    let id = added.body["device"]["deviceId"].as_str().unwrap().to_owned();
    assert_eq!(s.get("/devices", Some(&alice)).await.body["devices"].as_array().unwrap().len(), 1);
    let bob = s.token("bob").await;
    assert!(
        s.get("/devices", Some(&bob)).await.body["devices"].as_array().unwrap().is_empty(),
        "another tenant sees none"
    );
    assert_error(&s.call(Method::DELETE, &format!("/devices/{id}"), Some(&bob), None).await, 404, "unknown_device");
    let keys = s.token("keys").await;
    assert_error(&s.call(Method::DELETE, &format!("/devices/{id}"), Some(&keys), None).await, 403, "forbidden");
    assert_error(&s.post("/devices", Some(&alice), json!({"sdkVersion": 1})).await, 400, "bad_request");
    assert_eq!(s.call(Method::DELETE, &format!("/devices/{id}"), Some(&alice), None).await.body, json!({"ok": true}));
    assert!(s.get("/devices", Some(&alice)).await.body["devices"].as_array().unwrap().is_empty());
    assert_error(&s.get("/devices", None).await, 401, "missing_token");
}

#[tokio::test]
async fn companies_are_visible_to_members_and_managed_by_managers() {
    let s = spawn().await;
    let carol = s.token("carol").await;
    let ids: Vec<String> = s.get("/companies", Some(&carol)).await.body["companies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["acme", "globex"]);
    let admin = s.token("admin").await;
    assert_eq!(s.get("/companies", Some(&admin)).await.body["companies"].as_array().unwrap().len(), 3);
    assert_eq!(
        s.get("/companies/globex", Some(&carol)).await.body["company"],
        json!({"id": "globex", "name": "Globex Corporation", "storeCode": "main"})
    );
    assert_error(&s.get("/companies/initech", Some(&carol)).await, 403, "forbidden");
    assert_error(&s.get("/companies/nosuch", Some(&admin)).await, 404, "unknown_company");
    assert_error(&s.patch("/companies/acme", Some(&carol), json!({"name": "Acme"})).await, 403, "forbidden");
    let bob = s.token("bob").await;
    let renamed = s.patch("/companies/globex", Some(&bob), json!({"name": "Globex Ltd"})).await;
    assert_eq!(renamed.body["company"]["name"], "Globex Ltd");
    assert_error(&s.patch("/companies/globex", Some(&bob), json!({"name": ""})).await, 400, "bad_request");
    assert_error(&s.patch("/companies/globex", Some(&bob), json!({"name": "x", "id": "y"})).await, 400, "invalid_body");
    assert_error(&s.call(Method::DELETE, "/companies/acme", Some(&bob), None).await, 403, "forbidden");
    assert_error(&s.call(Method::DELETE, "/companies/acme", Some(&admin), None).await, 409, "company_not_empty");
    assert_eq!(s.get("/companies/acme", Some(&admin)).await.status, StatusCode::OK, "nothing lost");
}

#[tokio::test]
async fn payment_references_are_set_on_the_tenants_sales() {
    let s = spawn().await;
    let alice = s.token("alice").await;
    let a = s
        .patch("/companies/acme/sales/acme-sale-2/payment-reference", Some(&alice), json!({"reference": "PAY-42"}))
        .await;
    assert_eq!(
        a.body["sale"],
        json!({"id": "acme-sale-2", "companyId": "acme", "amountCents": 1290, "paymentReference": "PAY-42"})
    );
    assert_error(
        &s.patch("/companies/globex/sales/globex-sale-2/payment-reference", Some(&alice), json!({"reference": "X"}))
            .await,
        403,
        "forbidden",
    );
    assert_error(
        &s.patch("/companies/acme/sales/acme-sale-9/payment-reference", Some(&alice), json!({"reference": "X"})).await,
        404,
        "unknown_sale",
    );
    assert_error(
        &s.patch("/companies/acme/sales/acme-sale-1/payment-reference", Some(&alice), json!({"reference": 5})).await,
        400,
        "invalid_body",
    );
}

#[tokio::test]
async fn users_are_listed_changed_and_removed_by_the_right_roles() {
    let s = spawn().await;
    let alice = s.token("alice").await;
    assert_eq!(s.get("/users/me", Some(&alice)).await.body["user"]["username"], "alice");
    assert_error(&s.get("/users", Some(&alice)).await, 403, "forbidden");
    let bob = s.token("bob").await;
    let globex: Vec<String> = s.get("/users", Some(&bob)).await.body["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(globex, ["bob", "carol"]);
    let admin = s.token("admin").await;
    assert_eq!(s.get("/users", Some(&admin)).await.body["users"].as_array().unwrap().len(), 5);
    assert!(s.get("/users", Some(&admin)).await.body["users"][0].get("password_hash").is_none());

    let changed = s
        .patch(
            "/users/user-alice",
            Some(&alice),
            json!({"password": "a-new-password", "currentPassword": "alice-pass"}),
        )
        .await;
    assert_eq!(changed.status, StatusCode::OK);
    // The change ended every session of hers, the one that made it included.
    assert_error(&s.get("/users/me", Some(&alice)).await, 401, "session_ended");
    let again =
        s.post("/auth", None, json!({"username": "alice", "password": "a-new-password", "deviceInfo": {}})).await;
    assert_eq!(again.status, StatusCode::OK);
    let alice = again.body["token"].as_str().unwrap().to_owned();
    assert_error(&s.patch("/users/user-alice", Some(&alice), json!({"roles": ["sys_admin"]})).await, 403, "forbidden");
    assert_error(&s.patch("/users/user-bob", Some(&alice), json!({"password": "whatever-1"})).await, 403, "forbidden");
    assert_error(&s.patch("/users/user-alice", Some(&alice), json!({"password": "short"})).await, 400, "bad_request");
    assert_error(&s.patch("/users/user-alice", Some(&admin), json!({"roles": "manager"})).await, 400, "invalid_body");
    assert_error(&s.patch("/users/user-alice", Some(&admin), json!({"roles": [""]})).await, 400, "bad_request");
    let promoted = s.patch("/users/user-alice", Some(&admin), json!({"roles": ["manager"]})).await;
    assert_eq!(promoted.body["user"]["roles"], json!(["manager"]));
    assert_error(&s.patch("/users/nosuch", Some(&admin), json!({"roles": []})).await, 404, "unknown_user");

    assert_error(&s.call(Method::DELETE, "/users/user-alice", Some(&bob), None).await, 403, "forbidden");
    assert_error(&s.call(Method::DELETE, "/users/user-admin", Some(&admin), None).await, 409, "cannot_delete_self");
    assert_eq!(s.call(Method::DELETE, "/users/user-alice", Some(&admin), None).await.body, json!({"ok": true}));
    assert_error(
        &s.post("/auth", None, json!({"username": "alice", "password": "a-new-password", "deviceInfo": {}})).await,
        401,
        "invalid_credentials",
    );
    assert_error(&s.call(Method::DELETE, "/users/user-alice", Some(&admin), None).await, 404, "unknown_user");
}

/// A device's deletion ends its user's sessions, so only a caller who may manage that user deletes
/// it: its user, sys_admin, or a manager for a user holding no role above a manager's.
#[tokio::test]
async fn a_manager_deletes_the_devices_of_the_users_it_manages_only() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let made = s.patch("/users/user-alice", Some(&admin), json!({"roles": ["manager"]})).await;
    assert_eq!(made.status, StatusCode::OK, "{:?}", made.body);
    let manager = s.token("alice").await;
    let device_of = |token: String| {
        let s = &s;
        async move { s.register_device(&token).await }
    };
    let (admins, keys, carols) = (
        device_of(admin.clone()).await,
        device_of(s.token("keys").await).await,
        device_of(s.token("carol").await).await,
    );
    for above in [&admins, &keys] {
        let refused = s.call(Method::DELETE, &format!("/devices/{above}"), Some(&manager), None).await;
        assert_error(&refused, 403, "forbidden");
    }
    let listed = s.get("/devices", Some(&admin)).await.body.to_string();
    assert!(listed.contains(&admins) && listed.contains(&keys), "nothing deleted: {listed}");
    let below = s.call(Method::DELETE, &format!("/devices/{carols}"), Some(&manager), None).await;
    assert_eq!(below.body, json!({"ok": true}));
    let by_admin = s.call(Method::DELETE, &format!("/devices/{keys}"), Some(&admin), None).await;
    assert_eq!(by_admin.body, json!({"ok": true}));
}

mod rule {
    use proptest::prelude::*;
    use protocol::permissions::may_end_sessions_of;

    /// The rule as the docs state it, written apart: a rank per role; a manager may end the
    /// sessions of users whose highest rank is at most a manager's, sys_admin anyone's, everyone
    /// their own.
    fn model(caller: &[&str], target: &[&str], own: bool) -> bool {
        let rank = |role: &str| match role {
            "sys_admin" => 3,
            "key_manager" => 2,
            "manager" => 1,
            _ => 0,
        };
        let highest = |roles: &[&str]| roles.iter().map(|r| rank(r)).max().unwrap_or(0);
        own || caller.contains(&"sys_admin") || (caller.contains(&"manager") && highest(target) <= 1)
    }

    proptest! {
        #[test]
        fn the_rule_is_the_models(
            caller in proptest::sample::subsequence(vec!["sys_admin", "key_manager", "manager", "cashier", "x"], 0..4),
            target in proptest::sample::subsequence(vec!["sys_admin", "key_manager", "manager", "cashier", "x"], 0..4),
            own in any::<bool>(),
        ) {
            let strings = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
            prop_assert_eq!(may_end_sessions_of(&strings(&caller), &strings(&target), own), model(&caller, &target, own));
        }
    }
}

/// A user deletes their own device from any of their companies: `GET /devices` lists it there, so
/// the deletion must not answer 404 after a company change (found by the simulator).
#[tokio::test]
async fn a_user_deletes_their_own_device_after_a_company_change() {
    let s = spawn().await;
    let login = s.login("carol").await;
    let acme = login["token"].as_str().unwrap().to_owned();
    let device = s.register_device(&acme).await;
    assert_eq!(s.post("/auth/company", Some(&acme), json!({"companyId": "globex"})).await.status, StatusCode::OK);
    let next = s.post("/auth/refresh", None, json!({"refreshToken": login["refreshToken"]})).await;
    let globex = next.body["token"].as_str().unwrap().to_owned();
    let listed = s.get("/devices", Some(&globex)).await.body;
    assert!(listed["devices"].as_array().unwrap().iter().any(|d| d["deviceId"] == device.as_str()), "{listed}");
    // bob, globex's manager, still cannot reach a device of acme's.
    let bob = s.token("bob").await;
    assert_eq!(s.call(Method::DELETE, &format!("/devices/{device}"), Some(&bob), None).await.status, 404);
    let deleted = s.call(Method::DELETE, &format!("/devices/{device}"), Some(&globex), None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{:?}", deleted.body);
}
