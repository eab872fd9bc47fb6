//! The front's decision channel (docs/spec.md §2.5): how a person's answer in the agent's own
//! MCP client (an elicitation) reaches the gate, without the front ever reaching the control
//! socket.
//!
//! A front sends a [`DecideRequest`] over the gate's *decision socket* (`decide.sock`, `0600`,
//! bound only when the config says `[gate] approve_in_client = true`) and gets one
//! [`DecideReply`]. The channel answers two requests, and nothing else:
//! - [`DecideOp::Show`]: what the person must be shown of one pending approval of the
//!   front's own session — the exact tool and arguments as the gate holds them (the call
//!   that runs), the files it names with their digests (what the approval binds), the
//!   session's taint, the reason and the expiry;
//! - [`DecideOp::Decide`]: the person's answer to that approval, bound to what was shown.
//!
//! It is the crosvm habit: a socket per kind of request, so the process that parses the
//! agent's input holds no socket that could add a grant, reset a taint, list other
//! sessions' calls or decide them. Same frames and strictness as the other channels
//! (`read_framed`/`write_framed`); requests and replies are different types.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::control::{ApprovalInfo, ApprovalState, Choice, Shown};
use crate::frame::{FrameError, Versioned, read_framed, write_framed};
use crate::ids::SessionId;
use crate::strict::{strict_object, wire_names};

/// A front's request: `{"v":1,"id":N,"op":{"kind":...,"body":{...}}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct DecideRequest {
    pub v: u32,
    pub id: u64,
    pub op: DecideOp,
}

/// What a front may ask. Both name the session the front serves: the gate answers only for
/// an approval of that session that a call of this gate is waiting on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "kind",
    content = "body",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum DecideOp {
    /// What to show the person.
    Show {
        session: SessionId,
        approval: String,
    },
    /// The person's answer. `remember_seconds` goes with `approve_for_session` (1 …
    /// [`crate::control::REMEMBER_MAX_SECONDS`]) and with nothing else.
    Decide {
        session: SessionId,
        approval: String,
        choice: Choice,
        #[serde(deserialize_with = "Option::deserialize")]
        remember_seconds: Option<u64>,
        shown: Shown,
    },
}

/// The gate's answer: `{"v":1,"id":N,"reply":{"kind":...,"body":{...}}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct DecideReply {
    pub v: u32,
    pub id: u64,
    pub reply: DecideAnswer,
}

/// What the gate answers a front.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "kind",
    content = "body",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum DecideAnswer {
    /// The approval as the person must see it, and the digest to send back in
    /// [`Shown::call_sha256`].
    Shown {
        item: ApprovalInfo,
        call_sha256: String,
    },
    /// The decision was taken: the approval's new state, and the remembered approval
    /// (`rt-N`) an `approve_for_session` made.
    Decided {
        state: ApprovalState,
        #[serde(deserialize_with = "Option::deserialize")]
        grant: Option<String>,
    },
    Error {
        code: DecideErrorCode,
        detail: String,
    },
}

/// Why the gate refused a front's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum DecideErrorCode {
    BadFrame,
    BadVersion,
    BadMessage,
    /// The config does not let a person approve in the agent's client.
    NotAllowed,
    /// No pending approval of that session by that id waits here (the same answer for an
    /// approval of another session: a front learns nothing of other sessions).
    NotFound,
    /// The approval is not what was shown, is no longer pending, or no call waits on it.
    Conflict,
    Internal,
}

wire_names!(DecideErrorCode, "decide error code", "bad_frame, bad_version, bad_message, not_allowed, not_found, conflict or internal", {
    BadFrame => "bad_frame",
    BadVersion => "bad_version",
    BadMessage => "bad_message",
    NotAllowed => "not_allowed",
    NotFound => "not_found",
    Conflict => "conflict",
    Internal => "internal",
});

strict_object!(DecideRequest, DecideOp, DecideReply, DecideAnswer);

impl Versioned for DecideRequest {
    fn version(&self) -> u32 {
        self.v
    }
}

impl Versioned for DecideReply {
    fn version(&self) -> u32 {
        self.v
    }
}

impl DecideRequest {
    /// A request of the current version.
    pub fn new(id: u64, op: DecideOp) -> Self {
        Self {
            v: crate::PROTOCOL_VERSION,
            id,
            op,
        }
    }
}

impl DecideReply {
    /// A reply of the current version.
    pub fn new(id: u64, reply: DecideAnswer) -> Self {
        Self {
            v: crate::PROTOCOL_VERSION,
            id,
            reply,
        }
    }

    /// An `error` reply.
    pub fn error(id: u64, code: DecideErrorCode, detail: impl Into<String>) -> Self {
        Self::new(
            id,
            DecideAnswer::Error {
                code,
                detail: detail.into(),
            },
        )
    }
}

/// Writes one decide request as a frame.
pub fn write_decide_request<W: Write>(w: &mut W, req: &DecideRequest) -> Result<(), FrameError> {
    write_framed(w, req)
}

/// Reads one decide request.
pub fn read_decide_request<R: Read>(r: &mut R) -> Result<DecideRequest, FrameError> {
    read_framed(r)
}

/// Writes one decide reply as a frame.
pub fn write_decide_reply<W: Write>(w: &mut W, reply: &DecideReply) -> Result<(), FrameError> {
    write_framed(w, reply)
}

/// Reads one decide reply.
pub fn read_decide_reply<R: Read>(r: &mut R) -> Result<DecideReply, FrameError> {
    read_framed(r)
}
