//! One tool call through the gate: a `ToolRequest` on its own connection to the agent
//! socket, `pending_approval` updates passed back as they come, the final answer returned.
//! Closing the connection (the MCP client cancelled) makes the gate withdraw the approval.

use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proto::telemetry::TraceParent;
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

/// The envelope id of a call: a connection carries one call at a time.
const ID: u64 = 1;

/// At most this many connections are kept idle between calls.
const KEEP: usize = 4;

/// The connections one front keeps to the gate between its calls (docs/spec.md §5), so a
/// call costs no connection, peer check or gate thread of its own. One call at a time on a
/// connection; a connection goes back only after its call's final answer (a cancelled or
/// failed one is closed, which is how the gate learns of a cancel).
///
/// A gate that stops taking connections shuts the reading side of the idle ones
/// (`gate::serve`): a request written on such a connection fails to send (`EPIPE`), so it
/// never reached the gate and is sent again on a new connection. Only a failure to *send*
/// on a kept connection is retried: once a request is sent, the call is the gate's.
pub struct Pool {
    connector: Connector,
    idle: std::sync::Mutex<Vec<UnixStream>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").finish_non_exhaustive()
    }
}

impl Pool {
    /// A pool that opens its connections with `connector`.
    pub fn new(connector: Connector) -> Self {
        Self {
            connector,
            idle: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn take(&self) -> Option<UnixStream> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
    }

    /// Sends `req` on a kept connection, or on a new one when none is kept or a kept one no
    /// longer takes requests; returns the connection it went on (wait for its answer with
    /// [`answer`]). May block while a gate starts.
    pub fn send(&self, req: &ToolRequest) -> Result<UnixStream, GateCallError> {
        self.send_traced(req, None)
    }

    /// [`Pool::send`], with the client's trace context for the call (docs/spec.md §8).
    pub fn send_traced(
        &self,
        req: &ToolRequest,
        traceparent: Option<&TraceParent>,
    ) -> Result<UnixStream, GateCallError> {
        while let Some(kept) = self.take() {
            if send_traced(&kept, req, traceparent).is_ok() {
                return Ok(kept);
            }
            // The gate ended this connection (or died) before reading anything more from
            // it: the request never reached it.
        }
        let stream = (self.connector)()?;
        send_traced(&stream, req, traceparent)?;
        Ok(stream)
    }

    /// Keeps `stream`, whose call has had its final answer, for a later call.
    pub fn keep(&self, stream: UnixStream) {
        let mut idle = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < KEEP {
            idle.push(stream);
        }
    }
}

/// Writes `req` on `stream` as one request frame.
pub fn send(stream: &UnixStream, req: &ToolRequest) -> Result<(), GateCallError> {
    send_traced(stream, req, None)
}

/// Writes `req` on `stream`, after a `call_context` frame with the client's trace context
/// when it sent one (docs/spec.md §2.2): the `tool_request` itself cannot carry it.
pub fn send_traced(
    stream: &UnixStream,
    req: &ToolRequest,
    traceparent: Option<&TraceParent>,
) -> Result<(), GateCallError> {
    let mut w = BufWriter::new(stream);
    if let Some(t) = traceparent {
        write_frame(&mut w, &Envelope::context(ID, t.to_string())).map_err(GateCallError::Frame)?;
    }
    write_frame(&mut w, &Envelope::request(ID, req.clone())).map_err(GateCallError::Frame)?;
    w.flush()
        .map_err(|e| GateCallError::Frame(FrameError::Io(e)))
}

/// Sends `req` on `stream` and waits for the final answer, calling `pending` for each
/// `pending_approval`.
pub fn call(
    stream: &UnixStream,
    req: ToolRequest,
    pending: &mut dyn FnMut(&ToolResponse),
) -> Result<ToolResponse, GateCallError> {
    send(stream, &req)?;
    answer(stream, pending)
}

/// Waits for the final answer of the request sent on `stream`, calling `pending` for each
/// `pending_approval`.
pub fn answer(
    stream: &UnixStream,
    pending: &mut dyn FnMut(&ToolResponse),
) -> Result<ToolResponse, GateCallError> {
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
