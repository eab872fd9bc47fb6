//! The official MCP conformance suite's server scenarios through boxmaker (issue 23):
//! `@modelcontextprotocol/conformance` (npm, tests/node-conformance, with the Node ≥ 22 it
//! needs) runs every active server scenario against `boxmaker mcp --http`, with a remote
//! streamable-HTTP server behind boxmaker (`[[tool]] url`, `prefix = ""`, an `[[egress]]` rule
//! naming it, grants for its tools, its bearer token a `[[secret]]`).
//!
//! That server is `tests/servers/conformance_server.py`, made with the official Python SDK to
//! the requirements each scenario states: the suite's own everything-server is a file of its
//! repository, published in no package (see that file).
//!
//! The suite takes only a URL, so a header-adding relay of the test's own
//! (`tests/servers/bearer_relay.mjs`) stands between it and the front, adding the front's
//! bearer token read from `STATE/http.token`; the front keeps its token check. The front is
//! told the relay's origin with `--allow-origin` (the suite's DNS-rebinding scenario sends
//! it as a browser would).
//!
//! What it asserts, scenario by scenario: every tools scenario passes (text, image, audio,
//! embedded resource, mixed content, logging, progress, errors), and so do initialize, ping,
//! `logging/setLevel`, multiple SSE streams and DNS-rebinding protection, and the resources
//! and prompts scenarios (asked for through the gate under the server's own name, which a
//! grant names); a server's sampling and elicitation requests are refused with boxmaker's
//! sentence (the guide, docs/guide/src/remote-servers.md, "What boxmaker refuses by
//! design"); completions and resource subscriptions are not served (docs/spec.md §5), so
//! those scenarios fail with "method not found" — asserted, so the day they pass this test
//! says the guide must change. Then the Python SDK and the MCP inspector, as clients of the
//! same front, call the remote tools with grants, labels and provenance in force
//! (`tests/python/remote_tools_client.py`) — a server's notifications too: the credential a
//! hostile server puts in a log or progress message arrives redacted, and an address it names
//! in a log message is one provenance refuses to send to. Last, every output of the run — the suite's
//! checks and output, the clients' output, boxmaker's stderr, the whole state directory
//! (audit log, database, `tools.json`, logs) — is grepped for every spelling of the secret.
//!
//! Skips, saying so, only when `make deps` has not installed the suite or the Python SDK.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use testkit::{
    Killed, Lab, client_python, files_below, free_port, node_dir, python_dir, python_server,
    repo_root, run_to_end, servers_dir,
};

const DEADLINE: Duration = Duration::from_secs(180);
/// The remote server's bearer token: long enough, and with characters every encoding spells
/// differently.
const VALUE: &str = "conf_T0k3n/with+odd chars?&=~x";
const VAR: &str = "BXM_CONFORMANCE_TOKEN";

/// What the refusals say (crates/mcpclient/src/heard.rs).
const SAMPLING_REFUSED: &str = "boxmaker refuses a server's sampling request by design";
const ELICITATION_REFUSED: &str = "boxmaker refuses a server's elicitation request by design";

/// The scenarios that must pass.
const PASS: &[&str] = &[
    "server-initialize",
    "logging-set-level",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
];
/// A server's requests to the client that boxmaker refuses by design.
const REFUSED: &[&str] = &[
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
];
/// What boxmaker does not serve (docs/spec.md §5): the front answers "method not found".
const NOT_SERVED: &[&str] = &[
    "completion-complete",
    "resources-subscribe",
    "resources-unsubscribe",
];

/// The Node the suite needs and the suite's CLI, when `make deps` installed them.
fn suite() -> Option<(PathBuf, PathBuf)> {
    let dir = repo_root().join("tests/node-conformance/node_modules");
    let node = dir.join(".bin/node");
    let cli = dir.join("@modelcontextprotocol/conformance/dist/index.js");
    (node.exists() && cli.exists()).then_some((node, cli))
}

fn python_sdk() -> bool {
    Command::new(client_python())
        .args(["-c", "import mcp.client.streamable_http, uvicorn"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Why the test cannot run here, if it cannot.
fn missing() -> Option<&'static str> {
    if suite().is_none() {
        return Some("the MCP conformance suite (tests/node-conformance) is not installed");
    }
    if !python_sdk() {
        return Some("the Python MCP SDK (tests/py/client-venv) is not installed");
    }
    None
}

/// The conformance server on a free loopback port.
fn start_server(lab: &Lab) -> (Killed, u16) {
    python_server("conformance_server.py", &[VALUE], &lab.path("server.err"))
}

fn config(lab: &Lab, port: u16) -> String {
    format!(
        r#"
[gate]
state = {state:?}

[box]
timeout_seconds = 30

[[secret]]
name = "conf-token"
env = "{VAR}"

[[egress]]
name = "conformance"
host = "127.0.0.1"
ports = [{port}]
class = "public"

[[tool]]
name = "everything"
url = "http://127.0.0.1:{port}/mcp"
bearer = "conf-token"
prefix = ""
untrusted = true

[[grant]]
tool = "test_*"
effect = "allow"

[[grant]]
tool = "read_inbox"
effect = "allow"

[[grant]]
tool = "status_report"
effect = "allow"

[[grant]]
tool = "send_message"
effect = "allow"
when = [{{ pointer = "/to", from = "not_untrusted" }}]

# Its resources and prompts are asked for under its own name: lists and prompts, and reads
# of the test:// resources only.
[[grant]]
tool = "everything"
effect = "allow"
when = [{{ pointer = "/method", one_of = ["resources/list", "resources/templates/list", "prompts/list", "prompts/get"] }}]

[[grant]]
tool = "everything"
effect = "allow"
when = [{{ pointer = "/method", equals = "resources/read" }}, {{ pointer = "/uri", glob = "test://*" }}]
"#,
        state = lab.path("state").display().to_string(),
    )
}

/// `boxmaker mcp --http 127.0.0.1:0`, allowing `origin`; its port, once its banner says it.
fn start_front(lab: &Lab, origin: &str) -> (Killed, u16) {
    let err = lab.path("mcp.err");
    let child = lab
        .cmd(&["mcp", "--http", "127.0.0.1:0", "--allow-origin", origin])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let child = Killed(child);
    let port = testkit::poll(Duration::from_secs(60), || {
        let text = std::fs::read_to_string(&err).ok()?;
        let at = text.find("http://127.0.0.1:")? + "http://127.0.0.1:".len();
        text[at..].split('/').next()?.parse::<u16>().ok()
    })
    .unwrap_or_else(|| {
        panic!(
            "boxmaker mcp --http named no port\n{}",
            std::fs::read_to_string(&err).unwrap_or_default()
        )
    });
    assert!(
        testkit::wait_for_path(&lab.path("state/http.token"), Duration::from_secs(30)),
        "no http.token"
    );
    (child, port)
}

/// The test's relay on `port` to the front on `front`; waits until it listens.
fn start_relay(lab: &Lab, node: &Path, port: u16, front: u16) -> Killed {
    let mut child = Command::new(node)
        .arg(servers_dir().join("bearer_relay.mjs"))
        .arg(port.to_string())
        .arg(front.to_string())
        .arg(lab.path("state/http.token"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(lab.path("relay.err")).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("listening"), "the relay said {line:?}");
    Killed(child)
}

/// Each scenario's checks, from the suite's output directory (`server-NAME-TIME/checks.json`).
fn checks(out: &Path) -> BTreeMap<String, Vec<Value>> {
    let mut all = BTreeMap::new();
    for e in std::fs::read_dir(out).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("server-") else {
            continue;
        };
        // The time stamp is the last 24 characters: `-2026-12-04T20-27-17-131Z`.
        let scenario = rest[..rest.len().saturating_sub(25)].to_string();
        let text = std::fs::read_to_string(e.path().join("checks.json")).unwrap();
        let checks: Vec<Value> = serde_json::from_str(&text).unwrap();
        all.insert(scenario, checks);
    }
    all
}

fn statuses(checks: &[Value]) -> Vec<&str> {
    checks
        .iter()
        .map(|c| c["status"].as_str().unwrap_or("?"))
        .collect()
}

/// Every spelling of `VALUE` a leak could take, computed here independently of boxmaker.
fn spellings() -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let b = VALUE.as_bytes();
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    let pct = |upper: bool, plus: bool| -> String {
        b.iter()
            .map(|&c| {
                if c.is_ascii_alphanumeric() || b"-._~".contains(&c) {
                    char::from(c).to_string()
                } else if c == b' ' && plus {
                    "+".into()
                } else if upper {
                    format!("%{c:02X}")
                } else {
                    format!("%{c:02x}")
                }
            })
            .collect()
    };
    let json = serde_json::to_string(VALUE).unwrap();
    vec![
        VALUE.to_string(),
        json[1..json.len() - 1].to_string(),
        STANDARD.encode(b),
        STANDARD_NO_PAD.encode(b),
        URL_SAFE.encode(b),
        URL_SAFE_NO_PAD.encode(b),
        STANDARD_NO_PAD.encode(format!("Bearer {VALUE}")),
        hex.clone(),
        hex.to_uppercase(),
        pct(true, false),
        pct(false, false),
        pct(true, true),
        // A part of it, as a cut value would leak.
        VALUE[4..20].to_string(),
        STANDARD_NO_PAD.encode(&b[3..18]),
    ]
}

/// The MCP inspector's CLI against the front, one call (a session of its own), as JSON.
fn inspector(lab: &Lab, front: u16, name: &str, args: &[&str]) -> Value {
    let bin = node_dir().join("node_modules/.bin/inspector");
    assert!(
        bin.exists(),
        "the MCP inspector is missing: run `make deps` (no {})",
        bin.display()
    );
    let token = std::fs::read_to_string(lab.path("state/http.token")).unwrap();
    let mut cmd = Command::new(bin);
    cmd.arg("--cli")
        .arg(format!("http://127.0.0.1:{front}/mcp"))
        .args(["--transport", "http", "--header"])
        .arg(format!("Authorization: Bearer {}", token.trim()))
        .args(args)
        .current_dir(&lab.dir)
        .env("MCP_CATALOG_PATH", lab.path("inspector-catalog.json"));
    let run = run_to_end(cmd, &lab.dir, name, DEADLINE);
    assert!(run.ok(), "the inspector ({name}) failed\n{}", run.show());
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the inspector ({name}) printed no JSON: {e}\n{}",
            run.show()
        )
    })
}

#[test]
fn the_suites_server_scenarios_pass_through_boxmaker_and_no_output_holds_the_secret() {
    if let Some(why) = missing() {
        eprintln!("skipped: {why}; run `make deps`");
        return;
    }
    let (node, cli) = suite().unwrap();
    let mut lab = testkit::lab!("conformance", "server").in_its_dir();
    lab.vars.push((VAR.into(), VALUE.into()));
    let (_server, port) = start_server(&lab);
    lab.write_config(&config(&lab, port));
    let relay_port = free_port();
    let (_front, front) = start_front(&lab, &format!("http://127.0.0.1:{relay_port}"));
    let _relay = start_relay(&lab, &node, relay_port, front);

    // The whole active suite, through the relay.
    let out = lab.path("suite-out");
    let mut cmd = Command::new(&node);
    cmd.arg(&cli)
        .arg("server")
        .arg("--url")
        .arg(format!("http://127.0.0.1:{relay_port}/mcp"))
        .arg("-o")
        .arg(&out)
        .current_dir(&lab.dir);
    let run = run_to_end(cmd, &lab.dir, "conformance-server", DEADLINE);
    let all = checks(&out);
    let seen: Vec<&str> = all.keys().map(String::as_str).collect();
    let mut expected: Vec<&str> = PASS
        .iter()
        .chain(REFUSED)
        .chain(NOT_SERVED)
        .copied()
        .collect();
    expected.sort_unstable();
    assert_eq!(
        seen,
        expected,
        "the suite ran other scenarios than this test knows (a new version of it?)\n{}",
        run.show()
    );
    for s in PASS {
        let c = &all[*s];
        assert!(
            !c.is_empty() && statuses(c).iter().all(|st| *st != "FAILURE"),
            "{s} failed through boxmaker: {}",
            serde_json::to_string_pretty(c).unwrap()
        );
    }
    // A server's sampling and elicitation requests: refused, and the server's error carries
    // boxmaker's sentence to the client.
    for (s, sentence) in [
        ("tools-call-sampling", SAMPLING_REFUSED),
        ("tools-call-elicitation", ELICITATION_REFUSED),
    ] {
        let c = &all[s][0];
        assert_eq!(c["status"], "FAILURE", "{s}: {c}");
        let text = c["details"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.starts_with("failed: ") && text.contains(sentence),
            "{s}: the refusal does not say why: {c}"
        );
        assert_eq!(c["details"]["result"]["isError"], true, "{s}: {c}");
    }
    for s in ["elicitation-sep1034-defaults", "elicitation-sep1330-enums"] {
        let c = &all[s][0];
        assert_eq!(c["status"], "FAILURE", "{s}: {c}");
        assert_eq!(
            c["errorMessage"], "Server did not request elicitation from client",
            "{s}: {c}"
        );
    }
    for s in NOT_SERVED {
        let c = &all[*s][0];
        assert_eq!(
            c["status"], "FAILURE",
            "{s} passed: update the guide's list (docs/guide/src/remote-servers.md): {c}"
        );
        assert!(
            c["errorMessage"]
                .as_str()
                .is_some_and(|m| m.contains("-32601")),
            "{s}: {c}"
        );
    }
    // The server's notifications arrived labelled like its result, under its name.
    let logs = &all["tools-call-with-logging"][0]["details"]["logs"];
    assert_eq!(logs.as_array().map(Vec::len), Some(3), "{logs}");
    for l in logs.as_array().unwrap() {
        assert_eq!(l["logger"], "everything", "{l}");
        assert_eq!(l["_meta"]["boxmaker"]["untrusted"], true, "{l}");
    }
    let progress = &all["tools-call-with-progress"][0]["details"]["progressNotifications"];
    let values: Vec<f64> = progress
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [0.0, 50.0, 100.0], "{progress}");

    // The Python SDK as a client of the same front: grants, labels, provenance, redaction.
    let mut py = Command::new(client_python());
    py.arg(python_dir().join("remote_tools_client.py"))
        .env("BXM_URL", format!("http://127.0.0.1:{front}/mcp"))
        .env("BXM_TOKEN_FILE", lab.path("state/http.token"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(python_dir());
    let run = run_to_end(py, &lab.dir, "remote_tools_client", DEADLINE);
    assert!(run.ok(), "the Python SDK client failed\n{}", run.show());

    // The MCP inspector's CLI: the tools the grants give, and the echoed secret redacted.
    let list = inspector(&lab, front, "inspector-list", &["--method", "tools/list"]);
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"test_secret_echo"), "{names:?}");
    assert!(
        !names.contains(&"delete_inbox"),
        "no grant allows it: {names:?}"
    );
    let echo = inspector(
        &lab,
        front,
        "inspector-echo",
        &["--method", "tools/call", "--tool-name", "test_secret_echo"],
    );
    assert_eq!(
        echo["content"][0]["text"], "you sent: Bearer [secret conf-token]",
        "{echo}"
    );
    assert_eq!(echo["_meta"]["boxmaker"]["untrusted"], true, "{echo}");

    // Stop the front (and its gate, with its last client) so every file is written out.
    drop(_relay);
    drop(_front);
    let audit = std::fs::read_to_string(lab.path("state/audit.log")).unwrap();
    assert!(
        audit.contains("test_secret_echo") && audit.contains("\"event\":\"egress\""),
        "the audit log has no record of the remote calls"
    );
    // The refusals the Python client saw were provenance's: the address came from an
    // untrusted answer, once in a result and once in a server's log message.
    for (value_from, what) in [
        ("read_inbox", "a result"),
        ("status_report", "a log message"),
        ("everything", "a resource"),
    ] {
        assert!(
            audit
                .lines()
                .any(|l| l.contains("\"tool\":\"send_message\"")
                    && l.contains("\"concern\":\"untrusted_value\"")
                    && l.contains(&format!("\"first_tool\":\"{value_from}\""))),
            "no send_message decision names the untrusted value of {what} ({value_from})"
        );
    }
    // Every output of the run, but the server's own stderr (the server holds the token).
    let spellings = spellings();
    let mut looked = 0;
    for f in files_below(&lab.dir, None) {
        if f == lab.path("server.err") {
            continue;
        }
        let bytes = std::fs::read(&f).unwrap_or_default();
        looked += 1;
        for s in &spellings {
            assert!(
                !bytes.windows(s.len()).any(|w| w == s.as_bytes()),
                "{} holds the secret (as {s:?})",
                f.display()
            );
        }
    }
    assert!(looked > 40, "only {looked} files were looked at");
}
