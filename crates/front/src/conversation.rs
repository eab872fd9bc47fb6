//! Which conversation an HTTP request belongs to (docs/spec.md §5, "A conversation over HTTP").
//!
//! MCP 2026-07-28 has no session: a request carries no `Mcp-Session-Id`, and rmcp serves it
//! with a handler made for it alone. A boxmaker session is what holds a conversation's taint,
//! provenance, approvals and box, so a request that started a fresh one would shed all of
//! them — a client that read confidential data could post it to a public sink on its next
//! request. So over HTTP **a conversation is a credential**: every request, of either
//! protocol era, that carries credential `C` is a request of `C`'s conversation and of no
//! other. Nothing a client sends (a header dropped or added, an era switched, a legacy
//! `initialize`) takes it to another conversation; only another credential does, and
//! credentials are minted by the operator ([`Credentials::mint`], from the state directory's
//! `http.key`, which no client reaches).
//!
//! A credential is `CONV.MAC`: `CONV` the conversation's 16 hex digits (its session is
//! `mcp-CONV`), `MAC` the first 16 bytes of HMAC-SHA256 under the front's key over
//! `boxmaker conversation v1\n` and `CONV`, in hex. It is checked in constant time; a
//! forged or mangled one, or one made under another key, is refused like no credential.
//! Possession is the conversation, as a legacy session id was: a copied credential speaks
//! for its conversation, which is why it is a bearer secret kept `0600`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use proto::SessionId;

use crate::server::Front;

/// What the MAC covers before the conversation's digits: a domain separator, so the key
/// can never be made to sign anything else boxmaker might one day sign with it.
const DOMAIN: &[u8] = b"boxmaker conversation v1\n";

/// How many conversations one front serves at once. Each holds a lock on its live file and
/// up to four idle gate connections; past this a new credential is refused (503), never
/// served in another conversation.
pub const MAX_CONVERSATIONS: usize = 1024;

/// Why a credential or a key was refused.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("the HTTP key must be 64 hex digits (32 bytes); this one is not")]
    BadKey,
    #[error("no randomness for a new conversation: {0}")]
    Random(String),
}

/// The front's key: it signs and checks conversation credentials.
#[derive(Clone)]
pub struct Credentials {
    key: ring::hmac::Key,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials([key])")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2)
        || !s
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A fresh key, as the 64 hex digits `http.key` holds.
pub fn new_key() -> Result<String, CredentialError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| CredentialError::Random(e.to_string()))?;
    Ok(hex(&bytes))
}

impl Credentials {
    /// The credentials of `key` (64 lowercase hex digits, as `http.key` holds them).
    pub fn from_hex(key: &str) -> Result<Self, CredentialError> {
        let bytes = unhex(key.trim()).ok_or(CredentialError::BadKey)?;
        if bytes.len() != 32 {
            return Err(CredentialError::BadKey);
        }
        Ok(Self {
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &bytes),
        })
    }

    fn mac(&self, conv: &str) -> [u8; 16] {
        let mut ctx = ring::hmac::Context::with_key(&self.key);
        ctx.update(DOMAIN);
        ctx.update(conv.as_bytes());
        let tag = ctx.sign();
        let mut out = [0u8; 16];
        out.copy_from_slice(&tag.as_ref()[..16]);
        out
    }

    /// A credential for a new conversation (16 random hex digits), and its session.
    pub fn mint(&self) -> Result<(String, SessionId), CredentialError> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| CredentialError::Random(e.to_string()))?;
        let conv = hex(&bytes);
        let session = SessionId::new(format!("mcp-{conv}"))
            .map_err(|e| CredentialError::Random(e.to_string()))?;
        Ok((format!("{conv}.{}", hex(&self.mac(&conv))), session))
    }

    /// The session of the conversation `credential` names, when it was made under this key;
    /// else `None`. The comparison takes the same time whatever the credential holds.
    pub fn conversation(&self, credential: &str) -> Option<SessionId> {
        let (conv, mac) = credential.split_once('.')?;
        if conv.len() != 16 || unhex(conv).is_none() {
            return None;
        }
        let given = unhex(mac)?;
        let want = self.mac(conv);
        if given.len() != want.len()
            || given
                .iter()
                .zip(want)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                != 0
        {
            return None;
        }
        SessionId::new(format!("mcp-{conv}")).ok()
    }
}

/// The conversations one HTTP front serves: a [`Front`] per credential's conversation, made
/// when its first request arrives and kept while the front runs (its session's live file
/// held, so its remembered approvals last as long as the front; docs/spec.md §6).
pub struct Conversations {
    credentials: Credentials,
    make: Box<dyn Fn(SessionId) -> Result<Front, std::io::Error> + Send + Sync>,
    fronts: Mutex<HashMap<SessionId, Front>>,
    /// Which conversation made each legacy MCP session (`Mcp-Session-Id`): a request naming
    /// a session is served only with that conversation's credential.
    legacy: Mutex<HashMap<String, SessionId>>,
}

impl std::fmt::Debug for Conversations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversations").finish_non_exhaustive()
    }
}

/// Why a request was not given a conversation.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// No credential, or one not made under this front's key: 401.
    Credential,
    /// A legacy session that another conversation made (or none did): 404, as an unknown
    /// session is, so nothing is learnt of other conversations.
    Session,
    /// [`MAX_CONVERSATIONS`] are served already: 503.
    Full,
    /// The conversation's front could not be made (its live file): 503.
    Unavailable(String),
}

/// Legacy sessions remembered at most (each is a few dozen bytes); past it the oldest
/// binding is dropped, and a request naming that session is refused (the client starts a
/// new MCP session, in the same conversation).
const MAX_LEGACY: usize = 16 * 1024;

impl Conversations {
    /// Conversations under `credentials`; `make` makes the front of a conversation's session.
    pub fn new(
        credentials: Credentials,
        make: impl Fn(SessionId) -> Result<Front, std::io::Error> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            credentials,
            make: Box::new(make),
            fronts: Mutex::new(HashMap::new()),
            legacy: Mutex::new(HashMap::new()),
        })
    }

    /// The front a request with bearer `credential` (and, for a legacy session's request,
    /// `mcp_session`) is served by.
    pub fn front_for(
        &self,
        credential: Option<&str>,
        mcp_session: Option<&str>,
    ) -> Result<Front, Refused> {
        let session = credential
            .and_then(|c| self.credentials.conversation(c))
            .ok_or(Refused::Credential)?;
        if let Some(mcp) = mcp_session {
            let legacy = self.legacy.lock().unwrap_or_else(PoisonError::into_inner);
            if legacy.get(mcp) != Some(&session) {
                return Err(Refused::Session);
            }
        }
        let mut fronts = self.fronts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = fronts.get(&session) {
            return Ok(f.clone());
        }
        if fronts.len() >= MAX_CONVERSATIONS {
            return Err(Refused::Full);
        }
        let front =
            (self.make)(session.clone()).map_err(|e| Refused::Unavailable(e.to_string()))?;
        fronts.insert(session, front.clone());
        Ok(front)
    }

    /// Remembers that `mcp_session` (a legacy `Mcp-Session-Id` rmcp just issued) belongs to
    /// `conversation`.
    pub fn bind_legacy(&self, mcp_session: &str, conversation: &SessionId) {
        let mut legacy = self.legacy.lock().unwrap_or_else(PoisonError::into_inner);
        if legacy.len() >= MAX_LEGACY
            && let Some(k) = legacy.keys().next().cloned()
        {
            legacy.remove(&k);
        }
        legacy.insert(mcp_session.to_string(), conversation.clone());
    }

    /// Forgets a legacy session the client ended (`DELETE`).
    pub fn end_legacy(&self, mcp_session: &str) {
        self.legacy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(mcp_session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds() -> Credentials {
        Credentials::from_hex(&"ab".repeat(32)).unwrap()
    }

    #[test]
    fn a_minted_credential_names_its_conversation() {
        let c = creds();
        let (cred, session) = c.mint().unwrap();
        assert_eq!(c.conversation(&cred), Some(session.clone()));
        assert!(session.as_str().starts_with("mcp-"));
        assert!(statedir::live::is_connection_session(session.as_str()));
        let (other, s2) = c.mint().unwrap();
        assert_ne!(session, s2);
        assert_eq!(c.conversation(&other), Some(s2));
    }

    #[test]
    fn forged_swapped_and_foreign_credentials_name_no_conversation() {
        let c = creds();
        let (cred, _) = c.mint().unwrap();
        let (conv, mac) = cred.split_once('.').unwrap();
        let (other, _) = c.mint().unwrap();
        let (other_conv, other_mac) = other.split_once('.').unwrap();
        let flipped = {
            let mut m = mac.as_bytes().to_vec();
            m[0] = if m[0] == b'0' { b'1' } else { b'0' };
            String::from_utf8(m).unwrap()
        };
        let foreign = Credentials::from_hex(&"cd".repeat(32)).unwrap();
        for bad in [
            String::new(),
            conv.to_string(),
            format!("{conv}."),
            format!("{conv}.{flipped}"),
            format!("{conv}.{other_mac}"),
            format!("{other_conv}.{mac}"),
            format!("{}.{mac}", conv.to_uppercase()),
            format!("{conv}.{}", mac.to_uppercase()),
            format!("{conv}.{mac}00"),
            format!("{conv}.{}", &mac[..mac.len() - 2]),
            format!("{conv}0.{mac}"),
            format!("{cred}.{mac}"),
            format!(" {cred}"),
            "0".repeat(64),
        ] {
            assert_eq!(c.conversation(&bad), None, "{bad:?}");
        }
        assert_eq!(foreign.conversation(&cred), None);
    }

    #[test]
    fn keys_are_64_lowercase_hex_digits() {
        assert!(Credentials::from_hex(&new_key().unwrap()).is_ok());
        for bad in [
            "",
            "ab",
            &"AB".repeat(32),
            &"zz".repeat(32),
            &"ab".repeat(33),
        ] {
            assert!(Credentials::from_hex(bad).is_err(), "{bad}");
        }
    }
}
