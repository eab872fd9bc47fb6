//! `kill -9` of the gate at any instant loses nothing it acknowledged (docs/spec.md §1, §6).
//!
//! Round after round, a gate process serves clients that read a confidential file (each in
//! its own session) and ask for approvals, and is killed with SIGKILL at a random moment.
//! Afterwards, every result a client received must have its session's taint on disk, every
//! approval a client was told about must still exist with a state, and the audit log must
//! verify. `BOXMAKER_KILL_ROUNDS` sets the number of kills (default 200).

// Test code: a failed unwrap or panic here is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proto::{CallId, DataClass, Envelope, Message, SessionId, ToolRequest, ToolResponse};
use testkit::Lab;

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

fn setup() -> (Lab, PathBuf) {
    let lab = Lab::temp(BIN);
    lab.write("notes/plan.txt", "secret\n");
    lab.write_config(
        r#"
[gate]
state = "state"
approval_ttl = 3600

[[mount]]
host = "notes"
at = "/data/notes"
class = "confidential"

[[tool]]
name = "read_file"
builtin = "read_file"

[[tool]]
name = "run"
builtin = "run"

[[grant]]
tool = "read_file"
effect = "allow"

[[grant]]
tool = "run"
effect = "ask"
"#,
    );
    // The tester's own config, trusted as written (docs/spec.md §6, "Whose config").
    lab.trust_config();
    let config = lab.config();
    (lab, config)
}

fn start_gate(config: &Path) -> Child {
    Command::new(BIN)
        .args(["__gate", "--config"])
        .arg(config)
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// One request on its own connection; `None` when the gate went away first.
fn call(
    sock: &Path,
    session: &str,
    tool: &str,
    args: &str,
    on_pending: &mut dyn FnMut(&str),
) -> Option<ToolResponse> {
    let stream = UnixStream::connect(sock).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let req = ToolRequest {
        session: SessionId::new(session).unwrap(),
        call: CallId(1),
        tool: tool.into(),
        arguments: args.into(),
    };
    let mut w = BufWriter::new(&stream);
    proto::write_frame(&mut w, &Envelope::request(1, req)).ok()?;
    w.flush().ok()?;
    drop(w);
    // The first answer is either the final one or a `pending_approval` (then the approval is
    // acknowledged and the client stops waiting for a person).
    let env = proto::read_frame(&mut BufReader::new(&stream)).ok()?;
    match env.msg {
        Message::ToolResponse(ToolResponse::PendingApproval { approval, .. }) => {
            on_pending(&approval);
            None
        }
        Message::ToolResponse(resp) if env.r#final => Some(resp),
        _ => None,
    }
}

#[derive(Default)]
struct Acked {
    /// Sessions whose confidential result a client received.
    tainted: Vec<String>,
    /// Approvals a client was told about.
    approvals: Vec<String>,
}

#[test]
fn test_kill_9_of_the_gate_under_load_loses_nothing_acknowledged() {
    let rounds: usize = std::env::var("BOXMAKER_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let (dir, config) = setup();
    let state = dir.path("state");
    let sock = state.join("agent.sock");
    let acked = Arc::new(Mutex::new(Acked::default()));
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let started = Instant::now();
    for round in 0..rounds {
        let mut gate = start_gate(&config);
        // Wait until this gate answers (the last one's socket may linger until rebound).
        let t = Instant::now();
        while call(&sock, "probe", "nothing", "{}", &mut |_| {}).is_none() {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "round {round}: gate never served"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let in_round = Arc::new(AtomicUsize::new(0));
        let clients: Vec<_> = (0..3)
            .map(|c| {
                let (sock, acked, in_round) = (sock.clone(), acked.clone(), in_round.clone());
                std::thread::spawn(move || {
                    for k in 0.. {
                        let session = format!("r{round}-c{c}-k{k}");
                        let tool_call = if c == 2 {
                            call(&sock, &session, "run", r#"{"argv":["true"]}"#, &mut |id| {
                                acked.lock().unwrap().approvals.push(id.to_string());
                            })
                        } else {
                            call(
                                &sock,
                                &session,
                                "read_file",
                                r#"{"path":"/data/notes/plan.txt"}"#,
                                &mut |_| {},
                            )
                        };
                        match tool_call {
                            Some(ToolResponse::Result { class, .. }) => {
                                assert_eq!(class, DataClass::Confidential);
                                acked.lock().unwrap().tainted.push(session);
                                in_round.fetch_add(1, Ordering::SeqCst);
                            }
                            Some(_) => {}
                            None if c == 2 => {}
                            None => return,
                        }
                        if k > 200 {
                            return;
                        }
                    }
                })
            })
            .collect();
        // Once this gate has acknowledged something (so the round is under load however slow
        // the machine is), kill it at a random instant within the next 30 ms.
        let t = Instant::now();
        while in_round.load(Ordering::SeqCst) == 0 && t.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(1));
        }
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_micros(seed % 30_000));
        gate.kill().unwrap();
        gate.wait().unwrap();
        for c in clients {
            c.join().unwrap();
        }
    }
    // Every acknowledged thing is on disk: ask a fresh gate (through the CLI).
    let acked = acked.lock().unwrap();
    assert!(
        acked.tainted.len() >= rounds,
        "too little load to mean anything: {} results in {rounds} rounds",
        acked.tainted.len()
    );
    let sessions = Command::new(BIN)
        .args(["sessions", "--json", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        sessions.status.success(),
        "{}",
        String::from_utf8_lossy(&sessions.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&sessions.stdout).unwrap();
    let items = v["body"]["items"].as_array().unwrap();
    for s in &acked.tainted {
        let row = items
            .iter()
            .find(|i| i["id"] == s.as_str())
            .unwrap_or_else(|| panic!("session {s} got a result but has no recorded taint"));
        assert_eq!(row["class"], "confidential", "session {s}");
    }
    let approvals = Command::new(BIN)
        .args(["approvals", "--all", "--json", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&approvals.stdout).unwrap();
    let items = v["body"]["items"].as_array().unwrap();
    for id in &acked.approvals {
        assert!(
            items.iter().any(|i| i["id"] == id.as_str()),
            "approval {id} was announced but is gone"
        );
    }
    let verify = Command::new(BIN)
        .args(["audit", "verify", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    eprintln!(
        "{rounds} kills in {:.1} s: {} acknowledged results, {} acknowledged approvals, all on disk; {}",
        started.elapsed().as_secs_f64(),
        acked.tainted.len(),
        acked.approvals.len(),
        String::from_utf8_lossy(&verify.stdout).trim()
    );
}
