//! End-to-end: the built package and the demo page in headless Chromium. These need `pkg/`
//! built and Chromium installed, so they run through `make test-package` (part of `make test`).

mod browser;
mod demo;

use browser::{group_members, marked, repo_root, serve, serve_with, Browser, Engine};
use mock_server::settings::Settings;

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
            *record.lock().unwrap() = Some((b.group(), b.mark().to_owned(), group_members(b.group()).len(), marked(Some(b.mark())).len()));
            panic!("a deliberate failure mid-walk, to see what it leaves behind");
        })
    })
    .join();
    assert!(outcome.is_err(), "the walk failed");
    let (group, mark, members, running) = seen.lock().unwrap().clone().expect("the browser started");
    assert!(members >= 2 && running >= 2, "the driver and its browser were running: {members} in the group, {running} marked");
    assert_eq!(group_members(group), Vec::<u32>::new(), "left in the driver's process group");
    assert_eq!(marked(Some(&mark)), Vec::new(), "left running by the failed test (Chromium's crash handler leaves the group)");
}
