//! Values written in base64 or hex (docs/spec.md §3.7): a model, or a `run` box with
//! `base64 -d`, turns `REU4OTM3…` back into the IBAN it spells, so an answer that shows it so
//! shows the IBAN. A run is decoded only when it could hold a value and what it decodes to
//! is **text**: valid UTF-8 with no control character but tab and line breaks. A hash, an
//! id, a long word or an attachment decodes to bytes that are no text, and is read as what
//! it is, nothing more.
//!
//! - **base64**: a run of 11 or more characters (8 bytes) of the standard or the URL-safe alphabet
//!   (either, not both), `=` padding optional, that may go on across a line break where a
//!   line of a multiple of 4 characters, 40 or more, ends (MIME and PEM wrap base64 so);
//! - **hex**: a word of 16 or more hex digits, of even length (either case).
//!
//! What this costs is linear: every byte is in at most one run of each kind, and a run is
//! decoded once.

use std::ops::Range;

/// The shortest base64 run decoded, padding aside: 11 characters, 8 bytes (`ZXZpbC5jb20` is
/// `evil.com`).
const MIN_BASE64: usize = 11;

/// The shortest hex word decoded: 16 digits, 8 bytes.
const MIN_HEX: usize = 16;

/// The shortest line of a wrapped base64 block.
const MIN_WRAPPED_LINE: usize = 40;

/// Calls `f` with each run of `t` that decodes to text: where the run is, and the text.
pub(super) fn decoded_runs(t: &str, mut f: impl FnMut(Range<usize>, String)) {
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !is_base64_byte(b[i]) || (i > 0 && is_base64_byte(b[i - 1])) {
            i += 1;
            continue;
        }
        let end = base64_run_end(b, i);
        if let Some(text) = base64_text(&b[i..end]) {
            f(i..end, text);
        }
        i = end.max(i + 1);
    }
    // Hex words: a run of hex digits with no letter or digit on either side (in a path,
    // after a `/`, too).
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_hexdigit() || (i > 0 && b[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        let len = b[i..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        let end = i + len;
        if !b.get(end).is_some_and(u8::is_ascii_alphanumeric)
            && let Some(text) = hex_text(&b[i..end])
        {
            f(i..end, text);
        }
        i = end.max(i + 1);
    }
}

fn is_base64_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_')
}

/// Where the base64 run starting at `i` ends (after its padding).
fn base64_run_end(b: &[u8], i: usize) -> usize {
    let mut j = i;
    let mut line = 0;
    loop {
        match b.get(j) {
            Some(&c) if is_base64_byte(c) => {
                j += 1;
                line += 1;
            }
            Some(b'\r' | b'\n') if line >= MIN_WRAPPED_LINE && line % 4 == 0 => {
                let brk = if b.get(j) == Some(&b'\r') && b.get(j + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                if b.get(j + brk).is_some_and(|&c| is_base64_byte(c)) {
                    j += brk;
                    line = 0;
                } else {
                    break;
                }
            }
            _ => break,
        }
    }
    let mut pad = 0;
    while pad < 2 && b.get(j) == Some(&b'=') {
        j += 1;
        pad += 1;
    }
    j
}

/// The text a whole hex word spells.
fn hex_text(run: &[u8]) -> Option<String> {
    if run.len() < MIN_HEX || !run.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Vec<u8> = run
        .chunks_exact(2)
        .map(|p| (hex_digit(p[0]) << 4) | hex_digit(p[1]))
        .collect();
    as_text(bytes)
}

fn hex_digit(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// The text a base64 run spells.
fn base64_text(run: &[u8]) -> Option<String> {
    if run.iter().filter(|&&c| c != b'=').count() < MIN_BASE64 {
        return None;
    }
    let standard = run.iter().any(|c| matches!(c, b'+' | b'/'));
    let url_safe = run.iter().any(|c| matches!(c, b'-' | b'_'));
    if standard && url_safe {
        return None;
    }
    let mut bytes = Vec::with_capacity(run.len() / 4 * 3 + 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    let mut digits = 0usize;
    for &c in run {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'\r' | b'\n' => continue,
            b'=' => break,
            _ => return None,
        };
        digits += 1;
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push(((acc >> bits) & 0xff) as u8);
            // An attachment shows it is no text within its first bytes: stop there.
            if bytes.len() == PREFIX && !text_so_far(&bytes) {
                return None;
            }
        }
    }
    // One digit left over spells no byte: not base64.
    if digits % 4 == 1 {
        return None;
    }
    as_text(bytes)
}

/// How many decoded bytes are checked before the rest is decoded.
const PREFIX: usize = 48;

/// Whether `bytes` begin text: valid UTF-8 but perhaps for a character cut at the end, and
/// no control character but tab and line breaks.
fn text_so_far(bytes: &[u8]) -> bool {
    let valid = match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(bytes.get(..e.valid_up_to()).unwrap_or(&[])).unwrap_or("")
        }
        Err(_) => return false,
    };
    !valid
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
}

/// `bytes` when they are text: valid UTF-8, no control character but tab and line breaks.
fn as_text(bytes: Vec<u8>) -> Option<String> {
    let text = String::from_utf8(bytes).ok()?;
    let ok = text.chars().count() >= 4
        && !text
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'));
    ok.then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(t: &str) -> Vec<String> {
        let mut out = Vec::new();
        decoded_runs(t, |_, s| out.push(s));
        out
    }

    #[test]
    fn test_base64_and_hex_that_spell_text() {
        assert_eq!(decoded("x ZXZpbC5jb20= y"), ["evil.com"]);
        assert_eq!(decoded("x ZXZpbC5jb20 y"), ["evil.com"]);
        assert_eq!(decoded("6576696c2e636f6d2f706179"), ["evil.com/pay"]);
        assert_eq!(decoded("6576696C2E636F6D2F706179"), ["evil.com/pay"]);
        assert_eq!(decoded("https://x.com/6576696c2e636f6d"), ["evil.com"]);
        // URL-safe, with a wrapped line.
        let line = "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFh";
        assert_eq!(line.len() % 4, 0);
        let got = decoded(&format!("{line}\nYWJj"));
        assert_eq!(got.len(), 1);
        assert!(got[0].ends_with("aaaabc"), "{got:?}");
    }

    #[test]
    fn test_what_is_no_text_is_not_decoded() {
        for t in [
            "3f786850e387550fdab836ed7e6dc881de23001b",
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
            "short",
            "ab+cd_ef/ghijklmnop",
            "1234567890123456789",
        ] {
            assert!(decoded(t).is_empty(), "{t}: {:?}", decoded(t));
        }
    }
}
