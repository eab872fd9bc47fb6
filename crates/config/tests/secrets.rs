//! `[[secret]]` and a tool's `secrets` (docs/spec.md §3.8): where a credential comes from, the
//! variables a box is handed, and every way a config can name what is not there, refused at
//! load with one sentence naming it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use config::{ConfigError, SecretSource, parse};

const BASE: &str = "/etc/boxmaker-test";

fn ok(text: &str) -> config::Config {
    parse(text, "boxmaker.toml", Path::new(BASE))
        .unwrap_or_else(|e| panic!("expected a valid config, got: {e}"))
}

/// The error of `text`, which must be one line and placed at `line`.
fn bad(text: &str, line: usize) -> String {
    let e = match parse(text, "boxmaker.toml", Path::new(BASE)) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    };
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "more than one line: {msg:?}");
    match e {
        ConfigError::Invalid { line: l, .. } => assert_eq!(l, line, "{msg}"),
        other => panic!("expected a placed error, got {other:?}"),
    }
    msg
}

const SECRETS: &str = r#"
[[secret]]
name = "gh"
env = "GITHUB_TOKEN"

[[secret]]
name = "file-token"
file = "tokens/api"

[[secret]]
name = "vault"
command = ["pass", "show", "api"]
"#;

#[test]
fn each_source_is_read_as_written() {
    let c = ok(SECRETS);
    assert_eq!(c.secrets.len(), 3);
    assert_eq!(
        c.secret("gh").unwrap().source,
        SecretSource::Env("GITHUB_TOKEN".into())
    );
    assert_eq!(
        c.secret("file-token").unwrap().source,
        SecretSource::File(PathBuf::from(BASE).join("tokens/api"))
    );
    // `pass` is kept by where `PATH` finds it, where it is installed.
    match &c.secret("vault").unwrap().source {
        SecretSource::Command(argv) => {
            assert!(argv[0] == "pass" || argv[0].ends_with("/pass"), "{argv:?}");
            assert_eq!(&argv[1..], ["show", "api"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.secret("gh").unwrap().line, 3);
}

#[test]
fn a_tool_gets_its_secrets_as_the_variables_it_names() {
    let c = ok(&format!(
        r#"{SECRETS}
[[tool]]
name = "github"
mcp = ["github-mcp-server", "stdio"]
secrets = {{ GITHUB_PERSONAL_ACCESS_TOKEN = "gh", API_KEY = "vault" }}

[[tool]]
name = "run"
builtin = "run"
secrets = ["gh"]

[[tool]]
name = "plain"
mcp = ["server"]
"#
    ));
    let gh = c.tool("github").unwrap();
    assert_eq!(
        gh.secrets.iter().collect::<Vec<_>>(),
        vec![
            (&"API_KEY".to_string(), &"vault".to_string()),
            (
                &"GITHUB_PERSONAL_ACCESS_TOKEN".to_string(),
                &"gh".to_string()
            )
        ]
    );
    // The list form passes an `env` secret under its own variable's name.
    assert_eq!(
        c.tool("run")
            .unwrap()
            .secrets
            .get("GITHUB_TOKEN")
            .map(String::as_str),
        Some("gh")
    );
    assert!(c.tool("plain").unwrap().secrets.is_empty());
}

#[test]
fn a_secret_no_one_defined_is_refused_by_name() {
    let msg = bad(
        r#"
[[tool]]
name = "github"
mcp = ["server"]
secrets = { TOKEN = "gh" }
"#,
        5,
    );
    assert!(
        msg.contains("names the secret \"gh\", but no [[secret]]"),
        "{msg}"
    );
    let msg = bad(
        "[[tool]]\nname = \"run\"\nbuiltin = \"run\"\nsecrets = [\"nope\"]\n",
        4,
    );
    assert!(msg.contains("\"nope\""), "{msg}");
}

#[test]
fn a_secret_says_exactly_one_place() {
    let msg = bad("[[secret]]\nname = \"x\"\n", 2);
    assert!(msg.contains("exactly one of"), "{msg}");
    let msg = bad("[[secret]]\nname = \"x\"\nenv = \"A\"\nfile = \"/f\"\n", 2);
    assert!(msg.contains("it has 2"), "{msg}");
    let msg = bad("[[secret]]\nname = \"x\"\ncommand = []\n", 3);
    assert!(msg.contains("may not be empty"), "{msg}");
    let msg = bad("[[secret]]\nname = \"x\"\nenv = \"NOT-A-VAR\"\n", 3);
    assert!(msg.contains("not an environment variable name"), "{msg}");
    let msg = bad("[[secret]]\nname = \"x y\"\nenv = \"A\"\n", 2);
    assert!(msg.contains("secret name"), "{msg}");
    let msg = bad(
        "[[secret]]\nname = \"x\"\nenv = \"A\"\n[[secret]]\nname = \"x\"\nenv = \"B\"\n",
        5,
    );
    assert!(msg.contains("defined twice (first on line 2)"), "{msg}");
    let msg = bad(
        "[[secret]]\nname = \"x\"\nenv = \"A\"\nvalue = \"hunter2\"\n",
        4,
    );
    assert!(msg.contains("unknown field"), "{msg}");
}

#[test]
fn a_secret_file_inside_a_mount_is_refused() {
    let msg = bad(
        r#"
[[mount]]
host = "/home/u/notes"
at = "/data/notes"

[[secret]]
name = "x"
file = "/home/u/notes/token"
"#,
        3,
    );
    assert!(
        msg.contains("mount /data/notes") && msg.contains("a box could read it"),
        "{msg}"
    );
}

#[test]
fn the_list_form_needs_a_variable_to_borrow_the_name_from() {
    let msg = bad(
        &format!("{SECRETS}\n[[tool]]\nname = \"s\"\nmcp = [\"x\"]\nsecrets = [\"vault\"]\n"),
        17,
    );
    assert!(
        msg.contains("write `secrets = { VARIABLE = \"vault\" }`"),
        "{msg}"
    );
}

#[test]
fn a_secret_goes_only_where_a_variable_can_be_handed_and_under_a_free_name() {
    let msg = bad(
        &format!(
            "{SECRETS}\n[[tool]]\nname = \"r\"\nbuiltin = \"read_file\"\nsecrets = [\"gh\"]\n"
        ),
        17,
    );
    assert!(msg.contains("only a stdio server"), "{msg}");
    let msg = bad(
        &format!(
            "{SECRETS}\n[[tool]]\nname = \"s\"\nmcp = [\"x\"]\nsecrets = {{ PATH = \"gh\" }}\n"
        ),
        17,
    );
    assert!(msg.contains("boxmaker sets in every box itself"), "{msg}");
    let msg = bad(
        &format!(
            "{SECRETS}\n[[tool]]\nname = \"s\"\nmcp = [\"x\"]\nenv = [\"TOKEN\"]\nsecrets = {{ TOKEN = \"gh\" }}\n"
        ),
        18,
    );
    assert!(msg.contains("both through `env`"), "{msg}");
}

#[test]
fn a_secrets_variable_is_not_passed_through_env_unredacted() {
    let msg = bad(
        &format!("{SECRETS}\n[[tool]]\nname = \"s\"\nmcp = [\"x\"]\nenv = [\"GITHUB_TOKEN\"]\n"),
        17,
    );
    assert!(
        msg.contains("where the secret \"gh\" is read from"),
        "{msg}"
    );
}

// ---------------------------------------------------------------------------------------
// Remote tools (docs/spec.md §3.9): their URL, transport and credentials by name.

#[test]
fn a_remote_tool_names_its_url_and_credentials() {
    use config::{HeaderValue, ToolKind, Transport};
    let c = ok(&format!(
        r#"{SECRETS}
[[tool]]
name = "github"
url = "https://api.githubcopilot.com/mcp/"
bearer = "gh"
headers = {{ X-MCP-Toolsets = "repos,issues", X-Api-Key = "secret:vault" }}
pin = true
prefix = "gh"
"#
    ));
    let t = c.tool("github").unwrap();
    let ToolKind::Remote {
        url,
        transport,
        bearer,
        headers,
        pin,
        prefix,
        ..
    } = &t.kind
    else {
        panic!("not remote: {t:?}");
    };
    assert_eq!(url.absolute(), "https://api.githubcopilot.com:443/mcp/");
    assert_eq!(*transport, Transport::StreamableHttp);
    assert_eq!(bearer.as_deref(), Some("gh"));
    assert!(*pin && prefix.as_deref() == Some("gh"));
    assert!(headers.contains(&("X-Api-Key".into(), HeaderValue::Secret("vault".into()))));
    assert!(headers.contains(&(
        "X-MCP-Toolsets".into(),
        HeaderValue::Literal("repos,issues".into())
    )));
    // No box: it reads no mount, and it is a server the catalog keys by its URL.
    assert_eq!(c.reach(t), proto::DataClass::Public);
    assert!(t.kind.is_server() && t.could_expose("gh_get_me"));
}

#[test]
fn a_remote_tool_is_refused_what_it_cannot_have() {
    let base = |extra: &str| {
        format!("{SECRETS}\n[[tool]]\nname = \"r\"\nurl = \"https://x.example/mcp\"\n{extra}")
    };
    let msg = bad(&base("bearer = \"nope\"\n"), 17);
    assert!(
        msg.contains("names the secret \"nope\", but no [[secret]]"),
        "{msg}"
    );
    let msg = bad(&base("headers = { H = \"secret:nope\" }\n"), 17);
    assert!(msg.contains("\"nope\""), "{msg}");
    let msg = bad(&base("network = true\n"), 16);
    assert!(msg.contains("runs in no box"), "{msg}");
    let msg = bad(&base("mounts = []\n"), 17);
    assert!(msg.contains("runs in no box"), "{msg}");
    let msg = bad(
        &base("bearer = \"gh\"\nheaders = { Authorization = \"x\" }\n"),
        18,
    );
    assert!(
        msg.contains("may not set the header Authorization"),
        "{msg}"
    );
    let msg = bad(&base("transport = \"websocket\"\n"), 17);
    assert!(msg.contains("\"streamable-http\" or \"sse\""), "{msg}");
    let msg = bad(
        &format!("{SECRETS}\n[[tool]]\nname = \"r\"\nurl = \"http://mcp.example:8080/mcp\"\n"),
        16,
    );
    assert!(msg.contains("plain HTTP goes only to an address"), "{msg}");
    // `localhost` is loopback by definition: plain HTTP may name it (docs/spec.md §3.9).
    ok(&format!(
        "{SECRETS}\n[[tool]]\nname = \"r\"\nurl = \"http://localhost:8080/mcp\"\noauth = true\n"
    ));
    // A sign-in's token is the credential: `oauth` beside `bearer` is refused, and its
    // client secret must be a [[secret]].
    let msg = bad(
        &format!(
            "{SECRETS}\n[[tool]]\nname = \"r\"\nurl = \"https://x.example/\"\nbearer = \"gh\"\noauth = true\n"
        ),
        18,
    );
    assert!(msg.contains("both `oauth` and `bearer"), "{msg}");
    let msg = bad(
        &format!(
            "{SECRETS}\n[[tool]]\nname = \"r\"\nurl = \"https://x.example/\"\noauth = {{ client_id = \"a\", client_secret = \"nope\" }}\n"
        ),
        17,
    );
    assert!(msg.contains("no [[secret]] has `name = \"nope\"`"), "{msg}");
    let msg = bad(
        &format!("{SECRETS}\n[[tool]]\nname = \"r\"\nurl = \"https://u@x.example/\"\n"),
        16,
    );
    assert!(msg.contains("user info"), "{msg}");
    let msg = bad(
        &format!("{SECRETS}\n[[tool]]\nname = \"r\"\nmcp = [\"x\"]\nbearer = \"gh\"\n"),
        17,
    );
    assert!(msg.contains("only for a remote tool"), "{msg}");
}

/// The store's password is never in the config (docs/spec.md §6, "The store"): a URL with
/// `user:password@` or a `password=` parameter is refused at load, in one sentence that
/// says where it goes instead, and without repeating the password.
#[test]
fn a_store_url_carrying_a_password_is_refused() {
    for url in [
        "postgres://boxmaker:hunter2@db.internal/boxmaker",
        "postgresql://boxmaker@db.internal/boxmaker?sslmode=require&password=hunter2",
    ] {
        let text = format!("[gate]\nstore = \"{url}\"\n");
        let msg = bad(&text, 2);
        assert!(msg.contains("PGPASSWORD"), "{msg}");
        assert!(
            !msg.contains("hunter2"),
            "the error repeats the password: {msg}"
        );
    }
    let c = ok("[gate]\nstore = \"postgres://boxmaker@db.internal/boxmaker?sslmode=require\"\n");
    assert_eq!(
        c.gate.store.as_deref(),
        Some("postgres://boxmaker@db.internal/boxmaker?sslmode=require")
    );
}
