//! A PostgreSQL cluster of the tests' own: Debian's server binaries (`postgresql`, installed
//! by `make sysdeps`), `initdb` into a temporary directory and `pg_ctl` with a Unix socket
//! there and no TCP at all. PostgreSQL refuses to run as root, so a test running as root
//! runs the cluster as uid 1000 (`setpriv`), as the tests run boxmaker as a normal user.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running cluster; stopped (immediately) when dropped.
#[derive(Debug)]
pub struct Pg {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_user: bool,
}

/// The directory of the newest PostgreSQL server binaries, if any is installed.
pub fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b)
}

/// The user that owns the cluster's files: root cannot run PostgreSQL.
const USER: &str = "boxmaker";

impl Pg {
    /// `initdb` and start a cluster; panics (a test's failure) when PostgreSQL is missing.
    pub fn start() -> Pg {
        let bin = bin_dir().expect(
            "PostgreSQL's server binaries are not installed (/usr/lib/postgresql/N/bin); \
             run `make sysdeps`",
        );
        let as_user = crate::can_be_a_user();
        // In /tmp when the cluster runs as uid 1000: a TMPDIR of root's may not let it in.
        let base = if as_user {
            PathBuf::from("/tmp")
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::Builder::new()
            .prefix("pg")
            .tempdir_in(base)
            .unwrap();
        if as_user {
            std::os::unix::fs::chown(dir.path(), Some(1000), Some(1000)).unwrap();
        }
        let pg = Pg { dir, bin, as_user };
        let out = pg
            .cmd("initdb")
            .args(["-A", "trust", "-U", USER, "-E", "UTF8", "--no-sync", "-D"])
            .arg(pg.data())
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::create_dir_all(pg.socket_dir()).unwrap();
        if as_user {
            std::os::unix::fs::chown(pg.socket_dir(), Some(1000), Some(1000)).unwrap();
        }
        pg.start_server();
        pg
    }

    /// [`Pg::start`] for a cluster kept in a `static` (never dropped): a watcher process
    /// stops it when this process ends, however it ends, and removes its directory (140 MB
    /// a cluster: a static's `TempDir` is never dropped, and forty-eight of them had piled
    /// up in `/tmp` on a machine whose disk then filled).
    pub fn start_for_this_process() -> Pg {
        let pg = Pg::start();
        let stop = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; {user}'{bin}' -w -D '{data}' -m immediate stop; rm -rf '{dir}'",
            dir = pg.dir.path().display(),
            pid = std::process::id(),
            user = if pg.as_user {
                "/usr/bin/setpriv --reuid=1000 --regid=1000 --clear-groups "
            } else {
                ""
            },
            bin = pg.bin.join("pg_ctl").display(),
            data = pg.data().display(),
        );
        // Left to run past this process: that is its point (it outlives it by design).
        #[allow(clippy::zombie_processes)]
        let _watcher = Command::new("/bin/sh")
            .args(["-c", &stop])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        pg
    }

    fn cmd(&self, name: &str) -> Command {
        let bin = self.bin.join(name);
        let mut c = if self.as_user {
            crate::as_a_user(&bin)
        } else {
            Command::new(&bin)
        };
        c.env("LC_ALL", "C").env_remove("PGPASSWORD");
        c
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The directory of the cluster's Unix socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// Starts the server (again) and waits until it takes connections.
    pub fn start_server(&self) {
        let opts = format!(
            "-c listen_addresses='' -c unix_socket_directories='{}' -c fsync=on \
             -c max_connections=200",
            self.socket_dir().display()
        );
        let status = self
            .cmd("pg_ctl")
            .args(["-w", "-t", "60", "-l"])
            .arg(self.dir.path().join("log"))
            .arg("-D")
            .arg(self.data())
            .args(["-o", &opts, "start"])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "pg_ctl start failed: {}", self.log());
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ok = self
                .cmd("pg_isready")
                .arg("-h")
                .arg(self.socket_dir())
                .args(["-U", USER, "-d", "postgres"])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "PostgreSQL never became ready: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the server: `fast` ends sessions cleanly, else `immediate` (a crash, for the
    /// server's own recovery on the next start).
    pub fn stop_server(&self, fast: bool) {
        let _ = self
            .cmd("pg_ctl")
            .args(["-w", "-D"])
            .arg(self.data())
            .args(["-m", if fast { "fast" } else { "immediate" }, "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Freezes the whole server (`SIGSTOP` to the postmaster and every process under it):
    /// it holds every connection open and its kernel still acknowledges what is sent to
    /// it, but nothing answers — a server paused (`docker pause`) or wedged. Until
    /// [`Pg::resume`]; dropping the cluster resumes it first.
    pub fn pause(&self) {
        assert!(self.signal("STOP"), "could not pause PostgreSQL");
    }

    /// Lets a [`Pg::pause`]d server run again.
    pub fn resume(&self) {
        assert!(self.signal("CONT"), "could not resume PostgreSQL");
    }

    /// Sends `sig` to the server's processes; whether that worked (a stopped server has
    /// none, and that is fine).
    fn signal(&self, sig: &str) -> bool {
        let Some(root) = std::fs::read_to_string(self.data().join("postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<u32>().ok()))
        else {
            return true;
        };
        // The postmaster first (so it starts no process after the walk), then what is under
        // it, found through /proc.
        let mut pids = vec![root];
        let mut i = 0;
        while i < pids.len() {
            let parent = pids[i];
            for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                // `pid (comm) state ppid …`; comm may hold spaces, so read after its `)`.
                let ppid = stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                    .and_then(|p| p.parse::<u32>().ok());
                if ppid == Some(parent) && !pids.contains(&pid) {
                    pids.push(pid);
                }
            }
            i += 1;
        }
        Command::new("kill")
            .arg(format!("-{sig}"))
            .args(pids.iter().map(u32::to_string))
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// A new database (its own name), and its URL.
    pub fn database(&self, name: &str) -> String {
        let out = self
            .cmd("createdb")
            .arg("-h")
            .arg(self.socket_dir())
            .args(["-U", USER, name])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "createdb {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.url(name)
    }

    /// The URL of database `name`, through the cluster's socket.
    pub fn url(&self, name: &str) -> String {
        format!(
            "postgres://{USER}@/{name}?host={}",
            self.socket_dir().display()
        )
    }

    /// Runs `sql` in database `name` as the cluster's user (a database administrator's
    /// hand, for a test); its rows, `|`-separated, one a line.
    pub fn psql(&self, name: &str, sql: &str) -> String {
        let out = self
            .cmd("psql")
            .arg("-h")
            .arg(self.socket_dir())
            .args([
                "-U",
                USER,
                "-d",
                name,
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// The cluster's directory (for a test that wants to look).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        // A paused server would not hear the stop.
        let _ = self.signal("CONT");
        self.stop_server(false);
    }
}
