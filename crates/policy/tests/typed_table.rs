//! docs/spec.md §3.3 "Typed conditions" and closed grants, one row per hostile case: a
//! string that names a destination is read as what it is (one e-mail address, one URL, the
//! links in a text), a value that does not read as its type fails the grant, and a closed
//! grant refuses a key no condition names. Each row is also decided with the grants
//! reversed, and by `explain_call`, which must agree.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use policy::{
    Arguments, Condition, Decision, Effect, EmailTest, Grant, Grants, HostSet, LinksTest, List,
    Pattern, Pointer, Scalar, Taint, Test, UrlTest, decide_call, explain_call,
};
use proto::{DenyReason, SessionId, Timestamp};

const ALLOW: Decision = Decision::Allow;
const NO: Decision = Decision::Deny(DenyReason::NoGrant);
const DENIED: Decision = Decision::Deny(DenyReason::DeniedByGrant);

fn cond(pointer: &str, test: Test) -> Condition {
    Condition::new(Pointer::new(pointer).unwrap(), test)
}
fn hosts(patterns: &[&str], names_only: bool) -> Arc<HostSet> {
    Arc::new(HostSet::new(None, patterns.iter().copied(), names_only).unwrap())
}
fn at_domain(d: &[&str]) -> Test {
    Test::Email(EmailTest::Domain(hosts(d, true)))
}
fn address_in(addrs: &[&str]) -> Test {
    let canon = addrs
        .iter()
        .map(|a| Scalar::Str(policy::email::canonical(a).unwrap()));
    Test::Email(EmailTest::Address(Arc::new(List::new(
        Some("colleagues".into()),
        canon,
    ))))
}
fn url_to(h: &[&str]) -> Test {
    Test::Url(UrlTest {
        hosts: Some(hosts(h, false)),
        ports: Vec::new(),
        path: Vec::new(),
    })
}
fn no_links() -> Test {
    Test::Links(LinksTest::None)
}
fn links_to(h: &[&str]) -> Test {
    Test::Links(LinksTest::Hosts(hosts(h, false)))
}
fn allow(conds: Vec<Condition>) -> Grant {
    conds.into_iter().fold(
        Grant::new(Pattern::new("t").unwrap(), Effect::Allow),
        Grant::when,
    )
}

struct Row {
    name: &'static str,
    grants: Vec<Grant>,
    args: &'static str,
    want: Decision,
}

fn row(name: &'static str, grants: Vec<Grant>, args: &'static str, want: Decision) -> Row {
    Row {
        name,
        grants,
        args,
        want,
    }
}

/// The guide's mail grant, typed.
fn mail() -> Grant {
    allow(vec![
        cond("/to/*", at_domain(&["acme.com"])),
        cond("/cc/*", at_domain(&["acme.com"])).optional(),
        cond("/body", links_to(&["acme.com", "*.acme.com"])),
    ])
    .closed()
}

fn email_rows() -> Vec<Row> {
    let d = || vec![allow(vec![cond("/to", at_domain(&["acme.com"]))])];
    vec![
        row(
            "one address at the domain",
            d(),
            r#"{"to":"bob@acme.com"}"#,
            ALLOW,
        ),
        row(
            "the domain in any case, trailing dot",
            d(),
            r#"{"to":"bob@ACME.Com."}"#,
            ALLOW,
        ),
        row("another domain", d(), r#"{"to":"bob@evil.com"}"#, NO),
        row(
            "a domain that ends like it",
            d(),
            r#"{"to":"bob@evilacme.com"}"#,
            NO,
        ),
        row(
            "a domain below it is not it",
            d(),
            r#"{"to":"bob@x.acme.com"}"#,
            NO,
        ),
        row(
            "a list in one string",
            d(),
            r#"{"to":"evil@x.com, bob@acme.com"}"#,
            NO,
        ),
        row(
            "a list with ;",
            d(),
            r#"{"to":"evil@x.com;bob@acme.com"}"#,
            NO,
        ),
        row(
            "a header after CR LF",
            d(),
            r#"{"to":"evil@x.com\r\nBcc: a@acme.com"}"#,
            NO,
        ),
        row(
            "a header after LF",
            d(),
            r#"{"to":"bob@acme.com\nBcc: evil@x.com"}"#,
            NO,
        ),
        row("a display name", d(), r#"{"to":"Bob <bob@acme.com>"}"#, NO),
        row("angle brackets", d(), r#"{"to":"<bob@acme.com>"}"#, NO),
        row("a comment", d(), r#"{"to":"bob@acme.com(evil@x.com)"}"#, NO),
        row(
            "a quoted local part",
            d(),
            r#"{"to":"\"evil@x.com\"@acme.com"}"#,
            NO,
        ),
        row("a group", d(), r#"{"to":"team:evil@x.com;"}"#, NO),
        row("two @", d(), r#"{"to":"evil@x.com@acme.com"}"#, NO),
        row(
            "a percent route",
            d(),
            r#"{"to":"evil%x.com@acme.com"}"#,
            NO,
        ),
        row("a bang route", d(), r#"{"to":"x.com!evil@acme.com"}"#, NO),
        row(
            "a Cyrillic a in the domain",
            d(),
            r#"{"to":"bob@\u0430cme.com"}"#,
            NO,
        ),
        row(
            "a zero-width space",
            d(),
            r#"{"to":"bob@ac\u200bme.com"}"#,
            NO,
        ),
        row(
            "an ideographic dot",
            d(),
            r#"{"to":"bob@acme\u3002com"}"#,
            NO,
        ),
        row("a tab", d(), r#"{"to":"bob@acme.com\t"}"#, NO),
        row("a leading space", d(), r#"{"to":" bob@acme.com"}"#, NO),
        row("a NUL", d(), r#"{"to":"bob@acme.com\u0000"}"#, NO),
        row("an address literal", d(), r#"{"to":"bob@[10.0.0.1]"}"#, NO),
        row("not a string", d(), r#"{"to":["bob@acme.com"]}"#, NO),
        row("a number", d(), r#"{"to":7}"#, NO),
        row("empty", d(), r#"{"to":""}"#, NO),
        row(
            "every element, one a list",
            vec![allow(vec![cond("/to/*", at_domain(&["acme.com"]))])],
            r#"{"to":["ann@acme.com","evil@x.com, bob@acme.com"]}"#,
            NO,
        ),
        row(
            "every name below a domain",
            vec![allow(vec![cond("/to", at_domain(&["*.acme.com"]))])],
            r#"{"to":"bob@mail.ACME.com"}"#,
            ALLOW,
        ),
        row(
            "an address in the list",
            vec![allow(vec![cond("/to", address_in(&["Ann@ACME.com"]))])],
            r#"{"to":"Ann@acme.COM."}"#,
            ALLOW,
        ),
        row(
            "the local part is compared exactly",
            vec![allow(vec![cond("/to", address_in(&["Ann@acme.com"]))])],
            r#"{"to":"ann@acme.com"}"#,
            NO,
        ),
        row(
            "a list entry with a display name is not the address",
            vec![allow(vec![cond("/to", address_in(&["ann@acme.com"]))])],
            r#"{"to":"Ann <ann@acme.com>"}"#,
            NO,
        ),
        row(
            "any one address",
            vec![allow(vec![cond("/to", Test::Email(EmailTest::Any))])],
            r#"{"to":"x@y.z"}"#,
            ALLOW,
        ),
        row(
            "any one address, but two",
            vec![allow(vec![cond("/to", Test::Email(EmailTest::Any))])],
            r#"{"to":"x@y.z,a@b.c"}"#,
            NO,
        ),
    ]
}

fn url_rows() -> Vec<Row> {
    let u = || {
        vec![allow(vec![cond(
            "/url",
            url_to(&["www.our-company.com", "*.acme.com"]),
        )])]
    };
    vec![
        row(
            "https to the host",
            u(),
            r#"{"url":"https://www.our-company.com/x"}"#,
            ALLOW,
        ),
        row(
            "any case, trailing dot",
            u(),
            r#"{"url":"HTTPS://WWW.Our-Company.COM./x?q#f"}"#,
            ALLOW,
        ),
        row(
            "a bare host and path",
            u(),
            r#"{"url":"docs.acme.com/guide"}"#,
            ALLOW,
        ),
        row(
            "http and the default port",
            u(),
            r#"{"url":"http://docs.acme.com:80/"}"#,
            ALLOW,
        ),
        row(
            "another port",
            u(),
            r#"{"url":"https://docs.acme.com:8443/"}"#,
            NO,
        ),
        row("another host", u(), r#"{"url":"https://evil.com/"}"#, NO),
        row(
            "the host as user info",
            u(),
            r#"{"url":"https://www.our-company.com@evil.com/"}"#,
            NO,
        ),
        row(
            "user info before the host",
            u(),
            r#"{"url":"https://evil.com@www.our-company.com/"}"#,
            NO,
        ),
        row(
            "a backslash",
            u(),
            r#"{"url":"https://evil.com\\@docs.acme.com/"}"#,
            NO,
        ),
        row(
            "the host below, then another",
            u(),
            r#"{"url":"https://docs.acme.com.evil.io/"}"#,
            NO,
        ),
        row(
            "percent in the host",
            u(),
            r#"{"url":"https://docs%2eacme.com/"}"#,
            NO,
        ),
        row(
            "a Cyrillic a",
            u(),
            r#"{"url":"https://docs.\u0430cme.com/"}"#,
            NO,
        ),
        row(
            "a full-width dot",
            u(),
            r#"{"url":"https://docs.acme\uff0ecom/"}"#,
            NO,
        ),
        row(
            "a zero-width space",
            u(),
            r#"{"url":"https://docs.ac\u200bme.com/"}"#,
            NO,
        ),
        row(
            "white space",
            u(),
            r#"{"url":"https://docs.acme.com /"}"#,
            NO,
        ),
        row(
            "a line break",
            u(),
            r#"{"url":"https://docs.acme.com/\r\nX: y"}"#,
            NO,
        ),
        row(
            "another scheme",
            u(),
            r#"{"url":"ftp://docs.acme.com/"}"#,
            NO,
        ),
        row(
            "javascript",
            u(),
            r#"{"url":"javascript:alert(1)//docs.acme.com"}"#,
            NO,
        ),
        row("scheme-relative", u(), r#"{"url":"//docs.acme.com/"}"#, NO),
        row("no slashes", u(), r#"{"url":"https:docs.acme.com"}"#, NO),
        row(
            "not a string",
            u(),
            r#"{"url":{"host":"docs.acme.com"}}"#,
            NO,
        ),
        row(
            "an address in another spelling is that address",
            vec![allow(vec![cond("/url", url_to(&["127.0.0.1"]))])],
            r#"{"url":"http://0x7f.1/"}"#,
            ALLOW,
        ),
        row(
            "a number host is an address, never a name",
            vec![allow(vec![cond("/url", url_to(&["*.acme.com"]))])],
            r#"{"url":"http://2130706433/"}"#,
            NO,
        ),
        row(
            "a path glob holds",
            vec![allow(vec![cond(
                "/url",
                Test::Url(UrlTest {
                    hosts: Some(hosts(&["acme.com"], false)),
                    ports: vec![8443],
                    path: vec![Pattern::new("/docs/*").unwrap()],
                }),
            )])],
            r#"{"url":"https://acme.com:8443/docs/a"}"#,
            ALLOW,
        ),
        row(
            "a dot-dot segment never matches a path glob",
            vec![allow(vec![cond(
                "/url",
                Test::Url(UrlTest {
                    hosts: Some(hosts(&["acme.com"], false)),
                    ports: Vec::new(),
                    path: vec![Pattern::new("/docs/*").unwrap()],
                }),
            )])],
            r#"{"url":"https://acme.com/docs/%2e%2e/admin"}"#,
            NO,
        ),
    ]
}

fn links_rows() -> Vec<Row> {
    let none = || vec![allow(vec![cond("/body", no_links())])];
    let ours = || {
        vec![allow(vec![cond(
            "/body",
            links_to(&["acme.com", "*.acme.com"]),
        )])]
    };
    vec![
        row(
            "text with no link",
            none(),
            r#"{"body":"See you at 3.30. Thanks.\nBob"}"#,
            ALLOW,
        ),
        row(
            "a scheme link",
            none(),
            r#"{"body":"go to https://evil.com now"}"#,
            NO,
        ),
        row(
            "upper case",
            none(),
            r#"{"body":"GO TO HTTPS://EVIL.COM"}"#,
            NO,
        ),
        row("no scheme", none(), r#"{"body":"go to evil.com"}"#, NO),
        row("www", none(), r#"{"body":"go to www.evil.com"}"#, NO),
        row("a path", none(), r#"{"body":"x.com/steal?d=1"}"#, NO),
        row(
            "zero-width inside",
            none(),
            r#"{"body":"ev\u200bil.com"}"#,
            NO,
        ),
        row("ideographic dot", none(), r#"{"body":"evil\u3002com"}"#, NO),
        row("full-width dot", none(), r#"{"body":"evil\uff0ecom"}"#, NO),
        row("half-width dot", none(), r#"{"body":"evil\uff61com"}"#, NO),
        row(
            "percent-encoded dot",
            none(),
            r#"{"body":"evil%2Ecom"}"#,
            NO,
        ),
        row(
            "an HTML reference",
            none(),
            r#"{"body":"evil&#46;com"}"#,
            NO,
        ),
        row("defanged", none(), r#"{"body":"evil[.]com"}"#, NO),
        row("IDNA", none(), r#"{"body":"xn--80ak6aa92e.com"}"#, NO),
        row("a Cyrillic name", none(), r#"{"body":"\u0430cme.com"}"#, NO),
        row(
            "markdown",
            none(),
            r#"{"body":"[invoice](https://evil.com/x)"}"#,
            NO,
        ),
        row(
            "HTML",
            none(),
            r#"{"body":"<a href=\"//evil.com\">pay</a>"}"#,
            NO,
        ),
        row(
            "across a line break",
            none(),
            r#"{"body":"evil.\ncom"}"#,
            NO,
        ),
        row(
            "an address",
            none(),
            r#"{"body":"write to bob@evil.com"}"#,
            NO,
        ),
        row("not a string", none(), r#"{"body":["hi"]}"#, NO),
        row(
            "our own link",
            ours(),
            r#"{"body":"see https://docs.acme.com/x and acme.com"}"#,
            ALLOW,
        ),
        row(
            "ours and another",
            ours(),
            r#"{"body":"see docs.acme.com and evil.com"}"#,
            NO,
        ),
        row(
            "ours as user info",
            ours(),
            r#"{"body":"https://acme.com@evil.com/"}"#,
            NO,
        ),
        row(
            "a redirect through ours",
            ours(),
            r#"{"body":"https://acme.com/r?u=https://evil.com"}"#,
            NO,
        ),
        row(
            "ours in look-alike letters",
            ours(),
            r#"{"body":"https://\u0430cme.com"}"#,
            NO,
        ),
        row(
            "ours in full-width",
            ours(),
            r#"{"body":"\uff41\uff43\uff4d\uff45\uff0e\uff43\uff4f\uff4d"}"#,
            ALLOW,
        ),
        row("no link at all", ours(), r#"{"body":"hello"}"#, ALLOW),
    ]
}

fn closed_rows() -> Vec<Row> {
    vec![
        row(
            "closed: every key named",
            vec![mail()],
            r#"{"to":["bob@acme.com"],"cc":[],"body":"hi"}"#,
            ALLOW,
        ),
        row(
            "closed: an optional key left out",
            vec![mail()],
            r#"{"to":["bob@acme.com"],"body":"hi"}"#,
            ALLOW,
        ),
        row(
            "closed: a bcc no condition names",
            vec![mail()],
            r#"{"to":["bob@acme.com"],"bcc":["evil@x.com"],"body":"hi"}"#,
            NO,
        ),
        row(
            "closed: an empty bcc is still a key",
            vec![mail()],
            r#"{"to":["bob@acme.com"],"bcc":[],"body":"hi"}"#,
            NO,
        ),
        row(
            "closed: a null bcc is still a key",
            vec![mail()],
            r#"{"to":["bob@acme.com"],"bcc":null,"body":"hi"}"#,
            NO,
        ),
        row(
            "not closed: a bcc goes through",
            vec![allow(vec![cond("/to/*", at_domain(&["acme.com"]))])],
            r#"{"to":["bob@acme.com"],"bcc":["evil@x.com"]}"#,
            ALLOW,
        ),
        row(
            "closed at depth: an unnamed key inside",
            vec![allow(vec![cond("/msg/to", at_domain(&["acme.com"]))]).closed()],
            r#"{"msg":{"to":"bob@acme.com","bcc":"evil@x.com"}}"#,
            NO,
        ),
        row(
            "closed at depth: every key inside named",
            vec![allow(vec![cond("/msg/to", at_domain(&["acme.com"]))]).closed()],
            r#"{"msg":{"to":"bob@acme.com"}}"#,
            ALLOW,
        ),
        row(
            "closed: an element no index names",
            vec![allow(vec![cond("/to/0", at_domain(&["acme.com"]))]).closed()],
            r#"{"to":["bob@acme.com","evil@x.com"]}"#,
            NO,
        ),
        row(
            "closed: no conditions, no arguments",
            vec![Grant::new(Pattern::new("t").unwrap(), Effect::Allow).closed()],
            r#"{}"#,
            ALLOW,
        ),
        row(
            "closed: no conditions, one argument",
            vec![Grant::new(Pattern::new("t").unwrap(), Effect::Allow).closed()],
            r#"{"x":1}"#,
            NO,
        ),
        row(
            "closed: arguments that do not parse",
            vec![Grant::new(Pattern::new("t").unwrap(), Effect::Allow).closed()],
            r#"{"x":1,"x":1}"#,
            NO,
        ),
        row(
            "closed deny: holds only without other keys",
            vec![
                Grant::new(Pattern::new("t").unwrap(), Effect::Allow),
                allow(vec![cond("/to/*", at_domain(&["evil.com"]))])
                    .closed()
                    .tap_effect(Effect::Deny),
            ],
            r#"{"to":["a@evil.com"],"subject":"x"}"#,
            ALLOW,
        ),
        row(
            "a typed deny wins",
            vec![
                Grant::new(Pattern::new("t").unwrap(), Effect::Allow),
                allow(vec![cond("/body", links_to(&["acme.com"]))]).tap_effect(Effect::Deny),
            ],
            r#"{"body":"acme.com"}"#,
            DENIED,
        ),
    ]
}

trait TapEffect {
    fn tap_effect(self, e: Effect) -> Self;
}
impl TapEffect for Grant {
    fn tap_effect(mut self, e: Effect) -> Self {
        self.effect = e;
        self
    }
}

#[test]
fn test_typed_conditions_table_every_hostile_case() {
    let session = SessionId::new("s1").unwrap();
    let now = Timestamp(1);
    let mut failures = Vec::new();
    let rows = email_rows()
        .into_iter()
        .chain(url_rows())
        .chain(links_rows())
        .chain(closed_rows());
    for r in rows {
        let args = Arguments::parse(r.args);
        let grants: Grants = r.grants.iter().cloned().collect();
        let got = decide_call(&grants, &session, "t", &args, Taint::CLEAN, now);
        if got != r.want {
            failures.push(format!("{}: got {got}, want {}", r.name, r.want));
        }
        if explain_call(&grants, &session, "t", &args, Taint::CLEAN, now).decision != got {
            failures.push(format!("{}: explain disagrees with decide", r.name));
        }
        let reversed: Grants = r.grants.iter().rev().cloned().collect();
        if decide_call(&reversed, &session, "t", &args, Taint::CLEAN, now) != got {
            failures.push(format!("{}: depends on grant order", r.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn explained(grant: Grant, args: &str) -> String {
    let grants: Grants = [grant].into_iter().collect();
    let e = explain_call(
        &grants,
        &SessionId::new("s1").unwrap(),
        "t",
        &Arguments::parse(args),
        Taint::CLEAN,
        Timestamp(1),
    );
    e.lines[0].to_string()
}

#[test]
fn test_explain_says_what_each_typed_test_read() {
    let line = explained(
        mail(),
        r#"{"to":["bob@acme.com"],"body":"see docs.acme.com"}"#,
    );
    assert!(line.contains("admits and allows"), "{line}");
    assert!(
        line.contains("condition 1 holds: /to/0 is the address bob@acme.com (domain acme.com), which is one of acme.com"),
        "{line}"
    );
    assert!(
        line.contains(
            "condition 3 holds: /body is text whose one link is to acme.com, *.acme.com: docs.acme.com"
        ),
        "{line}"
    );
    assert!(
        line.contains("condition 2 holds: /cc/* finds nothing (at /cc), and it is optional"),
        "{line}"
    );
    assert!(
        line.contains("closed: every key of the arguments is named"),
        "{line}"
    );

    let line = explained(
        mail(),
        r#"{"to":["ann@acme.com","evil@x.com, bob@acme.com"],"body":""}"#,
    );
    assert!(
        line.contains(r#"condition 1 fails: /to/1 is not one e-mail address: it holds a list (a ',') ("evil@x.com, bob@acme.com")"#),
        "{line}"
    );
    let line = explained(
        mail(),
        r#"{"to":["evil@x.com\r\nBcc: a@acme.com"],"body":""}"#,
    );
    assert!(
        line.contains(r#"/to/0 is not one e-mail address: it holds a line break ("evil@x.com\r\nBcc: a@acme.com")"#),
        "{line}"
    );
    let line = explained(
        mail(),
        r#"{"to":["bob@acme.com"],"bcc":["evil@x.com"],"body":""}"#,
    );
    assert!(
        line.contains("it is closed and the arguments hold a key none of its conditions names"),
        "{line}"
    );
    assert!(
        line.contains("closed: /bcc is named by none of its conditions"),
        "{line}"
    );
    let line = explained(mail(), r#"{"to":["bob@evil.com"],"body":"x"}"#);
    assert!(
        line.contains("/to/0 is the address bob@evil.com (domain evil.com), and evil.com is not one of acme.com"),
        "{line}"
    );
    let line = explained(mail(), r#"{"to":[],"body":"pay at ev\u200bil.com"}"#);
    assert!(
        line.contains("/body is text that carries a link to evil.com (\"evil.com\"), which is not one of acme.com, *.acme.com"),
        "{line}"
    );
    let line = explained(
        allow(vec![cond("/url", url_to(&["acme.com"]))]),
        r#"{"url":"https://acme.com@evil.com/"}"#,
    );
    assert!(
        line.contains("/url is not one URL: it has user info before an @"),
        "{line}"
    );
    let line = explained(
        allow(vec![cond("/url", url_to(&["acme.com"]))]),
        r#"{"url":"HTTPS://EVIL.com/x"}"#,
    );
    assert!(
        line.contains("/url is the URL https://evil.com/x (host evil.com), but evil.com is not one of acme.com"),
        "{line}"
    );
    let line = explained(
        allow(vec![cond("/body", no_links())]),
        r#"{"body":"hello"}"#,
    );
    assert!(
        line.contains("/body is text that carries no link"),
        "{line}"
    );
}
