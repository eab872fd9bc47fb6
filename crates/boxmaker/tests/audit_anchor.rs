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
        let env = Self {
            dir,
            _tmp: tmp,
            user,
        };
        // The tester's config, trusted by the user boxmaker runs as (with that user's HOME),
        // as a person trusts the config they wrote.
        let o = env
            .command()
            .arg("trust")
            .arg("--config")
            .arg(env.path("boxmaker.toml"))
            .output()
            .unwrap();
        assert!(o.status.success(), "boxmaker trust: {}", text(&o));
        env
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

/// An auditor checks a copy of another gate's state directory: through a config it is not
/// theirs (it bears the other gate's mark, and is refused), so `audit verify --log` reads
/// the copied log as a file, with no config, against the public key and checkpoint the gate
/// printed; a record changed in the copy is named.
#[test]
fn test_an_auditor_verifies_a_copied_log_with_the_key_and_checkpoint_they_were_given() {
    let env = Env::new("");
    env.traffic(2);
    env.wait_anchored();
    let o = env.run(&["audit", "checkpoint"]);
    assert!(o.status.success(), "{}", text(&o));
    let printed = env.path("printed");
    std::fs::write(&printed, &o.stdout).unwrap();
    let key = std::fs::read_to_string(env.path("state.audit-key")).unwrap();
    let public = key.lines().find_map(|l| l.strip_prefix("public ")).unwrap();
    // The auditor's copy, elsewhere, and an empty directory to run in (no config there).
    let copy = env.path("auditor/copy");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(env.log(), copy.join("audit.log")).unwrap();
    let log = copy.join("audit.log");
    let verify = |extra: &[&str]| {
        let o = env
            .command()
            .current_dir(env.path("auditor"))
            .args(["audit", "verify", "--json", "--log"])
            .arg(&log)
            .args(extra)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        (o.status.code().unwrap(), v["body"].clone(), text(&o))
    };
    // Through a config of the auditor's naming the copy as its state: refused, the copy
    // bears no mark of the auditor's (what `--log` is for).
    let cfg = env.path("auditor/boxmaker.toml");
    std::fs::write(&cfg, "[gate]\nstate = \"copy\"\n").unwrap();
    let trusted = env
        .command()
        .arg("trust")
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(trusted.status.success(), "{}", text(&trusted));
    let o = env
        .command()
        .args(["audit", "verify", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no mark"), "{}", text(&o));
    let (code, v, out) = verify(&["--key", public, "--checkpoint", printed.to_str().unwrap()]);
    assert_eq!((code, v["first_bad"].clone()), (0, Value::Null), "{out}");
    let detail = v["detail"].as_str().unwrap();
    assert!(detail.contains("it extends 1 given"), "{out}");
    assert!(!detail.contains("were not checked"), "{out}");
    // Without the key the chain is checked, and the log's own checkpoints are said to be
    // unchecked.
    let (code, v, out) = verify(&[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("checked with the key given with --key"),
        "{out}"
    );
    // A record changed in the copy is named.
    let text_log = std::fs::read_to_string(&log).unwrap();
    let changed = text_log.replacen(r#""session":"s1""#, r#""session":"s2""#, 1);
    assert_ne!(changed, text_log);
    std::fs::write(&log, changed).unwrap();
    let (code, v, out) = verify(&["--key", public, "--checkpoint", printed.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(v["first_bad"], 1, "{out}");
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
        // `sh` as `PATH` found it when the config was read.
        said.contains("the audit witness command ")
            && said.contains("sh -c echo no route")
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
    // And their next call's gate refuses to start on it.
    env.refused(
        "a normal user's log cut",
        &[
            "was cut",
            &format!("the first record missing is seq {}", total - 1),
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// At start (issue 29 item 2): someone who can write the state directory's log, not the key
// beside it nor the witness file outside it, cuts or rewrites the log and lets any client
// start a gate. The gate must refuse to start, say in one sentence what is missing or which
// checkpoint the log does not extend (and which file), and leave the log,
// `audit.checkpoint` and the witness exactly as it found them.

impl Env {
    fn latest(&self) -> PathBuf {
        self.path("state/audit.checkpoint")
    }

    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.log())
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }

    fn write_lines(&self, lines: &[String]) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(self.log(), text).unwrap();
    }

    /// The log, the state directory's latest checkpoint and the witness file, as bytes.
    fn evidence(&self) -> [Option<Vec<u8>>; 3] {
        [self.log(), self.latest(), self.path("witness")].map(|p| std::fs::read(p).ok())
    }

    fn restore(&self, evidence: &[Option<Vec<u8>>; 3]) {
        for (p, bytes) in [self.log(), self.latest(), self.path("witness")]
            .iter()
            .zip(evidence)
        {
            match bytes {
                Some(b) => std::fs::write(p, b).unwrap(),
                None => {
                    let _ = std::fs::remove_file(p);
                }
            }
        }
    }

    /// A call through an on-demand gate.
    fn call(&self) -> Output {
        self.run(&["call", "--session", "s1", "list_dir", r#"{"path":"/data"}"#])
    }

    /// The next call's gate refuses to start, saying `says`, and the evidence is untouched.
    fn refused(&self, attack: &str, says: &[&str]) -> String {
        let before = self.evidence();
        let o = self.call();
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{attack}: {out}");
        for s in ["the gate could not start", "new-chain --reason"]
            .iter()
            .chain(says)
        {
            assert!(out.contains(s), "{attack}: {s:?} not in: {out}");
        }
        assert!(
            out.contains(&self.log().display().to_string()),
            "{attack}: the log is not named: {out}"
        );
        assert!(
            self.evidence() == before,
            "{attack}: the refused start changed the log, audit.checkpoint or the witness"
        );
        out
    }
}

#[test]
fn test_a_gate_refuses_to_start_on_a_log_cut_or_rewritten_and_changes_nothing() {
    let env = Env::new("");
    env.traffic(4);
    let sizes = env.wait_anchored();
    let pristine = env.evidence();
    let lines = env.lines();
    let total = lines.len() as u64;

    // The issue's case: the log cut at a line boundary. `audit verify` refuses it; the next
    // call used to start a gate that appended, re-signed and replaced audit.checkpoint.
    env.write_lines(&lines[..lines.len() - 3]);
    let (code, v, out) = env.verify(&[]);
    assert_eq!(
        (code, v["first_bad"].as_u64()),
        (1, Some(total - 2)),
        "{out}"
    );
    env.refused(
        "cut at a line boundary",
        &[
            "was cut",
            &format!("the first record missing is seq {}", total - 2),
        ],
    );
    let (code, v, out) = env.verify(&[]);
    assert_eq!(
        (code, v["first_bad"].as_u64()),
        (1, Some(total - 2)),
        "{out}"
    );
    assert!(
        !std::fs::read_to_string(env.path("witness"))
            .unwrap()
            .is_empty()
    );

    // Cut inside a line: not a crash's torn line (a checkpoint covers it), so not cut off.
    env.restore(&pristine);
    let bytes = std::fs::read(env.log()).unwrap();
    let line7: usize = lines[..6].iter().map(|l| l.len() + 1).sum();
    std::fs::write(env.log(), &bytes[..line7 + 20]).unwrap();
    env.refused(
        "cut inside line 7",
        &[
            "was cut",
            "it holds 6 records",
            "the first record missing is seq 7",
        ],
    );

    // Record 8 rewritten in a box, the chain recomputed.
    env.restore(&pristine);
    env.forge(&["rewrite", "8", "tool", "read_secrets"]);
    env.refused("rewritten, chain recomputed", &["does not extend"]);
    // ...with the witness gone and audit.checkpoint deleted, the log's own checkpoint
    // records still contradict it.
    std::fs::rename(env.path("witness"), env.path("witness.away")).unwrap();
    std::fs::remove_file(env.latest()).unwrap();
    env.refused(
        "rewritten, only its own checkpoint records left",
        &["does not extend its own checkpoint record"],
    );
    std::fs::rename(env.path("witness.away"), env.path("witness")).unwrap();

    // Cut back to an older checkpoint, and audit.checkpoint put back to it (or deleted).
    env.restore(&pristine);
    let witness_lines: Vec<String> = std::fs::read_to_string(env.path("witness"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let older = sizes[1] as usize;
    env.write_lines(&lines[..older + 1]);
    std::fs::write(env.latest(), format!("{}\n", witness_lines[1])).unwrap();
    let last = format!("the checkpoint on line {} of", witness_lines.len());
    env.refused("cut, older audit.checkpoint", &["was cut", &last]);
    std::fs::remove_file(env.latest()).unwrap();
    env.refused("cut, audit.checkpoint deleted", &["was cut", &last]);

    // Emptied.
    env.restore(&pristine);
    std::fs::write(env.log(), b"").unwrap();
    env.refused(
        "emptied",
        &["it holds 0 records", "the first record missing is seq 1"],
    );

    // Shorter than the witness file's latest line, with nothing left in the state
    // directory to say so: cut to the records the first checkpoint covers (none of the
    // log's own checkpoint records left), audit.checkpoint deleted.
    env.restore(&pristine);
    env.write_lines(&lines[..sizes[0] as usize]);
    std::fs::remove_file(env.latest()).unwrap();
    env.refused("shorter than the witness", &["was cut", &last]);

    // A crash mid-write after the last checkpoint is not a cut: the gate starts, cuts the
    // unfinished line off and says so.
    env.restore(&pristine);
    let mut torn = std::fs::read(env.log()).unwrap();
    torn.extend_from_slice(br#"{"seq":999,"time":1,"event":"req"#);
    std::fs::write(env.log(), &torn).unwrap();
    let o = env.call();
    assert!(o.status.success(), "{}", text(&o));
    let said = std::fs::read_to_string(env.path("state/gate.log")).unwrap();
    assert!(said.contains("ended in an unfinished record"), "{said}");
    env.wait_anchored();
    let (code, _, out) = env.verify(&[]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn test_serve_stops_on_a_cut_log_and_does_not_restart_the_gate() {
    let env = Env::new("");
    env.traffic(2);
    env.wait_anchored();
    let lines = env.lines();
    env.write_lines(&lines[..lines.len() - 2]);
    let before = env.evidence();
    let mut serve = Command::new(BIN)
        .arg("serve")
        .arg("--config")
        .arg(env.path("boxmaker.toml"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The supervisor gives up at once: its gate exited 2, as on a bad config.
    let start = Instant::now();
    while serve.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = serve.kill();
            panic!("serve kept going on a cut log");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = serve.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("not restarting it"), "{said}");
    assert!(!said.contains("restarting it;"), "{said}");
    assert_eq!(
        said.matches("was cut").count(),
        1,
        "one start, one sentence: {said}"
    );
    assert!(
        said.contains(&format!(
            "the first record missing is seq {}",
            lines.len() - 1
        )) && said.contains(&env.log().display().to_string()),
        "{said}"
    );
    assert!(env.evidence() == before, "serve changed the evidence");
}

#[test]
fn test_new_chain_records_the_break_and_the_gate_starts_on_it() {
    let env = Env::new("");
    env.traffic(2);
    env.wait_anchored();
    // Not while a gate runs on the log.
    let mut serve = Command::new(BIN)
        .arg("serve")
        .arg("--config")
        .arg(env.path("boxmaker.toml"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
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
    let o = env.run(&["audit", "new-chain", "--reason", "testing"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("a gate is running"), "{}", text(&o));
    let _ = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .output();
    serve.wait().unwrap();
    // Nothing to restart while the log extends its checkpoints.
    let o = env.run(&["audit", "new-chain", "--reason", "testing"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("there is no break to record"),
        "{}",
        text(&o)
    );

    let lines = env.lines();
    env.write_lines(&lines[..lines.len() - 3]);
    let cut = std::fs::read(env.log()).unwrap();
    let refusal = env.refused("cut", &["was cut"]);
    let o = env.run(&[
        "audit",
        "new-chain",
        "--reason",
        "restored from a backup that lagged",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("started a new audit chain"), "{out}");
    let kept = out
        .lines()
        .find_map(|l| l.strip_prefix("boxmaker: that log is kept, as it was found, as "))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(std::fs::read(kept).unwrap(), cut, "kept byte for byte");
    // Record 1 says what was refused, why and by whom; record 2 is its checkpoint, which
    // the witness holds last.
    let first: Value = serde_json::from_str(&env.lines()[0]).unwrap();
    assert_eq!(first["event"], "chain_restarted", "{first}");
    assert_eq!(first["reason"], "restored from a backup that lagged");
    assert!(
        refusal.contains(first["refused"].as_str().unwrap()),
        "{first} / {refusal}"
    );
    assert_eq!(
        witness_sizes(&env.path("witness")).last(),
        Some(&1),
        "the new chain's first checkpoint is witnessed"
    );
    // The gate starts on the new chain, and `audit verify` says what it left out.
    env.traffic(2);
    env.wait_anchored();
    let (code, v, out) = env.verify(&[]);
    assert_eq!((code, v["first_bad"].clone()), (0, Value::Null), "{out}");
    let detail = v["detail"].as_str().unwrap();
    assert!(
        detail.contains("a new chain, started") && detail.contains("were left out"),
        "{detail}"
    );
    // The new chain cut is refused like the old one.
    let lines = env.lines();
    env.write_lines(&lines[..3]);
    env.refused("the new chain cut", &["was cut"]);
}
