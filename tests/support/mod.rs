//! Helpers shared by the browser suites: the test server's URL, JS ⇄ JSON, promises, storage,
//! IndexedDB and the mock server's test controls.
#![allow(dead_code)]

use gloo_net::http::Request;
use js_sys::{Function, Promise};
use serde_json::Value;
use session_broker::js::AuthManager;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// Handed in at compile time by tests/run-browser.sh (the server runs on a free port).
pub fn base_url() -> String {
    option_env!("SB_TEST_URL").expect("SB_TEST_URL: run the browser tests through `make test`").to_owned()
}

pub fn js(value: Value) -> JsValue {
    js_sys::JSON::parse(&value.to_string()).unwrap()
}

pub fn json(value: &JsValue) -> Value {
    if value.is_undefined() {
        return Value::Null;
    }
    serde_json::from_str(&js_sys::JSON::stringify(value).unwrap().as_string().unwrap()).unwrap()
}

pub async fn resolve(p: Promise) -> Result<JsValue, JsValue> {
    JsFuture::from(p).await
}

pub async fn value(p: Promise) -> Value {
    json(&resolve(p).await.expect("promise rejected"))
}

pub fn storage() -> web_sys::Storage {
    web_sys::window().unwrap().local_storage().unwrap().unwrap()
}

/// Every `localStorage` key and value, sorted.
pub fn storage_snapshot() -> Vec<(String, String)> {
    let s = storage();
    let mut all: Vec<(String, String)> = (0..s.length().unwrap())
        .filter_map(|i| s.key(i).unwrap())
        .map(|k| (k.clone(), s.get_item(&k).unwrap().unwrap()))
        .collect();
    all.sort();
    all
}

pub fn item(key: &str) -> Option<String> {
    storage().get_item(key).unwrap()
}

pub fn manager() -> AuthManager {
    manager_for(&base_url())
}

pub fn manager_for(base: &str) -> AuthManager {
    AuthManager::new(js(serde_json::json!({ "baseUrl": base }))).unwrap()
}

/// A fresh page state and a fresh server seed.
pub async fn fresh() {
    storage().clear().unwrap();
    mock_post("/__mock/reset", serde_json::json!({})).await;
}

pub async fn mock_post(path: &str, body: Value) -> Value {
    let res = Request::post(&format!("{}{path}", base_url()))
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .unwrap()
        .send()
        .await
        .unwrap();
    serde_json::from_str(&res.text().await.unwrap()).unwrap()
}

pub async fn post_with_token(path: &str, token: &str, body: Value) -> (u16, Value) {
    let res = Request::post(&format!("{}{path}", base_url()))
        .header("Content-Type", "application/json")
        .header("Authorization", &format!("Bearer {token}"))
        .body(body.to_string())
        .unwrap()
        .send()
        .await
        .unwrap();
    (res.status(), serde_json::from_str(&res.text().await.unwrap()).unwrap_or(Value::Null))
}

/// How many times the server has seen `route` ("POST /auth/refresh").
pub async fn hits(route: &str) -> u64 {
    let res = Request::get(&format!("{}/__mock/stats", base_url())).send().await.unwrap();
    let stats: Value = serde_json::from_str(&res.text().await.unwrap()).unwrap();
    stats["requests"][route].as_u64().unwrap_or(0)
}

pub async fn login(m: &AuthManager, user: &str) -> Value {
    let r =
        value(m.login(js(serde_json::json!({"username": user, "password": format!("{user}-pass")}))).unwrap()).await;
    assert_eq!(r["success"], true, "{r}");
    r
}

/// A JS function recording each call's first argument (as JSON) into `log` under `tag`.
pub fn recorder(log: &std::rc::Rc<std::cell::RefCell<Vec<String>>>, tag: &'static str) -> JsValue {
    let log = log.clone();
    Closure::<dyn FnMut(JsValue)>::new(move |arg: JsValue| log.borrow_mut().push(format!("{tag} {}", json(&arg))))
        .into_js_value()
}

pub fn js_fn(args: &str, body: &str) -> JsValue {
    Function::new_with_args(args, body).into()
}

/// Creates an IndexedDB database with one object store, then closes it.
pub async fn create_idb(name: &str) {
    let factory = web_sys::window().unwrap().indexed_db().unwrap().unwrap();
    let request = factory.open_with_u32(name, 1).unwrap();
    let upgrade = Closure::<dyn FnMut(web_sys::Event)>::new(|e: web_sys::Event| {
        let req: web_sys::IdbOpenDbRequest = e.target().unwrap().unchecked_into();
        let db: web_sys::IdbDatabase = req.result().unwrap().unchecked_into();
        db.create_object_store("docs").unwrap();
    });
    request.set_onupgradeneeded(Some(upgrade.as_ref().unchecked_ref()));
    let done = Promise::new(&mut |resolve, reject| {
        request.set_onsuccess(Some(&resolve));
        request.set_onerror(Some(&reject));
    });
    let _ = JsFuture::from(done).await.unwrap();
    let db: web_sys::IdbDatabase = request.result().unwrap().unchecked_into();
    db.close();
    drop(upgrade);
}

/// Whether an IndexedDB database of that name exists (opening must not create it).
pub async fn idb_exists(name: &str) -> bool {
    let factory = web_sys::window().unwrap().indexed_db().unwrap().unwrap();
    // indexedDB.databases() is not in web-sys's stable API; call it directly.
    let databases: Function = js_sys::Reflect::get(&factory, &"databases".into()).unwrap().unchecked_into();
    let list = JsFuture::from(databases.call0(&factory).unwrap().unchecked_into::<Promise>()).await.unwrap();
    json(&list).as_array().unwrap().iter().any(|d| d["name"] == name)
}

/// Resolves after `ms` milliseconds.
pub async fn sleep(ms: i32) {
    let p = Promise::new(&mut |resolve, _| {
        web_sys::window().unwrap().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms).unwrap();
    });
    JsFuture::from(p).await.unwrap();
}

/// Polls `check` every 100 ms for up to 15 s.
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..150 {
        if check() {
            return;
        }
        sleep(100).await;
    }
    panic!("timed out waiting for: {what}");
}

pub async fn token_for(user: &str) -> String {
    let (status, body) = call(
        "POST",
        "/auth",
        None,
        Some(serde_json::json!({"username": user, "password": format!("{user}-pass"), "deviceInfo": {}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["token"].as_str().unwrap().to_owned()
}

/// Any call against the test server, as an operator's tool would make it.
pub async fn call(method: &str, path: &str, token: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let url = format!("{}{path}", base_url());
    let mut builder = gloo_net::http::RequestBuilder::new(&url).method(method.parse().unwrap());
    if let Some(t) = token {
        builder = builder.header("Authorization", &format!("Bearer {t}"));
    }
    let request = match body {
        Some(b) => builder.header("Content-Type", "application/json").body(b.to_string()).unwrap(),
        None => builder.build().unwrap(),
    };
    let res = request.send().await.unwrap();
    (res.status(), serde_json::from_str(&res.text().await.unwrap()).unwrap_or(Value::Null))
}

/// Runs a cron as an operator and waits for it to finish.
pub async fn run_cron(admin: &str, cron: &str) -> Value {
    let (status, started) =
        call("POST", &format!("/admin/crons/{cron}/run"), Some(admin), Some(serde_json::json!({}))).await;
    assert_eq!(status, 202, "{started}");
    let id = started["runId"].as_str().unwrap().to_owned();
    for _ in 0..150 {
        let (_, run) = call("GET", &format!("/admin/crons/runs/{id}"), Some(admin), None).await;
        if run["status"] != "running" {
            return run;
        }
        sleep(100).await;
    }
    panic!("run {id} did not finish");
}

/// How many records the local catalogue database `name` holds.
pub async fn idb_count(name: &str) -> u32 {
    let factory = web_sys::window().unwrap().indexed_db().unwrap().unwrap();
    let request = factory.open(name).unwrap();
    let done = Promise::new(&mut |resolve, reject| {
        request.set_onsuccess(Some(&resolve));
        request.set_onerror(Some(&reject));
    });
    JsFuture::from(done).await.unwrap();
    let db: web_sys::IdbDatabase = request.result().unwrap().unchecked_into();
    let tx = db.transaction_with_str("docs").unwrap();
    let count = tx.object_store("docs").unwrap().count().unwrap();
    let done = Promise::new(&mut |resolve, reject| {
        count.set_onsuccess(Some(&resolve));
        count.set_onerror(Some(&reject));
    });
    JsFuture::from(done).await.unwrap();
    let n = count.result().unwrap().as_f64().unwrap() as u32;
    db.close();
    n
}
