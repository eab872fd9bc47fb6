//! Issue 13: no door from a box into the gate, out of its mounts, or onto another session.
//! Each attack as a program running in a real box (or a process in namespaces of its own,
//! standing for one), through the real binary, as root and — where it differs — as a normal
//! user (`setpriv --reuid`), plus what a normal tool still needs (docs/spec.md §1, §3.5, §4).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::{As, fresh_dir, open_to_everyone};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");
const SECRET: &str = "PRIVATE-KEY-5c1e";

struct Env {
    dir: PathBuf,
    who: As,
}

impl Env {
    fn new(name: &str, who: As, config: &str) -> Self {
        let dir = fresh_dir(
            env!("CARGO_TARGET_TMPDIR"),
            "doors",
            &format!("{name}-{who:?}"),
        );
        // A normal user must be able to make the state directory and read the files.
        open_to_everyone(&dir, env!("CARGO_TARGET_TMPDIR"));
        std::fs::write(dir.join("boxmaker.toml"), config).unwrap();
        let env = Self { dir, who };
        // The tester's config, trusted by `who` with the HOME its commands have, as a person
        // trusts the config they wrote. A config meant to be refused does not load, so it
        // is not trusted: the command under test then says why.
        let o = env.command(&["trust"]).output().unwrap();
        assert!(
            o.status.success() || (who == As::Me && !stderr(&o).contains("trust")),
            "boxmaker trust as {who:?}: {}",
            stderr(&o)
        );
        env
    }

    fn config(&self) -> PathBuf {
        self.dir.join("boxmaker.toml")
    }

    /// `boxmaker ARGS --config …` as `who`, with the HOME every command of a test has (a
    /// state directory is marked by the key under its HOME, docs/spec.md §6 "Whose state").
    fn command(&self, args: &[&str]) -> Command {
        let mut c = self.who.command(BIN);
        c.args(args)
            .arg("--config")
            .arg(self.config())
            .env("HOME", &self.dir)
            .stdin(Stdio::null());
        c
    }

    /// [`Env::command`] in the background, its output dropped.
    fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.command(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// A `run` call's `{"exit","stdout","stderr"}` (the call must be a result).
    fn run_in_box(&self, session: &str, script: &str) -> Value {
        let args = serde_json::json!({"argv": ["/usr/bin/python3", "-c", script]});
        let o = self.run(&[
            "call",
            "--session",
            session,
            "--json",
            "run",
            &args.to_string(),
        ]);
        let v: Value = serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim())
            .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&o), stderr(&o)));
        assert_eq!(v["status"], "result", "{v}");
        serde_json::from_str(v["content"].as_str().unwrap()).unwrap()
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn runner_config(extra: &str) -> String {
    format!(
        "[gate]\nstate = \"state\"\n\n[box]\ntimeout_seconds = 30\n\n\
         [[tool]]\nname = \"run\"\nbuiltin = \"run\"\n\n\
         [[tool]]\nname = \"read_file\"\nbuiltin = \"read_file\"\n\n\
         [[grant]]\ntool = \"*\"\neffect = \"allow\"\n{extra}"
    )
}

// ---------------------------------------------------------------------------------------
// 1. The state directory is never in a box, and the gate answers only its operator.

#[test]
fn a_mount_that_holds_the_state_directory_is_refused() {
    // The natural layout of the attack: the project mounted, the state beside the config.
    let env = Env::new(
        "state-in-mount",
        As::Me,
        "[[mount]]\nhost = \".\"\nat = \"/data/project\"\n\n[[tool]]\nname = \"run\"\nbuiltin = \"run\"\n",
    );
    let o = env.run(&["check", "--session", "s", "--tool", "run"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("holds boxmaker's state directory"), "{e}");
    assert!(e.contains("move `[gate] state`"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

// A mount that reaches the state directory through a symlink is refused too: tests/own_files.rs.

#[test]
fn a_peer_in_other_namespaces_is_refused_by_every_socket_and_audited() {
    // With `approve_in_client` the gate binds its decision socket too.
    let cfg = runner_config("").replace("[gate]\n", "[gate]\napprove_in_client = true\n");
    let env = Env::new("peer", As::Me, &cfg);
    // A gate to talk to.
    let o = env.run(&["sessions"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let state = env.dir.join("state");
    assert!(state.join("decide.sock").exists(), "no decision socket");
    for sock in ["agent.sock", "control.sock", "decide.sock"] {
        // A process in a user and pid namespace of its own (as a box's command is), same uid.
        // (By its name, from the state directory: the whole path may not fit `sun_path`.)
        let script = format!(
            "import socket,struct\n\
             s=socket.socket(socket.AF_UNIX)\n\
             s.connect({sock:?})\n\
             body=b'{{\"v\":1,\"id\":1,\"op\":{{\"kind\":\"list_sessions\",\"body\":{{}}}}}}'\n\
             try:\n    s.sendall(struct.pack('>I',len(body))+body); print('answer', s.recv(100))\n\
             except (ConnectionResetError, BrokenPipeError): print('answer', b'')\n"
        );
        let o = Command::new("unshare")
            .args([
                "--user",
                "--pid",
                "--fork",
                "/usr/bin/python3",
                "-c",
                &script,
            ])
            .current_dir(&state)
            .output()
            .unwrap();
        let out = stdout(&o);
        assert!(
            out.contains("answer b''"),
            "{sock}: the gate answered a peer in another namespace: {out}{}",
            stderr(&o)
        );
    }
    // From here (the operator, in the gate's namespaces) it still answers.
    assert!(env.run(&["sessions"]).status.success());
    let o = env.run(&["audit", "tail", "--json", "-n", "100"]);
    let tail: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let refused: Vec<String> = tail["body"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .filter(|l| l.contains("\"auth_failed\""))
        .collect();
    assert_eq!(
        refused.len(),
        3,
        "one auth_failed per refused peer: {refused:?}"
    );
    assert!(
        refused.iter().any(|l| l.contains("namespace")),
        "{refused:?}"
    );
}

// ---------------------------------------------------------------------------------------
// 2. A box cannot forge what boxmaker reports about it.

#[test]
fn a_box_cannot_reach_inits_descriptors_to_forge_its_report() {
    for who in As::all() {
        let env = Env::new("forge", who, &runner_config(""));
        let out = env.run_in_box(
            "s",
            &format!(
                "import os\n\
                 got = []\n\
                 for d in ['/proc/1/fd', '/proc/1/task/1/fd']:\n    \
                   try: got += [d + '/' + n for n in os.listdir(d)]\n    \
                   except OSError as e: print('list', d, e.errno)\n\
                 for fd in [str(i) for i in range(64)]:\n    \
                   p = '/proc/1/fd/' + fd\n    \
                   try:\n        \
                     w = os.open(p, os.O_WRONLY)\n        \
                     msg = b'{SECRET}'\n        \
                     os.write(w, b'E' + len(msg).to_bytes(4, 'big') + msg); print('WROTE', p)\n    \
                   except OSError: pass\n\
                 try: open('/proc/1/mem','rb'); print('MEM')\n\
                 except OSError: pass\n\
                 print('listed', got)\n"
            ),
        );
        let text = out["stdout"].as_str().unwrap();
        assert!(!text.contains("WROTE"), "{who:?}: {out}");
        assert!(!text.contains("MEM"), "{who:?}: {out}");
        assert!(
            text.contains("listed []"),
            "{who:?}: init's descriptors are visible: {out}"
        );
        assert_eq!(out["exit"], 0, "{out}");
        // A normal tool still reads its mounts, writes /work, prints to both streams.
        let out = env.run_in_box(
            "s",
            "import sys\nopen('/work/x','w').write('ok')\nprint(open('/work/x').read())\nprint('err', file=sys.stderr)\n",
        );
        assert_eq!(out["stdout"], "ok\n", "{out}");
        assert_eq!(out["stderr"], "err\n", "{out}");
    }
}

// ---------------------------------------------------------------------------------------
// 3. A box never makes a later box see another host path.

#[test]
fn a_writable_mount_that_holds_another_mounts_host_path_is_refused() {
    let env = Env::new(
        "writable-holds",
        As::Me,
        &runner_config(
            "\n[[mount]]\nhost = \"proj\"\nat = \"/data/proj\"\nwrite = true\n\n\
             [[mount]]\nhost = \"proj/notes\"\nat = \"/data/notes\"\nclass = \"confidential\"\n",
        ),
    );
    let o = env.run(&["check", "--session", "s", "--tool", "run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is writable and holds the host path of mount /data/notes"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_mount_path_swapped_for_a_symlink_is_never_followed() {
    let env = Env::new(
        "swapped",
        As::Me,
        &runner_config("\n[[mount]]\nhost = \"notes\"\nat = \"/data/notes\"\n"),
    );
    std::fs::create_dir_all(env.dir.join("notes")).unwrap();
    std::fs::write(env.dir.join("notes/todo"), "milk\n").unwrap();
    std::fs::create_dir_all(env.dir.join("private")).unwrap();
    std::fs::write(env.dir.join("private/key"), SECRET).unwrap();
    // One gate and runner for both calls (the runner resolved the mounts when it started).
    let mut serve = env.spawn(&["serve"]);
    // Only once `serve`'s gate holds the state (its control socket is bound): a call made
    // before would start an on-demand gate of its own, whose retirement hands the second call
    // to a new runner that resolves the mounts after the swap.
    let bound = Instant::now() + Duration::from_secs(30);
    while !env.dir.join("state").join("control.sock").exists() && Instant::now() < bound {
        std::thread::sleep(Duration::from_millis(50));
    }
    let first = env.run(&[
        "call",
        "--session",
        "s",
        "read_file",
        r#"{"path":"/data/notes/todo"}"#,
    ]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut first = first;
    while !first.status.success() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        first = env.run(&[
            "call",
            "--session",
            "s",
            "read_file",
            r#"{"path":"/data/notes/todo"}"#,
        ]);
    }
    assert_eq!(stdout(&first), "milk\n", "{}", stderr(&first));
    // Something swaps the mount's host path for a symlink to an unmounted directory.
    std::fs::rename(env.dir.join("notes"), env.dir.join("notes.old")).unwrap();
    std::os::unix::fs::symlink(env.dir.join("private"), env.dir.join("notes")).unwrap();
    let refused = |session: &str, why: &str| {
        let o = env.run(&[
            "call",
            "--session",
            session,
            "read_file",
            r#"{"path":"/data/notes/key"}"#,
        ]);
        assert!(
            !stdout(&o).contains(SECRET),
            "the swapped path was followed"
        );
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(why), "{}", stderr(&o));
    };
    // Session s's warm file box (docs/spec.md §4) was built before the swap: it still shows
    // the directory the config named, which no longer holds anything called `key`.
    refused("s", "no such file");
    // A box built after the swap (another session's) is refused the symlink.
    refused("s2", "symlink");
    let _ = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status();
    let _ = serve.wait();
}

// ---------------------------------------------------------------------------------------
// 4. What the caller left open never reaches a box.

#[test]
fn descriptors_the_caller_left_open_never_reach_a_box() {
    let env = Env::new("inherited", As::Me, &runner_config(""));
    std::fs::write(env.dir.join("host-only"), SECRET).unwrap();
    let args = serde_json::json!({"argv": ["/usr/bin/python3", "-c",
        "import os,time\nprint(sorted(os.listdir('/proc/self/fd')))\ntime.sleep(3)\n"]});
    // The shell opens fd 9 (not close-on-exec) and boxmaker inherits it; it runs with this
    // process's HOME, so the config is trusted as this process too.
    assert!(testkit::trust(BIN, env.config()), "boxmaker trust");
    let call = Command::new("bash")
        .arg("-c")
        .arg("exec 9<\"$SECRET_FILE\"; exec \"$BIN\" call --config \"$CONFIG\" --session s --json run \"$ARGS\"")
        .env("SECRET_FILE", env.dir.join("host-only"))
        .env("BIN", BIN)
        .env("CONFIG", env.config())
        .env("ARGS", args.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // While the box runs, no process boxmaker started holds the file.
    std::thread::sleep(Duration::from_millis(1500));
    let target = env.dir.join("host-only");
    let holders: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != call.id())
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .map(|fds| {
                    fds.flatten()
                        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == target))
                })
                .unwrap_or(false)
        })
        .collect();
    let out = call.wait_with_output().unwrap();
    assert!(
        holders.is_empty(),
        "processes holding the caller's descriptor: {holders:?}"
    );
    let v: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let inner: Value = serde_json::from_str(v["content"].as_str().unwrap()).unwrap();
    // stdio, and the directory listing itself.
    assert_eq!(inner["stdout"], "['0', '1', '2', '3']\n", "{inner}");
}

// ---------------------------------------------------------------------------------------
// 6. The HTTP front refuses a page of another origin.

/// `boxmaker mcp --http 127.0.0.1:0 [extra]`: the child, its address and its token.
fn http_front(config: &Path, extra: &[&str]) -> (std::process::Child, String, String) {
    use std::io::BufRead;
    // Run as this process's user and HOME: the config trusted as them too.
    assert!(testkit::trust(BIN, config), "boxmaker trust");
    let mut child = Command::new(BIN)
        .args(["mcp", "--http", "127.0.0.1:0", "--config"])
        .arg(config)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    while let Some(Ok(line)) = err.next() {
        // boxmaker mcp: http://127.0.0.1:PORT/mcp with `Authorization: Bearer TOKEN` (also …)
        if let Some(rest) = line.strip_prefix("boxmaker mcp: http://") {
            let addr = rest.split('/').next().unwrap().to_string();
            let token = line
                .split("Bearer ")
                .nth(1)
                .unwrap()
                .split('`')
                .next()
                .unwrap()
                .to_string();
            // Keep reading what it says, so it never writes to a closed pipe.
            std::thread::spawn(move || for _ in err {});
            return (child, addr, token);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("no banner from mcp --http");
}

fn post(addr: &str, token: &str, origin: Option<&str>) -> u16 {
    use std::io::{Read, Write};
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"o","version":"0"}}}"#;
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Authorization: Bearer {token}\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(o) = origin {
        head.push_str(&format!("Origin: {o}\r\n"));
    }
    head.push_str("\r\n");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn the_http_front_refuses_a_foreign_origin_even_with_the_token() {
    let env = Env::new("origin", As::Me, &runner_config(""));
    let (mut child, addr, token) = http_front(&env.config(), &[]);
    assert_eq!(post(&addr, &token, Some("http://evil.example")), 403);
    assert_eq!(post(&addr, &token, Some("null")), 403);
    // A client that is not a browser sends no Origin, and needs only the token.
    assert_eq!(post(&addr, &token, None), 200);
    let _ = child.kill();
    let _ = child.wait();
    let (mut child, addr, token) =
        http_front(&env.config(), &["--allow-origin", "http://localhost:6274"]);
    assert_eq!(post(&addr, &token, Some("http://localhost:6274")), 200);
    assert_eq!(post(&addr, &token, Some("http://localhost:6275")), 403);
    let _ = child.kill();
    let _ = child.wait();
    let o = env.run(&[
        "mcp",
        "--http",
        "127.0.0.1:0",
        "--allow-origin",
        "localhost",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is not an origin"), "{}", stderr(&o));
}

// ---------------------------------------------------------------------------------------
// 7. What a person approves is what they see.

#[test]
fn an_approval_shows_hidden_and_control_characters_escaped() {
    let env = Env::new(
        "escaped",
        As::Me,
        &runner_config("").replace(
            "[[grant]]\ntool = \"*\"\neffect = \"allow\"",
            "[[grant]]\ntool = \"*\"\neffect = \"ask\"",
        ),
    );
    // Shown raw, U+202E would make `rm -rf ~` read as `~ fr- mr`; U+200B hides a space.
    let args = serde_json::json!({"argv": ["sh", "-c", "echo \u{202e}~ fr- mr\u{200b}\u{1b}[2J"]});
    let mut held = env.spawn(&["call", "--session", "s", "run", &args.to_string()]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let shown = loop {
        let o = env.run(&["approvals"]);
        let out = stdout(&o);
        if out.contains("ap-") {
            break out;
        }
        assert!(Instant::now() < deadline, "no approval: {out}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        // (The escape character is already `\u001b` in the JSON text of the arguments.)
        shown.contains("\\u{202e}~ fr- mr\\u{200b}\\u001b[2J"),
        "{shown}"
    );
    assert!(
        !shown.contains('\u{202e}') && !shown.contains('\u{200b}') && !shown.contains('\u{1b}')
    );
    assert!(
        shown.contains("holds 2 hidden or control characters"),
        "{shown}"
    );
    let id = shown.split_whitespace().next().unwrap().to_string();
    assert!(env.run(&["refuse", &id]).status.success());
    let _ = held.wait();
}

// ---------------------------------------------------------------------------------------
// 8. The front is alone in its process, and confined.

fn status_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap()
}

fn field<'a>(status: &'a str, name: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .map_or("", str::trim)
}

#[test]
fn the_front_runs_confined_without_the_gate_and_cannot_open_a_file() {
    use std::io::{BufRead, Write};
    for who in As::all() {
        let env = Env::new("confined-front", who, &runner_config(""));
        std::fs::write(env.dir.join("host-file"), SECRET).unwrap();
        let mut child = who
            .command(BIN)
            .args(["mcp", "--config"])
            .arg(env.config())
            .arg("--probe-open")
            .arg(env.dir.join("host-file"))
            .env("HOME", &env.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
        )
        .unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"run","arguments":{{"argv":["echo","still works"]}}}}}}"#
        )
        .unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let _init = out.next().unwrap().unwrap();
        let answer = out.next().unwrap().unwrap();
        assert!(answer.contains("still works"), "{who:?}: {answer}");
        // The process the client started is the front, confined.
        let status = status_of(child.id());
        assert_eq!(field(&status, "NoNewPrivs:"), "1", "{who:?}: {status}");
        assert_eq!(field(&status, "Seccomp:"), "2", "{who:?}: {status}");
        // It holds neither the gate's database nor its audit log: the gate is elsewhere.
        let fds: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", child.id()))
            .unwrap()
            .flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .map(|l| l.display().to_string())
            .collect();
        assert!(
            !fds.iter()
                .any(|l| l.contains("boxmaker.db") || l.contains("audit.log")),
            "{who:?}: {fds:?}"
        );
        drop(stdin);
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        let _ = child.wait();
        assert!(
            err.contains("front confined: no_new_privs, seccomp"),
            "{who:?}: {err}"
        );
        assert!(
            err.contains("probe: cannot open") && err.contains("Operation not permitted"),
            "{who:?}: {err}"
        );
    }
}
