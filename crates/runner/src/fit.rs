//! Cutting content so a `result` always fits in one frame (docs/spec.md §3.4).
//!
//! A tool never causes a `TooLarge`. The envelope that finally carries a result may be
//! re-wrapped by the gate with another `id`, so the budget is computed for the longest
//! possible id (`u64::MAX`, 20 digits) and the longest flags, and JSON escaping is counted per
//! character exactly as `serde_json` writes it (`"` and `\` and the five short escapes are two
//! bytes, other control characters six). The cut never splits a character.

use proto::{DataClass, Envelope, MAX_FRAME, ToolResponse};

/// The encoded size of a `result` envelope with empty content and the worst-case id and flags.
fn overhead(class: DataClass) -> usize {
    let probe = Envelope::response(
        u64::MAX,
        ToolResponse::Result {
            content: String::new(),
            class,
            untrusted: false,
            truncated: false,
        },
    );
    // Encoding a value of these types cannot fail; if it ever did, assume a generous bound.
    serde_json::to_vec(&probe).map_or(512, |v| v.len())
}

/// How many bytes `c` takes inside a JSON string as `serde_json` writes it.
pub fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{08}' | '\u{0c}' => 2,
        '\u{00}'..='\u{1f}' => 6,
        _ => c.len_utf8(),
    }
}

/// A `result` holding as much of `content` as fits in one frame; `truncated` says whether
/// anything was cut.
pub fn fit_result(mut content: String, class: DataClass, untrusted: bool) -> ToolResponse {
    let budget = MAX_FRAME.saturating_sub(overhead(class));
    let mut used = 0usize;
    let mut cut = None;
    for (at, c) in content.char_indices() {
        used = used.saturating_add(escaped_len(c));
        if used > budget {
            cut = Some(at);
            break;
        }
    }
    if let Some(at) = cut {
        content.truncate(at);
    }
    ToolResponse::Result {
        content,
        class,
        untrusted,
        truncated: cut.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded_len(resp: &ToolResponse) -> usize {
        serde_json::to_vec(&Envelope::response(u64::MAX, resp.clone()))
            .unwrap()
            .len()
    }

    #[test]
    fn escaped_len_agrees_with_serde_json_for_every_ascii_and_some_unicode() {
        let mut chars: Vec<char> = (0u8..=127).map(char::from).collect();
        chars.extend(['é', '€', '😀', '\u{7f}', '\u{2028}', '\u{fffd}']);
        for c in chars {
            let s = serde_json::to_string(&c.to_string()).unwrap();
            assert_eq!(escaped_len(c), s.len() - 2, "{c:?}");
        }
    }

    #[test]
    fn small_content_is_untouched() {
        let r = fit_result("hello\n".into(), DataClass::Internal, true);
        assert_eq!(
            r,
            ToolResponse::Result {
                content: "hello\n".into(),
                class: DataClass::Internal,
                untrusted: true,
                truncated: false
            }
        );
    }

    #[test]
    fn content_that_escapes_six_fold_is_cut_to_fit_max_frame() {
        // 2 MiB of a control character: 12 MiB once escaped.
        let r = fit_result("\u{01}".repeat(2 << 20), DataClass::Secret, false);
        let len = encoded_len(&r);
        assert!(len <= MAX_FRAME, "{len}");
        assert!(len > MAX_FRAME - 6, "cut too much: {len}");
        assert!(matches!(
            r,
            ToolResponse::Result {
                truncated: true,
                ..
            }
        ));
    }

    #[test]
    fn plain_content_over_the_limit_is_cut_exactly_at_the_limit() {
        let r = fit_result("x".repeat(MAX_FRAME), DataClass::Public, false);
        // `true` is one byte shorter than the `false` the budget assumed.
        assert!((MAX_FRAME - 1..=MAX_FRAME).contains(&encoded_len(&r)));
        assert!(matches!(
            r,
            ToolResponse::Result {
                truncated: true,
                ..
            }
        ));
    }

    #[test]
    fn the_cut_never_splits_a_character() {
        let r = fit_result("😀".repeat(MAX_FRAME / 3), DataClass::Public, false);
        let ToolResponse::Result { content, .. } = &r else {
            unreachable!()
        };
        assert!(content.chars().all(|c| c == '😀'));
        assert!(encoded_len(&r) <= MAX_FRAME);
    }

    #[test]
    fn content_that_exactly_fits_is_not_marked_truncated() {
        let over = overhead(DataClass::Public);
        let r = fit_result("y".repeat(MAX_FRAME - over), DataClass::Public, false);
        assert!(matches!(
            r,
            ToolResponse::Result {
                truncated: false,
                ..
            }
        ));
        assert_eq!(encoded_len(&r), MAX_FRAME);
    }
}
