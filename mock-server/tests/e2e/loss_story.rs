//! A till's lost orders from the browser to the operator, in Chromium, Firefox and WebKit: a till
//! app in two tabs (tests/loss-story/, tabs of tests/ledger/tab.html) with PouchDB on PouchDB
//! Server through the document proxy, behind a relay (relay.rs); the document side down, three
//! orders written, the operator's invalidation destroys them unpushed; the relay passes the
//! device's report on and holds the server's answer while both tabs reload, so the reloaded app
//! sends it again. The server counts it once (`device_lost_documents_total` 3), the alert rules
//! fed that scrape page for the recovery (`promtool test rules`), the console shows it, and its
//! **Acknowledge losses…** clears it.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use super::alerts::expect_after_scrape;
use super::browser::{repo_root, Browser, Engine};
use super::relay::{Relay, Rewrite};
use super::serve_on_engine;
use mock_server::state::AppState;

const LOSSES: &str = "/devices/losses";
const LOST: &str = r#"device_lost_documents_total{tenant="acme",reason="invalidation"}"#;
const UNRESOLVED: &str = r#"device_lost_documents_unresolved{tenant="acme",reason="invalidation"}"#;
/// The loss alerts that fire, each with its tenant, reason and step.
const LOSS_ALERTS: &str =
    r#"group by (alertname, tenant, reason, step) (ALERTS{alertstate="firing", alertname=~"DeviceOrdersLost.*"})"#;

/// `window.story[what](...args)` in the page, awaited; its value (a failure is the test's).
async fn story(b: &Browser, what: &str, args: Value) -> Value {
    let script = "const [what, args, done] = arguments; window.story[what](...args).then(done);";
    let answer = b.client.execute_async(script, vec![what.into(), args.clone()]).await.unwrap();
    assert!(answer["error"].is_null(), "story.{what}({args}): {}", answer["error"]);
    answer["value"].clone()
}

async fn tab(b: &Browser, name: &str, op: &str, args: Value) -> Value {
    let mut all = vec![json!(name), json!(op)];
    all.extend(args.as_array().cloned().unwrap_or_default());
    story(b, "call", Value::Array(all)).await
}

/// The server's `/metrics`, as a Prometheus scrapes it.
async fn scrape(state: &AppState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = mock_server::metrics::router(state.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    reqwest::get(format!("http://{addr}/metrics")).await.unwrap().text().await.unwrap()
}

fn value(scrape: &str, series: &str) -> f64 {
    let line = scrape.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ').map(str::to_owned));
    line.map_or(0.0, |v| v.trim().parse().unwrap())
}

/// Whether `done` comes true within `secs` seconds.
async fn within(secs: u32, mut done: impl AsyncFnMut() -> bool) -> bool {
    for _ in 0..secs * 10 {
        if done().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

async fn until(what: &str, done: impl AsyncFnMut() -> bool) {
    assert!(within(60, done).await, "waited 60 s for {what}");
}

async fn admin_token(base: &str) -> String {
    let body = json!({"username": "admin", "password": "admin-pass", "deviceInfo": {}});
    let answer: Value =
        reqwest::Client::new().post(format!("{base}/auth")).json(&body).send().await.unwrap().json().await.unwrap();
    answer["token"].as_str().unwrap().to_owned()
}

async fn log_in(b: &Browser, user: &str) {
    b.client.find(fantoccini::Locator::Css("#user")).await.unwrap().select_by_value(user).await.unwrap();
    b.click("#login").await;
    b.wait_text("#login-result", "the login to succeed", |t| t.starts_with("Logged in as")).await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the built pkg/, the browsers, PouchDB Server and promtool: run `make test-package`"]
async fn a_tills_lost_orders_are_counted_once_paged_shown_and_acknowledged() {
    for engine in [Engine::Chromium, Engine::Firefox, Engine::WebKit] {
        // The repository's root: the story's page, the tabs' page and the console, one server.
        let (base, state, _docs) = serve_on_engine(repo_root()).await;
        let relay = Relay::start(&base).await;
        let socket = format!("{}/realtime", base.replacen("http", "ws", 1));
        // WebKit's ephemeral WebDriver session: PouchDB's indexeddb adapter (tests/ledger says why).
        let adapter = if engine == Engine::WebKit { "&adapter=indexeddb" } else { "" };
        let b = Browser::start_engine(engine).await;
        b.client.goto(&format!("{}/tests/loss-story/index.html?ws={socket}{adapter}", relay.base)).await.unwrap();
        b.wait_text("#phase", "the story's page", |t| t == "ready").await;

        // The till app in two tabs: alice's registered device, its till open in both, tab A
        // routed by its realtime session. (Both tabs' sessions reconnecting after the
        // invalidation raise a destructive reset: the second tab's handshake reports the
        // invalidation not obeyed yet, which the server reads as the device's loss of it.)
        story(&b, "open", json!(["a"])).await;
        story(&b, "open", json!(["b"])).await;
        assert_eq!(tab(&b, "a", "login", json!(["alice"])).await, true, "{engine:?}");
        assert_eq!(tab(&b, "a", "register", json!([])).await, true, "{engine:?}");
        tab(&b, "a", "connect", json!([])).await;
        tab(&b, "b", "till", json!([])).await;
        // The document side down in both tabs; three orders written that cannot be pushed.
        for name in ["a", "b"] {
            tab(&b, name, "offline", json!([true])).await;
        }
        for order in ["lost-1", "lost-2", "lost-3"] {
            assert_eq!(tab(&b, "a", "order", json!([order])).await, true, "{engine:?}");
        }

        // The report passes to the server; its answers are held while both tabs reload (each tab
        // sends what the device keeps: up to eight sends held, then the rules are dropped).
        relay.take_seen();
        for _ in 0..8 {
            relay.set(Some((LOSSES, Rewrite::DelayOnce(Duration::from_secs(20)))));
        }
        let admin = admin_token(&base).await;
        let invalidated = reqwest::Client::new()
            .request(Method::POST, format!("{base}/admin/invalidate-clients/acme"))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap();
        assert_eq!(invalidated.status(), 200, "{engine:?}");
        if !within(30, async || value(&scrape(&state).await, LOST) == 3.0).await {
            let seen = relay.take_seen();
            let mut told = Vec::new();
            for name in ["a", "b"] {
                for op in ["invalidations", "lastSignOut", "pendingLosses", "errors", "tracked"] {
                    told.push(format!("{name}.{op}: {}", tab(&b, name, op, json!([])).await));
                }
            }
            panic!("{engine:?}: no report of 3 on the server; the relay saw {seen:?}\n{}", told.join("\n"));
        }
        assert!(relay.take_seen().iter().any(|p| p == LOSSES), "{engine:?}: the report went through the relay");
        assert!(tab(&b, "a", "pendingLosses", json!([])).await.is_string(), "{engine:?}: unanswered, still kept");
        story(&b, "reload", json!(["a"])).await;
        story(&b, "reload", json!(["b"])).await;
        relay.set(None);

        // The reloaded app carries the report again at its realtime `ready`: told once.
        tab(&b, "a", "connect", json!([])).await;
        until("the report answered", async || tab(&b, "a", "pendingLosses", json!([])).await.is_null()).await;
        let seen = relay.take_seen();
        assert!(seen.iter().any(|p| p == LOSSES), "{engine:?}: sent again after the reload: {seen:?}");
        let scraped = scrape(&state).await;
        assert_eq!(value(&scraped, LOST), 3.0, "{engine:?}: three orders, counted once");
        assert_eq!(value(&scraped, UNRESOLVED), 3.0, "{engine:?}");
        let reports = {
            let conn = state.store.lock().unwrap();
            mock_server::store::device_losses::unresolved(&conn, "acme", 10).unwrap()
        };
        assert_eq!(reports.len(), 1, "{engine:?}: one report");
        assert_eq!((reports[0].documents, reports[0].lost.get("till")), (3, Some(&json!(3))), "{engine:?}");
        // What the server tells acme's operators: the recovery, and nothing else.
        let attention = {
            let conn = state.store.lock().unwrap();
            mock_server::rolling::alarms::attention(&conn, "acme").unwrap().expect("acme needs attention")
        };
        let steps: Vec<&str> = attention.steps.iter().map(|s| s.step.as_str()).collect();
        assert_eq!(steps, ["recover-orders"], "{engine:?}: {:#?}", attention.alarms);
        // The alert rules, fed that scrape: one page, for the recovery (acme is not rolling).
        let page = r#"{alertname="DeviceOrdersLost", reason="invalidation", step="recover-orders", tenant="acme"}"#;
        expect_after_scrape(&scraped, LOSS_ALERTS, &[(page.to_owned(), 1.0)])
            .unwrap_or_else(|e| panic!("{engine:?}: {e}"));

        // The console (another origin: another device) shows it, and acknowledges it.
        b.client.goto(&format!("{}/www/index.html", base.replace("127.0.0.1", "localhost"))).await.unwrap();
        b.wait_text("#logged-in", "the console's page", |t| t == "no").await;
        log_in(&b, "admin").await;
        let row = "#fleet tr[data-key='acme']";
        // The console reads only the cards on screen (a small window may leave the fleet below).
        b.scroll_to("#fleet-card").await;
        let shown = async || b.text("#fleet").await.contains("⚠ Recover the lost orders");
        if !within(30, shown).await {
            b.screenshot(&format!("loss-story-{engine:?}")).await;
            let html = b
                .client
                .execute(
                    "return [document.querySelector('#console').innerText, document.querySelector('#fleet').outerHTML]",
                    vec![],
                )
                .await
                .unwrap();
            panic!("{engine:?}: acme's badge: {html}");
        }
        let banner = b.wait_text("#attention", "the banner", |t| t.contains("devices lost 3 by invalidation")).await;
        assert!(banner.contains("needs attention: Recover the lost orders"), "{engine:?}: {banner}");
        b.click("#ack-losses-acme").await;
        let listed = b.wait_text("#ack-reports", "the report listed", |t| t.contains("lost 3 document(s)")).await;
        assert_eq!(listed.lines().count(), 1, "{engine:?}: {listed}");
        b.click("#ack-confirm").await;
        b.wait_text("#ack-result", "the acknowledgement", |t| t == "Acknowledged 1 report(s) of acme; 0 still open.")
            .await;
        b.wait_text(row, "acme's badge gone", |t| !t.contains('⚠')).await;
        let scraped = scrape(&state).await;
        assert_eq!((value(&scraped, LOST), value(&scraped, UNRESOLVED)), (3.0, 0.0), "{engine:?}");
        expect_after_scrape(&scraped, LOSS_ALERTS, &[]).unwrap_or_else(|e| panic!("{engine:?}: cleared: {e}"));
        b.stop().await;
    }
}
