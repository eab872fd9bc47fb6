//! Remembered approvals (docs/spec.md §3.3 step 6): "approve for this session for N minutes"
//! is a run-time grant for that session and that tool, scoped to those exact arguments (the
//! SHA-256 of their canonical form), expiring when the person said.
//!
//! It is never broader than what the person saw, and never a general grant:
//! - it answers only an `ask`: the policy decides first, over the config's grants and the
//!   general run-time ones (a remembered approval is not among them), and only when that
//!   decision is `ask` is a remembered approval looked for. It never turns a `deny` — no
//!   grant, a `deny` grant, an expired grant, a taint too high — into a run;
//! - it matches the session and the tool by equality, not as patterns, and the arguments
//!   by their canonical form: the same JSON value, whatever the key order, white space or
//!   string escapes; a number must be written the same way, and arguments that are not one
//!   strict JSON text (a duplicated key, bad UTF-8 escapes, nesting past [`MAX_DEPTH`]) have
//!   no canonical form and are never remembered;
//! - it admits the session's taint only up to what the person saw, raised by what the call
//!   itself brings in ([`own_label`]: running the call they approved puts its own label in
//!   the taint, and running it again brings nothing new): its `max_class` is the higher of
//!   the class shown and the call's own class, and if the session was clean when shown and
//!   the tool is trusted, untrusted content ends it;
//! - it binds what the call runs, not only its text (docs/spec.md §3.3 step 6, "What an
//!   approval binds"): the digest of every file the call names in a writable place, as the
//!   runner found it when the person was asked. A call whose files bind anything else — a
//!   script rewritten, a file that appeared, a symlink repointed — is asked about again,
//!   the person shown which file changed; an approval that names a file it cannot bind
//!   (a symlink, a file too large) is never remembered;
//! - it is checked at every call, at that call's taint and time, like every grant.

use super::*;

/// The deepest nesting of arrays and objects the canonical form follows. Deeper arguments
/// (which a model can send: a frame holds half a million `[`) are never remembered, and
/// the parser never recurses past this.
pub const MAX_DEPTH: usize = 128;

/// The canonical form of a call's arguments: the JSON value with object keys in byte order,
/// no white space, strings written as `serde_json` writes them, numbers as written. `None`
/// when the text is not exactly one strict JSON value (see the module docs).
pub fn canonical_arguments(text: &str) -> Option<String> {
    let mut p = Parser {
        bytes: text.as_bytes(),
        at: 0,
    };
    let mut out = String::with_capacity(text.len());
    p.skip_ws();
    p.value(&mut out, 0)?;
    p.skip_ws();
    (p.at == p.bytes.len()).then_some(out)
}

/// The SHA-256 (hex) of the canonical form of `text`, if it has one.
pub fn arguments_sha256(text: &str) -> Option<String> {
    canonical_arguments(text).map(|c| audit::sha256_hex(c.as_bytes()))
}

/// A small strict JSON reader that writes the canonical form as it reads.
struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.at += 1)
    }

    fn literal(&mut self, word: &str, out: &mut String) -> Option<()> {
        let end = self.at.checked_add(word.len())?;
        (self.bytes.get(self.at..end)? == word.as_bytes()).then(|| {
            self.at = end;
            out.push_str(word);
        })
    }

    fn value(&mut self, out: &mut String, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(out, depth.checked_add(1).filter(|d| *d <= MAX_DEPTH)?),
            b'[' => self.array(out, depth.checked_add(1).filter(|d| *d <= MAX_DEPTH)?),
            b'"' => {
                let s = self.string()?;
                out.push_str(&serde_json::to_string(&s).ok()?);
                Some(())
            }
            b't' => self.literal("true", out),
            b'f' => self.literal("false", out),
            b'n' => self.literal("null", out),
            b'-' | b'0'..=b'9' => self.number(out),
            _ => None,
        }
    }

    fn object(&mut self, out: &mut String, depth: usize) -> Option<()> {
        self.eat(b'{')?;
        let mut members: Vec<(String, String)> = Vec::new();
        self.skip_ws();
        if self.eat(b'}').is_none() {
            loop {
                self.skip_ws();
                let key = self.string()?;
                self.skip_ws();
                self.eat(b':')?;
                self.skip_ws();
                let mut v = String::new();
                self.value(&mut v, depth)?;
                members.push((key, v));
                self.skip_ws();
                if self.eat(b',').is_some() {
                    continue;
                }
                self.eat(b'}')?;
                break;
            }
        }
        members.sort_by(|a, b| a.0.cmp(&b.0));
        // A duplicated key is refused: which of its values would a tool read?
        if members.windows(2).any(|w| w[0].0 == w[1].0) {
            return None;
        }
        out.push('{');
        for (i, (k, v)) in members.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(k).ok()?);
            out.push(':');
            out.push_str(v);
        }
        out.push('}');
        Some(())
    }

    fn array(&mut self, out: &mut String, depth: usize) -> Option<()> {
        self.eat(b'[')?;
        out.push('[');
        self.skip_ws();
        if self.eat(b']').is_none() {
            let mut first = true;
            loop {
                self.skip_ws();
                if !first {
                    out.push(',');
                }
                first = false;
                self.value(out, depth)?;
                self.skip_ws();
                if self.eat(b',').is_some() {
                    continue;
                }
                self.eat(b']')?;
                break;
            }
        }
        out.push(']');
        Some(())
    }

    /// A string token, decoded (serde_json checks the escapes and the UTF-8).
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        self.eat(b'"')?;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    break;
                }
                b'\\' => self.at = self.at.checked_add(2)?,
                _ => self.at += 1,
            }
        }
        let token = std::str::from_utf8(self.bytes.get(start..self.at)?).ok()?;
        serde_json::from_str::<String>(token).ok()
    }

    /// A number, kept as written (after checking JSON's grammar for it).
    fn number(&mut self, out: &mut String) -> Option<()> {
        let start = self.at;
        let _ = self.eat(b'-');
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat(b'.').is_some() {
            self.peek().filter(u8::is_ascii_digit)?;
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.peek().filter(u8::is_ascii_digit)?;
            self.digits();
        }
        out.push_str(std::str::from_utf8(self.bytes.get(start..self.at)?).ok()?);
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }
}

/// A remembered approval, as the call path looks it up.
#[derive(Debug, Clone)]
pub(super) struct Remembered {
    pub(super) grant: i64,
    pub(super) session: SessionId,
    pub(super) tool: String,
    pub(super) args_sha256: String,
    pub(super) expires: Option<Timestamp>,
    pub(super) max_class: DataClass,
    /// Whether it still answers once the session has seen untrusted content.
    pub(super) untrusted_ok: bool,
    /// The files it binds.
    pub(super) files: Vec<FileDigest>,
}

/// What the remembered approvals say about one call.
#[derive(Debug, Default)]
pub(super) struct Lookup {
    /// The remembered approval that answers it.
    pub(super) grant: Option<i64>,
    /// When none does but one would have except for the files: the files that one bound,
    /// so the person is shown what changed.
    pub(super) before: Option<Vec<FileDigest>>,
}

/// Marks each of `files` whose binding differs from what `before` bound at its path: the
/// file changed since a person approved this same call (`was` in the approval shown).
pub(super) fn mark_changed(files: &mut [FileDigest], before: &Option<Vec<FileDigest>>) {
    let Some(before) = before else {
        return;
    };
    for f in files.iter_mut() {
        let was = before
            .iter()
            .find(|b| b.path == f.path)
            .map_or_else(|| "not named".to_string(), FileDigest::binding);
        if was != f.binding() {
            f.was = Some(was);
        }
    }
}

impl Remembered {
    fn of(row: &GrantRow) -> Option<Remembered> {
        let scope = row.scope.as_ref()?;
        Some(Remembered {
            grant: row.id,
            session: SessionId::new(row.sessions.clone()).ok()?,
            tool: row.tool.clone(),
            args_sha256: scope.args_sha256.clone(),
            expires: row.expires,
            max_class: row.max_class.unwrap_or(DataClass::Public),
            untrusted_ok: row.if_untrusted == Some(store::Effect::Allow),
            files: scope.files.clone(),
        })
    }

    /// Whether it answers an `ask` for a call with these arguments at this taint and time.
    fn answers(&self, args_sha256: &str, taint: Taint, now: Timestamp) -> bool {
        self.args_sha256 == args_sha256
            && self.expires.is_none_or(|t| now < t)
            && taint.class() <= self.max_class
            && (!taint.untrusted() || self.untrusted_ok)
    }
}

impl Gate {
    /// The live remembered approvals (every one not revoked; expiry is checked per call),
    /// read from the store once per change to the run-time grants.
    pub(super) fn remembered(&self) -> Result<Arc<Vec<Remembered>>, GateError> {
        self.follow_fleet_grants()?;
        let mut cache = lock(&self.remembered);
        if let Some(r) = cache.as_ref() {
            return Ok(Arc::clone(r));
        }
        let rows = lock(&self.store).grants()?;
        let list: Vec<Remembered> = rows.iter().filter_map(Remembered::of).collect();
        let list = Arc::new(list);
        *cache = Some(Arc::clone(&list));
        Ok(list)
    }

    /// The remembered approval that answers this call's `ask`, if one does: the same
    /// session, tool and arguments, still admitting the taint, and binding the same files
    /// as `files` (what the call would run now). Called only when the policy's decision is
    /// `ask`.
    pub(super) fn remembered_answer(
        &self,
        req: &ToolRequest,
        files: &[FileDigest],
        taint: Taint,
        now: Timestamp,
    ) -> Result<Lookup, GateError> {
        let list = self.remembered()?;
        let mut candidates = list
            .iter()
            .filter(|r| r.session == req.session && r.tool == req.tool)
            .peekable();
        if candidates.peek().is_none() {
            return Ok(Lookup::default());
        }
        let Some(hash) = arguments_sha256(&req.arguments) else {
            return Ok(Lookup::default());
        };
        let mut lookup = Lookup::default();
        for r in candidates.filter(|r| r.answers(&hash, taint, now)) {
            if proto::run::same_binding(&r.files, files) {
                lookup.grant = Some(r.grant);
                lookup.before = None;
                return Ok(lookup);
            }
            lookup.before = Some(r.files.clone());
        }
        Ok(lookup)
    }

    /// What an `approve_for_session` writes: the person saw `shown` (or, from the command
    /// line, nothing but the call: the taint now); the remembered approval admits no more
    /// than both that and the taint now.
    pub(super) fn remember_for(
        &self,
        row: &ApprovalRow,
        seconds: u64,
        shown: Option<(DataClass, bool)>,
        now: Timestamp,
    ) -> Result<store::Remember, (ControlErrorCode, String)> {
        if seconds == 0 || seconds > control::REMEMBER_MAX_SECONDS {
            return Err((
                ControlErrorCode::BadMessage,
                format!(
                    "an approval is remembered for 1 s to {} h, not {seconds} s",
                    control::REMEMBER_MAX_SECONDS / 3600
                ),
            ));
        }
        let args_sha256 = arguments_sha256(&row.arguments).ok_or_else(|| {
            (
                ControlErrorCode::Conflict,
                format!(
                    "the arguments of {} are not one strict JSON value (a duplicated key, or \
                     nested deeper than {MAX_DEPTH}), so they cannot be remembered; approve \
                     it once instead",
                    row.id
                ),
            )
        })?;
        // What cannot be bound cannot be remembered: such a call asks every time.
        if let Some(f) = row.files.iter().find(|f| !f.bindable()) {
            return Err((
                ControlErrorCode::Conflict,
                format!(
                    "{} cannot be remembered for the session: {}{}. Approve it once instead",
                    row.id,
                    match &f.note {
                        Some(note) if f.path.is_empty() || note.starts_with(&f.path) => {
                            String::new()
                        }
                        _ => format!("{}: ", f.path),
                    },
                    f.note.as_deref().unwrap_or("its content cannot be bound"),
                ),
            ));
        }
        let current = lock(&self.store)
            .taint(&row.session)
            .map_err(|e| (ControlErrorCode::Internal, e.to_string()))?;
        let (class, untrusted) = match shown {
            Some((c, u)) => (c.min(current.class), u && current.untrusted),
            None => (current.class, current.untrusted),
        };
        let own = own_label(&self.config, &row.tool, &row.arguments);
        let (class, untrusted) = (class.max(own.class), untrusted || own.untrusted);
        Ok(store::Remember {
            expires: now.plus(seconds),
            max_class: class,
            if_untrusted: if untrusted {
                store::Effect::Allow
            } else {
                store::Effect::Ask
            },
            args_sha256,
            files: row
                .files
                .iter()
                .map(|f| FileDigest {
                    was: None,
                    ..f.clone()
                })
                .collect(),
        })
    }
}

/// The label a call to `tool` with `arguments` puts in its session's taint by itself
/// (docs/spec.md §3.4, §3.5): for `run` and a downstream server, which can read their whole
/// box, the tool's class raised to its reach, and the tool's `untrusted`; for the file
/// tools, the tool's own floor (what they read under a mount is on top, and is not
/// covered); both raised by every label rule that matches the call.
pub fn own_label(config: &Config, tool: &str, arguments: &str) -> Label {
    config.answer_label_for(tool, arguments).label
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_value_has_one_canonical_form() {
        let a = canonical_arguments(r#"{"b":[1, 2.50, -0, 1e3], "a" : {"y":null,"x":true}}"#);
        let b = canonical_arguments("{\"a\":{\"x\":true,\"y\":null},\"b\":[1,2.50,-0,1e3]}\n");
        assert_eq!(a, b);
        assert_eq!(
            a.unwrap(),
            r#"{"a":{"x":true,"y":null},"b":[1,2.50,-0,1e3]}"#
        );
        // String escapes are the same string.
        assert_eq!(
            canonical_arguments(r#"{"p":"\u0041\/b"}"#),
            canonical_arguments(r#"{"p":"A/b"}"#)
        );
        // Control characters stay escaped, so the canonical form is what a person sees.
        assert_eq!(
            canonical_arguments("{\"p\":\"a\\u001bb\"}").unwrap(),
            r#"{"p":"a\u001bb"}"#
        );
    }

    #[test]
    fn a_different_value_has_another_canonical_form() {
        let c = |t: &str| canonical_arguments(t).unwrap();
        assert_ne!(c(r#"{"n":1}"#), c(r#"{"n":1.0}"#));
        // Big integers are kept as written: no float rounding makes two amounts one.
        assert_ne!(
            c(r#"{"n":18446744073709551616}"#),
            c(r#"{"n":18446744073709551617}"#)
        );
        assert_ne!(c(r#"{"p":"a"}"#), c(r#"{"p":"a "}"#));
        assert_ne!(c(r#"{"argv":["a","b"]}"#), c(r#"{"argv":["b","a"]}"#));
        assert_ne!(c(r#"{"p":"\u202e"}"#), c(r#"{"p":""}"#));
    }

    #[test]
    fn text_that_is_not_one_strict_json_value_has_no_canonical_form() {
        for bad in [
            r#"{"path":"a","path":"b"}"#,
            r#"{"a":1}{"a":1}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":[1,]}"#,
            r#"{'a':1}"#,
            "{\"a\":\"\u{1}\"}",
            "",
            "nul",
        ] {
            assert_eq!(canonical_arguments(bad), None, "{bad}");
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(canonical_arguments(&deep), None);
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(canonical_arguments(&ok).is_some());
        // Half a million brackets: refused, without a stack overflow.
        assert_eq!(canonical_arguments(&"[".repeat(500_000)), None);
    }
}
