//! A real Prometheus for a test (Debian's `prometheus`, installed by `make setup`): its own temp
//! dir and free port, a generated config scraping `target` every second with the repository's
//! alert rules loaded, ended with the test by dropping it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// Serves the server's `/metrics` on a listener of its own, as `METRICS_LISTEN` does; its address.
pub async fn metrics_listener(s: &super::Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = mock_server::metrics::router(s.state.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr.to_string()
}

/// The value of one series, named exactly as the classic text writes it, in a scrape (0 when the
/// series is not there yet).
pub async fn scraped(target: &str, series: String) -> f64 {
    let text = reqwest::get(format!("http://{target}/metrics")).await.unwrap().text().await.unwrap();
    let line = text.lines().find_map(|l| l.strip_prefix(series.as_str())?.strip_prefix(' ').map(str::to_owned));
    line.map_or(0.0, |v| v.trim().parse().unwrap())
}

pub fn rules_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("prometheus")
}

pub struct Prometheus {
    pub base: String,
    child: Child,
    dir: PathBuf,
    http: reqwest::Client,
}

impl Prometheus {
    pub async fn start(target: &str) -> Prometheus {
        // A free port is only free until someone binds it: a Prometheus that exits at once (its
        // port taken meanwhile) is started again on another.
        for _ in 0..5 {
            if let Some(p) = Prometheus::start_on_a_free_port(target).await {
                return p;
            }
        }
        panic!("prometheus exited at start five times");
    }

    async fn start_on_a_free_port(target: &str) -> Option<Prometheus> {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("prometheus-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: mock-server\n    static_configs:\n      - targets: ['{target}']\n",
            rules_dir().join("alerts.yml").display()
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus runs: make setup installs it");
        let mut p = Prometheus { base: format!("http://127.0.0.1:{port}"), child, dir, http: reqwest::Client::new() };
        for _ in 0..300 {
            if p.child.try_wait().unwrap().is_some() {
                return None;
            }
            if p.http.get(format!("{}/-/ready", p.base)).send().await.is_ok_and(|r| r.status().is_success()) {
                return Some(p);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("prometheus did not become ready on port {port}");
    }

    /// The instant vector `query` evaluates to now: each series' labels and value.
    pub async fn query(&self, query: &str) -> Vec<(Value, f64)> {
        let answer: Value = self
            .http
            .get(format!("{}/api/v1/query", self.base))
            .query(&[("query", query)])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(answer["status"], "success", "{query}: {answer}");
        answer["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["metric"].clone(), r["value"][1].as_str().unwrap().parse().unwrap()))
            .collect()
    }

    /// The one value `query` evaluates to (`None`: no series).
    pub async fn value(&self, query: &str) -> Option<f64> {
        let result = self.query(query).await;
        assert!(result.len() <= 1, "{query}: {result:?}");
        result.first().map(|(_, v)| *v)
    }

    /// Waits until Prometheus has scraped its target after this moment.
    pub async fn scraped_after_now(&self) {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        for _ in 0..300 {
            if self.value("timestamp(up{job=\"mock-server\"})").await.is_some_and(|t| t > now) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("prometheus did not scrape within 30 s");
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
