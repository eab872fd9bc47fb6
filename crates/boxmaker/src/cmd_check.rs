//! `boxmaker check`: what the gate would decide for one call, without running anything.
//!
//! Prints exactly one line — `allow`, `ask`, `denied REASON`, or `failed: MESSAGE` for
//! `--arguments` the real call would refuse before anything runs — and exits 0, whatever the
//! decision. `--explain` adds one line per grant whose tool pattern matched, with each
//! argument condition and whether it held on `--arguments` (default `{}`), then one line per
//! label rule that names the tool, and the label the call's answers get.
//!
//! A `from` condition (docs/spec.md §3.7) asks the session's provenance index: `check`
//! reads it from the state database, read-only, when there is one (else every value not
//! named by the config is unseen), and `--explain` names where each refused value first
//! appeared, what a person would be told, and whether provenance changed the decision.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use gate::gate::described::Described;
use policy::values::Ident;
use policy::{Arguments, Context, Known, Seen, Taint, decide_call_in, explain_call_in};
use proto::{DataClass, SessionId, Timestamp};

use crate::error::CliError;

/// Show what the gate would decide for one call, without running it.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
    /// The session that makes the call.
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    session: SessionId,
    /// The tool it calls.
    #[arg(long, value_name = "NAME", value_parser = tool_name, allow_hyphen_values = true)]
    tool: String,
    /// The session's taint class: public, internal, confidential or secret.
    #[arg(long, value_name = "CLASS", default_value = "public")]
    taint: DataClass,
    /// The session has seen untrusted content.
    #[arg(long)]
    untrusted: bool,
    /// The time of the call, in seconds since the Unix epoch (default: now).
    #[arg(long, value_name = "UNIX_SECONDS")]
    at: Option<u64>,
    /// The call's arguments, as the model would send them: one JSON object. Grants with
    /// argument conditions are tested on them; text that is not strict JSON (a duplicated
    /// key included) matches no conditional grant, as at the gate; and arguments the real
    /// call would refuse before it runs are said (`failed: …`). Without it: `{}`, and only
    /// the grants are asked.
    #[arg(long, value_name = "JSON", allow_hyphen_values = true)]
    arguments: Option<String>,
    /// Also say which grants matched and why each did or did not admit the call.
    #[arg(long)]
    explain: bool,
}

fn tool_name(s: &str) -> Result<String, String> {
    if config::is_valid_tool_name(s) {
        Ok(s.to_owned())
    } else {
        Err("a tool name is 1 to 64 ASCII letters, digits, `_` or `-`".to_owned())
    }
}

/// The session's index when no database holds one: the config's values are trusted, those
/// a server's tool definition names untrusted, every other value unseen; or, when the
/// database could not be read, none placed (fail closed).
#[derive(Debug)]
struct NoIndex<'a> {
    known: &'a Known,
    described: &'a Described,
    unreadable: bool,
}

impl Context for NoIndex<'_> {
    fn seen(&self, v: &Ident) -> Seen {
        if self.known.contains(&v.text) {
            Seen::Config
        } else if self.unreadable {
            Seen::Unplaced
        } else if let Some(tool) = self.described.tool(&v.text) {
            Seen::Described(tool.to_owned())
        } else {
            Seen::Unseen
        }
    }
}

pub fn run(args: &CheckArgs) -> Result<(), CliError> {
    let cfg = config::load(&args.config)?;
    // What will not work is said now, not at the first call (stderr: stdout stays one line).
    for f in crate::lint::lint(&cfg) {
        errln!("boxmaker: warning: {}", f.text);
    }
    // The same vocabulary as `call` and MCP: a name the config has no tool for is unknown
    // (a call would not even be sent); the line on stdout is still what the gate decides.
    if !cfg.could_name(&args.tool) {
        errln!(
            "boxmaker: note: unknown tool {:?}: the config has no tool by that name (its \
             tools: {}); `call` and MCP clients would be told so",
            args.tool,
            crate::cmd_call::known_tools(&cfg)
        );
    }
    let given = Taint::new(args.taint, args.untrusted);
    // As the gate decides (docs/spec.md §3.3 step 4): code boxmaker does not control is
    // decided at max(taint, reach).
    let reach = cfg.call_reach(&args.tool);
    let taint = reach.map_or(given, |r| {
        Taint::new(config::box_label(given.class(), r), given.untrusted())
    });
    let now = args.at.map_or_else(
        || Timestamp::from_system_time(std::time::SystemTime::now()),
        Timestamp,
    );
    let arguments = args.arguments.as_deref().unwrap_or("{}");
    let call_args = Arguments::parse(arguments);
    if matches!(call_args, Arguments::Unparsed) {
        errln!(
            "boxmaker: note: the --arguments are not strict JSON ({}), so no grant with \
             argument conditions matches, as at the gate",
            policy::parse_strict(arguments)
                .err()
                .map_or_else(String::new, |e| e.to_string())
        );
    }
    let mut unreadable = false;
    let store = match gate::store::Store::open_read_only(&cfg.gate.state) {
        Ok(store) => store.map(Mutex::new),
        Err(e) => {
            unreadable = true;
            errln!(
                "boxmaker: note: could not read the session's provenance index ({e}); every \
                 value the config does not name counts as untrusted"
            );
            None
        }
    };
    // What the servers' tool definitions name, as the gate reads it (docs/spec.md §3.7).
    let described = Arc::new(Described::load(&cfg).unwrap_or_else(|e| {
        errln!("boxmaker: note: could not read what the servers' tools say ({e})");
        Described::default()
    }));
    let no_index = NoIndex {
        known: &cfg.known,
        described: &described,
        unreadable,
    };
    let index = store.as_ref().map(|s| {
        gate::gate::SessionIndex::new(s, &args.session, &cfg.known, Arc::clone(&described))
    });
    let cx: &dyn Context = match &index {
        Some(i) => i,
        None => &no_index,
    };
    let decision = decide_call_in(
        &cfg.grants,
        &args.session,
        &args.tool,
        &call_args,
        taint,
        now,
        cx,
    );
    // What the call would get: a call whose arguments can never run fails at once, as the
    // front (a downstream tool's schema, before anything else) and the gate (a builtin's
    // decoder, once the grants do not deny it) would say.
    // Only for arguments given: without --arguments the question is the grants' alone.
    let never = args
        .arguments
        .as_deref()
        .and_then(|a| never_runs(&cfg, &args.tool, a, &decision));
    if !args.explain {
        match &never {
            Some(message) => outln!("failed: {message}"),
            None => outln!("{decision}"),
        }
        return Ok(());
    }
    let e = explain_call_in(
        &cfg.grants,
        &args.session,
        &args.tool,
        &call_args,
        taint,
        now,
        cx,
    );
    match &never {
        Some(message) => {
            outln!("failed: {message}");
            outln!(
                "the grants say {}, but these arguments can never run: the call fails at \
                 once and nobody is asked",
                e.decision
            );
        }
        None => outln!("{}", e.decision),
    }
    let at = match reach {
        Some(r) => {
            format!("taint ({given}), reach {r} (what its box can read), decided at ({taint})")
        }
        None => format!("taint ({taint})"),
    };
    outln!(
        "session {}, tool {}, {at}, at {}: {} of {} grants name this tool",
        args.session,
        args.tool,
        crate::when::at(now),
        e.lines.len(),
        cfg.grants.len()
    );
    // Times as a person reads them, and how far each is from the call's time.
    let time = |t: Timestamp| crate::when::at_from(t, now);
    for line in &e.lines {
        outln!("{}", line.describe(&time));
    }
    // What the call's answers are labelled (docs/spec.md §3.4), by the function the runner
    // and the gate label them by, and every label rule that names the tool.
    for line in cfg.explain_labels(&args.tool, &call_args) {
        outln!("{line}");
    }
    outln!("{}", answer_line(&cfg, &args.tool, &call_args));
    if e.by_provenance {
        outln!(
            "provenance changed this decision: with every from condition holding it would differ"
        );
    }
    // docs/spec.md §3.10: the person's own words.
    if e.by_intent {
        outln!(
            "the person's words changed this decision: had their prompts named nothing it \
             would differ"
        );
        for c in &e.intent {
            outln!("  {}", front::explain::concern(c));
        }
    }
    for c in &e.concerns {
        outln!("a person would be told: {}", front::explain::concern(c));
    }
    Ok(())
}

/// `answers labelled (CLASS, trusted): the tool's own (…), with its reach, raised by label
/// rules 1, 3`.
fn answer_line(cfg: &config::Config, tool: &str, args: &Arguments) -> String {
    let show = |l: policy::Label| {
        format!(
            "({}, {})",
            l.class,
            if l.untrusted { "untrusted" } else { "trusted" }
        )
    };
    let answer = cfg.answer_label(tool, args);
    let own = show(cfg.floor(tool));
    let rules: Vec<String> = answer.rules.iter().map(|i| (i + 1).to_string()).collect();
    let by = match rules.len() {
        0 => "; no label rule matches".to_owned(),
        1 => format!(", raised by label rule {}", rules[0]),
        _ => format!(", raised by label rules {}", rules.join(", ")),
    };
    let (reach, more) = if cfg.call_reach(tool).is_some() {
        (", with its reach", "")
    } else if cfg.tool(tool).is_some() {
        (
            "",
            "; a file read under a mount raises it to that mount's class",
        )
    } else {
        ("", "")
    };
    format!(
        "answers labelled {}: the tool's own {own}{reach}{by}{more}",
        show(answer.label)
    )
}

/// Why a call of `tool` with `arguments` would fail before it runs, in the words the real
/// call gets: a downstream tool's arguments against its input schema as last discovered (the
/// front's check, before the gate sees the call), a builtin's against its decoder
/// (`config::args`, the gate's check, unless the grants deny the call first). `None` when
/// they would run — or cannot be checked here (a downstream tool never discovered, or text
/// an MCP client could not send, which the note above covers).
fn never_runs(
    cfg: &config::Config,
    tool: &str,
    arguments: &str,
    decision: &policy::Decision,
) -> Option<String> {
    if let Some(def) = catalog::ToolsFile::load(&cfg.gate.state)
        .ok()
        .map(|f| catalog::Catalog::build(cfg, &f))
        .and_then(|c| c.get(tool).and_then(|e| e.shown.clone()))
    {
        let value = serde_json::from_str::<serde_json::Value>(arguments).ok()?;
        if !value.is_object() {
            return None;
        }
        return catalog::schema::check(&def.input_schema, &value)
            .err()
            .map(|why| {
                format!("{tool}: bad arguments: {why} (nothing ran; see the tool's input schema)")
            });
    }
    if matches!(decision, policy::Decision::Deny(_)) {
        return None;
    }
    let config::ToolKind::Builtin(b) = cfg.tool(tool)?.kind else {
        return None;
    };
    config::args::parse(b, arguments)
        .err()
        .map(|e| format!("{e} (nothing ran; see the tool's input schema)"))
}
