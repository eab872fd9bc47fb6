//! The client side of both sockets: one agent call (with its `pending_approval` updates), and
//! one control request. Used by `call`, the operator commands and `demo`.

use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::UnixStream;

use proto::control::{
    ControlAnswer, ControlOp, ControlReply, ControlRequest, read_control_reply,
    write_control_request,
};
use proto::{Envelope, FrameError, Message, ToolRequest, ToolResponse, read_frame, write_frame};

use crate::error::CliError;

/// Sends `req` and waits for its final answer, calling `pending` for each
/// `pending_approval`. An `error` envelope from the gate is [`CliError::Refused`].
pub fn agent_call(
    stream: &UnixStream,
    req: ToolRequest,
    pending: &mut dyn FnMut(&ToolResponse),
) -> Result<ToolResponse, CliError> {
    let id = 1;
    {
        let mut w = BufWriter::new(stream);
        write_frame(&mut w, &Envelope::request(id, req)).map_err(CliError::Frame)?;
        w.flush().map_err(|e| CliError::Frame(FrameError::Io(e)))?;
    }
    let mut r = BufReader::new(stream);
    loop {
        let env = match read_frame(&mut r) {
            Ok(env) => env,
            Err(FrameError::Closed) => return Err(CliError::GateGone),
            Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(CliError::GateGone);
            }
            Err(e) => return Err(CliError::Frame(e)),
        };
        if env.id != id {
            return Err(CliError::Unexpected(format!(
                "an answer for request {} on a connection that sent only request {id}",
                env.id
            )));
        }
        match env.msg {
            Message::ToolResponse(resp) if !env.r#final && resp.is_pending() => pending(&resp),
            Message::ToolResponse(resp) if env.r#final && !resp.is_pending() => return Ok(resp),
            Message::ToolResponse(resp) => {
                return Err(CliError::Unexpected(format!(
                    "{resp:?} with final: {}",
                    env.r#final
                )));
            }
            Message::Error(e) => {
                return Err(CliError::Refused(format!("{}: {}", e.code, e.detail)));
            }
            Message::ToolRequest(_) => {
                return Err(CliError::Unexpected("a tool_request".into()));
            }
        }
    }
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
