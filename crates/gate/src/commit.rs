//! Group commit: many threads' durable writes paid for by one sync.
//!
//! [`GroupCommit::submit`] queues an item and blocks until a batch that holds it has been
//! committed, then returns that item's result. Whoever finds no commit in progress becomes
//! the **leader**: it takes every item queued so far (its own among them), commits them with
//! one call of the commit function (outside the lock, so others keep queueing), hands each
//! waiter its result, and steps down; a waiter whose item was not in that batch then leads
//! the next one. While one batch syncs, the next one fills; under load each sync pays for
//! every call that arrived during the previous one, and alone a call pays one sync as before.
//!
//! The one promise: `submit` returns an item's result only after the commit function has
//! returned for a batch holding that item. Nothing is acknowledged early.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

struct State<T, R> {
    next: u64,
    queue: Vec<(u64, T)>,
    done: HashMap<u64, R>,
    leading: bool,
}

/// A group-commit queue of items `T` with results `R`.
pub(crate) struct GroupCommit<T, R> {
    state: Mutex<State<T, R>>,
    cv: Condvar,
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<T, R> GroupCommit<T, R> {
    pub(crate) fn new() -> Self {
        GroupCommit {
            state: Mutex::new(State {
                next: 0,
                queue: Vec::new(),
                done: HashMap::new(),
                leading: false,
            }),
            cv: Condvar::new(),
        }
    }

    /// Queues `item` and returns its result once a batch holding it is committed.
    /// `commit` gets a batch in queue order and must return one result per item, in the
    /// same order; a missing result is `lost()`.
    pub(crate) fn submit(
        &self,
        item: T,
        commit: impl Fn(Vec<T>) -> Vec<R>,
        lost: impl Fn() -> R,
    ) -> R {
        let mut st = lock(&self.state);
        let ticket = st.next;
        st.next = st.next.wrapping_add(1);
        st.queue.push((ticket, item));
        loop {
            if let Some(r) = st.done.remove(&ticket) {
                return r;
            }
            if !st.leading {
                st.leading = true;
                let batch = std::mem::take(&mut st.queue);
                drop(st);
                let (tickets, items): (Vec<u64>, Vec<T>) = batch.into_iter().unzip();
                let mut results = commit(items).into_iter();
                st = lock(&self.state);
                for t in tickets {
                    let r = results.next().unwrap_or_else(&lost);
                    st.done.insert(t, r);
                }
                st.leading = false;
                self.cv.notify_all();
                continue;
            }
            st = self.cv.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn no_item_is_answered_before_its_batch_is_committed() {
        let gc: Arc<GroupCommit<u64, u64>> = Arc::new(GroupCommit::new());
        let committed: Arc<Mutex<HashSet<u64>>> = Arc::default();
        let batches: Arc<Mutex<Vec<usize>>> = Arc::default();
        let threads: Vec<_> = (0..32u64)
            .map(|t| {
                let (gc, committed, batches) = (gc.clone(), committed.clone(), batches.clone());
                std::thread::spawn(move || {
                    for i in 0..50u64 {
                        let item = t * 1000 + i;
                        let r = gc.submit(
                            item,
                            |items| {
                                // A slow "sync": the next batch fills meanwhile.
                                std::thread::sleep(Duration::from_micros(300));
                                let mut c = committed.lock().unwrap();
                                batches.lock().unwrap().push(items.len());
                                items
                                    .into_iter()
                                    .map(|x| {
                                        c.insert(x);
                                        x * 2
                                    })
                                    .collect()
                            },
                            || u64::MAX,
                        );
                        assert_eq!(r, item * 2, "each waiter gets its own result");
                        assert!(
                            committed.lock().unwrap().contains(&item),
                            "answered before its commit"
                        );
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(committed.lock().unwrap().len(), 32 * 50);
        let b = batches.lock().unwrap();
        assert!(
            b.len() < 32 * 50,
            "concurrent items shared a commit ({} commits)",
            b.len()
        );
    }

    #[test]
    fn a_short_answer_is_lost_not_misattributed() {
        let gc: GroupCommit<u8, Option<u8>> = GroupCommit::new();
        assert_eq!(gc.submit(1, |_| Vec::new(), || None), None);
        assert_eq!(
            gc.submit(2, |v| v.into_iter().map(Some).collect(), || None),
            Some(2)
        );
    }
}
