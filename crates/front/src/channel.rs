//! The confined front's one way to the gate (docs/spec.md §1): a socketpair to the process
//! that started it (`boxmaker mcp`, the launcher), over which the front asks for a
//! connection and gets one back as a descriptor (`SCM_RIGHTS`). The front then needs no
//! `socket` or `connect` at all — its seccomp filter refuses both — so it can reach nothing
//! but what the launcher hands it: a connection to the gate's agent socket, never the
//! control socket, never the network.
//!
//! ```text
//! front ── 'c' ──────────────────────────────▶ launcher: finds (or starts) a gate, connects
//! front ◀── 'k' + SCM_RIGHTS(agent connection) ─┘  (or 'e' + one line: why not)
//! front ── 'd' ─▶ the same, for the gate's decision socket (only with `approve_in_client`)
//! front ── 'p' + SESSION (20 bytes) ─▶ launcher: holds the connection session live
//! front ◀── 'k' + SCM_RIGHTS(its lock file) ──┘  (statedir::live; the front keeps it open
//!                                                  for as long as the session lasts)
//! ```
//!
//! Both halves live here, so the protocol is written once.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, PoisonError};

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use crate::gatecall::{Connector, GateCallError};

/// The longest reason the launcher sends when it cannot connect.
const MAX_REASON: usize = 1024;

fn broken(e: impl std::fmt::Display) -> GateCallError {
    GateCallError::Connect {
        path: "the launcher's channel".into(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// The agent socket (`'c'`): every tool call.
    Agent,
    /// The decision socket (`'d'`): showing and deciding the session's own approvals.
    Decide,
    /// The lock that keeps a connection session live (`'p'` and the session's 20 bytes,
    /// `mcp-` and 16 hex digits; `statedir::live`).
    Live(String),
}

/// The length of a connection session's name: `mcp-` and 16 hex digits.
const LIVE_NAME: usize = 20;

impl Kind {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Kind::Agent => b"c".to_vec(),
            Kind::Decide => b"d".to_vec(),
            Kind::Live(session) => {
                let mut b = b"p".to_vec();
                b.extend(session.bytes());
                b
            }
        }
    }
}

/// The front's side of the channel, shared by every connector made from it.
#[derive(Debug, Clone)]
pub struct Channel(Arc<Mutex<UnixStream>>);

impl Channel {
    pub fn new(stream: UnixStream) -> Self {
        Channel(Arc::new(Mutex::new(stream)))
    }

    /// Asks the launcher for one connection of `kind`. One request at a time (calls run on
    /// several threads).
    pub fn ask(&self, kind: Kind) -> Result<UnixStream, GateCallError> {
        ask(&self.0, &kind).map(UnixStream::from)
    }

    /// Asks the launcher to hold connection session `session` live: the descriptor it hands
    /// back keeps it so until it is closed (in every process that has a copy).
    pub fn hold_live(&self, session: &str) -> Result<OwnedFd, GateCallError> {
        if session.len() != LIVE_NAME || !session.starts_with("mcp-") {
            return Err(broken(format!("{session:?} is not a connection session")));
        }
        ask(&self.0, &Kind::Live(session.to_string()))
    }
}

/// The front's side: asks the launcher on `channel` for one connection to the gate's agent
/// socket.
pub fn connector(channel: Channel) -> Connector {
    Arc::new(move || channel.ask(Kind::Agent))
}

fn ask(channel: &Mutex<UnixStream>, kind: &Kind) -> Result<OwnedFd, GateCallError> {
    {
        let ch = channel.lock().unwrap_or_else(PoisonError::into_inner);
        let request = kind.bytes();
        let mut sent = 0;
        while sent < request.len() {
            let rest = request.get(sent..).unwrap_or_default();
            sent += rustix::net::send(&*ch, rest, SendFlags::NOSIGNAL).map_err(broken)?;
        }
        let mut byte = [0u8; 1 + MAX_REASON];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = rustix::net::recvmsg(
            &*ch,
            &mut [IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )
        .map_err(broken)?;
        let mut fds = Vec::new();
        for msg in control.drain() {
            if let RecvAncillaryMessage::ScmRights(rights) = msg {
                fds.extend(rights);
            }
        }
        let text = byte.get(1..got.bytes).unwrap_or_default();
        match (byte.first(), got.bytes, fds.len()) {
            (_, 0, _) => Err(broken("the launcher is gone")),
            (Some(b'k'), _, 1) => Ok(fds.remove(0)),
            (Some(b'e'), _, 0) => Err(GateCallError::Connect {
                path: "the gate".into(),
                source: std::io::Error::other(String::from_utf8_lossy(text).into_owned()),
            }),
            _ => Err(broken("the launcher answered out of turn")),
        }
    }
}

/// The launcher's side: answers each request on `channel` with a descriptor from
/// `connect` (a connection, or a session's lock file) or why there is none, until the front
/// closes it.
pub fn serve(channel: impl AsFd, connect: impl Fn(Kind) -> Result<OwnedFd, String>) {
    let channel = channel.as_fd();
    let mut byte = [0u8; 1];
    loop {
        let kind = match rustix::net::recv(channel, &mut byte, RecvFlags::empty()) {
            Ok((0, _)) | Err(_) => return,
            Ok(_) if byte[0] == b'c' => Kind::Agent,
            Ok(_) if byte[0] == b'd' => Kind::Decide,
            Ok(_) if byte[0] == b'p' => {
                let mut name = [0u8; LIVE_NAME];
                let mut got = 0;
                while got < LIVE_NAME {
                    match rustix::net::recv(
                        channel,
                        name.get_mut(got..).unwrap_or_default(),
                        RecvFlags::empty(),
                    ) {
                        Ok((0, _)) | Err(_) => return,
                        Ok((n, _)) => got += n,
                    }
                }
                match std::str::from_utf8(&name) {
                    Ok(s) => Kind::Live(s.to_string()),
                    Err(_) => return,
                }
            }
            // Anything else is not the front speaking as it should: stop serving it.
            Ok(_) => return,
        };
        let sent = match connect(kind) {
            Ok(stream) => {
                let fds = [stream.as_fd()];
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
                let mut control = SendAncillaryBuffer::new(&mut space);
                if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
                    return;
                }
                rustix::net::sendmsg(
                    channel,
                    &[IoSlice::new(b"k")],
                    &mut control,
                    SendFlags::NOSIGNAL,
                )
            }
            Err(why) => {
                let mut msg = b"e".to_vec();
                msg.extend(why.bytes().take(MAX_REASON));
                rustix::net::send(channel, &msg, SendFlags::NOSIGNAL)
            }
        };
        if sent.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_connection_crosses_the_channel_and_a_refusal_says_why() {
        let (front, launcher) = UnixStream::pair().unwrap();
        let t = std::thread::spawn(move || {
            let n = std::sync::atomic::AtomicUsize::new(0);
            serve(&launcher, |kind| {
                if kind == Kind::Decide {
                    return Err("approving in the client is off".into());
                }
                if n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    let (mine, theirs) = UnixStream::pair().unwrap();
                    std::thread::spawn(move || {
                        let mut m = mine;
                        m.write_all(b"from the gate").unwrap();
                    });
                    Ok(theirs.into())
                } else {
                    Err("no gate answered".into())
                }
            });
        });
        let channel = Channel::new(front);
        let connect = connector(channel.clone());
        let e = channel.ask(Kind::Decide).unwrap_err().to_string();
        assert!(e.contains("approving in the client is off"), "{e}");
        let mut s = connect().unwrap();
        let mut got = String::new();
        s.read_to_string(&mut got).unwrap();
        assert_eq!(got, "from the gate");
        let e = connect().unwrap_err().to_string();
        assert!(e.contains("no gate answered"), "{e}");
        drop(connect);
        drop(channel);
        t.join().unwrap();
    }
}
