//! `mock-server [--listen ADDR] [--www DIR] [--pkg DIR] [--vendor DIR]` serves;
//! `mock-server migrate [--database-url URL] [--status | --baseline-through NNNN | --dry-run | --validate]`
//! runs the migration runner (PostgreSQL with a URL, else the embedded store).

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;

use mock_server::causes::chain;
use mock_server::settings::Settings;
use mock_server::state::{AppState, StaticDirs};
use mock_server::store::{self, migrate};

const USAGE: &str = "usage:
  mock-server [--listen ADDR] [--www DIR] [--pkg DIR] [--vendor DIR]
                                                          serve (default 127.0.0.1:8080; /pkg/ and /vendor/ from those dirs)
  mock-server restore <db> [--snapshot ID]                a dropped day database back from BACKUP_DIR (or a rolled-back tenant's lost day put back)
  mock-server migrate                                     apply missing migrations
  mock-server migrate --status                            list migrations and whether applied
  mock-server migrate --baseline-through NNNN             record 0000..NNNN as applied without running them
  mock-server migrate --database-url postgres://… [--status | --baseline-through NNNN | --dry-run | --validate]
                                                          the same against PostgreSQL (or MIGRATION_DATABASE_URL)
settings come from the environment: DB_PREFIX, ROLLING_DB_MAX_OPEN, CONFLICTS_ENABLED, AUTO_ARCHIVE_ENABLED,
BACKUP_ENABLED, BACKUP_DIR, JWT_SECRET, REPLICA_URL, ACCESS_TOKEN_TTL_SECS, DATA_DIR, METRICS_LISTEN, LOG_FORMAT, MOCK_TEST_CONTROLS (docs/server.md: all of them)";

/// What a command ends with: its error keeps its causes, told once each by `chain`.
type CliResult = Result<(), Box<dyn Error>>;

/// The command line was not understood (the text says how; the usage follows it).
#[derive(Debug, thiserror::Error)]
#[error("{0}\n{USAGE}")]
struct Usage(String);

/// `migrate --validate` found a check that does not hold (its FAIL lines say which).
#[derive(Debug, thiserror::Error)]
#[error("validation failed (see the FAIL lines)")]
struct ValidationFailed;

fn usage(what: String) -> Box<dyn Error> {
    Box::new(Usage(what))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let settings = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => return fail(&format!("bad setting {}", chain(&e))),
    };
    let result = match args.first().map(String::as_str) {
        Some("migrate") => run_migrate(&args[1..], &settings),
        Some("restore") => run_restore(&args[1..], settings),
        Some("--help" | "-h" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => serve(&args, settings),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&chain(&*e)),
    }
}

/// `mock-server restore <db> [--snapshot ID]`: a dropped day database back from its snapshot in
/// `BACKUP_DIR` (or an archived day a rolled-back tenant lost put back from it), into the store of `DATA_DIR` and the engine of `DOCDB_URL` (as the server uses
/// them), audited as `day.restore`.
fn run_restore(args: &[String], settings: Settings) -> CliResult {
    let db = args
        .first()
        .filter(|a| !a.starts_with("--"))
        .ok_or_else(|| usage("restore needs a database name".into()))?
        .clone();
    let snapshot = match &args[1..] {
        [] => None,
        [flag, id] if flag == "--snapshot" => Some(id.clone()),
        other => return Err(usage(format!("unknown arguments {other:?}"))),
    };
    let state = AppState::new(settings, StaticDirs::default())?;
    let dir = mock_server::rolling::RollingSettings::from(&*state.settings).backup_dir;
    let now = state.clock.now_ms();
    let restored = state.store.transaction(|tx| {
        mock_server::rolling::backup::restore_audited(
            &state.cluster(tx),
            &dir,
            &state.settings.db_prefix,
            &db,
            snapshot.as_deref(),
            now,
        )
    })?;
    println!(
        "restored {} ({} documents) from snapshot {} of {}",
        restored.db,
        restored.doc_count,
        restored.snapshot_id,
        dir.display()
    );
    if restored.held {
        println!(
            "{} is held: no drop evaluation takes it until a sys_admin releases it (the console, or POST /admin/rolling-db/tenants/{}/days/{}/release)",
            restored.db, restored.company_id, restored.db
        );
    } else {
        println!("{} is back: invalidate {}'s clients to send its devices to it", restored.db, restored.company_id);
    }
    Ok(())
}

fn fail(message: &str) -> ExitCode {
    eprintln!("mock-server: {message}");
    ExitCode::FAILURE
}

fn value<'a>(args: &'a [String], i: usize, flag: &str) -> Result<&'a String, Box<dyn Error>> {
    args.get(i + 1).ok_or_else(|| usage(format!("{flag} needs a value")))
}

/// The blocking pool's bound: store transactions waiting on PostgreSQL and password checks (one a
/// core) beside them; more threads than this only wait on the pool's connections.
const MAX_BLOCKING_THREADS: usize = 64;

/// A listening socket with a backlog sized for a fleet: after an invalidation every device of a
/// tenant reconnects at once, and tokio's default backlog (128) overflows into TCP retries.
const ACCEPT_BACKLOG: u32 = 4096;

async fn bind(listen: &str) -> std::io::Result<tokio::net::TcpListener> {
    let mut last = std::io::Error::new(std::io::ErrorKind::AddrNotAvailable, "no address to listen on");
    for addr in tokio::net::lookup_host(listen).await? {
        let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        socket.set_reuseaddr(true)?;
        match socket.bind(addr) {
            Ok(()) => return socket.listen(ACCEPT_BACKLOG),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Why the server would not serve.
#[derive(Debug, thiserror::Error)]
enum ServeError {
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("listen on {0}")]
    Listen(String, #[source] std::io::Error),
    #[error("refusing to listen on {0} (reachable from other machines) without JWT_SECRET: set JWT_SECRET (at least 16 characters), or listen on 127.0.0.1")]
    ReachableWithoutSecret(std::net::SocketAddr),
    #[error("the server")]
    Io(#[from] std::io::Error),
}

fn serve(args: &[String], settings: Settings) -> CliResult {
    let mut listen = "127.0.0.1:8080".to_owned();
    let mut dirs = StaticDirs::default();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--listen" => listen = value(args, i, "--listen")?.clone(),
            "--www" => dirs.www = Some(PathBuf::from(value(args, i, "--www")?)),
            "--pkg" => dirs.pkg = Some(PathBuf::from(value(args, i, "--pkg")?)),
            "--vendor" => dirs.vendor = Some(PathBuf::from(value(args, i, "--vendor")?)),
            other => return Err(usage(format!("unknown argument {other:?}"))),
        }
        i += 2;
    }
    for dir in [&dirs.www, &dirs.pkg, &dirs.vendor].into_iter().flatten() {
        if !dir.is_dir() {
            return Err(ServeError::NotADirectory(dir.clone()).into());
        }
    }
    let logs = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,tower_http=warn".into()),
    );
    // JSON lines for a log shipper; the message of each (the rollout's lines) is the same text.
    if settings.log_json {
        logs.json().init();
    } else {
        logs.init();
    }
    // Every PostgreSQL transaction hands its worker over (`block_in_place`) to a thread of the
    // blocking pool; tokio's default of 512 such threads let a burst of 5,000 feeds opening start
    // 500 a replica, whose stacks stayed in the process's memory after they ended.
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().max_blocking_threads(MAX_BLOCKING_THREADS).build()?;
    runtime.block_on(async move {
        let mut settings = settings;
        let listener = bind(&listen).await.map_err(|e| ServeError::Listen(listen.clone(), e))?;
        let addr = listener.local_addr()?;
        // The other replicas reach this one where it listens, unless told otherwise.
        if settings.database_url.is_some() && settings.replica_url.is_none() && !addr.ip().is_unspecified() {
            settings.replica_url = Some(format!("http://{addr}"));
        }
        // A generated secret is fine for one machine; a server others can reach must be told its
        // secret, so that tokens survive a new DATA_DIR and nobody relies on a file by accident.
        if !addr.ip().is_loopback() && settings.jwt_secret.is_none() {
            return Err(ServeError::ReachableWithoutSecret(addr).into());
        }
        let state = AppState::new(settings, dirs)?;
        let metrics = match state.settings.metrics_listen.clone() {
            Some(at) => {
                let metrics = bind(&at).await.map_err(|e| ServeError::Listen(at.clone(), e))?;
                if !metrics.local_addr()?.ip().is_loopback() {
                    tracing::warn!(
                        "METRICS_LISTEN {at} is not loopback: whoever reaches it reads the rollout's metrics"
                    );
                }
                Some(metrics)
            }
            None => None,
        };
        // The first stdout line is what scripts read the address from; the metrics address is the
        // second. Both go in one write, so a script that reads one line and closes the pipe never
        // makes a later print fail.
        let mut announce = format!("listening on http://{addr}\n");
        if let Some(metrics) = &metrics {
            announce.push_str(&format!("metrics on http://{}/metrics\n", metrics.local_addr()?));
        }
        let mut stdout = std::io::stdout().lock();
        let _ = std::io::Write::write_all(&mut stdout, announce.as_bytes())
            .and_then(|()| std::io::Write::flush(&mut stdout));
        drop(stdout);
        if let Some(metrics) = metrics {
            let router = mock_server::metrics::router(state.clone());
            tokio::spawn(async move {
                if let Err(e) = axum::serve(metrics, router).await {
                    tracing::error!("the metrics listener: {e}");
                }
            });
        }
        mock_server::crons::scheduler::start(state.clone());
        let leaving = state.replicas.clone().zip(state.settings.database_url.clone());
        // Connection info gives handlers the peer address (rate limit, audit log).
        let app = mock_server::app(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
        axum::serve(mock_server::app::listener(listener), app)
            .with_graceful_shutdown(async move {
                shutdown().await;
                // Before the requests drain: the others take this replica's tenants now, and the
                // feeds it serves them end (the drain would otherwise wait on them).
                if let Some((replicas, url)) = leaving {
                    replicas.members.leave(&url).await;
                }
            })
            .await
            .map_err(ServeError::Io)?;
        Ok(())
    })
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

/// `migrate --database-url URL …` (or `MIGRATION_DATABASE_URL`): the PostgreSQL database of the
/// rollout; otherwise the embedded store under `DATA_DIR`.
fn run_migrate(args: &[String], settings: &Settings) -> CliResult {
    let mut rest = Vec::new();
    let mut url = std::env::var("MIGRATION_DATABASE_URL").ok().filter(|u| !u.is_empty());
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--database-url" {
            url = Some(value(args, i, "--database-url")?.clone());
            i += 2;
        } else {
            rest.push(args[i].clone());
            i += 1;
        }
    }
    match url {
        Some(url) => run_migrate_postgres(&url, &rest),
        None => run_migrate_sqlite(&rest, settings),
    }
}

fn baseline_number(n: &str) -> Result<u32, Box<dyn Error>> {
    n.parse().map_err(|_| usage(format!("--baseline-through takes a migration number such as 0011, got {n:?}")))
}

fn run_migrate_postgres(url: &str, args: &[String]) -> CliResult {
    use store::postgres::{self as pg, Action};
    let action = match args {
        [] => Action::Apply,
        [flag] if flag == "--dry-run" => Action::DryRun,
        [flag] if flag == "--status" => Action::Status,
        [flag] if flag == "--validate" => Action::Validate,
        [flag, n] if flag == "--baseline-through" => Action::BaselineThrough(baseline_number(n)?),
        _ => return Err(usage(format!("unknown migrate arguments {args:?}"))),
    };
    let mut client = pg::connect(url)?;
    let mut print = |line: String| println!("{line}");
    match action {
        Action::Apply | Action::DryRun => {
            let dry = action == Action::DryRun;
            let r = pg::apply(&mut client, dry, &mut print)?;
            let verb = if dry { "would be applied" } else { "applied" };
            println!("migrations: {} {verb}, {} skipped", r.applied.len(), r.skipped.len());
        }
        Action::BaselineThrough(last) => {
            let r = pg::baseline(&mut client, last)?;
            println!("baseline: {} recorded as applied, {} already recorded", r.baselined.len(), r.skipped.len());
        }
        Action::Status => {
            for (tag, applied) in pg::status(&mut client)? {
                println!("{} {tag}", if applied { "applied" } else { "pending" });
            }
        }
        Action::Validate => {
            if !pg::validate(&mut client, &mut print)? {
                return Err(Box::new(ValidationFailed));
            }
            println!("validation: every check holds");
        }
    }
    Ok(())
}

fn run_migrate_sqlite(args: &[String], settings: &Settings) -> CliResult {
    let path = settings.data_dir.as_ref().map(|d| {
        let _ = std::fs::create_dir_all(d);
        d.join(store::DB_FILE)
    });
    if path.is_none() {
        return Err(usage("migrate needs DATA_DIR (the store to migrate)".into()));
    }
    let mut conn = store::open_connection(path.as_ref()).map_err(store::OpenError::Open)?;
    match args {
        [] => {
            let r = migrate::run(&mut conn, migrate::Mode::Apply)?;
            for tag in &r.applied {
                println!("applied {tag}");
            }
            println!("migrations: {} applied, {} skipped", r.applied.len(), r.skipped.len());
        }
        [flag] if flag == "--status" => {
            for (tag, applied) in migrate::status(&conn)? {
                println!("{} {tag}", if applied { "applied" } else { "pending" });
            }
        }
        [flag, n] if flag == "--baseline-through" => {
            let last = baseline_number(n)?;
            let r = migrate::run(&mut conn, migrate::Mode::BaselineThrough(last))?;
            println!("baseline: {} recorded as applied, {} already recorded", r.baselined.len(), r.skipped.len());
        }
        _ => return Err(usage(format!("unknown migrate arguments {args:?}"))),
    }
    Ok(())
}
