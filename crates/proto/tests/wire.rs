//! docs/spec.md §2.1–2.2: every fixture decodes to the value spelled out here and encodes back to
//! its exact bytes; every strictness rule is a decode error.

// Test code: a failed unwrap or panic here is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proto::{
    CallId, DataClass, DenyReason, Envelope, ErrorCode, Message, PROTOCOL_VERSION, SessionId,
    Timestamp, ToolRequest, ToolResponse, WireError,
};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/wire/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

fn decode(s: &str) -> Result<Envelope, serde_json::Error> {
    serde_json::from_str(s)
}

/// Asserts `s` does not decode, and that the error mentions `needle`.
#[track_caller]
fn rejects(s: &str, needle: &str) {
    match decode(s) {
        Ok(v) => panic!("decoded {s}\n  as {v:?}\n  but it must be rejected"),
        Err(e) => assert!(
            e.to_string().contains(needle),
            "error for {s}\n  was {e}\n  expected it to mention {needle:?}"
        ),
    }
}

fn tool_request() -> Envelope {
    Envelope {
        v: 1,
        id: 7,
        r#final: true,
        msg: Message::ToolRequest(ToolRequest {
            session: SessionId::new("mm-thread-42").unwrap(),
            call: CallId(3),
            tool: "read_file".into(),
            arguments: r#"{"path":"/etc/hosts"}"#.into(),
        }),
    }
}

fn fixtures() -> Vec<(&'static str, Envelope)> {
    vec![
        ("tool_request.json", tool_request()),
        (
            "result.json",
            Envelope {
                v: 1,
                id: 7,
                r#final: true,
                msg: Message::ToolResponse(ToolResponse::Result {
                    content: "127.0.0.1\tlocalhost\n".into(),
                    class: DataClass::Internal,
                    untrusted: false,
                    truncated: false,
                }),
            },
        ),
        (
            "pending_approval.json",
            Envelope {
                v: 1,
                id: 8,
                r#final: false,
                msg: Message::ToolResponse(ToolResponse::PendingApproval {
                    approval: "ap-0001".into(),
                    expires: Timestamp(1_767_225_600),
                }),
            },
        ),
        (
            "failed.json",
            Envelope {
                v: 1,
                id: 9,
                r#final: true,
                msg: Message::ToolResponse(ToolResponse::Failed {
                    message: "no such file: /etc/hostz".into(),
                }),
            },
        ),
        (
            "denied.json",
            Envelope {
                v: 1,
                id: 10,
                r#final: true,
                msg: Message::ToolResponse(ToolResponse::Denied {
                    reason: DenyReason::TaintTooHigh,
                }),
            },
        ),
        (
            "error.json",
            Envelope {
                v: 1,
                id: 0,
                r#final: true,
                msg: Message::Error(WireError {
                    code: ErrorCode::BadVersion,
                    detail: "expected protocol version 1, got 2".into(),
                }),
            },
        ),
    ]
}

#[test]
fn every_fixture_decodes_to_its_value() {
    for (name, want) in fixtures() {
        let got: Envelope = serde_json::from_slice(&fixture(name)).unwrap();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn every_value_encodes_to_exactly_its_fixture() {
    for (name, value) in fixtures() {
        let bytes = serde_json::to_vec(&value).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            String::from_utf8_lossy(&fixture(name)),
            "{name}"
        );
        assert_eq!(bytes, fixture(name), "{name}");
    }
}

#[test]
fn there_are_exactly_six_wire_fixtures_and_all_are_tested() {
    let dir = format!("{}/tests/fixtures/wire", env!("CARGO_MANIFEST_DIR"));
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    on_disk.sort();
    let mut tested: Vec<String> = fixtures().iter().map(|(n, _)| n.to_string()).collect();
    tested.sort();
    assert_eq!(on_disk, tested);
}

#[test]
fn helpers_build_the_right_final_flag() {
    let pending = ToolResponse::PendingApproval {
        approval: "a".into(),
        expires: Timestamp(1),
    };
    assert!(!Envelope::response(1, pending).r#final);
    let failed = ToolResponse::Failed {
        message: "x".into(),
    };
    assert!(Envelope::response(1, failed).r#final);
    assert!(
        Envelope::request(
            1,
            match tool_request().msg {
                Message::ToolRequest(r) => r,
                _ => unreachable!(),
            }
        )
        .r#final
    );
    let e = Envelope::error(0, ErrorCode::BadFrame, "x");
    assert_eq!(e.v, PROTOCOL_VERSION);
    assert!(e.r#final);
}

#[test]
fn keys_in_any_order_decode_the_same() {
    let s = r#"{"msg":{"body":{"arguments":"{\"path\":\"/etc/hosts\"}","tool":"read_file","call":3,"session":"mm-thread-42"},"kind":"tool_request"},"final":true,"id":7,"v":1}"#;
    assert_eq!(decode(s).unwrap(), tool_request());
    let s = r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_response","body":{"truncated":true,"untrusted":true,"class":"secret","content":"x","status":"result"}}}"#;
    assert_eq!(
        decode(s).unwrap().msg,
        Message::ToolResponse(ToolResponse::Result {
            content: "x".into(),
            class: DataClass::Secret,
            untrusted: true,
            truncated: true
        })
    );
    // White space between tokens is JSON; the encoder never writes it, the decoder allows it.
    let s = "{ \"v\" : 1 , \"id\" : 0 , \"final\" : true , \"msg\" : { \"kind\" : \"error\" , \"body\" : { \"code\" : \"internal\" , \"detail\" : \"\" } } }\n";
    assert!(decode(s).is_ok());
}

// ---- unknown fields, at every level -------------------------------------------------------

#[test]
fn unknown_field_in_the_envelope_is_rejected() {
    rejects(
        r#"{"v":1,"id":0,"final":true,"extra":1,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        "unknown field",
    );
}

#[test]
fn unknown_field_beside_kind_and_body_is_rejected() {
    // serde words this one as an unexpected key rather than "unknown field".
    rejects(
        r#"{"v":1,"id":0,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""},"extra":1}}"#,
        r#"string "extra", expected "kind" or "body""#,
    );
    rejects(
        r#"{"v":1,"id":0,"final":true,"msg":{"extra":1,"kind":"error","body":{"code":"internal","detail":""}}}"#,
        r#"string "extra", expected "kind" or "body""#,
    );
}

#[test]
fn unknown_field_inside_a_body_is_rejected() {
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":{"session":"s","call":3,"tool":"t","arguments":"{}","sudo":true}}}"#,
        "unknown field",
    );
    rejects(
        r#"{"v":1,"id":0,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":"","x":null}}}"#,
        "unknown field",
    );
}

#[test]
fn unknown_field_inside_a_tool_response_variant_is_rejected() {
    rejects(
        r#"{"v":1,"id":9,"final":true,"msg":{"kind":"tool_response","body":{"status":"failed","message":"m","class":"secret"}}}"#,
        "unknown field",
    );
    // A field of another variant is unknown in this one.
    rejects(
        r#"{"v":1,"id":10,"final":true,"msg":{"kind":"tool_response","body":{"status":"denied","reason":"no_grant","message":"m"}}}"#,
        "unknown field",
    );
}

// ---- missing fields ------------------------------------------------------------------------

#[test]
fn each_missing_envelope_field_is_rejected() {
    let full = String::from_utf8(fixture("denied.json")).unwrap();
    for (field, cut) in [
        ("v", r#""v":1,"#),
        ("id", r#""id":10,"#),
        ("final", r#""final":true,"#),
    ] {
        let s = full.replacen(cut, "", 1);
        assert_ne!(s, full);
        rejects(&s, &format!("missing field `{field}`"));
    }
    rejects(r#"{"v":1,"id":10,"final":true}"#, "missing field `msg`");
}

#[test]
fn missing_kind_or_body_is_rejected() {
    rejects(
        r#"{"v":1,"id":0,"final":true,"msg":{"body":{"code":"internal","detail":""}}}"#,
        "missing field `kind`",
    );
    rejects(
        r#"{"v":1,"id":0,"final":true,"msg":{"kind":"error"}}"#,
        "missing field `body`",
    );
}

#[test]
fn missing_fields_inside_bodies_are_rejected() {
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":{"session":"s","call":3,"tool":"t"}}}"#,
        "missing field `arguments`",
    );
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_response","body":{"status":"result","content":"x","class":"public","untrusted":false}}}"#,
        "missing field `truncated`",
    );
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_response","body":{"content":"x","class":"public","untrusted":false,"truncated":false}}}"#,
        "missing field `status`",
    );
    rejects(
        r#"{"v":1,"id":0,"final":true,"msg":{"kind":"error","body":{"code":"internal"}}}"#,
        "missing field `detail`",
    );
}

// ---- unknown tags and names ----------------------------------------------------------------

#[test]
fn unknown_kind_is_rejected() {
    rejects(
        r#"{"v":1,"id":0,"final":true,"msg":{"kind":"tool_rquest","body":{}}}"#,
        "unknown variant",
    );
    rejects(
        r#"{"v":1,"id":0,"final":true,"msg":{"kind":"ToolRequest","body":{}}}"#,
        "unknown variant",
    );
}

#[test]
fn unknown_status_is_rejected() {
    rejects(
        r#"{"v":1,"id":0,"final":true,"msg":{"kind":"tool_response","body":{"status":"approved"}}}"#,
        "unknown variant",
    );
}

#[test]
fn unknown_enum_names_are_rejected() {
    rejects(
        r#"{"v":1,"id":10,"final":true,"msg":{"kind":"tool_response","body":{"status":"denied","reason":"because"}}}"#,
        "unknown deny reason",
    );
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_response","body":{"status":"result","content":"","class":"top_secret","untrusted":false,"truncated":false}}}"#,
        "unknown data class",
    );
    rejects(
        r#"{"v":1,"id":0,"final":true,"msg":{"kind":"error","body":{"code":"oops","detail":""}}}"#,
        "unknown error code",
    );
}

#[test]
fn enum_values_in_object_form_are_rejected() {
    // serde would take {"secret":null} as the unit variant `secret`; the wire does not.
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_response","body":{"status":"result","content":"","class":{"secret":null},"untrusted":false,"truncated":false}}}"#,
        "invalid type",
    );
    rejects(
        r#"{"v":1,"id":10,"final":true,"msg":{"kind":"tool_response","body":{"status":"denied","reason":{"no_grant":null}}}}"#,
        "invalid type",
    );
    rejects(
        r#"{"v":1,"id":0,"final":true,"msg":{"kind":"error","body":{"code":0,"detail":""}}}"#,
        "invalid type",
    );
}

// ---- duplicated keys -----------------------------------------------------------------------

#[test]
fn duplicated_keys_are_rejected_at_every_level() {
    for s in [
        r#"{"v":1,"id":7,"id":8,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        r#"{"v":1,"v":1,"id":7,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"error","kind":"error","body":{"code":"internal","detail":""}}}"#,
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""},"body":{"code":"internal","detail":""}}}"#,
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":"","detail":"x"}}}"#,
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":{"session":"s","session":"t","call":3,"tool":"t","arguments":"{}"}}}"#,
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_response","body":{"status":"failed","status":"failed","message":"m"}}}"#,
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_response","body":{"status":"denied","reason":"no_grant","reason":"taint_too_high"}}}"#,
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_response","body":{"status":"result","content":"a","content":"b","class":"public","untrusted":false,"truncated":false}}}"#,
    ] {
        rejects(s, "duplicate field");
    }
}

// ---- numbers, strings and floats -----------------------------------------------------------

#[test]
fn floats_where_integers_belong_are_rejected() {
    rejects(
        r#"{"v":1,"id":7.0,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        "invalid type: floating point",
    );
    rejects(
        r#"{"v":1.0,"id":7,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        "invalid type: floating point",
    );
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":{"session":"s","call":3e0,"tool":"t","arguments":"{}"}}}"#,
        "invalid type: floating point",
    );
    rejects(
        r#"{"v":1,"id":8,"final":false,"msg":{"kind":"tool_response","body":{"status":"pending_approval","approval":"a","expires":1767225600.5}}}"#,
        "invalid type: floating point",
    );
}

#[test]
fn strings_where_numbers_belong_are_rejected() {
    rejects(
        r#"{"v":"1","id":7,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        "invalid type: string",
    );
    rejects(
        r#"{"v":1,"id":"7","final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        "invalid type: string",
    );
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":{"session":"s","call":"3","tool":"t","arguments":"{}"}}}"#,
        "invalid type: string",
    );
    rejects(
        r#"{"v":1,"id":8,"final":false,"msg":{"kind":"tool_response","body":{"status":"pending_approval","approval":"a","expires":"1767225600"}}}"#,
        "invalid type: string",
    );
}

#[test]
fn numbers_and_other_types_where_strings_or_bools_belong_are_rejected() {
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":{"session":"s","call":3,"tool":5,"arguments":"{}"}}}"#,
        "invalid type",
    );
    // `arguments` is the model's object carried as a string, never the object itself.
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":{"session":"s","call":3,"tool":"t","arguments":{}}}}"#,
        "invalid type",
    );
    rejects(
        r#"{"v":1,"id":7,"final":1,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        "invalid type",
    );
    rejects(
        r#"{"v":1,"id":7,"final":"true","msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        "invalid type",
    );
    rejects(
        r#"{"v":1,"id":7,"final":null,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        "invalid type",
    );
}

#[test]
fn out_of_range_integers_are_rejected() {
    rejects(
        r#"{"v":1,"id":-1,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        "invalid value",
    );
    rejects(
        r#"{"v":1,"id":18446744073709551616,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        "invalid type: floating point",
    );
    rejects(
        r#"{"v":4294967296,"id":7,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#,
        "invalid value",
    );
    // The largest id is fine.
    assert!(decode(
        r#"{"v":1,"id":18446744073709551615,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#
    )
    .is_ok());
}

// ---- arrays in place of objects ------------------------------------------------------------

#[test]
fn arrays_in_place_of_objects_are_rejected_at_every_depth() {
    for s in [
        // the envelope
        r#"[1,7,true,{"kind":"error","body":{"code":"internal","detail":""}}]"#,
        // the message
        r#"{"v":1,"id":7,"final":true,"msg":["error",{"code":"internal","detail":""}]}"#,
        // an error body
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"error","body":["internal",""]}}"#,
        // a request body
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":["s",3,"t","{}"]}}"#,
        // a response body: serde would read the first element as the status
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_response","body":["failed","m"]}}"#,
        r#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_response","body":["result","x","public",false,false]}}"#,
        // a body that arrives before its kind is buffered first; still no arrays
        r#"{"v":1,"id":7,"final":true,"msg":{"body":["s",3,"t","{}"],"kind":"tool_request"}}"#,
        r#"{"v":1,"id":7,"final":true,"msg":{"body":["failed","m"],"kind":"tool_response"}}"#,
    ] {
        rejects(s, "invalid type: sequence");
    }
}

#[test]
fn a_body_before_its_kind_is_still_strict() {
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"body":{"session":"s","call":3,"tool":"t","arguments":"{}","x":1},"kind":"tool_request"}}"#,
        "unknown field",
    );
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"body":{"status":"failed","message":"m","message":"n"},"kind":"tool_response"}}"#,
        "duplicate field",
    );
    rejects(
        r#"{"v":1,"id":7,"final":true,"msg":{"body":{"status":"pending_approval","approval":"a","expires":1.5},"kind":"tool_response"}}"#,
        "invalid type: floating point",
    );
}

// ---- session ids and the rest --------------------------------------------------------------

#[test]
fn session_id_is_checked_when_decoded() {
    for bad in [
        r#""""#,
        r#""../etc""#,
        r#""a/b""#,
        r#""-x""#,
        r#""a b""#,
        r#""a\u0000""#,
        r#""ü""#,
        r#"42"#,
    ] {
        let s = format!(
            r#"{{"v":1,"id":7,"final":true,"msg":{{"kind":"tool_request","body":{{"session":{bad},"call":3,"tool":"t","arguments":"{{}}"}}}}}}"#
        );
        assert!(decode(&s).is_err(), "session {bad} was accepted");
    }
    let long = "a".repeat(129);
    let s = format!(
        r#"{{"v":1,"id":7,"final":true,"msg":{{"kind":"tool_request","body":{{"session":"{long}","call":3,"tool":"t","arguments":"{{}}"}}}}}}"#
    );
    rejects(&s, "at most 128 bytes");
}

#[test]
fn anything_that_is_not_one_json_envelope_is_rejected() {
    let ok = String::from_utf8(fixture("denied.json")).unwrap();
    for s in [
        String::new(),
        "null".into(),
        "\"envelope\"".into(),
        "{}".into(),
        format!("{ok}{ok}"),
        format!("{ok} x"),
        ok[..ok.len() - 1].to_string(),
    ] {
        assert!(decode(&s).is_err(), "{s:?} was accepted");
    }
}

// ---- round trips ---------------------------------------------------------------------------

mod round_trip {
    use super::*;
    use proptest::prelude::*;

    fn session() -> impl Strategy<Value = SessionId> {
        "[A-Za-z0-9][A-Za-z0-9._:-]{0,127}".prop_map(|s| SessionId::new(s).unwrap())
    }

    fn class() -> impl Strategy<Value = DataClass> {
        prop::sample::select(DataClass::ALL.to_vec())
    }

    fn response() -> impl Strategy<Value = ToolResponse> {
        prop_oneof![
            (any::<String>(), any::<u64>()).prop_map(|(approval, e)| {
                ToolResponse::PendingApproval {
                    approval,
                    expires: Timestamp(e),
                }
            }),
            (any::<String>(), class(), any::<bool>(), any::<bool>()).prop_map(
                |(content, class, untrusted, truncated)| ToolResponse::Result {
                    content,
                    class,
                    untrusted,
                    truncated
                }
            ),
            any::<String>().prop_map(|message| ToolResponse::Failed { message }),
            prop::sample::select(DenyReason::ALL.to_vec())
                .prop_map(|reason| ToolResponse::Denied { reason }),
        ]
    }

    fn message() -> impl Strategy<Value = Message> {
        prop_oneof![
            (session(), any::<u64>(), any::<String>(), any::<String>()).prop_map(
                |(session, call, tool, arguments)| Message::ToolRequest(ToolRequest {
                    session,
                    call: CallId(call),
                    tool,
                    arguments
                })
            ),
            response().prop_map(Message::ToolResponse),
            (
                prop::sample::select(ErrorCode::ALL.to_vec()),
                any::<String>()
            )
                .prop_map(|(code, detail)| Message::Error(WireError { code, detail })),
        ]
    }

    proptest! {
        #[test]
        fn encode_then_decode_is_identity(v in any::<u32>(), id in any::<u64>(), fin in any::<bool>(), msg in message()) {
            let env = Envelope { v, id, r#final: fin, msg };
            let bytes = serde_json::to_vec(&env).unwrap();
            let back: Envelope = serde_json::from_slice(&bytes).unwrap();
            prop_assert_eq!(&back, &env);
            // Canonical: encoding the decoded value gives the same bytes.
            prop_assert_eq!(serde_json::to_vec(&back).unwrap(), bytes);
        }
    }
}
