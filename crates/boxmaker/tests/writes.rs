//! Issue 29 item 4: no file boxmaker writes for a person is written through a link the
//! repository shipped, and a project's file is never written outside the project
//! (docs/spec.md §6, "How boxmaker writes a file", and §7).
//!
//! The attacker here wrote the repository the person opens: any file or symbolic link in
//! the project directory — `boxmaker.toml.bak`, `boxmaker.toml` itself, `.mcp.json`,
//! `.cursor/`, `.vscode/`, `.codex/`, and `.boxmaker/`, the default state directory, with
//! anything inside it. What each planted link points to is a file or directory of another
//! program's (`outside/`: an `authorized_keys`, a docker `config.json`, a `.bashrc`, a home
//! directory). After every command, `outside/` must be byte for byte as it was, and a
//! command that refuses says why in one sentence. Through the real binary, as root and —
//! for the state directory, where the gate and its files are the user's — as a normal user.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::{As, Run, fresh_dir, open_to_everyone, run_to_end, servers_dir};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");
const DEADLINE: Duration = Duration::from_secs(120);
const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMine person@laptop\n";
const DOCKER: &str = r#"{"auths": {"registry.example.com": {"auth": "cGVyc29uOmh1bnRlcjI="}}}"#;

/// One test's world: `project/` (the repository, with a config), `outside/` (files of
/// other programs), `home/` (the person's HOME), run as `who`.
struct World {
    dir: PathBuf,
    project: PathBuf,
    outside: PathBuf,
    home: PathBuf,
    who: As,
}

impl World {
    fn new(name: &str, who: As) -> World {
        let dir = fresh_dir(
            env!("CARGO_TARGET_TMPDIR"),
            "writes",
            &format!("{name}-{who:?}"),
        );
        let w = World {
            project: dir.join("project"),
            outside: dir.join("outside"),
            home: dir.join("home"),
            dir,
            who,
        };
        for d in [&w.project, &w.outside, &w.home] {
            std::fs::create_dir_all(d).unwrap();
        }
        let o = Command::new(BIN)
            .arg("init")
            .arg(&w.project)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::write(w.outside.join("authorized_keys"), KEY).unwrap();
        std::fs::write(w.outside.join("bashrc"), "export IMPORTANT=1\n").unwrap();
        std::fs::write(w.outside.join("docker.json"), DOCKER).unwrap();
        std::fs::create_dir_all(w.outside.join("dir")).unwrap();
        std::fs::write(w.outside.join("dir/notes.txt"), "mine\n").unwrap();
        // The config `init` wrote is the person's: their word for it, said as them.
        w.hand_over();
        w.trust(&w.config());
        w
    }

    /// The person's word for the config at `path` (`boxmaker trust`, as `who` with this
    /// HOME, where their records are: docs/spec.md §6, "Whose config").
    #[track_caller]
    fn trust(&self, path: &Path) {
        let mut c = self.cmd(&["trust", "--config"]);
        c.arg(path);
        let run = run_to_end(c, &self.dir, "trust", DEADLINE);
        assert!(run.ok(), "{:?}: {}", self.who, run.show());
    }

    fn config(&self) -> PathBuf {
        self.project.join("boxmaker.toml")
    }

    fn state(&self) -> PathBuf {
        self.project.join(".boxmaker")
    }

    /// The person's own state directory, made (and so marked, docs/spec.md §6 "Whose
    /// state") by a command of theirs, then emptied of all but its mark: a link planted
    /// after this is one planted into *their* state (a shipped directory has no mark of
    /// theirs and is refused whole before any link in it matters).
    fn marked_state(&self) {
        self.hand_over();
        let run = self.run(&["tools", "list"], true);
        assert!(self.state().join("mark").exists(), "{}", run.show());
        for e in std::fs::read_dir(self.state()).unwrap() {
            let e = e.unwrap();
            if e.file_name() == "mark" {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                std::fs::remove_dir_all(e.path()).unwrap();
            } else {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
    }

    /// Plants a link at `rel` (in the project) to `to`, making its directory.
    fn plant(&self, rel: &str, to: &Path) {
        let at = self.project.join(rel);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        symlink(to, &at).unwrap();
    }

    /// Before a normal user runs: everything theirs, as a clone of theirs would be.
    fn hand_over(&self) {
        if self.who == As::User {
            open_to_everyone(&self.dir, env!("CARGO_TARGET_TMPDIR"));
            chown_all(&self.dir);
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.who.command(BIN);
        c.args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .stdin(Stdio::null());
        c
    }

    /// `boxmaker ARGS` (with `--config` when `config`), to its end.
    fn run(&self, args: &[&str], config: bool) -> Run {
        // `--config` goes before a `--` (after it, it would be the command's).
        let at = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        let mut c = self.cmd(&args[..at]);
        if config {
            c.arg("--config").arg(self.config());
        }
        c.args(&args[at..]);
        run_to_end(c, &self.dir, &args.join(" "), DEADLINE)
    }

    /// What `outside/` holds: each file's bytes, each link's target, each directory.
    fn outside_now(&self) -> BTreeMap<PathBuf, String> {
        snapshot(&self.outside)
    }
}

fn chown_all(dir: &Path) {
    std::os::unix::fs::lchown(dir, Some(1000), Some(1000)).unwrap();
    if std::fs::symlink_metadata(dir).unwrap().is_dir() {
        for e in std::fs::read_dir(dir).unwrap() {
            chown_all(&e.unwrap().path());
        }
    }
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let what = if m.file_type().is_symlink() {
                format!("link to {}", std::fs::read_link(&p).unwrap().display())
            } else if m.is_dir() {
                todo.push(p.clone());
                format!("directory {:o}", m.mode() & 0o7777)
            } else {
                format!(
                    "file {:o}: {}",
                    m.mode() & 0o7777,
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap())
                )
            };
            out.insert(p, what);
        }
    }
    out
}

/// Files whose name starts with `prefix`, anywhere below `dir` (backups, temporary files).
fn named_like(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    snapshot(dir)
        .into_keys()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect()
}

/// A refusal: a non-zero exit and one sentence that says `why` (a command's error, or a
/// call's `failed`).
fn refused(run: &Run, why: &str) {
    assert!(!run.ok(), "it did not refuse:\n{}", run.show());
    let err = run.stderr.trim_end();
    assert_eq!(err.lines().count(), 1, "not one sentence:\n{}", run.show());
    assert!(
        err.starts_with("boxmaker: ") || err.starts_with("failed: "),
        "{}",
        run.show()
    );
    assert!(err.contains(why), "does not say {why:?}:\n{}", run.show());
}

// ---------------------------------------------------------------------------------------
// `boxmaker add`: the config and its backup.

#[test]
fn add_never_writes_its_backup_through_a_link_the_repository_ships() {
    let w = World::new("add-bak", As::Me);
    w.plant("boxmaker.toml.bak", &w.outside.join("authorized_keys"));
    let config = std::fs::read_to_string(w.config()).unwrap();
    let before = w.outside_now();
    let run = w.run(
        &["add", "--no-probe", "--name", "x", "--", "echo", "hi"],
        true,
    );
    refused(&run, "symbolic link");
    assert_eq!(w.outside_now(), before, "{}", run.show());
    assert_eq!(std::fs::read_to_string(w.config()).unwrap(), config);
    // Without the link, the backup is a file of its own beside the config.
    std::fs::remove_file(w.project.join("boxmaker.toml.bak")).unwrap();
    let run = w.run(
        &["add", "--no-probe", "--name", "x", "--", "echo", "hi"],
        true,
    );
    assert!(run.ok(), "{}", run.show());
    assert_eq!(
        std::fs::read_to_string(w.project.join("boxmaker.toml.bak")).unwrap(),
        config
    );
    assert_eq!(w.outside_now(), before);
}

#[test]
fn add_never_rewrites_the_file_a_config_link_names() {
    let w = World::new("add-config-link", As::Me);
    // An empty file loads as a config: a fresh machine's `authorized_keys` is one.
    std::fs::write(w.outside.join("authorized_keys"), "").unwrap();
    std::fs::remove_file(w.config()).unwrap();
    w.plant("boxmaker.toml", &w.outside.join("authorized_keys"));
    let before = w.outside_now();
    let run = w.run(
        &["add", "--no-probe", "--name", "x", "--", "echo", "hi"],
        true,
    );
    refused(&run, "symbolic link");
    // The sentence names the file the link leads to, for the person to name it themself.
    assert!(
        run.stderr.contains(&format!(
            "--config {}",
            w.outside.join("authorized_keys").display()
        )),
        "{}",
        run.show()
    );
    assert_eq!(w.outside_now(), before, "{}", run.show());
    assert!(named_like(&w.project, "boxmaker.toml.").is_empty());
    // A config the person names where it is (a dotfile of theirs, say) is edited there.
    let real = w.home.join("boxmaker.toml");
    std::fs::write(&real, "").unwrap();
    w.trust(&real);
    let mut c = w.cmd(&["add", "--no-probe", "--name", "x", "--config"]);
    c.arg(&real).args(["--", "echo", "hi"]);
    let run = run_to_end(c, &w.dir, "add --config real", DEADLINE);
    assert!(run.ok(), "{}", run.show());
    assert!(
        std::fs::read_to_string(&real)
            .unwrap()
            .contains("name = \"x\"")
    );
    assert_eq!(
        std::fs::read_to_string(w.home.join("boxmaker.toml.bak")).unwrap(),
        ""
    );
    assert_eq!(w.outside_now(), before);
}

#[test]
fn init_never_writes_through_a_link() {
    let w = World::new("init-link", As::Me);
    std::fs::remove_file(w.config()).unwrap();
    w.plant("boxmaker.toml", &w.outside.join("new-file"));
    let before = w.outside_now();
    let mut c = w.cmd(&["init"]);
    c.arg(&w.project);
    let run = run_to_end(c, &w.dir, "init", DEADLINE);
    refused(&run, "exists");
    assert_eq!(w.outside_now(), before);
}

// ---------------------------------------------------------------------------------------
// `boxmaker client add|remove`.

/// The project file of each client that has one, and a victim's text for it: a file of
/// another program that parses as the client's format, with a boxmaker entry already in it
/// (so that `remove` would rewrite it too).
fn project_files() -> Vec<(&'static str, &'static str, String)> {
    let json = |key: &str| {
        format!(
            r#"{{"auths": {{"registry.example.com": {{"auth": "cGVyc29uOmh1bnRlcjI="}}}}, "{key}": {{"old": {{"command": "/opt/boxmaker", "args": ["mcp"]}}}}}}"#
        )
    };
    vec![
        ("claude-code", ".mcp.json", json("mcpServers")),
        ("cursor", ".cursor/mcp.json", json("mcpServers")),
        ("vscode", ".vscode/mcp.json", json("servers")),
        (
            "codex",
            ".codex/config.toml",
            "token = \"hunter2\"\n\n[mcp_servers.old]\ncommand = \"/opt/boxmaker\"\nargs = [\"mcp\"]\n"
                .to_string(),
        ),
    ]
}

#[test]
fn a_project_file_linked_out_of_the_project_is_never_written() {
    let w = World::new("project-out", As::Me);
    for (client, rel, victim) in project_files() {
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        let target = w.outside.join(format!("{client}-{name}"));
        std::fs::write(&target, &victim).unwrap();
        // The file a link (`.mcp.json -> ~/.docker/config.json`), then its directory a link
        // (`.vscode -> ~/.config/Code/User`).
        let top = Path::new(rel).components().next().unwrap();
        let top = top.as_os_str().to_str().unwrap();
        let dir_of = w.outside.join(format!("{client}-home"));
        std::fs::create_dir_all(&dir_of).unwrap();
        std::fs::write(dir_of.join(name), &victim).unwrap();
        let plants: Vec<(String, PathBuf)> = if top == rel {
            vec![(rel.to_string(), target.clone())]
        } else {
            vec![
                (rel.to_string(), target.clone()),
                (top.to_string(), dir_of.clone()),
            ]
        };
        for (at, to) in plants {
            let _ = std::fs::remove_dir_all(w.project.join(top));
            let _ = std::fs::remove_file(w.project.join(top));
            w.plant(&at, &to);
            let before = w.outside_now();
            let project_before = snapshot(&w.project);
            for verb in ["add", "remove"] {
                let mut args = vec!["client", verb, client, "--scope", "project"];
                if verb == "remove" {
                    args.extend(["--name", "old"]);
                }
                let run = w.run(&args, true);
                refused(&run, "out of the project");
                assert_eq!(
                    w.outside_now(),
                    before,
                    "{client} {verb} via {at}: {}",
                    run.show()
                );
                // No copy of the other program's file is left in the repository either.
                assert_eq!(
                    snapshot(&w.project),
                    project_before,
                    "{client} {verb} via {at}"
                );
            }
        }
        let _ = std::fs::remove_dir_all(w.project.join(top));
        let _ = std::fs::remove_file(w.project.join(top));
    }
}

#[test]
fn a_project_file_linked_within_the_project_is_written_where_it_is() {
    let w = World::new("project-within", As::Me);
    // One file for Cursor and Claude Code, as some projects keep it.
    std::fs::write(w.project.join(".mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
    w.plant(".cursor/mcp.json", Path::new("../.mcp.json"));
    let run = w.run(&["client", "add", "cursor", "--scope", "project"], true);
    assert!(run.ok(), "{}", run.show());
    let link = w.project.join(".cursor/mcp.json");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    let text = std::fs::read_to_string(w.project.join(".mcp.json")).unwrap();
    assert!(text.contains("\"boxmaker\""), "{text}");
    // The backup sits beside the file it copies, not beside the link.
    assert_eq!(
        named_like(&w.project.join(".cursor"), "mcp.json.bak-").len(),
        0
    );
    let b = named_like(&w.project, ".mcp.json.bak-");
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(b[0].parent().unwrap(), w.project);
    assert_eq!(
        std::fs::read_to_string(&b[0]).unwrap(),
        r#"{"mcpServers": {}}"#
    );
}

#[test]
fn a_dotfile_link_in_home_is_followed_and_its_backup_sits_beside_the_file() {
    let w = World::new("home-dotfile", As::Me);
    let dotfiles = w.home.join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::write(dotfiles.join("claude.json"), r#"{"theme": "dark"}"#).unwrap();
    std::fs::set_permissions(
        dotfiles.join("claude.json"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    symlink("dotfiles/claude.json", w.home.join(".claude.json")).unwrap();
    let run = w.run(&["client", "add", "claude-code"], true);
    assert!(run.ok(), "{}", run.show());
    assert!(
        w.home
            .join(".claude.json")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let real = dotfiles.join("claude.json");
    assert!(
        std::fs::read_to_string(&real)
            .unwrap()
            .contains("\"boxmaker\"")
    );
    assert_eq!(std::fs::metadata(&real).unwrap().mode() & 0o7777, 0o640);
    assert!(named_like(&w.home, ".claude.json.bak-").is_empty());
    let b = named_like(&dotfiles, "claude.json.bak-");
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(
        std::fs::read_to_string(&b[0]).unwrap(),
        r#"{"theme": "dark"}"#
    );
    assert_eq!(std::fs::metadata(&b[0]).unwrap().mode() & 0o7777, 0o640);
    // A link to a file that is not there is never a reason to make one.
    std::fs::create_dir_all(w.home.join(".cursor")).unwrap();
    symlink(w.outside.join("made.json"), w.home.join(".cursor/mcp.json")).unwrap();
    let before = w.outside_now();
    let run = w.run(&["client", "add", "cursor"], true);
    refused(&run, "does not exist");
    assert_eq!(w.outside_now(), before);
}

// ---------------------------------------------------------------------------------------
// The state directory (`.boxmaker/`, beside the config: the repository can ship it).

#[test]
fn a_state_directory_that_is_a_link_is_refused() {
    for who in As::all() {
        let w = World::new("state-link", who);
        w.plant(".boxmaker", &w.outside.join("dir"));
        w.hand_over();
        let before = w.outside_now();
        for args in [
            &["call", "--session", "dev", "list_dir", r#"{"path":"."}"#][..],
            &["tools", "refresh"],
        ] {
            let run = w.run(args, true);
            refused(&run, "symbolic link");
            assert_eq!(w.outside_now(), before, "{who:?} {args:?}: {}", run.show());
        }
        let run = w.run(&["mcp", "--http", "127.0.0.1:0"], true);
        refused(&run, "symbolic link");
        assert_eq!(w.outside_now(), before, "{who:?} mcp --http");
    }
}

/// Each name boxmaker keeps in its state directory, planted as a link to a file of
/// another program (or to one that is not there yet), and the command that writes it.
fn state_plants() -> Vec<(&'static str, &'static [&'static str])> {
    const CALL: &[&str] = &[
        "call",
        "--session",
        "dev",
        "write_file",
        r#"{"path":"a.txt","content":"x"}"#,
    ];
    vec![
        ("gate.lock", CALL),
        ("clients.lock", CALL),
        ("gate.log", CALL),
        ("boxmaker.db", CALL),
        ("boxmaker.db-wal", CALL),
        ("audit.log", CALL),
        ("work", CALL),
        ("work/dev", CALL),
        ("http.token", &["mcp", "--http", "127.0.0.1:0"]),
    ]
}

#[test]
fn a_link_planted_in_the_state_directory_is_never_followed() {
    for who in As::all() {
        for (rel, args) in state_plants() {
            let w = World::new(&format!("plant-{}", rel.replace('/', "-")), who);
            // A file of another program where the link leads, and a link to a file that
            // is not there yet.
            // A directory of the person's for a workspace; their `.bashrc` for the token
            // (written whole: it would be emptied); for the rest a file not there yet (made
            // through the link, it would show).
            let to = if rel.starts_with("work") {
                w.outside.join("dir")
            } else if rel == "http.token" {
                w.outside.join("bashrc")
            } else {
                w.outside.join(format!("{rel}-made"))
            };
            w.marked_state();
            w.plant(&format!(".boxmaker/{rel}"), &to);
            w.hand_over();
            let before = w.outside_now();
            let run = if args[0] == "mcp" {
                // The HTTP front serves until stopped: it must refuse before it does.
                let mut c = w.cmd(args);
                c.arg("--config").arg(w.config());
                run_to_end(c, &w.dir, "mcp --http", Duration::from_secs(20))
            } else {
                w.run(args, true)
            };
            assert_eq!(w.outside_now(), before, "{who:?} {rel}: {}", run.show());
            refused(&run, "symbolic link");
        }
    }
}

#[test]
fn a_link_at_the_audit_key_is_never_read_or_written() {
    let w = World::new("audit-key", As::Me);
    std::fs::write(
        w.outside.join("id_ed25519"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    std::fs::set_permissions(
        w.outside.join("id_ed25519"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    w.plant(".boxmaker.audit-key", &w.outside.join("id_ed25519"));
    let before = w.outside_now();
    let run = w.run(
        &["call", "--session", "dev", "list_dir", r#"{"path":"."}"#],
        true,
    );
    refused(&run, "symbolic link");
    assert_eq!(w.outside_now(), before);
    // A link to no file is not made into a key either.
    std::fs::remove_file(w.project.join(".boxmaker.audit-key")).unwrap();
    w.plant(".boxmaker.audit-key", &w.outside.join("new-key"));
    let run = w.run(
        &["call", "--session", "dev", "list_dir", r#"{"path":"."}"#],
        true,
    );
    refused(&run, "symbolic link");
    assert_eq!(w.outside_now(), before);
}

#[test]
fn discovery_never_writes_the_tools_file_or_its_logs_through_a_link() {
    let w = World::new("discovery", As::Me);
    let mut text = std::fs::read_to_string(w.config()).unwrap();
    text.push_str(&format!(
        "\n[[mount]]\nname = \"servers\"\nhost = {:?}\nat = \"/opt/servers\"\nclass = \"public\"\n\n\
         [[tool]]\nname = \"h\"\nmcp = [\"/usr/bin/python3\", \"/opt/servers/hostile_server.py\", \"well\"]\n",
        servers_dir().display().to_string()
    ));
    std::fs::write(w.config(), text).unwrap();
    w.trust(&w.config());
    for (rel, to) in [
        ("tools.json", w.outside.join("bashrc")),
        ("tools.json.tmp", w.outside.join("bashrc")),
        ("tools.lock", w.outside.join("new")),
        ("logs", w.outside.join("dir")),
        ("logs/.discovery", w.outside.join("dir")),
    ] {
        let _ = std::fs::remove_dir_all(w.state());
        w.marked_state();
        w.plant(&format!(".boxmaker/{rel}"), &to);
        let before = w.outside_now();
        let run = w.run(&["tools", "refresh"], true);
        assert_eq!(w.outside_now(), before, "{rel}: {}", run.show());
        if rel == "tools.json.tmp" {
            // Its temporary file has a name of its own, made with O_EXCL: the planted one is
            // just a name nobody uses.
            assert!(run.ok(), "{rel}: {}", run.show());
        } else if rel.starts_with("tools") || rel == "logs" {
            // The tools file is the command's work, and `logs` a name of the state directory:
            // it says why it could not go on.
            assert!(
                run.show().contains("symbolic link"),
                "{rel}: {}",
                run.show()
            );
        } else {
            // A server's log is kept on a best-effort basis: the refresh goes on without it.
            assert!(run.ok(), "{rel}: {}", run.show());
        }
    }
}

/// The runner sweeps, when it starts, what a dead runner left in `STATE/pins/` (every
/// directory there not changed for a day) and ended sessions' workspaces and logs. Through
/// `.boxmaker/pins -> ~` that sweep would remove each directory of the home directory not
/// changed for a day; through `work` or `logs`, the `mcp-…` ones.
#[test]
fn a_sweep_never_removes_what_a_planted_link_leads_to() {
    for who in As::all() {
        for rel in ["pins", "work", "logs"] {
            let w = World::new(&format!("sweep-{rel}"), who);
            let victim = w.outside.join("dir");
            for d in ["old-project/src", "mcp-0123456789abcdef"] {
                std::fs::create_dir_all(victim.join(d)).unwrap();
                std::fs::write(victim.join(d).join("kept.txt"), "mine\n").unwrap();
            }
            let day_ago = std::time::SystemTime::now() - Duration::from_secs(3 * 86_400);
            for d in ["old-project", "old-project/src", "mcp-0123456789abcdef"] {
                std::fs::File::open(victim.join(d))
                    .unwrap()
                    .set_modified(day_ago)
                    .unwrap();
            }
            w.plant(&format!(".boxmaker/{rel}"), &victim);
            w.hand_over();
            let before = w.outside_now();
            let run = w.run(
                &["call", "--session", "dev", "list_dir", r#"{"path":"."}"#],
                true,
            );
            assert_eq!(w.outside_now(), before, "{who:?} {rel}: {}", run.show());
            refused(&run, "symbolic link");
        }
    }
}
