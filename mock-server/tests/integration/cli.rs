//! `mock-server migrate …` and the server's refusal, as an operator runs them.

use mock_server::store::migrate::journal;
use std::process::{Command, Output};

fn mock_server(data_dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mock-server"))
        .args(args)
        .env("DATA_DIR", data_dir)
        .env("RUST_LOG", "off")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mock-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn migrate_reports_counts_and_a_rerun_is_a_no_op() {
    let dir = temp("fresh");
    let first = mock_server(&dir, &["migrate"]);
    assert!(first.status.success(), "{}", text(&first));
    assert!(text(&first).contains(&format!("migrations: {} applied, 0 skipped", journal().len())), "{}", text(&first));
    let again = mock_server(&dir, &["migrate"]);
    assert!(text(&again).contains(&format!("migrations: 0 applied, {} skipped", journal().len())), "{}", text(&again));
    let status = mock_server(&dir, &["migrate", "--status"]);
    assert!(text(&status).lines().all(|l| l.starts_with("applied ")), "{}", text(&status));
    assert!(
        text(&status).lines().last() == Some("applied 0015_simplify_rolling_db_flags"),
        "the runbook's last migration is the journal's last: {}",
        text(&status)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unbaselined_store_is_refused_by_migrate_and_by_the_server_until_baselined() {
    let dir = temp("prod");
    // A production-like store: the pre-feature tables, an empty tracking table.
    let conn = rusqlite::Connection::open(dir.join("mock-server.sqlite")).unwrap();
    for m in mock_server::store::migrate::journal().into_iter().filter(|m| m.number() <= 11) {
        for s in m.statements() {
            mock_server::store::migrate::execute(&conn, s).unwrap();
        }
    }
    conn.execute_batch("INSERT INTO companies (id, name, created_at) VALUES ('acme', 'Acme Corp', 0)").unwrap();
    drop(conn);

    let refused = mock_server(&dir, &["migrate"]);
    assert!(!refused.status.success());
    assert!(text(&refused).contains("--baseline-through"), "{}", text(&refused));
    let server = mock_server(&dir, &["--listen", "127.0.0.1:0"]);
    assert!(!server.status.success(), "the server must not start on it");
    assert!(text(&server).contains("--baseline-through"), "{}", text(&server));
    let status = mock_server(&dir, &["migrate", "--status"]);
    assert!(text(&status).lines().all(|l| l.starts_with("pending ")), "{}", text(&status));

    let baseline = mock_server(&dir, &["migrate", "--baseline-through", "0011"]);
    assert!(text(&baseline).contains("baseline: 12 recorded as applied"), "{}", text(&baseline));
    let applied = mock_server(&dir, &["migrate"]);
    assert!(
        text(&applied).contains(&format!("migrations: {} applied, 12 skipped", journal().len() - 12)),
        "{}",
        text(&applied)
    );
    for tag in [
        "0012_add_day_databases",
        "0013_add_company_feature_flags",
        "0014_add_conflict_reviews",
        "0015_simplify_rolling_db_flags",
    ] {
        assert!(text(&applied).contains(&format!("applied {tag}")), "{}", text(&applied));
    }
    let conn = rusqlite::Connection::open(dir.join("mock-server.sqlite")).unwrap();
    let name: String = conn.query_row("SELECT name FROM companies WHERE id = 'acme'", [], |r| r.get(0)).unwrap();
    assert_eq!(name, "Acme Corp", "existing data untouched");
    assert!(mock_server::store::catalog::two_flag_schema(&conn).unwrap());
    assert!(!mock_server(&dir, &["migrate", "--baseline-through", "banana"]).status.success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_jwt_secret_the_server_keeps_to_loopback_and_generates_a_private_secret() {
    let dir = temp("secret");
    let refused = Command::new(env!("CARGO_BIN_EXE_mock-server"))
        .args(["--listen", "0.0.0.0:0"])
        .env("DATA_DIR", &dir)
        .env_remove("JWT_SECRET")
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(text(&refused).contains("without JWT_SECRET"), "{}", text(&refused));
    assert!(!dir.join("jwt-secret").exists(), "nothing started, nothing written");

    let mut server = Command::new(env!("CARGO_BIN_EXE_mock-server"))
        .args(["--listen", "127.0.0.1:0"])
        .env("DATA_DIR", &dir)
        .env_remove("JWT_SECRET")
        .env("RUST_LOG", "off")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(server.stdout.take().unwrap()), &mut first).unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(first.starts_with("listening on http://127.0.0.1:"), "{first}");
    let secret = std::fs::read_to_string(dir.join("jwt-secret")).unwrap();
    assert!(secret.len() >= 32 && secret != "session-broker-dev-secret");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(dir.join("jwt-secret")).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The runbook: the production `DB_PREFIX` "must not be changed". A server started with another
/// prefix on the same data refuses to start and names both; the recorded one starts again.
#[test]
fn another_db_prefix_on_the_same_data_is_refused() {
    let dir = temp("prefix");
    let settings = mock_server::settings::Settings { data_dir: Some(dir.clone()), ..Default::default() };
    drop(mock_server::state::open_store(&settings, None, 0).expect("the first start records dev"));
    let refused = Command::new(env!("CARGO_BIN_EXE_mock-server"))
        .args(["--listen", "127.0.0.1:0"])
        .env("DATA_DIR", &dir)
        .env("DB_PREFIX", "prod")
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(!refused.status.success(), "the server must not start on another prefix");
    let said = text(&refused);
    assert!(said.contains("\"prod\"") && said.contains("\"dev\"") && said.contains("must not change"), "{said}");
    let conn = rusqlite::Connection::open(dir.join("mock-server.sqlite")).unwrap();
    let recorded: String = conn.query_row("SELECT db_prefix FROM docdb_cluster", [], |r| r.get(0)).unwrap();
    assert_eq!(recorded, "dev", "the refusal changed nothing");
    drop(conn);
    assert!(mock_server::state::open_store(&settings, None, 0).is_ok(), "the recorded prefix starts again");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `LOG_FORMAT=json`: every log line is a JSON object, the scheduler's line keeping its text in
/// `message`; `/metrics` is on its own loopback address (the second stdout line), not on the
/// public one.
#[test]
fn json_logs_and_metrics_on_their_own_address() {
    use std::io::BufRead;
    let dir = temp("json-logs");
    let mut server = Command::new(env!("CARGO_BIN_EXE_mock-server"))
        .args(["--listen", "127.0.0.1:0"])
        .env("DATA_DIR", &dir)
        .env("LOG_FORMAT", "json")
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(server.stdout.take().unwrap());
    let (mut first, mut second) = (String::new(), String::new());
    stdout.read_line(&mut first).unwrap();
    stdout.read_line(&mut second).unwrap();
    let base = first.trim().strip_prefix("listening on ").unwrap().to_owned();
    let metrics = second.trim().strip_prefix("metrics on ").expect("the metrics address").to_owned();
    assert!(metrics.starts_with("http://127.0.0.1:") && metrics.ends_with("/metrics"), "{metrics}");
    let get = |url: &str| {
        let addr = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
        let path = format!("/{}", url.trim_start_matches("http://").split_once('/').map_or("", |(_, p)| p));
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        std::io::Write::write_all(
            &mut s,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
        let mut answer = String::new();
        std::io::Read::read_to_string(&mut s, &mut answer).unwrap();
        answer
    };
    assert!(get(&metrics).starts_with("HTTP/1.1 200"), "metrics served");
    assert!(get(&format!("{base}/metrics")).starts_with("HTTP/1.1 404"), "not on the public address");
    let mut stderr = std::io::BufReader::new(server.stderr.take().unwrap());
    let mut scheduled = None;
    for _ in 0..50 {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let entry: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        if entry["fields"]["message"].as_str().is_some_and(|m| m.starts_with("day-db-cron scheduled: ")) {
            scheduled = Some(entry);
            break;
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let scheduled = scheduled.expect("the scheduler's line");
    assert_eq!(scheduled["level"], "INFO");
}
