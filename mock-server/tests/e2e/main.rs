//! End-to-end: the built package and the demo page in headless Chromium. These need `pkg/`
//! built and Chromium installed, so they run through `make test-package` (part of `make test`).

mod browser;
mod demo;

use browser::{repo_root, serve, Browser};

#[tokio::test]
#[ignore = "needs the built pkg/ and Chromium: run `make test-package`"]
async fn the_release_package_works_as_published() {
    let (base, _state) = serve(repo_root().join("tests/package-smoke")).await;
    let browser = Browser::start().await;
    browser.client.goto(&format!("{base}/")).await.unwrap();
    let out = browser.wait_text("#out", "the smoke page to finish", |t| t.lines().any(|l| l == "done")).await;
    browser.stop().await;
    println!("{out}");
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert!(out.lines().filter(|l| l.starts_with("ok ")).count() >= 10, "{out}");
}
