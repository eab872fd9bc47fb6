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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proto::run::RunnerAnswer;
    use std::path::Path;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    struct Lab {
        dir: tempfile::TempDir,
        events: Arc<egress::Egress>,
        seen: Arc<Mutex<Vec<RunnerAnswer>>>,
    }

    fn lab() -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let config = Arc::new(config::parse("", "t.toml", Path::new("/")).unwrap());
        let events = Arc::new(egress::Egress::new(config, Arc::default()));
        let seen: Arc<Mutex<Vec<RunnerAnswer>>> = Arc::default();
        let sink = seen.clone();
        events.set_sink(Arc::new(move |e| sink.lock().unwrap().push(e)));
        Lab { dir, events, seen }
    }

    impl Lab {
        fn absent(&self, names: &[&str]) -> Vec<(PathBuf, PathBuf)> {
            names
                .iter()
                .map(|n| (self.dir.path().join(n), Path::new("/src").join(n)))
                .collect()
        }

        fn watch(&self, names: &[&str]) -> Option<Sentry> {
            let session = SessionId::new("s1").unwrap();
            Sentry::watch(
                self.events.clone(),
                &self.absent(names),
                &session,
                "run",
                None,
            )
        }

        fn aside(&self, name: &str) -> Vec<PathBuf> {
            let prefix = format!("{name}.made-in-a-box-");
            std::fs::read_dir(self.dir.path())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        }

        /// Waits (2 s at most) until `name` is gone.
        fn gone(&self, name: &str) -> bool {
            let until = Instant::now() + Duration::from_secs(2);
            while std::fs::symlink_metadata(self.dir.path().join(name)).is_ok() {
                if Instant::now() > until {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            true
        }
    }

    #[test]
    fn a_name_made_or_renamed_into_place_is_moved_aside_while_watched() {
        let lab = lab();
        let s = lab.watch(&[".mcp.json", ".claude", "other"]).unwrap();
        std::fs::write(lab.dir.path().join(".mcp.json"), "{}").unwrap();
        assert!(lab.gone(".mcp.json"), ".mcp.json was left there");
        std::fs::create_dir(lab.dir.path().join("c")).unwrap();
        std::fs::write(lab.dir.path().join("c/settings.json"), "{}").unwrap();
        std::fs::rename(lab.dir.path().join("c"), lab.dir.path().join(".claude")).unwrap();
        assert!(lab.gone(".claude"), ".claude was left there");
        // A name that is not kept is left alone.
        std::fs::write(lab.dir.path().join("notes"), "x").unwrap();
        let said = s.finish();
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].contains("/src/.mcp.json was made in this box"),
            "{said:?}"
        );
        assert_eq!(lab.aside(".mcp.json").len(), 1);
        let claude = lab.aside(".claude");
        assert_eq!(claude.len(), 1);
        assert!(
            claude[0].join("settings.json").exists(),
            "its bytes were lost"
        );
        assert!(lab.dir.path().join("notes").exists());
        let moved = lab.seen.lock().unwrap();
        assert_eq!(
            moved
                .iter()
                .filter(|e| matches!(e, RunnerAnswer::Moved { .. }))
                .count(),
            2
        );
    }

    #[test]
    fn a_link_made_at_a_name_is_moved_as_a_link_and_what_it_names_is_left() {
        let lab = lab();
        let target = tempfile::tempdir().unwrap();
        std::fs::write(target.path().join("keep"), "mine").unwrap();
        let s = lab.watch(&[".vscode"]).unwrap();
        std::os::unix::fs::symlink(target.path(), lab.dir.path().join(".vscode")).unwrap();
        assert!(lab.gone(".vscode"));
        drop(s);
        let aside = lab.aside(".vscode");
        assert_eq!(aside.len(), 1);
        assert!(std::fs::symlink_metadata(&aside[0]).unwrap().is_symlink());
        assert_eq!(std::fs::read(target.path().join("keep")).unwrap(), b"mine");
    }

    #[test]
    fn a_name_made_over_and_over_is_moved_each_time_and_counted_past_the_reported() {
        let lab = lab();
        let s = lab.watch(&[".mcp.json"]).unwrap();
        let n = REPORTED + 6;
        for _ in 0..n {
            std::fs::write(lab.dir.path().join(".mcp.json"), "{}").unwrap();
            assert!(lab.gone(".mcp.json"));
        }
        let said = s.finish();
        assert_eq!(said.len(), REPORTED + 1, "{said:?}");
        assert_eq!(
            said.last().unwrap(),
            "boxmaker: 6 more kept names made in this box were moved aside the same way"
        );
        assert_eq!(lab.aside(".mcp.json").len(), n);
        assert_eq!(lab.seen.lock().unwrap().len(), REPORTED);
    }

    #[test]
    fn nothing_is_watched_where_nothing_is_absent_or_its_directory_is_not_there() {
        let lab = lab();
        assert!(lab.watch(&[]).is_none());
        assert!(lab.watch(&["gone/.claude"]).is_none());
    }

    #[test]
    fn a_name_already_there_when_the_watch_begins_is_moved_aside() {
        let lab = lab();
        std::fs::write(lab.dir.path().join(".envrc"), "x").unwrap();
        let s = lab.watch(&[".envrc"]).unwrap();
        assert!(!lab.dir.path().join(".envrc").exists());
        assert_eq!(s.finish().len(), 1);
    }
}
