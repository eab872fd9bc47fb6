//! The runner role's connection loop: [`RunnerRequest`] frames in (a call with the
//! session's taint, or a session to clear), one [`RunnerReply`] out per request, many calls
//! at once.
//!
//! The runner trusts the gate, but it still answers only what the gate may send: a frame
//! that is not a runner request, or one of another version, gets an `error` reply and the
//! connection is closed (docs/spec.md §2.3). The loop itself admits each call and begins
//! each reset, in the order they came (`crate::running`). Calls run on their own threads, at most
//! [`MAX_IN_FLIGHT`] at once; past that the loop stops reading until one finishes, so a
//! flood turns into back-pressure, not into threads.

use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use proto::run::{
    Order, RunnerAnswer, RunnerReply, RunnerRequest, read_runner_request, write_runner_reply,
};
use proto::{ErrorCode, FrameError};

use crate::run::Runner;

/// The most calls one connection runs at once: a last resort. Fairness comes first from
/// the gate's per-session caps (`[gate] max_calls_per_session`, 16 by default), so one
/// session's flood never fills this.
pub const MAX_IN_FLIGHT: usize = 256;

/// What a request's thread does: run an admitted (or refused) call, or finish a reset.
enum Work {
    Call(
        Result<crate::running::Admitted, proto::ToolResponse>,
        proto::ToolRequest,
        config::Label,
        Vec<proto::run::FileDigest>,
    ),
    /// Digest the files a call would run (no box of the call starts).
    Digest(proto::ToolRequest),
    Reset(crate::running::Resetting),
}

/// Why the loop stopped other than by the peer closing the connection cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the gate sent a bad frame: {0}")]
    BadFrame(#[source] FrameError),
    #[error("the gate sent a message the runner does not take: {0}")]
    BadMessage(&'static str),
    #[error("cannot write to the gate: {0}")]
    Write(#[source] FrameError),
    #[error("cannot start a thread for a request: {0}")]
    Thread(#[source] std::io::Error),
}

/// Counts calls in flight; `acquire` waits while the limit is reached.
#[derive(Debug, Default)]
struct Slots {
    busy: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    fn acquire(&self, limit: usize) {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        while *busy >= limit {
            busy = self
                .freed
                .wait(busy)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *busy += 1;
    }

    fn release(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        *busy = busy.saturating_sub(1);
        self.freed.notify_one();
    }

    fn wait_idle(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        while *busy > 0 {
            busy = self
                .freed
                .wait(busy)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Serves one connection until the peer closes it (then waits for calls in flight and
/// returns `Ok`) or misbehaves (then answers `error`, and returns the reason).
pub fn serve<R, W>(runner: Arc<Runner>, mut input: R, output: W) -> Result<(), ServeError>
where
    R: Read,
    W: Write + Send + 'static,
{
    let output = Arc::new(Mutex::new(output));
    let slots = Arc::new(Slots::default());
    // The egress proxy's events go to the gate beside the answers (id 0).
    let events = output.clone();
    runner.egress().set_sink(Arc::new(move |event| {
        let mut w = events.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = write_runner_reply(&mut *w, &RunnerReply::new(0, event));
    }));
    let send = |out: &Arc<Mutex<W>>, reply: &RunnerReply| -> Result<(), ServeError> {
        let mut w = out.lock().unwrap_or_else(PoisonError::into_inner);
        write_runner_reply(&mut *w, reply).map_err(ServeError::Write)
    };
    let result = loop {
        let req: RunnerRequest = match read_runner_request(&mut input) {
            Ok(req) => req,
            Err(FrameError::Closed) => break Ok(()),
            Err(e) => {
                let code = match &e {
                    FrameError::Json(j) if j.classify() == serde_json::error::Category::Data => {
                        ErrorCode::BadMessage
                    }
                    other => other.wire_code().unwrap_or(ErrorCode::BadFrame),
                };
                // Best effort: the peer may already be gone.
                let _ = send(&output, &RunnerReply::error(0, code, e.to_string()));
                break Err(ServeError::BadFrame(e));
            }
        };
        slots.acquire(MAX_IN_FLIGHT);
        // Here, in the order the gate sent them, before the next request is read: a call is
        // admitted (or refused, while its session resets) and a reset begun, so a reset
        // stops every call sent before it and admits none sent after until it is done.
        let work = match req.order {
            // The taint as the gate committed it, both parts: the runner's floor for the
            // session starts from it, untrusted bit and all (docs/spec.md §3.4).
            Order::Call {
                request,
                class,
                untrusted,
                files,
            } => Work::Call(
                runner.admit(&request.session),
                request,
                config::Label::new(class, untrusted),
                files,
            ),
            Order::Digest { request } => Work::Digest(request),
            Order::ResetSession { session } => Work::Reset(runner.begin_reset(&session)),
        };
        let (runner, out, slots2, id) = (runner.clone(), output.clone(), slots.clone(), req.id);
        // On a worker kept between requests (the `workers` crate says why not a new thread).
        let started = request_workers().execute(move || {
            let (reply, call) = match work {
                Work::Call(Ok(call), request, class, files) => (
                    RunnerReply::answer(id, runner.run_admitted(&call, &request, class, &files)),
                    Some(call),
                ),
                Work::Digest(request) => (
                    RunnerReply::new(
                        id,
                        RunnerAnswer::Digests {
                            files: runner.digest(&request),
                        },
                    ),
                    None,
                ),
                Work::Call(Err(refused), ..) => (RunnerReply::answer(id, refused), None),
                Work::Reset(reset) => match runner.finish_reset(reset) {
                    Ok((servers, workspace)) => (
                        RunnerReply::new(id, RunnerAnswer::Reset { servers, workspace }),
                        None,
                    ),
                    Err(why) => (
                        RunnerReply::answer(id, proto::ToolResponse::Failed { message: why }),
                        None,
                    ),
                },
            };
            let mut w = out.lock().unwrap_or_else(PoisonError::into_inner);
            // A write error means the gate is gone; the read side will see it too.
            let _ = write_runner_reply(&mut *w, &reply);
            drop(w);
            // The call ends only once its answer is out: a reset waiting for it answers
            // after it, so the gate has every stopped call's answer before the reset's.
            drop(call);
            slots2.release();
        });
        if let Err(e) = started {
            // No thread could start and none is alive: the runner cannot serve; it ends, and
            // the gate's link answers every call in flight `failed`.
            slots.release();
            break Err(ServeError::Thread(e));
        }
    };
    slots.wait_idle();
    result
}

/// The threads requests run on: kept between requests, at most [`MAX_IN_FLIGHT`], each
/// ending after a minute without one.
fn request_workers() -> &'static workers::Pool {
    static POOL: std::sync::OnceLock<workers::Pool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        workers::Pool::new(
            "runner-call",
            MAX_IN_FLIGHT,
            std::time::Duration::from_secs(60),
        )
    })
}
