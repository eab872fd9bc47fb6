//! docs/spec.md §2.5: the front's decision channel uses the same frames and strictness as the
//! other channels, and carries two requests only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Cursor;

use proto::control::{
    ApprovalInfo, ApprovalReason, ApprovalState, Choice, ControlOp, ControlRequest, Shown,
    write_control_request,
};
use proto::decide::*;
use proto::{CallId, DataClass, FrameError, SessionId, Timestamp};

fn sid(s: &str) -> SessionId {
    SessionId::new(s).unwrap()
}

fn shown() -> Shown {
    Shown {
        call_sha256: "ab".repeat(32),
        class: DataClass::Public,
        untrusted: true,
    }
}

#[test]
fn every_request_and_reply_round_trips_through_a_frame() {
    let ops = [
        DecideOp::Show {
            session: sid("mcp-1"),
            approval: "ap-1".into(),
        },
        DecideOp::Decide {
            session: sid("mcp-1"),
            approval: "ap-1".into(),
            choice: Choice::ApproveForSession,
            remember_seconds: Some(600),
            shown: shown(),
        },
        DecideOp::Decide {
            session: sid("mcp-1"),
            approval: "ap-1".into(),
            choice: Choice::Refuse,
            remember_seconds: None,
            shown: shown(),
        },
    ];
    for (i, op) in ops.into_iter().enumerate() {
        let req = DecideRequest::new(i as u64, op);
        let mut buf = Vec::new();
        write_decide_request(&mut buf, &req).unwrap();
        assert_eq!(read_decide_request(&mut Cursor::new(buf)).unwrap(), req);
    }
    let answers = [
        DecideAnswer::Shown {
            item: ApprovalInfo {
                id: "ap-1".into(),
                session: sid("mcp-1"),
                call: CallId(2),
                tool: "run".into(),
                arguments: "{}".into(),
                reason: ApprovalReason::GrantAsk,
                class: DataClass::Secret,
                untrusted: false,
                created: Timestamp(1),
                expires: Timestamp(301),
                state: ApprovalState::Pending,
                files: Vec::new(),
                concerns: Vec::new(),
            },
            call_sha256: "00".repeat(32),
        },
        DecideAnswer::Decided {
            state: ApprovalState::Approved,
            grant: Some("rt-1".into()),
        },
        DecideAnswer::Error {
            code: DecideErrorCode::NotAllowed,
            detail: "approve_in_client is false".into(),
        },
    ];
    for (i, answer) in answers.into_iter().enumerate() {
        let reply = DecideReply::new(i as u64, answer);
        let mut buf = Vec::new();
        write_decide_reply(&mut buf, &reply).unwrap();
        assert_eq!(read_decide_reply(&mut Cursor::new(buf)).unwrap(), reply);
    }
}

#[test]
fn a_request_has_a_stable_shape() {
    let req = DecideRequest::new(
        4,
        DecideOp::Show {
            session: sid("mcp-1"),
            approval: "ap-1".into(),
        },
    );
    assert_eq!(
        serde_json::to_string(&req).unwrap(),
        r#"{"v":1,"id":4,"op":{"kind":"show","body":{"session":"mcp-1","approval":"ap-1"}}}"#
    );
}

#[test]
fn the_channel_decodes_nothing_but_its_two_requests() {
    for (bad, needle) in [
        // An operator's op on the front's socket is not a decide op at all.
        (
            r#"{"v":1,"id":1,"op":{"kind":"add_grant","body":{}}}"#,
            "unknown variant",
        ),
        (
            r#"{"v":1,"id":1,"op":{"kind":"list_approvals","body":{"all":true}}}"#,
            "unknown variant",
        ),
        (
            r#"{"v":1,"id":1,"op":{"kind":"show","body":{"session":"s","approval":"a","all":true}}}"#,
            "unknown field",
        ),
        (
            r#"{"v":1,"id":1,"op":{"kind":"decide","body":{"session":"s","approval":"a","choice":"refuse","remember_seconds":null}}}"#,
            "missing field `shown`",
        ),
        (
            r#"{"v":1,"id":1,"op":{"kind":"decide","body":["s","a","refuse",null,{}]}}"#,
            "invalid type: sequence",
        ),
        (
            r#"{"v":1,"id":1,"op":{"kind":"show","body":{"session":"../etc","approval":"a"}}}"#,
            "session id",
        ),
    ] {
        let e = serde_json::from_str::<DecideRequest>(bad).unwrap_err();
        assert!(e.to_string().contains(needle), "{bad}: {e}");
    }
}

#[test]
fn a_control_request_on_the_decision_socket_does_not_decode() {
    let mut buf = Vec::new();
    write_control_request(
        &mut buf,
        &ControlRequest::new(1, ControlOp::ListApprovals { all: true }),
    )
    .unwrap();
    assert!(matches!(
        read_decide_request(&mut Cursor::new(buf)),
        Err(FrameError::Json(_))
    ));
    let mut buf = Vec::new();
    write_decide_reply(
        &mut buf,
        &DecideReply::error(1, DecideErrorCode::Internal, "x"),
    )
    .unwrap();
    assert!(matches!(
        read_decide_request(&mut Cursor::new(buf)),
        Err(FrameError::Json(_))
    ));
}
