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
//! Before a call that asks a person, the gate asks the runner what the call would run
//! (`digest`): one [`FileDigest`] per argument that names a place in `/work` or a writable
//! mount. An approved call crosses with the digests the person approved (`files`), which
//! the runner checks again, and pins, before the box starts (docs/spec.md §3.3 step 6,
//! "What an approval binds").
//!
//! Besides answers, the runner sends **events**, always with id 0 (they answer no request):
//! `egress`, one per connection attempt a box made through the egress proxy, and one more
//! when an allowed connection ends (docs/spec.md §3.5), which the gate audits; and
//! `floated`, when what a destination answered a box raises its session's floor — its class
//! or its untrusted bit (§3.6) — which the gate commits into the session's taint before it
//! reads the next reply.

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
        /// What a person approved the call with: the runner runs it only if each file still
        /// has this digest, and runs the program from a read-only copy of what it hashed.
        /// Empty (and left out) for a call no person approved.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<FileDigest>,
    },
    /// An operator reset the session: stop its servers and empty its workspace, since both
    /// may hold what the session saw before.
    ResetSession { session: SessionId },
    /// What would this call run: a digest of each file its arguments name in `/work` or a
    /// writable mount, as its box would see them. Nothing runs.
    Digest { request: ToolRequest },
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
    /// The answer to `digest`: the files the call names, in argument order.
    Digests { files: Vec<FileDigest> },
    /// An event, not an answer (id 0): a box of `session` read `(class, untrusted)` data
    /// from a destination (its label floated up, docs/spec.md §3.6), above what the runner
    /// knew the session held, and may have left it in the session's workspace. The gate
    /// raises the session's taint by that label before it takes anything else from this
    /// runner, so no answer — a `failed` carries no label — and no later runner can forget
    /// it.
    Floated {
        session: SessionId,
        tool: String,
        #[serde(deserialize_with = "Option::deserialize")]
        call: Option<CallId>,
        class: DataClass,
        untrusted: bool,
    },
    /// An event, not an answer (id 0): a box of `session` (of `tool`, running `call` if one)
    /// made `path`, a name a writable mount keeps that was not there when the box started,
    /// and the runner moved it aside to `to` (paths as the box sees them; docs/spec.md §4,
    /// "What a writable mount keeps").
    Moved {
        session: SessionId,
        tool: String,
        #[serde(deserialize_with = "Option::deserialize")]
        call: Option<CallId>,
        path: String,
        to: String,
    },
    /// An event, not an answer (id 0), sent only by a runner started with telemetry on
    /// (docs/spec.md §8): a box of `session` for `tool` (running `call` if one) started, and
    /// how long that took, in microseconds, ending when the event was sent.
    Boxed {
        session: SessionId,
        tool: String,
        #[serde(deserialize_with = "Option::deserialize")]
        call: Option<CallId>,
        kind: BoxKind,
        micros: u64,
    },
}

/// Which box a [`RunnerAnswer::Boxed`] event times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum BoxKind {
    /// A `run` call's box, from the spec handed to a pre-forked helper to its report (its
    /// start and its command are one step there).
    Run,
    /// A warm file box started for a session and tool (docs/spec.md §4).
    File,
    /// A downstream server's box started for a session.
    Server,
}

crate::strict::wire_names!(BoxKind, "box kind", "run, file or server", {
    Run => "run",
    File => "file",
    Server => "server",
});

/// One place a call's arguments name in `/work` or a writable mount, as the runner found it
/// there (docs/spec.md §3.3 step 6). Optional fields are present, `null` when empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct FileDigest {
    /// The path as the box sees it: absolute, normal (`/work/s.sh`).
    pub path: String,
    /// The argument that names it (`0`: the program itself).
    pub arg: u32,
    pub kind: FileKind,
    /// SHA-256 (hex) of the content of a `file`.
    #[serde(deserialize_with = "Option::deserialize")]
    pub sha256: Option<String>,
    /// Its size in bytes, for a `file`.
    #[serde(deserialize_with = "Option::deserialize")]
    pub size: Option<u64>,
    /// Why an `unbound` one is not covered (a symlink and where it points, too large, …).
    #[serde(deserialize_with = "Option::deserialize")]
    pub note: Option<String>,
    /// The program: the call runs a read-only copy of exactly the content hashed.
    pub pinned: bool,
    /// What an earlier approval of the same call bound here, when that differs (the file
    /// changed since a person approved it), in [`FileDigest::binding`]'s words. Only the
    /// gate sets it.
    #[serde(deserialize_with = "Option::deserialize")]
    pub was: Option<String>,
}

/// What a [`FileDigest`] found at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum FileKind {
    /// A regular file, hashed whole.
    File,
    /// A directory: bound as being one, its content not covered.
    Directory,
    /// Nothing there: bound as being absent.
    Absent,
    /// Something whose content cannot be bound (a symlink on the way, a file too large, one
    /// the runner cannot read): no approval covers it for longer than one call.
    Unbound,
}

crate::strict::wire_names!(FileKind, "file kind", "file, directory, absent or unbound", {
    File => "file",
    Directory => "directory",
    Absent => "absent",
    Unbound => "unbound",
});

impl FileDigest {
    /// What an approval binds here, in words: `sha256:HEX` for a file, else its kind.
    pub fn binding(&self) -> String {
        match (self.kind, &self.sha256) {
            (FileKind::File, Some(h)) => format!("sha256:{h}"),
            (kind, _) => kind.as_str().to_string(),
        }
    }

    /// Whether an approval can bind it (everything but `unbound`).
    pub fn bindable(&self) -> bool {
        self.kind != FileKind::Unbound
    }
}

/// Whether a remembered approval that bound `a` covers a call that names `b`: the same
/// paths, each bound to the same thing, and nothing `unbound` on either side (what cannot
/// be bound is asked about every time). `arg`, `note` and `was` are words, not compared.
pub fn same_binding(a: &[FileDigest], b: &[FileDigest]) -> bool {
    let key = |l: &[FileDigest]| -> Vec<(String, String)> {
        l.iter().map(|f| (f.path.clone(), f.binding())).collect()
    };
    a.iter().chain(b).all(FileDigest::bindable) && key(a) == key(b)
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
    EgressRecord,
    FileDigest
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
                files: Vec::new(),
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

/// The longest start of `s` of at most `n` bytes that ends between two characters.
pub fn prefix(s: &str, n: usize) -> &str {
    let mut end = n.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// The longest `failed` message, in bytes: even if every byte escapes to six in JSON it fits
/// a frame with room to spare (a tool never causes a `TooLarge`, docs/spec.md §3.4). Every `failed`
/// the runner sends is made here (and by the crates it wires in: the MCP client, the secrets'
/// redaction), so no message — a server's error text, a box's last
/// words — can break the connection every session shares.
pub const MAX_FAILED: usize = 64 * 1024;

/// A `failed` answer of `message`, cut to [`MAX_FAILED`] bytes (saying how long it was).
pub fn failed(message: String) -> ToolResponse {
    if message.len() <= MAX_FAILED {
        return ToolResponse::Failed { message };
    }
    ToolResponse::Failed {
        message: format!(
            "{} [cut: {} bytes in all]",
            prefix(&message, MAX_FAILED),
            message.len()
        ),
    }
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
    fn a_floated_event_round_trips_and_is_strict() -> Result<(), FrameError> {
        let r = RunnerReply::new(
            0,
            RunnerAnswer::Floated {
                session: SessionId::new("s1").unwrap(),
                tool: "net".into(),
                call: None,
                class: DataClass::Confidential,
                untrusted: true,
            },
        );
        let mut buf = Vec::new();
        write_runner_reply(&mut buf, &r)?;
        let text = String::from_utf8_lossy(buf.get(4..).unwrap_or_default()).into_owned();
        assert_eq!(
            text,
            r#"{"v":1,"id":0,"reply":{"kind":"floated","body":{"session":"s1","tool":"net","call":null,"class":"confidential","untrusted":true}}}"#
        );
        assert_eq!(read_runner_reply(&mut buf.as_slice())?, r);
        for bad in [
            text.replace(r#""call":null,"#, ""),
            // The untrusted bit is part of the label: an event without it is refused.
            text.replace(r#","untrusted":true"#, ""),
            text.replace(r#""untrusted":true"#, r#""untrusted":1"#),
            text.replace(r#""confidential""#, r#""topsecret""#),
            text.replace(r#""class""#, r#""extra":1,"class""#),
        ] {
            assert!(serde_json::from_str::<RunnerReply>(&bad).is_err(), "{bad}");
        }
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

    fn digest(path: &str, kind: FileKind, sha: Option<&str>) -> FileDigest {
        FileDigest {
            path: path.into(),
            arg: 1,
            kind,
            sha256: sha.map(str::to_string),
            size: sha.map(|_| 3),
            note: None,
            pinned: false,
            was: None,
        }
    }

    #[test]
    fn an_approved_call_carries_its_files_and_a_plain_one_does_not() -> Result<(), FrameError> {
        let mut r = RunnerRequest::call(7, req(), DataClass::Public, false);
        let plain = serde_json::to_string(&r).unwrap_or_default();
        assert!(!plain.contains("files"), "{plain}");
        if let Order::Call { files, .. } = &mut r.order {
            files.push(digest("/work/s.sh", FileKind::File, Some("ab")));
        }
        let mut buf = Vec::new();
        write_runner_request(&mut buf, &r)?;
        let text = String::from_utf8_lossy(buf.get(4..).unwrap_or_default()).into_owned();
        assert!(
            text.ends_with(
                r#""untrusted":false,"files":[{"path":"/work/s.sh","arg":1,"kind":"file","sha256":"ab","size":3,"note":null,"pinned":false,"was":null}]}}}"#
            ),
            "{text}"
        );
        assert_eq!(read_runner_request(&mut buf.as_slice())?, r);
        // A digest is strict like everything else: every field present, no other.
        for bad in [
            text.replace(r#","note":null"#, ""),
            text.replace(r#""kind":"file""#, r#""kind":"pipe""#),
            text.replace(r#""was":null"#, r#""was":null,"x":1"#),
        ] {
            assert!(
                serde_json::from_str::<RunnerRequest>(&bad).is_err(),
                "{bad}"
            );
        }
        let ask = RunnerRequest::new(8, Order::Digest { request: req() });
        let text = serde_json::to_string(&ask).unwrap_or_default();
        assert!(
            text.starts_with(r#"{"v":1,"id":8,"order":{"kind":"digest","body":{"request":"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<RunnerRequest>(&text).ok(), Some(ask));
        let answer = RunnerReply::new(
            8,
            RunnerAnswer::Digests {
                files: vec![digest("/work/x", FileKind::Absent, None)],
            },
        );
        let text = serde_json::to_string(&answer).unwrap_or_default();
        assert_eq!(
            serde_json::from_str::<RunnerReply>(&text).ok(),
            Some(answer)
        );
        Ok(())
    }

    #[test]
    fn the_same_binding_is_the_same_paths_and_digests_and_nothing_unbound() {
        let file = |h| digest("/work/s.sh", FileKind::File, Some(h));
        let absent = digest("/work/-x", FileKind::Absent, None);
        assert!(same_binding(
            &[file("ab"), absent.clone()],
            &[file("ab"), absent.clone()]
        ));
        assert!(same_binding(&[], &[]));
        // Words (where it came from, what changed) are not compared.
        let mut worded = file("ab");
        worded.arg = 2;
        worded.note = Some("the program".into());
        worded.was = Some("sha256:cd".into());
        assert!(same_binding(&[file("ab")], &[worded]));
        assert!(!same_binding(&[file("ab")], &[file("cd")]));
        assert!(!same_binding(
            &[file("ab")],
            &[digest("/work/s.sh", FileKind::Absent, None)]
        ));
        assert!(!same_binding(&[file("ab")], &[file("ab"), absent]));
        let unbound = digest("/work/big", FileKind::Unbound, None);
        let both = [unbound.clone(), unbound];
        assert!(!same_binding(&both[..1], &both[1..]));
        assert_eq!(file("ab").binding(), "sha256:ab");
        assert_eq!(
            digest("/work/d", FileKind::Directory, None).binding(),
            "directory"
        );
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
