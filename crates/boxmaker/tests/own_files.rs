//! Issue 29, item 3: no box reaches a file of boxmaker's own — the state directory and all
//! it holds, the keys beside it, a `[[secret]]` file — or changes one that decides what
//! boxmaker does (the config, the witness file), whatever symlinks lie on the way
//! (docs/spec.md §3.5 "boxmaker's own files").
//!
//! The attacker writes the code a `run` box runs and the repository the person opens: a
//! symlink in it can make a path the config names lead elsewhere. Each attack is run as it
//! was reported — a real `run` box printing or changing the file, through the real binary,
//! as root and as a normal user (`setpriv --reuid`) — and each is refused when the config
//! is read, in one sentence naming the mount and the file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::{As, fresh_dir, open_to_everyone, stderr, stdout};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");
/// In every audit key file (its first line), nowhere else.
const AUDIT_KEY_TEXT: &str = "keep it secret, outside";

struct Env {
    dir: PathBuf,
    who: As,
}

impl Env {
    fn new(name: &str, who: As) -> Self {
        let dir = fresh_dir(
            env!("CARGO_TARGET_TMPDIR"),
            "own_files",
            &format!("{name}-{who:?}"),
        );
        open_to_everyone(&dir, env!("CARGO_TARGET_TMPDIR"));
        Self { dir, who }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// A directory of the lab that the user boxmaker runs as may write.
    fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
        p
    }

    /// A file of the user boxmaker runs as, `0600`, as boxmaker keeps a key.
    fn secret_file(&self, rel: &str, contents: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::write(&p, contents).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        if self.who == As::User {
            std::os::unix::fs::chown(&p, Some(1000), Some(1000)).unwrap();
        }
        p
    }

    fn link(&self, target: impl AsRef<Path>, rel: &str) {
        symlink(target, self.path(rel)).unwrap();
    }

    /// The config: `run` allowed, then `extra`.
    fn config(&self, extra: &str) {
        std::fs::write(
            self.path("boxmaker.toml"),
            format!(
                "[box]\ntimeout_seconds = 30\n\n\
                 [[tool]]\nname = \"run\"\nbuiltin = \"run\"\n\n\
                 [[grant]]\ntool = \"*\"\neffect = \"allow\"\n\n{extra}"
            ),
        )
        .unwrap();
        // The person's own file, as the user boxmaker runs as.
        if self.who == As::User {
            std::os::unix::fs::chown(self.path("boxmaker.toml"), Some(1000), Some(1000)).unwrap();
        }
        // And their word for it (`boxmaker trust`, as that user with that HOME: docs/spec.md
        // §6, "Whose config"). A config refused as it is read is never trusted: the call then
        // says why, as it did before.
        let _ = testkit::trust_as(
            self.who.command(BIN).env("HOME", self.path("home")),
            self.path("boxmaker.toml"),
        );
    }

    fn run(&self, args: &[&str]) -> Output {
        self.who
            .command(BIN)
            .args(args)
            .arg("--config")
            .arg(self.path("boxmaker.toml"))
            .env("HOME", self.path("home"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// A `run` call of `script` (Python) in `session`: its answer, or the refusal.
    fn box_runs(&self, session: &str, script: &str) -> Output {
        let args = serde_json::json!({"argv": ["/usr/bin/python3", "-c", script]});
        self.run(&[
            "call",
            "--session",
            session,
            "--json",
            "run",
            &args.to_string(),
        ])
    }
}

/// What the box printed, when the call ran.
fn printed(o: &Output) -> Option<String> {
    let v: Value = serde_json::from_str(stdout(o).trim()).ok()?;
    let content: Value = serde_json::from_str(v["content"].as_str()?).ok()?;
    Some(format!("{content}"))
}

/// The call was refused when the config was read: exit 2, one line naming `words`, and
/// nothing of `secret` printed anywhere.
fn refused(o: &Output, who: As, secret: &str, words: &[&str]) {
    let (out, err) = (stdout(o), stderr(o));
    assert!(
        !out.contains(secret) && !err.contains(secret),
        "{who:?}: the box read it: {}",
        printed(o).unwrap_or(out)
    );
    assert_eq!(
        o.status.code(),
        Some(2),
        "{who:?}: the config was accepted: {out}{err}"
    );
    assert_eq!(err.lines().count(), 1, "{who:?}: {err}");
    for w in words {
        assert!(err.contains(w), "{who:?}: {w:?} not in: {err}");
    }
}

/// Prints each file (or why it could not).
fn cat(paths: &[&str]) -> String {
    let mut s = String::from("import os\n");
    for p in paths {
        s.push_str(&format!(
            "try: print({p:?}, open({p:?}).read())\nexcept OSError as e: print({p:?}, e)\n"
        ));
    }
    s
}

// ---------------------------------------------------------------------------------------
// 1. The keys.

#[test]
fn a_box_cannot_read_the_keys_beside_a_state_directory_behind_a_symlink() {
    // As reported: `/home/u -> /data/u`, the state under `/home/u`, a mount of `/data/u`.
    for who in As::all() {
        let env = Env::new("keys-behind-symlink", who);
        env.mkdir("data-u");
        env.link(env.path("data-u"), "home-u");
        // A sign-in made the OAuth sealing key beside the state directory.
        env.secret_file("data-u/.boxmaker.oauth-key", "OAUTH-SEALING-KEY-77e1");
        env.config(
            "[gate]\nstate = \"home-u/.boxmaker\"\n\n\
             [[mount]]\nhost = \"data-u\"\nat = \"/data/u\"\n",
        );
        let o = env.box_runs(
            "s",
            &cat(&["/data/u/.boxmaker.audit-key", "/data/u/.boxmaker.oauth-key"]),
        );
        refused(
            &o,
            who,
            "OAUTH-SEALING-KEY",
            &["mount /data/u", "state directory"],
        );
        assert!(
            !stdout(&o).contains(AUDIT_KEY_TEXT),
            "{who:?}: the audit key was read: {}",
            stdout(&o)
        );
    }
}

#[test]
fn a_repository_symlink_a_mount_names_cannot_show_the_oauth_key() {
    // The repository ships `notes` as a symlink to the key beside the state directory (a
    // file a mount may show; the OAuth key had no check at all).
    for who in As::all() {
        let env = Env::new("oauth-key-by-repo-link", who);
        env.mkdir("home");
        env.mkdir("proj");
        env.secret_file("home/state.oauth-key", "OAUTH-SEALING-KEY-0b3c");
        env.link("../home/state.oauth-key", "proj/notes");
        env.config(
            "[gate]\nstate = \"home/state\"\n\n\
             [[mount]]\nhost = \"proj/notes\"\nat = \"/data/notes\"\n",
        );
        let o = env.box_runs("s", &cat(&["/data/notes"]));
        refused(
            &o,
            who,
            "OAUTH-SEALING-KEY",
            &["mount /data/notes", "OAuth key", "state.oauth-key"],
        );
    }
}

#[test]
fn a_box_cannot_read_an_audit_key_named_through_a_symlink_into_a_mount() {
    for who in As::all() {
        let env = Env::new("audit-key-by-link", who);
        env.mkdir("data/k");
        env.link(env.path("data/k"), "keys");
        env.config(
            "[gate]\nstate = \"state\"\n\n[audit]\nkey = \"keys/audit.key\"\n\n\
             [[mount]]\nhost = \"data\"\nat = \"/data/d\"\n",
        );
        let o = env.box_runs("s", &cat(&["/data/d/k/audit.key"]));
        refused(
            &o,
            who,
            AUDIT_KEY_TEXT,
            &["mount /data/d", "audit key", "keys/audit.key"],
        );
    }
}

#[test]
fn a_box_cannot_read_a_secret_file_named_through_a_symlink_into_a_mount() {
    for who in As::all() {
        let env = Env::new("secret-by-link", who);
        env.mkdir("proj/.creds");
        env.secret_file("proj/.creds/gh", "ghp_SECRET-TOKEN-41a9");
        env.link(env.path("proj/.creds"), "creds");
        env.config(
            "[gate]\nstate = \"state\"\n\n\
             [[secret]]\nname = \"gh\"\nfile = \"creds/gh\"\n\n\
             [[mount]]\nhost = \"proj\"\nat = \"/data/proj\"\n",
        );
        // Reversed: an answer that shows a secret's value is scrubbed, but the box has it.
        let o = env.box_runs("s", "print(open('/data/proj/.creds/gh').read()[::-1])");
        refused(
            &o,
            who,
            "NEKOT-TERCES",
            &["mount /data/proj", "secret \"gh\""],
        );
    }
}

// ---------------------------------------------------------------------------------------
// 2. The state directory: a mount inside it shows what it holds.

#[test]
fn a_mount_inside_the_state_directory_cannot_show_another_sessions_workspace() {
    for who in As::all() {
        let env = Env::new("mount-in-state", who);
        // The repository's `shared` leads into the state directory's workspaces.
        env.link("state/work", "shared");
        env.config("[gate]\nstate = \"state\"\n");
        // Session a leaves something in its workspace.
        let o = env.box_runs(
            "a",
            "open('/work/diary', 'w').write('SESSION-A-PRIVATE-5d0e')",
        );
        assert!(o.status.success(), "{who:?}: {}", stderr(&o));
        // Then the config mounts `shared`; a box of session b reads session a's work.
        env.config(
            "[gate]\nstate = \"state\"\n\n[[mount]]\nhost = \"shared\"\nat = \"/data/shared\"\n",
        );
        let o = env.box_runs("b", &cat(&["/data/shared/a/diary"]));
        refused(
            &o,
            who,
            "SESSION-A-PRIVATE",
            &["mount /data/shared", "state directory"],
        );
        // The same without a symlink: a subdirectory of the state directory, by its name.
        env.config(
            "[gate]\nstate = \"state\"\n\n[[mount]]\nhost = \"state/work\"\nat = \"/data/shared\"\n",
        );
        let o = env.box_runs("b", &cat(&["/data/shared/a/diary"]));
        refused(
            &o,
            who,
            "SESSION-A-PRIVATE",
            &["mount /data/shared", "state directory"],
        );
    }
}

#[test]
fn a_mount_that_shows_the_state_directory_through_a_symlink_is_refused() {
    for who in As::all() {
        let env = Env::new("state-by-symlink", who);
        env.mkdir("proj");
        std::fs::write(env.path("proj/readme"), "hello\n").unwrap();
        env.link(env.path("proj"), "link");
        // The state lives in proj/.boxmaker; the mount names proj by another path.
        env.config(
            "[gate]\nstate = \"proj/.boxmaker\"\n\n\
             [[mount]]\nhost = \"link\"\nat = \"/data/project\"\n",
        );
        let o = env.box_runs(
            "s",
            "import os, socket\n\
             print(os.listdir('/data/project/.boxmaker'))\n\
             s = socket.socket(socket.AF_UNIX)\n\
             s.connect('/data/project/.boxmaker/control.sock'); print('CONNECTED')\n",
        );
        refused(
            &o,
            who,
            "CONNECTED",
            &["mount /data/project", "state directory", "link"],
        );
    }
}

// ---------------------------------------------------------------------------------------
// 3. What decides what boxmaker does: a writable mount may not change it, even through a
//    symlink, nor point a symlink on its way elsewhere.

/// Waits for the on-demand gate of `env` to end (it lingers a few seconds after its last
/// client), so that the next call starts a new one that reads its files again.
fn until_the_gate_ends(env: &Env) {
    let lock = env.path("state/clients.lock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let gates = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .filter(|c| {
                let c = String::from_utf8_lossy(c);
                c.contains("__gate") && c.contains(&*env.dir.to_string_lossy())
            })
            .count();
        if gates == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("the gate of {} never ended", lock.display());
}

#[test]
fn a_box_cannot_redirect_the_audit_key_through_a_symlink_in_a_writable_mount() {
    // `keys -> proj/keylink -> vault`: the key itself is outside every mount, but the second
    // link is inside the writable mount `proj`. A box points it at a directory it writes,
    // and the next gate makes its key there.
    for who in As::all() {
        let env = Env::new("key-redirect", who);
        env.mkdir("vault");
        env.mkdir("proj");
        env.mkdir("proj/out");
        env.link(env.path("vault"), "proj/keylink");
        env.link(env.path("proj/keylink"), "keys");
        env.config(
            "[gate]\nstate = \"state\"\n\n[audit]\nkey = \"keys/audit.key\"\n\n\
             [[mount]]\nhost = \"proj\"\nat = \"/data/proj\"\nwrite = true\n",
        );
        let o = env.box_runs(
            "s",
            &format!(
                "import os\nos.remove('/data/proj/keylink')\n\
                 os.symlink({:?}, '/data/proj/keylink')\nprint('POINTED')\n",
                env.path("proj/out").display().to_string()
            ),
        );
        if o.status.code() == Some(2) {
            refused(
                &o,
                who,
                "POINTED",
                &["mount /data/proj", "audit key", "keylink"],
            );
            continue;
        }
        assert!(
            stdout(&o).contains("POINTED"),
            "{who:?}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        until_the_gate_ends(&env);
        let o = env.box_runs("s", &cat(&["/data/proj/out/audit.key"]));
        panic!(
            "{who:?}: the config was accepted, a box pointed the key's path into its mount and \
             the next gate made its key there ({}): {}",
            env.path("proj/out/audit.key").exists(),
            printed(&o).unwrap_or_else(|| stderr(&o))
        );
    }
}

#[test]
fn a_box_cannot_rewrite_the_witness_file_through_a_symlink_into_a_writable_mount() {
    for who in As::all() {
        let env = Env::new("witness-by-link", who);
        env.mkdir("proj");
        env.mkdir("proj/log");
        env.link(env.path("proj/log"), "witness");
        env.config(
            "[gate]\nstate = \"state\"\n\n[audit]\nwitness_file = \"witness/checkpoints\"\n\n\
             [[mount]]\nhost = \"proj\"\nat = \"/data/proj\"\nwrite = true\n",
        );
        let o = env.box_runs(
            "s",
            "open('/data/proj/log/checkpoints', 'w').write('FORGED-CHECKPOINT\\n')\nprint('FORGED')",
        );
        refused(
            &o,
            who,
            "FORGED",
            &["mount /data/proj", "witness file", "rewrite"],
        );
    }
}

#[test]
fn a_box_cannot_rewrite_the_config_that_grants_it() {
    // The state elsewhere, the project (which holds boxmaker.toml) mounted writable: a box
    // would rewrite the policy, and the next client's gate would read its grants.
    for who in As::all() {
        let env = Env::new("config-in-writable", who);
        let state = env.dir.with_extension("state");
        let _ = std::fs::remove_dir_all(&state);
        env.config(&format!(
            "[gate]\nstate = {:?}\n\n\
             [[mount]]\nhost = \".\"\nat = \"/data/proj\"\nwrite = true\n",
            state.display().to_string()
        ));
        let o = env.box_runs(
            "s",
            "open('/data/proj/boxmaker.toml', 'a').write('\\n# OWNED\\n')\nprint('REWROTE')",
        );
        refused(
            &o,
            who,
            "REWROTE",
            &["mount /data/proj", "config", "boxmaker.toml"],
        );
        assert!(
            !std::fs::read_to_string(env.path("boxmaker.toml"))
                .unwrap()
                .contains("OWNED"),
            "{who:?}: the box rewrote the config"
        );
    }
}

#[test]
fn a_writable_mount_cannot_hold_another_mounts_host_path_through_a_symlink() {
    // `notes -> proj/notes`: a box writing `proj` could replace `proj/notes` with a symlink,
    // and the next runner would show whatever it names at /data/notes.
    for who in As::all() {
        let env = Env::new("writable-holds-by-link", who);
        env.mkdir("proj/notes");
        env.link(env.path("proj/notes"), "notes");
        env.config(
            "[gate]\nstate = \"state\"\n\n\
             [[mount]]\nhost = \"proj\"\nat = \"/data/proj\"\nwrite = true\n\n\
             [[mount]]\nhost = \"notes\"\nat = \"/data/notes\"\nclass = \"confidential\"\n",
        );
        let o = env.box_runs("s", "print('RAN')");
        refused(
            &o,
            who,
            "RAN",
            &["mount /data/proj", "is writable", "/data/notes"],
        );
    }
}
