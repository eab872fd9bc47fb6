//! The agent connections of one gate, which the gate holds so it can drain them when it
//! stops taking connections (`Gate::agent_conns`), and which the connection loops of
//! `serve` register each connection with. Apart from both so neither names the other.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError, Weak};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What [`AgentConns`] can ask of a connection of any writer type.
pub(crate) trait Drain: Send + Sync {
    fn drain(&self);
}

/// The agent connections of one gate (docs/spec.md §5: a front keeps its connection
/// between calls). A gate that stops taking connections drains them: each one ends once no
/// call is in flight on it, instead of keeping the gate alive for as long as its front runs.
#[derive(Default)]
pub(crate) struct AgentConns {
    inner: Mutex<AgentConnsInner>,
}

#[derive(Default)]
struct AgentConnsInner {
    draining: bool,
    next: u64,
    open: HashMap<u64, Weak<dyn Drain>>,
}

impl std::fmt::Debug for AgentConns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = lock(&self.inner);
        f.debug_struct("AgentConns")
            .field("draining", &inner.draining)
            .field("open", &inner.open.len())
            .finish()
    }
}

impl AgentConns {
    /// Registers a connection: its key, and whether the gate drains already (then the
    /// caller drains it at once).
    pub(crate) fn register(&self, conn: Weak<dyn Drain>) -> (u64, bool) {
        let mut inner = lock(&self.inner);
        let key = inner.next;
        inner.next = inner.next.wrapping_add(1);
        inner.open.insert(key, conn);
        (key, inner.draining)
    }

    pub(crate) fn forget(&self, key: u64) {
        lock(&self.inner).open.remove(&key);
    }

    /// Drains every connection served now and every one served from now on.
    pub(crate) fn drain(&self) {
        let conns: Vec<Weak<dyn Drain>> = {
            let mut inner = lock(&self.inner);
            inner.draining = true;
            inner.open.values().cloned().collect()
        };
        for conn in conns.iter().filter_map(Weak::upgrade) {
            conn.drain();
        }
    }
}
