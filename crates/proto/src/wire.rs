//! The envelope and its messages (docs/spec.md §2.2).
//!
//! Field order and variant order are part of the format: encoding is canonical, and each
//! value encodes to exactly the bytes of its fixture. Decoding is strict: an unknown or
//! duplicated field, a missing field, an unknown `kind` or `status`, a number where a string
//! belongs (or the reverse), a float, and an array in place of an object are all errors.
//!
//! ```text
//! {"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":{…}}}
//!                                    └ Message: adjacently tagged (kind, body)
//! {"status":"result","content":"…","class":"internal","untrusted":false,"truncated":false}
//!  └ ToolResponse: internally tagged (status beside the fields)
//! ```

use serde::{Deserialize, Serialize};

use crate::ids::{CallId, DataClass, SessionId, Timestamp};
use crate::strict::{strict_object, wire_names};

/// The version every envelope carries in `v`.
pub const PROTOCOL_VERSION: u32 = 1;

/// One message on a connection, with the id that pairs a request with its responses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Envelope {
    /// Always [`PROTOCOL_VERSION`]; the codec refuses any other.
    pub v: u32,
    /// Pairs a request with its responses on one connection.
    pub id: u64,
    /// `true` on a request and on the last answer to it.
    pub r#final: bool,
    pub msg: Message,
}

/// What an envelope carries: `{"kind": "...", "body": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "kind",
    content = "body",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum Message {
    ToolRequest(ToolRequest),
    ToolResponse(ToolResponse),
    Error(WireError),
    /// What the agent's client said about the call that follows, beyond the call itself:
    /// its trace context (docs/spec.md §2.2, §8). Sent with `final: false` and the id of the
    /// `tool_request` it goes with, just before it; never answered on its own.
    CallContext(CallContext),
}

/// The W3C trace context the agent's client sent with a call (its `_meta.traceparent`),
/// checked by [`crate::telemetry::TraceParent::parse`] where it is made and where it is read.
/// A `tool_request` cannot carry it: its fields are fixed by its fixture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct CallContext {
    /// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`, lowercase.
    pub traceparent: String,
}

/// A role's answer to something it could not accept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct WireError {
    pub code: ErrorCode,
    /// One sentence for a person; never carries tool content.
    pub detail: String,
}

/// Why a role refused a frame or a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum ErrorCode {
    /// The bytes were not a frame holding an envelope.
    BadFrame,
    /// The envelope's `v` was not [`PROTOCOL_VERSION`].
    BadVersion,
    /// A well-formed envelope that this peer may not send here.
    BadMessage,
    /// The role failed (for example the gate died with the call in flight).
    Internal,
}

wire_names!(ErrorCode, "error code", "bad_frame, bad_version, bad_message or internal", {
    BadFrame => "bad_frame",
    BadVersion => "bad_version",
    BadMessage => "bad_message",
    Internal => "internal",
});

/// An agent's request to run one tool once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct ToolRequest {
    pub session: SessionId,
    pub call: CallId,
    pub tool: String,
    /// The model's JSON object, carried as a string; proto never parses it.
    pub arguments: String,
}

/// The answer to a [`ToolRequest`]: `{"status": "...", ...fields}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "status",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum ToolResponse {
    /// Not final: a person must approve the call before `expires`.
    PendingApproval {
        approval: String,
        expires: Timestamp,
    },
    /// The tool ran; `content` is labelled by the runner, never by the tool.
    Result {
        content: String,
        class: DataClass,
        untrusted: bool,
        truncated: bool,
    },
    /// The tool could not run or failed; the message may carry data, so it is labelled
    /// with the tool's floor class when the taint is raised.
    Failed { message: String },
    /// The gate refused the call.
    Denied { reason: DenyReason },
}

/// Why the gate refused a call (docs/spec.md §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum DenyReason {
    NoGrant,
    GrantExpired,
    TaintTooHigh,
    DeniedByGrant,
    ApprovalRefused,
    ApprovalExpired,
}

wire_names!(
    DenyReason,
    "deny reason",
    "no_grant, grant_expired, taint_too_high, denied_by_grant, approval_refused or \
     approval_expired",
    {
        NoGrant => "no_grant",
        GrantExpired => "grant_expired",
        TaintTooHigh => "taint_too_high",
        DeniedByGrant => "denied_by_grant",
        ApprovalRefused => "approval_refused",
        ApprovalExpired => "approval_expired",
    }
);

strict_object!(
    Envelope,
    Message,
    WireError,
    ToolRequest,
    ToolResponse,
    CallContext
);

impl Envelope {
    /// An envelope of the current version.
    pub fn new(id: u64, r#final: bool, msg: Message) -> Self {
        Self {
            v: PROTOCOL_VERSION,
            id,
            r#final,
            msg,
        }
    }

    /// A request envelope (`final: true`).
    pub fn request(id: u64, req: ToolRequest) -> Self {
        Self::new(id, true, Message::ToolRequest(req))
    }

    /// A response envelope; `final` is `false` only for `pending_approval`.
    pub fn response(id: u64, resp: ToolResponse) -> Self {
        let r#final = !resp.is_pending();
        Self::new(id, r#final, Message::ToolResponse(resp))
    }

    /// The trace context of the request `id` that follows (`final: false`).
    pub fn context(id: u64, traceparent: impl Into<String>) -> Self {
        Self::new(
            id,
            false,
            Message::CallContext(CallContext {
                traceparent: traceparent.into(),
            }),
        )
    }

    /// An `error` envelope (always final).
    pub fn error(id: u64, code: ErrorCode, detail: impl Into<String>) -> Self {
        Self::new(
            id,
            true,
            Message::Error(WireError {
                code,
                detail: detail.into(),
            }),
        )
    }
}

impl ToolResponse {
    /// `true` for `pending_approval`, the one answer that is not final.
    pub fn is_pending(&self) -> bool {
        matches!(self, ToolResponse::PendingApproval { .. })
    }
}
