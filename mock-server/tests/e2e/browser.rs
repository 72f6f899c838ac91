//! Headless Chromium through chromedriver, and WebKit (WebKitWebDriver driving MiniBrowser under
//! Xvfb), through fantoccini, against the app served in-process with the repository's www/ and
//! the built pkg/.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use mock_server::settings::Settings;
use mock_server::state::{AppState, StaticDirs};
use serde_json::json;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The app on a free port, serving `www` at / and the built package at /pkg/.
pub async fn serve(www: PathBuf) -> (String, AppState) {
    serve_with(www, Settings { test_controls: true, ..Settings::default() }).await
}

pub async fn serve_with(www: PathBuf, settings: Settings) -> (String, AppState) {
    let pkg = repo_root().join("pkg");
    assert!(pkg.join("session_broker_bg.wasm").exists(), "pkg/ is not built: run `make build` (make test-package does)");
    let state = AppState::new(settings, StaticDirs { www: Some(www), pkg: Some(pkg) }).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = mock_server::app(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, state)
}

pub struct Browser {
    pub client: Client,
    driver: Child,
    profile: PathBuf,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The browser engines the package is tested in (Firefox runs the wasm suites, tests/run-browser.sh).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Chromium,
    /// Safari's engine: Debian's WebKitWebDriver driving MiniBrowser, in Xvfb.
    WebKit,
}

/// Where Debian's webkit2gtk-driver keeps the browser it automates.
const MINIBROWSER: &str = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";

impl Browser {
    pub async fn start() -> Browser {
        Browser::start_engine(Engine::Chromium).await
    }

    pub async fn start_engine(engine: Engine) -> Browser {
        let port = free_port();
        let profile = std::env::temp_dir().join(format!("e2e-{engine:?}-{}-{port}", std::process::id()));
        let (mut command, caps) = match engine {
            Engine::Chromium => (
                {
                    let mut c = Command::new("chromedriver");
                    c.arg(format!("--port={port}"));
                    c
                },
                json!({
                    "goog:chromeOptions": {
                        "binary": "/usr/bin/chromium",
                        "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                                 "--window-size=1400,1800", format!("--user-data-dir={}", profile.display())]
                    }
                }),
            ),
            Engine::WebKit => (
                {
                    // xvfb-run gives the driver (and the MiniBrowser it starts) a display of its own.
                    let mut c = Command::new("xvfb-run");
                    c.args(["-a", "-s", "-screen 0 1400x1800x24", "WebKitWebDriver", &format!("--port={port}")]);
                    c
                },
                json!({
                    "browserName": "MiniBrowser",
                    "webkitgtk:browserOptions": { "binary": MINIBROWSER, "args": ["--automation"] }
                }),
            ),
        };
        // Its own process group, so stop() ends the driver, the browser and Xvfb together.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut driver = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap_or_else(|e| panic!("{engine:?}'s driver (make setup installs it): {e}"));
        let caps = caps.as_object().unwrap().clone();
        let url = format!("http://127.0.0.1:{port}");
        for _ in 0..300 {
            if let Ok(client) = ClientBuilder::native().capabilities(caps.clone()).connect(&url).await {
                return Browser { client, driver, profile };
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        kill_group(&mut driver);
        panic!("{engine:?}'s driver did not accept a session");
    }

    pub async fn text(&self, css: &str) -> String {
        self.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}")).text().await.unwrap()
    }

    /// Waits (up to 60 s) until the element's text satisfies `check`; returns it.
    pub async fn wait_text(&self, css: &str, what: &str, check: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        for _ in 0..600 {
            if let Ok(el) = self.client.find(Locator::Css(css)).await {
                last = el.text().await.unwrap_or_default();
                if check(&last) {
                    return last;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("waiting for {what} in {css}; last text: {last:?}");
    }

    /// Runs axe-core (pinned in target/npm-tools by `make setup`) on the current page and answers
    /// the serious and critical violations, one line each (rule, impact, first targets).
    pub async fn accessibility_violations(&self) -> Vec<String> {
        let axe = std::fs::read_to_string(repo_root().join("target/npm-tools/node_modules/axe-core/axe.min.js"))
            .expect("axe-core is installed by make setup");
        self.client.execute(&axe, vec![]).await.expect("axe-core loads");
        let result = self
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 axe.run(document, { resultTypes: ['violations'] }).then((r) => done(r.violations
                   .filter((v) => v.impact === 'serious' || v.impact === 'critical')
                   .map((v) => `${v.id} (${v.impact}): ${v.help}; ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`)),
                   (e) => done([`axe failed: ${e}`]));",
                vec![],
            )
            .await
            .expect("axe-core runs");
        result.as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default()
    }

    pub async fn screenshot(&self, name: &str) {
        let dir = repo_root().join("target/e2e");
        std::fs::create_dir_all(&dir).unwrap();
        let png = self.client.screenshot().await.unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }

    /// One element only (a pane), for the README.
    pub async fn element_screenshot(&self, css: &str, name: &str) {
        let dir = repo_root().join("target/e2e");
        std::fs::create_dir_all(&dir).unwrap();
        let png = self.client.find(Locator::Css(css)).await.unwrap().screenshot().await.unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }

    pub async fn stop(mut self) {
        let _ = self.client.clone().close().await;
        kill_group(&mut self.driver);
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Ends a driver and everything it started (its process group).
fn kill_group(driver: &mut Child) {
    let _ = Command::new("kill").args(["-TERM", "--", &format!("-{}", driver.id())]).status();
    let _ = driver.wait();
}
