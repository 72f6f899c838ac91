//! End-to-end: the built package and the demo page in headless Chromium. These need `pkg/`
//! built and Chromium installed, so they run through `make test-package` (part of `make test`).

#[path = "../common/alerts.rs"]
mod alerts;
mod auth_fetch;
mod browser;
mod demo;
mod device_key;
mod device_key_attack;
mod dispose;
#[path = "../common/engine.rs"]
mod engine;
mod example;
mod ledger;
mod loss_story;
mod no_key_store;
mod proof_faults;
mod relay;

use browser::{group_members, marked, repo_root, serve, serve_with, Browser, Engine};
use mock_server::crons::{self, runner};
use mock_server::docdb::engine::EngineUrl;
use mock_server::rolling::flag_change;
use mock_server::rolling::flags::FlagPatch;
use mock_server::rolling::RollingSettings;
use mock_server::settings::Settings;
use mock_server::state::AppState;
use mock_server::store::audit::Actor;

/// Opens a check page (one "ok …"/"FAIL …" line a check, then "done") and asserts on it.
async fn run_check_page(base: &str, page: &str, at_least: usize) {
    run_check_page_in(Engine::Chromium, base, page, at_least).await;
}

async fn run_check_page_in(engine: Engine, base: &str, page: &str, at_least: usize) {
    let browser = Browser::start_engine(engine).await;
    browser.client.goto(&format!("{base}/{page}")).await.unwrap();
    let out = browser.wait_text("#out", "the check page to finish", |t| t.lines().any(|l| l == "done")).await;
    browser.stop().await;
    println!("{out}");
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert!(out.lines().filter(|l| l.starts_with("ok ")).count() >= at_least, "{out}");
}

#[tokio::test]
#[ignore = "needs the built pkg/ and Chromium: run `make test-package`"]
async fn the_release_package_works_as_published() {
    let (base, _state) = serve(repo_root().join("tests/package-smoke")).await;
    run_check_page(&base, "", 10).await;
}

/// What the types promise, at run time: a server code the SDK does not know is `unknown_code`
/// with `serverCode`, an unknown action is `invalid_argument`, `requirePermission` signed out and
/// on an expired token, and `login`'s arguments refused before anything is sent.
#[tokio::test]
#[ignore = "needs the built pkg/ and Chromium: run `make test-package`"]
async fn codes_actions_and_arguments_are_checked() {
    let (base, _state) = serve(repo_root().join("tests/typos")).await;
    run_check_page(&base, "", 30).await;
}

/// Four same-origin tabs against strict rotation (REFRESH_REUSE_GRACE_SECS=0): one refresh for
/// all, nobody logged out, tabs following each other, re-entrant and never-settling hooks.
#[tokio::test]
#[ignore = "needs the built pkg/ and Chromium: run `make test-package`"]
async fn many_tabs_share_one_refresh_and_hear_each_other() {
    let settings = Settings { test_controls: true, refresh_reuse_grace_secs: 0, ..Settings::default() };
    let (base, _state) = serve_with(repo_root().join("tests/many-tabs"), settings).await;
    run_check_page(&base, "index.html", 20).await;
}

/// The page of tests/bundlers/ as Vite, esbuild and webpack built it from the packed tarball
/// (tests/bundlers/build.sh): each logs in and reads getToken() with the wasm it emitted.
#[tokio::test]
#[ignore = "needs tests/bundlers/build.sh's output and Chromium: run `make test-package`"]
async fn every_bundler_ships_a_page_that_works() {
    for name in ["vite", "esbuild", "webpack"] {
        let dist = repo_root().join("target/bundlers").join(name).join("dist");
        assert!(dist.join("index.html").exists(), "{name}: run tests/bundlers/build.sh first (make test-package does)");
        let (base, _state) = serve(dist).await;
        run_check_page(&base, "index.html", 4).await;
    }
}

/// The same two pages in WebKit (Safari's engine): login, refresh, device, realtime with the
/// catalogue bootstrap into IndexedDB and the sign-out's destroy, and four tabs sharing one refresh.
#[tokio::test]
#[ignore = "needs the built pkg/, WebKitWebDriver and Xvfb: run `make test-package`"]
async fn the_release_package_works_in_webkit() {
    let (base, _state) = serve(repo_root().join("tests/package-smoke")).await;
    run_check_page_in(Engine::WebKit, &base, "", 10).await;
    let settings = Settings { test_controls: true, refresh_reuse_grace_secs: 0, ..Settings::default() };
    let (base, _state) = serve_with(repo_root().join("tests/many-tabs"), settings).await;
    run_check_page_in(Engine::WebKit, &base, "index.html", 20).await;
}

/// `onAuthStateChange` and `getSession()` in two tabs and across a reload, in the three engines:
/// a first login told as signed in only, every change told in every tab once storage holds it,
/// signed out after the session is cleared, and why there is no session.
#[tokio::test]
#[ignore = "needs the built pkg/, Chromium, Firefox, WebKitWebDriver and Xvfb: run `make test-package`"]
async fn the_auth_state_stream_follows_every_tab_and_a_reload() {
    for engine in [Engine::Chromium, Engine::Firefox, Engine::WebKit] {
        let settings = Settings { test_controls: true, ..Settings::default() };
        // The tab page of tests/many-tabs/ serves as each tab here too.
        let (base, _state) = serve_with(repo_root().join("tests"), settings).await;
        run_check_page_in(engine, &base, "auth-state/index.html", 22).await;
    }
}

/// The server with a document engine of its own (PouchDB Server): the proxy, the seed and the
/// rolling machine on it. The engine ends when the returned guard drops.
pub async fn serve_on_engine(www: std::path::PathBuf) -> (String, AppState, engine::Engine) {
    let docs = engine::Engine::start().await;
    let settings = Settings {
        test_controls: true,
        docdb_url: Some(EngineUrl::parse(&docs.url_with_credentials()).unwrap()),
        ..Settings::default()
    };
    let (base, state) = serve_with(www, settings).await;
    (base, state, docs)
}

/// The operator's cutover of `tenant`: `rollingDb` on, then the rotate (which warms CORE and
/// invalidates the tenant's devices), as the console does it.
pub fn cut_over(state: &AppState, tenant: &str) {
    let rolling = RollingSettings::from(&*state.settings);
    {
        let conn = state.store.lock().unwrap();
        let on = FlagPatch { rolling_db: Some(true), ..FlagPatch::default() };
        flag_change::apply(&state.cluster(&conn), &rolling, tenant, on, "e2e", false, state.clock.now_ms()).unwrap();
    }
    runner::trigger(state, crons::find(crons::ROTATE).unwrap(), &Actor::system("e2e")).unwrap();
}

/// PouchDB 9 beside the release package in Chromium, Firefox and WebKit (tests/replication):
/// replication both ways through the proxy with `docdbFetch`, a refresh and a sign-out during a
/// live replication, another tenant's database, the login cleanup of open databases on both
/// adapters, a blocked deletion, every row of the local-data table of docs/sdk.md with the SDK's own
/// final push (another tab in an iframe), and the cutover re-replicating from CORE.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the built pkg/, the browsers and PouchDB Server: run `make test-package`"]
async fn pouchdb_replicates_beside_the_sdk_in_every_engine() {
    for browser in [Engine::Chromium, Engine::Firefox, Engine::WebKit] {
        let (base, state, _docs) = serve_on_engine(repo_root().join("tests/replication")).await;
        let b = Browser::start_engine(browser).await;
        b.client.goto(&format!("{base}/")).await.unwrap();
        let phase = b
            .wait_text("#phase", "the page to reach the cutover", |t| t == "waiting for the cutover" || t == "done")
            .await;
        if phase != "done" {
            cut_over(&state, "acme");
        }
        b.wait_text("#phase", "the page to finish", |t| t == "done").await;
        let out = b.text("#out").await;
        b.stop().await;
        println!("{browser:?}:\n{out}");
        let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
        assert!(failed.is_empty(), "{browser:?}: {failed:#?}");
        assert!(out.lines().filter(|l| l.starts_with("ok ")).count() >= 16, "{browser:?}: {out}");
        // Only WebKit's ephemeral WebDriver session may run without PouchDB's idb adapter.
        assert!(browser == Engine::WebKit || !out.contains("note:"), "{browser:?} skipped the idb adapter: {out}");
    }
}

/// A test whose assertion fails mid-walk still ends its driver and its browser: the harness's
/// drop guard, checked rather than trusted. (Its panic message below is this test's own.)
#[test]
#[ignore = "needs Chromium: run `make test-package`"]
fn a_failed_test_leaves_no_browser_behind() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let record = seen.clone();
    let outcome = std::thread::spawn(move || {
        tokio::runtime::Runtime::new().unwrap().block_on(async {
            let b = Browser::start().await;
            b.client.goto("about:blank").await.unwrap();
            *record.lock().unwrap() =
                Some((b.group(), b.mark().to_owned(), group_members(b.group()).len(), marked(Some(b.mark())).len()));
            panic!("a deliberate failure mid-walk, to see what it leaves behind");
        })
    })
    .join();
    assert!(outcome.is_err(), "the walk failed");
    let (group, mark, members, running) = seen.lock().unwrap().clone().expect("the browser started");
    assert!(
        members >= 2 && running >= 2,
        "the driver and its browser were running: {members} in the group, {running} marked"
    );
    assert_eq!(group_members(group), Vec::<u32>::new(), "left in the driver's process group");
    assert_eq!(
        marked(Some(&mark)),
        Vec::new(),
        "left running by the failed test (Chromium's crash handler leaves the group)"
    );
}
