//! `runner` — the runner role: it reads `ToolRequest` frames from the gate, runs each call in
//! its session's box, and answers `result` or `failed`, labelled.
//!
//! **Owns:** tool definitions, the mount table, box templates, session workspaces, and the
//! label of every result (docs/spec.md §3.4: the runner labels, never the tool).
//!
//! **Must never:** decide policy, write the gate's state, or trust a tool's output to say what
//! it is. It trusts the gate and nothing it runs.
//!
//! Reading order:
//! 1. [`builtin`] — the builtin tools and their strictly decoded arguments (`config::args`,
//!    shared with the gate).
//! 2. [`fit`] — cutting content so a result always fits in one frame.
//! 3. [`label`] — the label of a result (class and untrusted bit), from the tool's floor, the
//!    mounts it read and the session's floor (the workspace).
//! 4. [`inbox`] — the file tools' half that runs inside the box.
//! 5. [`run`] — `Runner`: one call, one box, a labelled answer; [`digest`] — what a
//!    call a person approves runs: the files it names, hashed, checked again and pinned.
//! 6. [`downstream`] — MCP servers in the session's box (or remote): start, call, label,
//!    stop, discovery; what a server says during a call (`downstream::heard`, carried in the
//!    result) and its resources and prompts (`downstream::offers`).
//! 7. the egress proxy is a crate of its own (`egress`): a networked box's only way out,
//!    decided by the config's egress rules at the call's label, and reported to the gate;
//!    the runner starts one for each networked box and wires its events to the gate.
//! 8. [`running`] — what of each session runs now, so a reset can end it all before the
//!    session's label falls.
//! 9. secrets are a crate of their own (`secrets`): `[[secret]]` values, read in the runner
//!    only, and redacted from every answer; the runner hands each box its own (`run::scrub`).
//! 10. [`serve`] — the connection loop: frames in, answers out, many calls at once; calls
//!     admitted and resets begun in the order the gate sent them.

#![forbid(unsafe_code)]

pub use config::args as builtin;
pub mod digest;
pub mod downstream;
pub mod envkeep;
pub mod fit;
pub mod gitkeep;
pub mod inbox;
pub mod label;
pub mod run;
pub mod running;
pub mod sentry;
pub mod serve;
pub mod warm;

pub use run::{Runner, RunnerError};
/// Why a box could not be built (for `box exec` and `box show`).
pub use sandbox::Error as BoxError;
/// Raises the soft open-files limit to the hard one: the runner role's egress proxy holds
/// up to eight descriptors a tunnel (two sockets, the copies that let a rising label cut
/// it, two splice pipes). Only for the runner role's own process.
pub use sandbox::raise_open_files_limit;
/// Marks every descriptor this process inherited (from 3 up) close-on-exec, so none passes
/// into the roles, helpers and boxes it starts (docs/spec.md §4).
pub use sandbox::seal_inherited_descriptors;
pub use serve::{ServeError, serve};

/// If this process was started as a warm box's file server, serve and exit; otherwise return.
/// Call it first thing in `main` of the binary that runs boxes.
pub fn enter_inbox_if_requested() {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == inbox::INBOX_SERVE_ARG)
    {
        std::process::exit(inbox::serve());
    }
}

/// If this process was started as the box helper or as an in-box file tool, become that and
/// never return; otherwise return. Call it first thing in `main` of the binary that runs
/// boxes: the runner re-runs its own binary in those modes.
pub fn enter_box_modes_if_requested() {
    sandbox::enter_helper_if_requested();
    enter_inbox_if_requested();
}

/// `boxmaker doctor`: the report of which protections this machine enforces, judged against
/// `limits`' requirements, and whether boxes can run here.
pub fn doctor(limits: &config::BoxLimits) -> (String, bool) {
    let report = sandbox::doctor(&run::requirements(limits));
    let netns = report
        .checks
        .iter()
        .any(|c| c.name == "network namespace" && c.enforced);
    let egress = if netns {
        format!(
            "networked boxes: confined: each has its own network namespace with only lo, and reaches out only through boxmaker's egress proxy ({} in the box), as the [[egress]] rules allow\n",
            sandbox::PROXY_ADDR
        )
    } else {
        "networked boxes: NOT confined: no network namespaces here, so no box can run\n".into()
    };
    (format!("{report}{egress}"), report.missing().is_empty())
}

/// The MCP revisions boxmaker's client speaks to a server, newest first: 2026-07-28 after
/// `server/discover`, the others through the `initialize` handshake (docs/spec.md §3.9).
pub const SPOKEN_VERSIONS: &[&str] = &[
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];
