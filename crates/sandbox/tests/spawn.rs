//! `spawn`: a box that keeps running while the caller talks to it over the command's stdio
//! (how downstream MCP servers run). Each test also checks that stopping the box leaves no
//! process of it behind.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::helper;

use std::io::{BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

use sandbox::{Spec, Status};

fn spec(script: &str, ws: &std::path::Path) -> Spec {
    let mut s = Spec::new(
        vec!["/bin/sh".into(), "-c".into(), script.into()],
        ws.to_path_buf(),
    );
    s.require.landlock = false;
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
fn a_spawned_box_answers_line_by_line_and_stop_kills_it() {
    let ws = tempfile::tempdir().unwrap();
    let marker = "spawn-echo-marker-5521";
    let mut b = sandbox::spawn(
        &spec(
            &format!("while read l; do echo \"got $l $(id -u)\"; done; : {marker}"),
            ws.path(),
        ),
        &helper(),
    )
    .unwrap();
    let mut stdin = b.stdin.take().unwrap();
    let mut lines = BufReader::new(b.stdout.take().unwrap()).lines();
    for i in 0..3 {
        writeln!(stdin, "line{i}").unwrap();
        let got = lines.next().unwrap().unwrap();
        // The box user, never the caller's uid 0.
        assert_eq!(got, format!("got line{i} 1000"));
    }
    assert!(processes_with(marker) > 0);
    assert!(!b.has_ended());
    let status = b.stop().unwrap();
    assert!(matches!(status, Status::Signaled(9)), "{status:?}");
    assert_eq!(processes_with(marker), 0);
}

#[test]
fn dropping_a_spawned_box_kills_everything_it_started() {
    let ws = tempfile::tempdir().unwrap();
    let marker = "spawn-drop-marker-7713";
    let b = sandbox::spawn(
        &spec(&format!("sleep 1000 & sleep 1000; : {marker}"), ws.path()),
        &helper(),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with(marker) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(processes_with(marker) > 0);
    drop(b);
    assert_eq!(processes_with(marker), 0);
    assert_eq!(processes_with("sleep 1000"), 0);
}

#[test]
fn a_command_that_exits_ends_stdout_and_reports_its_status() {
    let ws = tempfile::tempdir().unwrap();
    let mut b = sandbox::spawn(&spec("echo bye; exit 7", ws.path()), &helper()).unwrap();
    let mut out = String::new();
    b.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert_eq!(out, "bye\n");
    // Its stdout ended with its exit; the box's end follows at once.
    assert_eq!(
        b.stop_after(Duration::from_secs(10)).unwrap(),
        Status::Exited(7)
    );
}

#[test]
fn a_box_that_cannot_be_built_says_why() {
    let ws = tempfile::tempdir().unwrap();
    let mut s = spec("true", ws.path());
    s.mounts.push(sandbox::Mount {
        host: "/definitely/not/here".into(),
        at: "/data".into(),
        write: false,
    });
    let mut b = sandbox::spawn(&s, &helper()).unwrap();
    let mut out = Vec::new();
    b.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    assert!(out.is_empty());
    let err = b.stop().unwrap_err().to_string();
    assert!(err.contains("/definitely/not/here"), "{err}");
}

#[test]
fn a_spawned_box_still_has_its_wall_clock_limit() {
    let ws = tempfile::tempdir().unwrap();
    let mut s = spec("sleep 998", ws.path());
    s.limits.timeout = Duration::from_millis(300);
    let mut b = sandbox::spawn(&s, &helper()).unwrap();
    let mut out = Vec::new();
    b.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    assert_eq!(b.stop().unwrap(), Status::TimedOut);
}

#[test]
fn closing_stdout_is_seen_at_once_while_the_command_runs_on() {
    let ws = tempfile::tempdir().unwrap();
    let mut s = spec("echo last; exec >&-; sleep 997", ws.path());
    // If end-of-file waited for the box's end, this test would fail at this limit.
    s.limits.timeout = Duration::from_secs(20);
    let mut b = sandbox::spawn(&s, &helper()).unwrap();
    let mut out = String::new();
    // End-of-file as soon as the command closes its stdout: the helper holds no copy.
    b.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert_eq!(out, "last\n");
    assert!(!b.has_ended(), "stdout ended only with the box");
    assert!(matches!(b.stop().unwrap(), Status::Signaled(9)));
}
