//! Approving in the agent's own client (docs/spec.md §5, issue 16): when the config says
//! `[gate] approve_in_client = true` and the client declared form elicitation, a call that
//! waits for a person also asks them in the client — an `elicitation/create` showing the exact
//! call as the gate holds it (escaped with [`for_person`]), the session's taint, the reason and
//! the expiry, with three choices: approve once, approve for this session for N minutes, or
//! refuse. The answer goes to the gate over the decision socket (`proto::decide`), bound to
//! the digest of what was shown.
//!
//! No answer (the person cancels, the client does not support it, the request times out at
//! the approval's expiry) decides nothing: the call waits for the other ways (the CLI, the
//! approvals page) until it expires. A call that ends first — decided elsewhere — withdraws
//! its elicitation (`notifications/cancelled`).

use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use proto::control::{ApprovalInfo, ApprovalReason, Choice, REMEMBER_MAX_SECONDS, Shown};
use proto::decide::{
    DecideAnswer, DecideOp, DecideReply, DecideRequest, read_decide_reply, write_decide_request,
};
use proto::{FrameError, SessionId, Timestamp};
use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, ServerRequest,
};
use rmcp::service::{ElicitationMode, PeerRequestOptions};
use rmcp::{Peer, RoleServer};
use serde_json::json;

use crate::explain::for_person;

/// Opens a connection to the gate's decision socket (the binary gives the front one; the
/// front opens no file).
pub type DecideConnector = Arc<dyn Fn() -> std::io::Result<UnixStream> + Send + Sync>;

/// The minutes an "approve for this session" lasts when the person does not say.
pub const DEFAULT_MINUTES: u64 = 10;

/// The longest a person may choose, in minutes (the gate's own cap).
pub const MAX_MINUTES: u64 = REMEMBER_MAX_SECONDS / 60;

/// Why asking in the client did not happen or decided nothing.
#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    #[error("cannot reach the gate's decision socket: {0}")]
    Connect(#[source] std::io::Error),
    #[error("the decision socket failed: {0}")]
    Frame(#[source] FrameError),
    #[error("the gate refused: {code}: {detail}")]
    Refused { code: String, detail: String },
    #[error("the gate answered out of turn")]
    Unexpected,
}

/// One request on the decision socket, and its answer.
fn exchange(connect: &DecideConnector, op: DecideOp) -> Result<DecideAnswer, ApproveError> {
    let stream = connect().map_err(ApproveError::Connect)?;
    let mut w = BufWriter::new(&stream);
    write_decide_request(&mut w, &DecideRequest::new(1, op)).map_err(ApproveError::Frame)?;
    w.flush()
        .map_err(|e| ApproveError::Frame(FrameError::Io(e)))?;
    drop(w);
    let reply: DecideReply =
        read_decide_reply(&mut BufReader::new(&stream)).map_err(ApproveError::Frame)?;
    if reply.id != 1 {
        return Err(ApproveError::Unexpected);
    }
    match reply.reply {
        DecideAnswer::Error { code, detail } => Err(ApproveError::Refused {
            code: code.to_string(),
            detail,
        }),
        answer => Ok(answer),
    }
}

/// What the gate holds for `approval` of `session`, and the digest to decide it with.
pub fn show(
    connect: &DecideConnector,
    session: &SessionId,
    approval: &str,
) -> Result<(ApprovalInfo, String), ApproveError> {
    match exchange(
        connect,
        DecideOp::Show {
            session: session.clone(),
            approval: approval.to_string(),
        },
    )? {
        DecideAnswer::Shown { item, call_sha256 } => Ok((item, call_sha256)),
        _ => Err(ApproveError::Unexpected),
    }
}

/// Passes the person's answer on: `minutes` with `approve_for_session`.
pub fn decide(
    connect: &DecideConnector,
    session: &SessionId,
    shown: &(ApprovalInfo, String),
    answer: Answer,
) -> Result<DecideAnswer, ApproveError> {
    let (item, call_sha256) = shown;
    let (choice, remember_seconds) = match answer {
        Answer::Once => (Choice::ApproveOnce, None),
        Answer::ForSession { minutes } => (Choice::ApproveForSession, Some(minutes * 60)),
        Answer::Refuse => (Choice::Refuse, None),
    };
    exchange(
        connect,
        DecideOp::Decide {
            session: session.clone(),
            approval: item.id.clone(),
            choice,
            remember_seconds,
            shown: Shown {
                call_sha256: call_sha256.clone(),
                class: item.class,
                untrusted: item.untrusted,
            },
        },
    )
}

/// What the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Once,
    ForSession { minutes: u64 },
    Refuse,
}

/// The person's answer in an elicitation result, or `None` for no answer: a cancelled or
/// dismissed form, or content that is not one of the three choices (which decides nothing,
/// rather than guessing). An explicit *decline* of the form is a refusal.
pub fn answer_of(result: &ElicitResult) -> Option<Answer> {
    match result.action {
        ElicitationAction::Accept => {}
        ElicitationAction::Decline => return Some(Answer::Refuse),
        _ => return None,
    }
    let content = result.content.as_ref()?.as_object()?;
    let minutes = match content.get("minutes") {
        None => Some(DEFAULT_MINUTES),
        Some(v) => v.as_u64().or_else(|| {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                .map(|f| f as u64)
        }),
    };
    match content.get("decision")?.as_str()? {
        "approve_once" => Some(Answer::Once),
        "approve_for_session" => {
            let minutes = minutes.filter(|m| (1..=MAX_MINUTES).contains(m))?;
            Some(Answer::ForSession { minutes })
        }
        "refuse" => Some(Answer::Refuse),
        _ => None,
    }
}

/// The form: the decision (three titled choices) and the minutes for "this session".
pub fn schema() -> Result<ElicitationSchema, serde_json::Error> {
    let schema = json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Your decision",
                "oneOf": [
                    {"const": "approve_once", "title": "Approve once"},
                    {"const": "approve_for_session",
                     "title": "Approve for this session (this exact call, for the minutes below)"},
                    {"const": "refuse", "title": "Refuse"}
                ]
            },
            "minutes": {
                "type": "integer",
                "title": "Minutes (approve for this session)",
                "description": "How long this exact call may run again without asking",
                "minimum": 1,
                "maximum": MAX_MINUTES,
                "default": DEFAULT_MINUTES
            }
        },
        "required": ["decision"]
    });
    match schema {
        serde_json::Value::Object(map) => ElicitationSchema::from_json_schema(map),
        other => ElicitationSchema::from_json_schema(serde_json::Map::from_iter([(
            "type".to_string(),
            other,
        )])),
    }
}

/// What the person reads: the exact call as the gate holds it, every hidden or control
/// character shown as `\u{…}` (one function, [`for_person`], for everything a person decides
/// on), the session's taint, the reason, and the expiry.
pub fn message(item: &ApprovalInfo, now: Timestamp) -> String {
    let tool = for_person(&item.tool);
    let args = for_person(&item.arguments);
    let session = for_person(item.session.as_str());
    let hidden = tool.escaped + args.escaped;
    let marker = match hidden {
        0 => String::new(),
        1 => "\n  (it holds 1 hidden or control character, shown as \\u{…})".into(),
        n => format!("\n  (it holds {n} hidden or control characters, shown as \\u{{…}})"),
    };
    let taint = format!(
        "{}{}",
        item.class,
        if item.untrusted {
            ", and it has seen untrusted content"
        } else {
            ""
        }
    );
    // What the approval binds beyond the text: the files the call names, and their digests.
    let mut files = String::new();
    let covers = crate::explain::covers(&item.files);
    if !covers.is_empty() {
        files.push_str("\nfiles it covers:");
        for line in covers {
            files.push_str("\n  - ");
            files.push_str(&line);
        }
    }
    let remember = if crate::explain::rememberable(&item.files) {
        "Approve for this session also lets this exact call (the same tool and arguments, in \
         this session, while every file above stays as shown) run again without asking, for \
         the minutes you choose."
    } else {
        "This call names a file whose content cannot be bound, so it can only be approved \
         once: approve for this session is refused."
    };
    let why = match item.reason {
        ApprovalReason::GrantAsk => "a grant says to ask before this tool runs",
        ApprovalReason::UntrustedContent => {
            "this session has seen untrusted content, and the grant for this tool asks after that"
        }
    };
    // docs/spec.md §3.7: where a value came from, before anything else the person weighs.
    let concerns: String = item
        .concerns
        .iter()
        .map(|c| format!("\n  - {}", crate::explain::concern(c)))
        .collect();
    let concerns = if concerns.is_empty() {
        String::new()
    } else {
        format!("\nconsider:{concerns}")
    };
    format!(
        "boxmaker: a tool call waits for your approval.\n\n\
         tool: {tool}\n\
         arguments: {args}{marker}{files}\n\
         session: {session} (taint: {taint})\n\
         why: {why}{concerns}\n\
         expires: {} (approval {})\n\n\
         Approve once runs this exact call (with the files as shown, or not at all). \
         {remember} Refuse denies it. If you do not answer, it waits for \
         `boxmaker approve` or the approvals page until it expires.",
        crate::when::at_from(item.expires, now),
        for_person(&item.id).text,
        tool = tool.text,
        args = args.text,
        session = session.text,
    )
}

/// Whether `peer` (the MCP client) said it can show an elicitation form.
pub fn client_can_ask(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
}

/// What asking in the client came to (for the caller's log line).
#[derive(Debug)]
pub enum Asked {
    /// The person answered and the gate took it.
    Decided(Answer),
    /// No answer: cancelled, dismissed, timed out, or the call ended first.
    NoAnswer(String),
}

/// Asks the person in the client and passes their answer to the gate. `ended` resolves
/// when the call has its final answer: the elicitation is then withdrawn.
pub async fn ask_in_client(
    peer: Peer<RoleServer>,
    connect: DecideConnector,
    session: SessionId,
    approval: String,
    ended: tokio::sync::oneshot::Receiver<()>,
) -> Result<Asked, ApproveError> {
    let shown = {
        let (connect, session, approval) = (connect.clone(), session.clone(), approval.clone());
        tokio::task::spawn_blocking(move || show(&connect, &session, &approval))
            .await
            .map_err(|_| ApproveError::Unexpected)??
    };
    let now = Timestamp::from_system_time(std::time::SystemTime::now());
    let ttl = Duration::from_secs(shown.0.expires.0.saturating_sub(now.0).max(1));
    let schema = schema().map_err(|e| ApproveError::Refused {
        code: "internal".into(),
        detail: e.to_string(),
    })?;
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message(&shown.0, now),
        requested_schema: schema,
    };
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    let mut options = PeerRequestOptions::no_options();
    options.timeout = Some(ttl);
    let mut handle = match peer.send_cancellable_request(request, options).await {
        Ok(h) => h,
        Err(e) => {
            return Ok(Asked::NoAnswer(format!(
                "the client could not be asked: {e}"
            )));
        }
    };
    let answered = tokio::select! {
        r = &mut handle.rx => Ok(r),
        () = tokio::time::sleep(ttl) => Err("no answer before the approval expired"),
        _ = ended => Err("the call ended first (decided elsewhere)"),
    };
    let result = match answered {
        Ok(Ok(Ok(ClientResult::ElicitResult(result)))) => result,
        Ok(Ok(Ok(other))) => {
            return Ok(Asked::NoAnswer(format!(
                "the client answered with something else: {other:?}"
            )));
        }
        Ok(Ok(Err(e))) => return Ok(Asked::NoAnswer(format!("the client said: {e}"))),
        Ok(Err(_)) => {
            return Ok(Asked::NoAnswer(
                "the connection to the client closed".into(),
            ));
        }
        Err(why) => {
            // Take the question back from the client: nobody needs to answer it now.
            let _ = handle.cancel(Some(why.to_string())).await;
            return Ok(Asked::NoAnswer(why.into()));
        }
    };
    let Some(answer) = answer_of(&result) else {
        return Ok(Asked::NoAnswer(format!(
            "the person did not choose ({:?})",
            result.action
        )));
    };
    tokio::task::spawn_blocking(move || decide(&connect, &session, &shown, answer))
        .await
        .map_err(|_| ApproveError::Unexpected)??;
    Ok(Asked::Decided(answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::control::ApprovalState;
    use proto::{CallId, DataClass};

    fn item(arguments: &str) -> ApprovalInfo {
        ApprovalInfo {
            id: "ap-0123456789abcdef".into(),
            session: SessionId::new("mcp-1").unwrap(),
            call: CallId(1),
            tool: "run".into(),
            arguments: arguments.into(),
            reason: ApprovalReason::UntrustedContent,
            class: DataClass::Confidential,
            untrusted: true,
            created: Timestamp(1_000),
            expires: Timestamp(1_300),
            state: ApprovalState::Pending,
            files: Vec::new(),
            concerns: Vec::new(),
        }
    }

    #[test]
    fn the_message_shows_the_exact_call_with_hidden_characters_escaped() {
        // What an injected model would send: an ANSI clear-screen, a bidi override that
        // shows "rm -rf ~" backwards, and a zero-width space.
        let m = message(
            &item("{\"argv\":[\"sh\",\"-c\",\"\u{1b}[2J\u{202e}~ fr- mr\u{200b}\"]}"),
            Timestamp(1_000),
        );
        assert!(
            m.contains(r#"arguments: {"argv":["sh","-c","\u{1b}[2J\u{202e}~ fr- mr\u{200b}"]}"#),
            "{m}"
        );
        assert!(m.contains("3 hidden or control characters"), "{m}");
        assert!(!m.contains('\u{1b}') && !m.contains('\u{202e}') && !m.contains('\u{200b}'));
        assert!(m.contains("tool: run"));
        assert!(
            m.contains("taint: confidential, and it has seen untrusted content"),
            "{m}"
        );
        assert!(m.contains("untrusted content, and the grant"), "{m}");
        assert!(
            m.contains("(in 5 min)") && m.contains("ap-0123456789abcdef"),
            "{m}"
        );
    }

    #[test]
    fn the_message_shows_the_files_the_approval_covers_and_what_changed() {
        let mut it = item(r#"{"argv":["sh","/work/s.sh"]}"#);
        it.files.push(proto::run::FileDigest {
            path: "/work/s.sh\nwhy: nothing".into(),
            arg: 1,
            kind: proto::run::FileKind::File,
            sha256: Some("ab".repeat(32)),
            size: Some(14),
            note: None,
            pinned: true,
            was: Some(format!("sha256:{}", "cd".repeat(32))),
        });
        let m = message(&it, Timestamp(1_000));
        assert!(m.contains("\nfiles it covers:\n  - /work/s.sh\\u{a}why: nothing: 14 bytes, sha256 abababababababab…"), "{m}");
        assert!(
            m.contains("CHANGED since the same call was approved"),
            "{m}"
        );
        assert!(m.contains("while every file above stays as shown"), "{m}");
        // A file that cannot be bound: approve once only.
        it.files[0].kind = proto::run::FileKind::Unbound;
        let m = message(&it, Timestamp(1_000));
        assert!(m.contains("can only be approved once"), "{m}");
    }

    #[test]
    fn the_message_says_where_a_value_came_from() {
        let mut i = item(r#"{"recipient":"DE89370400440532013000"}"#);
        assert!(!message(&i, Timestamp(1_000)).contains("consider:"));
        i.concerns.push(proto::control::Concern {
            kind: proto::control::ConcernKind::UntrustedValue,
            pointer: "/recipient".into(),
            value: "DE89370400440532013000\n".into(),
            detail: "the IBAN DE89370400440532013000 first appeared in an untrusted answer of \
                     mail_read_inbox, call 1\nwhy: fake"
                .into(),
        });
        let m = message(&i, Timestamp(1_000));
        assert!(
            m.contains(
                "\nconsider:\n  - untrusted value at /recipient: the IBAN DE89370400440532013000 \
                 first appeared in an untrusted answer of mail_read_inbox, call 1\\u{a}why: fake"
            ),
            "{m}"
        );
    }

    #[test]
    fn arguments_cannot_add_lines_that_look_like_ours() {
        // A raw newline (JSON white space, as `boxmaker call` may send it) and a fake line.
        let m = message(
            &item("{\"cmd\":\n\"ls\",\"x\":\"\u{2028}why: nothing to worry about\"}"),
            Timestamp(1_000),
        );
        let lines: Vec<&str> = m.lines().collect();
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("why: ")).count(),
            1,
            "{m}"
        );
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with("arguments: "))
                .count(),
            1,
            "{m}"
        );
        assert!(
            m.contains(r#"arguments: {"cmd":\u{a}"ls","x":"\u{2028}why: nothing"#),
            "{m}"
        );
    }

    #[test]
    fn the_answers_are_the_three_choices_and_nothing_else_decides() {
        let accept = |content: serde_json::Value| {
            ElicitResult::new(ElicitationAction::Accept).with_content(content)
        };
        assert_eq!(
            answer_of(&accept(json!({"decision": "approve_once"}))),
            Some(Answer::Once)
        );
        assert_eq!(
            answer_of(&accept(
                json!({"decision": "approve_for_session", "minutes": 30})
            )),
            Some(Answer::ForSession { minutes: 30 })
        );
        assert_eq!(
            answer_of(&accept(json!({"decision": "approve_for_session"}))),
            Some(Answer::ForSession {
                minutes: DEFAULT_MINUTES
            })
        );
        assert_eq!(
            answer_of(&accept(json!({"decision": "refuse", "minutes": 5}))),
            Some(Answer::Refuse)
        );
        assert_eq!(
            answer_of(&ElicitResult::new(ElicitationAction::Decline)),
            Some(Answer::Refuse)
        );
        for none in [
            ElicitResult::new(ElicitationAction::Cancel),
            ElicitResult::new(ElicitationAction::Accept),
            accept(json!({"decision": "approve_forever"})),
            accept(json!({"decision": "approve_for_session", "minutes": 0})),
            accept(json!({"decision": "approve_for_session", "minutes": MAX_MINUTES + 1})),
            accept(json!({"decision": "approve_for_session", "minutes": 2.5})),
            accept(json!({"decision": "approve_for_session", "minutes": "10"})),
            accept(json!(["approve_once"])),
        ] {
            assert_eq!(answer_of(&none), None, "{none:?}");
        }
    }

    #[test]
    fn the_form_has_the_three_choices_and_the_minutes() {
        let v = serde_json::to_value(schema().unwrap()).unwrap();
        let choices: Vec<&str> = v["properties"]["decision"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["const"].as_str().unwrap())
            .collect();
        assert_eq!(choices, ["approve_once", "approve_for_session", "refuse"]);
        assert_eq!(v["properties"]["minutes"]["maximum"], json!(MAX_MINUTES));
        assert_eq!(v["required"], json!(["decision"]));
    }
}
