//! The gate's request loop (docs/spec.md §3.3) and its operator's side (docs/spec.md §2.4): [`Gate`].
//!
//! One [`Gate`] is shared (`Arc`) by every connection. For each [`ToolRequest`],
//! [`Gate::submit`] (or its blocking form [`Gate::call`]):
//! 1. reads the session's taint from the store and decides with [`policy::decide()`] over
//!    the effective grants (the config's, then the live run-time ones, rebuilt only when a
//!    run-time grant is added or revoked); audits `request` (the arguments' hash; the
//!    arguments themselves only with `gate.log_arguments`) and `decision`, durable before
//!    anything else happens;
//! 2. `deny` → `denied REASON`;
//! 3. `ask` → records the approval (reason `grant_ask`, or `untrusted_content` when a grant
//!    would allow the call but for `if_untrusted = "ask"`), audits `approval_asked`, hands
//!    `pending_approval` to the caller's [`Reply`], and holds the call until the approval is
//!    approved, refused, expired or withdrawn. A held call costs no thread: it is filed
//!    under its approval id with its reply path, and the decision (the deciders and the
//!    expiry thread **ring** it) resumes it on a resume worker (at most [`MAX_RESUMERS`];
//!    an approved call then runs on a thread of its own). The store is the truth:
//!    the resumed call reads the approval's state back. Approved → the approval is consumed
//!    (one-shot, [`Store::mark_used`]) and steps 1–4 are decided **again** with the taint
//!    and time of that moment, audited as a `decision` naming the approval (an `ask` then
//!    counts as approved: the person just approved this exact call; a `deny` wins).
//!    A *remembered approval* (a person chose "approve for this session", `remember.rs`)
//!    answers an `ask` for exactly its session, tool and arguments without holding the
//!    call: the decision is then `allow`, audited naming the grant; it never changes any
//!    other decision.
//!    Refused → `denied approval_refused`; expired → `denied approval_expired`; withdrawn
//!    (the client cancelled, [`Gate::withdraw`]) → `failed: "the call was cancelled …"` —
//!    `failed`, not `denied`, because no person refused it; nobody is usually left to read
//!    it;
//! 4. `allow` (or approved) → the runner runs it; the session's taint is raised by the
//!    result's label (or, for `failed`, by the tool's floor label) and **committed before**
//!    the answer is returned, and `result` is audited (size, hash, label; never content),
//!    also before. If the commit or the audit fails the answer is withheld: the caller gets
//!    `failed`.
//!
//! **Group commit.** The durable writes of steps 1 and 4 go through one queue
//! (`commit.rs`): concurrent calls' taint raises become one SQLite transaction and
//! their audit records one `write` and one `fdatasync`, the raises committed before the
//! records are written. A call waits until the batch holding its writes is durable; nothing
//! is released before. Alone, a call pays what it paid before: one audit sync before the
//! tool runs, one SQLite commit and one audit sync after.
//!
//! Any other internal failure (the store or the audit log refusing a write before the call
//! runs) fails closed: the call does not run and the caller gets `failed` naming the cause.
//!
//! A background thread expires due approvals every [`TICK`] without anyone asking, audits
//! `approval_expired`, and rings their held calls; every 2 s it also looks at every held
//! call's approval in the store, a safety net should a ring be missed. Approvals a previous
//! gate left pending have no held call; they stay `pending` until they expire (or an
//! operator decides them, which runs nothing).
//!
//! [`Gate::control`] answers the operator's [`ControlOp`]s, allowlist style: every op has
//! one handler and one typed answer, and every failure an `error` with a code and a detail
//! (`operator.rs`; `watch.rs` for `watch_approvals`). [`Gate::decide_for_client`] answers
//! the front's two requests on the decision socket (`client.rs`, docs/spec.md §2.5).

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak, mpsc};
use std::time::{Duration, Instant};

use config::Config;
use policy::{Arguments, Decision, Grant, Grants, Label, Pattern, Taint};
use proto::control::{
    self, ApprovalInfo, CheckOutcome, Choice, ControlAnswer, ControlErrorCode, ControlOp,
    DecidedVia, GrantInfo, GrantSpec, SessionInfo, Shown,
};
use proto::run::{FileDigest, FileKind};
use proto::{
    CallId, DataClass, DenyReason, MAX_FRAME, SessionId, Timestamp, ToolRequest, ToolResponse,
};

use crate::anchor::{Anchor, AuditKey, KeyError, Known, WitnessQueue};
use crate::audit::{self, ApprovalOutcome, AuditError, AuditLog, Event, Outcome, Repaired};
use crate::commit::GroupCommit;
use crate::link::ToolRunner;
use crate::store::{
    self, ApprovalFilter, ApprovalReason, ApprovalRow, ApprovalState, Decider, GrantRow,
    NewApproval, NewGrant, SessionRow, Sightings, Store, StoreError, TaintRaise,
};

mod anchoring;
mod approvals;
mod client;
pub mod described;
mod egress;
mod intent;
mod operator;
mod provenance;
mod remember;
mod sessions;
mod watch;

pub use approvals::call_sha256;
pub use provenance::{MAX_CONCERNS, SessionIndex};
pub use remember::{MAX_DEPTH, arguments_sha256, canonical_arguments};

use operator::policy_grant;

/// How often the expiry thread looks for due approvals.
pub const TICK: Duration = Duration::from_millis(250);

/// How often the expiry thread looks at every held call's approval in the store (a safety
/// net: the expiry thread and the deciders ring a held call when its approval changes).
const POLL: Duration = Duration::from_secs(2);

/// The most audit lines one `audit_tail` answer carries.
pub const TAIL_MAX: u64 = 10_000;

/// The gate's clock: whole seconds since the epoch. Tests pass a settable one.
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(|| Timestamp::from_system_time(std::time::SystemTime::now()))
}

/// What can stop the gate from starting or from doing one thing.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("the run-time grant rt-{id} has a bad {field} pattern {pattern:?}: {source}")]
    BadGrant {
        id: i64,
        field: &'static str,
        pattern: String,
        source: policy::PatternError,
    },
    #[error("could not start the approval expiry thread: {0}")]
    Thread(#[source] std::io::Error),
    #[error("could not start the audit witness thread: {0}")]
    WitnessThread(#[source] std::io::Error),
    #[error("could not read the checkpoints the audit log is checked against at start: {0}")]
    Checkpoints(String),
    #[error(
        "the audit log was opened without being checked against this gate's checkpoints \
         (`AuditLog::open_checked` with the key {key}); a gate never adds to such a log"
    )]
    AuditUnchecked { key: String },
    #[error("approval {id} disappeared from the state database while its call waited")]
    ApprovalVanished { id: String },
    #[error(transparent)]
    Shared(Arc<GateError>),
    #[error("a group commit ended without an answer for this write; it may not be durable")]
    CommitLost,
}

/// Why one call ended in `failed` without a tool's answer. The text is the `failed`
/// message: a sentence a person and a model understand.
#[derive(Debug, thiserror::Error)]
enum CallError {
    #[error("the gate could not {what}, so the call was not run: {source}")]
    Before {
        what: &'static str,
        source: Box<GateError>,
    },
    #[error(
        "the gate could not {what} after the tool ran, so its answer was withheld \
         (the session's taint may have been raised): {source}"
    )]
    Withheld {
        what: &'static str,
        source: Box<GateError>,
    },
    #[error("the call was cancelled before anyone approved it (approval {id} was withdrawn)")]
    Withdrawn { id: String },
}

fn before<E: Into<GateError>>(what: &'static str) -> impl FnOnce(E) -> CallError {
    move |e| CallError::Before {
        what,
        source: Box::new(e.into()),
    }
}

fn withheld<E: Into<GateError>>(what: &'static str) -> impl FnOnce(E) -> CallError {
    move |e| CallError::Withheld {
        what,
        source: Box::new(e.into()),
    }
}

/// Where one call's answers go (see [`Gate::submit`]): zero or more non-final answers
/// (`pending_approval`), then exactly one final answer.
pub trait Reply: Send + 'static {
    /// A non-final answer (`pending_approval`), on the submitting thread, before the call
    /// is held.
    fn progress(&mut self, resp: ToolResponse);
    /// The final answer, exactly once: on the submitting thread, or, for a call that was
    /// held, on a thread the gate starts when its approval leaves `pending`. Dropping a
    /// `Reply` unanswered happens only when the gate itself is dropped.
    fn finish(self: Box<Self>, resp: ToolResponse);
}

/// A [`Reply`] that ends its call's trace when the final answer goes out, on whichever
/// path that is (docs/spec.md §8).
struct Traced {
    inner: Box<dyn Reply>,
    calls: Arc<crate::telemetry::Calls>,
    session: SessionId,
    call: CallId,
}

impl Reply for Traced {
    fn progress(&mut self, resp: ToolResponse) {
        self.inner.progress(resp);
    }

    fn finish(self: Box<Self>, resp: ToolResponse) {
        self.calls.finish(&self.session, self.call, &resp);
        self.inner.finish(resp);
    }
}

/// A [`Reply`] into a channel: `(false, progress)`, then `(true, final)`.
struct ChannelReply(mpsc::Sender<(bool, ToolResponse)>);

impl Reply for ChannelReply {
    fn progress(&mut self, resp: ToolResponse) {
        let _ = self.0.send((false, resp));
    }

    fn finish(self: Box<Self>, resp: ToolResponse) {
        let _ = self.0.send((true, resp));
    }
}

/// A call held for a person. No thread waits for it: the approval's decision, expiry or
/// withdrawal resumes it ([`Gate::ring`]).
struct Held {
    req: ToolRequest,
    /// The call's arguments as parsed once by [`Gate::submit`]: the re-decision on
    /// approval tests the same value.
    args: Arguments,
    reply: Box<dyn Reply>,
}

/// The most threads resuming held calls at once (a rung call queues for one).
pub const MAX_RESUMERS: usize = 16;

/// Rung calls waiting for a resume worker, and how many workers run.
#[derive(Default)]
struct Resumes {
    queue: VecDeque<(String, Held)>,
    workers: usize,
}

/// Where the first part of a call left it.
enum Start {
    /// Its final answer (denied).
    Final(ToolResponse),
    /// Allowed: run it, at this committed taint (its reach already in it), checking and
    /// pinning these files (those of the remembered approval that answered it; none else).
    Run(Taint, Vec<FileDigest>),
    /// Waiting for a person on this approval.
    Held(String),
}

/// One item of the group commit: a taint raise (if any), and the audit records that must be
/// durable with it. Records are appended only after the raise committed.
struct Durable {
    raise: Option<TaintRaise>,
    events: Vec<(Timestamp, Event)>,
    /// What the call showed its session's provenance index, committed with the raise.
    sightings: Option<Sightings>,
    /// The audit records may wait for the next synced commit (docs/spec.md §6,
    /// "Durability"): the request and decision of a read-only file call, which has no effect
    /// but its answer, and whose result record is synced before the answer is released.
    defer_sync: bool,
}

/// Which write of a group commit failed, for one item.
#[derive(Debug, Clone)]
enum CommitFailed {
    Taint(Arc<GateError>),
    Audit(Arc<GateError>),
}

impl CommitFailed {
    fn into_gate(self) -> GateError {
        match self {
            CommitFailed::Taint(e) | CommitFailed::Audit(e) => GateError::Shared(e),
        }
    }
}

fn failed(e: CallError) -> ToolResponse {
    ToolResponse::Failed {
        message: e.to_string(),
    }
}

/// A replica on a shared store hears every approval write of the fleet (`LISTEN`): it wakes
/// its watchers (one approvals page for the fleet) and resumes a call it holds whose
/// approval another replica decided, at once rather than at the next sweep. A lost
/// connection is made again every `tick`; meanwhile the sweep every [`POLL`] still finds
/// every decision (the store is the truth, the notification only a ring).
fn listen_to_the_fleet(gate: &Weak<Gate>, target: &store::PgTarget, tick: Duration) {
    let mut listener: Option<store::ApprovalListener> = None;
    loop {
        if gate.strong_count() == 0 {
            return;
        }
        let Some(l) = listener.as_mut() else {
            listener = store::ApprovalListener::connect(target).ok();
            if listener.is_none() {
                std::thread::sleep(tick);
            } else if let Some(gate) = gate.upgrade() {
                // Whatever changed while no one listened.
                gate.changed();
                gate.sweep_held();
            }
            continue;
        };
        match l.wait(tick) {
            Ok(0) => {}
            Ok(_) => {
                let Some(gate) = gate.upgrade() else { return };
                gate.changed();
                gate.sweep_held();
            }
            Err(_) => listener = None,
        }
    }
}

/// The gate role. Share it with `Arc`; every method takes `&self`.
pub struct Gate {
    config: Arc<Config>,
    store: Mutex<Store>,
    audit: Mutex<AuditLog>,
    runner: Box<dyn ToolRunner>,
    clock: Clock,
    /// The effective grants; `None` after a run-time grant changed.
    grants: Mutex<Option<Arc<Grants>>>,
    /// The remembered approvals (run-time grants scoped to exact arguments, never among
    /// `grants`); `None` after a run-time grant changed.
    remembered: Mutex<Option<Arc<Vec<remember::Remembered>>>>,
    /// The shared store's grants stamp the caches were read at (`follow_fleet_grants`).
    grants_seen: Mutex<Option<(i64, i64)>>,
    /// Pending approvals a call of this gate waits on (asked here, not yet resumed).
    live: Mutex<HashSet<String>>,
    /// Wakes `watch_approvals` after every write to an approval.
    changes: watch::Changes,
    /// Held calls by approval id.
    held: Mutex<HashMap<String, Held>>,
    /// Held calls whose approval left `pending`, for the resume workers.
    resumes: Mutex<Resumes>,
    /// The taint raises and audit records of concurrent calls, one sync each per batch.
    durable: GroupCommit<Durable, Result<(), CommitFailed>>,
    /// This gate, for the threads that resume held calls.
    me: Weak<Gate>,
    /// Started on demand by a client (it may retire), rather than kept by `serve`.
    on_demand: AtomicBool,
    /// A client asked this gate to retire ([`ControlOp::Retire`]).
    retiring: AtomicBool,
    /// The agent connections served now, so that a gate that stops taking connections can
    /// end those a front keeps idle between calls (`crate::conns::AgentConns`).
    pub(crate) agent_conns: crate::conns::AgentConns,
    /// Calls each session has decided or running now (`[gate] max_calls_per_session`),
    /// and the sessions an operator is resetting.
    sessions: sessions::Sessions,
    /// The audit log's anchor: the key, when to sign, the witnesses (`anchoring.rs`).
    anchor: Anchor,
    /// The thread that hands checkpoints to the witnesses.
    witness: OnceLock<WitnessQueue>,
    /// When the last checkpoint was signed (or the gate started).
    last_checkpoint: Mutex<Instant>,
    /// What the servers' tool definitions name, for every session's index.
    described: Mutex<described::Layer>,
    /// The calls traced for OpenTelemetry, when an exporter runs (docs/spec.md §8).
    telemetry: OnceLock<Arc<crate::telemetry::Calls>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Gate {
    /// Opens the store and the audit log in `config.gate.state` and starts a gate on the
    /// system clock. The log is checked against every checkpoint the gate knows
    /// ([`Gate::open_audit`]). Log the returned [`Repaired`] notice if there is one.
    pub fn open(
        config: Arc<Config>,
        runner: Box<dyn ToolRunner>,
    ) -> Result<(Arc<Gate>, Option<Repaired>), GateError> {
        let store = Store::open_configured(&config.gate)?;
        let (audit, repaired) = Gate::open_audit(&config)?;
        let gate = Gate::new(config, store, audit, runner)?;
        Ok((gate, repaired))
    }

    /// Opens the audit log of `config`'s state directory as a gate must: checked, in the one
    /// pass that rebuilds its tree, against the checkpoints the gate can read back (`[audit]
    /// witness_file`, `STATE/audit.checkpoint`) and its own `checkpoint` records, by the
    /// audit key (read, or made on first use). A log that does not extend one of them is
    /// refused (docs/spec.md §6, "At start").
    pub fn open_audit(config: &Config) -> Result<(AuditLog, Option<Repaired>), GateError> {
        let key = AuditKey::load_or_create(&config.audit.key)?;
        let known = Known::of(&config.audit, &config.gate.state, key.public().clone())
            .map_err(GateError::Checkpoints)?;
        Ok(AuditLog::open_checked(&config.gate.state, &known)?)
    }

    /// A gate on the system clock, with its expiry thread running.
    pub fn new(
        config: Arc<Config>,
        store: Store,
        audit: AuditLog,
        runner: Box<dyn ToolRunner>,
    ) -> Result<Arc<Gate>, GateError> {
        Gate::with_clock(config, store, audit, runner, system_clock(), TICK)
    }

    /// A gate on `clock`, whose expiry thread looks every `tick`. The thread stops within a
    /// tick of the last `Arc<Gate>` being dropped. The audit key is read (or made, on first
    /// use) from `[audit] key`.
    pub fn with_clock(
        config: Arc<Config>,
        store: Store,
        audit: AuditLog,
        runner: Box<dyn ToolRunner>,
        clock: Clock,
        tick: Duration,
    ) -> Result<Arc<Gate>, GateError> {
        let anchor = Anchor::from_config(&config.audit)?;
        // Every gate starts on a log checked against its checkpoints by its own key: the
        // one mechanism, whatever path opened the log.
        if audit.checked_by() != Some(anchor.key.public().id()) {
            return Err(GateError::AuditUnchecked {
                key: anchor.key.public().id().to_hex(),
            });
        }
        let mut witnesses = anchor.witnesses.clone();
        // A replica of a fleet also publishes each checkpoint in the shared store, where a
        // fleet checkpoint gathers them (docs/spec.md §6, "The audit trail of a fleet").
        if let Some(url) = &config.gate.store {
            witnesses.push(crate::anchor::Witness::Fleet {
                store: url.clone(),
                public_key: anchor.key.public().to_hex(),
            });
        }
        let gate = Arc::new_cyclic(|me| Gate {
            config,
            store: Mutex::new(store),
            audit: Mutex::new(audit),
            runner,
            clock,
            grants: Mutex::new(None),
            remembered: Mutex::new(None),
            grants_seen: Mutex::new(None),
            live: Mutex::new(HashSet::new()),
            changes: watch::Changes::default(),
            held: Mutex::new(HashMap::new()),
            resumes: Mutex::new(Resumes::default()),
            durable: GroupCommit::new(),
            me: me.clone(),
            on_demand: AtomicBool::new(false),
            retiring: AtomicBool::new(false),
            agent_conns: crate::conns::AgentConns::default(),
            sessions: sessions::Sessions::default(),
            anchor,
            witness: OnceLock::new(),
            last_checkpoint: Mutex::new(Instant::now()),
            described: Mutex::new(described::Layer::default()),
            telemetry: OnceLock::new(),
        });
        let weak = Arc::downgrade(&gate);
        let asked = Arc::downgrade(&gate);
        let queue = WitnessQueue::start(
            gate.config.gate.state.clone(),
            witnesses,
            Box::new(move |cp| {
                asked
                    .upgrade()
                    .is_some_and(|gate| lock(&gate.audit).extends(cp))
            }),
            Box::new(move |cp, witness, why| {
                if let Some(gate) = weak.upgrade() {
                    gate.witness_failed(cp, witness, why);
                }
            }),
        )
        .map_err(GateError::WitnessThread)?;
        let _ = gate.witness.set(queue);
        let shared = lock(&gate.store).shared_target();
        if let Some(target) = shared {
            let weak = Arc::downgrade(&gate);
            std::thread::Builder::new()
                .name("gate-listen".into())
                .spawn(move || listen_to_the_fleet(&weak, &target, tick))
                .map_err(GateError::Thread)?;
        }
        let weak = Arc::downgrade(&gate);
        std::thread::Builder::new()
            .name("gate-expiry".into())
            .spawn(move || {
                let mut swept = Instant::now();
                loop {
                    std::thread::sleep(tick);
                    let Some(gate) = weak.upgrade() else {
                        return;
                    };
                    // A failure here is retried next tick.
                    let _ = gate.expire_due();
                    gate.checkpoint_if_due();
                    if swept.elapsed() >= POLL {
                        swept = Instant::now();
                        gate.sweep_held();
                    }
                }
            })
            .map_err(GateError::Thread)?;
        Ok(gate)
    }

    /// From now on, every call is traced into `calls` (docs/spec.md §8). Once only.
    pub fn set_telemetry(&self, calls: Arc<crate::telemetry::Calls>) {
        let _ = self.telemetry.set(calls);
    }

    /// The calls traced for OpenTelemetry, when an exporter runs.
    pub(crate) fn telemetry(&self) -> Option<&Arc<crate::telemetry::Calls>> {
        self.telemetry.get()
    }

    /// `name`, when it names a tool this gate knows: a builtin `[[tool]]` of the config, or
    /// a downstream tool the discovery file shows (docs/spec.md §8). Any other name is the
    /// caller's own text, and is not exported.
    fn known_tool(&self, name: &str) -> Option<String> {
        let known = match self.config.tool(name) {
            Some(t) => matches!(t.kind, config::ToolKind::Builtin(_)),
            None => {
                self.config.could_name(name)
                    && lock(&self.described).current(&self.config).shows_tool(name)
            }
        };
        known.then(|| name.to_string())
    }

    /// The config the gate decides by.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Marks this gate as started on demand: [`ControlOp::Retire`] is then obeyed (a gate
    /// kept by `serve` refuses it).
    pub fn set_on_demand(&self) {
        self.on_demand.store(true, Ordering::SeqCst);
    }

    /// Audits a peer a socket refused (`auth_failed`); a failure to audit is not the
    /// peer's to learn about.
    pub fn refuse_peer(&self, socket: &str, uid: Option<u32>, why: &str) {
        let _ = self.audit(
            self.now(),
            Event::AuthFailed {
                socket: socket.to_string(),
                uid,
                detail: why.to_string(),
            },
        );
    }

    /// Whether a client asked this gate to retire (its host then stops taking connections
    /// and ends once the calls in flight are answered).
    pub fn retire_requested(&self) -> bool {
        self.retiring.load(Ordering::SeqCst)
    }

    /// Ends every agent connection that has no call in flight, and from now on each one
    /// when its last call is answered: for a gate that has stopped taking connections
    /// (retiring, stopping), since a front keeps its connection open between calls
    /// (docs/spec.md §5). A request the gate had not read when its connection ended was
    /// never decided, so it never ran; one it had read is answered first.
    pub fn drain_agent_connections(&self) {
        self.agent_conns.drain();
    }

    /// The state directory's audit log path.
    pub fn audit_path(&self) -> std::path::PathBuf {
        lock(&self.audit).path().to_path_buf()
    }

    fn now(&self) -> Timestamp {
        (self.clock)()
    }

    fn audit(&self, time: Timestamp, event: Event) -> Result<(), AuditError> {
        self.append_audit([(time, event)]).map(|_| ())
    }

    /// The session's taint as a decision reads it: on a shared store in the same
    /// statement as the grants stamp, whose move drops the grant caches (what
    /// [`Gate::follow_fleet_grants`] does), so [`Gate::cached_grants`] after it decides by
    /// the fleet's grants as they were with that taint.
    fn decision_taint(&self, session: &SessionId) -> Result<Taint, GateError> {
        self.decision_read(session, None).map(|(taint, _)| taint)
    }

    /// [`Gate::decision_taint`], and whether the call's arguments' sightings (`argued`)
    /// would write anything to the index — on a shared store all in one statement
    /// ([`Store::decision_read`]), so a call whose values the index already holds as
    /// passed in costs no statement for them. On SQLite the sightings are always handed to
    /// the commit, which judges them there (in-process).
    fn decision_read(
        &self,
        session: &SessionId,
        argued: Option<&Sightings>,
    ) -> Result<(Taint, bool), GateError> {
        let read = {
            let store = lock(&self.store);
            if !store.is_shared() {
                let t = store.taint(session)?;
                return Ok((Taint::new(t.class, t.untrusted), argued.is_some()));
            }
            store.decision_read(session, argued, self.config.gate.max_provenance_values)?
        };
        self.saw_grants_stamp(read.grants_stamp);
        let t = read.taint;
        Ok((Taint::new(t.class, t.untrusted), read.argued_writes))
    }

    /// The effective grants: the config's, then the run-time ones not revoked — except the
    /// remembered approvals, which answer only an `ask` for their exact call
    /// (`remember.rs`) and are never grants for a whole tool.
    pub fn grants(&self) -> Result<Arc<Grants>, GateError> {
        self.follow_fleet_grants()?;
        self.cached_grants()
    }

    /// [`Gate::grants`] without reading the fleet's grants stamp: only right after
    /// [`Gate::decision_taint`] read it.
    fn cached_grants(&self) -> Result<Arc<Grants>, GateError> {
        let mut cache = lock(&self.grants);
        if let Some(g) = cache.as_ref() {
            return Ok(Arc::clone(g));
        }
        let rows = lock(&self.store).grants()?;
        let mut grants = self.config.grants.clone();
        for row in rows.iter().filter(|r| r.scope.is_none()) {
            grants.push(policy_grant(row)?);
        }
        let grants = Arc::new(grants);
        *cache = Some(Arc::clone(&grants));
        Ok(grants)
    }

    /// On a shared store another replica may add, revoke or remember a grant at any time:
    /// the caches are dropped whenever the store's grants stamp moved (docs/spec.md §6,
    /// "Replicas"). On the embedded store this gate is the only writer.
    fn follow_fleet_grants(&self) -> Result<(), GateError> {
        let stamp = {
            let store = lock(&self.store);
            if !store.is_shared() {
                return Ok(());
            }
            store.grants_stamp()?
        };
        self.saw_grants_stamp(stamp);
        Ok(())
    }

    fn saw_grants_stamp(&self, stamp: (i64, i64)) {
        let mut seen = lock(&self.grants_seen);
        if *seen != Some(stamp) {
            self.invalidate_grants();
            *seen = Some(stamp);
        }
    }

    fn invalidate_grants(&self) {
        *lock(&self.grants) = None;
        *lock(&self.remembered) = None;
    }

    /// The session's provenance index, as a decision asks it (docs/spec.md §3.7).
    pub fn index<'a>(&'a self, session: &'a SessionId) -> SessionIndex<'a> {
        let described = lock(&self.described).current(&self.config);
        SessionIndex::new(&self.store, session, &self.config.known, described)
    }

    /// The explanation of a decision, in the session's context.
    fn explain(
        &self,
        grants: &Grants,
        req: &ToolRequest,
        args: &Arguments,
        at: Taint,
        now: Timestamp,
    ) -> policy::Explanation {
        policy::explain_call_in(
            grants,
            &req.session,
            &req.tool,
            args,
            at,
            now,
            &self.index(&req.session),
        )
    }

    /// The explanation, only when some grant for the tool asks where a value came from
    /// (else provenance cannot have changed the decision and the cost is not paid).
    fn explained(
        &self,
        grants: &Grants,
        req: &ToolRequest,
        args: &Arguments,
        at: Taint,
        now: Timestamp,
        decision: Decision,
    ) -> Option<policy::Explanation> {
        let mut asks = false;
        grants.for_each_tool_match(&req.tool, |_, g| {
            asks |= g.when.iter().any(|c| c.test.is_from());
        });
        let _ = decision;
        asks.then(|| self.explain(grants, req, args, at, now))
    }

    /// What the `decision` record says of provenance (nothing unless it changed it).
    fn notes(
        &self,
        e: Option<&policy::Explanation>,
        session: &SessionId,
    ) -> Vec<audit::ProvenanceNote> {
        e.map(|e| provenance::notes(e, &self.index(session), &self.config))
            .unwrap_or_default()
    }

    // --- the call path --------------------------------------------------------------------

    /// Decides and (if allowed or approved) runs one call; returns its final answer.
    /// `progress` receives the non-final `pending_approval` when the call must wait for a
    /// person. Never panics; every failure is a `failed` answer. Blocks its thread while
    /// the call is held: a server should use [`Gate::submit`], which does not.
    pub fn call(&self, req: ToolRequest, progress: &mut dyn FnMut(ToolResponse)) -> ToolResponse {
        let (tx, rx) = mpsc::channel();
        self.submit(req, Box::new(ChannelReply(tx)));
        loop {
            match rx.recv() {
                Ok((false, resp)) => progress(resp),
                Ok((true, resp)) => return resp,
                Err(_) => {
                    return ToolResponse::Failed {
                        message: "the gate stopped before the call ended".into(),
                    };
                }
            }
        }
    }

    /// Decides and (if allowed) runs one call, and gives its answers to `reply`. A call
    /// that needs a person is held without a thread: `submit` returns once `reply` has the
    /// `pending_approval`, and the approval's decision, expiry or withdrawal finishes the
    /// call on a thread of its own. Every failure is a `failed` answer.
    pub fn submit(&self, req: ToolRequest, reply: Box<dyn Reply>) {
        self.submit_traced(req, None, reply);
    }

    /// [`Gate::submit`], with the trace context the client sent with the call (its
    /// `_meta.traceparent`, docs/spec.md §8). Traced only while an exporter runs.
    pub fn submit_traced(
        &self,
        req: ToolRequest,
        traceparent: Option<proto::telemetry::TraceParent>,
        reply: Box<dyn Reply>,
    ) {
        let mut reply = match self.telemetry() {
            Some(calls) => {
                calls.begin(&req, self.known_tool(&req.tool), traceparent);
                Box::new(Traced {
                    inner: reply,
                    calls: Arc::clone(calls),
                    session: req.session.clone(),
                    call: req.call,
                })
            }
            None => reply,
        };
        // Fair to every session: one session's flood is refused at its own cap, never
        // queued where another session's calls wait (docs/spec.md §4).
        let slot = match self.take_call_slot(&req) {
            Ok(slot) => slot,
            Err(resp) => return reply.finish(resp),
        };
        // docs/spec.md §3.3: the arguments are parsed once, as strict JSON, for every
        // decision on this call (proto never parses them).
        let args = Arguments::parse(&req.arguments);
        match self.start(&req, &args, &mut *reply) {
            Ok(Start::Final(resp)) => {
                drop(slot);
                reply.finish(resp);
            }
            Ok(Start::Run(taint, files)) => {
                let resp = self
                    .run_and_commit(&req, &args, taint, &files)
                    .unwrap_or_else(failed);
                drop(slot);
                reply.finish(resp);
            }
            // A held call keeps no slot (it counts toward the pending cap instead).
            Ok(Start::Held(approval)) => {
                drop(slot);
                self.park(approval, Held { req, args, reply });
            }
            Err(e) => {
                drop(slot);
                reply.finish(failed(e));
            }
        }
    }

    /// One of `req`'s session's call slots, or the `failed` answer (audited) when the
    /// session has `[gate] max_calls_per_session` calls running already. While an operator
    /// resets the session it waits, so the call is decided at the taint the reset leaves.
    fn take_call_slot(&self, req: &ToolRequest) -> Result<sessions::CallSlot<'_>, ToolResponse> {
        let limit = self.config.gate.max_calls_per_session;
        if let Some(slot) = self.sessions.enter(&req.session, Some(limit)) {
            return Ok(slot);
        }
        Err(self.capped(
            req,
            "max_calls_per_session",
            limit,
            format!(
                "refused: this session already has {limit} calls running, the most one session \
                 may have (`[gate] max_calls_per_session`); wait for one to finish, then call \
                 again"
            ),
        ))
    }

    /// Audits a call refused by its session's cap and returns its `failed` answer.
    fn capped(&self, req: &ToolRequest, cap: &str, limit: u64, message: String) -> ToolResponse {
        let _ = self.make_durable(Durable {
            raise: None,
            sightings: None,
            defer_sync: false,
            events: vec![(
                self.now(),
                Event::CapReached {
                    session: req.session.clone(),
                    call: req.call,
                    tool: req.tool.clone(),
                    cap: cap.to_string(),
                    limit,
                },
            )],
        });
        ToolResponse::Failed { message }
    }

    /// Steps 1–3: decide, audit the request and the decision (one durable write, shared
    /// with concurrent calls), and deny, allow, or ask.
    fn start(
        &self,
        req: &ToolRequest,
        args: &Arguments,
        reply: &mut dyn Reply,
    ) -> Result<Start, CallError> {
        let now = self.now();
        let request = Event::request(
            req.session.clone(),
            req.call,
            req.tool.clone(),
            &req.arguments,
            self.config.gate.log_arguments,
        );
        let reach = self.config.call_reach(&req.tool);
        let argued = provenance::argued(req, args);
        let decided = self
            .decision_read(&req.session, argued.as_ref())
            .map_err(before("read the session's taint"))
            .and_then(|(taint, argued_writes)| {
                let grants = self.cached_grants().map_err(before("build the grants"))?;
                // Step 4 at max(taint, reach) for code boxmaker does not control.
                let at = at_reach(taint, reach);
                let mut decision = policy::decide_call_in(
                    &grants,
                    &req.session,
                    &req.tool,
                    args,
                    at,
                    now,
                    &self.index(&req.session),
                );
                // A person approved exactly this call for the session, and it still runs
                // what they approved: it answers the `ask`.
                let mut remembered = remember::Lookup::default();
                let mut files = Vec::new();
                if decision == Decision::Ask {
                    files = self.files_of(req);
                    remembered = self
                        .remembered_answer(req, &files, at, now)
                        .map_err(before("look up the remembered approvals"))?;
                    if remembered.grant.is_some() {
                        decision = Decision::Allow;
                    }
                }
                Ok((
                    taint,
                    at,
                    grants,
                    decision,
                    remembered,
                    files,
                    argued_writes,
                ))
            });
        let (taint, at, grants, decision, remembered, mut files, argued_writes) = match decided {
            Ok(d) => d,
            Err(e) => {
                // Still log that the request came, and the `failed` it is answered with and
                // why (a store that could not be read): the call does not run either way,
                // and an audit with a request and no outcome would say nothing of it.
                let refused = Event::result(
                    req.session.clone(),
                    req.call,
                    req.tool.clone(),
                    Outcome::Failed,
                    &e.to_string(),
                    DataClass::Public,
                    false,
                    false,
                );
                let _ = self.make_durable(Durable {
                    raise: None,
                    events: vec![(now, request), (now, refused)],
                    sightings: None,
                    defer_sync: false,
                });
                return Err(e);
            }
        };
        // Why, for a person and the log, when provenance or a clearance had a say.
        let explained = self.explained(&grants, req, args, at, now, decision);
        let mut events = vec![
            (now, request),
            (
                now,
                decision_event(
                    req,
                    at,
                    decision,
                    None,
                    reach,
                    remembered.grant.map(|g| format!("rt-{g}")),
                    self.notes(explained.as_ref(), &req.session),
                ),
            ),
        ];
        // A call that can never run is refused now, in the decoder's own words, before any
        // person is asked to approve it (and before its reach enters the taint).
        let bad = match decision {
            Decision::Deny(_) => None,
            Decision::Allow | Decision::Ask => self.bad_arguments(req),
        };
        if let Some(message) = &bad {
            events.push((
                now,
                Event::result(
                    req.session.clone(),
                    req.call,
                    req.tool.clone(),
                    Outcome::Failed,
                    message,
                    DataClass::Public,
                    false,
                    false,
                ),
            ));
        }
        // An allowed call's reach is committed with the records of its request, before its
        // box starts: one durable write, shared with concurrent calls.
        // A call of code boxmaker does not control whose own label is untrusted runs, from
        // its box's first instant, in an untrusted session.
        let own_untrusted =
            reach.is_some() && self.config.answer_label(&req.tool, args).label.untrusted;
        let (raise, sightings) = match (decision, &bad) {
            (Decision::Allow, None) => (
                reach_raise(req, taint, reach, own_untrusted),
                argued.filter(|_| argued_writes),
            ),
            _ => (None, None),
        };
        // A read-only file call has no effect until its answer is released, and its result
        // record is synced before that: its request and decision need not wait for the disk
        // on their own (docs/spec.md §6, "Durability").
        let defer_sync = decision == Decision::Allow && bad.is_none() && self.read_only(&req.tool);
        self.make_durable(Durable {
            raise,
            events,
            sightings,
            defer_sync,
        })
        .map_err(|f| before("record the request, its decision and its reach")(f.into_gate()))?;
        if let Some(message) = bad {
            return Ok(Start::Final(ToolResponse::Failed { message }));
        }
        match decision {
            Decision::Deny(reason) => Ok(Start::Final(ToolResponse::Denied { reason })),
            Decision::Allow => Ok(Start::Run(run_taint(at, reach, own_untrusted), files)),
            Decision::Ask => {
                let limit = self.config.gate.max_pending_per_session;
                if self.pending_of(&req.session) >= limit {
                    return Ok(Start::Final(self.capped(
                        req,
                        "max_pending_per_session",
                        limit,
                        format!(
                            "refused: this session already has {limit} calls waiting for a \
                             person's approval, the most one session may have (`[gate] \
                             max_pending_per_session`); wait until a person decides them"
                        ),
                    )));
                }
                let explained = match explained {
                    Some(e) => e,
                    None => self.explain(&grants, req, args, at, now),
                };
                let reason = ask_reason(&explained);
                let concerns = provenance::concerns(&explained);
                // The person is shown what changed since they approved this same call.
                remember::mark_changed(&mut files, &remembered.before);
                self.ask(req, reason, concerns, now, reply, files)
                    .map(Start::Held)
            }
        }
    }

    /// Whether `tool` is a builtin whose only effect is its answer (`read_file`, `list_dir`).
    fn read_only(&self, tool: &str) -> bool {
        matches!(
            self.config.tool(tool).map(|t| &t.kind),
            Some(config::ToolKind::Builtin(
                config::Builtin::ReadFile | config::Builtin::ListDir
            ))
        )
    }

    /// Why `req`'s arguments can never run, for a builtin tool (the same decoder the runner
    /// uses, `config::args`); `None` when they decode, or the tool is not a builtin (a
    /// downstream server's schema is checked by the front, which holds it).
    fn bad_arguments(&self, req: &ToolRequest) -> Option<String> {
        let config::ToolKind::Builtin(b) = self.config.tool(&req.tool)?.kind else {
            return None;
        };
        config::args::parse(b, &req.arguments)
            .err()
            .map(|e| format!("{e} (nothing ran; see the tool's input schema)"))
    }

    /// What a call that asks would run (docs/spec.md §3.3 step 6): the runner's digest of
    /// each file a `run` builtin's arguments name in a writable place; nothing for other
    /// tools. A runner that cannot look gives one `unbound` entry saying why, so the
    /// approval covers nothing it could not see and is never remembered.
    fn files_of(&self, req: &ToolRequest) -> Vec<FileDigest> {
        let runs_files = matches!(
            self.config.tool(&req.tool).map(|t| &t.kind),
            Some(config::ToolKind::Builtin(config::Builtin::Run))
        );
        if !runs_files {
            return Vec::new();
        }
        self.runner.digest(req).unwrap_or_else(|why| {
            vec![FileDigest {
                path: String::new(),
                arg: 0,
                kind: FileKind::Unbound,
                sha256: None,
                size: None,
                note: Some(format!(
                    "the runner could not look at the files this call names ({why}), so \
                     none is covered"
                )),
                pinned: false,
                was: None,
            }]
        })
    }

    /// Queues `d` for the next group commit and returns once it is durable (or failed).
    fn make_durable(&self, d: Durable) -> Result<(), CommitFailed> {
        self.durable.submit(
            d,
            |batch| self.commit_batch(batch),
            || Err(CommitFailed::Audit(Arc::new(GateError::CommitLost))),
        )
    }

    /// The group commit's leader: every raise of the batch in one SQLite transaction, then
    /// the records of every item whose raise committed (or that had none) with one
    /// `fdatasync`. One result per item, in order.
    fn commit_batch(&self, batch: Vec<Durable>) -> Vec<Result<(), CommitFailed>> {
        let batch_syncs = batch.iter().any(|d| !d.defer_sync);
        let raises: Vec<TaintRaise> = batch.iter().filter_map(|d| d.raise.clone()).collect();
        let sightings: Vec<Sightings> = batch.iter().filter_map(|d| d.sightings.clone()).collect();
        let raised = if raises.is_empty() && sightings.is_empty() {
            Ok(())
        } else {
            lock(&self.store)
                .raise_and_record(
                    &raises,
                    &sightings,
                    self.config.gate.max_provenance_values,
                    self.now(),
                )
                .map(drop)
                .map_err(|e| Arc::new(GateError::from(e)))
        };
        let mut out: Vec<Result<(), CommitFailed>> = batch
            .iter()
            .map(
                |d| match (d.raise.is_some() || d.sightings.is_some(), &raised) {
                    (true, Err(e)) => Err(CommitFailed::Taint(Arc::clone(e))),
                    _ => Ok(()),
                },
            )
            .collect();
        let events: Vec<(Timestamp, Event)> = batch
            .into_iter()
            .zip(&out)
            .filter(|(_, r)| r.is_ok())
            .flat_map(|(d, _)| d.events)
            .collect();
        let sync = batch_syncs;
        if let Err(e) = self.append_audit_synced(events, sync) {
            let e = Arc::new(GateError::from(e));
            for r in out.iter_mut().filter(|r| r.is_ok()) {
                *r = Err(CommitFailed::Audit(Arc::clone(&e)));
            }
        }
        out
    }

    /// Runs the call at `taint` (committed, its reach in it), raises the taint and audits
    /// the result (committed together with concurrent calls' raises and records), and only
    /// then returns the answer. A `failed` is labelled by the call's own label
    /// ([`Config::answer_label`]: the tool's floor — its reach, for code boxmaker does not
    /// control — raised by every label rule that matches the call; the same function the
    /// runner labels its results by) joined with `taint`: that is what it raises the taint
    /// by and what its values are indexed as. The `result` record names the rules that
    /// matched.
    ///
    /// The call goes to the runner only if its session is not being reset at that moment
    /// (`sessions.rs`); else it answers `failed`, saying so, without running.
    fn run_and_commit(
        &self,
        req: &ToolRequest,
        args: &Arguments,
        taint: Taint,
        files: &[FileDigest],
    ) -> Result<ToolResponse, CallError> {
        let traced = self.telemetry();
        if let Some(t) = traced {
            t.runner_sent(&req.session, req.call);
        }
        let sent = self
            .runner
            .run_if(req, taint, files, &mut || self.sessions.admit(&req.session));
        if let Some(t) = traced {
            t.runner_answered(&req.session, req.call);
        }
        let resp = match sent {
            resp @ (ToolResponse::Result { .. } | ToolResponse::Failed { .. }) => resp,
            ToolResponse::PendingApproval { .. } | ToolResponse::Denied { .. } => {
                ToolResponse::Failed {
                    message: "the runner answered with a status only the gate may give; \
                              the call's outcome is unknown"
                        .into(),
                }
            }
        };
        let own = self.config.answer_label(&req.tool, args);
        let (label, outcome, content, truncated) = match &resp {
            ToolResponse::Result {
                content,
                class,
                untrusted,
                truncated,
            } => (
                Label::new(*class, *untrusted),
                Outcome::Result,
                content.as_str(),
                *truncated,
            ),
            // A failure carries no label: it is the call's own, joined with the taint the
            // call ran at — it may quote what the session's workspace or a server's box
            // held (docs/spec.md §3.4), so in an untrusted session it is untrusted.
            ToolResponse::Failed { message } => (
                own.label.join(taint.label()),
                Outcome::Failed,
                message.as_str(),
                false,
            ),
            ToolResponse::PendingApproval { .. } | ToolResponse::Denied { .. } => (
                Label::new(DataClass::Secret, true),
                Outcome::Failed,
                "",
                false,
            ),
        };
        let now = self.now();
        // docs/spec.md §3.4 `shows`: a value the answer shows raises its label, whichever
        // tool showed it; §3.7: what the answer showed, with the taint it raises.
        let shown = policy::values::in_answer(content);
        let by_shown = self.config.shown_label(&req.tool, args, &shown);
        let label = label.join(by_shown.label);
        let sightings = provenance::answered(req, args, &shown, label);
        let mut matched = own.clone();
        matched.rules.extend(by_shown.rules);
        let result = Event::result(
            req.session.clone(),
            req.call,
            req.tool.clone(),
            outcome,
            content,
            label.class,
            label.untrusted,
            truncated,
        )
        .with_label_rules(audit::LabelRuleRef::of(&self.config, &matched));
        self.make_durable(Durable {
            raise: Some(TaintRaise {
                session: req.session.clone(),
                class: label.class,
                untrusted: label.untrusted,
            }),
            events: vec![(now, result)],
            sightings,
            defer_sync: false,
        })
        .map_err(|f| match f {
            CommitFailed::Taint(e) => withheld("record the session's taint")(GateError::Shared(e)),
            CommitFailed::Audit(e) => withheld("audit the result")(GateError::Shared(e)),
        })?;
        // docs/spec.md §3.10: an answer of a source the person named vouches for its values.
        if outcome == Outcome::Result {
            self.endorse(req, args, content);
        }
        // The answer goes back with the label it raised the session to.
        Ok(match resp {
            ToolResponse::Result {
                content, truncated, ..
            } => ToolResponse::Result {
                content,
                class: label.class,
                untrusted: label.untrusted,
                truncated,
            },
            other => other,
        })
    }
}

/// The taint a call is decided at (docs/spec.md §3.3 step 4): the session's, raised to the
/// call's reach when it runs code boxmaker does not control.
pub(crate) fn at_reach(taint: Taint, reach: Option<DataClass>) -> Taint {
    match reach {
        Some(r) => Taint::new(config::box_label(taint.class(), r), taint.untrusted()),
        None => taint,
    }
}

/// The raise that commits, before its box starts, what a call of code boxmaker does not
/// control holds from its box's first instant, when it adds anything: its reach, and the
/// untrusted bit of its own label (`own_untrusted`) — its box can write the session's
/// workspace before it answers, and a file it leaves there is read by the session's other
/// calls at the session's floor (docs/spec.md §3.2).
pub(crate) fn reach_raise(
    req: &ToolRequest,
    taint: Taint,
    reach: Option<DataClass>,
    own_untrusted: bool,
) -> Option<TaintRaise> {
    let reach = reach?;
    let untrusted = own_untrusted && !taint.untrusted();
    (reach > taint.class() || untrusted).then(|| TaintRaise {
        session: req.session.clone(),
        class: reach.max(taint.class()),
        untrusted,
    })
}

/// The taint a call runs at: the one it was decided at (`at`), with the untrusted bit of
/// its own label for code boxmaker does not control (see [`reach_raise`], which commits
/// it): the runner's floor for the session starts from it.
pub(crate) fn run_taint(at: Taint, reach: Option<DataClass>, own_untrusted: bool) -> Taint {
    if reach.is_some() && own_untrusted {
        Taint::new(at.class(), true)
    } else {
        at
    }
}

/// The `decision` record of a request.
fn decision_event(
    req: &ToolRequest,
    taint: Taint,
    decision: Decision,
    approval: Option<String>,
    reach: Option<DataClass>,
    grant: Option<String>,
    provenance: Vec<audit::ProvenanceNote>,
) -> Event {
    let (verdict, reason) = match decision {
        Decision::Allow => (audit::Verdict::Allow, None),
        Decision::Ask => (audit::Verdict::Ask, None),
        Decision::Deny(r) => (audit::Verdict::Deny, Some(r)),
    };
    Event::Decision {
        session: req.session.clone(),
        call: req.call,
        tool: req.tool.clone(),
        class: taint.class(),
        untrusted: taint.untrusted(),
        decision: verdict,
        reason,
        approval,
        reach,
        grant,
        provenance,
    }
}

/// Why a call that policy says `ask` needs a person: untrusted content when some admitting
/// grant would allow the call but for `if_untrusted = "ask"` (a clean session would run it),
/// else the grant's `ask`.
fn ask_reason(e: &policy::Explanation) -> ApprovalReason {
    if e.lines
        .iter()
        .any(|l| l.verdict == policy::Verdict::AsksUntrusted)
    {
        ApprovalReason::UntrustedContent
    } else {
        ApprovalReason::GrantAsk
    }
}

/// The state directory the gate's sockets and files live in.
pub fn state_dir(config: &Config) -> &Path {
    &config.gate.state
}

#[cfg(test)]
mod tests {
    use super::operator::{check_pattern, is_session_pattern_byte, is_tool_pattern_byte};
    use super::*;

    fn config(text: &str) -> Config {
        config::parse(text, "t.toml", Path::new("/tmp")).unwrap()
    }

    const TOOLS: &str = r#"
[[tool]]
name = "read_file"
builtin = "read_file"
class = "confidential"

[[tool]]
name = "fetch"
mcp = ["f"]
class = "public"
untrusted = true

[[tool]]
name = "vault"
mcp = ["v"]
prefix = "sec"
class = "secret"
"#;

    #[test]
    fn floor_label_finds_builtin_exposed_and_prefixed_tools() {
        let c = config(TOOLS);
        assert_eq!(
            c.floor("read_file"),
            Label::new(DataClass::Confidential, false)
        );
        assert_eq!(c.floor("fetch_get"), Label::new(DataClass::Public, true));
        assert_eq!(c.floor("sec_open"), Label::new(DataClass::Secret, false));
        // `vault_open` is not how vault's tools are exposed; `fetchx` is not fetch's.
        assert_eq!(c.floor("vault_open"), Label::default());
        assert_eq!(c.floor("fetchx"), Label::default());
    }

    #[test]
    fn floor_label_of_an_unprefixed_server_covers_every_name() {
        let c = config(&format!(
            "{TOOLS}\n[[tool]]\nname = \"loose\"\nmcp = [\"l\"]\nprefix = \"\"\nclass = \"internal\"\n"
        ));
        assert_eq!(c.floor("anything"), Label::new(DataClass::Internal, false));
        // The highest of every server that could have exposed it.
        assert_eq!(c.floor("fetch_get"), Label::new(DataClass::Internal, true));
    }

    #[test]
    fn floor_label_of_a_server_covers_the_mounts_its_box_shows() {
        let c = config(&format!(
            "{TOOLS}\n[[mount]]\nhost = \"/srv/data\"\nat = \"/data/s\"\nclass = \"secret\"\n"
        ));
        // A downstream server's failure may quote a secret mount; a builtin's floor stays.
        assert_eq!(c.floor("fetch_get").class, DataClass::Secret);
        assert_eq!(c.floor("read_file"), c.tool("read_file").unwrap().label());
    }

    #[test]
    fn check_pattern_refuses_empty_long_and_foreign_bytes() {
        assert!(check_pattern("fetch_*", "tool", is_tool_pattern_byte).is_ok());
        assert!(check_pattern("review-?.x:1", "sessions", is_session_pattern_byte).is_ok());
        assert!(check_pattern("", "tool", is_tool_pattern_byte).is_err());
        assert!(check_pattern("a.b", "tool", is_tool_pattern_byte).is_err());
        assert!(check_pattern(&"a".repeat(300), "tool", is_tool_pattern_byte).is_err());
        assert!(check_pattern("é", "sessions", is_session_pattern_byte).is_err());
    }

    #[test]
    fn ask_reason_is_untrusted_content_only_when_a_grant_would_allow_a_clean_session() {
        let p = |s: &str| Pattern::new(s).unwrap();
        let grants: Grants = [
            Grant::new(p("sh"), policy::Effect::Allow).if_untrusted(policy::Effect::Ask),
            Grant::new(p("run"), policy::Effect::Ask),
        ]
        .into_iter()
        .collect();
        let r = |tool: &str| ToolRequest {
            session: SessionId::new("s").unwrap(),
            call: proto::CallId(1),
            tool: tool.into(),
            arguments: "{}".into(),
        };
        let dirty = Taint::new(DataClass::Public, true);
        let args = Arguments::parse("{}");
        let reason = |req: &ToolRequest| {
            ask_reason(&policy::explain_call(
                &grants,
                &req.session,
                &req.tool,
                &args,
                dirty,
                Timestamp(1),
            ))
        };
        assert_eq!(reason(&r("sh")), ApprovalReason::UntrustedContent);
        assert_eq!(reason(&r("run")), ApprovalReason::GrantAsk);
    }
}
