//! Approvals as the page shows them, and the decision it sends back.
//!
//! Every text a person decides on — the tool, the arguments, the session, who decided, a
//! refuser's note — is escaped by [`for_person`] here, on the server, and the page puts it in
//! the document as text (`textContent`), never as markup: a control, bidi or zero-width
//! character shows as `\u{…}`, and `<script>` shows as `<script>`. The digest of the call and
//! the session's raw taint go along, so a decision names exactly what was shown.

use front::explain::for_person;
use proto::DataClass;
use proto::control::{
    ApprovalReason, ApprovalUpdate, Choice, GrantInfo, REMEMBER_MAX_SECONDS, Shown,
};
use serde_json::{Value, json};

/// One approval as the page shows it.
pub fn approval(u: &ApprovalUpdate) -> Value {
    let a = &u.item;
    let tool = for_person(&a.tool);
    let args = for_person(&a.arguments);
    let mut v = json!({
        "id": a.id,
        "change": u.change,
        "call_sha256": u.call_sha256,
        "state": a.state.as_str(),
        "session": for_person(a.session.as_str()).text,
        "call": a.call.0,
        "tool": tool.text,
        "arguments": args.text,
        "hidden": tool.escaped + args.escaped,
        "cut": u.cut,
        "reason": a.reason.as_str(),
        "why": why(a.reason),
        "class": a.class.as_str(),
        "untrusted": a.untrusted,
        "created": a.created.0,
        "expires": a.expires.0,
        // What it binds beyond the text (docs/spec.md §3.3 step 6), escaped.
        "covers": front::explain::covers(&a.files),
        "rememberable": front::explain::rememberable(&a.files),
        // docs/spec.md §3.7: each escaped, one line each.
        "concerns": a.concerns.iter().map(front::explain::concern).collect::<Vec<_>>(),
    });
    // What a pending approval does not have yet is left out (ten thousand of them are
    // listed at once).
    if let Value::Object(m) = &mut v {
        let mut put = |k: &str, x: Option<Value>| {
            if let Some(x) = x {
                m.insert(k.to_string(), x);
            }
        };
        put("decided", u.decided.map(|t| json!(t.0)));
        put("via", u.via.map(|v| json!(v.as_str())));
        put("by", u.by.as_deref().map(|b| json!(for_person(b).text)));
        put("note", u.note.as_deref().map(|n| json!(for_person(n).text)));
        put("grant", u.grant.as_ref().map(|g| json!(g)));
    }
    v
}

/// Why the call needs a person, in a sentence.
pub fn why(reason: ApprovalReason) -> &'static str {
    match reason {
        ApprovalReason::GrantAsk => "a grant says to ask before this tool runs",
        ApprovalReason::UntrustedContent => {
            "the session has seen untrusted content, and the grant asks after that"
        }
    }
}

/// A remembered approval as the page lists it (`None` for any other grant).
pub fn remembered(g: &GrantInfo) -> Option<Value> {
    let scope = g.scope.as_ref()?;
    let args = for_person(&scope.arguments);
    Some(json!({
        "id": g.id,
        "approval": for_person(&scope.approval).text,
        "tool": for_person(&g.grant.tool).text,
        "session": for_person(&g.grant.sessions).text,
        "arguments": args.text,
        "hidden": args.escaped,
        "max_class": g.grant.max_class.as_str(),
        "expires": g.grant.expires.map(|t| t.0),
        "covers": front::explain::covers(&scope.files),
    }))
}

/// A decision as the page sends it (`POST /api/decide`, JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub approval: String,
    pub choice: Choice,
    pub remember_seconds: Option<u64>,
    pub shown: Shown,
}

/// Reads a decision strictly: exactly these keys, `minutes` with `approve_for_session` only
/// (1 … 1440), the digest and the taint that were shown.
pub fn decision(body: &[u8]) -> Result<Decision, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let obj = v.as_object().ok_or("not a JSON object")?;
    for k in obj.keys() {
        if ![
            "approval",
            "choice",
            "minutes",
            "call_sha256",
            "class",
            "untrusted",
        ]
        .contains(&k.as_str())
        {
            return Err(format!("unknown field {k:?}"));
        }
    }
    let text = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(format!("`{k}` must be a string"))
    };
    let choice: Choice = text("choice")?.parse().map_err(|e| format!("{e}"))?;
    let class: DataClass = text("class")?.parse().map_err(|e| format!("{e}"))?;
    let untrusted = obj
        .get("untrusted")
        .and_then(Value::as_bool)
        .ok_or("`untrusted` must be true or false")?;
    let minutes = match obj.get("minutes") {
        None | Some(Value::Null) => None,
        Some(m) => Some(m.as_u64().ok_or("`minutes` must be a whole number")?),
    };
    let remember_seconds = match (choice, minutes) {
        (Choice::ApproveForSession, Some(m)) if (1..=REMEMBER_MAX_SECONDS / 60).contains(&m) => {
            Some(m * 60)
        }
        (Choice::ApproveForSession, _) => {
            return Err(format!(
                "approve for this session needs minutes from 1 to {}",
                REMEMBER_MAX_SECONDS / 60
            ));
        }
        (_, None) => None,
        (_, Some(_)) => return Err("minutes go with approve for this session only".into()),
    };
    Ok(Decision {
        approval: text("approval")?,
        choice,
        remember_seconds,
        shown: Shown {
            call_sha256: text("call_sha256")?,
            class,
            untrusted,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::control::{ApprovalInfo, ApprovalState, DecidedVia};
    use proto::{CallId, SessionId, Timestamp};

    #[test]
    fn what_a_person_decides_on_is_escaped_and_says_what_it_holds() {
        let u = ApprovalUpdate {
            item: ApprovalInfo {
                id: "ap-1".into(),
                session: SessionId::new("mcp-1").unwrap(),
                call: CallId(3),
                tool: "run".into(),
                arguments: "{\"argv\":[\"<script>\u{202e}\u{1b}[2J\"]}".into(),
                reason: ApprovalReason::GrantAsk,
                class: DataClass::Internal,
                untrusted: false,
                created: Timestamp(1),
                expires: Timestamp(301),
                state: ApprovalState::Refused,
                files: Vec::new(),
                concerns: vec![proto::control::Concern {
                    kind: proto::control::ConcernKind::UntrustedValue,
                    pointer: "/to".into(),
                    value: "<b>\u{202e}".into(),
                    detail: "the id <b>\u{202e} first appeared in an untrusted answer of m, call 1"
                        .into(),
                }],
            },
            change: 9,
            call_sha256: "ab".into(),
            cut: false,
            decided: Some(Timestamp(5)),
            via: Some(DecidedVia::Page),
            by: Some("the page\u{200b}".into()),
            note: Some("no\u{7}".into()),
            grant: None,
        };
        let v = approval(&u);
        assert_eq!(
            v["arguments"], "{\"argv\":[\"<script>\\u{202e}\\u{1b}[2J\"]}",
            "escaped by for_person; the markup stays text for the page to insert as text"
        );
        assert_eq!(v["hidden"], 2);
        assert_eq!(v["by"], "the page\\u{200b}");
        assert_eq!(v["note"], "no\\u{7}");
        assert_eq!(v["state"], "refused");
        assert_eq!(v["via"], "page");
        assert_eq!(
            v["concerns"][0],
            "untrusted value at /to: the id <b>\\u{202e} first appeared in an untrusted answer \
             of m, call 1"
        );
    }

    #[test]
    fn what_an_approval_covers_is_shown_escaped_and_says_whether_it_can_be_remembered() {
        let file = |path: &str, kind| proto::run::FileDigest {
            path: path.into(),
            arg: 1,
            kind,
            sha256: None,
            size: None,
            note: Some("a symlink (to \u{1b}[2J/etc/passwd)".into()),
            pinned: false,
            was: None,
        };
        let item = ApprovalInfo {
            id: "ap-1".into(),
            session: SessionId::new("s").unwrap(),
            call: CallId(3),
            tool: "run".into(),
            arguments: "{}".into(),
            reason: ApprovalReason::GrantAsk,
            class: DataClass::Public,
            untrusted: false,
            created: Timestamp(1),
            expires: Timestamp(301),
            state: ApprovalState::Pending,
            files: vec![file("/work/<b>\u{202e}.sh", proto::run::FileKind::Unbound)],
            concerns: Vec::new(),
        };
        let u = ApprovalUpdate {
            item,
            change: 1,
            call_sha256: "ab".into(),
            cut: false,
            decided: None,
            via: None,
            by: None,
            note: None,
            grant: None,
        };
        let v = approval(&u);
        assert_eq!(
            v["covers"][0],
            "/work/<b>\\u{202e}.sh: NOT COVERED: a symlink (to \\u{1b}[2J/etc/passwd)"
        );
        assert_eq!(v["rememberable"], false);
    }

    #[test]
    fn a_decision_is_read_strictly() {
        let ok = decision(
            br#"{"approval":"ap-1","choice":"approve_for_session","minutes":10,"call_sha256":"ab","class":"public","untrusted":false}"#,
        )
        .unwrap();
        assert_eq!(ok.remember_seconds, Some(600));
        assert_eq!(ok.choice, Choice::ApproveForSession);
        let once = decision(
            br#"{"approval":"ap-1","choice":"approve_once","minutes":null,"call_sha256":"ab","class":"secret","untrusted":true}"#,
        )
        .unwrap();
        assert_eq!(once.remember_seconds, None);
        for bad in [
            &br#"{"approval":"ap-1","choice":"approve_once","call_sha256":"ab","class":"public","untrusted":false,"via":"client"}"#[..],
            br#"{"approval":"ap-1","choice":"approve_for_session","call_sha256":"ab","class":"public","untrusted":false}"#,
            br#"{"approval":"ap-1","choice":"approve_for_session","minutes":100000,"call_sha256":"ab","class":"public","untrusted":false}"#,
            br#"{"approval":"ap-1","choice":"refuse","minutes":5,"call_sha256":"ab","class":"public","untrusted":false}"#,
            br#"{"approval":"ap-1","choice":"approve","call_sha256":"ab","class":"public","untrusted":false}"#,
            br#"{"approval":"ap-1","choice":"approve_once","class":"public","untrusted":false}"#,
            br#"["ap-1"]"#,
            b"approval=ap-1",
        ] {
            assert!(decision(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
