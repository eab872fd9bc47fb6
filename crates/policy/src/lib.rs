//! `policy` — the decision at the heart of boxmaker: may this session call this tool now?
//!
//! **Owns:** glob patterns over tool names and session ids, a session's taint and how it
//! rises, grants and the indexed set that holds them, argument conditions (the typed ones
//! read e-mail addresses, URLs and the links in text), and
//! [`decide_call()`] — docs/spec.md §3.3 steps 1–5 as a pure function of the grants, the
//! session, the tool, the parsed arguments, the taint and the time.
//!
//! **Must never:** do I/O of any kind (files, sockets, the clock, the environment), panic
//! on any input, or let the order of grants change a decision. The caller reads the clock
//! and passes `now`; the caller persists the taint. A pattern match stays linear-ish in the
//! length of its inputs, whatever the pattern: patterns come from files a person edits and
//! names come from a model.
//!
//! Reading order:
//! 1. [`pattern`] — `Pattern`: `*` and `?` globs matched over a whole name, iteratively.
//! 2. [`taint`] — `Label` and `Taint`, which only rises through [`Taint::absorb`].
//! 3. [`grant`] — `Effect`, `Grant`, and `Grants`, indexed by exact tool name and by the
//!    literal prefix of glob tool patterns.
//! 4. [`condition`] — argument conditions: JSON pointers (with `*` for every element),
//!    equal / one of / glob / range, and the strict parse of a call's arguments.
//! 5. [`host`], [`email`], [`url`], [`links`] and [`typed`] — the typed tests: a string
//!    read as one e-mail address, one URL, or free text and the links it carries.
//! 6. [`values`] and [`provenance`] — the identifying values an answer shows and an
//!    argument carries, in canonical form, and the `from` test that asks the session's
//!    provenance index where each came from ([`Context`]).
//! 7. [`decide`](mod@decide) — `decide_call` and `explain_call` (and `decide`/`explain`
//!    for a call whose arguments are unknown), and the `Decision` they return.

#![forbid(unsafe_code)]

pub mod condition;
pub mod decide;
pub mod email;
pub mod grant;
pub mod host;
pub mod intent;
pub mod links;
pub mod pattern;
pub mod provenance;
pub mod taint;
pub mod typed;
pub mod url;
pub mod values;

pub use condition::{
    Arguments, ArgumentsError, Condition, Context, List, MAX_CLOSED_CONDITIONS, NoContext, Pointer,
    PointerError, Scalar, Test, closed_holds, parse_strict, unnamed_key,
};
pub use decide::{
    Decision, Explanation, Verdict, VerdictLine, decide, decide_call, decide_call_in, explain,
    explain_call, explain_call_in,
};
pub use grant::{Effect, Grant, Grants};
pub use host::{Host, HostError, HostPatternError, HostSet};
pub use pattern::{Pattern, PatternError};
pub use provenance::{AssumeTrusted, FromTest, InSession, Known, Seen, Shown, WithoutIntent};
pub use taint::{Label, Taint};
pub use typed::{EmailTest, LinksTest, UrlTest};
