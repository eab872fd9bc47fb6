//! `boxmaker.toml`: the default parses, good files give the values they say, and every
//! kind of bad file is one error naming the file, the line and the column.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use config::{Builtin, ConfigError, DEFAULT_CONFIG, ToolKind, default_config, parse};
use policy::{Decision, Taint, decide};
use proto::{DataClass, DenyReason, SessionId, Timestamp};

const BASE: &str = "/etc/boxmaker-test";

fn ok(text: &str) -> config::Config {
    match parse(text, "boxmaker.toml", Path::new(BASE)) {
        Ok(c) => c,
        Err(e) => panic!("expected a valid config, got: {e}"),
    }
}

/// Parses `text`, expects an error at `line`, and returns its message for more checks.
fn bad(text: &str, line: usize) -> String {
    let e = match parse(text, "dir/boxmaker.toml", Path::new(BASE)) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    };
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "error is more than one line: {msg:?}");
    match &e {
        ConfigError::Invalid {
            origin,
            line: l,
            column,
            ..
        } => {
            assert_eq!(origin, "dir/boxmaker.toml");
            assert_eq!(*l, line, "wrong line in {msg:?}");
            assert!(*column >= 1);
            assert!(
                msg.starts_with(&format!("dir/boxmaker.toml:{line}:{column}: ")),
                "{msg}"
            );
        }
        other => panic!("expected a placed error, got {other:?}"),
    }
    msg
}

fn session(s: &str) -> SessionId {
    SessionId::new(s).unwrap()
}

#[test]
fn test_default_config_parses_and_says_what_init_promises() {
    let c = default_config(Path::new("/home/u/project")).unwrap();
    assert_eq!(c.gate.state, PathBuf::from("/home/u/project/.boxmaker"));
    assert_eq!(c.gate.approval_ttl, 300);
    assert!(!c.gate.log_arguments);
    assert!(
        !c.gate.approve_in_client,
        "approving in the agent's client is a trust decision: off unless asked for"
    );
    assert!(
        c.mounts.is_empty(),
        "the default box shows only the workspace"
    );
    let builtins: Vec<_> = c
        .tools
        .iter()
        .map(|t| match t.kind {
            ToolKind::Builtin(b) => b,
            ToolKind::Mcp { .. } | ToolKind::Remote { .. } => panic!("default has no server"),
        })
        .collect();
    for b in Builtin::ALL {
        assert!(builtins.contains(b), "missing builtin {}", b.as_str());
    }
    let s = session("s1");
    let now = Timestamp(1_800_000_000);
    for tool in ["read_file", "list_dir", "write_file"] {
        assert_eq!(
            decide(&c.grants, &s, tool, Taint::CLEAN, now),
            Decision::Allow
        );
    }
    assert_eq!(
        decide(&c.grants, &s, "run", Taint::CLEAN, now),
        Decision::Ask
    );
    assert_eq!(
        decide(&c.grants, &s, "fetch_get", Taint::CLEAN, now),
        Decision::Deny(DenyReason::NoGrant)
    );
    for example in ["max_class", "if_untrusted", "expires"] {
        assert!(
            DEFAULT_CONFIG
                .lines()
                .any(|l| l.starts_with('#') && l.contains(example)),
            "the default should show {example} in a comment"
        );
    }
}

#[test]
fn test_default_config_commented_examples_parse_when_uncommented() {
    // Uncommenting every `# key = value` / `# [[table]]` line must still give a valid file.
    let uncommented: String = DEFAULT_CONFIG
        .lines()
        .map(|l| {
            let rest = l.strip_prefix("# ").unwrap_or(l);
            let looks_like_toml = rest.starts_with('[')
                || rest.split_once(" = ").is_some_and(|(k, _)| {
                    !k.is_empty() && k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                });
            if looks_like_toml { rest } else { l }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let c = ok(&uncommented);
    assert_eq!(c.mounts.len(), 1);
    assert!(c.tool("fetch").is_some());
}

#[test]
fn test_full_file_gives_every_value() {
    let c = ok(r#"
[gate]
state = "/var/lib/bm"
approval_ttl = 60
log_arguments = true
approve_in_client = true

[box]
memory_bytes = 1000
max_processes = 2
file_size_bytes = 3
timeout_seconds = 4

[[mount]]
host = "data"
at = "/data/x/"
class = "secret"
write = true

[[tool]]
name = "fetch"
mcp = ["uvx", "mcp-server-fetch"]
network = true
untrusted = true
env = ["HTTP_PROXY", "_X1"]
prefix = ""
pin = true
idle_timeout = 30

[[grant]]
tool = "fetch_*"
sessions = "team-?:*"
effect = "allow"
max_class = "public"
if_untrusted = "deny"
expires = 100
"#);
    assert_eq!(c.gate.state, PathBuf::from("/var/lib/bm"));
    assert_eq!(c.gate.approval_ttl, 60);
    assert!(c.gate.log_arguments);
    assert!(c.gate.approve_in_client);
    assert_eq!(
        (
            c.limits.memory_bytes,
            c.limits.max_processes,
            c.limits.file_size_bytes,
            c.limits.timeout_seconds
        ),
        (1000, 2, 3, 4)
    );
    let m = &c.mounts[0];
    assert_eq!(m.host, PathBuf::from(BASE).join("data"));
    assert_eq!(m.at, PathBuf::from("/data/x"));
    assert_eq!((m.class, m.write), (DataClass::Secret, true));
    let t = c.tool("fetch").unwrap();
    assert_eq!(
        t.kind,
        ToolKind::Mcp {
            argv: vec!["uvx".into(), "mcp-server-fetch".into()],
            prefix: Some(String::new()),
            pin: true,
            idle_timeout: Some(30),
        }
    );
    assert!(t.network && t.untrusted);
    assert_eq!(t.class, DataClass::Public);
    assert_eq!(t.env, vec!["HTTP_PROXY", "_X1"]);
    let g = c.grants.get(0).unwrap();
    assert_eq!(g.tool.as_str(), "fetch_*");
    assert_eq!(g.sessions.as_str(), "team-?:*");
    assert_eq!(g.max_class, DataClass::Public);
    assert_eq!(g.if_untrusted, policy::Effect::Deny);
    assert_eq!(g.expires, Some(Timestamp(100)));
}

#[test]
fn test_defaults_of_each_table() {
    let c = ok(
        "[[mount]]\nhost = \"/h\"\nat = \"/m\"\n[[tool]]\nname = \"t\"\nbuiltin = \"run\"\n[[grant]]\ntool = \"t\"\neffect = \"ask\"\n",
    );
    assert_eq!(c.gate.state, PathBuf::from(BASE).join(".boxmaker"));
    assert_eq!(c.limits, config::BoxLimits::default());
    assert_eq!(c.limits.memory_bytes, 2 << 30);
    assert_eq!(
        (c.mounts[0].class, c.mounts[0].write),
        (DataClass::Internal, false)
    );
    let t = c.tool("t").unwrap();
    assert_eq!(
        (t.class, t.untrusted, t.network),
        (DataClass::Public, false, false)
    );
    assert!(t.env.is_empty());
    let g = c.grants.get(0).unwrap();
    assert_eq!(g.sessions.as_str(), "*");
    assert_eq!(g.max_class, DataClass::Secret);
    assert_eq!(g.if_untrusted, policy::Effect::Allow);
    assert_eq!(g.expires, None);
}

#[test]
fn test_empty_file_is_valid_and_grants_nothing() {
    let c = ok("");
    assert!(c.grants.is_empty());
    assert_eq!(
        decide(
            &c.grants,
            &session("s"),
            "read_file",
            Taint::CLEAN,
            Timestamp(0)
        ),
        Decision::Deny(DenyReason::NoGrant)
    );
}

#[test]
fn test_tilde_expands_to_home() {
    let home = std::env::var("HOME").unwrap_or_default();
    if home.is_empty() {
        return;
    }
    let c = ok("[gate]\nstate = \"~/.bm\"\n");
    assert_eq!(c.gate.state, Path::new(&home).join(".bm"));
    // (A mount of the whole home directory would hold that state directory: refused.)
    let c = ok("[gate]\nstate = \"/var/lib/bm\"\n[[mount]]\nhost = \"~/docs\"\nat = \"/home\"\n");
    assert_eq!(c.mounts[0].host, PathBuf::from(&home).join("docs"));
    // Nor may a box see the person's mark key, under ~/.local/state (docs/spec.md §6, "Whose
    // state"): a mount of the whole home directory is refused for it too.
    let e = bad(
        "[gate]\nstate = \"/var/lib/bm\"\n[[mount]]\nhost = \"~\"\nat = \"/home\"\n",
        4,
    );
    assert!(e.contains("mark key"), "{e}");
}

#[test]
fn test_load_reads_relative_to_the_file() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("config-load-test");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("boxmaker.toml");
    std::fs::write(&file, "[[mount]]\nhost = \"notes\"\nat = \"/n\"\n").unwrap();
    let c = config::load_untrusted(&file).unwrap().0;
    assert_eq!(c.mounts[0].host, dir.join("notes"));
    let missing = config::load(&dir.join("nope.toml")).unwrap_err();
    assert!(matches!(missing, ConfigError::NotFound { .. }));
    let text = missing.to_string();
    assert!(text.contains("nope.toml"), "{text}");
    assert!(
        text.contains("boxmaker init") && text.contains("--config"),
        "{text}"
    );
    assert_eq!(c.file.as_deref(), Some(file.as_path()));
    // The fingerprint follows the text.
    std::fs::write(&file, "[[mount]]\nhost = \"notes\"\nat = \"/m\"\n").unwrap();
    assert_ne!(
        config::load_untrusted(&file).unwrap().0.fingerprint,
        c.fingerprint
    );
}

/// docs/spec.md §6, "Whose config": a repository can ship `boxmaker.toml`, so `load` uses a
/// config only when the person trusted it at that path with those bytes; a broken one is
/// named as broken first.
#[test]
fn test_load_uses_only_a_config_the_person_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("boxmaker.toml");
    let text = "[[mount]]\nhost = \"notes\"\nat = \"/n\"\n";
    std::fs::write(&file, text).unwrap();
    let e = config::load(&file).unwrap_err();
    assert!(matches!(e, ConfigError::Untrusted { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("not one you have trusted") && msg.contains(" trust --config /"),
        "{msg}"
    );
    config::trust(&file, text).unwrap();
    config::load(&file).unwrap();
    std::fs::write(&file, format!("{text}# one more line\n")).unwrap();
    let e = config::load(&file).unwrap_err();
    assert!(matches!(e, ConfigError::Changed { .. }), "{e}");
    assert!(
        e.to_string().contains("changed since you trusted it"),
        "{e}"
    );
    // Broken and untrusted: what is broken is said first.
    std::fs::write(&file, "[[mount]\n").unwrap();
    assert!(matches!(
        config::load(&file).unwrap_err(),
        ConfigError::Invalid { .. }
    ));
    statedir::trust::forget(&file).unwrap();
}

// ---- bad files: one error, with the line -------------------------------------------------

#[test]
fn test_bad_unknown_key_names_key_and_line() {
    let m = bad("[gate]\nstate = \"x\"\napprovel_ttl = 3\n", 3);
    assert!(m.contains("approvel_ttl"), "{m}");
    bad("top = 1\n", 1);
    let m = bad(
        "[[tool]]\nname = \"a\"\nbuiltin = \"run\"\nnetwrok = true\n",
        4,
    );
    assert!(m.contains("netwrok"), "{m}");
    bad(
        "[[grant]]\ntool = \"a\"\neffect = \"allow\"\ncolour = \"red\"\n",
        4,
    );
    bad("[[mount]]\nhost = \"a\"\nat = \"/b\"\nreadonly = true\n", 4);
    bad("[box]\nmemory = 5\n", 2);
    bad("[sandbox]\n", 1);
}

#[test]
fn test_bad_class_names_the_classes() {
    let m = bad(
        "[[tool]]\nname = \"a\"\nbuiltin = \"run\"\nclass = \"topsecret\"\n",
        4,
    );
    assert!(m.contains("topsecret") && m.contains("confidential"), "{m}");
    bad(
        "[[grant]]\ntool = \"a\"\neffect = \"allow\"\nmax_class = \"Secret\"\n",
        4,
    );
    bad("[[mount]]\nhost = \"a\"\nat = \"/b\"\nclass = 3\n", 4);
}

#[test]
fn test_bad_effect_names_the_three() {
    let m = bad("[[grant]]\ntool = \"a\"\neffect = \"maybe\"\n", 3);
    assert!(
        m.contains("maybe") && m.contains("allow, ask or deny"),
        "{m}"
    );
    bad(
        "[[grant]]\ntool = \"a\"\neffect = \"allow\"\nif_untrusted = \"warn\"\n",
        4,
    );
}

#[test]
fn test_bad_missing_required_key() {
    let m = bad("[[grant]]\ntool = \"a\"\n", 1);
    assert!(m.contains("effect"), "{m}");
    bad("[[tool]]\nbuiltin = \"run\"\n", 1);
    bad("[[mount]]\nat = \"/x\"\n", 1);
}

#[test]
fn test_bad_types_and_syntax() {
    bad("[gate]\napproval_ttl = \"5\"\n", 2);
    bad("[gate]\napproval_ttl = -1\n", 2);
    bad("[gate]\napproval_ttl = 0\n", 2);
    bad("[box]\ntimeout_seconds = 0\n", 2);
    bad("[gate]\nlog_arguments = \"yes\"\n", 2);
    bad("[gate]\napprove_in_client = 1\n", 2);
    bad(
        "[[grant]]\ntool = \"a\"\neffect = \"allow\"\nexpires = \"2027\"\n",
        4,
    );
    bad("\n\n[gate\n", 3);
    bad("[gate]\nstate = \"unterminated\n", 2);
    bad("[gate]\nstate = \"a\"\nstate = \"b\"\n", 3);
    let m = bad("[mount]\nhost = \"a\"\nat = \"/b\"\n", 1);
    assert!(m.contains("[[mount]]"), "{m}");
}

#[test]
fn test_bad_tool_names() {
    let m = bad(
        "[[tool]]\nname = \"read file\"\nbuiltin = \"read_file\"\n",
        2,
    );
    assert!(m.contains("read file"), "{m}");
    bad("[[tool]]\nname = \"\"\nbuiltin = \"read_file\"\n", 2);
    bad(
        &format!(
            "[[tool]]\nname = \"{}\"\nbuiltin = \"run\"\n",
            "a".repeat(65)
        ),
        2,
    );
    bad("[[tool]]\nname = \"é\"\nbuiltin = \"run\"\n", 2);
    ok(&format!(
        "[[tool]]\nname = \"{}\"\nbuiltin = \"run\"\n",
        "a".repeat(64)
    ));
}

#[test]
fn test_bad_duplicate_tool_names_point_at_the_second() {
    let m = bad(
        "[[tool]]\nname = \"a\"\nbuiltin = \"run\"\n\n[[tool]]\nname = \"a\"\nmcp = [\"x\"]\n",
        6,
    );
    assert!(m.contains("twice") && m.contains("line 2"), "{m}");
}

#[test]
fn test_bad_tool_kinds() {
    let m = bad("[[tool]]\nname = \"a\"\n", 2);
    assert!(m.contains("builtin") && m.contains("mcp"), "{m}");
    bad(
        "[[tool]]\nname = \"a\"\nbuiltin = \"run\"\nmcp = [\"x\"]\n",
        4,
    );
    bad("[[tool]]\nname = \"a\"\nbuiltin = \"shell\"\n", 3);
    bad("[[tool]]\nname = \"a\"\nmcp = []\n", 3);
    bad("[[tool]]\nname = \"a\"\nmcp = [\"\"]\n", 3);
    bad("[[tool]]\nname = \"a\"\nmcp = \"uvx x\"\n", 3);
    bad(
        "[[tool]]\nname = \"a\"\nbuiltin = \"run\"\nprefix = \"p\"\n",
        4,
    );
    bad("[[tool]]\nname = \"a\"\nbuiltin = \"run\"\npin = true\n", 4);
    bad(
        "[[tool]]\nname = \"a\"\nmcp = [\"x\"]\nprefix = \"a b\"\n",
        4,
    );
    bad(
        "[[tool]]\nname = \"a\"\nmcp = [\"x\"]\nidle_timeout = 0\n",
        4,
    );
    bad(
        "[[tool]]\nname = \"a\"\nmcp = [\"x\"]\nenv = [\"OK\", \"1BAD\"]\n",
        4,
    );
    bad(
        "[[tool]]\nname = \"a\"\nmcp = [\"x\"]\nenv = [\"A=B\"]\n",
        4,
    );
}

#[test]
fn test_bad_mount_points() {
    for at in [
        "relative/x",
        "/work",
        "/work/sub",
        "/",
        "/a/../work",
        "/a/./b",
        "//work/",
    ] {
        let m = bad(&format!("[[mount]]\nhost = \"/h\"\nat = \"{at}\"\n"), 3);
        assert!(m.contains("at"), "{m}");
    }
    ok("[[mount]]\nhost = \"/h\"\nat = \"/workspace\"\n");
    bad("[[mount]]\nhost = \"\"\nat = \"/x\"\n", 2);
    bad("[[mount]]\nhost = \"~other/x\"\nat = \"/x\"\n", 2);
    let m = bad(
        "[[mount]]\nhost = \"/a\"\nat = \"/x\"\n[[mount]]\nhost = \"/b\"\nat = \"/x/\"\n",
        6,
    );
    assert!(m.contains("twice"), "{m}");
}

#[test]
fn test_bad_grant_patterns() {
    let m = bad("[[grant]]\ntool = \"\"\neffect = \"allow\"\n", 2);
    assert!(m.contains("empty"), "{m}");
    bad(
        "[[grant]]\ntool = \"a\"\nsessions = \"\"\neffect = \"allow\"\n",
        3,
    );
    bad("[[grant]]\ntool = \"read file\"\neffect = \"allow\"\n", 2);
    bad(
        "[[grant]]\ntool = \"a\"\nsessions = \"team/*\"\neffect = \"allow\"\n",
        3,
    );
    ok("[[grant]]\ntool = \"*\"\nsessions = \"a.b:c-*?\"\neffect = \"deny\"\n");
}

#[test]
fn test_error_positions_count_columns() {
    match parse("[gate]\n  stat = 1\n", "f", Path::new("/")) {
        Err(ConfigError::Invalid { line, column, .. }) => assert_eq!((line, column), (2, 3)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn test_mount_at_a_place_the_box_builds_is_refused_with_its_line() {
    for at in [
        "/etc/app",
        "/usr/local/data",
        "/tmp",
        "/proc/x",
        "/dev/shm/x",
        "/lib64",
    ] {
        let text = format!("[[mount]]\nhost = \"/srv\"\nat = \"{at}\"\n");
        let msg = bad(&text, 3);
        assert!(msg.contains("which the box builds itself"), "{at}: {msg}");
    }
    // Near misses are fine: whole components only.
    let cfg = ok("[[mount]]\nhost = \"/srv\"\nat = \"/etcetera\"\n");
    assert_eq!(cfg.mounts[0].at, std::path::Path::new("/etcetera"));
}

#[test]
fn test_box_requirements_default_to_landlock_required_and_can_be_relaxed() {
    let cfg = ok("");
    assert!(cfg.limits.require_landlock);
    assert!(!cfg.limits.require_cgroups);
    let cfg = ok("[box]\nrequire_landlock = false\nrequire_cgroups = true\n");
    assert!(!cfg.limits.require_landlock);
    assert!(cfg.limits.require_cgroups);
    let msg = bad("[box]\nrequire_landlock = \"no\"\n", 2);
    assert!(msg.contains("boolean") || msg.contains("bool"), "{msg}");
}

#[test]
fn test_egress_rules_default_to_https_and_http_at_public() {
    let cfg = ok(r#"
[[egress]]
host = "API.github.com"

[[egress]]
name = "pypi"
host = "*.pythonhosted.org"
ports = [443]
class = "internal"

[[egress]]
host = "192.0.2.0/24"

[[tool]]
name = "fetch"
mcp = ["f"]
network = true
egress = ["pypi", "API.github.com"]
"#);
    assert_eq!(cfg.egress.len(), 3);
    assert_eq!(cfg.egress[0].ports, vec![443, 80]);
    assert_eq!(cfg.egress[0].tunnel_ports, vec![443]);
    assert_eq!(cfg.egress[0].class, DataClass::Public);
    assert_eq!(
        cfg.egress[0].host,
        config::HostPattern::Name("api.github.com".into())
    );
    assert_eq!(cfg.egress[1].class, DataClass::Internal);
    assert_eq!(cfg.egress[1].line, 7);
    let fetch = cfg.tool("fetch").unwrap();
    let used: Vec<&str> = cfg
        .egress_rules_of(fetch)
        .map(|r| r.written.as_str())
        .collect();
    assert_eq!(used, ["API.github.com", "*.pythonhosted.org"]);
    assert_eq!(cfg.limits.max_connections_per_session, 32);
    assert_eq!(cfg.limits.egress_idle_seconds, 120);
    assert_eq!(cfg.limits.max_upload_bytes, 1 << 30);
}

#[test]
fn test_tunnel_ports_default_to_443_where_the_rule_allows_it() {
    let cfg = ok(r#"
[[egress]]
host = "a.example"
ports = [80]

[[egress]]
host = "b.example"
ports = [8443, 443]
tunnel_ports = [8443]

[[egress]]
host = "c.example"
tunnel_ports = []
"#);
    assert_eq!(cfg.egress[0].tunnel_ports, Vec::<u16>::new());
    assert_eq!(cfg.egress[1].tunnel_ports, vec![8443]);
    assert_eq!(cfg.egress[2].tunnel_ports, Vec::<u16>::new());
}

#[test]
fn test_bad_egress_rules_name_their_line() {
    let msg = bad("\n[[egress]]\nhost = \"a.*.com\"\n", 3);
    assert!(msg.contains("glob"), "{msg}");
    let msg = bad("[[egress]]\nhost = \"10.0.0.1/8\"\n", 2);
    assert!(msg.contains("first address"), "{msg}");
    let msg = bad("[[egress]]\nhost = \"a.com\"\nports = [0]\n", 3);
    assert!(msg.contains("1 to 65535"), "{msg}");
    let msg = bad("[[egress]]\nhost = \"a.com\"\nports = [443, 443]\n", 3);
    assert!(msg.contains("twice"), "{msg}");
    let msg = bad("[[egress]]\nhost = \"a.com\"\nports = []\n", 3);
    assert!(msg.contains("empty"), "{msg}");
    let msg = bad("[[egress]]\nhost = \"a.com\"\nclass = \"top\"\n", 3);
    assert!(msg.contains("public"), "{msg}");
    let msg = bad("[[egress]]\nhost = \"a.com\"\nverb = \"GET\"\n", 3);
    assert!(msg.contains("verb"), "{msg}");
    let msg = bad(
        "[[egress]]\nhost = \"a.com\"\n[[tool]]\nname = \"f\"\nmcp = [\"f\"]\nnetwork = true\negress = [\"b.com\"]\n",
        7,
    );
    assert!(msg.contains("b.com"), "{msg}");
    let msg = bad(
        "[[egress]]\nhost = \"a.com\"\n[[tool]]\nname = \"f\"\nmcp = [\"f\"]\negress = [\"a.com\"]\n",
        6,
    );
    assert!(msg.contains("network = true"), "{msg}");
    let msg = bad(
        "[[egress]]\nhost = \"a.com\"\nports = [443, 8443]\ntunnel_ports = [443, 80]\n",
        4,
    );
    assert!(
        msg.contains("tunnel port 80 is not one of this rule's `ports`"),
        "{msg}"
    );
    let msg = bad(
        "[[egress]]\nhost = \"a.com\"\ntunnel_ports = [443, 443]\n",
        3,
    );
    assert!(msg.contains("tunnel port 443 is listed twice"), "{msg}");
    let msg = bad("[[egress]]\nhost = \"a.com\"\ntunnel_ports = [70000]\n", 3);
    assert!(msg.contains("1 to 65535"), "{msg}");
    let msg = bad("[[egress]]\nhost = \"0xc0000202\"\n", 2);
    assert!(msg.contains("start with a letter"), "{msg}");
    let msg = bad("[[egress]]\nhost = \"64:ff9b::a00:1\"\n", 2);
    assert!(msg.contains("host = \"10.0.0.1\""), "{msg}");
    let msg = bad("[box]\nmax_connections_per_session = 0\n", 2);
    assert!(msg.contains("above 0"), "{msg}");
}

#[test]
fn test_audit_defaults_put_the_key_beside_the_state_directory() {
    let c = ok("[gate]\nstate = \"/var/lib/bm/state\"\n");
    assert_eq!(c.audit.key, PathBuf::from("/var/lib/bm/state.audit-key"));
    assert_eq!(c.audit.checkpoint_every, 1000);
    assert_eq!(c.audit.checkpoint_secs, 60);
    assert_eq!(c.audit.witness_file, None);
    assert_eq!(c.audit.witness_command, None);
    assert!(c.audit.journal);
    // A state directory spelt with `..` or a trailing `/` still has its key beside it.
    let c = ok("[gate]\nstate = \"/var/lib/bm/x/../state/\"\n");
    assert_eq!(c.audit.key, PathBuf::from("/var/lib/bm/state.audit-key"));
}

#[test]
fn test_audit_table_gives_every_value() {
    let c = ok(r#"
[audit]
key = "~/.config/boxmaker/audit.key"
checkpoint_every = 50
checkpoint_secs = 5
witness_file = "/var/log/bm/checkpoints"
witness_command = ["logger", "-t", "boxmaker-audit"]
journal = false
"#);
    let home = std::env::var("HOME").unwrap();
    assert_eq!(
        c.audit.key,
        PathBuf::from(home).join(".config/boxmaker/audit.key")
    );
    assert_eq!(c.audit.checkpoint_every, 50);
    assert_eq!(c.audit.checkpoint_secs, 5);
    assert_eq!(
        c.audit.witness_file,
        Some(PathBuf::from("/var/log/bm/checkpoints"))
    );
    // A bare program is kept by what `PATH` finds now (left bare where it finds none).
    let argv = c.audit.witness_command.unwrap();
    assert!(
        argv[0] == "logger" || (argv[0].starts_with('/') && argv[0].ends_with("/logger")),
        "{argv:?}"
    );
    assert_eq!(&argv[1..], ["-t", "boxmaker-audit"]);
    assert!(!c.audit.journal);
}

#[test]
fn test_audit_key_and_witness_may_not_sit_where_the_log_or_a_box_can_reach() {
    // Inside the state directory: whoever rewrites the log would reach them too.
    let msg = bad("[gate]\nstate = \"s\"\n[audit]\nkey = \"s/audit.key\"\n", 4);
    assert!(msg.contains("inside the state directory"), "{msg}");
    let msg = bad(
        "[gate]\nstate = \"s\"\n[audit]\nwitness_file = \"./s/../s/w\"\n",
        4,
    );
    assert!(msg.contains("inside the state directory"), "{msg}");
    // The key inside any mount (a box could read it and sign); the witness inside a
    // writable one (a box could rewrite it), but a read-only mount may show it.
    let mounts = "[[mount]]\nhost = \"ro\"\nat = \"/data/ro\"\n\n\
                  [[mount]]\nhost = \"rw\"\nat = \"/data/rw\"\nwrite = true\n";
    // (The error points at the mount, and names the file.)
    let msg = bad(&format!("{mounts}[audit]\nkey = \"ro/k\"\n"), 2);
    assert!(
        msg.contains("mount /data/ro") && msg.contains("the audit key") && msg.contains("read"),
        "{msg}"
    );
    let msg = bad(&format!("{mounts}[audit]\nwitness_file = \"rw/w\"\n"), 6);
    assert!(
        msg.contains("mount /data/rw")
            && msg.contains("the witness file")
            && msg.contains("rewrite"),
        "{msg}"
    );
    let c = ok(&format!("{mounts}[audit]\nwitness_file = \"ro/w\"\n"));
    assert_eq!(c.audit.witness_file, Some(PathBuf::from(BASE).join("ro/w")));
    // The default key beside a state directory that a mount holds is refused by the mount
    // rule first; one the mount shows beside it is refused here.
    let e = parse(
        "[gate]\nstate = \"/srv/x/state\"\n[[mount]]\nhost = \"/srv/x/state.audit-key\"\n\
         at = \"/k\"\n",
        "dir/boxmaker.toml",
        Path::new(BASE),
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("beside the state directory") && msg.contains("set `[audit] key`"),
        "{msg}"
    );
    // Nonsense values.
    bad("[audit]\ncheckpoint_every = 0\n", 2);
    bad("[audit]\ncheckpoint_secs = 0\n", 2);
    let msg = bad("[audit]\nwitness_command = []\n", 2);
    assert!(msg.contains("may not be empty"), "{msg}");
    bad("[audit]\nwitness_command = \"logger\"\n", 2);
    bad("[audit]\nwitnes_file = \"x\"\n", 2);
    let msg = bad("[audit]\nkey = \"k\"\nwitness_file = \"k\"\n", 3);
    assert!(msg.contains("audit key"), "{msg}");
}

// ---- boxmaker's own files, after symlinks (issue 29, item 3) --------------------------------

#[test]
fn test_no_mount_lies_inside_the_state_directory_and_the_state_directory_has_a_name() {
    let msg = bad(
        "[gate]\nstate = \"/srv/x/state\"\n[[mount]]\nhost = \"/srv/x/state/work\"\nat = \"/w\"\n",
        4,
    );
    assert!(
        msg.contains("mount /w") && msg.contains("is inside boxmaker's state directory"),
        "{msg}"
    );
    let msg = bad("[gate]\nstate = \"/\"\n[audit]\nkey = \"/k\"\n", 2);
    assert!(msg.contains("has no name"), "{msg}");
}

#[test]
fn test_programs_boxmaker_runs_on_the_host_are_outside_every_writable_mount() {
    let rw = "[[mount]]\nhost = \"/opt/tools\"\nat = \"/data/tools\"\nwrite = true\n";
    let msg = bad(
        &format!("{rw}[[secret]]\nname = \"gh\"\ncommand = [\"/opt/tools/get-token\"]\n"),
        2,
    );
    assert!(
        msg.contains("the program of secret \"gh\"") && msg.contains("rewrite"),
        "{msg}"
    );
    let msg = bad(
        &format!("{rw}[audit]\nwitness_command = [\"/opt/tools/witness\"]\n"),
        2,
    );
    assert!(msg.contains("the program of the witness command"), "{msg}");
    // Read-only, they may be shown; a program found on `PATH` is not a path of the config's.
    let ro = rw.replace("write = true\n", "");
    ok(&format!(
        "{ro}[[secret]]\nname = \"gh\"\ncommand = [\"/opt/tools/get-token\"]\n"
    ));
    ok(&format!(
        "{rw}[[secret]]\nname = \"gh\"\ncommand = [\"pass\"]\n"
    ));
}

#[test]
fn test_a_writable_mount_may_not_hold_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proj/boxmaker.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let state = dir.path().join("state");
    let write = |w: bool| {
        std::fs::write(
            &file,
            format!(
                "[gate]\nstate = {:?}\n[[mount]]\nhost = \".\"\nat = \"/data/p\"\nwrite = {w}\n",
                state.display().to_string()
            ),
        )
        .unwrap();
    };
    write(true);
    let msg = config::load(&file).unwrap_err().to_string();
    assert!(
        msg.contains("mount /data/p") && msg.contains("the config file") && msg.contains("rewrite"),
        "{msg}"
    );
    write(false);
    let c = config::load_untrusted(&file).unwrap().0;
    assert!(c.own_files().iter().any(|f| f.path == file));
}

#[test]
fn test_the_key_and_the_witness_are_outside_the_state_directory_after_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("state")).unwrap();
    std::os::unix::fs::symlink(root.join("state"), root.join("k")).unwrap();
    let at = |extra: &str| {
        parse(
            &format!("[gate]\nstate = \"state\"\n[audit]\n{extra}\n"),
            "boxmaker.toml",
            &root,
        )
        .map(|_| ())
        .unwrap_err()
        .to_string()
    };
    let msg = at("key = \"k/audit.key\"");
    assert!(msg.contains("inside the state directory"), "{msg}");
    let msg = at("witness_file = \"k/w\"");
    assert!(msg.contains("inside the state directory"), "{msg}");
    // The witness file is the key's file by another name.
    std::fs::create_dir_all(root.join("keys")).unwrap();
    std::os::unix::fs::symlink(root.join("keys"), root.join("also")).unwrap();
    let msg = at("key = \"keys/k\"\nwitness_file = \"also/k\"");
    assert!(msg.contains("is the audit key's file"), "{msg}");
}

// ---- [box] address_space_bytes (issue 21, item 5) ----------------------------------------

#[test]
fn test_address_space_is_unlimited_by_default_and_set_apart_from_memory() {
    let c = ok("");
    assert_eq!(c.limits.address_space_bytes, None, "unlimited by default");
    assert_eq!(c.limits.memory_bytes, 2 << 30);
    let c = ok("[box]\nmemory_bytes = 1073741824\naddress_space_bytes = 68719476736\n");
    assert_eq!(c.limits.address_space_bytes, Some(64 << 30));
    assert_eq!(c.limits.memory_bytes, 1 << 30);
    let c = ok("[box]\naddress_space_bytes = \"unlimited\"\n");
    assert_eq!(c.limits.address_space_bytes, None);
}

#[test]
fn test_bad_address_space_names_its_line() {
    let m = bad("[box]\naddress_space_bytes = 0\n", 2);
    assert!(m.contains("address_space_bytes"), "{m}");
    let m = bad("[box]\naddress_space_bytes = \"lots\"\n", 2);
    assert!(m.contains("\"unlimited\"") && m.contains("lots"), "{m}");
    let m = bad("[box]\naddress_space_bytes = -5\n", 2);
    assert!(m.contains("address_space_bytes"), "{m}");
    // Below the memory limit it would be the tighter bound, and memory_bytes the wrong key.
    let m = bad(
        "[box]\nmemory_bytes = 2147483648\naddress_space_bytes = 1073741824\n",
        3,
    );
    assert!(m.contains("memory_bytes"), "{m}");
}

#[test]
fn test_a_writable_mount_keeps_what_the_host_runs_from_unless_it_says_otherwise() {
    let mount = "[[mount]]\nhost = \"/srv/proj\"\nat = \"/src\"\nwrite = true\n";
    // Absent: git's, the agent clients', the editors', direnv's and boxmaker's own files.
    let cfg = ok(mount);
    let kept: Vec<&str> = cfg.mounts[0]
        .read_only
        .iter()
        .map(|p| p.to_str().unwrap())
        .collect();
    assert_eq!(kept, config::HOST_RUN);
    for name in [
        ".git",
        ".claude",
        ".mcp.json",
        ".vscode",
        ".envrc",
        "boxmaker.toml",
    ] {
        assert!(kept.contains(&name), "{name} is not kept by default");
    }
    // A list replaces it; an empty one keeps nothing.
    let cfg = ok(&format!("{mount}read_only = [\".git\", \"scripts\"]\n"));
    assert_eq!(
        cfg.mounts[0].read_only,
        vec![
            std::path::PathBuf::from(".git"),
            std::path::PathBuf::from("scripts")
        ]
    );
    assert!(
        ok(&format!("{mount}read_only = []\n")).mounts[0]
            .read_only
            .is_empty()
    );
    // Only names in the mount's top directory, each once: a deeper entry does not hold.
    for entry in ["../x", "/etc", "", ".", "..", "a/../b", "./a", "a//b", "a/"] {
        let msg = bad(&format!("{mount}read_only = [\"{entry}\"]\n"), 5);
        assert!(
            msg.contains("`read_only` of the mount at /src") && msg.contains("not a name in"),
            "{entry:?}: {msg}"
        );
    }
    let msg = bad(&format!("{mount}read_only = [\"scripts/deploy.sh\"]\n"), 5);
    assert!(msg.contains("keep \"scripts\" instead"), "{msg}");
    let msg = bad(&format!("{mount}read_only = [\".git\", \".git\"]\n"), 5);
    assert!(msg.contains("twice"), "{msg}");
}

#[test]
fn test_a_host_command_means_one_thing_and_no_writable_mount_holds_what_it_runs() {
    // Reproduced: a box rewrote `./proj/token.sh`, and the runner next ran it on the host.
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    std::fs::create_dir_all(base.join("proj")).unwrap();
    std::fs::write(base.join("proj/token.sh"), "#!/bin/sh\necho t\n").unwrap();
    std::fs::create_dir_all(base.join("tools")).unwrap();
    std::fs::write(base.join("tools/get.py"), "print('t')\n").unwrap();
    let rw = "[[mount]]\nhost = \"proj\"\nat = \"/src\"\nwrite = true\n";
    let secret = |argv: &str| format!("{rw}[[secret]]\nname = \"tok\"\ncommand = {argv}\n");
    let parse_here = |text: &str| config::parse(text, "boxmaker.toml", base);

    // A relative program is the config directory's, wherever the gate was started.
    let msg = parse_here(&secret("[\"./proj/token.sh\"]"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("the program of secret \"tok\"") && msg.contains("proj/token.sh"),
        "{msg}"
    );
    // A script an interpreter runs, relative or absolute, is as much the program.
    for argv in [
        "[\"sh\", \"proj/token.sh\"]".to_string(),
        format!("[\"sh\", \"{}\"]", base.join("proj/token.sh").display()),
    ] {
        let msg = parse_here(&secret(&argv)).unwrap_err().to_string();
        assert!(
            msg.contains("a file named by the command of secret \"tok\""),
            "{argv}: {msg}"
        );
    }
    // The witness command too.
    let msg = parse_here(&format!(
        "{rw}[audit]\nwitness_command = [\"sh\", \"proj/token.sh\"]\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(msg.contains("the witness command"), "{msg}");

    // Outside the writable mount, each is resolved and kept as what runs.
    let cfg = parse_here(&secret("[\"python3\", \"tools/get.py\", \"show\", \"-c\"]")).unwrap();
    match &cfg.secrets[0].source {
        config::SecretSource::Command(argv) => {
            assert!(
                argv[0] == "python3" || argv[0].ends_with("/python3"),
                "{argv:?}"
            );
            assert_eq!(argv[1], base.join("tools/get.py").to_str().unwrap());
            // Words that name nothing here stay words.
            assert_eq!(&argv[2..], ["show", "-c"]);
        }
        other => panic!("{other:?}"),
    }
    let cfg = parse_here(&secret("[\"./tools/get.py\"]")).unwrap();
    match &cfg.secrets[0].source {
        config::SecretSource::Command(argv) => {
            assert_eq!(argv[0], base.join("./tools/get.py").to_str().unwrap());
        }
        other => panic!("{other:?}"),
    }
    // A program not there yet, in the writable mount, is refused as well.
    let msg = parse_here(&secret("[\"proj/later.sh\"]"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("proj/later.sh"), "{msg}");
}
