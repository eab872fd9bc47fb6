//! # workers — jobs on threads kept between jobs
//!
//! **Owns:** a pool of worker threads for the gate's calls and the runner's requests: a job
//! goes to an idle worker, or to a new one while fewer than the pool's cap run; a worker
//! that has had nothing to do for [`Pool::new`]'s `idle` ends.
//!
//! **Why:** a thread started per call costs its creation and, worse, its first scheduling:
//! a new thread is placed behind the threads already running (the scheduler's start debit),
//! so on a busy two-core machine it waited milliseconds for its first instruction, while a
//! worker woken from sleep runs at once (docs/performance.md, "Calls").
//!
//! **Must never:** queue more than the caller admitted (the caller bounds the jobs in
//! flight, as before, so a flood is back-pressure, not a queue); lose a job (one a worker
//! could not be started for runs on a thread of its own, or the error says so); let a
//! panicking job take its worker's count with it.

#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send + 'static>;

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// Workers waiting for a job.
    idle: usize,
    /// Workers alive.
    alive: usize,
}

struct Inner {
    name: String,
    cap: usize,
    idle: Duration,
    state: Mutex<State>,
    work: Condvar,
}

/// A pool of worker threads; cheap to clone (clones share the workers).
#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = lock(&self.inner.state);
        f.debug_struct("Pool")
            .field("name", &self.inner.name)
            .field("alive", &st.alive)
            .field("idle", &st.idle)
            .field("queued", &st.queue.len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Pool {
    /// A pool of at most `cap` workers named `name`, each ending after `idle` without a job.
    pub fn new(name: &str, cap: usize, idle: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: name.to_string(),
                cap: cap.max(1),
                idle,
                state: Mutex::new(State::default()),
                work: Condvar::new(),
            }),
        }
    }

    /// Runs `job` on an idle worker, else on a new one (below the cap), else once a worker is
    /// free. Fails only when no thread could be started and none is alive to take the job;
    /// the job is then dropped unrun and the error says why.
    pub fn execute(&self, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let mut st = lock(&self.inner.state);
        let start = st.idle <= st.queue.len() && st.alive < self.inner.cap;
        st.queue.push_back(Box::new(job));
        if !start {
            drop(st);
            self.inner.work.notify_one();
            return Ok(());
        }
        st.alive += 1;
        drop(st);
        let inner = Arc::clone(&self.inner);
        let started = std::thread::Builder::new()
            .name(self.inner.name.clone())
            .spawn(move || work(&inner));
        if let Err(e) = started {
            let mut st = lock(&self.inner.state);
            st.alive -= 1;
            if st.alive == 0 {
                // Nobody would ever take it.
                st.queue.pop_back();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Workers alive now (idle or busy).
    pub fn alive(&self) -> usize {
        lock(&self.inner.state).alive
    }
}

/// A worker: takes jobs until it has waited `idle` for one.
fn work(inner: &Inner) {
    let mut st = lock(&inner.state);
    loop {
        if let Some(job) = st.queue.pop_front() {
            drop(st);
            // A job that panics ends, not its worker: the panic was the job's own (and
            // whatever it held was released by unwinding).
            let _ = catch_unwind(AssertUnwindSafe(job));
            st = lock(&inner.state);
            continue;
        }
        st.idle += 1;
        let (next, waited) = inner
            .work
            .wait_timeout(st, inner.idle)
            .unwrap_or_else(PoisonError::into_inner);
        st = next;
        st.idle -= 1;
        if waited.timed_out() && st.queue.is_empty() {
            st.alive -= 1;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use std::sync::mpsc;
    use std::time::Instant;

    #[test]
    fn jobs_run_on_kept_threads() {
        let pool = Pool::new("t", 4, Duration::from_secs(30));
        let (tx, rx) = mpsc::channel();
        let mut threads = std::collections::HashSet::new();
        for i in 0..100 {
            let tx = tx.clone();
            pool.execute(move || tx.send((i, std::thread::current().id())).unwrap())
                .unwrap();
            // One at a time. A job sent while the last one's worker is still on its way back
            // to idle may start a second worker; never more than the cap.
            threads.insert(rx.recv().unwrap().1);
        }
        assert!(threads.len() <= 4, "{} threads for 100 jobs", threads.len());
        assert!(pool.alive() <= 4, "{pool:?}");
    }

    #[test]
    fn concurrent_jobs_get_workers_up_to_the_cap_and_the_rest_wait() {
        let pool = Pool::new("t", 3, Duration::from_secs(5));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let (tx, rx) = mpsc::channel();
        for i in 0..10 {
            let (gate, tx) = (Arc::clone(&gate), tx.clone());
            pool.execute(move || {
                let (m, cv) = &*gate;
                let mut open = m.lock().unwrap();
                while !*open {
                    open = cv.wait(open).unwrap();
                }
                tx.send(i).unwrap();
            })
            .unwrap();
        }
        assert!(pool.alive() <= 3, "{pool:?}");
        {
            let (m, cv) = &*gate;
            *m.lock().unwrap() = true;
            cv.notify_all();
        }
        let mut got: Vec<i32> = (0..10).map(|_| rx.recv().unwrap()).collect();
        got.sort_unstable();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn a_panicking_job_keeps_its_worker_and_idle_workers_end() {
        let pool = Pool::new("t", 2, Duration::from_millis(100));
        pool.execute(|| panic!("a job's own panic")).unwrap();
        let (tx, rx) = mpsc::channel();
        pool.execute(move || tx.send(1).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 1);
        let deadline = Instant::now() + Duration::from_secs(10);
        while pool.alive() > 0 {
            assert!(Instant::now() < deadline, "{pool:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
