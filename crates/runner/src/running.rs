//! What of each session runs now: every call the runner admitted, with a way to stop each
//! box it uses, so that an operator's reset can end all of them before the session's label
//! falls (docs/spec.md §4, "A reset ends the session first"; the reset itself is
//! [`crate::Runner::reset_session`]).
//!
//! ```text
//!  admit(session) ──▶ Admitted ──guard_box(Stopper)──▶ the call's boxes       (a call)
//!  begin_reset(session) ──▶ Resetting: admits nothing, stops every admitted call's boxes
//!        └── wait_idle(): returns once no admitted call of the session is left
//! ```
//!
//! The connection loop admits a call, and begins a reset, in the order the gate sent them
//! (`serve`), so a call the gate sent before a reset is one the reset stops, and one it sent
//! after is refused until the reset is done: no call starts at the old label and outlives the
//! lowering.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use proto::SessionId;
use sandbox::Stopper;

/// What a call the reset stopped answers.
pub const STOPPED: &str =
    "the session was reset by an operator while this call ran; it was stopped";

/// What a call that came while its session was being reset answers.
pub const REFUSED: &str = "the session was being reset by an operator when this call came; it \
                           did not run (call again: the session starts afresh)";

/// The admitted calls of every session, and which sessions are being reset.
#[derive(Debug, Default)]
pub struct Running {
    sessions: Mutex<HashMap<SessionId, Live>>,
    /// Rung whenever an admitted call ends.
    ended: Condvar,
    next: AtomicU64,
}

#[derive(Debug, Default)]
struct Live {
    calls: HashMap<u64, Arc<CallState>>,
    /// Resets of the session under way (two operators may reset it at once).
    resets: usize,
}

/// One admitted call: whether a reset stopped it, and the boxes it runs.
#[derive(Debug, Default)]
struct CallState {
    stopped: AtomicBool,
    boxes: Mutex<Vec<Stopper>>,
}

impl CallState {
    fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        for b in lock(&self.boxes).iter() {
            b.stop();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A call admitted to run; dropping it says the call ended (give its answer first).
#[derive(Debug)]
pub struct Admitted {
    running: Arc<Running>,
    session: SessionId,
    id: u64,
    state: Arc<CallState>,
}

impl Admitted {
    /// The call's session.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// Whether a reset stopped this call: whatever its boxes said, it answers [`STOPPED`].
    pub fn stopped(&self) -> bool {
        self.state.stopped.load(Ordering::SeqCst)
    }

    /// Puts a box this call uses under the session's resets: a reset stops it, and one that
    /// already stopped this call stops it now.
    pub fn guard_box(&self, stopper: Stopper) {
        let mut boxes = lock(&self.state.boxes);
        // Pushed and then checked under the lock `CallState::stop` takes after setting the
        // flag: either the reset sees this box, or this sees the reset.
        boxes.push(stopper);
        if self.stopped()
            && let Some(b) = boxes.last()
        {
            b.stop();
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut sessions = lock(&self.running.sessions);
        if let Some(live) = sessions.get_mut(&self.session) {
            live.calls.remove(&self.id);
            if live.calls.is_empty() && live.resets == 0 {
                sessions.remove(&self.session);
            }
        }
        drop(sessions);
        self.running.ended.notify_all();
    }
}

/// A reset under way: while it lives, no call of the session is admitted.
#[derive(Debug)]
pub struct Resetting {
    running: Arc<Running>,
    session: SessionId,
}

impl Resetting {
    /// The session being reset.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// Waits until no admitted call of the session is left (each stopped one has given its
    /// answer and its boxes were reaped). Returns how many there were when it began.
    pub fn wait_idle(&self) -> usize {
        let mut sessions = lock(&self.running.sessions);
        let first = sessions.get(&self.session).map_or(0, |l| l.calls.len());
        while sessions
            .get(&self.session)
            .is_some_and(|l| !l.calls.is_empty())
        {
            sessions = self
                .running
                .ended
                .wait(sessions)
                .unwrap_or_else(PoisonError::into_inner);
        }
        first
    }
}

impl Drop for Resetting {
    fn drop(&mut self) {
        let mut sessions = lock(&self.running.sessions);
        if let Some(live) = sessions.get_mut(&self.session) {
            live.resets = live.resets.saturating_sub(1);
            if live.calls.is_empty() && live.resets == 0 {
                sessions.remove(&self.session);
            }
        }
    }
}

impl Running {
    /// Admits a call of `session`, or `None` while the session is being reset.
    pub fn admit(self: &Arc<Self>, session: &SessionId) -> Option<Admitted> {
        let mut sessions = lock(&self.sessions);
        let live = sessions.entry(session.clone()).or_default();
        if live.resets > 0 {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(CallState::default());
        live.calls.insert(id, state.clone());
        Some(Admitted {
            running: self.clone(),
            session: session.clone(),
            id,
            state,
        })
    }

    /// Begins a reset of `session`: from now on no call of it is admitted, and every call
    /// admitted so far is stopped (its boxes told to end; a call that has not started yet
    /// never starts one).
    pub fn begin_reset(self: &Arc<Self>, session: &SessionId) -> Resetting {
        let mut sessions = lock(&self.sessions);
        let live = sessions.entry(session.clone()).or_default();
        live.resets += 1;
        for call in live.calls.values() {
            call.stop();
        }
        Resetting {
            running: self.clone(),
            session: session.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str) -> SessionId {
        SessionId::new(name).unwrap()
    }

    #[test]
    fn a_reset_stops_the_calls_admitted_before_it_and_refuses_new_ones() {
        let r = Arc::new(Running::default());
        let before = r.admit(&s("a")).unwrap();
        let other = r.admit(&s("b")).unwrap();
        let reset = r.begin_reset(&s("a"));
        assert!(before.stopped());
        assert!(!other.stopped(), "another session's call goes on");
        assert!(r.admit(&s("a")).is_none(), "admitted during the reset");
        assert!(r.admit(&s("b")).is_some());
        drop(before);
        assert_eq!(reset.wait_idle(), 0);
        drop(reset);
        let after = r.admit(&s("a")).unwrap();
        assert!(!after.stopped(), "a call after the reset runs");
    }

    #[test]
    fn wait_idle_returns_only_once_every_stopped_call_ended() {
        let r = Arc::new(Running::default());
        let calls: Vec<Admitted> = (0..3).map(|_| r.admit(&s("a")).unwrap()).collect();
        let reset = r.begin_reset(&s("a"));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let n = reset.wait_idle();
                tx.send(n).unwrap();
            });
            let mut calls = calls;
            while let Some(c) = calls.pop() {
                // Still waiting while any call is left.
                assert!(rx.try_recv().is_err());
                drop(c);
            }
        });
        // How many it counted depends on when its thread began (all three, or fewer if the
        // drops came first); that it returned only once none was left is what the loop checked.
        assert!(rx.recv().unwrap() <= 3);
        drop(reset);
        assert!(!r.admit(&s("a")).unwrap().stopped());
    }

    #[test]
    fn two_resets_at_once_admit_nothing_until_both_are_done() {
        let r = Arc::new(Running::default());
        let one = r.begin_reset(&s("a"));
        let two = r.begin_reset(&s("a"));
        drop(one);
        assert!(r.admit(&s("a")).is_none());
        drop(two);
        assert!(r.admit(&s("a")).is_some());
        // Nothing is kept of a session with no call and no reset.
        assert!(lock(&r.sessions).is_empty());
    }
}
