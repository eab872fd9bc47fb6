//! Box cgroups when several boxmakers share a machine (issue 19, seen in the flood tests): each
//! sweeps the leftovers of dead ones, and none may remove another's live cgroup or clash with
//! its name, whichever pid namespace each runs in (docs/spec.md §4). Each test runs real boxes
//! through the `sandbox-exec` binary, some of them in a pid namespace of their own with a
//! `/proc` of their own (`unshare --pid --fork --mount-proc`), as a boxmaker in a container
//! would be.

// Test helpers outside #[test] functions: a failed unwrap there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::box_cgroup_dirs;

use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EXE: &str = env!("CARGO_BIN_EXE_sandbox-exec");

/// One test at a time: every box sweeps, so one test's boxes would remove the dead owner's
/// cgroup another test is about to look at.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `sandbox-exec` in a new pid namespace (pid 1 there) with its own `/proc`.
fn in_another_pid_namespace() -> Command {
    let mut c = Command::new("unshare");
    c.args(["--pid", "--fork", "--mount-proc", "--kill-child"]);
    c
}

/// The host pid of the first process whose command line contains `marker`.
fn host_pid_of(marker: &str) -> Option<u32> {
    fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = text(&fs::read(e.path().join("cmdline")).ok()?).replace('\0', " ");
        (cmdline.contains(marker) && !cmdline.contains("sandbox-exec")).then_some(pid)
    })
}

/// Whether no process is left in the cgroup `dir` (v2 `cgroup.events`, or v1 `cgroup.procs`).
fn unpopulated(dir: &std::path::Path) -> bool {
    match fs::read_to_string(dir.join("cgroup.events")) {
        Ok(events) => events.lines().any(|l| l == "populated 0"),
        Err(_) => fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|p| p.trim().is_empty()),
    }
}

fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn boxmakers_in_two_pid_namespaces_never_remove_each_others_box_cgroups() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Each boxmaker runs boxes one after another, and each box sweeps while it runs. On the
    // old code a box's cgroup was named by its creator's pid and swept when that pid was not
    // in the sweeper's /proc: a sweeper in the other namespace removed it before the box's
    // init joined it ("join the box's cgroup: No such device"), 57 boxes of 300 here.
    const BOXES: usize = 100;
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let ws = tempfile::tempdir().unwrap();
            let script = format!(
                "i=0; while [ $i -lt {BOXES} ]; do \
                   {EXE} --workspace {} --capture 4096 -- /bin/true 2>&1 || echo FAILED; \
                   i=$((i+1)); done",
                ws.path().display()
            );
            let child = in_another_pid_namespace()
                .args(["/bin/sh", "-c", &script])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            (ws, child)
        })
        .collect();
    for (_ws, child) in runs {
        let out = text(&child.wait_with_output().unwrap().stdout);
        let failed: Vec<&str> = out
            .lines()
            .filter(|l| !l.contains("cgroup_limits=true status=Exited(0)"))
            .collect();
        assert!(failed.is_empty(), "boxes failed: {failed:?}");
        assert_eq!(out.lines().count(), BOXES, "{out}");
    }
}

#[test]
fn a_killed_boxmakers_cgroup_is_swept_by_the_next_box_whatever_its_pid_namespace() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A boxmaker that was pid 1 of its namespace: on the old code its cgroup was named
    // `boxmaker-1-…`, and pid 1 is alive in every namespace, so no sweeper removed it.
    let ws = tempfile::tempdir().unwrap();
    let mut owner = in_another_pid_namespace()
        .arg(EXE)
        .arg("--workspace")
        .arg(ws.path())
        .args(["--", "/bin/sh", "-c", "sleep 4361"])
        .spawn()
        .unwrap();
    let sleeper = wait_for("the box to start", || host_pid_of("sleep 4361"));
    let dirs = wait_for("the box's cgroups", || {
        Some(box_cgroup_dirs(sleeper)).filter(|d| !d.is_empty())
    });
    // unshare dies, its child (the box's helper, in process) gets SIGKILL, and with it the
    // box: nothing removes the cgroup.
    owner.kill().unwrap();
    owner.wait().unwrap();
    wait_for("the box to end", || {
        host_pid_of("sleep 4361").is_none().then_some(())
    });
    assert!(
        dirs.iter().all(|d| d.exists()),
        "nothing left to sweep: {dirs:?}"
    );
    // The command's exit is not the box's: its init and helper may still be exiting, and a
    // cgroup with a process in it cannot be removed by anyone. Under load that took longer
    // than the next box's sweep (seen once in CI); wait until the kernel says it is empty.
    wait_for("the dead box's cgroups to empty", || {
        dirs.iter().all(|d| unpopulated(d)).then_some(())
    });

    // The next box, in this pid namespace, sweeps it.
    let next = tempfile::tempdir().unwrap();
    let out = Command::new(EXE)
        .arg("--workspace")
        .arg(next.path())
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let unswept: Vec<_> = dirs.iter().filter(|d| d.exists()).collect();
    assert!(
        unswept.is_empty(),
        "a dead boxmaker's cgroups survived the next box: {unswept:?}"
    );
}
