//! The runner role's connection loop: `ToolRequest` frames in, one final answer out per
//! request, many calls at once.
//!
//! The runner trusts the gate, but it still answers only what the gate may send: a frame
//! that is not an envelope, an envelope of another version, or a message that is not a
//! `tool_request` gets an `error` envelope and the connection is closed (docs/spec.md §2.3). Calls
//! run on their own threads, at most [`MAX_IN_FLIGHT`] at once; past that the loop stops
//! reading until one finishes, so a flood turns into back-pressure, not into threads.

use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use proto::{Envelope, ErrorCode, FrameError, Message, read_frame, write_frame};

use crate::run::Runner;

/// The most calls one connection runs at once.
pub const MAX_IN_FLIGHT: usize = 64;

/// Why the loop stopped other than by the peer closing the connection cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the gate sent a bad frame: {0}")]
    BadFrame(#[source] FrameError),
    #[error("the gate sent a message the runner does not take: {0}")]
    BadMessage(&'static str),
    #[error("cannot write to the gate: {0}")]
    Write(#[source] FrameError),
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
    let send = |out: &Arc<Mutex<W>>, env: &Envelope| -> Result<(), ServeError> {
        let mut w = out.lock().unwrap_or_else(PoisonError::into_inner);
        write_frame(&mut *w, env).map_err(ServeError::Write)
    };
    let result = loop {
        let env = match read_frame(&mut input) {
            Ok(env) => env,
            Err(FrameError::Closed) => break Ok(()),
            Err(e) => {
                if let Some(code) = e.wire_code() {
                    // Best effort: the peer may already be gone.
                    let _ = send(&output, &Envelope::error(0, code, e.to_string()));
                }
                break Err(ServeError::BadFrame(e));
            }
        };
        let req = match env.msg {
            Message::ToolRequest(req) if env.r#final => req,
            Message::ToolRequest(_) => {
                let why = "a tool_request must be sent with final: true";
                let _ = send(
                    &output,
                    &Envelope::error(env.id, ErrorCode::BadMessage, why),
                );
                break Err(ServeError::BadMessage(why));
            }
            Message::ToolResponse(_) | Message::Error(_) => {
                let why = "the runner takes only tool_request messages";
                let _ = send(
                    &output,
                    &Envelope::error(env.id, ErrorCode::BadMessage, why),
                );
                break Err(ServeError::BadMessage(why));
            }
        };
        slots.acquire(MAX_IN_FLIGHT);
        let (runner, out, slots2, id) = (runner.clone(), output.clone(), slots.clone(), env.id);
        std::thread::spawn(move || {
            let resp = runner.handle(&req);
            let mut w = out.lock().unwrap_or_else(PoisonError::into_inner);
            // A write error means the gate is gone; the read side will see it too.
            let _ = write_frame(&mut *w, &Envelope::response(id, resp));
            drop(w);
            slots2.release();
        });
    };
    slots.wait_idle();
    result
}
