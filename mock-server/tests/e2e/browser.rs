//! Headless Chromium through chromedriver, headless Firefox through geckodriver, and WebKit
//! (WebKitWebDriver driving MiniBrowser under Xvfb), through fantoccini, against the app served in-process with the repository's www/ and
//! the built pkg/.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use mock_server::settings::Settings;
use mock_server::state::{AppState, StaticDirs};
use serde_json::json;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The app on a free port, serving `www` at /, the built package at /pkg/ and the vendored
/// PouchDB at /vendor/.
pub async fn serve(www: PathBuf) -> (String, AppState) {
    serve_with(www, Settings { test_controls: true, ..Settings::default() }).await
}

pub async fn serve_with(www: PathBuf, settings: Settings) -> (String, AppState) {
    let pkg = repo_root().join("pkg");
    assert!(
        pkg.join("session_broker_bg.wasm").exists(),
        "pkg/ is not built: run `make build` (make test-package does)"
    );
    let vendor = repo_root().join("target/vendor");
    assert!(
        vendor.join("pouchdb.min.js").exists(),
        "target/vendor has no PouchDB: run `make build` (make test-package does)"
    );
    let state = AppState::new(settings, StaticDirs { www: Some(www), pkg: Some(pkg), vendor: Some(vendor) }).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = mock_server::app(state.clone());
    tokio::spawn(async move { axum::serve(mock_server::app::listener(listener), app).await.unwrap() });
    (base, state)
}

/// A browser session and the driver behind it. Dropping it (a test that passes, or one whose
/// assertion panics) ends the driver's whole process group, browser and Xvfb included, and
/// whatever else carries its `MARKER` value.
pub struct Browser {
    pub client: Client,
    /// The driver's address (its own commands, beside WebDriver's).
    driver_url: String,
    driver: Child,
    profile: PathBuf,
    /// This browser's value of `MARKER`.
    mark: String,
}

/// What every process the harness starts carries in its environment, with a value of its own
/// browser's, and hands down to everything it starts: Chromium's crash handler leaves the
/// driver's process group, so the group alone does not find everything (`make test` checks
/// that nothing marked outlived the suite).
pub const MARKER: &str = "SESSION_BROKER_E2E";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The browser engines the package is tested in (the wasm suites, tests/run-browser.sh, run in
/// Chrome and Firefox too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Chromium,
    /// Debian's Firefox ESR, headless, through geckodriver.
    Firefox,
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
        // Firefox is given a profile directory that must exist; the others create theirs.
        std::fs::create_dir_all(&profile).unwrap();
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
            Engine::Firefox => (
                {
                    let mut c = Command::new("geckodriver");
                    c.args(["--port", &port.to_string()]);
                    c
                },
                json!({
                    "browserName": "firefox",
                    "moz:firefoxOptions": {
                        "binary": "/usr/bin/firefox-esr",
                        "args": ["-headless", "-width=1400", "-height=1800", "-profile", profile.to_string_lossy()]
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
        let mark = format!("{}-{port}", std::process::id());
        command.env(MARKER, &mark);
        let mut driver = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{engine:?}'s driver (make setup installs it): {e}"));
        let caps = caps.as_object().unwrap().clone();
        let url = format!("http://127.0.0.1:{port}");
        for _ in 0..300 {
            if let Ok(client) = ClientBuilder::native().capabilities(caps.clone()).connect(&url).await {
                return Browser { client, driver_url: url, driver, profile, mark };
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        end_all(&mut driver, &mark);
        panic!("{engine:?}'s driver did not accept a session");
    }

    /// The process group of the driver, the browser it started and (WebKit) Xvfb.
    pub fn group(&self) -> u32 {
        self.driver.id()
    }

    /// The value of `MARKER` this browser's processes carry.
    pub fn mark(&self) -> &str {
        &self.mark
    }

    /// Empties Chromium's HTTP cache (a first visit: nothing fetched before is reused), through
    /// chromedriver's DevTools passthrough.
    #[allow(dead_code)]
    pub async fn clear_cache(&self) {
        let id = self.client.session_id().await.unwrap().expect("a WebDriver session");
        let answer = reqwest::Client::new()
            .post(format!("{}/session/{id}/goog/cdp/execute", self.driver_url))
            .json(&json!({"cmd": "Network.clearBrowserCache", "params": {}}))
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success(), "Network.clearBrowserCache: {}", answer.text().await.unwrap_or_default());
    }

    pub async fn text(&self, css: &str) -> String {
        self.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}")).text().await.unwrap()
    }

    /// Waits (up to 60 s) until the element's text satisfies `check`; returns it.
    pub async fn wait_text(&self, css: &str, what: &str, check: impl Fn(&str) -> bool) -> String {
        self.wait_text_for(css, what, 60, check).await
    }

    /// As [`Browser::wait_text`], up to `secs` seconds.
    pub async fn wait_text_for(&self, css: &str, what: &str, secs: u32, check: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        for _ in 0..secs * 10 {
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

    /// Waits (up to 60 s) until an element matching `css` satisfies the asynchronous `check`
    /// (re-found each time, so a redrawn element is read anew); answers that element.
    pub async fn wait_for<F, Fut>(&self, css: &str, what: &str, mut check: F) -> Element
    where
        F: FnMut(Element) -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        for _ in 0..600 {
            if let Ok(el) = self.client.find(Locator::Css(css)).await {
                if check(el.clone()).await {
                    return el;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("waiting for {what} in {css}");
    }

    /// Waits until the control can act (shown, not disabled, not `aria-disabled`), then clicks it.
    pub async fn click(&self, css: &str) {
        let el = self.wait_for(css, "the control to be enabled", |el| async move { can_act(&el).await }).await;
        el.click().await.unwrap_or_else(|e| panic!("{css}: {e}"));
    }

    /// Waits until the element's DOM property `name` reads `value` (e.g. a switch's `checked`).
    pub async fn wait_prop(&self, css: &str, name: &str, value: &str) {
        self.wait_for(css, &format!("{name} to be {value}"), |el| async move {
            el.prop(name).await.ok().flatten().as_deref() == Some(value)
        })
        .await;
    }

    /// Scrolls the element into view, as a person would before reading it (the console refreshes
    /// only what is on screen).
    pub async fn scroll_to(&self, css: &str) {
        let el = self.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}"));
        self.client
            .execute("arguments[0].scrollIntoView({block: 'center'})", vec![serde_json::to_value(el).unwrap()])
            .await
            .unwrap();
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

    /// One element only (a pane), for the documentation (docs/demo.md).
    pub async fn element_screenshot(&self, css: &str, name: &str) {
        let dir = repo_root().join("target/e2e");
        std::fs::create_dir_all(&dir).unwrap();
        let png = self.client.find(Locator::Css(css)).await.unwrap().screenshot().await.unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }

    pub async fn stop(self) {
        let _ = self.client.clone().close().await;
        // Drop ends the processes.
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        end_all(&mut self.driver, &self.mark);
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

async fn can_act(el: &Element) -> bool {
    el.is_displayed().await.unwrap_or(false)
        && el.is_enabled().await.unwrap_or(false)
        && el.attr("aria-disabled").await.ok().flatten().as_deref() != Some("true")
}

/// Whether a process has ended but for its parent's reaping (which the container's init may never
/// do): a zombie is not left running.
fn is_zombie(stat: &str) -> bool {
    stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}

fn live_pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !is_zombie(&s)))
        .collect()
}

/// The live processes of a process group.
pub fn group_members(group: u32) -> Vec<u32> {
    live_pids()
        .into_iter()
        .filter(|pid| {
            // Field 5 of /proc/PID/stat, counted after the command name's closing parenthesis.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
            after.split_whitespace().nth(2).and_then(|g| g.parse::<u32>().ok()) == Some(group)
        })
        .collect()
}

/// The live processes whose environment holds `MARKER=mark` (any mark when `None`), with their
/// command lines.
pub fn marked(mark: Option<&str>) -> Vec<(u32, String)> {
    let prefix = format!("{MARKER}=");
    live_pids()
        .into_iter()
        .filter(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            environ
                .split(|b| *b == 0)
                .filter_map(|v| v.strip_prefix(prefix.as_bytes()))
                .any(|v| mark.is_none_or(|m| v == m.as_bytes()))
        })
        .map(|pid| {
            (pid, std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default().replace('\0', " "))
        })
        .collect()
}

/// Ends a driver and everything it started: its process group, then whatever carries its mark
/// outside the group. TERM first, KILL what is still there after 5 s; waits until none is left.
fn end_all(driver: &mut Child, mark: &str) {
    let group = driver.id();
    let kill = |args: &[String]| Command::new("kill").args(args).stderr(Stdio::null()).status();
    let _ = kill(&["-TERM".into(), "--".into(), format!("-{group}")]);
    let _ = driver.wait();
    for i in 0..100 {
        let left: Vec<String> = marked(Some(mark))
            .into_iter()
            .map(|(pid, _)| pid.to_string())
            .chain(group_members(group).into_iter().map(|p| p.to_string()))
            .collect();
        if left.is_empty() {
            return;
        }
        let signal = if i < 50 { "-TERM" } else { "-KILL" };
        if i == 0 || i == 50 {
            let _ = kill(&[[signal.to_owned(), "--".to_owned()].as_slice(), left.as_slice()].concat());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
