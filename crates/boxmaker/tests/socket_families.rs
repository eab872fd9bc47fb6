//! Issue 19 item 2, through the product: a `run` call's box opens sockets only of the families
//! a box needs (`AF_UNIX`, `AF_INET`, `AF_INET6`); `AF_VSOCK`, which no namespace confines, and
//! every other family are refused with `EAFNOSUPPORT` (docs/spec.md §4). The attacker's probe
//! (`crates/sandbox/tests/probes/socket_families.py`) runs as the tool's command, with
//! `network = false` and `network = true` (the egress proxy's box), started by root and by a
//! normal user (`setpriv --reuid`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::Value;

use testkit::{As, fresh_dir, open_to_everyone};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");
const PROBE: &str = include_str!("../../sandbox/tests/probes/socket_families.py");
// Linux's numbers, the same on every architecture.
const AF_UNIX: i64 = 1;
const AF_INET: i64 = 2;
const AF_INET6: i64 = 10;
const AF_VSOCK: i64 = 40;
const EAFNOSUPPORT: i64 = 97;
const ALLOWED: [i64; 3] = [AF_UNIX, AF_INET, AF_INET6];

/// A config directory with two `run` tools: `run` (no network) and `netrun` (the proxy).
fn config_dir(who: As) -> PathBuf {
    let dir = fresh_dir(
        env!("CARGO_TARGET_TMPDIR"),
        "socket_families",
        &format!("{who:?}"),
    );
    // A normal user must be able to make the state directory and read the config.
    open_to_everyone(&dir, env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(
        dir.join("boxmaker.toml"),
        "[gate]\nstate = \"state\"\n\n[box]\ntimeout_seconds = 60\n\n\
         [[tool]]\nname = \"run\"\nbuiltin = \"run\"\n\n\
         [[tool]]\nname = \"netrun\"\nbuiltin = \"run\"\nnetwork = true\negress = []\n\n\
         [[grant]]\ntool = \"*\"\neffect = \"allow\"\n",
    )
    .unwrap();
    // The person's word for it, as `who` with the HOME the calls get (docs/spec.md §6,
    // "Whose config").
    if let Err(why) = testkit::trust_as(
        who.command(BIN).env("HOME", &dir),
        dir.join("boxmaker.toml"),
    ) {
        panic!("{who:?}: boxmaker trust: {why}");
    }
    dir
}

fn show(o: &Output) -> String {
    format!(
        "{:?}\n{}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs the probe as `tool`'s command and returns its attempts.
fn attempts(dir: &Path, who: As, tool: &str) -> Vec<Value> {
    let args = serde_json::json!({"argv": ["/usr/bin/python3", "-c", PROBE, "families"]});
    let o = who
        .command(BIN)
        .args(["call", "--session", "s", "--json", tool, &args.to_string()])
        .arg("--config")
        .arg(dir.join("boxmaker.toml"))
        .env("HOME", dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim())
        .unwrap_or_else(|e| panic!("{who:?} {tool}: {e}: {}", show(&o)));
    assert_eq!(v["status"], "result", "{who:?} {tool}: {v}");
    let content: Value = serde_json::from_str(v["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["exit"], 0, "{who:?} {tool}: {content}");
    let all: Vec<Value> = content["stdout"]
        .as_str()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(all.len(), 64 * 4 * 2 + 2 + 1, "{who:?} {tool}");
    all
}

#[test]
fn a_tools_box_gets_no_vsock_socket_nor_any_family_but_unix_inet_and_inet6() {
    for who in As::all() {
        let dir = config_dir(who);
        for tool in ["run", "netrun"] {
            let all = attempts(&dir, who, tool);
            // On the old filter socket(AF_VSOCK, SOCK_STREAM) succeeded in both boxes.
            let vsock = all
                .iter()
                .find(|a| a["call"] == "socket" && a["family"] == AF_VSOCK && a["type"] == "stream")
                .unwrap();
            assert_eq!(
                (vsock["ok"].as_bool(), vsock["errno"].as_i64()),
                (Some(false), Some(EAFNOSUPPORT)),
                "{who:?} {tool}: {vsock}"
            );
            let wrong: Vec<&Value> = all
                .iter()
                .filter(|a| a["call"] != "io_uring_setup")
                .filter(|a| !ALLOWED.contains(&a["family"].as_i64().unwrap_or(-1)))
                .filter(|a| a["ok"] != false || a["errno"] != EAFNOSUPPORT)
                .collect();
            assert!(wrong.is_empty(), "{who:?} {tool}: {wrong:?}");
            let uring = all.iter().find(|a| a["call"] == "io_uring_setup").unwrap();
            assert_eq!(uring["ok"], false, "{who:?} {tool}: {uring}");
            // What a tool needs still works: the test can fail.
            for (call, family) in [("socketpair", AF_UNIX), ("socket", AF_INET)] {
                let a = all
                    .iter()
                    .find(|a| a["call"] == call && a["family"] == family)
                    .unwrap();
                assert_eq!(a["ok"], true, "{who:?} {tool}: {a}");
            }
        }
    }
}
