//! The device's key attacked from outside, where it meets the session's older rules: a whole
//! copied localStorage in another browser, faults while the key's own browser proves, odd
//! arguments, a Google sign-in on a keyed device and device deletion by a manager, in Chromium
//! (`ATTACK_ENGINE=firefox` or `webkit` for the others). Each case
//! collects what it saw, so one run reports every broken rule at once.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::browser::{repo_root, serve_with, Browser, Engine};
use mock_server::settings::Settings;

async fn open(b: &Browser, base: &str) {
    b.client.goto(&format!("{base}/index.html")).await.unwrap();
    b.wait_text("#out", "the page to load the package", |t| t == "ready").await;
}

/// `window.sb[what](arg)` in the page, awaited.
async fn call(b: &Browser, what: &str, arg: Value) -> Value {
    let script =
        "const [what, arg, done] = arguments; window.sb[what](arg).then(done, (e) => done({thrown: String(e), code: e && e.code}));";
    b.client.execute_async(script, vec![what.into(), arg]).await.unwrap()
}

async fn stored(b: &Browser, key: &str) -> Option<String> {
    call(b, "storage", Value::Null).await[key].as_str().map(str::to_owned)
}

async fn http(
    method: reqwest::Method,
    base: &str,
    path: &str,
    token: Option<&str>,
    body: Value,
) -> (StatusCode, Value) {
    let mut request = reqwest::Client::new().request(method, format!("{base}{path}")).json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    (response.status(), response.json().await.unwrap_or(Value::Null))
}

async fn me(base: &str, token: &str) -> StatusCode {
    reqwest::Client::new().get(format!("{base}/users/me")).bearer_auth(token).send().await.unwrap().status()
}

fn check(findings: &mut Vec<String>, ok: bool, what: String) {
    if !ok {
        findings.push(what);
    }
}

/// Chromium unless `ATTACK_ENGINE` names `firefox` or `webkit`.
fn engine() -> Engine {
    match std::env::var("ATTACK_ENGINE").as_deref() {
        Ok("firefox") => Engine::Firefox,
        Ok("webkit") => Engine::WebKit,
        _ => Engine::Chromium,
    }
}

async fn server() -> String {
    let settings = Settings { test_controls: true, auth_rate_per_min: 0, ..Settings::default() };
    serve_with(repo_root().join("tests/device-key-attack"), settings).await.0
}

/// alice signed in on a registered device, then again so that her session is bound to the key.
async fn keyed(b: &Browser, base: &str) -> String {
    open(b, base).await;
    assert_eq!(call(b, "login", json!("alice")).await["success"], true);
    let device = call(b, "register", Value::Null).await["deviceId"].as_str().unwrap().to_owned();
    assert_eq!(call(b, "login", json!("alice")).await["success"], true);
    call(b, "sent", Value::Null).await;
    call(b, "signOuts", Value::Null).await;
    device
}

fn unproven_refreshes(sent: &Value) -> Vec<Value> {
    sent.as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            let path = r["path"].as_str().or(r["url"].as_str()).unwrap_or("");
            (path.ends_with("/auth/refresh") || path == "/auth" || path.ends_with("/auth/google"))
                && !r["body"].as_str().unwrap_or("").contains("deviceProof")
        })
        .cloned()
        .collect()
}

#[tokio::test]
#[ignore = "needs the built pkg/ and a browser (ATTACK_ENGINE): run `make test-package`"]
async fn a_whole_copied_local_storage_neither_works_elsewhere_nor_ends_the_original() {
    let base = server().await;
    let a = Browser::start_engine(engine()).await;
    keyed(&a, &base).await;
    let mut findings = Vec::new();

    let b = Browser::start_engine(engine()).await;
    // A logout from the copy, in every scope, carries no proof of A's key: the server refuses it
    // and the copy clears itself alone, so A's session and its others go on.
    for step in ["session", "refresh", "logout-local", "logout-others", "logout-global"] {
        let copy = call(&a, "storage", Value::Null).await;
        open(&b, &base).await;
        call(&b, "replace", copy).await;
        call(&b, "reopen", Value::Null).await;
        call(&b, "sent", Value::Null).await;
        // getSession() refreshes only inside the margin: the copied access token is still fresh,
        // so the copy is pushed into the margin by refreshing explicitly for "refresh".
        let answer = match step {
            "session" => call(&b, "session", Value::Null).await,
            "refresh" => call(&b, "refresh", Value::Null).await,
            "logout-local" => call(&b, "logout", Value::Null).await,
            "logout-others" => call(&b, "logout", json!("others")).await,
            _ => call(&b, "logout", json!("global")).await,
        };
        let sent = call(&b, "sent", Value::Null).await;
        let outs = call(&b, "signOuts", Value::Null).await;
        let left = call(&b, "storage", Value::Null).await;
        eprintln!(
            "copy {step}: {answer} sent {sent} signOuts {outs} storage keys {:?}",
            left.as_object().unwrap().keys().collect::<Vec<_>>()
        );
        if step == "refresh" {
            check(&mut findings, answer == json!(false), format!("copy refresh answered {answer}"));
            check(
                &mut findings,
                outs.to_string().contains("device-unproven"),
                format!("copy refresh: sign-outs {outs}"),
            );
            check(&mut findings, left.get("serviceProxyToken-Refresh").is_none(), format!("copy refresh kept {left}"));
            check(
                &mut findings,
                !sent.to_string().contains("/auth/logout"),
                format!("copy refresh sent a logout: {sent}"),
            );
        }
        if step.starts_with("logout") {
            check(
                &mut findings,
                answer["success"] == false && answer["code"] == "device_proof_required",
                format!("copy {step} answered {answer}"),
            );
            check(
                &mut findings,
                outs.to_string().contains("device-unproven"),
                format!("copy {step}: sign-outs {outs}"),
            );
            check(&mut findings, left.get("serviceProxyToken-Refresh").is_none(), format!("copy {step} kept {left}"));
            let logouts = sent.as_array().unwrap().iter().filter(|r| r["url"] == "/auth/logout").count();
            check(
                &mut findings,
                logouts == 1,
                format!("copy {step}: {logouts} logout calls, not the one refused: {sent}"),
            );
        }
        // Whatever the copy did, the key's own browser goes on.
        let token = call(&a, "token", Value::Null).await;
        let token_ok = token.as_str().is_some() && me(&base, token.as_str().unwrap()).await == StatusCode::OK;
        let refreshed = call(&a, "refresh", Value::Null).await;
        eprintln!("  then A: token works {token_ok}, refresh {refreshed}");
        {
            check(
                &mut findings,
                token_ok && refreshed == json!(true),
                format!("after the copy's {step}, A: token {token_ok} refresh {refreshed}"),
            );
        }
        if !(token_ok && refreshed == json!(true)) {
            // The copy ended the original session: sign A in again for the next step.
            call(&a, "login", json!("alice")).await;
        }
    }
    b.stop().await;
    a.stop().await;
    assert!(findings.is_empty(), "{findings:#?}");
}

#[tokio::test]
#[ignore = "needs the built pkg/ and a browser (ATTACK_ENGINE): run `make test-package`"]
async fn a_proof_that_cannot_be_made_keeps_the_session_and_sends_nothing_unproven() {
    let base = server().await;
    let a = Browser::start_engine(engine()).await;
    keyed(&a, &base).await;
    let mut findings = Vec::new();
    let faults = [
        json!({"idb": true}),
        json!({"sign": true}),
        json!({"nonce": 404}),
        json!({"nonce": 408}),
        json!({"nonce": 429}),
        json!({"nonce": 500}),
        json!({"nonce": "nonjson"}),
        json!({"nonce": "network"}),
    ];
    for fault in faults {
        let before = stored(&a, "serviceProxyToken-Refresh").await;
        call(&a, "fault", fault.clone()).await;
        let refreshed = call(&a, "refresh", Value::Null).await;
        let session = call(&a, "session", Value::Null).await;
        let login = call(&a, "login", json!("alice")).await;
        call(&a, "fault", json!({"idb": false, "sign": false, "nonce": null})).await;
        let sent = call(&a, "sent", Value::Null).await;
        let outs = call(&a, "signOuts", Value::Null).await;
        let after_fault = stored(&a, "serviceProxyToken-Refresh").await;
        let recovered = call(&a, "refresh", Value::Null).await;
        let token = call(&a, "token", Value::Null).await;
        let works = match token.as_str() {
            Some(t) => me(&base, t).await == StatusCode::OK,
            None => false,
        };
        eprintln!("fault {fault}: refresh {refreshed} session {session} login {login} signOuts {outs} then refresh {recovered} works {works}");
        check(
            &mut findings,
            unproven_refreshes(&sent).is_empty(),
            format!("{fault}: sent unproven {:?}", unproven_refreshes(&sent)),
        );
        let only_logins = outs.as_array().unwrap().iter().all(|o| o["reason"] == json!("login"));
        check(&mut findings, only_logins, format!("{fault}: signed out {outs}"));
        check(&mut findings, after_fault.is_some() && before.is_some(), format!("{fault}: session dropped"));
        check(
            &mut findings,
            recovered == json!(true) && works,
            format!("{fault}: after the fault refresh {recovered} works {works}"),
        );
        check(
            &mut findings,
            login["success"] == json!(false) && login["status"] == json!(0) || login["success"] == json!(true),
            format!("{fault}: login {login}"),
        );
        call(&a, "sent", Value::Null).await;
    }
    a.stop().await;
    assert!(findings.is_empty(), "{findings:#?}");
}

#[tokio::test]
#[ignore = "needs the built pkg/ and a browser (ATTACK_ENGINE): run `make test-package`"]
async fn odd_arguments_get_clear_errors_and_the_module_goes_on() {
    let base = server().await;
    let a = Browser::start_engine(engine()).await;
    keyed(&a, &base).await;
    let mut findings = Vec::new();
    for which in ["null", "undefined", "credentials", "url"] {
        let r = call(&a, "fetchArg", json!(which)).await;
        eprintln!("auth.fetch({which}): {r}");
        let want = if which == "url" { r["ok"] == json!(200) } else { r["code"] == json!("invalid_argument") };
        check(&mut findings, want, format!("auth.fetch({which}): {r}"));
    }
    let base_url = call(&a, "urlBase", Value::Null).await;
    eprintln!("baseUrl as URL: {base_url}");
    check(
        &mut findings,
        base_url["ok"] == json!("made") || base_url["code"] == json!("invalid_argument"),
        format!("baseUrl URL: {base_url}"),
    );
    let freed = call(&a, "freed", Value::Null).await;
    eprintln!("freed manager: {freed}");
    check(&mut findings, freed.get("thrown").is_some(), format!("a freed manager answered {freed}"));
    let token = stored(&a, "serviceProxyToken-Auth").await.unwrap();
    let global = call(&a, "logoutString", json!("global")).await;
    let left = stored(&a, "serviceProxyToken-Auth").await;
    let ended = me(&base, &token).await;
    eprintln!("logout(\"global\"): {global}; stored token left {}; the token on the server {ended}", left.is_some());
    check(
        &mut findings,
        global["code"] == json!("invalid_argument") || (left.is_none() && ended == StatusCode::UNAUTHORIZED),
        format!("logout(\"global\"): {global}, local token left {}, server {ended}", left.is_some()),
    );
    // The module still answers after all of it (a panic would have poisoned it).
    call(&a, "login", json!("alice")).await;
    let me_status = call(&a, "me", Value::Null).await;
    check(&mut findings, me_status == json!(200), format!("after the odd arguments auth.fetch answered {me_status}"));
    a.stop().await;
    assert!(findings.is_empty(), "{findings:#?}");
}

#[tokio::test]
#[ignore = "needs the built pkg/ and a browser (ATTACK_ENGINE): run `make test-package`"]
async fn a_google_session_on_a_keyed_device_is_bound_and_ends_with_the_device() {
    let base = server().await;
    let a = Browser::start_engine(engine()).await;
    let device = keyed(&a, &base).await;
    let mut findings = Vec::new();
    let google = call(&a, "google", json!("alice")).await;
    check(&mut findings, google["success"] == json!(true), format!("google {google}"));
    let sent = call(&a, "sent", Value::Null).await;
    eprintln!("google sign-in sent {sent}");
    check(&mut findings, unproven_refreshes(&sent).is_empty(), format!("google sign-in sent unproven: {sent}"));
    let copied = stored(&a, "serviceProxyToken-Refresh").await.unwrap();
    let (status, body) =
        http(reqwest::Method::POST, &base, "/auth/refresh", None, json!({"refreshToken": copied})).await;
    eprintln!("google session's refresh token without proof: {status} {body}");
    check(
        &mut findings,
        status == StatusCode::UNAUTHORIZED && body["error"] == json!("device_proof_required"),
        format!("google refresh unproven: {status} {body}"),
    );
    check(
        &mut findings,
        call(&a, "refresh", Value::Null).await == json!(true),
        "google session's proven refresh".into(),
    );
    let token = stored(&a, "serviceProxyToken-Auth").await.unwrap();
    let deleted = call(&a, "deleteDevice", json!(device)).await;
    check(&mut findings, deleted["success"] == json!(true), format!("delete device {deleted}"));
    let after = me(&base, &token).await;
    let refreshed = call(&a, "refresh", Value::Null).await;
    eprintln!("after the device's deletion: token {after}, refresh {refreshed}");
    check(
        &mut findings,
        after == StatusCode::UNAUTHORIZED && refreshed == json!(false),
        format!("google session after device deletion: {after} {refreshed}"),
    );
    a.stop().await;
    assert!(findings.is_empty(), "{findings:#?}");
}

#[tokio::test]
#[ignore = "needs the built pkg/: run `make test-package`"]
async fn a_manager_cannot_delete_the_devices_of_the_users_above_it() {
    let base = server().await;
    let mut findings = Vec::new();
    let login = |u: &'static str, device: Option<Value>| {
        let base = base.clone();
        async move {
            let mut body = json!({"username": u, "password": format!("{u}-pass")});
            if let Some(d) = device {
                body["deviceInfo"] = d;
            }
            let (s, b) = http(reqwest::Method::POST, &base, "/auth", None, body).await;
            assert_eq!(s, StatusCode::OK, "{u}: {b}");
            b
        }
    };
    let admin = login("admin", None).await;
    let admin_token = admin["token"].as_str().or(admin["accessToken"].as_str()).unwrap().to_owned();
    let (s, b) = http(
        reqwest::Method::POST,
        &base,
        "/register-user",
        Some(&admin_token),
        json!({"username": "mgr", "password": "mgr-pass", "companyId": "acme", "roles": ["manager"]}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    for above in ["admin", "keys"] {
        let first = login(above, None).await;
        let t = first["token"].as_str().or(first["accessToken"].as_str()).unwrap().to_owned();
        let (s, d) =
            http(reqwest::Method::POST, &base, "/devices", Some(&t), json!({"name": format!("{above}'s till")})).await;
        assert_eq!(s, StatusCode::CREATED, "{d}");
        let device = d["device"]["deviceId"].as_str().unwrap().to_owned();
        let session = login(above, Some(json!({"id": device}))).await;
        let session_token = session["token"].as_str().or(session["accessToken"].as_str()).unwrap().to_owned();
        let mgr = login("mgr", None).await;
        let mgr_token = mgr["token"].as_str().or(mgr["accessToken"].as_str()).unwrap().to_owned();
        let (s, b) =
            http(reqwest::Method::DELETE, &base, &format!("/devices/{device}"), Some(&mgr_token), Value::Null).await;
        let after = me(&base, &session_token).await;
        eprintln!("manager deletes {above}'s device: {s} {b}; {above}'s session then {after}");
        check(
            &mut findings,
            s == StatusCode::FORBIDDEN && after == StatusCode::OK,
            format!("a manager deleted {above}'s device: {s} {b}, {above}'s session then {after}"),
        );
    }
    assert!(findings.is_empty(), "{findings:#?}");
}

async fn in_tab(b: &Browser, tab: &fantoccini::wd::WindowHandle) {
    b.client.switch_to_window(tab.clone()).await.unwrap();
}

async fn wait_done(b: &Browser, tab: &fantoccini::wd::WindowHandle) -> Value {
    in_tab(b, tab).await;
    for _ in 0..300 {
        let done = call(b, "done", Value::Null).await;
        if !done.is_null() {
            return done;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Value::Null
}

fn refresh_tokens_sent(sent: &Value) -> Vec<String> {
    sent.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["url"].as_str().unwrap_or("").ends_with("/auth/refresh"))
        .filter_map(|r| {
            serde_json::from_str::<Value>(r["body"].as_str()?).ok()?["refreshToken"].as_str().map(str::to_owned)
        })
        .collect()
}

#[tokio::test]
#[ignore = "needs the built pkg/ and a browser (ATTACK_ENGINE): run `make test-package`"]
async fn two_tabs_with_a_slow_nonce_and_a_slow_refresh_spend_each_token_once_and_a_logout_wins() {
    let settings =
        Settings { test_controls: true, auth_rate_per_min: 0, refresh_reuse_grace_secs: 0, ..Settings::default() };
    let base = serve_with(repo_root().join("tests/device-key-attack"), settings).await.0;
    let b = Browser::start_engine(engine()).await;
    keyed(&b, &base).await;
    let one = b.client.window().await.unwrap();
    let two = b.client.new_window(true).await.unwrap().handle;
    in_tab(&b, &two).await;
    open(&b, &base).await;
    let mut findings = Vec::new();

    // Both tabs refresh at once, the nonce and the refresh's answer slow.
    for tab in [&one, &two] {
        in_tab(&b, tab).await;
        call(&b, "fault", json!({"slowNonce": 2000, "slowRefresh": 2000})).await;
        call(&b, "sent", Value::Null).await;
        call(&b, "signOuts", Value::Null).await;
    }
    for tab in [&one, &two] {
        in_tab(&b, tab).await;
        call(&b, "start", json!("refresh")).await;
    }
    let answers = [wait_done(&b, &one).await, wait_done(&b, &two).await];
    let mut spent = Vec::new();
    let mut outs = Vec::new();
    for tab in [&one, &two] {
        in_tab(&b, tab).await;
        spent.extend(refresh_tokens_sent(&call(&b, "sent", Value::Null).await));
        outs.push(call(&b, "signOuts", Value::Null).await);
    }
    let mut unique = spent.clone();
    unique.sort();
    unique.dedup();
    eprintln!(
        "two refreshes: answers {answers:?}, tokens spent {}, distinct {}, sign-outs {outs:?}",
        spent.len(),
        unique.len()
    );
    check(&mut findings, unique.len() == spent.len(), format!("a refresh token was sent twice: {spent:?}"));
    check(&mut findings, outs.iter().all(|o| o == &json!([])), format!("signed out: {outs:?}"));
    let token = call(&b, "token", Value::Null).await;
    let works = match token.as_str() {
        Some(t) => me(&base, t).await == StatusCode::OK,
        None => false,
    };
    check(&mut findings, works, format!("after the two refreshes the token {token}"));

    // logout() in tab one while tab two's refresh of the same session is in flight.
    in_tab(&b, &two).await;
    call(&b, "fault", json!({"slowNonce": 0, "slowRefresh": 3000})).await;
    call(&b, "start", json!("refresh")).await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    in_tab(&b, &one).await;
    call(&b, "fault", json!({"slowNonce": 0, "slowRefresh": 0})).await;
    let logout = call(&b, "logout", Value::Null).await;
    let refreshed = wait_done(&b, &two).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let mut heard = Vec::new();
    for tab in [&one, &two] {
        in_tab(&b, tab).await;
        let left = call(&b, "storage", Value::Null).await;
        let kept: Vec<_> = left
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| k.ends_with("-Auth") || k.ends_with("-Refresh"))
            .cloned()
            .collect();
        check(&mut findings, kept.is_empty(), format!("after the logout the storage keeps {kept:?}"));
        heard.push(call(&b, "signOuts", Value::Null).await);
    }
    eprintln!("logout racing a refresh: logout {logout}, refresh {refreshed}, sign-outs heard {heard:?}");
    check(
        &mut findings,
        heard.iter().all(|h| h.as_array().is_some_and(|a| !a.is_empty())),
        format!("a tab did not hear the sign-out: {heard:?}"),
    );
    b.stop().await;
    assert!(findings.is_empty(), "{findings:#?}");
}

#[tokio::test]
#[ignore = "needs the built pkg/ and a browser (ATTACK_ENGINE): run `make test-package`"]
async fn a_key_store_failing_from_the_page_start_keeps_the_session_and_sends_nothing_unproven() {
    let base = server().await;
    let a = Browser::start_engine(engine()).await;
    keyed(&a, &base).await;
    let before = stored(&a, "serviceProxyToken-Refresh").await;
    let mut findings = Vec::new();
    a.client.goto(&format!("{base}/index.html?faults=%7B%22idb%22%3Atrue%7D")).await.unwrap();
    a.wait_text("#out", "the page to load the package", |t| t == "ready").await;
    let refreshed = call(&a, "refresh", Value::Null).await;
    let session = call(&a, "session", Value::Null).await;
    let login = call(&a, "login", json!("alice")).await;
    let sent = call(&a, "sent", Value::Null).await;
    let outs = call(&a, "signOuts", Value::Null).await;
    let kept = stored(&a, "serviceProxyToken-Refresh").await;
    eprintln!("key store failing from the start: refresh {refreshed} session {session} login {login} sent {sent} signOuts {outs}");
    check(
        &mut findings,
        unproven_refreshes(&sent).is_empty(),
        format!("sent unproven {:?}", unproven_refreshes(&sent)),
    );
    check(&mut findings, outs == json!([]), format!("signed out {outs}"));
    check(
        &mut findings,
        kept.is_some() && kept == before,
        format!("the session changed or went: {before:?} -> {kept:?}"),
    );
    open(&a, &base).await;
    let recovered = call(&a, "refresh", Value::Null).await;
    check(&mut findings, recovered == json!(true), format!("after the fault refresh {recovered}"));
    a.stop().await;
    assert!(findings.is_empty(), "{findings:#?}");
}

#[tokio::test]
#[ignore = "needs the built pkg/ and a browser (ATTACK_ENGINE): run `make test-package`"]
async fn get_session_inside_the_margin_says_why_for_a_copy_and_for_a_passing_fault() {
    let base = server().await;
    let a = Browser::start_engine(engine()).await;
    keyed(&a, &base).await;
    let mut findings = Vec::new();

    // The copy, its access token about to expire: getSession() refreshes and is refused.
    let b = Browser::start_engine(engine()).await;
    let copy = call(&a, "storage", Value::Null).await;
    open(&b, &base).await;
    call(&b, "replace", copy).await;
    call(&b, "nearExpiry", Value::Null).await;
    call(&b, "reopen", Value::Null).await;
    let session = call(&b, "session", Value::Null).await;
    let outs = call(&b, "signOuts", Value::Null).await;
    let sent = call(&b, "sent", Value::Null).await;
    eprintln!("copy's getSession inside the margin: {session}, sign-outs {outs}, sent {sent}");
    check(&mut findings, session["error"] == json!("device_proof_required"), format!("copy getSession {session}"));
    check(&mut findings, !sent.to_string().contains("/auth/logout"), format!("the copy sent a logout: {sent}"));
    let refreshed = call(&a, "refresh", Value::Null).await;
    check(&mut findings, refreshed == json!(true), format!("A after the copy's getSession: refresh {refreshed}"));
    b.stop().await;

    // The key's own browser, the nonce route failing, inside the margin.
    call(&a, "nearExpiry", Value::Null).await;
    call(&a, "reopen", Value::Null).await;
    call(&a, "fault", json!({"nonce": 500})).await;
    call(&a, "sent", Value::Null).await;
    let session = call(&a, "session", Value::Null).await;
    let me_status = call(&a, "me", Value::Null).await;
    let sent = call(&a, "sent", Value::Null).await;
    call(&a, "fault", json!({"nonce": null})).await;
    let outs = call(&a, "signOuts", Value::Null).await;
    let after = call(&a, "session", Value::Null).await;
    eprintln!("A inside the margin, nonce 500: getSession {session}, auth.fetch {me_status}, sent {sent}, sign-outs {outs}, then {after}");
    check(&mut findings, session["error"] == json!("network"), format!("A getSession under the fault {session}"));
    check(&mut findings, unproven_refreshes(&sent).is_empty(), format!("A sent unproven {sent}"));
    check(&mut findings, outs == json!([]), format!("A signed out {outs}"));
    check(&mut findings, after["session"] == json!(true), format!("A after the fault {after}"));
    a.stop().await;
    assert!(findings.is_empty(), "{findings:#?}");
}

#[tokio::test]
#[ignore = "needs the built pkg/ and a browser (ATTACK_ENGINE): run `make test-package`"]
async fn a_copy_registering_its_own_key_for_the_device_gains_nothing_and_takes_nothing() {
    let base = server().await;
    let a = Browser::start_engine(engine()).await;
    let device = keyed(&a, &base).await;
    let mut findings = Vec::new();
    let b = Browser::start_engine(engine()).await;
    let copy = call(&a, "storage", Value::Null).await;
    open(&b, &base).await;
    call(&b, "replace", copy).await;
    call(&b, "reopen", Value::Null).await;
    let registered = call(&b, "register", Value::Null).await;
    let b_refresh = call(&b, "refresh", Value::Null).await;
    let b_login = call(&b, "login", json!("alice")).await;
    let b_device = stored(&b, "serviceProxyToken-deviceId").await;
    let b_refresh_after_login = call(&b, "refresh", Value::Null).await;
    // Signed in with the password, unbound: the copy now registers its own key.
    let registered_again = call(&b, "register", Value::Null).await;
    let b_refresh_keyed = call(&b, "refresh", Value::Null).await;
    eprintln!("copy registers after its own login: {registered_again}, then refresh {b_refresh_keyed}");
    check(
        &mut findings,
        registered_again["deviceId"] != json!(device),
        format!("the copy's key was registered as A's device: {registered_again}"),
    );
    let a_refresh = call(&a, "refresh", Value::Null).await;
    let a_login = call(&a, "login", json!("alice")).await;
    let a_refresh_after = call(&a, "refresh", Value::Null).await;
    eprintln!(
        "copy registers: {registered}; copy refresh {b_refresh}; copy login {}; copy device {b_device:?} (A's {device}); copy refresh after its login {b_refresh_after_login}; A refresh {a_refresh}, A login {}, A refresh {a_refresh_after}",
        b_login["success"], a_login["success"]
    );
    check(
        &mut findings,
        registered["deviceId"] != json!(device) || b_refresh == json!(false),
        format!("the copy's key joined A's device: {registered}, refresh {b_refresh}"),
    );
    check(
        &mut findings,
        a_refresh == json!(true) && a_login["success"] == json!(true) && a_refresh_after == json!(true),
        format!("A after the copy registered: {a_refresh} {a_login} {a_refresh_after}"),
    );
    b.stop().await;
    a.stop().await;
    assert!(findings.is_empty(), "{findings:#?}");
}
