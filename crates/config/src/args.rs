//! The builtin tools' arguments, decoded strictly from the model's JSON text — one decoder
//! for both roles that need it: the gate checks a call's arguments with it **before** it
//! decides to ask a person (a call that can never run is refused at once, in the decoder's
//! own words, and nobody is asked to approve it), and the runner decodes them with it before
//! the tool runs.
//!
//! The model's arguments are untrusted text. They must be one JSON object with exactly the
//! tool's keys: not JSON, an array, a missing or extra key, a duplicated key, or a wrong type
//! is refused with a sentence naming the problem, and nothing runs. A duplicated key matters:
//! a person approving `{"path":"/work/a","path":"/etc/b"}` must never see one path while the
//! tool uses the other.

pub use crate::Builtin;
use serde::Deserialize;

/// `read_file {"path"}`: a UTF-8 text file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadFile {
    pub path: String,
}

/// `write_file {"path", "content"}`: create or replace a file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFile {
    pub path: String,
    pub content: String,
}

/// `list_dir {"path"}`: one entry a line, `/` after directories.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListDir {
    pub path: String,
}

/// `run {"argv", "stdin"?, "timeout"?}`: a command in the box.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    pub argv: Vec<String>,
    #[serde(default)]
    pub stdin: Option<String>,
    /// Seconds; at most the box's wall-clock limit.
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// A builtin call with its checked arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuiltinCall {
    ReadFile(ReadFile),
    WriteFile(WriteFile),
    ListDir(ListDir),
    Run(Run),
}

/// Why a builtin's arguments were refused. The message names the tool and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    #[error("{tool}: the arguments must be a JSON object, not {found}")]
    NotAnObject {
        tool: &'static str,
        found: &'static str,
    },
    #[error("{tool}: bad arguments: {detail}")]
    Bad { tool: &'static str, detail: String },
}

/// The longest path argument, in bytes (Linux's `PATH_MAX`).
pub const PATH_MAX: usize = 4096;

/// Decodes `arguments` (the model's JSON text) for `tool`.
pub fn parse(tool: Builtin, arguments: &str) -> Result<BuiltinCall, ArgsError> {
    let name = tool.as_str();
    // serde's derived structs accept an array of their fields in order; arguments never may.
    let found = match arguments.trim_start().as_bytes().first() {
        Some(b'{') => None,
        Some(b'[') => Some("an array"),
        Some(b'"') => Some("a string"),
        Some(b'n') => Some("null"),
        Some(b't' | b'f') => Some("a boolean"),
        Some(b'-' | b'0'..=b'9') => Some("a number"),
        Some(_) => Some("text that is not JSON"),
        None => Some("empty text"),
    };
    if let Some(found) = found {
        return Err(ArgsError::NotAnObject { tool: name, found });
    }
    let bad = |e: serde_json::Error| ArgsError::Bad {
        tool: name,
        detail: e.to_string(),
    };
    let call = match tool {
        Builtin::ReadFile => BuiltinCall::ReadFile(serde_json::from_str(arguments).map_err(bad)?),
        Builtin::WriteFile => BuiltinCall::WriteFile(serde_json::from_str(arguments).map_err(bad)?),
        Builtin::ListDir => BuiltinCall::ListDir(serde_json::from_str(arguments).map_err(bad)?),
        Builtin::Run => BuiltinCall::Run(serde_json::from_str(arguments).map_err(bad)?),
    };
    check(name, &call)?;
    Ok(call)
}

fn check(tool: &'static str, call: &BuiltinCall) -> Result<(), ArgsError> {
    let bad = |detail: String| Err(ArgsError::Bad { tool, detail });
    let path = match call {
        BuiltinCall::ReadFile(a) => Some(&a.path),
        BuiltinCall::WriteFile(a) => Some(&a.path),
        BuiltinCall::ListDir(a) => Some(&a.path),
        BuiltinCall::Run(_) => None,
    };
    if let Some(path) = path {
        if path.is_empty() {
            return bad("`path` is empty".into());
        }
        if path.len() > PATH_MAX {
            return bad(format!("`path` is {} bytes, over {PATH_MAX}", path.len()));
        }
        if path.contains('\0') {
            return bad("`path` contains a NUL byte".into());
        }
    }
    if let BuiltinCall::Run(run) = call {
        if run.argv.is_empty() {
            return bad("`argv` is empty: it needs at least the program".into());
        }
        if run.argv.iter().any(|a| a.contains('\0')) {
            return bad("an `argv` element contains a NUL byte".into());
        }
        if run.timeout == Some(0) {
            return bad("`timeout` must be at least 1 second".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn refused(tool: Builtin, args: &str, needle: &str) {
        match parse(tool, args) {
            Ok(c) => panic!("{args} was accepted as {c:?}"),
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains(needle), "{args}: {msg:?} lacks {needle:?}");
                assert!(msg.starts_with(tool.as_str()), "{msg}");
            }
        }
    }

    #[test]
    fn good_arguments_decode() {
        assert_eq!(
            parse(Builtin::ReadFile, r#"{"path":"notes.txt"}"#).unwrap(),
            BuiltinCall::ReadFile(ReadFile {
                path: "notes.txt".into()
            })
        );
        assert_eq!(
            parse(Builtin::Run, r#" {"argv":["ls","-l"],"timeout":5}"#).unwrap(),
            BuiltinCall::Run(Run {
                argv: vec!["ls".into(), "-l".into()],
                stdin: None,
                timeout: Some(5)
            })
        );
        assert!(parse(Builtin::WriteFile, r#"{"path":"a","content":""}"#).is_ok());
        assert!(parse(Builtin::ListDir, r#"{"path":"/work"}"#).is_ok());
    }

    #[test]
    fn not_an_object_is_refused() {
        refused(Builtin::ReadFile, r#"["notes.txt"]"#, "not an array");
        refused(Builtin::ReadFile, r#""notes.txt""#, "not a string");
        refused(Builtin::ReadFile, "null", "not null");
        refused(Builtin::ReadFile, "", "not empty text");
        refused(Builtin::ReadFile, "path=notes", "not text that is not JSON");
        refused(Builtin::Run, "42", "not a number");
    }

    #[test]
    fn missing_extra_duplicated_and_mistyped_keys_are_refused() {
        refused(Builtin::ReadFile, "{}", "missing field `path`");
        refused(
            Builtin::WriteFile,
            r#"{"path":"a"}"#,
            "missing field `content`",
        );
        refused(
            Builtin::ReadFile,
            r#"{"path":"a","mode":"r"}"#,
            "unknown field `mode`",
        );
        refused(
            Builtin::ReadFile,
            r#"{"path":"/work/a","path":"/etc/shadow"}"#,
            "duplicate field `path`",
        );
        refused(Builtin::ReadFile, r#"{"path":5}"#, "invalid type");
        refused(Builtin::Run, r#"{"argv":"ls -l"}"#, "invalid type");
        refused(
            Builtin::Run,
            r#"{"argv":["ls"],"timeout":1.5}"#,
            "invalid type",
        );
        refused(
            Builtin::Run,
            r#"{"argv":["ls"],"timeout":-1}"#,
            "invalid value",
        );
        refused(Builtin::ReadFile, r#"{"path":"a"} trailing"#, "trailing");
    }

    #[test]
    fn values_that_cannot_name_a_file_or_a_program_are_refused() {
        refused(Builtin::ReadFile, r#"{"path":""}"#, "empty");
        refused(Builtin::ReadFile, r#"{"path":"a\u0000b"}"#, "NUL");
        let long = format!(r#"{{"path":"{}"}}"#, "a".repeat(PATH_MAX + 1));
        refused(Builtin::ListDir, &long, "over 4096");
        refused(Builtin::Run, r#"{"argv":[]}"#, "empty");
        refused(Builtin::Run, r#"{"argv":["a\u0000"]}"#, "NUL");
        refused(
            Builtin::Run,
            r#"{"argv":["sleep","9"],"timeout":0}"#,
            "at least 1",
        );
    }
}
