//! Issue 32: several replicas (real `boxmaker` processes, each with its own state directory
//! and gate) on one PostgreSQL store, a conversation's calls spread across them
//! (docs/spec.md §6, "The store" and "Replicas"). PostgreSQL is Debian's server, started
//! by the test as an unprivileged cluster in a temporary directory (`testkit::pg`).

// Test code: a failed unwrap or panic here is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStderr, Command, Output, Stdio};
use std::time::Duration;

use testkit::pg::Pg;
use testkit::{Lab, stderr, stdout, wait_with_timeout};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// One replica: a lab of its own (state directory, audit log, key), the shared store when
/// `store` is given.
fn replica(store: Option<&str>) -> Lab {
    replica_with(store, "")
}

/// [`replica`] with `extra` at the end of its config (a section of its own).
fn replica_with(store: Option<&str>, extra: &str) -> Lab {
    let lab = Lab::temp(BIN);
    lab.write("notes/plan.txt", "secret\n");
    let store = store.map_or(String::new(), |u| format!("store = \"{u}\"\n"));
    lab.write_config(&format!(
        r#"
[gate]
state = "state"
approval_ttl = 300
{store}
[[mount]]
host = "notes"
at = "/data/notes"
class = "confidential"

[[tool]]
name = "read_file"
builtin = "read_file"
class = "internal"

[[tool]]
name = "run"
builtin = "run"

[[tool]]
name = "share"
builtin = "write_file"

[[grant]]
tool = "read_file"
effect = "allow"

[[grant]]
tool = "run"
effect = "ask"

[[grant]]
tool = "share"
effect = "allow"
max_class = "public"
{extra}"#
    ));
    // The tester's own config, trusted as written (docs/spec.md §6, "Whose config"): the
    // commands below run the binary directly too (`serve`, `__gate`, `call`).
    lab.trust_config();
    lab
}

fn call(lab: &Lab, session: &str, tool: &str, args: &str) -> Output {
    lab.run(&["call", "--session", session, tool, args])
}

fn spawn_call(lab: &Lab, session: &str, tool: &str, args: &str) -> (Child, BufReader<ChildStderr>) {
    let mut child = Command::new(BIN)
        .args(["call", "--config"])
        .arg(lab.config())
        .args(["--session", session, "--json", tool, args])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = BufReader::new(child.stderr.take().unwrap());
    (child, err)
}

/// Reads stderr lines until `pending approval ID (expires T)`; returns the id.
fn pending_id(err: &mut BufReader<ChildStderr>) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "call ended before asking"
        );
        if let Some(rest) = line.strip_prefix("pending approval ") {
            return rest.split_whitespace().next().unwrap().to_string();
        }
    }
}

const READ: &str = r#"{"path":"/data/notes/plan.txt"}"#;
const SHARE: &str = r#"{"path":"a","content":"secret"}"#;

/// `boxmaker serve` for `r` (a kept gate, so its store can go away under it), once it
/// serves, with session `s1` having read the confidential plan.
fn kept_after_a_read(r: &Lab) -> Child {
    let serve = testkit::quiet_serve(BIN, r.config());
    testkit::wait_for_path(&r.path("state/agent.sock"), Duration::from_secs(30));
    let read = call(r, "s1", "read_file", READ);
    assert_eq!(read.status.code(), Some(0), "{}", stderr(&read));
    serve
}

/// Session `s1` sharing to the public sink on `r` is denied by its (confidential) taint.
fn assert_share_refused_for_taint(r: &Lab) {
    let out = call(r, "s1", "share", SHARE);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("denied: taint_too_high"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_conversation_does_not_shed_its_taint_by_landing_on_another_replica() {
    let pg = Pg::start();
    let url = pg.database("fleet");
    let (r1, r2) = (replica(Some(&url)), replica(Some(&url)));
    let read = call(&r1, "s1", "read_file", READ);
    assert_eq!(read.status.code(), Some(0), "{}", stderr(&read));
    assert_eq!(stdout(&read), "secret\n");
    // The public sink, on the other replica: its gate reads the taint replica 1 committed.
    assert_share_refused_for_taint(&r2);
    // Both replicas list the one session, confidential.
    for r in [&r1, &r2] {
        let s = r.run(&["sessions"]);
        assert!(stdout(&s).contains("s1  confidential"), "{}", stdout(&s));
    }
    // The attack this closes: replicas with a store each (the embedded default) let the
    // conversation leave with what it read.
    let (a, b) = (replica(None), replica(None));
    assert_eq!(call(&a, "s1", "read_file", READ).status.code(), Some(0));
    let leaked = call(&b, "s1", "share", SHARE);
    assert_eq!(leaked.status.code(), Some(0), "{}", stderr(&leaked));
}

#[test]
fn an_approval_asked_on_one_replica_is_answered_on_another_and_runs_once() {
    let pg = Pg::start();
    let url = pg.database("fleet");
    let (r1, r2, r3) = (
        replica(Some(&url)),
        replica(Some(&url)),
        replica(Some(&url)),
    );
    let (child, mut err) = spawn_call(&r2, "s1", "run", r#"{"argv":["echo","ran-once"]}"#);
    let id = pending_id(&mut err);
    // One list for the fleet: replica 3 shows what waits on replica 2.
    let listed = r3.run(&["approvals"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(stdout(&listed).contains(&id), "{}", stdout(&listed));
    let ok = r3.run(&["approve", &id]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let answered = std::time::Instant::now();
    let out = wait_with_timeout(child, Duration::from_secs(30));
    // Heard through LISTEN/NOTIFY, not found by the 2 s sweep.
    eprintln!(
        "approved on replica 3, answered on replica 2 in {:?}",
        answered.elapsed()
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["status"], "result", "{v}");
    assert!(v["content"].as_str().unwrap().contains("ran-once"), "{v}");
    // Never answered twice, from any replica.
    for r in [&r1, &r2, &r3] {
        let again = r.run(&["approve", &id]);
        assert!(!again.status.success());
        assert!(stderr(&again).contains("conflict"), "{}", stderr(&again));
    }
    // The call ran once: one `result` record for it, on the replica that held it.
    let tail = r2.run(&["audit", "tail", "-n", "1000"]);
    let results = stdout(&tail)
        .lines()
        .filter(|l| l.contains("\"result\"") || l.contains(" result "))
        .count();
    assert_eq!(results, 1, "{}", stdout(&tail));
}

#[test]
fn a_replica_cut_from_its_store_decides_nothing_and_loses_nothing() {
    let pg = Pg::start();
    let url = pg.database("fleet");
    let r1 = replica(Some(&url));
    // A kept gate, so the store goes away under a running replica.
    let mut serve = kept_after_a_read(&r1);
    pg.stop_server(false);
    // Cut: no decision, and the refusal says why.
    for (tool, args) in [
        ("read_file", READ),
        ("share", r#"{"path":"a","content":"x"}"#),
    ] {
        let out = call(&r1, "s1", tool, args);
        assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
        assert!(
            stderr(&out).contains("PostgreSQL") || stderr(&out).contains("state database"),
            "{}",
            stderr(&out)
        );
    }
    // Each refused request has its outcome in the audit: a `failed` result right after it,
    // never a request that says nothing of how it ended.
    let log = std::fs::read_to_string(r1.path("state/audit.log")).unwrap();
    let records: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for tool in ["read_file", "share"] {
        let calls: Vec<&serde_json::Value> = records
            .iter()
            .filter(|r| r["session"] == "s1" && r["tool"] == tool)
            .collect();
        let last_request = calls.iter().rposition(|r| r["event"] == "request").unwrap();
        let after = &calls[last_request + 1..];
        assert!(
            after
                .iter()
                .any(|r| r["event"] == "result" && r["outcome"] == "failed"),
            "{tool}: {calls:?}"
        );
    }
    // Back: the replica reconnects on its next call, and the taint it acknowledged before
    // the cut is there (no decision on a stale taint).
    pg.start_server();
    assert_share_refused_for_taint(&r1);
    let fine = call(&r1, "s2", "share", r#"{"path":"a","content":"x"}"#);
    assert_eq!(fine.status.code(), Some(0), "{}", stderr(&fine));
    let _ = serve.kill();
    let _ = serve.wait();
}

/// A store that holds its connections open and answers nothing (PostgreSQL paused, as
/// `docker pause` does, or wedged): the kernel still acknowledges every packet, so neither
/// the server's statement timeout nor TCP's can fire. The replica gives up within its
/// deadline and refuses, saying why — never a call held for as long as the server sleeps —
/// and once the server answers again the taint acknowledged before is there.
#[test]
fn a_replica_whose_store_is_paused_refuses_in_bounded_time() {
    let pg = Pg::start();
    let url = pg.database("fleet");
    let r1 = replica(Some(&url));
    let mut serve = kept_after_a_read(&r1);
    pg.pause();
    // Four calls at once: the replica's store is one connection, taken in turn, so the
    // three behind the first would each wait a deadline of their own without the hold-off.
    let started = std::time::Instant::now();
    let spawn = |session: &str, tool: &str, args: &str| {
        Command::new(BIN)
            .args(["call", "--config"])
            .arg(r1.config())
            .args(["--session", session, tool, args])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children = vec![
        spawn("s1", "share", SHARE),
        spawn("s2", "read_file", READ),
        spawn("s3", "read_file", READ),
        spawn("s4", "share", SHARE),
    ];
    // The deadline is 15 s (docs/spec.md §6, "Fail closed"); a hung call fails here at 60.
    let outs = std::panic::catch_unwind(move || {
        children
            .into_iter()
            .map(|c| {
                let out = wait_with_timeout(c, Duration::from_secs(60));
                (out, started.elapsed())
            })
            .collect::<Vec<_>>()
    });
    pg.resume();
    let outs = outs.unwrap_or_else(|_| panic!("a call on a paused store was still held at 60 s"));
    for (out, took) in outs {
        assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
        assert!(
            stderr(&out).contains("PostgreSQL did not answer within 15 s"),
            "{}",
            stderr(&out)
        );
        // One deadline and the time to start a process, never one deadline per call.
        assert!(took < Duration::from_secs(28), "took {took:?}");
    }
    // Past the hold-off (3 s), the store is tried again and the taint is there.
    std::thread::sleep(Duration::from_secs(4));
    assert_share_refused_for_taint(&r1);
    let _ = serve.kill();
    let _ = serve.wait();
}

#[test]
fn a_replica_that_cannot_reach_its_store_does_not_start() {
    let pg = Pg::start();
    let url = pg.database("fleet");
    pg.stop_server(true);
    let r1 = replica(Some(&url));
    let out = call(&r1, "s1", "read_file", READ);
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("could not reach the shared state database"),
        "{}",
        stderr(&out)
    );
}

/// `kill -9` of a replica with a call held on it: the client learns its call ended, the
/// taint it acknowledged before stays for the fleet, and the approval left behind is never
/// answered twice — deciding it on another replica runs nothing (no replica holds it).
#[test]
fn a_replica_killed_mid_call_loses_nothing_acknowledged_and_runs_nothing_twice() {
    let pg = Pg::start();
    let url = pg.database("fleet");
    let (r1, r2) = (replica(Some(&url)), replica(Some(&url)));
    let mut gate = Command::new(BIN)
        .args(["__gate", "--config"])
        .arg(r1.config())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    testkit::wait_for_path(&r1.path("state/agent.sock"), Duration::from_secs(30));
    let read = call(&r1, "s1", "read_file", READ);
    assert_eq!(read.status.code(), Some(0), "{}", stderr(&read));
    let (child, mut err) = spawn_call(&r1, "s1", "run", r#"{"argv":["echo","orphan"]}"#);
    let id = pending_id(&mut err);
    // SIGKILL, by the pid this test started.
    gate.kill().unwrap();
    let _ = gate.wait();
    let out = wait_with_timeout(child, Duration::from_secs(30));
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(!stdout(&out).contains("orphan"), "{}", stdout(&out));
    // The acknowledged taint: replica 2 refuses the sink.
    let leak = call(&r2, "s1", "share", SHARE);
    assert_eq!(leak.status.code(), Some(3), "{}", stderr(&leak));
    // The approval is still the fleet's to see; approving it runs nothing anywhere.
    let listed = r2.run(&["approvals"]);
    assert!(stdout(&listed).contains(&id), "{}", stdout(&listed));
    let ok = r2.run(&["approve", &id]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let again = r2.run(&["approve", &id]);
    assert!(stderr(&again).contains("conflict"), "{}", stderr(&again));
    std::thread::sleep(Duration::from_secs(3));
    // Replica 2 ran nothing (its one call was refused): no `result` record.
    let tail = r2.run(&["audit", "tail", "-n", "1000"]);
    assert!(tail.status.success(), "{}", stderr(&tail));
    assert!(!stdout(&tail).contains("\"result\""), "{}", stdout(&tail));
    assert!(stdout(&tail).contains("approval"), "{}", stdout(&tail));
}

/// What one conversation of the load run did: a confidential read on one replica, then the
/// public sink on the other.
struct Turn {
    session: String,
    /// When its read began, from the run's start.
    at: Duration,
    read: Output,
    share: Output,
}

/// A call that did not succeed says why: a denial, or the store it could not use.
fn refused_with_a_reason(out: &Output) -> bool {
    let err = stderr(out);
    out.status.code() != Some(0)
        && (err.contains("denied:") || err.contains("PostgreSQL") || err.contains("state database"))
}

/// A load run across two kept replicas (conversations in six threads, each a confidential
/// read on one replica and the public sink on the other) with PostgreSQL crashed
/// (`immediate`) and started again under it: every call either succeeds or says why; no
/// read whose content was withheld leaked it, no sink ran after its conversation's
/// acknowledged read (no decision on a stale taint), and after the restart every
/// acknowledged read's taint is there on both replicas (nothing acknowledged was lost);
/// both audit chains verify.
#[test]
fn a_load_across_two_replicas_survives_postgres_restarting_under_it() {
    let pg = Pg::start();
    let url = pg.database("fleet");
    let replicas = [replica(Some(&url)), replica(Some(&url))];
    let mut serves: Vec<Child> = replicas
        .iter()
        .map(|r| testkit::quiet_serve(BIN, r.config()))
        .collect();
    for r in &replicas {
        testkit::wait_for_path(&r.path("state/agent.sock"), Duration::from_secs(30));
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    let started = std::time::Instant::now();
    let (mut down, mut up) = (Duration::ZERO, Duration::ZERO);
    let turns: Vec<Turn> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..6)
            .map(|t| {
                let (replicas, stop, started) = (&replicas, &stop, &started);
                scope.spawn(move || {
                    let mut turns = Vec::new();
                    let mut i = 0;
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        let session = format!("load-{t}-{i}");
                        let at = started.elapsed();
                        let (a, b) = (&replicas[(t + i) % 2], &replicas[(t + i + 1) % 2]);
                        let read = call(a, &session, "read_file", READ);
                        let share = call(b, &session, "share", SHARE);
                        turns.push(Turn {
                            session,
                            at,
                            read,
                            share,
                        });
                        i += 1;
                    }
                    turns
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs(3));
        pg.stop_server(false);
        down = started.elapsed();
        std::thread::sleep(Duration::from_secs(2));
        pg.start_server();
        up = started.elapsed();
        std::thread::sleep(Duration::from_secs(4));
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let took = started.elapsed();
    let acknowledged: Vec<&Turn> = turns
        .iter()
        .filter(|t| t.read.status.code() == Some(0))
        .collect();
    let cut = turns
        .iter()
        .filter(|t| t.read.status.code() != Some(0))
        .count();
    eprintln!(
        "{} conversations ({} calls) in {took:.1?}, the store down from {down:.1?} to {up:.1?}: \
         {} reads acknowledged, {cut} refused",
        turns.len(),
        turns.len() * 2,
        acknowledged.len(),
    );
    // The run spanned the restart: reads refused while the store was down, and
    // acknowledged before and after it.
    let (before, during, after) = (
        turns.iter().filter(|t| t.at < down),
        turns
            .iter()
            .filter(|t| t.at > down && t.at + Duration::from_millis(100) < up),
        turns.iter().filter(|t| t.at > up),
    );
    assert!(before.filter(|t| t.read.status.success()).count() > 0);
    assert!(during.filter(|t| !t.read.status.success()).count() > 0);
    assert!(after.filter(|t| t.read.status.success()).count() > 0);
    for t in &turns {
        for out in [&t.read, &t.share] {
            assert!(
                out.status.code() == Some(0) || refused_with_a_reason(out),
                "{}: exit {:?} without a reason: {}",
                t.session,
                out.status.code(),
                stderr(out)
            );
        }
        // A read that was not acknowledged released nothing.
        if t.read.status.code() != Some(0) {
            assert!(!stdout(&t.read).contains("secret"), "{}", t.session);
        }
        // No sink after an acknowledged read: the other replica read the taint committed
        // before the read's answer left.
        if t.read.status.code() == Some(0) {
            assert_ne!(
                t.share.status.code(),
                Some(0),
                "{}: the sink ran after the read was answered",
                t.session
            );
        }
    }
    // After the restart every acknowledged read's taint is in the store, for both replicas.
    for t in &acknowledged {
        for r in &replicas {
            let out = call(r, &t.session, "share", SHARE);
            assert_eq!(
                out.status.code(),
                Some(3),
                "{}: {}",
                t.session,
                stderr(&out)
            );
            assert!(
                stderr(&out).contains("denied: taint_too_high"),
                "{}: {}",
                t.session,
                stderr(&out)
            );
        }
    }
    for s in &mut serves {
        let _ = s.kill();
        let _ = s.wait();
    }
    for r in &replicas {
        let v = r.run(&["audit", "verify"]);
        assert!(v.status.success(), "{}", stderr(&v));
    }
}

/// Polls `psql` until `sql` answers `want` (30 s at most).
fn wait_for_rows(pg: &Pg, db: &str, sql: &str, want: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = pg.psql(db, sql);
        if got.trim() == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{sql}: {got:?}, not {want:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One audit trail for the fleet: each replica publishes its signed checkpoints in the
/// store, `audit fleet` binds them in one fleet checkpoint kept outside the database, and
/// each replica's log is verified against its head in it. The database administrator's
/// hand — a head rolled back, hidden, or rewritten — is refused, naming the replica; a
/// replica's log cut behind the fleet's back (its own latest checkpoint removed too, so
/// nothing on the replica shows it) is found by `audit verify --fleet`.
#[test]
fn one_fleet_checkpoint_binds_every_replica_and_the_store_cannot_rewrite_a_head() {
    let pg = Pg::start();
    let url = pg.database("fleet");
    let extra = "\n[audit]\ncheckpoint_every = 2\n";
    let (r1, r2) = (
        replica_with(Some(&url), extra),
        replica_with(Some(&url), extra),
    );
    for r in [&r1, &r2] {
        for _ in 0..2 {
            let out = call(r, "s1", "read_file", READ);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        }
    }
    let heads = "SELECT count(*) FROM audit_heads";
    wait_for_rows(&pg, "fleet", heads, "2");
    let file = r1.path("fleet.checkpoints");
    let file_arg = file.to_str().unwrap();
    let gather = |r: &Lab| r.run(&["audit", "fleet", "--to", file_arg]);
    let out = gather(&r1);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("fleet checkpoint of 2 replicas"),
        "{}",
        stdout(&out)
    );
    for r in [&r1, &r2] {
        let v = r.run(&["audit", "verify", "--fleet", file_arg]);
        assert!(v.status.success(), "{}", stderr(&v));
        assert!(stdout(&v).contains("1 fleet checkpoints"), "{}", stdout(&v));
    }
    // Replica 1's head as the first fleet checkpoint has it; then it grows.
    let id1 = pg.psql(
        "fleet",
        "SELECT key_id FROM audit_heads ORDER BY tree_size DESC, key_id LIMIT 1",
    );
    let id1 = id1.trim().to_string();
    let old_line = pg.psql(
        "fleet",
        &format!("SELECT line FROM audit_heads WHERE key_id = '{id1}'"),
    );
    let grown = if r1.run(&["audit", "checkpoint"]).status.success()
        && stdout(&r1.run(&["audit", "checkpoint"])).contains(&id1)
    {
        &r1
    } else {
        &r2
    };
    let size = |id: &str| {
        pg.psql(
            "fleet",
            &format!("SELECT tree_size FROM audit_heads WHERE key_id = '{id}'"),
        )
        .trim()
        .parse::<u64>()
        .unwrap()
    };
    let before = size(&id1);
    for _ in 0..3 {
        assert_eq!(call(grown, "s2", "read_file", READ).status.code(), Some(0));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while size(&id1) <= before {
        assert!(
            std::time::Instant::now() < deadline,
            "no new head published"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = gather(&r2);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The administrator hands back the older head: refused, and the file is untouched.
    let lines = |f: &std::path::Path| std::fs::read_to_string(f).unwrap().lines().count();
    assert_eq!(lines(&file), 2);
    let sql_text = |t: &str| t.trim().replace('\'', "''");
    pg.psql(
        "fleet",
        &format!(
            "UPDATE audit_heads SET line = '{}', tree_size = {before} WHERE key_id = '{id1}'",
            sql_text(&old_line)
        ),
    );
    let out = gather(&r1);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!("replica {id1}"))
            && stderr(&out).contains("store was changed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(lines(&file), 2);
    // A head rewritten in place (its size raised): its signature fails.
    pg.psql(
        "fleet",
        &format!(
            "UPDATE audit_heads SET line = replace(line, '\"tree_size\":{before},',              '\"tree_size\":999,') WHERE key_id = '{id1}'"
        ),
    );
    let out = gather(&r1);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("not one its key signed"),
        "{}",
        stderr(&out)
    );
    // A replica hidden.
    pg.psql(
        "fleet",
        &format!("DELETE FROM audit_heads WHERE key_id = '{id1}'"),
    );
    let out = gather(&r1);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("not in the store"),
        "{}",
        stderr(&out)
    );
    assert_eq!(lines(&file), 2);
    // The other replica's log cut behind the fleet's back, with its latest checkpoint: on
    // its own it still verifies (its chain holds); against the fleet it does not.
    let other = if std::ptr::eq(grown, &r1) { &r2 } else { &r1 };
    let log = other.path("state/audit.log");
    let text = std::fs::read_to_string(&log).unwrap();
    let kept: String = text.lines().take(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, kept).unwrap();
    let _ = std::fs::remove_file(other.path("state/audit.checkpoint"));
    let alone = other.run(&["audit", "verify"]);
    assert!(alone.status.success(), "{}", stderr(&alone));
    let fleet = other.run(&["audit", "verify", "--fleet", file_arg]);
    assert!(!fleet.status.success(), "{}", stdout(&fleet));
}
