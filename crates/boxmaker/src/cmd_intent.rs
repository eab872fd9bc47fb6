//! `boxmaker intent`: the person's own words, handed to the gate for one conversation
//! (docs/spec.md §3.10).
//!
//! - `boxmaker intent --hook` is what `boxmaker client add claude-code` installs as Claude
//!   Code's `UserPromptSubmit` hook. Its standard input is the hook's JSON, exactly as Claude
//!   Code sends it (`session_id`, `transcript_path`, `cwd`, `permission_mode`,
//!   `hook_event_name`, `prompt`, and `agent_id`/`agent_type` for a subagent's). Only
//!   `UserPromptSubmit` of the main conversation counts: a subagent's prompt (the model
//!   wrote it), a remote caller's (`session_id` `served:…`), a background task's report
//!   (`<task-notification>`) and every other event add nothing. It finds its conversation by
//!   process ancestry: the hook is a child (through a shell) of the Claude Code process whose
//!   `boxmaker mcp` child's broker recorded it with the live session
//!   (`statedir::live::sessions_of`). It prints nothing on standard output (Claude Code would
//!   show it to the model) and never blocks the prompt: exit 0 when it is done or the event
//!   does not count, 1 (Claude Code's non-blocking error) when the gate could not take it.
//! - `boxmaker intent --session ID` reads the prompt's text on standard input (for other
//!   clients and scripts: a benchmark's replay hands each task's prompt so) and says what it
//!   added.
//!
//! Both speak on the control socket: a peer of the operator's uid outside every box.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proto::SessionId;
use proto::control::{ControlAnswer, ControlOp, IntentVia, MAX_INTENT_TEXT};

use crate::client::control;
use crate::error::CliError;
use crate::host::{Channel, connect};

/// The most a hook's JSON may be on standard input (a prompt at its longest, escaped).
const MAX_HOOK_INPUT: u64 = 8 * MAX_INTENT_TEXT as u64;

/// How long the hook looks for its conversation's front (it may still be starting).
const FIND_WAIT: Duration = Duration::from_secs(3);

/// How long the hook waits for the gate's answer: past it, the prompt is said not handed
/// over (exit 1) rather than holding the person's prompt until the client kills the hook.
/// Above the store's own deadline (15 s), so a gate refusing for its store says why.
const HOOK_WAIT: Duration = Duration::from_secs(20);

/// How far up its ancestry the hook looks for its client.
const MAX_ANCESTRY: usize = 16;

/// Hand the person's prompt to the gate: what they typed is trusted for their conversation.
#[derive(Debug, clap::Args)]
pub struct IntentArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
    /// Standard input is a prompt hook's JSON as Claude Code sends it; the conversation is
    /// the one its client process runs.
    #[arg(long, conflicts_with = "session")]
    hook: bool,
    /// The conversation (session) the prompt on standard input belongs to.
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    session: Option<SessionId>,
    /// Print the gate's answer as JSON.
    #[arg(long)]
    json: bool,
}

/// Whether a hook event is the person's own prompt, and its text: `Err` says why not.
pub fn typed_prompt(input: &serde_json::Value) -> Result<&str, String> {
    let obj = input
        .as_object()
        .ok_or("the hook's input is not a JSON object")?;
    let event = obj.get("hook_event_name").and_then(|e| e.as_str());
    if event != Some("UserPromptSubmit") {
        return Err(format!(
            "the event {} is not a prompt the person typed (only UserPromptSubmit is)",
            event.map_or_else(|| "with no name".to_owned(), |e| format!("{e:?}"))
        ));
    }
    if obj.get("agent_id").is_some_and(|a| !a.is_null()) {
        return Err("the prompt is a subagent's (the model wrote it), not the person's".into());
    }
    let session = obj.get("session_id").and_then(|s| s.as_str()).unwrap_or("");
    if session.starts_with("served:") {
        return Err("the prompt came from a remote caller, not the person at this client".into());
    }
    let prompt = obj
        .get("prompt")
        .and_then(|p| p.as_str())
        .ok_or("the event carries no prompt text")?;
    if prompt.contains("<task-notification>") {
        return Err("the prompt is a background task's report, not the person's words".into());
    }
    Ok(prompt)
}

/// The live conversations of the client this process runs under: the first of its
/// ancestors that a stdio front recorded as its client.
fn my_sessions(state: &std::path::Path) -> Vec<SessionId> {
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..MAX_ANCESTRY {
        if pid <= 1 {
            break;
        }
        let Ok((p, parent)) = statedir::live::Process::of(pid) else {
            break;
        };
        let found = statedir::live::sessions_of(state, p);
        if !found.is_empty() {
            return found
                .into_iter()
                .filter_map(|s| SessionId::new(s).ok())
                .collect();
        }
        pid = parent;
    }
    Vec::new()
}

fn read_stdin(max: u64) -> Result<Vec<u8>, CliError> {
    let mut buf = Vec::new();
    std::io::stdin()
        .take(max + 1)
        .read_to_end(&mut buf)
        .map_err(|e| CliError::Local(format!("cannot read standard input: {e}")))?;
    if buf.len() as u64 > max {
        return Err(CliError::Local(format!(
            "standard input is over {max} bytes: nothing was handed to the gate"
        )));
    }
    Ok(buf)
}

pub fn run(args: &IntentArgs) -> Result<u8, CliError> {
    if args.hook {
        // Exit 1 for every failure, never 2: Claude Code takes a prompt hook's 2 as "block
        // the prompt and erase it", and a gate that cannot take the prompt (not running,
        // wedged, a config error) must not cost the person what they typed.
        return hook(args).or_else(|e| {
            errln!("boxmaker intent: {e}");
            Ok(1)
        });
    }
    let Some(session) = &args.session else {
        return Err(CliError::Usage(
            "say whose words these are: --session ID (the prompt on standard input), or \
             --hook (a client's prompt hook)"
                .into(),
        ));
    };
    let bytes = read_stdin(MAX_INTENT_TEXT as u64)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| CliError::Local("the prompt is not UTF-8 text".into()))?;
    let cfg = Arc::new(config::load(&args.config)?);
    let conn = connect(&args.config, cfg, Channel::Control)?;
    let answer = control(
        &conn.stream,
        ControlOp::Intent {
            session: session.clone(),
            text,
            via: IntentVia::Cli,
        },
    )?;
    say(&answer, session, args.json)
}

fn say(answer: &ControlAnswer, session: &SessionId, json: bool) -> Result<u8, CliError> {
    if json {
        let text =
            serde_json::to_string(answer).map_err(|e| CliError::Unexpected(e.to_string()))?;
        outln!("{text}");
        return Ok(0);
    }
    match answer {
        ControlAnswer::Intent {
            prompt,
            values,
            sources,
        } => {
            outln!(
                "session {session}: prompt {prompt}, {values} new values, {}",
                if sources.is_empty() {
                    "no source named".to_owned()
                } else {
                    format!("sources named: {}", sources.join(", "))
                }
            );
            Ok(0)
        }
        other => Err(CliError::Unexpected(format!("the gate answered {other:?}"))),
    }
}

/// `--hook`: never a word on stdout (the client would show it to the model); a prompt that
/// is not the person's is left out (exit 0), one the gate could not take is said on stderr
/// (exit 1, which the client reports without blocking the prompt).
fn hook(args: &IntentArgs) -> Result<u8, CliError> {
    let bytes = read_stdin(MAX_HOOK_INPUT)?;
    let input: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| CliError::Local(format!("the hook's input is not JSON ({e})")))?;
    let text = match typed_prompt(&input) {
        Ok(t) => t.to_owned(),
        Err(why) => {
            errln!("boxmaker intent: nothing handed to the gate: {why}");
            return Ok(0);
        }
    };
    let cfg = Arc::new(config::load(&args.config)?);
    let deadline = Instant::now() + FIND_WAIT;
    let sessions = loop {
        let found = my_sessions(&cfg.gate.state);
        if !found.is_empty() || Instant::now() >= deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if sessions.is_empty() {
        return Err(CliError::Local(
            "no boxmaker conversation of this client is live (is boxmaker in its MCP \
             servers, on stdio?): the prompt was not handed to the gate"
                .into(),
        ));
    }
    let conn = connect(&args.config, cfg, Channel::Control)?;
    let _ = conn.stream.set_read_timeout(Some(HOOK_WAIT));
    let _ = conn.stream.set_write_timeout(Some(HOOK_WAIT));
    for session in &sessions {
        let answer = control(
            &conn.stream,
            ControlOp::Intent {
                session: session.clone(),
                text: text.clone(),
                via: IntentVia::Hook,
            },
        )
        .map_err(|e| {
            if crate::client::timed_out(&e) {
                CliError::Local(format!(
                    "the gate did not answer within {} s (is it stopped or wedged?): the \
                     prompt was not handed to the gate",
                    HOOK_WAIT.as_secs()
                ))
            } else {
                e
            }
        })?;
        if let ControlAnswer::Intent { prompt, values, .. } = answer {
            errln!("boxmaker intent: session {session}: prompt {prompt}, {values} new values");
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A payload exactly as the pinned Claude Code builds it (`Sh(…)` and `xcn(…)` in its
    /// CLI): the base fields, then `hook_event_name`, `prompt` and `session_title`.
    fn payload() -> serde_json::Value {
        json!({
            "session_id": "0d3c7d8e-6a39-4b7e-9d0c-3f1b2a4c5d6e",
            "transcript_path": "/home/p/.claude/projects/-home-p-rent/0d3c7d8e.jsonl",
            "cwd": "/home/p/rent",
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Pay my rent to GB29 NWBK 6016 1331 9268 19",
            "session_title": null
        })
    }

    #[test]
    fn only_the_person_s_typed_prompt_counts() {
        assert_eq!(
            typed_prompt(&payload()).unwrap(),
            "Pay my rent to GB29 NWBK 6016 1331 9268 19"
        );
        let with = |k: &str, v: serde_json::Value| {
            let mut p = payload();
            p[k] = v;
            p
        };
        for (bad, why) in [
            (with("agent_id", json!("a1b2")), "subagent"),
            (with("hook_event_name", json!("SubagentStop")), "event"),
            (with("hook_event_name", json!("PostToolUse")), "event"),
            (
                with("hook_event_name", json!("UserPromptExpansion")),
                "event",
            ),
            (with("session_id", json!("served:abc")), "remote"),
            (
                with(
                    "prompt",
                    json!("<task-notification>done</task-notification>"),
                ),
                "background",
            ),
            (with("prompt", json!(42)), "no prompt"),
            (json!([1, 2]), "object"),
        ] {
            let e = typed_prompt(&bad).unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
        }
        // A subagent's event with `agent_id: null` is the main conversation's.
        assert!(typed_prompt(&with("agent_id", json!(null))).is_ok());
    }
}
