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
use crate::run::FileDigest;
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
    /// A person's decision on a pending approval, saying where it comes from (`via`, `by`:
    /// kept with the approval and audited) and, when the person was shown the call, what
    /// they were shown: the gate refuses the decision (`conflict`) when the approval is not
    /// that call. `approve_for_session` also remembers the approval for
    /// `remember_seconds` (1 … [`REMEMBER_MAX_SECONDS`]): a run-time grant for this
    /// session, this tool and these exact arguments. `via` may not be `client`: only the
    /// gate writes that, for decisions that come through the decision socket
    /// (`proto::decide`).
    DecideApproval {
        approval: String,
        choice: Choice,
        #[serde(deserialize_with = "Option::deserialize")]
        remember_seconds: Option<u64>,
        #[serde(deserialize_with = "Option::deserialize")]
        reason: Option<String>,
        #[serde(deserialize_with = "Option::deserialize")]
        shown: Option<Shown>,
        via: DecidedVia,
        by: String,
    },
    /// Approvals whose latest change is numbered above `after`, oldest change first, at
    /// most `limit` (capped at [`WATCH_LIMIT_MAX`]) and as many as fit a frame; only
    /// pending ones with `pending_only`. When there are none yet, the gate waits up to
    /// `wait_ms` (capped at [`WATCH_WAIT_MAX_MS`]) for one before it answers.
    WatchApprovals {
        after: u64,
        limit: u64,
        wait_ms: u64,
        pending_only: bool,
    },
    /// The person's own words for one conversation (docs/spec.md §3.10): a prompt they
    /// typed, handed over by the client's hook (`via` `hook`) or by `boxmaker intent` from a
    /// program the person runs (`cli`). Only the operator's channel carries it: the agent
    /// socket has no such message, and no box reaches this socket. At most
    /// [`MAX_INTENT_TEXT`] bytes.
    Intent {
        session: SessionId,
        text: String,
        via: IntentVia,
    },
}

/// The longest prompt one `intent` carries (bytes): 256 KiB.
pub const MAX_INTENT_TEXT: usize = 256 * 1024;

/// How the person's words reached the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum IntentVia {
    /// The client's own prompt hook (`boxmaker intent --hook`).
    Hook,
    /// `boxmaker intent` from a program the person runs.
    Cli,
}

wire_names!(IntentVia, "intent via", "hook or cli", {
    Hook => "hook",
    Cli => "cli",
});

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
    /// The approval as decided (`decide_approval`).
    Decided {
        item: ApprovalUpdate,
    },
    /// `watch_approvals`: the changes, oldest first; `head` is the number of the newest
    /// change the gate has made (ask again with `after` = the last item's `change`, or
    /// `head` when there are none); `pending` how many approvals are pending now; `now` is
    /// the gate's clock, for countdowns.
    ApprovalUpdates {
        items: Vec<ApprovalUpdate>,
        head: u64,
        pending: u64,
        now: Timestamp,
    },
    Error {
        code: ControlErrorCode,
        detail: String,
    },
    /// What a prompt added to its conversation: its number there (1 for the first), how
    /// many of its values and sources were new, and the sources it names (as stored:
    /// `host:dora.example`, `file:notes.txt`).
    Intent {
        prompt: u64,
        values: u64,
        sources: Vec<String>,
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
    /// What the approval covers beyond its text: each file the call's arguments name in
    /// `/work` or a writable mount, with its digest as the runner found it when the call
    /// asked (docs/spec.md §3.3 step 6). `was` says a file changed since a person approved
    /// the same call. Left out when there are none (and read as none when missing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileDigest>,
    /// What the person should weigh beyond the call itself (docs/spec.md §3.7 provenance,
    /// §3.3 clearances): a value that first appeared in an untrusted answer or was never
    /// seen, data going above a destination's clearance. Empty when there is nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub concerns: Vec<Concern>,
}

/// One thing a person is told about a call waiting for them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Concern {
    pub kind: ConcernKind,
    /// Where in the arguments (`/recipient`, `/to/1`).
    pub pointer: String,
    /// The value there, in canonical form (for `above_clearance`: the destination).
    pub value: String,
    /// One sentence: "the IBAN DE89… first appeared in an untrusted answer of
    /// bank_read_file, call 3".
    pub detail: String,
}

/// What a [`Concern`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum ConcernKind {
    /// The value first appeared in an untrusted answer (or the session's provenance index is
    /// full and cannot place it, which counts as untrusted).
    UntrustedValue,
    /// The value was seen in no answer of the session and not in the config: only the
    /// prompt, or the model, chose it.
    UnseenValue,
    /// The session holds data above what the destination is cleared for.
    AboveClearance,
    /// The person's own words vouch for the value (docs/spec.md §3.10): a prompt they
    /// typed names it, or it came from a source a prompt named.
    IntentValue,
}

wire_names!(ConcernKind, "concern kind", "untrusted_value, unseen_value, above_clearance or intent_value", {
    UntrustedValue => "untrusted_value",
    UnseenValue => "unseen_value",
    AboveClearance => "above_clearance",
    IntentValue => "intent_value",
});

/// An approval and what happened to it: what the history of approvals shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct ApprovalUpdate {
    pub item: ApprovalInfo,
    /// The number of the approval's latest change (every ask, decision, expiry, withdrawal
    /// and use gets the next number).
    pub change: u64,
    /// The SHA-256 (hex) of what a person decides on — the approval's id, session, call,
    /// tool and exact arguments — to send back in [`Shown`].
    pub call_sha256: String,
    /// `item.arguments` was shortened to fit a frame: decide on the whole text elsewhere.
    pub cut: bool,
    /// When it left `pending`.
    #[serde(deserialize_with = "Option::deserialize")]
    pub decided: Option<Timestamp>,
    /// Where the decision came from (none for an expiry or a withdrawal).
    #[serde(deserialize_with = "Option::deserialize")]
    pub via: Option<DecidedVia>,
    /// Who decided, in the decider's words (`the approvals page, from 127.0.0.1:50312`).
    #[serde(deserialize_with = "Option::deserialize")]
    pub by: Option<String>,
    /// The refuser's reason.
    #[serde(deserialize_with = "Option::deserialize")]
    pub note: Option<String>,
    /// The remembered approval (`rt-N`) that an `approve_for_session` made.
    #[serde(deserialize_with = "Option::deserialize")]
    pub grant: Option<String>,
}

/// What a person was shown when they decided. `call_sha256` is [`ApprovalUpdate::call_sha256`]
/// of the approval shown; `class` and `untrusted` the session's taint as shown, which bound
/// an approval remembered for the session (never broader than what the person saw).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Shown {
    pub call_sha256: String,
    pub class: DataClass,
    pub untrusted: bool,
}

/// A person's answer to an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum Choice {
    /// This call runs, once.
    ApproveOnce,
    /// This call runs, and the same call (this session, this tool, these exact arguments)
    /// runs without asking until the remembered approval expires or is revoked.
    ApproveForSession,
    /// This call is denied `approval_refused`.
    Refuse,
}

wire_names!(Choice, "choice", "approve_once, approve_for_session or refuse", {
    ApproveOnce => "approve_once",
    ApproveForSession => "approve_for_session",
    Refuse => "refuse",
});

/// Where a decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum DecidedVia {
    /// `boxmaker approve` / `refuse`.
    Cli,
    /// The approvals page (`boxmaker serve --approvals`).
    Page,
    /// The agent's own MCP client, through elicitation (the decision socket).
    Client,
    /// Another client of the control socket (the `approve` and `refuse` ops).
    Control,
}

wire_names!(DecidedVia, "decided via", "cli, page, client or control", {
    Cli => "cli",
    Page => "page",
    Client => "client",
    Control => "control",
});

/// What a remembered approval covers beyond its tool and session: exactly these arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct GrantScope {
    /// The arguments as the person saw them.
    pub arguments: String,
    /// SHA-256 (hex) of their canonical form (keys sorted, no white space): a call matches
    /// only when its arguments have the same canonical form.
    pub arguments_sha256: String,
    /// The approval the person decided.
    pub approval: String,
    /// The files it binds: a call runs under it only while each has this digest. Left out
    /// when there are none (and read as none when missing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileDigest>,
}

/// The longest a remembered approval lasts: 24 hours.
pub const REMEMBER_MAX_SECONDS: u64 = 86_400;

/// The longest `watch_approvals` waits: 30 s.
pub const WATCH_WAIT_MAX_MS: u64 = 30_000;

/// The most items one `watch_approvals` answer carries.
pub const WATCH_LIMIT_MAX: u64 = 5_000;

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
    /// For a remembered approval (`approve_for_session`): the exact arguments it covers.
    /// It answers only an `ask` for its session and tool with these arguments.
    #[serde(deserialize_with = "Option::deserialize")]
    pub scope: Option<GrantScope>,
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
    Concern,
    SessionInfo,
    GrantSpec,
    GrantInfo,
    ApprovalUpdate,
    Shown,
    GrantScope,
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
