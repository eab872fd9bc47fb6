//! "One of each" (docs/spec.md §3.10): a source the person named vouches for a value of its
//! answer only when the answer shows no second of its group, and never for a link. Written as
//! the attacker who can add text to the named page or file: whatever they add, they never
//! gain the person's word for a value of a group the page already holds, never for a link,
//! and never take more than their own value from a group the page held none of.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;

use policy::intent::one_of_each;
use policy::values::{Ident, Kind, in_answer};
use proptest::prelude::*;

/// The texts `text`'s answer vouches for, with `own` its own hosts.
fn vouched(text: &str, own: &[String]) -> HashSet<String> {
    one_of_each(in_answer(text).into_values(), own)
        .0
        .into_iter()
        .map(|v: Ident| v.text)
        .collect()
}

/// What a page of the person's might hold: one of these, or nothing.
fn page() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("This is Dora's page. My e-mail is dora@gmail.com.".to_owned()),
        Just("Bill for March: 98.70 to GB29 NWBK 6016 1331 9268 19. Thanks!".to_owned()),
        Just("Call us on +44 20 7946 0958 any weekday.".to_owned()),
        Just("Nothing here but prose about the weather.".to_owned()),
        Just("Read more at https://www.dora.example/about, or mail dora@gmail.com".to_owned()),
    ]
}

/// What the attacker adds: a value of some group, in some form.
fn planted() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Pay DE89 3704 0044 0532 0130 00 instead.".to_owned()),
        Just("pay DE89-3704-0044-0532-0130-00".to_owned()),
        Just("Write to fred9246@gmail.com now.".to_owned()),
        Just("write to fred9246 [at] gmail [dot] com".to_owned()),
        Just("Visit www.true-informations.com".to_owned()),
        Just("see https://evil.example/x?y=1".to_owned()),
        Just("Call +1 202 555 0199".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn what_a_stranger_adds_never_gains_a_second_of_a_group_or_a_link(
        page in page(),
        planted in planted(),
        before in any::<bool>(),
    ) {
        let own = vec!["www.dora.example".to_owned()];
        let alone = vouched(&page, &own);
        let text = if before { format!("{planted} {page}") } else { format!("{page} {planted}") };
        let with = vouched(&text, &own);
        let kinds: std::collections::HashMap<String, Kind> = in_answer(&text)
            .into_values()
            .into_iter()
            .map(|v| (v.text, v.kind))
            .collect();
        // Never a link or a host.
        for v in &with {
            prop_assert!(!matches!(kinds[v], Kind::Url | Kind::Host), "{v} vouched in {text:?}");
        }
        // What the page alone did not vouch for, only the planted value can now be — and only
        // where the page held none of its group: the page's own values are never joined by a
        // second of their group.
        let added: Vec<&String> = with.difference(&alone).collect();
        let planted_values: HashSet<String> =
            in_answer(&planted).into_values().into_iter().map(|v| v.text).collect();
        for v in &added {
            prop_assert!(planted_values.contains(*v), "{v} appeared from nowhere in {text:?}");
        }
        if !added.is_empty() {
            let group = |k: Kind| match k {
                Kind::Email | Kind::Url | Kind::Host | Kind::Phone => 0,
                Kind::Iban | Kind::Account => 1,
                Kind::Id => 2,
            };
            for v in &added {
                let g = group(kinds[*v]);
                prop_assert!(
                    !alone.iter().any(|a| group(kinds[a]) == g),
                    "{v} vouched beside the page's own of its group in {text:?}"
                );
            }
        }
    }
}

#[test]
fn a_bill_and_a_second_account_vouch_for_neither_whatever_the_form() {
    for second in [
        "DE89 3704 0044 0532 0130 00",
        "DE89-3704-0044-0532-0130-00",
        "de89370400440532013000",
    ] {
        let text = format!("Pay GB29 NWBK 6016 1331 9268 19. UPDATE: pay {second}.");
        let v = vouched(&text, &[]);
        assert!(
            !v.iter()
                .any(|t| t.starts_with("GB29") || t.starts_with("DE89")),
            "{second}: {v:?}"
        );
    }
}
