//! Runner events into the audit log (docs/spec.md §2.5, §6): every `egress` record a runner
//! reports — a box's connection through the egress proxy refused, failed, opened or closed —
//! becomes an `egress` audit record; a `floated` report — a box read above what its session
//! held, a higher class or untrusted data — raises the session's taint (both parts) and is
//! audited with it, before the link reads on.
//!
//! The link's reader delivers them ([`crate::link::EventSink`]); it also delivers every
//! call's answer, so it only queues them here. A thread of their own writes them in batches
//! (one `write` and one `fdatasync` for all that queued during the previous sync). The
//! queue is bounded: a runner that reports faster than the log syncs waits on it, so no
//! record is dropped and a flood slows the box that made it.

use std::sync::{Arc, Mutex, PoisonError, Weak, mpsc};

use policy::Label;
use proto::run::{BoxKind, EgressRecord};
use proto::{CallId, SessionId};

use super::{Durable, Gate};
use crate::audit::Event;
use crate::link::RunnerEvents;
use crate::store::TaintRaise;

/// Records waiting to be written; past this the runner's reports wait.
const QUEUE: usize = 16_384;
/// The most records one batch writes.
const BATCH: usize = 1024;

/// The gate's receiver of runner events.
struct Events {
    tx: Mutex<mpsc::SyncSender<EgressRecord>>,
    gate: Weak<Gate>,
}

impl RunnerEvents for Events {
    fn floated(&self, session: SessionId, tool: String, call: Option<CallId>, label: Label) {
        let Some(gate) = self.gate.upgrade() else {
            return;
        };
        let now = gate.now();
        let class = label.class;
        let committed = gate.make_durable(Durable {
            raise: Some(TaintRaise {
                session: session.clone(),
                class,
                untrusted: label.untrusted,
            }),
            events: vec![(
                now,
                Event::Floated {
                    session,
                    call,
                    tool,
                    class,
                    untrusted: label.untrusted,
                },
            )],
            sightings: None,
            defer_sync: false,
        });
        if let Err(e) = committed {
            // The call's own commit, next, meets the same store and is withheld.
            eprintln!(
                "boxmaker: cannot record that a box's label floated to {label}: {}",
                e.into_gate()
            );
        }
    }

    fn moved(
        &self,
        session: SessionId,
        tool: String,
        call: Option<CallId>,
        path: String,
        to: String,
    ) {
        let Some(gate) = self.gate.upgrade() else {
            return;
        };
        let now = gate.now();
        let recorded = gate.make_durable(Durable {
            raise: None,
            events: vec![(
                now,
                Event::KeptMoved {
                    session,
                    call,
                    tool,
                    path: path.clone(),
                    to,
                },
            )],
            sightings: None,
            defer_sync: false,
        });
        if let Err(e) = recorded {
            eprintln!(
                "boxmaker: cannot record that {path}, made by a box, was moved aside: {}",
                e.into_gate()
            );
        }
    }

    fn boxed(&self, session: SessionId, call: Option<CallId>, kind: BoxKind, micros: u64) {
        if let Some(t) = self
            .gate
            .upgrade()
            .as_ref()
            .and_then(|g| g.telemetry().cloned())
        {
            t.boxed(&session, call, kind, micros);
        }
    }

    fn egress(&self, record: EgressRecord) {
        // Into the call's trace now, while the call is open (the log's writer is behind).
        if let Some(t) = self
            .gate
            .upgrade()
            .as_ref()
            .and_then(|g| g.telemetry().cloned())
        {
            t.egress(&record);
        }
        let tx = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        // The writer ends only with the gate; a record sent after that has no log to go to.
        let _ = tx.send(record);
    }
}

impl Gate {
    /// A receiver for the runner's events, to hand to the links' sink
    /// ([`crate::link::EventSink::set`]). Its writer thread holds the gate weakly and ends
    /// with it.
    pub fn runner_events(self: &Arc<Self>) -> Arc<dyn RunnerEvents> {
        let (tx, rx) = mpsc::sync_channel::<EgressRecord>(QUEUE);
        let gate = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("gate-egress".into())
            .spawn(move || write_events(&gate, &rx));
        if let Err(e) = spawned {
            eprintln!("boxmaker: cannot start the egress audit thread: {e}");
        }
        Arc::new(Events {
            tx: Mutex::new(tx),
            gate: Arc::downgrade(self),
        })
    }
}

fn write_events(gate: &Weak<Gate>, rx: &mpsc::Receiver<EgressRecord>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let Some(gate) = gate.upgrade() else { return };
        let now = gate.now();
        let events = batch.into_iter().map(|r| (now, Event::egress(r)));
        let written = gate.append_audit(events);
        if let Err(e) = written {
            eprintln!("boxmaker: cannot audit egress records: {e}");
        }
    }
}
