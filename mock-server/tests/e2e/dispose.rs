//! A manager released by `using` (its `[Symbol.dispose]()`) is released exactly as by `free()`,
//! in the three engines (tests/device-key/): every method then throws `SessionBrokerError` code
//! `disposed`, and releasing it again does nothing.

use serde_json::json;

use super::browser::{repo_root, serve_with, Browser, Engine};
use super::device_key::{call, open};
use mock_server::settings::Settings;

#[tokio::test]
#[ignore = "needs the built pkg/ and the browsers: run `make test-package`"]
async fn using_releases_a_manager_exactly_as_free_does() {
    for engine in [Engine::Chromium, Engine::Firefox, Engine::WebKit] {
        let settings = Settings { test_controls: true, auth_rate_per_min: 0, ..Settings::default() };
        let (base, _state) = serve_with(repo_root().join("tests/device-key"), settings).await;
        let b = Browser::start_engine(engine).await;
        open(&b, &base).await;
        for how in ["free", "dispose", "using"] {
            let released = call(&b, "released", json!(how)).await;
            eprintln!("{engine:?} {how}: {released}");
            assert_eq!(released["codes"], json!(vec!["disposed"; 6]), "{engine:?}, {how}: {released}");
        }
        b.stop().await;
    }
}
