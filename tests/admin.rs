//! RollingDbAdmin and the management calls from the browser, against the mock server.
#![cfg(target_arch = "wasm32")]

mod support;

use serde_json::json;
use session_broker::js::RollingDbAdmin;
use support::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn code(err: &JsValue) -> JsValue {
    js_sys::Reflect::get(err, &"code".into()).unwrap()
}

#[wasm_bindgen_test]
async fn an_operator_walks_the_canary_through_rolling_db_admin() {
    fresh().await;
    let auth = manager();
    login(&auth, "admin").await;
    let admin = RollingDbAdmin::new(&auth);
    assert_eq!(value(admin.health().unwrap()).await["data"], json!({"status": "ok", "db": true}));
    let tenants = value(admin.tenants().unwrap()).await;
    assert_eq!(tenants["success"], true);
    assert_eq!(tenants["data"]["tenants"].as_array().unwrap().len(), 3);
    let preflight = value(admin.preflight("acme".into()).unwrap()).await;
    assert_eq!(
        (preflight["data"]["rollingDb"]["ready"].clone(), preflight["data"]["rollingDbDrop"]["ready"].clone()),
        (json!(true), json!(false)),
        "{preflight}"
    );
    let flags = value(admin.set_flags("acme".into(), js(json!({"rollingDb": true})), None).unwrap()).await;
    assert_eq!(
        (flags["data"]["rollingDb"].clone(), flags["data"]["updatedBy"].clone()),
        (json!(true), json!("user-admin"))
    );
    let started = value(admin.run_rotate().unwrap()).await;
    assert_eq!((started["status"].clone(), started["data"]["status"].clone()), (json!(202), json!("running")));
    let run_id = started["data"]["runId"].as_str().unwrap().to_owned();
    let mut run = serde_json::Value::Null;
    for _ in 0..100 {
        run = value(admin.cron_run(run_id.clone().into()).unwrap()).await;
        if run["data"]["status"] != "running" {
            break;
        }
        sleep(100).await;
    }
    assert_eq!(run["data"]["status"], "succeeded", "{run}");
    assert_eq!(run["data"]["progress"]["done"], run["data"]["progress"]["total"]);
    let topo = value(admin.topology("acme".into()).unwrap()).await;
    assert_eq!(
        (topo["data"]["database"].clone(), topo["data"]["core"]["docCount"].clone()),
        (json!("core"), json!(17))
    );
    let cluster = value(admin.cluster().unwrap()).await;
    assert_eq!(cluster["data"]["openDbs"], 6);
    assert_eq!(value(admin.reconciliation("acme".into()).unwrap()).await["data"]["diff"], 0);
    assert_eq!(
        value(admin.cleanup_candidates("acme".into()).unwrap()).await["data"]["candidates"].as_array().unwrap().len(),
        2
    );
    assert_eq!(value(admin.crons().unwrap()).await["data"]["crons"][0]["lastResult"], "succeeded");
    assert!(value(admin.invalidate_clients("acme".into()).unwrap()).await["data"]["invalidatedAt"].is_number());
    assert_eq!(value(admin.run_drop_eval().unwrap()).await["status"], 202);
    assert_eq!(value(admin.run_archive().unwrap()).await["status"], 202);
    // The server's refusals come back as values with its words.
    let refused = value(admin.set_flags("acme".into(), js(json!({"rollingDb": "yes"})), None).unwrap()).await;
    assert_eq!((refused["success"].clone(), refused["status"].clone()), (json!(false), json!(400)));
    assert!(refused["error"].as_str().unwrap().contains("rollingDb"));
    let unknown = value(admin.topology("nosuch".into()).unwrap()).await;
    assert_eq!(unknown["status"], 404);
    // Bad arguments never leave the SDK.
    assert_eq!(code(&admin.topology("../crons".into()).unwrap_err()), "invalid_argument");
    assert_eq!(code(&admin.set_flags("acme".into(), js(json!(true)), None).unwrap_err()), "invalid_argument");
    assert_eq!(
        code(
            &admin
                .set_flags("acme".into(), js(json!({})), Some(js(json!({"force": "yes"})).unchecked_into()))
                .unwrap_err()
        ),
        "invalid_argument"
    );
}

#[wasm_bindgen_test]
async fn a_cashier_is_refused_the_console() {
    fresh().await;
    let auth = manager();
    login(&auth, "alice").await;
    let admin = RollingDbAdmin::new(&auth);
    let tenants = value(admin.tenants().unwrap()).await;
    assert_eq!(
        (tenants["success"].clone(), tenants["status"].clone(), tenants["code"].clone()),
        (json!(false), json!(403), json!("forbidden"))
    );
    let run = value(admin.run_rotate().unwrap()).await;
    assert_eq!(run["status"], 403);
    // Signed out: no request at all.
    resolve(auth.logout(None)).await.unwrap();
    let r = value(admin.cluster().unwrap()).await;
    assert_eq!(
        (r["success"].clone(), r["code"].clone(), r["status"].clone()),
        (json!(false), json!("not_signed_in"), json!(0)),
        "{r}"
    );
}

#[wasm_bindgen_test]
async fn management_calls_reach_their_routes() {
    fresh().await;
    let auth = manager();
    login(&auth, "carol").await;
    assert_eq!(value(auth.get_my_user().unwrap()).await["data"]["user"]["username"], "carol");
    let companies = value(auth.get_companies().unwrap()).await;
    assert_eq!(companies["data"]["companies"].as_array().unwrap().len(), 2);
    // Fetching the current company caches its details.
    value(auth.get_company("acme".into()).unwrap()).await;
    assert_eq!(json(&auth.get_current_company()), json!({"id": "acme", "name": "Acme Corp", "storeCode": "main"}));
    let sale = value(
        auth.update_payment_reference("acme".into(), "acme-sale-1".into(), js(json!({"reference": "PAY-1"}))).unwrap(),
    )
    .await;
    assert_eq!(sale["data"]["sale"]["paymentReference"], "PAY-1");
    let added = value(auth.add_device(js(json!({"name": "till 9"}))).unwrap()).await;
    let id = added["data"]["device"]["deviceId"].as_str().unwrap().to_owned();
    assert_eq!(value(auth.get_devices().unwrap()).await["data"]["devices"].as_array().unwrap().len(), 1);
    assert_eq!(value(auth.delete_device(id.into()).unwrap()).await["data"], json!({"ok": true}));
    let denied = value(auth.list_users().unwrap()).await;
    assert_eq!(denied["status"], 403);
    let changed = value(
        auth.update_user(
            "user-carol".into(),
            js(json!({"password": "carol-new-pass", "currentPassword": "carol-pass"})),
        )
        .unwrap(),
    )
    .await;
    assert_eq!(changed["success"], true);
    // The change ended every session of hers, this one included: the next call says so.
    let ended = value(auth.get_my_user().unwrap()).await;
    assert_eq!((ended["status"].clone(), ended["code"].clone()), (json!(401), json!("session_ended")), "{ended}");
    let again = value(auth.login(js(json!({"username": "carol", "password": "carol-new-pass"}))).unwrap()).await;
    assert_eq!(again["success"], true, "{again}");
    assert_eq!(value(auth.delete_user("user-bob".into()).unwrap()).await["status"], 403);
    assert_eq!(value(auth.delete_company("acme".into()).unwrap()).await["status"], 403);
    assert_eq!(value(auth.update_company("globex".into(), js(json!({"name": "G"}))).unwrap()).await["status"], 403);
    assert_eq!(code(&auth.get_company("a/b".into()).unwrap_err()), "invalid_argument");
    assert_eq!(code(&auth.update_user("user-carol".into(), js(json!([1]))).unwrap_err()), "invalid_argument");
}

/// `registerUser` (public sign-up: a new company, its manager) and `createUser` (a manager adds
/// a cashier to its own company; only sys_admin picks roles), as the server answers them.
#[wasm_bindgen_test]
async fn sign_up_and_user_creation_through_the_sdk() {
    fresh().await;
    let auth = manager();
    let signed_up = value(
        auth.register_user(js(json!({"username": "dana", "password": "dana-pass", "companyId": "dana-shop"}))).unwrap(),
    )
    .await;
    assert_eq!(signed_up["status"], 201, "{signed_up}");
    assert_eq!(signed_up["data"]["user"]["roles"], json!(["manager"]));
    assert_eq!(signed_up["data"]["company"]["id"], "dana-shop");
    let taken = value(
        auth.register_user(js(json!({"username": "eve", "password": "eve-pass-1", "companyId": "acme"}))).unwrap(),
    )
    .await;
    assert_eq!(
        (taken["success"].clone(), taken["status"].clone(), taken["code"].clone()),
        (json!(false), json!(409), json!("company_exists"))
    );
    let chose_roles = value(
        auth.register_user(js(json!({"username": "mallory", "password": "mallory-pass", "roles": ["sys_admin"]})))
            .unwrap(),
    )
    .await;
    assert_eq!(chose_roles["status"], 403, "roles cannot be chosen at sign-up");

    // The new manager logs in and creates a cashier in its own company, nowhere else.
    login(&auth, "dana").await;
    let created = value(auth.create_user(js(json!({"username": "frank", "password": "frank-pass-1"}))).unwrap()).await;
    assert_eq!(created["status"], 201, "{created}");
    assert_eq!(
        (created["data"]["user"]["companyId"].clone(), created["data"]["user"]["roles"].clone()),
        (json!("dana-shop"), json!(["cashier"]))
    );
    let elsewhere = value(
        auth.create_user(js(json!({"username": "grace", "password": "grace-pass-1", "companyId": "acme"}))).unwrap(),
    )
    .await;
    assert_eq!(elsewhere["status"], 403);
    let with_roles = value(
        auth.create_user(js(json!({"username": "heidi", "password": "heidi-pass-1", "roles": ["manager"]}))).unwrap(),
    )
    .await;
    assert_eq!(with_roles["status"], 403);
    // A cashier creates nobody.
    login(&auth, "alice").await;
    assert_eq!(
        value(auth.create_user(js(json!({"username": "ivan", "password": "ivan-pass-1"}))).unwrap()).await["status"],
        403
    );
    assert_eq!(code(&auth.create_user(js(json!([1]))).unwrap_err()), "invalid_argument");
}
