//! The client side of both sockets: one agent call (with its `pending_approval` updates), and
//! one control request. Used by `call`, the operator commands and `demo`.

use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::UnixStream;

use proto::control::{
    ControlAnswer, ControlOp, ControlReply, ControlRequest, read_control_reply,
    write_control_request,
};
use proto::{FrameError, ToolRequest, ToolResponse};

use crate::error::CliError;

/// Whether `e` is a read or a write on a gate's socket that passed the timeout the caller
/// set on it (the gate stopped, wedged or starved: it accepted and answers nothing).
pub fn timed_out(e: &CliError) -> bool {
    matches!(
        e,
        CliError::Frame(FrameError::Io(io))
            if matches!(io.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
    )
}

/// Sends `req` and waits for its final answer, calling `pending` for each
/// `pending_approval` (the front's own call path: one connection per call).
pub fn agent_call(
    stream: &UnixStream,
    req: ToolRequest,
    pending: &mut dyn FnMut(&ToolResponse),
) -> Result<ToolResponse, CliError> {
    use front::gatecall::{GateCallError, call};
    call(stream, req, pending).map_err(|e| match e {
        GateCallError::Gone => CliError::GateGone,
        GateCallError::Frame(f) => CliError::Frame(f),
        GateCallError::Refused(why) => CliError::Refused(why),
        e @ (GateCallError::Connect { .. } | GateCallError::Unexpected) => {
            CliError::Unexpected(e.to_string())
        }
    })
}

/// Sends one control request and returns the answer; an `error` answer is
/// [`CliError::Refused`].
pub fn control(stream: &UnixStream, op: ControlOp) -> Result<ControlAnswer, CliError> {
    let id = 1;
    let mut w = BufWriter::new(stream);
    write_control_request(&mut w, &ControlRequest::new(id, op)).map_err(CliError::Frame)?;
    w.flush().map_err(|e| CliError::Frame(FrameError::Io(e)))?;
    drop(w);
    let reply: ControlReply = match read_control_reply(&mut BufReader::new(stream)) {
        Ok(r) => r,
        Err(FrameError::Closed) => return Err(CliError::GateGone),
        Err(e) => return Err(CliError::Frame(e)),
    };
    if reply.id != id {
        return Err(CliError::Unexpected(format!(
            "a reply to request {}",
            reply.id
        )));
    }
    match reply.reply {
        ControlAnswer::Error { code, detail } => {
            Err(CliError::Refused(format!("{code}: {detail}")))
        }
        answer => Ok(answer),
    }
}
