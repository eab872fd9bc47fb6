//! Issue 19 item 7 end to end: the audit log is anchored. Real gates (on demand, and under
//! `serve`) sign checkpoints and hand them to a witness file; then the forger's code — a
//! Python program written from docs/spec.md §6 alone (`tests/python/audit_forger.py`) —
//! runs in a real box with a copy of the log on a writable mount, rewrites it with every
//! hash recomputed, and the copy is put back. `boxmaker audit verify` must name each
//! forgery against the witness, where the chain alone (and, once the forger strips them, the
//! log's own checkpoints) call the log intact.

// Test code: a failed unwrap or panic here is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::{as_a_user, can_be_a_user, fresh_dir, open_to_everyone, python_dir};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

struct Env {
    dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    /// Run boxmaker as a normal user (uid 1000) rather than as this process's user.
    user: bool,
}

impl Env {
    fn new(audit: &str) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        Env::at(tmp.path().to_path_buf(), Some(tmp), false, audit)
    }

    /// An environment a normal user runs in: under the target directory, every directory
    /// on the way open to them.
    fn for_a_user(name: &str, audit: &str) -> Self {
        let dir = fresh_dir(env!("CARGO_TARGET_TMPDIR"), "audit_anchor", name);
        open_to_everyone(&dir, env!("CARGO_TARGET_TMPDIR"));
        Env::at(dir, None, true, audit)
    }

    fn at(dir: PathBuf, tmp: Option<tempfile::TempDir>, user: bool, audit: &str) -> Self {
        let backup = dir.join("backup");
        std::fs::create_dir_all(&backup).unwrap();
        std::fs::set_permissions(&backup, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::copy(
            python_dir().join("audit_forger.py"),
            backup.join("audit_forger.py"),
        )
        .unwrap();
        std::fs::write(
            dir.join("boxmaker.toml"),
            format!(
                r#"
[gate]
state = "state"

[[mount]]
name = "backup"
host = "backup"
at = "/data/backup"
class = "public"
write = true

[[tool]]
name = "list_dir"
builtin = "list_dir"

[[grant]]
tool = "list_dir"
effect = "allow"

[audit]
journal = false
witness_file = "witness"
checkpoint_every = 4
{audit}
"#
            ),
        )
        .unwrap();
        Self {
            dir,
            _tmp: tmp,
            user,
        }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.join(p)
    }

    fn command(&self) -> Command {
        if self.user {
            let mut c = as_a_user(BIN);
            c.env("HOME", &self.dir);
            c
        } else {
            Command::new(BIN)
        }
    }

    fn log(&self) -> PathBuf {
        self.path("state/audit.log")
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .arg("--config")
            .arg(self.path("boxmaker.toml"))
            .output()
            .unwrap()
    }

    /// `python3 /data/backup/audit_forger.py ARGS` in a box of session `attacker`.
    fn in_box(&self, args: &[&str]) -> Output {
        self.command()
            .args(["box", "exec", "--config"])
            .arg(self.path("boxmaker.toml"))
            .args([
                "--session",
                "attacker",
                "--",
                "python3",
                "/data/backup/audit_forger.py",
            ])
            .args(args)
            .output()
            .unwrap()
    }

    /// `n` calls, each through an on-demand gate (three records each).
    fn traffic(&self, n: usize) {
        for i in 0..n {
            let o = self.run(&["call", "--session", "s1", "list_dir", r#"{"path":"/data"}"#]);
            assert!(o.status.success(), "call {i}: {}", text(&o));
        }
    }

    /// Waits until the gate has stopped and signed its last checkpoint: the log ends in a
    /// `checkpoint` record and the witness holds it.
    fn wait_anchored(&self) -> Vec<u64> {
        let start = Instant::now();
        loop {
            let lines = std::fs::read_to_string(self.log()).unwrap_or_default();
            let last = lines.lines().last().unwrap_or_default().to_string();
            let sizes = witness_sizes(&self.path("witness"));
            if last.contains(r#""event":"checkpoint""#)
                && sizes.last() == Some(&(lines.lines().count() as u64 - 1))
            {
                return sizes;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no last checkpoint; witness {sizes:?}, log ends {last}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The forger in a box of session `attacker`: the log copied to the writable mount,
    /// `audit_forger.py` run on it there, the result put back in place of the log.
    fn forge(&self, args: &[&str]) {
        let copy = self.path("backup/audit.log");
        std::fs::copy(self.log(), &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o666)).unwrap();
        let mut cmd = vec!["/data/backup/audit.log"];
        cmd.extend_from_slice(args);
        let o = self.in_box(&cmd);
        assert!(o.status.success(), "the forger failed: {}", text(&o));
        std::fs::copy(&copy, self.log()).unwrap();
    }

    /// `audit verify --json` (plus `extra`): its exit status and its answer.
    fn verify(&self, extra: &[&str]) -> (i32, Value, String) {
        let mut args = vec!["audit", "verify", "--json"];
        args.extend_from_slice(extra);
        let o = self.run(&args);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        (o.status.code().unwrap(), v["body"].clone(), text(&o))
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn witness_sizes(path: &Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["tree_size"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

/// The range `audit verify` gives for a change at `first`: after the largest checkpoint
/// below it, up to the first at or above it.
fn range(sizes: &[u64], first: u64) -> (u64, u64) {
    let from = sizes
        .iter()
        .copied()
        .filter(|s| *s < first)
        .max()
        .unwrap_or(0)
        + 1;
    let to = sizes.iter().copied().filter(|s| *s >= first).min().unwrap();
    (from, to)
}

fn assert_broken_at(env: &Env, attack: &str, first_bad: u64, says: &str) {
    let (code, v, out) = env.verify(&[]);
    assert_eq!(code, 1, "{attack}: {out}");
    assert_eq!(v["first_bad"], first_bad, "{attack}: {out}");
    assert!(
        v["detail"].as_str().unwrap().contains(says),
        "{attack}: {out}"
    );
}

/// Without a witness (an empty checkpoint file) the log says nothing against itself.
fn assert_intact_without_the_witness(env: &Env, attack: &str) {
    let (code, v, out) = env.verify(&["--checkpoint", "/dev/null"]);
    assert_eq!(code, 0, "{attack}: {out}");
    assert_eq!(v["first_bad"], Value::Null, "{attack}: {out}");
}

#[test]
fn test_audit_verify_names_each_forgery_a_box_writes_against_the_witness() {
    let env = Env::new("");
    env.traffic(4);
    let sizes = env.wait_anchored();
    assert!(sizes.len() >= 3, "{sizes:?}");
    let total = *sizes.last().unwrap() + 1;
    let (code, v, out) = env.verify(&[]);
    assert_eq!((code, v["records"].as_u64()), (0, Some(total)), "{out}");
    let pristine = std::fs::read(env.log()).unwrap();
    let restore = || std::fs::write(env.log(), &pristine).unwrap();

    // The last 3 records cut: the chain and the log's own checkpoints see nothing.
    env.forge(&["cut", "3"]);
    assert_intact_without_the_witness(&env, "cut 3");
    assert_broken_at(
        &env,
        "cut 3",
        total - 2,
        &format!("the first record missing is seq {}", total - 2),
    );

    // Record 8 rewritten (another tool), the chain recomputed: the log's own checkpoint
    // records still betray it...
    restore();
    env.forge(&["rewrite", "8", "tool", "read_secrets"]);
    let (from, to) = range(&sizes, 8);
    let says = format!("one of seq {from}–{to}");
    let (code, v, out) = env.verify(&["--checkpoint", "/dev/null"]);
    assert_eq!((code, v["first_bad"].as_u64()), (1, Some(from)), "{out}");
    assert!(out.contains(&says), "{out}");
    // ...and once the forger strips them too, only the witness does.
    restore();
    env.forge(&["rewrite", "8", "tool", "read_secrets", "--strip"]);
    assert_intact_without_the_witness(&env, "rewrite and strip");
    let first = sizes[0] + 1; // stripping moved every record after the first checkpoint
    let (from, to) = range(&sizes, first);
    assert_broken_at(&env, "rewrite and strip", from, &format!("seq {from}–{to}"));

    // Two records swapped, the chain recomputed.
    restore();
    env.forge(&["swap", "2", "8", "--strip"]);
    assert_intact_without_the_witness(&env, "swap");
    let (from, to) = range(&sizes, 2);
    assert_broken_at(&env, "swap", from, &format!("seq {from}–{to}"));
}

#[test]
fn test_a_spliced_log_and_a_forged_checkpoint_are_refused() {
    let a = Env::new("");
    let b = Env::new("");
    a.traffic(4);
    b.traffic(4);
    let sizes = a.wait_anchored();
    b.wait_anchored();
    let other = a.path("backup/other.log");
    std::fs::copy(b.log(), &other).unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o644)).unwrap();
    let pristine = std::fs::read(a.log()).unwrap();

    // a's first 7 records, then b's: a's witness finds b's records from the 8th on...
    a.forge(&["splice", "/data/backup/other.log", "7"]);
    let (from, to) = range(&sizes, 8);
    assert_broken_at(&a, "splice", from, &format!("seq {from}–{to}"));
    // ...and, witness or not, b's checkpoint records are signed by b's key, not a's.
    let (code, _, out) = a.verify(&["--checkpoint", "/dev/null"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("checkpoint record") && out.contains("is not signed by the audit key"),
        "{out}"
    );
    // Stripped of them, a's witness still finds the splice.
    std::fs::write(a.log(), &pristine).unwrap();
    a.forge(&["splice", "/data/backup/other.log", "7", "--strip"]);
    assert_intact_without_the_witness(&a, "splice");
    let (from, to) = range(&sizes, (sizes[0] + 1).min(8));
    assert_broken_at(&a, "splice", from, &format!("seq {from}–{to}"));

    // The forger cuts the log, then rewrites the witness's last checkpoint to match it: the
    // signature does not follow.
    std::fs::write(a.log(), &pristine).unwrap();
    a.forge(&["cut", "3", "--strip"]);
    let witness = a.path("backup/witness");
    std::fs::copy(a.path("witness"), &witness).unwrap();
    std::fs::set_permissions(&witness, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = a.in_box(&[
        "/data/backup/audit.log",
        "forge-checkpoint",
        "/data/backup/witness",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let forged = witness.to_str().unwrap();
    let (code, _, out) = a.verify(&["--checkpoint", forged]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("signature does not verify"), "{out}");
    // The same forgery of the state directory's latest checkpoint: `audit checkpoint` says
    // it is not signed by the key.
    std::fs::copy(&witness, a.path("state/audit.checkpoint")).unwrap();
    let last = std::fs::read_to_string(&witness).unwrap();
    std::fs::write(
        a.path("state/audit.checkpoint"),
        last.lines().last().unwrap(),
    )
    .unwrap();
    let o = a.run(&["audit", "checkpoint"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("not signed by the key"), "{}", text(&o));
    // A verifier elsewhere, with only the witness's file and the public key, also refuses.
    std::fs::write(a.log(), &pristine).unwrap();
    let key = std::fs::read_to_string(a.path("state.audit-key")).unwrap();
    let public = key
        .lines()
        .find_map(|l| l.strip_prefix("public "))
        .unwrap()
        .to_string();
    let (code, _, out) = a.verify(&["--checkpoint", forged, "--key", &public]);
    assert_eq!(code, 1, "{out}");
    let honest = a.path("witness");
    let (code, v, out) = a.verify(&["--checkpoint", honest.to_str().unwrap(), "--key", &public]);
    assert_eq!((code, v["first_bad"].clone()), (0, Value::Null), "{out}");
}

#[test]
fn test_audit_checkpoint_prints_the_latest_and_its_key_and_verify_reads_what_it_prints() {
    let env = Env::new("");
    let o = env.run(&["audit", "checkpoint"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("no checkpoint yet"), "{}", text(&o));
    env.traffic(2);
    let sizes = env.wait_anchored();
    let o = env.run(&["audit", "checkpoint"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with("# the latest checkpoint of ")
            && lines[0].contains(&format!(": {} records, signed ", sizes.last().unwrap())),
        "{out}"
    );
    let key = std::fs::read_to_string(env.path("state.audit-key")).unwrap();
    let public = key.lines().find_map(|l| l.strip_prefix("public ")).unwrap();
    assert!(
        lines[1].starts_with(&format!("# public key {public} ")),
        "{out}"
    );
    let cp: Value = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(cp["tree_size"].as_u64(), sizes.last().copied());
    // What it prints is a checkpoint file `audit verify` reads.
    let file = env.path("printed");
    std::fs::write(&file, &out).unwrap();
    let (code, v, out) = env.verify(&["--checkpoint", file.to_str().unwrap()]);
    assert_eq!((code, v["first_bad"].clone()), (0, Value::Null), "{out}");
    assert!(
        v["detail"].as_str().unwrap().contains("it extends 1 given"),
        "{out}"
    );
}

#[test]
fn test_serve_signs_a_last_checkpoint_when_stopped_and_a_failing_witness_is_said() {
    let env = Env::new(
        r#"witness_command = ["sh", "-c", "echo no route to the backup host >&2; exit 5"]"#,
    );
    let mut serve = Command::new(BIN)
        .arg("serve")
        .arg("--config")
        .arg(env.path("boxmaker.toml"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !env.path("state/agent.sock").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "serve did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    env.traffic(1);
    let before = std::fs::read_to_string(env.log()).unwrap().lines().count() as u64;
    let o = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .output()
        .unwrap();
    assert!(o.status.success());
    let start = Instant::now();
    while serve.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "serve did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = serve.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    // The last checkpoint covers every record the calls left.
    assert_eq!(witness_sizes(&env.path("witness")), [before], "{said}");
    // The failing command witness was said on stderr and audited, and the gate went on.
    assert!(
        said.contains("the audit witness command sh -c")
            && said.contains("did not take the checkpoint")
            && said.contains("no route to the backup host"),
        "{said}"
    );
    let o = env.run(&["audit", "tail", "-n", "3"]);
    let tail = text(&o);
    assert!(tail.contains(r#""event":"witness_failed""#), "{tail}");
    assert!(tail.contains("exited with exit status: 5"), "{tail}");
}

#[test]
fn test_a_normal_users_gate_anchors_its_log_and_its_witness_finds_the_cut() {
    if !can_be_a_user() {
        eprintln!("skipped: cannot run as a normal user here");
        return;
    }
    let env = Env::for_a_user("user", "");
    env.traffic(2);
    let sizes = env.wait_anchored();
    // The user's own key, beside the state directory, readable by nobody else.
    use std::os::unix::fs::MetadataExt;
    let key = std::fs::metadata(env.path("state.audit-key")).unwrap();
    assert_eq!((key.uid(), key.mode() & 0o777), (1000, 0o600));
    let total = *sizes.last().unwrap() + 1;
    env.forge(&["cut", "2"]);
    assert_broken_at(
        &env,
        "a normal user's log cut",
        total - 1,
        &format!("the first record missing is seq {}", total - 1),
    );
}
