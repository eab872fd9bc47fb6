//! A network of the test's own for the egress tests (issue 14): nothing here reaches the
//! real network.
//!
//! ```text
//!  netns "…a" (boxmaker, its gate, runner and boxes)        netns "…b" (the origin)
//!   lo 127.0.0.1   ── canary on :80, :443                     lo
//!   veth0 192.0.2.1 ── canary on :80 ─────── veth ──────────── veth0 192.0.2.2, 192.0.2.3
//!   /etc/hosts (ip netns exec binds /etc/netns/…a/hosts):        origin on :80 and :443
//!     allowed.test, cleared.test, other.test → 192.0.2.2/.3      (TLS by the lab's own CA)
//!     loop.test → 127.0.0.1, private.test → 10.0.0.5,
//!     meta.test → 169.254.169.254, self.test → 192.0.2.1,
//!     siit.test, nat64local.test, teredo.test → IPv6 forms carrying
//!       127.0.0.1, 169.254.169.254 and 127.0.0.1
//! ```
//!
//! 192.0.2.0/24 is TEST-NET-1 (RFC 5737), routed nowhere; the two namespaces are made by
//! the test (`ip netns add`) and joined by a veth pair of their own, with no route out, so
//! an address outside them (10.0.0.5, 8.8.8.8) is simply unreachable. Names resolve through
//! the lab's hosts file, which `ip netns exec` shows as /etc/hosts to everything run in
//! "…a" (boxmaker resolves names itself, never the box). The canary is the same origin
//! server, on the lab host's own loopback and address: a request that reaches it is a
//! request the proxy should never have made.
//!
//! Needs root (CI runs as root) and `ip`, `openssl`, `python3`; a missing one fails the test
//! with what to install.

#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
// Not every test file that includes this module uses every one of these.
#[allow(unused_imports)]
pub use testkit::{
    Run, client_python, python_dir, repo_root, require_python_sdk, run_to_end, servers_dir,
};

pub const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// The origin's addresses, in "…b".
pub const ORIGIN: &str = "192.0.2.2";
pub const ORIGIN2: &str = "192.0.2.3";
/// The lab host's own address, in "…a".
pub const SELF_ADDR: &str = "192.0.2.1";

pub const HOSTS: &str = "\
127.0.0.1 localhost
192.0.2.2 allowed.test www.allowed.test other.test
192.0.2.3 cleared.test
127.0.0.1 loop.test
10.0.0.5 private.test
169.254.169.254 meta.test
192.0.2.1 self.test
192.0.2.2 mixed.test
127.0.0.1 mixed.test
::ffff:0:7f00:1 siit.test
64:ff9b:1::a9fe:a9fe nat64local.test
2001:0:4136:e378:8000:63bf:80ff:fffe teredo.test
";

/// Where the lab's files are seen inside the box (a `public` mount).
pub const LAB_AT: &str = "/opt/lab";
pub const PYVENV_AT: &str = "/opt/pyvenv";
pub const NODE_AT: &str = "/opt/node";

/// A child that has not finished by then has hung: it is killed and the test fails.
pub const DEADLINE: Duration = Duration::from_secs(120);

static LABS: AtomicUsize = AtomicUsize::new(0);

fn need(program: &str, install: &str) {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "the egress tests need {program}: {install}");
}

fn sh(cmd: &mut Command) {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn ip(args: &[&str]) {
    sh(Command::new("ip").args(args));
}

/// The lab: two network namespaces, the origin in one, the canary in the other, a CA.
pub struct Lab {
    pub dir: PathBuf,
    /// Where boxmaker runs.
    pub host_ns: String,
    origin_ns: String,
    children: Vec<Child>,
    /// Variables set in boxmaker's environment (for `[[tool]] env = [...]`).
    pub vars: Vec<(String, String)>,
}

impl Lab {
    pub fn new(name: &str) -> Lab {
        need("ip", "apt-get install iproute2");
        need("openssl", "apt-get install openssl");
        need("python3", "apt-get install python3");
        assert!(
            rustix_is_root(),
            "the egress tests make network namespaces, which needs root (CI runs as root)"
        );
        let n = LABS.fetch_add(1, Ordering::SeqCst);
        let id = format!("bmx{}n{n}", std::process::id());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("egress")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("share")).unwrap();
        std::fs::create_dir_all(dir.join("secrets")).unwrap();
        std::fs::write(dir.join("secrets/plan.txt"), "the confidential plan\n").unwrap();
        let host_ns = format!("{id}a");
        let origin_ns = format!("{id}b");
        let mut lab = Lab {
            dir,
            host_ns,
            origin_ns,
            children: Vec::new(),
            vars: Vec::new(),
        };
        lab.network();
        lab.ca();
        lab.static_files();
        lab.start_servers();
        let ca = format!("{LAB_AT}/ca.pem");
        for var in [
            "SSL_CERT_FILE",
            "CURL_CA_BUNDLE",
            "NODE_EXTRA_CA_CERTS",
            "GIT_SSL_CAINFO",
            "PIP_CERT",
            "REQUESTS_CA_BUNDLE",
        ] {
            lab.vars.push((var.into(), ca.clone()));
        }
        lab
    }

    fn network(&self) {
        let (a, b) = (&self.host_ns, &self.origin_ns);
        ip(&["netns", "add", a]);
        ip(&["netns", "add", b]);
        ip(&[
            "link", "add", "veth0", "netns", a, "type", "veth", "peer", "name", "veth0", "netns", b,
        ]);
        ip(&[
            "-n",
            a,
            "addr",
            "add",
            &format!("{SELF_ADDR}/24"),
            "dev",
            "veth0",
        ]);
        ip(&[
            "-n",
            b,
            "addr",
            "add",
            &format!("{ORIGIN}/24"),
            "dev",
            "veth0",
        ]);
        ip(&[
            "-n",
            b,
            "addr",
            "add",
            &format!("{ORIGIN2}/24"),
            "dev",
            "veth0",
        ]);
        for ns in [a, b] {
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            ip(&["-n", ns, "link", "set", "veth0", "up"]);
        }
        // What `ip netns exec` shows as /etc/hosts and /etc/resolv.conf in "…a": the lab's
        // names, and a resolver on the lab's own loopback where nothing answers.
        let etc = Path::new("/etc/netns").join(a);
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(etc.join("hosts"), HOSTS).unwrap();
        std::fs::write(
            etc.join("resolv.conf"),
            "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
        )
        .unwrap();
    }

    /// The lab's CA and a certificate for every lab name and the origin's addresses.
    fn ca(&self) {
        let d = self.dir.join("share");
        let run = |args: &[&str]| sh(Command::new("openssl").args(args).current_dir(&d));
        run(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=boxmaker egress test CA",
        ]);
        run(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "origin.key",
            "-out",
            "origin.csr",
            "-subj",
            "/CN=allowed.test",
        ]);
        std::fs::write(
            d.join("san.ext"),
            "subjectAltName=DNS:allowed.test,DNS:www.allowed.test,DNS:cleared.test,\
             DNS:other.test,DNS:loop.test,DNS:private.test,DNS:meta.test,DNS:self.test,\
             DNS:mixed.test,DNS:localhost,IP:192.0.2.1,IP:192.0.2.2,IP:192.0.2.3,IP:127.0.0.1\n",
        )
        .unwrap();
        run(&[
            "x509",
            "-req",
            "-in",
            "origin.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "origin.pem",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ]);
    }

    /// What the origin serves under /static/: a git repository (dumb HTTP) and a pip index
    /// with one wheel.
    fn static_files(&self) {
        let s = self.dir.join("static");
        std::fs::create_dir_all(&s).unwrap();
        let w = self.dir.join("gitwork");
        std::fs::create_dir_all(&w).unwrap();
        let git = |dir: &Path, args: &[&str]| {
            sh(Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "init.defaultBranch=main",
                ])
                .args(args)
                .current_dir(dir))
        };
        git(&w, &["init", "-q"]);
        std::fs::write(w.join("README"), "egress test repository\n").unwrap();
        git(&w, &["add", "README"]);
        git(&w, &["commit", "-q", "-m", "first"]);
        git(
            &s,
            &["clone", "-q", "--bare", w.to_str().unwrap(), "repo.git"],
        );
        git(&s.join("repo.git"), &["update-server-info"]);
        // A PEP 503 index and a minimal wheel (pip download checks only its name).
        let simple = s.join("simple/tinypkg");
        std::fs::create_dir_all(&simple).unwrap();
        std::fs::write(
            s.join("simple/index.html"),
            "<html><body><a href=\"tinypkg/\">tinypkg</a></body></html>\n",
        )
        .unwrap();
        std::fs::write(
            simple.join("index.html"),
            "<html><body><a href=\"../../files/tinypkg-0.1-py3-none-any.whl\">\
             tinypkg-0.1-py3-none-any.whl</a></body></html>\n",
        )
        .unwrap();
        std::fs::create_dir_all(s.join("files")).unwrap();
        sh(Command::new("python3").args([
            "-c",
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1], 'w')\n\
             z.writestr('tinypkg/__init__.py', 'x = 1\\n')\n\
             z.writestr('tinypkg-0.1.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 0.1\\n')\n\
             z.writestr('tinypkg-0.1.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
             z.writestr('tinypkg-0.1.dist-info/RECORD', '')\n\
             z.close()\n",
            s.join("files/tinypkg-0.1-py3-none-any.whl").to_str().unwrap(),
        ]));
    }

    fn server(&mut self, ns: &str, name: &str, bind: &str) {
        let share = self.dir.join("share");
        let ready = self.dir.join(format!("{name}.ready"));
        let _ = std::fs::remove_file(&ready);
        let child = Command::new("ip")
            .args(["netns", "exec", ns, "python3"])
            .arg(servers_dir().join("egress_origin.py"))
            .arg("--log")
            .arg(self.dir.join(format!("{name}.log")))
            .arg("--ready")
            .arg(&ready)
            .args(["--bind", bind])
            .arg("--cert")
            .arg(share.join("origin.pem"))
            .arg("--key")
            .arg(share.join("origin.key"))
            .arg("--static")
            .arg(self.dir.join("static"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(self.dir.join(format!("{name}.stderr"))).unwrap())
            .spawn()
            .unwrap();
        self.children.push(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ready.exists() {
            assert!(
                Instant::now() < deadline,
                "the {name} server did not start: {}",
                std::fs::read_to_string(self.dir.join(format!("{name}.stderr")))
                    .unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn start_servers(&mut self) {
        let (a, b) = (self.host_ns.clone(), self.origin_ns.clone());
        self.server(&b, "origin", "0.0.0.0");
        self.server(&a, "canary", &format!("127.0.0.1,{SELF_ADDR}"));
    }

    /// Every request the origin (`"origin"`) or the canary (`"canary"`) got so far.
    pub fn requests(&self, server: &str) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join(format!("{server}.log")))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Whether any request the origin got was for `host` (its Host header, port aside).
    pub fn origin_saw_host(&self, host: &str) -> bool {
        self.requests("origin").iter().any(|r| {
            r["host"]
                .as_str()
                .is_some_and(|h| h.split(':').next() == Some(host))
        })
    }

    /// Fails the test, showing the origin's log, when any request the origin got was for
    /// `host`.
    pub fn assert_origin_never_saw(&self, host: &str) {
        assert!(
            !self.origin_saw_host(host),
            "the origin got a request for {host}: {:?}",
            self.requests("origin")
        );
    }

    /// `program args…` run inside the lab host's namespace (where boxmaker runs).
    pub fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.host_ns]).arg(program);
        c.current_dir(&self.dir);
        for (k, v) in &self.vars {
            c.env(k, v);
        }
        c
    }

    /// A Python MCP SDK client `tests/python/SCRIPT` run in the lab host's namespace, with
    /// `BOXMAKER_BIN` and `BOXMAKER_CONFIG` set; fails when the SDK is missing.
    pub fn python_client(&self, config: &Path, script: &str) -> Command {
        require_python_sdk();
        let mut c = self.cmd(client_python());
        c.arg(python_dir().join(script))
            .env("BOXMAKER_BIN", BIN)
            .env("BOXMAKER_CONFIG", config);
        c
    }

    /// `boxmaker ARGS --config CONFIG` in the lab, run to its end.
    pub fn boxmaker(&self, config: &Path, args: &[&str]) -> Run {
        let mut c = self.cmd(BIN);
        c.args(args).arg("--config").arg(config);
        run_to_end(c, &self.dir, &args.join(" "), DEADLINE)
    }

    /// `boxmaker call --json --session S TOOL ARGS`.
    pub fn call(&self, config: &Path, session: &str, tool: &str, args: &Value) -> Run {
        let a = args.to_string();
        self.boxmaker(config, &["call", "--json", "--session", session, tool, &a])
    }

    /// A `run`-style tool call of `argv`; returns the run's content
    /// (`{"exit","stdout","stderr"}`), failing the test when the call itself failed.
    pub fn run_in_box(&self, config: &Path, session: &str, tool: &str, argv: &[&str]) -> Value {
        let r = self.call(config, session, tool, &serde_json::json!({ "argv": argv }));
        assert!(r.ok(), "call {tool} {argv:?} failed:\n{}", r.show());
        r.run_content()
    }

    /// `python3 -c CODE` in a box of `tool`, with the system python the box sees.
    pub fn python_in_box(&self, config: &Path, session: &str, tool: &str, code: &str) -> Value {
        self.run_in_box(config, session, tool, &["/usr/bin/python3", "-c", code])
    }

    /// A `call --json` that must succeed with a `result`: its answer, as JSON.
    pub fn call_result(&self, config: &Path, session: &str, tool: &str, args: &Value) -> Value {
        let r = self.call(config, session, tool, args);
        assert!(r.ok(), "{}", r.show());
        let v = r.json();
        assert_eq!(v["status"], "result", "{}", r.show());
        v
    }

    /// `session` reads the lab's confidential mount (`read_file /data/secrets/plan.txt`), so
    /// its taint rises to confidential; fails the test when the call fails.
    pub fn read_confidential(&self, config: &Path, session: &str) {
        let read = self.call(
            config,
            session,
            "read_file",
            &serde_json::json!({"path": "/data/secrets/plan.txt"}),
        );
        assert!(read.ok(), "{}", read.show());
    }

    /// Every request the origin or the canary got whose path `pick` picks, and the
    /// `received` lines the origin logs after reading a body there.
    pub fn reached(&self, pick: impl Fn(&str) -> bool) -> Vec<Value> {
        let mut got = self.requests("origin");
        got.extend(self.requests("canary"));
        got.into_iter()
            .filter(|r| r["path"].as_str().is_some_and(&pick))
            .collect()
    }

    /// The audit log's `egress` records, as JSON.
    pub fn egress_records(&self, config: &Path) -> Vec<Value> {
        let state = config.parent().unwrap().join("state/audit.log");
        std::fs::read_to_string(state)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["event"] == "egress")
            .collect()
    }

    /// Waits until an `egress` record matching `pred` is in the audit log (the gate writes
    /// them a moment after the runner reports them), and returns it.
    pub fn wait_egress(&self, config: &Path, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let records = self.egress_records(config);
            if let Some(r) = records.iter().find(|r| pred(r)) {
                return r.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no egress record {what} in the audit log; it has:\n{}",
                records
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Writes `text` as the config in this lab's directory (the state under `state/`), and
    /// trusts it as the tester (`boxmaker trust`, docs/spec.md §6 "Whose config"; one that
    /// does not load is left untrusted, and the command run on it says why).
    pub fn config(&self, name: &str, text: &str) -> PathBuf {
        let dir = self.dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("boxmaker.toml");
        let text = text
            .replace("LAB_SHARE", self.dir.join("share").to_str().unwrap())
            .replace("PYVENV", pyvenv().to_str().unwrap())
            .replace("NODEDIR", node_dir().to_str().unwrap())
            .replace("SERVERS", servers_dir().to_str().unwrap())
            .replace("LABDIR", self.dir.to_str().unwrap());
        std::fs::write(&path, text).unwrap();
        testkit::trust(BIN, &path);
        path
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        // Any gate or box left in "…a" goes with the processes; the names go now.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.host_ns])
            .status();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.origin_ns])
            .status();
        let _ = std::fs::remove_dir_all(Path::new("/etc/netns").join(&self.host_ns));
    }
}

/// A `run`'s stdout (`content` is its `{"exit","stdout","stderr"}`).
pub fn stdout(content: &Value) -> &str {
    content["stdout"].as_str().unwrap_or_default()
}

/// A `run`'s stderr.
pub fn stderr(content: &Value) -> &str {
    content["stderr"].as_str().unwrap_or_default()
}

/// A `run`'s exit status (-1 when there is none).
pub fn exit(content: &Value) -> i64 {
    content["exit"].as_i64().unwrap_or(-1)
}

/// What a box printed last (`content` is a `run`'s `{"exit","stdout","stderr"}`), as JSON.
pub fn printed(content: &Value) -> Value {
    let out = content["stdout"].as_str().unwrap_or_default();
    serde_json::from_str(out.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {content}"))
}

/// The text of a `call --json` answer's first content block (a downstream server's answer).
pub fn answer_text(v: &Value) -> String {
    let c: Value = serde_json::from_str(v["content"].as_str().unwrap()).unwrap();
    c["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Polls `f` every 200 ms until it gives `Ok`; fails the test with `what` and `f`'s last
/// `Err` when it has not within `limit`.
pub fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        match f() {
            Ok(v) => return v,
            Err(last) => assert!(Instant::now() < deadline, "{what}: {last}"),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn rustix_is_root() -> bool {
    // `id -u` rather than a syscall crate: the test needs no unsafe code of its own.
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `tests/py/venv` (the system python's virtualenv `make deps` fills), failing when the
/// packages the egress tests run are missing.
pub fn pyvenv() -> PathBuf {
    let venv = repo_root().join("tests/py/venv");
    let python = venv.join("bin/python3");
    assert!(
        python.exists(),
        "the PyPI packages are missing: run `make deps` (no {})",
        python.display()
    );
    let o = Command::new(&python)
        .args(["-c", "import mcp_server_fetch, requests"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "mcp-server-fetch or requests is missing from {}: run `make deps` ({})",
        venv.display(),
        String::from_utf8_lossy(&o.stderr).trim()
    );
    venv
}

/// `tests/node-proxy/node_modules`: a Node that reads the proxy variables (Node 24 and
/// later honour NODE_USE_ENV_PROXY; Debian's is older), installed by `make deps`.
pub fn node_dir() -> PathBuf {
    let dir = repo_root().join("tests/node-proxy/node_modules");
    assert!(
        dir.join("node/bin/node").exists(),
        "the Node that honours proxy variables is missing: run `make deps` (no {})",
        dir.join("node/bin/node").display()
    );
    dir
}

/// The common part of the egress configs: the lab's CA, scripts and the test's packages
/// as public mounts, a confidential mount, the tools, the grants.
pub const BASE: &str = r#"
[gate]
state = "state"

[box]
timeout_seconds = 60

[[mount]]
name = "lab"
host = "LAB_SHARE"
at = "/opt/lab"
class = "public"

[[mount]]
name = "pyvenv"
host = "PYVENV"
at = "/opt/pyvenv"
class = "public"

[[mount]]
name = "node"
host = "NODEDIR"
at = "/opt/node"
class = "public"

[[mount]]
name = "servers"
host = "SERVERS"
at = "/opt/servers"
class = "public"

[[mount]]
name = "secrets"
host = "LABDIR/secrets"
at = "/data/secrets"
class = "confidential"

[[tool]]
name = "read_file"
builtin = "read_file"

# A networked run that sees only the public mounts.
[[tool]]
name = "net"
builtin = "run"
network = true
mounts = ["lab", "pyvenv", "node", "servers"]
env = ["SSL_CERT_FILE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT", "REQUESTS_CA_BUNDLE"]

[[grant]]
tool = "*"
effect = "allow"

[[egress]]
host = "allowed.test"

[[egress]]
host = "*.allowed.test"

[[egress]]
name = "cleared"
host = "cleared.test"
class = "confidential"

[[egress]]
host = "192.0.2.2"
ports = [80]
"#;
