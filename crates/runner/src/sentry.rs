//! `sentry` — the kept names a box could make, watched while the box lives.
//!
//! A writable mount keeps its `read_only` names by binding each one that is there read-only
//! over itself; a name that is not there has nothing to bind, so a box can make it
//! (docs/spec.md §4, "What a writable mount keeps"). The sweep after a call moves such a
//! name aside, but a box lives for a whole `run` call and a server's box between its calls,
//! and a program on the host (the person's agent client reading `.mcp.json` or
//! `.claude/settings.json`, git reading a hooks directory) can read the name meanwhile.
//!
//! **Owns:** one inotify instance per box whose writable mounts have kept names absent when
//! it started, watching the directories those names would be made in, and the thread that
//! reads it: a name made there, or renamed into place, is moved aside
//! ([`crate::run::move_aside`]) as soon as the kernel reports it, not when the call ends.
//!
//! **Must never:** follow a link (a watch is `IN_DONT_FOLLOW | IN_ONLYDIR`, the rename
//! renames the link itself), remove anything, or hold a box or its answer up: the thread
//! is woken to stop by an eventfd, never by a timeout. Where the kernel will not give a
//! watch (the user's inotify limits), stderr says so and the sweep at the call's end is
//! what is left.
//!
//! What it cannot do: make the window nothing. Between the box's `open(O_CREAT)` and this
//! rename, a few microseconds to a millisecond, the name is there; a host program that
//! reads in exactly that moment sees the box's file.

use std::collections::{HashMap, HashSet};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use proto::{CallId, SessionId};
use rustix::event::{PollFd, PollFlags};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

/// The moves one sentry reports each on its own (a `moved` event to the gate, a line in
/// the answer); a box that makes a kept name over and over has the rest moved as well,
/// counted in one line, so it cannot flood the audit log.
pub const REPORTED: usize = 64;

/// A watch over the absent kept names of one box; dropping it (or [`Sentry::finish`])
/// stops its thread at once.
#[derive(Debug)]
pub struct Sentry {
    wake: Arc<OwnedFd>,
    thread: Option<JoinHandle<Vec<String>>>,
}

impl Sentry {
    /// Watches the directories `absent` (host path, path in the box) would be made in, for
    /// a box of `session` running `tool` (for `call`, or `None` for a server's box, which
    /// outlives its calls). `None` when there is nothing to watch or no watch could be set:
    /// what is made is then moved aside by the sweep after the call alone.
    pub fn watch(
        events: Arc<egress::Egress>,
        absent: &[(PathBuf, PathBuf)],
        session: &SessionId,
        tool: &str,
        call: Option<CallId>,
    ) -> Option<Sentry> {
        if absent.is_empty() {
            return None;
        }
        let said_no = |what: &str, e: Errno| {
            eprintln!(
                "boxmaker: the kept names a box of session {session} ({tool}) could make are \
                 not watched while it runs ({what}: {e}); what it makes is moved aside when \
                 its call ends"
            );
        };
        let fd = match inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK) {
            Ok(fd) => fd,
            Err(e) => {
                said_no("inotify_init1", e);
                return None;
            }
        };
        let mut dirs: HashMap<i32, PathBuf> = HashMap::new();
        let mut wanted: HashMap<PathBuf, Vec<(PathBuf, PathBuf)>> = HashMap::new();
        for (host, at) in absent {
            if let Some(parent) = host.parent() {
                wanted
                    .entry(parent.to_path_buf())
                    .or_default()
                    .push((host.clone(), at.clone()));
            }
        }
        for dir in wanted.keys() {
            let flags = WatchFlags::CREATE
                | WatchFlags::MOVED_TO
                | WatchFlags::ONLYDIR
                | WatchFlags::DONT_FOLLOW;
            match inotify::add_watch(&fd, dir.as_path(), flags) {
                Ok(wd) => {
                    dirs.insert(wd, dir.clone());
                }
                // A directory that is not there (or not one): nothing can be made in it
                // but by making it, which the sweep after the call sees.
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => {}
                Err(e) => {
                    said_no("inotify_add_watch", e);
                    return None;
                }
            }
        }
        if dirs.is_empty() {
            return None;
        }
        let wake = match rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        ) {
            Ok(w) => Arc::new(w),
            Err(e) => {
                said_no("eventfd", e);
                return None;
            }
        };
        let mut watch = Watch {
            fd,
            wake: wake.clone(),
            dirs,
            wanted,
            events,
            session: session.clone(),
            tool: tool.to_string(),
            call,
            said: Vec::new(),
            unreported: 0,
        };
        // Anything already there was made between the look and now: moved like the rest.
        watch.pass(None);
        let thread = std::thread::Builder::new()
            .name("sentry".into())
            .spawn(move || watch.run());
        match thread {
            Ok(t) => Some(Sentry {
                wake,
                thread: Some(t),
            }),
            Err(e) => {
                eprintln!(
                    "boxmaker: the kept names a box of session {session} ({tool}) could \
                     make are not watched while it runs (no thread: {e}); what it makes is \
                     moved aside when its call ends"
                );
                None
            }
        }
    }

    /// Stops the watch and says what it moved aside, a line each (at most [`REPORTED`],
    /// then one line counting the rest), for the call's answer.
    pub fn finish(mut self) -> Vec<String> {
        self.stop()
    }

    fn stop(&mut self) -> Vec<String> {
        let Some(t) = self.thread.take() else {
            return Vec::new();
        };
        let _ = rustix::io::write(&*self.wake, &1u64.to_ne_bytes());
        t.join().unwrap_or_default()
    }
}

impl Drop for Sentry {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

struct Watch {
    fd: OwnedFd,
    wake: Arc<OwnedFd>,
    /// Each watch's directory.
    dirs: HashMap<i32, PathBuf>,
    /// The absent names (host path, path in the box), by the directory they would be in.
    wanted: HashMap<PathBuf, Vec<(PathBuf, PathBuf)>>,
    events: Arc<egress::Egress>,
    session: SessionId,
    tool: String,
    call: Option<CallId>,
    said: Vec<String>,
    unreported: usize,
}

impl Watch {
    fn run(mut self) -> Vec<String> {
        // Aligned for `inotify_event` by `Reader::new`; room for many events a read.
        let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
        loop {
            let mut fds = [
                PollFd::new(&self.fd, PollFlags::IN),
                PollFd::new(&*self.wake, PollFlags::IN),
            ];
            match rustix::event::poll(&mut fds, None) {
                Ok(_) => {}
                Err(Errno::INTR) => continue,
                Err(_) => break,
            }
            if !fds[1].revents().is_empty() {
                break;
            }
            // Which names, in which directories, were made; an overflow means any.
            let mut made: HashSet<(PathBuf, Vec<u8>)> = HashSet::new();
            let mut all = false;
            let mut reader = inotify::Reader::new(&self.fd, &mut buf);
            loop {
                match reader.next() {
                    Ok(ev) => {
                        if ev.events().contains(ReadFlags::QUEUE_OVERFLOW) {
                            all = true;
                        } else if let (Some(dir), Some(name)) =
                            (self.dirs.get(&ev.wd()), ev.file_name())
                        {
                            made.insert((dir.clone(), name.to_bytes().to_vec()));
                        }
                    }
                    Err(Errno::INTR) => continue,
                    // Nothing more for now (or a read that failed: look at everything).
                    Err(Errno::AGAIN) => break,
                    Err(_) => {
                        all = true;
                        break;
                    }
                }
            }
            self.pass(if all { None } else { Some(&made) });
        }
        if self.unreported > 0 {
            self.said.push(format!(
                "boxmaker: {} more kept names made in this box were moved aside the same way",
                self.unreported
            ));
        }
        self.said
    }

    /// Moves aside what of the absent names is there: those `made` names, or all of them.
    fn pass(&mut self, made: Option<&HashSet<(PathBuf, Vec<u8>)>>) {
        for (dir, names) in &self.wanted {
            for (host, at) in names {
                if let Some(made) = made {
                    let Some(name) = host.file_name() else {
                        continue;
                    };
                    if !made.contains(&(dir.clone(), name.as_bytes().to_vec())) {
                        continue;
                    }
                }
                let quiet = self.said.len() >= REPORTED;
                if let Some(line) = crate::run::move_aside(
                    &self.events,
                    host,
                    at,
                    &self.session,
                    &self.tool,
                    self.call,
                    quiet,
                ) {
                    if quiet {
                        self.unreported += 1;
                    } else {
                        self.said.push(line);
                    }
                }
            }
        }
    }
}
