//! Text as a person sees it: the one escape for every text shown (docs/spec.md §7), used by
//! the front (a call a person decides on), the CLI, the approvals page and the runner (a
//! downstream server's stderr in a `failed` answer, and `boxmaker tools log`).

/// Text as a person must see it to decide on it: every character that could make the
/// shown text differ from the text that runs — control characters (C0, DEL, C1, line and
/// paragraph separators), bidi overrides and isolates, zero-width and invisible characters,
/// variation selectors and tag characters — is written `\u{XXXX}`, and a `\u{` that was in
/// the text itself is written `\u{5c}u{`, so every `\u{` shown is an escape and the text is
/// recoverable. The one function for every place a person decides (the CLI now; a page or
/// a client's prompt later).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForPerson {
    /// The text, escaped.
    pub text: String,
    /// How many characters were escaped (a literal `\u{` is not counted).
    pub escaped: usize,
}

impl ForPerson {
    /// The marker to show beside the text when it holds escaped characters, else `""`.
    pub fn marker(&self) -> String {
        match self.escaped {
            0 => String::new(),
            1 => "  [holds 1 hidden or control character, shown as \\u{…}]".into(),
            n => format!("  [holds {n} hidden or control characters, shown as \\u{{…}}]"),
        }
    }
}

/// Whether `c` must not be shown as itself to a person deciding on a text.
pub fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}'
        | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
        | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}' | '\u{fff9}'..='\u{fffb}'
        | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0000}'..='\u{e007f}' | '\u{e0100}'..='\u{e01ef}')
}

/// `text` escaped for a person (see [`ForPerson`]).
pub fn for_person(text: &str) -> ForPerson {
    let mut out = String::with_capacity(text.len());
    let mut escaped = 0;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("\\u{") {
            out.push_str("\\u{5c}u{");
            rest = &rest[3..];
            continue;
        }
        if is_hidden(c) {
            escaped += 1;
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    ForPerson { text: out, escaped }
}
