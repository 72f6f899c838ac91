//! The rollout at fleet scale: a load generator against the release
//! binary run as its own process on loopback, as an operator runs it. Tenants are created through
//! the server's own store code before it starts. Prints a table; asserts nothing (shared machines
//! are noisy). Bounded: every wait has a deadline, every count is fixed.
//!
//! `cargo bench -p mock-server --bench fleet [-- quick] [rotate|postgres|engine|auth|bootstrap|storm…]`
//! (`quick` skips the 10,000-tenant rotates, runs 100 tenants, not 1,000, on the engine and the
//! storms at 1,000 devices; names pick sections; `postgres`: the rotate at 1,000 and 10,000 tenants
//! on PostgreSQL, refresh throughput of 3 replicas beside one SQLite server, 5,000 devices over 3
//! replicas back after an invalidation; `pg-rotate`, `pg-auth`, `pg-storm`: one of those;
//! `replicas`: 5,000 live feeds on 100 tenants spread over 3 replicas on PostgreSQL with one
//! PouchDB Server (engine feeds held, a write's delay to every device, memory a feed, refresh);
//! the rows on PostgreSQL go to `bench/REPORT.md` beside the previous run's;
//! `hub-memory`: the changes hub's memory while 120 MiB are written and caught up with,
//! `HUB_BENCH_MIB` for another size).

#[path = "../tests/common/engine.rs"]
mod engine;
#[path = "../tests/common/pg.rs"]
#[allow(dead_code)]
mod pg;
#[path = "support/report_section.rs"]
mod report_section;

use mock_server::docdb::engine::EngineUrl;
use mock_server::docdb::Cluster;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use mock_server::rolling::flag_change;
use mock_server::rolling::flags::FlagPatch;
use mock_server::rolling::RollingSettings;
use mock_server::seed;
use mock_server::settings::Settings;
use protocol::sync_frames::CLOSE_INVALIDATED;
use serde_json::{json, Value};
use session_broker::core::sync_session::reconnect_delay_ms;
use tokio_tungstenite::tungstenite::Message;

/// The replicas' shared signing secret on PostgreSQL.
const FLEET_SECRET: &str = "0123456789abcdef-fleet-bench";

/// The release server on a free loopback port, with its own data directory (and, for the
/// engine's rotate, its own PouchDB Server, ended after the server); or, on PostgreSQL, its
/// replicas on one database of a cluster of their own.
struct Server {
    children: Vec<Child>,
    /// `base` is the first replica's; `bases` every replica's.
    base: String,
    bases: Vec<String>,
    /// Each replica's `/metrics` on PostgreSQL (a port of its own).
    metrics: Vec<String>,
    dir: PathBuf,
    engine: Option<engine::Engine>,
    postgres: Option<pg::Cluster>,
}

impl Drop for Server {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Where the bench keeps the fleet: the embedded SQLite file, or PostgreSQL with this many replicas.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Store {
    Sqlite,
    Postgres(usize),
}

impl Server {
    /// A data directory holding the demo seed plus `tenants` rolling tenants, then the server.
    async fn start(name: &str, tenants: usize, max_open: usize, engine: Option<engine::Engine>) -> (Server, Duration) {
        Server::start_on(name, tenants, max_open, engine, Store::Sqlite, &[]).await
    }

    /// `env`: settings of the server's own beside the bench's.
    async fn start_on(
        name: &str,
        tenants: usize,
        max_open: usize,
        engine: Option<engine::Engine>,
        store: Store,
        env: &[(&str, &str)],
    ) -> (Server, Duration) {
        let dir = std::env::temp_dir().join(format!("sb-fleet-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let docdb_url = engine.as_ref().map(|e| e.url_with_credentials());
        let (postgres, database_url, replicas) = match store {
            Store::Sqlite => (None, None, 1),
            Store::Postgres(n) => {
                let cluster = pg::Cluster::start();
                let url = cluster.migrated("fleet");
                (Some(cluster), Some(url), n)
            }
        };
        let t = Instant::now();
        create_tenants(&dir, tenants, max_open, docdb_url.as_deref(), database_url.as_deref());
        let created = t.elapsed();
        let mut server = Server {
            children: Vec::new(),
            base: String::new(),
            bases: Vec::new(),
            metrics: Vec::new(),
            dir,
            engine,
            postgres,
        };
        for _ in 0..replicas {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut command = Command::new(env!("CARGO_BIN_EXE_mock-server"));
            command
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .env("ROLLING_DB_MAX_OPEN", max_open.to_string())
                .env("AUTH_RATE_PER_MIN", "0")
                .env("RUST_LOG", "warn");
            command.envs(env.iter().copied());
            match &database_url {
                Some(url) => {
                    let metrics = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
                    server.metrics.push(format!("http://{metrics}/metrics"));
                    // One backup directory for the replica set, as operations.md asks.
                    command
                        .env("DATABASE_URL", url)
                        .env("JWT_SECRET", FLEET_SECRET)
                        .env("METRICS_LISTEN", metrics.to_string())
                        .env("BACKUP_DIR", server.dir.join("backups"))
                }
                None => command.env("DATA_DIR", &server.dir),
            };
            if let Some(url) = &docdb_url {
                command.env("DOCDB_URL", url);
            }
            server.children.push(
                command.stdout(Stdio::null()).stderr(Stdio::inherit()).spawn().expect("the release mock-server binary"),
            );
            server.bases.push(format!("http://127.0.0.1:{port}"));
        }
        server.base = server.bases[0].clone();
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        for base in &server.bases {
            while client.get(format!("{base}/health")).send().await.is_err() {
                assert!(Instant::now() < deadline, "a server did not answer within 120 s");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        (server, created)
    }

    /// The replicas' threads (the blocking pool's grow with a burst of store work, then end).
    fn threads(&self) -> u64 {
        self.children.iter().map(|c| proc_status_kib(c.id(), "Threads:")).sum()
    }

    /// PostgreSQL's committed transactions and rows written (inserted, updated, deleted) in the
    /// replicas' database so far; `None` on SQLite. Waits out the 10 s an idle backend may keep
    /// its counts before it reports them (read after 1.5 s a refresh looked like 0.7 transactions).
    async fn pg_writes(&self) -> Option<(i64, i64)> {
        let url = self.postgres.as_ref()?.url("fleet");
        tokio::time::sleep(Duration::from_secs(11)).await;
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.ok()?;
        let driver = tokio::spawn(connection);
        let row = client
            .query_one(
                "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database WHERE datname = 'fleet'",
                &[],
            )
            .await
            .ok()?;
        driver.abort();
        Some((row.get(0), row.get(1)))
    }

    fn rss_kib(&self) -> u64 {
        self.children.iter().map(|c| proc_status_kib(c.id(), "VmRSS:")).sum()
    }

    /// CPU time (user + system) the replicas and their PostgreSQL have used so far: the
    /// replicas', PostgreSQL's.
    fn cpu(&self) -> (Duration, Duration) {
        let replicas = self.children.iter().map(|c| cpu_of(c.id())).sum();
        let postgres =
            self.postgres.as_ref().map_or(Duration::ZERO, |pg| pg.server_pids().into_iter().map(cpu_of).sum());
        (replicas, postgres)
    }
}

fn proc_status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A process's user + system CPU time, from `/proc/<pid>/stat` (in clock ticks of 1/100 s).
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command (which may hold spaces) start after its closing parenthesis.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// `n` tenants with a legacy catalogue and `rollingDb` on, plus acme (the demo's) rolling too;
/// their documents on the engine at `docdb_url` when there is one, as the server keeps them.
fn create_tenants(dir: &Path, n: usize, max_open: usize, docdb_url: Option<&str>, database_url: Option<&str>) {
    let settings = Settings {
        data_dir: Some(dir.to_owned()),
        rolling_db_max_open: max_open,
        docdb_url: docdb_url.map(|u| EngineUrl::parse(u).unwrap()),
        database_url: database_url.map(str::to_owned),
        ..Settings::default()
    };
    let engine = settings.docdb_url.clone().map(|u| mock_server::docdb::engine::Engine::new(u).unwrap());
    let store = mock_server::state::open_store(&settings, engine.as_ref(), 0).unwrap();
    let now = 1_700_000_000_000;
    store
        .transaction(|tx| {
            for i in 0..n {
                let id = format!("t{i:05}");
                seed::create_tenant(&Cluster::new(tx, engine.as_ref()), &settings, &id, &id, now)?;
            }
            Ok::<_, mock_server::docdb::DocDbError>(())
        })
        .unwrap();
    if database_url.is_some() {
        // On PostgreSQL the flags are written as a migrate job would, not through the preflight,
        // whose headroom check reads every rolling tenant's handles (n^2 round trips at set-up).
        store
            .transaction(|tx| {
                for id in (0..n).map(|i| format!("t{i:05}")).chain(["acme".to_owned()]) {
                    mock_server::rolling::flags::record(tx, &id, true, false, "bench", now)?;
                }
                Ok::<_, mock_server::rolling::RollingError>(())
            })
            .unwrap();
        return;
    }
    let conn = store.lock().unwrap();
    let cluster = Cluster::new(&conn, engine.as_ref());
    let on = FlagPatch { rolling_db: Some(true), rolling_db_drop: None };
    let rolling = RollingSettings::from(&settings);
    for i in 0..n {
        flag_change::apply(&cluster, &rolling, &format!("t{i:05}"), on, "bench", false, now).unwrap();
    }
    flag_change::apply(&cluster, &rolling, "acme", on, "bench", false, now).unwrap();
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().pool_max_idle_per_host(256).build().unwrap()
}

async fn post(client: &reqwest::Client, url: String, token: Option<&str>, body: Value) -> Value {
    let mut req = client.post(url).json(&body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap().json().await.unwrap()
}

async fn login(client: &reqwest::Client, base: &str, user: &str) -> Value {
    post(client, format!("{base}/auth"), None, json!({"username": user, "password": format!("{user}-pass")})).await
}

/// Starts `cron` and waits for its run to end (at most 10 minutes): the run as it ended.
async fn run_to_end(client: &reqwest::Client, base: &str, admin: &str, cron: &str) -> Value {
    let run = post(client, format!("{base}/admin/crons/{cron}/run"), Some(admin), json!({})).await;
    let id = run["runId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let url = format!("{base}/admin/crons/runs/{id}?logLimit=1");
        let r: Value = client.get(url).bearer_auth(admin).send().await.unwrap().json().await.unwrap();
        if r["status"] != "running" {
            return r;
        }
        assert!(Instant::now() < deadline, "{cron} did not end");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// p50, p99 and max of the samples, in milliseconds.
fn percentiles(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1000.0;
    (at(0.5), at(0.99), at(1.0))
}

/// Requests one after another until `stop`, timing each.
fn probe(
    stop: Arc<AtomicBool>,
    every: Duration,
    call: impl Fn() -> futures_util::future::BoxFuture<'static, ()> + Send + 'static,
) -> tokio::task::JoinHandle<Vec<Duration>> {
    tokio::spawn(async move {
        let mut samples = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            call().await;
            samples.push(t.elapsed());
            tokio::time::sleep(every).await;
        }
        samples
    })
}

/// Every row printed, for the report's PostgreSQL section.
static ROWS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

fn row(what: &str, figure: String) {
    println!("| {what:<58} | {figure:<62} |");
    ROWS.lock().unwrap().push((what.to_owned(), figure));
}

/// Figures the goals are checked against, by name, as measured in this run.
static MEASURED: std::sync::Mutex<Vec<(String, f64)>> = std::sync::Mutex::new(Vec::new());

fn measured(name: &str, value: f64) {
    MEASURED.lock().unwrap().push((name.to_owned(), value));
}

fn figure(name: &str) -> Option<f64> {
    MEASURED.lock().unwrap().iter().rev().find(|(n, _)| n == name).map(|(_, v)| *v)
}

/// The fleet's goals on PostgreSQL, each beside the figure of this run it is checked against
/// (CPU a unit, and ratios to SQLite measured in the same run: on a shared machine these hold
/// where wall-clock times do not), "met" or "not met"; a goal whose figures were not measured in
/// this run says so. Printed, never asserted.
fn print_goals() {
    let mut lines = Vec::new();
    let mut goal =
        |what: &str, value: Option<f64>, shown: &dyn Fn(f64) -> String, bound: &str, met: &dyn Fn(f64) -> bool| {
            let (measured, verdict) = match value {
                Some(v) => (shown(v), if met(v) { "met" } else { "not met" }),
                None => ("not measured in this run".to_owned(), "-"),
            };
            lines.push(format!("| {what:<58} | {measured:<30} | {bound:<14} | {verdict:<7} |"));
        };
    let ms = |v: f64| format!("{v:.2} ms CPU");
    let ratio = |v: f64| format!("{v:.2}x");
    let kib = |v: f64| format!("{v:.1} KiB");
    for n in [1000, 10_000] {
        let cpu = figure(&format!("rotate-pg-{n}-cpu"));
        goal(&format!("rotate, {n} tenants on PostgreSQL: CPU a tenant, in all"), cpu, &ms, "<= 1.5 ms", &|v| v <= 1.5);
        let times = figure(&format!("rotate-pg-{n}")).zip(figure(&format!("rotate-sqlite-{n}"))).map(|(p, s)| p / s);
        goal(&format!("rotate, {n} tenants: PostgreSQL's time / SQLite's"), times, &ratio, "<= 2x", &|v| v <= 2.0);
    }
    let over = |a: &str, b: &str| figure(a).zip(figure(b)).map(|(a, b)| a / b.max(1.0));
    goal(
        "refresh, 50 clients: PostgreSQL's rate / SQLite's",
        over("refresh-pg", "refresh-sqlite"),
        &ratio,
        ">= 0.9x",
        &|v| v >= 0.9,
    );
    goal(
        "refresh, 50 clients on PostgreSQL: CPU a request, in all",
        figure("refresh-pg-cpu"),
        &ms,
        "<= 0.4 ms",
        &|v| v <= 0.4,
    );
    goal(
        "refresh, 50 sessions of one user: PostgreSQL / SQLite",
        over("refresh-one-user-pg", "refresh-one-user-sqlite"),
        &ratio,
        ">= 0.8x",
        &|v| v >= 0.8,
    );
    goal("5,000 devices back, 3 replicas: CPU a device, in all", figure("storm-pg-5000-cpu"), &ms, "<= 0.4 ms", &|v| {
        v <= 0.4
    });
    goal("memory a live feed, 5,000 feeds over 3 replicas", figure("feed-kib-5000"), &kib, "<= 16 KiB", &|v| v <= 16.0);
    println!();
    println!("| {:<58} | {:<30} | {:<14} | {:<7} |", "goal", "measured (this run)", "goal", "");
    println!("|{}|{}|{}|{}|", "-".repeat(60), "-".repeat(32), "-".repeat(16), "-".repeat(9));
    for line in lines {
        println!("{line}");
    }
}

/// A row's label without its parentheses (a set-up time, say), to find it in an earlier report.
fn row_key(what: &str) -> String {
    let mut key = String::new();
    let mut depth = 0;
    for c in what.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => key.push(c),
            _ => {}
        }
    }
    key.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Each row's key: its label without parentheses, after its parent's for an indented row (`↳`).
fn row_keys(labels: &[String]) -> Vec<String> {
    let mut parent = String::new();
    labels
        .iter()
        .map(|label| match label.strip_prefix("↳ ") {
            Some(sub) => format!("{parent} / {}", row_key(sub)),
            None => {
                parent = row_key(label);
                parent.clone()
            }
        })
        .collect()
}

/// Writes the rows on PostgreSQL (and those indented under them) into `bench/REPORT.md`'s
/// PostgreSQL section, each beside what the section said before, which it replaces.
fn report_postgres() {
    let rows = ROWS.lock().unwrap().clone();
    let mut kept = Vec::new();
    let mut under = false;
    for (what, figure) in rows {
        if !what.starts_with("  ") {
            under = what.contains("PostgreSQL") || what.contains("replicas");
        }
        if under {
            kept.push((what, figure));
        }
    }
    if kept.is_empty() {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/REPORT.md");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    // The section's rows as they were: (label, measured, the run before).
    let earlier: Vec<(String, String, String)> = report_section::split(&old, report_section::POSTGRES)
        .1
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.strip_prefix("| ")?.strip_suffix(" |")?.split(" | ").collect();
            (cells.len() == 3 && cells[0] != "what").then(|| (cells[0].into(), cells[1].into(), cells[2].into()))
        })
        .collect();
    let labels: Vec<String> = kept.iter().map(|(w, _)| w.replace("  ", "↳ ")).collect();
    let (now_keys, earlier_keys) =
        (row_keys(&labels), row_keys(&earlier.iter().map(|e| e.0.clone()).collect::<Vec<_>>()));
    let mut table: Vec<String> = kept
        .iter()
        .zip(&labels)
        .zip(&now_keys)
        .map(|(((_, figure), what), key)| {
            let before = earlier_keys.iter().position(|k| k == key).map_or("", |i| earlier[i].1.as_str());
            format!("| {what} | {figure} | {before} |")
        })
        .collect();
    // Rows of sections not run this time stay as they were.
    for ((what, figure, before), key) in earlier.iter().zip(&earlier_keys) {
        if !now_keys.contains(key) {
            table.push(format!("| {what} | {figure} | {before} |"));
        }
    }
    let date = Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]).output().map(|o| o.stdout).unwrap_or_default();
    let section = format!(
        "{}\n\nWritten by `cargo bench -p mock-server --bench fleet` (sections `postgres`, `replicas`), last on {}, \
         each row beside the run before it (a row of a section not run then is kept as it was). Goals: rotate of 10,000 tenants under 30 s; refresh over 3 \
         replicas at least 0.7x one SQLite server's; 5,000 devices back after an invalidation in under \
         2 s; one engine feed a listened database, whatever the replica count; 16 KiB of server memory a \
         feed.\n\n| what | measured | previous |\n|---|---|---|\n{}\n",
        report_section::POSTGRES,
        String::from_utf8_lossy(&date).trim(),
        table.join("\n")
    );
    report_section::replace(&path, report_section::POSTGRES, &section);
}

/// The rotate over `tenants` tenants, their documents in the embedded model or, `on_engine`, on
/// a PouchDB Server of its own; after it, the engine's own figures for one tenant's CORE.
async fn rotate(tenants: usize, on_engine: bool, store: Store) {
    // Room for every tenant's prewarm (3 handles each) and the demo's catalogues.
    let max_open = (tenants * 3 + 100).max(5000);
    let engine = if on_engine { Some(engine::Engine::start().await) } else { None };
    let name = format!(
        "rotate{tenants}{}{}",
        if on_engine { "-engine" } else { "" },
        if store == Store::Sqlite { "" } else { "-pg" }
    );
    let (server, created) = Server::start_on(&name, tenants, max_open, engine, store, &[]).await;
    let base = server.base.clone();
    let client = client();
    let admin = login(&client, &base, "admin").await["token"].as_str().unwrap().to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let health = {
        let (client, url) = (client.clone(), format!("{base}/health"));
        probe(stop.clone(), Duration::from_millis(20), move || {
            let (client, url) = (client.clone(), url.clone());
            Box::pin(async move {
                let _ = client.get(url).send().await.map(|r| r.bytes());
            })
        })
    };
    let logins = {
        let (client, base) = (client.clone(), base.clone());
        probe(stop.clone(), Duration::from_millis(20), move || {
            let (client, base) = (client.clone(), base.clone());
            Box::pin(async move {
                login(&client, &base, "alice").await;
            })
        })
    };
    let cpu_before = server.cpu();
    let t = Instant::now();
    let run = post(&client, format!("{base}/admin/crons/rolling-db-rotate/run"), Some(&admin), json!({})).await;
    let id = run["runId"].as_str().unwrap().to_owned();
    let mut half: Option<Duration> = None;
    let status = loop {
        let r: Value = client
            .get(format!("{base}/admin/crons/runs/{id}?logLimit=1"))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if half.is_none() && r["progress"]["done"].as_u64().unwrap_or(0) * 2 >= tenants as u64 {
            half = Some(t.elapsed());
        }
        if r["status"] != "running" || t.elapsed() > Duration::from_secs(600) {
            break r["status"].as_str().unwrap_or("?").to_owned();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let total = t.elapsed();
    let cpu = server.cpu();
    stop.store(true, Ordering::Relaxed);
    let (h50, h99, hmax) = percentiles(health.await.unwrap());
    let (l50, l99, _) = percentiles(logins.await.unwrap());
    let half = half.unwrap_or(total);
    let per = |d: Duration, n: usize| d.as_secs_f64() * 1000.0 / n.max(1) as f64;
    let (first, second) = (per(half, tenants / 2), per(total.saturating_sub(half), tenants - tenants / 2));
    let adapter = match (on_engine, store) {
        (true, _) => "on PouchDB Server",
        (false, Store::Sqlite) => "embedded",
        (false, Store::Postgres(_)) => "on PostgreSQL",
    };
    row(
        &format!("rotate, {tenants} tenants {adapter} ({status}; set-up {:.1} s)", created.as_secs_f64()),
        format!(
            "{:.2} s; {first:.2} / {second:.2} ms a tenant (1st / 2nd half); CPU {:.2} ms a tenant server, {:.2} PostgreSQL (with the probes)",
            total.as_secs_f64(),
            per(cpu.0.saturating_sub(cpu_before.0), tenants),
            per(cpu.1.saturating_sub(cpu_before.1), tenants)
        ),
    );
    if !on_engine {
        let on = if store == Store::Sqlite { "sqlite" } else { "pg" };
        measured(&format!("rotate-{on}-{tenants}"), total.as_secs_f64());
        measured(
            &format!("rotate-{on}-{tenants}-cpu"),
            per(cpu.0.saturating_sub(cpu_before.0) + cpu.1.saturating_sub(cpu_before.1), tenants),
        );
    }
    if let Some(e) = &server.engine {
        let core = e.get("dev_t00000_main_core").await;
        row(
            "  the engine's own figures for t00000's CORE",
            format!("doc_count {}, update_seq {}", core["doc_count"], core["update_seq"]),
        );
    }
    row(
        &format!("  /health during it ({} probes)", "20 ms apart"),
        format!("p50 {h50:.1} ms, p99 {h99:.1} ms, max {hmax:.1} ms"),
    );
    row("  POST /auth during it", format!("p50 {l50:.1} ms, p99 {l99:.1} ms"));
}

/// `clients` callers in a loop for `secs`; answers the rate and the latencies.
async fn throughput<F>(clients: usize, secs: u64, make: impl Fn(usize) -> F) -> (f64, f64, f64)
where
    F: FnMut() -> futures_util::future::BoxFuture<'static, bool> + Send + 'static,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    let tasks: Vec<_> = (0..clients)
        .map(|i| {
            let mut call = make(i);
            tokio::spawn(async move {
                let mut samples = Vec::new();
                while Instant::now() < deadline {
                    let t = Instant::now();
                    if call().await {
                        samples.push(t.elapsed());
                    }
                }
                samples
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let rate = all.len() as f64 / secs as f64;
    let (p50, p99, _) = percentiles(all);
    (rate, p50, p99)
}

/// Logins and refreshes by 50 clients, spread over the server's replicas; answers the refresh
/// rates of 50 users and of one user's 50 sessions, each with its CPU a request in milliseconds.
async fn auth_throughput(server: &Server, label: &str) -> ((f64, f64), (f64, f64)) {
    let base = server.base.clone();
    let (rate, p50, p99) = throughput(50, 3, |_| {
        let (client, base) = (client(), base.clone());
        move || {
            let (client, base) = (client.clone(), base.clone());
            Box::pin(async move { login(&client, &base, "alice").await["token"].is_string() })
                as futures_util::future::BoxFuture<'static, bool>
        }
    })
    .await;
    row(
        &format!("POST /auth, 50 concurrent clients, 3 s{label}"),
        format!("{rate:.0} req/s, p50 {p50:.1} ms, p99 {p99:.1} ms"),
    );
    // 50 clients are 50 people: one user each. One user's 50 sessions at once (what this bench
    // measured before) are measured beside them: every refresh then reads and references one row.
    let admin = login(&client(), &base, "admin").await["token"].as_str().unwrap().to_owned();
    let mut people = Vec::new();
    for i in 0..50 {
        let username = format!("bench-client-{i}");
        let made = post(
            &client(),
            format!("{base}/register-user"),
            Some(&admin),
            json!({"username": username, "password": format!("{username}-pass")}),
        )
        .await;
        assert!(made["user"].is_object(), "the bench's user {username} was not made: {made}");
        people.push(username);
    }
    let people = refresh_throughput(server, &people, &format!("50 clients, one user each{label}")).await;
    let one =
        refresh_throughput(server, &vec!["alice".to_owned(); 50], &format!("50 sessions of one user{label}")).await;
    (people, one)
}

/// Refreshes by one client per user of `users` (each its own chain), spread over the server's
/// replicas for 3 s; answers the rate.
async fn refresh_throughput(server: &Server, users: &[String], label: &str) -> (f64, f64) {
    let bases = server.bases.clone();
    let mut tokens = Vec::new();
    let seed_client = client();
    for user in users {
        tokens.push(login(&seed_client, &server.base, user).await["refreshToken"].as_str().unwrap().to_owned());
    }
    let stats_before = server.pg_writes().await;
    let cpu_before = server.cpu();
    let (rate, p50, p99) = throughput(users.len(), 3, |i| {
        // Client i talks to replica i mod n: the load spread as a load balancer spreads it.
        let (client, base) = (client(), bases[i % bases.len()].clone());
        let token = Arc::new(parking_lot::Mutex::new(tokens[i].clone()));
        move || {
            let (client, base, token) = (client.clone(), base.clone(), token.clone());
            Box::pin(async move {
                let current = token.lock().clone();
                let next = post(&client, format!("{base}/auth/refresh"), None, json!({"refreshToken": current})).await;
                match next["refreshToken"].as_str() {
                    Some(t) => {
                        *token.lock() = t.to_owned();
                        true
                    }
                    None => false,
                }
            }) as futures_util::future::BoxFuture<'static, bool>
        }
    })
    .await;
    let cpu_after = server.cpu();
    let per_request =
        |after: Duration, before: Duration| after.saturating_sub(before).as_secs_f64() * 1000.0 / (rate * 3.0).max(1.0);
    let (replicas, postgres) = (per_request(cpu_after.0, cpu_before.0), per_request(cpu_after.1, cpu_before.1));
    let split = match (stats_before, server.pg_writes().await) {
        (Some(before), Some(after)) => {
            let requests = (rate * 3.0).max(1.0);
            format!(
                " ({replicas:.2} replicas, {postgres:.2} PostgreSQL); {:.1} transactions, {:.1} rows written a request",
                (after.0 - before.0) as f64 / requests,
                (after.1 - before.1) as f64 / requests
            )
        }
        _ => String::new(),
    };
    row(
        &format!("POST /auth/refresh, {label}"),
        format!(
            "{rate:.0} req/s, p50 {p50:.1} ms, p99 {p99:.1} ms; {:.2} ms CPU a request{split}",
            replicas + postgres
        ),
    );
    (rate, replicas + postgres)
}

async fn bootstrap_burst(server: &Server) {
    let base = server.base.clone();
    let client = client();
    let admin = login(&client, &base, "admin").await["token"].as_str().unwrap().to_owned();
    run_to_end(&client, &base, &admin, "rolling-db-rotate").await;
    let alice = login(&client, &base, "alice").await["token"].as_str().unwrap().to_owned();
    let mut rates = Vec::new();
    let mut samples = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let tasks: Vec<_> = (0..1000)
            .map(|_| {
                let (client, url, token) = (client.clone(), format!("{base}/bootstrap?database=core"), alice.clone());
                tokio::spawn(async move {
                    let t = Instant::now();
                    let ok = client.get(url).bearer_auth(token).send().await.is_ok_and(|r| r.status().is_success());
                    (ok, t.elapsed())
                })
            })
            .collect();
        let mut ok = 0;
        for task in tasks {
            let (good, d) = task.await.unwrap();
            ok += good as usize;
            samples.push(d);
        }
        rates.push(ok as f64 / t.elapsed().as_secs_f64());
    }
    let (p50, p99, _) = percentiles(samples);
    rates.sort_by(f64::total_cmp);
    row(
        "GET /bootstrap?database=core, 1,000 concurrent (3 rounds)",
        format!("{:.0} req/s (median), p50 {p50:.1} ms, p99 {p99:.1} ms", rates[1]),
    );
}

fn listen_overflows() -> u64 {
    let netstat = std::fs::read_to_string("/proc/net/netstat").unwrap_or_default();
    let lines: Vec<&str> = netstat.lines().filter(|l| l.starts_with("TcpExt:")).collect();
    if lines.len() < 2 {
        return 0;
    }
    let names = lines[0].split_whitespace();
    let values = lines[1].split_whitespace();
    names.zip(values).find(|(n, _)| *n == "ListenOverflows").and_then(|(_, v)| v.parse().ok()).unwrap_or(0)
}

/// One device: connect, `sdk:init`, wait for `ready`; answers the handshake time.
async fn handshake(
    url: &str,
    token: &str,
) -> Option<(Duration, tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>)> {
    let t = Instant::now();
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.ok()?;
    let init = json!({"type": "sdk:init", "payload": {"token": token, "sdkVersion": protocol::SDK_VERSION, "lastInvalidation": i64::MAX}});
    ws.send(Message::text(init.to_string())).await.ok()?;
    while let Some(Ok(m)) = ws.next().await {
        if let Message::Text(text) = m {
            if text.contains("\"ready\"") {
                return Some((t.elapsed(), ws));
            }
        }
    }
    None
}

async fn storm(server: &Server, devices: usize) {
    let base = server.base.clone();
    let client = client();
    let admin = login(&client, &base, "admin").await["token"].as_str().unwrap().to_owned();
    let alice = login(&client, &base, "alice").await["token"].as_str().unwrap().to_owned();
    // Device i on replica i mod n, and back on replica i+1 mod n after the invalidation.
    let urls: Vec<String> =
        server.bases.iter().map(|b| format!("{}/realtime", b.replace("http://", "ws://"))).collect();
    let url_of = |i: usize| urls[i % urls.len()].clone();
    let rss_before = server.rss_kib();
    // Connect the fleet (in batches, so the set-up itself is no storm).
    let mut sockets = Vec::new();
    for chunk in 0..devices.div_ceil(250) {
        let batch: Vec<_> = (chunk * 250..((chunk + 1) * 250).min(devices))
            .map(|i| {
                let (url, token) = (url_of(i), alice.clone());
                tokio::spawn(async move { handshake(&url, &token).await.map(|(_, ws)| ws) })
            })
            .collect();
        for b in batch {
            sockets.extend(b.await.unwrap());
        }
    }
    let connected = sockets.len();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_open = server.rss_kib();
    let overflows = listen_overflows();
    // Each device waits for its close, then reconnects after the SDK's own delay.
    let start = Instant::now();
    let devices_tasks: Vec<_> = sockets
        .into_iter()
        .enumerate()
        .map(|(i, mut ws)| {
            let (url, token) = (url_of(i + 1), alice.clone());
            tokio::spawn(async move {
                let mut code = None;
                while let Some(m) = ws.next().await {
                    match m {
                        Ok(Message::Close(frame)) => {
                            code = frame.map(|f| u16::from(f.code));
                            break;
                        }
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
                let delay = reconnect_delay_ms(0, code.or(Some(CLOSE_INVALIDATED)), rand::random::<f64>());
                tokio::time::sleep(Duration::from_millis(delay as u64)).await;
                for attempt in 1..6u32 {
                    if let Some((took, ws)) = handshake(&url, &token).await {
                        return Some((took, start.elapsed(), ws));
                    }
                    tokio::time::sleep(Duration::from_millis(
                        reconnect_delay_ms(attempt, None, rand::random::<f64>()) as u64
                    ))
                    .await;
                }
                None
            })
        })
        .collect();
    let cpu_before = server.cpu();
    let invalidated = post(&client, format!("{base}/admin/invalidate-clients/acme"), Some(&admin), json!({})).await;
    assert!(invalidated["invalidatedAt"].is_number(), "{invalidated}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut handshakes = Vec::new();
    let mut last_ready = Duration::ZERO;
    let mut kept = Vec::new();
    for task in devices_tasks {
        if let Ok(Ok(Some((took, ready_at, ws)))) = tokio::time::timeout_at(deadline, task).await {
            handshakes.push(took);
            last_ready = last_ready.max(ready_at);
            kept.push(ws);
        }
    }
    let ready = handshakes.len();
    let cpu = server.cpu();
    let per_device =
        |after: Duration, before: Duration| after.saturating_sub(before).as_secs_f64() * 1000.0 / ready.max(1) as f64;
    let (replicas_cpu, postgres_cpu) = (per_device(cpu.0, cpu_before.0), per_device(cpu.1, cpu_before.1));
    let (p50, p99, _) = percentiles(handshakes);
    let overflowed = listen_overflows().saturating_sub(overflows);
    let per_socket = (rss_open.saturating_sub(rss_before) as f64 / connected.max(1) as f64).max(0.0);
    let over = if urls.len() > 1 { format!(" over {} replicas on PostgreSQL", urls.len()) } else { String::new() };
    row(
        &format!("{devices} devices reconnecting after an invalidation{over}"),
        format!(
            "{ready}/{connected} ready in {:.2} s; handshake p50 {p50:.0} ms, p99 {p99:.0} ms; {:.2} ms CPU a device ({replicas_cpu:.2} server, {postgres_cpu:.2} PostgreSQL)",
            last_ready.as_secs_f64(),
            replicas_cpu + postgres_cpu
        ),
    );
    if urls.len() > 1 {
        measured(&format!("storm-pg-{devices}-cpu"), replicas_cpu + postgres_cpu);
    }
    row(
        "  listen-queue overflows; server memory",
        format!("{overflowed}; RSS {} MiB open, {per_socket:.1} KiB a socket", rss_open / 1024),
    );
    drop(kept);
}

/// The server with its engine, `DOCDB_HUB` on or off, and one device session's document headers
/// (the per-session feed bound lifted: the bench's devices share one session).
async fn with_feeds(name: &str, hub: bool) -> (Server, Value, u16) {
    let e = engine::Engine::start().await;
    let port = e.port;
    let env = [("DOCDB_HUB", if hub { "true" } else { "false" }), ("DOCDB_FEEDS_PER_SESSION", "1000000")];
    let (server, _) = Server::start_on(name, 0, 5000, Some(e), Store::Sqlite, &env).await;
    let headers = login(&client(), &server.base, "alice").await["docdbHeaders"]["Remote"].clone();
    (server, headers, port)
}

fn signed(mut req: reqwest::RequestBuilder, headers: &Value) -> reqwest::RequestBuilder {
    for (k, v) in headers.as_object().into_iter().flatten() {
        req = req.header(k, v.as_str().unwrap_or_default());
    }
    req
}

/// Connections the server's process holds to the engine.
fn engine_connections(server: &Server, engine_port: u16) -> usize {
    let out = Command::new("ss")
        .args(["-Htnp", "state", "established", "dst", &format!("127.0.0.1:{engine_port}")])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let pid = format!("pid={},", server.children[0].id());
    out.lines().filter(|l| l.contains(&pid)).count()
}

/// Opens each of `feeds` (a live `_changes` URL, the document headers, a tag), 200 at a time, and
/// waits (until `deadline`) for all to be open. Every line naming `marker` a feed reads is told
/// with its tag and when it came.
async fn open_feeds(
    feeds: Vec<(String, Value, usize)>,
    marker: &'static str,
    deadline: Instant,
) -> (Vec<tokio::task::JoinHandle<()>>, tokio::sync::mpsc::UnboundedReceiver<(usize, Instant)>) {
    let count = feeds.len();
    let (arrived_tx, arrived) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let ready = Arc::new(AtomicUsize::new(0));
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let mut tasks = Vec::new();
    for (i, (url, headers, tag)) in feeds.into_iter().enumerate() {
        let (http, arrived_tx, ready) = (http.clone(), arrived_tx.clone(), ready.clone());
        tasks.push(tokio::spawn(async move {
            let mut feed = signed(http.get(url), &headers).send().await.unwrap();
            assert!(feed.status().is_success(), "a device's feed: {}", feed.status());
            ready.fetch_add(1, Ordering::SeqCst);
            let mut pending = Vec::new();
            while let Ok(Some(chunk)) = feed.chunk().await {
                pending.extend_from_slice(&chunk);
                while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    if String::from_utf8_lossy(&line).contains(marker) {
                        let _ = arrived_tx.send((tag, Instant::now()));
                    }
                }
            }
        }));
        if i % 200 == 199 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    while ready.load(Ordering::SeqCst) < count {
        assert!(Instant::now() < deadline, "{} of {count} feeds opened", ready.load(Ordering::SeqCst));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (tasks, arrived)
}

/// `devices` live feeds of one database through one replica; then writes, each timed until
/// every feed has it.
async fn feeds(devices: usize, hub: bool) {
    let (server, headers, engine_port) = with_feeds(&format!("feeds{devices}"), hub).await;
    let e = server.engine.as_ref().unwrap();
    let db = "dev_acme_main_catalog";
    let how = if hub { "through the hub" } else { "one engine feed each (DOCDB_HUB=false)" };
    let rss_before = server.rss_kib();
    let url = format!("{}/docdb/{db}/_changes?feed=continuous&since=now&heartbeat=30000", server.base);
    let deadline = Instant::now() + Duration::from_secs(120);
    let (tasks, mut arrived) =
        open_feeds((0..devices).map(|i| (url.clone(), headers.clone(), i)).collect(), "\"hubbench-", deadline).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss, held) = (server.rss_kib().saturating_sub(rss_before), engine_connections(&server, engine_port));
    let mut latencies = Vec::new();
    for k in 0..3 {
        let written = Instant::now();
        e.bulk(db, json!([{"_id": format!("hubbench-{k}"), "type": "product"}])).await;
        let mut got = 0;
        while got < devices {
            let Ok(Some((_, at))) = tokio::time::timeout_at(deadline.into(), arrived.recv()).await else { break };
            latencies.push(at.duration_since(written));
            got += 1;
        }
    }
    let all = latencies.len() == 3 * devices;
    let (p50, p99, max) = percentiles(latencies);
    row(
        &format!("{devices} live feeds of one database, {how}"),
        format!(
            "a write reaches all: p50 {p50:.0} ms, p99 {p99:.0} ms, max {max:.0} ms{}; engine connections {held}; server +{} KiB ({:.1} KiB a feed)",
            if all { "" } else { " (NOT ALL ARRIVED)" },
            rss,
            rss as f64 / devices as f64
        ),
    );
    for t in tasks {
        t.abort();
    }
}

/// A replica's gauge from its `/metrics`.
async fn metric(url: &str, name: &str) -> f64 {
    let text = client().get(url).send().await.unwrap().text().await.unwrap();
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok()).unwrap_or(f64::NAN)
}

/// Three replicas on one PostgreSQL and one PouchDB Server, `devices` live feeds spread over them
/// as a load balancer spreads them (device i on replica i mod 3), listening to `tenants` tenants'
/// databases (device i to tenant i mod `tenants`); then writes to every database, each timed until
/// every device of it has it; then the refresh across the replicas.
async fn replicas(devices: usize, tenants: usize) {
    let e = engine::Engine::start().await;
    let env = [("DOCDB_FEEDS_PER_SESSION", "1000000")];
    let (server, created) = Server::start_on("replicas", tenants, 5000, Some(e), Store::Postgres(3), &env).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    for m in &server.metrics {
        while metric(m, "replicas_alive").await != 3.0 {
            assert!(Instant::now() < deadline, "the replicas did not hear each other within 60 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // A cashier of each tenant, logged in once: its session's document headers for its devices.
    let db = |t: usize| format!("dev_t{t:05}_main_catalog");
    let admin = login(&client(), &server.base, "admin").await["token"].as_str().unwrap().to_owned();
    let mut headers = Vec::new();
    for t in 0..tenants {
        let username = format!("cashier-t{t:05}");
        let body =
            json!({"username": username, "password": format!("{username}-pass"), "companyId": format!("t{t:05}")});
        let made = post(&client(), format!("{}/register-user", server.base), Some(&admin), body).await;
        assert!(made["user"].is_object(), "the bench's user {username} was not made: {made}");
        headers.push(login(&client(), &server.base, &username).await["docdbHeaders"]["Remote"].clone());
    }
    let rss_before = server.rss_kib();
    let deadline = Instant::now() + Duration::from_secs(180);
    let feeds = (0..devices)
        .map(|i| {
            let t = i % tenants;
            let url =
                format!("{}/docdb/{}/_changes?feed=continuous&since=now&heartbeat=30000", server.bases[i % 3], db(t));
            (url, headers[t].clone(), t)
        })
        .collect();
    let (tasks, mut arrived) = open_feeds(feeds, "\"fleetbench-", deadline).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let (rss, threads) = (server.rss_kib().saturating_sub(rss_before), server.threads());
    // The blocking threads a burst of store work started end after 10 s idle; what stays is the
    // feeds' own.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let (settled, threads_after) = (server.rss_kib().saturating_sub(rss_before), server.threads());
    let (mut engine_feeds, mut forwarded) = (0.0, 0.0);
    for m in &server.metrics {
        engine_feeds += metric(m, "docdb_hub_engine_feeds").await;
        forwarded += metric(m, "docdb_hub_forwarded_feeds").await;
    }
    let e = server.engine.as_ref().unwrap();
    let mut latencies = Vec::new();
    for k in 0..3 {
        let mut written = Vec::new();
        for t in 0..tenants {
            written.push(Instant::now());
            e.bulk(&db(t), json!([{"_id": format!("fleetbench-{k}"), "type": "product"}])).await;
        }
        let mut got = 0;
        while got < devices {
            let Ok(Some((t, at))) = tokio::time::timeout_at(deadline.into(), arrived.recv()).await else { break };
            latencies.push(at.duration_since(written[t]));
            got += 1;
        }
    }
    let all = latencies.len() == 3 * devices;
    let (p50, p99, max) = percentiles(latencies);
    row(
        &format!("{devices} live feeds on {tenants} tenants over 3 replicas on PostgreSQL (set-up {:.1} s)", created.as_secs_f64()),
        format!(
            "engine feeds {engine_feeds} ({tenants} databases listened), {forwarded} between replicas; a write reaches its devices: p50 {p50:.0} ms, p99 {p99:.0} ms, max {max:.0} ms{}; replicas +{} KiB ({:.1} KiB a feed, {threads} threads) just opened, +{} KiB ({:.1} KiB a feed, {threads_after} threads) 12 s later",
            if all { "" } else { " (NOT ALL ARRIVED)" },
            rss,
            rss as f64 / devices as f64,
            settled,
            settled as f64 / devices as f64
        ),
    );
    measured(&format!("feed-kib-{devices}"), rss as f64 / devices as f64);
    auth_throughput(&server, ", 3 replicas on PostgreSQL with those feeds open").await;
    for t in tasks {
        t.abort();
    }
}

/// After an invalidation every device replicates CORE from the start: `devices` read its
/// `_changes` from 0 in pages of 100, as PouchDB does, all at once.
async fn peak(devices: usize, hub: bool) {
    let (server, headers, _) = with_feeds(&format!("peak{devices}"), hub).await;
    let e = server.engine.as_ref().unwrap();
    let core = "dev_acme_main_core";
    e.create_db(core).await;
    let products: Vec<Value> = (0..1000).map(|i| json!({"_id": format!("product-{i:04}"), "type": "product", "name": format!("Product {i}"), "priceCents": 100 + i})).collect();
    e.bulk(core, json!(products)).await;
    let how = if hub { "through the hub" } else { "each from the engine (DOCDB_HUB=false)" };
    let http = reqwest::Client::new();
    let (server_cpu, bench_cpu) = (server.cpu().0, cpu_of(std::process::id()));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..devices {
        let (http, base, headers) = (http.clone(), server.base.clone(), headers.clone());
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let (mut since, mut rows) = (json!(0), 0);
            loop {
                let url = format!("{base}/docdb/{core}/_changes?style=all_docs&since={since}&limit=100");
                let page = signed(http.get(url), &headers).send().await.unwrap().bytes().await.unwrap();
                // Read as a device's replication needs it (its rows, where to go on), without
                // parsing every row: the devices share the server's 2 cores here.
                let text = std::str::from_utf8(&page).unwrap();
                let n = text.matches("\"seq\":").count();
                let (_, last) = text.rsplit_once("\"last_seq\":").expect("a _changes answer");
                rows += n;
                since = serde_json::from_str(last.trim().trim_end_matches('}')).unwrap();
                if n < 100 {
                    return (rows, t.elapsed());
                }
            }
        }));
    }
    let mut times = Vec::new();
    let mut whole = true;
    for t in tasks {
        let (rows, took) = t.await.unwrap();
        whole &= rows == 1000;
        times.push(took);
    }
    let all = started.elapsed();
    let (server_cpu, bench_cpu) = (server.cpu().0 - server_cpu, cpu_of(std::process::id()) - bench_cpu);
    let (p50, p99, _) = percentiles(times);
    row(
        &format!("{devices} devices read CORE's 1,000 changes from 0, {how}"),
        format!(
            "all done in {:.2} s; a device p50 {p50:.0} ms, p99 {p99:.0} ms{}; CPU: server {:.1} s, the devices (this bench) {:.1} s",
            all.as_secs_f64(),
            if whole { "" } else { " (SOME INCOMPLETE)" },
            server_cpu.as_secs_f64(),
            bench_cpu.as_secs_f64()
        ),
    );
}

/// The server's RSS sampled every 20 ms on a thread of its own until the answer is dropped;
/// `peak()` the most seen so far.
struct RssPeak {
    peak: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl RssPeak {
    fn start(pid: u32) -> RssPeak {
        let (peak, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        let (p, s) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(proc_status_kib(pid, "VmRSS:") as usize, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        RssPeak { peak, stop }
    }

    fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed) as u64
    }
}

impl Drop for RssPeak {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Documents of about 4 KiB, written straight to the engine in bulks of 64 until `mib` MiB are
/// written; the last one is `hubmem-end`. Answers how many.
async fn write_mib(e: &engine::Engine, db: &str, mib: usize) -> usize {
    let pad = "x".repeat(4000);
    let docs = mib * 1024 * 1024 / 4096;
    for start in (0..docs).step_by(64) {
        let bulk: Vec<Value> = (start..(start + 64).min(docs))
            .map(|k| json!({"_id": format!("hubmem-{k:06}"), "type": "product", "pad": pad}))
            .collect();
        e.bulk(db, json!(bulk)).await;
    }
    e.bulk(db, json!([{"_id": "hubmem-end"}])).await;
    docs + 1
}

/// A device's feed read to its end marker; answers the rows it read (heartbeats skipped).
async fn read_feed(mut feed: reqwest::Response, until: &'static [u8]) -> usize {
    let (mut rows, mut carry) = (0, Vec::new());
    while let Ok(Some(chunk)) = feed.chunk().await {
        carry.extend_from_slice(&chunk);
        let Some(end) = carry.iter().rposition(|b| *b == b'\n') else { continue };
        let lines: Vec<u8> = carry.drain(..=end).collect();
        rows += lines.split(|b| *b == b'\n').filter(|l| l.len() > 1).count();
        if lines.windows(until.len()).any(|w| w == until) {
            break;
        }
    }
    rows
}

/// The hub's memory: the server's RSS growth while `mib` MiB of documents are written to one
/// database with 1 and with 1,000 devices listening (continuous, `style=all_docs`, as a live
/// replication listens), and while 100 devices catch up from `since=0` at once on a database
/// that size (longpoll, no limit, no documents). A fresh server and engine for each.
async fn hub_memory(mib: usize) {
    let db = "dev_acme_main_catalog";
    let mut table = Vec::new();
    let mut report = |what: String, figure: String| {
        row(&what, figure.clone());
        table.push(format!("| {what} | {figure} |"));
    };
    for listeners in [1usize, 1000] {
        let (server, headers, _) = with_feeds(&format!("hubmem{listeners}"), true).await;
        let e = server.engine.as_ref().unwrap();
        let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
        let mut tasks = Vec::new();
        for _ in 0..listeners {
            let url =
                format!("{}/docdb/{db}/_changes?feed=continuous&since=now&style=all_docs&heartbeat=30000", server.base);
            let feed = signed(http.get(url), &headers).send().await.unwrap();
            tasks.push(tokio::spawn(read_feed(feed, b"\"hubmem-end\"")));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = server.rss_kib();
        let sampling = RssPeak::start(server.children[0].id());
        let t = Instant::now();
        let docs = write_mib(e, db, mib).await;
        let mut complete = 0;
        for task in tasks {
            if let Ok(Ok(rows)) = tokio::time::timeout(Duration::from_secs(600), task).await {
                complete += usize::from(rows == docs);
            }
        }
        let took = t.elapsed();
        let (peak, after) = (sampling.peak(), server.rss_kib());
        report(
            format!("{mib} MiB written, {listeners} device(s) listening (hub)"),
            format!(
                "server RSS +{} MiB at most (+{} MiB after); {complete}/{listeners} had all {docs} rows; {:.0} s",
                peak.saturating_sub(before) / 1024,
                after.saturating_sub(before) / 1024,
                took.as_secs_f64()
            ),
        );
    }
    let (server, headers, _) = with_feeds("hubmem-catchup", true).await;
    let e = server.engine.as_ref().unwrap();
    let docs = write_mib(e, db, mib).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = server.rss_kib();
    let sampling = RssPeak::start(server.children[0].id());
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let t = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let url = format!("{}/docdb/{db}/_changes?feed=longpoll&since=0&style=all_docs", server.base);
        let (http, headers) = (http.clone(), headers.clone());
        tasks.push(tokio::spawn(async move {
            let answer = signed(http.get(url), &headers).send().await.unwrap();
            // A line a row, beside the opening one and the two closing ones.
            read_feed(answer, b"\"last_seq\"").await.saturating_sub(3)
        }));
    }
    let mut complete = 0;
    for task in tasks {
        if let Ok(Ok(rows)) = tokio::time::timeout(Duration::from_secs(900), task).await {
            complete += usize::from(rows >= docs);
        }
    }
    let (peak, took) = (sampling.peak(), t.elapsed());
    report(
        format!("100 devices catch up from since=0 on {mib} MiB at once (hub)"),
        format!(
            "server RSS +{} MiB at most; {complete}/100 read all {docs} rows; {:.0} s",
            peak.saturating_sub(before) / 1024,
            took.as_secs_f64()
        ),
    );
    let date = Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]).output().map(|o| o.stdout).unwrap_or_default();
    let section = format!(
        "{}\n\nWritten by `cargo bench -p mock-server --bench fleet -- hub-memory` on {}: the release server \
         and PouchDB Server afresh for each line, documents of about 4 KiB written straight to the engine; \
         the growth of the server's RSS (sampled every 20 ms) from just before the writes or the catch-ups. \
         Goal: under 64 MiB each.\n\n| what | measured |\n|---|---|\n{}\n",
        report_section::HUB_MEMORY,
        String::from_utf8_lossy(&date).trim(),
        table.join("\n")
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/REPORT.md");
    report_section::replace(&path, report_section::HUB_MEMORY, &section);
}

/// `/health` probed every 20 ms for `secs`, with a scrape of `metrics` every second or none.
async fn health_while(base: &str, metrics: Option<&str>, secs: u64) -> (f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let (client, url) = (client(), format!("{base}/health"));
    let probing = probe(stop.clone(), Duration::from_millis(20), move || {
        let (client, url) = (client.clone(), url.clone());
        Box::pin(async move {
            client.get(url).send().await.unwrap().bytes().await.unwrap();
        })
    });
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if let Some(m) = metrics {
            reqwest::get(m).await.unwrap().bytes().await.unwrap();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let (p50, p99, _) = percentiles(probing.await.unwrap());
    (p50, p99)
}

/// A scrape at `tenants` tenants (all of them rolling and rotated: every one has its CORE and its
/// per-tenant series, the most a scrape can hold), `/health` beside scrapes, and the recording's cost on refreshes
/// (the same run, `METRICS_LISTEN=off` against on).
async fn metrics_cost(tenants: usize) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    let (server, _) = Server::start_on(
        "metrics",
        tenants,
        4 * tenants + 100,
        None,
        Store::Sqlite,
        &[("METRICS_LISTEN", listen.as_str())],
    )
    .await;
    let url = format!("http://{listen}/metrics");
    let http = reqwest::Client::new();
    // Rotated and archived, so every tenant has its CORE and its reconciliation diff: the most a
    // scrape holds.
    let admin = login(&http, &server.base, "admin").await["token"].as_str().unwrap().to_owned();
    for cron in ["rolling-db-rotate", "rolling-db-archive"] {
        let r = run_to_end(&http, &server.base, &admin, cron).await;
        assert_eq!(r["status"], "succeeded", "{cron}: {r}");
    }
    let mut times = Vec::new();
    let mut text = String::new();
    for _ in 0..20 {
        let t = Instant::now();
        text = http.get(&url).send().await.unwrap().text().await.unwrap();
        times.push(t.elapsed());
    }
    let series = text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).count();
    let (p50, p99, _) = percentiles(times);
    row(
        &format!("GET /metrics at {tenants} tenants, all rolling, rotated and archived"),
        format!("p50 {p50:.1} ms, p99 {p99:.1} ms; {series} series, {} KiB", text.len() / 1024),
    );
    let quiet = health_while(&server.base, None, 5).await;
    let scraped = health_while(&server.base, Some(&url), 5).await;
    row(
        "  /health p50 / p99, without scrapes and with one a second",
        format!("{:.1} / {:.1} ms without, {:.1} / {:.1} ms with", quiet.0, quiet.1, scraped.0, scraped.1),
    );
    drop(server);

    let (off, _) = Server::start_on("metrics-off", 0, 5000, None, Store::Sqlite, &[("METRICS_LISTEN", "off")]).await;
    let (on, _) = Server::start_on("metrics-on", 0, 5000, None, Store::Sqlite, &[]).await;
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for round in 0..2 {
        let users = vec!["alice".to_owned(); 50];
        if round % 2 == 0 {
            without.push(refresh_throughput(&off, &users, "recording off").await.0);
            with.push(refresh_throughput(&on, &users, "recording on").await.0);
        } else {
            with.push(refresh_throughput(&on, &users, "recording on").await.0);
            without.push(refresh_throughput(&off, &users, "recording off").await.0);
        }
    }
    let (a, b) = (without.iter().sum::<f64>(), with.iter().sum::<f64>());
    row(
        "  refresh throughput with the recording / without (same run)",
        format!("{:.3}x ({:+.1}%)", b / a.max(1.0), (b / a.max(1.0) - 1.0) * 100.0),
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let quick = args.iter().any(|a| a == "quick");
    let only: Vec<&str> = args.iter().map(String::as_str).filter(|a| *a != "quick").collect();
    let wanted = |section: &str| only.is_empty() || only.contains(&section);
    println!(
        "fleet bench: the release mock-server as its own process on loopback ({} cores); figures vary ±20% or more",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("| {:<58} | {:<62} |", "what", "measured");
    println!("|{}|{}|", "-".repeat(60), "-".repeat(64));
    if wanted("rotate") {
        let sizes: &[usize] = if quick { &[100, 1000] } else { &[100, 1000, 10_000] };
        for &n in sizes {
            rotate(n, false, Store::Sqlite).await;
        }
    }
    if wanted("engine") {
        rotate(if quick { 100 } else { 1000 }, true, Store::Sqlite).await;
    }
    let (server, _) = Server::start("load", 0, 5000, None).await;
    if wanted("auth") || wanted("postgres") || wanted("pg-auth") {
        let sqlite = auth_throughput(&server, "").await;
        if wanted("postgres") || wanted("pg-auth") {
            let (replicas, _) = Server::start_on("load-pg", 0, 5000, None, Store::Postgres(3), &[]).await;
            let postgres = auth_throughput(&replicas, ", 3 replicas on PostgreSQL").await;
            row(
                "  refresh throughput, 3 replicas on PostgreSQL / 1 on SQLite",
                format!("{:.2}x (same run, same machine)", postgres.0 .0 / sqlite.0 .0.max(1.0)),
            );
            row("  the same, 50 sessions of one user", format!("{:.2}x", postgres.1 .0 / sqlite.1 .0.max(1.0)));
            measured("refresh-sqlite", sqlite.0 .0);
            measured("refresh-one-user-sqlite", sqlite.1 .0);
            measured("refresh-pg", postgres.0 .0);
            measured("refresh-pg-cpu", postgres.0 .1);
            measured("refresh-one-user-pg", postgres.1 .0);
        }
    }
    if wanted("bootstrap") {
        bootstrap_burst(&server).await;
    }
    drop(server);
    if wanted("storm") {
        let storms: &[usize] = if quick { &[1000] } else { &[1000, 5000] };
        for &n in storms {
            // A fresh process each, so its memory is the sockets' and not earlier sections'.
            let (server, _) = Server::start(&format!("storm{n}"), 0, 5000, None).await;
            storm(&server, n).await;
        }
    }
    if wanted("feeds") {
        let (hub, per_device) = if quick { (1000, 200) } else { (5000, 500) };
        feeds(per_device, false).await;
        feeds(hub, true).await;
    }
    if wanted("hub-memory") {
        // HUB_BENCH_MIB: a smaller database for a quick look (120 MiB by default, 16 with quick).
        let mib = std::env::var("HUB_BENCH_MIB").ok().and_then(|m| m.parse().ok());
        hub_memory(mib.unwrap_or(if quick { 16 } else { 120 })).await;
    }
    if wanted("metrics") {
        metrics_cost(if quick { 1000 } else { 10_000 }).await;
    }
    if wanted("peak") {
        let (hub, per_device) = if quick { (1000, 200) } else { (5000, 500) };
        peak(per_device, false).await;
        peak(hub, true).await;
    }
    if wanted("replicas") {
        let (devices, tenants) = if quick { (1000, 20) } else { (5000, 100) };
        replicas(devices, tenants).await;
    }
    if wanted("postgres") || wanted("pg-storm") {
        let n = if quick { 1000 } else { 5000 };
        let (replicas, _) = Server::start_on(&format!("storm{n}-pg"), 0, 5000, None, Store::Postgres(3), &[]).await;
        storm(&replicas, n).await;
    }
    // Last: after a 10,000-tenant rotate on PostgreSQL the machine is slower for a while (the
    // refresh on PostgreSQL measured right after it: 0.50x instead of 0.67-0.78x, a sync between
    // them did not help), so the sections that measure throughput come first.
    if wanted("postgres") || wanted("pg-rotate") {
        let sizes: &[usize] = if quick { &[1000] } else { &[1000, 10_000] };
        for &n in sizes {
            rotate(n, false, Store::Postgres(1)).await;
        }
    }
    print_goals();
    // A quick look does not replace the report's figures.
    if !quick {
        report_postgres();
    }
}
