//! Errors of the config file: each is one line that names the file, and where the file
//! has a place to point at, its line and column.

use std::path::PathBuf;

/// Why a config could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// There is no file at `path` (absolute).
    #[error(
        "no config file at {}: write one with `boxmaker init DIR`, or name yours with \
         `--config FILE`", path.display()
    )]
    NotFound { path: PathBuf },
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not a valid config; `message` says what was expected.
    #[error("{origin}:{line}:{column}: {message}")]
    Invalid {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// The file is not a valid config, and there is no one place to point at.
    #[error("{origin}: {message}")]
    Unplaced { origin: String, message: String },
    /// The person never trusted the config at `path` (docs/spec.md §6, "Whose config").
    #[error(
        "the config {} is not one you have trusted: a repository can ship a boxmaker.toml that \
         allows every tool, so boxmaker used nothing of it; read it, then run `{} trust \
         --config {}`",
        path.display(),
        bin.display(),
        path.display()
    )]
    Untrusted { path: PathBuf, bin: PathBuf },
    /// The config at `path` changed since the person trusted it.
    #[error(
        "the config {} changed since you trusted it, so boxmaker used nothing of it (a pull, a \
         script or another program may have changed it): see what changed with `{} trust \
         --diff --config {}`, then, if it is yours, run `{} trust --config {}`",
        path.display(),
        bin.display(),
        path.display(),
        bin.display(),
        path.display()
    )]
    Changed { path: PathBuf, bin: PathBuf },
    /// Whether the person trusted it could not be told (their state home).
    #[error("cannot tell whether you trusted the config {}: {source}", path.display())]
    Trust {
        path: PathBuf,
        source: statedir::file::Error,
    },
}

impl ConfigError {
    /// The config at `path` was never trusted (`bin` names this binary, as a command a
    /// person is told to type does: docs/spec.md §7).
    pub fn untrusted(path: PathBuf) -> ConfigError {
        ConfigError::Untrusted {
            path,
            bin: this_binary(),
        }
    }

    /// The config at `path` changed since it was trusted.
    pub fn changed(path: PathBuf) -> ConfigError {
        ConfigError::Changed {
            path,
            bin: this_binary(),
        }
    }

    /// The 1-based line of the error, where it has one.
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::Invalid { line, .. } => Some(*line),
            _ => None,
        }
    }
}

/// Where errors in one text point: turns byte offsets into lines and columns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    pub text: &'a str,
    pub origin: &'a str,
}

impl Source<'_> {
    /// The 1-based line of byte offset `at`.
    pub fn line_of(&self, at: usize) -> usize {
        line_column(self.text, at).0
    }

    /// An error at byte offset `at` (or with no place, when `at` is `None`). Newlines in
    /// the message are folded so the error stays on one line.
    pub fn error(&self, at: Option<usize>, message: impl Into<String>) -> ConfigError {
        let message = one_line(&message.into());
        let origin = self.origin.to_owned();
        match at {
            Some(at) => {
                let (line, column) = line_column(self.text, at);
                ConfigError::Invalid {
                    origin,
                    line,
                    column,
                    message,
                }
            }
            None => ConfigError::Unplaced { origin, message },
        }
    }
}

fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// 1-based line and column (in characters) of byte offset `at` in `text`. An offset past
/// the end, or inside a character, points at the nearest earlier place.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = text.get(..at).unwrap_or("");
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

/// This binary's absolute path, or its name when that cannot be told.
fn this_binary() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("boxmaker"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_line_column_counts_from_one() {
        let text = "ab\ncd\né x";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 1), (1, 2));
        assert_eq!(line_column(text, 3), (2, 1));
        assert_eq!(line_column(text, 9), (3, 3));
        assert_eq!(line_column(text, 999), (3, 4));
    }

    #[test]
    fn test_error_message_is_one_line() {
        let s = Source {
            text: "x",
            origin: "f.toml",
        };
        let e = s.error(Some(0), "first\n  second\n");
        assert_eq!(e.to_string(), "f.toml:1:1: first; second");
    }
}
