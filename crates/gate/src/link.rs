//! The gate's side of the runner connection (docs/spec.md §1): [`ToolRunner`], the one thing the gate
//! asks of a runner, and [`RunnerLink`], which asks it over a frame stream.
//!
//! The gate trusts the runner to run tools, not to speak well. The link is an allowlist in
//! the monitor's sense: the runner may answer only an id the gate asked, only once, only
//! `final: true`, and only `result` or `failed`. Anything else — an unknown or repeated id, a
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
use std::sync::{Arc, Mutex, PoisonError};

use proto::{Envelope, FrameError, Message, ToolRequest, ToolResponse, read_frame, write_frame};

/// What the gate needs of a runner: one final answer per request, `result` or `failed`.
///
/// Implementations must not block forever (the runner's box has a wall-clock limit) and must
/// answer `failed` rather than panic when something goes wrong.
pub trait ToolRunner: Send + Sync {
    /// Runs the tool of `req` once and returns its final answer.
    fn run(&self, req: &ToolRequest) -> ToolResponse;
}

impl<T: ToolRunner + ?Sized> ToolRunner for Arc<T> {
    fn run(&self, req: &ToolRequest) -> ToolResponse {
        (**self).run(req)
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
    fn run(&self, req: &ToolRequest) -> ToolResponse {
        // Not holding the lock while the call runs: a replace never waits for a tool.
        let link = self.current();
        link.run(req)
    }
}

/// The state shared by callers and the reader thread.
#[derive(Debug, Default)]
struct LinkState {
    next_id: u64,
    waiting: HashMap<u64, Sender<ToolResponse>>,
    /// Why the link stopped, once it has.
    dead: Option<String>,
}

impl LinkState {
    /// Marks the link dead (first reason wins) and fails every waiting call.
    fn kill(&mut self, why: String) {
        if self.dead.is_none() {
            self.dead = Some(why);
        }
        let message = stopped_message(self.dead.as_deref().unwrap_or_default());
        for (_, tx) in self.waiting.drain() {
            // The caller may have gone; nothing to do then.
            let _ = tx.send(ToolResponse::Failed {
                message: message.clone(),
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
        let state = Arc::new(Mutex::new(LinkState {
            next_id: 1,
            ..LinkState::default()
        }));
        let for_reader = Arc::clone(&state);
        std::thread::spawn(move || read_answers(reader, &for_reader));
        RunnerLink {
            writer: Mutex::new(Box::new(writer)),
            state,
        }
    }

    /// Why the link stopped, or `None` while it works. A dead link never comes back.
    pub fn dead_reason(&self) -> Option<String> {
        lock(&self.state).dead.clone()
    }

    /// How many calls wait for the runner's answer.
    pub fn in_flight(&self) -> usize {
        lock(&self.state).waiting.len()
    }

    /// Registers a call: a fresh id and the channel its answer will come on, or the
    /// `failed` answer if the link is dead.
    fn register(&self) -> Result<(u64, Receiver<ToolResponse>), ToolResponse> {
        let mut st = lock(&self.state);
        if let Some(why) = &st.dead {
            return Err(ToolResponse::Failed {
                message: stopped_message(why),
            });
        }
        let id = st.next_id;
        st.next_id = st.next_id.wrapping_add(1).max(1);
        let (tx, rx) = mpsc::channel();
        st.waiting.insert(id, tx);
        Ok((id, rx))
    }
}

impl ToolRunner for RunnerLink {
    fn run(&self, req: &ToolRequest) -> ToolResponse {
        let (id, rx) = match self.register() {
            Ok(pair) => pair,
            Err(failed) => return failed,
        };
        let sent = {
            let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            write_frame(&mut *w, &Envelope::request(id, req.clone()))
        };
        if let Err(e) = sent {
            let why = match e {
                // Our own request did not fit: only this call fails, the link is fine.
                FrameError::TooLarge(n) => {
                    lock(&self.state).waiting.remove(&id);
                    return ToolResponse::Failed {
                        message: format!(
                            "the request is {n} bytes encoded, over the frame limit of {}",
                            proto::MAX_FRAME
                        ),
                    };
                }
                other => format!("could not write to the runner: {other}"),
            };
            lock(&self.state).kill(why);
        }
        match rx.recv() {
            Ok(resp) => resp,
            // The sender went away without an answer: only `kill` drops senders unanswered,
            // and it answers first, so this is a link that vanished.
            Err(_) => ToolResponse::Failed {
                message: stopped_message("the link was dropped"),
            },
        }
    }
}

fn lock(state: &Mutex<LinkState>) -> std::sync::MutexGuard<'_, LinkState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The reader thread: dispatches each answer to its caller; on the first fault, kills the
/// link and returns.
fn read_answers<R: Read>(mut reader: R, state: &Mutex<LinkState>) {
    let why = loop {
        let env = match read_frame(&mut reader) {
            Ok(env) => env,
            Err(FrameError::Closed) => break "the connection closed".to_string(),
            Err(e) => break format!("it sent a bad frame: {e}"),
        };
        let resp = match env.msg {
            Message::ToolResponse(
                resp @ (ToolResponse::Result { .. } | ToolResponse::Failed { .. }),
            ) if env.r#final => resp,
            Message::ToolResponse(ToolResponse::Result { .. } | ToolResponse::Failed { .. }) => {
                break format!("it sent a non-final answer to request {}", env.id);
            }
            Message::ToolResponse(ToolResponse::PendingApproval { .. }) => {
                break format!(
                    "it answered request {} with pending_approval, which only the gate may say",
                    env.id
                );
            }
            Message::ToolResponse(ToolResponse::Denied { .. }) => {
                break format!(
                    "it answered request {} with denied, which only the gate may say",
                    env.id
                );
            }
            Message::ToolRequest(_) => break "it sent a tool_request".to_string(),
            Message::Error(e) => {
                break format!("it sent an error ({}): {}", e.code.as_str(), e.detail);
            }
        };
        let mut st = lock(state);
        match st.waiting.remove(&env.id) {
            Some(tx) => {
                let _ = tx.send(resp);
            }
            None => {
                break format!(
                    "it answered request {}, which is not waiting (unknown or already answered)",
                    env.id
                );
            }
        }
    };
    lock(state).kill(why);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{CallId, DataClass, SessionId};
    use std::os::unix::net::UnixStream;

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
            handles.push(std::thread::spawn(move || link.run(&req())));
        }
        // Read both requests, answer in reverse order with content naming the id.
        let a = read_frame(&mut runner_end).unwrap();
        let b = read_frame(&mut runner_end).unwrap();
        for env in [b, a] {
            let resp = ToolResponse::Result {
                content: format!("id {}", env.id),
                class: DataClass::Public,
                untrusted: false,
                truncated: false,
            };
            write_frame(&mut runner_end, &Envelope::response(env.id, resp)).unwrap();
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
        assert!(matches!(handle.run(&req()), ToolResponse::Failed { .. }));
        assert!(handle.dead_reason().is_some());
        let (gate_end, mut runner_end) = UnixStream::pair().unwrap();
        handle.replace(RunnerLink::new(gate_end.try_clone().unwrap(), gate_end));
        let answer = std::thread::spawn(move || {
            let env = read_frame(&mut runner_end).unwrap();
            let resp = ToolResponse::Failed {
                message: "fresh".into(),
            };
            write_frame(&mut runner_end, &Envelope::response(env.id, resp)).unwrap();
        });
        let boxed: Box<dyn ToolRunner> = Box::new(Arc::new(handle));
        assert_eq!(
            boxed.run(&req()),
            ToolResponse::Failed {
                message: "fresh".into()
            }
        );
        answer.join().unwrap();
    }
}
