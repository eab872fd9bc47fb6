#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The audit log: chain, reopen, torn tails, and tampering found by `verify`.

use std::path::{Path, PathBuf};

use gate::audit::{
    self, AuditError, AuditLog, Digest, Event, Outcome, Problem, Verdict, VerifyError,
};
use gate::store::ApprovalReason;
use proto::{CallId, DataClass, DenyReason, SessionId, Timestamp};

fn sid(s: &str) -> SessionId {
    SessionId::new(s).unwrap()
}

/// A mix of every kind of event.
fn events() -> Vec<Event> {
    let s = sid("s1");
    vec![
        Event::request(
            s.clone(),
            CallId(1),
            "read_file",
            r#"{"path":"/data/a"}"#,
            false,
        ),
        Event::Decision {
            session: s.clone(),
            call: CallId(1),
            tool: "read_file".into(),
            class: DataClass::Public,
            untrusted: false,
            decision: Verdict::Allow,
            reason: None,
            approval: None,
            reach: None,
            grant: None,
            provenance: Vec::new(),
        },
        Event::result(
            s.clone(),
            CallId(1),
            "read_file",
            Outcome::Result,
            "hello \"world\"\n",
            DataClass::Internal,
            false,
            false,
        ),
        Event::request(s.clone(), CallId(2), "run", r#"{"cmd":"ls é"}"#, true),
        Event::ApprovalAsked {
            session: s.clone(),
            call: CallId(2),
            tool: "run".into(),
            approval: "ap-0123456789abcdef".into(),
            reason: ApprovalReason::GrantAsk,
            expires: Timestamp(400),
            args_sha256: audit::sha256_hex(r#"{"cmd":"ls é"}"#.as_bytes()),
            files_sha256: None,
        },
        Event::ApprovalDecided {
            session: s.clone(),
            call: CallId(2),
            approval: "ap-0123456789abcdef".into(),
            decision: audit::ApprovalOutcome::Refused,
            note: Some("no \u{1} thanks".into()),
            via: None,
            by: None,
            grant: None,
        },
        Event::ApprovalDecided {
            session: s.clone(),
            call: CallId(6),
            approval: "ap-3333333333333333".into(),
            decision: audit::ApprovalOutcome::Approved,
            note: None,
            via: Some(gate::store::DecidedVia::Client),
            by: Some("the MCP client of session s1".into()),
            grant: Some(2),
        },
        Event::Decision {
            session: s.clone(),
            call: CallId(7),
            tool: "run".into(),
            class: DataClass::Internal,
            untrusted: false,
            decision: Verdict::Allow,
            reason: None,
            approval: None,
            reach: None,
            grant: Some("rt-2".into()),
            provenance: Vec::new(),
        },
        Event::Decision {
            session: s.clone(),
            call: CallId(3),
            tool: "fetch_x".into(),
            class: DataClass::Secret,
            untrusted: true,
            decision: Verdict::Deny,
            reason: Some(DenyReason::TaintTooHigh),
            approval: None,
            reach: Some(DataClass::Secret),
            grant: None,
            provenance: Vec::new(),
        },
        Event::SessionReset {
            session: s.clone(),
            class: DataClass::Secret,
            untrusted: true,
            servers_stopped: 2,
            workspace_emptied: true,
        },
        Event::GrantAdded {
            grant: 1,
            tool: "fetch_*".into(),
            sessions: "*".into(),
            effect: gate::store::Effect::Allow,
            max_class: Some(DataClass::Public),
            if_untrusted: None,
            expires: None,
            args_sha256: None,
            approval: None,
        },
        Event::GrantAdded {
            grant: 2,
            tool: "run".into(),
            sessions: "s1".into(),
            effect: gate::store::Effect::Allow,
            max_class: Some(DataClass::Internal),
            if_untrusted: Some(gate::store::Effect::Ask),
            expires: Some(Timestamp(1000)),
            args_sha256: Some("ab".repeat(32)),
            approval: Some("ap-3333333333333333".into()),
        },
        Event::GrantRevoked { grant: 1 },
        Event::ApprovalExpired {
            session: s.clone(),
            call: CallId(4),
            approval: "ap-1111111111111111".into(),
        },
        Event::ApprovalWithdrawn {
            session: s,
            call: CallId(5),
            approval: "ap-2222222222222222".into(),
        },
        Event::AuthFailed {
            socket: "control".into(),
            uid: Some(1001),
            detail: "peer uid is not the gate's".into(),
        },
    ]
}

/// A log of `n` records in a fresh directory.
fn log_with(n: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, repaired) = AuditLog::open(dir.path()).unwrap();
    assert!(repaired.is_none());
    let evs = events();
    for i in 0..n {
        let e = evs[i % evs.len()].clone();
        log.append(Timestamp(1000 + i as u64), e).unwrap();
    }
    let path = log.path().to_path_buf();
    (dir, path)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .split_inclusive('\n')
        .map(str::to_string)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.concat()).unwrap();
}

fn first_bad(path: &Path) -> (u64, Option<u64>, Problem) {
    match audit::verify(path) {
        Err(VerifyError::Bad {
            line, seq, problem, ..
        }) => (line, seq, problem),
        other => panic!("expected a bad record, got {other:?}"),
    }
}

#[test]
fn an_intact_log_verifies_and_reopens_where_it_left_off() {
    let (dir, path) = log_with(30);
    let ok = audit::verify(&path).unwrap();
    assert_eq!(ok.records, 30);
    let (mut log, repaired) = AuditLog::open(dir.path()).unwrap();
    assert!(repaired.is_none());
    assert_eq!(log.next_seq(), 31);
    assert_eq!(log.last_hash(), ok.last_hash);
    let rec = log
        .append(Timestamp(5000), Event::GrantRevoked { grant: 9 })
        .unwrap();
    assert_eq!((rec.seq, rec.prev), (31, ok.last_hash));
    let batch = log
        .append_batch((0..16).map(|i| (Timestamp(5001 + i), Event::GrantRevoked { grant: 10 })))
        .unwrap();
    assert_eq!(batch.len(), 16);
    assert_eq!(batch[0].prev, rec.hash);
    assert_eq!(batch[15].seq, 47);
    assert!(log.append_batch(Vec::new()).unwrap().is_empty());
    let ok = audit::verify(&path).unwrap();
    assert_eq!((ok.records, ok.last_hash), (47, batch[15].hash));
}

#[test]
fn every_event_reads_back_equal() {
    let (_dir, path) = log_with(events().len());
    let recs = audit::tail(&path, 100).unwrap();
    let evs: Vec<Event> = recs.into_iter().map(|r| r.event).collect();
    assert_eq!(evs, events());
}

#[test]
fn the_file_is_private_and_arguments_only_when_asked() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, path) = log_with(5);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("/data/a"),
        "arguments not logged unless asked"
    );
    assert!(text.contains(r#""arguments":"{\"cmd\":\"ls é\"}""#));
    assert!(!text.contains("hello"), "content is never logged");
}

#[test]
fn tail_returns_the_last_n() {
    let (_dir, path) = log_with(20);
    let t = audit::tail(&path, 3).unwrap();
    assert_eq!(t.iter().map(|r| r.seq).collect::<Vec<_>>(), [18, 19, 20]);
    assert!(audit::tail(&path, 0).unwrap().is_empty());
    assert_eq!(audit::tail(&path, 1000).unwrap().len(), 20);
}

#[test]
fn an_empty_log_verifies() {
    let (_dir, path) = log_with(0);
    let ok = audit::verify(&path).unwrap();
    assert_eq!((ok.records, ok.last_hash), (0, Digest::ZERO));
}

#[test]
fn tamper_change_one_byte_of_a_field() {
    for k in [1usize, 5, 10] {
        let (_dir, path) = log_with(10);
        let mut ls = lines(&path);
        // Change one byte inside the time field's value ("time":100x).
        let l = &ls[k - 1];
        let at = l.find("\"time\":").unwrap() + "\"time\":".len() + 3;
        let mut bytes = l.clone().into_bytes();
        bytes[at] = if bytes[at] == b'9' {
            b'8'
        } else {
            bytes[at] + 1
        };
        ls[k - 1] = String::from_utf8(bytes).unwrap();
        write_lines(&path, &ls);
        let (line, seq, problem) = first_bad(&path);
        assert_eq!((line, seq), (k as u64, Some(k as u64)));
        assert!(matches!(problem, Problem::Hash { .. }), "{problem}");
    }
}

#[test]
fn tamper_change_a_string_field() {
    let (_dir, path) = log_with(10);
    let mut ls = lines(&path);
    ls[2] = ls[2].replacen("read_file", "read_filf", 1);
    write_lines(&path, &ls);
    let (line, _, problem) = first_bad(&path);
    assert_eq!(line, 3);
    assert!(matches!(problem, Problem::Hash { .. }), "{problem}");
    let err = audit::verify(&path).unwrap_err().to_string();
    assert!(
        err.contains("line 3 (seq 3)") && err.contains("hash mismatch"),
        "{err}"
    );
}

#[test]
fn tamper_drop_a_record() {
    let (_dir, path) = log_with(10);
    let mut ls = lines(&path);
    ls.remove(4); // seq 5
    write_lines(&path, &ls);
    let (line, seq, problem) = first_bad(&path);
    assert_eq!((line, seq), (5, Some(6)));
    assert_eq!(
        problem,
        Problem::Seq {
            expected: 5,
            found: 6
        }
    );
}

#[test]
fn tamper_drop_a_record_and_renumber() {
    // A forger who renumbers the rest still breaks the chain at the gap.
    let (_dir, path) = log_with(10);
    let mut ls = lines(&path);
    ls.remove(4);
    for (i, l) in ls.iter_mut().enumerate().skip(4) {
        *l = l.replacen(
            &format!("\"seq\":{}", i + 2),
            &format!("\"seq\":{}", i + 1),
            1,
        );
    }
    write_lines(&path, &ls);
    let (line, _, problem) = first_bad(&path);
    assert_eq!(line, 5);
    assert!(matches!(problem, Problem::Prev { .. }), "{problem}");
}

#[test]
fn tamper_swap_two_records() {
    let (_dir, path) = log_with(10);
    let mut ls = lines(&path);
    ls.swap(6, 7); // seq 7 and 8
    write_lines(&path, &ls);
    let (line, seq, problem) = first_bad(&path);
    assert_eq!((line, seq), (7, Some(8)));
    assert_eq!(
        problem,
        Problem::Seq {
            expected: 7,
            found: 8
        }
    );
}

#[test]
fn tamper_append_a_forged_record() {
    let (_dir, path) = log_with(10);
    let mut ls = lines(&path);
    let last = ls[9].clone();
    let prev_hash = &last[last.find("\"hash\":\"").unwrap() + 8..][..64];
    let forged = format!(
        "{{\"seq\":11,\"time\":2000,\"event\":\"grant_revoked\",\"grant\":1,\"prev\":\"{prev_hash}\",\"hash\":\"{}\"}}\n",
        "ab".repeat(32)
    );
    ls.push(forged);
    write_lines(&path, &ls);
    let (line, seq, problem) = first_bad(&path);
    assert_eq!((line, seq), (11, Some(11)));
    assert!(matches!(problem, Problem::Hash { .. }), "{problem}");
}

#[test]
fn tamper_non_canonical_and_garbage_lines() {
    let (_dir, path) = log_with(5);
    let mut ls = lines(&path);
    ls[1] = ls[1].replacen(",", ", ", 1);
    write_lines(&path, &ls);
    assert_eq!(first_bad(&path).2, Problem::NotCanonical);

    let (_dir, path) = log_with(5);
    let mut ls = lines(&path);
    ls[3] = "not json\n".into();
    write_lines(&path, &ls);
    let (line, seq, problem) = first_bad(&path);
    assert_eq!((line, seq), (4, None));
    assert!(matches!(problem, Problem::Unparseable(_)));
}

#[test]
fn truncated_mid_line_is_named_by_verify_and_cut_by_open() {
    let (dir, path) = log_with(10);
    let full = std::fs::read(&path).unwrap();
    let ls = lines(&path);
    let nine: usize = ls[..9].iter().map(String::len).sum();
    std::fs::write(&path, &full[..nine + 20]).unwrap();
    let (line, _, problem) = first_bad(&path);
    assert_eq!((line, problem), (10, Problem::Torn));
    // tail skips the unacknowledged line.
    assert_eq!(audit::tail(&path, 1).unwrap()[0].seq, 9);

    let (mut log, repaired) = AuditLog::open(dir.path()).unwrap();
    let repaired = repaired.unwrap();
    assert_eq!((repaired.offset, repaired.dropped), (nine as u64, 20));
    assert!(repaired.to_string().contains("cut off"));
    assert_eq!(log.next_seq(), 10);
    log.append(Timestamp(9999), Event::GrantRevoked { grant: 2 })
        .unwrap();
    assert_eq!(audit::verify(&path).unwrap().records, 10);
}

#[test]
fn a_torn_first_line_leaves_an_empty_log() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(audit::AUDIT_FILE), b"{\"seq\":1,\"ti").unwrap();
    let (log, repaired) = AuditLog::open(dir.path()).unwrap();
    assert_eq!(repaired.unwrap().dropped, 12);
    assert_eq!((log.next_seq(), log.last_hash()), (1, Digest::ZERO));
}

#[test]
fn open_refuses_a_bad_last_record() {
    let (dir, path) = log_with(5);
    let mut ls = lines(&path);
    ls[4] = ls[4].replacen("\"time\":1004", "\"time\":1005", 1);
    write_lines(&path, &ls);
    let err = AuditLog::open(dir.path()).unwrap_err();
    assert!(
        matches!(
            err,
            AuditError::Malformed {
                problem: Problem::Hash { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("boxmaker audit verify"), "{err}");

    ls[4] = "{}\n".into();
    write_lines(&path, &ls);
    let err = AuditLog::open(dir.path()).unwrap_err();
    assert!(
        matches!(
            err,
            AuditError::Malformed {
                problem: Problem::Unparseable(_),
                ..
            }
        ),
        "{err}"
    );
}
