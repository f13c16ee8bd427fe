//! A real PostgreSQL server for the tests: `initdb` in a temporary folder, started with
//! `pg_ctl` on a free loopback port, stopped when dropped. Debian's `postgresql` package
//! provides the binaries (`.ci/run` installs it). As root, the server runs as the `postgres`
//! user, since PostgreSQL refuses to run as root.
//!
//! Without the binaries the tests that need a server are skipped with a message, unless
//! `TOOLSMITH_REQUIRE_POSTGRES=1` (set by CI), which makes them fail instead.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct PgServer {
    bin: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
    port: u16,
    as_postgres: bool,
}

/// The folder of the newest installed PostgreSQL's binaries.
fn binaries() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    // The effective uid, without a libc dependency.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

impl PgServer {
    /// Starts a server, or `None` (with a message) when PostgreSQL is not installed and not
    /// required.
    pub fn start() -> Option<PgServer> {
        let Some(bin) = binaries() else {
            if std::env::var("TOOLSMITH_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("TOOLSMITH_REQUIRE_POSTGRES=1 but no PostgreSQL under /usr/lib/postgresql");
            }
            eprintln!("skipped: PostgreSQL is not installed (apt install postgresql)");
            return None;
        };
        let dir = tempfile::tempdir().expect("a temporary folder");
        let data = dir.path().join("data");
        let as_postgres = is_root();
        if as_postgres {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .expect("chown runs");
            assert!(status.success(), "chown the server's folder to postgres");
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let server = PgServer {
            bin,
            data,
            _dir: dir,
            port,
            as_postgres,
        };
        server.run(
            "initdb",
            &[
                "-D",
                &server.data_str(),
                "-A",
                "trust",
                "-U",
                "toolsmith",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        );
        server.launch();
        Some(server)
    }

    /// `pg_ctl start`, waiting until the server accepts connections.
    fn launch(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            self.port,
            self._dir.path().display()
        );
        let log = self._dir.path().join("server.log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data_str(),
                "-o",
                &options,
                "-l",
                &log.to_string_lossy(),
                "-w",
                "start",
            ],
        );
    }

    /// Stops the server as a crash would (`pg_ctl stop -m immediate`: no checkpoint, every
    /// connection dropped).
    pub fn crash(&self) {
        self.run(
            "pg_ctl",
            &["-D", &self.data_str(), "-m", "immediate", "stop"],
        );
    }

    /// Starts the server again after [`crash`](Self::crash), on the same port and data.
    pub fn start_again(&self) {
        self.launch();
    }

    fn data_str(&self) -> String {
        self.data.to_string_lossy().into_owned()
    }

    fn run(&self, program: &str, args: &[&str]) {
        let path = self.bin.join(program);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        let out = command
            .args(args)
            .output()
            .expect("the PostgreSQL tool runs");
        assert!(
            out.status.success(),
            "{program} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A fresh database on the server; its URL.
    pub async fn database(&self) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("t{}", NEXT.fetch_add(1, Ordering::SeqCst));
        let admin = format!("postgres://toolsmith@127.0.0.1:{}/postgres", self.port);
        let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
            .await
            .expect("connect to the test server");
        tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("create a test database");
        format!("postgres://toolsmith@127.0.0.1:{}/{name}", self.port)
    }

    /// The server's data folder.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let path = self.bin.join("pg_ctl");
        let data = self.data_str();
        let args = ["-D", data.as_str(), "-m", "immediate", "stop"];
        let _ = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&path)
                .args(args)
                .output()
        } else {
            Command::new(&path).args(args).output()
        };
    }
}
