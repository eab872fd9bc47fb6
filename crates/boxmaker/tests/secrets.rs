//! Secrets end to end (docs/spec.md §3.8), through the real binary and a real MCP server in a
//! session box (`tests/servers/secret_echo.py`, handed a `[[secret]]` as `ECHOED_TOKEN`),
//! which tries every way to show the model its value: as it is and in every common encoding,
//! in text blocks, an embedded resource, structured content (a key too), its tool
//! description, an `isError` answer, a JSON-RPC error, its stderr and a crash. Every answer
//! must reach the model redacted; a `run` that names no secret is not given it; and a grep of
//! everything the run left — boxmaker's stdout and stderr, the audit log, the database, the
//! discovery file, the server's log, the gate's log — finds no encoding of the value.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use testkit::{Lab, McpClient, Run, files_below, servers_dir};

const DEADLINE: Duration = Duration::from_secs(90);
const SERVERS_AT: &str = "/opt/servers";
/// The secret: long enough, and with characters every encoding spells differently.
const VALUE: &str = "ghp_T0k3n/with+odd chars?&=~x";
const VAR: &str = "BXM_TEST_SECRET_TOKEN";

/// Every spelling of `VALUE` a leak could take, computed here independently of boxmaker.
fn spellings() -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let b = VALUE.as_bytes();
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    let pct = |upper: bool| -> String {
        b.iter()
            .map(|&c| {
                if c.is_ascii_alphanumeric() || b"-._~".contains(&c) {
                    char::from(c).to_string()
                } else if upper {
                    format!("%{c:02X}")
                } else {
                    format!("%{c:02x}")
                }
            })
            .collect()
    };
    vec![
        VALUE.to_string(),
        STANDARD.encode(b),
        STANDARD_NO_PAD.encode(b),
        URL_SAFE.encode(b),
        URL_SAFE_NO_PAD.encode(b),
        hex.clone(),
        hex.to_uppercase(),
        pct(true),
        pct(false),
        // The middle of the value, as a part of it would leak.
        VALUE[4..20].to_string(),
        STANDARD_NO_PAD.encode(&b[3..18]),
    ]
}

/// The first spelling of the value in `bytes`, if any.
fn leak_in(bytes: &[u8]) -> Option<String> {
    spellings()
        .into_iter()
        .find(|s| bytes.windows(s.len()).any(|w| w == s.as_bytes()))
}

fn config(lab: &Lab, extra: &str) -> String {
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

[[secret]]
name = "gh"
env = "{VAR}"

[[tool]]
name = "echo"
mcp = ["/usr/bin/python3", "{SERVERS_AT}/secret_echo.py"]
mounts = ["servers"]
secrets = {{ ECHOED_TOKEN = "gh" }}

[[tool]]
name = "run"
builtin = "run"
mounts = []

[[tool]]
name = "run_gh"
builtin = "run"
mounts = []
secrets = ["gh"]

[[tool]]
name = "read_file"
builtin = "read_file"
{extra}
[[grant]]
tool = "*"
effect = "allow"
"#,
        state = lab.path(".boxmaker"),
        servers = servers_dir().display().to_string(),
    )
}

fn lab(name: &str) -> Lab {
    assert!(
        Path::new("/usr/bin/python3").exists(),
        "the secret test server runs under /usr/bin/python3, which is missing"
    );
    let mut lab = testkit::lab!("secrets", name).in_its_dir();
    lab.vars.push((VAR.into(), VALUE.into()));
    lab.mkdir("notes");
    lab.write_config(&config(&lab, ""));
    lab
}

/// `boxmaker call --json`: the wire answer, and the run (its output is grepped later).
fn call(lab: &Lab, session: &str, tool: &str, args: &str) -> (Value, Run) {
    let run = lab.run_within(
        &["call", "--session", session, "--json", tool, args],
        DEADLINE,
    );
    let v = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("call {tool} printed no JSON answer: {e}\n{}", run.show()));
    (v, run)
}

#[test]
fn every_answer_of_a_server_that_echoes_its_secret_is_redacted() {
    let lab = lab("echo");
    // What the server says in every encoding, as the model gets it.
    let (echo, _) = call(&lab, "s1", "echo_echo", "{}");
    assert_eq!(echo["status"], "result", "{echo}");
    let content = echo["content"].as_str().unwrap();
    assert!(leak_in(content.as_bytes()).is_none(), "leak: {content}");
    let c: Value = serde_json::from_str(content).unwrap();
    let texts: Vec<&str> = c["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    // Every encoding the server used came back as the marker, not as something else.
    for key in [
        "raw",
        "base64",
        "base64_nopad",
        "base64url",
        "base64url_nopad",
        "hex",
        "HEX",
        "url",
        "url_lower",
        "form",
    ] {
        let line = texts
            .iter()
            .find(|t| t.starts_with(&format!("{key}: ")))
            .unwrap_or_else(|| panic!("no {key} block in {texts:?}"));
        assert_eq!(*line, format!("{key}: [secret gh]"), "{key}");
    }
    for key in ["basic_auth", "bearer_b64", "shifted_b64"] {
        let line = texts.iter().find(|t| t.starts_with(key)).unwrap();
        assert!(line.contains("[secret gh]"), "{line}");
    }
    assert_eq!(c["structuredContent"]["token"], "[secret gh]", "{c}");
    assert!(c["structuredContent"]["[secret gh]"].is_object(), "{c}");
    assert_eq!(
        c["content"].as_array().unwrap().last().unwrap()["resource"]["text"],
        "[secret gh]"
    );

    // A failure, a refusal and a crash quote it: redacted too.
    for tool in ["echo_fail", "echo_refuse", "echo_crash"] {
        let (v, _) = call(&lab, "s1", tool, "{}");
        assert_eq!(v["status"], "failed", "{tool}: {v}");
        let m = v["message"].as_str().unwrap();
        assert!(leak_in(m.as_bytes()).is_none(), "{tool} leaks: {m}");
        if tool != "echo_crash" {
            assert!(m.contains("[secret gh]"), "{tool}: {m}");
        }
    }

    // A file a box left it in (here: written by the operator into a mount) is read back
    // redacted, by a tool that was never handed the secret.
    lab.write("notes/left.txt", format!("the token was {VALUE}\n"));
    let (read, _) = call(
        &lab,
        "s1",
        "read_file",
        r#"{"path":"/data/notes/left.txt"}"#,
    );
    let text = read["content"].as_str().unwrap();
    assert!(
        text.contains("[secret gh]") && leak_in(text.as_bytes()).is_none(),
        "{read}"
    );

    // `run` gets the variable only where its tool names the secret.
    let (plain, _) = call(
        &lab,
        "s1",
        "run",
        &json!({"argv": ["/bin/sh", "-c", format!("echo \"${{{VAR}:-unset}}\"; env")]}).to_string(),
    );
    let out = plain["content"].as_str().unwrap();
    let out: Value = serde_json::from_str(out).unwrap();
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("unset\n"), "{stdout}");
    assert!(
        !stdout.contains("[secret") && !stdout.contains("ECHOED_TOKEN"),
        "{stdout}"
    );
    let (named, _) = call(
        &lab,
        "s1",
        "run_gh",
        &json!({"argv": ["/bin/sh", "-c", format!("echo \"${VAR}\"; printf %s \"${VAR}\" | base64")]})
            .to_string(),
    );
    let out: Value = serde_json::from_str(named["content"].as_str().unwrap()).unwrap();
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("[secret gh]\n"), "{stdout}");
    assert!(leak_in(stdout.as_bytes()).is_none(), "{stdout}");

    // Over MCP: the description that quoted the value is redacted in tools/list.
    let mut mcp = McpClient::spawn(lab.mcp("s2"), DEADLINE);
    mcp.initialize("secrets-test");
    let tools = mcp.tools();
    let echo_def = tools
        .iter()
        .find(|t| t["name"] == "echo_echo")
        .expect("echo_echo listed");
    assert_eq!(
        echo_def["description"],
        "Echoes its token ([secret gh]) in many encodings"
    );
    let r = mcp.call("echo_echo", json!({}));
    assert!(leak_in(r.to_string().as_bytes()).is_none(), "{r}");
    assert!(r.to_string().contains("[secret gh]"));
    drop(mcp);

    // The whole run's traces: the command outputs kept under runs/, the state directory
    // (audit log, database and its WAL, tools.json, logs, gate.log), the front's stderr.
    std::thread::sleep(Duration::from_secs(4));
    let mut grepped = 0;
    for f in files_below(&lab.dir, Some(&lab.path("notes"))) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        if let Some(s) = leak_in(&bytes) {
            panic!("{} holds the secret as {s:?}", f.display());
        }
        grepped += 1;
    }
    let state = lab.path(".boxmaker");
    for must in [
        "audit.log",
        "boxmaker.db",
        "tools.json",
        "logs/s1/echo.stderr",
    ] {
        assert!(state.join(must).is_file(), "no {must} was written to grep");
    }
    let log = std::fs::read_to_string(state.join("logs/s1/echo.stderr")).unwrap();
    assert!(log.contains("starting with [secret gh]"), "{log}");
    assert!(grepped > 10, "only {grepped} files");
}

#[test]
fn a_secret_no_one_defined_is_refused_at_load_by_name() {
    let lab = lab("undefined");
    let text = lab
        .config_text()
        .replace("secrets = [\"gh\"]", "secrets = [\"gh2\"]");
    lab.write_config(&text);
    let run = lab.run_within(&["call", "--session", "s", "run", "{}"], DEADLINE);
    assert_eq!(run.code(), Some(2), "{}", run.show());
    let err = run.stderr.trim();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("names the secret \"gh2\", but no [[secret]]"),
        "{err}"
    );
}

#[test]
fn a_secret_file_others_may_read_is_refused_with_one_sentence() {
    use std::os::unix::fs::PermissionsExt;
    let lab = lab("bad-mode");
    // A value of its own: the config's `gh` secret holds VALUE, and an answer holding a value
    // two secrets share may be redacted under either name.
    let file = lab.write("private/token", "a-filed-t0ken-of-its-own\n");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    lab.write_config(&config(
        &lab,
        r#"
[[secret]]
name = "filed"
file = "private/token"

[[tool]]
name = "run_filed"
builtin = "run"
mounts = []
secrets = { TOKEN = "filed" }
"#,
    ));
    let (v, run) = call(&lab, "s", "run_filed", r#"{"argv":["/bin/true"]}"#);
    assert_eq!(v["status"], "failed", "{}", run.show());
    let m = v["message"].as_str().unwrap();
    assert!(
        m.contains("has mode 0644") && m.contains("chmod 600") && m.contains("nothing ran"),
        "{m}"
    );
    assert!(!m.contains("a-filed-t0ken-of-its-own"), "{m}");
    // `check` says so before any call.
    let check = lab.run_within(
        &["check", "--session", "s", "--tool", "run_filed"],
        DEADLINE,
    );
    assert!(check.stderr.contains("has mode 0644"), "{}", check.show());
    // Made private, it is read.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (v, run) = call(
        &lab,
        "s",
        "run_filed",
        r#"{"argv":["/bin/sh","-c","echo \"$TOKEN\""]}"#,
    );
    assert_eq!(v["status"], "result", "{}", run.show());
    let content = v["content"].as_str().unwrap();
    assert!(content.contains("[secret filed]"), "{v}");
    assert!(!content.contains("a-filed-t0ken-of-its-own"), "{v}");
}
