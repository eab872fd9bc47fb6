//! `boxmaker demo`: a scripted agent session on the embedded default config, in a throwaway
//! state directory, through the real gate, runner and boxes. It shows, one line each: an
//! allowed read, a `run` that waits for a person (the demo approves it through the control
//! socket, as a person would with `boxmaker approve`), a taint rise from a confidential
//! mount, a call then denied `taint_too_high`, and `audit verify`. It exits 1 if any step
//! does not come out as shown.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use proto::control::{ControlAnswer, ControlOp};
use proto::{CallId, DataClass, DenyReason, SessionId, ToolRequest, ToolResponse};

use crate::client::{agent_call, control};
use crate::error::CliError;
use crate::host::try_host;

/// Run a scripted agent session that shows what boxmaker does.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Keep the throwaway state directory and print where it is.
    #[arg(long)]
    keep: bool,
}

/// What the demo adds to the embedded default: a confidential mount and a tool that stands
/// for a way out (posting to the web), limited to public data.
const DEMO_EXTRA: &str = r#"
# --- added by `boxmaker demo` ---
[[mount]]
host = "notes"
at = "/data/notes"
class = "confidential"

[[tool]]
name = "share"             # stands for a way out: posting to the web
builtin = "write_file"
class = "public"

[[grant]]
tool = "share"
effect = "allow"
max_class = "public"       # never once the session has read anything above public
"#;

fn step(n: u32, text: &str) {
    outln!("{n}. {text}");
}

fn say(text: &str) {
    outln!("   {text}");
}

fn expect(ok: bool, what: &str) -> Result<(), CliError> {
    if ok {
        Ok(())
    } else {
        Err(CliError::Demo(what.to_string()))
    }
}

pub fn run(args: &DemoArgs) -> Result<u8, CliError> {
    let dir = tempfile::Builder::new()
        .prefix("boxmaker-demo-")
        .tempdir()
        .map_err(|source| CliError::State {
            path: std::env::temp_dir(),
            source,
        })?;
    let root = dir.path().to_path_buf();
    let result = demo(&root);
    if !args.keep {
        // The record of the config the demo wrote goes with it (nobody will use it again).
        let _ = statedir::trust::forget(&root.join(config::FILE_NAME));
    }
    if args.keep {
        let kept = dir.keep();
        outln!("state kept in {}", kept.display());
    }
    result.map(|()| 0)
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|source| CliError::State {
        path: path.to_path_buf(),
        source,
    })
}

fn demo(root: &Path) -> Result<(), CliError> {
    let notes = root.join("notes");
    std::fs::create_dir_all(&notes).map_err(|source| CliError::State {
        path: notes.clone(),
        source,
    })?;
    write(&notes.join("plan.txt"), "Q3 plan: acquire Example Corp.\n")?;
    let config_path = root.join(config::FILE_NAME);
    write(
        &config_path,
        &format!("{}{DEMO_EXTRA}", config::DEFAULT_CONFIG),
    )?;
    // The demo wrote this config for the person: theirs (docs/spec.md §6, "Whose config").
    config::trust(
        &config_path,
        &format!("{}{DEMO_EXTRA}", config::DEFAULT_CONFIG),
    )?;
    let cfg = Arc::new(config::load(&config_path)?);
    outln!("boxmaker demo: one agent session on the default config plus a confidential");
    outln!(
        "mount and a public-only `share` tool; state in {}",
        cfg.gate.state.display()
    );

    // The demo hosts the gate in its own process (the state directory is its own, and goes
    // with it) and keeps it for the whole session; every call goes over the agent socket
    // like any client's.
    let hosted = try_host(&config_path, cfg.clone())?
        .ok_or_else(|| CliError::Demo("another process holds the demo's gate".into()))?;
    let agent_path = cfg.gate.state.join(statedir::AGENT_SOCKET);
    let session = SessionId::new("demo-session").map_err(|e| CliError::Demo(e.to_string()))?;
    let mut number = 0u64;
    let mut call = |tool: &str, args: &str, on_pending: &mut dyn FnMut(&ToolResponse)| {
        number += 1;
        let req = ToolRequest {
            session: session.clone(),
            call: CallId(number),
            tool: tool.into(),
            arguments: args.into(),
        };
        // One connection per call, as separate `boxmaker call`s would use.
        let stream = statedir::connect_path(&agent_path).map_err(|source| CliError::Connect {
            path: agent_path.clone(),
            source,
        })?;
        agent_call(&stream, req, on_pending)
    };
    let mut no_pending = |_: &ToolResponse| {};

    step(
        1,
        "An allowed call: the agent writes a note, then reads it back.",
    );
    let w = call(
        "write_file",
        r#"{"path":"todo.md","content":"- ship it\n"}"#,
        &mut no_pending,
    )?;
    expect(
        matches!(w, ToolResponse::Result { .. }),
        "write_file was not allowed",
    )?;
    let r = call("read_file", r#"{"path":"todo.md"}"#, &mut no_pending)?;
    let ToolResponse::Result { content, class, .. } = &r else {
        return Err(CliError::Demo(format!("read_file answered {r:?}")));
    };
    say(&format!(
        "read_file todo.md -> {:?}, labelled {class}: grant `read_file allow`, run in the session's box",
        content.trim_end()
    ));

    step(
        2,
        "A call that needs a person: the grant for `run` says ask.",
    );
    let control_path = cfg.gate.state.join(statedir::CONTROL_SOCKET);
    let mut approved = None;
    let r = call(
        "run",
        r#"{"argv":["sh","-c","echo hello from a box; id -un"]}"#,
        &mut |p| {
            if let ToolResponse::PendingApproval { approval, expires } = p {
                say(&format!(
                    "pending approval {approval} ({}); a person is shown the exact command",
                    crate::when::expires(*expires)
                ));
                // A person approves, through the control socket (what `boxmaker approve` does).
                let approver = statedir::connect_path(&control_path)
                    .map_err(|e| e.to_string())
                    .and_then(|s| {
                        control(
                            &s,
                            ControlOp::Approve {
                                approval: approval.clone(),
                            },
                        )
                        .map_err(|e| e.to_string())
                    });
                approved = Some(approver.map(|_| approval.clone()));
            }
        },
    )?;
    match approved {
        Some(Ok(id)) => say(&format!(
            "approved {id} as an operator would (`boxmaker approve {id}`)"
        )),
        Some(Err(e)) => return Err(CliError::Demo(format!("approving failed: {e}"))),
        None => return Err(CliError::Demo("`run` did not wait for approval".into())),
    }
    let ToolResponse::Result { content, .. } = &r else {
        return Err(CliError::Demo(format!("the approved run answered {r:?}")));
    };
    say(&format!("run -> {}", content.trim_end()));

    step(
        3,
        "The agent reads a confidential file: the session's taint rises.",
    );
    let r = call(
        "read_file",
        r#"{"path":"/data/notes/plan.txt"}"#,
        &mut no_pending,
    )?;
    let ToolResponse::Result { class, .. } = &r else {
        return Err(CliError::Demo(format!(
            "the confidential read answered {r:?}"
        )));
    };
    expect(
        *class == DataClass::Confidential,
        "the read was not labelled confidential",
    )?;
    say(&format!(
        "read_file /data/notes/plan.txt -> labelled {class} (the mount's class); the taint was recorded before the agent saw it"
    ));
    let taint = sessions_taint(&control_path, &session)?;
    say(&format!("session taint is now {taint}"));

    step(4, "Now the agent tries to send data out: denied.");
    let r = call(
        "share",
        r#"{"path":"post.txt","content":"Q3 plan..."}"#,
        &mut no_pending,
    )?;
    expect(
        r == ToolResponse::Denied {
            reason: DenyReason::TaintTooHigh,
        },
        "share was not denied taint_too_high",
    )?;
    say(
        "share -> denied taint_too_high: this session has read confidential data and \"share\" is limited to public",
    );

    step(
        5,
        "Every request, decision, approval and result is in a hash-chained audit log.",
    );
    drop(hosted);
    std::thread::sleep(Duration::from_millis(50));
    let path = cfg.gate.state.join(gate::audit::AUDIT_FILE);
    let ok = gate::audit::verify(&path).map_err(|e| CliError::Demo(e.to_string()))?;
    say(&format!(
        "audit verify -> intact: {} records, last hash {}…",
        ok.records,
        ok.last_hash.to_hex().get(..16).unwrap_or_default()
    ));
    outln!("demo complete: allow, approval, taint, denial and audit all behaved as shown");
    Ok(())
}

fn sessions_taint(control_path: &Path, session: &SessionId) -> Result<String, CliError> {
    let s = statedir::connect_path(control_path).map_err(|source| CliError::Connect {
        path: control_path.to_path_buf(),
        source,
    })?;
    match control(&s, ControlOp::ListSessions {})? {
        ControlAnswer::Sessions { items } => items
            .iter()
            .find(|i| &i.id == session)
            .map(|i| {
                format!(
                    "{}{}",
                    i.class,
                    if i.untrusted { " + untrusted" } else { "" }
                )
            })
            .ok_or_else(|| CliError::Demo("the session is not listed".into())),
        other => Err(CliError::Unexpected(format!("{other:?}"))),
    }
}
