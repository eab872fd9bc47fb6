//! `Spec::proxy` (issue 14): a box with a network namespace of its own whose only way out
//! is the listener its init made on 127.0.0.1:3128 and handed to the caller, who accepts on
//! it from outside the box's namespace.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::TcpListener;

use sandbox::{Io, Spec, Status};

mod common;
use common::helper;

fn spec(script: &str, ws: &std::path::Path) -> Spec {
    let mut s = Spec::new(
        vec!["/bin/bash".into(), "-c".into(), script.into()],
        ws.to_path_buf(),
    );
    s.require.landlock = false;
    s.proxy = true;
    s.io = Io::Capture {
        stdin: Vec::new(),
        output_cap: 1 << 16,
    };
    s
}

/// Answers one connection on `l` with what it read, upper-cased.
fn answer_one(l: TcpListener) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).unwrap();
        let got = String::from_utf8_lossy(&buf[..n]).into_owned();
        s.write_all(got.to_uppercase().as_bytes()).unwrap();
        got
    })
}

#[test]
fn a_proxy_box_reaches_the_caller_through_its_listener_and_nothing_else() {
    let ws = tempfile::tempdir().unwrap();
    // A listener on the host's loopback the box must not reach.
    let host = TcpListener::bind("127.0.0.1:0").unwrap();
    host.set_nonblocking(true).unwrap();
    let port = host.local_addr().unwrap().port();
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/3128 && echo hello >&3 && head -c 6 <&3; \
         (echo x > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached-host; \
         cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '"
    );
    let mut served = None;
    let out = sandbox::run_with_listener(&spec(&script, ws.path()), &helper(), &mut |l| {
        served = Some(answer_one(l));
    })
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status, Status::Exited(0), "{stdout}");
    assert_eq!(served.unwrap().join().unwrap(), "hello\n");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines, ["HELLO", "lo"], "{stdout}");
    assert!(
        host.accept().is_err(),
        "the box reached the host's loopback"
    );
}

#[test]
fn without_a_server_the_proxy_box_is_refused_and_cannot_take_the_port() {
    let ws = tempfile::tempdir().unwrap();
    // The caller drops the listener: a connection to it is refused, never hangs.
    let script = "(echo x > /dev/tcp/127.0.0.1/3128) 2>/dev/null && echo connected || echo refused";
    let out = sandbox::run(&spec(script, ws.path()), &helper()).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "refused\n");
    // While the caller holds it, the box cannot bind the port itself.
    let script = "python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 3128))' \
                  2>&1 | tail -n 1";
    let mut held = Vec::new();
    let out =
        sandbox::run_with_listener(&spec(script, ws.path()), &helper(), &mut |l| held.push(l))
            .unwrap();
    assert_eq!(held.len(), 1);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Address already in use"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_spawned_proxy_box_hands_out_its_listener() {
    let ws = tempfile::tempdir().unwrap();
    let mut s = spec(
        "exec 3<>/dev/tcp/127.0.0.1/3128 && echo ping >&3 && head -c 5 <&3",
        ws.path(),
    );
    s.io = Io::Inherit;
    let mut b = sandbox::spawn(&s, &helper()).unwrap();
    let served = answer_one(b.listener.take().unwrap());
    let mut out = String::new();
    b.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert_eq!(out, "PING\n");
    assert_eq!(served.join().unwrap(), "ping\n");
    assert_eq!(
        b.stop_after(std::time::Duration::from_secs(5)).unwrap(),
        Status::Exited(0)
    );
}

#[test]
fn a_box_cannot_both_share_the_network_and_have_the_proxy() {
    let ws = tempfile::tempdir().unwrap();
    let mut s = spec("true", ws.path());
    s.network = true;
    assert!(sandbox::run(&s, &helper()).is_err());
}
