//! Label rules at the gate (docs/spec.md §3.4 "Label rules"): a `failed` answer raises the
//! taint by the call's own label, its rules included, and the `result` record names the
//! rules that matched.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::H;
use proto::{DataClass, ToolResponse};

/// A server whose inbox is confidential and whose `#ceo` channel is secret, every answer
/// untrusted; the fake runner answers as `fake_answer` does.
const CHAT: &str = r#"
[gate]
state = "state"
approval_ttl = 60

[[tool]]
name = "chat"
mcp = ["chat-server"]

[[label]]
tool = "chat_read_inbox"
class = "confidential"
reason = "direct messages are private"

[[label]]
tool = "chat_read_channel"
when = [{ pointer = "/channel", equals = "ceo" }]
class = "secret"

[[label]]
tool = "chat_*"
untrusted = true

[[grant]]
tool = "chat_*"
effect = "allow"
"#;

fn result_records(h: &H) -> Vec<serde_json::Value> {
    h.audit_text()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "result")
        .collect()
}

#[test]
fn test_a_failure_is_labelled_by_the_rules_of_its_call() {
    let h = H::with_fake_runner(CHAT);
    let r = h.call("s1", 1, "chat_read_inbox", r#"{"fail":"DM: my salary"}"#);
    assert!(matches!(r, ToolResponse::Failed { .. }), "{r:?}");
    assert_eq!(h.taint("s1"), (DataClass::Confidential, true));
    let rec = result_records(&h);
    assert_eq!(rec.len(), 1);
    assert_eq!(rec[0]["outcome"], "failed");
    assert_eq!(rec[0]["class"], "confidential");
    assert_eq!(
        rec[0]["labels"],
        serde_json::json!([
            {"rule": 1, "line": 11, "reason": "direct messages are private"},
            {"rule": 3, "line": 21}
        ])
    );
    // A call no class rule matches: only the glob's untrusted.
    let r = h.call(
        "s2",
        1,
        "chat_read_channel",
        r#"{"channel":"x","fail":"no"}"#,
    );
    assert!(matches!(r, ToolResponse::Failed { .. }), "{r:?}");
    assert_eq!(h.taint("s2"), (DataClass::Public, true));
    // The conditional rule, on the arguments the gate parsed.
    let r = h.call(
        "s3",
        1,
        "chat_read_channel",
        r#"{"channel":"ceo","fail":"board"}"#,
    );
    assert!(matches!(r, ToolResponse::Failed { .. }), "{r:?}");
    assert_eq!(h.taint("s3"), (DataClass::Secret, true));
    assert_eq!(result_records(&h)[2]["labels"][0]["rule"], 2);
}

#[test]
fn test_a_result_record_names_no_rule_where_none_matched() {
    let h = H::with_fake_runner(CHAT);
    let r = h.call("s1", 1, "chat_read_channel", r#"{"channel":"x"}"#);
    assert!(matches!(r, ToolResponse::Result { .. }), "{r:?}");
    let rec = result_records(&h);
    assert_eq!(
        rec[0]["labels"],
        serde_json::json!([{"rule": 3, "line": 21}])
    );
    let h = H::new();
    let r = h.call("s1", 1, "read", r#"{"path":"/work/x"}"#);
    assert!(matches!(r, ToolResponse::Result { .. }), "{r:?}");
    assert!(
        result_records(&h)[0].get("labels").is_none(),
        "{}",
        h.audit_text()
    );
}
