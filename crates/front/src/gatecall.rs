//! One tool call through the gate: a `ToolRequest` on its own connection to the agent
//! socket, `pending_approval` updates passed back as they come, the final answer returned.
//! Closing the connection (the MCP client cancelled) makes the gate withdraw the approval.

use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proto::{Envelope, FrameError, Message, ToolRequest, ToolResponse, read_frame, write_frame};

/// Why the gate gave no final answer.
#[derive(Debug, thiserror::Error)]
pub enum GateCallError {
    #[error("cannot reach the gate at {path}: {source}")]
    Connect {
        path: String,
        source: std::io::Error,
    },
    #[error("the gate connection failed: {0}")]
    Frame(#[source] FrameError),
    #[error("the gate stopped before it answered")]
    Gone,
    #[error("the gate refused the request: {0}")]
    Refused(String),
    #[error("the gate answered out of turn")]
    Unexpected,
}

/// Opens the connection for one call. The binary gives the front one that finds a gate
/// whatever process hosts it (and starts one if none does), so no client is stranded when
/// another exits; it may block while a gate starts.
pub type Connector = Arc<dyn Fn() -> Result<UnixStream, GateCallError> + Send + Sync>;

/// A [`Connector`] to the agent socket at `socket` and nothing else (any path length).
pub fn socket_connector(socket: PathBuf) -> Connector {
    Arc::new(move || connect(&socket))
}

/// Opens the connection for one call (kept by the caller so it can shut it down to cancel).
pub fn connect(socket: &Path) -> Result<UnixStream, GateCallError> {
    statedir::connect_path(socket).map_err(|source| GateCallError::Connect {
        path: socket.display().to_string(),
        source,
    })
}

/// Sends `req` on `stream` and waits for the final answer, calling `pending` for each
/// `pending_approval`.
pub fn call(
    stream: &UnixStream,
    req: ToolRequest,
    pending: &mut dyn FnMut(&ToolResponse),
) -> Result<ToolResponse, GateCallError> {
    const ID: u64 = 1;
    let mut w = BufWriter::new(stream);
    write_frame(&mut w, &Envelope::request(ID, req)).map_err(GateCallError::Frame)?;
    w.flush()
        .map_err(|e| GateCallError::Frame(FrameError::Io(e)))?;
    drop(w);
    let mut r = BufReader::new(stream);
    loop {
        let env = match read_frame(&mut r) {
            Ok(env) => env,
            Err(FrameError::Closed) => return Err(GateCallError::Gone),
            Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(GateCallError::Gone);
            }
            Err(e) => return Err(GateCallError::Frame(e)),
        };
        if env.id != ID {
            return Err(GateCallError::Unexpected);
        }
        match env.msg {
            Message::ToolResponse(resp) if !env.r#final && resp.is_pending() => pending(&resp),
            Message::ToolResponse(resp) if env.r#final && !resp.is_pending() => return Ok(resp),
            Message::Error(e) => {
                return Err(GateCallError::Refused(format!("{}: {}", e.code, e.detail)));
            }
            _ => return Err(GateCallError::Unexpected),
        }
    }
}
