//! `secrets` — `[[secret]]` values, read by the runner and kept from the model
//! (docs/spec.md §3.8).
//!
//! **Owns:** reading a secret (a variable of the runner's own environment, a private file, a
//! command's output), holding its value ([`SecretValue`], zeroed when dropped, shown only by
//! name), the runner's set of values read ([`Secrets`]) and their redaction from every
//! answer, log line and stream ([`Redactor`], [`StreamRedactor`]).
//!
//! **Must never:** show a value in `Debug`, `Display` or an error, hand one to anything but
//! the box or request that names it (that handing is the runner's), or be read by the gate
//! or the front.
//!
//! A `[[secret]]` says where a credential is (`config::secret`); this crate reads it — a
//! variable of the runner's own environment, a private file, or a command's output — only
//! when a tool that names it needs it ([`Secrets::get`]), and keeps the value in a
//! [`SecretValue`], which shows itself as `[secret NAME]` in `Debug` and `Display` (so no
//! error, log line or panic message can carry it by accident) and is zeroed when dropped.
//! The gate and the front never read one: the gate holds no tool, and `boxmaker mcp` runs
//! the discovery of a server that needs a secret in a process of its own.
//!
//! **Redaction.** Every answer the runner gives — a result's content (structured content
//! included), a `failed` message, of every tool — passes `Runner::redact` in
//! `Runner::run_admitted`, the one place every call's answer goes through; what a running
//! server says of its tools, and its stderr log, are redacted the same way. A [`Redactor`]
//! replaces the exact value and its common encodings — standard and URL-safe base64 (with
//! and without padding, and at each of the three alignments it can take inside a longer
//! base64 text), percent-encoding (both cases of hex digit, and with `+` for a space), lower
//! and upper hex, and JSON's escaping of the value — by `[secret NAME]`. A value shorter than
//! [`MIN_LEN`] bytes is refused when read: it could not be told apart from ordinary text.
//!
//! **Which values.** Every secret the config defines is read the first time this runner
//! redacts anything (a secret that cannot be read here was handed to no box by this runner;
//! one a box of an earlier runner was handed, and left in a mount, is still redacted once
//! readable).

#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use base64::Engine;
use config::{Secret, SecretSource};
use proto::ToolResponse;
use zeroize::Zeroizing;

/// The shortest value a secret may have, in bytes.
pub const MIN_LEN: usize = 8;
/// The longest value read from a file or a command, in bytes.
pub const MAX_LEN: usize = 64 * 1024;
/// How long a secret's command may take.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);

/// How long, after a secret command exited, its output may go quiet before the read ends
/// without the pipe's end (something it left running holds the pipe open).
const EXITED_GRACE: Duration = Duration::from_millis(500);
/// The shortest encoding a [`Redactor`] looks for (a base64 text aligned against a short
/// value has few characters that depend only on it).
const MIN_PATTERN: usize = 8;

/// A secret's value. `Debug` and `Display` show `[secret NAME]`; the bytes are zeroed when
/// it is dropped. [`SecretValue::expose`] is the one way to the value.
pub struct SecretValue {
    name: String,
    value: Zeroizing<String>,
}

impl SecretValue {
    /// The secret's value (for the variable or header it is handed as, and nothing else).
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// The `[[secret]]` it is the value of.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A short fingerprint a record may carry: the first 8 hex digits of SHA-256 over a
    /// label and the value (which says whether two records saw the same value, and nothing a
    /// guess of a strong token could be checked against cheaply enough to matter).
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"boxmaker secret fingerprint\0");
        h.update(self.value.as_bytes());
        h.finalize()
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[secret {}]", self.name)
    }
}

impl std::fmt::Display for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[secret {}]", self.name)
    }
}

/// Why a secret could not be read: each one sentence naming the secret and where it was
/// looked for, never any part of a value.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error(
        "secret {name:?} is read from the variable {var}, which is not set in boxmaker's environment"
    )]
    EnvUnset { name: String, var: String },
    #[error("secret {name:?}: the variable {var} does not hold UTF-8 text")]
    EnvNotText { name: String, var: String },
    #[error("secret {name:?}: cannot open {path}: {source}")]
    FileOpen {
        name: String,
        path: String,
        source: std::io::Error,
    },
    #[error("secret {name:?}: {path} is not a regular file")]
    FileNotRegular { name: String, path: String },
    #[error(
        "secret {name:?}: {path} is owned by uid {owner}, not by boxmaker's user (uid {me}); \
         a secret's file is the user's own"
    )]
    FileOwner {
        name: String,
        path: String,
        owner: u32,
        me: u32,
    },
    #[error(
        "secret {name:?}: {path} has mode {mode:04o}, which lets others read or write it; \
         make it private with `chmod 600 {path}`"
    )]
    FileMode {
        name: String,
        path: String,
        mode: u32,
    },
    #[error("secret {name:?}: cannot read {path}: {source}")]
    FileRead {
        name: String,
        path: String,
        source: std::io::Error,
    },
    #[error("secret {name:?}: cannot run `{command}`: {source}")]
    CommandStart {
        name: String,
        command: String,
        source: std::io::Error,
    },
    #[error(
        "secret {name:?}: `{command}` ended with {status} (its output is not shown; run it \
         yourself to see why)"
    )]
    CommandFailed {
        name: String,
        command: String,
        status: String,
    },
    #[error("secret {name:?}: `{command}` did not finish within {secs} s; it was killed")]
    CommandTimeout {
        name: String,
        command: String,
        secs: u64,
    },
    #[error("secret {name:?} from {from} is over {MAX_LEN} bytes")]
    TooLong { name: String, from: String },
    #[error("secret {name:?} from {from} is not UTF-8 text")]
    NotText { name: String, from: String },
    #[error(
        "secret {name:?} from {from} is {len} bytes long; a secret shorter than {MIN_LEN} bytes \
         cannot be told apart from ordinary text in answers"
    )]
    TooShort {
        name: String,
        from: String,
        len: usize,
    },
}

/// Checks that `path` is a file a secret may be read from: a regular file (a symlink is
/// followed), owned by this process's user, that no one else may read or write (mode 0600
/// or stricter). Looks at its metadata only.
pub fn check_file(name: &str, path: &Path) -> Result<(), SecretError> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|source| SecretError::FileOpen {
        name: name.into(),
        path: shown.clone(),
        source,
    })?;
    check_meta(name, &shown, &meta)
}

fn check_meta(name: &str, path: &str, meta: &std::fs::Metadata) -> Result<(), SecretError> {
    if !meta.file_type().is_file() {
        return Err(SecretError::FileNotRegular {
            name: name.into(),
            path: path.into(),
        });
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(SecretError::FileOwner {
            name: name.into(),
            path: path.into(),
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(SecretError::FileMode {
            name: name.into(),
            path: path.into(),
            mode,
        });
    }
    Ok(())
}

/// Reads `secret`'s value from where the config says.
pub fn read(secret: &Secret) -> Result<SecretValue, SecretError> {
    let name = secret.name.clone();
    let from = secret.source.describe();
    let bytes: Zeroizing<Vec<u8>> = match &secret.source {
        SecretSource::Env(var) => match std::env::var_os(var) {
            None => {
                return Err(SecretError::EnvUnset {
                    name,
                    var: var.clone(),
                });
            }
            Some(v) => match v.into_string() {
                Ok(s) => Zeroizing::new(s.into_bytes()),
                Err(_) => {
                    return Err(SecretError::EnvNotText {
                        name,
                        var: var.clone(),
                    });
                }
            },
        },
        SecretSource::File(path) => read_file(&name, path)?,
        SecretSource::Command(argv) => run_command(&name, argv)?,
    };
    if bytes.len() > MAX_LEN {
        return Err(SecretError::TooLong { name, from });
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        Err(_) => return Err(SecretError::NotText { name, from }),
    };
    // One trailing newline (what `echo` and an editor add) is not part of a token.
    let text = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text);
    if text.len() < MIN_LEN {
        return Err(SecretError::TooShort {
            name,
            from,
            len: text.len(),
        });
    }
    Ok(SecretValue {
        name,
        value: Zeroizing::new(text.to_string()),
    })
}

fn read_file(name: &str, path: &Path) -> Result<Zeroizing<Vec<u8>>, SecretError> {
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display().to_string();
    // Opened first, then checked: the metadata is the opened file's own, so the file read is
    // the file checked.
    // Without waiting: a FIFO at the path would otherwise hold the open until some writer
    // came (the check below then refuses it as not a regular file).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(|source| SecretError::FileOpen {
            name: name.into(),
            path: shown.clone(),
            source,
        })?;
    let meta = file.metadata().map_err(|source| SecretError::FileRead {
        name: name.into(),
        path: shown.clone(),
        source,
    })?;
    check_meta(name, &shown, &meta)?;
    let mut out = Zeroizing::new(Vec::new());
    file.take(MAX_LEN as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|source| SecretError::FileRead {
            name: name.into(),
            path: shown,
            source,
        })?;
    Ok(out)
}

fn run_command(name: &str, argv: &[String]) -> Result<Zeroizing<Vec<u8>>, SecretError> {
    use std::os::unix::process::CommandExt;
    let command = argv.join(" ");
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| SecretError::CommandFailed {
            name: name.into(),
            command: command.clone(),
            status: "no program".into(),
        })?;
    // No shell; its stderr is not kept (it is not shown anywhere, so it cannot carry the
    // value either); its own process group, so a timeout kills what it started too.
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|source| SecretError::CommandStart {
            name: name.into(),
            command: command.clone(),
            source,
        })?;
    // Read on a thread of its own, handed over a chunk at a time: what it left running (a
    // helper it started) may hold the pipe open after it exits, and waiting for the end of
    // the pipe would then wait without end, holding the call that needs the secret.
    let mut stdout = child.stdout.take();
    let (chunks, said) = std::sync::mpsc::channel::<Zeroizing<Vec<u8>>>();
    std::thread::spawn(move || {
        let Some(s) = stdout.as_mut() else { return };
        let mut buf = Zeroizing::new(vec![0u8; 8192]);
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    // A reader gone (the command is over for the caller): keep draining,
                    // so nothing it left behind blocks on a full pipe.
                    let _ = chunks.send(Zeroizing::new(buf[..n].to_vec()));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
    let mut out = Zeroizing::new(Vec::new());
    let mut take = |chunk: Zeroizing<Vec<u8>>| {
        if out.len() <= MAX_LEN {
            let room = MAX_LEN + 1 - out.len();
            out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
    };
    let started = Instant::now();
    let status = loop {
        while let Ok(chunk) = said.try_recv() {
            take(chunk);
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= COMMAND_TIMEOUT => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    let Some(status) = status else {
        if let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap_or(0)) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = child.kill();
        let _ = child.wait();
        return Err(SecretError::CommandTimeout {
            name: name.into(),
            command,
            secs: COMMAND_TIMEOUT.as_secs(),
        });
    };
    // What it wrote before it exited is in the pipe: read until the pipe's end, or until
    // nothing more has come for a moment (something it left running holds the pipe).
    while let Ok(chunk) = said.recv_timeout(EXITED_GRACE) {
        take(chunk);
    }
    if !status.success() {
        let status = match status.code() {
            Some(c) => format!("exit status {c}"),
            None => "a signal".to_string(),
        };
        return Err(SecretError::CommandFailed {
            name: name.into(),
            command,
            status,
        });
    }
    Ok(out)
}

/// What replaces a secret's value, or any encoding of it, in what the model sees.
pub fn marker(name: &str) -> String {
    format!("[secret {name}]")
}

/// Replaces secrets' values and their common encodings by `[secret NAME]`.
#[derive(Default)]
pub struct Redactor {
    /// (pattern, marker), longest pattern first.
    patterns: Vec<(Vec<u8>, String)>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("patterns", &self.patterns.len())
            .finish()
    }
}

/// Every text `value` is likely to be shown as: itself, JSON-escaped, base64 (standard and
/// URL-safe, padded and not, and the characters that depend only on it at each alignment
/// inside a longer base64 text), percent-encoded (both cases, `+` or `%20` for a space) and
/// hex (both cases). Only those of at least [`MIN_PATTERN`] bytes.
pub fn encodings(value: &str) -> BTreeSet<Vec<u8>> {
    let v = value.as_bytes();
    let mut out: BTreeSet<Vec<u8>> = BTreeSet::new();
    out.insert(v.to_vec());
    if let Ok(json) = serde_json::to_string(value)
        && let Some(inner) = json.strip_prefix('"').and_then(|j| j.strip_suffix('"'))
    {
        out.insert(inner.as_bytes().to_vec());
    }
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        out.insert(engine.encode(v).into_bytes());
    }
    for engine in [&STANDARD, &URL_SAFE] {
        for k in 0..3usize {
            let mut shifted = vec![0u8; k];
            shifted.extend_from_slice(v);
            let text = engine.encode(&shifted);
            // Character i holds bits [6i, 6i+6); the value's are [8k, 8k+8n).
            let first = (8 * k).div_ceil(6);
            let end = (8 * (k + v.len())) / 6;
            if let Some(core) = text.as_bytes().get(first..end) {
                out.insert(core.to_vec());
            }
        }
    }
    for upper in [true, false] {
        for plus in [true, false] {
            out.insert(percent(v, upper, plus).into_bytes());
        }
        out.insert(hex(v, upper).into_bytes());
    }
    out.retain(|p| p.len() >= MIN_PATTERN);
    out
}

fn percent(v: &[u8], upper: bool, plus: bool) -> String {
    let mut s = String::with_capacity(v.len() * 3);
    for &b in v {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            s.push(char::from(b));
        } else if b == b' ' && plus {
            s.push('+');
        } else if upper {
            s.push_str(&format!("%{b:02X}"));
        } else {
            s.push_str(&format!("%{b:02x}"));
        }
    }
    s
}

fn hex(v: &[u8], upper: bool) -> String {
    v.iter()
        .map(|b| {
            if upper {
                format!("{b:02X}")
            } else {
                format!("{b:02x}")
            }
        })
        .collect()
}

/// `hay` with every `pattern` replaced by `with`, or `None` when it holds none.
fn replace_bytes(hay: &[u8], pattern: &[u8], with: &[u8]) -> Option<Vec<u8>> {
    let first = find(hay, pattern)?;
    let mut out = Vec::with_capacity(hay.len());
    let mut at = 0;
    let mut next = Some(first);
    while let Some(i) = next {
        out.extend_from_slice(hay.get(at..at + i).unwrap_or_default());
        out.extend_from_slice(with);
        at += i + pattern.len();
        next = hay.get(at..).and_then(|rest| find(rest, pattern));
    }
    out.extend_from_slice(hay.get(at..).unwrap_or_default());
    Some(out)
}

fn find(hay: &[u8], pattern: &[u8]) -> Option<usize> {
    let (&first, _) = pattern.split_first()?;
    if hay.len() < pattern.len() {
        return None;
    }
    let last = hay.len() - pattern.len();
    let mut i = 0;
    while i <= last {
        let off = hay.get(i..=last)?.iter().position(|&b| b == first)?;
        i += off;
        if hay.get(i..i + pattern.len()) == Some(pattern) {
            return Some(i);
        }
        i += 1;
    }
    None
}

impl Redactor {
    /// A redactor of `values` (each a secret's name and value).
    pub fn new<'a>(values: impl IntoIterator<Item = &'a SecretValue>) -> Self {
        let mut patterns: Vec<(Vec<u8>, String)> = Vec::new();
        for v in values {
            let m = marker(v.name());
            for p in encodings(v.expose()) {
                patterns.push((p, m.clone()));
            }
        }
        // Two secrets with one value: the same marker every time (the first name), not
        // whichever the map yielded first.
        patterns.sort_by(|a, b| {
            b.0.len()
                .cmp(&a.0.len())
                .then_with(|| a.0.cmp(&b.0))
                .then_with(|| a.1.cmp(&b.1))
        });
        patterns.dedup_by(|a, b| a.0 == b.0);
        Self { patterns }
    }

    /// Whether it redacts nothing (no secret read).
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The longest text it looks for, in bytes.
    pub fn longest(&self) -> usize {
        self.patterns.first().map_or(0, |p| p.0.len())
    }

    /// `text` with every value and encoding replaced.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // A value is UTF-8 and so is every encoding: replacing whole ones keeps it text.
            Cow::Owned(b) => Cow::Owned(String::from_utf8_lossy(&b).into_owned()),
        }
    }

    /// `bytes` with every value and encoding replaced.
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let mut cur: Cow<'a, [u8]> = Cow::Borrowed(bytes);
        for (p, m) in &self.patterns {
            if let Some(next) = replace_bytes(&cur, p, m.as_bytes()) {
                cur = Cow::Owned(next);
            }
        }
        cur
    }

    /// Every string (and object key) of `v` redacted in place.
    pub fn redact_value(&self, v: &mut serde_json::Value) {
        if self.is_empty() {
            return;
        }
        let mut stack = vec![v];
        while let Some(v) = stack.pop() {
            match v {
                serde_json::Value::String(s) => {
                    if let Cow::Owned(r) = self.redact(s) {
                        *s = r;
                    }
                }
                serde_json::Value::Array(a) => stack.extend(a.iter_mut()),
                serde_json::Value::Object(o) => {
                    if o.keys().any(|k| matches!(self.redact(k), Cow::Owned(_))) {
                        let taken = std::mem::take(o);
                        for (k, x) in taken {
                            o.insert(self.redact(&k).into_owned(), x);
                        }
                    }
                    stack.extend(o.values_mut());
                }
                _ => {}
            }
        }
    }

    /// `resp` with every secret redacted from what it carries: a result's content (in the
    /// form it crosses in: for a downstream server, the JSON of its blocks and structured
    /// content), a failure's message. A result that would no longer fit a frame once
    /// redacted becomes a `failed` saying so.
    pub fn redact_response(&self, resp: ToolResponse) -> ToolResponse {
        if self.is_empty() {
            return resp;
        }
        match resp {
            ToolResponse::Result {
                content,
                class,
                untrusted,
                truncated,
            } => {
                let Cow::Owned(redacted) = self.redact(&content) else {
                    return ToolResponse::Result {
                        content,
                        class,
                        untrusted,
                        truncated,
                    };
                };
                let out = ToolResponse::Result {
                    content: redacted,
                    class,
                    untrusted,
                    truncated,
                };
                let fits = serde_json::to_vec(&proto::Envelope::response(u64::MAX, out.clone()))
                    .is_ok_and(|v| v.len() <= proto::MAX_FRAME);
                if fits {
                    out
                } else {
                    proto::run::failed(
                        "the answer carried secrets, and once they were redacted it no longer \
                         fit one frame; nothing of it is shown"
                            .into(),
                    )
                }
            }
            ToolResponse::Failed { message } => match self.redact(&message) {
                Cow::Borrowed(_) => ToolResponse::Failed { message },
                Cow::Owned(m) => proto::run::failed(m),
            },
            other => other,
        }
    }
}

/// A redactor over a stream read in chunks (a server's stderr): a value cut across two
/// chunks is still found, because the last bytes of each chunk wait for the next.
#[derive(Debug)]
pub struct StreamRedactor {
    redactor: Arc<Redactor>,
    held: Vec<u8>,
}

impl StreamRedactor {
    pub fn new(redactor: Arc<Redactor>) -> Self {
        Self {
            redactor,
            held: Vec::new(),
        }
    }

    /// What of the stream so far can be written out, redacted.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.redactor.is_empty() {
            return chunk.to_vec();
        }
        self.held.extend_from_slice(chunk);
        let redacted = self.redactor.redact_bytes(&self.held).into_owned();
        let keep = self
            .redactor
            .longest()
            .saturating_sub(1)
            .min(redacted.len());
        let (out, rest) = redacted.split_at(redacted.len() - keep);
        self.held = rest.to_vec();
        out.to_vec()
    }

    /// The rest, at the end of the stream.
    pub fn finish(&mut self) -> Vec<u8> {
        let held = std::mem::take(&mut self.held);
        self.redactor.redact_bytes(&held).into_owned()
    }
}

/// The secrets of one runner: read once each, when first needed.
pub struct Secrets {
    defs: Vec<Secret>,
    /// Whether this process may read secrets at all (not in a process that hosts a front).
    reads: bool,
    values: Mutex<HashMap<String, Arc<SecretValue>>>,
    /// Whether every secret has been tried once, for redaction.
    tried_all: Mutex<bool>,
    redactor: RwLock<Arc<Redactor>>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let read = self
            .values
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("Secrets")
            .field("defined", &self.defs.len())
            .field("read", &read)
            .field("reads", &self.reads)
            .finish()
    }
}

impl Secrets {
    pub fn new(defs: Vec<Secret>, reads: bool) -> Self {
        Self {
            defs,
            reads,
            values: Mutex::default(),
            tried_all: Mutex::new(false),
            redactor: RwLock::default(),
        }
    }

    /// Whether this process reads secrets (see `runner::Runner::without_secrets`).
    pub fn reads(&self) -> bool {
        self.reads
    }

    /// The value of the secret `name`, read now if it was not yet.
    pub fn get(&self, name: &str) -> Result<Arc<SecretValue>, String> {
        if !self.reads {
            return Err(format!(
                "secret {name:?} is not read in this process (it hosts a front); the runner \
                 reads it"
            ));
        }
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = values.get(name) {
            return Ok(v.clone());
        }
        let def = self
            .defs
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| format!("the config defines no secret {name:?}"))?;
        let v = Arc::new(read(def).map_err(|e| e.to_string())?);
        values.insert(name.to_string(), v.clone());
        let redactor = Arc::new(Redactor::new(values.values().map(Arc::as_ref)));
        drop(values);
        *self
            .redactor
            .write()
            .unwrap_or_else(PoisonError::into_inner) = redactor;
        Ok(v)
    }

    /// Adds `value` (a credential boxmaker obtained itself: an OAuth token) to what is
    /// redacted, as `[secret NAME]`. Kept for the runner's life: a token refreshed away may
    /// still be echoed.
    pub fn remember(&self, name: &str, value: &str) {
        if value.is_empty() {
            return;
        }
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        let key = format!("\0{name}\0{}", values.len());
        if values
            .values()
            .any(|v| v.name() == name && v.expose() == value)
        {
            return;
        }
        values.insert(
            key,
            Arc::new(SecretValue {
                name: name.to_string(),
                value: Zeroizing::new(value.to_string()),
            }),
        );
        let redactor = Arc::new(Redactor::new(values.values().map(Arc::as_ref)));
        drop(values);
        *self
            .redactor
            .write()
            .unwrap_or_else(PoisonError::into_inner) = redactor;
    }

    /// The redactor of every secret read so far (every one the config defines is tried once
    /// first; one that cannot be read here was handed to nothing by this runner).
    pub fn redactor(&self) -> Arc<Redactor> {
        if !self.reads {
            return Arc::default();
        }
        let mut tried = self
            .tried_all
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !*tried {
            *tried = true;
            for d in &self.defs {
                let _ = self.get(&d.name);
            }
        }
        drop(tried);
        self.redactor
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(name: &str, v: &str) -> SecretValue {
        SecretValue {
            name: name.into(),
            value: Zeroizing::new(v.into()),
        }
    }

    #[test]
    fn a_value_shows_itself_only_by_name() {
        let v = value("gh", "ghp_abcdefghijklmnop");
        assert_eq!(format!("{v:?}"), "[secret gh]");
        assert_eq!(format!("{v}"), "[secret gh]");
        assert_eq!(format!("{:?}", Some(&v)), "Some([secret gh])");
        assert_eq!(v.fingerprint().len(), 8);
        assert!(!v.fingerprint().contains("ghp"));
    }

    #[test]
    fn every_encoding_of_the_value_is_redacted() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        let secret = "s3cr3t?tok/en+value ~ÿ";
        let r = Redactor::new([&value("gh", secret)]);
        let b = secret.as_bytes();
        let forms = [
            secret.to_string(),
            STANDARD.encode(b),
            URL_SAFE_NO_PAD.encode(b),
            hex(b, false),
            hex(b, true),
            percent(b, true, false),
            percent(b, false, true),
            // Inside a longer base64 text, at every alignment.
            STANDARD.encode(format!("Bearer {secret}")),
            STANDARD.encode(format!("x:{secret}!")),
            STANDARD.encode(format!("ab{secret}cd")),
            serde_json::to_string(secret).unwrap(),
        ];
        for f in forms {
            let text = format!("before {f} after");
            let out = r.redact(&text).into_owned();
            assert!(out.contains("[secret gh]"), "{f}: {out}");
            for e in encodings(secret) {
                assert!(
                    find(out.as_bytes(), &e).is_none(),
                    "{f}: {out} still holds {}",
                    String::from_utf8_lossy(&e)
                );
            }
        }
        assert_eq!(r.redact("nothing here"), "nothing here");
    }

    #[test]
    fn a_value_cut_across_chunks_is_still_redacted() {
        let secret = "abcdefghij0123456789";
        let r = Arc::new(Redactor::new([&value("k", secret)]));
        let text = format!("line one {secret} and {secret}\n");
        for cut in 1..text.len() {
            let mut s = StreamRedactor::new(r.clone());
            let mut out = s.push(&text.as_bytes()[..cut]);
            out.extend(s.push(&text.as_bytes()[cut..]));
            out.extend(s.finish());
            let out = String::from_utf8(out).unwrap();
            assert_eq!(out, "line one [secret k] and [secret k]\n", "cut at {cut}");
        }
    }

    #[test]
    fn a_redacted_json_answer_stays_json() {
        let secret = "quote\"back\\slash-0123";
        let r = Redactor::new([&value("q", secret)]);
        let content =
            serde_json::json!({"stdout": format!("x{secret}y"), "k": [secret]}).to_string();
        let out = r.redact(&content);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["stdout"], "x[secret q]y");
        assert_eq!(v["k"][0], "[secret q]");
    }

    #[test]
    fn a_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "0123456789abcdef\n").unwrap();
        let secret = Secret {
            name: "t".into(),
            source: SecretSource::File(path.clone()),
            line: 1,
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read(&secret).unwrap_err().to_string();
        assert!(e.contains("mode 0644") && e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(&secret).unwrap().expose(), "0123456789abcdef");
        let dir_secret = Secret {
            source: SecretSource::File(dir.path().to_path_buf()),
            ..secret
        };
        assert!(
            read(&dir_secret)
                .unwrap_err()
                .to_string()
                .contains("not a regular file")
        );
    }

    #[test]
    fn a_command_gives_its_output_and_its_failure_says_nothing_of_it() {
        let ok = Secret {
            name: "c".into(),
            source: SecretSource::Command(vec!["/bin/echo".into(), "from-a-command".into()]),
            line: 1,
        };
        assert_eq!(read(&ok).unwrap().expose(), "from-a-command");
        let bad = Secret {
            source: SecretSource::Command(vec![
                "/bin/sh".into(),
                "-c".into(),
                "echo $((6*7))-leaked-value; exit 3".into(),
            ]),
            ..ok.clone()
        };
        let e = read(&bad).unwrap_err().to_string();
        assert!(
            e.contains("exit status 3") && !e.contains("42-leaked"),
            "{e}"
        );
        let short = Secret {
            source: SecretSource::Command(vec!["/bin/echo".into(), "short".into()]),
            ..ok
        };
        let e = read(&short).unwrap_err().to_string();
        assert!(e.contains("5 bytes long") && !e.contains("short\""), "{e}");
    }

    /// `read`, on a thread, given `limit` to return.
    fn read_within(def: Secret, limit: Duration) -> Result<String, String> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(
                read(&def)
                    .map(|v| v.expose().to_string())
                    .map_err(|e| e.to_string()),
            );
        });
        rx.recv_timeout(limit)
            .unwrap_or_else(|_| panic!("reading the secret was still waiting at {limit:?}"))
    }

    /// A command that exits leaving a helper that holds its stdout open: the value it
    /// wrote is read, without waiting for the helper to end.
    #[test]
    fn a_command_that_leaves_a_helper_holding_its_output_is_not_waited_for() {
        let def = Secret {
            name: "c".into(),
            source: SecretSource::Command(vec![
                "/bin/sh".into(),
                "-c".into(),
                "echo from-a-command; sleep 30 &".into(),
            ]),
            line: 1,
        };
        let started = Instant::now();
        assert_eq!(
            read_within(def, Duration::from_secs(10)).unwrap(),
            "from-a-command"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    /// A FIFO named as a secret's file is refused, not waited on for a writer.
    #[test]
    fn a_fifo_in_place_of_a_secret_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("token");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let def = Secret {
            name: "f".into(),
            source: SecretSource::File(fifo),
            line: 1,
        };
        let e = read_within(def, Duration::from_secs(10)).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
