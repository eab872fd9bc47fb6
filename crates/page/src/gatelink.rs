//! One control request to the gate of a state directory, on a connection of its own, off the
//! async threads (a request may wait: `watch_approvals` holds for up to 25 s). The page never
//! starts a gate: `serve` keeps one, and a page that cannot reach it says so and tries again.

use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;

use proto::FrameError;
use proto::control::{
    ControlAnswer, ControlOp, ControlReply, ControlRequest, read_control_reply,
    write_control_request,
};

/// Why the gate gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("the gate is not answering at {path} ({source}); it may be restarting")]
    Connect {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the gate connection failed: {0}")]
    Frame(#[source] FrameError),
    #[error("the gate refused: {code}: {detail}")]
    Refused { code: String, detail: String },
    #[error("the gate's answer was not for this request")]
    Unexpected,
    #[error("the page could not wait for the gate: {0}")]
    Join(String),
}

/// Where the gate's control socket is.
#[derive(Debug, Clone)]
pub struct GateLink {
    state: PathBuf,
}

impl GateLink {
    pub fn new(state: PathBuf) -> GateLink {
        GateLink { state }
    }

    /// Sends `op` and returns the answer (an `error` answer is [`LinkError::Refused`]).
    pub fn ask_blocking(&self, op: ControlOp) -> Result<ControlAnswer, LinkError> {
        let stream =
            statedir::connect(&self.state, statedir::CONTROL_SOCKET).map_err(|source| {
                LinkError::Connect {
                    path: self.state.join(statedir::CONTROL_SOCKET),
                    source,
                }
            })?;
        let mut w = BufWriter::new(&stream);
        write_control_request(&mut w, &ControlRequest::new(1, op)).map_err(LinkError::Frame)?;
        w.flush().map_err(|e| LinkError::Frame(FrameError::Io(e)))?;
        drop(w);
        let reply: ControlReply =
            read_control_reply(&mut BufReader::new(&stream)).map_err(LinkError::Frame)?;
        if reply.id != 1 {
            return Err(LinkError::Unexpected);
        }
        match reply.reply {
            ControlAnswer::Error { code, detail } => Err(LinkError::Refused {
                code: code.to_string(),
                detail,
            }),
            answer => Ok(answer),
        }
    }

    /// [`GateLink::ask_blocking`] on a blocking thread.
    pub async fn ask(&self, op: ControlOp) -> Result<ControlAnswer, LinkError> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.ask_blocking(op))
            .await
            .map_err(|e| LinkError::Join(e.to_string()))?
    }
}
