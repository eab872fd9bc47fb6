//! The real binary: `boxmaker init` and `boxmaker check`, as a person runs them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Output};

use testkit::{utf8_stderr as stderr, utf8_stdout as stdout};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

fn boxmaker(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// A fresh, empty directory for one test.
fn scratch(name: &str) -> PathBuf {
    testkit::fresh_dir(env!("CARGO_TARGET_TMPDIR"), "cli", name)
}

/// Asserts a usage failure: exit 2, nothing on stdout, exactly one line on stderr.
fn assert_usage_error(o: &Output) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(o.stdout.is_empty(), "stdout: {}", stdout(o));
    assert_eq!(err.lines().count(), 1, "stderr is not one line: {err:?}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    err
}

#[test]
fn test_init_writes_a_config_that_check_accepts() {
    let dir = scratch("init-writes");
    let o = boxmaker(&["init", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let file = dir.join("boxmaker.toml");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        config::DEFAULT_CONFIG
    );
    let f = file.to_str().unwrap();
    let check = |tool: &str| {
        let o = boxmaker(&["check", "--config", f, "--session", "s1", "--tool", tool]);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    assert_eq!(check("read_file"), "allow\n");
    assert_eq!(check("list_dir"), "allow\n");
    assert_eq!(check("write_file"), "allow\n");
    assert_eq!(check("run"), "ask\n");
    assert_eq!(check("fetch_get"), "denied no_grant\n");
}

#[test]
fn test_init_makes_a_missing_directory() {
    let dir = scratch("init-mkdir").join("a/b");
    let o = boxmaker(&["init", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.join("boxmaker.toml").is_file());
}

#[test]
fn test_init_defaults_to_the_current_directory() {
    let dir = scratch("init-cwd");
    let o = Command::new(BIN)
        .arg("init")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.join("boxmaker.toml").is_file());
}

#[test]
fn test_init_never_overwrites_an_existing_file() {
    let dir = scratch("init-refuses");
    let file = dir.join("boxmaker.toml");
    std::fs::write(&file, "# mine\n").unwrap();
    let o = boxmaker(&["init", dir.to_str().unwrap()]);
    let err = assert_usage_error(&o);
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# mine\n");
}

const POLICY: &str = r#"
[[grant]]
tool = "read_file"
effect = "allow"

[[grant]]
tool = "run"
effect = "ask"

[[grant]]
tool = "write_file"
effect = "allow"
if_untrusted = "ask"

[[grant]]
tool = "fetch_*"
effect = "allow"
max_class = "internal"

[[grant]]
tool = "rm"
effect = "allow"

[[grant]]
tool = "rm"
effect = "deny"

[[grant]]
tool = "old"
effect = "allow"
expires = 1000

[[grant]]
tool = "old_deny"
effect = "deny"
expires = 1000

[[grant]]
tool = "old_deny"
effect = "allow"

[[grant]]
tool = "shell"
effect = "allow"
if_untrusted = "deny"

[[grant]]
tool = "team_tool"
sessions = "team-*"
effect = "allow"
"#;

fn policy_file(name: &str) -> PathBuf {
    let file = scratch(name).join("boxmaker.toml");
    std::fs::write(&file, POLICY).unwrap();
    // The tester's config, trusted as a person would.
    assert!(testkit::trust(BIN, &file), "boxmaker trust");
    file
}

#[test]
fn test_check_answers_every_step_of_the_decision() {
    let file = policy_file("check-steps");
    let f = file.to_str().unwrap();
    // (session, tool, extra args, expected line)
    let cases: &[(&str, &str, &[&str], &str)] = &[
        // Step 1.
        ("s1", "nothing", &[], "denied no_grant"),
        ("s1", "fetch", &[], "denied no_grant"),
        ("s1", "team_tool", &[], "denied no_grant"),
        ("team-a", "team_tool", &[], "allow"),
        // Step 2.
        ("s1", "rm", &[], "denied denied_by_grant"),
        ("s1", "old_deny", &["--at", "999"], "denied denied_by_grant"),
        ("s1", "old_deny", &["--at", "1000"], "allow"),
        // Step 3.
        ("s1", "old", &["--at", "999"], "allow"),
        ("s1", "old", &["--at", "1000"], "denied grant_expired"),
        // Step 4.
        ("s1", "fetch_get", &["--taint", "internal"], "allow"),
        (
            "s1",
            "fetch_get",
            &["--taint", "confidential"],
            "denied taint_too_high",
        ),
        ("s1", "shell", &["--untrusted"], "denied taint_too_high"),
        ("s1", "shell", &[], "allow"),
        // Step 5.
        (
            "s1",
            "read_file",
            &["--taint", "secret", "--untrusted"],
            "allow",
        ),
        ("s1", "run", &[], "ask"),
        ("s1", "write_file", &[], "allow"),
        ("s1", "write_file", &["--untrusted"], "ask"),
    ];
    for (session, tool, extra, want) in cases {
        let mut args = vec!["check", "--config", f, "--session", session, "--tool", tool];
        args.extend_from_slice(extra);
        let o = boxmaker(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), format!("{want}\n"), "{args:?}");
        // This policy file defines no tools: `check` says so on stderr (every grant grants
        // nothing, the tool is unknown), and stdout stays the one decision line.
        assert!(
            stderr(&o)
                .lines()
                .all(|l| l.starts_with("boxmaker: warning: grant ")
                    || l.starts_with("boxmaker: note: unknown tool ")),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn test_check_explain_names_each_matching_grant() {
    let file = policy_file("check-explain");
    let o = boxmaker(&[
        "check",
        "--config",
        file.to_str().unwrap(),
        "--session",
        "s1",
        "--tool",
        "rm",
        "--explain",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "denied denied_by_grant");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("grant 5 ") && l.contains("allows")),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("grant 6 ") && l.contains("denies")),
        "{out}"
    );
    assert!(!out.contains("grant 1 "), "{out}");
}

#[test]
fn test_check_bad_config_is_one_line_with_the_line_number() {
    let dir = scratch("check-bad-config");
    let file = dir.join("boxmaker.toml");
    std::fs::write(&file, "[[grant]]\ntool = \"run\"\neffect = \"perhaps\"\n").unwrap();
    let o = boxmaker(&[
        "check",
        "--config",
        file.to_str().unwrap(),
        "--session",
        "s",
        "--tool",
        "run",
    ]);
    let err = assert_usage_error(&o);
    assert!(err.contains("boxmaker.toml:3:"), "{err}");
    assert!(err.contains("allow, ask or deny"), "{err}");

    std::fs::write(&file, "[gate]\nstate = \".b\"\n\nsecret_key = 1\n").unwrap();
    let o = boxmaker(&[
        "check",
        "--config",
        file.to_str().unwrap(),
        "--session",
        "s",
        "--tool",
        "run",
    ]);
    let err = assert_usage_error(&o);
    assert!(err.contains(":4:") && err.contains("secret_key"), "{err}");
}

#[test]
fn test_check_missing_config_is_one_line() {
    let dir = scratch("check-missing");
    let f = dir.join("none.toml");
    let o = boxmaker(&[
        "check",
        "--config",
        f.to_str().unwrap(),
        "--session",
        "s",
        "--tool",
        "run",
    ]);
    let err = assert_usage_error(&o);
    assert!(err.contains("none.toml"), "{err}");
}

#[test]
fn test_check_bad_arguments_exit_2_with_one_line() {
    let file = policy_file("check-bad-args");
    let f = file.to_str().unwrap();
    let bad: &[&[&str]] = &[
        &["check", "--config", f, "--session", "-bad", "--tool", "run"],
        &["check", "--config", f, "--session", "a/b", "--tool", "run"],
        &["check", "--config", f, "--session", "", "--tool", "run"],
        &[
            "check",
            "--config",
            f,
            "--session",
            "s",
            "--tool",
            "run",
            "--taint",
            "topsecret",
        ],
        &[
            "check",
            "--config",
            f,
            "--session",
            "s",
            "--tool",
            "run",
            "--at",
            "yesterday",
        ],
        &[
            "check",
            "--config",
            f,
            "--session",
            "s",
            "--tool",
            "run",
            "--at",
            "-1",
        ],
        &["check", "--config", f, "--session", "s", "--tool", "a b"],
        &["check", "--config", f, "--session", "s"],
        &["check", "--config", f, "--tool", "run"],
        &[
            "check",
            "--config",
            f,
            "--session",
            "s",
            "--tool",
            "run",
            "--bogus",
        ],
        &["frobnicate"],
    ];
    for args in bad {
        let o = boxmaker(args);
        let err = assert_usage_error(&o);
        assert!(err.starts_with("boxmaker: "), "{args:?}: {err}");
    }
    let o = boxmaker(&[
        "check",
        "--config",
        f,
        "--session",
        "s",
        "--tool",
        "run",
        "--taint",
        "topsecret",
    ]);
    let err = stderr(&o);
    assert!(
        err.contains("topsecret") && err.contains("confidential"),
        "{err}"
    );
    let o = boxmaker(&["check", "--config", f, "--session", "s"]);
    assert!(stderr(&o).contains("--tool"), "{}", stderr(&o));
}

#[test]
fn test_help_and_version_still_work() {
    let o = boxmaker(&["--version"]);
    assert!(o.status.success());
    assert!(stdout(&o).starts_with("boxmaker "));
    for args in [&["--help"][..], &["check", "--help"], &["init", "--help"]] {
        let o = boxmaker(args);
        assert!(o.status.success(), "{args:?}");
        assert!(stdout(&o).contains("Usage:"), "{args:?}");
    }
}
