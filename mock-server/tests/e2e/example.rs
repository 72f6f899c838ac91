//! The example app (examples/vite-app), as tests/bundlers/build.sh built it from the packed
//! tarball with the pinned Vite, walked in Chromium as its user would: a wrong password, a login,
//! the roles, the user's own record, the device, a reload, a logout, an action only some roles
//! may run, and a second tab's logout, each seen in the auth events the page lists.

use fantoccini::Locator;

use crate::browser::{repo_root, serve, Browser};

async fn fill(b: &Browser, css: &str, text: &str) {
    let field = b.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}"));
    field.clear().await.unwrap();
    field.send_keys(text).await.unwrap();
}

async fn log_in(b: &Browser, username: &str, password: &str) {
    fill(b, "#username", username).await;
    fill(b, "#password", password).await;
    b.click("#login").await;
}

/// The lines of the page's event log.
async fn events(b: &Browser) -> Vec<String> {
    b.text("#events").await.lines().map(str::to_owned).collect()
}

#[tokio::test]
#[ignore = "needs tests/bundlers/build.sh's output and Chromium: run `make test-package`"]
async fn the_example_app_signs_in_and_out_across_tabs() {
    let dist = repo_root().join("target/bundlers/example/dist");
    assert!(dist.join("index.html").exists(), "run tests/bundlers/build.sh first (make test-package does)");
    let (base, _state) = serve(dist).await;
    let b = Browser::start().await;
    b.client.goto(&format!("{base}/")).await.unwrap();
    b.wait_text("#status", "the page to start signed out", |t| t == "Signed out").await;
    assert_eq!(events(&b).await, ["INITIAL_SESSION (stored)"]);

    log_in(&b, "alice", "not-her-password").await;
    b.wait_text("#login-error", "the refusal, by its code", |t| {
        t == "Wrong user name or password. (invalid_credentials)"
    })
    .await;

    log_in(&b, "alice", "alice-pass").await;
    b.wait_text("#status", "alice signed in", |t| t == "Signed in to acme").await;
    assert_eq!(b.text("#roles").await, "cashier");
    assert_eq!(events(&b).await, ["INITIAL_SESSION (stored)", "SIGNED_IN (login)"]);
    b.wait_text("#rotate-out", "the rotate refused to a cashier", |t| t == "Your roles may not run the rotate.").await;
    b.click("#me").await;
    b.wait_text("#me-out", "her own record from the backend", |t| t == "alice, of acme").await;
    b.click("#device").await;
    b.wait_text("#device-out", "the device registered", |t| t.starts_with("Registered as ")).await;
    let violations = b.accessibility_violations().await;
    assert!(violations.is_empty(), "the example signed in: {violations:#?}");

    // A reload finds the stored session.
    b.client.refresh().await.unwrap();
    b.wait_text("#status", "the stored session after the reload", |t| t == "Signed in to acme").await;
    assert_eq!(b.text("#roles").await, "cashier");
    assert_eq!(events(&b).await, ["INITIAL_SESSION (stored)"]);

    b.click("#logout").await;
    b.wait_text("#status", "the logout", |t| t == "Signed out").await;
    assert!(events(&b).await.iter().any(|l| l == "SIGNED_OUT (logout)"), "{:?}", events(&b).await);

    // A key manager may run the rotate.
    log_in(&b, "keys", "keys-pass").await;
    b.wait_text("#roles", "the key manager's roles", |t| t == "key_manager").await;
    b.click("#rotate").await;
    b.wait_text("#rotate-out", "the rotate started", |t| t.starts_with("Rotate ")).await;

    // A second tab of the same origin logs out: this one follows.
    let first = b.client.window().await.unwrap();
    let second = b.client.new_window(true).await.unwrap().handle;
    b.client.switch_to_window(second).await.unwrap();
    b.client.goto(&format!("{base}/")).await.unwrap();
    b.wait_text("#status", "the second tab signed in", |t| t == "Signed in to acme").await;
    b.click("#logout").await;
    b.wait_text("#status", "the second tab's logout", |t| t == "Signed out").await;
    b.client.switch_to_window(first).await.unwrap();
    b.wait_text("#status", "the first tab signed out by the second", |t| t == "Signed out").await;
    assert!(events(&b).await.iter().any(|l| l == "SIGNED_OUT (logout, in another tab)"), "{:?}", events(&b).await);
    b.stop().await;
}
