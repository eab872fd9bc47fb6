//! The frame codec (docs/spec.md §2.3): a 4-byte big-endian length, then that many bytes of UTF-8
//! JSON holding one [`Envelope`].
//!
//! ```text
//! +---------+---------+---------+---------+------------------------------+
//! |  N >> 24|  N >> 16|  N >> 8 |    N    |  N bytes: one envelope, JSON |
//! +---------+---------+---------+---------+------------------------------+
//!   1 <= N <= MAX_FRAME (1,048,576), checked before anything is allocated
//! ```
//!
//! This is the first code that touches bytes from another process. The length is checked
//! before a buffer is allocated or a body byte is read; nothing here can panic
//! (`unwrap`, `expect`, `panic!` and slice indexing are denied in this module).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::io::{self, Read, Write};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::wire::{Envelope, PROTOCOL_VERSION};

/// The largest body a frame may carry, in bytes. A body of exactly this size is allowed.
pub const MAX_FRAME: usize = 1_048_576;

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The stream ended before the first byte of a frame: the peer closed cleanly.
    #[error("the connection closed")]
    Closed,
    /// The length prefix was 0.
    #[error("a frame's length was 0")]
    Empty,
    /// The length prefix, or an outgoing body, was larger than [`MAX_FRAME`].
    #[error("a frame of {0} bytes is larger than the limit of {MAX_FRAME}")]
    TooLarge(usize),
    /// The envelope's `v` was not [`PROTOCOL_VERSION`].
    #[error("expected protocol version {PROTOCOL_VERSION}, got {0}")]
    BadVersion(u32),
    /// The body was not a valid envelope, or could not be encoded.
    #[error("a frame's body is not a valid envelope: {0}")]
    Json(#[source] serde_json::Error),
    /// Any other I/O failure, including a stream that ends mid-frame.
    #[error("frame I/O failed: {0}")]
    Io(#[source] io::Error),
}

/// Encodes `env` and writes it as one frame, then flushes.
///
/// The body is encoded first; if it is larger than [`MAX_FRAME`] nothing is written and the
/// answer is `TooLarge(len)`. The length and the body go out in one `write_all`, so a frame is
/// never interleaved with another writer's bytes on a shared stream of whole-frame writers.
pub fn write_frame<W: Write>(w: &mut W, env: &Envelope) -> Result<(), FrameError> {
    write_framed(w, env)
}

/// Reads one frame and decodes its envelope.
///
/// End of stream before the first byte is `Closed`; after 1 to 3 length bytes, or inside the
/// body, it is `Io` (`UnexpectedEof`). Short reads and `Interrupted` are retried.
pub fn read_frame<R: Read>(r: &mut R) -> Result<Envelope, FrameError> {
    read_framed(r)
}

/// A value that travels in a frame and carries the protocol version in `v`.
pub(crate) trait Versioned {
    fn version(&self) -> u32;
}

impl Versioned for Envelope {
    fn version(&self) -> u32 {
        self.v
    }
}

/// The codec for any framed value: [`write_frame`] and the control channel share it, so the
/// length rules are written once.
pub(crate) fn write_framed<W: Write, T: Serialize>(w: &mut W, value: &T) -> Result<(), FrameError> {
    let mut buf = Vec::with_capacity(256);
    buf.extend_from_slice(&[0; 4]);
    serde_json::to_writer(&mut buf, value).map_err(FrameError::Json)?;
    let len = buf.len().saturating_sub(4);
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    let prefix = u32::try_from(len).map_err(|_| FrameError::TooLarge(len))?;
    if let Some(head) = buf.get_mut(..4) {
        head.copy_from_slice(&prefix.to_be_bytes());
    }
    w.write_all(&buf).map_err(FrameError::Io)?;
    w.flush().map_err(FrameError::Io)
}

/// The reading half of [`write_framed`]: the length is checked before anything is
/// allocated, the body decoded strictly, then the version checked.
pub(crate) fn read_framed<R: Read, T: DeserializeOwned + Versioned>(
    r: &mut R,
) -> Result<T, FrameError> {
    let mut prefix = [0u8; 4];
    let mut got = 0usize;
    while let Some(rest) = prefix.get_mut(got..).filter(|rest| !rest.is_empty()) {
        match r.read(rest) {
            Ok(0) if got == 0 => return Err(FrameError::Closed),
            Ok(0) => {
                return Err(FrameError::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the stream ended after {got} of 4 length bytes"),
                )));
            }
            Ok(n) => got = got.saturating_add(n).min(4),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    let declared = u32::from_be_bytes(prefix);
    // Decided before any buffer exists or any body byte is read.
    let len = usize::try_from(declared).unwrap_or(usize::MAX);
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).map_err(FrameError::Io)?;
    // JSON, strict, nothing after it but white space.
    let value: T = serde_json::from_slice(&body).map_err(FrameError::Json)?;
    if value.version() != PROTOCOL_VERSION {
        return Err(FrameError::BadVersion(value.version()));
    }
    Ok(value)
}

impl FrameError {
    /// The `error` envelope code a role answers this failure with, or `None` where the
    /// connection simply ended (`Closed`) or failed below the frame layer (`Io`).
    pub fn wire_code(&self) -> Option<crate::wire::ErrorCode> {
        use crate::wire::ErrorCode;
        match self {
            FrameError::Empty | FrameError::TooLarge(_) | FrameError::Json(_) => {
                Some(ErrorCode::BadFrame)
            }
            FrameError::BadVersion(_) => Some(ErrorCode::BadVersion),
            FrameError::Closed | FrameError::Io(_) => None,
        }
    }
}
