//! What the checked config decides for a call: the label of its answers, from the tool's
//! floor and the `[[label]]` rules (docs/spec.md §3.4), and where a box may connect at that
//! label, by the `[[egress]]` rules (docs/spec.md §3.5, §3.6). The rules themselves — their
//! types, and how a host or an address is read — are `crate::labels` and `crate::egress`;
//! the config they hang from is `crate::model`. Apart from all three so that none of them
//! names another back.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use policy::{Arguments, Label};
use proto::DataClass;

use crate::egress::{
    CallLabel, Cleared, Destination, EgressRule, HostPattern, LOCAL_HOSTS, Refusal, Way,
    checked_as, forbidden_one, plural,
};
use crate::labels::AnswerLabel;
use crate::model::{Config, Tool};

impl Config {
    /// The label of every answer of a call to `tool` with `args` — a result, a `failed`, a
    /// timeout, a box that did not start (docs/spec.md §3.4): the tool's own floor
    /// ([`Config::floor`]) raised by every label rule that matches the call. The one place a
    /// call's label comes from; the file tools raise it further by the files they read.
    pub fn answer_label(&self, tool: &str, args: &Arguments) -> AnswerLabel {
        let mut label = self.floor(tool);
        let mut rules = Vec::new();
        for (i, r) in self.labels.iter().enumerate() {
            if r.matches(tool, args) {
                label.class = label.class.max(r.raises().class);
                label.untrusted |= r.untrusted;
                rules.push(i);
            }
        }
        AnswerLabel { label, rules }
    }

    /// What an answer's values raise its label to (docs/spec.md §3.4, `shows`): every
    /// `shows` rule that looks at this call and one of whose values `shown` (the answer's
    /// values, as `policy::values::in_answer` read them) holds, joined from public and
    /// trusted; and which rules. Asked of every answer, after the call; nothing when no rule
    /// says `shows`.
    pub fn shown_label(
        &self,
        tool: &str,
        args: &Arguments,
        shown: &policy::values::Found,
    ) -> AnswerLabel {
        let mut label = Label::new(DataClass::Public, false);
        let mut rules = Vec::new();
        for (i, r) in self.labels.iter().enumerate() {
            if let Some(s) = &r.shows
                && r.matches_call(tool, args)
                && s.in_answer(shown)
            {
                label.class = label.class.max(r.raises().class);
                label.untrusted |= r.untrusted;
                rules.push(i);
            }
        }
        AnswerLabel { label, rules }
    }

    /// [`Config::answer_label`] of a call whose arguments are the JSON text `arguments`, read
    /// as the gate reads them (strict JSON: [`Arguments::parse`]).
    pub fn answer_label_for(&self, tool: &str, arguments: &str) -> AnswerLabel {
        // Parsed only when a rule of this tool has conditions to test: with none, what the
        // arguments hold changes nothing (and `Unknown` is never tested).
        let tested = self
            .labels
            .iter()
            .any(|r| !r.when.is_empty() && r.tool.matches(tool));
        let args = if tested {
            Arguments::parse(arguments)
        } else {
            Arguments::Unknown
        };
        self.answer_label(tool, &args)
    }

    /// For `check --explain`: one line for every label rule whose tool pattern matches
    /// `tool`, saying whether it matches this call and what each condition found.
    pub fn explain_labels(&self, tool: &str, args: &Arguments) -> Vec<String> {
        self.labels
            .iter()
            .enumerate()
            .filter(|(_, r)| r.tool.matches(tool))
            .map(|(i, r)| {
                let mut line = r.describe(i);
                let (verdict, conditions) = match args.json() {
                    None if r.shows.is_some() => (
                        "looks at this call's answer: the arguments are not strict JSON, so \
                         its conditions cannot be tested and it applies to what the answer \
                         shows"
                            .to_owned(),
                        Vec::new(),
                    ),
                    None => (
                        "matches: the arguments are not strict JSON, so its conditions cannot \
                         be tested and it applies"
                            .to_owned(),
                        Vec::new(),
                    ),
                    Some(v) => {
                        let lines: Vec<String> = r
                            .when
                            .iter()
                            .enumerate()
                            .map(|(n, c)| match c.check(v) {
                                Ok(()) => {
                                    format!("condition {} holds: {}", n + 1, c.describe_hold(v))
                                }
                                Err(f) => {
                                    format!("condition {} fails: {}", n + 1, c.describe(v, &f))
                                }
                            })
                            .collect();
                        let verdict = match (&r.shows, r.matches_call(tool, args)) {
                            (Some(_), true) => {
                                "looks at this call's answer: it raises the \
                                                answer if the answer shows one of its values"
                            }
                            (None, true) => "matches",
                            (_, false) => "does not match",
                        };
                        (verdict.to_owned(), lines)
                    }
                };
                line.push_str(": ");
                line.push_str(&verdict);
                if let Some(why) = &r.reason {
                    line.push_str(&format!(" ({why:?})"));
                }
                if !conditions.is_empty() {
                    line.push_str(&format!(" [{}]", conditions.join("; ")));
                }
                line
            })
            .collect()
    }
}

impl Config {
    /// The label of a call to `name` (the tool as the agent called it) with `args` (its
    /// arguments, as sent), in a session whose floor is `floor`, by a tool whose reach is
    /// `reach` (docs/spec.md §3.6): the highest of the floor, the reach and the class of the
    /// tool that serves `name`, raised by every label rule that matches the call
    /// ([`Config::answer_label_for`], docs/spec.md §3.4). Nothing has been read yet; the
    /// proxy raises `read` as answers reach the box. This is the one place a call's label
    /// for egress is made.
    pub fn call_label(&self, name: &str, args: &str, floor: Label, reach: DataClass) -> CallLabel {
        let call = self
            .candidates(name)
            .map(|t| t.label())
            .fold(Label::PUBLIC, Label::join)
            .join(self.answer_label_for(name, args).label);
        CallLabel {
            session: floor,
            reach,
            call,
            read: Label::PUBLIC,
        }
    }

    /// The egress rules `tool` may use, in file order: those its `egress = [...]` names (by
    /// a rule's `name` or `host` as written), or every rule.
    pub fn egress_rules_of<'a>(&'a self, tool: &'a Tool) -> impl Iterator<Item = &'a EgressRule> {
        self.egress.iter().filter(move |r| match &tool.egress {
            None => true,
            Some(names) => names
                .iter()
                .any(|n| r.name.as_deref() == Some(n.as_str()) || r.written == *n),
        })
    }

    /// Whether `tool` (`None`: a box of no tool, which may use every rule) may connect to
    /// `dest:port` at `label`, by `way`: the rule that clears it, or why not (docs/spec.md
    /// §3.6). An address is cleared as what it is [`checked_as`]: an IPv6 one that carries
    /// IPv4 ones only when each of those is (the clearance is the lowest of theirs, the
    /// label of its answers the highest). For a name, the addresses it resolves to are
    /// checked after with [`Config::clear_address`].
    pub fn clearance<'a>(
        &'a self,
        tool: Option<&'a Tool>,
        dest: Destination<'_>,
        port: u16,
        way: Way,
        label: CallLabel,
    ) -> Result<Cleared<'a>, Refusal> {
        let shown = dest.to_string();
        let Destination::Address(ip) = dest else {
            return self
                .clear_one(tool, dest, &shown, port, way, label)
                .map(|rule| Cleared {
                    rule,
                    class: rule.class,
                    returns: rule.answers(),
                });
        };
        let list = checked_as(ip).map_err(|address| Refusal::Untranslatable {
            dest: shown.clone(),
            port,
            how: "it is",
            address,
        })?;
        let mut cleared: Option<Cleared<'a>> = None;
        for a in list {
            let r = self.clear_one(tool, Destination::Address(a), &shown, port, way, label)?;
            cleared = Some(match cleared {
                None => Cleared {
                    rule: r,
                    class: r.class,
                    returns: r.answers(),
                },
                Some(c) => Cleared {
                    rule: if r.class < c.class { r } else { c.rule },
                    class: c.class.min(r.class),
                    returns: c.returns.join(r.answers()),
                },
            });
        }
        cleared.ok_or(Refusal::NotListed { dest: shown, port })
    }

    /// [`Config::clearance`] for a name, or an address that carries no other; `shown` is the
    /// destination as the box wrote it, for the refusal.
    fn clear_one<'a>(
        &'a self,
        tool: Option<&'a Tool>,
        dest: Destination<'_>,
        shown: &str,
        port: u16,
        way: Way,
        label: CallLabel,
    ) -> Result<&'a EgressRule, Refusal> {
        let names = |r: &EgressRule| match (&r.host, dest) {
            (HostPattern::Net(net), Destination::Address(ip)) => net.contains(ip),
            (pattern, Destination::Name(n)) => pattern.names(n),
            _ => false,
        };
        let usable: Vec<&EgressRule> = match tool {
            Some(t) => self.egress_rules_of(t).filter(|r| names(r)).collect(),
            None => self.egress.iter().filter(|r| names(r)).collect(),
        };
        let d = shown.to_string();
        if usable.is_empty() {
            return Err(if let Destination::Address(address) = dest {
                Refusal::UnnamedAddress {
                    dest: d,
                    port,
                    address,
                }
            } else if let Some(t) = tool.filter(|_| self.egress.iter().any(names)) {
                Refusal::NotForTool {
                    dest: d,
                    port,
                    tool: t.name.clone(),
                }
            } else {
                Refusal::NotListed { dest: d, port }
            });
        }
        let on_port: Vec<&EgressRule> = usable
            .iter()
            .copied()
            .filter(|r| r.ports.contains(&port))
            .collect();
        if on_port.is_empty() {
            let ports = port_list(usable.iter().flat_map(|r| r.ports.clone()));
            return Err(Refusal::Port {
                dest: d,
                port,
                ports: format!("{} {}", plural("port", ports.len()), ports.join(", ")),
            });
        }
        let on_port: Vec<&EgressRule> = match way {
            Way::Request => on_port,
            Way::Tunnel => {
                let tunnels: Vec<&EgressRule> = on_port
                    .iter()
                    .copied()
                    .filter(|r| r.tunnel_ports.contains(&port))
                    .collect();
                if tunnels.is_empty() {
                    let ports = port_list(on_port.iter().flat_map(|r| r.tunnel_ports.clone()));
                    return Err(Refusal::Tunnel {
                        dest: d,
                        port,
                        to: if ports.is_empty() {
                            "to no port".into()
                        } else {
                            format!(
                                "only to {} {}",
                                plural("port", ports.len()),
                                ports.join(", ")
                            )
                        },
                    });
                }
                tunnels
            }
        };
        let class = label.class();
        // Any rule that clears the label allows it; the most specific one is named.
        if let Some(r) = on_port
            .iter()
            .filter(|r| r.class >= class)
            .max_by_key(|r| (r.host.rank(), r.class))
        {
            return Ok(r);
        }
        let best = on_port
            .iter()
            .map(|r| r.class)
            .max()
            .unwrap_or(DataClass::Public);
        Err(Refusal::Clearance {
            dest: d,
            port,
            holder: label.holder(),
            class: best,
        })
    }

    /// Whether a connection to `name:port` (by `way`) that resolved to `ip` may use that
    /// address: yes when nothing it is [`checked_as`] is [`forbidden`] (the name's rule
    /// decided), else only when an address rule `tool` may use names each forbidden one
    /// (the IPv4 an IPv6 address carries, not the IPv6), allows the port and clears `label`.
    /// A local-use NAT64 address never. `own` are this machine's addresses. Allowed, it
    /// gives the label of what that address answers by the address rules that cleared it
    /// (their join; `public`, trusted, when none had to: the name's rule says).
    #[allow(clippy::too_many_arguments)]
    #[allow(clippy::too_many_arguments)]
    pub fn clear_address(
        &self,
        tool: Option<&Tool>,
        name: &str,
        ip: IpAddr,
        port: u16,
        way: Way,
        label: CallLabel,
        own: &[IpAddr],
    ) -> Result<Label, Refusal> {
        self.clear_address_within(tool, name, ip, port, way, label, own)
            .map(|(returns, _)| returns)
    }

    /// [`Config::clear_address`], and the highest class the address rules it needed clear
    /// (`secret` when it needed none): a connection to the name is cleared for the lower of
    /// that and its name rule's class, since at a label above the address rule's the same
    /// decision would refuse the address.
    #[allow(clippy::too_many_arguments)]
    pub fn clear_address_within(
        &self,
        tool: Option<&Tool>,
        name: &str,
        ip: IpAddr,
        port: u16,
        way: Way,
        label: CallLabel,
        own: &[IpAddr],
    ) -> Result<(Label, DataClass), Refusal> {
        let list = checked_as(ip).map_err(|address| Refusal::Untranslatable {
            dest: name.to_string(),
            port,
            how: "it resolves to",
            address,
        })?;
        let mut returns = Label::PUBLIC;
        let mut within = DataClass::Secret;
        for a in list {
            let Some(what) = forbidden_one(a, own) else {
                continue;
            };
            let shown = Destination::Address(a).to_string();
            match self.clear_one(tool, Destination::Address(a), &shown, port, way, label) {
                Ok(r) => {
                    returns = returns.join(r.answers());
                    within = within.min(r.class);
                }
                Err(_) => {
                    return Err(Refusal::Forbidden {
                        dest: name.to_string(),
                        port,
                        address: ip,
                        what,
                        named: if a == ip {
                            "that address".into()
                        } else {
                            format!("{a}, the IPv4 address it carries,")
                        },
                    });
                }
            }
        }
        Ok((returns, within))
    }

    /// What a networked box's `NO_PROXY` lists (docs/spec.md §3.6): those of [`LOCAL_HOSTS`]
    /// no `[[egress]]` rule names, comma-separated, or `None` when every one is named. An
    /// address a rule names is the host's, reached through the proxy; a client told to go
    /// to it directly would reach the box's own `lo` instead, and fail with no audit record.
    /// `localhost` goes through the proxy when a rule names it, or when a rule names every
    /// name (`*`) and a loopback address it resolves to is named too.
    pub fn no_proxy(&self) -> Option<String> {
        let named_address = |a: IpAddr| {
            self.egress
                .iter()
                .any(|r| matches!(&r.host, HostPattern::Net(net) if net.contains(a)))
        };
        let loopback_named = [
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ]
        .into_iter()
        .any(named_address);
        let direct: Vec<&str> = LOCAL_HOSTS
            .iter()
            .copied()
            .filter(|host| match host.parse::<IpAddr>() {
                Ok(a) => !named_address(a),
                Err(_) => !self.egress.iter().any(|r| match &r.host {
                    HostPattern::Name(n) => n == host,
                    HostPattern::AnyName => loopback_named,
                    HostPattern::Below(_) | HostPattern::Net(_) => false,
                }),
            })
            .collect();
        (!direct.is_empty()).then(|| direct.join(","))
    }

    /// The tools whose boxes get the network but that no egress rule serves: their boxes
    /// can reach nothing (a note for `check` and `doctor`).
    pub fn unserved_network_tools(&self) -> Vec<&Tool> {
        self.tools
            .iter()
            .filter(|t| t.network && self.egress_rules_of(t).next().is_none())
            .collect()
    }
}

/// Ports sorted, each once, as text.
fn port_list(ports: impl Iterator<Item = u16>) -> Vec<String> {
    let mut ports: Vec<u16> = ports.collect();
    ports.sort_unstable();
    ports.dedup();
    ports.iter().map(u16::to_string).collect()
}
