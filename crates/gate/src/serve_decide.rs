//! The decision socket (docs/spec.md §2.5): a front's requests to show and decide one pending
//! approval of its own session ([`Gate::decide_for_client`]), one reply each, in order.
//!
//! An allowlist like the other sockets: anything that does not decode as a
//! [`proto::decide::DecideRequest`] — a control request included — gets one `error` reply
//! (id 0) and the connection is closed. The socket is `0600` in the state directory and is
//! bound only when the config says `[gate] approve_in_client = true`. Like the others it
//! answers only a peer of the gate's uid in the gate's user and pid namespaces.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;

use proto::FrameError;
use proto::decide::{DecideErrorCode, DecideReply, read_decide_request, write_decide_reply};

use crate::gate::Gate;
use crate::serve::{ServeError, SocketError, admit, bind_private};

pub use statedir::DECIDE_SOCKET;

/// The error code for a frame that could not be read, or `None` where the connection ended.
fn decide_code(e: &FrameError) -> Option<DecideErrorCode> {
    match e {
        FrameError::Json(j) if j.classify() == serde_json::error::Category::Data => {
            Some(DecideErrorCode::BadMessage)
        }
        FrameError::BadVersion(_) => Some(DecideErrorCode::BadVersion),
        FrameError::Empty | FrameError::TooLarge(_) | FrameError::Json(_) => {
            Some(DecideErrorCode::BadFrame)
        }
        FrameError::Closed | FrameError::Io(_) => None,
    }
}

/// Serves one front's connection to the decision socket until it closes or misbehaves.
pub fn serve_decide<R: Read, W: Write>(
    gate: Arc<Gate>,
    mut reader: R,
    mut writer: W,
) -> Result<(), ServeError> {
    loop {
        let req = match read_decide_request(&mut reader) {
            Ok(req) => req,
            Err(FrameError::Closed) => return Ok(()),
            Err(e) => {
                return match decide_code(&e) {
                    Some(code) => {
                        let _ = write_decide_reply(
                            &mut writer,
                            &DecideReply::error(0, code, e.to_string()),
                        );
                        Err(ServeError::BadFrame(e))
                    }
                    None => Err(ServeError::Io(e)),
                };
            }
        };
        let reply = DecideReply::new(req.id, gate.decide_for_client(req.op));
        write_decide_reply(&mut writer, &reply).map_err(ServeError::Write)?;
    }
}

/// [`serve_decide`] over a Unix stream, for a peer `check_peer` admits (the operator's uid
/// in the gate's own namespaces, as on the other sockets).
pub fn serve_decide_stream(gate: Arc<Gate>, stream: UnixStream) -> Result<(), ServeError> {
    admit(&gate, DECIDE_SOCKET, &stream)?;
    let reader = stream.try_clone().map_err(ServeError::Clone)?;
    serve_decide(gate, reader, stream)
}

/// Binds `decide.sock` in the state directory (mode `0600`), like the other sockets.
pub fn bind_decide_socket(state_dir: &Path) -> Result<UnixListener, SocketError> {
    bind_private(state_dir, DECIDE_SOCKET)
}
