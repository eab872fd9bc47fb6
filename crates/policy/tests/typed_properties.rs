//! Property tests of the typed tests (docs/spec.md §3.3 "Typed conditions") on hostile
//! strings: whatever an `email` or `url` test admits is, read aloud, one plain address at
//! the domain or one URL to the host; a link to another host, however it is disguised, is
//! always found; a closed grant holds exactly when every key is named; an IPv4 address is the
//! same address in every spelling; nothing panics on any input.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::Ipv4Addr;
use std::sync::Arc;

use policy::email::Address;
use policy::host::{Host, parse_host};
use policy::links::for_each_link;
use policy::url::Url;
use policy::{Condition, EmailTest, HostSet, LinksTest, Pattern, Pointer, Test, UrlTest};
use proptest::prelude::*;
use serde_json::{Value, json};

fn holds(test: Test, v: &str) -> bool {
    Condition::new(Pointer::new("").unwrap(), test).holds(&Value::String(v.to_owned()))
}

fn acme(names_only: bool) -> Arc<HostSet> {
    Arc::new(HostSet::new(None, ["acme.com"], names_only).unwrap())
}

/// Pieces an attacker joins into an address.
const EMAIL_PIECES: &[&str] = &[
    "bob",
    "Bob",
    "evil",
    "x.com",
    "@",
    "acme.com",
    "ACME.COM",
    "acme.com.",
    ".",
    ",",
    ";",
    " ",
    "\r\n",
    "\n",
    "\t",
    "<",
    ">",
    "\"",
    "(",
    ")",
    ":",
    "%",
    "!",
    "\\",
    "[",
    "]",
    "\u{430}",
    "\u{200b}",
    "\u{3002}",
    "\u{ff0e}",
    "+tag",
    "Bcc: ",
    "\0",
];

/// Pieces an attacker joins into a URL.
const URL_PIECES: &[&str] = &[
    "https://",
    "HTTP://",
    "ftp://",
    "//",
    "acme.com",
    "ACME.COM",
    "evil.com",
    "acme.com.",
    "@",
    "\\",
    "/",
    ":",
    "443",
    "80",
    "8080",
    ".",
    "%2e",
    "%40",
    "\u{430}",
    "\u{200b}",
    "\u{ff0e}",
    " ",
    "\r\n",
    "?",
    "#",
    "[",
    "]",
    "x",
    "javascript:",
    "0x7f.1",
];

fn joined(pieces: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(pieces), 0..max).prop_map(|v| v.concat())
}

/// What an admitted address must look like, read aloud: one `@`; before it only RFC 5322
/// atext and dots (less `%` and `!`); after it `acme.com`, any case, perhaps one dot.
fn plain_address_at_acme(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    let atext = |c: char| c.is_ascii_alphanumeric() || "#$&'*+-/=?^_`{|}~.".contains(c);
    !local.is_empty()
        && local.chars().all(atext)
        && (domain.eq_ignore_ascii_case("acme.com") || domain.eq_ignore_ascii_case("acme.com."))
}

/// What an admitted URL must look like, read aloud: an optional http(s) scheme, the host
/// `acme.com` (any case, perhaps one dot), perhaps port 80 or 443, then a path, query or
/// fragment; no white space or backslash anywhere.
fn plain_url_to_acme(s: &str) -> bool {
    if s.chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '\\')
    {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
        .unwrap_or(&lower);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    ["acme.com", "acme.com."].iter().any(|h| {
        authority == *h || authority == format!("{h}:80") || authority == format!("{h}:443")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn an_admitted_address_is_one_plain_address_at_the_domain(s in joined(EMAIL_PIECES, 8)) {
        if holds(Test::Email(EmailTest::Domain(acme(true))), &s) {
            prop_assert!(plain_address_at_acme(&s), "admitted {s:?}");
        }
    }

    #[test]
    fn an_admitted_url_is_one_url_to_the_host(s in joined(URL_PIECES, 8)) {
        let test = Test::Url(UrlTest { hosts: Some(acme(false)), ports: Vec::new(), path: Vec::new() });
        if holds(test, &s) {
            prop_assert!(plain_url_to_acme(&s), "admitted {s:?}");
        }
    }

    #[test]
    fn honest_addresses_and_urls_are_admitted(
        local in "[a-z][a-z0-9._+-]{0,10}[a-z0-9]",
        upper in any::<bool>(),
        dot in any::<bool>(),
        scheme in prop::sample::select(&["", "http://", "https://", "HTTPS://"][..]),
        path in "(/[a-zA-Z0-9._~-]{0,8}){0,3}",
    ) {
        prop_assume!(!local.contains(".."));
        let domain = if upper { "ACME.com" } else { "acme.com" };
        let dot = if dot { "." } else { "" };
        let address = format!("{local}@{domain}{dot}");
        prop_assert!(holds(Test::Email(EmailTest::Domain(acme(true))), &address), "{address}");
        let url = format!("{scheme}{domain}{dot}{path}");
        let test = Test::Url(UrlTest { hosts: Some(acme(false)), ports: Vec::new(), path: Vec::new() });
        prop_assert!(holds(test, &url), "{url}");
    }

    #[test]
    fn a_disguised_link_is_always_found(
        before in prop::collection::vec("[a-zA-Z]{1,8}", 0..5),
        after in prop::collection::vec("[a-zA-Z]{1,8}", 0..5),
        upper in prop::collection::vec(any::<bool>(), 8),
        invisible in prop::collection::vec(
            prop::option::of(prop::sample::select(&['\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{feff}', '\u{ad}'][..])),
            8,
        ),
        dot in prop::sample::select(&[".", "\u{3002}", "\u{ff0e}", "\u{ff61}", "%2E", "%2e", "&#46;", "&#x2e;", "[.]", "(dot)", "\\."][..]),
        scheme in prop::sample::select(&["", "https://", "HTTP://", "hXXps://", "//", "www."][..]),
        wrap in 0usize..4,
        path in prop::sample::select(&["", "/x", "/pay?to=1", ":8080/"][..]),
    ) {
        // "evil.com" with each letter perhaps upper case and perhaps an invisible after it.
        let mut host = String::new();
        for (i, c) in "evilcom".chars().enumerate() {
            host.push(if upper[i] { c.to_ascii_uppercase() } else { c });
            if let Some(z) = invisible[i] {
                host.push(z);
            }
            if i == 3 {
                host.push_str(dot);
            }
        }
        let link = format!("{scheme}{host}{path}");
        let link = match wrap {
            0 => link,
            1 => format!("[here]({link})"),
            2 => format!("<a href=\"{link}\">here</a>"),
            _ => format!("**{link}**,"),
        };
        let text = [before.join(" "), link, after.join(" ")].join(" ");
        prop_assert!(!holds(Test::Links(LinksTest::None), &text), "no link found in {text:?}");
        prop_assert!(
            !holds(Test::Links(LinksTest::Hosts(acme(false))), &text),
            "{text:?} passed as links to acme.com only"
        );
    }

    #[test]
    fn closed_holds_exactly_when_every_key_is_named(
        named in prop::collection::btree_set(prop::sample::select(&["to", "cc", "body"][..]), 0..4),
        keys in prop::collection::btree_set(prop::sample::select(&["to", "cc", "bcc", "body", "x"][..]), 0..6),
    ) {
        let conditions: Vec<Condition> = named
            .iter()
            .map(|k| Condition::new(
                Pointer::new(format!("/{k}")).unwrap(),
                Test::Glob(vec![Pattern::new("*").unwrap()]),
            ).optional())
            .collect();
        let mut args = serde_json::Map::new();
        for k in &keys {
            args.insert((*k).to_owned(), json!({"deep": [1, {"inner": 2}]}));
        }
        let want = keys.iter().all(|k| named.contains(k));
        prop_assert_eq!(policy::closed_holds(&conditions, &Value::Object(args.clone())), want);
        prop_assert_eq!(policy::unnamed_key(&conditions, &Value::Object(args)).is_none(), want);
    }

    #[test]
    fn an_ipv4_address_is_the_same_in_every_spelling(n in any::<u32>(), form in 0usize..6) {
        let b = Ipv4Addr::from(n).octets();
        let s = match form {
            0 => format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3]),
            1 => format!("{n}"),
            2 => format!("0x{n:x}"),
            3 => format!("0{n:o}"),
            4 => format!("0x{:X}.{}", b[0], n & 0xff_ffff),
            _ => format!("{}.0{:o}.{}", b[0], b[1], u32::from(b[2]) << 8 | u32::from(b[3])),
        };
        prop_assert_eq!(parse_host(&s), Ok(Host::Ip(Ipv4Addr::from(n).into())), "{}", s);
    }

    #[test]
    fn nothing_panics_on_any_string(s in "\\PC{0,40}|.{0,40}") {
        let _ = Address::parse(&s);
        let _ = Url::parse(&s);
        let _ = parse_host(&s);
        let _ = policy::links::links(&s);
        let _ = for_each_link(&s, |_| true);
        let _ = HostSet::new(None, [s.as_str()], false);
        let _ = policy::links::normalize(&s);
    }
}
