#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Group commit on the call path: concurrent calls share their taint commits and audit
//! syncs, and still **no answer is released before its own taint commit and its own audit
//! record**. The test's `Reply` checks, at the instant the gate hands it an answer, that a
//! second handle on the database (as another process would open it) already sees the
//! session's raised taint, and that the audit log already holds the call's `result` record.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use gate::Reply;
use gate::store::Store;
use proto::{DataClass, ToolResponse};

struct Checker {
    store: Arc<Mutex<Store>>,
    audit: std::path::PathBuf,
    session: String,
    call: u64,
    done: std::sync::mpsc::Sender<Result<(), String>>,
}

impl Reply for Checker {
    fn progress(&mut self, resp: ToolResponse) {
        let _ = self.done.send(Err(format!("unexpected progress {resp:?}")));
    }

    fn finish(self: Box<Self>, resp: ToolResponse) {
        let verdict = (|| {
            if !matches!(resp, ToolResponse::Result { .. }) {
                return Err(format!("expected a result, got {resp:?}"));
            }
            let taint = self
                .store
                .lock()
                .unwrap()
                .taint(&sid(&self.session))
                .unwrap();
            if taint.class != DataClass::Confidential {
                return Err(format!(
                    "{} call {}: the answer was released before its taint commit ({:?})",
                    self.session, self.call, taint.class
                ));
            }
            let log = std::fs::read_to_string(&self.audit).unwrap();
            let needle = format!(
                "\"event\":\"result\",\"session\":\"{}\",\"call\":{},",
                self.session, self.call
            );
            if !log.contains(&needle) {
                return Err(format!(
                    "{} call {}: the answer was released before its result record",
                    self.session, self.call
                ));
            }
            Ok(())
        })();
        let _ = self.done.send(verdict);
    }
}

#[test]
fn test_group_commit_releases_no_answer_before_its_commit() {
    let h = H::with_runner(Box::new(FakeRunner { hook: None }));
    let store = Arc::new(Mutex::new(h.store()));
    let audit = h.state.join("audit.log");
    let (tx, rx) = std::sync::mpsc::channel();
    let threads: Vec<_> = (0..32)
        .map(|t| {
            let (gate, store, audit, tx) = (
                Arc::clone(&h.gate),
                store.clone(),
                audit.clone(),
                tx.clone(),
            );
            std::thread::spawn(move || {
                for i in 0..20u64 {
                    // A fresh session per call, so its taint is raised by this call alone.
                    let session = format!("t{t}-c{i}");
                    gate.submit(
                        req(&session, i + 1, "read", r#"{"path":"class=confidential"}"#),
                        Box::new(Checker {
                            store: store.clone(),
                            audit: audit.clone(),
                            session,
                            call: i + 1,
                            done: tx.clone(),
                        }),
                    );
                }
            })
        })
        .collect();
    drop(tx);
    for t in threads {
        t.join().unwrap();
    }
    let verdicts: Vec<Result<(), String>> = rx.iter().collect();
    assert_eq!(verdicts.len(), 32 * 20, "every call answered once");
    for v in verdicts {
        v.unwrap();
    }
    // Every call's three records are in the log (and, past 1000 records, the anchor's
    // checkpoint), and the chain verifies.
    let events = h.events();
    let (anchor, calls): (Vec<_>, Vec<_>) = events.iter().partition(|e| *e == "checkpoint");
    assert_eq!(calls.len(), 32 * 20 * 3);
    assert_eq!(anchor.len(), 1, "one checkpoint per 1000 records");
    gate::audit::verify(&audit).unwrap();
    // Shared syncs: fewer audit batches than calls would show as records with one
    // fdatasync each; here it is enough that the order per call holds.
    let text = h.audit_text();
    for t in 0..32 {
        for i in 0..20u64 {
            let s = format!("\"session\":\"t{t}-c{i}\",\"call\":{},", i + 1);
            let pos = |ev: &str| {
                text.find(&format!("\"event\":\"{ev}\",{s}"))
                    .unwrap_or_else(|| panic!("no {ev} for {s}"))
            };
            assert!(pos("request") < pos("decision"));
            assert!(pos("decision") < pos("result"));
        }
    }
}
