//! The file tools' in-box half: this code runs *inside* the box, as the box user, in the
//! boxmaker binary bind-mounted read-only at [`INBOX_BINARY`]. Paths are confined by the
//! kernel (the box shows only its mounts), never by string checks.
//!
//! It serves one warm box ([`crate::warm`]): each request (the tool and its checked
//! arguments) arrives on stdin as a length-prefixed JSON frame; each answer goes to stdout
//! the same way ([`serve`]). Every path that was read is reported as the kernel sees the
//! *opened* file (`/proc/self/fd/N`), not as a name resolved before opening: a symlink that a
//! concurrent call swaps between a resolve and an open cannot make a confidential read look
//! like a public one.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::builtin::{ListDir, ReadFile, WriteFile};

/// Where the boxmaker binary is shown inside every box that runs a file tool.
pub const INBOX_BINARY: &str = "/.boxmaker/boxmaker";
/// The first argument that makes the binary serve file calls in a warm box
/// ([`crate::warm`]): one request after another, each a frame on stdin, each answered by a
/// frame on stdout.
pub const INBOX_SERVE_ARG: &str = "__boxmaker-inbox-serve";
/// The most a request frame may hold: a `write_file` of one frame's content, JSON-escaped.
pub const REQUEST_LIMIT: usize = 6 * proto::MAX_FRAME + 64 * 1024;
/// The most a reply frame may hold: [`READ_LIMIT`] bytes of text, each at most six bytes
/// once JSON-escaped, plus the envelope of the reply.
pub const REPLY_LIMIT: usize = 6 * READ_LIMIT + 64 * 1024;
/// The most a `read_file` reads: what one frame can carry. More is cut, and said so.
pub const READ_LIMIT: usize = proto::MAX_FRAME;
/// The most entries `list_dir` lists.
pub const LIST_LIMIT: usize = 10_000;

/// What the runner asks the in-box tool to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "tool", rename_all = "snake_case", deny_unknown_fields)]
pub enum InboxRequest {
    ReadFile { path: String },
    WriteFile { path: String, content: String },
    ListDir { path: String },
}

impl From<ReadFile> for InboxRequest {
    fn from(a: ReadFile) -> Self {
        Self::ReadFile { path: a.path }
    }
}
impl From<WriteFile> for InboxRequest {
    fn from(a: WriteFile) -> Self {
        Self::WriteFile {
            path: a.path,
            content: a.content,
        }
    }
}
impl From<ListDir> for InboxRequest {
    fn from(a: ListDir) -> Self {
        Self::ListDir { path: a.path }
    }
}

/// The in-box tool's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum InboxReply {
    Done {
        content: String,
        /// Paths inside the box whose data is in `content`, as the kernel named the open file.
        read: Vec<PathBuf>,
        /// The tool cut the content itself (a file larger than [`READ_LIMIT`], say).
        truncated: bool,
    },
    Failed {
        message: String,
    },
}

/// Entry point of a warm box ([`crate::warm`]): answers requests until stdin ends. Each
/// request is a frame — a 4-byte big-endian length, then that many bytes of JSON — and each
/// answer one frame the same way. Between calls it holds nothing open but its stdio, and the
/// only memory of a call it keeps is what the allocator has not reused; its process is not
/// dumpable, so its `/proc/self` files are closed to the box user. A request it cannot read
/// ends it (exit 1): the runner never sends one.
pub fn serve() -> i32 {
    // Not dumpable: `/proc/self/mem` and the other per-process files belong to an unmapped
    // root, so a `read_file` of them is refused by the kernel, whatever a path says.
    if rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .is_err()
    {
        return 1;
    }
    let mut input = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    loop {
        let request = match read_frame(&mut input, REQUEST_LIMIT) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return 0,
            Err(_) => return 1,
        };
        let reply = match serde_json::from_slice::<InboxRequest>(&request) {
            Err(e) => failed(format!("bad request from the runner: {e}")),
            Ok(req) => handle(&req),
        };
        drop(request);
        let Ok(body) = serde_json::to_vec(&reply) else {
            return 1;
        };
        if write_frame(&mut out, &body).is_err() {
            return 1;
        }
    }
}

/// Reads one frame (see [`serve`]) of at most `limit` bytes; `None` at a clean end of the
/// stream before a frame.
pub fn read_frame(r: &mut impl Read, limit: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = usize::try_from(u32::from_be_bytes(len)).unwrap_or(usize::MAX);
    if len > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes is over the limit of {limit}"),
        ));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Ok(Some(body))
}

/// Writes `body` as one frame (see [`serve`]) and flushes.
pub fn write_frame(w: &mut impl Write, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a frame over 4 GiB"))?;
    w.write_all(&len.to_be_bytes())?;
    w.write_all(body)?;
    w.flush()
}

fn failed(message: String) -> InboxReply {
    InboxReply::Failed { message }
}

/// Runs one request (in the box). Relative paths are relative to `/work`.
pub fn handle(req: &InboxRequest) -> InboxReply {
    let result = match req {
        InboxRequest::ReadFile { path } => read_file(&resolve(path)),
        InboxRequest::WriteFile { path, content } => write_file(&resolve(path), content),
        InboxRequest::ListDir { path } => list_dir(&resolve(path)),
    };
    result.unwrap_or_else(failed)
}

fn resolve(path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new("/work").join(p)
    }
}

/// The path of an open file, as the kernel names it.
fn opened_path(f: &File, shown: &Path) -> Result<PathBuf, String> {
    fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd()))
        .map_err(|e| format!("cannot tell where {} is: {e}", shown.display()))
}

fn io_message(what: &str, path: &Path, e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    let why = match e.kind() {
        K::NotFound => "no such file or directory".to_string(),
        K::PermissionDenied => "permission denied".to_string(),
        K::ReadOnlyFilesystem => "the file system is read-only here".to_string(),
        K::IsADirectory => "it is a directory".to_string(),
        K::NotADirectory => "a part of the path is not a directory".to_string(),
        _ => e.to_string(),
    };
    format!("cannot {what} {}: {why}", path.display())
}

fn read_file(path: &Path) -> Result<InboxReply, String> {
    let f = File::open(path).map_err(|e| io_message("read", path, &e))?;
    let meta = f.metadata().map_err(|e| io_message("read", path, &e))?;
    if !meta.is_file() {
        return Err(format!(
            "cannot read {}: it is not a regular file",
            path.display()
        ));
    }
    let real = opened_path(&f, path)?;
    let mut buf = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).min(READ_LIMIT));
    let limit = u64::try_from(READ_LIMIT)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    f.take(limit)
        .read_to_end(&mut buf)
        .map_err(|e| io_message("read", path, &e))?;
    let truncated = buf.len() > READ_LIMIT;
    buf.truncate(READ_LIMIT);
    let content = match String::from_utf8(buf) {
        Ok(s) => s,
        // A cut may have split the last character; anything else is not text.
        Err(e) if truncated && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).map_err(|_| not_text(path))?
        }
        Err(_) => return Err(not_text(path)),
    };
    Ok(InboxReply::Done {
        content,
        read: vec![real],
        truncated,
    })
}

fn not_text(path: &Path) -> String {
    format!(
        "cannot read {}: it is not UTF-8 text (read_file returns text only)",
        path.display()
    )
}

fn write_file(path: &Path, content: &str) -> Result<InboxReply, String> {
    let mut f = File::create(path).map_err(|e| io_message("write", path, &e))?;
    f.write_all(content.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| io_message("write", path, &e))?;
    Ok(InboxReply::Done {
        content: format!("wrote {} bytes to {}", content.len(), path.display()),
        read: Vec::new(),
        truncated: false,
    })
}

fn list_dir(path: &Path) -> Result<InboxReply, String> {
    let dir = File::open(path).map_err(|e| io_message("list", path, &e))?;
    if !dir.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(format!(
            "cannot list {}: it is not a directory",
            path.display()
        ));
    }
    let real = opened_path(&dir, path)?;
    // List what was opened, not whatever the name points at by now.
    let entries = fs::read_dir(&real).map_err(|e| io_message("list", path, &e))?;
    let mut names = Vec::new();
    let mut truncated = false;
    for entry in entries {
        let entry = entry.map_err(|e| io_message("list", path, &e))?;
        if names.len() == LIST_LIMIT {
            truncated = true;
            break;
        }
        let mut name = shown_name(&entry.file_name().to_string_lossy());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            name.push('/');
        }
        names.push(name);
    }
    names.sort();
    let mut content = names.join("\n");
    if !content.is_empty() {
        content.push('\n');
    }
    Ok(InboxReply::Done {
        content,
        read: vec![real],
        truncated,
    })
}

/// A file name as one line: control characters (a newline would forge another entry) are
/// written as escapes.
fn shown_name(name: &str) -> String {
    if name.chars().any(char::is_control) {
        name.chars()
            .flat_map(|c| {
                if c.is_control() {
                    c.escape_default().collect::<Vec<_>>()
                } else {
                    vec![c]
                }
            })
            .collect()
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_file_reports_the_opened_path_not_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        fs::write(&real, "hello").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let reply = read_file(&link).unwrap();
        assert_eq!(
            reply,
            InboxReply::Done {
                content: "hello".into(),
                read: vec![fs::canonicalize(&real).unwrap()],
                truncated: false
            }
        );
    }

    #[test]
    fn read_file_refuses_binary_and_special_files() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        fs::write(&bin, [0xff, 0xfe, 0x00]).unwrap();
        assert!(read_file(&bin).unwrap_err().contains("not UTF-8 text"));
        assert!(
            read_file(dir.path())
                .unwrap_err()
                .contains("not a regular file")
        );
        assert!(
            read_file(Path::new("/dev/zero"))
                .unwrap_err()
                .contains("not a regular file")
        );
        assert!(
            read_file(&dir.path().join("nope"))
                .unwrap_err()
                .contains("no such file")
        );
    }

    #[test]
    fn read_file_cuts_at_the_limit_without_splitting_a_character() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        // 'é' is two bytes: an odd limit would split one.
        fs::write(&big, "é".repeat(READ_LIMIT)).unwrap();
        let InboxReply::Done {
            content, truncated, ..
        } = read_file(&big).unwrap()
        else {
            panic!()
        };
        assert!(truncated);
        assert!(content.len() <= READ_LIMIT);
        assert!(content.chars().all(|c| c == 'é'));
    }

    #[test]
    fn list_dir_marks_directories_and_escapes_control_characters() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("a.txt"), "").unwrap();
        fs::write(dir.path().join("evil\nsecret.txt"), "").unwrap();
        let InboxReply::Done { content, .. } = list_dir(dir.path()).unwrap() else {
            panic!()
        };
        assert_eq!(content, "a.txt\nevil\\nsecret.txt\nsub/\n");
    }

    #[test]
    fn write_file_writes_and_says_how_much() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.txt");
        let reply = write_file(&p, "data").unwrap();
        assert!(matches!(reply, InboxReply::Done { ref read, .. } if read.is_empty()));
        assert_eq!(fs::read_to_string(&p).unwrap(), "data");
        assert!(
            write_file(&dir.path().join("no/such/dir/x"), "")
                .unwrap_err()
                .contains("no such file")
        );
    }

    #[test]
    fn requests_decode_strictly() {
        assert!(serde_json::from_str::<InboxRequest>(r#"{"tool":"read_file","path":"a"}"#).is_ok());
        assert!(
            serde_json::from_str::<InboxRequest>(r#"{"tool":"read_file","path":"a","x":1}"#)
                .is_err()
        );
        assert!(serde_json::from_str::<InboxRequest>(r#"{"tool":"rm","path":"a"}"#).is_err());
    }
}
