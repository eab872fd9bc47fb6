//! Approving where the person already is (issue 16): in the agent's own MCP client through
//! elicitation (the official Python SDK as the client), on the live approvals page (headless
//! Chromium driven by Selenium), and from the terminal (`approvals --watch`, `approve --for`).
//! Every client is installed by `make deps` and `.ci/run`; a missing one fails these tests
//! with the command that installs it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use testkit::{Run, client_python, python_client, run_to_end, wait_or_kill};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// A script that has not finished by then has hung: it is killed.
const DEADLINE: Duration = Duration::from_secs(120);

/// A fresh config dir from `boxmaker init`, with `extra` added to its `[gate]` table.
fn config_dir(name: &str, gate: &str) -> PathBuf {
    let lab = testkit::lab!("approvals", name).init();
    let text = lab.config_text();
    let text = text.replacen("[gate]\n", &format!("[gate]\n{gate}\n"), 1);
    let text = text.replace("approval_ttl = 300 ", "# approval_ttl = 300 ");
    lab.write_config(&text);
    // The tester's own edit, trusted as a person would.
    assert!(testkit::trust(BIN, lab.config()), "boxmaker trust");
    lab.dir
}

/// Runs a script of tests/python with the binary and the config in its environment.
fn python(script: &str, dir: &Path, env: &[(&str, &str)]) -> Run {
    let sdk = Command::new(client_python())
        .args(["-c", "import mcp.client.stdio"])
        .output();
    assert!(
        sdk.is_ok_and(|o| o.status.success()),
        "the Python MCP SDK is missing: run `make deps`"
    );
    let cmd = python_client(BIN.as_ref(), &dir.join("boxmaker.toml"), script, env);
    let run = run_to_end(cmd, dir, script, DEADLINE);
    assert!(run.status.success(), "{script} failed\n{}", run.show());
    assert!(
        run.stdout.lines().any(|l| l == "ok"),
        "{script} did not finish\n{}",
        run.show()
    );
    run
}

#[test]
fn test_the_person_approves_once_for_the_session_or_refuses_in_the_client() {
    let dir = config_dir("elicitation", "approve_in_client = true\napproval_ttl = 4");
    // The 100 ms promise is measured on a release build by bench/approvals-latency.sh
    // (docs/performance.md); this debug build on a shared machine checks a loose bound.
    let run = python(
        "elicit_client.py",
        &dir,
        &[("BOXMAKER_SEEN_BUDGET_MS", "1000")],
    );
    for want in [
        "approve once",
        "a different argument asks again",
        "falls back, then expires",
        "elicitation latency from tools/call",
    ] {
        assert!(run.stdout.contains(want), "no {want:?}\n{}", run.show());
    }
    // The decisions are audited as the client's, in the gate's words.
    let audit = std::fs::read_to_string(dir.join(".boxmaker/audit.log")).unwrap();
    assert!(
        audit.contains(r#""via":"client","by":"the MCP client of session mcp-"#),
        "{audit}"
    );
    assert!(
        audit.contains(r#""via":"cli""#),
        "the fallback was the CLI's"
    );
    assert!(audit.contains(r#""event":"approval_expired""#));
}

/// Approving in the client in both protocol eras (issue 31): the SDK's `Client` in legacy
/// mode gets an elicitation, in 2026-07-28 mode an `input_required` result with the same form
/// and a sealed `requestState` (and, played by hand, every hostile retry is refused).
fn eras(transport: &str, mode: &str) {
    let dir = config_dir(
        &format!("eras-{transport}-{mode}"),
        "approve_in_client = true\napproval_ttl = 60",
    );
    // A config warning (a grant for no tool), which every client must hear.
    let config = dir.join("boxmaker.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[[grant]]\ntool = \"raed_file\"\neffect = \"allow\"\n");
    std::fs::write(&config, text).unwrap();
    let run = python(
        "era_approvals.py",
        &dir,
        &[("ERA_TRANSPORT", transport), ("ERA_MODE", mode)],
    );
    let audit = std::fs::read_to_string(dir.join(".boxmaker/audit.log")).unwrap();
    assert!(
        audit.contains(r#""via":"client","by":"the MCP client of session mcp-"#),
        "{audit}\n{}",
        run.show()
    );
    if mode != "legacy" {
        for want in [
            "a flipped MAC digit: refused",
            "other arguments: refused",
            "replayed:",
        ] {
            assert!(run.stdout.contains(want), "no {want:?}\n{}", run.show());
        }
        // The hostile call was decided once, on the CLI (the script checks it ran once: its
        // file holds one line); no retry's answer was taken for it.
        assert!(
            run.stdout.contains("retry after the CLI approved: False"),
            "{}",
            run.show()
        );
        assert!(audit.contains(r#""via":"cli""#), "{audit}");
    }
}

#[test]
fn a_2026_client_over_stdio_is_asked_with_input_required() {
    eras("stdio", "2026-07-28");
}

#[test]
fn a_2026_client_over_http_is_asked_with_input_required() {
    eras("http", "2026-07-28");
}

#[test]
fn a_legacy_client_over_stdio_is_asked_with_an_elicitation() {
    eras("stdio", "legacy");
}

#[test]
fn a_legacy_client_over_http_is_asked_with_an_elicitation() {
    eras("http", "legacy");
}

#[test]
fn test_a_client_without_the_capability_is_never_sent_an_elicitation() {
    let dir = config_dir("no-capability", "approve_in_client = true");
    python("no_elicitation_client.py", &dir, &[]);
}

#[test]
fn test_without_approve_in_client_an_elicitation_client_is_not_asked() {
    let dir = config_dir("not-allowed", "approval_ttl = 60");
    assert!(
        !dir.join(".boxmaker/decide.sock").exists(),
        "no decision socket without approve_in_client"
    );
    let cli = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .arg("--config")
            .arg(dir.join("boxmaker.toml"))
            .output()
            .unwrap()
    };
    // A call waits; the gate serves no decision socket for this config.
    let mut call = Command::new(BIN)
        .args([
            "call",
            "--session",
            "s1",
            "run",
            r#"{"argv":["/bin/echo","x"]}"#,
        ])
        .arg("--config")
        .arg(dir.join("boxmaker.toml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = wait_for_pending(&dir);
    assert!(!dir.join(".boxmaker/decide.sock").exists());
    assert!(cli(&["refuse", &id]).status.success());
    assert_eq!(call.wait().unwrap().code(), Some(3));
}

/// The id of the first pending approval, once there is one.
fn wait_for_pending(dir: &Path) -> String {
    let start = Instant::now();
    loop {
        let o = Command::new(BIN)
            .args(["approvals", "--json", "--config"])
            .arg(dir.join("boxmaker.toml"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        if let Some(at) = text.find("\"ap-") {
            return text[at + 1..at + 20].to_string();
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no approval became pending: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `boxmaker call … run ARGS` in the background.
fn call_in_background(dir: &Path, session: &str, args: &str) -> Child {
    Command::new(BIN)
        .args(["call", "--session", session, "run", args])
        .arg("--config")
        .arg(dir.join("boxmaker.toml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(mut child: Child) -> Run {
    let start = Instant::now();
    let status = wait_or_kill(&mut child, Instant::now() + Duration::from_secs(30));
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Run {
        status,
        stdout,
        stderr,
        took: start.elapsed(),
    }
}

#[test]
fn test_approvals_watch_rings_for_each_call_and_approve_for_remembers_it() {
    let dir = config_dir("watch", "approval_ttl = 60");
    let config = dir.join("boxmaker.toml");
    let mut watch = Command::new(BIN)
        .args(["approvals", "--watch", "--config"])
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let out = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let next_line = |what: &str| {
        rx.recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("`approvals --watch` showed no {what}"))
    };
    // The next call announced as waiting (decisions and uses in between are skipped).
    let next_waiting = |what: &str| loop {
        let line = next_line(what);
        if line.starts_with("\u{7}waiting: ") || line.starts_with("waiting: ") {
            break line;
        }
    };
    let first = next_line("banner");
    assert!(first.starts_with("watching the approvals of"), "{first}");
    let args = r#"{"argv":["/bin/echo","remember me"]}"#;
    let call = call_in_background(&dir, "s1", args);
    let waiting = next_waiting("pending call");
    assert!(waiting.starts_with("\u{7}waiting: ap-"), "{waiting:?}");
    assert!(waiting.contains("remember me") && waiting.contains("session s1"));
    let id = &waiting["\u{7}waiting: ".len()..][..19];
    let o = Command::new(BIN)
        .args(["approve", id, "--for", "10m", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(said.contains("remembered as rt-"), "{said}");
    let ran = finish(call);
    assert!(ran.status.success(), "{}", ran.show());
    let decided = next_line("decision");
    assert!(
        decided.contains(id)
            && decided.contains("at the command line")
            && decided.contains("(cli)"),
        "{decided}"
    );
    // The same call now runs without asking; `grants` lists what is remembered.
    let again = finish(call_in_background(&dir, "s1", args));
    assert!(again.status.success(), "{}", again.show());
    assert!(
        !again.stderr.contains("pending approval"),
        "{}",
        again.show()
    );
    let grants = Command::new(BIN)
        .args(["grants", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let grants = String::from_utf8_lossy(&grants.stdout).to_string();
    let line = grants
        .lines()
        .find(|l| l.contains("remembered approval"))
        .unwrap_or_else(|| panic!("{grants}"));
    assert!(line.contains(id) && line.contains("remember me") && line.contains("session s1"));
    let rt = line.split_whitespace().next().unwrap();
    // Revoked, the same call asks again.
    let o = Command::new(BIN)
        .args(["grants", "revoke", rt, "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let third = call_in_background(&dir, "s1", args);
    let waiting = next_waiting("pending call after the revocation");
    assert!(waiting.contains("remember me"), "{waiting}");
    let id = &waiting[waiting.find("ap-").unwrap()..][..19];
    assert!(
        Command::new(BIN)
            .args(["refuse", id, "--config"])
            .arg(&config)
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(finish(third).status.code(), Some(3));
    let _ = watch.kill();
    let _ = watch.wait();
}

/// Fails (never skips) when Chromium, its driver or Selenium is missing.
fn require_browser() {
    for bin in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
        assert!(
            Path::new(bin).exists(),
            "{bin} is missing: `apt-get install chromium chromium-driver` (.ci/run does)"
        );
    }
    let o = Command::new(client_python())
        .args(["-c", "import selenium"])
        .output()
        .unwrap();
    assert!(o.status.success(), "Selenium is missing: run `make deps`");
}

#[test]
fn test_the_page_in_chromium_shows_calls_live_and_decides_them_safely() {
    require_browser();
    let dir = config_dir("page", "approval_ttl = 120");
    let shot = std::env::var("BOXMAKER_SCREENSHOT")
        .unwrap_or_else(|_| dir.join("approvals.png").display().to_string());
    let run = python(
        "page_browser.py",
        &dir,
        &[
            ("BOXMAKER_SCREENSHOT", &shot),
            ("BOXMAKER_MANY", "10000"),
            // The promises (100 ms, 1 s) are measured on a release build, on a quiet
            // machine, by bench/approvals-latency.sh (docs/performance.md); this debug build
            // shares two cores with whatever else runs, so it checks the behaviour and only
            // a loose time.
            ("BOXMAKER_MANY_BUDGET_MS", "30000"),
            ("BOXMAKER_SEEN_BUDGET_MS", "1000"),
        ],
    );
    for want in [
        "no login: snapshot 401",
        "login card fits at 360 and 1200 px",
        "wrong CSRF token: 403",
        "another Host (DNS rebinding): 421",
        "after it printed that it waits",
        "10000 pending approvals listed",
    ] {
        assert!(run.stdout.contains(want), "no {want:?}\n{}", run.show());
    }
    assert!(Path::new(&shot).exists(), "no screenshot at {shot}");
}

#[test]
fn test_approve_for_takes_a_duration_and_refuses_nonsense() {
    let dir = config_dir("for-usage", "");
    for bad in ["10", "0m", "25h", "10x", "m", "1h61x"] {
        let o = Command::new(BIN)
            .args(["approve", "ap-0000000000000000", "--for", bad, "--config"])
            .arg(dir.join("boxmaker.toml"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "--for {bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("duration") || err.contains("--for"), "{err}");
    }
}

/// `boxmaker serve --approvals 127.0.0.1:0` for `dir`; returns it and the page's port.
#[allow(clippy::zombie_processes)] // the caller kills and waits for it
fn serve_with_page(dir: &Path) -> (Child, u16) {
    let mut serve = Command::new(BIN)
        .args(["serve", "--approvals", "127.0.0.1:0", "--config"])
        .arg(dir.join("boxmaker.toml"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = serve.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { return };
            let _ = tx.send(line);
        }
    });
    let start = Instant::now();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("serve printed no approvals page");
        if let Some(at) = line.find("http://127.0.0.1:") {
            let rest = &line[at + "http://127.0.0.1:".len()..];
            let port = rest[..rest.find('/').unwrap()].parse().unwrap();
            return (serve, port);
        }
        assert!(start.elapsed() < Duration::from_secs(30));
    }
}

#[test]
fn test_a_box_cannot_reach_the_page_and_one_with_the_network_cannot_log_in() {
    let dir = config_dir("page-from-a-box", "");
    let (mut serve, port) = serve_with_page(&dir);
    let token = dir.join(".boxmaker/approvals.token");
    let probe = format!(
        "import os, socket, urllib.request, urllib.error\n\
         print('token visible:', os.path.exists({token:?}))\n\
         try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n\
         except OSError as e:\n    print('no connection:', e.errno)\n    raise SystemExit(0)\n\
         try:\n    urllib.request.urlopen('http://127.0.0.1:{port}/api/snapshot', timeout=5)\n    \
         print('answered')\n\
         except urllib.error.HTTPError as e:\n    print('status', e.code)\n",
        token = token.display().to_string()
    );
    let run_in_box = |network: bool| {
        let mut cmd = Command::new(BIN);
        cmd.args(["box", "exec", "--session", "probe", "--config"])
            .arg(dir.join("boxmaker.toml"));
        if network {
            cmd.arg("--network");
        }
        let o = cmd
            .args(["--", "/usr/bin/python3", "-c", &probe])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            o.status.success(),
            "{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out
    };
    // Without the network a box has a loopback of its own: the page is not there.
    let alone = run_in_box(false);
    assert!(alone.contains("token visible: False"), "{alone}");
    assert!(alone.contains("no connection: 111"), "{alone}");
    // With the host's network it reaches the port, but has no token: nothing is answered.
    let networked = run_in_box(true);
    assert!(networked.contains("token visible: False"), "{networked}");
    assert!(networked.contains("status 401"), "{networked}");
    let _ = serve.kill();
    let _ = serve.wait();
}

/// The approvals page, too, closes a connection whose request head never ends (20 s).
#[test]
fn test_the_page_cuts_off_a_request_head_that_never_ends() {
    let dir = config_dir("page-slowloris", "");
    let (mut serve, port) = serve_with_page(&dir);
    let held = testkit::slow_head_held_for(port, Duration::from_secs(45));
    let _ = serve.kill();
    let _ = serve.wait();
    let held = held.expect("the page still held a never-ending request head at 45 s");
    assert!(held < Duration::from_secs(28), "held {held:?}");
}
