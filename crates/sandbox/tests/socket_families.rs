//! Issue 19 item 2: a box opens sockets only of the families it needs. Some families are
//! confined by no namespace — `AF_VSOCK` reaches the hypervisor host's port space from any
//! network namespace — so the seccomp filter refuses every family but `AF_UNIX`, `AF_INET` and
//! `AF_INET6` (docs/spec.md §4). Each test runs the attacker's probe
//! (`tests/probes/socket_families.py`) inside a real box through the `sandbox-exec` binary:
//! with and without the host's network, started by root and by a normal user.

// Test helpers outside #[test] functions: a failed unwrap there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const EXE: &str = env!("CARGO_BIN_EXE_sandbox-exec");
const PROBE: &str = include_str!("probes/socket_families.py");
/// The families a box may open; every other one is refused.
const ALLOWED: [i64; 3] = [
    libc::AF_UNIX as i64,
    libc::AF_INET as i64,
    libc::AF_INET6 as i64,
];
/// What the filter answers for a refused family.
const EAFNOSUPPORT: i64 = libc::EAFNOSUPPORT as i64;

/// Who starts the box: this process's user (root here), or a normal user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum As {
    Me,
    User,
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// Every caller this machine can be: a normal user only where we can become one.
fn callers() -> Vec<As> {
    if is_root() && Path::new("/usr/bin/setpriv").exists() {
        vec![As::Me, As::User]
    } else {
        vec![As::Me]
    }
}

/// Runs the probe in `mode` inside a box started by `who`, with the host's network or not.
fn probe(who: As, network: bool, mode: &str) -> Output {
    let ws = tempfile::tempdir().unwrap();
    // A normal user's box must be able to use its workspace.
    std::fs::set_permissions(ws.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = match who {
        As::Me => Command::new(EXE),
        As::User => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--reuid=1000", "--regid=1000", "--clear-groups", EXE]);
            c
        }
    };
    cmd.arg("--workspace").arg(ws.path());
    if network {
        cmd.arg("--network");
    }
    cmd.args(["--", "/usr/bin/python3", "-c", PROBE, mode]);
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The probe's attempts, from a run that must have exited 0.
fn attempts(who: As, network: bool) -> Vec<Value> {
    let out = probe(who, network, "families");
    assert!(
        out.status.success(),
        "{who:?} network={network}: probe failed: {:?}\n{}",
        out.status,
        text(&out.stderr)
    );
    let all: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // 64 families x 4 types x (socket, socketpair), two high-bit spellings, io_uring.
    assert_eq!(all.len(), 64 * 4 * 2 + 2 + 1, "{who:?} network={network}");
    all
}

fn find<'a>(all: &'a [Value], call: &str, family: i64, kind: &str) -> &'a Value {
    all.iter()
        .find(|a| a["call"] == call && a["family"] == family && a["type"] == kind)
        .unwrap_or_else(|| panic!("no attempt {call} {family} {kind}"))
}

#[test]
fn a_box_cannot_open_a_vsock_socket() {
    for who in callers() {
        for network in [false, true] {
            let all = attempts(who, network);
            // On the old filter socket(AF_VSOCK, SOCK_STREAM) succeeded here, on a VM host
            // with virtio-vsock: a way to the hypervisor host past every rule.
            for kind in ["stream", "dgram", "seqpacket", "raw"] {
                let a = find(&all, "socket", libc::AF_VSOCK as i64, kind);
                assert_eq!(
                    (a["ok"].as_bool(), a["errno"].as_i64()),
                    (Some(false), Some(EAFNOSUPPORT)),
                    "{who:?} network={network}: {a}"
                );
            }
        }
    }
}

#[test]
fn a_box_gets_no_socket_of_any_family_but_unix_inet_and_inet6() {
    for who in callers() {
        for network in [false, true] {
            let all = attempts(who, network);
            let wrong: Vec<&Value> = all
                .iter()
                .filter(|a| a["call"] != "io_uring_setup")
                .filter(|a| !ALLOWED.contains(&a["family"].as_i64().unwrap_or(-1)))
                .filter(|a| a["ok"] != false || a["errno"] != EAFNOSUPPORT)
                .collect();
            assert!(
                wrong.is_empty(),
                "{who:?} network={network}: refused families answered otherwise: {wrong:?}"
            );
            // The families a box needs still work: the test can fail.
            for (call, family, kind) in [
                ("socket", libc::AF_UNIX, "stream"),
                ("socketpair", libc::AF_UNIX, "stream"),
                ("socketpair", libc::AF_UNIX, "seqpacket"),
                ("socket", libc::AF_INET, "stream"),
                ("socket", libc::AF_INET, "dgram"),
            ] {
                let a = find(&all, call, family as i64, kind);
                assert_eq!(a["ok"], true, "{who:?} network={network}: {a}");
            }
        }
    }
}

#[test]
fn a_box_cannot_make_a_socket_through_io_uring() {
    for who in callers() {
        for network in [false, true] {
            let all = attempts(who, network);
            let a = find(&all, "io_uring_setup", 0, "-");
            assert_eq!(a["ok"], false, "{who:?} network={network}: {a}");
            let errno = a["errno"].as_i64().unwrap();
            assert!(
                errno == libc::EPERM as i64 || errno == libc::ENOSYS as i64,
                "{who:?} network={network}: {a}"
            );
        }
    }
}

#[test]
#[cfg(target_arch = "x86_64")]
fn a_box_cannot_reach_socketcall_through_the_i386_entry_point() {
    // The host's kernel answers `int 0x80` (IA32 emulation): the probe works outside a box.
    let host = Command::new("/usr/bin/python3")
        .args(["-c", PROBE, "int80"])
        .output()
        .unwrap();
    if !text(&host.stdout).contains("int80 returned") {
        eprintln!(
            "this kernel has no i386 entry point; nothing to test ({:?})",
            host.status
        );
        return;
    }
    for who in callers() {
        for network in [false, true] {
            let out = probe(who, network, "int80");
            // The filter checks the audit arch first and kills a process that calls with
            // another one: the call never runs.
            assert!(
                !text(&out.stdout).contains("int80 returned"),
                "{who:?} network={network}: {}",
                text(&out.stdout)
            );
            assert_eq!(
                out.status.code(),
                Some(128 + libc::SIGSYS),
                "{who:?} network={network}: {}",
                text(&out.stderr)
            );
        }
    }
}
