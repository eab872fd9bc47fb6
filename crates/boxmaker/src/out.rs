//! What the commands print, without ever panicking (docs/spec.md §7: a reader that goes
//! away). `println!` panics when stdout cannot be written — `boxmaker sessions | head -1`,
//! once `head` has exited, is a closed pipe — and `eprintln!` likewise for stderr. Every
//! line this binary prints goes through [`outln!`], [`out!`] or [`errln!`] instead (the crate
//! root denies `clippy::print_stdout` and `clippy::print_stderr`, so nothing else compiles
//! through the gate).
//!
//! - stdout whose reader has gone (`EPIPE`): the command ends at once, quietly, with status
//!   [`BROKEN_PIPE`] — what a shell reports for a program killed by `SIGPIPE`, so a script
//!   with `set -o pipefail` sees boxmaker as it sees `cat`. Nothing is said: nobody asked
//!   for the rest.
//! - stdout that fails otherwise (a full disk): one sentence on stderr, status 1.
//! - stderr that fails: nothing can be said anywhere; the line is dropped and the command
//!   goes on (a gate must not stop because its log reader went away).

use std::fmt;
use std::io::{self, Write};

/// Exit status when stdout's reader went away: 128 + SIGPIPE, as a shell shows it.
pub const BROKEN_PIPE: u8 = 141;

/// Writes `args` to stdout and flushes, or ends the process as the module says.
pub fn stdout(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        drop(out);
        stdout_failed(&e);
    }
}

/// Writes `bytes` to stdout as they are and flushes, or ends the process as the module says.
pub fn stdout_bytes(bytes: &[u8]) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        drop(out);
        stdout_failed(&e);
    }
}

/// Writes `args` to stderr; a failure is dropped (there is nowhere left to report it).
pub fn stderr(args: fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_fmt(args);
}

fn stdout_failed(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(i32::from(BROKEN_PIPE));
    }
    stderr(format_args!("boxmaker: cannot write to stdout: {e}\n"));
    std::process::exit(i32::from(crate::error::FAILURE));
}

/// `println!` that never panics: see the module.
macro_rules! outln {
    () => { $crate::out::stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::out::stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` that never panics: see the module.
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::stdout(format_args!($($arg)*)) };
}

/// `eprintln!` that never panics: see the module.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::out::stderr(format_args!("{}\n", format_args!($($arg)*))) };
}
