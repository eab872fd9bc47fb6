//! The operator's channel to the gate (docs/spec.md §2.4): the CLI and the approval page send a
//! [`ControlRequest`] over the control socket (`0600`, in the state directory) and get one
//! [`ControlReply`] back.
//!
//! The frames are the same as the agent channel's: [`read_control_request`] and friends reuse
//! the codec's length and version checks, and the same strictness rules hold (unknown,
//! duplicated or missing fields, arrays in place of objects: errors). An `Option` field must be
//! present, as `null` when it has no value: a missing field is an error here too.
//!
//! Request and reply are different types, so a peer that sends a reply where a request belongs
//! fails to decode and is answered `bad_message` — the gate answers only what its peer may send.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::frame::{FrameError, Versioned, read_framed, write_framed};
use crate::ids::{CallId, DataClass, SessionId, Timestamp};
use crate::strict::{strict_object, wire_names};
use crate::wire::DenyReason;

/// A request from the operator: `{"v":1,"id":N,"op":{"kind":...,"body":{...}}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct ControlRequest {
    pub v: u32,
    pub id: u64,
    pub op: ControlOp,
}

/// What the operator asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "kind",
    content = "body",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum ControlOp {
    /// Is a gate serving here, and which?
    Status {},
    /// A gate started on demand stops taking connections now and ends once the calls it
    /// holds are answered (a client whose config changed asks this, then starts a new
    /// gate). A gate kept by `boxmaker serve` answers `conflict`.
    Retire {},
    /// Pending approvals, or every approval with `all`.
    ListApprovals {
        all: bool,
    },
    Approve {
        approval: String,
    },
    Refuse {
        approval: String,
        #[serde(deserialize_with = "Option::deserialize")]
        reason: Option<String>,
    },
    ListSessions {},
    /// Sets a session's taint back to `(public, false)`; audited.
    ResetSession {
        session: SessionId,
    },
    ListGrants {},
    AddGrant {
        grant: GrantSpec,
    },
    RevokeGrant {
        grant: String,
    },
    /// What would be decided for this call, without running it.
    Check {
        session: SessionId,
        tool: String,
        class: DataClass,
        untrusted: bool,
        #[serde(deserialize_with = "Option::deserialize")]
        at: Option<Timestamp>,
    },
    /// The last `n` records of the audit log.
    AuditTail {
        n: u64,
    },
    AuditVerify {},
}

/// The gate's answer: `{"v":1,"id":N,"reply":{"kind":...,"body":{...}}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct ControlReply {
    pub v: u32,
    pub id: u64,
    pub reply: ControlAnswer,
}

/// What the gate answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "kind",
    content = "body",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum ControlAnswer {
    /// `config` is the fingerprint of the config the gate decides by; `kept` is true for a
    /// gate that `boxmaker serve` keeps (it never retires on its own), false for one a
    /// client started on demand (it ends when its last client does).
    Status {
        version: String,
        pid: u32,
        config: String,
        kept: bool,
    },
    /// The gate retires: no new connection reaches it.
    Retiring {},
    Approvals {
        items: Vec<ApprovalInfo>,
    },
    Approval {
        item: ApprovalInfo,
    },
    Sessions {
        items: Vec<SessionInfo>,
    },
    Session {
        item: SessionInfo,
    },
    Grants {
        items: Vec<GrantInfo>,
    },
    Grant {
        item: GrantInfo,
    },
    Decision {
        decision: CheckOutcome,
        #[serde(deserialize_with = "Option::deserialize")]
        reason: Option<DenyReason>,
        explain: Vec<String>,
    },
    /// Audit records exactly as stored, one JSON text each.
    AuditRecords {
        lines: Vec<String>,
    },
    /// `first_bad` is the sequence number of the first record that does not match, if any.
    AuditVerified {
        records: u64,
        #[serde(deserialize_with = "Option::deserialize")]
        first_bad: Option<u64>,
        detail: String,
    },
    Error {
        code: ControlErrorCode,
        detail: String,
    },
}

/// A call waiting for (or decided by) a person, with everything the person must see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct ApprovalInfo {
    pub id: String,
    pub session: SessionId,
    pub call: CallId,
    pub tool: String,
    /// The exact arguments the tool will get if approved.
    pub arguments: String,
    pub reason: ApprovalReason,
    /// The session's taint when the approval was asked.
    pub class: DataClass,
    pub untrusted: bool,
    pub created: Timestamp,
    pub expires: Timestamp,
    pub state: ApprovalState,
}

/// Why a call needs a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum ApprovalReason {
    /// The grant's effect is `ask`.
    GrantAsk,
    /// The grant says `if_untrusted = "ask"` and the session has seen untrusted content.
    UntrustedContent,
}

wire_names!(ApprovalReason, "approval reason", "grant_ask or untrusted_content", {
    GrantAsk => "grant_ask",
    UntrustedContent => "untrusted_content",
});

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum ApprovalState {
    Pending,
    Approved,
    Refused,
    Expired,
    /// The client stopped waiting (cancelled the call).
    Withdrawn,
    /// Approved and then run: an approval is used at most once.
    Used,
}

wire_names!(ApprovalState, "approval state", "pending, approved, refused, expired, withdrawn or used", {
    Pending => "pending",
    Approved => "approved",
    Refused => "refused",
    Expired => "expired",
    Withdrawn => "withdrawn",
    Used => "used",
});

/// A session and its taint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct SessionInfo {
    pub id: SessionId,
    pub class: DataClass,
    pub untrusted: bool,
    pub created: Timestamp,
    pub updated: Timestamp,
}

/// A grant as the operator writes it (`[[grant]]` in the config, or added at run time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct GrantSpec {
    pub tool: String,
    pub sessions: String,
    pub effect: Effect,
    pub max_class: DataClass,
    pub if_untrusted: Effect,
    #[serde(deserialize_with = "Option::deserialize")]
    pub expires: Option<Timestamp>,
}

/// A grant in force, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct GrantInfo {
    /// `config:N` for the N-th `[[grant]]` of the file, `rt-N` for one added at run time.
    pub id: String,
    pub grant: GrantSpec,
}

/// A grant's effect, and what `if_untrusted` turns it into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum Effect {
    Allow,
    Ask,
    Deny,
}

wire_names!(Effect, "effect", "allow, ask or deny", {
    Allow => "allow",
    Ask => "ask",
    Deny => "deny",
});

/// What `check` found (the reason, when denied, is beside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum CheckOutcome {
    Allow,
    Ask,
    Denied,
}

wire_names!(CheckOutcome, "check outcome", "allow, ask or denied", {
    Allow => "allow",
    Ask => "ask",
    Denied => "denied",
});

/// Why the gate refused a control request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum ControlErrorCode {
    BadFrame,
    BadVersion,
    BadMessage,
    /// No approval, session or grant by that id.
    NotFound,
    /// The request does not fit the current state (an approval already decided or expired).
    Conflict,
    Internal,
}

wire_names!(ControlErrorCode, "control error code", "bad_frame, bad_version, bad_message, not_found, conflict or internal", {
    BadFrame => "bad_frame",
    BadVersion => "bad_version",
    BadMessage => "bad_message",
    NotFound => "not_found",
    Conflict => "conflict",
    Internal => "internal",
});

strict_object!(
    ControlRequest,
    ControlOp,
    ControlReply,
    ControlAnswer,
    ApprovalInfo,
    SessionInfo,
    GrantSpec,
    GrantInfo,
);

impl Versioned for ControlRequest {
    fn version(&self) -> u32 {
        self.v
    }
}

impl Versioned for ControlReply {
    fn version(&self) -> u32 {
        self.v
    }
}

impl ControlRequest {
    /// A request of the current version.
    pub fn new(id: u64, op: ControlOp) -> Self {
        Self {
            v: crate::PROTOCOL_VERSION,
            id,
            op,
        }
    }
}

impl ControlReply {
    /// A reply of the current version.
    pub fn new(id: u64, reply: ControlAnswer) -> Self {
        Self {
            v: crate::PROTOCOL_VERSION,
            id,
            reply,
        }
    }

    /// An `error` reply.
    pub fn error(id: u64, code: ControlErrorCode, detail: impl Into<String>) -> Self {
        Self::new(
            id,
            ControlAnswer::Error {
                code,
                detail: detail.into(),
            },
        )
    }
}

/// Writes one control request as a frame (same rules as [`crate::write_frame`]).
pub fn write_control_request<W: Write>(w: &mut W, req: &ControlRequest) -> Result<(), FrameError> {
    write_framed(w, req)
}

/// Reads one control request (same rules as [`crate::read_frame`]).
pub fn read_control_request<R: Read>(r: &mut R) -> Result<ControlRequest, FrameError> {
    read_framed(r)
}

/// Writes one control reply as a frame.
pub fn write_control_reply<W: Write>(w: &mut W, reply: &ControlReply) -> Result<(), FrameError> {
    write_framed(w, reply)
}

/// Reads one control reply.
pub fn read_control_reply<R: Read>(r: &mut R) -> Result<ControlReply, FrameError> {
    read_framed(r)
}
