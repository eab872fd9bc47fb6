//! One command each way (docs/spec.md §7): `boxmaker add URL` puts a remote MCP server behind
//! boxmaker, and `boxmaker client add CLIENT` writes boxmaker into an MCP client's own
//! configuration. End to end through the real binary:
//!
//! - `add` against real streamable-HTTP servers made with the official Python SDK on loopback
//!   (`tests/servers/remote_server.py`, which wants a bearer token; and
//!   `tests/servers/oauth_resource_server.py`, an OAuth protected resource by the SDK's own
//!   auth support), then a call through the gate, approved by a person; hostile URLs; a name
//!   already used; a config whose comments must stay; servers it cannot use (nothing written);
//! - `client add` for each client against its real file format (other servers and settings
//!   kept, a malformed file refused and left as it was, a second run changing nothing, a
//!   backup); and for Claude Code, its own CLI (`claude mcp list`, npm
//!   `@anthropic-ai/claude-code`, installed by `make deps` into tests/node-claude) must list
//!   boxmaker as connected.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use testkit::{Killed, Lab, Run, free_port, python_server, repo_root, servers_dir};

const DEADLINE: Duration = Duration::from_secs(120);
const TOKEN: &str = "onboard-tok3n-0123456789abcdef";
const VAR: &str = "BXM_ONBOARD_TEST_TOKEN";

// ---------------------------------------------------------------------------------------
// Servers.

/// A test server on a free loopback port, killed on drop.
struct Server {
    _child: Killed,
    port: u16,
}

impl Server {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// `script PORT ARGS…` with the SDK's interpreter, once it listens.
fn start(lab: &Lab, script: &str, args: &[&str]) -> Server {
    let (child, port) = python_server(script, args, &lab.path(format!("{script}.err")));
    Server {
        _child: child,
        port,
    }
}

/// The server that wants `Authorization: Bearer TOKEN` (tools echo, show_auth, flip).
fn bearer_server(lab: &Lab) -> Server {
    let state = lab.mkdir("server-state");
    start(lab, "remote_server.py", &[TOKEN, state.to_str().unwrap()])
}

fn new_lab(name: &str) -> Lab {
    let mut lab = testkit::lab!("onboard", name).in_its_dir().init();
    lab.vars.push((VAR.into(), TOKEN.into()));
    lab
}

fn add(lab: &Lab, args: &[&str]) -> Run {
    let mut all = vec!["add"];
    all.extend_from_slice(args);
    lab.run_within(&all, DEADLINE)
}

/// `boxmaker add OPTIONS --config CONFIG -- COMMAND…` (the config before the `--`), the
/// lab's config trusted first as [`Lab::cmd`] does (the tester wrote it).
fn add_command(lab: &Lab, options: &[&str], command: &[&str]) -> Run {
    lab.trust_config();
    let mut c = lab.bare();
    c.arg("add")
        .args(options)
        .arg("--config")
        .arg(lab.config())
        .arg("--")
        .args(command);
    testkit::run_to_end(c, &lab.dir, "add -- command", DEADLINE)
}

fn one_sentence(run: &Run) -> &str {
    let err = run.stderr.trim_end();
    assert_eq!(err.lines().count(), 1, "not one line:\n{}", run.show());
    assert!(err.starts_with("boxmaker: "), "{}", run.show());
    err
}

/// `boxmaker call --json` in the background; returns it with the approval id it waits on.
fn call_waiting(lab: &Lab, session: &str, tool: &str, args: &str) -> (Child, String) {
    let (child, err) = spawn_call(lab, session, tool, args);
    (child, pending_id(err, tool))
}

fn spawn_call(lab: &Lab, session: &str, tool: &str, args: &str) -> (Child, BufReader<ChildStderr>) {
    let mut child = lab
        .cmd(&["call", "--session", session, "--json", tool, args])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = BufReader::new(child.stderr.take().unwrap());
    (child, err)
}

/// Reads stderr until `pending approval ID`; the rest is drained so the call never blocks.
fn pending_id(mut err: BufReader<ChildStderr>, tool: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "the call of {tool} ended before it asked a person"
        );
        if let Some(rest) = line.strip_prefix("pending approval ") {
            let id = rest.split_whitespace().next().unwrap().to_string();
            std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
            return id;
        }
    }
}

/// Approves `id` and returns the call's final answer.
fn approve(lab: &Lab, child: Child, id: &str) -> Value {
    let ok = lab.run_within(&["approve", id], DEADLINE);
    assert!(ok.ok(), "{}", ok.show());
    let out = testkit::wait_with_timeout(child, DEADLINE);
    serde_json::from_str(testkit::stdout(&out).trim())
        .unwrap_or_else(|e| panic!("no JSON answer ({e}): {}", testkit::stdout(&out)))
}

// ---------------------------------------------------------------------------------------
// `boxmaker add URL`.

#[test]
fn add_puts_a_remote_server_behind_the_gate_in_one_command() {
    let lab = new_lab("add-call");
    let s = bearer_server(&lab);
    let before = lab.config_text();
    let run = add(&lab, &[&s.url(), "--name", "acme", "--bearer-env", VAR]);
    assert!(run.ok(), "{}", run.show());
    // What was written, and the tools it found, are printed.
    for said in [
        "added acme",
        "[[egress]] acme",
        "acme_*: ask",
        "acme offers 3 tools:",
    ] {
        assert!(run.stdout.contains(said), "{said:?}:\n{}", run.show());
    }
    for tool in ["acme_echo", "acme_show_auth", "acme_flip"] {
        assert!(run.stdout.contains(tool), "{tool}:\n{}", run.show());
    }
    // The person's file is kept byte for byte (its comments too), the new tables after it,
    // and the old file is beside it.
    let after = lab.config_text();
    assert!(after.starts_with(&before), "the old text changed:\n{after}");
    assert!(before.contains("# Grants. Nothing runs without one"));
    assert_eq!(
        std::fs::read_to_string(lab.path("boxmaker.toml.bak")).unwrap(),
        before
    );
    let added = &after[before.len()..];
    for line in [
        "name = \"acme\"",
        &format!("url = \"{}\"", s.url()),
        "untrusted = true",
        "pin = true",
        "egress = [\"acme\"]",
        "bearer = \"acme-token\"",
        "host = \"127.0.0.1\"",
        &format!("ports = [{}]", s.port),
        "class = \"public\"",
        "tool = \"acme_*\"",
        "effect = \"ask\"",
        &format!("env = \"{VAR}\""),
    ] {
        assert!(added.contains(line), "{line:?} not written:\n{added}");
    }
    assert!(!after.contains(TOKEN), "the token's value was written");
    // A call through the gate: the grant asks, a person approves, the server answers.
    let (child, id) = call_waiting(&lab, "s1", "acme_echo", r#"{"text":"hello"}"#);
    let v = approve(&lab, child, &id);
    assert_eq!(v["status"], "result", "{v}");
    assert!(
        v["content"].as_str().unwrap().contains("echo: hello"),
        "{v}"
    );
    assert_eq!(v["untrusted"], true, "{v}");
    // The clearance `add` chose: a session that has read internal data (a file of its
    // workspace: `read_file` is `internal` in the default config) may not reach the server.
    let wrote = lab.run_within(
        &[
            "call",
            "--session",
            "s2",
            "--json",
            "write_file",
            r#"{"path":"note.txt","content":"x"}"#,
        ],
        DEADLINE,
    );
    assert!(wrote.ok(), "{}", wrote.show());
    let read = lab.run_within(
        &[
            "call",
            "--session",
            "s2",
            "--json",
            "read_file",
            r#"{"path":"note.txt"}"#,
        ],
        DEADLINE,
    );
    assert_eq!(read.json()["status"], "result", "{}", read.show());
    let (child, id) = call_waiting(&lab, "s2", "acme_echo", r#"{"text":"the notes"}"#);
    let v = approve(&lab, child, &id);
    assert_eq!(v["status"], "failed", "{v}");
    let m = v["message"].as_str().unwrap();
    assert!(
        m.contains(&format!("boxmaker refused 127.0.0.1:{}", s.port)) && m.contains("public"),
        "{m}"
    );
}

#[test]
fn add_refuses_hostile_urls_in_one_sentence() {
    let lab = new_lab("add-hostile");
    let before = lab.config_text();
    let long = format!("https://example.com/{}", "a".repeat(3000));
    for (url, says) in [
        ("https://user:pw@example.com/mcp", "user info"),
        ("http://example.com/mcp", "plain http:// to a name"),
        ("ftp://example.com/mcp", "not an https://"),
        ("file:///etc/passwd", "not an https://"),
        ("javascript:alert(1)", "not an https://"),
        (
            "https://example.com/\u{1b}[2J\u{1b}[31mmcp",
            "control character",
        ),
        ("https://exa\nmple.com/mcp", "control character"),
        ("https://example.com:99999/mcp", "not from 1 to 65535"),
        (long.as_str(), "bytes long"),
    ] {
        let run = add(&lab, &[url]);
        assert_eq!(run.code(), Some(2), "{url:?}:\n{}", run.show());
        let err = one_sentence(&run);
        assert!(err.contains("cannot add the URL"), "{err}");
        assert!(err.contains(says), "{url:?}: {err}");
        // Nothing of the URL reaches the terminal raw, and a long one is cut.
        assert!(!err.contains('\u{1b}'), "{err:?}");
        assert!(err.len() < 400, "{err}");
        assert_eq!(lab.config_text(), before, "{url:?} changed the config");
        assert!(!lab.path("boxmaker.toml.bak").exists());
    }
    // A bad --name or --bearer-env is refused the same way.
    for args in [
        &["https://example.com/mcp", "--name", "a b"][..],
        &["https://example.com/mcp", "--name", "x/../y"],
        &["https://example.com/mcp", "--bearer-env", "A=B"],
    ] {
        let run = add(&lab, args);
        assert_eq!(run.code(), Some(2), "{args:?}:\n{}", run.show());
        one_sentence(&run);
        assert_eq!(lab.config_text(), before);
    }
}

#[test]
fn add_refuses_a_name_in_use_and_a_config_that_does_not_load() {
    let lab = new_lab("add-names");
    let s = bearer_server(&lab);
    let run = add(&lab, &[&s.url(), "--name", "acme", "--bearer-env", VAR]);
    assert!(run.ok(), "{}", run.show());
    let once = lab.config_text();
    // The same name again, and a builtin's name: one sentence, the file as it was.
    for name in ["acme", "read_file"] {
        let run = add(&lab, &[&s.url(), "--name", name, "--bearer-env", VAR]);
        assert_eq!(run.code(), Some(2), "{}", run.show());
        let err = one_sentence(&run);
        assert!(
            err.contains(&format!("already has a tool named \"{name}\"")),
            "{err}"
        );
        assert_eq!(lab.config_text(), once);
    }
    // The name derived from an address is taken the same way.
    let run = add(&lab, &[&s.url(), "--bearer-env", VAR]);
    assert!(run.ok(), "{}", run.show());
    assert!(lab.config_text().contains("name = \"mcp-127-0-0-1\""));
    let run = add(&lab, &[&s.url(), "--bearer-env", VAR]);
    assert_eq!(run.code(), Some(2), "{}", run.show());
    assert!(one_sentence(&run).contains("mcp-127-0-0-1"));
    // A config that does not load is never edited.
    lab.write_config("[gate]\nstate = \".boxmaker\"\nbogus = 1\n");
    let run = add(&lab, &[&s.url(), "--name", "other", "--no-probe"]);
    assert_eq!(run.code(), Some(2), "{}", run.show());
    assert!(one_sentence(&run).contains("bogus"), "{}", run.show());
    assert_eq!(
        lab.config_text(),
        "[gate]\nstate = \".boxmaker\"\nbogus = 1\n"
    );
}

#[test]
fn add_writes_nothing_for_a_server_it_cannot_use() {
    let lab = new_lab("add-nothing");
    let s = bearer_server(&lab);
    let before = lab.config_text();
    // A server that wants a token, none given: it names no OAuth sign-in.
    let run = add(&lab, &[&s.url(), "--name", "acme"]);
    assert_eq!(run.code(), Some(1), "{}", run.show());
    let err = one_sentence(&run);
    assert!(
        err.contains("HTTP 401")
            && err.contains("--bearer-env")
            && err.contains("nothing was written"),
        "{err}"
    );
    // The wrong token.
    let mut wrong = new_lab("add-nothing-wrong");
    wrong
        .vars
        .push((VAR.into(), "not-the-token-0123456789".into()));
    let before_wrong = wrong.config_text();
    let run = add(&wrong, &[&s.url(), "--name", "acme", "--bearer-env", VAR]);
    assert_eq!(run.code(), Some(1), "{}", run.show());
    let err = one_sentence(&run);
    assert!(err.contains("refused the token"), "{err}");
    assert!(!err.contains("not-the-token"), "{err}");
    assert_eq!(wrong.config_text(), before_wrong);
    // A variable that is not set.
    let run = add(
        &lab,
        &[
            &s.url(),
            "--name",
            "acme",
            "--bearer-env",
            "BXM_NOT_SET_AT_ALL",
        ],
    );
    assert_eq!(run.code(), Some(2), "{}", run.show());
    one_sentence(&run);
    // Nothing listens there.
    let closed = format!("http://127.0.0.1:{}/mcp", free_port());
    let run = add(&lab, &[&closed, "--name", "acme"]);
    assert_eq!(run.code(), Some(1), "{}", run.show());
    assert!(
        one_sentence(&run).contains("cannot reach"),
        "{}",
        run.show()
    );
    assert_eq!(lab.config_text(), before);
    assert!(!lab.path("boxmaker.toml.bak").exists());
    // Without a config yet, `init`'s default is the start (and there is no old file to keep).
    let fresh = testkit::lab!("onboard", "add-nothing-fresh").in_its_dir();
    let run = add(&fresh, &[&closed, "--name", "later", "--no-probe"]);
    assert!(run.ok(), "{}", run.show());
    assert!(
        run.stdout.contains("boxmaker init's default"),
        "{}",
        run.show()
    );
    let text = fresh.config_text();
    assert!(text.starts_with(&before), "not the default:\n{text}");
    assert!(!fresh.path("boxmaker.toml.bak").exists());
    // --no-probe asks nothing and writes.
    let run = add(&lab, &[&closed, "--name", "later", "--no-probe"]);
    assert!(run.ok(), "{}", run.show());
    assert!(run.stdout.contains("tools refresh"), "{}", run.show());
    assert!(lab.config_text().contains("name = \"later\""));
}

#[test]
fn add_sees_an_oauth_server_and_prints_the_sign_in() {
    for mode in ["challenge", "bare"] {
        let lab = new_lab(&format!("add-oauth-{mode}"));
        let s = start(&lab, "oauth_resource_server.py", &[mode]);
        let run = add(&lab, &[&s.url(), "--name", "acme"]);
        assert!(run.ok(), "{mode}: {}", run.show());
        let config = std::fs::canonicalize(lab.config()).unwrap();
        let login = format!("auth login acme --config {}", config.display());
        assert!(
            run.stdout.contains("signs in with OAuth"),
            "{mode}: {}",
            run.show()
        );
        assert!(run.stdout.contains(&login), "{mode}: {}", run.show());
        assert!(
            run.stdout.contains(&format!(
                "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
                s.port
            )),
            "{mode}: {}",
            run.show()
        );
        assert!(lab.config_text().contains("name = \"acme\""));
        // The tool is written to sign in, so the printed command works as it stands.
        assert!(
            lab.config_text().contains("oauth = true"),
            "{mode}: {}",
            lab.config_text()
        );
        let status = lab.run_within(&["auth", "status", "acme"], DEADLINE);
        assert!(
            status.stdout.contains("acme: not signed in") && status.stdout.contains(&login),
            "{mode}: {}",
            status.show()
        );
        // A path the server does not serve (404): nothing written.
        let before = lab.config_text();
        let wrong = format!("http://127.0.0.1:{}/nope", s.port);
        let run = add(&lab, &[&wrong, "--name", "nope"]);
        assert_eq!(run.code(), Some(1), "{}", run.show());
        assert!(one_sentence(&run).contains("HTTP 404"), "{}", run.show());
        assert_eq!(lab.config_text(), before);
    }
}

#[test]
fn add_never_shows_the_token_a_hostile_server_echoes_back() {
    let lab = new_lab("add-echo");
    let s = start(&lab, "oauth_resource_server.py", &["echo"]);
    let before = lab.config_text();
    let run = add(&lab, &[&s.url(), "--name", "acme", "--bearer-env", VAR]);
    assert_eq!(run.code(), Some(1), "{}", run.show());
    let err = one_sentence(&run);
    // The server quoted what it was sent; the person sees the secret's name in its place.
    assert!(err.contains("you sent Bearer [secret acme-token]"), "{err}");
    let b64 = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("Bearer {TOKEN}"),
    );
    for shown in [&run.stdout, &run.stderr] {
        assert!(!shown.contains(TOKEN), "{}", run.show());
        assert!(!shown.contains(&b64[..b64.len() - 4]), "{}", run.show());
    }
    assert_eq!(lab.config_text(), before);
}

#[test]
fn add_keeps_every_comment_of_a_hand_written_config() {
    let lab = new_lab("add-comments");
    let text = "# my boxmaker\n[gate]\nstate = \".boxmaker\"   # beside this file\n\n\
                # the tools I use\n[[tool]]\nname = \"read_file\" # reads\nbuiltin = \"read_file\"\n\n\
                [[grant]]\ntool = \"read_file\"\neffect = \"allow\" # always\n\n\
                # [[tool]]\n# name = \"later\"\n# (a commented-out tool, kept as it is)\n";
    lab.write_config(text);
    let run = add(
        &lab,
        &[
            "https://mcp.example.com/mcp",
            "--class",
            "internal",
            "--trusted",
            "--no-probe",
        ],
    );
    assert!(run.ok(), "{}", run.show());
    let after = lab.config_text();
    assert!(after.starts_with(text), "{after}");
    let added = &after[text.len()..];
    assert!(added.contains("name = \"example\""), "{added}");
    assert!(added.contains("untrusted = false"), "{added}");
    // Its answers come through its egress rule: trusted there too (docs/spec.md §3.6).
    assert!(added.contains("trusted = true"), "{added}");
    assert!(added.contains("class = \"internal\""), "{added}");
    assert!(added.contains("ports = [443]"), "{added}");
    // It loads, and says what it was told.
    let check = lab.run_within(
        &["check", "--session", "s", "--tool", "example_x"],
        DEADLINE,
    );
    assert!(check.ok(), "{}", check.show());
    assert!(check.stdout.starts_with("ask"), "{}", check.show());
    // TLS on another port: its tunnel is allowed there too.
    let run = add(&lab, &["https://mcp.other.dev:8443/v1/mcp", "--no-probe"]);
    assert!(run.ok(), "{}", run.show());
    let after = lab.config_text();
    assert!(
        after.contains("ports = [8443]\ntunnel_ports = [8443]"),
        "{after}"
    );
}

#[test]
fn add_puts_a_stdio_server_behind_the_gate_the_same_way() {
    assert!(
        Path::new("/usr/bin/python3").exists(),
        "the hostile test server runs under /usr/bin/python3, which is missing"
    );
    let lab = new_lab("add-stdio");
    // The test servers, shown to every box read-only (a person's own mount, in their file).
    lab.append(&format!(
        "\n[[mount]]\nname = \"servers\"\nhost = {:?}\nat = \"/opt/servers\"\nclass = \"public\"\n",
        servers_dir().display().to_string()
    ));
    let before = lab.config_text();
    let run = add_command(
        &lab,
        &[],
        &["/usr/bin/python3", "/opt/servers/hostile_server.py", "well"],
    );
    assert!(run.ok(), "{}", run.show());
    // Named after the script; its tools listed from a discovery in a box.
    assert!(run.stdout.contains("added hostile "), "{}", run.show());
    assert!(
        run.stdout.contains("hostile offers 5 tools:"),
        "{}",
        run.show()
    );
    assert!(run.stdout.contains("hostile_echo"), "{}", run.show());
    let after = lab.config_text();
    assert!(after.starts_with(&before), "{after}");
    let added = &after[before.len()..];
    assert!(
        added.contains(r#"mcp = ["/usr/bin/python3", "/opt/servers/hostile_server.py", "well"]"#),
        "{added}"
    );
    assert!(added.contains("tool = \"hostile_*\"") && added.contains("effect = \"ask\""));
    assert!(!added.contains("\n[[egress]]\n"), "{added}");
    // Through the gate, once a person says yes.
    let (child, id) = call_waiting(&lab, "s1", "hostile_echo", r#"{"text":"in a box"}"#);
    let v = approve(&lab, child, &id);
    assert_eq!(v["status"], "result", "{v}");
    assert!(v["content"].as_str().unwrap().contains("in a box"), "{v}");
    // A URL and a command line at once, or --class for a command: refused.
    let run = add_command(&lab, &["https://example.com/mcp"], &["/bin/true"]);
    assert_eq!(run.code(), Some(2), "{}", run.show());
    one_sentence(&run);
    let run = add_command(&lab, &["--class", "internal"], &["/bin/true"]);
    assert_eq!(run.code(), Some(2), "{}", run.show());
    // A command line with a line break cannot write a table of its own (a grant that would
    // deny every tool): it stays one string of the `mcp` list, and out of the comment.
    let run = add_command(
        &lab,
        &["--name", "odd", "--no-probe"],
        &[
            "/bin/echo",
            "a\n[[grant]]\ntool = \"*\"\neffect = \"deny\"\n",
        ],
    );
    assert!(run.ok(), "{}", run.show());
    let text = lab.config_text();
    assert!(
        text.contains("stdio MCP server `/bin/echo a?[[grant]]?tool"),
        "{text}"
    );
    for (tool, says) in [("read_file", "allow"), ("odd_x", "ask")] {
        let check = lab.run_within(&["check", "--session", "s", "--tool", tool], DEADLINE);
        assert!(check.stdout.starts_with(says), "{tool}: {}", check.show());
    }
}

// ---------------------------------------------------------------------------------------
// `boxmaker client add CLIENT`.

/// A home directory and a project directory for one client test, the client's variables
/// cleared (every file is found from HOME or the directory it runs in).
struct Homes {
    lab: Lab,
    home: PathBuf,
    project: PathBuf,
}

impl Homes {
    fn new(name: &str) -> Homes {
        let lab = testkit::lab!("onboard", name).init();
        let home = lab.mkdir("home");
        let project = lab.mkdir("project");
        Homes { lab, home, project }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(self.lab.bin());
        c.args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME");
        c
    }

    /// The person's word for the lab's config (`boxmaker trust`), said as this person: with
    /// this HOME, where their trust records are (docs/spec.md §6, "Whose config"). `false`
    /// for a config that does not load (the command under test then says why).
    fn trust(&self) -> bool {
        let mut c = self.cmd(&["trust", "--config"]);
        c.arg(self.lab.config());
        testkit::run_to_end(c, &self.lab.dir, "trust", DEADLINE).ok()
    }

    /// `boxmaker client ARGS` as this person, the lab's config trusted first.
    fn client(&self, args: &[&str]) -> Run {
        self.trust();
        let mut all = vec!["client"];
        all.extend_from_slice(args);
        let mut c = self.cmd(&all);
        if args.first() != Some(&"list") {
            c.arg("--config").arg(self.lab.config());
        }
        testkit::run_to_end(c, &self.lab.dir, &all.join(" "), DEADLINE)
    }

    fn bin(&self) -> String {
        std::fs::canonicalize(self.lab.bin())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string()
    }

    fn config(&self) -> String {
        std::fs::canonicalize(self.lab.config())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string()
    }
}

/// Each client's user file, relative to HOME, and what is there before (other servers and
/// settings, as each client writes them).
fn user_files() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        (
            "claude-code",
            ".claude.json",
            r#"{
  "numStartups": 12,
  "theme": "dark",
  "mcpServers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},
    "fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {}}
  },
  "projects": {"/home/me/code": {"allowedTools": [], "hasTrustDialogAccepted": true}},
  "userID": "0b3363d7"
}
"#,
        ),
        (
            "claude-desktop",
            ".config/Claude/claude_desktop_config.json",
            r#"{"globalShortcut": "Ctrl+Space", "mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}"#,
        ),
        (
            "cursor",
            ".cursor/mcp.json",
            r#"{"mcpServers": {"context7": {"url": "https://mcp.context7.com/mcp", "headers": {"X": "${env:X}"}}}}"#,
        ),
        (
            "vscode",
            ".config/Code/User/mcp.json",
            r#"{"inputs": [{"type": "promptString", "id": "key", "password": true}], "servers": {"memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}"#,
        ),
    ]
}

const CODEX_BEFORE: &str = "# my Codex settings\nmodel = \"gpt-5\"   # the default model\n\
                            approval_policy = \"on-request\"\n\n\
                            [mcp_servers.docs]\ncommand = \"npx\" # docs lookup\n\
                            args = [\"-y\", \"docs-mcp\"]\n\n\
                            [mcp_servers.docs.env]\nDOCS_KEY = \"x\"\n\n\
                            # [mcp_servers.old]\n# command = \"old\"\n";

fn backups(dir: &Path, name: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{name}.bak-"))
        })
        .collect()
}

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn client_add_writes_each_clients_own_file_and_keeps_what_is_there() {
    let h = Homes::new("client-add");
    let args = json!(["mcp", "--config", h.config()]);
    for (client, rel, before) in user_files() {
        let path = h.home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, before).unwrap();
        let run = h.client(&["add", client]);
        assert!(run.ok(), "{client}: {}", run.show());
        let old: Value = serde_json::from_str(before).unwrap();
        let new = json_file(&path);
        let key = if client == "vscode" {
            "servers"
        } else {
            "mcpServers"
        };
        // Every other setting and server as it was, in its order.
        let mut old_keys: Vec<_> = old.as_object().unwrap().keys().cloned().collect();
        old_keys.sort_by_key(|k| before.find(&format!("\"{k}\"")).unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        let mut at = 0;
        for k in &old_keys {
            let i = text[at..]
                .find(&format!("\"{k}\""))
                .unwrap_or_else(|| panic!("{client}: {k} moved or went:\n{text}"));
            at += i;
            if k != key {
                assert_eq!(new[k], old[k], "{client}: {k}");
            }
        }
        for (name, server) in old[key].as_object().unwrap() {
            assert_eq!(&new[key][name], server, "{client}: {name}");
        }
        // The entry, in the client's own form.
        let entry = &new[key]["boxmaker"];
        assert_eq!(entry["command"], h.bin(), "{client}: {entry}");
        assert_eq!(entry["args"], args, "{client}: {entry}");
        match client {
            "claude-code" | "vscode" => assert_eq!(entry["type"], "stdio", "{client}"),
            _ => assert!(entry.get("type").is_none(), "{client}: {entry}"),
        }
        // The file as it was is kept beside it.
        let b = backups(
            path.parent().unwrap(),
            path.file_name().unwrap().to_str().unwrap(),
        );
        assert_eq!(b.len(), 1, "{client}: {b:?}");
        assert_eq!(std::fs::read_to_string(&b[0]).unwrap(), before);
        // A second run changes nothing, and says so.
        let again = h.client(&["add", client]);
        assert!(again.ok(), "{client}: {}", again.show());
        assert!(again.stdout.contains("nothing changed"), "{}", again.show());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert_eq!(
            backups(
                path.parent().unwrap(),
                path.file_name().unwrap().to_str().unwrap()
            )
            .len(),
            1
        );
    }
    // Codex: TOML, comments and layout kept.
    let path = h.home.join(".codex/config.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, CODEX_BEFORE).unwrap();
    let run = h.client(&["add", "codex"]);
    assert!(run.ok(), "{}", run.show());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(CODEX_BEFORE), "{text}");
    let added = &text[CODEX_BEFORE.len()..];
    assert!(added.contains("[mcp_servers.boxmaker]\n"), "{added}");
    assert!(
        added.contains(&format!("command = \"{}\"", h.bin())),
        "{added}"
    );
    assert!(
        added.contains(&format!(
            "args = [\"mcp\", \"--config\", \"{}\"]",
            h.config()
        )),
        "{added}"
    );
    let again = h.client(&["add", "codex"]);
    assert!(again.stdout.contains("nothing changed"), "{}", again.show());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert_eq!(backups(path.parent().unwrap(), "config.toml").len(), 1);
    // Files that do not exist yet are made (user scope: private to the user).
    let fresh = Homes::new("client-add-fresh");
    for (client, rel, _) in user_files() {
        let run = fresh.client(&["add", client]);
        assert!(run.ok(), "{client}: {}", run.show());
        let path = fresh.home.join(rel);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "{client}");
        assert!(json_file(&path).is_object());
    }
    let run = fresh.client(&["add", "codex"]);
    assert!(run.ok(), "{}", run.show());
    let text = std::fs::read_to_string(fresh.home.join(".codex/config.toml")).unwrap();
    assert!(text.contains("[mcp_servers.boxmaker]"), "{text}");
    assert!(!text.contains("[mcp_servers]\n"), "{text}");
}

#[test]
fn client_add_for_a_project_writes_the_projects_file() {
    let h = Homes::new("client-project");
    // The person's word for the config, kept in their state home (under HOME): all the home
    // holds before any `client add`.
    assert!(h.trust());
    let home_before = entries_below(&h.home);
    for (client, rel, key) in [
        ("claude-code", ".mcp.json", "mcpServers"),
        ("cursor", ".cursor/mcp.json", "mcpServers"),
        ("vscode", ".vscode/mcp.json", "servers"),
    ] {
        let run = h.client(&["add", client, "--scope", "project"]);
        assert!(run.ok(), "{client}: {}", run.show());
        let v = json_file(&h.project.join(rel));
        assert_eq!(v[key]["boxmaker"]["command"], h.bin(), "{client}");
    }
    let run = h.client(&["add", "codex", "--scope", "project"]);
    assert!(run.ok(), "{}", run.show());
    assert!(
        std::fs::read_to_string(h.project.join(".codex/config.toml"))
            .unwrap()
            .contains("[mcp_servers.boxmaker]")
    );
    let run = h.client(&["add", "claude-desktop", "--scope", "project"]);
    assert_eq!(run.code(), Some(2), "{}", run.show());
    one_sentence(&run);
    // Nothing went to the home directory.
    assert_eq!(entries_below(&h.home), home_before);
}

/// Every file and directory below `dir`, recursively, sorted.
fn entries_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn client_add_refuses_a_file_it_cannot_parse_and_leaves_it_as_it_was() {
    let h = Homes::new("client-malformed");
    let cases: Vec<(&str, &str, &str)> = vec![
        (
            "claude-code",
            ".claude.json",
            "{\"mcpServers\": {\"a\": 1,}}",
        ),
        ("claude-code", ".claude.json", "[1, 2]"),
        ("claude-code", ".claude.json", "{\"mcpServers\": [\"a\"]}"),
        (
            "claude-code",
            ".claude.json",
            "{\"mcpServers\": {}, \"mcpServers\": {}}",
        ),
        (
            "claude-desktop",
            ".config/Claude/claude_desktop_config.json",
            "{\"mcpServers\": {",
        ),
        ("cursor", ".cursor/mcp.json", "not json at all"),
        (
            "vscode",
            ".config/Code/User/mcp.json",
            "{\n  // my servers\n  \"servers\": {}\n}\n",
        ),
        (
            "codex",
            ".codex/config.toml",
            "[mcp_servers.docs\ncommand = \"x\"\n",
        ),
        ("codex", ".codex/config.toml", "mcp_servers = 3\n"),
    ];
    for (client, rel, text) in cases {
        let path = h.home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        let run = h.client(&["add", client]);
        assert!(!run.ok(), "{client} {text:?}: {}", run.show());
        let err = one_sentence(&run);
        assert!(err.contains("left as it is"), "{client} {text:?}: {err}");
        if client == "vscode" {
            assert!(err.contains("comments"), "{err}");
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{client}");
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(backups(path.parent().unwrap(), name).is_empty(), "{client}");
        // No temporary file is left beside it either.
        for e in std::fs::read_dir(path.parent().unwrap()).unwrap().flatten() {
            assert!(
                !e.file_name().to_string_lossy().ends_with(".tmp"),
                "{:?}",
                e.path()
            );
        }
    }
    // A config of boxmaker's that does not load gives no entry.
    h.lab.write_config("[gate]\nnope = 1\n");
    let run = h.client(&["add", "cursor", "--scope", "project"]);
    assert_eq!(run.code(), Some(2), "{}", run.show());
    assert!(!h.project.join(".cursor/mcp.json").exists());
}

#[test]
fn client_add_refuses_another_server_of_the_same_name_and_remove_takes_only_its_own() {
    let h = Homes::new("client-same-name");
    let path = h.home.join(".cursor/mcp.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let theirs = r#"{"mcpServers": {"boxmaker": {"command": "/usr/bin/something", "args": []}}}"#;
    std::fs::write(&path, theirs).unwrap();
    let run = h.client(&["add", "cursor"]);
    assert_eq!(run.code(), Some(2), "{}", run.show());
    assert!(
        one_sentence(&run).contains("/usr/bin/something"),
        "{}",
        run.show()
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), theirs);
    let run = h.client(&["remove", "cursor"]);
    assert_eq!(run.code(), Some(2), "{}", run.show());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), theirs);
    // Under another name it goes in beside it; list shows it; remove takes it out again.
    let run = h.client(&["add", "cursor", "--name", "gated"]);
    assert!(run.ok(), "{}", run.show());
    let v = json_file(&path);
    assert_eq!(v["mcpServers"]["boxmaker"]["command"], "/usr/bin/something");
    assert_eq!(v["mcpServers"]["gated"]["command"], h.bin());
    let list = h.client(&["list"]);
    assert!(list.ok(), "{}", list.show());
    let line = list
        .stdout
        .lines()
        .find(|l| l.starts_with("cursor (user"))
        .unwrap_or_else(|| panic!("{}", list.show()));
    assert!(
        line.contains("\"gated\" runs") && line.contains(&h.config()),
        "{line}"
    );
    assert!(
        list.stdout
            .lines()
            .any(|l| l.starts_with("codex (user") && l.ends_with("no file")),
        "{}",
        list.show()
    );
    let run = h.client(&["remove", "cursor", "--name", "gated"]);
    assert!(run.ok(), "{}", run.show());
    assert_eq!(
        json_file(&path),
        serde_json::from_str::<Value>(theirs).unwrap()
    );
    let run = h.client(&["remove", "cursor", "--name", "gated"]);
    assert!(
        run.ok() && run.stdout.contains("nothing changed"),
        "{}",
        run.show()
    );
    // Codex too.
    let run = h.client(&["add", "codex"]);
    assert!(run.ok(), "{}", run.show());
    let run = h.client(&["remove", "codex"]);
    assert!(run.ok(), "{}", run.show());
    let text = std::fs::read_to_string(h.home.join(".codex/config.toml")).unwrap();
    assert!(!text.contains("boxmaker"), "{text}");
}

#[test]
fn claude_code_lists_boxmaker_as_connected_after_client_add() {
    let claude = repo_root().join("tests/node-claude/node_modules/.bin/claude");
    assert!(
        claude.exists(),
        "Claude Code's CLI is missing: run `make deps` ({})",
        claude.display()
    );
    let h = Homes::new("claude-mcp-list");
    let list = || {
        let mut c = Command::new(&claude);
        c.args(["mcp", "list"])
            .current_dir(&h.project)
            .env("HOME", &h.home)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("XDG_CONFIG_HOME")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        testkit::run_to_end(c, &h.lab.dir, "claude mcp list", DEADLINE)
    };
    let before = list();
    assert!(before.ok(), "{}", before.show());
    assert!(!before.stdout.contains("boxmaker"), "{}", before.show());
    let run = h.client(&["add", "claude-code"]);
    assert!(run.ok(), "{}", run.show());
    let after = list();
    assert!(after.ok(), "{}", after.show());
    let line = after
        .stdout
        .lines()
        .find(|l| l.starts_with("boxmaker:"))
        .unwrap_or_else(|| panic!("claude mcp list has no boxmaker:\n{}", after.show()));
    assert!(
        line.contains(&h.bin()) && line.contains(&h.config()),
        "{line}"
    );
    // Claude Code started it and spoke MCP to it.
    assert!(line.contains("Connected"), "{line}");
    // The prompt hook (docs/spec.md §3.10), in Claude Code's own settings, which it read
    // without complaint above; a second add changes nothing.
    let settings = h.home.join(".claude/settings.json");
    let hook = format!("{} intent --hook --config {}", h.bin(), h.config());
    let hooks = json_file(&settings);
    assert_eq!(
        hooks["hooks"]["UserPromptSubmit"],
        json!([{"hooks": [{"type": "command", "command": hook}]}]),
        "{hooks}"
    );
    let again = h.client(&["add", "claude-code"]);
    assert!(again.stdout.contains("nothing changed"), "{}", again.show());
    assert_eq!(json_file(&settings), hooks);
    // The person's own hooks and settings stay; remove takes out only boxmaker's.
    std::fs::write(
        &settings,
        r#"{"model": "opus", "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "mine.sh"}]}]}}"#,
    )
    .unwrap();
    assert!(h.client(&["add", "claude-code"]).ok());
    assert_eq!(
        json_file(&settings)["hooks"]["UserPromptSubmit"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(h.client(&["remove", "claude-code"]).ok());
    assert_eq!(
        json_file(&settings),
        json!({"model": "opus", "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "mine.sh"}]}]}})
    );
    assert!(h.client(&["add", "claude-code"]).ok());
    // Project scope: `.mcp.json`, which Claude Code reads too.
    let run = h.client(&[
        "add",
        "claude-code",
        "--scope",
        "project",
        "--name",
        "gated",
    ]);
    assert!(run.ok(), "{}", run.show());
    let after = list();
    assert!(
        after.stdout.lines().any(|l| l.starts_with("gated:")),
        "{}",
        after.show()
    );
}

#[test]
fn a_normal_user_adds_boxmaker_to_their_own_file_which_stays_theirs() {
    if !testkit::can_be_a_user() {
        panic!("this test runs as root with setpriv, to be uid 1000 (as the escape tests do)");
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let h = Homes::new("client-user");
    testkit::open_to_everyone(&h.home, &h.lab.dir);
    testkit::open_to_everyone(&h.project, &h.lab.dir);
    std::fs::set_permissions(h.lab.config(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = h.home.join(".claude.json");
    std::fs::write(&path, r#"{"mcpServers": {}}"#).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&path, Some(1000), Some(1000)).unwrap();
    std::os::unix::fs::chown(&h.home, Some(1000), Some(1000)).unwrap();
    // The user's word for the config, as the user with their HOME (docs/spec.md §6, "Whose
    // config").
    let mut t = testkit::as_a_user(h.lab.bin());
    t.args(["trust", "--config"])
        .arg(h.lab.config())
        .current_dir(&h.project)
        .env("HOME", &h.home);
    let run = testkit::run_to_end(t, &h.lab.dir, "trust as a user", DEADLINE);
    assert!(run.ok(), "{}", run.show());
    let mut c = testkit::as_a_user(h.lab.bin());
    c.args(["client", "add", "claude-code", "--config"])
        .arg(h.lab.config())
        .current_dir(&h.project)
        .env("HOME", &h.home)
        .env_remove("CLAUDE_CONFIG_DIR");
    let run = testkit::run_to_end(c, &h.lab.dir, "client add as a user", DEADLINE);
    assert!(run.ok(), "{}", run.show());
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (1000, 0o600));
    assert_eq!(
        json_file(&path)["mcpServers"]["boxmaker"]["command"],
        h.bin()
    );
    // Root editing the user's file (a shell of root's with their HOME) leaves it theirs too.
    // Root's word for the config is kept in root's own state home: the mark key under the
    // user's HOME is the user's, which boxmaker never takes for root's (docs/spec.md §6).
    let root_state = h.lab.dir.join("root-state");
    let as_root = |args: &[&str]| {
        let mut c = h.cmd(args);
        c.arg("--config")
            .arg(h.lab.config())
            .env("XDG_STATE_HOME", &root_state);
        testkit::run_to_end(c, &h.lab.dir, &args.join(" "), DEADLINE)
    };
    let run = as_root(&["trust"]);
    assert!(run.ok(), "{}", run.show());
    let run = as_root(&["client", "add", "claude-code", "--name", "again"]);
    assert!(run.ok(), "{}", run.show());
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (1000, 0o600));
}
