#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Kill -9 at random moments loses nothing that was acknowledged.
//!
//! The parent re-runs this test binary with `CHILD_DIR` set, selecting `crash_child`, which
//! raises taint, records approvals and appends audit records in a loop, printing an `ACK`
//! line for each only after the call returned. The parent SIGKILLs it at a random moment,
//! then reopens the state and checks every acknowledged item is there and the log verifies.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use gate::audit::{self, AuditLog, Event};
use gate::store::{ApprovalReason, ApprovalState, NewApproval, Store, StoredTaint};
use proto::{CallId, DataClass, SessionId, Timestamp};

const CHILD_DIR: &str = "GATE_CRASH_CHILD_DIR";
const CHILD_TAG: &str = "GATE_CRASH_CHILD_TAG";
/// Kills per run; `GATE_CRASH_ROUNDS` sets another number (e.g. 500 for a longer soak).
const ROUNDS: usize = 20;

fn rounds() -> usize {
    std::env::var("GATE_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ROUNDS)
}

/// The child's loop. Does nothing in a normal test run.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let tag = std::env::var(CHILD_TAG).unwrap();
    let mut store = Store::open(&dir).unwrap();
    let (mut log, _) = AuditLog::open(&dir).unwrap();
    for n in 0u64.. {
        let session = SessionId::new(format!("r{tag}-{n}")).unwrap();
        let untrusted = n % 2 == 0;
        store
            .raise_taint(&session, DataClass::Secret, untrusted, Timestamp(n))
            .unwrap();
        println!("ACK taint {session} {untrusted}");
        if n % 3 == 0 {
            let ap = store
                .create_approval(NewApproval {
                    session: session.clone(),
                    call: CallId(n),
                    tool: "run".into(),
                    arguments: format!("{{\"n\":{n}}}"),
                    reason: ApprovalReason::GrantAsk,
                    created: Timestamp(n),
                    expires: Timestamp(n + 300),
                    files: Vec::new(),
                })
                .unwrap();
            println!("ACK approval {}", ap.id);
        }
        let event = |i: u64| Event::AuthFailed {
            socket: format!("round-{tag}"),
            uid: None,
            detail: format!("{n}.{i}"),
        };
        let records = if n % 4 == 0 {
            log.append_batch((0..4).map(|i| (Timestamp(n), event(i))))
                .unwrap()
        } else {
            vec![log.append(Timestamp(n), event(0)).unwrap()]
        };
        for r in records {
            println!("ACK audit {} {}", r.seq, r.hash);
        }
    }
}

fn random_below(n: u64) -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).unwrap();
    u64::from_le_bytes(b) % n
}

/// Runs one child until its first acknowledgement, kills it at a random moment after, and
/// returns every line it printed.
fn run_and_kill(dir: &Path, round: usize) -> Vec<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR, dir)
        .env(CHILD_TAG, round.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (first_tx, first_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut first = Some(first_tx);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("ACK ")
                && let Some(tx) = first.take()
            {
                let _ = tx.send(());
            }
            lines.push(line);
        }
        lines
    });
    first_rx.recv_timeout(Duration::from_secs(20)).unwrap();
    std::thread::sleep(Duration::from_micros(random_below(30_000)));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap()
}

#[test]
fn sigkill_at_random_moments_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let mut taints: Vec<(SessionId, bool)> = Vec::new();
    let mut approvals: Vec<String> = Vec::new();
    let mut audits: HashMap<u64, String> = HashMap::new();
    let rounds = rounds();
    for round in 0..rounds {
        for line in run_and_kill(dir.path(), round) {
            let parts: Vec<&str> = line.split(' ').collect();
            match parts.as_slice() {
                ["ACK", "taint", s, u] => {
                    taints.push((SessionId::new(*s).unwrap(), *u == "true"));
                }
                ["ACK", "approval", id] => approvals.push((*id).to_string()),
                ["ACK", "audit", seq, hash] => {
                    audits.insert(seq.parse().unwrap(), (*hash).to_string());
                }
                _ => {}
            }
        }
        // Reopen as a restarted gate would: the log's torn tail (if any) is cut.
        let (log, _repaired) = AuditLog::open(dir.path()).unwrap();
        let ok = audit::verify(log.path()).unwrap();
        assert_eq!(ok.last_hash, log.last_hash());
    }
    assert!(!taints.is_empty() && !audits.is_empty() && !approvals.is_empty());

    let store = Store::open(dir.path()).unwrap();
    for (s, untrusted) in &taints {
        assert_eq!(
            store.taint(s).unwrap(),
            StoredTaint {
                class: DataClass::Secret,
                untrusted: *untrusted
            },
            "acknowledged taint of {s} lost"
        );
    }
    for id in &approvals {
        let ap = store
            .approval(id)
            .unwrap()
            .unwrap_or_else(|| panic!("approval {id} lost"));
        assert_eq!(ap.state, ApprovalState::Pending);
    }
    let path = dir.path().join(audit::AUDIT_FILE);
    let ok = audit::verify(&path).unwrap();
    let records = audit::tail(&path, usize::MAX).unwrap();
    assert_eq!(records.len() as u64, ok.records);
    let by_seq: HashMap<u64, String> = records
        .into_iter()
        .map(|r| (r.seq, r.hash.to_hex()))
        .collect();
    for (seq, hash) in &audits {
        assert_eq!(
            by_seq.get(seq),
            Some(hash),
            "acknowledged audit record {seq} lost"
        );
    }
    eprintln!(
        "{rounds} kills: {} taints, {} approvals, {} audit records acknowledged and found",
        taints.len(),
        approvals.len(),
        audits.len()
    );
}
