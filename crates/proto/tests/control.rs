//! docs/spec.md §2.4: control messages use the same frames and the same strictness as the wire.

// Test code: a failed unwrap or panic here is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Cursor;

use proto::control::*;
use proto::{CallId, DataClass, DenyReason, FrameError, SessionId, Timestamp};

fn sid(s: &str) -> SessionId {
    SessionId::new(s).unwrap()
}

fn approval() -> ApprovalInfo {
    ApprovalInfo {
        id: "ap-0123456789abcdef".into(),
        session: sid("s1"),
        call: CallId(4),
        tool: "run".into(),
        arguments: r#"{"argv":["make"]}"#.into(),
        reason: ApprovalReason::UntrustedContent,
        class: DataClass::Internal,
        untrusted: true,
        created: Timestamp(10),
        expires: Timestamp(310),
        state: ApprovalState::Pending,
        files: Vec::new(),
        concerns: vec![proto::control::Concern {
            kind: proto::control::ConcernKind::UntrustedValue,
            pointer: "/argv/0".into(),
            value: "make".into(),
            detail: "the id make first appeared in an untrusted answer of fetch_get, call 2".into(),
        }],
    }
}

fn grant() -> GrantSpec {
    GrantSpec {
        tool: "fetch_*".into(),
        sessions: "*".into(),
        effect: Effect::Allow,
        max_class: DataClass::Public,
        if_untrusted: Effect::Ask,
        expires: None,
    }
}

fn every_op() -> Vec<ControlOp> {
    vec![
        ControlOp::Status {},
        ControlOp::Retire {},
        ControlOp::ListApprovals { all: true },
        ControlOp::Approve {
            approval: "ap-1".into(),
        },
        ControlOp::Refuse {
            approval: "ap-1".into(),
            reason: Some("no".into()),
        },
        ControlOp::Refuse {
            approval: "ap-1".into(),
            reason: None,
        },
        ControlOp::ListSessions {},
        ControlOp::ResetSession { session: sid("s1") },
        ControlOp::ListGrants {},
        ControlOp::AddGrant { grant: grant() },
        ControlOp::RevokeGrant {
            grant: "rt-1".into(),
        },
        ControlOp::Check {
            session: sid("s1"),
            tool: "run".into(),
            class: DataClass::Secret,
            untrusted: false,
            at: Some(Timestamp(5)),
        },
        ControlOp::AuditTail { n: 20 },
        ControlOp::AuditVerify {},
        ControlOp::DecideApproval {
            approval: "ap-1".into(),
            choice: Choice::ApproveForSession,
            remember_seconds: Some(600),
            reason: None,
            shown: Some(shown()),
            via: DecidedVia::Page,
            by: "the approvals page, from 127.0.0.1:5000".into(),
        },
        ControlOp::DecideApproval {
            approval: "ap-1".into(),
            choice: Choice::Refuse,
            remember_seconds: None,
            reason: Some("no".into()),
            shown: None,
            via: DecidedVia::Cli,
            by: "the command line".into(),
        },
        ControlOp::WatchApprovals {
            after: 7,
            limit: 100,
            wait_ms: 25_000,
            pending_only: false,
        },
    ]
}

fn shown() -> Shown {
    Shown {
        call_sha256: "ab".repeat(32),
        class: DataClass::Internal,
        untrusted: false,
    }
}

fn update() -> ApprovalUpdate {
    ApprovalUpdate {
        item: approval(),
        change: 12,
        call_sha256: "cd".repeat(32),
        cut: false,
        decided: Some(Timestamp(20)),
        via: Some(DecidedVia::Client),
        by: Some("the MCP client of session s1".into()),
        note: None,
        grant: Some("rt-3".into()),
    }
}

fn every_answer() -> Vec<ControlAnswer> {
    vec![
        ControlAnswer::Status {
            version: "0.1.0".into(),
            pid: 42,
            config: "ab12".into(),
            kept: true,
        },
        ControlAnswer::Retiring {},
        ControlAnswer::Approvals {
            items: vec![approval(), approval()],
        },
        ControlAnswer::Approval { item: approval() },
        ControlAnswer::Sessions {
            items: vec![SessionInfo {
                id: sid("s1"),
                class: DataClass::Confidential,
                untrusted: false,
                created: Timestamp(1),
                updated: Timestamp(2),
            }],
        },
        ControlAnswer::Grants {
            items: vec![
                GrantInfo {
                    id: "config:0".into(),
                    grant: grant(),
                    scope: None,
                },
                GrantInfo {
                    id: "rt-3".into(),
                    grant: grant(),
                    scope: Some(GrantScope {
                        arguments: r#"{"argv":["make"]}"#.into(),
                        arguments_sha256: "ef".repeat(32),
                        approval: "ap-0123456789abcdef".into(),
                        files: Vec::new(),
                    }),
                },
            ],
        },
        ControlAnswer::Decision {
            decision: CheckOutcome::Denied,
            reason: Some(DenyReason::TaintTooHigh),
            explain: vec!["grant config:0 matched".into()],
        },
        ControlAnswer::AuditRecords {
            lines: vec!["{}".into()],
        },
        ControlAnswer::AuditVerified {
            records: 9,
            first_bad: Some(4),
            detail: "hash mismatch".into(),
        },
        ControlAnswer::Decided { item: update() },
        ControlAnswer::ApprovalUpdates {
            items: vec![update()],
            head: 12,
            pending: 1,
            now: Timestamp(30),
        },
        ControlAnswer::Error {
            code: ControlErrorCode::Conflict,
            detail: "already refused".into(),
        },
    ]
}

#[test]
fn every_request_round_trips_through_a_frame() {
    for (i, op) in every_op().into_iter().enumerate() {
        let req = ControlRequest::new(i as u64, op);
        let mut buf = Vec::new();
        write_control_request(&mut buf, &req).unwrap();
        assert_eq!(read_control_request(&mut Cursor::new(buf)).unwrap(), req);
    }
}

#[test]
fn every_reply_round_trips_through_a_frame() {
    for (i, answer) in every_answer().into_iter().enumerate() {
        let reply = ControlReply::new(i as u64, answer);
        let mut buf = Vec::new();
        write_control_reply(&mut buf, &reply).unwrap();
        assert_eq!(read_control_reply(&mut Cursor::new(buf)).unwrap(), reply);
    }
}

#[test]
fn a_request_has_a_stable_shape() {
    let req = ControlRequest::new(
        3,
        ControlOp::Refuse {
            approval: "ap-1".into(),
            reason: None,
        },
    );
    assert_eq!(
        serde_json::to_string(&req).unwrap(),
        r#"{"v":1,"id":3,"op":{"kind":"refuse","body":{"approval":"ap-1","reason":null}}}"#
    );
}

#[test]
fn a_missing_optional_field_is_an_error_but_null_is_not() {
    let with_null =
        r#"{"v":1,"id":3,"op":{"kind":"refuse","body":{"approval":"ap-1","reason":null}}}"#;
    assert!(serde_json::from_str::<ControlRequest>(with_null).is_ok());
    let missing = r#"{"v":1,"id":3,"op":{"kind":"refuse","body":{"approval":"ap-1"}}}"#;
    let e = serde_json::from_str::<ControlRequest>(missing).unwrap_err();
    assert!(e.to_string().contains("missing field `reason`"), "{e}");
}

#[test]
fn strictness_holds_on_the_control_channel() {
    for (bad, needle) in [
        (
            r#"{"v":1,"id":3,"op":{"kind":"approve","body":{"approval":"a","force":true}}}"#,
            "unknown field",
        ),
        (
            r#"{"v":1,"id":3,"op":{"kind":"approve","body":{"approval":"a","approval":"b"}}}"#,
            "duplicate field",
        ),
        (
            r#"{"v":1,"id":3,"op":{"kind":"approve","body":["a"]}}"#,
            "invalid type: sequence",
        ),
        (
            r#"{"v":1,"id":3,"op":{"kind":"sudo","body":{}}}"#,
            "unknown variant",
        ),
        (
            r#"{"v":1,"id":3,"op":{"kind":"reset_session","body":{"session":"../x"}}}"#,
            "session id",
        ),
        (
            r#"{"v":1,"id":3,"op":{"kind":"add_grant","body":{"grant":["*","*","allow","secret","allow",null]}}}"#,
            "invalid type: sequence",
        ),
        (
            r#"{"v":1,"id":3,"op":{"kind":"add_grant","body":{"grant":{"tool":"*","sessions":"*","effect":"maybe","max_class":"secret","if_untrusted":"allow","expires":null}}}}"#,
            "unknown effect",
        ),
        (
            r#"{"v":1,"id":3,"op":{"kind":"decide_approval","body":{"approval":"a","choice":"approve_forever","remember_seconds":null,"reason":null,"shown":null,"via":"cli","by":"me"}}}"#,
            "unknown choice",
        ),
        (
            r#"{"v":1,"id":3,"op":{"kind":"decide_approval","body":{"approval":"a","choice":"refuse","reason":null,"shown":null,"via":"cli","by":"me"}}}"#,
            "missing field `remember_seconds`",
        ),
        (
            r#"{"v":1,"id":3,"op":{"kind":"decide_approval","body":{"approval":"a","choice":"refuse","remember_seconds":null,"reason":null,"shown":{"call_sha256":"x","class":"public","untrusted":false,"tool":"run"},"via":"cli","by":"me"}}}"#,
            "unknown field",
        ),
        (
            r#"{"v":1,"id":3,"op":{"kind":"decide_approval","body":{"approval":"a","choice":"refuse","remember_seconds":null,"reason":null,"shown":null,"via":"root","by":"me"}}}"#,
            "unknown decided via",
        ),
    ] {
        let e = serde_json::from_str::<ControlRequest>(bad).unwrap_err();
        assert!(e.to_string().contains(needle), "{bad}: {e}");
    }
}

#[test]
fn a_reply_sent_where_a_request_belongs_does_not_decode() {
    let reply = ControlReply::error(1, ControlErrorCode::Internal, "x");
    let mut buf = Vec::new();
    write_control_reply(&mut buf, &reply).unwrap();
    assert!(matches!(
        read_control_request(&mut Cursor::new(buf)),
        Err(FrameError::Json(_))
    ));
}

#[test]
fn the_codec_rules_apply_to_control_frames() {
    let mut req = ControlRequest::new(1, ControlOp::Status {});
    req.v = 9;
    let mut buf = Vec::new();
    write_control_request(&mut buf, &req).unwrap();
    assert!(matches!(
        read_control_request(&mut Cursor::new(buf)),
        Err(FrameError::BadVersion(9))
    ));
    let lie = (proto::MAX_FRAME as u32 + 1).to_be_bytes();
    assert!(matches!(
        read_control_request(&mut Cursor::new(lie.to_vec())),
        Err(FrameError::TooLarge(_))
    ));
    assert!(matches!(
        read_control_reply(&mut Cursor::new(Vec::new())),
        Err(FrameError::Closed)
    ));
}

#[test]
fn an_approval_without_files_reads_as_before_and_one_with_files_carries_them() {
    // What a gate without file digests sent (and what every approval that names no file
    // still encodes to): no `files` key at all.
    let item = approval();
    let text = serde_json::to_string(&item).unwrap();
    assert!(!text.contains("files"), "{text}");
    assert_eq!(serde_json::from_str::<ApprovalInfo>(&text).unwrap(), item);
    let mut with = approval();
    with.concerns.clear();
    with.files.push(proto::run::FileDigest {
        path: "/work/s.sh".into(),
        arg: 1,
        kind: proto::run::FileKind::File,
        sha256: Some("ab".repeat(32)),
        size: Some(15),
        note: None,
        pinned: true,
        was: Some(format!("sha256:{}", "cd".repeat(32))),
    });
    let text = serde_json::to_string(&with).unwrap();
    assert!(
        text.ends_with(
            r#""was":"sha256:cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"}]}"#
        ),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<ApprovalInfo>(&text).unwrap(), with);
    // Inside, as strict as ever.
    let bad = text.replace(r#""pinned":true,"#, "");
    assert!(serde_json::from_str::<ApprovalInfo>(&bad).is_err(), "{bad}");
}
