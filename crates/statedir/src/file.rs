//! How boxmaker writes a file for a person: one way, never through a symbolic link
//! (docs/spec.md §6, "How boxmaker writes a file").
//!
//! The repository a person opens can ship any file or link in the project directory — its
//! `.boxmaker/` state directory too — and a link there names another program's file
//! (`boxmaker.toml.bak -> ~/.ssh/authorized_keys`). So every file boxmaker writes for a
//! person — configs, backups, state, tokens, keys, logs, locks — is written by name in a
//! [`Dir`], a directory held open by a descriptor, and nothing here follows a link at that
//! name:
//!
//! - **replace** ([`Dir::replace`], [`Dir::write`]): a temporary file beside it, created
//!   `O_CREAT|O_EXCL|O_NOFOLLOW`, written, given its mode (an existing file's mode and
//!   owner, or the one asked for; `0600` for a secret), `fsync`ed, checked, then renamed
//!   over the name and the directory `fsync`ed. A reader sees the old file or the new one,
//!   never half of one. A link at the name is refused, not replaced and not followed.
//! - **a backup** ([`Backup`]): the old file copied the same way, beside it (the real file,
//!   when a person's link was resolved first: [`locate`]), never over anything but a
//!   backup of its own name.
//! - **new** ([`Dir::create_new`]): the same temporary file, linked into place, which fails
//!   when anything — a link too — has the name.
//! - **append, lock** ([`Dir::open_file`]): `O_NOFOLLOW`, and only a regular file.
//! - **read** ([`Dir::read`]): `O_NOFOLLOW|O_NONBLOCK`, and only a regular file (a planted
//!   FIFO does not hang the reader).
//!
//! Directories: [`Dir::open`] and [`Dir::make`] take a path the person named (their home,
//! their config's directory) as the kernel resolves it — links there are theirs.
//! [`Dir::own`] (the state directory) and [`Dir::sub`] (anything below it) never follow a
//! link at their last component: a state directory, or a directory in it, that is a link is
//! refused. A person's file that may legitimately be a link (a dotfile manager's
//! `~/.claude.json`) is resolved on purpose by [`locate`], which refuses a project's file
//! that leads out of the project.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, CWD, Mode as RawMode, OFlags};

/// Why a file was not written (or read): one sentence a person can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{} is a symbolic link (to {}); boxmaker never writes through a link there or over \
         one (a repository can ship one): remove it",
        path.display(),
        to.display()
    )]
    Link { path: PathBuf, to: PathBuf },
    #[error(
        "{} is a symbolic link to {}, which does not exist; boxmaker makes no file through a \
         link",
        path.display(),
        to.display()
    )]
    Dangling { path: PathBuf, to: PathBuf },
    #[error(
        "{} leads out of the project {} (to {}); a project's file is written only inside the \
         project",
        path.display(),
        root.display(),
        real.display()
    )]
    Outside {
        path: PathBuf,
        real: PathBuf,
        root: PathBuf,
    },
    #[error("{} is not a regular file; it was left as it is", path.display())]
    NotAFile { path: PathBuf },
    #[error("{} is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    #[error("{} exists already; it was left as it is", path.display())]
    Exists { path: PathBuf },
    #[error(
        "{} is over {} bytes; it was left as it is",
        path.display(),
        max
    )]
    TooLarge { path: PathBuf, max: u64 },
    #[error("{why}; {} was left as it was", path.display())]
    Check { path: PathBuf, why: String },
    #[error(
        "the state directory {} was not made by boxmaker for you ({why}); a repository can \
         ship one, with grants, sign-ins and keys in it, so nothing in it was used: move it \
         aside (`mv {} {}.old`) and boxmaker makes a new one",
        path.display(),
        path.display(),
        path.display()
    )]
    Unmarked { path: PathBuf, why: String },
    #[error(
        "boxmaker keeps the key that marks your state directories and keys at {}, and {why}",
        path.display()
    )]
    MarkKey { path: PathBuf, why: String },
    #[error(
        "neither XDG_STATE_HOME nor HOME is an absolute path, so boxmaker has nowhere outside \
         a project to keep the key that marks your state directories: set HOME"
    )]
    NoHome,
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl Error {
    /// Whether what was to be read or opened is not there.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// Whether a link was refused (or led nowhere, or out of the project).
    pub fn is_link(&self) -> bool {
        matches!(
            self,
            Error::Link { .. } | Error::Dangling { .. } | Error::Outside { .. }
        )
    }
}

/// For callers whose own errors carry an `io::Error`: the sentence, and a kind that says
/// what happened where one fits.
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = match &e {
            Error::Io { source, .. } => source.kind(),
            Error::Exists { .. } => io::ErrorKind::AlreadyExists,
            Error::NotADirectory { .. } => io::ErrorKind::NotADirectory,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}

type Result<T> = std::result::Result<T, Error>;

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Error + 'a {
    move |source| Error::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// The mode a replaced file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `0600`, whatever was there: a secret (a token, a key) is its owner's alone.
    Private,
    /// An existing file keeps its mode and its owner (root editing a person's file leaves it
    /// theirs); a new one gets this mode.
    Keep(u32),
}

/// Where the old file is kept before it is replaced, beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backup<'a> {
    /// The first of `NAME`, `NAME-2`, `NAME-3`… that nothing has (never over anything).
    Fresh(&'a str),
    /// `NAME`, replacing the backup before it (a link there is refused).
    Over(&'a str),
}

/// How [`Dir::open_file`] opens a file (always `O_NOFOLLOW`, and only a regular file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// Read and write, created (with the mode) when missing, never emptied: a lock.
    Lock,
    /// Appended to, created when missing.
    Append,
    /// Written from its start, created when missing, emptied.
    Truncate,
    /// Read, and written only when it exists (never created).
    Existing,
}

/// A file as [`Dir::read`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub bytes: Vec<u8>,
    /// Its permission bits.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

/// A directory held open, and the path it was opened by (for messages).
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

impl Dir {
    /// The directory at `path`, as the kernel resolves it: a path the person named.
    pub fn open(path: &Path) -> Result<Dir> {
        let fd = rustix::fs::openat(CWD, path, DIR_FLAGS, RawMode::empty()).map_err(|e| {
            let e = io::Error::from(e);
            if e.kind() == io::ErrorKind::NotADirectory {
                Error::NotADirectory {
                    path: path.to_path_buf(),
                }
            } else {
                io_err("open the directory", path)(e)
            }
        })?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// [`Dir::open`], made first (with its parents, `mode`) when missing.
    pub fn make(path: &Path, mode: u32) -> Result<Dir> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(mode)
            .create(path)
            .map_err(io_err("make the directory", path))?;
        Dir::open(path)
    }

    /// A directory of boxmaker's own (the state directory), made `0700` (with its parents)
    /// when missing; refused when it is a link, or a link's end is there, or a name boxmaker
    /// keeps in it is a link; used only when it bears the person's mark (`crate::mark`:
    /// what a repository shipped there is never read). The path above it is the person's,
    /// as they named it.
    pub fn own(path: &Path) -> Result<Dir> {
        Dir::own_dir(path, true)
    }

    /// [`Dir::own`], never made: a missing one is an error ([`Error::is_not_found`]).
    pub fn own_existing(path: &Path) -> Result<Dir> {
        Dir::own_dir(path, false)
    }

    fn own_dir(path: &Path, make: bool) -> Result<Dir> {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => return Err(link(path)),
            Ok(m) if !m.is_dir() => {
                return Err(Error::NotADirectory {
                    path: path.to_path_buf(),
                });
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound && make => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(parent)
                        .map_err(io_err("make the directory", parent))?;
                }
                match std::fs::DirBuilder::new().mode(0o700).create(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(io_err("make the directory", path)(e)),
                }
            }
            Err(e) => return Err(io_err("look at", path)(e)),
        }
        let fd = rustix::fs::openat(CWD, path, DIR_FLAGS | OFlags::NOFOLLOW, RawMode::empty())
            .map_err(|e| dir_error(path, CWD, path.as_os_str(), e))?;
        let dir = Dir {
            fd,
            path: path.to_path_buf(),
        };
        // The directory must bear the person's mark. Refused, a link at a name boxmaker keeps
        // there is said as the link it is (the sentence says what it points at).
        match crate::check_marked(&dir) {
            Ok(()) => Ok(dir),
            Err(unmarked @ Error::Unmarked { .. }) => {
                for name in crate::NAMES {
                    dir.refuse_link(name)?;
                }
                Err(unmarked)
            }
            Err(e) => Err(e),
        }
    }

    /// The descriptor the directory is held by.
    pub(crate) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The directory `name` in this one (never through a link).
    pub fn sub(&self, name: &str) -> Result<Dir> {
        self.sub_dir(name, None)
    }

    /// [`Dir::sub`], made with `mode` when missing.
    pub fn sub_make(&self, name: &str, mode: u32) -> Result<Dir> {
        self.sub_dir(name, Some(mode))
    }

    fn sub_dir(&self, name: &str, make: Option<u32>) -> Result<Dir> {
        let path = self.checked(name)?;
        if let Some(mode) = make {
            match rustix::fs::mkdirat(&self.fd, name, RawMode::from_bits_truncate(mode)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(io_err("make the directory", &path)(e.into())),
            }
        }
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            DIR_FLAGS | OFlags::NOFOLLOW,
            RawMode::empty(),
        )
        .map_err(|e| dir_error(&path, self.fd.as_fd(), OsStr::new(name), e))?;
        Ok(Dir { fd, path })
    }

    /// The directory as a `File` of its own (a new descriptor): to set its times, say.
    pub fn file(&self) -> Result<File> {
        self.fd
            .try_clone()
            .map(File::from)
            .map_err(io_err("open the directory", &self.path))
    }

    /// The path this directory was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `name`'s path, for messages and for programs that open it by name.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// `name` must be one plain file name: nothing here reaches out of its directory.
    fn checked(&self, name: &str) -> Result<PathBuf> {
        let mut c = Path::new(name).components();
        match (c.next(), c.next()) {
            (Some(Component::Normal(_)), None) => Ok(self.path.join(name)),
            _ => Err(Error::Io {
                what: "use the name",
                path: self.path.join(name),
                source: io::Error::new(io::ErrorKind::InvalidInput, "not one plain file name"),
            }),
        }
    }

    /// Refuses `name` when it is a link: for a file another program (SQLite) opens by name.
    pub fn refuse_link(&self, name: &str) -> Result<()> {
        let path = self.checked(name)?;
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink() => {
                Err(self.link_at(name, path))
            }
            _ => Ok(()),
        }
    }

    fn link_at(&self, name: &str, path: PathBuf) -> Error {
        let to = rustix::fs::readlinkat(&self.fd, name, Vec::new())
            .map(|t| PathBuf::from(OsStr::from_bytes(t.as_bytes())))
            .unwrap_or_default();
        Error::Link { path, to }
    }

    /// Opens `name` as `how` says, never through a link; only a regular file.
    pub fn open_file(&self, name: &str, how: Open, mode: u32) -> Result<File> {
        let path = self.checked(name)?;
        let flags = match how {
            Open::Lock => OFlags::RDWR | OFlags::CREATE,
            Open::Append => OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE,
            Open::Truncate => OFlags::WRONLY | OFlags::TRUNC | OFlags::CREATE,
            Open::Existing => OFlags::RDWR,
        };
        self.open_regular(name, &path, flags, mode)
    }

    /// Opens `name` with `flags` (plus `O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC`), checks it is a
    /// regular file, and clears `O_NONBLOCK` again. With `O_TRUNC`, the truncation waits
    /// until the file is known to be a regular one.
    fn open_regular(&self, name: &str, path: &Path, flags: OFlags, mode: u32) -> Result<File> {
        let truncate = flags.contains(OFlags::TRUNC);
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            (flags - OFlags::TRUNC) | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            RawMode::from_bits_truncate(mode),
        )
        .map_err(|e| match e {
            rustix::io::Errno::LOOP => self.link_at(name, path.to_path_buf()),
            rustix::io::Errno::ISDIR | rustix::io::Errno::NXIO => Error::NotAFile {
                path: path.to_path_buf(),
            },
            e => io_err("open", path)(e.into()),
        })?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(io_err("look at", path))?;
        if !meta.file_type().is_file() {
            return Err(Error::NotAFile {
                path: path.to_path_buf(),
            });
        }
        let fl = rustix::fs::fcntl_getfl(&file).map_err(|e| io_err("open", path)(e.into()))?;
        rustix::fs::fcntl_setfl(&file, fl - OFlags::NONBLOCK)
            .map_err(|e| io_err("open", path)(e.into()))?;
        if truncate {
            file.set_len(0).map_err(io_err("empty", path))?;
        }
        Ok(file)
    }

    /// `name`'s bytes, mode and owner; `None` when there is no such file. Refused: a link,
    /// anything but a regular file, a file over `max` bytes.
    pub fn read(&self, name: &str, max: u64) -> Result<Option<Found>> {
        let path = self.checked(name)?;
        let file = match self.open_regular(name, &path, OFlags::RDONLY, 0) {
            Ok(f) => f,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        let meta = file.metadata().map_err(io_err("read", &path))?;
        if meta.len() > max {
            return Err(Error::TooLarge { path, max });
        }
        let mut bytes = Vec::new();
        file.take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io_err("read", &path))?;
        if bytes.len() as u64 > max {
            return Err(Error::TooLarge { path, max });
        }
        Ok(Some(Found {
            bytes,
            mode: meta.mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
        }))
    }

    /// Replaces `name` by `bytes` in one step (see the module's doc).
    pub fn replace(&self, name: &str, bytes: &[u8], mode: Mode) -> Result<()> {
        self.write(name, bytes, mode, None, |_| Ok(())).map(drop)
    }

    /// Replaces `name` by `bytes`: the temporary file is given to `check` (by its path)
    /// before anything is replaced, then, with `backup`, the old file is kept beside it.
    /// Returns the backup's name, when one was made. On any failure nothing is replaced and
    /// no temporary file is left.
    pub fn write(
        &self,
        name: &str,
        bytes: &[u8],
        mode: Mode,
        backup: Option<Backup<'_>>,
        check: impl FnOnce(&Path) -> std::result::Result<(), String>,
    ) -> Result<Option<String>> {
        let path = self.checked(name)?;
        // The file there now, never through a link: its mode and owner, and its bytes for
        // the backup.
        let old = match self.open_regular(name, &path, OFlags::RDONLY, 0) {
            Ok(f) => Some(f),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        let old_meta = match &old {
            Some(f) => Some(f.metadata().map_err(io_err("look at", &path))?),
            None => None,
        };
        let (perm, owner) = match (mode, &old_meta) {
            (Mode::Private, _) => (0o600, None),
            (Mode::Keep(_), Some(m)) => (m.mode() & 0o7777, Some((m.uid(), m.gid()))),
            (Mode::Keep(new), None) => (new, None),
        };
        let tmp = self.temp(name, perm, owner, |f| f.write_all(bytes))?;
        let done = (|| {
            check(&self.join(&tmp.name)).map_err(|why| Error::Check {
                path: path.clone(),
                why,
            })?;
            let kept = match (backup, old, &old_meta) {
                (Some(b), Some(mut f), Some(m)) => {
                    Some(self.backup(&path, b, &mut f, m.mode() & 0o7777, (m.uid(), m.gid()))?)
                }
                _ => None,
            };
            rustix::fs::renameat(&self.fd, tmp.name.as_str(), &self.fd, name)
                .map_err(|e| io_err("replace", &path)(e.into()))?;
            Ok(kept)
        })();
        match done {
            Ok(kept) => {
                tmp.kept();
                self.sync();
                Ok(kept)
            }
            Err(e) => Err(e),
        }
    }

    /// Copies `old` to a backup beside `path`, the same way; its name.
    fn backup(
        &self,
        path: &Path,
        backup: Backup<'_>,
        old: &mut File,
        mode: u32,
        owner: (u32, u32),
    ) -> Result<String> {
        let keep_as = match backup {
            Backup::Fresh(n) | Backup::Over(n) => n,
        };
        let where_ = self.checked(keep_as)?;
        let tmp = self
            .temp(keep_as, mode, Some(owner), |f| io::copy(old, f).map(drop))
            .map_err(|e| match e {
                Error::Io { source, .. } => Error::Io {
                    what: "keep a copy of",
                    path: path.to_path_buf(),
                    source,
                },
                e => e,
            })?;
        let name = match backup {
            Backup::Over(n) => {
                self.refuse_link(n)?;
                rustix::fs::renameat(&self.fd, tmp.name.as_str(), &self.fd, n)
                    .map_err(|e| io_err("keep a copy as", &where_)(e.into()))?;
                tmp.kept();
                n.to_string()
            }
            Backup::Fresh(stem) => {
                let mut n = 1;
                loop {
                    let candidate = if n == 1 {
                        stem.to_string()
                    } else {
                        format!("{stem}-{n}")
                    };
                    match rustix::fs::linkat(
                        &self.fd,
                        tmp.name.as_str(),
                        &self.fd,
                        candidate.as_str(),
                        AtFlags::empty(),
                    ) {
                        Ok(()) => break candidate,
                        Err(rustix::io::Errno::EXIST) if n < 1000 => n += 1,
                        Err(e) => return Err(io_err("keep a copy as", &where_)(e.into())),
                    }
                }
            }
        };
        Ok(name)
    }

    /// Makes `name` with `bytes` (`mode`), all or nothing; [`Error::Exists`] when anything
    /// has the name already (a link too: it is not followed).
    pub fn create_new(&self, name: &str, bytes: &[u8], mode: u32) -> Result<()> {
        let path = self.checked(name)?;
        let tmp = self.temp(name, mode, None, |f| f.write_all(bytes))?;
        match rustix::fs::linkat(
            &self.fd,
            tmp.name.as_str(),
            &self.fd,
            name,
            AtFlags::empty(),
        ) {
            Ok(()) => {
                drop(tmp);
                self.sync();
                Ok(())
            }
            Err(rustix::io::Errno::EXIST) => Err(Error::Exists { path }),
            Err(e) => Err(io_err("create", &path)(e.into())),
        }
    }

    /// Renames `from` to `to` in this directory (a link at either is moved or replaced as a
    /// name, never followed).
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        let path = self.checked(from)?;
        self.checked(to)?;
        rustix::fs::renameat(&self.fd, from, &self.fd, to)
            .map_err(|e| io_err("rename", &path)(e.into()))
    }

    /// Removes the file `name` (a link is removed, not followed); whether it was there.
    pub fn remove(&self, name: &str) -> Result<bool> {
        let path = self.checked(name)?;
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(io_err("remove", &path)(e.into())),
        }
    }

    /// Makes a renamed or new name durable (best effort: a directory that cannot be synced
    /// still holds it).
    fn sync(&self) {
        let _ = rustix::fs::fsync(&self.fd);
    }

    /// A new temporary file beside `name` (`O_CREAT|O_EXCL|O_NOFOLLOW`), given `mode` (and
    /// `owner`, best effort: only root can give a file away), filled by `fill`, `fsync`ed.
    fn temp(
        &self,
        name: &str,
        mode: u32,
        owner: Option<(u32, u32)>,
        fill: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> Result<Temp<'_>> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = self.join(name);
        // A name's first 64 bytes (on a character boundary) keep a long name under NAME_MAX.
        let mut cut = name.len().min(64);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let short = name.get(..cut).unwrap_or_default();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut tries = 0;
        let (tmp_name, fd) = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let candidate = format!(".{short}.{}.{nanos}.{n}.tmp", std::process::id());
            match rustix::fs::openat(
                &self.fd,
                candidate.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                RawMode::from_bits_truncate(mode & 0o777),
            ) {
                Ok(fd) => break (candidate, fd),
                Err(rustix::io::Errno::EXIST) if tries < 100 => tries += 1,
                Err(e) => return Err(io_err("write beside", &path)(e.into())),
            }
        };
        let tmp = Temp {
            dir: self,
            name: tmp_name,
            keep: false,
        };
        let mut file = File::from(fd);
        if let Some((uid, gid)) = owner
            && (uid != rustix::process::geteuid().as_raw()
                || gid != rustix::process::getegid().as_raw())
        {
            // Root editing a person's file: it stays theirs.
            let _ = std::os::unix::fs::fchown(&file, Some(uid), Some(gid));
        }
        // After the owner: a chown clears set-id bits, and the mode is exactly this.
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .and_then(|()| fill(&mut file))
            .and_then(|()| file.sync_all())
            .map_err(io_err("write beside", &path))?;
        Ok(tmp)
    }
}

/// A temporary file in a [`Dir`], removed when dropped unless [`Temp::kept`].
struct Temp<'a> {
    dir: &'a Dir,
    name: String,
    keep: bool,
}

impl Temp<'_> {
    /// It was renamed into place: nothing to remove.
    fn kept(mut self) {
        self.keep = true;
    }
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if !self.keep {
            let _ = rustix::fs::unlinkat(&self.dir.fd, self.name.as_str(), AtFlags::empty());
        }
    }
}

/// `path` is a link: where it points.
fn link(path: &Path) -> Error {
    Error::Link {
        path: path.to_path_buf(),
        to: std::fs::read_link(path).unwrap_or_default(),
    }
}

/// Why a directory that must not be a link did not open.
fn dir_error(path: &Path, at: impl AsFd, name: &OsStr, e: rustix::io::Errno) -> Error {
    match rustix::fs::statat(at.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink() => {
            let to = rustix::fs::readlinkat(at.as_fd(), name, Vec::new())
                .map(|t| PathBuf::from(OsStr::from_bytes(t.as_bytes())))
                .unwrap_or_default();
            Error::Link {
                path: path.to_path_buf(),
                to,
            }
        }
        Ok(_) if e == rustix::io::Errno::NOTDIR => Error::NotADirectory {
            path: path.to_path_buf(),
        },
        _ => io_err("open the directory", path)(e.into()),
    }
}

// ---------------------------------------------------------------------------------------
// A person's file, behind a link of theirs.

/// How far a person's file may be from where its path says.
#[derive(Debug, Clone, Copy)]
pub enum Reach<'a> {
    /// Anywhere its links lead (the person's home: a dotfile manager's links are theirs,
    /// and a repository cannot put a link there).
    Anywhere,
    /// Only beneath this directory's real path (a project's file: the repository can ship
    /// the link).
    Beneath(&'a Path),
}

/// Where a person's file really is.
#[derive(Debug, Clone)]
pub struct Place {
    /// The path as given (absolute).
    pub path: PathBuf,
    /// The file it names, every link resolved (it may not exist yet).
    pub real: PathBuf,
    /// With [`Reach::Beneath`], its real root and the real path's components below it.
    beneath: Option<(PathBuf, Vec<String>)>,
}

/// Resolves `path`'s links on purpose, as `reach` allows. A link to nothing is refused (no
/// file is made through a link), and so is, with [`Reach::Beneath`], a path that leads out
/// of that directory.
pub fn locate(path: &Path, reach: Reach<'_>) -> Result<Place> {
    let abs = std::path::absolute(path).map_err(io_err("find", path))?;
    let real = real_path(&abs)?;
    let beneath = match reach {
        Reach::Anywhere => None,
        Reach::Beneath(root) => {
            let root = std::fs::canonicalize(root).map_err(io_err("find", root))?;
            let rel = real.strip_prefix(&root).map_err(|_| Error::Outside {
                path: abs.clone(),
                real: real.clone(),
                root: root.clone(),
            })?;
            let mut names = Vec::new();
            for c in rel.components() {
                match c {
                    Component::Normal(n) => {
                        names.push(n.to_str().map(str::to_string).ok_or_else(|| Error::Io {
                            what: "use the name",
                            path: abs.clone(),
                            source: io::Error::new(io::ErrorKind::InvalidInput, "not UTF-8"),
                        })?)
                    }
                    _ => {
                        return Err(Error::Outside {
                            path: abs.clone(),
                            real: real.clone(),
                            root: root.clone(),
                        });
                    }
                }
            }
            if names.is_empty() {
                return Err(Error::NotAFile { path: abs });
            }
            Some((root, names))
        }
    };
    Ok(Place {
        path: abs,
        real,
        beneath,
    })
}

impl Place {
    /// The file's directory, held, and its name in it; with `make`, missing directories are
    /// made with that mode, else `None` when its directory does not exist. Beneath a root,
    /// every directory below it is opened without following a link (one that appeared since
    /// [`locate`] is refused).
    pub fn dir(&self, make: Option<u32>) -> Result<Option<(Dir, String)>> {
        let missing = Error::is_not_found;
        match &self.beneath {
            Some((root, names)) => {
                let Some((name, dirs)) = names.split_last() else {
                    return Err(Error::NotAFile {
                        path: self.path.clone(),
                    });
                };
                let mut dir = Dir::open(root)?;
                for d in dirs {
                    dir = match make {
                        Some(mode) => dir.sub_make(d, mode)?,
                        None => match dir.sub(d) {
                            Ok(d) => d,
                            Err(e) if missing(&e) => return Ok(None),
                            Err(e) => return Err(e),
                        },
                    };
                }
                Ok(Some((dir, name.clone())))
            }
            None => {
                let (Some(parent), Some(name)) = (
                    self.real.parent(),
                    self.real.file_name().and_then(|n| n.to_str()),
                ) else {
                    return Err(Error::NotAFile {
                        path: self.path.clone(),
                    });
                };
                let dir = match make {
                    Some(mode) => Dir::make(parent, mode)?,
                    None => match Dir::open(parent) {
                        Ok(d) => d,
                        Err(e) if missing(&e) => return Ok(None),
                        Err(e) => return Err(e),
                    },
                };
                Ok(Some((dir, name.to_string())))
            }
        }
    }
}

/// `path` with every link resolved; a name that does not exist yet is kept as it is, below
/// its directory's real path.
fn real_path(path: &Path) -> Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => std::fs::canonicalize(path).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                Error::Dangling {
                    path: path.to_path_buf(),
                    to: std::fs::read_link(path).unwrap_or_default(),
                }
            } else {
                io_err("find", path)(e)
            }
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => Ok(real_path(parent)?.join(name)),
            _ => Err(io_err("find", path)(e)),
        },
        Err(e) => Err(io_err("look at", path)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_replace_never_follows_a_link_and_leaves_no_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "mine\n").unwrap();
        let d = Dir::make(&tmp.path().join("d"), 0o700).unwrap();
        symlink(&victim, d.join("token")).unwrap();
        let e = d.replace("token", b"secret", Mode::Private).unwrap_err();
        assert!(matches!(e, Error::Link { .. }), "{e}");
        assert!(e.to_string().contains("is a symbolic link (to "), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
        assert_eq!(names(d.path()), ["token"]);
        // A dangling link is no way to make a file either.
        std::fs::remove_file(d.join("token")).unwrap();
        symlink(tmp.path().join("made"), d.join("token")).unwrap();
        assert!(d.replace("token", b"x", Mode::Private).is_err());
        assert!(d.create_new("token", b"x", 0o600).is_err());
        assert!(d.open_file("token", Open::Append, 0o600).is_err());
        assert!(d.open_file("token", Open::Lock, 0o600).is_err());
        assert!(d.open_file("token", Open::Truncate, 0o600).is_err());
        assert!(d.read("token", 10).is_err());
        assert!(!tmp.path().join("made").exists());
        // Without the link: the file, private, and nothing else.
        std::fs::remove_file(d.join("token")).unwrap();
        d.replace("token", b"secret", Mode::Private).unwrap();
        let found = d.read("token", 10).unwrap().unwrap();
        assert_eq!(
            (found.bytes.as_slice(), found.mode),
            (&b"secret"[..], 0o600)
        );
        assert_eq!(names(d.path()), ["token"]);
    }

    #[test]
    fn a_rewrite_keeps_mode_and_backs_up_beside_it_and_a_failed_check_changes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let d = Dir::open(tmp.path()).unwrap();
        std::fs::write(d.join("c.json"), "old").unwrap();
        std::fs::set_permissions(d.join("c.json"), std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = d
            .write(
                "c.json",
                b"new",
                Mode::Keep(0o600),
                Some(Backup::Fresh("c.json.bak")),
                |p| {
                    assert_eq!(std::fs::read_to_string(p).unwrap(), "new");
                    Err("it would not parse".into())
                },
            )
            .unwrap_err();
        assert!(e.to_string().starts_with("it would not parse; "), "{e}");
        assert_eq!(names(d.path()), ["c.json"]);
        for expect in ["c.json.bak", "c.json.bak-2"] {
            let kept = d
                .write(
                    "c.json",
                    b"new",
                    Mode::Keep(0o600),
                    Some(Backup::Fresh("c.json.bak")),
                    |_| Ok(()),
                )
                .unwrap();
            assert_eq!(kept.as_deref(), Some(expect));
        }
        assert_eq!(
            std::fs::read_to_string(d.join("c.json.bak")).unwrap(),
            "old"
        );
        for n in ["c.json", "c.json.bak"] {
            let m = std::fs::metadata(d.join(n)).unwrap().mode() & 0o7777;
            assert_eq!(m, 0o640, "{n}");
        }
        // A backup of a fixed name is replaced, never followed.
        std::fs::write(tmp.path().join("keys"), "k").unwrap();
        symlink(tmp.path().join("keys"), d.join("x.bak")).unwrap();
        let e = d
            .write(
                "c.json",
                b"newer",
                Mode::Keep(0o600),
                Some(Backup::Over("x.bak")),
                |_| Ok(()),
            )
            .unwrap_err();
        assert!(matches!(e, Error::Link { .. }), "{e}");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("keys")).unwrap(),
            "k"
        );
        assert_eq!(std::fs::read_to_string(d.join("c.json")).unwrap(), "new");
    }

    #[test]
    fn own_directories_and_the_directories_below_them_are_never_links() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        symlink(&elsewhere, tmp.path().join("state")).unwrap();
        assert!(matches!(
            Dir::own(&tmp.path().join("state")),
            Err(Error::Link { .. })
        ));
        let d = Dir::own(&tmp.path().join("real/state")).unwrap();
        assert_eq!(std::fs::metadata(d.path()).unwrap().mode() & 0o777, 0o700);
        symlink(&elsewhere, d.join("logs")).unwrap();
        assert!(matches!(d.sub_make("logs", 0o700), Err(Error::Link { .. })));
        assert!(d.sub("../real").is_err());
        assert!(
            d.sub_make("work", 0o700)
                .unwrap()
                .sub_make("s1", 0o700)
                .is_ok()
        );
        assert_eq!(names(&elsewhere).len(), 0);
    }

    #[test]
    fn a_fifo_is_not_a_file_and_does_not_hang_the_reader() {
        let tmp = tempfile::tempdir().unwrap();
        let d = Dir::open(tmp.path()).unwrap();
        rustix::fs::mknodat(
            &d.fd,
            "f",
            rustix::fs::FileType::Fifo,
            RawMode::from_bits_truncate(0o600),
            0,
        )
        .unwrap();
        assert!(matches!(d.read("f", 10), Err(Error::NotAFile { .. })));
        assert!(matches!(
            d.open_file("f", Open::Append, 0o600),
            Err(Error::NotAFile { .. })
        ));
    }

    #[test]
    fn a_project_file_is_found_only_inside_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("p");
        let outside = tmp.path().join("o");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("f.json"), "{}").unwrap();
        symlink(outside.join("f.json"), project.join("out.json")).unwrap();
        symlink(&outside, project.join(".vscode")).unwrap();
        symlink("sub/in.json", project.join("in.json")).unwrap();
        std::fs::write(project.join("sub/in.json"), "{}").unwrap();
        let beneath = Reach::Beneath(&project);
        for p in ["out.json", ".vscode/mcp.json", ".vscode/f.json"] {
            let e = locate(&project.join(p), beneath).unwrap_err();
            assert!(matches!(e, Error::Outside { .. }), "{p}: {e}");
        }
        let place = locate(&project.join("in.json"), beneath).unwrap();
        let (d, name) = place.dir(None).unwrap().unwrap();
        assert_eq!(
            (d.path(), name.as_str()),
            (
                project.join("sub").canonicalize().unwrap().as_path(),
                "in.json"
            )
        );
        // A missing directory is made only when asked.
        let place = locate(&project.join(".cursor/mcp.json"), beneath).unwrap();
        assert!(place.dir(None).unwrap().is_none());
        assert!(place.dir(Some(0o755)).unwrap().is_some());
        assert!(project.join(".cursor").is_dir());
        // Anywhere: the link is followed, but not to nothing.
        let place = locate(&project.join("out.json"), Reach::Anywhere).unwrap();
        assert_eq!(place.real, outside.canonicalize().unwrap().join("f.json"));
        symlink(outside.join("none.json"), project.join("gone.json")).unwrap();
        let e = locate(&project.join("gone.json"), Reach::Anywhere).unwrap_err();
        assert!(matches!(e, Error::Dangling { .. }), "{e}");
    }
}
