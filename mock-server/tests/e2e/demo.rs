//! The demo page, walked as a person would: a cashier's device and an operator's console on two
//! origins of the same server (two devices: separate localStorage and IndexedDB), the device's
//! PouchDB replicating through the document proxy on a real engine and pushing an order the
//! console sees arrive, the canary activation, the cutover on the device (its replicas destroyed
//! and CORE replicated anew), and the rollback. Screenshots go to target/e2e/.

use std::time::Duration;

use fantoccini::elements::Element;
use fantoccini::Locator;
use mock_server::crons::{self, runner};
use mock_server::rolling::flag_change;
use mock_server::rolling::flags::FlagPatch;
use mock_server::rolling::RollingSettings;
use mock_server::settings::Settings;
use mock_server::state::AppState;
use mock_server::store::audit::Actor;

use crate::browser::{repo_root, serve, serve_with, Browser};

async fn log_in(b: &Browser, user: &str) {
    b.client.find(Locator::Css("#user")).await.unwrap().select_by_value(user).await.unwrap();
    b.client.find(Locator::Css("#login")).await.unwrap().click().await.unwrap();
    b.wait_text("#login-result", "the login to succeed", |t| t.starts_with("Logged in as")).await;
}

/// The rows of the replica's table: (document id, revision).
fn replica_rows(table: &str) -> Vec<(&str, &str)> {
    let is_rev = |r: &str| r.split_once('-').is_some_and(|(n, h)| n.parse::<u32>().is_ok() && h.len() == 32);
    table.lines().filter_map(|l| l.split_once(' ')).filter(|(_, rev)| is_rev(rev)).collect()
}

#[tokio::test]
#[ignore = "needs the built pkg/, Chromium and PouchDB Server: run `make test-package`"]
async fn canary_activation_and_rollback_from_the_page() {
    let (base, state, _engine) = crate::serve_on_engine(repo_root().join("www")).await;
    let device_origin = base.replace("127.0.0.1", "localhost");
    let b = Browser::start().await;

    // The cashier's device.
    b.client.goto(&format!("{device_origin}/")).await.unwrap();
    b.wait_text("#logged-in", "the page to load", |t| t == "no").await;
    log_in(&b, "alice").await;
    let storage = b.wait_text("#storage", "the session keys", |t| t.contains("serviceProxyToken-Auth")).await;
    for key in [
        "serviceProxyToken-Refresh",
        "serviceProxyToken-expiresAt-Auth",
        "X-Docdb-Headers-Remote",
        "X-Docdb-Headers-Local",
    ] {
        assert!(storage.contains(key), "{key} missing: {storage}");
    }
    b.wait_text("#rt-routing", "the device to be ready on legacy", |t| t == "legacy database").await;
    b.wait_text("#hook-log", "the legacy bootstrap", |t| t.contains("bootstrapped 17 documents from legacy")).await;
    // The page's PouchDB replicated the routed catalogue through the proxy.
    b.wait_text("#replica-state", "the legacy replica", |t| t == "up to date with dev_acme_main_catalog").await;
    let docs = b.wait_text("#replica-docs", "the replica's documents", |t| replica_rows(t).len() >= 17).await;
    assert!(
        replica_rows(&docs).iter().any(|(_, rev)| !rev.starts_with("1-")),
        "the legacy catalogue has edited revisions: {docs}"
    );
    assert!(b.text("#console-locked").await.contains("Log in as admin"));
    let console_shown = b.client.find(Locator::Css("#console-body")).await.unwrap().is_displayed().await.unwrap();
    assert!(!console_shown, "a cashier does not see the operations console");
    b.screenshot("01-session-cashier").await;
    let violations = b.accessibility_violations().await;
    assert!(violations.is_empty(), "the page as a cashier sees it: {violations:#?}");
    let device_tab = b.client.window().await.unwrap();

    // The operator, on the other origin.
    let console_tab = b.client.new_window(true).await.unwrap().handle;
    b.client.switch_to_window(console_tab.clone()).await.unwrap();
    b.client.goto(&format!("{base}/")).await.unwrap();
    log_in(&b, "admin").await;
    b.wait_text("#fleet", "the fleet", |t| t.contains("Acme Corp (acme)")).await;
    b.wait_text("#t-routing", "acme on legacy", |t| t == "the legacy database").await;
    let legacy_docs =
        |t: &str| t.split("legacy: ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse::<u64>().ok());
    let before = legacy_docs(&b.wait_text("#t-seq", "the legacy figures", |t| legacy_docs(t).is_some()).await).unwrap();

    // The device writes an order; its PouchDB pushes it into the day's database (legacy here)
    // and the console sees it arrive on the engine.
    b.client.switch_to_window(device_tab.clone()).await.unwrap();
    b.click("#write-order").await;
    b.wait_text("#order-result", "the order pushed", |t| t.starts_with("Pushed to dev_acme_main_catalog")).await;
    b.client.switch_to_window(console_tab.clone()).await.unwrap();
    b.wait_text("#t-seq", "the order on the server", |t| legacy_docs(t) == Some(before + 1)).await;
    b.screenshot("02-console-all-flags-off").await;
    let violations = b.accessibility_violations().await;
    assert!(violations.is_empty(), "the console as sys_admin sees it: {violations:#?}");

    // Switching on shows the flag's prerequisites first, every one met here.
    b.click("#flag-acme-rollingDb").await;
    let checklist =
        b.wait_text("#preflight", "the preflight checklist", |t| t.contains("Every prerequisite of rollingDb")).await;
    assert!(
        checklist.contains("✓ schema") && checklist.contains("✓ headroom") && checklist.contains("✓ sdk adoption"),
        "{checklist}"
    );
    b.screenshot("02b-console-preflight").await;
    let violations = b.accessibility_violations().await;
    assert!(violations.is_empty(), "the preflight checklist: {violations:#?}");
    b.click("#preflight-confirm").await;
    b.wait_prop("#flag-acme-rollingDb", "checked", "true").await;
    b.click("#run-rolling-db-rotate").await;
    let status =
        b.wait_text("#run-status", "the rotate to finish", |t| t.contains("succeeded") || t.contains("failed")).await;
    assert!(status.contains("succeeded"), "{status}");
    let log = b.text("#run-log").await;
    assert!(log.contains("rotate-cycle 1 tenant(s) rolling-enabled"), "{log}");
    let width = b.client.find(Locator::Css("#run-bar")).await.unwrap().attr("style").await.unwrap().unwrap_or_default();
    assert!(width.contains("100%"), "the progress bar reached the end: {width}");
    b.wait_text("#t-routing", "acme routed to CORE", |t| t.starts_with("CORE")).await;
    let seq = b.text("#t-seq").await;
    assert!(seq.contains("CORE: 17 docs, update_seq 17"), "{seq}");
    let days = b.text("#t-days").await;
    assert_eq!(days.split_whitespace().count(), 2, "today and tomorrow: {days}");
    let active = b.client.find_all(Locator::Css("#t-days .day.ACTIVE")).await.unwrap().len();
    let prewarmed = b.client.find_all(Locator::Css("#t-days .day.PREWARMED")).await.unwrap().len();
    assert_eq!((active, prewarmed), (1, 1));
    b.scroll_to("#cluster").await;
    b.wait_text("#cluster", "CORE in the cluster view", |t| t.contains("dev_acme_main_core")).await;
    b.screenshot("03-console-canary-rotated").await;
    b.element_screenshot("#console", "pane-console").await;

    // The device met the invalidation at its reconnect and re-bootstrapped from CORE.
    b.client.switch_to_window(device_tab.clone()).await.unwrap();
    b.wait_text("#rt-routing", "the device cut over to CORE", |t| t == "CORE (rolling)").await;
    let events =
        b.wait_text("#hook-log", "the CORE bootstrap", |t| t.contains("bootstrapped 17 documents from core")).await;
    assert!(events.contains("invalidate-local (rolling-db-cutover)"), "{events}");
    assert!(b.text("#databases").await.contains("dev_acme_main_core"));
    // The replicas were destroyed and CORE replicated anew: first revisions only.
    assert!(events.contains("PouchDB: replica dev_acme_main_catalog destroyed"), "{events}");
    b.wait_text("#replica-state", "the CORE replica", |t| t == "up to date with dev_acme_main_core").await;
    let docs = b.wait_text("#replica-docs", "CORE's documents", |t| replica_rows(t).len() == 17).await;
    assert!(replica_rows(&docs).iter().all(|(_, rev)| rev.starts_with("1-")), "CORE: first revisions only: {docs}");
    b.screenshot("04-device-cut-over").await;
    b.element_screenshot("#session", "pane-session").await;

    // A catalogue manager's new item in CORE since the warm, which the legacy database lacks.
    {
        let conn = state.store.lock().unwrap();
        let item = serde_json::json!({"class": "STATIC", "type": "item", "name": "only in CORE"});
        let body = item.as_object().unwrap().clone();
        mock_server::docdb::put(&state.cluster(&conn), "dev_acme_main_core", "item-core-only", body, None).unwrap();
    }

    // Rollback, as one guided action; its confirmation says what CORE keeps that legacy lacks.
    b.client.switch_to_window(console_tab.clone()).await.unwrap();
    b.click("#rollback").await;
    let steps =
        b.wait_text("#rollback-steps", "what the rollback leaves", |t| t.contains("CORE holds 1 document")).await;
    assert!(steps.contains("item-core-only"), "{steps}");
    let label = b.text("#rollback-confirm").await;
    assert!(label.contains("leaving 1 CORE document(s) behind"), "{label}");
    b.click("#rollback-confirm").await;
    let done = b.wait_text("#rollback-confirm", "the rollback to finish", |t| t.contains("rolled back")).await;
    assert!(done.contains("1 CORE document(s) left behind"), "{done}");
    b.wait_text("#t-routing", "acme back on legacy", |t| t == "the legacy database").await;
    b.screenshot("05-console-rolled-back").await;
    let violations = b.accessibility_violations().await;
    assert!(violations.is_empty(), "the console after a rotate and a rollback: {violations:#?}");

    b.client.switch_to_window(device_tab).await.unwrap();
    b.wait_text("#rt-routing", "the device back on legacy", |t| t == "legacy database").await;
    b.wait_text("#hook-log", "the second invalidation", |t| t.contains("invalidate-local (operator)")).await;
    b.wait_text("#replica-state", "the legacy replica again", |t| t == "up to date with dev_acme_main_catalog").await;
    b.screenshot("06-device-rolled-back").await;

    // Re-warm, confirmed twice (CORE holds that item): CORE is dropped for the next rotate to recreate.
    b.client.switch_to_window(console_tab).await.unwrap();
    b.click("#rewarm").await;
    b.click("#rewarm-confirm").await;
    b.wait_text("#rewarm-edited", "the edits named", |t| t.contains("1 edited document(s)")).await;
    b.click("#rewarm-edited").await;
    b.wait_text("#rewarm-edited", "the re-warm to finish", |t| t.contains("dev_acme_main_core dropped")).await;
    b.wait_text("#t-seq", "CORE gone", |t| t.contains("CORE: does not exist")).await;
    b.stop().await;
}

/// What a key_manager and a mistyped password meet: plain words, and every control keys may use.
#[tokio::test]
#[ignore = "needs the built pkg/ and Chromium: run `make test-package`"]
async fn the_page_speaks_plainly_to_keys_and_to_a_wrong_password() {
    let (base, _state) = serve(repo_root().join("www")).await;
    let b = Browser::start().await;
    b.client.goto(&format!("{base}/")).await.unwrap();
    b.wait_text("#logged-in", "the page to load", |t| t == "no").await;
    for id in ["#logout", "#refresh", "#register-device"] {
        let disabled = b.client.find(Locator::Css(id)).await.unwrap().prop("disabled").await.unwrap();
        assert_eq!(disabled.as_deref(), Some("true"), "{id} cannot act without a session");
    }
    b.client.find(Locator::Css("#user")).await.unwrap().select_by_value("alice").await.unwrap();
    b.client.find(Locator::Css("#password")).await.unwrap().send_keys("not-her-password").await.unwrap();
    b.click("#login").await;
    let said = b.wait_text("#login-result", "the refusal", |t| t.starts_with("Login failed")).await;
    assert_eq!(said, "Login failed: Wrong username or password.");

    b.client.find(Locator::Css("#password")).await.unwrap().clear().await.unwrap();
    log_in(&b, "keys").await;
    b.wait_text("#keys-tenant", "the tenant field for key_manager", |t| t.contains("need sys_admin")).await;
    b.wait_text("#fleet", "acme's flags", |t| t.contains("acme")).await;
    b.click("#flag-acme-rollingDb").await;
    b.wait_text("#preflight", "the checklist", |t| t.contains("Every prerequisite of rollingDb")).await;
    b.click("#preflight-confirm").await;
    b.wait_text("#crons", "the crons key_manager may run", |t| t.contains("rolling-db-rotate")).await;
    b.click("#run-rolling-db-rotate").await;
    // key_manager starts it; following it is a read, sys_admin's.
    let status = b.wait_text("#run-status", "the rotate to start", |t| t.contains("started as run-")).await;
    assert!(status.contains("needs sys_admin"), "{status}");
    let error = b.text("#console-error").await;
    assert!(error.is_empty(), "nothing went wrong for keys: {error}");
    let rewarm = b.client.find(Locator::Css("#rewarm")).await.unwrap();
    assert_eq!(rewarm.attr("aria-disabled").await.unwrap().as_deref(), Some("true"), "re-warm is sys_admin's alone");
    b.screenshot("07-console-key-manager").await;
    let violations = b.accessibility_violations().await;
    assert!(violations.is_empty(), "the console as key_manager sees it: {violations:#?}");
    b.stop().await;
}

/// How many times the console has asked for the crons list (the server counts every request).
fn cron_list_requests(state: &AppState) -> u64 {
    state.stats.snapshot().get("GET /admin/crons").copied().unwrap_or(0)
}

/// Two whole refreshes of the console: three more rounds started (a round starts only after the
/// one before it ended, so the first two have been drawn).
async fn two_refreshes(state: &AppState) {
    let from = cron_list_requests(state);
    for _ in 0..1200 {
        if cron_list_requests(state) >= from + 3 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the console stopped refreshing: {} rounds in 120 s", cron_list_requests(state) - from);
}

/// Whether `el` is still in the page and has the keyboard focus (a redrawn element is neither).
async fn has_focus(b: &Browser, el: &Element) -> bool {
    let el = serde_json::to_value(el).unwrap();
    let answer =
        b.client.execute("return arguments[0].isConnected && document.activeElement === arguments[0]", vec![el]).await;
    answer.map(|v| v == serde_json::Value::Bool(true)).unwrap_or(false)
}

/// Focuses the element as a keyboard user's Tab would leave it.
async fn focus(b: &Browser, css: &str) -> Element {
    let el = b.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}"));
    b.client.execute("arguments[0].focus()", vec![serde_json::to_value(&el).unwrap()]).await.unwrap();
    assert!(has_focus(b, &el).await, "{css} takes the focus");
    el
}

/// A rotate that advances one tenant at a time, 2.5 s apart: the fleet and the crons change
/// between the console's refreshes.
fn start_slow_rotate(state: &AppState) {
    state.test.set_step_delay_ms(2500);
    runner::trigger(state, crons::find(crons::ROTATE).unwrap(), &Actor::system("e2e")).unwrap();
}

/// The operator's place survives the console's refreshes: a focused "Run now" and a focused flag
/// switch are the same elements, still focused, and act when clicked, after two refreshes during
/// a rotate's progress (on the console that redrew its tables each refresh, both were lost).
#[tokio::test]
#[ignore = "needs the built pkg/ and Chromium: run `make test-package`"]
async fn the_console_keeps_the_operators_place_across_refreshes() {
    let settings = Settings { test_controls: true, cron_batch_size: 1, ..Settings::default() };
    let (base, state) = serve_with(repo_root().join("www"), settings).await;
    {
        let rolling = RollingSettings::from(&*state.settings);
        let conn = state.store.lock().unwrap();
        for id in ["globex", "initech"] {
            let on = FlagPatch { rolling_db: Some(true), ..FlagPatch::default() };
            flag_change::apply(&state.cluster(&conn), &rolling, id, on, "e2e", true, state.clock.now_ms()).unwrap();
        }
    }
    let b = Browser::start().await;
    b.client.goto(&format!("{base}/")).await.unwrap();
    b.wait_text("#logged-in", "the page to load", |t| t == "no").await;
    log_in(&b, "admin").await;
    b.wait_text("#crons", "the crons", |t| t.contains("session-prune")).await;

    start_slow_rotate(&state);
    let run_now = focus(&b, "#run-session-prune").await;
    b.wait_text("#run-rolling-db-rotate", "the rotate seen running", |t| t == "running…").await;
    two_refreshes(&state).await;
    assert!(has_focus(&b, &run_now).await, "the focused Run now button was redrawn under the operator");
    run_now.click().await.expect("the same button, clicked now");
    b.wait_text("#run-status", "the prune to finish", |t| t.starts_with("session-prune: succeeded")).await;

    b.wait_text("#run-rolling-db-rotate", "the first rotate to end", |t| t == "Run now").await;
    start_slow_rotate(&state);
    let switch = focus(&b, "#flag-acme-rollingDb").await;
    two_refreshes(&state).await;
    assert!(has_focus(&b, &switch).await, "the focused flag switch was redrawn under the operator");
    switch.click().await.expect("the same switch, clicked now");
    b.wait_text("#preflight", "acme's checklist", |t| t.contains("rollingDb for acme")).await;
    b.stop().await;
}

/// A loss report of `documents` orders from a till of `tenant`, as the device's route stores it.
fn lose(state: &AppState, tenant: &str, report_id: &str, documents: u64) {
    use mock_server::rolling::losses;
    use protocol::losses::{LossReason, LossReport};
    let mut lost = serde_json::Map::new();
    lost.insert("till".into(), documents.into());
    let report = LossReport {
        id: report_id.into(),
        device_id: format!("till-{tenant}"),
        company_id: tenant.into(),
        reason: LossReason::Invalidation,
        lost,
        device_proof: None,
    };
    let conn = state.store.lock().unwrap();
    let told = losses::report(&conn, &report, documents, &Actor::system("e2e"), state.clock.now_ms()).unwrap();
    assert_eq!(told, losses::Reported::Recorded, "{report_id}");
}

/// The fleet's rows as the page shows them: (tenant id, its badge's text, whether its
/// "Acknowledge losses…" shows).
async fn fleet_rows(b: &Browser) -> Vec<(String, Option<String>, bool)> {
    let rows = b
        .client
        .execute(
            "return [...document.querySelectorAll('#fleet tbody tr')].map((tr) => [tr.dataset.key,
               tr.querySelector('.attention-badge')?.textContent ?? null,
               Boolean(tr.querySelector('[id^=ack-losses-]') && !tr.querySelector('[id^=ack-losses-]').hidden)])",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(rows).unwrap()
}

/// One instruction on every screen: tenants in every combination of `rollingDb`, a device's
/// losses (none, open, acknowledged) and the other alarms a tenant may carry at once; each row's
/// badge is the server's steps in its words, the banner its instruction, and "Acknowledge
/// losses…" shows only where the server asks for the recovery. The button lists the reports it
/// answers and sends exactly their ids: a report arriving after the list stays open, and the row
/// keeps its badge until none is. (On the console that chose its own words, the rolling tenant with
/// a loss read "recover the lost orders" beside the banner's "Roll back now".)
#[tokio::test]
#[ignore = "needs the built pkg/ and Chromium: run `make test-package`"]
async fn the_console_says_what_the_server_says_and_acknowledges_what_it_listed() {
    use mock_server::rolling::alarms::{self, Kind};
    use mock_server::rolling::{losses, views};
    let (base, state) = serve(repo_root().join("www")).await;
    let rolling = RollingSettings::from(&*state.settings);
    // (tenant, rollingDb, its losses, another alarm)
    let table: &[(&str, bool, &str, Option<Kind>)] = &[
        ("t-off-open", false, "open", None),
        ("t-off-acked", false, "acknowledged", None),
        ("t-on-open", true, "open", None),
        ("t-on-acked", true, "acknowledged", None),
        ("t-on-missing", true, "none", Some(Kind::DayDatabaseMissing)),
        ("t-on-open-missing", true, "open", Some(Kind::DayDatabaseMissing)),
        ("t-on-open-reset", true, "open", Some(Kind::DestructiveReset)),
        ("t-off-open-reset", false, "open", Some(Kind::DestructiveReset)),
        ("t-off-open-day", false, "open", Some(Kind::ArchivedDayLost)),
        ("t-off-day", false, "none", Some(Kind::ArchivedDayLost)),
    ];
    for &(id, on, lost, other) in table {
        let now = state.clock.now_ms();
        {
            let conn = state.store.lock().unwrap();
            mock_server::seed::create_tenant(&state.cluster(&conn), &state.settings, id, &format!("Tenant {id}"), now)
                .unwrap();
        }
        if lost != "none" {
            lose(&state, id, &format!("r-{id}-1"), 3);
        }
        let conn = state.store.lock().unwrap();
        if lost == "acknowledged" {
            losses::acknowledge(&conn, id, &[format!("r-{id}-1")], now).unwrap();
        }
        if let Some(kind) = other {
            alarms::raise(&conn, id, kind, "subject-1", "raised by the test", now).unwrap();
        }
        if on {
            let patch = FlagPatch { rolling_db: Some(true), ..FlagPatch::default() };
            flag_change::apply(&state.cluster(&conn), &rolling, id, patch, "e2e", true, now).unwrap();
        }
    }
    let view = views::tenants(&state.store.lock().unwrap(), &rolling).unwrap();

    let b = Browser::start().await;
    b.client.goto(&format!("{base}/")).await.unwrap();
    b.wait_text("#logged-in", "the page to load", |t| t == "no").await;
    log_in(&b, "admin").await;
    b.wait_text("#fleet", "every tenant", |t| table.iter().all(|(id, ..)| t.contains(&format!("({id})")))).await;
    b.wait_text("#attention", "the banner", |t| t.contains("t-off-open-day")).await;
    let rows = fleet_rows(&b).await;
    let banner = b.text("#attention").await;
    let mut wrong = Vec::new();
    for t in &view.tenants {
        let Some((_, badge, ack)) = rows.iter().find(|(key, ..)| *key == t.company_id) else {
            wrong.push(format!("{}: no row", t.company_id));
            continue;
        };
        let steps = t.attention.as_ref().map(|a| a.steps.clone()).unwrap_or_default();
        let headlines: Vec<&str> = steps.iter().map(|s| s.headline.as_str()).collect();
        let said = (!headlines.is_empty()).then(|| format!(" ⚠ {}", headlines.join("; ")));
        if *badge != said {
            wrong.push(format!("{}: the badge says {badge:?}, the server {said:?}", t.company_id));
        }
        let recover = steps.iter().any(|s| s.step.as_str() == "recover-orders");
        if *ack != recover {
            wrong
                .push(format!("{}: acknowledge shown {ack}, the server asks for the recovery {recover}", t.company_id));
        }
        if let Some(a) = &t.attention {
            let line = format!("⚠ {} ({}) needs attention: {}", t.name, t.company_id, a.instruction);
            if !banner.contains(&line) {
                wrong.push(format!("{}: the banner lacks the server's instruction", t.company_id));
            }
        }
    }
    assert!(wrong.is_empty(), "{}\nbanner:\n{banner}", wrong.join("\n"));
    let badge_of = |rows: &[(String, Option<String>, bool)], id: &str| {
        rows.iter().find(|(key, ..)| key == id).and_then(|(_, badge, _)| badge.clone())
    };
    assert_eq!(badge_of(&rows, "t-on-open").as_deref(), Some(" ⚠ Roll back now"));
    assert_eq!(badge_of(&rows, "t-off-open").as_deref(), Some(" ⚠ Recover the lost orders"));

    // The acknowledgement lists what it answers; a report arriving meanwhile is not among them.
    b.click("#ack-losses-t-off-open").await;
    let listed = b.wait_text("#ack-reports", "the open reports", |t| t.contains("lost 3 document(s)")).await;
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.contains("device till-t-off-open") && listed.contains("invalidation; till: 3"), "{listed}");
    let violations = b.accessibility_violations().await;
    assert!(violations.is_empty(), "the console with the acknowledgement's list: {violations:#?}");
    lose(&state, "t-off-open", "r-t-off-open-2", 2);
    b.click("#ack-confirm").await;
    let said = b.wait_text("#ack-result", "the acknowledgement", |t| !t.is_empty()).await;
    assert_eq!(said, "Acknowledged 1 report(s) of t-off-open; 1 still open.");
    {
        let conn = state.store.lock().unwrap();
        let open = mock_server::store::device_losses::unresolved(&conn, "t-off-open", 10).unwrap();
        assert_eq!(open.iter().map(|l| l.report_id.as_str()).collect::<Vec<_>>(), ["r-t-off-open-2"]);
    }
    b.screenshot("08-console-losses-acknowledged-one").await;
    // The row keeps its badge while a report is open; the second acknowledgement answers it.
    let row = "#fleet tr[data-key='t-off-open']";
    assert!(b.text(row).await.contains("⚠ Recover the lost orders"));
    b.click("#ack-losses-t-off-open").await;
    b.wait_text("#ack-reports", "the report left", |t| t.contains("lost 2 document(s)") && !t.contains("lost 3")).await;
    b.click("#ack-confirm").await;
    b.wait_text("#ack-result", "the second acknowledgement", |t| {
        t == "Acknowledged 1 report(s) of t-off-open; 0 still open."
    })
    .await;
    b.wait_text(row, "the badge gone", |t| !t.contains('⚠')).await;
    let rows = fleet_rows(&b).await;
    assert!(!rows.iter().any(|(key, _, ack)| key == "t-off-open" && *ack), "nothing left to acknowledge");
    let violations = b.accessibility_violations().await;
    assert!(violations.is_empty(), "the console after the acknowledgement: {violations:#?}");
    b.stop().await;
}
