//! The typed tests of a condition (docs/spec.md §3.3 "Typed conditions"): a string that
//! names a destination is read as what it is — one e-mail address ([`crate::email`]), one
//! URL ([`crate::url`]), or free text and the links it carries ([`crate::links`]) — and
//! tested on what was read, never by a glob over the raw text. A value that does not read as
//! the type fails the test (never an error), like a value of the wrong JSON type.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::condition::List;
use crate::email::Address;
use crate::host::HostSet;
use crate::links::{Link, scan};
use crate::pattern::Pattern;
use crate::url::Url;

/// `email = …`: the string is exactly one e-mail address, and …
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EmailTest {
    /// … nothing more (`email = true`).
    Any,
    /// … it is one of these addresses, in canonical form (`address = [...]`, `in = "LIST"`).
    Address(Arc<List>),
    /// … its domain is one of these (`domain = [...]`, `domain_in = "LIST"`).
    Domain(Arc<HostSet>),
}

/// `url = …`: the string is one URL (or bare host), and its host, port and path are allowed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UrlTest {
    /// The hosts allowed (`host = [...]`, `host_in = "LIST"`); `None` is any host.
    pub hosts: Option<Arc<HostSet>>,
    /// Ports allowed beyond the scheme's own (`ports = [...]`).
    pub ports: Vec<u16>,
    /// Globs the path must match, any of them (`path = ...`); empty is any path.
    pub path: Vec<Pattern>,
}

/// `links = …`: the string is free text, and …
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LinksTest {
    /// … it carries no link (`links = false`).
    None,
    /// … every link it carries is to one of these hosts (`links = { host = [...] }`).
    Hosts(Arc<HostSet>),
}

impl EmailTest {
    pub(crate) fn holds(&self, v: &Value) -> bool {
        let Some(a) = v.as_str().and_then(|s| Address::parse(s).ok()) else {
            return false;
        };
        match self {
            EmailTest::Any => true,
            EmailTest::Address(list) => list.contains_canonical(|x| a.cmp_canonical(x)),
            EmailTest::Domain(set) => set.contains(&a.domain()),
        }
    }

    /// What `explain` says of `v`: whether it held, and the words after the pointer.
    pub(crate) fn explain(&self, v: &Value) -> (bool, String) {
        let Some(s) = v.as_str() else {
            return (
                false,
                "is not a string, so not an e-mail address".to_owned(),
            );
        };
        let a = match Address::parse(s) {
            Ok(a) => a,
            Err(why) => {
                return (
                    false,
                    format!("is not one e-mail address: {why} ({})", cut(s)),
                );
            }
        };
        let what = format!("is the address {a} (domain {})", a.domain());
        match self {
            EmailTest::Any => (true, what),
            EmailTest::Address(list) => {
                if self.holds(v) {
                    (true, format!("{what}, which is in {list}"))
                } else {
                    (false, format!("{what}, which is not in {list}"))
                }
            }
            EmailTest::Domain(set) => {
                if self.holds(v) {
                    (true, format!("{what}, which is one of {set}"))
                } else {
                    (
                        false,
                        format!("{what}, and {} is not one of {set}", a.domain()),
                    )
                }
            }
        }
    }
}

impl fmt::Display for EmailTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmailTest::Any => f.write_str("is one e-mail address"),
            EmailTest::Address(list) => write!(f, "is one e-mail address in {list}"),
            EmailTest::Domain(set) => write!(f, "is one e-mail address at {set}"),
        }
    }
}

impl UrlTest {
    /// Why `u` is not allowed, or `None` when it is.
    fn refuses(&self, u: &Url<'_>) -> Option<String> {
        if let Some(set) = &self.hosts
            && !set.contains(&u.host)
        {
            return Some(format!("{} is not one of {set}", u.host));
        }
        if let Some(p) = u.port
            && !u.default_port()
            && !self.ports.contains(&p)
        {
            return Some(if self.ports.is_empty() {
                format!("port {p} is not its scheme's own, and the test allows no other")
            } else {
                format!("port {p} is not one of its ports")
            });
        }
        if !self.path.is_empty() {
            if let Some(problem) = u.path_problem() {
                return Some(problem.to_owned());
            }
            let path = if u.path.is_empty() { "/" } else { u.path };
            if !self.path.iter().any(|g| g.matches(path)) {
                return Some(format!("its path {} matches none of its paths", cut(path)));
            }
        }
        None
    }

    pub(crate) fn holds(&self, v: &Value) -> bool {
        v.as_str()
            .and_then(|s| Url::parse(s).ok())
            .is_some_and(|u| self.allows(&u))
    }

    /// Whether `u` is allowed: [`UrlTest::refuses`] without its words (no allocation).
    fn allows(&self, u: &Url<'_>) -> bool {
        if let Some(set) = &self.hosts
            && !set.contains(&u.host)
        {
            return false;
        }
        if let Some(p) = u.port
            && !u.default_port()
            && !self.ports.contains(&p)
        {
            return false;
        }
        if !self.path.is_empty() {
            if u.path_problem().is_some() {
                return false;
            }
            let path = if u.path.is_empty() { "/" } else { u.path };
            return self.path.iter().any(|g| g.matches(path));
        }
        true
    }

    pub(crate) fn explain(&self, v: &Value) -> (bool, String) {
        let Some(s) = v.as_str() else {
            return (false, "is not a string, so not a URL".to_owned());
        };
        let u = match Url::parse(s) {
            Ok(u) => u,
            Err(why) => return (false, format!("is not one URL: {why} ({})", cut(s))),
        };
        let what = format!("is the URL {} (host {})", shorten(&u.to_string()), u.host);
        match self.refuses(&u) {
            None => (true, what),
            Some(why) => (false, format!("{what}, but {why}")),
        }
    }
}

impl fmt::Display for UrlTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("is one URL")?;
        if let Some(set) = &self.hosts {
            write!(f, " to {set}")?;
        }
        if !self.ports.is_empty() {
            let ports: Vec<String> = self.ports.iter().map(u16::to_string).collect();
            write!(f, " (ports {} too)", ports.join(", "))?;
        }
        if !self.path.is_empty() {
            let paths: Vec<String> = self
                .path
                .iter()
                .map(|p| format!("{:?}", p.as_str()))
                .collect();
            write!(f, " with path {}", paths.join(" or "))?;
        }
        Ok(())
    }
}

/// Whether one link is allowed by a host set.
/// Whether a host spelled in words ([`crate::values::spelled_names`]) is one of `set`.
fn name_allowed(set: &HostSet, host: &str) -> bool {
    crate::host::parse_host(host).is_ok_and(|h| set.contains(&h))
}

fn link_allowed(set: &HostSet, l: &Link<'_>) -> bool {
    l.url.is_some_and(|u| set.contains(&u.host))
}

impl LinksTest {
    pub(crate) fn holds(&self, v: &Value) -> bool {
        let Some(text) = v.as_str() else {
            return false;
        };
        // One reading for links and names spelled in words: the values reader's
        // ([`crate::values::prepare`]: NFKC, bracketed markers with the spaces around them,
        // then the link reader's normalising), so `lohn (at) acme (dot) ch` is read here as
        // it is in an answer.
        let t = crate::values::prepare(text);
        let spelled = crate::values::spelled_names_in(&t);
        match self {
            LinksTest::None => spelled.is_empty() && scan(&t, |_| false),
            LinksTest::Hosts(set) => {
                spelled.iter().all(|(h, _)| name_allowed(set, h))
                    && scan(&t, |l| link_allowed(set, &l))
            }
        }
    }

    pub(crate) fn explain(&self, v: &Value) -> (bool, String) {
        let Some(text) = v.as_str() else {
            return (false, "is not a string, so not text".to_owned());
        };
        let t = crate::values::prepare(text);
        let mut all = Vec::new();
        let mut bad = None;
        scan(&t, |l| {
            let allowed = match self {
                LinksTest::None => false,
                LinksTest::Hosts(set) => link_allowed(set, &l),
            };
            let host = l.url.map(|u| u.host.to_string());
            if !allowed && bad.is_none() {
                bad = Some((l.text.to_owned(), host.clone()));
            }
            all.push(host.unwrap_or_else(|| cut(l.text)));
            true
        });
        // A name spelled in words is a link a person follows by typing it.
        for (host, written) in crate::values::spelled_names_in(&t) {
            let allowed = match self {
                LinksTest::None => false,
                LinksTest::Hosts(set) => name_allowed(set, &host),
            };
            all.push(format!("{host} (spelled in words: {})", cut(&written)));
            if !allowed && bad.is_none() {
                bad = Some((format!("{}, spelled in words", cut(&written)), Some(host)));
            }
        }
        let n = all.len();
        match (self, bad) {
            (LinksTest::None, None) => (true, "is text that carries no link".to_owned()),
            (LinksTest::None, Some((text, _))) => (
                false,
                format!(
                    "is text that carries {}: {}",
                    plural(n, "link"),
                    shown_links(&all, &text)
                ),
            ),
            (LinksTest::Hosts(set), None) if n == 0 => (
                true,
                format!("is text that carries no link (allowed: {set})"),
            ),
            (LinksTest::Hosts(set), None) => (
                true,
                format!(
                    "is text whose {} to {set}: {}",
                    plural_verb(n),
                    shown_links(&all, "")
                ),
            ),
            (LinksTest::Hosts(set), Some((text, host))) => (
                false,
                match host {
                    Some(h) => format!(
                        "is text that carries a link to {h} ({}), which is not one of {set}",
                        cut(&text)
                    ),
                    None => format!(
                        "is text that carries a link whose host cannot be read as a name \
                         or address ({}), so not one of {set}",
                        cut(&text)
                    ),
                },
            ),
        }
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("a {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn plural_verb(n: usize) -> String {
    if n == 1 {
        "one link is".to_owned()
    } else {
        format!("{n} links are all")
    }
}

/// The first few links found, for `explain`.
fn shown_links(all: &[String], first_bad: &str) -> String {
    let mut shown: Vec<&str> = all.iter().take(3).map(String::as_str).collect();
    if shown.is_empty() {
        shown.push(first_bad);
    }
    let more = all.len().saturating_sub(3);
    let mut text = shown.join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

impl fmt::Display for LinksTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinksTest::None => f.write_str("carries no link"),
            LinksTest::Hosts(set) => write!(f, "carries links only to {set}"),
        }
    }
}

/// At most 80 characters of a value a model chose, as a JSON string (quoted, escaped).
pub(crate) fn cut(s: &str) -> String {
    let text = Value::String(s.to_owned()).to_string();
    let c: String = text.chars().take(80).collect();
    if c.len() < text.len() {
        format!("{c}…")
    } else {
        c
    }
}

/// At most 80 characters of a checked value (printable, no quotes needed).
fn shorten(s: &str) -> String {
    let c: String = s.chars().take(80).collect();
    if c.len() < s.len() {
        format!("{c}…")
    } else {
        c
    }
}
