//! `boxmaker mcp` against real MCP clients that nobody here wrote (issue 6): the official
//! Python SDK over stdio and over streamable HTTP, the MCP inspector's CLI, and the guide's
//! client snippets (docs/guide/src/clients.md) run as written. The clients are installed by
//! `make deps` (`.ci/run` runs it); a missing client fails these tests with the command that
//! installs it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::{Run, node_dir, python_client, repo_root, run_to_end};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// What `notes/plan.txt` holds in every test's config dir.
const PLAN: &str = "the plan\n";

/// A client script or CLI that has not finished by then has hung: it is killed.
const DEADLINE: Duration = Duration::from_secs(90);

/// A fresh config dir: `boxmaker init`'s default, plus a confidential mount holding
/// `plan.txt` at /data/notes and a write tool `share` that is allowed only while the session
/// has read nothing above public.
fn config_dir(name: &str) -> PathBuf {
    let lab = testkit::lab!("mcp_clients", name).init();
    lab.append(
        r#"
[[mount]]
host = "notes"
at = "/data/notes"
class = "confidential"

[[tool]]
name = "share"
builtin = "write_file"

[[grant]]
tool = "share"
effect = "allow"
max_class = "public"
"#,
    );
    lab.write("notes/plan.txt", PLAN);
    // The tester edited the config `init` trusted: trusted again (docs/spec.md §6, "Whose
    // config"), as a person does after an edit.
    assert!(
        testkit::trust(BIN, lab.config()),
        "boxmaker trust refused the config"
    );
    lab.dir
}

/// Runs one script of tests/python against a fresh config dir and asserts it passed.
fn python_script(script: &str, dir: &Path, env: &[(&str, &str)]) -> Run {
    let mut cmd = python_client(BIN.as_ref(), &dir.join("boxmaker.toml"), script, env);
    cmd.env("BOXMAKER_PLAN", PLAN);
    let run = run_to_end(cmd, dir, script, DEADLINE);
    assert!(run.status.success(), "{script} failed\n{}", run.show());
    assert!(
        run.stdout.lines().any(|l| l == "ok"),
        "{script} did not finish\n{}",
        run.show()
    );
    run
}

/// The same scenario with the SDK's `Client` in each protocol era, on each transport (issue
/// 31): a legacy session and 2026-07-28's self-contained requests alike.
fn era_scenario(transport: &str, mode: &str) {
    let dir = config_dir(&format!("era-{transport}-{mode}"));
    let run = python_script(
        "era_scenario.py",
        &dir,
        &[("ERA_TRANSPORT", transport), ("ERA_MODE", mode)],
    );
    assert!(
        run.stdout.contains("denied: taint_too_high"),
        "{}",
        run.show()
    );
}

#[test]
fn test_python_sdk_2026_over_stdio() {
    era_scenario("stdio", "2026-07-28");
}

#[test]
fn test_python_sdk_2026_over_http() {
    era_scenario("http", "2026-07-28");
}

#[test]
fn test_python_sdk_legacy_client_over_stdio() {
    era_scenario("stdio", "legacy");
}

#[test]
fn test_python_sdk_legacy_client_over_http() {
    era_scenario("http", "legacy");
}

#[test]
fn test_python_sdk_over_stdio() {
    let dir = config_dir("python-stdio");
    let run = python_script("stdio_client.py", &dir, &[]);
    // The script printed every step; check the ones docs/spec.md §5 promises are there.
    for want in [
        "denied: taint_too_high",
        "log notification:",
        "progress notification:",
        "approved-run",
    ] {
        assert!(run.stdout.contains(want), "no {want:?}\n{}", run.show());
    }
    assert!(
        run.stderr.contains("boxmaker mcp: session mcp-"),
        "no session id on stderr\n{}",
        run.show()
    );
}

#[test]
fn test_python_sdk_over_streamable_http_with_bearer_token() {
    let dir = config_dir("python-http");
    let run = python_script("http_client.py", &dir, &[]);
    for want in [
        "without a token: 401",
        "with a wrong token: 401",
        "denied: taint_too_high",
        "log notification:",
        "approved-run",
    ] {
        assert!(run.stdout.contains(want), "no {want:?}\n{}", run.show());
    }
}

/// Fails (never skips) when `make deps` has not installed the inspector.
fn inspector() -> PathBuf {
    let bin = node_dir().join("node_modules/.bin/inspector");
    assert!(
        bin.exists(),
        "the MCP inspector is missing: run `make deps` (no {})",
        bin.display()
    );
    bin
}

/// `inspector --cli [extra] ARGS -- boxmaker mcp --config FILE`, parsed as the JSON it
/// prints. `--` keeps boxmaker's `--config` from being read as the inspector's own.
fn inspector_cli(dir: &Path, name: &str, extra: &[&str], args: &[&str]) -> serde_json::Value {
    let mut cmd = Command::new(inspector());
    cmd.current_dir(node_dir())
        .arg("--cli")
        .args(extra)
        .args(args)
        .arg("--")
        .arg(BIN)
        .args(["mcp", "--config"])
        .arg(dir.join("boxmaker.toml"))
        // The inspector otherwise keeps a catalog in ~/.mcp-inspector.
        .env("MCP_CATALOG_PATH", dir.join("inspector-catalog.json"));
    let run = run_to_end(cmd, dir, name, DEADLINE);
    assert!(
        run.status.success(),
        "the inspector ({name}) failed\n{}",
        run.show()
    );
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "the inspector ({name}) printed no JSON: {e}\n{}",
            run.show()
        )
    })
}

/// Lists the tools and calls two of them, each in its own inspector run (a new session).
fn inspector_lists_and_calls(dir: &Path, extra: &[&str]) {
    let list = inspector_cli(dir, "tools-list", extra, &["--method", "tools/list"]);
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["read_file", "list_dir", "write_file", "run", "share"],
        "{list}"
    );
    for tool in list["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(
            !tool["description"].as_str().unwrap_or("").is_empty(),
            "{tool}"
        );
    }

    let wrote = inspector_cli(
        dir,
        "call-share",
        extra,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "share",
            "--tool-arg",
            "path=from-inspector.txt",
            "content=hello",
        ],
    );
    assert_eq!(wrote["isError"], false, "{wrote}");
    assert_eq!(
        wrote["content"][0]["text"], "wrote 5 bytes to /work/from-inspector.txt",
        "{wrote}"
    );
    assert_eq!(wrote["_meta"]["boxmaker"]["class"], "public", "{wrote}");

    let read = inspector_cli(
        dir,
        "call-read",
        extra,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "read_file",
            "--tool-arg",
            "path=/data/notes/plan.txt",
        ],
    );
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(read["content"][0]["text"], PLAN, "{read}");
    assert_eq!(
        read["_meta"]["boxmaker"],
        serde_json::json!({"class": "confidential", "untrusted": false, "truncated": false}),
        "{read}"
    );
}

/// The inspector's CLI exactly as a person runs it.
#[test]
fn test_inspector_cli_lists_and_calls_tools() {
    let dir = config_dir("inspector");
    inspector_lists_and_calls(&dir, &[]);
}

/// The same with `--protocol-era auto`, which does not send `logging/setLevel` (the era the
/// inspector negotiates with boxmaker skips it): the inspector's CLI works with boxmaker today.
#[test]
fn test_inspector_cli_lists_and_calls_tools_protocol_era_auto() {
    let dir = config_dir("inspector-auto");
    inspector_lists_and_calls(&dir, &["--protocol-era", "auto"]);
}

/// The fenced block of `lang` (its info string `lang` or `lang,ATTRIBUTES`) that follows
/// `marker` on the guide's page "Use it from your MCP client" (docs/guide/src/clients.md).
fn guide_block(marker: &str, lang: &str) -> String {
    let page = std::fs::read_to_string(repo_root().join("docs/guide/src/clients.md")).unwrap();
    let after = page
        .split(marker)
        .nth(1)
        .unwrap_or_else(|| panic!("no {marker:?} on the guide's clients page"));
    let fence = format!("```{lang}");
    let body = after
        .split(&fence)
        .nth(1)
        .and_then(|b| b.split_once('\n'))
        .map(|(_, b)| b)
        .unwrap_or_else(|| panic!("no ```{lang} block after {marker:?}"));
    body.split("\n```").next().unwrap().to_string()
}

/// The Claude Desktop snippet's command line: (command, args).
fn claude_desktop_command() -> (String, Vec<String>) {
    let snippet = guide_block("claude_desktop_config.json", "json");
    let v: serde_json::Value = serde_json::from_str(&snippet)
        .unwrap_or_else(|e| panic!("the Claude Desktop snippet is not JSON: {e}\n{snippet}"));
    let server = &v["mcpServers"]["boxmaker"];
    let command = server["command"]
        .as_str()
        .unwrap_or_else(|| panic!("no mcpServers.boxmaker.command in {snippet}"))
        .to_string();
    let args = server["args"]
        .as_array()
        .unwrap_or_else(|| panic!("no mcpServers.boxmaker.args in {snippet}"))
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    (command, args)
}

/// Replaces the guide's placeholders, as a person following it would.
fn real_paths(word: &str, config: &Path) -> String {
    match word {
        "/path/to/boxmaker" => BIN.to_string(),
        "/path/to/boxmaker.toml" => config.to_str().unwrap().to_string(),
        other => other.to_string(),
    }
}

/// "Tested as far as this machine allows": the guide's Claude Desktop snippet, with the
/// real binary and config put in, run exactly as written by the Python SDK's stdio client.
#[test]
fn test_guide_claude_desktop_snippet_runs_with_python_sdk() {
    let dir = config_dir("readme-snippet");
    let config = dir.join("boxmaker.toml");
    let (command, args) = claude_desktop_command();
    assert_eq!(command, "/path/to/boxmaker");
    assert!(
        args.iter().any(|a| a == "/path/to/boxmaker.toml"),
        "{args:?}"
    );
    let server = serde_json::json!({
        "command": real_paths(&command, &config),
        "args": args.iter().map(|a| real_paths(a, &config)).collect::<Vec<_>>(),
    });
    let run = python_script(
        "stdio_command.py",
        &dir,
        &[("BOXMAKER_SERVER", &server.to_string())],
    );
    assert!(
        run.stdout.contains(&format!(
            "command line: {BIN} mcp --config {}",
            config.display()
        )),
        "{}",
        run.show()
    );
}

/// The Claude Code and Codex snippets name the same command line as the Claude Desktop one
/// (which the test above runs).
#[test]
fn test_guide_snippets_name_one_command_line() {
    let (command, args) = claude_desktop_command();
    let mut desktop = vec![command.clone()];
    desktop.extend(args.iter().cloned());

    let code = guide_block("Claude Code:", "sh");
    let code = code.trim();
    let rest = code
        .strip_prefix("claude mcp add boxmaker -- ")
        .unwrap_or_else(|| panic!("the Claude Code snippet is not `claude mcp add`: {code}"));
    assert_eq!(
        rest.split_whitespace().collect::<Vec<_>>(),
        desktop,
        "Claude Code: {code}"
    );

    let codex = guide_block("~/.codex/config.toml", "toml");
    let mut lines = codex.lines().map(str::trim);
    assert_eq!(lines.next(), Some("[mcp_servers.boxmaker]"), "{codex}");
    let mut codex_command = None;
    let mut codex_args = None;
    for line in lines {
        let (key, value) = line
            .split_once(" = ")
            .unwrap_or_else(|| panic!("{line:?} in {codex}"));
        // A TOML basic string and an array of them read the same as JSON here.
        let value: serde_json::Value =
            serde_json::from_str(value).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        match key {
            "command" => codex_command = Some(value),
            "args" => codex_args = Some(value),
            other => panic!("unexpected key {other} in the Codex snippet"),
        }
    }
    assert_eq!(codex_command, Some(serde_json::json!(command)), "{codex}");
    assert_eq!(codex_args, Some(serde_json::json!(args)), "{codex}");
}

/// `--http 127.0.0.1:0` binds a free port; the banner must name it, or nobody can connect.
#[test]
fn test_http_banner_names_the_bound_port() {
    let dir = config_dir("http-port-0");
    let mut child = Command::new(BIN)
        .args(["mcp", "--config"])
        .arg(dir.join("boxmaker.toml"))
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    while !line.contains("http://") {
        line.clear();
        if err.read_line(&mut line).unwrap() == 0 {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("http://127.0.0.1:"), "{line}");
    assert!(!line.contains("http://127.0.0.1:0/"), "{line}");
}
