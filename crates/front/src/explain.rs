//! The sentences a person and a model read (docs/spec.md §5): a denial starts with
//! `denied: REASON` and says what in the session caused it, so the model stops retrying; a
//! pending approval names the exact command that decides it, from any directory.

use config::Config;
use policy::{Effect, Grant};
use proto::{DataClass, DenyReason, SessionId, Timestamp};

/// The grants that could have let this call through, ignoring taint.
fn candidates<'a>(
    cfg: &'a Config,
    session: &SessionId,
    tool: &str,
    now: Timestamp,
) -> Vec<&'a Grant> {
    cfg.grants
        .iter()
        .filter(|g| {
            g.tool.matches(tool)
                && g.sessions.matches(session.as_str())
                && g.effect != Effect::Deny
                && g.is_live(now)
        })
        .collect()
}

/// `seen` is the highest class the front has relayed to this session (a lower bound of its
/// taint: the gate may know more).
pub fn denial(
    cfg: &Config,
    session: &SessionId,
    tool: &str,
    reason: DenyReason,
    seen: (DataClass, bool),
    now: Timestamp,
) -> String {
    let why = match reason {
        DenyReason::NoGrant => format!("no grant lets this session call \"{tool}\"; do not retry"),
        DenyReason::GrantExpired => format!(
            "the grant for \"{tool}\" has expired; a person must renew it before it can run"
        ),
        DenyReason::DeniedByGrant => {
            format!("a grant forbids \"{tool}\" for this session; do not retry")
        }
        DenyReason::ApprovalRefused => {
            "a person refused this exact call; do not retry it".to_string()
        }
        DenyReason::ApprovalExpired => {
            "no one approved this call before its approval expired".to_string()
        }
        DenyReason::TaintTooHigh => {
            let grants = candidates(cfg, session, tool, now);
            let limit = grants.iter().map(|g| g.max_class).max();
            let untrusted_deny = grants.iter().all(|g| g.if_untrusted == Effect::Deny);
            match limit {
                Some(max) if seen.0 > max => format!(
                    "this session has read {} data and \"{}\" is limited to {max}",
                    seen.0,
                    grants
                        .iter()
                        .find(|g| g.max_class == max)
                        .map_or(tool, |g| g.tool.as_str())
                ),
                Some(_) if seen.1 && untrusted_deny => format!(
                    "this session has seen untrusted content and \"{tool}\" is refused after that"
                ),
                Some(max) => {
                    format!("this session's taint is above what \"{tool}\" allows ({max} at most)")
                }
                None => format!("this session's taint is too high for \"{tool}\""),
            }
        }
    };
    format!("denied: {reason} — {why}")
}

/// `path` as one shell word: as it is when it holds only characters no shell treats
/// specially, else in single quotes.
pub fn shell_word(path: &str) -> String {
    let plain = !path.is_empty()
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,=".contains(&b));
    if plain {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', "'\\''"))
    }
}

/// This binary as a person types it: its absolute path as one shell word (`boxmaker` need
/// not be on anyone's PATH), `boxmaker` only when the system cannot say. Found once; the
/// confined front can read no link, so `boxmaker mcp` calls this before it confines itself.
pub fn program() -> &'static str {
    static PROGRAM: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PROGRAM.get_or_init(|| {
        std::env::current_exe()
            .map(|p| shell_word(&p.display().to_string()))
            .unwrap_or_else(|_| "boxmaker".into())
    })
}

/// The commands that decide `approval`, exactly as a person types them in any directory:
/// `/abs/boxmaker approve ID --config FILE` ([`program`]; the config's absolute path, when
/// it came from a file) and the same with `refuse`.
pub fn approval_commands(cfg: &Config, approval: &str) -> (String, String) {
    let config = cfg
        .file
        .as_ref()
        .map(|f| format!(" --config {}", shell_word(&f.display().to_string())))
        .unwrap_or_default();
    let program = program();
    (
        format!("{program} approve {approval}{config}"),
        format!("{program} refuse {approval}{config}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_approval_commands_name_the_config_and_survive_a_shell() {
        let mut cfg = config::parse("", "t.toml", std::path::Path::new("/")).unwrap();
        let me = shell_word(&std::env::current_exe().unwrap().display().to_string());
        assert!(me.starts_with('/') || me.starts_with("'/"), "{me}");
        assert_eq!(
            approval_commands(&cfg, "ap-1").0,
            format!("{me} approve ap-1")
        );
        cfg.file = Some("/home/a b/it's/boxmaker.toml".into());
        let (approve, refuse) = approval_commands(&cfg, "ap-1");
        assert_eq!(
            approve,
            format!("{me} approve ap-1 --config '/home/a b/it'\\''s/boxmaker.toml'")
        );
        assert!(refuse.starts_with(&format!("{me} refuse ap-1 --config '")));
        assert_eq!(shell_word("/srv/x.toml"), "/srv/x.toml");
    }
}

// The one escape for every text a person reads lives in `proto` (the runner escapes a
// server's stderr with it too); it is this module's as before.
pub use proto::shown::{ForPerson, for_person, is_hidden};

/// A digest for a person: `sha256 ` and its first 16 hex digits (the wire has all 64).
fn short_digest(binding: &str) -> String {
    match binding.strip_prefix("sha256:") {
        Some(hex) => format!("sha256 {}…", hex.get(..16).unwrap_or(hex)),
        None => binding.to_string(),
    }
}

/// What an approval covers beyond its text, one line per file for a person (docs/spec.md
/// §3.3 step 6): each file with its size and digest (the program marked as run from a copy
/// of exactly that), a directory, what cannot be bound and why, and the places that were
/// empty in one line. A file that changed since a person approved the same call says so,
/// with what it was. Paths and notes come from the agent: they are escaped.
pub fn covers(files: &[proto::run::FileDigest]) -> Vec<String> {
    use proto::run::FileKind;
    let mut lines = Vec::new();
    let mut absent = Vec::new();
    for f in files {
        let path = for_person(if f.path.is_empty() {
            "(the call)"
        } else {
            &f.path
        })
        .text;
        let note = f.note.as_deref().map(|n| for_person(n).text);
        let mut line = match f.kind {
            FileKind::File => format!(
                "{path}: {} bytes, {}{}",
                f.size.unwrap_or(0),
                short_digest(&f.binding()),
                if f.pinned {
                    " (the program: it runs from a read-only copy of exactly this)"
                } else {
                    ""
                }
            ),
            FileKind::Directory => {
                format!("{path}: a directory (bound as one; what it holds is not covered)")
            }
            FileKind::Absent if f.was.is_none() => {
                absent.push(path);
                continue;
            }
            FileKind::Absent => format!("{path}: nothing there"),
            FileKind::Unbound => format!(
                "{path}: NOT COVERED: {}",
                note.unwrap_or_else(|| "its content cannot be bound".into())
            ),
        };
        if let Some(was) = &f.was {
            line.push_str(&format!(
                "  CHANGED since the same call was approved (it was {})",
                short_digest(&for_person(was).text)
            ));
        }
        lines.push(line);
    }
    if !absent.is_empty() {
        lines.push(format!(
            "nothing there now (bound as absent): {}",
            absent.join(", ")
        ));
    }
    lines
}

/// Whether an approval that names these files can be remembered for the session: not when
/// one of them cannot be bound (such a call asks every time).
pub fn rememberable(files: &[proto::run::FileDigest]) -> bool {
    files.iter().all(proto::run::FileDigest::bindable)
}

#[cfg(test)]
mod covers_tests {
    use super::*;
    use proto::run::{FileDigest, FileKind};

    fn f(path: &str, kind: FileKind) -> FileDigest {
        FileDigest {
            path: path.into(),
            arg: 1,
            kind,
            sha256: (kind == FileKind::File).then(|| "ab".repeat(32)),
            size: (kind == FileKind::File).then_some(14),
            note: None,
            pinned: false,
            was: None,
        }
    }

    #[test]
    fn each_file_is_shown_with_its_digest_and_a_change_says_so() {
        let mut script = f("/work/s.sh", FileKind::File);
        script.pinned = true;
        script.was = Some(format!("sha256:{}", "cd".repeat(32)));
        let mut link = f("/work/l\u{202e}", FileKind::Unbound);
        link.note = Some("/work/l is a symlink (to /etc/passwd)".into());
        let lines = covers(&[
            script,
            f("/work/-y", FileKind::Absent),
            f("/work/out", FileKind::Directory),
            link,
            f("/work/gone", FileKind::Absent),
        ]);
        assert_eq!(
            lines,
            [
                "/work/s.sh: 14 bytes, sha256 abababababababab… (the program: it runs from a \
                 read-only copy of exactly this)  CHANGED since the same call was approved (it \
                 was sha256 cdcdcdcdcdcdcdcd…)",
                "/work/out: a directory (bound as one; what it holds is not covered)",
                "/work/l\\u{202e}: NOT COVERED: /work/l is a symlink (to /etc/passwd)",
                "nothing there now (bound as absent): /work/-y, /work/gone",
            ]
        );
        assert!(!rememberable(&[f("/work/x", FileKind::Unbound)]));
        assert!(rememberable(&[
            f("/work/x", FileKind::File),
            f("/y", FileKind::Absent)
        ]));
    }
}

/// One concern about a call waiting for a person (docs/spec.md §3.7), as every place that
/// asks a person shows it — the CLI, the approvals page, the client's prompt — escaped by
/// [`for_person`] (its value and pointer come from the call's arguments):
/// `untrusted value at /recipient: the IBAN DE89… first appeared in an untrusted answer of
/// mail_read, call 1`.
pub fn concern(c: &proto::control::Concern) -> String {
    use proto::control::ConcernKind;
    let what = match c.kind {
        ConcernKind::UntrustedValue => "untrusted value",
        ConcernKind::UnseenValue => "value seen nowhere",
        ConcernKind::AboveClearance => "above the destination's clearance",
        ConcernKind::IntentValue => "named by the person",
    };
    for_person(&format!("{what} at {}: {}", c.pointer, c.detail)).text
}

#[cfg(test)]
mod person_tests {
    use super::*;

    #[test]
    fn bidi_zero_width_and_control_characters_are_shown_escaped() {
        // What an attacker would send: "rm -rf ~" shown as "~ fr- mr" and a hidden joiner.
        let f = for_person("{\"argv\":[\"sh\",\"-c\",\"\u{202e}~ fr- mr\u{200b}\"]}\n");
        assert_eq!(
            f.text,
            "{\"argv\":[\"sh\",\"-c\",\"\\u{202e}~ fr- mr\\u{200b}\"]}\\u{a}"
        );
        assert_eq!(f.escaped, 3);
        assert!(f.marker().contains("3 hidden"));
        for c in [
            '\u{0}',
            '\u{1b}',
            '\u{85}',
            '\u{2066}',
            '\u{feff}',
            '\u{e0041}',
            '\u{fe0f}',
        ] {
            assert!(is_hidden(c), "{c:?}");
        }
        for c in ['a', 'é', '→', '中', ' ', '\u{1f600}'] {
            assert!(!is_hidden(c), "{c:?}");
        }
    }

    #[test]
    fn a_concern_is_one_escaped_line() {
        let c = proto::control::Concern {
            kind: proto::control::ConcernKind::UntrustedValue,
            pointer: "/recipient".into(),
            value: "x\u{202e}y".into(),
            detail: "the id x\u{202e}y first appeared in an untrusted answer of mail_read, call 1"
                .into(),
        };
        assert_eq!(
            concern(&c),
            "untrusted value at /recipient: the id x\\u{202e}y first appeared in an untrusted \
             answer of mail_read, call 1"
        );
    }

    #[test]
    fn a_literal_escape_in_the_text_cannot_pass_for_one_of_ours() {
        let f = for_person("echo \\u{202e}");
        assert_eq!(f.text, "echo \\u{5c}u{202e}");
        assert_eq!(f.escaped, 0);
        assert_eq!(f.marker(), "");
        let plain = for_person("{\"path\":\"notes/a b.txt\"}");
        assert_eq!(plain.text, "{\"path\":\"notes/a b.txt\"}");
    }
}
