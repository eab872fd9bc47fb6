//! A repository a person clones can ship boxmaker's own files: a `.boxmaker/` state
//! directory (a `boxmaker.db` holding a run-time grant that allows `run`), an audit key, an
//! OAuth key. boxmaker uses a state directory or a key file only when it bears the person's
//! mark: an HMAC under the person's mark key, which lives outside every project
//! (`$XDG_STATE_HOME/boxmaker/mark.key`, else `$HOME/.local/state/boxmaker/mark.key`).
//!
//! Each attack is run as reported, through the real binary: the attacker makes the files
//! with boxmaker under the attacker's own HOME, the files are copied into the victim's
//! project, and the victim runs boxmaker under the victim's HOME. Nothing the attacker
//! planted may run, sign or seal: every command refuses, naming the directory or file, in a
//! sentence saying it `was not made by boxmaker for you`. And the person's own flow keeps
//! working, also after the project is moved.
//!
//! Every boxmaker command runs with HOME set explicitly (or removed) and XDG_STATE_HOME
//! removed (or set explicitly), as root and, where this process can become one, as a normal
//! user (`setpriv --reuid=1000`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::OsString;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testkit::{
    As, Killed, Run, client_python, free_port, python_dir, repo_root, run_to_end, servers_dir,
    wait_listening,
};

mod people;

use people::{Person, World};

/// A boxmaker command that has not finished by then has hung: the test fails.
const LIMIT: Duration = Duration::from_secs(60);
/// What every refusal of a state directory or key that is not the person's says.
const NOT_YOURS: &str = "was not made by boxmaker for you";
/// The planted call: `/bin/echo planted grant-ran-me`. What it would print is in no
/// argument, so it shows only if the call ran.
const PLANTED_CALL: &str = r#"{"argv":["/bin/echo","planted","grant-ran-me"]}"#;
const PLANTED_OUTPUT: &str = "planted grant-ran-me";

// ---------------------------------------------------------------------------------------
// The lab.

impl World {
    fn new(name: &str, who: As) -> World {
        World::fresh("shipped_state", name, who)
    }

    /// A project `DIR/NAME` with `boxmaker init`'s config, as `person` made it (and so
    /// trusted); then `config` instead when given, which `person` trusts in turn (docs/spec.md
    /// §6, "Whose config"): the config is the person's own, what is shipped is the state.
    fn project(&self, name: &str, person: &Person, config: Option<&str>) -> PathBuf {
        let p = self.dir.join(name);
        std::fs::create_dir_all(&p).unwrap();
        self.give(&p);
        let r = self.bm(person, &p, &["init", p.to_str().unwrap()]);
        assert!(r.ok(), "boxmaker init: {}", r.show());
        if let Some(text) = config {
            std::fs::write(p.join("boxmaker.toml"), text).unwrap();
            self.give(&p.join("boxmaker.toml"));
            self.trust(person, &p);
        }
        p
    }

    /// `person`'s word for the config of `project` as it is now (`boxmaker trust`, as `who`
    /// in `person`'s environment).
    #[track_caller]
    fn trust(&self, person: &Person, project: &Path) {
        let r = self.bm(person, project, &["trust"]);
        assert!(r.ok(), "boxmaker trust: {}", r.show());
    }

    /// `boxmaker ARGS --config PROJECT/boxmaker.toml` (`init` takes no `--config`) in the
    /// project's directory, as `who`, in `person`'s environment.
    fn command(&self, person: &Person, project: &Path, args: &[&str]) -> Command {
        let mut c = self.as_person(person, project);
        c.args(args);
        if args.first() != Some(&"init") {
            c.arg("--config").arg(project.join("boxmaker.toml"));
        }
        c
    }

    /// [`World::command`] to its end (a hung one fails the test).
    fn bm(&self, person: &Person, project: &Path, args: &[&str]) -> Run {
        run_to_end(
            self.command(person, project, args),
            &self.dir,
            &args.join(" "),
            LIMIT,
        )
    }
}

/// Copies `from` (a file, or a directory and all below it: regular files only, as a
/// repository carries them, modes kept) to `to`.
fn ship(from: &Path, to: &Path) {
    let meta = std::fs::symlink_metadata(from).unwrap();
    if meta.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        std::fs::set_permissions(to, meta.permissions()).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            ship(&e.path(), &to.join(e.file_name()));
        }
    } else if meta.is_file() {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::copy(from, to).unwrap();
    }
}

/// Adds the run-time grant `allow run` to a stopped gate's database, as an attacker does
/// with any SQLite client.
fn plant_grant(db: &Path) {
    let script = format!(
        "import sqlite3\n\
         c = sqlite3.connect({db:?})\n\
         c.execute(\"INSERT INTO grants(tool,sessions,effect,max_class,if_untrusted,expires,added) \
         VALUES('run','*','allow','secret','allow',NULL,1)\")\n\
         c.commit()\n\
         c.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchall()\n\
         n = c.execute(\"SELECT count(*) FROM grants WHERE tool='run' AND effect='allow'\").fetchone()[0]\n\
         assert n == 1, n\n\
         c.close()\n",
        db = db.display().to_string()
    );
    let o = Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "planting the grant: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The person's mark key.
fn mark_key(person: &Person) -> PathBuf {
    person
        .home
        .as_ref()
        .unwrap()
        .join(".local/state/boxmaker/mark.key")
}

/// The names in a directory, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// `r` was refused: non-zero, its stderr holds every one of `words` and `naming` (a path),
/// and `never` is in neither stdout nor stderr.
fn refused(what: &str, r: &Run, words: &[&str], naming: &Path, never: &str) {
    assert!(!r.ok(), "{what}: it was not refused\n{}", r.show());
    for w in words {
        assert!(r.stderr.contains(w), "{what}: {w:?} not said\n{}", r.show());
    }
    let shown = naming.display().to_string();
    assert!(
        r.stderr.contains(&shown),
        "{what}: {shown} not named\n{}",
        r.show()
    );
    assert!(
        !r.stdout.contains(never) && !r.stderr.contains(never),
        "{what}: {never:?} came out\n{}",
        r.show()
    );
}

/// The attacker's project: `init`, then `grants` (which makes `.boxmaker/` and the audit
/// key beside it), the gate stopped; then the planted grant.
fn attacker_project(w: &World, attacker: &Person) -> PathBuf {
    let atk = w.project("attacker", attacker, None);
    let r = w.bm(attacker, &atk, &["grants"]);
    assert!(r.ok(), "the attacker's grants: {}", r.show());
    w.stop_gates();
    plant_grant(&atk.join(".boxmaker/boxmaker.db"));
    w.give(&atk);
    atk
}

// ---------------------------------------------------------------------------------------
// 1, 2. A shipped state directory.

#[test]
fn a_shipped_database_with_a_planted_grant_is_refused_by_every_command() {
    for who in As::all() {
        let w = World::new("planted-db", who);
        let (attacker, victim) = (w.person("attacker"), w.person("victim"));
        let atk = attacker_project(&w, &attacker);
        // The repository carries `.boxmaker/boxmaker.db`, nothing else of boxmaker's.
        let vic = w.project("victim", &victim, None);
        let state = vic.join(".boxmaker");
        ship(
            &atk.join(".boxmaker/boxmaker.db"),
            &state.join("boxmaker.db"),
        );
        w.give(&vic);
        let shipped = std::fs::read(state.join("boxmaker.db")).unwrap();

        let r = w.bm(
            &victim,
            &vic,
            &["call", "--session", "s1", "run", PLANTED_CALL],
        );
        refused(
            &format!("{who:?} call run"),
            &r,
            &[NOT_YOURS, "mv "],
            &state,
            PLANTED_OUTPUT,
        );
        let r = w.bm(&victim, &vic, &["grants"]);
        refused(
            &format!("{who:?} grants"),
            &r,
            &[NOT_YOURS],
            &state,
            "allow run",
        );
        // `check` promises one line and exit 0 whatever it decides: it may decide from the
        // config alone, saying why, but never from what the shipped directory holds.
        let r = w.bm(
            &victim,
            &vic,
            &["check", "--session", "s1", "--tool", "run"],
        );
        assert!(
            r.stderr.contains(NOT_YOURS)
                && r.stderr.contains(&state.display().to_string())
                && !r.stdout.contains("allow"),
            "{who:?} check:\n{}",
            r.show()
        );
        assert_eq!(
            names(&state),
            ["boxmaker.db"],
            "{who:?}: check opened the shipped database (its provenance index)"
        );
        // Every other command that uses the state directory: refused.
        for args in [
            &["sessions"][..],
            &["approvals"],
            &["audit", "tail"],
            &["audit", "verify"],
            &["mcp", "--session", "s1"],
            &["serve"],
        ] {
            let r = w.bm(&victim, &vic, args);
            refused(
                &format!("{who:?} {}", args.join(" ")),
                &r,
                &[NOT_YOURS],
                &state,
                PLANTED_OUTPUT,
            );
        }
        // Refused before anything was opened: the database as shipped, and nothing made
        // beside it (no `-wal` or `-shm` of an open database, no socket, no mark).
        assert_eq!(
            std::fs::read(state.join("boxmaker.db")).unwrap(),
            shipped,
            "{who:?}: the shipped database was changed"
        );
        assert_eq!(
            names(&state),
            ["boxmaker.db"],
            "{who:?}: something was made in the shipped directory"
        );
    }
}

#[test]
fn a_shipped_state_directory_with_the_attackers_own_mark_is_refused() {
    let w = World::new("foreign-mark", As::Me);
    let (attacker, victim) = (w.person("attacker"), w.person("victim"));
    let atk = attacker_project(&w, &attacker);
    // The whole directory, with the mark the attacker's boxmaker made under their key.
    let vic = w.project("victim", &victim, None);
    let state = vic.join(".boxmaker");
    ship(&atk.join(".boxmaker"), &state);
    let r = w.bm(
        &victim,
        &vic,
        &["call", "--session", "s1", "run", PLANTED_CALL],
    );
    refused("call run", &r, &[NOT_YOURS, "mv "], &state, PLANTED_OUTPUT);
    let r = w.bm(&victim, &vic, &["grants"]);
    refused("grants", &r, &[NOT_YOURS], &state, "allow run");
    // What was shipped was a valid mark, of another key: the attacker's own boxmaker takes
    // the very same directory (a mark does not bind the path), once the attacker has said
    // the config there is theirs too.
    assert!(
        atk.join(".boxmaker/mark").is_file(),
        "the attacker's state directory bears no mark: this tested a missing mark"
    );
    w.trust(&attacker, &vic);
    let r = w.bm(&attacker, &vic, &["grants"]);
    assert!(
        r.ok() && r.stdout.contains("allow run"),
        "the attacker's own boxmaker refused its directory:\n{}",
        r.show()
    );
}

/// A shipped `.boxmaker/` holding only `http.key` — a file of boxmaker's that no list of
/// its names had — was taken as empty, marked, and its key signed the victim's HTTP
/// credentials: the attacker, who holds the key, could mint one (found reading the change
/// again). An unmarked directory is now taken only when it holds nothing at all.
#[test]
fn a_shipped_http_key_alone_is_never_used_to_sign_credentials() {
    let w = World::new("http-key", As::Me);
    let (attacker, victim) = (w.person("attacker"), w.person("victim"));
    let atk = w.project("attacker", &attacker, None);
    let r = w.bm(&attacker, &atk, &["token"]);
    assert!(r.ok(), "the attacker's token: {}", r.show());
    let vic = w.project("victim", &victim, None);
    let state = vic.join(".boxmaker");
    ship(&atk.join(".boxmaker/http.key"), &state.join("http.key"));
    let shipped = std::fs::read(state.join("http.key")).unwrap();
    let r = w.bm(&victim, &vic, &["token"]);
    refused("token", &r, &[NOT_YOURS, "http.key"], &state, "Bearer");
    assert_eq!(std::fs::read(state.join("http.key")).unwrap(), shipped);
    assert!(
        !state.join("mark").exists(),
        "the shipped directory was marked"
    );
}

// ---------------------------------------------------------------------------------------
// 3, 4. Shipped keys.

#[test]
fn a_shipped_audit_key_is_never_used_to_sign() {
    let w = World::new("audit-key", As::Me);
    let (attacker, victim) = (w.person("attacker"), w.person("victim"));
    let atk = attacker_project(&w, &attacker);
    let theirs = std::fs::read_to_string(atk.join(".boxmaker.audit-key")).unwrap();
    let public = theirs
        .lines()
        .find_map(|l| l.strip_prefix("public "))
        .unwrap_or_else(|| panic!("no public line in the attacker's key: {theirs}"))
        .trim()
        .to_string();
    // Only the key is shipped: the victim's boxmaker makes the state directory itself.
    let vic = w.project("victim", &victim, None);
    let key = vic.join(".boxmaker.audit-key");
    ship(&atk.join(".boxmaker.audit-key"), &key);
    assert!(!vic.join(".boxmaker").exists());

    // The gate signs with the key from its start (and on stop): it never starts with it.
    let r = w.bm(&victim, &vic, &["grants"]);
    refused("grants", &r, &[NOT_YOURS], &key, &public);
    w.stop_gates();
    // `audit checkpoint` prints the latest signed checkpoint and the key's public half (no
    // command signs one on demand): none signed by the attacker's key, and their public
    // half is never offered as the one that checks the log.
    let r = w.bm(&victim, &vic, &["audit", "checkpoint"]);
    assert!(
        !r.ok() && !r.stdout.contains(&public) && !r.stderr.contains(&public),
        "audit checkpoint used the shipped key:\n{}",
        r.show()
    );
    assert!(
        r.stderr.contains(NOT_YOURS) || r.stderr.contains("no checkpoint yet"),
        "{}",
        r.show()
    );
    assert_eq!(
        std::fs::read_to_string(&key).unwrap(),
        theirs,
        "the shipped key was changed"
    );
}

fn oauth_node_modules() -> PathBuf {
    repo_root().join("tests/node-conformance/node_modules")
}

/// The config of a project whose `remote` tool signs in at the test's authorization server.
fn oauth_config(rs_port: u16, as_port: u16) -> String {
    format!(
        "[[egress]]\nhost = \"127.0.0.1\"\nports = [{rs_port}, {as_port}]\n\n\
         [[egress]]\nhost = \"localhost\"\nports = [{as_port}]\n\n\
         [[tool]]\nname = \"remote\"\nurl = \"http://127.0.0.1:{rs_port}/mcp\"\n\
         oauth = {{ scopes = [\"mcp\", \"offline_access\"] }}\nuntrusted = true\n\n\
         [[grant]]\ntool = \"*\"\neffect = \"allow\"\n"
    )
}

/// `boxmaker auth login remote`, the browser played by a script: whether it succeeded, and
/// everything it (and the browser) printed.
fn login(w: &World, person: &Person, project: &Path) -> (bool, String) {
    let mut child = w
        .command(
            person,
            project,
            &["auth", "login", "remote", "--no-browser", "--wait", "40"],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).unwrap();
        s
    });
    let mut text = String::new();
    for line in std::io::BufRead::lines(std::io::BufReader::new(out)) {
        let line = line.unwrap();
        if line.starts_with("http") {
            let b = Command::new("python3")
                .arg(python_dir().join("oauth_browser.py"))
                .arg(&line)
                .output()
                .unwrap();
            text.push_str(&format!(
                "[browser] {}\n",
                String::from_utf8_lossy(&b.stdout)
            ));
        }
        text.push_str(&line);
        text.push('\n');
    }
    let status = testkit::wait_or_kill(&mut child, Instant::now() + LIMIT);
    text.push_str(&err.join().unwrap());
    (status.success(), text)
}

#[test]
fn a_shipped_oauth_key_never_seals_the_victims_sign_in() {
    // The key is read only when a sign-in is sealed or opened: a real sign-in it is, at the
    // authorization server of tests/oauth.rs (`oidc-provider`) for its MCP server.
    if !oauth_node_modules().join("oidc-provider").exists() {
        eprintln!(
            "SKIPPED: oidc-provider is not installed (tests/node-conformance): run `make deps`"
        );
        return;
    }
    testkit::require_python_sdk();
    let w = World::new("oauth-key", As::Me);
    let (asp, rsp) = (free_port(), free_port());
    let (as_state, rs_state) = (w.dir.join("as-state"), w.dir.join("rs-state"));
    std::fs::create_dir_all(&as_state).unwrap();
    std::fs::create_dir_all(&rs_state).unwrap();
    let secret = "resource-server-secret-0123456789";
    let _as = Killed(
        Command::new(oauth_node_modules().join(".bin/node"))
            .arg(servers_dir().join("oidc_as.mjs"))
            .arg(oauth_node_modules())
            .arg(asp.to_string())
            .arg(format!("http://127.0.0.1:{rsp}/mcp"))
            .args(["600", secret])
            .arg(&as_state)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(w.dir.join("as.err")).unwrap())
            .spawn()
            .unwrap(),
    );
    let _rs = Killed(
        Command::new(client_python())
            .arg(servers_dir().join("oauth_rs.py"))
            .arg(rsp.to_string())
            .arg(format!("http://localhost:{asp}"))
            .arg(secret)
            .arg(&rs_state)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(w.dir.join("rs.err")).unwrap())
            .spawn()
            .unwrap(),
    );
    wait_listening(asp, "the authorization server listens");
    wait_listening(rsp, "the MCP server listens");
    let config = oauth_config(rsp, asp);
    let (attacker, victim) = (w.person("attacker"), w.person("victim"));

    // The attacker signs in: their boxmaker makes `.boxmaker.oauth-key`, which they ship.
    let atk = w.project("attacker", &attacker, Some(&config));
    let (ok, text) = login(&w, &attacker, &atk);
    assert!(ok, "the attacker's sign-in failed:\n{text}");
    w.stop_gates();
    let vic = w.project("victim", &victim, Some(&config));
    let key = vic.join(".boxmaker.oauth-key");
    let token = vic.join(".boxmaker/oauth/remote.token");
    ship(&atk.join(".boxmaker.oauth-key"), &key);
    let theirs = std::fs::read(&key).unwrap();
    let (ok, text) = login(&w, &victim, &vic);
    assert!(
        !ok,
        "the victim's sign-in was sealed with the shipped key:\n{text}"
    );
    assert!(text.contains(NOT_YOURS), "{text}");
    assert!(text.contains(&key.display().to_string()), "{text}");
    assert_eq!(std::fs::read(&key).unwrap(), theirs, "the key was changed");
    assert!(!token.exists(), "a token was sealed with the shipped key");
    w.stop_gates();

    // A key written by hand in the form it had before marks (32 bytes the attacker knows).
    std::fs::write(&key, [7u8; 32]).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (ok, text) = login(&w, &victim, &vic);
    assert!(
        !ok,
        "the victim's sign-in was sealed with a known key:\n{text}"
    );
    assert!(text.contains(NOT_YOURS), "{text}");
    assert_eq!(
        std::fs::read(&key).unwrap(),
        [7u8; 32],
        "the key was changed"
    );
    assert!(!token.exists(), "a token was sealed with the known key");
}

// ---------------------------------------------------------------------------------------
// 5, 6. The person's own flow.

#[test]
fn the_persons_own_project_keeps_working_also_when_moved() {
    for who in As::all() {
        let w = World::new("own-flow", who);
        let me = w.person("me");
        let proj = w.project("proj", &me, None);
        let r = w.bm(
            &me,
            &proj,
            &[
                "call",
                "--session",
                "s1",
                "write_file",
                r#"{"path":"/work/a.txt","content":"hello mine"}"#,
            ],
        );
        assert!(r.ok(), "{who:?} write_file: {}", r.show());
        let read = |proj: &Path| {
            let r = w.bm(
                &me,
                proj,
                &[
                    "call",
                    "--session",
                    "s1",
                    "--json",
                    "read_file",
                    r#"{"path":"/work/a.txt"}"#,
                ],
            );
            assert!(r.ok(), "{who:?} read_file: {}", r.show());
            assert_eq!(r.json()["content"], "hello mine", "{who:?}: {}", r.show());
        };
        read(&proj);
        let r = w.bm(&me, &proj, &["grants"]);
        assert!(
            r.ok() && r.stdout.contains("ask run"),
            "{who:?}: {}",
            r.show()
        );
        // The state directory bears the mark; the key is the person's, private, outside.
        assert!(proj.join(".boxmaker/mark").is_file(), "{who:?}: no mark");
        let key = mark_key(&me);
        assert!(key.is_file(), "{who:?}: no mark key at {}", key.display());
        assert_eq!(mode(&key), 0o600, "{who:?}: {}", key.display());
        assert_eq!(mode(key.parent().unwrap()), 0o700, "{who:?}");
        if who == As::User {
            use std::os::unix::fs::MetadataExt;
            assert_eq!(std::fs::metadata(&key).unwrap().uid(), 1000);
        }
        let made = std::fs::read(&key).unwrap();

        // Moved: the mark does not bind the path. (The config's trust does: the person says
        // the moved config is theirs again, docs/spec.md §6 "Whose config".)
        w.stop_gates();
        let moved = w.dir.join("proj2");
        std::fs::rename(&proj, &moved).unwrap();
        w.trust(&me, &moved);
        read(&moved);
        let r = w.bm(&me, &moved, &["grants"]);
        assert!(
            r.ok() && r.stdout.contains("ask run"),
            "{who:?}: {}",
            r.show()
        );
        let r = w.bm(
            &me,
            &moved,
            &[
                "call",
                "--session",
                "s2",
                "write_file",
                r#"{"path":"/work/b.txt","content":"still mine"}"#,
            ],
        );
        assert!(r.ok(), "{who:?} write_file after the move: {}", r.show());
        assert_eq!(
            std::fs::read(&key).unwrap(),
            made,
            "{who:?}: the mark key changed"
        );
    }
}

#[test]
fn an_empty_state_directory_made_with_mkdir_is_taken_and_marked() {
    let w = World::new("empty-dir", As::Me);
    let me = w.person("me");
    let proj = w.dir.join("proj");
    // `mkdir -p proj/.boxmaker` (mode 0755, as mkdir makes it) before `boxmaker init`.
    std::fs::create_dir_all(proj.join(".boxmaker")).unwrap();
    std::fs::set_permissions(
        proj.join(".boxmaker"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let proj = w.project("proj", &me, None);
    let r = w.bm(&me, &proj, &["grants"]);
    assert!(r.ok(), "{}", r.show());
    assert!(proj.join(".boxmaker/mark").is_file(), "no mark was written");
}

#[test]
fn an_absolute_xdg_state_home_holds_the_mark_key() {
    let w = World::new("xdg", As::Me);
    let mut me = w.person("me");
    let xdg = w.dir.join("xdg-state");
    me.xdg_state = Some(xdg.clone().into_os_string());
    let proj = w.project("proj", &me, None);
    let r = w.bm(&me, &proj, &["grants"]);
    assert!(r.ok(), "{}", r.show());
    assert!(
        xdg.join("boxmaker/mark.key").is_file(),
        "no key under XDG_STATE_HOME"
    );
    assert!(
        !mark_key(&me).exists(),
        "a key under HOME though XDG_STATE_HOME is set"
    );
}

// ---------------------------------------------------------------------------------------
// 7, 8, 9. A mark key others can read, no HOME, a linked mark.

#[test]
fn a_mark_key_others_can_read_is_refused() {
    let w = World::new("key-mode", As::Me);
    let me = w.person("me");
    let proj = w.project("proj", &me, None);
    let r = w.bm(&me, &proj, &["grants"]);
    assert!(r.ok(), "{}", r.show());
    w.stop_gates();
    let key = mark_key(&me);
    assert!(key.is_file(), "no mark key at {}", key.display());
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = w.bm(&me, &proj, &["grants"]);
    assert!(!r.ok(), "a mark key of mode 0644 was used:\n{}", r.show());
    assert!(r.stderr.contains("chmod 600"), "{}", r.show());
}

#[test]
fn with_no_home_nothing_runs() {
    let w = World::new("no-home", As::Me);
    let me = w.person("me");
    let config = "[[tool]]\nname = \"run\"\nbuiltin = \"run\"\n\n\
                  [[grant]]\ntool = \"run\"\neffect = \"allow\"\n";
    let proj = w.project("proj", &me, Some(config));
    // The config alone allows it: with HOME it runs.
    let r = w.bm(
        &me,
        &proj,
        &["call", "--session", "s1", "run", PLANTED_CALL],
    );
    assert!(r.ok() && r.stdout.contains(PLANTED_OUTPUT), "{}", r.show());
    w.stop_gates();
    for xdg in [None, Some("relative/state")] {
        let homeless = Person {
            home: None,
            xdg_state: xdg.map(OsString::from),
        };
        let r = w.bm(
            &homeless,
            &proj,
            &["call", "--session", "s1", "run", PLANTED_CALL],
        );
        assert!(
            !r.ok() && r.stderr.contains("HOME") && !r.stdout.contains(PLANTED_OUTPUT),
            "no HOME, XDG_STATE_HOME {xdg:?}: it ran\n{}",
            r.show()
        );
    }
}

#[test]
fn a_symbolic_link_at_the_mark_is_refused() {
    let w = World::new("linked-mark", As::Me);
    let me = w.person("me");
    let proj = w.project("proj", &me, None);
    let r = w.bm(&me, &proj, &["grants"]);
    assert!(r.ok(), "{}", r.show());
    w.stop_gates();
    // The mark moved elsewhere, a link in its place.
    let mark = proj.join(".boxmaker/mark");
    let elsewhere = w.dir.join("elsewhere-mark");
    if mark.is_file() {
        std::fs::rename(&mark, &elsewhere).unwrap();
    } else {
        std::fs::write(&elsewhere, "not a mark\n").unwrap();
    }
    symlink(&elsewhere, &mark).unwrap();
    let r = w.bm(&me, &proj, &["grants"]);
    assert!(!r.ok(), "a linked mark was followed:\n{}", r.show());
    assert!(r.stderr.contains("symbolic link"), "{}", r.show());
}
