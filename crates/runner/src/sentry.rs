//! `sentry` — the kept names a box could make, watched while the box lives.
//!
//! A writable mount keeps its `read_only` names by binding each one that is there read-only
//! over itself; a name that is not there has nothing to bind, so a box can make it
//! (docs/spec.md §4, "What a writable mount keeps"). The sweep after a call moves such a
//! name aside, but a box lives for a whole `run` call and a server's box between its calls,
//! and a program on the host (the person's agent client reading `.mcp.json` or
//! `.claude/settings.json`, git reading a hooks directory) can read the name meanwhile.
//!
//! **Owns:** one inotify instance per runner ([`Sentries`], made when the runner role
//! starts, where its config has a writable mount, and its one thread that reads it), and a watch on each directory a box's absent kept
//! names would be made in, for as long as that box lives ([`Sentry`]): a name made there, or
//! renamed into place, is moved aside ([`move_aside`]) as soon as the kernel
//! reports it, not when the call ends.
//!
//! **Must never:** follow a link (a watch is `IN_DONT_FOLLOW | IN_ONLYDIR`, the rename
//! renames the link itself), remove anything, or hold a box or its answer up. One instance
//! for the runner, not one a box: closing an inotify instance waits for the kernel to free
//! its marks (4.4 ms a box, measured), and the user's instances are few (128 by default)
//! and shared with every program they run, a box's included. Where the kernel will not give
//! a watch, stderr says so and the sweep at the call's end is what is left.
//!
//! What it cannot do: make the window nothing. Between the box's `open(O_CREAT)` and this
//! rename, a few microseconds to a millisecond, the name is there; a host program that
//! reads in exactly that moment sees the box's file.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use proto::{CallId, SessionId};
use rustix::event::{EventfdFlags, PollFd, PollFlags};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

/// The moves one box's sentry reports each on its own (a `moved` event to the gate, a line
/// in the answer); a box that makes a kept name over and over has the rest moved as well,
/// counted in one line, so it cannot flood the audit log.
pub const REPORTED: usize = 64;

/// What a watch asks the kernel for.
const WATCH: WatchFlags = WatchFlags::CREATE
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::DONT_FOLLOW);

/// A runner's inotify instance and the boxes watched through it; made at once
/// ([`Sentries::start`]) or at the first box that needs it.
#[derive(Debug, Default)]
pub struct Sentries {
    shared: OnceLock<Option<Arc<Shared>>>,
    /// Its thread, joined when it is dropped (so a runner's instance is gone with it).
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

#[derive(Debug)]
struct Shared {
    fd: OwnedFd,
    /// Written when the runner's [`Sentries`] is dropped: its thread ends, and the instance
    /// is closed with the last box's watch.
    wake: OwnedFd,
    /// False once its thread has stopped on an error: no box is watched through it after.
    alive: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// How many boxes watch each directory (by its watch descriptor, which the kernel
    /// gives once per directory and instance).
    refs: HashMap<i32, usize>,
    boxes: HashMap<u64, Watched>,
    next: u64,
}

/// One box's absent names, by the watch of the directory each would be made in.
#[derive(Debug)]
struct Watched {
    names: HashMap<i32, Vec<(PathBuf, PathBuf)>>,
    events: Arc<egress::Egress>,
    session: SessionId,
    tool: String,
    call: Option<CallId>,
    said: Vec<String>,
    unreported: usize,
}

impl Sentries {
    /// Makes the instance now, before any box runs ([`crate::Runner::watching_kept_names`]):
    /// a box that lives long (a server's) could otherwise hold the user's every instance
    /// before the first box that needs a watch.
    pub fn start(&self) {
        let _ = self.shared();
    }

    fn shared(&self) -> &Option<Arc<Shared>> {
        self.shared.get_or_init(|| {
            let (shared, thread) = start()?;
            *self.thread.lock().unwrap_or_else(PoisonError::into_inner) = Some(thread);
            Some(shared)
        })
    }

    /// Watches the directories `absent` (host path, path in the box) would be made in, for
    /// a box of `session` running `tool` (for `call`, or `None` for a server's box, which
    /// outlives its calls), until the [`Sentry`] is finished or dropped. `None` when there
    /// is nothing to watch or no watch could be set: what is made is then moved aside by
    /// the sweep after the call alone.
    pub fn watch(
        &self,
        events: Arc<egress::Egress>,
        absent: &[(PathBuf, PathBuf)],
        session: &SessionId,
        tool: &str,
        call: Option<CallId>,
    ) -> Option<Sentry> {
        if absent.is_empty() {
            return None;
        }
        let said_no = |what: &str, e: &dyn std::fmt::Display| {
            eprintln!(
                "boxmaker: the kept names a box of session {session} ({tool}) could make are \
                 not watched while it runs ({what}: {e}); what it makes is moved aside when \
                 its call ends"
            );
        };
        let shared = match self.shared() {
            Some(s) if s.alive.load(Ordering::SeqCst) => s.clone(),
            _ => {
                said_no("no inotify instance", &"see the runner's first warning");
                return None;
            }
        };
        let mut by_dir: HashMap<PathBuf, Vec<(PathBuf, PathBuf)>> = HashMap::new();
        for (host, at) in absent {
            if let Some(parent) = host.parent() {
                by_dir
                    .entry(parent.to_path_buf())
                    .or_default()
                    .push((host.clone(), at.clone()));
            }
        }
        let mut state = shared.lock();
        let mut watched = Watched {
            names: HashMap::new(),
            events,
            session: session.clone(),
            tool: tool.to_string(),
            call,
            said: Vec::new(),
            unreported: 0,
        };
        for (dir, names) in by_dir {
            match inotify::add_watch(&shared.fd, dir.as_path(), WATCH) {
                Ok(wd) => {
                    *state.refs.entry(wd).or_default() += 1;
                    watched.names.entry(wd).or_default().extend(names);
                }
                // A directory that is not there (or not one): nothing can be made in it but
                // by making it, which the sweep after the call sees.
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => {}
                Err(e) => {
                    said_no("inotify_add_watch", &e);
                    let wds: Vec<i32> = watched.names.keys().copied().collect();
                    state.unwatch(&shared.fd, &wds);
                    return None;
                }
            }
        }
        if watched.names.is_empty() {
            return None;
        }
        // Anything already there was made between the look and now: moved like the rest.
        watched.pass(None);
        let id = state.next;
        state.next += 1;
        state.boxes.insert(id, watched);
        drop(state);
        Some(Sentry { shared, id })
    }
}

/// The runner's instance and the thread that reads it, or `None` (said on stderr) where
/// the kernel gives none.
fn start() -> Option<(Arc<Shared>, std::thread::JoinHandle<()>)> {
    let made = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)
        .map_err(|e| ("inotify_init1", e))
        .and_then(|fd| {
            rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
                .map(|wake| (fd, wake))
                .map_err(|e| ("eventfd", e))
        });
    let (fd, wake) = match made {
        Ok(m) => m,
        Err((what, e)) => {
            eprintln!(
                "boxmaker: kept names a box could make are not watched while it runs \
                 ({what}: {e}); what a box makes is moved aside when its call ends"
            );
            return None;
        }
    };
    let shared = Arc::new(Shared {
        fd,
        wake,
        alive: AtomicBool::new(true),
        state: Mutex::default(),
    });
    let reader = shared.clone();
    match std::thread::Builder::new()
        .name("sentry".into())
        .spawn(move || reader.read())
    {
        Ok(thread) => Some((shared, thread)),
        Err(e) => {
            eprintln!(
                "boxmaker: kept names a box could make are not watched while it runs (no \
                 thread: {e}); what a box makes is moved aside when its call ends"
            );
            None
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads the instance until the runner's [`Sentries`] is dropped: each batch of
    /// events, the names made in a watched directory (or, on an overflowed queue, every
    /// name) are looked at.
    fn read(&self) {
        let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
        let mut made: Vec<(i32, Vec<u8>)> = Vec::new();
        loop {
            let mut fds = [
                PollFd::new(&self.fd, PollFlags::IN),
                PollFd::new(&self.wake, PollFlags::IN),
            ];
            match rustix::event::poll(&mut fds, None) {
                Ok(_) => {}
                Err(Errno::INTR) => continue,
                Err(e) => return self.stopped(e),
            }
            if !fds[1].revents().is_empty() {
                return;
            }
            let mut all = false;
            let mut reader = inotify::Reader::new(&self.fd, &mut buf);
            loop {
                match reader.next() {
                    Ok(ev) => {
                        if ev.events().contains(ReadFlags::QUEUE_OVERFLOW) {
                            all = true;
                        } else if let Some(name) = ev.file_name() {
                            made.push((ev.wd(), name.to_bytes().to_vec()));
                        }
                    }
                    Err(Errno::INTR) => continue,
                    Err(Errno::AGAIN) => break,
                    Err(e) => return self.stopped(e),
                }
            }
            let mut state = self.lock();
            for w in state.boxes.values_mut() {
                w.pass(if all { None } else { Some(&made) });
            }
            drop(state);
            made.clear();
        }
    }

    fn stopped(&self, e: Errno) {
        self.alive.store(false, Ordering::SeqCst);
        eprintln!(
            "boxmaker: the watch on kept names a box could make stopped ({e}); what a box \
             makes is moved aside when its call ends"
        );
    }
}

impl Drop for Sentries {
    fn drop(&mut self) {
        if let Some(Some(shared)) = self.shared.get() {
            let _ = rustix::io::write(&shared.wake, &1u64.to_ne_bytes());
        }
        let thread = self
            .thread
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(t) = thread {
            let _ = t.join();
        }
    }
}

impl State {
    /// Drops one box's hold on each of `wds`; a directory no box watches is unwatched.
    fn unwatch(&mut self, fd: &OwnedFd, wds: &[i32]) {
        for wd in wds {
            if let Some(n) = self.refs.get_mut(wd) {
                *n -= 1;
                if *n == 0 {
                    self.refs.remove(wd);
                    let _ = inotify::remove_watch(fd, *wd);
                }
            }
        }
    }
}

impl Watched {
    /// Moves aside what of this box's absent names is there: those `made` (watch, name),
    /// or all of them.
    fn pass(&mut self, made: Option<&[(i32, Vec<u8>)]>) {
        for (wd, names) in &self.names {
            for (host, at) in names {
                if let Some(made) = made {
                    let Some(name) = host.file_name() else {
                        continue;
                    };
                    if !made
                        .iter()
                        .any(|(w, n)| w == wd && n.as_slice() == name.as_bytes())
                    {
                        continue;
                    }
                }
                let quiet = self.said.len() >= REPORTED;
                if let Some(line) = move_aside(
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

/// One box's watch; finishing or dropping it ends it at once (what the reader does for it
/// is done under the same lock, so nothing is moved for it after).
#[derive(Debug)]
pub struct Sentry {
    shared: Arc<Shared>,
    id: u64,
}

impl Sentry {
    /// Ends the watch and says what it moved aside, a line each (at most [`REPORTED`],
    /// then one line counting the rest), for the call's answer.
    pub fn finish(self) -> Vec<String> {
        self.end()
    }

    fn end(&self) -> Vec<String> {
        let mut state = self.shared.lock();
        let Some(w) = state.boxes.remove(&self.id) else {
            return Vec::new();
        };
        let wds: Vec<i32> = w.names.keys().copied().collect();
        state.unwatch(&self.shared.fd, &wds);
        let mut said = w.said;
        if w.unreported > 0 {
            said.push(format!(
                "boxmaker: {} more kept names made in this box were moved aside the same way",
                w.unreported
            ));
        }
        said
    }
}

impl Drop for Sentry {
    fn drop(&mut self) {
        let _ = self.end();
    }
}

/// `host` (`at` in the box), a kept name that was absent when a box of `session` started,
/// is moved aside if it is there now, beside itself, to `NAME.made-in-a-box-NANOS` — never
/// removed — so no program on the host runs from it, and a `moved` event tells the gate,
/// which audits it (docs/spec.md §4, "What a writable mount keeps"). The rename renames a
/// link, never what it points to. The line for the call's answer, when it was moved;
/// `quiet` moves it without an event or a line on stderr (a box that makes a name over and
/// over, past [`REPORTED`]).
pub(crate) fn move_aside(
    events: &egress::Egress,
    host: &Path,
    at: &Path,
    session: &SessionId,
    tool: &str,
    call: Option<proto::CallId>,
    quiet: bool,
) -> Option<String> {
    std::fs::symlink_metadata(host).ok()?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = host.file_name().and_then(|n| n.to_str())?;
    let aside = host.with_file_name(format!("{name}.made-in-a-box-{nanos}"));
    let moved_to = at.with_file_name(format!("{name}.made-in-a-box-{nanos}"));
    match std::fs::rename(host, &aside) {
        Ok(()) => {
            if !quiet {
                eprintln!(
                    "boxmaker: a box of session {session} ({tool}) made {}, which a program \
                     on the host runs from; it was moved aside to {}",
                    host.display(),
                    aside.display()
                );
                events.event(proto::run::RunnerAnswer::Moved {
                    session: session.clone(),
                    tool: tool.to_string(),
                    call,
                    path: at.display().to_string(),
                    to: moved_to.display().to_string(),
                });
            }
            Some(format!(
                "boxmaker: {} was made in this box where a writable mount keeps it (a program \
                 on the host runs from it); it was moved aside to {}",
                at.display(),
                moved_to.display()
            ))
        }
        Err(e) => {
            if !quiet {
                eprintln!(
                    "boxmaker: a box of session {session} ({tool}) made {}, which a program \
                     on the host runs from, and it could not be moved aside: {e}",
                    host.display()
                );
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proto::run::RunnerAnswer;
    use std::path::Path;
    use std::time::{Duration, Instant};

    struct Lab {
        dir: tempfile::TempDir,
        sentries: Sentries,
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
        Lab {
            dir,
            sentries: Sentries::default(),
            events,
            seen,
        }
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
            self.sentries.watch(
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

    /// Two boxes watch the same directory through the one instance: the first one's end
    /// leaves the second watching, and once both have ended nothing is moved.
    #[test]
    fn boxes_watching_one_directory_end_apart() {
        let lab = lab();
        let first = lab.watch(&[".mcp.json"]).unwrap();
        let second = lab.watch(&[".mcp.json", ".envrc"]).unwrap();
        assert!(first.finish().is_empty());
        std::fs::write(lab.dir.path().join(".envrc"), "x").unwrap();
        assert!(
            lab.gone(".envrc"),
            "the second box's watch ended with the first's"
        );
        assert_eq!(second.finish().len(), 1);
        std::fs::write(lab.dir.path().join(".mcp.json"), "{}").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            lab.dir.path().join(".mcp.json").exists(),
            "a name was moved after every watch had ended"
        );
    }

    /// A runner's instance and thread end with it: two hundred runners one after another
    /// (more than the user's 128 instances) each watch their box.
    #[test]
    fn a_runners_instance_ends_with_it() {
        let lab = lab();
        let session = SessionId::new("s1").unwrap();
        for i in 0..200 {
            let sentries = Sentries::default();
            let s = sentries.watch(
                lab.events.clone(),
                &lab.absent(&[".mcp.json"]),
                &session,
                "run",
                None,
            );
            assert!(s.is_some(), "runner {i} could not watch its box");
            drop(s);
            drop(sentries);
        }
    }

    /// A runner whose config has a writable mount has its instance before any box runs.
    #[test]
    fn started_sentries_have_their_instance_before_any_box() {
        let s = Sentries::default();
        s.start();
        assert!(matches!(s.shared.get(), Some(Some(_))));
        assert!(Sentries::default().shared.get().is_none());
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
