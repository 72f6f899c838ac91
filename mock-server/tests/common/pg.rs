//! A PostgreSQL cluster of its own for a test (Debian's `postgresql`, installed by `make setup`):
//! initialised in a temp dir, started on a free port, stopped (immediately) when dropped.
//! `initdb` refuses root, so as root it runs as the `postgres` user.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use postgres::{Client, NoTls};

/// A PostgreSQL cluster of its own for one test.
pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
}

fn pg_bin() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (make setup installs Debian's postgresql)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().expect("an initdb under /usr/lib/postgresql/*/bin")
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs a PostgreSQL program, as `postgres` when we are root.
fn pg_run(bin: &Path, program: &str, args: &[&str]) -> Output {
    let path = bin.join(program);
    let output = if is_root() {
        Command::new("runuser").args(["-u", "postgres", "--"]).arg(&path).args(args).output()
    } else {
        Command::new(&path).args(args).output()
    };
    output.unwrap_or_else(|e| panic!("{program}: {e}"))
}

impl Cluster {
    pub fn start() -> Cluster {
        let dir = std::env::temp_dir().join(format!("mock-pg-{}-{}", std::process::id(), rand_suffix()));
        std::fs::create_dir_all(&dir).unwrap();
        if is_root() {
            assert!(Command::new("chown").args(["postgres:postgres"]).arg(&dir).status().unwrap().success());
        }
        let bin = pg_bin();
        let data = dir.join("data");
        let init = pg_run(
            &bin,
            "initdb",
            &["-D", data.to_str().unwrap(), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"],
        );
        assert!(init.status.success(), "initdb: {}", String::from_utf8_lossy(&init.stderr));
        // A free port is only free until someone binds it: another test's server (or another
        // cluster) may take it between our look and PostgreSQL's bind. Then a new port is taken;
        // any other failure to start is the test's failure.
        let log = dir.join("log");
        let mut attempt = 0;
        let port = loop {
            attempt += 1;
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut options = format!("-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", dir.display());
            // PG_STATEMENT_LOG=FILE: every statement logged (with its process), the log copied to
            // FILE when the cluster stops, for counting a unit's statements.
            if std::env::var_os("PG_STATEMENT_LOG").is_some() {
                options.push_str(" -c log_statement=all -c log_line_prefix=%p:");
            }
            let started = pg_run(
                &bin,
                "pg_ctl",
                &["-D", data.to_str().unwrap(), "-o", &options, "-l", log.to_str().unwrap(), "-w", "start"],
            );
            if started.status.success() {
                break port;
            }
            let logged = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                attempt < 5 && logged.contains("Address already in use"),
                "pg_ctl start: {} {logged}",
                String::from_utf8_lossy(&started.stderr),
            );
        };
        Cluster { dir, bin, port }
    }

    /// A new, empty database; its URL.
    /// The URL of the database `name` (made before).
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    pub fn database(&self, name: &str) -> String {
        let admin_url = format!("postgres://postgres@127.0.0.1:{}/postgres", self.port);
        let create = format!("CREATE DATABASE {name}");
        off_runtime(move || Client::connect(&admin_url, NoTls).unwrap().batch_execute(&create).unwrap());
        self.url(name)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = pg_run(&self.bin, "pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
        if let Some(kept) = std::env::var_os("PG_STATEMENT_LOG") {
            let _ = std::fs::copy(self.dir.join("log"), kept);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64
}

impl Cluster {
    /// Stops the server (as a crash would: `immediate`), keeping its data.
    pub fn stop(&self) {
        let data = self.dir.join("data");
        let out = pg_run(&self.bin, "pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
        assert!(out.status.success(), "pg_ctl stop: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Starts it again on the same port and data.
    pub fn restart(&self) {
        let data = self.dir.join("data");
        let options = format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", self.port, self.dir.display());
        let log = self.dir.join("log");
        let out = pg_run(
            &self.bin,
            "pg_ctl",
            &["-D", data.to_str().unwrap(), "-o", &options, "-l", log.to_str().unwrap(), "-w", "start"],
        );
        assert!(out.status.success(), "pg_ctl start: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// The PostgreSQL server's processes (the postmaster and its children), for CPU accounting.
    pub fn server_pids(&self) -> Vec<u32> {
        let pid_file = std::fs::read_to_string(self.dir.join("data").join("postmaster.pid")).unwrap_or_default();
        let Some(master) = pid_file.lines().next().and_then(|l| l.trim().parse::<u32>().ok()) else {
            return Vec::new();
        };
        let mut pids = vec![master];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            if ppid == Some(master) {
                pids.push(pid);
            }
        }
        pids
    }

    /// A new database with the journal and the server's own tables applied (`mock-server migrate`).
    pub fn migrated(&self, name: &str) -> String {
        let url = self.database(name);
        let target = url.clone();
        off_runtime(move || {
            let mut client = Client::connect(&target, NoTls).unwrap();
            mock_server::store::postgres::apply(&mut client, false, &mut |_| {}).expect("the migrations apply");
        });
        url
    }
}

/// Runs `f` on a thread of its own: the `postgres` crate's blocking client runs a runtime of its
/// own, which tokio refuses inside a test's.
pub fn off_runtime<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f).join().expect("the PostgreSQL call")
}
