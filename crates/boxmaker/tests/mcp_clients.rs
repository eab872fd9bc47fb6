//! `boxmaker mcp` against real MCP clients that nobody here wrote (issue 6): the official
//! Python SDK over stdio and over streamable HTTP, the MCP inspector's CLI, and the README's
//! client snippets run as written. The clients are installed by `make deps` (`.ci/run` runs
//! it); a missing client fails these tests with the command that installs it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// What `notes/plan.txt` holds in every test's config dir.
const PLAN: &str = "the plan\n";

/// A client script or CLI that has not finished by then has hung: it is killed.
const DEADLINE: Duration = Duration::from_secs(90);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python")
}

/// The interpreter of the Python MCP SDK and Selenium: `make deps` installs them into the
/// project's own virtualenv, never into a system interpreter.
fn client_python() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/py/client-venv/bin/python3")
}

fn node_dir() -> PathBuf {
    repo_root().join("tests/node")
}

/// A fresh config dir: `boxmaker init`'s default, plus a confidential mount holding
/// `plan.txt` at /data/notes and a write tool `share` that is allowed only while the session
/// has read nothing above public.
fn config_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("mcp_clients")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new(BIN).arg("init").arg(&dir).output().unwrap();
    assert!(
        o.status.success(),
        "boxmaker init: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let config = dir.join("boxmaker.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
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
    std::fs::write(&config, text).unwrap();
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    std::fs::write(dir.join("notes/plan.txt"), PLAN).unwrap();
    dir
}

/// A finished client: its exit status and what it printed.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl Run {
    fn show(&self) -> String {
        format!(
            "exit {} after {:.1} s\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            self.took.as_secs_f64(),
            self.stdout,
            self.stderr
        )
    }
}

/// Runs `cmd` to its end (killing it after [`DEADLINE`]), its output kept in files under
/// `dir` so a chatty child never blocks on a full pipe.
fn run_to_end(mut cmd: Command, dir: &Path, name: &str) -> Run {
    let out_path = dir.join(format!("{name}.stdout"));
    let err_path = dir.join(format!("{name}.stderr"));
    cmd.stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let status = wait_or_kill(&mut child, start + DEADLINE);
    let run = Run {
        status,
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        took: start.elapsed(),
    };
    assert!(
        start.elapsed() < DEADLINE,
        "{name} was killed after {} s: it hung\n{}",
        DEADLINE.as_secs(),
        run.show()
    );
    run
}

fn wait_or_kill(child: &mut Child, deadline: Instant) -> ExitStatus {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            return child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Fails (never skips) when `make deps` has not installed the Python SDK.
fn require_python_sdk() {
    let o = Command::new(client_python())
        .args(["-c", "import mcp.client.stdio, mcp.client.streamable_http"])
        .output();
    match o {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "the Python MCP SDK is missing: run `make deps` ({})",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!(
            "the Python MCP SDK is missing: run `make deps` ({}: {e})",
            client_python().display()
        ),
    }
}

/// Runs one script of tests/python against a fresh config dir and asserts it passed.
fn python_script(script: &str, dir: &Path, env: &[(&str, &str)]) -> Run {
    require_python_sdk();
    let mut cmd = Command::new(client_python());
    cmd.arg(python_dir().join(script))
        .current_dir(python_dir())
        .env("BOXMAKER_BIN", BIN)
        .env("BOXMAKER_CONFIG", dir.join("boxmaker.toml"))
        .env("BOXMAKER_PLAN", PLAN)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let run = run_to_end(cmd, dir, script);
    assert!(run.status.success(), "{script} failed\n{}", run.show());
    assert!(
        run.stdout.lines().any(|l| l == "ok"),
        "{script} did not finish\n{}",
        run.show()
    );
    run
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
    let run = run_to_end(cmd, dir, name);
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

/// The fenced block of `lang` that follows `marker` in README.md's "Use it from your MCP
/// client" section.
fn readme_block(marker: &str, lang: &str) -> String {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = readme
        .split("\n## Use it from your MCP client\n")
        .nth(1)
        .expect("README.md has no \"## Use it from your MCP client\" section");
    let section = section.split("\n## ").next().unwrap();
    let after = section
        .split(marker)
        .nth(1)
        .unwrap_or_else(|| panic!("no {marker:?} in the README's client section"));
    let fence = format!("```{lang}\n");
    let body = after
        .split(&fence)
        .nth(1)
        .unwrap_or_else(|| panic!("no ```{lang} block after {marker:?}"));
    body.split("\n```").next().unwrap().to_string()
}

/// The Claude Desktop snippet's command line: (command, args).
fn claude_desktop_command() -> (String, Vec<String>) {
    let snippet = readme_block("claude_desktop_config.json", "json");
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

/// Replaces the README's placeholders, as a person following it would.
fn real_paths(word: &str, config: &Path) -> String {
    match word {
        "/path/to/boxmaker" => BIN.to_string(),
        "/path/to/boxmaker.toml" => config.to_str().unwrap().to_string(),
        other => other.to_string(),
    }
}

/// "Tested as far as this machine allows": the README's Claude Desktop snippet, with the
/// real binary and config put in, run exactly as written by the Python SDK's stdio client.
#[test]
fn test_readme_claude_desktop_snippet_runs_with_python_sdk() {
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
fn test_readme_snippets_name_one_command_line() {
    let (command, args) = claude_desktop_command();
    let mut desktop = vec![command.clone()];
    desktop.extend(args.iter().cloned());

    let code = readme_block("Claude Code:", "sh");
    let code = code.trim();
    let rest = code
        .strip_prefix("claude mcp add boxmaker -- ")
        .unwrap_or_else(|| panic!("the Claude Code snippet is not `claude mcp add`: {code}"));
    assert_eq!(
        rest.split_whitespace().collect::<Vec<_>>(),
        desktop,
        "Claude Code: {code}"
    );

    let codex = readme_block("~/.codex/config.toml", "toml");
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
