//! The gate's side of the runner connection (docs/spec.md §1): [`ToolRunner`], the one thing the gate
//! asks of a runner, and [`RunnerLink`], which asks it over a frame stream.
//!
//! The gate trusts the runner to run tools, not to speak well. The link is an allowlist in
//! the monitor's sense: the runner may answer only an id the gate asked, only once, only
//! `final: true`, and only `result` or `failed` (a `digest` only `digests` or `failed`);
//! besides answers it may send two kinds of **event**, with id 0, which go to the link's
//! [`EventSink`] and are never taken for an answer: `egress` (a box's connection through the
//! egress proxy, docs/spec.md §2.5), for the gate's audit log, and `floated` (a box read
//! above what its session held, §3.6), which the gate commits into the session's taint
//! before the reader reads on. Anything else — an unknown or repeated id, an event with another id, a
//! `pending_approval` or `denied` (those are the gate's words, not the runner's), an `error`
//! envelope, a bad frame, the stream ending — means the runner is broken: the link goes
//! **dead**, and every call waiting on it, and every later one, gets
//! `failed: "the runner stopped …"`. Never silence, never a hang. The supervisor sees
//! [`RunnerLink::dead_reason`] and restarts the runner with a fresh link.
//!
//! ```text
//!  caller threads ──run()──▶ [writer mutex] ──frames──▶ runner
//!        ▲                                               │
//!        └── one-shot channel per id ◀── reader thread ◀─┘
//! ```

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use policy::Label;
use policy::Taint;
use proto::run::{
    BoxKind, EgressRecord, FileDigest, Order, RunnerAnswer, RunnerRequest, read_runner_reply,
    write_runner_request,
};
use proto::{CallId, FrameError, SessionId, ToolRequest, ToolResponse};

/// What the gate does with the events a runner reports beside its answers.
pub trait RunnerEvents: Send + Sync {
    /// A box's connection through the egress proxy was refused, failed, opened or ended.
    /// Must not block for long: the link's reader, which delivers every answer too, waits.
    fn egress(&self, record: EgressRecord);

    /// A box of `session` (of `tool`, running `call` if one) read data labelled `label` from
    /// a destination (its class, and untrusted unless the destination's rule says trusted),
    /// above what its runner knew the session held: the session's taint rises by it.
    /// Returns once that is durable (or could not be made so), since the link's reader takes
    /// no other reply — no answer of the box's call — until it returns.
    fn floated(&self, session: SessionId, tool: String, call: Option<CallId>, label: Label);

    /// A box of `session` (of `tool`, running `call` if one) made `path`, a name a writable
    /// mount keeps, and the runner moved it aside to `to`: audited.
    fn moved(
        &self,
        session: SessionId,
        tool: String,
        call: Option<CallId>,
        path: String,
        to: String,
    ) {
        let _ = (session, tool, call, path, to);
    }

    /// A box of `session` started for `call` (if one), taking `micros` (docs/spec.md §8);
    /// sent only by a runner started with telemetry on. Must not block.
    fn boxed(&self, session: SessionId, call: Option<CallId>, kind: BoxKind, micros: u64) {
        let _ = (session, call, kind, micros);
    }
}

/// Where a link delivers runner events: set once the gate exists (the gate is made after
/// its runner), shared by every link a supervisor makes. Until it is set, events are
/// dropped. (The receiver should hold the gate weakly: the gate holds its runner.)
#[derive(Clone, Default)]
pub struct EventSink(Arc<RwLock<Option<Arc<dyn RunnerEvents>>>>);

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = self
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        f.debug_struct("EventSink").field("set", &set).finish()
    }
}

impl EventSink {
    /// From now on, events go to `to`.
    pub fn set(&self, to: Arc<dyn RunnerEvents>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(to);
    }

    /// Where events go now, if anywhere yet.
    fn get(&self) -> Option<Arc<dyn RunnerEvents>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn egress(&self, record: EgressRecord) {
        if let Some(to) = self.get() {
            to.egress(record);
        }
    }

    fn boxed(&self, session: SessionId, call: Option<CallId>, kind: BoxKind, micros: u64) {
        if let Some(to) = self.get() {
            to.boxed(session, call, kind, micros);
        }
    }

    fn floated(&self, session: SessionId, tool: String, call: Option<CallId>, label: Label) {
        if let Some(to) = self.get() {
            to.floated(session, tool, call, label);
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
        if let Some(sink) = self.get() {
            sink.moved(session, tool, call, path, to);
        }
    }
}

/// What a runner cleared of a session an operator reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cleared {
    /// The session's downstream servers that were stopped.
    pub servers: u32,
    /// Whether it had a workspace, now emptied.
    pub workspace: bool,
}

/// What the gate needs of a runner: one final answer per call, `result` or `failed`; and,
/// when an operator resets a session, that what remembers the session is cleared.
///
/// Implementations must not block forever (the runner's box has a wall-clock limit) and must
/// answer `failed` rather than panic when something goes wrong.
pub trait ToolRunner: Send + Sync {
    /// Runs the tool of `req` once, in a session whose committed taint is `taint` (the
    /// call's reach already raised into it), and returns its final answer.
    fn run(&self, req: &ToolRequest, taint: Taint) -> ToolResponse {
        self.run_approved(req, taint, &[])
    }

    /// As [`ToolRunner::run`], for a call a person approved with `files` (docs/spec.md
    /// §3.3 step 6): the runner runs it only while each file still binds the same, and
    /// runs its program from a copy of what it hashed. Empty `files`: a plain run.
    fn run_approved(&self, req: &ToolRequest, taint: Taint, files: &[FileDigest]) -> ToolResponse;

    /// What the call would run: a digest of each file its arguments name in `/work` or a
    /// writable mount (empty for a tool that runs no such file). `Err` is why the runner
    /// could not look; nothing runs either way.
    fn digest(&self, req: &ToolRequest) -> Result<Vec<FileDigest>, String>;

    /// As [`ToolRunner::run_approved`], but `admit` says, at the moment the call would be sent,
    /// whether it is sent at all: refused (`Err`, why), it answers `failed` with that and
    /// never reaches the runner. A runner that is sent resets too asks `admit` and sends the
    /// call as one step with respect to its resets, so that a call admitted before a reset
    /// reaches the runner before the reset does (and is stopped by it). The default asks,
    /// then runs.
    fn run_if(
        &self,
        req: &ToolRequest,
        taint: Taint,
        files: &[FileDigest],
        admit: &mut dyn FnMut() -> Result<(), String>,
    ) -> ToolResponse {
        match admit() {
            Ok(()) => self.run_approved(req, taint, files),
            Err(message) => ToolResponse::Failed { message },
        }
    }

    /// Resets `session` on the runner's side (docs/spec.md §4, "A reset ends the session
    /// first"): ends every box and server of the session, its running calls included
    /// (they answer `failed`, before this returns), and empties its workspace. `Err` is
    /// why it could not.
    fn reset(&self, session: &SessionId) -> Result<Cleared, String>;
}

impl<T: ToolRunner + ?Sized> ToolRunner for Arc<T> {
    fn run(&self, req: &ToolRequest, taint: Taint) -> ToolResponse {
        (**self).run(req, taint)
    }

    fn run_approved(&self, req: &ToolRequest, taint: Taint, files: &[FileDigest]) -> ToolResponse {
        (**self).run_approved(req, taint, files)
    }

    fn digest(&self, req: &ToolRequest) -> Result<Vec<FileDigest>, String> {
        (**self).digest(req)
    }

    fn run_if(
        &self,
        req: &ToolRequest,
        taint: Taint,
        files: &[FileDigest],
        admit: &mut dyn FnMut() -> Result<(), String>,
    ) -> ToolResponse {
        (**self).run_if(req, taint, files, admit)
    }

    fn reset(&self, session: &SessionId) -> Result<Cleared, String> {
        (**self).reset(session)
    }
}

/// A [`ToolRunner`] whose link the supervisor can replace when the runner dies and is
/// restarted: calls already on the old link end `failed` (it is dead), calls from then on go
/// to the new one. Give the gate `Box::new(Arc::clone(&handle))` and keep the handle.
#[derive(Debug)]
pub struct RunnerHandle {
    link: std::sync::RwLock<Arc<RunnerLink>>,
}

impl RunnerHandle {
    pub fn new(link: RunnerLink) -> RunnerHandle {
        RunnerHandle {
            link: std::sync::RwLock::new(Arc::new(link)),
        }
    }

    /// The link in use now.
    pub fn current(&self) -> Arc<RunnerLink> {
        Arc::clone(&self.link.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Puts a fresh link (to a restarted runner) in place of the current one.
    pub fn replace(&self, link: RunnerLink) {
        *self.link.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(link);
    }

    /// Why the current link stopped, or `None` while it works.
    pub fn dead_reason(&self) -> Option<String> {
        self.current().dead_reason()
    }
}

impl ToolRunner for RunnerHandle {
    fn run_approved(&self, req: &ToolRequest, taint: Taint, files: &[FileDigest]) -> ToolResponse {
        // Not holding the lock while the call runs: a replace never waits for a tool.
        let link = self.current();
        link.run_approved(req, taint, files)
    }

    fn digest(&self, req: &ToolRequest) -> Result<Vec<FileDigest>, String> {
        let link = self.current();
        link.digest(req)
    }

    fn run_if(
        &self,
        req: &ToolRequest,
        taint: Taint,
        files: &[FileDigest],
        admit: &mut dyn FnMut() -> Result<(), String>,
    ) -> ToolResponse {
        let link = self.current();
        link.run_if(req, taint, files, admit)
    }

    fn reset(&self, session: &SessionId) -> Result<Cleared, String> {
        let link = self.current();
        link.reset(session)
    }
}

/// Which kind of answer a request waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wants {
    Call,
    Reset,
    Digest,
}

/// The state shared by callers and the reader thread.
#[derive(Debug, Default)]
struct LinkState {
    next_id: u64,
    waiting: HashMap<u64, (Wants, Sender<RunnerAnswer>)>,
    /// Requests the gate gave up on ([`RunnerLink::backstop`]): their late answers are
    /// dropped, not taken for a runner answering what nobody asked.
    abandoned: std::collections::HashSet<u64>,
    /// Why the link stopped, once it has.
    dead: Option<String>,
}

impl LinkState {
    /// Marks the link dead (first reason wins) and fails every waiting request.
    fn kill(&mut self, why: String) {
        if self.dead.is_none() {
            self.dead = Some(why);
        }
        let message = stopped_message(self.dead.as_deref().unwrap_or_default());
        for (_, (_, tx)) in self.waiting.drain() {
            // The caller may have gone; nothing to do then.
            let _ = tx.send(RunnerAnswer::Answer {
                response: ToolResponse::Failed {
                    message: message.clone(),
                },
            });
        }
    }
}

fn stopped_message(why: &str) -> String {
    format!("the runner stopped before answering ({why}); the call did not complete")
}

type SharedWriter = Mutex<Box<dyn Write + Send>>;

/// A [`ToolRunner`] over a frame stream to a runner process (a socketpair, usually).
pub struct RunnerLink {
    writer: SharedWriter,
    state: Arc<Mutex<LinkState>>,
    /// The longest the gate waits for one answer ([`RunnerLink::backstop`]).
    backstop: Option<Duration>,
}

impl std::fmt::Debug for RunnerLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnerLink")
            .field("dead", &self.dead_reason())
            .finish_non_exhaustive()
    }
}

impl RunnerLink {
    /// Starts the link: `reader` and `writer` are the two directions of one connection to a
    /// runner (for a `UnixStream`, the stream and its `try_clone`). A thread reads the
    /// runner's answers until the stream ends or the runner misbehaves.
    pub fn new<R, W>(reader: R, writer: W) -> RunnerLink
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        Self::with_events(reader, writer, EventSink::default())
    }

    /// As [`RunnerLink::new`], delivering the runner's events to `events`.
    pub fn with_events<R, W>(reader: R, writer: W, events: EventSink) -> RunnerLink
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        let state = Arc::new(Mutex::new(LinkState {
            next_id: 1,
            ..LinkState::default()
        }));
        let for_reader = Arc::clone(&state);
        std::thread::spawn(move || read_answers(reader, &for_reader, &events));
        RunnerLink {
            writer: Mutex::new(Box::new(writer)),
            state,
            backstop: None,
        }
    }

    /// The gate's own bound on one answer, beyond every bound the runner keeps (a box's
    /// wall clock, a server's deadlines, a secret command's): a runner that never answers
    /// (a bug, a wait nobody bounded) fails the call after `wait` instead of holding it and
    /// the session's slot for ever. What the runner may still do for it is not waited for;
    /// its late answer is dropped, never released.
    pub fn backstop(mut self, wait: Duration) -> Self {
        self.backstop = Some(wait);
        self
    }

    /// Why the link stopped, or `None` while it works. A dead link never comes back.
    pub fn dead_reason(&self) -> Option<String> {
        lock(&self.state).dead.clone()
    }

    /// How many requests wait for the runner's answer.
    pub fn in_flight(&self) -> usize {
        lock(&self.state).waiting.len()
    }

    /// Sends `order` and waits for its answer. A dead link, or one that dies meanwhile,
    /// answers `Answer(failed)`; an order that does not fit a frame fails alone. `admit` is
    /// asked under the writer's lock, just before the order is written: what it admits is
    /// on the stream before any order written after it returned.
    fn ask(
        &self,
        wants: Wants,
        order: Order,
        admit: &mut dyn FnMut() -> Result<(), String>,
    ) -> RunnerAnswer {
        let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(message) = admit() {
            return failed_answer(message);
        }
        let (id, rx) = {
            let mut st = lock(&self.state);
            if let Some(why) = &st.dead {
                return failed_answer(stopped_message(why));
            }
            let id = st.next_id;
            st.next_id = st.next_id.wrapping_add(1).max(1);
            let (tx, rx): (Sender<RunnerAnswer>, Receiver<RunnerAnswer>) = mpsc::channel();
            st.waiting.insert(id, (wants, tx));
            (id, rx)
        };
        let sent = write_runner_request(&mut *w, &RunnerRequest::new(id, order));
        drop(w);
        if let Err(e) = sent {
            let why = match e {
                // Our own request did not fit: only this call fails, the link is fine.
                FrameError::TooLarge(n) => {
                    lock(&self.state).waiting.remove(&id);
                    return failed_answer(format!(
                        "the request is {n} bytes encoded, over the frame limit of {}",
                        proto::MAX_FRAME
                    ));
                }
                other => format!("could not write to the runner: {other}"),
            };
            lock(&self.state).kill(why);
        }
        // The sender went away without an answer: only `kill` drops senders unanswered,
        // and it answers first, so this is a link that vanished.
        let vanished = || failed_answer(stopped_message("the link was dropped"));
        let Some(wait) = self.backstop else {
            return rx.recv().unwrap_or_else(|_| vanished());
        };
        match rx.recv_timeout(wait) {
            Ok(answer) => answer,
            Err(mpsc::RecvTimeoutError::Disconnected) => vanished(),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Answered meanwhile? Then that answer stands.
                let gone = {
                    let mut st = lock(&self.state);
                    let gone = st.waiting.remove(&id).is_some();
                    if gone {
                        st.abandoned.insert(id);
                    }
                    gone
                };
                match rx.try_recv() {
                    Ok(answer) if !gone => answer,
                    _ => failed_answer(format!(
                        "the runner did not answer within {} s, so the gate gave the call up \
                         (what the tool may still do is not waited for, and nothing it answers \
                         later is released)",
                        wait.as_secs()
                    )),
                }
            }
        }
    }
}

fn failed_answer(message: String) -> RunnerAnswer {
    RunnerAnswer::Answer {
        response: ToolResponse::Failed { message },
    }
}

impl ToolRunner for RunnerLink {
    fn run_approved(&self, req: &ToolRequest, taint: Taint, files: &[FileDigest]) -> ToolResponse {
        self.run_if(req, taint, files, &mut || Ok(()))
    }

    fn run_if(
        &self,
        req: &ToolRequest,
        taint: Taint,
        files: &[FileDigest],
        admit: &mut dyn FnMut() -> Result<(), String>,
    ) -> ToolResponse {
        let order = Order::Call {
            request: req.clone(),
            class: taint.class(),
            untrusted: taint.untrusted(),
            files: files.to_vec(),
        };
        match self.ask(Wants::Call, order, admit) {
            RunnerAnswer::Answer { response } => response,
            // The reader lets only an `answer` through for a call.
            other => ToolResponse::Failed {
                message: stopped_message(&format!("it answered a call with {other:?}")),
            },
        }
    }

    fn digest(&self, req: &ToolRequest) -> Result<Vec<FileDigest>, String> {
        match self.ask(
            Wants::Digest,
            Order::Digest {
                request: req.clone(),
            },
            &mut || Ok(()),
        ) {
            RunnerAnswer::Digests { files } => Ok(files),
            RunnerAnswer::Answer {
                response: ToolResponse::Failed { message },
            } => Err(message),
            other => Err(format!("the runner answered a digest with {other:?}")),
        }
    }

    fn reset(&self, session: &SessionId) -> Result<Cleared, String> {
        match self.ask(
            Wants::Reset,
            Order::ResetSession {
                session: session.clone(),
            },
            &mut || Ok(()),
        ) {
            RunnerAnswer::Reset { servers, workspace } => Ok(Cleared { servers, workspace }),
            RunnerAnswer::Answer {
                response: ToolResponse::Failed { message },
            } => Err(message),
            other => Err(format!("the runner answered the reset with {other:?}")),
        }
    }
}

fn lock(state: &Mutex<LinkState>) -> std::sync::MutexGuard<'_, LinkState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The reader thread: dispatches each answer to its caller; on the first fault, kills the
/// link and returns.
fn read_answers<R: Read>(mut reader: R, state: &Mutex<LinkState>, events: &EventSink) {
    let why = loop {
        let reply = match read_runner_reply(&mut reader) {
            Ok(reply) => reply,
            Err(FrameError::Closed) => break "the connection closed".to_string(),
            Err(e) => break format!("it sent a bad frame: {e}"),
        };
        let id = reply.id;
        // An event answers no request: id 0 only, and never taken for an answer.
        if let RunnerAnswer::Egress { record } = reply.reply {
            if id != 0 {
                break format!("it sent an egress event with id {id} (events carry id 0)");
            }
            events.egress(record);
            continue;
        }
        if let RunnerAnswer::Boxed {
            session,
            call,
            kind,
            micros,
            ..
        } = reply.reply
        {
            if id != 0 {
                break format!("it sent a boxed event with id {id} (events carry id 0)");
            }
            events.boxed(session, call, kind, micros);
            continue;
        }
        if let RunnerAnswer::Moved {
            session,
            tool,
            call,
            path,
            to,
        } = reply.reply
        {
            if id != 0 {
                break format!("it sent a moved event with id {id} (events carry id 0)");
            }
            events.moved(session, tool, call, path, to);
            continue;
        }
        if let RunnerAnswer::Floated {
            session,
            tool,
            call,
            class,
            untrusted,
        } = reply.reply
        {
            if id != 0 {
                break format!("it sent a floated event with id {id} (events carry id 0)");
            }
            // Before the next reply: the call's answer, which may be a `failed` that carries
            // no label, must find the rise committed — class and untrusted bit.
            events.floated(session, tool, call, Label::new(class, untrusted));
            continue;
        }
        let mut st = lock(state);
        if st.abandoned.remove(&id) {
            continue;
        }
        let Some((wants, tx)) = st.waiting.remove(&id) else {
            break format!(
                "it answered request {id}, which is not waiting (unknown or already answered)"
            );
        };
        let fits = match (&reply.reply, wants) {
            (
                RunnerAnswer::Answer {
                    response: ToolResponse::Result { .. } | ToolResponse::Failed { .. },
                },
                Wants::Call,
            )
            | (RunnerAnswer::Reset { .. }, Wants::Reset)
            | (RunnerAnswer::Digests { .. }, Wants::Digest)
            // A reset or a digest the runner could not do: `failed`, with why.
            | (
                RunnerAnswer::Answer {
                    response: ToolResponse::Failed { .. },
                },
                Wants::Reset | Wants::Digest,
            ) => None,
            (
                RunnerAnswer::Answer {
                    response: ToolResponse::PendingApproval { .. },
                },
                _,
            ) => Some(format!(
                "it answered request {id} with pending_approval, which only the gate may say"
            )),
            (
                RunnerAnswer::Answer {
                    response: ToolResponse::Denied { .. },
                },
                _,
            ) => Some(format!(
                "it answered request {id} with denied, which only the gate may say"
            )),
            (RunnerAnswer::Error { code, detail }, _) => {
                Some(format!("it sent an error ({}): {detail}", code.as_str()))
            }
            (other, _) => Some(format!(
                "it answered request {id} with an answer of another kind ({other:?})"
            )),
        };
        if let Some(why) = fits {
            // Put the caller back so `kill` answers it.
            st.waiting.insert(id, (wants, tx));
            break why;
        }
        let _ = tx.send(reply.reply);
    };
    lock(state).kill(why);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::run::{RunnerReply, read_runner_request, write_runner_reply};
    use proto::{CallId, DataClass};
    use std::os::unix::net::UnixStream;

    const CLEAN: Taint = Taint::CLEAN;

    fn req() -> ToolRequest {
        ToolRequest {
            session: SessionId::new("s1").unwrap(),
            call: CallId(1),
            tool: "t".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn answers_reach_their_callers_by_id() {
        let (gate_end, mut runner_end) = UnixStream::pair().unwrap();
        let link = Arc::new(RunnerLink::new(gate_end.try_clone().unwrap(), gate_end));
        let mut handles = Vec::new();
        for _ in 0..2 {
            let link = Arc::clone(&link);
            handles.push(std::thread::spawn(move || link.run(&req(), CLEAN)));
        }
        // Read both requests, answer in reverse order with content naming the id.
        let a = read_runner_request(&mut runner_end).unwrap();
        let b = read_runner_request(&mut runner_end).unwrap();
        for r in [b, a] {
            let resp = ToolResponse::Result {
                content: format!("id {}", r.id),
                class: DataClass::Public,
                untrusted: false,
                truncated: false,
            };
            write_runner_reply(&mut runner_end, &RunnerReply::answer(r.id, resp)).unwrap();
        }
        let mut contents: Vec<String> = handles
            .into_iter()
            .map(|h| match h.join().unwrap() {
                ToolResponse::Result { content, .. } => content,
                other => panic!("{other:?}"),
            })
            .collect();
        contents.sort();
        assert_eq!(contents, vec!["id 1", "id 2"]);
        assert!(link.dead_reason().is_none());
        assert_eq!(link.in_flight(), 0);
    }

    #[test]
    fn a_handle_moves_calls_to_a_replaced_link() {
        let (dead_end, runner_end) = UnixStream::pair().unwrap();
        drop(runner_end);
        let handle = RunnerHandle::new(RunnerLink::new(dead_end.try_clone().unwrap(), dead_end));
        assert!(matches!(
            handle.run(&req(), CLEAN),
            ToolResponse::Failed { .. }
        ));
        assert!(handle.dead_reason().is_some());
        let (gate_end, mut runner_end) = UnixStream::pair().unwrap();
        handle.replace(RunnerLink::new(gate_end.try_clone().unwrap(), gate_end));
        let answer = std::thread::spawn(move || {
            let r = read_runner_request(&mut runner_end).unwrap();
            let resp = ToolResponse::Failed {
                message: "fresh".into(),
            };
            write_runner_reply(&mut runner_end, &RunnerReply::answer(r.id, resp)).unwrap();
            // A reset travels the same link and gets its own kind of answer.
            let r = read_runner_request(&mut runner_end).unwrap();
            assert!(matches!(r.order, Order::ResetSession { .. }));
            let cleared = RunnerAnswer::Reset {
                servers: 2,
                workspace: true,
            };
            write_runner_reply(&mut runner_end, &RunnerReply::new(r.id, cleared)).unwrap();
        });
        let boxed: Box<dyn ToolRunner> = Box::new(Arc::new(handle));
        assert_eq!(
            boxed.run(&req(), CLEAN),
            ToolResponse::Failed {
                message: "fresh".into()
            }
        );
        assert_eq!(
            boxed.reset(&req().session),
            Ok(Cleared {
                servers: 2,
                workspace: true
            })
        );
        answer.join().unwrap();
    }

    #[test]
    fn a_digest_gets_digests_and_a_call_answered_with_digests_kills_the_link() {
        let (gate_end, mut runner_end) = UnixStream::pair().unwrap();
        let link = Arc::new(RunnerLink::new(gate_end.try_clone().unwrap(), gate_end));
        let t = std::thread::spawn(move || {
            let r = read_runner_request(&mut runner_end).unwrap();
            assert!(matches!(r.order, Order::Digest { .. }), "{r:?}");
            let files = vec![];
            write_runner_reply(
                &mut runner_end,
                &RunnerReply::new(r.id, RunnerAnswer::Digests { files }),
            )
            .unwrap();
            // A call answered with digests is not an answer to a call.
            let r = read_runner_request(&mut runner_end).unwrap();
            write_runner_reply(
                &mut runner_end,
                &RunnerReply::new(r.id, RunnerAnswer::Digests { files: vec![] }),
            )
            .unwrap();
            runner_end
        });
        assert_eq!(link.digest(&req()), Ok(vec![]));
        assert!(matches!(
            link.run(&req(), CLEAN),
            ToolResponse::Failed { .. }
        ));
        assert!(link.dead_reason().unwrap().contains("another kind"));
        drop(t.join().unwrap());
    }

    #[test]
    fn a_reset_answered_as_a_call_kills_the_link() {
        let (gate_end, mut runner_end) = UnixStream::pair().unwrap();
        let link = RunnerLink::new(gate_end.try_clone().unwrap(), gate_end);
        let t = std::thread::spawn(move || {
            let r = read_runner_request(&mut runner_end).unwrap();
            let resp = ToolResponse::Result {
                content: String::new(),
                class: DataClass::Public,
                untrusted: false,
                truncated: false,
            };
            write_runner_reply(&mut runner_end, &RunnerReply::answer(r.id, resp)).unwrap();
            runner_end
        });
        assert!(link.reset(&req().session).is_err());
        assert!(link.dead_reason().unwrap().contains("another kind"));
        drop(t.join().unwrap());
    }
}
