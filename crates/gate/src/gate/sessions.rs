//! A session's calls in the gate, and its resets: the gate's half of docs/spec.md §4, "A
//! reset ends the session first" (the runner's half, which ends the boxes, is
//! `runner::Runner::finish_reset`).
//!
//! Every call the gate decides or runs holds a slot of its session ([`Sessions::enter`]). A
//! reset marks its session ([`Sessions::begin_reset`]) before it asks the runner for
//! anything; from then on:
//! - a call that comes waits until the reset is done, so it is decided at the lowered taint;
//! - a call already being decided is refused at the runner's door ([`Sessions::admit`],
//!   asked under the runner link's writer lock, so a call admitted before the mark is on the
//!   link before the reset and the runner stops it);
//! - the taint is lowered only once no slot is held ([`ResetMark::wait_idle`]): every call
//!   the runner stopped has given its answer, and that answer is committed — its `result`
//!   record comes before the `session_reset` one.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use proto::SessionId;

/// What a call refused at the runner's door (its session was being reset) answers.
pub(super) const REFUSED: &str = "the session was being reset by an operator when this call \
                                  was about to run; it did not run (call again: the session \
                                  starts afresh)";

/// The calls of every session the gate is deciding or running, and which it is resetting.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    state: Mutex<HashMap<SessionId, Calls>>,
    /// Rung when a slot is given back or a reset ends.
    changed: Condvar,
}

#[derive(Debug, Default)]
struct Calls {
    slots: u64,
    resetting: bool,
}

/// One of a session's call slots, given back on drop.
#[derive(Debug)]
pub(super) struct CallSlot<'a> {
    sessions: &'a Sessions,
    session: SessionId,
}

impl Drop for CallSlot<'_> {
    fn drop(&mut self) {
        let mut state = self.sessions.lock();
        if let Some(c) = state.get_mut(&self.session) {
            c.slots = c.slots.saturating_sub(1);
            if c.slots == 0 && !c.resetting {
                state.remove(&self.session);
            }
        }
        drop(state);
        self.sessions.changed.notify_all();
    }
}

/// A reset of a session under way; dropping it ends the reset.
#[derive(Debug)]
pub(super) struct ResetMark<'a> {
    sessions: &'a Sessions,
    session: SessionId,
}

impl ResetMark<'_> {
    /// Waits until no call of the session holds a slot; `Err` with how many still do after
    /// `limit`.
    pub(super) fn wait_idle(&self, limit: Duration) -> Result<(), u64> {
        let deadline = Instant::now() + limit;
        let mut state = self.sessions.lock();
        loop {
            let left = state.get(&self.session).map_or(0, |c| c.slots);
            if left == 0 {
                return Ok(());
            }
            let Some(wait) = deadline.checked_duration_since(Instant::now()) else {
                return Err(left);
            };
            state = self
                .sessions
                .changed
                .wait_timeout(state, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Drop for ResetMark<'_> {
    fn drop(&mut self) {
        let mut state = self.sessions.lock();
        if let Some(c) = state.get_mut(&self.session) {
            c.resetting = false;
            if c.slots == 0 {
                state.remove(&self.session);
            }
        }
        drop(state);
        self.sessions.changed.notify_all();
    }
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Calls>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot of `session`, once no reset of it is under way; `None` when `cap` is given
    /// and the session holds that many already.
    pub(super) fn enter(&self, session: &SessionId, cap: Option<u64>) -> Option<CallSlot<'_>> {
        let mut state = self.lock();
        while state.get(session).is_some_and(|c| c.resetting) {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let c = state.entry(session.clone()).or_default();
        if cap.is_some_and(|cap| c.slots >= cap) {
            if c.slots == 0 {
                state.remove(session);
            }
            return None;
        }
        c.slots += 1;
        Some(CallSlot {
            sessions: self,
            session: session.clone(),
        })
    }

    /// Whether a call of `session` may be sent to the runner now: `Err` ([`REFUSED`]) while
    /// the session is being reset.
    pub(super) fn admit(&self, session: &SessionId) -> Result<(), String> {
        if self.lock().get(session).is_some_and(|c| c.resetting) {
            Err(REFUSED.into())
        } else {
            Ok(())
        }
    }

    /// Marks `session` as being reset, once any other reset of it is done.
    pub(super) fn begin_reset(&self, session: &SessionId) -> ResetMark<'_> {
        let mut state = self.lock();
        while state.get(session).is_some_and(|c| c.resetting) {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.entry(session.clone()).or_default().resetting = true;
        ResetMark {
            sessions: self,
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
    fn a_reset_refuses_the_runner_to_calls_already_deciding_and_holds_new_ones() {
        let sessions = Sessions::default();
        let deciding = sessions.enter(&s("a"), Some(2)).unwrap();
        let mark = sessions.begin_reset(&s("a"));
        assert_eq!(sessions.admit(&s("a")), Err(REFUSED.to_string()));
        assert_eq!(sessions.admit(&s("b")), Ok(()), "another session goes on");
        // The reset waits for the call that holds a slot.
        assert_eq!(mark.wait_idle(Duration::ZERO), Err(1));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                // Comes during the reset: waits, then gets its slot.
                let slot = sessions.enter(&s("a"), Some(2));
                tx.send(slot.is_some()).unwrap();
            });
            drop(deciding);
            assert_eq!(mark.wait_idle(Duration::from_secs(60)), Ok(()));
            assert!(
                rx.try_recv().is_err(),
                "a new call entered during the reset"
            );
            drop(mark);
        });
        assert_eq!(rx.recv(), Ok(true));
        assert_eq!(sessions.admit(&s("a")), Ok(()));
        assert!(
            sessions.lock().is_empty(),
            "nothing is kept of an idle session"
        );
    }

    #[test]
    fn the_cap_still_counts_and_two_resets_take_turns() {
        let sessions = Sessions::default();
        let one = sessions.enter(&s("a"), Some(1)).unwrap();
        assert!(sessions.enter(&s("a"), Some(1)).is_none());
        assert!(
            sessions.enter(&s("a"), None).is_some(),
            "no cap for an approved call"
        );
        drop(one);
        let first = sessions.begin_reset(&s("a"));
        std::thread::scope(|scope| {
            let second = scope.spawn(|| {
                let m = sessions.begin_reset(&s("a"));
                assert_eq!(sessions.admit(&s("a")), Err(REFUSED.to_string()));
                drop(m);
            });
            assert_eq!(first.wait_idle(Duration::ZERO), Ok(()));
            drop(first);
            second.join().unwrap();
        });
        assert_eq!(sessions.admit(&s("a")), Ok(()));
    }
}
