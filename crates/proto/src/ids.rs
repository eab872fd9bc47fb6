//! Identifiers and labels that cross the wire (docs/spec.md §2.1).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The longest session id, in bytes.
pub const SESSION_ID_MAX: usize = 128;

/// A session's name: 1 to 128 bytes of ASCII letters, digits, `-`, `_`, `.`, `:`, starting
/// with a letter or digit.
///
/// A session id names a box directory and a database key, so it is checked when it is made
/// or decoded, never later: a `SessionId` value is always valid.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String")]
pub struct SessionId(String);

/// Why a string is not a [`SessionId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionIdError {
    #[error("a session id may not be empty")]
    Empty,
    #[error("a session id is at most {SESSION_ID_MAX} bytes, this one is {0}")]
    TooLong(usize),
    #[error("a session id must start with an ASCII letter or digit, not {0:?}")]
    BadFirst(char),
    #[error(
        "a session id may hold only ASCII letters, digits, '-', '_', '.' and ':', \
         but byte {at} is {found:?}"
    )]
    BadChar { at: usize, found: char },
}

impl SessionId {
    /// Checks `s` and makes it a session id.
    pub fn new(s: impl Into<String>) -> Result<Self, SessionIdError> {
        let s = s.into();
        Self::check(&s)?;
        Ok(Self(s))
    }

    fn check(s: &str) -> Result<(), SessionIdError> {
        let mut chars = s.char_indices();
        let Some((_, first)) = chars.next() else {
            return Err(SessionIdError::Empty);
        };
        if s.len() > SESSION_ID_MAX {
            return Err(SessionIdError::TooLong(s.len()));
        }
        if !first.is_ascii_alphanumeric() {
            return Err(SessionIdError::BadFirst(first));
        }
        for (at, c) in chars {
            if !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')) {
                return Err(SessionIdError::BadChar { at, found: c });
            }
        }
        Ok(())
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SessionId {
    type Error = SessionIdError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl FromStr for SessionId {
    type Err = SessionIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A call's number within its session. A JSON number.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct CallId(pub u64);

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Whole seconds since the Unix epoch, UTC. A JSON number.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// The timestamp `secs` seconds later, saturating at the end of time.
    pub fn plus(self, secs: u64) -> Self {
        Self(self.0.saturating_add(secs))
    }

    /// The time of a `SystemTime` (the caller reads the clock; proto does no I/O).
    /// A time before the epoch is the epoch.
    pub fn from_system_time(t: std::time::SystemTime) -> Self {
        Self(
            t.duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        )
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// How private a piece of data is: `public` < `internal` < `confidential` < `secret`.
///
/// Decoded only from one of the four strings (never from an object or a number).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum DataClass {
    #[default]
    Public,
    Internal,
    Confidential,
    Secret,
}

crate::strict::wire_names!(DataClass, "data class", "public, internal, confidential or secret", {
    Public => "public",
    Internal => "internal",
    Confidential => "confidential",
    Secret => "secret",
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_id_accepts_every_allowed_byte() {
        let id = SessionId::new("aZ09-_.:x").unwrap();
        assert_eq!(id.as_str(), "aZ09-_.:x");
        assert!(SessionId::new("a".repeat(SESSION_ID_MAX)).is_ok());
    }

    #[test]
    fn session_id_rejects_bad_forms() {
        assert_eq!(SessionId::new(""), Err(SessionIdError::Empty));
        assert_eq!(
            SessionId::new("a".repeat(SESSION_ID_MAX + 1)),
            Err(SessionIdError::TooLong(SESSION_ID_MAX + 1))
        );
        assert_eq!(SessionId::new("-a"), Err(SessionIdError::BadFirst('-')));
        assert_eq!(SessionId::new(".."), Err(SessionIdError::BadFirst('.')));
        assert_eq!(
            SessionId::new("a/b"),
            Err(SessionIdError::BadChar { at: 1, found: '/' })
        );
        assert!(SessionId::new("a b").is_err());
        assert!(SessionId::new("a\0").is_err());
        assert!(SessionId::new("é").is_err());
    }

    #[test]
    fn data_class_is_ordered_and_round_trips_its_name() {
        assert!(DataClass::Public < DataClass::Internal);
        assert!(DataClass::Internal < DataClass::Confidential);
        assert!(DataClass::Confidential < DataClass::Secret);
        for &c in DataClass::ALL {
            assert_eq!(c.as_str().parse::<DataClass>(), Ok(c));
        }
        assert!("Secret".parse::<DataClass>().is_err());
    }
}
