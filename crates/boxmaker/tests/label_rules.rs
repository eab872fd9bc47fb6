//! Label rules end to end (docs/spec.md §3.4 "Label rules"), through the real binary and a
//! real MCP server in a session box (`tests/servers/chat_server.py`: one server, a public
//! channel, a private one, direct messages, a way to post): the answers of a call are
//! labelled by the tool called and its arguments, for every answer — a result, a `failed`,
//! a file tool's, `run`'s — and a grant's `max_class` is then a destination's clearance.
//!
//! The attacks: a duplicated key that the gate cannot parse strictly but the server reads as
//! its last value (the rule must still apply), and a server that fails with the private text
//! in its error (the failure must carry the rule's label).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use testkit::{Lab, Run, client_python, servers_dir};

/// A boxmaker command or client script that has not finished by then has hung.
const DEADLINE: Duration = Duration::from_secs(90);

const SERVERS_AT: &str = "/opt/servers";

/// The chat server and its rules: #general is internal, #ceo confidential, the inbox
/// confidential; reading is allowed, posting only to #general and only up to internal.
fn chat_config(state: &Path) -> String {
    assert!(
        Path::new("/usr/bin/python3").exists(),
        "the chat test server runs under /usr/bin/python3, which is missing"
    );
    format!(
        r#"
[gate]
state = {state:?}

[[mount]]
name = "servers"
host = {servers:?}
at = "{SERVERS_AT}"
class = "public"

[[mount]]
name = "notes"
host = "notes"
at = "/data/notes"
class = "public"

[[tool]]
name = "chat"
mcp = ["/usr/bin/python3", "{SERVERS_AT}/chat_server.py"]
mounts = ["servers"]

[[tool]]
name = "read_file"
builtin = "read_file"

[[tool]]
name = "run"
builtin = "run"
mounts = []

[lists]
company_wide = ["general"]

[[label]]
tool = "chat_read_channel_messages"
when = [{{ pointer = "/channel", in = "company_wide" }}]
class = "internal"
reason = "the whole company reads #general"

[[label]]
tool = "chat_read_channel_messages"
when = [{{ pointer = "/channel", equals = "ceo" }}]
class = "confidential"
reason = "the board's channel"

[[label]]
tool = "chat_read_inbox"
class = "confidential"
reason = "direct messages are private"

[[label]]
tool = "read_file"
when = [{{ pointer = "/path", glob = "/data/notes/hr/*" }}]
class = "secret"
reason = "HR notes"

[[label]]
tool = "run"
untrusted = true
reason = "whatever a command prints"

[[grant]]
tool = "chat_read_*"
effect = "allow"

[[grant]]
tool = "chat_send_message"
effect = "allow"
max_class = "internal"
when = [{{ pointer = "/channel", in = "company_wide" }}]

[[grant]]
tool = "read_file"
effect = "allow"

[[grant]]
tool = "run"
effect = "allow"
"#,
        servers = servers_dir().display().to_string(),
    )
}

/// One test's config dir.
struct Env {
    lab: Lab,
}

impl Env {
    fn new(name: &str) -> Self {
        let lab = testkit::lab!("label-rules", name).in_its_dir();
        lab.write("notes/hr/pay.csv", "alice,91000\n");
        lab.write("notes/menu.txt", "soup\n");
        lab.write_config(&chat_config(&lab.path(".boxmaker")));
        Env { lab }
    }

    fn config(&self) -> PathBuf {
        self.lab.config()
    }

    fn boxmaker(&self, args: &[&str]) -> Run {
        self.lab.run_within(args, DEADLINE)
    }

    /// `boxmaker call --json`: the wire body it printed.
    fn call(&self, session: &str, tool: &str, args: &str) -> Value {
        let run = self.boxmaker(&["call", "--session", session, "--json", tool, args]);
        serde_json::from_str(run.stdout.trim())
            .unwrap_or_else(|e| panic!("call {tool} printed no JSON answer: {e}\n{}", run.show()))
    }

    /// The session's taint as the gate recorded it: (class, untrusted).
    fn taint(&self, session: &str) -> (String, bool) {
        let run = self.boxmaker(&["sessions", "--json"]);
        let v: Value = serde_json::from_str(run.stdout.trim()).unwrap();
        v["body"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == session)
            .map_or(("public".into(), false), |s| {
                (
                    s["class"].as_str().unwrap().to_owned(),
                    s["untrusted"].as_bool().unwrap(),
                )
            })
    }

    /// The audit's `result` records of `session`, oldest first.
    fn results(&self, session: &str) -> Vec<Value> {
        let run = self.boxmaker(&["audit", "tail", "-n", "200", "--json"]);
        let v: Value = serde_json::from_str(run.stdout.trim())
            .unwrap_or_else(|e| panic!("audit tail: {e}\n{}", run.show()));
        let lines = v["body"]["lines"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("no lines in {v}"));
        let mut out: Vec<Value> = lines
            .iter()
            .map(|l| serde_json::from_str::<Value>(l.as_str().unwrap()).unwrap())
            .filter(|e| e["event"] == "result" && e["session"] == session)
            .collect();
        out.sort_by_key(|e| e["seq"].as_u64());
        out
    }
}

fn class_of(answer: &Value) -> (&str, bool) {
    (
        answer["class"].as_str().unwrap_or("(none)"),
        answer["untrusted"].as_bool().unwrap_or(false),
    )
}

/// The issue's chain through `boxmaker mcp` and the Python SDK: #general internal and
/// cleared for internal, the inbox confidential, so the DMs cannot be posted there, while
/// the server's other tools leave the taint alone.
#[test]
fn test_label_rules_through_mcp_make_a_destination_refuse_what_is_above_its_clearance() {
    let env = Env::new("mcp-chain");
    let o = Command::new(client_python())
        .args(["-c", "import mcp.client.stdio"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the Python MCP SDK is missing: run `make deps` ({})",
        String::from_utf8_lossy(&o.stderr).trim()
    );
    let run = env
        .lab
        .python("label_chain.py", &[("CHAIN_SESSION", "chain-1")], DEADLINE);
    assert!(
        run.status.success() && run.stdout.lines().any(|l| l == "ok"),
        "label_chain.py failed\n{}",
        run.show()
    );
    assert_eq!(env.taint("chain-1"), ("confidential".into(), false));
    // The audit names the rule behind each raised label, with its reason.
    let results = env.results("chain-1");
    let labels: Vec<(String, Value)> = results
        .iter()
        .map(|r| (r["class"].as_str().unwrap().to_owned(), r["labels"].clone()))
        .collect();
    assert_eq!(labels.len(), 4, "{results:#?}");
    assert_eq!(labels[0], ("public".into(), Value::Null), "#random");
    assert_eq!(
        labels[1],
        (
            "internal".into(),
            json!([{"rule": 1, "line": 35, "reason": "the whole company reads #general"}])
        )
    );
    assert_eq!(labels[2], ("internal".into(), Value::Null), "the send");
    assert_eq!(
        labels[3],
        (
            "confidential".into(),
            json!([{"rule": 3, "line": 47, "reason": "direct messages are private"}])
        )
    );
    let verify = env.boxmaker(&["audit", "verify"]);
    assert!(verify.status.success(), "{}", verify.show());
}

/// The attack: the gate reads `{"channel":"random","channel":"ceo"}` as not strict JSON, so
/// no condition can be tested on it, while the server reads the last `channel` and answers
/// with the board's channel. A rule that was skipped there would label the board's text
/// public; a rule that cannot be tested applies.
#[test]
fn test_a_duplicated_key_does_not_escape_a_conditional_label_rule() {
    let env = Env::new("duplicate-key");
    let a = env.call(
        "dup",
        "chat_read_channel_messages",
        r#"{"channel":"random","channel":"ceo"}"#,
    );
    assert_eq!(a["status"], "result", "{a}");
    let content = a["content"].as_str().unwrap();
    assert!(
        content.contains("the acquisition closes friday"),
        "the server read another channel than the attack meant: {content}"
    );
    assert_eq!(class_of(&a), ("confidential", false), "{a}");
    assert_eq!(env.taint("dup"), ("confidential".into(), false));
    // The board's text cannot be posted to #general now.
    let a = env.call(
        "dup",
        "chat_send_message",
        r#"{"channel":"general","body":"the acquisition closes friday"}"#,
    );
    assert_eq!(a["status"], "denied", "{a}");
    assert_eq!(a["reason"], "taint_too_high", "{a}");
    // Strict arguments are labelled by what they say.
    let a = env.call(
        "strict",
        "chat_read_channel_messages",
        r#"{"channel":"random"}"#,
    );
    assert_eq!(class_of(&a), ("public", false), "{a}");
}

/// The attack: the server fails the call with the DMs in its error text. A `failed` carries
/// the rule's label as a result would (the gate labels failures by the same function).
#[test]
fn test_a_failure_carries_the_label_of_its_rules() {
    let env = Env::new("failure");
    let a = env.call("fail", "chat_read_inbox", r#"{"user":"me","broken":true}"#);
    assert_eq!(a["status"], "failed", "{a}");
    assert!(
        a["message"]
            .as_str()
            .unwrap()
            .contains("my salary is 91000"),
        "{a}"
    );
    assert_eq!(env.taint("fail"), ("confidential".into(), false));
    let results = env.results("fail");
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(results[0]["outcome"], "failed");
    assert_eq!(results[0]["class"], "confidential");
    assert_eq!(results[0]["labels"][0]["rule"], 3, "{results:#?}");
}

/// Label rules apply to boxmaker's own file tools (on top of the file's mount) and to
/// `run`, whose answers are labelled like a server's.
#[test]
fn test_file_tools_and_run_are_labelled_by_their_rules() {
    let env = Env::new("builtins");
    let a = env.call("files", "read_file", r#"{"path":"/data/notes/menu.txt"}"#);
    assert_eq!(a["status"], "result", "{a}");
    assert_eq!(class_of(&a), ("public", false), "{a}");
    let a = env.call("files", "read_file", r#"{"path":"/data/notes/hr/pay.csv"}"#);
    assert_eq!(a["status"], "result", "{a}");
    assert_eq!(class_of(&a), ("secret", false), "{a}");
    assert_eq!(env.taint("files"), ("secret".into(), false));
    let a = env.call("cmd", "run", r#"{"argv":["/bin/echo","hello"]}"#);
    assert_eq!(a["status"], "result", "{a}");
    assert_eq!(class_of(&a), ("public", true), "{a}");
    assert_eq!(env.taint("cmd"), ("public".into(), true));
}

/// `check --explain` says which rules match the call and the label its answers get; a rule
/// that names no tool is a warning, not an error.
#[test]
fn test_check_explains_the_label_and_warns_of_a_rule_for_no_tool() {
    let env = Env::new("check");
    let run = env.boxmaker(&[
        "check",
        "--session",
        "s",
        "--tool",
        "chat_read_channel_messages",
        "--arguments",
        r#"{"channel":"general"}"#,
        "--explain",
    ]);
    assert!(run.status.success(), "{}", run.show());
    assert_eq!(run.stdout.lines().next(), Some("allow"), "{}", run.show());
    for want in [
        "label rule 1 (line 35, tool \"chat_read_channel_messages\", internal): matches (\"the whole company reads #general\") [condition 1 holds: /channel is the string \"general\"]",
        "label rule 2 (line 41, tool \"chat_read_channel_messages\", confidential): does not match (\"the board's channel\") [condition 1 fails: /channel is the string \"general\"]",
        "answers labelled (internal, trusted): the tool's own (public, trusted), with its reach, raised by label rule 1",
    ] {
        assert!(run.stdout.contains(want), "no {want:?}\n{}", run.show());
    }
    let mut text = std::fs::read_to_string(env.config()).unwrap();
    text.push_str("\n[[label]]\ntool = \"chta_read_inbox\"\nclass = \"secret\"\n");
    std::fs::write(env.config(), text).unwrap();
    let run = env.boxmaker(&["check", "--session", "s", "--tool", "read_file"]);
    assert!(run.status.success(), "{}", run.show());
    assert!(
        run.stderr.contains(
            "label rule 6 (tool \"chta_read_inbox\") names no configured tool and matches no downstream tool, so it labels nothing"
        ),
        "{}",
        run.show()
    );
}
