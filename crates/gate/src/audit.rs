//! The audit log (docs/spec.md §6): `audit.log` in the state directory, one JSON record a line,
//! hash-chained so that a changed, dropped, reordered or forged record is found by
//! [`verify`].
//!
//! # A record
//! ```text
//! {"seq":1,"time":1764465600,"event":"request","session":"s1","call":1,"tool":"read_file",
//!  "args_sha256":"9f86…","prev":"0000…0000","hash":"5e1a…"}\n
//! ```
//! (one line in the file). `seq` counts from 1 with no gaps; `time` is the gate's clock in
//! whole seconds; `event` and the fields after it are one [`Event`]; `prev` is the previous
//! record's `hash` (64 zeros for the first record); `hash` closes the record.
//!
//! # The canonical form and the hash
//! The **body** `B` of a record is the compact JSON (no white space; strings escaped as
//! `serde_json` writes them: `"` `\\` and control characters escaped, `\n`-style escapes where
//! JSON has one and `\u00XX` otherwise, everything else, non-ASCII included, as raw UTF-8) of
//! one object whose keys come in exactly this order:
//! 1. `seq` (integer), `time` (integer), `event` (the event's snake_case name);
//! 2. the event's fields, in the order they are declared in [`Event`]; an optional field
//!    that is absent is left out, never written as `null`;
//! 3. `prev` (64 lower-case hex digits).
//!
//! Then `hash = lower-hex(SHA-256(P ‖ B))`, where `P` is the previous record's hash as its
//! 32 raw bytes (32 zero bytes for the first record). The line written to the file is `B`
//! with its final `}` replaced by `,"hash":"<hash>"}`, and a `\n`. So the bytes hashed are
//! exactly the line's bytes before `,"hash":`, and a reader checks that a line is canonical
//! by re-encoding what it parsed and comparing bytes: a line that parses but is not
//! canonical (spaces, another key order, a duplicated key, a `null`) is refused.
//!
//! # Durability
//! [`AuditLog::append`] writes its line with one `write` on a file opened in append mode and
//! calls `fdatasync` before it returns: an acknowledged record survives a crash.
//! [`AuditLog::append_batch`] writes several records with one `fdatasync` (group commit).
//! A crash mid-write leaves a last line without its `\n`; it was never acknowledged, and
//! [`AuditLog::open`] cuts it off and says so ([`Repaired`]).
//!
//! # What the chain proves
//! Any change to a record breaks its hash or the next record's `prev`; dropping or swapping
//! records breaks `seq`. Someone who can rewrite the file can also recompute every hash
//! after their change, or cut the last records off; the chain cannot see either. The gate
//! signs checkpoints of the log's head and hands them to witnesses outside the state
//! directory ([`crate::anchor`]); [`crate::anchor::verify`] finds a log that does not
//! extend them.
//!
//! Content is never logged: a result's record holds its label, its size and its SHA-256.
//! Arguments are logged as their SHA-256, and in full only when the caller asks
//! ([`Event::request`]'s `log_arguments`).

use std::collections::VecDeque;
use std::fmt;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use proto::run::{EgressOutcome, EgressRecord};
use proto::{CallId, DataClass, DenyReason, SessionId, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::anchor::checkpoint::{Checkpoint, Head, KeyId, Signature};
use crate::anchor::tree::{Tree, leaf_hash};
use crate::anchor::{
    AnchorError, AnchorOk, ChainStart, Checked, Checker, Extends, Known, PublicKey, Signatures,
};
use crate::store::{ApprovalReason, DecidedVia, Effect};

/// The log's file name inside the state directory.
pub const AUDIT_FILE: &str = "audit.log";

/// What can go wrong with the audit log.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("could not create the state directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not open the audit log {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not read the audit log {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not write to the audit log {path} (is the disk full?): {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "could not make the audit log {path} durable (fdatasync failed: {source}); the gate \
         must restart, and reopening will check the log's last record"
    )]
    Sync {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not cut the unfinished last line off the audit log {path}: {source}")]
    Truncate {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the last record of the audit log {path} (line at byte {offset}) is bad: {problem}; \
         run `boxmaker audit verify` to find the first bad record"
    )]
    Malformed {
        path: PathBuf,
        offset: u64,
        problem: Problem,
    },
    #[error(
        "record at line {line} of the audit log {path} is bad: {problem}; run `boxmaker audit verify`"
    )]
    BadLine {
        path: PathBuf,
        line: u64,
        problem: Problem,
    },
    #[error(
        "an earlier write to the audit log {path} failed and could not be undone; restart the \
         gate (reopening checks and repairs the log's tail)"
    )]
    Poisoned { path: PathBuf },
    #[error(
        "{}{source}; the gate does not add to a log that does not extend its checkpoints: \
         keep the log as it is (`boxmaker audit verify` says the same), and to go on, start a \
         new chain that records the break (`boxmaker audit new-chain --reason TEXT`)",
        naming(path, source)
    )]
    NotExtended {
        path: PathBuf,
        source: Box<AnchorError>,
    },
    #[error("could not encode an audit record: {0}")]
    Encode(serde_json::Error),
    #[error("the audit log's sequence number overflowed")]
    SeqOverflow,
}

/// What [`AuditError::NotExtended`] says before its cause, so that it names the log's file
/// (a cut or a misplaced record names it already).
fn naming(path: &Path, source: &AnchorError) -> String {
    match source {
        AnchorError::Cut { .. } | AnchorError::Misplaced { .. } => String::new(),
        _ => format!("{}: ", path.display()),
    }
}

// ---------------------------------------------------------------------------------------------
// Digests

/// A SHA-256 digest. Written in records as 64 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The `prev` of the first record: 32 zero bytes.
    pub const ZERO: Digest = Digest([0; 32]);

    /// The SHA-256 of `data`.
    pub fn of(data: &[u8]) -> Digest {
        Digest(Sha256::digest(data).into())
    }

    /// 64 lower-case hex digits.
    pub fn to_hex(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(char::from(HEX[usize::from(b >> 4)]));
            s.push(char::from(HEX[usize::from(b & 15)]));
        }
        s
    }

    /// Parses exactly 64 lower-case hex digits.
    pub fn from_hex(s: &str) -> Option<Digest> {
        fn nibble(c: u8) -> Option<u8> {
            match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                _ => None,
            }
        }
        let bytes = s.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (o, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            *o = (nibble(*pair.first()?)? << 4) | nibble(*pair.get(1)?)?;
        }
        Some(Digest(out))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Digest::from_hex(&s)
            .ok_or_else(|| serde::de::Error::custom("expected 64 lower-case hex digits"))
    }
}

/// The SHA-256 of `data` as 64 lower-case hex digits (`args_sha256`, `content_sha256`).
pub fn sha256_hex(data: &[u8]) -> String {
    Digest::of(data).to_hex()
}

// ---------------------------------------------------------------------------------------------
// Events

/// The gate's verdict on a request (docs/spec.md §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The call runs.
    Allow,
    /// The call waits for a person.
    Ask,
    /// The call is denied (the record's `reason` says why).
    Deny,
}

/// One value (or destination) that changed a decision, as audited (docs/spec.md §3.7):
/// what it was, where in the arguments, and where it first appeared. The value itself is
/// argument content: only its SHA-256 is kept, unless the config logs arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceNote {
    pub concern: proto::control::ConcernKind,
    pub pointer: String,
    /// SHA-256 (hex) of the value's canonical text.
    pub value_sha256: String,
    /// The value, only with `[gate] log_arguments`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The tool and call of the answer it first appeared in, when one showed it; or the
    /// tool whose definition (description, schema) named it, and no call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_call: Option<u64>,
    /// For a value the person's words vouch for (`concern` `intent_value`, docs/spec.md
    /// §3.10): the number of the prompt that named it, or named the source it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<u64>,
}

/// A person's answer, as audited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalOutcome {
    Approved,
    Refused,
}

/// A label rule that matched a call, as its `result` record names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelRuleRef {
    /// Its number, from 1 in file order (as `boxmaker check --explain` numbers it).
    pub rule: u64,
    /// The line of its `tool` in the config file.
    pub line: u64,
    /// Its `reason`, as the config says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl LabelRuleRef {
    /// The rules of `config` that `label` says matched.
    pub fn of(config: &config::Config, label: &config::AnswerLabel) -> Vec<LabelRuleRef> {
        label
            .rules
            .iter()
            .filter_map(|&i| config.labels.get(i).map(|r| (i, r)))
            .map(|(i, r)| LabelRuleRef {
                rule: u64::try_from(i).map_or(u64::MAX, |i| i.saturating_add(1)),
                line: u64::try_from(r.line).unwrap_or(u64::MAX),
                reason: r.reason.clone(),
            })
            .collect()
    }
}

/// How a call ended at the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Result,
    Failed,
}

/// One audited event. The field order here is part of the canonical form: never reorder,
/// only add variants (and optional fields at the end of a variant).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum Event {
    /// A request reached the gate. Build it with [`Event::request`].
    Request {
        session: SessionId,
        call: CallId,
        tool: String,
        args_sha256: String,
        /// The arguments in full, only when the config says to log them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<String>,
    },
    /// The gate decided a request, at first or again after an approval.
    Decision {
        session: SessionId,
        call: CallId,
        tool: String,
        /// The session's taint the decision saw.
        class: DataClass,
        untrusted: bool,
        decision: Verdict,
        /// Why, when `decision` is `deny`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<DenyReason>,
        /// The approval this decision follows, when it is the decision made again on
        /// approval.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval: Option<String>,
        /// For a call that runs code boxmaker does not control: the class of everything its
        /// box can read (docs/spec.md §3.5). The decision saw `max(class, reach)` — `class`
        /// is already that — and an allowed call committed it into the taint before its box
        /// started.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reach: Option<DataClass>,
        /// The remembered approval (`rt-N`) that answered this call's `ask`: the policy
        /// said ask, and a person had approved exactly this call for the session.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<String>,
        /// Provenance changed this decision (with every `from` test holding it would have
        /// been another): each value a `from` test refused (docs/spec.md §3.7).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        provenance: Vec<ProvenanceNote>,
    },
    ApprovalAsked {
        session: SessionId,
        call: CallId,
        tool: String,
        approval: String,
        reason: ApprovalReason,
        expires: Timestamp,
        args_sha256: String,
        /// SHA-256 of the file digests the approval binds (their JSON), when it names any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        files_sha256: Option<String>,
    },
    ApprovalDecided {
        session: SessionId,
        call: CallId,
        approval: String,
        decision: ApprovalOutcome,
        /// The refuser's reason, if given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        /// Where the decision came from: `cli`, `page`, `client` (the agent's MCP client,
        /// through elicitation) or `control`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        via: Option<DecidedVia>,
        /// Who decided, in the decider's words.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        /// The run-time grant that remembers the approval for the session
        /// (`approve_for_session`); its own `grant_added` record follows.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<i64>,
    },
    ApprovalExpired {
        session: SessionId,
        call: CallId,
        approval: String,
    },
    ApprovalWithdrawn {
        session: SessionId,
        call: CallId,
        approval: String,
    },
    /// The runner answered. The label, size and hash of the content; never the content.
    /// Build it with [`Event::result`].
    Result {
        session: SessionId,
        call: CallId,
        tool: String,
        outcome: Outcome,
        class: DataClass,
        untrusted: bool,
        truncated: bool,
        size: u64,
        content_sha256: String,
        /// The label rules that matched the call (docs/spec.md §3.4 "Label rules"): the label is at least
        /// each one's. Build it with [`Event::with_label_rules`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        labels: Vec<LabelRuleRef>,
    },
    /// An operator reset a session; `class` and `untrusted` are the taint it had.
    SessionReset {
        session: SessionId,
        class: DataClass,
        untrusted: bool,
        /// The session's downstream servers the runner stopped.
        #[serde(default)]
        servers_stopped: u32,
        /// Whether the session had a workspace, which the runner emptied.
        #[serde(default)]
        workspace_emptied: bool,
    },
    GrantAdded {
        grant: i64,
        tool: String,
        sessions: String,
        effect: Effect,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_class: Option<DataClass>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        if_untrusted: Option<Effect>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires: Option<Timestamp>,
        /// A remembered approval covers only arguments with this canonical SHA-256.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        args_sha256: Option<String>,
        /// The approval it remembers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval: Option<String>,
    },
    GrantRevoked {
        grant: i64,
    },
    /// A call was refused because its session reached one of its caps (docs/spec.md §4:
    /// fair to every session).
    CapReached {
        session: SessionId,
        call: CallId,
        tool: String,
        /// The config key of the cap (`max_calls_per_session`, …).
        cap: String,
        limit: u64,
    },
    /// A peer on a socket failed authentication (for example a wrong uid on the control
    /// socket).
    AuthFailed {
        socket: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uid: Option<u32>,
        detail: String,
    },
    /// A box's connection through the egress proxy (docs/spec.md §3.5), as the runner
    /// reported it: refused (why), failed, opened (the address used), or closed (bytes each
    /// way, and why it ended). Build it with [`Event::egress`].
    Egress {
        session: SessionId,
        /// The call its box was running, when there was exactly one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<CallId>,
        tool: String,
        /// The runner's number for the connection: `opened` and `closed` share it.
        conn: u64,
        host: String,
        port: u16,
        outcome: EgressOutcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        address: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default)]
        sent: u64,
        #[serde(default)]
        received: u64,
    },
    /// A box of the session read `(class, untrusted)` data from a destination, above what
    /// its session held (docs/spec.md §3.6): the session's taint rose by it, committed
    /// before this record, whatever the call then answered (a `failed` carries no label).
    Floated {
        session: SessionId,
        /// The call its box was running, when there was exactly one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<CallId>,
        tool: String,
        class: DataClass,
        /// The destination's answer was untrusted (its rule does not say `trusted = true`).
        #[serde(default)]
        untrusted: bool,
    },
    /// The gate signed a checkpoint of the log's head: the tree of every record before this
    /// one (docs/spec.md §6, [`crate::anchor`]). The checkpoint's `time` is this record's.
    /// Build it with [`Event::checkpoint`].
    Checkpoint {
        tree_size: u64,
        root: Digest,
        last_seq: u64,
        last_hash: Digest,
        key_id: KeyId,
        signature: Signature,
    },
    /// A witness did not take the checkpoint of `tree_size` records: `witness` names it
    /// (`file PATH`, `command ARGV`, `journal`, `state`), `detail` says why.
    WitnessFailed {
        tree_size: u64,
        witness: String,
        detail: String,
    },
    /// An operator started a new chain (`boxmaker audit new-chain`, docs/spec.md §6 "A new
    /// chain") because the log did not extend its checkpoints. Always record 1; record 2 is
    /// the checkpoint of it alone, signed, which is what makes it one.
    ChainRestarted {
        /// The file name, in the state directory, the log before is kept under as found.
        previous: String,
        /// Its size in bytes and the SHA-256 of its bytes.
        bytes: u64,
        sha256: String,
        /// Why the gate refused it: the start check's sentence.
        refused: String,
        /// The operator's reason.
        reason: String,
        /// Who ran it.
        by: String,
    },
    /// The person's words reached a conversation (docs/spec.md §3.10): the prompt's
    /// SHA-256 and size, never its text; its number, how it came (`hook` or `cli`), and
    /// how many values and sources it added. `refused` says why nothing of it was added.
    Intent {
        session: SessionId,
        via: String,
        text_sha256: String,
        bytes: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<u64>,
        #[serde(default)]
        values: u64,
        #[serde(default)]
        sources: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
    },
    /// A box of the session made `path`, a name a writable mount keeps that was not there
    /// when the box started, and the runner moved it aside to `to`, so no program on the
    /// host runs from it (docs/spec.md §4, "What a writable mount keeps"). Paths as the box
    /// sees them.
    KeptMoved {
        session: SessionId,
        /// The call its box was running, when there was exactly one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<CallId>,
        tool: String,
        path: String,
        to: String,
    },
}

impl Event {
    /// Whether telemetry takes anything from this record (docs/spec.md §8): the records of
    /// a call's decision, its wait for a person, its result or cap, and a floated label.
    pub fn names_a_call(&self) -> bool {
        matches!(
            self,
            Event::Decision { .. }
                | Event::ApprovalAsked { .. }
                | Event::ApprovalDecided { .. }
                | Event::ApprovalExpired { .. }
                | Event::ApprovalWithdrawn { .. }
                | Event::Result { .. }
                | Event::CapReached { .. }
                | Event::Floated { .. }
        )
    }

    /// A `request` record: the arguments' SHA-256, and the arguments themselves only if
    /// `log_arguments`.
    pub fn request(
        session: SessionId,
        call: CallId,
        tool: impl Into<String>,
        arguments: &str,
        log_arguments: bool,
    ) -> Event {
        Event::Request {
            session,
            call,
            tool: tool.into(),
            args_sha256: sha256_hex(arguments.as_bytes()),
            arguments: log_arguments.then(|| arguments.to_string()),
        }
    }

    /// A `result` record: the label, and the content's size in bytes and SHA-256 (for a
    /// `failed` answer, the message's). The content itself is not kept.
    #[allow(clippy::too_many_arguments)]
    pub fn result(
        session: SessionId,
        call: CallId,
        tool: impl Into<String>,
        outcome: Outcome,
        content: &str,
        class: DataClass,
        untrusted: bool,
        truncated: bool,
    ) -> Event {
        Event::Result {
            session,
            call,
            tool: tool.into(),
            outcome,
            class,
            untrusted,
            truncated,
            size: u64::try_from(content.len()).unwrap_or(u64::MAX),
            content_sha256: sha256_hex(content.as_bytes()),
            labels: Vec::new(),
        }
    }

    /// A `result` record that names the label rules that matched its call; any other event
    /// unchanged.
    #[must_use]
    pub fn with_label_rules(mut self, rules: Vec<LabelRuleRef>) -> Event {
        if let Event::Result { labels, .. } = &mut self {
            *labels = rules;
        }
        self
    }

    /// An `egress` record from the runner's report of one connection.
    pub fn egress(r: EgressRecord) -> Event {
        Event::Egress {
            session: r.session,
            call: r.call,
            tool: r.tool,
            conn: r.conn,
            host: r.host,
            port: r.port,
            outcome: r.outcome,
            address: r.address,
            reason: r.reason,
            sent: r.sent,
            received: r.received,
        }
    }

    /// The snake_case name written in the record's `event` field.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Request { .. } => "request",
            Event::Decision { .. } => "decision",
            Event::ApprovalAsked { .. } => "approval_asked",
            Event::ApprovalDecided { .. } => "approval_decided",
            Event::ApprovalExpired { .. } => "approval_expired",
            Event::ApprovalWithdrawn { .. } => "approval_withdrawn",
            Event::Result { .. } => "result",
            Event::SessionReset { .. } => "session_reset",
            Event::GrantAdded { .. } => "grant_added",
            Event::GrantRevoked { .. } => "grant_revoked",
            Event::CapReached { .. } => "cap_reached",
            Event::AuthFailed { .. } => "auth_failed",
            Event::Egress { .. } => "egress",
            Event::Floated { .. } => "floated",
            Event::Checkpoint { .. } => "checkpoint",
            Event::WitnessFailed { .. } => "witness_failed",
            Event::ChainRestarted { .. } => "chain_restarted",
            Event::Intent { .. } => "intent",
            Event::KeptMoved { .. } => "kept_moved",
        }
    }

    /// A `checkpoint` record of `cp` (its `time` is the record's).
    pub fn checkpoint(cp: &Checkpoint) -> Event {
        Event::Checkpoint {
            tree_size: cp.tree_size,
            root: cp.root,
            last_seq: cp.last_seq,
            last_hash: cp.last_hash,
            key_id: cp.key_id,
            signature: cp.signature,
        }
    }

    /// The checkpoint a `checkpoint` record holds, signed at `time` (the record's).
    pub fn as_checkpoint(&self, time: Timestamp) -> Option<Checkpoint> {
        match self {
            Event::Checkpoint {
                tree_size,
                root,
                last_seq,
                last_hash,
                key_id,
                signature,
            } => Some(Checkpoint {
                tree_size: *tree_size,
                root: *root,
                last_seq: *last_seq,
                last_hash: *last_hash,
                time,
                key_id: *key_id,
                signature: *signature,
            }),
            _ => None,
        }
    }

    /// Whether it is one of the anchor's own records (`checkpoint`, `witness_failed`),
    /// which do not count toward the next checkpoint.
    pub fn is_anchor(&self) -> bool {
        matches!(self, Event::Checkpoint { .. } | Event::WitnessFailed { .. })
    }
}

// ---------------------------------------------------------------------------------------------
// Records

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub seq: u64,
    pub time: Timestamp,
    pub event: Event,
    pub prev: Digest,
    pub hash: Digest,
}

/// The body's shape: the key order of the canonical form.
#[derive(Serialize)]
struct Body<'a> {
    seq: u64,
    time: Timestamp,
    #[serde(flatten)]
    event: &'a Event,
    prev: Digest,
}

/// Why one line of the log is bad.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The last line has no `\n`: a write that a crash cut short (never acknowledged).
    Torn,
    /// Not UTF-8, not a JSON object, a missing or unknown field, a bad value.
    Unparseable(String),
    /// It parses, but its bytes are not the canonical encoding of what it says.
    NotCanonical,
    /// Its `seq` is not the previous record's plus one (a record dropped or moved).
    Seq { expected: u64, found: u64 },
    /// Its `prev` is not the previous record's `hash`.
    Prev { expected: Digest, found: Digest },
    /// Its `hash` is not the hash of its body chained to `prev` (the record was changed).
    Hash { computed: Digest, found: Digest },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Torn => f.write_str("the line is unfinished (no newline): a crash mid-write"),
            Problem::Unparseable(why) => write!(f, "it cannot be read as a record: {why}"),
            Problem::NotCanonical => f.write_str(
                "it is not in canonical form (it was edited or written by another tool)",
            ),
            Problem::Seq { expected, found } => write!(
                f,
                "sequence number {found} where {expected} was expected (a record was dropped or moved)"
            ),
            Problem::Prev { expected, found } => write!(
                f,
                "prev is {found} but the previous record's hash is {expected}"
            ),
            Problem::Hash { computed, found } => write!(
                f,
                "hash mismatch: the record says {found}, its content hashes to {computed} (the record was changed)"
            ),
        }
    }
}

impl Record {
    /// The canonical body `B` (see the module docs).
    fn body(seq: u64, time: Timestamp, event: &Event, prev: Digest) -> Result<Vec<u8>, AuditError> {
        serde_json::to_vec(&Body {
            seq,
            time,
            event,
            prev,
        })
        .map_err(AuditError::Encode)
    }

    /// `SHA-256(prev ‖ body)`.
    fn chain(prev: Digest, body: &[u8]) -> Digest {
        let mut h = Sha256::new();
        h.update(prev.0);
        h.update(body);
        Digest(h.finalize().into())
    }

    /// Makes the record that follows `prev` and returns it with its line (ending in `\n`).
    fn seal(
        seq: u64,
        time: Timestamp,
        event: Event,
        prev: Digest,
    ) -> Result<(Record, Vec<u8>), AuditError> {
        let body = Record::body(seq, time, &event, prev)?;
        let hash = Record::chain(prev, &body);
        let line = line_of(body, hash);
        Ok((
            Record {
                seq,
                time,
                event,
                prev,
                hash,
            },
            line,
        ))
    }

    /// The hash this record's fields give (whatever its `hash` field says).
    pub fn computed_hash(&self) -> Result<Digest, AuditError> {
        let body = Record::body(self.seq, self.time, &self.event, self.prev)?;
        Ok(Record::chain(self.prev, &body))
    }

    /// The record's line as written to the log, ending in `\n`.
    pub fn to_line(&self) -> Result<Vec<u8>, AuditError> {
        let body = Record::body(self.seq, self.time, &self.event, self.prev)?;
        Ok(line_of(body, self.hash))
    }

    /// Reads one line (without its `\n`) strictly: every field known and present, and the
    /// bytes exactly the canonical encoding. It does not check the hash or the chain.
    pub fn parse_line(line: &[u8]) -> Result<Record, (Option<u64>, Problem)> {
        let bad = |seq, why: String| (seq, Problem::Unparseable(why));
        let text = std::str::from_utf8(line).map_err(|e| bad(None, format!("not UTF-8: {e}")))?;
        let mut map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(text).map_err(|e| bad(None, e.to_string()))?;
        let seq = map.get("seq").and_then(serde_json::Value::as_u64);
        let mut take = |key: &str| {
            map.remove(key)
                .ok_or_else(|| bad(seq, format!("missing field `{key}`")))
        };
        let seq_v = take("seq")?;
        let time_v = take("time")?;
        let prev_v = take("prev")?;
        let hash_v = take("hash")?;
        let seq_n = seq.ok_or_else(|| bad(None, format!("seq is not a whole number: {seq_v}")))?;
        let time = time_v
            .as_u64()
            .map(Timestamp)
            .ok_or_else(|| bad(seq, format!("time is not a whole number: {time_v}")))?;
        let digest = |v: serde_json::Value, key: &str| {
            v.as_str()
                .and_then(Digest::from_hex)
                .ok_or_else(|| bad(seq, format!("{key} is not 64 lower-case hex digits")))
        };
        let prev = digest(prev_v, "prev")?;
        let hash = digest(hash_v, "hash")?;
        let event = Event::deserialize(serde_json::Value::Object(map))
            .map_err(|e| bad(seq, e.to_string()))?;
        let record = Record {
            seq: seq_n,
            time,
            event,
            prev,
            hash,
        };
        let canonical = record.to_line().map_err(|e| bad(seq, e.to_string()))?;
        if canonical.strip_suffix(b"\n") != Some(line) {
            return Err((seq, Problem::NotCanonical));
        }
        Ok(record)
    }
}

/// `B` with its closing `}` replaced by `,"hash":"…"}` and a newline.
fn line_of(mut body: Vec<u8>, hash: Digest) -> Vec<u8> {
    // `Body` is a JSON object, so `body` ends in `}`.
    body.pop();
    body.extend_from_slice(b",\"hash\":\"");
    body.extend_from_slice(hash.to_hex().as_bytes());
    body.extend_from_slice(b"\"}\n");
    body
}

// ---------------------------------------------------------------------------------------------
// The writer

/// An unfinished last line that [`AuditLog::open`] cut off. Log it: the operator should know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    pub path: PathBuf,
    /// Where the cut line began (the file's length now).
    pub offset: u64,
    /// How many bytes were cut.
    pub dropped: u64,
}

impl fmt::Display for Repaired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the audit log {} ended in an unfinished record ({} bytes at byte {}, from a crash \
             mid-write; it was never acknowledged): it was cut off",
            self.path.display(),
            self.dropped,
            self.offset
        )
    }
}

/// The audit log, open for appending. Only the gate holds one.
#[derive(Debug)]
pub struct AuditLog {
    file: File,
    path: PathBuf,
    /// The file's length: everything before it is complete, durable records.
    len: u64,
    next_seq: u64,
    last_hash: Digest,
    /// A write or sync failed and the file's state is unknown: refuse to go on.
    poisoned: bool,
    /// Records were written without `fdatasync` since the last one
    /// ([`AuditLog::append_batch_synced`]).
    unsynced: bool,
    /// The RFC 6962 tree over every record's line (docs/spec.md §6): what a checkpoint signs.
    tree: Tree,
    /// Records since the last `checkpoint` record, not counting the anchor's own.
    pending: u64,
    /// Whether the last record is a `checkpoint` (of every record before it).
    anchored: bool,
    /// The key whose checkpoints the log was shown to extend when it was opened
    /// ([`AuditLog::open_checked`]); `None` when it was opened without a check.
    checked: Option<KeyId>,
    /// The roots the log had at the checkpoints it was shown to extend, and at those signed
    /// since: what the checkpoint writer asks (docs/spec.md §6, "The writer").
    extends: Extends,
}

/// What the one reading of a log at open found ([`AuditLog::examine`]).
struct Examined {
    /// Where its complete lines end.
    complete: u64,
    /// Its length, an unfinished last line included.
    len: u64,
    tree: Tree,
    pending: u64,
    anchored: bool,
    checked: Checked,
    /// Its last record's `seq` and hash (`0` and zeros for an empty log).
    last: (u64, Digest),
}

impl AuditLog {
    /// Opens (creating, `0600`) `audit.log` in `state_dir` (created `0700` if missing),
    /// without checking it against any checkpoint: for a log read or written alone. A gate
    /// opens its log with [`AuditLog::open_checked`], and refuses one opened this way.
    pub fn open(state_dir: &Path) -> Result<(AuditLog, Option<Repaired>), AuditError> {
        AuditLog::open_with(state_dir, &Known::none(), false)
    }

    /// Opens (creating, `0600`) `audit.log` in `state_dir` (created `0700` if missing), and
    /// reads it once: the Merkle tree over its records is rebuilt and, in the same pass, the
    /// log is checked against every checkpoint in `known` and every `checkpoint` record it
    /// holds (docs/spec.md §6, "At start"): a log that does not extend one of them (cut at a
    /// line or inside one, rewritten, emptied, its own checkpoints contradicting it) is
    /// refused ([`AuditError::NotExtended`]) and left exactly as it was found. Its last
    /// record is read to continue the sequence and the chain.
    ///
    /// An unfinished last line (a crash mid-write: never acknowledged, and never covered by
    /// a checkpoint, which covers durable records only) is cut off once the check has passed,
    /// and reported in the returned [`Repaired`]. A last record that is otherwise bad
    /// (unparseable, not canonical, wrong hash) is an error that tells the operator to run
    /// `boxmaker audit verify`. The records before the last are hashed into the tree, not
    /// parsed (but the `checkpoint` records): [`verify`] checks the whole chain.
    pub fn open_checked(
        state_dir: &Path,
        known: &Known,
    ) -> Result<(AuditLog, Option<Repaired>), AuditError> {
        AuditLog::open_with(state_dir, known, false)
    }

    /// [`AuditLog::open_checked`] of a log that must not exist yet (a new chain's).
    pub(crate) fn create_checked(state_dir: &Path, known: &Known) -> Result<AuditLog, AuditError> {
        AuditLog::open_with(state_dir, known, true).map(|(log, _)| log)
    }

    /// What [`AuditLog::open_checked`] would say of the log in `state_dir`, without
    /// creating, changing or holding it: what the gate's next start would make of it.
    pub fn check(state_dir: &Path, known: &Known) -> Result<AnchorOk, AuditError> {
        let path = state_dir.join(AUDIT_FILE);
        let file = File::open(&path).map_err(|source| AuditError::Open {
            path: path.clone(),
            source,
        })?;
        AuditLog::examine(&file, &path, known).map(|e| e.checked.ok)
    }

    fn open_with(
        state_dir: &Path,
        known: &Known,
        create_new: bool,
    ) -> Result<(AuditLog, Option<Repaired>), AuditError> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(state_dir)
            .map_err(|source| AuditError::CreateDir {
                path: state_dir.to_path_buf(),
                source,
            })?;
        let path = state_dir.join(AUDIT_FILE);
        let open_err = |source| AuditError::Open {
            path: path.clone(),
            source,
        };
        let mut options = OpenOptions::new();
        options
            .read(true)
            .append(true)
            .mode(0o600)
            // Never through a link: a repository can ship `.boxmaker/audit.log -> ~/.bashrc`
            // (docs/spec.md §6, "How boxmaker writes a file").
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
        if create_new {
            options.create_new(true);
        } else {
            options.create(true);
        }
        let file = options
            .open(&path)
            .map_err(|e| match e.raw_os_error() {
                Some(n) if n == rustix::io::Errno::LOOP.raw_os_error() => std::io::Error::other(
                    "it is a symbolic link, which boxmaker never writes through (a \
                         repository can ship one): remove it",
                ),
                _ => e,
            })
            .map_err(open_err)?;
        // Make the file's directory entry durable (it may be new).
        File::open(state_dir)
            .and_then(|d| d.sync_all())
            .map_err(open_err)?;
        let found = AuditLog::examine(&file, &path, known)?;
        let mut repaired = None;
        if found.complete < found.len {
            let trunc_err = |source| AuditError::Truncate {
                path: path.clone(),
                source,
            };
            file.set_len(found.complete).map_err(trunc_err)?;
            file.sync_all().map_err(trunc_err)?;
            repaired = Some(Repaired {
                path: path.clone(),
                offset: found.complete,
                dropped: found.len - found.complete,
            });
        }
        let (last_seq, last_hash) = found.last;
        let next_seq = last_seq.checked_add(1).ok_or(AuditError::SeqOverflow)?;
        Ok((
            AuditLog {
                file,
                path,
                len: found.complete,
                next_seq,
                last_hash,
                poisoned: false,
                unsynced: false,
                tree: found.tree,
                pending: found.pending,
                anchored: found.anchored,
                checked: known.key.as_ref().map(PublicKey::id),
                extends: found.checked.extends,
            },
            repaired,
        ))
    }

    /// The one reading of the log at open: where its complete lines end, the tree and the
    /// check against `known` in one pass over them, and its last record. Changes nothing.
    fn examine(file: &File, path: &Path, known: &Known) -> Result<Examined, AuditError> {
        let read_err = |source| AuditError::Read {
            path: path.to_path_buf(),
            source,
        };
        let len = file.metadata().map_err(read_err)?.len();
        let complete = if len > 0 && read_byte(file, len - 1).map_err(read_err)? != b'\n' {
            rfind_newline(file, len)
                .map_err(read_err)?
                .map_or(0, |p| p + 1)
        } else {
            len
        };
        let not_extended = |source| AuditError::NotExtended {
            path: path.to_path_buf(),
            source: Box::new(source),
        };
        let start = match &known.key {
            Some(key) => chain_start(file, complete, key).map_err(read_err)?,
            None => None,
        };
        let checker = Checker::new(
            path,
            &known.given,
            known.key.as_ref(),
            Signatures::OnMismatch,
            start,
        )
        .map_err(not_extended)?;
        let (pending, anchored, mut checked) =
            scan(file, complete, checker).map_err(|e| match e {
                ScanError::Read(source) => read_err(source),
                ScanError::Anchor(source) => not_extended(source),
            })?;
        let last = if complete == 0 {
            (0, Digest::ZERO)
        } else {
            let start = rfind_newline(file, complete - 1)
                .map_err(read_err)?
                .map_or(0, |p| p + 1);
            let mut line = vec![0u8; usize::try_from(complete - 1 - start).unwrap_or(0)];
            file.read_exact_at(&mut line, start).map_err(read_err)?;
            let malformed = |problem| AuditError::Malformed {
                path: path.to_path_buf(),
                offset: start,
                problem,
            };
            let record = Record::parse_line(&line).map_err(|(_, p)| malformed(p))?;
            let computed = record.computed_hash()?;
            if computed != record.hash {
                return Err(malformed(Problem::Hash {
                    computed,
                    found: record.hash,
                }));
            }
            (record.seq, record.hash)
        };
        checked.ok.last_hash = last.1;
        Ok(Examined {
            complete,
            len,
            tree: checked.tree.clone(),
            pending,
            anchored,
            checked,
            last,
        })
    }

    /// The key whose checkpoints this log was checked against when it was opened, if it was
    /// ([`AuditLog::open_checked`]).
    pub fn checked_by(&self) -> Option<KeyId> {
        self.checked
    }

    /// Whether this log is known to extend `cp`: it had `cp`'s root at `cp`'s size, at a
    /// checkpoint it was shown to extend at open or one signed since (or it has now).
    pub fn extends(&self, cp: &Checkpoint) -> bool {
        self.extends.extends(cp)
            || (cp.tree_size == self.tree.size() && cp.root == self.tree.root())
    }

    /// A checkpoint of this log was signed: later checkpoints are checked against it.
    pub fn signed(&mut self, cp: &Checkpoint) {
        self.extends.note(cp.tree_size, cp.root);
    }

    /// Makes every record written so far durable (`fdatasync`), if some were written
    /// without: a checkpoint covers durable records only.
    pub fn sync(&mut self) -> Result<(), AuditError> {
        if self.poisoned {
            return Err(AuditError::Poisoned {
                path: self.path.clone(),
            });
        }
        if self.unsynced {
            if let Err(source) = self.file.sync_data() {
                self.poisoned = true;
                return Err(AuditError::Sync {
                    path: self.path.clone(),
                    source,
                });
            }
            self.unsynced = false;
        }
        Ok(())
    }

    /// The log file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `seq` the next record will have.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The hash of the last record (zeros for an empty log): the chain's head.
    pub fn last_hash(&self) -> Digest {
        self.last_hash
    }

    /// What a checkpoint of the log now signs: the tree's size and root, and the last
    /// record's `seq` and `hash`.
    pub fn head(&self) -> Head {
        Head {
            tree_size: self.tree.size(),
            root: self.tree.root(),
            last_seq: self.next_seq.saturating_sub(1),
            last_hash: self.last_hash,
        }
    }

    /// Records since the last `checkpoint` record, not counting `checkpoint` and
    /// `witness_failed` records (what `[audit] checkpoint_every` counts).
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Whether a checkpoint would cover anything new: the log is not empty and its last
    /// record is not a `checkpoint`.
    pub fn unanchored(&self) -> bool {
        self.tree.size() > 0 && !self.anchored
    }

    /// Appends one record and makes it durable (`fdatasync`) before returning it.
    pub fn append(&mut self, time: Timestamp, event: Event) -> Result<Record, AuditError> {
        let mut records = self.append_batch([(time, event)])?;
        records.pop().ok_or(AuditError::SeqOverflow)
    }

    /// Appends several records with one write and one `fdatasync` (group commit). When it
    /// returns `Ok` all are durable; when it returns `Err` none is acknowledged.
    pub fn append_batch(
        &mut self,
        events: impl IntoIterator<Item = (Timestamp, Event)>,
    ) -> Result<Vec<Record>, AuditError> {
        self.append_batch_synced(events, true)
    }

    /// [`AuditLog::append_batch`], or, with `sync` false, written but not yet made durable:
    /// the next synced append (every later one that acknowledges anything, and every
    /// checkpoint) makes these durable too, as `fdatasync` covers the whole file. For
    /// records whose loss in a power cut would hide nothing that happened (docs/spec.md §6,
    /// "Durability").
    pub fn append_batch_synced(
        &mut self,
        events: impl IntoIterator<Item = (Timestamp, Event)>,
        sync: bool,
    ) -> Result<Vec<Record>, AuditError> {
        if self.poisoned {
            return Err(AuditError::Poisoned {
                path: self.path.clone(),
            });
        }
        let mut seq = self.next_seq;
        let mut prev = self.last_hash;
        let mut buf = Vec::new();
        let mut records = Vec::new();
        let mut leaves = Vec::new();
        for (time, event) in events {
            let (record, line) = Record::seal(seq, time, event, prev)?;
            leaves.push(leaf_hash(line.strip_suffix(b"\n").unwrap_or(&line)));
            buf.extend_from_slice(&line);
            seq = seq.checked_add(1).ok_or(AuditError::SeqOverflow)?;
            prev = record.hash;
            records.push(record);
        }
        if records.is_empty() {
            return Ok(records);
        }
        if let Err(source) = self.file.write_all(&buf) {
            // Undo a partial line so the next append does not follow garbage.
            if self.file.set_len(self.len).is_err() {
                self.poisoned = true;
            }
            return Err(AuditError::Write {
                path: self.path.clone(),
                source,
            });
        }
        if let Err(source) = if sync { self.file.sync_data() } else { Ok(()) } {
            // After a failed fsync the page cache may lie about what is on disk.
            self.poisoned = true;
            return Err(AuditError::Sync {
                path: self.path.clone(),
                source,
            });
        }
        self.unsynced = !sync;
        self.len += u64::try_from(buf.len()).unwrap_or(u64::MAX);
        self.next_seq = seq;
        self.last_hash = prev;
        for (leaf, record) in leaves.into_iter().zip(&records) {
            self.tree.push_leaf(leaf);
            match &record.event {
                Event::Checkpoint { .. } => self.pending = 0,
                e if e.is_anchor() => {}
                _ => self.pending += 1,
            }
        }
        self.anchored = records
            .last()
            .is_some_and(|r| matches!(r.event, Event::Checkpoint { .. }));
        Ok(records)
    }
}

/// Why the pass at open stopped.
enum ScanError {
    Read(std::io::Error),
    Anchor(AnchorError),
}

/// The one pass over the first `len` bytes of the log (complete lines) at open: each line
/// hashed into the tree and handed to `checker` (which checks it against the checkpoints the
/// gate knows as it goes), how many records follow its last `checkpoint` record (not
/// counting the anchor's own), and whether the last record is a `checkpoint`. Lines are not
/// parsed, but those whose canonical prefix (`{"seq":N,"time":T,"event":"checkpoint"`)
/// says they are `checkpoint` records, which the checker reads; the prefix is otherwise only
/// a hint for when to sign next: whether the lines are right is [`verify`]'s to say.
fn scan(
    file: &File,
    len: u64,
    mut checker: Checker<'_>,
) -> Result<(u64, bool, Checked), ScanError> {
    let mut reader = BufReader::with_capacity(256 * 1024, std::io::Read::take(file, len));
    let mut pending = 0u64;
    let mut anchored = false;
    let mut line = Vec::new();
    let mut seq = 0u64;
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(ScanError::Read)?
            == 0
        {
            break;
        }
        seq += 1;
        let content = line.strip_suffix(b"\n").unwrap_or(&line);
        let name = event_name(content);
        anchored = name == Some(b"checkpoint".as_slice());
        let record = if anchored {
            Record::parse_line(content).ok()
        } else {
            None
        };
        checker
            .line(seq, content, record.as_ref())
            .map_err(ScanError::Anchor)?;
        match name {
            Some(b"checkpoint") => pending = 0,
            Some(b"witness_failed") => {}
            _ => pending += 1,
        }
    }
    // The last record's hash: its caller reads that record itself.
    let checked = checker
        .finish(seq, Digest::ZERO)
        .map_err(ScanError::Anchor)?;
    Ok((pending, anchored, checked))
}

/// The chain start the first two lines of `file` (within its first `len` bytes) make, if
/// they make one signed by `key` ([`ChainStart`]). Reads by offset, so it leaves the
/// file's position as it was.
pub(crate) fn chain_start(
    file: &File,
    len: u64,
    key: &PublicKey,
) -> std::io::Result<Option<ChainStart>> {
    const CHUNK: usize = 16 * 1024;
    // A chain's first two records are short; a log that starts otherwise starts no chain.
    const MAX: u64 = 1024 * 1024;
    let limit = len.min(file.metadata()?.len()).min(MAX);
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; CHUNK];
    while u64::try_from(bytes.len()).unwrap_or(u64::MAX) < limit
        && bytes.iter().filter(|&&b| b == b'\n').count() < 2
    {
        let at = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        let want = usize::try_from((limit - at).min(CHUNK as u64)).unwrap_or(CHUNK);
        let n = file.read_at(buf.get_mut(..want).unwrap_or_default(), at)?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(buf.get(..n).unwrap_or_default());
    }
    let mut lines = bytes.split(|&b| b == b'\n');
    match (lines.next(), lines.next(), lines.next()) {
        (Some(first), Some(second), Some(_)) => Ok(ChainStart::read(first, second, key)),
        _ => Ok(None),
    }
}

/// The `event` of a canonical line: the first string value, after `seq` and `time`.
fn event_name(line: &[u8]) -> Option<&[u8]> {
    const KEY: &[u8] = b",\"event\":\"";
    // `{"seq":` and `,"time":` and two numbers of at most 20 digits come before it.
    let head = line.get(..line.len().min(64 + KEY.len()))?;
    let at = head.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = line.get(at..)?;
    let end = rest.iter().position(|&b| b == b'"')?;
    rest.get(..end)
}

fn read_byte(file: &File, at: u64) -> std::io::Result<u8> {
    let mut b = [0u8; 1];
    file.read_exact_at(&mut b, at)?;
    Ok(b[0])
}

/// The offset of the last `\n` before `end`, reading backwards in chunks.
fn rfind_newline(file: &File, end: u64) -> std::io::Result<Option<u64>> {
    const CHUNK: u64 = 64 * 1024;
    let mut hi = end;
    let mut buf = vec![0u8; 64 * 1024];
    while hi > 0 {
        let lo = hi.saturating_sub(CHUNK);
        let n = usize::try_from(hi - lo).unwrap_or(0);
        let chunk = buf.get_mut(..n).unwrap_or_default();
        file.read_exact_at(chunk, lo)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(Some(lo + u64::try_from(i).unwrap_or(0)));
        }
        hi = lo;
    }
    Ok(None)
}

// ---------------------------------------------------------------------------------------------
// Reading: verify and tail

/// A log that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyOk {
    /// How many records it holds.
    pub records: u64,
    /// The last record's hash (zeros for an empty log): keep it elsewhere to detect a
    /// rewrite of the whole file.
    pub last_hash: Digest,
}

/// Why a log did not verify.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("could not read the audit log {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The first bad record: its line (from 1), its `seq` if it could be read, and why.
    #[error(
        "the audit log {path} does not verify: the first bad record is at line {line}{}: {problem}",
        seq.map(|s| format!(" (seq {s})")).unwrap_or_default()
    )]
    Bad {
        path: PathBuf,
        line: u64,
        seq: Option<u64>,
        problem: Problem,
    },
}

/// Reads the whole log and recomputes the chain: each line canonical, `seq` from 1 without
/// gaps, each `prev` the previous `hash`, each `hash` right. Stops at the first bad record.
///
/// The chain alone cannot see a log cut short, or one rewritten with every hash after the
/// change recomputed: [`crate::anchor::verify`] checks the log against signed checkpoints.
pub fn verify(path: &Path) -> Result<VerifyOk, VerifyError> {
    let mut reader = ChainReader::open(path)?;
    while reader.next_record()?.is_some() {}
    Ok(VerifyOk {
        records: reader.records(),
        last_hash: reader.last_hash(),
    })
}

/// Reads a log a record at a time, checking the chain as [`verify`] does.
#[derive(Debug)]
pub struct ChainReader {
    path: PathBuf,
    reader: BufReader<File>,
    line: Vec<u8>,
    count: u64,
    last_hash: Digest,
}

impl ChainReader {
    /// Opens the log at `path`.
    pub fn open(path: &Path) -> Result<ChainReader, VerifyError> {
        let file = File::open(path).map_err(|source| VerifyError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(ChainReader::from_file(path, file))
    }

    /// Reads the log at `path` from `file`, open on it (from its current position).
    pub fn from_file(path: &Path, file: File) -> ChainReader {
        ChainReader {
            path: path.to_path_buf(),
            reader: BufReader::with_capacity(256 * 1024, file),
            line: Vec::new(),
            count: 0,
            last_hash: Digest::ZERO,
        }
    }

    /// How many records have been read (and checked).
    pub fn records(&self) -> u64 {
        self.count
    }

    /// The hash of the last record read (zeros before the first).
    pub fn last_hash(&self) -> Digest {
        self.last_hash
    }

    /// The next record, checked, with its line as stored (without the `\n`); `None` at the
    /// end of the log. The first bad record is an error.
    pub fn next_record(&mut self) -> Result<Option<(Record, &[u8])>, VerifyError> {
        self.line.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.line)
            .map_err(|source| VerifyError::Io {
                path: self.path.clone(),
                source,
            })?;
        if n == 0 {
            return Ok(None);
        }
        let lineno = self.count + 1;
        let bad = |seq, problem| VerifyError::Bad {
            path: self.path.clone(),
            line: lineno,
            seq,
            problem,
        };
        let Some(content) = self.line.strip_suffix(b"\n") else {
            let seq = Record::parse_line(&self.line).ok().map(|r| r.seq);
            return Err(bad(seq, Problem::Torn));
        };
        let record = Record::parse_line(content).map_err(|(seq, p)| bad(seq, p))?;
        let seq = Some(record.seq);
        if record.seq != lineno {
            return Err(bad(
                seq,
                Problem::Seq {
                    expected: lineno,
                    found: record.seq,
                },
            ));
        }
        if record.prev != self.last_hash {
            return Err(bad(
                seq,
                Problem::Prev {
                    expected: self.last_hash,
                    found: record.prev,
                },
            ));
        }
        let computed = Record::chain(record.prev, &content_body(content));
        if computed != record.hash {
            return Err(bad(
                seq,
                Problem::Hash {
                    computed,
                    found: record.hash,
                },
            ));
        }
        self.last_hash = record.hash;
        self.count = lineno;
        Ok(Some((record, content)))
    }
}

/// The body `B` of a canonical line: its bytes before `,"hash":"…"` with the closing `}`.
/// `line` is known canonical, so it ends in `,"hash":"` + 64 hex + `"}`.
fn content_body(line: &[u8]) -> Vec<u8> {
    const TAIL: usize = ",\"hash\":\"".len() + 64 + "\"}".len();
    let mut body = line
        .get(..line.len().saturating_sub(TAIL))
        .unwrap_or_default()
        .to_vec();
    body.push(b'}');
    body
}

/// The last `n` complete records of the log, oldest first, each read strictly (but the
/// chain is not checked: that is [`verify`]). An unfinished last line is skipped.
pub fn tail(path: &Path, n: usize) -> Result<Vec<Record>, AuditError> {
    let read_err = |source| AuditError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = BufReader::new(File::open(path).map_err(read_err)?);
    let mut last: VecDeque<(u64, Vec<u8>)> = VecDeque::with_capacity(n.min(4096));
    let mut lineno = 0u64;
    loop {
        let mut line = Vec::new();
        if reader.read_until(b'\n', &mut line).map_err(read_err)? == 0 {
            break;
        }
        if line.pop() != Some(b'\n') {
            break;
        }
        lineno += 1;
        if n == 0 {
            continue;
        }
        if last.len() == n {
            last.pop_front();
        }
        last.push_back((lineno, line));
    }
    last.into_iter()
        .map(|(line, bytes)| {
            Record::parse_line(&bytes).map_err(|(_, problem)| AuditError::BadLine {
                path: path.to_path_buf(),
                line,
                problem,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(s: &str) -> SessionId {
        SessionId::new(s).unwrap()
    }

    #[test]
    fn digest_hex_round_trips_and_is_strict() {
        let d = Digest::of(b"abc");
        assert_eq!(
            d.to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Digest::from_hex(&d.to_hex()), Some(d));
        assert_eq!(Digest::from_hex(&d.to_hex().to_uppercase()), None);
        assert_eq!(Digest::from_hex("00"), None);
    }

    #[test]
    fn the_first_record_matches_the_documented_form() {
        let event = Event::request(sid("s1"), CallId(1), "read_file", "{}", false);
        let (record, line) = Record::seal(1, Timestamp(5), event, Digest::ZERO).unwrap();
        let zeros = "0".repeat(64);
        let body = format!(
            r#"{{"seq":1,"time":5,"event":"request","session":"s1","call":1,"tool":"read_file","args_sha256":"{}","prev":"{zeros}"}}"#,
            sha256_hex(b"{}")
        );
        let mut pre = vec![0u8; 32];
        pre.extend_from_slice(body.as_bytes());
        assert_eq!(record.hash, Digest::of(&pre));
        let expected = format!(
            "{},\"hash\":\"{}\"}}\n",
            body.strip_suffix('}').unwrap(),
            record.hash
        );
        assert_eq!(String::from_utf8(line.clone()).unwrap(), expected);
        assert_eq!(
            Record::parse_line(line.strip_suffix(b"\n").unwrap()).unwrap(),
            record
        );
    }

    #[test]
    fn parse_line_refuses_non_canonical_and_unknown() {
        let event = Event::GrantRevoked { grant: 3 };
        let (_, line) = Record::seal(1, Timestamp(5), event, Digest::ZERO).unwrap();
        let text = String::from_utf8(line).unwrap();
        let text = text.trim_end();
        let spaced = text.replacen(":", ": ", 1);
        assert_eq!(
            Record::parse_line(spaced.as_bytes()).unwrap_err().1,
            Problem::NotCanonical
        );
        let extra = text.replacen("\"grant\":3", "\"grant\":3,\"x\":1", 1);
        assert!(matches!(
            Record::parse_line(extra.as_bytes()).unwrap_err().1,
            Problem::Unparseable(_)
        ));
        let dup = text.replacen("\"grant\":3", "\"grant\":4,\"grant\":3", 1);
        assert!(Record::parse_line(dup.as_bytes()).is_err());
        let null = text.replacen("\"grant\":3", "\"grant\":3,\"max_class\":null", 1);
        assert!(Record::parse_line(null.as_bytes()).is_err());
    }

    #[test]
    fn event_name_reads_the_canonical_prefix() {
        let (_, line) = Record::seal(
            12,
            Timestamp(5),
            Event::GrantRevoked { grant: 3 },
            Digest::ZERO,
        )
        .unwrap();
        assert_eq!(event_name(&line), Some(b"grant_revoked".as_slice()));
        assert_eq!(event_name(b"{\"seq\":1}"), None);
    }

    #[test]
    fn result_events_never_hold_the_content() {
        let e = Event::result(
            sid("s"),
            CallId(2),
            "read_file",
            Outcome::Result,
            "the secret text",
            DataClass::Secret,
            false,
            false,
        );
        let json = serde_json::to_string(&e).unwrap();
        assert!(!json.contains("the secret text"));
        assert!(json.contains("\"size\":15"));
    }

    #[test]
    fn result_records_name_their_label_rules_last_and_older_ones_still_read() {
        let plain = Event::result(
            sid("s"),
            CallId(2),
            "chat_read_inbox",
            Outcome::Result,
            "dm",
            DataClass::Confidential,
            false,
            false,
        );
        // Without rules the record is what it was before the field existed.
        let (_, old) = Record::seal(1, Timestamp(5), plain.clone(), Digest::ZERO).unwrap();
        let old = String::from_utf8(old).unwrap();
        let old = old.trim_end();
        assert!(!old.contains("labels"), "{old}");
        assert_eq!(
            Record::parse_line(old.as_bytes()).unwrap().event,
            plain.clone()
        );
        let rules = vec![LabelRuleRef {
            rule: 3,
            line: 47,
            reason: Some("direct messages are private".into()),
        }];
        let named = plain.with_label_rules(rules.clone());
        let (_, line) = Record::seal(1, Timestamp(5), named.clone(), Digest::ZERO).unwrap();
        let text = String::from_utf8(line).unwrap();
        let text = text.trim_end();
        assert!(
            text.contains(
                r#""content_sha256":"#
            ) && text.contains(
                r#","labels":[{"rule":3,"line":47,"reason":"direct messages are private"}],"prev":"#
            ),
            "the field is last in the event: {text}"
        );
        let back = Record::parse_line(text.as_bytes()).unwrap();
        assert_eq!(back.event, named);
        assert!(matches!(back.event, Event::Result { labels, .. } if labels == rules));
    }
}
