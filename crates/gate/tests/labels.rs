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

/// A label that follows a value (docs/spec.md §3.4 `shows`): the person's own IBAN is
/// confidential in whichever tool's answer it appears, not only in the tool labelled for it.
/// (The fake runner's answer repeats its call's arguments: an answer that shows the IBAN is
/// a call that carried it, written as a standing order's `sender` is.)
const BANK: &str = r#"
[gate]
state = "state"

[lists]
mine = ["DE89 3704 0044 0532 0130 00"]

[[tool]]
name = "bank"
mcp = ["bank-server"]

[[label]]
tool = "bank_*"
shows = "mine"
class = "confidential"
reason = "my own account number"

[[grant]]
tool = "bank_*"
effect = "allow"
"#;

#[test]
fn test_an_answer_that_shows_a_listed_value_is_labelled_by_it_whichever_tool_showed_it() {
    let h = H::with_fake_runner(BANK);
    // Another tool's answer that shows the IBAN, in another form (no spaces, lower case).
    let r = h.call(
        "s1",
        1,
        "bank_get_scheduled_transactions",
        r#"{"note":"sender de89370400440532013000"}"#,
    );
    match &r {
        ToolResponse::Result { class, .. } => assert_eq!(*class, DataClass::Confidential),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.taint("s1"), (DataClass::Confidential, false));
    let rec = result_records(&h);
    assert_eq!(rec[0]["class"], "confidential");
    assert_eq!(
        rec[0]["labels"],
        serde_json::json!([{"rule": 1, "line": 13, "reason": "my own account number"}])
    );
    // An answer that shows no listed value is what its call is: public.
    let r = h.call(
        "s2",
        1,
        "bank_get_balance",
        r#"{"note":"GB29NWBK60161331926819"}"#,
    );
    assert!(matches!(r, ToolResponse::Result { .. }), "{r:?}");
    assert_eq!(h.taint("s2"), (DataClass::Public, false));
    assert!(result_records(&h)[1].get("labels").is_none());
    // A failure that quotes it is labelled by it too.
    let r = h.call(
        "s3",
        1,
        "bank_send_money",
        r#"{"fail":"no funds for DE89370400440532013000"}"#,
    );
    assert!(matches!(r, ToolResponse::Failed { .. }), "{r:?}");
    assert_eq!(h.taint("s3").0, DataClass::Confidential);
}
