//! Property tests of the extractors of identifying values (docs/spec.md §3.7,
//! `policy::values`): a value is found in any disguise an attacker can give it in an answer
//! (grouping, line breaks, case, zero-width characters, full-width letters, prose around
//! it), its canonical form reads back as itself, and nothing panics on any input.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use policy::values::{Kind, iban_check, in_answer, in_argument, in_text};
use proptest::prelude::*;
use serde_json::json;

/// A valid German IBAN for an 18-digit account part.
fn iban_of(bban: &str) -> String {
    for check in 2..=98u32 {
        let candidate = format!("DE{check:02}{bban}");
        if iban_check(candidate.as_bytes()) {
            return candidate;
        }
    }
    unreachable!("some check digits make every BBAN valid")
}

/// `text` with each character written full-width where `wide` says so.
fn widen(text: &str, wide: &[bool]) -> String {
    text.chars()
        .zip(wide.iter().copied().chain(std::iter::repeat(false)))
        .map(|(c, w)| match c {
            '!'..='~' if w => char::from_u32(u32::from(c) + 0xFEE0).unwrap_or(c),
            _ => c,
        })
        .collect()
}

/// Invisible characters an attacker slips into a value.
const INVISIBLE: &[char] = &[
    '\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{feff}', '\u{ad}',
];

fn sprinkle(text: &str, at: &[(usize, usize)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(pos, which) in at {
        let pos = pos % (chars.len() + 1);
        chars.insert(pos, INVISIBLE[which % INVISIBLE.len()]);
    }
    chars.into_iter().collect()
}

/// Prose around a value: words that carry no identifying value.
const PROSE: &[&str] = &[
    "please", "pay", "the", "invoice", "now,", "thanks!", "(urgent)", "—", "to:",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn an_iban_is_found_however_it_is_grouped_cased_and_hidden(
        bban in "[0-9]{18}",
        groups in proptest::collection::vec(prop_oneof![Just(" "), Just(""), Just("\n"), Just("  ")], 6),
        lower in any::<bool>(),
        wide in proptest::collection::vec(any::<bool>(), 0..30),
        hidden in proptest::collection::vec((0usize..40, 0usize..8), 0..4),
        before in proptest::sample::select(PROSE),
        after in proptest::sample::select(PROSE),
    ) {
        let iban = iban_of(&bban);
        let mut written = String::new();
        for (i, chunk) in iban.as_bytes().chunks(4).enumerate() {
            if i > 0 {
                written.push_str(groups[(i - 1) % groups.len()]);
            }
            written.push_str(std::str::from_utf8(chunk).unwrap());
        }
        if lower {
            written = written.to_lowercase();
        }
        let disguised = sprinkle(&widen(&written, &wide), &hidden);
        let text = format!("{before} {disguised} {after}");
        let found = in_answer(&text);
        prop_assert!(found.contains(&iban), "{text:?} → {:?}", found.values());
        // The plain IBAN, as a call carries it, is that one value.
        let carried = in_argument(&json!(iban));
        prop_assert_eq!(carried.len(), 1);
        prop_assert_eq!(carried.values()[0].kind, Kind::Iban);
    }

    #[test]
    fn an_address_is_found_in_any_case_width_and_with_invisible_characters(
        local in "[a-z][a-z0-9]{0,8}",
        domain in "[a-z][a-z0-9]{1,8}",
        tld in proptest::sample::select(&["com", "org", "net", "io"][..]),
        upper in proptest::collection::vec(any::<bool>(), 0..30),
        wide in proptest::collection::vec(any::<bool>(), 0..30),
        hidden in proptest::collection::vec((0usize..40, 0usize..8), 0..3),
        before in proptest::sample::select(PROSE),
    ) {
        let plain = format!("{local}@{domain}.{tld}");
        let cased: String = plain
            .chars()
            .zip(upper.iter().copied().chain(std::iter::repeat(false)))
            .map(|(c, u)| if u { c.to_ascii_uppercase() } else { c })
            .collect();
        let disguised = sprinkle(&widen(&cased, &wide), &hidden);
        let text = format!("{before} {disguised}.");
        let found = in_answer(&text);
        prop_assert!(found.contains(&plain), "{text:?} → {:?}", found.values());
    }

    #[test]
    fn a_url_is_found_with_any_scheme_case_and_percent_encoding(
        host in "[a-z][a-z0-9]{1,8}\\.(com|net)",
        path in "[a-z0-9]{1,8}",
        scheme in proptest::sample::select(&["https://", "HTTPS://", "http://", ""][..]),
        encode in proptest::collection::vec(any::<bool>(), 0..10),
    ) {
        let encoded: String = path
            .chars()
            .zip(encode.iter().copied().chain(std::iter::repeat(false)))
            .map(|(c, e)| if e { format!("%{:02X}", u32::from(c)) } else { c.to_string() })
            .collect();
        let text = format!("open {scheme}{}/{encoded} today", host.to_uppercase());
        let found = in_answer(&text);
        let url = format!("{host}/{path}");
        prop_assert!(found.contains(&url), "{text:?} → {:?}", found.values());
        prop_assert!(found.contains(&host));
    }

    #[test]
    fn a_canonical_value_reads_back_as_itself(
        pieces in proptest::collection::vec(proptest::sample::select(&[
            "bob", "@", "acme.com", "ACME", ".", " ", "\n", "https://", "/x", "%2e", "DE89",
            "3704", "0044", "0532", "0130", "00", "+44", "20", "7946", "0958", "-", "(", ")",
            "\u{200b}", "\u{430}", "\u{ff0e}", "xn--bcher-kva", "bücher", ".de", "12345678",
            "US13300000012121212", "id: 9", ":", "'", "\"",
        ][..]), 0..14),
    ) {
        let text: String = pieces.concat();
        for v in in_text(&text).values() {
            if v.kind == Kind::Id {
                continue;
            }
            let again = in_argument(&json!(v.text));
            prop_assert!(again.contains(&v.text), "{v} from {text:?} reads as {:?}", again.values());
        }
    }

    #[test]
    fn nothing_panics_on_any_text(text in "\\PC{0,200}") {
        let _ = in_answer(&text);
        let _ = in_argument(&json!(text));
    }

    #[test]
    fn nothing_panics_on_any_bytes_read_as_text(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = in_answer(&text);
    }
}
