//! A downstream result as a `result` or `failed` answer.
//!
//! Content blocks pass through in MCP form (text, image, audio, resource links, embedded
//! resources) inside a [`catalog::Content`], and the whole answer is cut to fit one frame
//! (docs/spec.md §3.4) without ever producing JSON the front cannot read: first the structured
//! content goes, then the largest non-text blocks are replaced by a sentence that says what
//! was left out, then blocks past the last whole one that fits are dropped (with a count),
//! and if not even the first fits, its text is cut. `isError: true` becomes `failed` with the server's text.

use catalog::Content;
use proto::{DataClass, ToolResponse};
use serde_json::{Value, json};

use crate::fit::fit_result;

/// The longest `failed` message taken from a server's own error text, in bytes.
pub const MAX_ERROR_TEXT: usize = 16 * 1024;

/// `failed` with the text of `blocks` (an `isError: true` result).
pub fn error_text(blocks: &[Value]) -> String {
    let mut text = String::new();
    for b in blocks {
        if let Some(t) = b.get("text").and_then(Value::as_str) {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(t);
        }
    }
    if text.trim().is_empty() {
        text = "the server reported an error without saying what".into();
    }
    proto::run::prefix(&text, MAX_ERROR_TEXT).to_string()
}

fn encode(c: &Content) -> String {
    serde_json::to_string(c).unwrap_or_default()
}

fn fits(c: &Content, class: DataClass) -> bool {
    matches!(
        fit_result(encode(c), class, false),
        ToolResponse::Result {
            truncated: false,
            ..
        }
    )
}

fn is_text(b: &Value) -> bool {
    b.get("type").and_then(Value::as_str) == Some("text")
}

fn note(text: String) -> Value {
    json!({"type": "text", "text": text})
}

/// What a left-out block was, for the sentence that replaces it.
fn what(b: &Value, size: usize) -> String {
    let kind = b.get("type").and_then(Value::as_str).unwrap_or("block");
    let mime = b
        .get("mimeType")
        .or_else(|| b.get("resource").and_then(|r| r.get("mimeType")))
        .and_then(Value::as_str);
    match mime {
        Some(m) => {
            format!("[{kind} ({m}, {size} bytes) left out: the result is over the size limit]")
        }
        None => format!("[{kind} of {size} bytes left out: the result is over the size limit]"),
    }
}

/// Text blocks each cut to `share`/1000 of their length.
fn cut_texts(blocks: &[Value], share: usize) -> Vec<Value> {
    blocks
        .iter()
        .map(|b| match b.get("text").and_then(Value::as_str) {
            Some(t) if is_text(b) => {
                let mut c = b.clone();
                c["text"] = Value::String(
                    proto::run::prefix(t, t.len().saturating_mul(share) / 1000).to_string(),
                );
                c
            }
            _ => b.clone(),
        })
        .collect()
}

/// The `result` for `content`, labelled, cut to fit one frame.
pub fn fit_content(mut content: Content, class: DataClass, untrusted: bool) -> ToolResponse {
    let done = |c: &Content, truncated: bool| ToolResponse::Result {
        content: encode(c),
        class,
        untrusted,
        truncated,
    };
    // The usual case, encoded once: it fits as it is.
    if let whole @ ToolResponse::Result {
        truncated: false, ..
    } = fit_result(encode(&content), class, untrusted)
    {
        return whole;
    }
    // 1. The notifications the server sent while it ran say how the call went, not what it
    //    gave: they go first. Then structured content, which usually repeats the blocks.
    if !content.notifications.is_empty() {
        content.notifications = Vec::new();
        if fits(&content, class) {
            return done(&content, true);
        }
    }
    content.structured_content = None;
    // 2. The largest non-text blocks become a sentence: as few as needed, largest first,
    //    found by binary search over how many (each probe encodes once: O(n log n), never
    //    the quadratic one-at-a-time loop a server with 100,000 images would exploit).
    let mut by_size: Vec<(usize, usize)> = content
        .content
        .iter()
        .enumerate()
        .filter(|(_, b)| !is_text(b))
        .map(|(i, b)| (i, b.to_string().len()))
        .collect();
    by_size.sort_unstable_by_key(|b| std::cmp::Reverse(b.1));
    let replaced = |m: usize| {
        let mut c = content.clone();
        for (i, size) in by_size.iter().take(m) {
            if let Some(slot) = c.content.get_mut(*i) {
                *slot = note(what(slot, *size));
            }
        }
        c
    };
    let (mut lo, mut hi) = (0usize, by_size.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(&replaced(mid), class) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    content = replaced(lo);
    if fits(&content, class) {
        return done(&content, true);
    }
    // 3. Too many blocks to fit even with empty texts: keep the first `k` that do.
    let blocks = std::mem::take(&mut content.content);
    let total = blocks.len();
    let with = |k: usize, share: usize| {
        let mut kept = cut_texts(blocks.get(..k).unwrap_or_default(), share);
        if k < total {
            kept.push(note(format!(
                "[{} more content blocks left out: the result is over the size limit]",
                total - k
            )));
        }
        Content {
            content: kept,
            structured_content: None,
            notifications: Vec::new(),
        }
    };
    // As many whole blocks as fit; if not even the first does, the first alone, cut.
    let (mut lo, mut hi) = (0usize, total);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(&with(mid, 1000), class) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo > 0 {
        return done(&with(lo, 1000), true);
    }
    let k = 1.min(total);
    // 4. The largest share of its text that fits.
    let (mut lo, mut hi) = (0usize, 1000usize);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(&with(k, mid), class) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let out = with(k, lo);
    if fits(&out, class) {
        done(&out, true)
    } else {
        // Nothing of it fits (cannot happen with a note-sized frame budget); say so.
        done(
            &Content {
                content: vec![note("[the result is over the size limit]".into())],
                structured_content: None,
                notifications: Vec::new(),
            },
            true,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{Envelope, MAX_FRAME};

    fn size(r: &ToolResponse) -> usize {
        serde_json::to_vec(&Envelope::response(u64::MAX, r.clone()))
            .unwrap()
            .len()
    }

    fn parts(r: &ToolResponse) -> (Content, bool) {
        let ToolResponse::Result {
            content, truncated, ..
        } = r
        else {
            panic!("{r:?}")
        };
        (serde_json::from_str(content).unwrap(), *truncated)
    }

    #[test]
    fn a_small_result_passes_whole() {
        let c = Content {
            content: vec![
                json!({"type":"text","text":"hi"}),
                json!({"type":"image","data":"AAAA","mimeType":"image/png"}),
            ],
            structured_content: Some(json!({"x": 1})),
            notifications: vec![
                json!({"method": "notifications/progress", "params": {"progress": 1}}),
            ],
        };
        let r = fit_content(c.clone(), DataClass::Internal, true);
        assert_eq!(parts(&r), (c, false));
    }

    #[test]
    fn a_huge_text_is_cut_to_a_frame_and_stays_valid() {
        let c = Content {
            content: vec![json!({"type":"text","text":"\"".repeat(4 << 20)})],
            structured_content: Some(json!({"big": "y".repeat(1 << 20)})),
            notifications: vec![],
        };
        let r = fit_content(c, DataClass::Public, false);
        assert!(size(&r) <= MAX_FRAME);
        let (c, truncated) = parts(&r);
        assert!(truncated);
        assert!(c.structured_content.is_none());
        assert!(c.content[0]["text"].as_str().unwrap().len() > 100_000);
    }

    #[test]
    fn a_huge_image_becomes_a_sentence_and_the_text_stays() {
        let c = Content {
            content: vec![
                json!({"type":"text","text":"caption"}),
                json!({"type":"image","data":"A".repeat(3 << 20),"mimeType":"image/png"}),
            ],
            structured_content: None,
            notifications: vec![],
        };
        let r = fit_content(c, DataClass::Public, false);
        assert!(size(&r) <= MAX_FRAME);
        let (c, truncated) = parts(&r);
        assert!(truncated);
        assert_eq!(c.content[0]["text"], "caption");
        let n = c.content[1]["text"].as_str().unwrap();
        assert!(
            n.contains("image (image/png") && n.contains("left out"),
            "{n}"
        );
    }

    #[test]
    fn a_flood_of_blocks_is_cut_with_a_count_of_what_was_left_out() {
        let c = Content {
            content: (0..200_000)
                .map(|i| json!({"type":"text","text":format!("b{i}")}))
                .collect(),
            structured_content: None,
            notifications: vec![],
        };
        let r = fit_content(c, DataClass::Secret, false);
        assert!(size(&r) <= MAX_FRAME);
        let (c, truncated) = parts(&r);
        assert!(truncated);
        assert_eq!(c.content[0]["text"], "b0");
        let last = c.content.last().unwrap()["text"].as_str().unwrap();
        assert!(last.contains("more content blocks left out"), "{last}");
    }

    #[test]
    fn a_flood_of_images_is_cut_in_n_log_n_not_quadratic_time() {
        let c = Content {
            content: (0..30_000)
                .map(|_| json!({"type":"image","data":"A".repeat(48),"mimeType":"image/png"}))
                .collect(),
            structured_content: None,
            notifications: vec![],
        };
        let started = std::time::Instant::now();
        let r = fit_content(c, DataClass::Public, false);
        assert!(size(&r) <= MAX_FRAME);
        assert!(parts(&r).1);
        // A hang guard, not a speed figure: generous for a debug build on a loaded machine;
        // the quadratic loop took many minutes on this input.
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
    }

    #[test]
    fn error_text_joins_the_texts_and_is_bounded() {
        assert_eq!(
            error_text(&[
                json!({"type":"text","text":"a"}),
                json!({"type":"text","text":"b"})
            ]),
            "a b"
        );
        assert!(error_text(&[]).contains("without saying"));
        let long = error_text(&[json!({"type":"text","text":"x".repeat(100_000)})]);
        assert_eq!(long.len(), MAX_ERROR_TEXT);
    }
}
