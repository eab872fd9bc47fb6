//! `[[secret]]`: where a credential comes from, and which tools may be handed it
//! (docs/spec.md §3.8).
//!
//! A secret is named here and read elsewhere: the config says where its value is (one of an
//! environment variable of boxmaker's own, a file, or a command's output) and the runner
//! reads it (`secrets`), only when a tool that names it needs it, and never in the
//! gate or the front. Nothing here reads a value. A secret's file is one of boxmaker's own
//! files: no mount may reach it, after symlinks (`crate::own`).
//!
//! A tool names the secrets it uses: a stdio server or `run` as environment variables of its
//! box (`secrets = { VARIABLE = "NAME" }`, or `secrets = ["NAME"]` for a secret read from a
//! variable, passed under that same variable's name), a remote server as a header (`bearer =
//! "NAME"`, `headers = { H = "secret:NAME" }`). A name no `[[secret]]` defines is refused at
//! load, with one sentence naming it.
//!
//! **Why a table, and a list only for `env` secrets.** The variable a server reads its token
//! from is the server's contract (`GITHUB_PERSONAL_ACCESS_TOKEN`), not where the operator
//! keeps it (`GITHUB_TOKEN`, a file, `pass`): the table says both. Where the two are the same
//! variable — a secret read from boxmaker's own `GITHUB_TOKEN` handed to a server that reads
//! `GITHUB_TOKEN` — the list form says it once; for a file or a command there is no variable
//! to borrow the name from, and guessing one would hand a server a variable it never reads.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where a secret's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// A variable of boxmaker's own environment (the runner's: the environment of whichever
    /// process started the gate).
    Env(String),
    /// A regular file owned by boxmaker's user and readable by nobody else (mode 0600 or
    /// stricter); its text, one trailing newline dropped.
    File(PathBuf),
    /// A program and its arguments, run without a shell; its standard output, one trailing
    /// newline dropped.
    Command(Vec<String>),
}

impl SecretSource {
    /// Where it comes from, for a person (never the value): `the variable GITHUB_TOKEN`, `the
    /// file /home/me/.gh-token`, `the command pass show gh`.
    pub fn describe(&self) -> String {
        match self {
            SecretSource::Env(v) => format!("the variable {v}"),
            SecretSource::File(p) => format!("the file {}", p.display()),
            SecretSource::Command(argv) => format!("the command `{}`", argv.join(" ")),
        }
    }
}

/// One `[[secret]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    /// `[A-Za-z0-9_-]{1,64}`, unique.
    pub name: String,
    pub source: SecretSource,
    /// The line of its `name` in the file.
    pub line: usize,
}

/// The variables a box gets from boxmaker itself (docs/spec.md §4, §3.6): a secret may not be
/// passed under one of these names, which the box's own value would replace or be replaced by.
pub const RESERVED_VARIABLES: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "TERM",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "NODE_USE_ENV_PROXY",
];

/// The prefix of a header value that names a secret (`headers = { X-Api-Key = "secret:NAME" }`).
pub const HEADER_SECRET_PREFIX: &str = "secret:";

/// How a tool's box is handed secrets: variable name → secret name, in name order.
pub type SecretVars = BTreeMap<String, String>;
