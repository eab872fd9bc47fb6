#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Issue 19 item 7: the anchored audit log. A real gate signs checkpoints of its head and
//! hands them to its witnesses; then each attack rewrites `audit.log` the way someone who
//! can write the state directory would — recomputing every seq, prev and hash after the
//! change, so that the chain alone calls the log intact (each test checks that first: an
//! attack the chain already sees would prove nothing here) — and the log is verified against
//! the checkpoints taken before.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{CONFIG, H, eventually};
use gate::anchor::tree::{Tree, leaf_hash};
use gate::anchor::witness::{self, Delivered, Witness};
use gate::anchor::{self, AnchorError, AuditKey, Checkpoint, Given, KeyError, PublicKey};
use gate::audit::{self, Digest, Event, Record, Verdict};
use proto::ToolResponse;
use proto::control::{ControlAnswer, ControlOp};

// ---------------------------------------------------------------------------------------------
// Harness

/// A gate whose `[audit]` table is `audit` (paths relative to its temporary directory).
fn gate_with(audit: &str) -> H {
    H::with_fake_runner(&format!("{CONFIG}\n[audit]\njournal = false\n{audit}\n"))
}

/// Calls that leave allowed and denied decisions in the log: `n` rounds of an allowed
/// `read` and a denied `banned`.
fn traffic(h: &H, n: u64) {
    for i in 0..n {
        let r = h.call(
            "s1",
            2 * i + 1,
            "read",
            &format!(r#"{{"path":"/data/{i}"}}"#),
        );
        assert!(matches!(r, ToolResponse::Result { .. }), "{r:?}");
        let r = h.call("s1", 2 * i + 2, "banned", "{}");
        assert!(matches!(r, ToolResponse::Denied { .. }), "{r:?}");
    }
}

fn log_path(h: &H) -> PathBuf {
    h.state.join(audit::AUDIT_FILE)
}

fn read_records(path: &Path) -> Vec<Record> {
    std::fs::read(path)
        .unwrap()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| Record::parse_line(l).unwrap())
        .collect()
}

/// Numbers the records from 1 and recomputes every `prev` and `hash`: what a forger does
/// after a change, so that the chain holds again.
fn rechain(records: &mut [Record]) {
    let mut prev = Digest::ZERO;
    for (i, r) in records.iter_mut().enumerate() {
        r.seq = i as u64 + 1;
        r.prev = prev;
        r.hash = r.computed_hash().unwrap();
        prev = r.hash;
    }
}

fn write_records(path: &Path, records: &[Record]) {
    let mut bytes = Vec::new();
    for r in records {
        bytes.extend_from_slice(&r.to_line().unwrap());
    }
    std::fs::write(path, bytes).unwrap();
}

/// A smarter forger also drops the log's own `checkpoint` records, which would betray it.
fn strip_checkpoints(records: &mut Vec<Record>) {
    records.retain(|r| !matches!(r.event, Event::Checkpoint { .. }));
}

/// The checkpoints a witness file holds.
fn witnessed(path: &Path) -> Vec<Given> {
    let text = std::fs::read_to_string(path).unwrap();
    Checkpoint::parse_all(&text, "witness")
        .unwrap()
        .into_iter()
        .map(|(line, checkpoint)| Given {
            origin: format!("line {line} of the witness file"),
            checkpoint,
        })
        .collect()
}

fn sizes(given: &[Given]) -> Vec<u64> {
    given.iter().map(|g| g.checkpoint.tree_size).collect()
}

/// A gate that ran `rounds` of traffic with a checkpoint every 4 records and stopped; its
/// witness file's checkpoints and its public key.
fn anchored_log(rounds: u64) -> (H, Vec<Given>, PublicKey) {
    let h = gate_with("checkpoint_every = 4\nwitness_file = \"witness\"");
    traffic(&h, rounds);
    h.gate.shutdown(Duration::from_secs(10));
    let given = witnessed(&h.dir.path().join("witness"));
    assert!(given.len() >= 3, "{:?}", sizes(&given));
    let key = h.gate.audit_public_key().clone();
    (h, given, key)
}

/// The attack must leave a chain that holds, or the test would prove nothing about the
/// anchor.
fn assert_chain_holds(path: &Path, attack: &str) {
    let chain = audit::verify(path);
    assert!(
        chain.is_ok(),
        "{attack}: the chain already sees it: {chain:?}"
    );
}

/// `err` says the log does not extend a checkpoint, naming a range of records that holds
/// `first` (the first record the forger changed) and starts after a checkpoint it matched.
fn assert_differs_at(err: &AnchorError, first: u64, checkpoints: &[u64]) {
    let AnchorError::Differs {
        from, tree_size, ..
    } = err
    else {
        panic!("expected a root that differs, got {err}");
    };
    assert!(
        *from <= first && first <= *tree_size,
        "the change at {first} is not in {from}..={tree_size}: {err}"
    );
    let matched_before = checkpoints.iter().copied().filter(|s| *s < first).max();
    assert_eq!(*from, matched_before.unwrap_or(0) + 1, "{err}");
    let first_after = checkpoints.iter().copied().filter(|s| *s >= first).min();
    assert_eq!(Some(*tree_size), first_after, "{err}");
    assert_eq!(err.first_bad(), Some(*from));
}

// ---------------------------------------------------------------------------------------------
// The tree

#[test]
fn the_tree_matches_the_rfc_6962_reference_roots() {
    // The inputs and tree heads every Certificate Transparency implementation tests against.
    let leaves: [&[u8]; 8] = [
        b"",
        b"\x00",
        b"\x10",
        b"\x20\x21",
        b"\x30\x31",
        b"\x40\x41\x42\x43",
        b"\x50\x51\x52\x53\x54\x55\x56\x57",
        b"\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f",
    ];
    let roots = [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    ];
    let mut tree = Tree::new();
    assert_eq!(tree.root().to_hex(), roots[0]);
    for (i, leaf) in leaves.iter().enumerate() {
        tree.push(leaf);
        assert_eq!(tree.root().to_hex(), roots[i + 1], "size {}", i + 1);
    }
    assert_eq!(leaf_hash(b"").to_hex(), roots[1]);
}

// ---------------------------------------------------------------------------------------------
// Signing and witnessing

#[test]
fn the_gate_signs_every_n_records_and_every_witness_gets_each_checkpoint() {
    // The command runs wherever the gate runs: its target is absolute.
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("command-witness");
    let h = gate_with(&format!(
        "checkpoint_every = 4\nwitness_file = \"witness\"\n\
         witness_command = [\"sh\", \"-c\", \"cat >> {}\"]",
        target.display()
    ));
    traffic(&h, 6);
    let witness = h.dir.path().join("witness");
    eventually("three checkpoints witnessed", || {
        std::fs::read_to_string(&witness).is_ok_and(|t| t.lines().count() >= 3)
    });
    h.gate.shutdown(Duration::from_secs(10));
    let given = witnessed(&witness);
    let key = h.gate.audit_public_key().clone();
    // Each is signed by the gate's key, and the log holds the same checkpoints as records,
    // each right after the last record it covers.
    let records = read_records(&log_path(&h));
    let in_log: Vec<Checkpoint> = records
        .iter()
        .filter_map(|r| {
            let cp = r.event.as_checkpoint(r.time)?;
            assert_eq!(cp.tree_size, r.seq - 1);
            assert_eq!(cp.last_hash, r.prev);
            Some(cp)
        })
        .collect();
    assert_eq!(
        given
            .iter()
            .map(|g| g.checkpoint.clone())
            .collect::<Vec<_>>(),
        in_log
    );
    for g in &given {
        assert!(key.signed(&g.checkpoint), "{}", g.origin);
    }
    // Once 4 records wait, at the end of the write that brought them: a call's request
    // and decision are one write, so never more than 5 records go unanchored.
    let mut since = 0;
    for r in &records {
        match r.event {
            Event::Checkpoint { .. } => since = 0,
            _ => since += 1,
        }
        assert!(
            since <= 5,
            "record {}: {since} records without a checkpoint",
            r.seq
        );
    }
    assert!(sizes(&given).contains(&5), "{:?}", sizes(&given));
    // The last record is the shutdown's checkpoint: nothing is left unanchored.
    assert!(matches!(
        records.last().unwrap().event,
        Event::Checkpoint { .. }
    ));
    // The command witness got the same lines.
    eventually("the command witness has them all", || {
        std::fs::read_to_string(&target)
            .is_ok_and(|t| t == std::fs::read_to_string(&witness).unwrap())
    });
    // And the log extends every one of them.
    let ok = anchor::verify(&log_path(&h), &given, Some(&key)).unwrap();
    assert_eq!(ok.given, given.len() as u64);
    assert_eq!(ok.in_log, in_log.len() as u64);
    assert_eq!(ok.records, records.len() as u64);
    assert_eq!(
        ok.newest.unwrap().checkpoint.tree_size,
        records.len() as u64 - 1
    );
    // The state directory keeps the latest, for `boxmaker audit checkpoint`.
    assert_eq!(
        witness::read_latest(&h.state).unwrap().as_ref(),
        in_log.last()
    );
}

#[test]
fn a_checkpoint_comes_after_checkpoint_secs_and_an_idle_gate_signs_nothing_more() {
    let h = gate_with("checkpoint_secs = 1\nwitness_file = \"witness\"");
    traffic(&h, 1);
    let count =
        || std::fs::read_to_string(h.dir.path().join("witness")).map_or(0, |t| t.lines().count());
    eventually("a checkpoint after a second", || count() == 1);
    // Nothing came since: three more periods pass without another checkpoint.
    std::thread::sleep(Duration::from_millis(3_500));
    assert_eq!(count(), 1);
    let last = read_records(&log_path(&h)).pop().unwrap();
    assert!(matches!(last.event, Event::Checkpoint { .. }));
    // New records: a new checkpoint follows.
    traffic(&h, 1);
    eventually("a second checkpoint", || count() == 2);
}

#[test]
fn shutdown_signs_what_came_since_the_last_checkpoint_and_only_that() {
    let h = gate_with("witness_file = \"witness\"");
    traffic(&h, 2);
    let before = read_records(&log_path(&h)).len() as u64;
    let cp = h.gate.shutdown(Duration::from_secs(10)).unwrap();
    assert_eq!(cp.tree_size, before);
    assert_eq!(sizes(&witnessed(&h.dir.path().join("witness"))), [before]);
    // Nothing new since: no second checkpoint.
    assert!(h.gate.shutdown(Duration::from_secs(10)).is_none());
    assert_eq!(read_records(&log_path(&h)).len() as u64, before + 1);
}

#[test]
fn a_reopened_log_continues_its_tree() {
    let (h, _, key) = anchored_log(3);
    // The gate stops; another opens the same state directory and signs on.
    let H {
        dir, gate, state, ..
    } = h;
    drop(gate);
    let base = dir.path().to_path_buf();
    let (log, _) = audit::AuditLog::open(&state).unwrap();
    let whole = anchor::verify(&state.join(audit::AUDIT_FILE), &[], Some(&key)).unwrap();
    assert_eq!(log.head().root, whole.root);
    assert_eq!(log.head().tree_size, whole.records);
    assert!(
        !log.unanchored(),
        "the last record is the shutdown's checkpoint"
    );
    drop(log);
    let clock = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(common::T0));
    let (gate_end, runner_end) = std::os::unix::net::UnixStream::pair().unwrap();
    common::spawn_fake_runner(runner_end);
    let link = gate::RunnerLink::new(gate_end.try_clone().unwrap(), gate_end);
    let text = format!(
        "{CONFIG}\n[audit]\njournal = false\ncheckpoint_every = 4\nwitness_file = \"witness\"\n"
    );
    let again = common::start_gate(&base, &text, &clock, Box::new(link));
    assert_eq!(again.audit_public_key(), &key, "the same key, read back");
    let r = again.call(
        common::req("s2", 1, "read", r#"{"path":"/x"}"#),
        &mut |_| {},
    );
    assert!(matches!(r, ToolResponse::Result { .. }));
    again.shutdown(Duration::from_secs(10)).unwrap();
    let given = witnessed(&base.join("witness"));
    let ok = anchor::verify(&state.join(audit::AUDIT_FILE), &given, Some(&key)).unwrap();
    assert_eq!(ok.given, given.len() as u64);
}

#[test]
fn a_failing_witness_is_audited_and_the_gate_goes_on() {
    let h = gate_with(
        "checkpoint_every = 2\nwitness_file = \"no-such-dir/witness\"\n\
         witness_command = [\"sh\", \"-c\", \"echo the backup disk is gone >&2; exit 3\"]",
    );
    traffic(&h, 2);
    eventually("both failures audited", || {
        let text = h.audit_text();
        text.contains(r#""event":"witness_failed""#)
            && text.contains("the backup disk is gone")
            && text.contains("no-such-dir/witness")
    });
    let failed: Vec<(String, String)> = read_records(&log_path(&h))
        .into_iter()
        .filter_map(|r| match r.event {
            Event::WitnessFailed {
                witness, detail, ..
            } => Some((witness, detail)),
            _ => None,
        })
        .collect();
    assert!(
        failed
            .iter()
            // `sh` as `PATH` found it when the config was read (config::read::host_command).
            .any(|(w, d)| w.starts_with("command ")
                && w.contains("sh -c echo the backup disk")
                && d.contains("exited with exit status: 3")),
        "{failed:?}"
    );
    assert!(
        failed
            .iter()
            .any(|(w, d)| w.starts_with("file ") && d.contains("could not open it")),
        "{failed:?}"
    );
    // Calls still run, and the failures themselves are anchored by a later checkpoint.
    traffic(&h, 1);
    h.gate.shutdown(Duration::from_secs(10));
    let key = h.gate.audit_public_key().clone();
    let ok = anchor::verify(&log_path(&h), &[], Some(&key)).unwrap();
    assert!(ok.in_log >= 2);
}

#[test]
fn the_journal_gets_a_native_message_and_no_journal_is_no_failure() {
    let dir = tempfile::tempdir().unwrap();
    let key = AuditKey::load_or_create(&dir.path().join("k")).unwrap();
    let cp = key.sign(
        gate::anchor::Head {
            tree_size: 1,
            root: leaf_hash(b"x"),
            last_seq: 1,
            last_hash: Digest::of(b"y"),
        },
        proto::Timestamp(5),
    );
    let socket = dir.path().join("journal.socket");
    let journal = std::os::unix::net::UnixDatagram::bind(&socket).unwrap();
    assert_eq!(
        Witness::Journal(socket.clone()).deliver(&cp),
        Ok(Delivered::Taken)
    );
    let mut buf = [0u8; 4096];
    let n = journal.recv(&mut buf).unwrap();
    let text = std::str::from_utf8(&buf[..n]).unwrap();
    let fields: Vec<&str> = text.lines().collect();
    assert!(
        fields.contains(&format!("MESSAGE={}", cp.to_line()).as_str()),
        "{text}"
    );
    assert!(
        fields.contains(&"SYSLOG_IDENTIFIER=boxmaker-audit"),
        "{text}"
    );
    assert!(fields.contains(&"BOXMAKER_TREE_SIZE=1"), "{text}");
    // Where no journal runs there is no socket, and nothing to fail.
    assert_eq!(
        Witness::Journal(dir.path().join("none")).deliver(&cp),
        Ok(Delivered::Absent)
    );
    // A socket nobody reads any more is a failure, said as one.
    drop(journal);
    assert!(Witness::Journal(socket).deliver(&cp).is_err());
}

// ---------------------------------------------------------------------------------------------
// The attacks

#[test]
fn a_cut_tail_is_found_against_an_earlier_checkpoint() {
    let (h, given, key) = anchored_log(6);
    let path = log_path(&h);
    let mut records = read_records(&path);
    let total = records.len() as u64;
    // The last 3 records go: the shutdown's checkpoint and two before it.
    records.truncate(records.len() - 3);
    write_records(&path, &records);
    assert_chain_holds(&path, "the last 3 records cut");
    let err = anchor::verify(&path, &given, Some(&key)).unwrap_err();
    let AnchorError::Cut {
        records: left,
        tree_size,
        ..
    } = &err
    else {
        panic!("expected a cut, got {err}");
    };
    assert_eq!(*left, total - 3);
    assert_eq!(
        *tree_size,
        total - 1,
        "the shutdown's checkpoint covers all but itself"
    );
    assert_eq!(err.first_bad(), Some(total - 2));
    assert!(
        err.to_string()
            .contains(&format!("the first record missing is seq {}", total - 2)),
        "{err}"
    );
    // Cutting whole rounds, down to just after an earlier checkpoint, is found the same.
    let earlier = given[1].checkpoint.tree_size;
    records.truncate(earlier as usize + 1);
    write_records(&path, &records);
    assert_chain_holds(&path, "cut back to an earlier checkpoint");
    let err = anchor::verify(&path, &given, Some(&key)).unwrap_err();
    assert!(matches!(err, AnchorError::Cut { .. }), "{err}");
    assert_eq!(err.first_bad(), Some(earlier + 2));
}

#[test]
fn a_rewritten_record_with_its_chain_recomputed_is_found() {
    let (h, given, key) = anchored_log(6);
    let path = log_path(&h);
    let mut records = read_records(&path);
    // The forger turns the third `banned` call's denial into an allow.
    let k = records
        .iter()
        .filter(|r| {
            matches!(
                &r.event,
                Event::Decision {
                    decision: Verdict::Deny,
                    ..
                }
            )
        })
        .nth(2)
        .unwrap()
        .seq;
    let i = k as usize - 1;
    if let Event::Decision {
        decision, reason, ..
    } = &mut records[i].event
    {
        *decision = Verdict::Allow;
        *reason = None;
    }
    rechain(&mut records);
    write_records(&path, &records);
    assert_chain_holds(&path, &format!("record {k} rewritten, chain recomputed"));
    // The log's own checkpoints already show it...
    let err = anchor::verify(&path, &[], Some(&key)).unwrap_err();
    assert_differs_at(&err, k, &sizes(&given));
    // ...and with those stripped too, the witness's checkpoints do.
    strip_checkpoints(&mut records);
    rechain(&mut records);
    write_records(&path, &records);
    assert_chain_holds(&path, "rewritten, checkpoints stripped");
    assert!(
        anchor::verify(&path, &[], Some(&key)).is_ok(),
        "nothing left in the log to see it"
    );
    let err = anchor::verify(&path, &given, Some(&key)).unwrap_err();
    // Stripping shifted every record after the first checkpoint: that is the first change.
    let first = given[0].checkpoint.tree_size + 1;
    assert_differs_at(&err, first, &sizes(&given));
}

#[test]
fn two_records_swapped_with_the_chain_recomputed_is_found() {
    let (h, given, key) = anchored_log(6);
    let path = log_path(&h);
    let mut records = read_records(&path);
    // Two records of the same kind, far apart: a later call's request moved before an
    // earlier one's.
    let requests: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.event, Event::Request { .. }))
        .map(|(i, _)| i)
        .collect();
    let (a, b) = (requests[3], requests[7]);
    let (ea, eb) = (records[a].event.clone(), records[b].event.clone());
    records[a].event = eb;
    records[b].event = ea;
    rechain(&mut records);
    write_records(&path, &records);
    assert_chain_holds(&path, "two requests swapped");
    let err = anchor::verify(&path, &given, Some(&key)).unwrap_err();
    assert_differs_at(&err, a as u64 + 1, &sizes(&given));
}

#[test]
fn two_logs_spliced_with_the_chain_recomputed_are_found() {
    let (a, given, key) = anchored_log(6);
    let (b, _, _) = anchored_log(6);
    let path = log_path(&a);
    // Log a's first 10 records, then log b's from its 11th on.
    let mut records = read_records(&path);
    let at = 10;
    records.truncate(at);
    records.extend(read_records(&log_path(&b)).into_iter().skip(at));
    rechain(&mut records);
    write_records(&path, &records);
    assert_chain_holds(&path, "two logs spliced");
    // Log b's checkpoint records are signed by b's key, not a's.
    let err = anchor::verify(&path, &[], Some(&key)).unwrap_err();
    assert!(
        matches!(&err, AnchorError::Forged { origin, .. } if origin.contains("checkpoint record")),
        "{err}"
    );
    // Without them, a's witness finds the splice.
    strip_checkpoints(&mut records);
    rechain(&mut records);
    write_records(&path, &records);
    assert_chain_holds(&path, "spliced, checkpoints stripped");
    let err = anchor::verify(&path, &given, Some(&key)).unwrap_err();
    let first = given[0].checkpoint.tree_size + 1;
    assert_differs_at(&err, first.min(at as u64 + 1), &sizes(&given));
}

#[test]
fn a_forged_checkpoint_is_refused() {
    let (h, mut given, key) = anchored_log(4);
    let path = log_path(&h);
    // The forger rewrites the log, then the witness's latest checkpoint to match it.
    let mut records = read_records(&path);
    records.truncate(records.len() - 4);
    strip_checkpoints(&mut records);
    rechain(&mut records);
    write_records(&path, &records);
    let mut tree = Tree::new();
    for r in &records {
        let line = r.to_line().unwrap();
        tree.push(line.strip_suffix(b"\n").unwrap());
    }
    let last = given.last_mut().unwrap();
    last.checkpoint.tree_size = records.len() as u64;
    last.checkpoint.last_seq = records.len() as u64;
    last.checkpoint.root = tree.root();
    last.checkpoint.last_hash = records.last().unwrap().hash;
    let forged = vec![last.clone()];
    let err = anchor::verify(&path, &forged, Some(&key)).unwrap_err();
    assert!(
        matches!(&err, AnchorError::Forged { why, .. } if why.contains("signature does not verify")),
        "{err}"
    );
    assert_eq!(err.first_bad(), None);
    // One signed by a key of the forger's own names another key, and is refused too.
    let dir = tempfile::tempdir().unwrap();
    let theirs = AuditKey::load_or_create(&dir.path().join("theirs")).unwrap();
    let signed = Given {
        origin: "the forger's checkpoint".into(),
        checkpoint: theirs.sign(forged[0].checkpoint.head(), forged[0].checkpoint.time),
    };
    let err = anchor::verify(&path, std::slice::from_ref(&signed), Some(&key)).unwrap_err();
    assert!(
        matches!(&err, AnchorError::Forged { why, .. } if why.contains("names the key")),
        "{err}"
    );
    // And with no key to check them by, no checkpoint is taken on trust.
    let err = anchor::verify(&path, &[signed], None).unwrap_err();
    assert!(matches!(err, AnchorError::NoKey), "{err}");
}

#[test]
fn a_checkpoint_record_moved_in_the_log_is_found() {
    let (h, _, key) = anchored_log(4);
    let path = log_path(&h);
    let mut records = read_records(&path);
    let at = records
        .iter()
        .position(|r| matches!(r.event, Event::Checkpoint { .. }))
        .unwrap();
    let cp = records.remove(at);
    records.insert(at + 1, cp);
    rechain(&mut records);
    write_records(&path, &records);
    assert_chain_holds(&path, "a checkpoint record moved one down");
    let err = anchor::verify(&path, &[], Some(&key)).unwrap_err();
    assert!(matches!(err, AnchorError::Misplaced { .. }), "{err}");
    assert_eq!(err.first_bad(), Some(at as u64 + 2));
}

// ---------------------------------------------------------------------------------------------
// The key

#[test]
fn the_key_is_made_0600_beside_the_state_directory_and_read_back() {
    let h = gate_with("");
    let path = h.dir.path().join("state.audit-key");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let key = AuditKey::load(&path).unwrap();
    assert_eq!(key.public(), h.gate.audit_public_key());
    assert_eq!(&anchor::read_public(&path).unwrap(), key.public());
    assert_eq!(
        PublicKey::from_hex(&key.public().to_hex()).unwrap(),
        *key.public()
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(&format!("public {}", key.public().to_hex())),
        "{text}"
    );
}

#[test]
fn a_key_others_can_read_or_a_damaged_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.key");
    let key = AuditKey::load_or_create(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = AuditKey::load_or_create(&path).unwrap_err();
    assert!(
        matches!(err, KeyError::Exposed { mode: 0o644, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("chmod 600"), "{err}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    // A public line that is not the secret's.
    let other = AuditKey::load_or_create(&dir.path().join("other")).unwrap();
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace(&key.public().to_hex(), &other.public().to_hex());
    std::fs::write(&path, text).unwrap();
    let err = AuditKey::load(&path).unwrap_err();
    assert!(matches!(err, KeyError::Malformed { .. }), "{err}");
    std::fs::write(&path, "secret 00\n").unwrap();
    assert!(matches!(
        AuditKey::load(&path),
        Err(KeyError::Malformed { .. })
    ));
}

#[test]
fn the_control_sockets_audit_verify_checks_the_witness_too() {
    let (h, _, _) = anchored_log(3);
    let path = log_path(&h);
    let mut records = read_records(&path);
    let total = records.len() as u64;
    records.truncate(records.len() - 2);
    write_records(&path, &records);
    assert_chain_holds(&path, "the last 2 records cut");
    match h.control(ControlOp::AuditVerify {}) {
        ControlAnswer::AuditVerified {
            first_bad, detail, ..
        } => {
            assert_eq!(first_bad, Some(total - 1), "{detail}");
            assert!(detail.contains("was cut"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// At start (issue 29 item 2)
//
// The attacker writes the state directory's log (and `audit.checkpoint` beside it), not the
// key beside the state directory nor the witness file outside it. What they would do with a
// gate that opens whatever log it finds:
// - cut the tail at a line boundary (the call that sent the data out goes), then let any
//   client start a gate: it appends to the cut log, signs a checkpoint of it, replaces
//   `audit.checkpoint` and hands the witnesses a checkpoint that vouches for the cut;
// - cut inside a line: the gate's crash repair cuts the partial record off for them, calls
//   it a crash, and destroys the evidence;
// - rewrite a record and recompute the chain (stripping the log's own checkpoints, or not:
//   the gate does not read them at start), and have the forgery signed;
// - put back an older `audit.checkpoint`, or delete it, so that the state directory agrees
//   with the cut;
// - empty the log (or delete it): the gate starts a fresh chain from seq 1;
// - write a `chain_restarted` record of their own, to pass for a person's new chain.
// Each test below does one, on a real gate's log, then starts a gate on it: the gate must
// refuse, name the cut, and leave the log, `audit.checkpoint` and the witness file exactly
// as it found them.

const WITNESSED: &str = "checkpoint_every = 4\nwitness_file = \"witness\"";

/// A gate's directory after `rounds` of traffic with a checkpoint every 4 records, the gate
/// stopped (its last checkpoint signed and witnessed); its witness file's checkpoints and its
/// public key.
struct Stopped {
    dir: tempfile::TempDir,
    state: PathBuf,
    given: Vec<Given>,
    key: PublicKey,
}

fn stopped(rounds: u64) -> Stopped {
    let (h, given, key) = anchored_log(rounds);
    let H {
        dir, gate, state, ..
    } = h;
    drop(gate);
    Stopped {
        dir,
        state,
        given,
        key,
    }
}

impl Stopped {
    fn log(&self) -> PathBuf {
        self.state.join(audit::AUDIT_FILE)
    }
    fn latest(&self) -> PathBuf {
        self.state.join(witness::LATEST_FILE)
    }
    fn witness(&self) -> PathBuf {
        self.dir.path().join("witness")
    }

    /// What the attacker must not get the gate to change: the log, the state directory's
    /// latest checkpoint, the witness file.
    fn evidence(&self) -> [Option<Vec<u8>>; 3] {
        [self.log(), self.latest(), self.witness()].map(|p| std::fs::read(p).ok())
    }

    /// A gate started on this directory, as `Gate::open` starts one (`[audit]` is `audit`).
    fn start(
        &self,
        audit: &str,
    ) -> Result<(Arc<gate::Gate>, Option<audit::Repaired>), gate::GateError> {
        let text = format!("{CONFIG}\n[audit]\njournal = false\n{audit}\n");
        let config = Arc::new(config::parse(&text, "test.toml", self.dir.path()).unwrap());
        let (gate_end, runner_end) = std::os::unix::net::UnixStream::pair().unwrap();
        common::spawn_fake_runner(runner_end);
        let link = gate::RunnerLink::new(gate_end.try_clone().unwrap(), gate_end);
        gate::Gate::open(config, Box::new(link))
    }

    /// Starting a gate is refused, for a reason that says `says`, and changes nothing.
    fn refused(&self, audit: &str, attack: &str, says: &[&str]) -> String {
        let before = self.evidence();
        let err = match self.start(audit) {
            Ok(_) => panic!("{attack}: the gate started on it"),
            Err(e) => e.to_string(),
        };
        for s in says {
            assert!(err.contains(s), "{attack}: {s:?} not in: {err}");
        }
        assert!(
            err.contains(&self.log().display().to_string())
                && err.contains("audit new-chain --reason"),
            "{attack}: {err}"
        );
        assert!(
            self.evidence() == before,
            "{attack}: refusing changed the log, audit.checkpoint or the witness"
        );
        err
    }
}

fn arc_gate(r: (Arc<gate::Gate>, Option<audit::Repaired>)) -> Arc<gate::Gate> {
    r.0
}

use std::sync::Arc;

#[test]
fn a_log_cut_at_a_line_boundary_is_refused_at_start_and_nothing_is_written() {
    let s = stopped(6);
    let pristine = s.evidence();
    let mut records = read_records(&s.log());
    let total = records.len() as u64;
    records.truncate(records.len() - 3);
    write_records(&s.log(), &records);
    assert_chain_holds(&s.log(), "the last 3 records cut");
    // The witness file's latest checkpoint covers all but the shutdown's own record.
    let last_line = s.given.len();
    s.refused(
        WITNESSED,
        "cut 3, witness file",
        &[
            "was cut",
            &format!("it holds {} records", total - 3),
            &format!("the first record missing is seq {}", total - 2),
        ],
    );
    // Without the witness file the state directory's copy of the latest says the same.
    let err = s.refused(
        "",
        "cut 3, audit.checkpoint",
        &["was cut", "audit.checkpoint"],
    );
    assert!(!err.contains(&format!("line {last_line} of")), "{err}");
    // The log as it was starts, and the checkpoint it signs extends the witness's.
    std::fs::write(s.log(), pristine[0].as_ref().unwrap()).unwrap();
    let gate = arc_gate(s.start(WITNESSED).unwrap());
    gate.call(
        common::req("s9", 1, "read", r#"{"path":"/x"}"#),
        &mut |_| {},
    );
    gate.shutdown(Duration::from_secs(10)).unwrap();
    let given = witnessed(&s.witness());
    anchor::verify(&s.log(), &given, Some(&s.key)).unwrap();
}

#[test]
fn a_log_cut_inside_a_line_is_refused_and_left_as_found() {
    let s = stopped(6);
    let bytes = std::fs::read(s.log()).unwrap();
    // Half of the 10th line stays: what a crash mid-write would leave, but 10 records are
    // covered by checkpoints, so no crash left it.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    let cut = (starts[9] + starts[10]) / 2;
    std::fs::write(s.log(), &bytes[..cut]).unwrap();
    s.refused(
        WITNESSED,
        "cut inside line 10",
        &[
            "was cut",
            "it holds 9 records",
            "the first record missing is seq 10",
        ],
    );
    assert_eq!(
        std::fs::read(s.log()).unwrap(),
        &bytes[..cut],
        "the partial record is kept"
    );
}

#[test]
fn a_torn_last_line_after_the_last_checkpoint_still_starts() {
    let s = stopped(3);
    let mut bytes = std::fs::read(s.log()).unwrap();
    let records = read_records(&s.log()).len();
    // A crash mid-write of the next record: never acknowledged, never checkpointed.
    bytes.extend_from_slice(br#"{"seq":99,"time":10001,"event":"request","sess"#);
    std::fs::write(s.log(), &bytes).unwrap();
    let (gate, repaired) = s.start(WITNESSED).unwrap();
    let repaired = repaired.expect("the torn line is reported");
    assert!(
        repaired.to_string().contains("unfinished record"),
        "{repaired}"
    );
    assert_eq!(read_records(&s.log()).len(), records);
    gate.call(
        common::req("s9", 1, "read", r#"{"path":"/x"}"#),
        &mut |_| {},
    );
    gate.shutdown(Duration::from_secs(10)).unwrap();
    anchor::verify(&s.log(), &witnessed(&s.witness()), Some(&s.key)).unwrap();
}

#[test]
fn a_rewritten_record_with_its_chain_recomputed_is_refused_at_start() {
    let s = stopped(6);
    let mut records = read_records(&s.log());
    let k = records
        .iter()
        .position(|r| {
            matches!(
                r.event,
                Event::Decision {
                    decision: Verdict::Deny,
                    ..
                }
            )
        })
        .unwrap();
    if let Event::Decision {
        decision, reason, ..
    } = &mut records[k].event
    {
        *decision = Verdict::Allow;
        *reason = None;
    }
    rechain(&mut records);
    write_records(&s.log(), &records);
    assert_chain_holds(&s.log(), "rewritten");
    // Nothing outside the log: its own checkpoint records contradict it.
    std::fs::remove_file(s.latest()).unwrap();
    s.refused(
        "",
        "rewritten, own records kept",
        &["does not extend its own checkpoint record"],
    );
    // Those stripped too: the witness file's checkpoints do.
    strip_checkpoints(&mut records);
    rechain(&mut records);
    write_records(&s.log(), &records);
    assert_chain_holds(&s.log(), "rewritten and stripped");
    s.refused(
        WITNESSED,
        "rewritten and stripped",
        &["does not extend the checkpoint on line 1 of"],
    );
}

#[test]
fn an_older_or_deleted_audit_checkpoint_does_not_hide_a_cut() {
    let s = stopped(6);
    let pristine = s.evidence();
    // Cut back to the second witnessed checkpoint and its record; audit.checkpoint put back
    // to that one, which the cut log extends.
    let older = &s.given[1];
    let mut records = read_records(&s.log());
    records.truncate(older.checkpoint.tree_size as usize + 1);
    write_records(&s.log(), &records);
    std::fs::write(s.latest(), format!("{}\n", older.checkpoint.to_line())).unwrap();
    let last = s.given.len();
    s.refused(
        WITNESSED,
        "cut, older audit.checkpoint",
        &["was cut", &format!("the checkpoint on line {last} of")],
    );
    std::fs::remove_file(s.latest()).unwrap();
    s.refused(
        WITNESSED,
        "cut, audit.checkpoint deleted",
        &["was cut", &format!("the checkpoint on line {last} of")],
    );
    // One that is not signed by the key says nothing for the log: it is named forged.
    let mut forged = s.given.last().unwrap().checkpoint.clone();
    forged.tree_size += 100;
    forged.last_seq += 100;
    std::fs::write(s.latest(), format!("{}\n", forged.to_line())).unwrap();
    std::fs::write(s.log(), pristine[0].as_ref().unwrap()).unwrap();
    s.refused(
        "",
        "forged audit.checkpoint",
        &[
            "is not signed by the audit key",
            "signature does not verify",
        ],
    );
    // Deleting audit.checkpoint alone hides nothing: the gate starts and writes it again.
    std::fs::remove_file(s.latest()).unwrap();
    let gate = arc_gate(s.start(WITNESSED).unwrap());
    gate.call(
        common::req("s9", 1, "read", r#"{"path":"/x"}"#),
        &mut |_| {},
    );
    let cp = gate.shutdown(Duration::from_secs(10)).unwrap();
    assert_eq!(witness::read_latest(&s.state).unwrap(), Some(cp));
}

#[test]
fn a_log_emptied_or_deleted_is_refused_at_start() {
    let s = stopped(3);
    std::fs::write(s.log(), b"").unwrap();
    s.refused(
        WITNESSED,
        "emptied",
        &[
            "was cut",
            "it holds 0 records",
            "the first record missing is seq 1",
        ],
    );
    std::fs::remove_file(s.log()).unwrap();
    let err = match s.start(WITNESSED) {
        Ok(_) => panic!("the gate started without its log"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("it holds 0 records"), "{err}");
}

#[test]
fn a_log_shorter_than_the_witness_files_latest_line_is_refused() {
    let s = stopped(6);
    // The smarter attacker leaves nothing in the state directory that disagrees: the log
    // cut back to the records the first checkpoint covers (so none of its own checkpoint
    // records is left), audit.checkpoint deleted. Only the witness knows.
    let mut records = read_records(&s.log());
    records.truncate(s.given[0].checkpoint.tree_size as usize);
    write_records(&s.log(), &records);
    std::fs::remove_file(s.latest()).unwrap();
    assert!(anchor::verify(&s.log(), &[], Some(&s.key)).is_ok());
    let last = s.given.len();
    s.refused(
        WITNESSED,
        "cut, stripped, audit.checkpoint deleted",
        &[
            "was cut",
            &format!("the checkpoint on line {last} of {}", s.witness().display()),
        ],
    );
}

#[test]
fn a_gate_refuses_a_log_opened_without_the_check() {
    let s = stopped(3);
    let text = format!("{CONFIG}\n[audit]\njournal = false\n{WITNESSED}\n");
    let config = Arc::new(config::parse(&text, "test.toml", s.dir.path()).unwrap());
    let store = gate::store::Store::open(&s.state).unwrap();
    let (log, _) = audit::AuditLog::open(&s.state).unwrap();
    let err = gate::Gate::new(
        config,
        store,
        log,
        Box::new(common::FakeRunner { hook: None }),
    )
    .unwrap_err();
    assert!(
        matches!(err, gate::GateError::AuditUnchecked { .. }),
        "{err}"
    );
}

#[test]
fn a_checkpoint_is_never_written_over_or_after_one_the_log_does_not_extend() {
    let h = gate_with(WITNESSED);
    traffic(&h, 2);
    h.gate.shutdown(Duration::from_secs(10));
    // A checkpoint signed by this gate's key of a log this one does not extend (another
    // gate's with the same key and witness, a chain before a break): in both places the
    // gate can read back.
    let key = AuditKey::load(&h.dir.path().join("state.audit-key")).unwrap();
    let theirs = key.sign(
        gate::anchor::Head {
            tree_size: 10_000,
            root: Digest::of(b"another log"),
            last_seq: 10_000,
            last_hash: Digest::of(b"its last record"),
        },
        proto::Timestamp(common::T0),
    );
    let line = format!("{}\n", theirs.to_line());
    std::fs::write(h.state.join(witness::LATEST_FILE), &line).unwrap();
    let witness_path = h.dir.path().join("witness");
    let mut w = std::fs::read_to_string(&witness_path).unwrap();
    w.push_str(&line);
    std::fs::write(&witness_path, &w).unwrap();
    traffic(&h, 2);
    eventually("both refusals audited", || {
        h.audit_text()
            .matches("that this log does not extend")
            .count()
            >= 2
    });
    // Neither was replaced or followed.
    assert_eq!(
        witness::read_latest(&h.state).unwrap().as_ref(),
        Some(&theirs)
    );
    assert_eq!(
        witnessed(&witness_path).last().map(|g| &g.checkpoint),
        Some(&theirs)
    );
    let failed: Vec<String> = read_records(&log_path(&h))
        .into_iter()
        .filter_map(|r| match r.event {
            Event::WitnessFailed {
                witness, detail, ..
            } => Some(format!("{witness}: {detail}")),
            _ => None,
        })
        .collect();
    assert!(
        failed
            .iter()
            .any(|f| f.starts_with("state: ") && f.contains("10000 records")),
        "{failed:?}"
    );
    assert!(
        failed
            .iter()
            .any(|f| f.starts_with("file ") && f.contains("not written there")),
        "{failed:?}"
    );
}

#[test]
fn a_new_chain_records_the_break_and_the_gate_starts_on_it() {
    let s = stopped(6);
    let mut records = read_records(&s.log());
    records.truncate(records.len() - 3);
    write_records(&s.log(), &records);
    let cut = std::fs::read(s.log()).unwrap();
    let refusal = s.refused(WITNESSED, "cut", &["was cut"]);
    let text = format!("{CONFIG}\n[audit]\njournal = false\n{WITNESSED}\n");
    let config = config::parse(&text, "test.toml", s.dir.path()).unwrap();
    let key = AuditKey::load(&config.audit.key).unwrap();
    // The gate that runs on the new chain signs by the system clock: so does new-chain.
    let now = || {
        proto::Timestamp(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
        )
    };
    let t = now();
    let chain = anchor::chain::new_chain(
        &config.audit,
        &s.state,
        &key,
        "the tail was cut by mistake",
        "tester",
        t,
    )
    .unwrap();
    assert!(chain.failed.is_empty(), "{:?}", chain.failed);
    // The log as found is kept, byte for byte; the new log's record 1 says what and why.
    let kept = chain.kept.clone().unwrap();
    assert_eq!(std::fs::read(&kept).unwrap(), cut);
    let new = read_records(&s.log());
    assert_eq!(new.len(), 2);
    let Event::ChainRestarted {
        previous,
        bytes,
        sha256,
        refused,
        reason,
        by,
    } = &new[0].event
    else {
        panic!("{:?}", new[0]);
    };
    assert_eq!(previous, kept.file_name().unwrap().to_str().unwrap());
    assert_eq!(
        (*bytes, sha256.as_str()),
        (cut.len() as u64, audit::sha256_hex(&cut).as_str())
    );
    assert!(refusal.starts_with(refused.as_str()), "{refused}");
    assert_eq!(
        (reason.as_str(), by.as_str()),
        ("the tail was cut by mistake", "tester")
    );
    assert_eq!(
        new[1].event.as_checkpoint(new[1].time),
        Some(chain.checkpoint.clone())
    );
    // Every witness that can be read back has it last.
    assert_eq!(
        witness::last_in_file(&s.witness()),
        Some(chain.checkpoint.clone())
    );
    assert_eq!(
        witness::read_latest(&s.state).unwrap(),
        Some(chain.checkpoint.clone())
    );
    // The gate starts on it; verify checks it against its own chain's checkpoints and
    // leaves out the earlier chain's.
    let gate = arc_gate(s.start(WITNESSED).unwrap());
    for i in 0..3 {
        gate.call(
            common::req("s9", i + 1, "read", r#"{"path":"/x"}"#),
            &mut |_| {},
        );
    }
    gate.shutdown(Duration::from_secs(10));
    drop(gate);
    let given = anchor::configured(&config.audit, &s.state).unwrap();
    let ok = anchor::verify(&s.log(), &given, Some(&s.key)).unwrap();
    assert_eq!(ok.earlier, s.given.len() as u64);
    assert_eq!(
        ok.chain.as_ref().map(|c| c.previous.as_str()),
        Some(previous.as_str())
    );
    assert!(ok.given >= 2, "{ok:?}");
    // A cut of the new chain is refused like any other.
    let mut records = read_records(&s.log());
    records.truncate(4);
    write_records(&s.log(), &records);
    s.refused(WITNESSED, "the new chain cut", &["was cut"]);
    // And there is no new chain where nothing is broken.
    let again = anchor::chain::new_chain(&config.audit, &s.state, &key, "x", "y", now());
    assert!(again.is_ok(), "the cut new chain is a break too: {again:?}");
    let none =
        anchor::chain::new_chain(&config.audit, &s.state, &key, "x", "y", now()).unwrap_err();
    assert!(
        matches!(none, anchor::chain::NewChainError::NoBreak { .. }),
        "{none}"
    );
}

#[test]
fn a_chain_restart_without_the_keys_signature_unlocks_nothing() {
    let s = stopped(6);
    // The attacker's own "new chain": a `chain_restarted` record and a checkpoint of it,
    // signed by a key of theirs, then records of their choosing.
    let dir = tempfile::tempdir().unwrap();
    let theirs = AuditKey::load_or_create(&dir.path().join("theirs")).unwrap();
    let mut records = read_records(&s.log());
    let restarted = Record {
        seq: 1,
        time: proto::Timestamp(common::T0),
        event: Event::ChainRestarted {
            previous: "audit.log.broken-1".into(),
            bytes: 0,
            sha256: audit::sha256_hex(b""),
            refused: "nothing".into(),
            reason: "routine".into(),
            by: "operator".into(),
        },
        prev: Digest::ZERO,
        hash: Digest::ZERO,
    };
    let mut forged = vec![restarted];
    rechain(&mut forged);
    let line = forged[0].to_line().unwrap();
    let cp = theirs.sign(
        gate::anchor::Head {
            tree_size: 1,
            root: leaf_hash(line.strip_suffix(b"\n").unwrap()),
            last_seq: 1,
            last_hash: forged[0].hash,
        },
        proto::Timestamp(common::T0),
    );
    forged.push(Record {
        seq: 2,
        time: proto::Timestamp(common::T0),
        event: Event::checkpoint(&cp),
        prev: Digest::ZERO,
        hash: Digest::ZERO,
    });
    records.retain(|r| !matches!(r.event, Event::Checkpoint { .. }));
    forged.extend(records.into_iter().take(3));
    rechain(&mut forged);
    write_records(&s.log(), &forged);
    assert_chain_holds(&s.log(), "a forged new chain");
    let err = s.refused(WITNESSED, "a forged new chain", &[]);
    assert!(
        err.contains("is not signed by the audit key") || err.contains("was cut"),
        "{err}"
    );
    let given = witnessed(&s.witness());
    assert!(anchor::verify(&s.log(), &given, Some(&s.key)).is_err());
}
