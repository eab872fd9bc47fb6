//! The gate's channel to its runner (docs/spec.md §2.6): the gate sends a [`RunnerRequest`]
//! — run this call, at this taint; or clear what a session left behind — and the runner
//! answers each with one [`RunnerReply`].
//!
//! Same frames, same strictness as the agent and control channels. A call crosses with the
//! session's taint as the gate committed it (the call's reach already raised into it, for
//! code boxmaker does not control): the runner needs it to label what the session's
//! workspace holds, and to show a writable mount read-only to a box whose label is above
//! the mount's class (docs/spec.md §3.5, no write down). The seeded [`ToolRequest`] and
//! [`ToolResponse`] travel inside unchanged.
//!
//! ```text
//! {"v":1,"id":7,"order":{"kind":"call","body":{"request":{…},"class":"secret","untrusted":false}}}
//! {"v":1,"id":7,"reply":{"kind":"answer","body":{"response":{"status":"result",…}}}}
//! {"v":1,"id":0,"reply":{"kind":"egress","body":{"record":{"session":"s1","call":3,…}}}}
//! ```
//!
//! Besides answers, the runner sends **events**, always with id 0 (they answer no request):
//! `egress`, one per connection attempt a box made through the egress proxy, and one more
//! when an allowed connection ends (docs/spec.md §3.5). The gate audits them.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::frame::{FrameError, Versioned, read_framed, write_framed};
use crate::ids::{CallId, DataClass, SessionId};
use crate::strict::strict_object;
use crate::wire::{ErrorCode, ToolRequest, ToolResponse};

/// A request from the gate: `{"v":1,"id":N,"order":{"kind":...,"body":{...}}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct RunnerRequest {
    pub v: u32,
    pub id: u64,
    pub order: Order,
}

/// What the gate asks of the runner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "kind",
    content = "body",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum Order {
    /// Run this call. `class` and `untrusted` are the session's taint as committed before
    /// the call was sent.
    Call {
        request: ToolRequest,
        class: DataClass,
        untrusted: bool,
    },
    /// An operator reset the session: stop its servers and empty its workspace, since both
    /// may hold what the session saw before.
    ResetSession { session: SessionId },
}

/// The runner's answer: `{"v":1,"id":N,"reply":{"kind":...,"body":{...}}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct RunnerReply {
    pub v: u32,
    pub id: u64,
    pub reply: RunnerAnswer,
}

/// What the runner answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "kind",
    content = "body",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum RunnerAnswer {
    /// The call's final answer: `result` or `failed` (never the gate's own statuses).
    Answer { response: ToolResponse },
    /// The session is cleared: how many of its servers were stopped, and whether it had a
    /// workspace that was emptied.
    Reset { servers: u32, workspace: bool },
    /// The runner could not accept a frame or an order.
    Error { code: ErrorCode, detail: String },
    /// An event, not an answer (the reply's id is 0): a box's connection through the egress
    /// proxy was refused, opened or ended.
    Egress { record: EgressRecord },
}

/// One connection attempt through the egress proxy, or the end of one (docs/spec.md §3.5).
/// Optional fields are present, `null` when empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct EgressRecord {
    pub session: SessionId,
    /// The call the box was running when it connected: a `run`'s own call; for a
    /// long-running server, the one call in flight on it, `null` between calls (or with
    /// several in flight).
    #[serde(deserialize_with = "Option::deserialize")]
    pub call: Option<CallId>,
    /// The `[[tool]]` whose box connected.
    pub tool: String,
    /// The connection's number in this runner: an `opened` and its `closed` share it.
    pub conn: u64,
    /// Where the box asked to go: a host name, or an address.
    pub host: String,
    pub port: u16,
    /// The address connected to (`ip:port`), once there is one.
    #[serde(deserialize_with = "Option::deserialize")]
    pub address: Option<String>,
    pub outcome: EgressOutcome,
    /// Why it was refused, failed or ended; the label and the rule that allowed it for
    /// `opened`.
    #[serde(deserialize_with = "Option::deserialize")]
    pub reason: Option<String>,
    /// Bytes the box sent out, and received, through this connection (0 until `closed`).
    pub sent: u64,
    pub received: u64,
}

/// What became of a connection attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum EgressOutcome {
    /// The destination is not allowed at the call's label (or the session is at its cap).
    Refused,
    /// Allowed, but boxmaker could not resolve or reach it.
    Failed,
    /// Allowed and connected.
    Opened,
    /// An opened connection ended.
    Closed,
}

crate::strict::wire_names!(EgressOutcome, "egress outcome", "refused, failed, opened or closed", {
    Refused => "refused",
    Failed => "failed",
    Opened => "opened",
    Closed => "closed",
});

strict_object!(
    RunnerRequest,
    Order,
    RunnerReply,
    RunnerAnswer,
    EgressRecord
);

impl Versioned for RunnerRequest {
    fn version(&self) -> u32 {
        self.v
    }
}

impl Versioned for RunnerReply {
    fn version(&self) -> u32 {
        self.v
    }
}

impl RunnerRequest {
    /// A request of the current version.
    pub fn new(id: u64, order: Order) -> Self {
        Self {
            v: crate::PROTOCOL_VERSION,
            id,
            order,
        }
    }

    /// A call at the taint `(class, untrusted)`.
    pub fn call(id: u64, request: ToolRequest, class: DataClass, untrusted: bool) -> Self {
        Self::new(
            id,
            Order::Call {
                request,
                class,
                untrusted,
            },
        )
    }
}

impl RunnerReply {
    /// A reply of the current version.
    pub fn new(id: u64, reply: RunnerAnswer) -> Self {
        Self {
            v: crate::PROTOCOL_VERSION,
            id,
            reply,
        }
    }

    /// A call's final answer.
    pub fn answer(id: u64, response: ToolResponse) -> Self {
        Self::new(id, RunnerAnswer::Answer { response })
    }

    /// An `error` reply.
    pub fn error(id: u64, code: ErrorCode, detail: impl Into<String>) -> Self {
        Self::new(
            id,
            RunnerAnswer::Error {
                code,
                detail: detail.into(),
            },
        )
    }
}

/// Writes one runner request as a frame (same rules as [`crate::write_frame`]).
pub fn write_runner_request<W: Write>(w: &mut W, req: &RunnerRequest) -> Result<(), FrameError> {
    write_framed(w, req)
}

/// Reads one runner request (same rules as [`crate::read_frame`]).
pub fn read_runner_request<R: Read>(r: &mut R) -> Result<RunnerRequest, FrameError> {
    read_framed(r)
}

/// Writes one runner reply as a frame.
pub fn write_runner_reply<W: Write>(w: &mut W, reply: &RunnerReply) -> Result<(), FrameError> {
    write_framed(w, reply)
}

/// Reads one runner reply.
pub fn read_runner_reply<R: Read>(r: &mut R) -> Result<RunnerReply, FrameError> {
    read_framed(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::CallId;

    fn req() -> ToolRequest {
        ToolRequest {
            session: SessionId::new("s1").unwrap(),
            call: CallId(3),
            tool: "run".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn a_call_round_trips_with_its_taint() -> Result<(), FrameError> {
        let r = RunnerRequest::call(7, req(), DataClass::Secret, true);
        let mut buf = Vec::new();
        write_runner_request(&mut buf, &r)?;
        let text = String::from_utf8_lossy(buf.get(4..).unwrap_or_default()).into_owned();
        assert!(
            text.starts_with(
                r#"{"v":1,"id":7,"order":{"kind":"call","body":{"request":{"session":"s1""#
            ),
            "{text}"
        );
        assert!(
            text.ends_with(r#""class":"secret","untrusted":true}}}"#),
            "{text}"
        );
        assert_eq!(read_runner_request(&mut buf.as_slice())?, r);
        Ok(())
    }

    #[test]
    fn an_egress_event_round_trips_and_is_strict() -> Result<(), FrameError> {
        let record = EgressRecord {
            session: SessionId::new("s1").unwrap(),
            call: Some(CallId(3)),
            tool: "fetch".into(),
            conn: 9,
            host: "api.example.com".into(),
            port: 443,
            address: None,
            outcome: EgressOutcome::Refused,
            reason: Some("boxmaker refused api.example.com:443: …".into()),
            sent: 0,
            received: 0,
        };
        let r = RunnerReply::new(0, RunnerAnswer::Egress { record });
        let mut buf = Vec::new();
        write_runner_reply(&mut buf, &r)?;
        let text = String::from_utf8_lossy(buf.get(4..).unwrap_or_default()).into_owned();
        assert!(
            text.starts_with(r#"{"v":1,"id":0,"reply":{"kind":"egress","body":{"record":{"session":"s1","call":3,"tool":"fetch","conn":9"#),
            "{text}"
        );
        assert!(
            text.contains(r#""address":null,"outcome":"refused""#),
            "{text}"
        );
        assert_eq!(read_runner_reply(&mut buf.as_slice())?, r);
        for bad in [
            text.replace(r#""address":null,"#, ""),
            text.replace(r#""refused""#, r#""maybe""#),
            text.replace(r#""port":443"#, r#""port":70000"#),
            text.replace(r#""sent":0"#, r#""sent":0,"extra":1"#),
        ] {
            assert!(serde_json::from_str::<RunnerReply>(&bad).is_err(), "{bad}");
        }
        Ok(())
    }

    #[test]
    fn strictness_holds_here_too() {
        for bad in [
            r#"{"v":1,"id":7,"order":{"kind":"call","body":{"request":{"session":"s1","call":1,"tool":"t","arguments":"{}"},"class":"secret"}}}"#,
            r#"{"v":1,"id":7,"order":{"kind":"reset_session","body":{"session":"s1","x":1}}}"#,
            r#"{"v":1,"id":7,"order":{"kind":"launch","body":{}}}"#,
            r#"{"v":1,"id":7,"order":["reset_session",{"session":"s1"}]}"#,
        ] {
            assert!(serde_json::from_str::<RunnerRequest>(bad).is_err(), "{bad}");
        }
        let ok = r#"{"v":1,"id":2,"reply":{"kind":"reset","body":{"servers":1,"workspace":true}}}"#;
        assert!(serde_json::from_str::<RunnerReply>(ok).is_ok());
    }
}
