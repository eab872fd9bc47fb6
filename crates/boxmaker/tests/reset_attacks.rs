//! Issue 19, item 1: a session's label never falls while anything of it runs
//! (docs/spec.md §4, "A reset ends the session first").
//!
//! The attack: a networked box of the session starts while the session is `public` and
//! waits; a second call, whose reach is confidential, copies a confidential file into
//! `/work`; the proxy rightly refuses the waiting box from then on; then an operator resets
//! the session. If the waiting box outlives the reset, its next connection is decided at
//! `public` and carries the file out. The attacker's code (`servers/reset_leaker.py`) runs in
//! a real box, through the real gate, runner and egress proxy, in the test's own network
//! (`netlab`); the origin's log shows what went out.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod netlab;

use std::path::Path;
use std::time::Duration;

use netlab::*;
use serde_json::{Value, json};
use testkit::wait_until;

/// The message a call the reset stopped answers.
const STOPPED: &str = "the session was reset by an operator while this call ran; it was stopped";

/// A `run` tool that reads the confidential mount (its reach is confidential) and has no
/// network; and the leaker as a downstream server.
const EXTRA: &str = r#"
[[tool]]
name = "copier"
builtin = "run"
mounts = ["secrets"]

[[tool]]
name = "leaker"
mcp = ["/usr/bin/python3", "/opt/servers/reset_leaker.py", "serve", "MARKER"]
network = true
mounts = ["servers"]
"#;

/// The secret as the leaker spells it in a path: the file's bytes, trimmed, in hex.
fn secret_hex(lab: &Lab) -> String {
    let text = std::fs::read_to_string(lab.dir.join("secrets/plan.txt")).unwrap();
    text.trim()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}

/// Every request the origin or the canary got whose path holds `needle`.
fn reached(lab: &Lab, needle: &str) -> Vec<Value> {
    let mut got = lab.requests("origin");
    got.extend(lab.requests("canary"));
    got.into_iter()
        .filter(|r| r["path"].as_str().is_some_and(|p| p.contains(needle)))
        .collect()
}

/// One process: its pid, pid namespace, parent and start time (to tell a reused pid).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Proc {
    pid: u32,
    ns: String,
    ppid: u32,
    start: String,
}

fn proc_of(pid: u32) -> Option<Proc> {
    let dir = Path::new("/proc").join(pid.to_string());
    let ns = std::fs::read_link(dir.join("ns/pid")).ok()?;
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    let ppid = status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))?
        .trim()
        .parse()
        .ok()?;
    // Field 22 of stat, counted after the command's closing parenthesis.
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let start = stat.rsplit(')').next()?.split_whitespace().nth(19)?.into();
    Some(Proc {
        pid,
        ns: ns.to_string_lossy().into_owned(),
        ppid,
        start,
    })
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The box running the leaker with `marker`: a process in a pid namespace other than ours
/// whose command line names both; with its init (its parent) and the helper outside the box
/// that supervises it (init's parent).
struct BoxSeen {
    ns: String,
    init: Proc,
    helper: Proc,
}

fn find_box(marker: &str) -> Option<BoxSeen> {
    let ours = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let ours = ours.to_string_lossy();
    for pid in all_pids() {
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !(cmdline.contains("reset_leaker.py") && cmdline.contains(marker)) {
            continue;
        }
        let Some(p) = proc_of(pid) else { continue };
        if p.ns == ours {
            continue; // the `boxmaker call` client, whose arguments name it too
        }
        let init = proc_of(p.ppid)?;
        let helper = proc_of(init.ppid)?;
        return Some(BoxSeen {
            ns: p.ns,
            init,
            helper,
        });
    }
    None
}

/// Every process still in pid namespace `ns`, and the given ones if they still run (the
/// same pid with the same start time).
fn survivors(ns: &str, also: &[&Proc]) -> Vec<String> {
    let mut left: Vec<String> = all_pids()
        .into_iter()
        .filter_map(proc_of)
        .filter(|p| p.ns == ns)
        .map(|p| format!("{p:?} (in the box's pid namespace)"))
        .collect();
    for p in also {
        if proc_of(p.pid).is_some_and(|now| now.start == p.start) {
            left.push(format!("{p:?} (still running)"));
        }
    }
    left
}

/// The audit log's records, in order.
fn audit(cfg: &Path) -> Vec<Value> {
    std::fs::read_to_string(cfg.parent().unwrap().join("state/audit.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn refused_for(lab: &Lab, cfg: &Path, tool: &str) -> usize {
    lab.egress_records(cfg)
        .iter()
        .filter(|r| {
            r["tool"] == tool
                && r["outcome"] == "refused"
                && r["reason"]
                    .as_str()
                    .is_some_and(|w| w.contains("confidential"))
        })
        .count()
}

/// The attack, for the leaker called as `tool` with `args` (its box's connections are
/// audited as `egress_tool`'s): start it, see it reach the origin
/// at `public`, raise the session to confidential with the secret in `/work`, see the proxy
/// refuse the leaker, reset, and check that nothing of the session outlived the reset and
/// that the secret never arrived.
fn attack(lab: &Lab, cfg: &Path, marker: &str, (tool, egress_tool): (&str, &str), args: &Value) {
    let session = "s1";
    let hex = secret_hex(lab);
    let (call, survived, box_seen) = std::thread::scope(|s| {
        let leaking = s.spawn(|| lab.call(cfg, session, tool, args));
        // Public: the leaker reaches the destination (the control that it can at all).
        wait_until("the leaker's first ping", Duration::from_secs(60), || {
            !reached(lab, &format!("/reset-{marker}/ping")).is_empty()
        });
        let seen = find_box(marker).expect("the leaker's box is not among the processes");
        // A confidential-reach tool puts the secret in the session's workspace.
        let copy = lab.call(
            cfg,
            session,
            "copier",
            &json!({"argv": ["cp", "/data/secrets/plan.txt", "/work/secret"]}),
        );
        assert!(copy.ok(), "{}", copy.show());
        assert_eq!(copy.run_content()["exit"], 0, "{}", copy.show());
        // The proxy refuses the leaker now; two more refusals, and it has tried with the
        // secret in hand (every try started after the copy reads it first).
        let before = refused_for(lab, cfg, egress_tool);
        wait_until(
            "the proxy to refuse the leaker twice more",
            Duration::from_secs(30),
            || refused_for(lab, cfg, egress_tool) >= before + 2,
        );
        assert!(
            reached(lab, &hex).is_empty(),
            "the secret went out before the reset"
        );
        let reset = lab.boxmaker(cfg, &["sessions", "reset", session]);
        assert!(reset.ok(), "{}", reset.show());
        // The moment the operator has the answer, nothing of the session may run.
        let survived = survivors(&seen.ns, &[&seen.init, &seen.helper]);
        (leaking.join().unwrap(), survived, seen)
    });
    // Whatever the leaker was still doing had time to reach the origin by now.
    std::thread::sleep(Duration::from_millis(500));
    let got = reached(lab, &hex);
    assert!(
        got.is_empty(),
        "the secret reached the destination after the reset, {} times; the first: {}\nthe \
         leaking call: {}",
        got.len(),
        got[0],
        call.show()
    );
    assert!(
        survived.is_empty(),
        "processes of the session outlived its reset (box {}): {survived:?}",
        box_seen.ns
    );
    let answer: Value = serde_json::from_str(call.stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", call.show()));
    assert_eq!(answer["status"], "failed", "{}", call.show());
    assert!(
        answer["message"]
            .as_str()
            .is_some_and(|m| m.contains(STOPPED)),
        "{}",
        call.show()
    );
    // The audit log: the stopped call's answer, then the reset.
    let records = audit(cfg);
    let ended = records
        .iter()
        .position(|r| r["event"] == "result" && r["session"] == session && r["tool"] == tool)
        .unwrap_or_else(|| panic!("no result record for the {tool} call: {records:?}"));
    assert_eq!(records[ended]["outcome"], "failed", "{}", records[ended]);
    let reset = records
        .iter()
        .position(|r| r["event"] == "session_reset" && r["session"] == session)
        .unwrap_or_else(|| panic!("no session_reset record: {records:?}"));
    assert!(
        ended < reset,
        "the session_reset record (#{reset}) comes before the stopped call's answer (#{ended})"
    );
    assert_eq!(
        records[reset]["class"], "confidential",
        "{}",
        records[reset]
    );
    // After the reset the session is public again and works: a new box reaches the origin.
    let v = lab.run_in_box(
        cfg,
        session,
        "net",
        &[
            "/usr/bin/python3",
            "-c",
            "import urllib.request as u; print(u.urlopen('http://allowed.test/').status)",
        ],
    );
    assert_eq!(v["exit"], 0, "{v}");
}

#[test]
fn a_reset_ends_a_running_networked_box_before_the_label_falls() {
    let lab = Lab::new("reset-run");
    let marker = format!("run{}", std::process::id());
    let cfg = lab.config("c", &format!("{BASE}{}", EXTRA.replace("MARKER", &marker)));
    let argv = [
        "/usr/bin/python3",
        "/opt/servers/reset_leaker.py",
        "loop",
        &marker,
    ];
    attack(
        &lab,
        &cfg,
        &marker,
        ("net", "net"),
        &json!({ "argv": argv }),
    );
}

#[test]
fn a_reset_ends_a_downstream_server_mid_call_before_the_label_falls() {
    let lab = Lab::new("reset-server");
    let marker = format!("srv{}", std::process::id());
    let cfg = lab.config("c", &format!("{BASE}{}", EXTRA.replace("MARKER", &marker)));
    attack(&lab, &cfg, &marker, ("leaker_exfil", "leaker"), &json!({}));
}
