//! `Stopper`: ending a running box from another thread (how an operator's reset ends a
//! session's running calls). When the run returns, no process of the box is left.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::helper;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use sandbox::{Io, Spec, Status, Stopper};

fn spec(script: &str, ws: &std::path::Path) -> Spec {
    let mut s = Spec::new(
        vec!["/bin/sh".into(), "-c".into(), script.into()],
        ws.to_path_buf(),
    );
    s.require.landlock = false;
    s.io = Io::Capture {
        stdin: Vec::new(),
        output_cap: 1 << 16,
    };
    s
}

/// Host processes whose command line contains `marker`.
fn processes_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
        })
        .count()
}

#[test]
fn test_stopper_ends_a_running_box_and_its_processes_before_run_returns() {
    let ws = tempfile::tempdir().unwrap();
    let marker = "stop-running-marker-4417";
    // A command, a background child and a grandchild that ignore every catchable signal.
    let script = format!(
        "trap '' TERM INT HUP; (trap '' TERM INT HUP; sleep 1000; : {marker}) & \
         sh -c 'sleep 1000; : {marker}' & touch /work/up; sleep 1000; : {marker}"
    );
    let (tx, rx) = mpsc::channel::<Stopper>();
    let s = spec(&script, ws.path());
    let ran = std::thread::scope(|scope| {
        let run = scope.spawn(|| {
            sandbox::run_stoppable(&s, &helper(), &mut |st| tx.send(st).unwrap(), &mut drop)
        });
        let stopper = rx.recv().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !(ws.path().join("up").exists() && processes_with(marker) >= 3) {
            assert!(
                Instant::now() < deadline,
                "the box did not start its processes"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        stopper.stop();
        run.join().unwrap()
    });
    let out = ran.unwrap();
    // Killed (a box that reached its wall clock would say `TimedOut`).
    assert_eq!(out.status, Status::Signaled(9), "{out:?}");
    // The run returned after the helper reaped the box: nothing of it is left, at once.
    assert_eq!(processes_with(marker), 0);
}

#[test]
fn test_stopper_used_before_the_box_is_built_fails_the_run_and_starts_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let marker = "stop-early-marker-9032";
    let s = spec(
        &format!("touch /work/ran; sleep 1000; : {marker}"),
        ws.path(),
    );
    let out = sandbox::run_stoppable(&s, &helper(), &mut |st| st.stop(), &mut drop);
    assert!(out.is_err(), "{out:?}");
    assert!(!ws.path().join("ran").exists());
    assert_eq!(processes_with(marker), 0);
}

#[test]
fn test_stopper_of_a_spawned_box_ends_it_while_another_thread_holds_it() {
    let ws = tempfile::tempdir().unwrap();
    let marker = "stop-spawned-marker-2290";
    let mut b = sandbox::spawn(
        &spec(&format!("sleep 1000 & sleep 1000; : {marker}"), ws.path()),
        &helper(),
    )
    .unwrap();
    let stopper = b.stopper().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while processes_with(marker) == 0 {
        assert!(Instant::now() < deadline, "the box did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::spawn(move || stopper.stop()).join().unwrap();
    // Its stdout ends when the box is gone; stop then reports how.
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut b.stdout.take().unwrap(), &mut rest).unwrap();
    assert_eq!(b.stop().unwrap(), Status::Signaled(9));
    assert_eq!(processes_with(marker), 0);
}
