//! Laundering a value past provenance (docs/spec.md §3.7, issue 30): an untrusted answer
//! shows an attacker's IBAN, address or host in a form the index used not to read, so the
//! value "was seen in no answer" and `from = "not_untrusted"` let the plain value through.
//! Each test writes the value in one such form in an answer and checks that the index entry
//! it makes is the one the plain argument looks up; then that ordinary text and ordinary
//! arguments do not grow values they do not hold.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use policy::values::{Kind, in_answer, in_argument, in_arguments, in_text};
use serde_json::json;

const IBAN: &str = "DE89370400440532013000";
const GB: &str = "GB29NWBK60161331926819";

/// Every value an argument carrying `plain` is looked up as was shown by `disguised`.
#[track_caller]
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

/// The canonical texts `text` reads as, for the negative tests.
fn texts(found: &policy::values::Found) -> Vec<String> {
    found.values().iter().map(|v| v.text.clone()).collect()
}

// ---------------------------------------------------------------------------------------------
// Groups

#[test]
fn an_iban_in_hyphen_or_dot_groups_is_laundered_no_more() {
    found_as_plain("pay DE89-3704-0044-0532-0130-00 today", IBAN);
    found_as_plain("pay DE89.3704.0044.0532.0130.00 today", IBAN);
    found_as_plain("pay DE89 - 3704 - 0044 - 0532 - 0130 - 00", IBAN);
    found_as_plain("to GB29-NWBK-6016-1331-9268-19.", GB);
    found_as_plain("to gb29.nwbk.6016.1331.9268.19", GB);
}

#[test]
fn an_iban_in_groups_split_by_unicode_spaces_or_dashes_is_laundered_no_more() {
    // No-break, narrow no-break, thin, figure, ideographic, ogham, line separator.
    for sep in [
        "\u{a0}", "\u{202f}", "\u{2009}", "\u{2007}", "\u{3000}", "\u{1680}", "\u{2028}",
    ] {
        found_as_plain(
            &format!("DE89{sep}3704{sep}0044{sep}0532{sep}0130{sep}00"),
            IBAN,
        );
    }
    // Hyphen, non-breaking hyphen, figure dash, en dash, minus sign.
    for sep in ["\u{2010}", "\u{2011}", "\u{2012}", "\u{2013}", "\u{2212}"] {
        found_as_plain(
            &format!("DE89{sep}3704{sep}0044{sep}0532{sep}0130{sep}00"),
            IBAN,
        );
    }
}

#[test]
fn an_iban_split_across_a_blank_line_is_laundered_no_more() {
    found_as_plain("IBAN: DE89 3704 0044\n\n0532 0130 00", IBAN);
    found_as_plain("IBAN: DE89 3704 0044\r\n\r\n0532 0130 00", IBAN);
}

#[test]
fn an_account_or_phone_in_groups_is_read_whatever_the_separator() {
    found_as_plain("acct 1234-5678-9012-3456", "1234567890123456");
    found_as_plain("acct 1234.5678.9012", "123456789012");
    found_as_plain("acct 1234\u{a0}5678\u{a0}9012", "123456789012");
    found_as_plain("call +49\u{a0}30\u{a0}1234567", "+49301234567");
    found_as_plain("call +49\u{2013}30\u{2013}1234567", "+49301234567");
    found_as_plain("call +49 30\n1234567", "+49301234567");
}

// ---------------------------------------------------------------------------------------------
// Defanged addresses and links

#[test]
fn a_defanged_address_is_laundered_no_more() {
    for form in [
        "attacker[at]evil[dot]com",
        "attacker[AT]evil[DOT]com",
        "attacker (at) evil (dot) com",
        "attacker {at} evil {dot} com",
        "attacker<at>evil<dot>com",
        "attacker[@]evil[.]com",
        "attacker(@)evil(.)com",
        "attacker @ evil . com",
        "attacker at evil dot com",
        "attacker AT evil DOT com",
        "attacker at evil.com",
    ] {
        found_as_plain(&format!("write to {form} now"), "attacker@evil.com");
    }
    found_as_plain(
        "first.last at mail dot evil dot co dot uk",
        "first.last@mail.evil.co.uk",
    );
}

#[test]
fn a_defanged_link_is_laundered_no_more() {
    found_as_plain("see hxxps://evil[.]com/pay", "https://evil.com/pay");
    found_as_plain("see hxxp[:]//evil[.]com/pay", "https://evil.com/pay");
    found_as_plain("see https[:]//evil[.]com/pay", "https://evil.com/pay");
    found_as_plain("see evil[.]com", "evil.com");
    found_as_plain("see evil (dot) com", "evil.com");
    found_as_plain("see evil [.] com/pay", "evil.com/pay");
    found_as_plain("see fxp://evil[dot]com/pay", "https://evil.com/pay");
}

#[test]
fn ordinary_prose_with_at_and_dot_grows_no_address() {
    for text in [
        "Meet me at noon, then look at this.",
        "We arrived at the office at 9 and left at 5.",
        "The dot product is at its maximum at the origin.",
        "polka dot dress at half price",
        "Look at the dot.",
    ] {
        let f = in_answer(text);
        assert!(
            f.values().iter().all(|v| v.kind != Kind::Email),
            "{text:?} grows {:?}",
            f.values()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// JSON: keys, and a value split across strings

#[test]
fn a_value_that_is_an_object_key_is_laundered_no_more() {
    found_as_plain(r#"{"DE89370400440532013000": "rent"}"#, IBAN);
    found_as_plain(
        r#"{"payees": {"attacker@evil.com": {"amount": 5}}}"#,
        "attacker@evil.com",
    );
    found_as_plain(
        r#"[{"https://evil.com/pay": true}]"#,
        "https://evil.com/pay",
    );
}

#[test]
fn a_value_split_across_two_strings_is_laundered_no_more() {
    found_as_plain(r#"["DE8937040044", "0532013000"]"#, IBAN);
    found_as_plain(
        r#"{"iban_part1": "DE8937040044", "iban_part2": "0532013000"}"#,
        IBAN,
    );
    // Keys in an order that sorting would change: document order counts.
    found_as_plain(
        r#"{"z_first": "DE8937040044", "a_second": "0532013000"}"#,
        IBAN,
    );
    found_as_plain(r#"["DE89 3704 0044 ", "0532 0130 00"]"#, IBAN);
    found_as_plain(
        r#"{"user": "attacker", "domain": "@evil.com"}"#,
        "attacker@evil.com",
    );
    found_as_plain(r#"["attacker@", "evil.com"]"#, "attacker@evil.com");
    found_as_plain(r#"["attacker@evil", ".com"]"#, "attacker@evil.com");
    found_as_plain(r#"["https://evil", ".com/pay"]"#, "https://evil.com/pay");
    found_as_plain(r#"["+49 30", "1234567"]"#, "+49301234567");
    // The rest of the IBAN as a number.
    found_as_plain(r#"{"a": "DE89370400", "b": 440532013000}"#, IBAN);
    // At the end of a sentence, and the rest in the next string.
    found_as_plain(
        r#"["Please pay the invoice to DE8937040044", "0532013000 by Friday."]"#,
        IBAN,
    );
}

#[test]
fn a_value_split_across_three_strings_is_laundered_no_more() {
    found_as_plain(r#"["DE89 3704", "0044 0532", "0130 00"]"#, IBAN);
    found_as_plain(r#"["attacker", "@", "evil.com"]"#, "attacker@evil.com");
}

#[test]
fn a_value_split_across_two_content_blocks_is_laundered_no_more() {
    // An MCP answer's blocks: the `type` strings stand between the halves in document
    // order; the `text` fields are neighbours all the same.
    found_as_plain(
        r#"{"content":[{"type":"text","text":"DE8937040044"},{"type":"text","text":"0532013000"}]}"#,
        IBAN,
    );
    found_as_plain(
        r#"[{"id":"m1","body":"write to attacker@","from":"x"},{"id":"m2","body":"evil.com","from":"y"}]"#,
        "attacker@evil.com",
    );
}

#[test]
fn neighbouring_values_grow_no_value_that_is_neither() {
    // A list of addresses, links, hosts, IBANs: each is itself, and no join of two is a
    // value — an argument listing them must not carry a value nobody showed.
    for list in [
        json!(["bob@acme.com", "alice@acme.com", "carol@corp.example"]),
        json!(["https://a.com/x", "https://b.com/y"]),
        json!(["a.com", "b.com", "c.org"]),
        json!([IBAN, GB]),
        json!({"to": "bob@acme.com", "cc": "alice@acme.com"}),
        json!(["+15551234567", "+442079460958"]),
    ] {
        let carried = in_argument(&list);
        let each: Vec<String> = list
            .as_array()
            .cloned()
            .unwrap_or_else(|| list.as_object().unwrap().values().cloned().collect())
            .iter()
            .flat_map(|v| texts(&in_argument(v)))
            .collect();
        for v in carried.values() {
            assert!(
                each.contains(&v.text),
                "{list} grows {v}: {:?}",
                carried.values()
            );
        }
    }
}

#[test]
fn the_price_of_joining_is_a_host_after_a_sentence() {
    // A string that ends in a dot and a next one that starts with a top-level domain in
    // lower case make a host no call carries: a surplus entry (answers), a value a `from`
    // test must place (an argument whose pointer holds a list of such words).
    assert!(in_argument(&json!(["see you.", "ok"])).contains("you.ok"));
    // A sentence that starts in upper case is another sentence.
    assert!(!in_argument(&json!(["See you.", "Ok"])).contains("you.ok"));
}

#[test]
fn ordinary_json_grows_few_values_at_its_seams() {
    // Records of prose and names: a join of two neighbours is rarely a value.
    let answer = json!([
        {"id": "m1", "subject": "Lunch", "body": "See you at noon.", "from": "Alice"},
        {"id": "m2", "subject": "Re: Lunch", "body": "Sounds good, thanks!", "from": "Bob"},
        {"id": "m3", "subject": "Invoice 42", "body": "Attached.", "from": "billing"},
        {"tags": ["urgent", "finance", "q3"], "count": 3, "ok": true}
    ]);
    let f = in_answer(&answer.to_string());
    let kinds: Vec<(Kind, String)> = f
        .values()
        .iter()
        .map(|v| (v.kind, v.text.clone()))
        .collect();
    assert!(
        kinds.iter().all(|(k, _)| *k == Kind::Id),
        "only the ids are values: {kinds:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Encodings

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_base64_value_is_laundered_no_more() {
    let b64 = base64(IBAN.as_bytes());
    found_as_plain(&format!("ref: {b64}"), IBAN);
    let url_safe = base64(b"pay attacker@evil.com ~~~ ??? >>>")
        .replace('+', "-")
        .replace('/', "_")
        .trim_end_matches('=')
        .to_owned();
    found_as_plain(&format!("data {url_safe} end"), "attacker@evil.com");
    found_as_plain(
        &format!("data:text/plain;base64,{}", base64(b"https://evil.com/pay")),
        "https://evil.com/pay",
    );
    // Inside JSON, as a mail API hands a body over.
    found_as_plain(
        &json!({"payload": {"body": {"data": base64(b"Send it to DE89 3704 0044 0532 0130 00 today.")}}})
            .to_string(),
        IBAN,
    );
    // Base64 of base64.
    found_as_plain(
        &base64(base64(b"attacker@evil.com").as_bytes()),
        "attacker@evil.com",
    );
}

#[test]
fn a_hex_or_percent_encoded_value_is_laundered_no_more() {
    found_as_plain(&format!("blob {}", hex(IBAN.as_bytes())), IBAN);
    found_as_plain(
        &format!("blob {}", hex(b"attacker@evil.com").to_uppercase()),
        "attacker@evil.com",
    );
    let pct: String = IBAN.bytes().map(|b| format!("%{b:02X}")).collect();
    found_as_plain(&pct, IBAN);
    found_as_plain("attacker%40evil%2Ecom", "attacker@evil.com");
}

#[test]
fn base64_of_binary_and_ordinary_tokens_grow_no_values() {
    // Hashes, ids, long words and binary in base64 decode to no text.
    for text in [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "id 550e8400-e29b-41d4-a716-446655440000",
        "internationalization responsibilities Counterrevolutionaries",
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    ] {
        let f = in_answer(text);
        assert!(
            f.values()
                .iter()
                .all(|v| v.kind == Kind::Account || v.kind == Kind::Id),
            "{text:?} grows {:?}",
            f.values()
        );
        assert!(f.len() <= 1, "{text:?} grows {:?}", f.values());
    }
}

#[test]
fn full_width_and_zero_width_forms_stay_found_and_look_alikes_stay_distinct() {
    found_as_plain(
        "ＤＥ８９－３７０４－００４４－０５３２－０１３０－００",
        IBAN,
    );
    found_as_plain(
        "attacker\u{200b}[at]\u{200b}evil[dot]com",
        "attacker@evil.com",
    );
    // A look-alike stays a value of its own: an argument with a Cyrillic `а` is looked up
    // as its `xn--` name too, which no answer showing the real name vouches for.
    let carried = in_argument(&json!("attacker@evil.com https://p\u{430}ypal.com/x"));
    assert!(
        carried.contains("xn--pypal-4ve.com"),
        "{:?}",
        carried.values()
    );
    let plain = in_answer("write to attacker[at]evil[dot]com, see https://paypal.com/x");
    assert!(!plain.contains("xn--pypal-4ve.com"));
}

// ---------------------------------------------------------------------------------------------
// The argument side reads the same forms

#[test]
fn an_argument_in_groups_or_encoded_is_the_same_entry() {
    for arg in [
        json!("DE89-3704-0044-0532-0130-00"),
        json!("DE89\u{a0}3704\u{a0}0044\u{a0}0532\u{a0}0130\u{a0}00"),
        json!(["DE8937040044", "0532013000"]),
        json!({"DE89370400440532013000": 100}),
        json!(format!("echo {} | base64 -d", base64(IBAN.as_bytes()))),
    ] {
        let f = in_argument(&arg);
        assert!(f.contains(IBAN), "{arg} carries {:?}", f.values());
        let all = in_arguments(&arg);
        assert!(all.contains(IBAN), "{arg} carries {:?}", all.values());
    }
    // A key is read for the values it holds, never taken whole as an id.
    let f = in_argument(&json!({"name": "Alice", "note": "hi"}));
    assert_eq!(texts(&f), ["Alice", "hi"]);
}

#[test]
fn a_decoded_reading_is_bounded() {
    // Deep nesting of encodings is read a bounded number of levels: no blow-up.
    let mut s = String::from("attacker@evil.com");
    for _ in 0..12 {
        s = base64(s.as_bytes());
    }
    let _ = in_text(&s);
}

// ---------------------------------------------------------------------------------------------
// Properties: any IBAN, any disguise from the list above; the answer and the plain argument
// meet.

mod properties {
    use super::*;
    use policy::values::iban_check;
    use proptest::prelude::*;

    /// A valid IBAN of `country` for a BBAN of digits.
    fn iban_of(country: &str, bban: &str) -> String {
        (2..=98u32)
            .map(|check| format!("{country}{check:02}{bban}"))
            .find(|c| iban_check(c.as_bytes()))
            .unwrap()
    }

    /// `iban` in groups of `size`, split by `sep`.
    fn grouped(iban: &str, size: usize, sep: &str) -> String {
        iban.as_bytes()
            .chunks(size)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join(sep)
    }

    const SEPARATORS: &[&str] = &[
        " ", "-", ".", " - ", "\u{a0}", "\u{202f}", "\u{2009}", "\u{3000}", "\u{2013}", "\u{2011}",
        "\n", "\r\n", "\n\n", "\u{2028}", "\u{200b}",
    ];

    /// The ways an answer writes `plain`.
    fn disguise(plain: &str, how: usize, cut: usize, cut2: usize) -> String {
        let n = plain.len();
        let a = 1 + cut % (n - 1);
        let b = a + 1 + cut2 % (n - a).max(1);
        let b = b.min(n - 1).max(a + 1).min(n);
        let (p1, p2, p3) = (&plain[..a], &plain[a..b.min(n)], &plain[b.min(n)..]);
        match how % 9 {
            0 => format!("ref {} end", base64(plain.as_bytes())),
            1 => format!("ref {} end", hex(plain.as_bytes())),
            2 => plain.bytes().map(|c| format!("%{c:02X}")).collect(),
            3 => json!([p1, &plain[a..]]).to_string(),
            4 => json!({"z_one": p1, "a_two": &plain[a..]}).to_string(),
            5 => json!([p1, p2, p3]).to_string(),
            6 => json!({plain: "rent"}).to_string(),
            7 => json!({"content": [
                {"type": "text", "text": format!("pay {p1}")},
                {"type": "text", "text": format!("{} now", &plain[a..])},
            ]})
            .to_string(),
            _ => json!({"payload": {"data": base64(format!("pay to {plain} today").as_bytes())}})
                .to_string(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn an_iban_in_any_grouping_meets_its_plain_argument(
            country in proptest::sample::select(&["DE", "GB", "FR", "NL", "CH", "XX"][..]),
            bban in "[0-9]{12,24}",
            size in 2usize..7,
            sep in proptest::sample::select(SEPARATORS),
            lower in any::<bool>(),
        ) {
            let len = match country { "DE" => 18, "GB" => 18, "FR" => 23, "NL" => 14, "CH" => 17, _ => bban.len() };
            let bban = format!("{bban:0<24}")[..len].to_owned();
            let iban = iban_of(country, &bban);
            // A gap among the first four only for a country in the registry.
            let size = if country == "XX" { size.max(4) } else { size };
            let mut written = grouped(&iban, size, sep);
            if lower {
                written = written.to_lowercase();
            }
            let text = format!("please pay {written} today");
            let shown = in_answer(&text);
            let carried = in_argument(&json!(iban));
            for v in carried.values() {
                prop_assert!(shown.contains(&v.text), "{text:?} → {:?}", shown.values());
            }
            // And the argument in the same groups is the same entry.
            let grouped_arg = in_argument(&json!(written));
            prop_assert!(grouped_arg.contains(&iban), "{written:?} → {:?}", grouped_arg.values());
        }

        #[test]
        fn an_iban_in_any_encoding_or_split_meets_its_plain_argument(
            bban in "[0-9]{18}",
            how in 0usize..9,
            cut in 0usize..100,
            cut2 in 0usize..100,
        ) {
            let iban = iban_of("DE", &bban);
            let answer = disguise(&iban, how, cut, cut2);
            let shown = in_answer(&answer);
            prop_assert!(shown.contains(&iban), "{answer} → {:?}", shown.values());
        }

        #[test]
        fn an_address_split_at_its_joints_or_encoded_meets_its_plain_argument(
            local in "[a-z][a-z0-9]{1,8}",
            // Labels with a digit: no prefix of the domain is itself a name in use.
            labels in proptest::collection::vec("[a-z][a-z0-9]{1,5}[0-9]", 1..3),
            tld in proptest::sample::select(&["com", "org", "net", "io", "de"][..]),
            how in 0usize..9,
            joint in 0usize..4,
        ) {
            let domain = format!("{}.{tld}", labels.join("."));
            let plain = format!("{local}@{domain}");
            // Splits at the `@` (either side of it) or at a dot of the domain.
            let dots: Vec<usize> = plain.match_indices('.').map(|(i, _)| i).collect();
            let at = plain.find('@').unwrap();
            let cut = match joint {
                0 => at,
                1 => at + 1,
                _ => dots[joint % dots.len()],
            };
            let answer = match how % 9 {
                3 | 4 | 7 => disguise(&plain, how, cut - 1, 0),
                5 => json!([&plain[..at], "@", &plain[at + 1..]]).to_string(),
                h => disguise(&plain, h, 3, 5),
            };
            let shown = in_answer(&answer);
            prop_assert!(shown.contains(&plain), "{answer} → {:?}", shown.values());
        }

        #[test]
        fn a_list_of_plain_values_carries_each_and_no_other(
            items in proptest::collection::vec(
                ("[a-z]{1,6}", "[0-9]{18}", 0usize..8).prop_map(|(w, digits, how)| match how {
                    0 => format!("{w}@acme.com"),
                    1 => iban_of("DE", &digits),
                    2 => format!("https://{w}.com/x"),
                    3 => format!("{w}.org"),
                    4 => format!("+{}", &digits[..11]),
                    5 => w.to_uppercase(),
                    6 => format!("{w}!"),
                    _ => digits[..8].to_owned(),
                }),
                1..6,
            ),
            keyed in any::<bool>(),
        ) {
            // As an array, or as the fields of an object: an argument listing plain values
            // carries those values and no join of two.
            let arg = if keyed {
                json!(items.iter().enumerate().map(|(i, v)| (format!("f{i}"), json!(v))).collect::<serde_json::Map<_, _>>())
            } else {
                json!(items)
            };
            let each: Vec<String> = items
                .iter()
                .flat_map(|v| texts(&in_argument(&json!(v))))
                .collect();
            let carried = in_argument(&arg);
            for v in carried.values() {
                prop_assert!(each.contains(&v.text), "{arg} carries {v}");
            }
        }
    }
}
