//! The real binary killed with SIGKILL in the middle of a cron: after a restart on the same data
//! every tenant is either fully done or untouched, and the next run completes it (the rotate,
//! on the embedded model and on the engine; the archive, the backup and the drop).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::engine::Engine;
use reqwest::Client;
use serde_json::{json, Value};

struct Proc {
    child: Child,
    base: String,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(data_dir: &std::path::Path) -> Proc {
    start_with(data_dir, None)
}

fn start_with(data_dir: &std::path::Path, docdb_url: Option<&str>) -> Proc {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mock-server"));
    if let Some(url) = docdb_url {
        command.env("DOCDB_URL", url);
    }
    command.env("DATA_DIR", data_dir);
    spawn(command)
}

/// A replica of the store on PostgreSQL at `database_url`.
fn start_replica(database_url: &str) -> Proc {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mock-server"));
    command.env("DATABASE_URL", database_url).env("JWT_SECRET", "0123456789abcdef-replicas");
    spawn(command)
}

fn spawn(mut command: Command) -> Proc {
    let mut child = command
        .args(["--listen", "127.0.0.1:0"])
        .env("MOCK_TEST_CONTROLS", "1")
        // One tenant a transaction, so a kill can fall between two tenants.
        .env("CRON_BATCH_SIZE", "1")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the mock-server binary starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let base = line.trim().strip_prefix("listening on ").expect("first line names the address").to_owned();
    Proc { child, base }
}

async fn call(
    client: &Client,
    method: reqwest::Method,
    url: String,
    token: Option<&str>,
    body: Option<Value>,
) -> Value {
    let mut req = client.request(method, url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    req.send().await.unwrap().json().await.unwrap()
}

async fn admin_token(client: &Client, base: &str) -> String {
    let body = call(
        client,
        reqwest::Method::POST,
        format!("{base}/auth"),
        None,
        Some(json!({"username": "admin", "password": "admin-pass", "deviceInfo": {}})),
    )
    .await;
    body["token"].as_str().unwrap().to_owned()
}

/// Per tenant: (CORE exists, day databases, invalidated to core).
async fn shape(client: &Client, base: &str, token: &str) -> Vec<(bool, u64, bool)> {
    let mut out = Vec::new();
    for id in ["acme", "globex", "initech"] {
        let topo = call(
            client,
            reqwest::Method::GET,
            format!("{base}/admin/rolling-db/tenants/{id}/topology"),
            Some(token),
            None,
        )
        .await;
        out.push((
            topo["core"]["exists"] == true,
            topo["days"].as_array().unwrap().len() as u64,
            topo["invalidation"]["routing"] == "core",
        ));
    }
    out
}

/// The run once it is no longer running, or the last answer after `within`.
async fn finished_run(client: &Client, base: &str, token: &str, run_id: &str, within: Duration) -> Value {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let run =
            call(client, reqwest::Method::GET, format!("{base}/admin/crons/runs/{run_id}"), Some(token), None).await;
        if run["status"] != "running" || tokio::time::Instant::now() >= deadline {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn killed_mid_rotate_the_store_stays_consistent_and_the_next_rotate_completes() {
    let dir = std::env::temp_dir().join(format!("mock-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let client = Client::new();

    let first = start(&dir);
    let token = admin_token(&client, &first.base).await;
    for id in ["acme", "globex", "initech"] {
        call(
            &client,
            reqwest::Method::PATCH,
            format!("{}/admin/rolling-db/flags/{id}", first.base),
            Some(&token),
            Some(json!({"rollingDb": true})),
        )
        .await;
    }
    let (second, run_id) = killed_mid(&client, &dir, first, "rolling-db-rotate", 0.0).await;
    let token = admin_token(&client, &second.base).await;
    let after_crash = shape(&client, &second.base, &token).await;
    for (i, (core, days, invalidated)) in after_crash.iter().enumerate() {
        let complete = *core && *days == 2 && *invalidated;
        let untouched = !*core && *days == 0 && !*invalidated;
        assert!(complete || untouched, "tenant {i} half-rotated: {after_crash:?}");
    }
    assert!(after_crash.iter().any(|t| t.0), "the kill came after the first tenant: {after_crash:?}");
    assert!(after_crash.iter().any(|t| !t.0), "the kill came before the last tenant: {after_crash:?}");

    // The dead process's lock lease ran out (killed_mid moved the clock); the next rotate takes
    // over and completes.
    let old =
        call(&client, reqwest::Method::GET, format!("{}/admin/crons/runs/{run_id}", second.base), Some(&token), None)
            .await;
    assert_eq!(old["status"], "running", "recorded as running until someone takes the lock over");
    let next = call(
        &client,
        reqwest::Method::POST,
        format!("{}/admin/crons/rolling-db-rotate/run", second.base),
        Some(&token),
        Some(json!({})),
    )
    .await;
    assert_eq!(next["alreadyRunning"], false);
    let finished =
        finished_run(&client, &second.base, &token, next["runId"].as_str().unwrap(), Duration::from_secs(10)).await;
    assert_eq!(finished["status"], "succeeded", "{finished}");
    assert_eq!(shape(&client, &second.base, &token).await, vec![(true, 2, true); 3]);
    let old =
        call(&client, reqwest::Method::GET, format!("{}/admin/crons/runs/{run_id}", second.base), Some(&token), None)
            .await;
    assert_eq!(old["status"], "failed");
    assert!(old["log"].as_array().unwrap().last().unwrap().as_str().unwrap().contains("interrupted"));
    drop(second);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pass-through in front of the engine that, once it has forwarded `trigger` and the engine
/// has answered it, tells the test (`reached`) and holds every later request until the test lets
/// go (`holding`): the server is killed with the engine's write done and the store's commit not.
/// It fires the first time only.
async fn tripwire(real: &Engine, trigger: &'static str) -> (String, Arc<tokio::sync::Notify>, Arc<AtomicBool>) {
    let (reached, holding, fired) =
        (Arc::new(tokio::sync::Notify::new()), Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let (r, h, engine) = (reached.clone(), holding.clone(), real.forwarder());
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let (r, h, f, engine) = (r.clone(), h.clone(), fired.clone(), engine.clone());
        async move {
            while h.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).trim_start_matches('/');
            let is_trigger = format!("{} {path}", request.method()) == trigger;
            let answer = engine.forward(request).await;
            // Once: the restarted server's rotate sends the same request again.
            if is_trigger && !f.swap(true, Ordering::SeqCst) {
                h.store(true, Ordering::SeqCst);
                r.notify_one();
            }
            answer
        }
    });
    (common::engine::serve_pass_through(app).await, reached, holding)
}

/// The same kill on the engine, at the worst point: the second tenant's CORE is written on the
/// engine (its `_bulk_docs` answered) and the store's transaction for that tenant never commits.
/// After a restart the store shows that tenant untouched; the next rotate finds the engine's half
/// and completes it to exactly what one clean run makes (CORE at 17 documents, `update_seq` 17).
// Several workers: the server seeds its engine at start-up through the tripwire, which must go
// on answering while the test waits for the server's first line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_rotate_on_the_engine_the_next_rotate_completes_to_one_clean_runs_result() {
    let dir = std::env::temp_dir().join(format!("mock-crash-engine-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let client = Client::new();
    let engine = Engine::start().await;
    let (url, reached, holding) = tripwire(&engine, "POST dev_globex_main_core/_bulk_docs").await;

    let first = start_with(&dir, Some(&url));
    let token = admin_token(&client, &first.base).await;
    for id in ["acme", "globex", "initech"] {
        call(
            &client,
            reqwest::Method::PATCH,
            format!("{}/admin/rolling-db/flags/{id}", first.base),
            Some(&token),
            Some(json!({"rollingDb": true})),
        )
        .await;
    }
    call(
        &client,
        reqwest::Method::POST,
        format!("{}/admin/crons/rolling-db-rotate/run", first.base),
        Some(&token),
        Some(json!({})),
    )
    .await;
    tokio::time::timeout(Duration::from_secs(60), reached.notified()).await.expect("the rotate reached globex's CORE");
    drop(first); // SIGKILL, with the engine's write done and the tenant's transaction open
    holding.store(false, Ordering::SeqCst);
    let half = engine.get("dev_globex_main_core").await;
    assert_eq!(half["doc_count"], 17, "the engine holds the killed step's half: {half}");

    let second = start_with(&dir, Some(&url));
    let token = admin_token(&client, &second.base).await;
    assert_eq!(
        shape(&client, &second.base, &token).await,
        vec![(true, 2, true), (false, 0, false), (false, 0, false)],
        "acme committed, globex and initech untouched in the store"
    );
    call(
        &client,
        reqwest::Method::POST,
        format!("{}/__mock/clock", second.base),
        None,
        Some(json!({"advanceDays": 0.001})),
    )
    .await;
    let token = admin_token(&client, &second.base).await;
    let next = call(
        &client,
        reqwest::Method::POST,
        format!("{}/admin/crons/rolling-db-rotate/run", second.base),
        Some(&token),
        Some(json!({})),
    )
    .await;
    let finished =
        finished_run(&client, &second.base, &token, next["runId"].as_str().unwrap(), Duration::from_secs(20)).await;
    assert_eq!(finished["status"], "succeeded", "{finished}");
    assert_eq!(shape(&client, &second.base, &token).await, vec![(true, 2, true); 3]);
    for id in ["acme", "globex", "initech"] {
        let core = engine.get(&format!("dev_{id}_main_core")).await;
        assert_eq!(
            (core["doc_count"].as_u64(), core["update_seq"].as_u64()),
            (Some(17), Some(17)),
            "{id}: as one clean run: {core}"
        );
        let docs = engine.get(&format!("dev_{id}_main_core/_all_docs")).await;
        assert!(
            docs["rows"].as_array().unwrap().iter().all(|r| r["value"]["rev"].as_str().unwrap().starts_with("1-")),
            "{id}: fresh revisions"
        );
    }
    drop(second);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts `cron` slowed to one tenant every 800 ms, kills the server after the first tenant
/// (done at ~0.8 s, the second at ~1.6 s), and answers a restarted server on the same data, its
/// clock moved `days` on as the dead one's was (the mock clock is the process's) and the dead
/// run's lock lease let run out, with the dead run's id.
async fn killed_mid(client: &Client, dir: &std::path::Path, server: Proc, cron: &str, days: f64) -> (Proc, String) {
    let token = admin_token(client, &server.base).await;
    call(
        client,
        reqwest::Method::POST,
        format!("{}/__mock/slow", server.base),
        None,
        Some(json!({"stepDelayMs": 800})),
    )
    .await;
    let run = call(
        client,
        reqwest::Method::POST,
        format!("{}/admin/crons/{cron}/run", server.base),
        Some(&token),
        Some(json!({})),
    )
    .await;
    assert_eq!(run["status"], "running", "{run}");
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    drop(server); // SIGKILL
    let next = start(dir);
    let now = call(
        client,
        reqwest::Method::POST,
        format!("{}/__mock/clock", next.base),
        None,
        Some(json!({"advanceDays": days + 0.001})),
    )
    .await;
    assert!(now["now"].is_i64(), "{now}");
    (next, run["runId"].as_str().unwrap().to_owned())
}

/// Runs `cron` to its end on `server`; answers the run.
async fn run_to_end(client: &Client, server: &Proc, cron: &str) -> Value {
    let token = admin_token(client, &server.base).await;
    let run = call(
        client,
        reqwest::Method::POST,
        format!("{}/admin/crons/{cron}/run", server.base),
        Some(&token),
        Some(json!({})),
    )
    .await;
    let done =
        finished_run(client, &server.base, &token, run["runId"].as_str().unwrap(), Duration::from_secs(20)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    done
}

/// The runbook's irreversible step, crash by crash: the archive (relational rows included), the
/// backup and the drop each killed after their first tenant, restarted and run again, end as one
/// clean run would: every day reconciled with one row per order, one snapshot per database, every
/// eligible day dropped with the checks after a drop answered.
#[tokio::test]
async fn killed_mid_archive_backup_and_drop_the_next_runs_end_as_one_clean_run() {
    let dir = std::env::temp_dir().join(format!("mock-crash-drop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let client = Client::new();
    let server = start(&dir);
    let token = admin_token(&client, &server.base).await;
    for id in ["acme", "globex", "initech"] {
        let on = call(
            &client,
            reqwest::Method::PATCH,
            format!("{}/admin/rolling-db/flags/{id}?force=true", server.base),
            Some(&token),
            Some(json!({"rollingDb": true, "rollingDbDrop": true})),
        )
        .await;
        assert_eq!(on["rollingDbDrop"], true, "{on}");
    }
    run_to_end(&client, &server, "rolling-db-rotate").await;
    let topo = call(
        &client,
        reqwest::Method::GET,
        format!("{}/admin/rolling-db/tenants/acme/topology", server.base),
        Some(&token),
        None,
    )
    .await;
    let day0 = topo["days"][0]["name"].as_str().unwrap().to_owned();
    let day = day0.trim_start_matches("daily_dev_acme_main_").to_owned();
    for (user, company) in [("alice", "acme"), ("bob", "globex")] {
        let t = call(
            &client,
            reqwest::Method::POST,
            format!("{}/auth", server.base),
            None,
            Some(json!({"username": user, "password": format!("{user}-pass"), "deviceInfo": {}})),
        )
        .await;
        let t = t["token"].as_str().unwrap().to_owned();
        for n in 0..2 {
            let url = format!("{}/docdb/daily_dev_{company}_main_{day}/order-{n}", server.base);
            let put = call(
                &client,
                reqwest::Method::PUT,
                url,
                Some(&t),
                Some(json!({"type": "order", "status": "paid", "totalCents": 100 + n})),
            )
            .await;
            assert_eq!(put["ok"], true, "{put}");
        }
    }
    call(
        &client,
        reqwest::Method::POST,
        format!("{}/__mock/clock", server.base),
        None,
        Some(json!({"advanceDays": 1})),
    )
    .await;
    run_to_end(&client, &server, "rolling-db-rotate").await;

    let (server, _) = killed_mid(&client, &dir, server, "rolling-db-archive", 1.0).await;
    run_to_end(&client, &server, "rolling-db-archive").await;
    let token = admin_token(&client, &server.base).await;
    for (company, orders) in [("acme", 2), ("globex", 2), ("initech", 0)] {
        let recon = call(
            &client,
            reqwest::Method::GET,
            format!("{}/admin/rolling-db/tenants/{company}/reconciliation", server.base),
            Some(&token),
            None,
        )
        .await;
        let first = &recon["days"][0];
        assert_eq!(
            (recon["diff"].clone(), first["status"].clone(), first["relational"][0]["rowCount"].clone()),
            (json!(0), json!("ARCHIVED"), json!(orders)),
            "{company}: {recon}"
        );
    }

    let (server, _) = killed_mid(&client, &dir, server, "rolling-db-backup", 1.001).await;
    run_to_end(&client, &server, "rolling-db-backup").await;
    for company in ["acme", "globex", "initech"] {
        let db = format!("daily_dev_{company}_main_{day}");
        let files: Vec<String> = std::fs::read_dir(dir.join("backups").join(&db))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            files.iter().filter(|f| f.ends_with(".manifest.json")).count(),
            1,
            "{db}: one snapshot, not one per run: {files:?}"
        );
        assert_eq!(files.len(), 2, "{db}: its data and its manifest, nothing cut short left over: {files:?}");
    }

    call(
        &client,
        reqwest::Method::POST,
        format!("{}/__mock/clock", server.base),
        None,
        Some(json!({"advanceDays": 31})),
    )
    .await;
    let (server, _) = killed_mid(&client, &dir, server, "rolling-db-drop-eval", 32.002).await;
    run_to_end(&client, &server, "rolling-db-drop-eval").await;
    let token = admin_token(&client, &server.base).await;
    for company in ["acme", "globex", "initech"] {
        let topo = call(
            &client,
            reqwest::Method::GET,
            format!("{}/admin/rolling-db/tenants/{company}/topology", server.base),
            Some(&token),
            None,
        )
        .await;
        let first = &topo["days"][0];
        assert_eq!(first["status"], "DROPPED", "{company}: {topo}");
        let after = &first["afterDrop"];
        assert_eq!(
            (after["goneFromEngine"].clone(), after["replicatorClean"].clone()),
            (json!(true), json!(true)),
            "{company}: {topo}"
        );
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Three replicas on one PostgreSQL: the rotate triggered on all at once runs once (the others
/// answer 202 naming the same run); the replica running it is killed (SIGKILL) between tenants;
/// after the lease another replica's trigger takes the lock over, and the tenants end as one clean
/// run leaves them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_rotate_once_and_a_killed_replicas_rotate_is_taken_over_after_the_lease() {
    let cluster = common::pg::Cluster::start();
    let url = cluster.migrated("takeover");
    let client = Client::new();
    let replicas: Vec<Proc> = (0..3).map(|_| start_replica(&url)).collect();
    let token = admin_token(&client, &replicas[0].base).await;
    for id in ["acme", "globex", "initech"] {
        call(
            &client,
            reqwest::Method::PATCH,
            format!("{}/admin/rolling-db/flags/{id}", replicas[1].base),
            Some(&token),
            Some(json!({"rollingDb": true})),
        )
        .await;
    }
    // Only the replica that will run it is slowed, so the kill falls between two tenants.
    call(
        &client,
        reqwest::Method::POST,
        format!("{}/__mock/slow", replicas[0].base),
        None,
        Some(json!({"stepDelayMs": 800})),
    )
    .await;
    let first = call(
        &client,
        reqwest::Method::POST,
        format!("{}/admin/crons/rolling-db-rotate/run", replicas[0].base),
        Some(&token),
        Some(json!({})),
    )
    .await;
    let run_id = first["runId"].as_str().unwrap().to_owned();
    let trigger = |base: String| {
        let (client, token) = (client.clone(), token.clone());
        async move {
            call(
                &client,
                reqwest::Method::POST,
                format!("{base}/admin/crons/rolling-db-rotate/run"),
                Some(&token),
                Some(json!({})),
            )
            .await
        }
    };
    let (a, b) = tokio::join!(trigger(replicas[1].base.clone()), trigger(replicas[2].base.clone()));
    for joined in [&a, &b] {
        assert_eq!(
            (joined["runId"].as_str(), joined["alreadyRunning"].as_bool()),
            (Some(run_id.as_str()), Some(true)),
            "{joined}"
        );
    }
    // Killed once the first tenant is done, in the pause before the second.
    for _ in 0..500 {
        let run = call(
            &client,
            reqwest::Method::GET,
            format!("{}/admin/crons/runs/{run_id}", replicas[2].base),
            Some(&token),
            None,
        )
        .await;
        if run["progress"]["done"].as_u64().unwrap_or(0) >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut replicas = replicas.into_iter();
    drop(replicas.next()); // SIGKILL, mid-run
    let (second, third) = (replicas.next().unwrap(), replicas.next().unwrap());
    let after_kill = shape(&client, &second.base, &token).await;
    assert!(
        after_kill.iter().any(|t| t.0) && after_kill.iter().any(|t| !t.0),
        "killed between tenants: {after_kill:?}"
    );
    assert!(
        after_kill.iter().all(|&(core, days, cut)| (core && days == 2 && cut) || (!core && days == 0 && !cut)),
        "no tenant half-rotated: {after_kill:?}"
    );
    // Within the lease the dead replica's run still holds the lock: joined, never doubled.
    let held = trigger(second.base.clone()).await;
    assert_eq!(held["runId"], run_id.as_str(), "{held}");
    // The lease runs out on the shared clock; the next trigger, on another replica, takes over.
    call(
        &client,
        reqwest::Method::POST,
        format!("{}/__mock/clock", third.base),
        None,
        Some(json!({"advanceDays": 0.001})),
    )
    .await;
    let mut next = Value::Null;
    for _ in 0..100 {
        next = trigger(second.base.clone()).await;
        if next["alreadyRunning"] == false {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(next["alreadyRunning"], false, "{next}");
    let finished =
        finished_run(&client, &third.base, &token, next["runId"].as_str().unwrap(), Duration::from_secs(20)).await;
    assert_eq!(finished["status"], "succeeded", "{finished}");
    assert_eq!(shape(&client, &third.base, &token).await, vec![(true, 2, true); 3], "one clean run's result");
    let old =
        call(&client, reqwest::Method::GET, format!("{}/admin/crons/runs/{run_id}", third.base), Some(&token), None)
            .await;
    assert_eq!(old["status"], "failed", "{old}");
    // Each tenant cut over once: one cutover invalidation in the audit log.
    for id in ["acme", "globex", "initech"] {
        let audit = call(
            &client,
            reqwest::Method::GET,
            format!("{}/admin/audit?companyId={id}&limit=100", second.base),
            Some(&token),
            None,
        )
        .await;
        let cutovers =
            audit["entries"].as_array().unwrap().iter().filter(|e| e["action"] == "clients.invalidate").count();
        assert_eq!(cutovers, 1, "{id}: {audit}");
    }
}
