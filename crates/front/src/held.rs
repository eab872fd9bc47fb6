//! Approvals as multi round-trip requests (docs/spec.md §5, "Approving in a 2026-07-28
//! client"): MCP 2026-07-28 forbids a server's requests to the client, so an elicitation
//! cannot be sent while a call waits. Instead the call's request is answered with an
//! `input_required` result carrying the same form ([`crate::approve::message`]) and a
//! `requestState`; the client asks the person and retries the same `tools/call` with their
//! answer (`inputResponses`) and the state. The retry decides it.
//!
//! **Who holds the call meanwhile.** The gate holds it, as for every call that waits for a
//! person, on the agent-socket connection the front sent it on; a connection that closes
//! withdraws it (the gate's rule, unchanged). The first request ends, but the *front* keeps
//! that connection open, filed here under its approval id ([`Parked`]), together with a task
//! that reads the gate's final answer into a cell. The retry takes the filing (once: a second
//! retry, or one racing it, finds nothing), passes the answer to the gate over the decision
//! socket (§2.5, bound to the digest of what was shown), and waits in the cell for the final
//! answer. So the call never runs twice (the gate runs it once, whoever decided), a decision
//! on the page or with `boxmaker approve` in between is simply the answer the retry gets,
//! and an approval nobody answers expires in the gate as any other does.
//!
//! **The state** is `rs1.APPROVAL.EXPIRES.MAC`: the approval's id, its expiry (Unix
//! seconds) and the first 16 bytes of HMAC-SHA256 under a key this front made at random
//! (never written anywhere) over a domain separator, the conversation's session, the
//! approval, the tool, the SHA-256 of the exact arguments the gate holds and the expiry. So
//! a state that was forged or altered, that was made for another call (another tool or other
//! arguments), in another conversation, or by another front process (before a restart,
//! whose held calls the gate withdrew when its connections closed) is refused before
//! anything is looked up; one that was already used, or whose call was dropped after it
//! ended, names no filing.

use std::collections::HashMap;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use proto::control::ApprovalInfo;
use proto::{SessionId, Timestamp, ToolResponse};

/// The key of the approval form in `inputRequests` and `inputResponses`.
pub const INPUT_KEY: &str = "boxmaker_approval";

/// What the MAC covers first: a domain separator, so the key signs nothing else.
const DOMAIN: &[u8] = b"boxmaker request-state v1\n";

/// The state's format tag.
const TAG: &str = "rs1";

/// How long a held call's final answer is kept for a retry after it came (the call was
/// decided elsewhere, or expired) before it is dropped.
pub const GRACE: Duration = Duration::from_secs(600);

/// The most calls one front keeps for a retry (the gate's own cap, `max_pending_per_session`,
/// bounds those still waiting; this bounds those whose answer waits for a retry). Past it a
/// call waits on its request, as for a client that cannot be asked.
pub const MAX_PARKED: usize = 256;

/// Why a `requestState` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error(
        "requestState is not one boxmaker made (it is malformed); nothing was decided: call the \
         tool again without it"
    )]
    Malformed,
    #[error(
        "requestState was not made by this front for this call in this conversation (it was \
         altered, belongs to another call or conversation, or predates a restart of the \
         front); nothing was decided: call the tool again without it"
    )]
    Foreign,
}

/// The front's sealing key for `requestState`.
pub struct Sealer {
    key: ring::hmac::Key,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer([key])")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a state binds: the conversation, the approval, the call and the expiry.
#[derive(Debug, Clone, Copy)]
pub struct Bound<'a> {
    pub session: &'a SessionId,
    pub approval: &'a str,
    pub tool: &'a str,
    pub arguments: &'a str,
    pub expires: Timestamp,
}

impl Sealer {
    /// A sealer with a fresh random key (the OS's random source; allowed once confined).
    pub fn new() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)?;
        Ok(Self::from_key(&bytes))
    }

    /// A sealer with `key` (tests).
    pub fn from_key(key: &[u8; 32]) -> Self {
        Self {
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key),
        }
    }

    fn mac(&self, b: &Bound<'_>) -> [u8; 16] {
        let args = ring::digest::digest(&ring::digest::SHA256, b.arguments.as_bytes());
        let mut ctx = ring::hmac::Context::with_key(&self.key);
        ctx.update(DOMAIN);
        // Each part with its length first, so no two bindings share a MAC.
        for part in [
            b.session.as_str().as_bytes(),
            b.approval.as_bytes(),
            b.tool.as_bytes(),
            args.as_ref(),
            &b.expires.0.to_be_bytes(),
        ] {
            ctx.update(&u64::try_from(part.len()).unwrap_or(u64::MAX).to_be_bytes());
            ctx.update(part);
        }
        let tag = ctx.sign();
        let mut out = [0u8; 16];
        out.copy_from_slice(&tag.as_ref()[..16]);
        out
    }

    /// The `requestState` for `b`.
    pub fn seal(&self, b: &Bound<'_>) -> String {
        format!("{TAG}.{}.{}.{}", b.approval, b.expires.0, hex(&self.mac(b)))
    }

    /// The approval and expiry `state` names, when this sealer made it for this session's
    /// call of `tool` with `arguments`; checked in constant time.
    pub fn open(
        &self,
        state: &str,
        session: &SessionId,
        tool: &str,
        arguments: &str,
    ) -> Result<(String, Timestamp), StateError> {
        let mut parts = state.split('.');
        let (Some(TAG), Some(approval), Some(expires), Some(mac), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(StateError::Malformed);
        };
        let well_formed_id = approval.len() <= 64
            && approval
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let expires = expires
            .parse::<u64>()
            .ok()
            .filter(|_| well_formed_id && mac.len() == 32);
        let Some(expires) = expires.map(Timestamp) else {
            return Err(StateError::Malformed);
        };
        let want = hex(&self.mac(&Bound {
            session,
            approval,
            tool,
            arguments,
            expires,
        }));
        let same = want
            .bytes()
            .zip(mac.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
        if !same {
            return Err(StateError::Foreign);
        }
        Ok((approval.to_string(), expires))
    }
}

/// The gate's final answer for a parked call, once it came (`Err`: the connection failed).
pub type Final = Option<Result<ToolResponse, String>>;

/// A call whose request was answered `input_required` while the gate holds it.
#[derive(Debug)]
pub struct Parked {
    /// The tool and the exact arguments the gate holds (the retry must be the same call).
    pub tool: String,
    pub arguments: String,
    /// What the person was shown, and the digest to decide it with.
    pub shown: (ApprovalInfo, String),
    /// The gate's final answer, when it comes.
    pub answer: tokio::sync::watch::Receiver<Final>,
    /// The call's connection, to withdraw it (shut it) when a retry is cancelled.
    pub cancel: UnixStream,
    /// Progress notifications already sent for the call.
    pub step: f64,
}

/// The calls one front holds for a retry, by approval id.
#[derive(Debug, Default)]
pub struct Table {
    parked: Mutex<HashMap<String, Parked>>,
}

impl Table {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Files `parked` under `approval`, or gives it back when [`MAX_PARKED`] are held.
    pub fn park(&self, approval: &str, parked: Parked) -> Result<(), Box<Parked>> {
        let mut t = self.lock();
        if t.len() >= MAX_PARKED || t.contains_key(approval) {
            return Err(Box::new(parked));
        }
        t.insert(approval.to_string(), parked);
        Ok(())
    }

    /// Takes the call filed under `approval` (once).
    pub fn take(&self, approval: &str) -> Option<Parked> {
        self.lock().remove(approval)
    }

    /// How many calls are filed.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops the filing of `approval` [`GRACE`] after its final answer came, unless a retry
    /// took it first. Runs as a task of its own.
    pub async fn forget_when_done(
        table: Weak<Table>,
        approval: String,
        mut answer: tokio::sync::watch::Receiver<Final>,
    ) {
        while answer.borrow_and_update().is_none() {
            if answer.changed().await.is_err() {
                break;
            }
        }
        tokio::time::sleep(GRACE).await;
        if let Some(t) = table.upgrade() {
            t.take(&approval);
        }
    }
}

/// Waits for the final answer in `answer`.
pub async fn final_answer(
    answer: &mut tokio::sync::watch::Receiver<Final>,
) -> Result<ToolResponse, String> {
    loop {
        if let Some(done) = answer.borrow_and_update().clone() {
            return done;
        }
        if answer.changed().await.is_err() {
            return Err("the call's connection to the gate ended before its answer".into());
        }
    }
}

/// Keeps the filing table alive for the tasks that forget filings.
pub fn weak(table: &Arc<Table>) -> Weak<Table> {
    Arc::downgrade(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound<'a>(s: &'a SessionId, tool: &'a str, args: &'a str) -> Bound<'a> {
        Bound {
            session: s,
            approval: "ap-0123456789abcdef",
            tool,
            arguments: args,
            expires: Timestamp(2_000_000_000),
        }
    }

    #[test]
    fn a_sealed_state_opens_only_for_its_call_in_its_conversation() {
        let sealer = Sealer::from_key(&[7; 32]);
        let s = SessionId::new("mcp-0000000000000001").unwrap();
        let other = SessionId::new("mcp-0000000000000002").unwrap();
        let args = r#"{"argv":["/bin/echo","hi"]}"#;
        let state = sealer.seal(&bound(&s, "run", args));
        assert_eq!(
            sealer.open(&state, &s, "run", args),
            Ok(("ap-0123456789abcdef".to_string(), Timestamp(2_000_000_000)))
        );
        // Another conversation, another tool, other arguments, another front's key.
        assert_eq!(
            sealer.open(&state, &other, "run", args),
            Err(StateError::Foreign)
        );
        assert_eq!(
            sealer.open(&state, &s, "share", args),
            Err(StateError::Foreign)
        );
        assert_eq!(
            sealer.open(&state, &s, "run", r#"{"argv":["/bin/rm","-rf","/work"]}"#),
            Err(StateError::Foreign)
        );
        assert_eq!(
            Sealer::from_key(&[8; 32]).open(&state, &s, "run", args),
            Err(StateError::Foreign)
        );
        // Altered: another approval, a later expiry, a flipped MAC digit.
        let parts: Vec<&str> = state.split('.').collect();
        for forged in [
            format!("rs1.ap-fedcba9876543210.{}.{}", parts[2], parts[3]),
            format!("rs1.{}.2000000001.{}", parts[1], parts[3]),
            format!(
                "rs1.{}.{}.{}{}",
                parts[1],
                parts[2],
                if parts[3].starts_with('0') { "1" } else { "0" },
                &parts[3][1..]
            ),
        ] {
            assert_eq!(
                sealer.open(&forged, &s, "run", args),
                Err(StateError::Foreign),
                "{forged}"
            );
        }
        for malformed in [
            "",
            "rs1",
            "rs2.ap-1.1.00",
            &format!("{state}.x"),
            &format!("rs1.{}.{}.{}", parts[1], "-1", parts[3]),
            &format!("rs1.ap/../x.{}.{}", parts[2], parts[3]),
            &format!("rs1.{}.{}.{}", parts[1], parts[2], &parts[3][..30]),
        ] {
            assert_eq!(
                sealer.open(malformed, &s, "run", args),
                Err(StateError::Malformed),
                "{malformed}"
            );
        }
    }

    #[test]
    fn a_filing_is_taken_once() {
        let t = Table::default();
        let (_tx, rx) = tokio::sync::watch::channel(None);
        let (a, _b) = UnixStream::pair().unwrap();
        let parked = Parked {
            tool: "run".into(),
            arguments: "{}".into(),
            shown: (
                ApprovalInfo {
                    id: "ap-1".into(),
                    session: SessionId::new("mcp-1").unwrap(),
                    call: proto::CallId(1),
                    tool: "run".into(),
                    arguments: "{}".into(),
                    reason: proto::control::ApprovalReason::GrantAsk,
                    class: proto::DataClass::Public,
                    untrusted: false,
                    created: Timestamp(1),
                    expires: Timestamp(2),
                    state: proto::control::ApprovalState::Pending,
                    files: Vec::new(),
                    concerns: Vec::new(),
                },
                "digest".into(),
            ),
            answer: rx,
            cancel: a,
            step: 0.0,
        };
        assert!(t.park("ap-1", parked).is_ok());
        assert_eq!(t.len(), 1);
        assert!(t.take("ap-1").is_some());
        assert!(t.take("ap-1").is_none());
        assert!(t.is_empty());
    }
}
