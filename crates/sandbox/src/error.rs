//! The crate's one error type. Every variant carries the context a reader of a log needs to
//! know what was being attempted, and the OS error where there is one.

use std::io;
use std::path::PathBuf;

/// Why a box could not be built, run or probed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call failed. `call` names it, `context` says on what.
    #[error("{call}({context}): {source}")]
    Syscall {
        call: &'static str,
        context: String,
        #[source]
        source: io::Error,
    },
    /// A mount step failed while building the box's root.
    #[error("mount {what} at {target}: {source}")]
    Mount {
        what: String,
        target: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Reading or writing a file of the host failed (maps, cgroup files, /etc files).
    #[error("{context} {path}: {source}")]
    File {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The spec asks for something the box refuses to build.
    #[error("invalid box spec: {0}")]
    InvalidSpec(String),
    /// A protection the spec requires is not enforced by this machine. Fail closed.
    #[error("required protection `{protection}` is unavailable: {reason}")]
    Unavailable {
        protection: &'static str,
        reason: String,
    },
    /// Landlock rejected the ruleset.
    #[error("landlock: {0}")]
    Landlock(String),
    /// The seccomp filter could not be compiled.
    #[error("seccomp filter: {0}")]
    Seccomp(String),
    /// The box reported a failure while setting itself up (or exec of the command failed).
    #[error("box setup failed: {0}")]
    Setup(String),
    /// The helper process misbehaved: bad frame, died without a report, could not start.
    #[error("sandbox helper: {0}")]
    Helper(String),
    /// I/O with the helper process failed.
    #[error("sandbox helper I/O ({context}): {source}")]
    HelperIo {
        context: &'static str,
        #[source]
        source: io::Error,
    },
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
