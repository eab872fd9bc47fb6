//! The typed tests of a `when` condition (docs/spec.md §3.3 "Typed conditions"), read from
//! the file: `email = …`, `url = …`, `links = …`, and the `[lists]` they may name.
//!
//! ```toml
//! { pointer = "/to/*", email = { domain = ["acme.com", "*.acme.com"] } }
//! { pointer = "/to/*", email = { in = "colleagues" } }       # [lists] of addresses
//! { pointer = "/url", url = { host = ["www.acme.com"], path = "/docs/*" } }
//! { pointer = "/body", links = false }                        # carries no link
//! { pointer = "/body", links = { host_in = "our_sites" } }    # every link to these hosts
//! ```
//!
//! Each table takes one way to name what is allowed (`url` may add `path` and `ports`);
//! `email = true` and `url = true` allow any one address or URL. A list named by a typed test
//! must hold only what that test reads (addresses, or host patterns); a wrong entry is an
//! error at the entry's own line. The sets made from a list are made once and shared by every
//! condition that names it the same way.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use policy::{EmailTest, HostSet, LinksTest, List, Pattern, Scalar, Test, UrlTest};
use toml::Spanned;

use crate::error::{ConfigError, Source};

/// The `[lists]` table: each list as a plain list (for `in`) and its entries as written
/// (for the typed tests that read them), with the typed sets made so far.
#[derive(Debug, Default)]
pub(crate) struct Lists {
    pub plain: HashMap<String, Arc<List>>,
    pub entries: HashMap<String, Vec<Spanned<toml::Value>>>,
    addresses: RefCell<HashMap<String, Arc<List>>>,
    /// Keyed by the list name and whether addresses are refused (e-mail domains).
    hosts: RefCell<HashMap<(String, bool), Arc<HostSet>>>,
}

/// What a typed test is being read for, and where.
pub(crate) struct At<'a> {
    pub src: &'a Source<'a>,
    /// "condition on /to/*"
    pub what: &'a str,
}

impl At<'_> {
    fn err<T>(&self, span: Range<usize>, message: impl Into<String>) -> Result<T, ConfigError> {
        Err(self.src.error(Some(span.start), message))
    }

    /// A `[lists]` entry by name, or the error that names the lists there are.
    pub fn list<'l>(
        &self,
        lists: &'l Lists,
        name: &str,
        span: Range<usize>,
    ) -> Result<(&'l Arc<List>, &'l [Spanned<toml::Value>]), ConfigError> {
        match (lists.plain.get(name), lists.entries.get(name)) {
            (Some(list), Some(entries)) => Ok((list, entries)),
            _ => {
                let mut known: Vec<&str> = lists.plain.keys().map(String::as_str).collect();
                known.sort_unstable();
                let known = if known.is_empty() {
                    "there is no [lists] table".to_owned()
                } else {
                    format!("[lists] has {}", known.join(", "))
                };
                self.err(
                    span,
                    format!("{}: no list named {name:?} ({known})", self.what),
                )
            }
        }
    }
}

/// The keys of a typed test's table, checked against `allowed`.
fn table<'v>(
    at: &At<'_>,
    key: &str,
    v: &'v Spanned<toml::Value>,
    allowed: &[&str],
    when_true: Option<&str>,
    when_false: &str,
) -> Result<Option<&'v toml::Table>, ConfigError> {
    let expected = allowed.join(", ");
    match v.get_ref() {
        toml::Value::Boolean(true) => match when_true {
            Some(_) => Ok(None),
            None => at.err(
                v.span(),
                format!(
                    "`{key} = true` of the {} is not a test (any text may carry links): write \
                     `{key} = false` for none, or `{key} = {{ host = [...] }}`",
                    at.what
                ),
            ),
        },
        toml::Value::Boolean(false) => at.err(v.span(), format!("{when_false} ({})", at.what)),
        toml::Value::Table(t) => {
            if let Some(bad) = t.keys().find(|k| !allowed.contains(&k.as_str())) {
                return at.err(
                    v.span(),
                    format!(
                        "unknown key `{bad}` in `{key}` of the {}: expected {expected}",
                        at.what
                    ),
                );
            }
            if t.is_empty() {
                return at.err(
                    v.span(),
                    match when_true {
                        Some(any) => format!(
                            "`{key}` of the {} is an empty table: write `{key} = true` for {any}, \
                             or name what is allowed ({expected})",
                            at.what
                        ),
                        None => format!(
                            "`{key}` of the {} is an empty table: name the hosts allowed \
                             ({expected})",
                            at.what
                        ),
                    },
                );
            }
            Ok(Some(t))
        }
        other => at.err(
            v.span(),
            format!(
                "`{key}` of the {} is a table ({expected}){}, not {}",
                at.what,
                when_true.map_or(String::new(), |_| format!(" or `{key} = true`")),
                a(other.type_str())
            ),
        ),
    }
}

/// A string, or a non-empty list of strings.
fn strings<'v>(
    at: &At<'_>,
    span: Range<usize>,
    key: &str,
    v: &'v toml::Value,
) -> Result<Vec<&'v str>, ConfigError> {
    let bad = || -> Result<&'v str, ConfigError> {
        at.err(
            span.clone(),
            format!(
                "`{key}` of the {} is a string or a non-empty list of strings",
                at.what
            ),
        )
    };
    match v {
        toml::Value::String(s) => Ok(vec![s.as_str()]),
        toml::Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|i| i.as_str().map_or_else(bad, Ok))
            .collect(),
        _ => bad().map(|s| vec![s]),
    }
}

/// Which one of `keys` the table has: exactly one (or none when `optional`).
fn one_of<'t>(
    at: &At<'_>,
    span: Range<usize>,
    key: &str,
    t: &'t toml::Table,
    keys: &[&'static str],
) -> Result<Option<(&'static str, &'t toml::Value)>, ConfigError> {
    let mut found = keys.iter().filter_map(|k| t.get(*k).map(|v| (*k, v)));
    let first = found.next();
    if let Some((second, _)) = found.next() {
        return at.err(
            span,
            format!(
                "`{key}` of the {} names what is allowed twice (`{}` and `{second}`): write \
                 one, or two grants",
                at.what,
                first.map_or("", |(k, _)| k)
            ),
        );
    }
    Ok(first)
}

/// `email = true` or `email = { address | in | domain | domain_in = … }`.
pub(crate) fn email(
    at: &At<'_>,
    v: &Spanned<toml::Value>,
    lists: &Lists,
) -> Result<Test, ConfigError> {
    let keys = ["address", "in", "domain", "domain_in"];
    let Some(t) = table(
        at,
        "email",
        v,
        &keys,
        Some("any one address"),
        "`email = false` is not a test (there is no negation); write `email = true` for any one \
         address",
    )?
    else {
        return Ok(Test::Email(EmailTest::Any));
    };
    let span = v.span();
    let Some((key, value)) = one_of(at, span.clone(), "email", t, &keys)? else {
        return at.err(span, "unreachable: an empty table is refused above");
    };
    Ok(Test::Email(match key {
        "address" => {
            let mut canon = Vec::new();
            for s in strings(at, span.clone(), "email.address", value)? {
                match policy::email::canonical(s) {
                    Ok(c) => canon.push(Scalar::Str(c)),
                    Err(why) => {
                        return at.err(
                            span,
                            format!(
                                "`email.address` of the {} holds {s:?}, which is not one e-mail \
                                 address: {why}",
                                at.what
                            ),
                        );
                    }
                }
            }
            EmailTest::Address(Arc::new(List::new(None, canon)))
        }
        "in" => EmailTest::Address(addresses(at, span, value, lists)?),
        "domain" => {
            let names = strings(at, span.clone(), "email.domain", value)?;
            EmailTest::Domain(Arc::new(HostSet::new(None, names, true).or_else(|e| {
                at.err(span, format!("`email.domain` of the {}: {e}", at.what))
            })?))
        }
        _ => EmailTest::Domain(host_list(at, span, "email.domain_in", value, lists, true)?),
    }))
}

/// `url = true` or `url = { host | host_in = …, path = …, ports = [...] }`.
pub(crate) fn url(
    at: &At<'_>,
    v: &Spanned<toml::Value>,
    lists: &Lists,
) -> Result<Test, ConfigError> {
    let Some(t) = table(
        at,
        "url",
        v,
        &["host", "host_in", "path", "ports"],
        Some("any one URL"),
        "`url = false` is not a test (there is no negation); write `url = true` for any one URL",
    )?
    else {
        return Ok(Test::Url(UrlTest {
            hosts: None,
            ports: Vec::new(),
            path: Vec::new(),
        }));
    };
    let span = v.span();
    let hosts = match one_of(at, span.clone(), "url", t, &["host", "host_in"])? {
        None => None,
        Some(("host", value)) => {
            let names = strings(at, span.clone(), "url.host", value)?;
            Some(Arc::new(HostSet::new(None, names, false).or_else(|e| {
                at.err(span.clone(), format!("`url.host` of the {}: {e}", at.what))
            })?))
        }
        Some((_, value)) => Some(host_list(
            at,
            span.clone(),
            "url.host_in",
            value,
            lists,
            false,
        )?),
    };
    let path = match t.get("path") {
        None => Vec::new(),
        Some(p) => strings(at, span.clone(), "url.path", p)?
            .into_iter()
            .map(|g| {
                if !g.starts_with('/') {
                    return at.err(
                        span.clone(),
                        format!(
                            "`url.path` {g:?} of the {} starts with `/` (a glob over the \
                             path, like \"/docs/*\")",
                            at.what
                        ),
                    );
                }
                Pattern::new(g).or_else(|e| {
                    at.err(span.clone(), format!("`url.path` of the {}: {e}", at.what))
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let ports = match t.get("ports") {
        None => Vec::new(),
        Some(toml::Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|p| {
                p.as_integer()
                    .and_then(|n| u16::try_from(n).ok())
                    .filter(|n| *n > 0)
                    .map_or_else(
                        || {
                            at.err(
                                span.clone(),
                                format!(
                                    "`url.ports` of the {} holds {p}, which is not a port \
                                     (1 to 65535)",
                                    at.what
                                ),
                            )
                        },
                        Ok,
                    )
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return at.err(
                span,
                format!(
                    "`url.ports` of the {} is a non-empty list of port numbers",
                    at.what
                ),
            );
        }
    };
    Ok(Test::Url(UrlTest { hosts, ports, path }))
}

/// `links = false` or `links = { host | host_in = … }`.
pub(crate) fn links(
    at: &At<'_>,
    v: &Spanned<toml::Value>,
    lists: &Lists,
) -> Result<Test, ConfigError> {
    if matches!(v.get_ref(), toml::Value::Boolean(false)) {
        return Ok(Test::Links(LinksTest::None));
    }
    let keys = ["host", "host_in"];
    let span = v.span();
    let Some(t) = table(at, "links", v, &keys, None, "")? else {
        return at.err(span, "unreachable: `links = true` is refused above");
    };
    Ok(Test::Links(LinksTest::Hosts(
        match one_of(at, span.clone(), "links", t, &keys)? {
            Some(("host", value)) => {
                let names = strings(at, span.clone(), "links.host", value)?;
                Arc::new(
                    HostSet::new(None, names, false).or_else(|e| {
                        at.err(span, format!("`links.host` of the {}: {e}", at.what))
                    })?,
                )
            }
            Some((_, value)) => host_list(at, span, "links.host_in", value, lists, false)?,
            None => return at.err(span, "unreachable: an empty table is refused above"),
        },
    )))
}

fn list_name<'v>(
    at: &At<'_>,
    span: Range<usize>,
    key: &str,
    value: &'v toml::Value,
) -> Result<&'v str, ConfigError> {
    value.as_str().map_or_else(
        || {
            at.err(
                span,
                format!("`{key}` of the {} is the name of a [lists] entry", at.what),
            )
        },
        Ok,
    )
}

/// `email = { in = "LIST" }`: the list's entries as canonical addresses, made once.
fn addresses(
    at: &At<'_>,
    span: Range<usize>,
    value: &toml::Value,
    lists: &Lists,
) -> Result<Arc<List>, ConfigError> {
    let name = list_name(at, span.clone(), "email.in", value)?;
    if let Some(done) = lists.addresses.borrow().get(name) {
        return Ok(Arc::clone(done));
    }
    let (_, entries) = at.list(lists, name, span)?;
    let mut canon = Vec::with_capacity(entries.len());
    for e in entries {
        let read = e
            .get_ref()
            .as_str()
            .ok_or_else(|| a(e.get_ref().type_str()))
            .and_then(|s| policy::email::canonical(s).map_err(|why| format!("{s:?} ({why})")));
        match read {
            Ok(c) => canon.push(Scalar::Str(c)),
            Err(what) => {
                return at.err(
                    e.span(),
                    format!(
                        "list {name:?} holds {what}, which is not one e-mail address; the \
                         {} reads it as addresses",
                        at.what
                    ),
                );
            }
        }
    }
    let list = Arc::new(List::new(Some(name.to_owned()), canon));
    lists
        .addresses
        .borrow_mut()
        .insert(name.to_owned(), Arc::clone(&list));
    Ok(list)
}

/// `… host_in = "LIST"`: the list's entries as host patterns, made once.
fn host_list(
    at: &At<'_>,
    span: Range<usize>,
    key: &str,
    value: &toml::Value,
    lists: &Lists,
    names_only: bool,
) -> Result<Arc<HostSet>, ConfigError> {
    let name = list_name(at, span.clone(), key, value)?;
    let cache_key = (name.to_owned(), names_only);
    if let Some(done) = lists.hosts.borrow().get(&cache_key) {
        return Ok(Arc::clone(done));
    }
    let (_, entries) = at.list(lists, name, span.clone())?;
    let mut texts = Vec::with_capacity(entries.len());
    for e in entries {
        let Some(s) = e.get_ref().as_str() else {
            return at.err(
                e.span(),
                format!(
                    "list {name:?} holds {}, which is not a host; the {} reads it as hosts",
                    a(e.get_ref().type_str()),
                    at.what
                ),
            );
        };
        // Each entry alone first, so the error is at its own line.
        if let Err(why) = HostSet::new(None, [s], names_only) {
            return at.err(
                e.span(),
                format!("list {name:?}: {why}; the {} reads it as hosts", at.what),
            );
        }
        texts.push(s);
    }
    let set = HostSet::new(Some(name.to_owned()), texts, names_only)
        .or_else(|e| at.err(span, format!("list {name:?}: {e}")))?;
    let set = Arc::new(set);
    lists.hosts.borrow_mut().insert(cache_key, Arc::clone(&set));
    Ok(set)
}

/// A TOML type's name with its article: "a string", "an integer".
fn a(type_name: &str) -> String {
    if type_name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {type_name}")
    } else {
        format!("a {type_name}")
    }
}
