//! Issue 22 item 2: a box built by a pre-forked helper (`sandbox-exec --pool`, as the runner
//! runs a `run` call) — its init cloned before the spec came, its mount namespace made at
//! the call — is the same box, and its answer comes only once every process of it is dead
//! (docs/spec.md §4, "Pre-forked helpers", "A box's processes all die before its answer").
//! Each test runs the attacker's script in a real box, started by root and by a normal user
//! (`setpriv --reuid`) where this machine can, and checks that an idle helper built it.

// Test helpers outside #[test] functions: a failed unwrap there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const EXE: &str = env!("CARGO_BIN_EXE_sandbox-exec");

/// Who starts the box: this process's user (root here), or a normal user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum As {
    Me,
    User,
}

fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
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

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `sh -c script` in a box over a fresh workspace, on a pre-forked helper, started by
/// `who`, with extra `sandbox-exec` options; checks that an idle helper built the box.
fn pooled(who: As, opts: &[&str], script: &str) -> Output {
    let ws = tempfile::tempdir().unwrap();
    // A normal user's box must be able to use its workspace.
    fs::set_permissions(ws.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = match who {
        As::Me => Command::new(EXE),
        As::User => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--reuid=1000", "--regid=1000", "--clear-groups", EXE]);
            c
        }
    };
    cmd.arg("--workspace")
        .arg(ws.path())
        .args(["--capture", "65536", "--pool"])
        .args(opts)
        .args(["--", "/bin/sh", "-c", script]);
    let out = cmd.output().unwrap();
    assert!(
        text(&out.stderr).contains("sandbox-exec: pooled=true"),
        "{who:?}: the box was not built by an idle helper: {}",
        text(&out.stderr)
    );
    out
}

/// Host processes whose command line contains `marker` (not the shells that name it).
fn host_processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = fs::read(e.path().join("cmdline")) {
            let cmdline = text(&cmdline).replace('\0', " ");
            if cmdline.contains(marker)
                && !cmdline.contains("sandbox-exec")
                && !cmdline.contains("/bin/sh -c")
            {
                found.push(format!("{name}: {cmdline}"));
            }
        }
    }
    found
}

#[test]
fn test_a_pooled_box_is_the_same_box() {
    let secret = tempfile::NamedTempFile::new().unwrap();
    fs::write(secret.path(), "host secret\n").unwrap();
    for who in callers() {
        let script = format!(
            "cat {} 2>&1; echo ---; ls /; echo ---; hostname; id -u; \
             grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; \
             cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d ' '; ls /proc | grep -c '^[0-9]'; \
             unshare -U true 2>/dev/null && echo UNSHARED; \
             mount -t tmpfs x /tmp 2>/dev/null && echo MOUNTED; echo end",
            secret.path().display()
        );
        let out = pooled(who, &[], &script);
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "{who:?}: {stdout}{}",
            text(&out.stderr)
        );
        let parts: Vec<&str> = stdout.split("---\n").collect();
        assert_eq!(parts.len(), 3, "{who:?}: {stdout}");
        // The host's file is not in the box; its root is the box's own.
        assert!(parts[0].contains("No such file"), "{who:?}: {stdout}");
        assert_eq!(
            parts[1], "bin\ndev\netc\nlib\nlib64\nproc\nsbin\ntmp\nusr\nwork\n",
            "{who:?}"
        );
        // Its own hostname, the box user, no_new_privs and seccomp, only `lo`, only its own
        // processes (sh, ls/grep and init), no namespace or mount of its own.
        let rest: Vec<&str> = parts[2].lines().collect();
        assert_eq!(rest[0], "box", "{who:?}: {stdout}");
        assert_eq!(rest[1], "1000", "{who:?}: {stdout}");
        assert_eq!(
            rest[2..4],
            ["NoNewPrivs:\t1", "Seccomp:\t2"],
            "{who:?}: {stdout}"
        );
        assert_eq!(rest[4], "lo", "{who:?}: {stdout}");
        assert!(
            rest[5].parse::<u32>().unwrap() <= 4,
            "{who:?}: the box sees other processes: {stdout}"
        );
        assert_eq!(rest[6..], ["end"], "{who:?}: {stdout}");
    }
}

/// The answer comes only once every process of the box is dead: a daemon that left the
/// command's session, and one that forks without end while init kills them, are gone the
/// moment `sandbox-exec` returns — looked for at once, never waited for.
#[test]
fn test_a_pooled_boxs_processes_are_all_dead_before_its_answer() {
    for who in callers() {
        let out = pooled(
            who,
            &[],
            "(setsid sleep 4351 > /dev/null 2>&1 &); \
             (setsid sh -c 'while :; do (sleep 4352 &); done' > /dev/null 2>&1 &); \
             sleep 0.3; echo started",
        );
        assert_eq!(
            text(&out.stdout),
            "started\n",
            "{who:?}: {}",
            text(&out.stderr)
        );
        for m in ["sleep 4351", "sleep 4352", "while :"] {
            let left = host_processes_with(m);
            assert!(
                left.is_empty(),
                "{who:?}: {m} outlived the answer: {left:?}"
            );
        }
    }
}

#[test]
fn test_a_pooled_box_at_its_timeout_dies_whole() {
    for who in callers() {
        let out = pooled(
            who,
            &["--timeout", "2"],
            "(setsid sleep 4361 &); sleep 4362 & sleep 4363",
        );
        assert_eq!(
            out.status.code(),
            Some(124),
            "{who:?}: {}",
            text(&out.stderr)
        );
        for m in ["sleep 4361", "sleep 4362", "sleep 4363"] {
            let left = host_processes_with(m);
            assert!(left.is_empty(), "{who:?}: {m} survived: {left:?}");
        }
    }
}
