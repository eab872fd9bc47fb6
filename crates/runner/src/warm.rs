//! Warm file boxes: boxmaker's own file tools (`read_file`, `write_file`, `list_dir`) are
//! served by one long-running box per (session, tool) instead of a fresh box per call
//! (docs/spec.md §4, "Warm file boxes").
//!
//! ```text
//!  file call ──▶ Warm::call(session, tool, mounts) ──▶ the slot's box, if its mounts are the
//!                 │                                     call's, else a new one (the old one
//!                 │                                     killed first)
//!                 └── request frame ──stdin──▶ /.boxmaker/boxmaker __boxmaker-inbox-serve
//!                     reply frame  ◀──stdout──        (boxmaker's code, never the agent's)
//! ```
//!
//! Why this is as sound as a fresh box: the box runs only the boxmaker binary's in-box file
//! code ([`crate::inbox::serve`]) — no byte the agent chose is ever executed there, the
//! arguments are data — and it is built exactly as that call's fresh box would be (the
//! session's workspace, the tool's mounts writable only where the session's label allows
//! now, no network). A call whose box would differ (the label rose and a mount became
//! read-only, say) gets a new box, the old one killed and reaped first. One call at a time per
//! box. A call's box is under its session's resets like any other box, and a reset stops
//! every warm box of the session before its workspace goes. An idle box ends after
//! [`IDLE`]; a box that does not answer within the call's timeout is killed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use proto::SessionId;
use sandbox::{BoxProcess, HelperCommand, Mount, Spec};

use crate::inbox::{InboxReply, InboxRequest, REPLY_LIMIT, read_frame, write_frame};
use crate::running::Admitted;

/// How long a warm box waits for its next call before it is stopped.
pub const IDLE: Duration = Duration::from_secs(300);
/// How long a warm box may live at most (it is replaced after that).
const LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// How often idle boxes are looked for.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// The warm boxes of one runner: at most one per (session, tool).
#[derive(Debug, Default)]
pub(crate) struct Warm {
    slots: Mutex<HashMap<(SessionId, String), Slot>>,
    reaper: OnceLock<()>,
}

type Slot = Arc<Mutex<Option<WarmBox>>>;

/// What tells one warm box from another: everything of its spec a call can change.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shape {
    workspace: PathBuf,
    mounts: Vec<Mount>,
    masks: Vec<PathBuf>,
    keeps: Vec<PathBuf>,
}

/// One running warm box.
#[derive(Debug)]
struct WarmBox {
    shape: Shape,
    process: BoxProcess,
    stdin: std::process::ChildStdin,
    /// Replies, as the reader thread decoded them (`Err`: the box's stdout broke).
    replies: Receiver<Result<InboxReply, String>>,
    started: Instant,
    last_used: Instant,
}

impl WarmBox {
    /// Kills the box and waits until the kernel has reaped it; says why it could not
    /// start, when that is how it ended.
    fn kill(self) -> Option<String> {
        let WarmBox { process, stdin, .. } = self;
        drop(stdin);
        process
            .stop()
            .err()
            .map(|e| format!("its box could not start: {e}"))
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a warm call failed, for the runner to word.
#[derive(Debug)]
pub(crate) enum WarmError {
    /// The box could not be started (the reason).
    Start(String),
    /// The box did not answer within the call's timeout; it was killed.
    TimedOut,
    /// The box ended or broke its stream (the reason); it was stopped.
    Broke(String),
}

impl Warm {
    fn slot(&self, session: &SessionId, tool: &str) -> Slot {
        lock(&self.slots)
            .entry((session.clone(), tool.to_string()))
            .or_default()
            .clone()
    }

    /// Runs `request` in the warm box of (`spec`'s session, `tool`), starting one built from
    /// `spec` when there is none or the one there was built differently. `call`'s resets
    /// stop the box; the spec's timeout bounds the call, after which the box is killed.
    /// `on_start` is told how long a box took to start, when this call started one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn call(
        self: &Arc<Self>,
        session: &SessionId,
        tool: &str,
        spec: &Spec,
        helper: &HelperCommand,
        call: &Admitted,
        request: &InboxRequest,
        on_start: &mut dyn FnMut(std::time::Duration),
    ) -> Result<InboxReply, WarmError> {
        let timeout = spec.limits.timeout;
        let body = serde_json::to_vec(request)
            .map_err(|e| WarmError::Start(format!("cannot encode the request: {e}")))?;
        let shape = Shape {
            workspace: spec.workspace.clone(),
            mounts: spec.mounts.clone(),
            masks: spec.masks.clone(),
            keeps: spec.keeps.clone(),
        };
        let slot = self.slot(session, tool);
        let mut held = lock(&slot);
        let fits = held
            .as_mut()
            .is_some_and(|b| b.shape == shape && b.started.elapsed() < LIFETIME && alive(b));
        if !fits {
            if let Some(old) = held.take() {
                let _ = old.kill();
            }
            let asked = std::time::Instant::now();
            *held = Some(start(spec, helper, shape)?);
            on_start(asked.elapsed());
            self.start_reaper();
        }
        let Some(b) = held.as_mut() else {
            return Err(WarmError::Start("no box".into()));
        };
        match b.process.stopper() {
            Ok(s) => call.guard_box(s),
            Err(e) => {
                if let Some(b) = held.take() {
                    let _ = b.kill();
                }
                return Err(WarmError::Broke(e.to_string()));
            }
        }
        let answer = write_frame(&mut b.stdin, &body)
            .map_err(|e| WarmError::Broke(format!("cannot send the request: {e}")))
            .and_then(|()| match b.replies.recv_timeout(timeout) {
                Ok(Ok(reply)) => Ok(reply),
                Ok(Err(why)) => Err(WarmError::Broke(why)),
                Err(RecvTimeoutError::Timeout) => Err(WarmError::TimedOut),
                Err(RecvTimeoutError::Disconnected) => {
                    Err(WarmError::Broke("its box ended".into()))
                }
            });
        match answer {
            Ok(reply) => {
                b.last_used = Instant::now();
                Ok(reply)
            }
            Err(e) => {
                // Whatever broke, the box goes: the next call gets a fresh one.
                let why = held.take().and_then(WarmBox::kill);
                Err(match (e, why) {
                    (WarmError::Broke(_), Some(why)) => WarmError::Start(why),
                    (e, _) => e,
                })
            }
        }
    }

    /// Stops every warm box of `session` (an operator resets it), each killed and reaped
    /// before this returns; returns how many there were.
    pub(crate) fn stop_session(&self, session: &SessionId) -> u32 {
        let slots: Vec<Slot> = lock(&self.slots)
            .iter()
            .filter(|((s, _), _)| s == session)
            .map(|(_, slot)| slot.clone())
            .collect();
        let mut stopped = 0;
        for slot in slots {
            if let Some(b) = lock(&slot).take() {
                let _ = b.kill();
                stopped += 1;
            }
        }
        lock(&self.slots)
            .retain(|(s, _), slot| s != session || slot.try_lock().map_or(true, |g| g.is_some()));
        stopped
    }

    fn start_reaper(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        self.reaper.get_or_init(|| {
            let _ = std::thread::Builder::new()
                .name("warm-reaper".into())
                .spawn(move || reap(&weak));
        });
    }
}

/// Whether the box still runs (its helper has not exited).
fn alive(b: &mut WarmBox) -> bool {
    !b.process.has_ended()
}

/// Stops boxes idle past [`IDLE`], until the [`Warm`] is gone.
fn reap(warm: &std::sync::Weak<Warm>) {
    loop {
        std::thread::sleep(REAP_EVERY);
        let Some(warm) = warm.upgrade() else { return };
        let slots: Vec<Slot> = lock(&warm.slots).values().cloned().collect();
        for slot in slots {
            // A slot in use is not idle.
            let Ok(mut g) = slot.try_lock() else { continue };
            if g.as_ref().is_some_and(|b| b.last_used.elapsed() >= IDLE)
                && let Some(b) = g.take()
            {
                drop(g);
                let _ = b.kill();
            }
        }
        lock(&warm.slots).retain(|_, slot| slot.try_lock().map_or(true, |g| g.is_some()));
    }
}

/// Starts a warm box from `spec` and the thread that reads its replies.
fn start(spec: &Spec, helper: &HelperCommand, shape: Shape) -> Result<WarmBox, WarmError> {
    let mut spec = spec.clone();
    spec.limits.timeout = LIFETIME;
    spec.limits.cpu_seconds = LIFETIME.as_secs();
    let mut process = sandbox::spawn(&spec, helper).map_err(|e| WarmError::Start(e.to_string()))?;
    let (Some(stdin), Some(mut stdout)) = (process.stdin.take(), process.stdout.take()) else {
        let _ = process.stop();
        return Err(WarmError::Start("no pipes to the box".into()));
    };
    // Its stderr is read and dropped: the in-box code writes nothing there, and a full
    // pipe must never block it.
    if let Some(mut stderr) = process.stderr.take() {
        let _ = std::thread::Builder::new()
            .name("warm-stderr".into())
            .spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    }
    // One reply at a time is ever outstanding: a channel of one.
    let (tx, replies) = sync_channel(1);
    std::thread::Builder::new()
        .name("warm-reader".into())
        .spawn(move || {
            loop {
                let reply = match read_frame(&mut stdout, REPLY_LIMIT) {
                    Ok(Some(body)) => serde_json::from_slice::<InboxReply>(&body)
                        .map_err(|e| format!("its box answered something unreadable: {e}")),
                    Ok(None) => Err("its box ended".to_string()),
                    Err(e) => Err(format!("its box's answer could not be read: {e}")),
                };
                let last = reply.is_err();
                if tx.send(reply).is_err() || last {
                    return;
                }
            }
        })
        .map_err(|e| {
            WarmError::Start(format!("cannot start the thread that reads the box: {e}"))
        })?;
    let now = Instant::now();
    Ok(WarmBox {
        shape,
        process,
        stdin,
        replies,
        started: now,
        last_used: now,
    })
}
