#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! What an approval binds (issue 19 item 6, docs/spec.md §3.3 step 6): the gate asks the
//! runner what a call that asks would run, shows it with the approval, binds the approval to
//! it, and hands the runner the digests the person approved. Here the runner is a fake over
//! an in-memory `/work` the test rewrites, as an agent would; the real runner and real
//! boxes are crates/boxmaker/tests/approval_files.rs.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use gate::ToolRunner;
use gate::link::Cleared;
use policy::Taint;
use proto::control::{
    ApprovalInfo, Choice, ControlAnswer, ControlErrorCode, ControlOp, DecidedVia,
};
use proto::run::{FileDigest, FileKind};
use proto::{DenyReason, SessionId, ToolRequest, ToolResponse};
use sha2::Digest as _;

/// A runner over a `/work` held in memory: a digest names each argument under `/work/`
/// (a file and its SHA-256, or absent; `link` entries are symlinks, never bound); a run
/// records the digests it was handed.
#[derive(Default)]
struct Disk {
    files: Mutex<HashMap<String, String>>,
    links: Mutex<Vec<String>>,
    ran: Mutex<Vec<Vec<FileDigest>>>,
    broken: AtomicBool,
}

impl Disk {
    fn write(&self, path: &str, content: &str) {
        self.files
            .lock()
            .unwrap()
            .insert(path.into(), content.into());
    }

    fn last_run(&self) -> Vec<FileDigest> {
        self.ran.lock().unwrap().last().cloned().unwrap()
    }
}

fn sha(text: &str) -> String {
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl ToolRunner for Disk {
    fn run_approved(&self, req: &ToolRequest, _taint: Taint, files: &[FileDigest]) -> ToolResponse {
        self.ran.lock().unwrap().push(files.to_vec());
        ToolResponse::Result {
            content: format!("ran {}", req.arguments),
            class: proto::DataClass::Public,
            untrusted: false,
            truncated: false,
        }
    }

    fn digest(&self, req: &ToolRequest) -> Result<Vec<FileDigest>, String> {
        if self.broken.load(Ordering::SeqCst) {
            return Err("the runner is restarting".into());
        }
        let v: serde_json::Value = serde_json::from_str(&req.arguments).unwrap();
        let files = self.files.lock().unwrap();
        let links = self.links.lock().unwrap();
        let mut out = Vec::new();
        for (i, a) in v["argv"].as_array().unwrap().iter().enumerate() {
            let a = a.as_str().unwrap();
            if !a.starts_with("/work/") {
                continue;
            }
            let content = files.get(a);
            let kind = if links.iter().any(|l| l == a) {
                FileKind::Unbound
            } else if content.is_some() {
                FileKind::File
            } else {
                FileKind::Absent
            };
            out.push(FileDigest {
                path: a.into(),
                arg: u32::try_from(i).unwrap(),
                kind,
                sha256: (kind == FileKind::File).then(|| sha(content.unwrap())),
                size: (kind == FileKind::File).then(|| content.unwrap().len() as u64),
                note: (kind == FileKind::Unbound).then(|| format!("{a} is a symlink")),
                pinned: out.is_empty() && kind == FileKind::File,
                was: None,
            });
        }
        Ok(out)
    }

    fn reset(&self, _session: &SessionId) -> Result<Cleared, String> {
        Ok(Cleared::default())
    }
}

const SCRIPT: &str = r#"{"argv":["sh","/work/s.sh"]}"#;

fn gate() -> (H, Arc<Disk>) {
    let disk = Arc::new(Disk::default());
    let h = H::with_config(CONFIG, Box::new(Arc::clone(&disk)));
    (h, disk)
}

fn decide(h: &H, approval: &str, choice: Choice, secs: Option<u64>) -> ControlAnswer {
    h.control(ControlOp::DecideApproval {
        approval: approval.into(),
        choice,
        remember_seconds: secs,
        reason: None,
        shown: None,
        via: DecidedVia::Cli,
        by: "a test".into(),
    })
}

/// The pending approval `id` as the operator lists it.
fn listed(h: &H, id: &str) -> ApprovalInfo {
    match h.control(ControlOp::ListApprovals { all: true }) {
        ControlAnswer::Approvals { items } => items.into_iter().find(|a| a.id == id).unwrap(),
        other => panic!("{other:?}"),
    }
}

fn ran(resp: ToolResponse) {
    assert!(matches!(resp, ToolResponse::Result { .. }), "{resp:?}");
}

#[test]
fn a_remembered_approval_answers_only_while_the_script_is_what_the_person_saw() {
    let (h, disk) = gate();
    disk.write("/work/s.sh", "echo harmless\n");
    let (ap, _, call) = h.call_held("s1", 1, "run", SCRIPT);
    let shown = listed(&h, &ap);
    assert_eq!(shown.files.len(), 1);
    assert_eq!(
        shown.files[0].sha256.as_deref(),
        Some(sha("echo harmless\n").as_str())
    );
    assert!(matches!(
        decide(&h, &ap, Choice::ApproveForSession, Some(600)),
        ControlAnswer::Decided { .. }
    ));
    ran(call.join().unwrap());
    // The approved call ran with the files the person saw, for the runner to check and pin.
    assert_eq!(disk.last_run(), shown.files);
    // Unchanged: the remembered approval answers, and hands the runner what it bound.
    ran(h.call("s1", 2, "run", SCRIPT));
    assert_eq!(disk.last_run()[0].sha256, shown.files[0].sha256);
    // The agent rewrites the script: same text, another call. It asks, shown the change.
    disk.write("/work/s.sh", "echo EVIL\n");
    let (ap2, _, call) = h.call_held("s1", 3, "run", SCRIPT);
    let again = listed(&h, &ap2);
    let f = &again.files[0];
    assert_eq!(f.sha256.as_deref(), Some(sha("echo EVIL\n").as_str()));
    assert_eq!(f.was, Some(format!("sha256:{}", sha("echo harmless\n"))));
    decide(&h, &ap2, Choice::Refuse, None);
    assert!(matches!(
        call.join().unwrap(),
        ToolResponse::Denied {
            reason: DenyReason::ApprovalRefused
        }
    ));
    // A file that appears where the person saw nothing is a change too.
    disk.write("/work/s.sh", "echo harmless\n");
    let with_arg = r#"{"argv":["sh","/work/s.sh","/work/x"]}"#;
    let (ap3, _, call) = h.call_held("s1", 4, "run", with_arg);
    decide(&h, &ap3, Choice::ApproveForSession, Some(600));
    ran(call.join().unwrap());
    disk.write("/work/x", "surprise");
    let (ap4, _, call) = h.call_held("s1", 5, "run", with_arg);
    let shown = listed(&h, &ap4);
    assert_eq!(shown.files[1].was.as_deref(), Some("absent"));
    assert_eq!(shown.files[0].was, None, "s.sh did not change");
    decide(&h, &ap4, Choice::Refuse, None);
    call.join().unwrap();
}

#[test]
fn a_once_approval_hands_the_runner_what_was_shown_not_what_is_there_later() {
    let (h, disk) = gate();
    disk.write("/work/s.sh", "echo harmless\n");
    let (ap, _, call) = h.call_held("s1", 1, "run", SCRIPT);
    let shown = listed(&h, &ap);
    disk.write("/work/s.sh", "echo EVIL\n");
    decide(&h, &ap, Choice::ApproveOnce, None);
    ran(call.join().unwrap());
    // The runner is told to run only the content that was shown (it refuses otherwise).
    assert_eq!(disk.last_run(), shown.files);
    assert_eq!(
        disk.last_run()[0].sha256.as_deref(),
        Some(sha("echo harmless\n").as_str())
    );
    // An allowed call, no person involved, binds nothing.
    ran(h.call("s1", 2, "read", r#"{"path":"/work/s.sh"}"#));
    assert!(disk.last_run().is_empty());
}

#[test]
fn what_cannot_be_bound_is_shown_and_never_remembered() {
    let (h, disk) = gate();
    disk.write("/work/s.sh", "echo harmless\n");
    disk.links.lock().unwrap().push("/work/s.sh".into());
    let (ap, _, call) = h.call_held("s1", 1, "run", SCRIPT);
    assert_eq!(listed(&h, &ap).files[0].kind, FileKind::Unbound);
    match decide(&h, &ap, Choice::ApproveForSession, Some(600)) {
        ControlAnswer::Error { code, detail } => {
            assert_eq!(code, ControlErrorCode::Conflict);
            assert!(detail.contains("/work/s.sh is a symlink"), "{detail}");
            assert!(detail.contains("Approve it once"), "{detail}");
        }
        other => panic!("a symlinked script was remembered: {other:?}"),
    }
    // Nothing was decided: it can still be approved once.
    assert!(matches!(
        decide(&h, &ap, Choice::ApproveOnce, None),
        ControlAnswer::Decided { .. }
    ));
    ran(call.join().unwrap());
    // And the same call asks again.
    let (ap2, _, call) = h.call_held("s1", 2, "run", SCRIPT);
    decide(&h, &ap2, Choice::Refuse, None);
    call.join().unwrap();

    // A runner that cannot look: the approval says so, and covers nothing for later.
    disk.links.lock().unwrap().clear();
    disk.broken.store(true, Ordering::SeqCst);
    let (ap3, _, call) = h.call_held("s1", 3, "run", SCRIPT);
    let f = &listed(&h, &ap3).files[0];
    assert_eq!(f.kind, FileKind::Unbound);
    assert!(
        f.note
            .as_deref()
            .unwrap()
            .contains("the runner is restarting"),
        "{f:?}"
    );
    assert!(matches!(
        decide(&h, &ap3, Choice::ApproveForSession, Some(600)),
        ControlAnswer::Error {
            code: ControlErrorCode::Conflict,
            ..
        }
    ));
    decide(&h, &ap3, Choice::Refuse, None);
    call.join().unwrap();
}

#[test]
fn the_files_are_part_of_what_a_person_decides_on_and_of_the_audit() {
    let (h, disk) = gate();
    disk.write("/work/s.sh", "echo harmless\n");
    let (ap, _, call) = h.call_held("s1", 1, "run", SCRIPT);
    let row = h.store().approval(&ap).unwrap().unwrap();
    let with = gate::gate::call_sha256(&row);
    let mut without = row.clone();
    without.files.clear();
    assert_ne!(with, gate::gate::call_sha256(&without));
    decide(&h, &ap, Choice::Refuse, None);
    call.join().unwrap();
    let asked = h
        .audit_text()
        .lines()
        .find(|l| l.contains(r#""event":"approval_asked""#))
        .unwrap()
        .to_string();
    let files = serde_json::to_vec(&row.files).unwrap();
    assert!(
        asked.contains(&format!(
            r#""files_sha256":"{}""#,
            gate::audit::sha256_hex(&files)
        )),
        "{asked}"
    );
    // A call that names no file is audited as before: no `files_sha256`.
    let (ap, _, call) = h.call_held("s1", 2, "run", r#"{"argv":["true"]}"#);
    decide(&h, &ap, Choice::Refuse, None);
    call.join().unwrap();
    let last = h
        .audit_text()
        .lines()
        .rfind(|l| l.contains(r#""event":"approval_asked""#))
        .unwrap()
        .to_string();
    assert!(!last.contains("files_sha256"), "{last}");
}
