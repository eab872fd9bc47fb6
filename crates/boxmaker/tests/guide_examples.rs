//! The README's and the guide's examples, checked so they cannot rot (issue 33): a person
//! copies them, so each must still be true of the binary this tree builds.
//!
//! - Every ```` ```toml ```` block is a config the real binary loads: `boxmaker check
//!   --config FILE` (which reads it as `mcp` and `serve` do, and runs its lint) exits 0.
//!   Info strings: `toml,fragment` is part of a config, checked appended to the `toml` block
//!   before it on the same page; `toml,foreign` is another program's file (a client's
//!   config), checked only as TOML.
//! - Every `boxmaker …` command line in an ```` ```sh ```` block parses: the real binary,
//!   with `--help` appended, exits 0 (clap reads every argument before it, so an unknown
//!   subcommand, option or value fails). That covers `boxmaker` wherever it is installed
//!   (`/path/to/boxmaker`), after `--` (`claude mcp add boxmaker -- /path/to/boxmaker mcp …`)
//!   and `cargo run -p boxmaker -- ARGS`. A block with `$ ` prompts is a transcript: only
//!   the prompted lines are commands. Every `make TARGET` names a target of the Makefile.
//! - Every ```` ```json ```` block is JSON.
//!
//! The pages are read from the tree, so an edit to the guide is checked by the next run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use testkit::{repo_root, run_to_end};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// One fenced block: where it is, its info string's words, its text.
#[derive(Debug)]
struct Block {
    file: String,
    line: usize,
    lang: String,
    attrs: Vec<String>,
    body: String,
}

impl Block {
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// The README and every page of the guide.
fn pages() -> Vec<PathBuf> {
    let root = repo_root();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs/guide/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root.join("README.md"));
    pages
}

/// The fenced blocks of a Markdown text, indented ones (inside a list item) included.
fn blocks(file: &str, text: &str) -> Vec<Block> {
    let mut out = vec![];
    let mut open: Option<(usize, usize, String, Vec<String>, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let mut words = info.trim().split(',').map(|w| w.trim().to_owned());
                    let lang = words.next().unwrap_or_default();
                    open = Some((i + 1, indent, lang, words.collect(), String::new()));
                }
            }
            Some((start, ind, lang, attrs, body)) => {
                if trimmed.starts_with("```") {
                    out.push(Block {
                        file: file.to_owned(),
                        line: *start,
                        lang: std::mem::take(lang),
                        attrs: std::mem::take(attrs),
                        body: std::mem::take(body),
                    });
                    open = None;
                } else {
                    body.push_str(line.get(*ind..).unwrap_or(trimmed));
                    body.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "{file}: a fenced block is never closed");
    out
}

fn all_blocks() -> Vec<Block> {
    let root = repo_root();
    let mut all = vec![];
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(&root).unwrap().display().to_string();
        all.extend(blocks(&name, &text));
    }
    all
}

// ---------------------------------------------------------------------------------------
// Configs.

/// `boxmaker check --config` on `text`, in a directory of its own with `$HOME` there too (a
/// `~/notes` mount names nothing of the person running the tests). `None` when it loads.
fn check_config(dir: &Path, text: &str) -> Option<String> {
    std::fs::create_dir_all(dir).unwrap();
    let config = dir.join("boxmaker.toml");
    std::fs::write(&config, text).unwrap();
    // The person who copies the example trusts it (`boxmaker trust --config FILE`, as the
    // guide says after every edit; docs/spec.md §6, "Whose config"), as the same `$HOME`. One
    // that does not load is left untrusted: `check` then says why it does not load.
    let _ = Command::new(BIN)
        .args(["trust", "--config"])
        .arg(&config)
        .env("HOME", dir)
        .current_dir(dir)
        .output()
        .unwrap();
    let mut c = Command::new(BIN);
    c.args([
        "check",
        "--session",
        "guide",
        "--tool",
        "read_file",
        "--config",
    ])
    .arg(&config)
    .env("HOME", dir)
    .current_dir(dir);
    let r = run_to_end(c, dir, "check", Duration::from_secs(60));
    (!r.ok()).then(|| r.show())
}

/// What is wrong with each config of `blocks`, one line each (empty: every one loads).
fn config_failures(blocks: &[Block], scratch: &Path) -> Vec<String> {
    let mut failures = vec![];
    let mut previous: Option<(String, String)> = None; // (file, text) of the last whole config
    for (n, b) in blocks.iter().enumerate().filter(|(_, b)| b.lang == "toml") {
        if b.attrs.iter().any(|a| a == "foreign") {
            if let Err(e) = b.body.parse::<toml_edit::DocumentMut>() {
                failures.push(format!("{}: not TOML: {e}", b.at()));
            }
            continue;
        }
        let text = if b.attrs.iter().any(|a| a == "fragment") {
            match &previous {
                Some((file, whole)) if *file == b.file => format!("{whole}\n{}", b.body),
                _ => {
                    failures.push(format!(
                        "{}: a toml,fragment with no toml block before it on its page",
                        b.at()
                    ));
                    continue;
                }
            }
        } else {
            previous = Some((b.file.clone(), b.body.clone()));
            b.body.clone()
        };
        if let Some(why) = check_config(&scratch.join(format!("toml-{n}")), &text) {
            failures.push(format!("{}: `boxmaker check` refuses it:\n{why}", b.at()));
        }
    }
    failures
}

// ---------------------------------------------------------------------------------------
// Command lines.

/// A shell line's words, as `sh` would split them (quotes, backslashes), with `&&`, `||`,
/// `|` and `;` as words of their own; a redirection and its file, and a comment, left out.
fn shell_words(line: &str) -> Vec<String> {
    // Words and operators, in order; an operator is `Err`.
    let mut tokens: Vec<Result<String, String>> = vec![];
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    w.push(c);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            w.extend(chars.next());
                        }
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            '#' if word.is_none() => break,
            c if c.is_whitespace() => tokens.extend(word.take().map(Ok)),
            '&' | '|' | ';' | '>' | '<' => {
                tokens.extend(word.take().map(Ok));
                let mut op = c.to_string();
                if chars.peek() == Some(&c) && c != ';' && c != '<' {
                    op.extend(chars.next());
                }
                tokens.push(Err(op));
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    tokens.extend(word.take().map(Ok));
    let mut words = vec![];
    let mut tokens = tokens.into_iter();
    while let Some(t) = tokens.next() {
        match t {
            Ok(w) => words.push(w),
            // A redirection's file is not an argument.
            Err(op) if op.starts_with(['>', '<']) => {
                tokens.next();
            }
            Err(op) => words.push(op),
        }
    }
    words
}

/// The command lines of an `sh` block: continuation lines joined; in a transcript (a block
/// with `$ ` prompts) only the prompted lines.
fn command_lines(body: &str) -> Vec<String> {
    let transcript = body.lines().any(|l| l.starts_with("$ "));
    let mut lines = vec![];
    let mut pending: Option<String> = None;
    for line in body.lines() {
        let line = match pending.take() {
            Some(mut head) => {
                head.push(' ');
                head.push_str(line.trim());
                head
            }
            None if transcript => match line.strip_prefix("$ ") {
                Some(cmd) => cmd.to_owned(),
                None => continue,
            },
            None => line.to_owned(),
        };
        match line.strip_suffix('\\') {
            Some(head) => pending = Some(head.trim_end().to_owned()),
            None => lines.push(line),
        }
    }
    lines.extend(pending);
    lines
}

/// What a command line asks of boxmaker and of make: the argument lists of each `boxmaker`
/// it runs, and the make targets it names.
fn invocations(line: &str) -> (Vec<Vec<String>>, Vec<String>) {
    let words = shell_words(line);
    let mut boxmaker = vec![];
    let mut make = vec![];
    for segment in words.split(|w| matches!(w.as_str(), "&&" | "||" | "|" | ";")) {
        // `VAR=value command …`
        let segment: Vec<&String> = segment
            .iter()
            .skip_while(|w| w.split_once('=').is_some_and(|(k, _)| is_var(k)))
            .collect();
        let Some(program) = segment.first() else {
            continue;
        };
        let is_boxmaker = |w: &str| Path::new(w).file_name().is_some_and(|n| n == "boxmaker");
        let rest = || {
            segment[1..]
                .iter()
                .map(|w| w.to_string())
                .collect::<Vec<_>>()
        };
        if is_boxmaker(program) {
            boxmaker.push(rest());
        } else if program.as_str() == "make" {
            make.extend(
                rest()
                    .into_iter()
                    .filter(|w| !w.starts_with('-') && !w.contains('=')),
            );
        } else if let Some(dash) = segment.iter().position(|w| w.as_str() == "--") {
            let after: Vec<String> = segment[dash + 1..].iter().map(|w| w.to_string()).collect();
            if program.as_str() == "cargo" && segment.iter().any(|w| w.as_str() == "boxmaker") {
                boxmaker.push(after);
            } else if after.first().is_some_and(|w| is_boxmaker(w)) {
                boxmaker.push(after[1..].to_vec());
            }
        }
    }
    (boxmaker, make)
}

fn is_var(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The Makefile's targets.
fn make_targets() -> Vec<String> {
    let makefile = std::fs::read_to_string(repo_root().join("Makefile")).unwrap();
    makefile
        .lines()
        .filter(|l| !l.starts_with(['\t', '#', ' ']))
        .filter_map(|l| l.split_once(':'))
        .filter(|(_, rest)| !rest.starts_with('='))
        .flat_map(|(names, _)| names.split_whitespace().map(str::to_owned))
        .collect()
}

/// `boxmaker ARGS --help`: `None` when clap took every argument.
fn parses(args: &[String], scratch: &Path) -> Option<String> {
    std::fs::create_dir_all(scratch).unwrap();
    let mut c = Command::new(BIN);
    c.args(args)
        .arg("--help")
        .env("HOME", scratch)
        .current_dir(scratch);
    let r = run_to_end(c, scratch, "help", Duration::from_secs(30));
    (!(r.ok() && r.stdout.contains("Usage:"))).then(|| r.show())
}

/// What is wrong with each command line of `blocks`, and how many `boxmaker` and `make`
/// invocations were checked.
fn command_failures(blocks: &[Block], scratch: &Path) -> (Vec<String>, usize) {
    let targets = make_targets();
    let mut failures = vec![];
    let mut checked = 0;
    for b in blocks.iter().filter(|b| b.lang == "sh") {
        for line in command_lines(&b.body) {
            let (runs, makes) = invocations(&line);
            for args in runs {
                checked += 1;
                if let Some(why) = parses(&args, &scratch.join(format!("sh-{checked}"))) {
                    failures.push(format!(
                        "{}: `boxmaker {}` does not parse:\n{why}",
                        b.at(),
                        args.join(" ")
                    ));
                }
            }
            for target in makes {
                checked += 1;
                if !targets.contains(&target) {
                    failures.push(format!("{}: the Makefile has no target {target:?}", b.at()));
                }
            }
        }
    }
    (failures, checked)
}

fn scratch(name: &str) -> PathBuf {
    testkit::fresh_dir(env!("CARGO_TARGET_TMPDIR"), "guide_examples", name)
}

// ---------------------------------------------------------------------------------------
// The tests.

#[test]
fn every_toml_block_of_the_guide_and_the_readme_is_a_config_boxmaker_loads() {
    let all = all_blocks();
    let n = all.iter().filter(|b| b.lang == "toml").count();
    assert!(
        n >= 14,
        "only {n} toml blocks found: is the guide where this test looks?"
    );
    let failures = config_failures(&all, &scratch("toml"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_boxmaker_command_line_of_the_guide_and_the_readme_parses() {
    let all = all_blocks();
    let (failures, checked) = command_failures(&all, &scratch("sh"));
    assert!(checked >= 30, "only {checked} command lines found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_json_block_of_the_guide_and_the_readme_is_json() {
    for b in all_blocks().iter().filter(|b| b.lang == "json") {
        if let Err(e) = serde_json::from_str::<serde_json::Value>(&b.body) {
            panic!("{}: not JSON: {e}", b.at());
        }
    }
}

/// The checks themselves: a broken example of each kind is caught (so a green run means
/// the examples hold, not that nothing was looked at).
#[test]
fn a_broken_example_is_caught() {
    let page = "\
```toml
[[grant]]
tool = \"read_file\"
effect = \"allow\"
```

```toml,fragment
[[grant]]
tool = \"run\"
effect = \"sometimes\"
```

```toml
[gate]
no_such_key = 1
```

```toml,foreign
[mcp_servers.boxmaker
```

```sh
boxmaker check --config boxmaker.toml --session s1 --tool run --no-such-flag
$ boxmaker sessions reset-everything
some output that is not a command: boxmaker --bogus
boxmaker mcp --config x.toml --http 127.0.0.1:1 \\
  --allow-remote --nonsense
make no-such-target
cargo run --release -p boxmaker -- demo --fast
claude mcp add boxmaker -- /path/to/boxmaker mpc --config x.toml
```
";
    let blocks = blocks("broken.md", page);
    let configs = config_failures(&blocks, &scratch("broken-toml"));
    let lines: Vec<&str> = configs.iter().map(|f| f.lines().next().unwrap()).collect();
    assert_eq!(configs.len(), 3, "{}", configs.join("\n\n"));
    assert!(
        lines[0].starts_with("broken.md:7: `boxmaker check` refuses it"),
        "{lines:?}"
    );
    assert!(configs[0].contains("sometimes"), "{}", configs[0]);
    assert!(
        lines[1].starts_with("broken.md:13: `boxmaker check` refuses it"),
        "{lines:?}"
    );
    assert!(lines[2].starts_with("broken.md:18: not TOML"), "{lines:?}");
    // A transcript (a `$ ` prompt): the prompted line is its only command.
    let (commands, checked) = command_failures(&blocks, &scratch("broken-sh"));
    let said = commands.join("\n\n");
    assert_eq!(checked, 1, "{said}");
    assert_eq!(commands.len(), 1, "{said}");
    assert!(commands[0].contains("reset-everything"), "{said}");
    // The same lines, not a transcript: every one is a command, and each is caught.
    let plain = page
        .replace("$ boxmaker", "boxmaker")
        .replace("some output that is not a command: boxmaker --bogus\n", "");
    let (commands, checked) = command_failures(&blocks_of(&plain), &scratch("broken-sh-plain"));
    let said = commands.join("\n\n");
    assert_eq!(checked, 6, "{said}");
    assert_eq!(commands.len(), 6, "every line is broken:\n{said}");
    for words in [
        "--no-such-flag",
        "reset-everything",
        "--nonsense",
        "no-such-target",
        "--fast",
        "mpc",
    ] {
        assert!(said.contains(words), "{words} not caught:\n{said}");
    }
}

fn blocks_of(page: &str) -> Vec<Block> {
    blocks("broken.md", page)
}

#[test]
fn shell_words_split_as_sh_would() {
    assert_eq!(
        shell_words(r#"boxmaker check --arguments '{"a": 1}' --explain # a comment"#),
        [
            "boxmaker",
            "check",
            "--arguments",
            r#"{"a": 1}"#,
            "--explain"
        ]
    );
    assert_eq!(
        shell_words(r#"journalctl -t x > cps && boxmaker audit verify --checkpoint "c p""#),
        [
            "journalctl",
            "-t",
            "x",
            "&&",
            "boxmaker",
            "audit",
            "verify",
            "--checkpoint",
            "c p"
        ]
    );
    let (runs, makes) = invocations("make deps gate && FOO=1 /usr/bin/boxmaker doctor | cat");
    assert_eq!(runs, [vec!["doctor".to_owned()]]);
    assert_eq!(makes, ["deps", "gate"]);
}
