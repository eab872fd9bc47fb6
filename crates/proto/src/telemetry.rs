//! What the gate hands its telemetry exporter (docs/spec.md §8), and the W3C trace context a
//! client's call carries.
//!
//! The gate may not open the network, so it exports nothing itself: it writes one
//! [`TelemetryRecord`] per finished call (and a few counters) as frames on a pipe to
//! `boxmaker __telemetry`, a process of its own that holds the OpenTelemetry SDK and the
//! OTLP connection. Every field here is a label, a decision, a name the operator's config
//! gave, or a time: the types have no field that could carry a call's arguments, its
//! result, a secret, a file's content or a reason in the tool's words.
//!
//! ```text
//! {"v":1,"item":{"kind":"call","body":{"trace":{"traceparent":"00-…","session":"s1",…}}}}
//! {"v":1,"item":{"kind":"pending","body":{"count":2}}}
//! ```

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::frame::{FrameError, Versioned, read_framed, write_framed};
use crate::ids::{CallId, DataClass, SessionId};
use crate::run::{BoxKind, EgressOutcome};
use crate::strict::{strict_object, wire_names};
use crate::wire::DenyReason;

/// Set (to `1`) in the environment of a runner whose gate exports telemetry: the runner
/// then reports each box's start (`boxed` events, §2.6).
pub const RUNNER_ENV: &str = "BOXMAKER_TELEMETRY";

/// A W3C `traceparent` (version `00`): the trace a call belongs to and the client's span
/// it is a child of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub parent_id: [u8; 8],
    /// Bit 0: the client sampled its span.
    pub flags: u8,
}

impl TraceParent {
    /// The longest `traceparent` accepted: version `00` is exactly 55 bytes.
    pub const LEN: usize = 55;

    /// Reads `00-<32 hex>-<16 hex>-<2 hex>` (lowercase, as the W3C recommendation writes
    /// it). `None` for anything else: another version, upper case, an all-zero trace or
    /// parent id, or extra bytes.
    pub fn parse(text: &str) -> Option<TraceParent> {
        let b = text.as_bytes();
        if b.len() != Self::LEN {
            return None;
        }
        let mut parts = text.split('-');
        let (version, trace, parent, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || version != "00" {
            return None;
        }
        let trace_id: [u8; 16] = hex_bytes(trace)?;
        let parent_id: [u8; 8] = hex_bytes(parent)?;
        let [flags]: [u8; 1] = hex_bytes(flags)?;
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(TraceParent {
            trace_id,
            parent_id,
            flags,
        })
    }

    /// Whether the client sampled its span.
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            hex(&self.trace_id),
            hex(&self.parent_id),
            self.flags
        )
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// `N` bytes from exactly `2N` lowercase hex digits.
pub fn hex_bytes<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != N * 2 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let [hi, lo] = pair else { return None };
        *o = nibble(*hi)? << 4 | nibble(*lo)?;
    }
    Some(out)
}

/// One frame from the gate to its exporter: `{"v":1,"item":{"kind":…,"body":{…}}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct TelemetryRecord {
    pub v: u32,
    pub item: Item,
}

/// What the gate reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "kind",
    content = "body",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum Item {
    /// A call's final answer went out: its span and its children.
    Call { trace: Box<CallTrace> },
    /// Calls of this gate waiting for a person now.
    Pending { count: u64 },
    /// A session's taint rose outside a call's answer: a box read above it (docs/spec.md
    /// §3.6, `floated`).
    Floated { class: DataClass, untrusted: bool },
}

/// One call, from its request to its final answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct CallTrace {
    /// The client's trace context (`_meta.traceparent`, checked): the call's span is a child
    /// of the client's span, in its trace. Without it the call starts a trace of its own.
    #[serde(deserialize_with = "Option::deserialize")]
    pub traceparent: Option<String>,
    pub session: SessionId,
    pub call: CallId,
    /// The tool's name, when it is one the gate knows: a builtin `[[tool]]` of the config,
    /// or a downstream tool the discovery file shows. `None` for any other name: the name
    /// is the caller's, and one no tool has is whatever it chose to spell.
    #[serde(deserialize_with = "Option::deserialize")]
    pub tool: Option<String>,
    /// Nanoseconds since the Unix epoch.
    pub start_ns: u64,
    pub end_ns: u64,
    /// What the gate decided (`None`: refused before a decision, at a cap).
    #[serde(deserialize_with = "Option::deserialize")]
    pub decision: Option<Verdict>,
    #[serde(deserialize_with = "Option::deserialize")]
    pub reason: Option<DenyReason>,
    /// The run-time grant (`rt-N`) that answered an `ask`, when one did.
    #[serde(deserialize_with = "Option::deserialize")]
    pub grant: Option<String>,
    /// The call's reach (docs/spec.md §3.5), when it runs code boxmaker does not control.
    #[serde(deserialize_with = "Option::deserialize")]
    pub reach: Option<DataClass>,
    /// The taint the call was decided at.
    #[serde(deserialize_with = "Option::deserialize")]
    pub before: Option<Taint>,
    /// The label its answer raised the session by (the session's taint after it is at
    /// least `before` joined with this).
    #[serde(deserialize_with = "Option::deserialize")]
    pub after: Option<Taint>,
    pub status: CallStatus,
    /// The `[gate]` cap that refused it, when one did.
    #[serde(deserialize_with = "Option::deserialize")]
    pub cap: Option<String>,
    #[serde(deserialize_with = "Option::deserialize")]
    pub approval: Option<ApprovalSpan>,
    /// From sending the call to the runner to its answer.
    #[serde(deserialize_with = "Option::deserialize")]
    pub runner: Option<Interval>,
    pub boxes: Vec<BoxSpan>,
    pub egress: Vec<EgressEvent>,
}

/// A session's taint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Taint {
    pub class: DataClass,
    pub untrusted: bool,
}

/// A span's start and end, in nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Interval {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The wait for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct ApprovalSpan {
    pub start_ns: u64,
    pub end_ns: u64,
    pub outcome: ApprovalEnd,
    /// Where the person decided (`cli`, `page`, `client`, `control`), when one did.
    #[serde(deserialize_with = "Option::deserialize")]
    pub via: Option<String>,
}

/// A box the runner started for the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct BoxSpan {
    pub kind: BoxKind,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A connection a box of the call asked the egress proxy for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct EgressEvent {
    pub time_ns: u64,
    /// The destination's host: only for a connection the rules allowed (a refused one names
    /// what the box chose, which may spell anything; the audit log keeps it).
    #[serde(deserialize_with = "Option::deserialize")]
    pub host: Option<String>,
    pub port: u16,
    pub outcome: EgressOutcome,
}

/// The gate's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum Verdict {
    Allow,
    Ask,
    Deny,
}

wire_names!(Verdict, "verdict", "allow, ask or deny", {
    Allow => "allow",
    Ask => "ask",
    Deny => "deny",
});

/// The call's final answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum CallStatus {
    Result,
    Failed,
    Denied,
}

wire_names!(CallStatus, "call status", "result, failed or denied", {
    Result => "result",
    Failed => "failed",
    Denied => "denied",
});

/// How a wait for a person ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum ApprovalEnd {
    Approved,
    Refused,
    Expired,
    Withdrawn,
}

wire_names!(ApprovalEnd, "approval end", "approved, refused, expired or withdrawn", {
    Approved => "approved",
    Refused => "refused",
    Expired => "expired",
    Withdrawn => "withdrawn",
});

strict_object!(
    TelemetryRecord,
    Item,
    CallTrace,
    Taint,
    Interval,
    ApprovalSpan,
    BoxSpan,
    EgressEvent
);

impl Versioned for TelemetryRecord {
    fn version(&self) -> u32 {
        self.v
    }
}

impl TelemetryRecord {
    /// A record of the current version.
    pub fn new(item: Item) -> Self {
        Self {
            v: crate::PROTOCOL_VERSION,
            item,
        }
    }
}

/// Writes one record as a frame (same rules as [`crate::write_frame`]).
pub fn write_record<W: Write>(w: &mut W, record: &TelemetryRecord) -> Result<(), FrameError> {
    write_framed(w, record)
}

/// Reads one record (same rules as [`crate::read_frame`]).
pub fn read_record<R: Read>(r: &mut R) -> Result<TelemetryRecord, FrameError> {
    read_framed(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_round_trips_and_nothing_else_parses() {
        let t = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let p = TraceParent::parse(t).unwrap();
        assert!(p.sampled());
        assert_eq!(p.to_string(), t);
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1x",
            "00-4bf92f3577b34da6a3ce929d0e0e47360-0f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_record_round_trips_and_an_unknown_field_does_not_decode() {
        let rec = TelemetryRecord::new(Item::Pending { count: 3 });
        let mut buf = Vec::new();
        write_record(&mut buf, &rec).unwrap();
        assert_eq!(read_record(&mut buf.as_slice()).unwrap(), rec);
        let text = br#"{"v":1,"item":{"kind":"pending","body":{"count":3,"arguments":"x"}}}"#;
        let mut framed = (text.len() as u32).to_be_bytes().to_vec();
        framed.extend_from_slice(text);
        assert!(read_record(&mut framed.as_slice()).is_err());
    }
}
