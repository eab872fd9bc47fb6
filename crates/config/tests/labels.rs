//! `[[label]]` rules (docs/spec.md §3.4 "Label rules"): a good file gives rules that raise
//! the label of a call's answers by the tool called and its arguments; every bad rule is one
//! error naming its line; and no rule ever lowers a label.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use config::{ConfigError, parse};
use policy::{Arguments, Label};
use proptest::prelude::*;
use proto::DataClass;

fn ok(text: &str) -> config::Config {
    match parse(text, "boxmaker.toml", Path::new("/etc/boxmaker-test")) {
        Ok(c) => c,
        Err(e) => panic!("expected a valid config, got: {e}"),
    }
}

/// Parses `text`, expects an error at `line`, and returns its message.
fn bad(text: &str, line: usize) -> String {
    let e = match parse(text, "b.toml", Path::new("/etc/boxmaker-test")) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    };
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "error is more than one line: {msg:?}");
    match &e {
        ConfigError::Invalid { line: l, .. } => assert_eq!(*l, line, "wrong line in {msg:?}"),
        other => panic!("expected a placed error, got {other:?}"),
    }
    msg
}

fn args(json: &str) -> Arguments {
    let a = Arguments::parse(json);
    assert!(matches!(a, Arguments::Json(_)), "not strict JSON: {json}");
    a
}

/// The slack and banking examples of the task: one server, a public channel, DMs, and a
/// bank whose file reader returns what third parties wrote.
const SLACK: &str = r#"
[lists]
open_channels = ["general", "random"]

[[tool]]
name = "slack"
mcp = ["slack-server"]

[[tool]]
name = "banking"
mcp = ["bank-server"]
class = "internal"

[[tool]]
name = "read_file"
builtin = "read_file"

[[label]]
tool = "slack_read_channel_messages"
when = [{ pointer = "/channel", in = "open_channels" }]
class = "internal"
reason = "the open channels are seen by the whole company"

[[label]]
tool = "slack_read_inbox"
class = "confidential"
reason = "direct messages are private"

[[label]]
tool = "slack_read_*"
untrusted = true
reason = "anyone can post in a channel or send a DM"

[[label]]
tool = "banking_readers_read_file"
untrusted = true

[[label]]
tool = "read_file"
when = [{ pointer = "/path", glob = "/data/hr/*" }]
class = "secret"
"#;

#[test]
fn test_label_rules_parse_in_file_order_with_their_lines() {
    let c = ok(SLACK);
    assert_eq!(c.labels.len(), 5);
    let r = &c.labels[0];
    assert_eq!(r.tool.as_str(), "slack_read_channel_messages");
    assert_eq!(r.class, Some(DataClass::Internal));
    assert!(!r.untrusted);
    assert_eq!(r.when.len(), 1);
    assert_eq!(
        r.reason.as_deref(),
        Some("the open channels are seen by the whole company")
    );
    assert_eq!(r.line, 19, "the line of the rule's `tool`");
    assert_eq!(c.labels[2].class, None);
    assert!(c.labels[2].untrusted);
    assert_eq!(c.labels[3].reason, None);
}

#[test]
fn test_an_answer_is_the_highest_of_its_tool_and_every_rule_that_matches() {
    let c = ok(SLACK);
    // #general: the channel rule and the untrusted glob.
    let l = c.answer_label(
        "slack_read_channel_messages",
        &args(r#"{"channel":"general"}"#),
    );
    assert_eq!(l.label, Label::new(DataClass::Internal, true));
    assert_eq!(l.rules, vec![0, 2]);
    // Another channel: only the glob (the tool's own class is public).
    let l = c.answer_label("slack_read_channel_messages", &args(r#"{"channel":"x"}"#));
    assert_eq!(l.label, Label::new(DataClass::Public, true));
    assert_eq!(l.rules, vec![2]);
    // DMs: confidential, untrusted.
    let l = c.answer_label("slack_read_inbox", &args(r#"{"user":"bob"}"#));
    assert_eq!(l.label, Label::new(DataClass::Confidential, true));
    assert_eq!(l.rules, vec![1, 2]);
    // The server's other tools keep the tool's own label.
    let l = c.answer_label("slack_send_message", &args(r#"{"channel":"general"}"#));
    assert_eq!(l.label, Label::new(DataClass::Public, false));
    assert!(l.rules.is_empty());
    // untrusted = true alone keeps the tool's class (internal here) and adds untrusted.
    let l = c.answer_label("banking_readers_read_file", &args("{}"));
    assert_eq!(l.label, Label::new(DataClass::Internal, true));
    assert_eq!(l.rules, vec![3]);
    // A builtin, by its conditions.
    let l = c.answer_label("read_file", &args(r#"{"path":"/data/hr/pay.csv"}"#));
    assert_eq!(l.label, Label::new(DataClass::Secret, false));
    let l = c.answer_label("read_file", &args(r#"{"path":"/data/notes/a"}"#));
    assert_eq!(l.label, Label::new(DataClass::Public, false));
}

#[test]
fn test_arguments_that_are_not_strict_json_match_every_rule_of_the_tool() {
    // The gate refuses no unconditional call for its arguments, and a server may read a
    // duplicated key as its last value: a rule that could not be tested applies (it only
    // ever raises), so no spelling of the arguments escapes one.
    let c = ok(SLACK);
    let dup = Arguments::parse(r#"{"channel":"x","channel":"general"}"#);
    assert_eq!(dup, Arguments::Unparsed);
    let l = c.answer_label("slack_read_channel_messages", &dup);
    assert_eq!(l.label, Label::new(DataClass::Internal, true));
    assert_eq!(l.rules, vec![0, 2]);
    let l = c.answer_label("read_file", &Arguments::Unknown);
    assert_eq!(l.label.class, DataClass::Secret);
    // Still only the rules of that tool.
    let l = c.answer_label("slack_send_message", &Arguments::Unparsed);
    assert!(l.rules.is_empty());
}

#[test]
fn test_reach_is_part_of_the_answer_label_of_foreign_code() {
    let c = ok(r#"
[[mount]]
name = "vault"
host = "/srv/vault"
at = "/data/vault"
class = "secret"

[[tool]]
name = "srv"
mcp = ["x"]
mounts = ["vault"]

[[label]]
tool = "srv_*"
class = "internal"
"#);
    let l = c.answer_label("srv_get", &args("{}"));
    assert_eq!(l.label, Label::new(DataClass::Secret, false), "reach wins");
    assert_eq!(
        l.rules,
        vec![0],
        "the rule matched, even though it raised nothing"
    );
}

#[test]
fn test_a_rule_with_neither_class_nor_untrusted_is_an_error_on_its_line() {
    let e = bad(
        "[[tool]]\nname = \"s\"\nmcp = [\"x\"]\n\n[[label]]\ntool = \"s_*\"\nreason = \"why\"\n",
        6,
    );
    assert!(
        e.contains("label rule") && e.contains("`class`") && e.contains("`untrusted = true`"),
        "{e}"
    );
    // `untrusted = false` raises nothing either.
    let e = bad("[[label]]\ntool = \"s_*\"\nuntrusted = false\n", 3);
    assert!(e.contains("`untrusted = true`"), "{e}");
}

#[test]
fn test_closed_is_refused_in_a_label_rule_with_a_sentence_of_its_own() {
    let e = bad(
        "[[label]]\ntool = \"s_*\"\nclass = \"internal\"\nclosed = true\n",
        4,
    );
    assert!(
        e.contains("`closed`") && e.contains("label rule") && !e.contains("unknown field"),
        "{e}"
    );
}

#[test]
fn test_a_rule_is_checked_like_a_grant() {
    // Unknown keys, bad classes, bad tool patterns, bad conditions: each on its line.
    let e = bad(
        "[[label]]\ntool = \"s_*\"\nclass = \"internal\"\neffect = \"allow\"\n",
        4,
    );
    assert!(e.contains("unknown field `effect`"), "{e}");
    let e = bad("[[label]]\ntool = \"s_*\"\nclass = \"top\"\n", 3);
    assert!(e.contains("top"), "{e}");
    let e = bad("[[label]]\ntool = \"s/x\"\nclass = \"internal\"\n", 2);
    assert!(e.contains("label rule `tool` pattern"), "{e}");
    let e = bad(
        "[[label]]\ntool = \"s_*\"\nclass = \"internal\"\nwhen = [{ pointer = \"channel\", equals = \"x\" }]\n",
        4,
    );
    assert!(e.contains("JSON pointer"), "{e}");
    let e = bad(
        "[[label]]\ntool = \"s_*\"\nclass = \"internal\"\nwhen = [{ pointer = \"/c\", in = \"nope\" }]\n",
        4,
    );
    assert!(e.contains("no list named \"nope\""), "{e}");
    // The typed tests work as in a grant.
    let c = ok(r#"
[[label]]
tool = "mail_read"
when = [{ pointer = "/from", email = { domain = ["acme.com"] } }]
class = "internal"
"#);
    let l = c.answer_label("mail_read", &args(r#"{"from":"Bob@ACME.com"}"#));
    assert_eq!(l.label.class, DataClass::Internal);
    let l = c.answer_label("mail_read", &args(r#"{"from":"a@x.com"}"#));
    assert_eq!(l.label.class, DataClass::Public);
}

#[test]
fn test_the_arguments_text_is_read_as_the_gate_reads_it() {
    let c = ok(SLACK);
    for (text, class) in [
        (r#"{"channel":"general"}"#, DataClass::Internal),
        (r#"{"channel":"x"}"#, DataClass::Public),
        (
            r#"{"channel":"x","channel":"general"}"#,
            DataClass::Internal,
        ),
        ("not json", DataClass::Internal),
    ] {
        let l = c.answer_label_for("slack_read_channel_messages", text);
        assert_eq!(
            l,
            c.answer_label("slack_read_channel_messages", &Arguments::parse(text))
        );
        assert_eq!(l.label.class, class, "{text}");
    }
    // A tool whose rules test nothing: any text, the same label.
    let l = c.answer_label_for("slack_read_inbox", "not json");
    assert_eq!(l.label, Label::new(DataClass::Confidential, true));
    assert_eq!(l.rules, vec![1, 2]);
}

#[test]
fn test_a_config_without_label_rules_labels_as_before() {
    let c = ok("[[tool]]\nname = \"s\"\nmcp = [\"x\"]\nclass = \"internal\"\nuntrusted = true\n");
    assert!(c.labels.is_empty());
    let l = c.answer_label("s_x", &args("{}"));
    assert_eq!(l.label, c.floor("s_x"));
    assert!(l.rules.is_empty());
}

#[test]
fn test_explain_says_which_rules_match_and_why() {
    let c = ok(SLACK);
    let lines = c.explain_labels(
        "slack_read_channel_messages",
        &args(r#"{"channel":"random"}"#),
    );
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[0].starts_with(
            "label rule 1 (line 19, tool \"slack_read_channel_messages\", internal): matches"
        ) && lines[0].contains("the open channels are seen by the whole company")
            && lines[0].contains("condition 1 holds: /channel is the string \"random\""),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("label rule 3 (line 30, tool \"slack_read_*\", untrusted): matches"),
        "{}",
        lines[1]
    );
    let lines = c.explain_labels("slack_read_channel_messages", &args(r#"{"channel":"ceo"}"#));
    assert!(
        lines[0].contains("does not match") && lines[0].contains("condition 1 fails"),
        "{}",
        lines[0]
    );
    let lines = c.explain_labels("slack_read_channel_messages", &Arguments::Unparsed);
    assert!(
        lines[0].contains("matches: the arguments are not strict JSON"),
        "{}",
        lines[0]
    );
}

fn class() -> impl Strategy<Value = DataClass> {
    prop_oneof![
        Just(DataClass::Public),
        Just(DataClass::Internal),
        Just(DataClass::Confidential),
        Just(DataClass::Secret),
    ]
}

fn class_name(c: DataClass) -> &'static str {
    match c {
        DataClass::Public => "public",
        DataClass::Internal => "internal",
        DataClass::Confidential => "confidential",
        DataClass::Secret => "secret",
    }
}

/// A rule: which tool pattern, an optional condition on `/k`, a class or none, untrusted.
fn rule() -> impl Strategy<Value = (usize, Option<i64>, Option<DataClass>, bool)> {
    (
        0usize..4,
        proptest::option::of(0i64..3),
        proptest::option::of(class()),
        any::<bool>(),
    )
        .prop_filter("a rule raises something", |(_, _, c, u)| c.is_some() || *u)
}

const PATTERNS: [&str; 4] = ["srv_a", "srv_*", "*", "other_*"];

proptest! {
    /// Rules only raise: whatever rules a file has and whatever the call, the answer's
    /// label is at least the tool's own floor and at least every rule that matched; adding a
    /// rule never lowers the label of any call.
    #[test]
    fn prop_rules_never_lower_a_label(
        tool_class in class(),
        untrusted in any::<bool>(),
        rules in proptest::collection::vec(rule(), 0..6),
        k in proptest::option::of(0i64..3),
        dup in any::<bool>(),
    ) {
        let mut text = format!(
            "[[tool]]\nname = \"srv\"\nmcp = [\"x\"]\nclass = \"{}\"\nuntrusted = {untrusted}\n",
            class_name(tool_class)
        );
        let mut texts = Vec::new();
        for (p, cond, c, u) in &rules {
            let mut r = format!("\n[[label]]\ntool = \"{}\"\n", PATTERNS[*p]);
            if let Some(v) = cond {
                r.push_str(&format!("when = [{{ pointer = \"/k\", equals = {v} }}]\n"));
            }
            if let Some(c) = c {
                r.push_str(&format!("class = \"{}\"\n", class_name(*c)));
            }
            if *u {
                r.push_str("untrusted = true\n");
            }
            texts.push(r);
        }
        let call = match (k, dup) {
            (_, true) => Arguments::parse(r#"{"k":1,"k":2}"#),
            (Some(v), false) => Arguments::parse(&format!(r#"{{"k":{v}}}"#)),
            (None, false) => Arguments::parse("{}"),
        };
        let floor = ok(&text).floor("srv_a");
        let mut before = floor;
        let mut expected = floor;
        let mut expected_rules = Vec::new();
        for (i, (r, (p, cond, c, u))) in texts.iter().zip(&rules).enumerate() {
            text.push_str(r);
            let cfg = ok(&text);
            let got = cfg.answer_label("srv_a", &call);
            // At least the floor, and at least what it was with fewer rules.
            prop_assert!(got.label.class >= floor.class && got.label.class >= before.class);
            prop_assert!(got.label.untrusted >= floor.untrusted);
            prop_assert!(got.label.untrusted >= before.untrusted);
            // Exactly the floor joined with the rules an independent reading says match:
            // the pattern names srv_a, and the condition holds or cannot be tested.
            let named = PATTERNS[*p] != "other_*";
            let holds = match cond {
                None => true,
                Some(v) => dup || k == Some(*v),
            };
            if named && holds {
                expected.class = expected.class.max(c.unwrap_or(DataClass::Public));
                expected.untrusted |= *u;
                expected_rules.push(i);
            }
            prop_assert_eq!(got.label, expected);
            prop_assert_eq!(&got.rules, &expected_rules);
            before = got.label;
        }
    }
}

#[test]
fn test_a_rule_may_say_which_argument_names_the_place_read() {
    let c = ok("[[label]]\ntool = \"s_read_file\"\nsource = \"/file_path\"\n");
    assert_eq!(c.labels[0].source.as_deref(), Some("/file_path"));
    assert!(
        c.labels[0]
            .describe(0)
            .contains("reads the place /file_path names"),
        "{}",
        c.labels[0].describe(0)
    );
    // A source raises nothing: the answer is the tool's own label.
    let l = c.answer_label("s_read_file", &args(r#"{"file_path":"a.txt"}"#));
    assert!(!l.label.untrusted, "{l:?}");
    // Not a pointer: refused on its line with what to write.
    for not in ["file_path", "/", ""] {
        let e = bad(
            &format!("[[label]]\ntool = \"s_read_file\"\nsource = {not:?}\n"),
            3,
        );
        assert!(e.contains("JSON pointer") && e.contains("\"/url\""), "{e}");
    }
}

/// `shows = "LIST"` (docs/spec.md §3.4): a rule that labels an answer by a value it shows.
const SHOWS: &str = r#"
[lists]
mine = ["DE89 3704 0044 0532 0130 00", "emma.johnson@bluesparrow.com"]
names = ["Emma Johnson"]

[[tool]]
name = "bank"
mcp = ["bank-server"]

[[label]]
tool = "bank_*"
shows = "mine"
class = "confidential"
"#;

#[test]
fn a_shows_rule_labels_an_answer_by_what_it_shows_never_the_call_before() {
    let c = ok(SHOWS);
    // Before the call: nothing (the rule looks at answers).
    let before = c.answer_label("bank_get_iban", &args("{}"));
    assert_eq!(before.label.class, DataClass::Public);
    assert!(before.rules.is_empty());
    let shown = policy::values::in_answer("sender: de89370400440532013000, amount 50");
    let after = c.shown_label("bank_get_scheduled_transactions", &args("{}"), &shown);
    assert_eq!(after.label, Label::new(DataClass::Confidential, false));
    assert_eq!(after.rules, vec![0]);
    let other = policy::values::in_answer("write to Emma.Johnson@BlueSparrow.com");
    assert_eq!(
        c.shown_label("bank_x", &args("{}"), &other).label.class,
        DataClass::Confidential
    );
    let none = policy::values::in_answer("sender: GB29NWBK60161331926819");
    assert_eq!(
        c.shown_label("bank_x", &args("{}"), &none).label.class,
        DataClass::Public
    );
    // A tool the rule does not name: not its answer to label.
    assert_eq!(
        c.shown_label("mail_read", &args("{}"), &shown).label.class,
        DataClass::Public
    );
}

#[test]
fn a_shows_rule_that_could_label_nothing_is_refused() {
    let names = SHOWS.replace("shows = \"mine\"", "shows = \"names\"");
    let msg = bad(&names, 4);
    assert!(
        msg.contains("holds no value the values reader finds"),
        "{msg}"
    );
    let missing = SHOWS.replace("shows = \"mine\"", "shows = \"theirs\"");
    let msg = bad(&missing, 12);
    assert!(msg.contains("no list named \"theirs\""), "{msg}");
    let nothing = SHOWS.replace("class = \"confidential\"\n", "");
    let msg = bad(&nothing, 11);
    assert!(msg.contains("raises nothing"), "{msg}");
}
