//! The gate's telemetry (docs/spec.md §8): one record per call, from its request to its final
//! answer, handed to an exporter process over a pipe. The gate opens no network: the
//! process that holds the OTLP connection is `boxmaker __telemetry`, which the gate's host
//! starts only when the standard `OTEL_*` variables ask for an export.
//!
//! **Where the facts come from.** The points the call path already audits: every audit write
//! of the gate passes [`Calls::observe`] after it is durable, and each record there names
//! its session and call. Only labels are taken from it — the decision, its reason, the
//! grant, the taint, the approval's outcome and where it was decided, the result's label —
//! through the one allowlist in [`Calls::observe`]; a record's arguments, digests, notes,
//! provenance values and the person's name are never read. The runner's `boxed` events and
//! `egress` records, and the gate's own timing of the runner, add the rest.
//!
//! **Must never:** block a call (records go through a bounded queue to a writer thread; a
//! full queue drops the record and counts it), hold more than [`MAX_OPEN`] calls open, or
//! carry a value the audit log withholds. A call's span is sent when its final answer
//! goes out, on whatever path that is ([`Calls::finish`], from the reply).

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{SystemTime, UNIX_EPOCH};

use proto::run::{BoxKind, EgressOutcome, EgressRecord};
use proto::telemetry::{
    ApprovalEnd, ApprovalSpan, BoxSpan, CallStatus, CallTrace, EgressEvent, Interval, Item, Taint,
    TelemetryRecord, TraceParent, Verdict, write_record,
};
use proto::{CallId, DenyReason, SessionId, Timestamp, ToolRequest, ToolResponse};

use crate::audit::{self, Event};

/// Calls held open at once; past this a new call is not traced (it still runs).
pub const MAX_OPEN: usize = 65_536;
/// Records waiting for the writer; past this they are dropped.
const QUEUE: usize = 4096;
/// Box starts and egress events kept per call.
const MAX_CHILDREN: usize = 64;

/// Nanoseconds since the Unix epoch, now.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The calls this gate is tracing, and the queue to its exporter.
#[derive(Debug)]
pub struct Calls {
    open: Mutex<HashMap<(SessionId, CallId), Open>>,
    tx: mpsc::SyncSender<Item>,
    /// Records dropped because the exporter fell behind (or is gone).
    dropped: AtomicU64,
}

#[derive(Debug)]
struct Open {
    trace: CallTrace,
    runner_start: Option<u64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Calls {
    /// Traces calls into `out` (the exporter's stdin), written by a thread of its own that
    /// ends when `out` fails or the last sender is dropped.
    pub fn start(mut out: Box<dyn Write + Send>) -> std::io::Result<Calls> {
        let (tx, rx) = mpsc::sync_channel::<Item>(QUEUE);
        std::thread::Builder::new()
            .name("gate-telemetry".into())
            .spawn(move || {
                for item in rx {
                    if write_record(&mut out, &TelemetryRecord::new(item)).is_err() {
                        // The exporter is gone: nothing more is sent (the gate runs on).
                        return;
                    }
                }
            })?;
        Ok(Calls::with_sender(tx))
    }

    /// Traces calls into `tx` (tests read the records from its receiver).
    pub fn with_sender(tx: mpsc::SyncSender<Item>) -> Calls {
        Calls {
            open: Mutex::new(HashMap::new()),
            tx,
            dropped: AtomicU64::new(0),
        }
    }

    /// How many records were dropped because the exporter fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn send(&self, item: Item) {
        if self.tx.try_send(item).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A call arrived, with the client's trace context if it sent a valid one.
    /// `tool` is the request's tool name when the gate knows the tool, else `None`.
    pub fn begin(&self, req: &ToolRequest, tool: Option<String>, traceparent: Option<TraceParent>) {
        let mut open = lock(&self.open);
        let key = (req.session.clone(), req.call);
        if open.len() >= MAX_OPEN && !open.contains_key(&key) {
            return;
        }
        let trace = CallTrace {
            traceparent: traceparent.map(|t| t.to_string()),
            session: req.session.clone(),
            call: req.call,
            tool,
            start_ns: now_ns(),
            end_ns: 0,
            decision: None,
            reason: None,
            grant: None,
            reach: None,
            before: None,
            after: None,
            status: CallStatus::Failed,
            cap: None,
            approval: None,
            runner: None,
            boxes: Vec::new(),
            egress: Vec::new(),
        };
        open.insert(
            key,
            Open {
                trace,
                runner_start: None,
            },
        );
    }

    /// The call's final answer went out: its record is sent.
    pub fn finish(&self, session: &SessionId, call: CallId, resp: &ToolResponse) {
        let Some(mut o) = lock(&self.open).remove(&(session.clone(), call)) else {
            return;
        };
        let now = now_ns();
        o.trace.end_ns = now;
        o.trace.status = match resp {
            ToolResponse::Result { .. } => CallStatus::Result,
            ToolResponse::Denied { .. } => CallStatus::Denied,
            ToolResponse::Failed { .. } | ToolResponse::PendingApproval { .. } => {
                CallStatus::Failed
            }
        };
        if let ToolResponse::Denied { reason } = resp {
            o.trace.reason = Some(*reason);
        }
        // A wait this gate did not see end (decided where no record reached this gate):
        // it ends with the call, and the answer says how.
        if let Some(a) = o.trace.approval.as_mut().filter(|a| a.end_ns == 0) {
            a.end_ns = now;
            a.outcome = match resp {
                ToolResponse::Denied {
                    reason: DenyReason::ApprovalExpired,
                } => ApprovalEnd::Expired,
                ToolResponse::Denied { .. } => ApprovalEnd::Refused,
                _ => ApprovalEnd::Approved,
            };
            self.pending_changed(&lock(&self.open));
        }
        if let (Some(start), None) = (o.runner_start, o.trace.runner) {
            o.trace.runner = Some(Interval {
                start_ns: start,
                end_ns: now,
            });
        }
        self.send(Item::Call {
            trace: Box::new(o.trace),
        });
    }

    /// The gate sends the call to its runner now.
    pub fn runner_sent(&self, session: &SessionId, call: CallId) {
        if let Some(o) = lock(&self.open).get_mut(&(session.clone(), call)) {
            o.runner_start = Some(now_ns());
        }
    }

    /// The runner answered the call.
    pub fn runner_answered(&self, session: &SessionId, call: CallId) {
        if let Some(o) = lock(&self.open).get_mut(&(session.clone(), call))
            && let Some(start) = o.runner_start
        {
            o.trace.runner = Some(Interval {
                start_ns: start,
                end_ns: now_ns(),
            });
        }
    }

    /// The runner started a box for a call, `micros` before now.
    pub fn boxed(&self, session: &SessionId, call: Option<CallId>, kind: BoxKind, micros: u64) {
        let end = now_ns();
        let start = end.saturating_sub(micros.saturating_mul(1000));
        let Some(call) = call else { return };
        if let Some(o) = lock(&self.open).get_mut(&(session.clone(), call))
            && o.trace.boxes.len() < MAX_CHILDREN
        {
            o.trace.boxes.push(BoxSpan {
                kind,
                start_ns: start,
                end_ns: end,
            });
        }
    }

    /// A box of a call asked the egress proxy for a connection. The host goes out only
    /// when the rules allowed it: a refused one is whatever the box wrote, which may spell
    /// a secret it read (the audit log, which the operator keeps, has it).
    pub fn egress(&self, record: &EgressRecord) {
        let Some(call) = record.call else { return };
        let host = match record.outcome {
            EgressOutcome::Refused => None,
            EgressOutcome::Failed | EgressOutcome::Opened | EgressOutcome::Closed => {
                Some(record.host.clone())
            }
        };
        if let Some(o) = lock(&self.open).get_mut(&(record.session.clone(), call))
            && o.trace.egress.len() < MAX_CHILDREN
        {
            o.trace.egress.push(EgressEvent {
                time_ns: now_ns(),
                host,
                port: record.port,
                outcome: record.outcome,
            });
        }
    }

    /// Audit records now durable: the labels they carry go into their calls. This is the
    /// one allowlist of what telemetry takes from the audit log.
    pub fn observe(&self, events: &[(Timestamp, Event)]) {
        let mut open = lock(&self.open);
        let mut pending = false;
        for (_, event) in events {
            match event {
                Event::Decision {
                    session,
                    call,
                    class,
                    untrusted,
                    decision,
                    reason,
                    reach,
                    grant,
                    ..
                } => {
                    if let Some(o) = open.get_mut(&(session.clone(), *call)) {
                        o.trace.decision = Some(match decision {
                            audit::Verdict::Allow => Verdict::Allow,
                            audit::Verdict::Ask => Verdict::Ask,
                            audit::Verdict::Deny => Verdict::Deny,
                        });
                        o.trace.reason = *reason;
                        o.trace.grant.clone_from(grant);
                        o.trace.reach = *reach;
                        o.trace.before = Some(Taint {
                            class: *class,
                            untrusted: *untrusted,
                        });
                    }
                }
                Event::ApprovalAsked { session, call, .. } => {
                    if let Some(o) = open.get_mut(&(session.clone(), *call)) {
                        o.trace.approval = Some(ApprovalSpan {
                            start_ns: now_ns(),
                            end_ns: 0,
                            outcome: ApprovalEnd::Withdrawn,
                            via: None,
                        });
                        pending = true;
                    }
                }
                Event::ApprovalDecided {
                    session,
                    call,
                    decision,
                    via,
                    ..
                } => {
                    let outcome = match decision {
                        audit::ApprovalOutcome::Approved => ApprovalEnd::Approved,
                        audit::ApprovalOutcome::Refused => ApprovalEnd::Refused,
                    };
                    let via = via.map(|v| v.as_str().to_string());
                    pending |= end_wait(&mut open, session, *call, outcome, via);
                }
                Event::ApprovalExpired { session, call, .. } => {
                    pending |= end_wait(&mut open, session, *call, ApprovalEnd::Expired, None);
                }
                Event::ApprovalWithdrawn { session, call, .. } => {
                    pending |= end_wait(&mut open, session, *call, ApprovalEnd::Withdrawn, None);
                }
                Event::Result {
                    session,
                    call,
                    class,
                    untrusted,
                    ..
                } => {
                    if let Some(o) = open.get_mut(&(session.clone(), *call)) {
                        o.trace.after = Some(Taint {
                            class: *class,
                            untrusted: *untrusted,
                        });
                    }
                }
                Event::CapReached {
                    session, call, cap, ..
                } => {
                    if let Some(o) = open.get_mut(&(session.clone(), *call)) {
                        o.trace.cap = Some(cap.clone());
                    }
                }
                Event::Floated {
                    class, untrusted, ..
                } => self.send(Item::Floated {
                    class: *class,
                    untrusted: *untrusted,
                }),
                // Everything else names no call, or carries nothing telemetry takes.
                _ => {}
            }
        }
        if pending {
            self.pending_changed(&open);
        }
    }

    /// Sends how many calls of this gate wait for a person now.
    fn pending_changed(&self, open: &HashMap<(SessionId, CallId), Open>) {
        let count = open
            .values()
            .filter(|o| o.trace.approval.as_ref().is_some_and(|a| a.end_ns == 0))
            .count();
        self.send(Item::Pending {
            count: u64::try_from(count).unwrap_or(u64::MAX),
        });
    }
}

/// Ends `call`'s wait for a person, if it had one open; whether it did.
fn end_wait(
    open: &mut HashMap<(SessionId, CallId), Open>,
    session: &SessionId,
    call: CallId,
    outcome: ApprovalEnd,
    via: Option<String>,
) -> bool {
    let Some(a) = open
        .get_mut(&(session.clone(), call))
        .and_then(|o| o.trace.approval.as_mut())
        .filter(|a| a.end_ns == 0)
    else {
        return false;
    };
    a.end_ns = now_ns();
    a.outcome = outcome;
    a.via = via;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls() -> (Calls, mpsc::Receiver<Item>) {
        let (tx, rx) = mpsc::sync_channel(16);
        (Calls::with_sender(tx), rx)
    }

    fn record(outcome: EgressOutcome, host: &str) -> EgressRecord {
        EgressRecord {
            session: SessionId::new("s1").unwrap(),
            call: Some(CallId(1)),
            tool: "run".into(),
            conn: 1,
            host: host.into(),
            port: 443,
            address: None,
            outcome,
            reason: Some(format!("{host} is not allowed")),
            sent: 0,
            received: 0,
        }
    }

    #[test]
    fn a_refused_destination_is_not_named_only_counted() {
        let (c, rx) = calls();
        let req = ToolRequest {
            session: SessionId::new("s1").unwrap(),
            call: CallId(1),
            tool: "run".into(),
            arguments: "{}".into(),
        };
        c.begin(&req, Some(req.tool.clone()), None);
        // What a box spells a secret into when it asks for a name it chose.
        c.egress(&record(EgressOutcome::Refused, "c2VjcmV0.exfil.example"));
        c.egress(&record(EgressOutcome::Opened, "api.github.com"));
        c.finish(
            &req.session,
            req.call,
            &ToolResponse::Failed {
                message: "x".into(),
            },
        );
        let Ok(Item::Call { trace }) = rx.try_recv() else {
            panic!("no call record")
        };
        assert_eq!(trace.egress.len(), 2);
        assert_eq!(trace.egress[0].host, None);
        assert_eq!(trace.egress[0].outcome, EgressOutcome::Refused);
        assert_eq!(trace.egress[1].host.as_deref(), Some("api.github.com"));
        assert!(!format!("{trace:?}").contains("exfil"));
    }

    #[test]
    fn a_full_queue_drops_records_and_never_blocks_the_call() {
        let (tx, _rx) = mpsc::sync_channel(1);
        let c = Calls::with_sender(tx);
        for n in 0..5 {
            let req = ToolRequest {
                session: SessionId::new("s1").unwrap(),
                call: CallId(n),
                tool: "run".into(),
                arguments: "{}".into(),
            };
            c.begin(&req, Some(req.tool.clone()), None);
            c.finish(
                &req.session,
                req.call,
                &ToolResponse::Denied {
                    reason: DenyReason::NoGrant,
                },
            );
        }
        assert_eq!(c.dropped(), 4);
    }
}
