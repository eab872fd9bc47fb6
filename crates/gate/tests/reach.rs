#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! docs/spec.md §3.2, §3.3 step 4 and §3.5 at the gate: a call that runs code boxmaker does
//! not control is decided at `max(taint, reach)`, its reach is committed into the taint
//! before the runner gets it, every failure of it carries its reach, and a reset clears the
//! runner's memory of the session before the taint, or not at all.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use gate::ToolRunner;
use gate::link::Cleared;
use policy::Taint;
use proto::control::{ControlAnswer, ControlErrorCode, ControlOp};
use proto::{DataClass, DenyReason, SessionId, ToolRequest, ToolResponse};

const REACH: &str = r#"
[gate]
state = "state"
approval_ttl = 60

[[mount]]
name = "vault"
host = "/nonexistent-vault"
at = "/data/vault"
class = "secret"

[[mount]]
name = "pub"
host = "/nonexistent-pub"
at = "/data/pub"
class = "public"

[[tool]]
name = "run"
builtin = "run"

[[tool]]
name = "post"
builtin = "run"
network = true
mounts = ["pub"]

[[tool]]
name = "leaky"
builtin = "run"
network = true

[[tool]]
name = "read"
builtin = "read_file"
class = "internal"

[[tool]]
name = "srv"
mcp = ["srv"]
mounts = ["vault"]

[[grant]]
tool = "run"
effect = "allow"

[[grant]]
tool = "read"
effect = "allow"

[[grant]]
tool = "srv_*"
effect = "ask"

[[grant]]
tool = "leaky"
effect = "allow"
max_class = "public"

[[grant]]
tool = "post"
effect = "allow"
max_class = "public"
"#;

/// (store's taint, taint the gate sent) at each call the runner was asked to run.
type Seen = Arc<Mutex<Vec<(DataClass, DataClass)>>>;

/// A runner that records the store's taint of the session at the moment it is asked, and
/// the taint the gate sent, then answers as `answer` says.
struct Recording {
    state: std::path::PathBuf,
    seen: Seen,
    answer: fn() -> ToolResponse,
    reset: Result<Cleared, String>,
}

impl ToolRunner for Recording {
    // No call here names a file: the gate's file binding is tested in bound_files.rs.
    fn digest(&self, _req: &ToolRequest) -> Result<Vec<proto::run::FileDigest>, String> {
        Ok(Vec::new())
    }

    fn run_approved(
        &self,
        req: &ToolRequest,
        taint: Taint,
        _files: &[proto::run::FileDigest],
    ) -> ToolResponse {
        let stored = gate::store::Store::open(&self.state)
            .unwrap()
            .taint(&req.session)
            .unwrap()
            .class;
        self.seen.lock().unwrap().push((stored, taint.class()));
        (self.answer)()
    }

    fn reset(&self, _session: &SessionId) -> Result<Cleared, String> {
        self.reset.clone()
    }
}

fn ok() -> ToolResponse {
    ToolResponse::Result {
        content: "done".into(),
        class: DataClass::Public,
        untrusted: false,
        truncated: false,
    }
}

fn broke() -> ToolResponse {
    ToolResponse::Failed {
        message: "timed out after 1 s".into(),
    }
}

/// A gate on `REACH` whose runner is a [`Recording`] looking at the gate's own store.
fn gate_with(answer: fn() -> ToolResponse, reset: Result<Cleared, String>) -> (H, Seen) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(T0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let gate = start_gate(
        dir.path(),
        REACH,
        &clock,
        Box::new(Recording {
            state: state.clone(),
            seen: seen.clone(),
            answer,
            reset,
        }),
    );
    (
        H {
            dir,
            clock,
            gate,
            state,
        },
        seen,
    )
}

#[test]
fn test_a_call_of_foreign_code_commits_its_reach_before_it_runs() {
    let (h, seen) = gate_with(ok, Ok(Cleared::default()));
    let r = h.call("s1", 1, "run", r#"{"argv":["true"]}"#);
    assert_eq!(r, ok());
    // When the runner was asked, the store already said secret, and so did the gate.
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(DataClass::Secret, DataClass::Secret)]
    );
    assert_eq!(h.taint("s1"), (DataClass::Secret, false));
    assert!(h.audit_text().contains("\"reach\":\"secret\""));
}

#[test]
fn test_step_4_decides_at_max_taint_and_reach() {
    let (h, seen) = gate_with(ok, Ok(Cleared::default()));
    // A clean session, but the box could read the vault and reach the network.
    assert_eq!(
        h.call("s1", 1, "leaky", r#"{"argv":["true"]}"#),
        ToolResponse::Denied {
            reason: DenyReason::TaintTooHigh
        }
    );
    assert!(seen.lock().unwrap().is_empty(), "nothing ran");
    assert_eq!(
        h.taint("s1"),
        (DataClass::Public, false),
        "a denial raises nothing"
    );
    // Scoped to the public mount, the same way out is allowed.
    assert_eq!(h.call("s1", 2, "post", r#"{"argv":["true"]}"#), ok());
}

#[test]
fn test_every_failure_of_foreign_code_carries_its_reach() {
    let (h, _) = gate_with(broke, Ok(Cleared::default()));
    let r = h.call("s1", 1, "run", r#"{"argv":["sh","-c","sleep 9"]}"#);
    assert!(matches!(r, ToolResponse::Failed { .. }), "{r:?}");
    assert_eq!(h.taint("s1"), (DataClass::Secret, false));
    // The file tool's failure carries its own class only.
    let r = h.call("s2", 1, "read", r#"{"path":"/data/vault/x"}"#);
    assert!(matches!(r, ToolResponse::Failed { .. }), "{r:?}");
    assert_eq!(h.taint("s2"), (DataClass::Internal, false));
}

#[test]
fn test_an_approved_call_commits_its_reach_when_it_runs() {
    let (h, seen) = gate_with(ok, Ok(Cleared::default()));
    let (ap, _, held) = h.call_held("s1", 1, "srv_read", "{}");
    // Asking raised nothing: the call has not run.
    assert_eq!(h.taint("s1"), (DataClass::Public, false));
    h.control(ControlOp::Approve { approval: ap });
    assert_eq!(held.join().unwrap(), ok());
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(DataClass::Secret, DataClass::Secret)]
    );
}

#[test]
fn test_a_reset_clears_the_runner_first_or_not_at_all() {
    let (h, _) = gate_with(ok, Err("the workspace is busy".into()));
    h.call("s1", 1, "run", r#"{"argv":["true"]}"#);
    match h.control(ControlOp::ResetSession { session: sid("s1") }) {
        ControlAnswer::Error { code, detail } => {
            assert_eq!(code, ControlErrorCode::Internal);
            assert!(detail.contains("the workspace is busy"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.taint("s1"), (DataClass::Secret, false), "the taint stays");
    assert!(!h.events().contains(&"session_reset".to_string()));

    let (h, _) = gate_with(
        ok,
        Ok(Cleared {
            servers: 2,
            workspace: true,
        }),
    );
    h.call("s1", 1, "run", r#"{"argv":["true"]}"#);
    assert!(matches!(
        h.control(ControlOp::ResetSession { session: sid("s1") }),
        ControlAnswer::Session { .. }
    ));
    assert_eq!(h.taint("s1"), (DataClass::Public, false));
    let text = h.audit_text();
    assert!(
        text.contains("\"servers_stopped\":2,\"workspace_emptied\":true"),
        "{text}"
    );
}

/// (store's untrusted bit, the untrusted bit the gate sent) at each call.
type Bits = Arc<Mutex<Vec<(bool, bool)>>>;

struct RecordingBits {
    state: std::path::PathBuf,
    seen: Bits,
}

impl ToolRunner for RecordingBits {
    fn digest(&self, _req: &ToolRequest) -> Result<Vec<proto::run::FileDigest>, String> {
        Ok(Vec::new())
    }

    fn run_approved(
        &self,
        req: &ToolRequest,
        taint: Taint,
        _files: &[proto::run::FileDigest],
    ) -> ToolResponse {
        let stored = gate::store::Store::open(&self.state)
            .unwrap()
            .taint(&req.session)
            .unwrap()
            .untrusted;
        self.seen.lock().unwrap().push((stored, taint.untrusted()));
        ToolResponse::Result {
            content: "filed".into(),
            class: DataClass::Public,
            untrusted: req.tool.starts_with("mail_"),
            truncated: false,
        }
    }

    fn reset(&self, _session: &SessionId) -> Result<Cleared, String> {
        Ok(Cleared::default())
    }
}

/// Issue 30: a call of code boxmaker does not control whose own label is untrusted (an
/// untrusted server) can write the session's workspace before it answers; a `read_file`
/// of the session running meanwhile reads that file at the session's floor. So the
/// untrusted bit, like the reach's class, is committed into the taint and sent with the
/// call before its box starts — while the call itself is decided at the taint as it was.
#[test]
fn test_an_untrusted_servers_call_commits_the_untrusted_bit_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(T0));
    let seen: Bits = Arc::default();
    let gate = start_gate(
        dir.path(),
        r#"
[gate]
state = "state"

[[tool]]
name = "mail"
mcp = ["mail"]
untrusted = true

[[tool]]
name = "bank"
mcp = ["bank"]

[[grant]]
tool = "*"
effect = "allow"
if_untrusted = "deny"
"#,
        &clock,
        Box::new(RecordingBits {
            state: state.clone(),
            seen: seen.clone(),
        }),
    );
    let h = H {
        dir,
        clock,
        gate,
        state,
    };
    // A trusted server in a clean session: nothing committed, nothing sent.
    assert!(matches!(
        h.call("s1", 1, "bank_history", "{}"),
        ToolResponse::Result { .. }
    ));
    // The untrusted server's call is decided at the clean taint (a grant that denies an
    // untrusted session lets it run) and runs in an untrusted one.
    assert!(matches!(
        h.call("s1", 2, "mail_file", "{}"),
        ToolResponse::Result { .. }
    ));
    assert_eq!(*seen.lock().unwrap(), vec![(false, false), (true, true)]);
    assert_eq!(h.taint("s1"), (DataClass::Public, true));
}
