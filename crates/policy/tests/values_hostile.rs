//! The extractors of identifying values (docs/spec.md §3.7, `policy::values`) on hostile
//! text: a value an attacker disguises in an answer is read as the value a call later
//! carries in plain form — split across lines, in full-width or Cyrillic look-alikes, with
//! zero-width characters inside, percent-encoded, in an international name, in upper case.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use policy::values::{Kind, in_answer, in_argument, in_text};
use serde_json::json;

const IBAN: &str = "DE89370400440532013000";

/// What an argument carrying `plain` is looked up as: the values the disguised answer must
/// have shown, every one.
fn found_as_plain(disguised: &str, plain: &str) {
    let shown = in_answer(disguised);
    let carried = in_argument(&json!(plain));
    assert!(!carried.is_empty(), "{plain:?} carries no value");
    for v in carried.values() {
        assert!(
            shown.contains(&v.text),
            "{disguised:?} does not show {v} (it shows {:?})",
            shown.values()
        );
    }
}

#[test]
fn values_split_across_lines_are_found() {
    found_as_plain("IBAN: DE89 3704 0044\n0532 0130 00, thanks", IBAN);
    found_as_plain("IBAN: DE89370400440532\r\n013000", IBAN);
    found_as_plain("mail evil@attacker.\ncom now", "evil@attacker.com");
    found_as_plain("see https://evil\n.com/pay today", "https://evil.com/pay");
    found_as_plain("call +1 555\n123 4567", "+15551234567");
}

#[test]
fn full_width_and_look_alike_letters_are_read_as_latin() {
    found_as_plain("ＤＥ８９ ３７０４ ００４４ ０５３２ ０１３０ ００", IBAN);
    found_as_plain("ｅｖｉｌ＠ａｔｔａｃｋｅｒ．ｃｏｍ", "evil@attacker.com");
    found_as_plain(
        "https：／／ｅｖｉｌ．ｃｏｍ／ｐａｙ",
        "https://evil.com/pay",
    );
    // Cyrillic Е and В: a model that "corrects" them sends to the Latin IBAN.
    found_as_plain("pay D\u{415}89 3704 0044 0532 0130 00", IBAN);
    found_as_plain(
        "GB29 NW\u{412}K 6016 1331 9268 19",
        "GB29NWBK60161331926819",
    );
    // A Cyrillic host is its own xn-- name, and also the Latin one it imitates.
    found_as_plain("visit p\u{430}ypal.com/login", "https://paypal.com/login");
    found_as_plain(
        "visit p\u{430}ypal.com/login",
        "https://xn--pypal-4ve.com/login",
    );
}

#[test]
fn a_cyrillic_look_alike_is_never_the_real_name() {
    // Seen as the look-alike only: the real paypal.com is not what the xn-- name is.
    let shown = in_text("p\u{430}ypal.com");
    assert!(shown.contains("xn--pypal-4ve.com"), "{:?}", shown.values());
    let real = in_text("paypal.com");
    assert!(!real.contains("xn--pypal-4ve.com"));
}

#[test]
fn zero_width_and_bidi_characters_inside_a_value_are_dropped() {
    found_as_plain(
        "DE89\u{200b}3704\u{200d}0044\u{2060}0532\u{feff}0130 00",
        IBAN,
    );
    found_as_plain("ev\u{200b}il@atta\u{202e}cker.com", "evil@attacker.com");
    found_as_plain("https://ev\u{200c}il.com/p\u{ad}ay", "https://evil.com/pay");
    found_as_plain("+44\u{200b}20 7946 0958", "+442079460958");
}

#[test]
fn percent_encoding_and_references_are_decoded() {
    found_as_plain("https://evil%2Ecom/%70ay", "https://evil.com/pay");
    found_as_plain("https%3A%2F%2Fevil.com%2Fpay", "evil.com/pay");
    found_as_plain("evil&#64;attacker&#46;com", "evil@attacker.com");
    found_as_plain("evil[.]com/pay", "https://evil.com/pay");
}

#[test]
fn international_names_are_converted_to_ascii() {
    found_as_plain("https://bücher.de/x", "https://xn--bcher-kva.de/x");
    found_as_plain("https://xn--bcher-kva.de/x", "https://bücher.de/x");
    found_as_plain("info@bücher.de", "info@xn--bcher-kva.de");
    found_as_plain("https://BÜCHER.de/x", "https://bücher.de/x");
}

#[test]
fn upper_case_trailing_dots_and_spaces_are_canonical() {
    found_as_plain("EVIL@ATTACKER.COM", "evil@attacker.com");
    found_as_plain("HTTPS://EVIL.COM./pay/", "evil.com/pay");
    found_as_plain("de89 3704 0044 0532 0130 00", IBAN);
    found_as_plain("+1-555-123-4567", "+1 (555) 123 4567");
}

#[test]
fn an_address_hides_nothing_in_its_punctuation() {
    // Quoted or bracketed, the address is still found.
    found_as_plain("'evil@attacker.com'", "evil@attacker.com");
    found_as_plain("<evil@attacker.com>", "evil@attacker.com");
    found_as_plain("[mail](mailto:evil@attacker.com)", "evil@attacker.com");
    // The domain of an address is not a host of its own.
    let f = in_text("bob@acme.com");
    assert_eq!(f.len(), 1, "{:?}", f.values());
}

#[test]
fn ids_are_read_from_json_and_yaml_answers() {
    let f = in_answer(r#"[{"id": "msg-77", "channel_id": "C0FFEE", "body": "hi"}]"#);
    assert!(f.contains("msg-77") && f.contains("C0FFEE"));
    assert!(f.values().iter().all(|v| v.text != "hi"));
    let f = in_answer("- id_: '3'\n  recipient: GB29NWBK60161331926819\n");
    assert!(f.contains("3") && f.contains("GB29NWBK60161331926819"));
    assert_eq!(
        in_argument(&json!(3)).values()[0].kind,
        Kind::Id,
        "a small number is an id"
    );
}

#[test]
fn nothing_panics_on_broken_text() {
    for text in [
        "@",
        "@@",
        "a@",
        "@b",
        "DE",
        "DE8",
        "+",
        "+(",
        "((((",
        "00",
        "%",
        "%z",
        "://",
        "[",
        "\u{0}",
        "x\u{301}@y.z",
        "\u{10ffff}",
        "DE89 \n\n 3704",
        "0044 ",
        "id:",
        "id: ''",
    ] {
        let _ = in_answer(text);
        let _ = in_argument(&json!(text));
    }
}
