//! Egress (docs/spec.md §3.5, "Destinations"): where a networked box may connect, through
//! boxmaker's proxy, and at which label. The rules here are the rules; the runner's proxy
//! decides every connection with them, and `box show` and `check` print them.
//!
//! - A destination is a sink with a **clearance**: an `[[egress]]` rule names it (a host
//!   name, a `*.suffix` glob, `*` for any name, or an address or CIDR) with the ports it
//!   may be reached on and `class`, the highest label a call may have and still connect
//!   there. So the network tightens by itself as the taint rises ("no write down", applied
//!   to the network).
//! - A call's label is `max(session floor, the tool's reach)` ([`CallLabel`], the
//!   [`crate::box_label`] of the call); a connection is allowed when some rule the tool may
//!   use ([`Config::egress_rules_of`]) names the destination, allows the port and clears
//!   the label ([`Config::clearance`]).
//! - **Never reachable unless a rule names it by address**: loopback, the host's own
//!   addresses, private ranges, shared address space, link-local (the metadata address),
//!   multicast, unspecified and broadcast ([`forbidden`]). A name that resolves to one of
//!   them is refused unless an address rule the tool may use clears it
//!   ([`Config::clear_address`]); an IP literal is reached only when an address rule names
//!   it, whatever the address.
//!
//! A [`Refusal`] is one sentence a model can act on; the proxy sends it as the reason of its
//! `403` and the tool's error quotes it.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proto::DataClass;

use crate::model::{Config, Tool};

/// Ports a rule allows when it names none: HTTPS and HTTP.
pub const DEFAULT_PORTS: &[u16] = &[443, 80];

/// The longest host name (RFC 1035: 253 characters written out).
const MAX_NAME: usize = 253;

/// One `[[egress]]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressRule {
    /// How a tool's `egress = [...]` may name it (besides its `host`).
    pub name: Option<String>,
    /// What it names.
    pub host: HostPattern,
    /// The ports it may be reached on ([`DEFAULT_PORTS`] when the file names none).
    pub ports: Vec<u16>,
    /// The highest label a call may have and still connect there.
    pub class: DataClass,
    /// The `host` as written, for messages and for `[[tool]] egress` to name it by.
    pub written: String,
    /// The line of its `host` in the file.
    pub line: usize,
}

/// What a rule's `host` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// `*`: any host name (never an address: those need an address rule).
    AnyName,
    /// One host name, lower case, without a trailing dot.
    Name(String),
    /// `*.example.com`: every name below it (`a.example.com`, `a.b.example.com`), not
    /// `example.com` itself. Held as `.example.com`.
    Below(String),
    /// An address, or every address of a CIDR block.
    Net(IpNet),
}

/// An address block: `addr/prefix`, host bits zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl IpNet {
    /// Parses `192.0.2.7`, `192.0.2.0/24`, `2001:db8::1` or `2001:db8::/32` (host bits
    /// must be zero, so a block is written as it is).
    pub fn parse(s: &str) -> Result<IpNet, String> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .parse()
            .map_err(|_| format!("{a:?} is not an IPv4 or IPv6 address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if n <= max && p.bytes().all(|b| b.is_ascii_digit()) => n,
                _ => return Err(format!("{p:?} is not a prefix length from 0 to {max}")),
            },
        };
        let net = IpNet { addr, prefix };
        if net.masked(addr) != addr {
            return Err(format!(
                "{s} has bits set past its /{prefix}: write the block's first address"
            ));
        }
        Ok(net)
    }

    fn masked(&self, ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V4(v) => {
                let bits = u32::from(v);
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(bits & mask))
            }
            IpAddr::V6(v) => {
                let bits = u128::from(v);
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(bits & mask))
            }
        }
    }

    /// Whether `ip` is in this block (an IPv4-mapped IPv6 address counts as its IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        ip.is_ipv4() == self.addr.is_ipv4() && self.masked(ip) == self.addr
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let max = if self.addr.is_ipv4() { 32 } else { 128 };
        if self.prefix == max {
            write!(f, "{}", self.addr)
        } else {
            write!(f, "{}/{}", self.addr, self.prefix)
        }
    }
}

impl HostPattern {
    /// Parses a rule's `host`.
    pub fn parse(s: &str) -> Result<HostPattern, String> {
        if s == "*" {
            return Ok(HostPattern::AnyName);
        }
        if s.contains('/') || s.parse::<IpAddr>().is_ok() {
            return IpNet::parse(s).map(HostPattern::Net);
        }
        if let Some(rest) = s.strip_prefix("*.") {
            let name = normal_name(rest).map_err(|why| format!("{s:?}: {why}"))?;
            return Ok(HostPattern::Below(format!(".{name}")));
        }
        if s.contains('*') {
            return Err(format!(
                "{s:?}: a glob is written `*.example.com` (every name below it) or `*` (any \
                 name); `*` may not stand anywhere else"
            ));
        }
        normal_name(s)
            .map(HostPattern::Name)
            .map_err(|why| format!("{s:?}: {why}"))
    }

    fn names(&self, name: &str) -> bool {
        match self {
            HostPattern::AnyName => true,
            HostPattern::Name(n) => n == name,
            HostPattern::Below(suffix) => name.len() > suffix.len() && name.ends_with(suffix),
            HostPattern::Net(_) => false,
        }
    }

    /// How specific the match is: an exact name over a suffix over any name.
    fn rank(&self) -> usize {
        match self {
            HostPattern::Name(_) | HostPattern::Net(_) => 3,
            HostPattern::Below(s) => 2 + s.len().min(1),
            HostPattern::AnyName => 1,
        }
    }
}

/// `name` checked and made canonical: lower case, no trailing dot, labels of letters,
/// digits, `-` and `_` (1 to 63 each), at most 253 characters, and a last label that is not
/// all digits (so no spelling of an address, such as `2130706433` or `127.1`, passes as a
/// name). International names are written in their `xn--` form.
pub fn normal_name(name: &str) -> Result<String, String> {
    let lower = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    if lower.is_empty() || lower.len() > MAX_NAME {
        return Err(format!("a host name is 1 to {MAX_NAME} characters"));
    }
    for label in lower.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err("each dot-separated part of a host name is 1 to 63 characters".into());
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            || label.starts_with('-')
            || label.ends_with('-')
        {
            return Err(
                "a host name holds only letters, digits, `-` and `_` between dots (write an \
                 international name in its xn-- form)"
                    .into(),
            );
        }
    }
    if lower
        .rsplit('.')
        .next()
        .is_some_and(|last| last.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err("its last part is all digits, which spells an address, not a name".into());
    }
    Ok(lower)
}

/// Where a connection asks to go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination<'a> {
    /// A host name, canonical ([`normal_name`]).
    Name(&'a str),
    /// An IP literal.
    Address(IpAddr),
}

impl fmt::Display for Destination<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Destination::Name(n) => f.write_str(n),
            Destination::Address(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Destination::Address(a) => write!(f, "{a}"),
        }
    }
}

/// The label a connection is decided at, and where it comes from: the session's floor
/// (what the session has been shown, as the runner knows it) and the tool's reach (what its
/// box can read). The label is their maximum ([`crate::box_label`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLabel {
    pub session: DataClass,
    pub reach: DataClass,
}

impl CallLabel {
    pub fn class(&self) -> DataClass {
        crate::box_label(self.session, self.reach)
    }

    /// Who holds the label, for a refusal: the session's data, or what the box can read.
    fn holder(&self) -> String {
        if self.session >= self.reach {
            format!("this session holds {} data", self.session)
        } else {
            format!("this tool's box can read {} data (its mounts)", self.reach)
        }
    }
}

/// Why a connection is refused: one sentence, starting `boxmaker refused HOST:PORT:`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "boxmaker refused {dest}:{port}: it is not in the config's egress rules (an [[egress]] \
         rule in boxmaker.toml names the hosts a networked tool may reach)"
    )]
    NotListed { dest: String, port: u16 },
    #[error(
        "boxmaker refused {dest}:{port}: the tool {tool} may not use the egress rule that names \
         it (its [[tool]] egress = [...] leaves it out)"
    )]
    NotForTool {
        dest: String,
        port: u16,
        tool: String,
    },
    #[error("boxmaker refused {dest}:{port}: its egress rule allows only {ports}")]
    Port {
        dest: String,
        port: u16,
        /// `port 443` or `ports 80, 443`.
        ports: String,
    },
    #[error("boxmaker refused {dest}:{port}: {holder} and that destination is cleared for {class}")]
    Clearance {
        dest: String,
        port: u16,
        holder: String,
        class: DataClass,
    },
    #[error(
        "boxmaker refused {dest}:{port}: an address is reached only when an egress rule names \
         it (host = \"{address}\"); connect by name"
    )]
    UnnamedAddress {
        dest: String,
        port: u16,
        address: IpAddr,
    },
    #[error(
        "boxmaker refused {dest}:{port}: it resolves to {address}, {what}, which only an egress \
         rule naming that address may reach"
    )]
    Forbidden {
        dest: String,
        port: u16,
        address: IpAddr,
        what: &'static str,
    },
}

/// Why `ip` is never reached unless a rule names it by address, if it is one of those:
/// loopback, one of the host's own addresses (`own`), a private or shared range, link-local
/// (the cloud metadata address is in it), multicast, unspecified, broadcast or reserved.
/// An IPv4-mapped, IPv4-compatible, NAT64 or 6to4 IPv6 address is judged by the IPv4 it
/// carries (a gateway would forward it there).
pub fn forbidden(ip: IpAddr, own: &[IpAddr]) -> Option<&'static str> {
    let ip = canonical(ip);
    if own.iter().any(|o| canonical(*o) == ip) {
        return Some("one of this machine's own addresses");
    }
    match ip {
        IpAddr::V4(v) => forbidden_v4(v),
        IpAddr::V6(v) => {
            if let Some(v4) = embedded_v4(v) {
                return forbidden_v4(v4).or(Some("an IPv6 address that carries an IPv4 one"));
            }
            let s = v.segments();
            if v.is_unspecified() {
                Some("the unspecified address")
            } else if v.is_loopback() {
                Some("a loopback address")
            } else if s[0] & 0xfe00 == 0xfc00 {
                Some("a unique local (private) address")
            } else if s[0] & 0xffc0 == 0xfe80 || s[0] & 0xffc0 == 0xfec0 {
                Some("a link-local address")
            } else if s[0] & 0xff00 == 0xff00 {
                Some("a multicast address")
            } else {
                None
            }
        }
    }
}

fn forbidden_v4(v: Ipv4Addr) -> Option<&'static str> {
    let o = v.octets();
    if v.is_unspecified() || o[0] == 0 {
        Some("the unspecified (\"this network\") address")
    } else if v.is_loopback() {
        Some("a loopback address")
    } else if v.is_private() {
        Some("a private (RFC 1918) address")
    } else if o[0] == 100 && o[1] & 0xc0 == 64 {
        Some("a shared (carrier-grade NAT) address")
    } else if v.is_link_local() {
        Some("a link-local address (the cloud metadata address is one)")
    } else if v.is_multicast() {
        Some("a multicast address")
    } else if v.is_broadcast() || o[0] >= 240 {
        Some("a broadcast or reserved address")
    } else {
        None
    }
}

/// The IPv4 address an IPv6 one carries for a gateway to forward to: mapped
/// (`::ffff:a.b.c.d`), compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) or 6to4
/// (`2002:AABB:CCDD::/48`).
fn embedded_v4(v: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let mapped_or_compatible =
        s[..5].iter().all(|x| *x == 0) && (s[5] == 0xffff || (s[5] == 0 && u32::from(low) > 1));
    let nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|x| *x == 0);
    if mapped_or_compatible || nat64 {
        Some(low)
    } else if s[0] == 0x2002 {
        Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ))
    } else {
        None
    }
}

/// An IPv4-mapped IPv6 address as its IPv4; anything else as it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v) => match v.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ip,
        },
        v4 => v4,
    }
}

impl Config {
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
    /// `dest:port` at `label`: the rule that clears it, or why not (docs/spec.md §3.5).
    /// For a name, the addresses it resolves to are checked after with
    /// [`Config::clear_address`].
    pub fn clearance<'a>(
        &'a self,
        tool: Option<&'a Tool>,
        dest: Destination<'_>,
        port: u16,
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
        let d = dest.to_string();
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
            let mut ports: Vec<u16> = usable.iter().flat_map(|r| r.ports.clone()).collect();
            ports.sort_unstable();
            ports.dedup();
            let list: Vec<String> = ports.iter().map(u16::to_string).collect();
            return Err(Refusal::Port {
                dest: d,
                port,
                ports: format!(
                    "port{} {}",
                    if list.len() == 1 { "" } else { "s" },
                    list.join(", ")
                ),
            });
        }
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

    /// Whether a connection to `name:port` that resolved to `ip` may use that address:
    /// yes for an address [`forbidden`] does not name (the name's rule decided), else only
    /// when an address rule `tool` may use names it, allows the port and clears `label`.
    /// `own` are this machine's addresses.
    pub fn clear_address(
        &self,
        tool: Option<&Tool>,
        name: &str,
        ip: IpAddr,
        port: u16,
        label: CallLabel,
        own: &[IpAddr],
    ) -> Result<(), Refusal> {
        let Some(what) = forbidden(ip, own) else {
            return Ok(());
        };
        match self.clearance(tool, Destination::Address(ip), port, label) {
            Ok(_) => Ok(()),
            Err(_) => Err(Refusal::Forbidden {
                dest: name.to_string(),
                port,
                address: ip,
                what,
            }),
        }
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

impl EgressRule {
    /// The rule as a person reads it: `api.github.com ports 443, 80 cleared for public`.
    pub fn describe(&self) -> String {
        let ports: Vec<String> = self.ports.iter().map(u16::to_string).collect();
        let name = self
            .name
            .as_ref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        format!(
            "{}{name} port{} {} cleared for {}",
            self.written,
            if self.ports.len() == 1 { "" } else { "s" },
            ports.join(", "),
            self.class
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Config {
        crate::parse(text, "t.toml", std::path::Path::new("/tmp")).unwrap()
    }

    const RULES: &str = r#"
[[egress]]
host = "api.example.com"

[[egress]]
name = "pypi"
host = "*.pythonhosted.org"
ports = [443]

[[egress]]
host = "cleared.example.com"
class = "confidential"

[[egress]]
host = "192.0.2.0/24"
ports = [8080]

[[egress]]
host = "127.0.0.1"
ports = [9000]

[[tool]]
name = "fetch"
mcp = ["fetch"]
network = true

[[tool]]
name = "pip"
mcp = ["pip"]
network = true
egress = ["pypi"]
"#;

    fn public() -> CallLabel {
        CallLabel {
            session: DataClass::Public,
            reach: DataClass::Public,
        }
    }

    #[test]
    fn a_listed_name_on_its_port_at_its_clearance_is_allowed() {
        let c = cfg(RULES);
        let t = c.tool("fetch");
        let r = c
            .clearance(t, Destination::Name("api.example.com"), 443, public())
            .unwrap();
        assert_eq!(r.written, "api.example.com");
        assert!(
            c.clearance(
                t,
                Destination::Name("files.pythonhosted.org"),
                443,
                public()
            )
            .is_ok()
        );
        assert!(
            c.clearance(t, Destination::Name("pythonhosted.org"), 443, public())
                .is_err(),
            "*.x does not name x itself"
        );
    }

    #[test]
    fn a_confidential_session_is_refused_a_public_destination_in_words() {
        let c = cfg(RULES);
        let label = CallLabel {
            session: DataClass::Confidential,
            reach: DataClass::Public,
        };
        let e = c
            .clearance(
                c.tool("fetch"),
                Destination::Name("api.example.com"),
                443,
                label,
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "boxmaker refused api.example.com:443: this session holds confidential data and \
             that destination is cleared for public"
        );
        assert!(
            c.clearance(
                c.tool("fetch"),
                Destination::Name("cleared.example.com"),
                443,
                label
            )
            .is_ok()
        );
        let reach = CallLabel {
            session: DataClass::Public,
            reach: DataClass::Secret,
        };
        let e = c
            .clearance(
                c.tool("fetch"),
                Destination::Name("cleared.example.com"),
                443,
                reach,
            )
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("this tool's box can read secret data"),
            "{e}"
        );
    }

    #[test]
    fn unlisted_wrong_port_and_other_tools_rules_are_refused() {
        let c = cfg(RULES);
        let e = c
            .clearance(
                c.tool("fetch"),
                Destination::Name("evil.example"),
                443,
                public(),
            )
            .unwrap_err();
        assert!(matches!(e, Refusal::NotListed { .. }), "{e}");
        let e = c
            .clearance(
                c.tool("fetch"),
                Destination::Name("api.example.com"),
                22,
                public(),
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "boxmaker refused api.example.com:22: its egress rule allows only ports 80, 443"
        );
        let e = c
            .clearance(
                c.tool("pip"),
                Destination::Name("api.example.com"),
                443,
                public(),
            )
            .unwrap_err();
        assert!(matches!(e, Refusal::NotForTool { .. }), "{e}");
    }

    #[test]
    fn an_ip_literal_needs_a_rule_naming_it() {
        let c = cfg(RULES);
        let t = c.tool("fetch");
        let ip = |s: &str| Destination::Address(s.parse().unwrap());
        assert!(c.clearance(t, ip("192.0.2.9"), 8080, public()).is_ok());
        let e = c
            .clearance(t, ip("198.51.100.1"), 443, public())
            .unwrap_err();
        assert!(matches!(e, Refusal::UnnamedAddress { .. }), "{e}");
        // A name rule never names an address, even `*`.
        let any = cfg("[[egress]]\nhost = \"*\"\n");
        assert!(
            any.clearance(None, ip("93.184.216.34"), 443, public())
                .is_err()
        );
        assert!(
            any.clearance(None, Destination::Name("x.example"), 443, public())
                .is_ok()
        );
    }

    #[test]
    fn a_name_resolving_to_loopback_private_or_metadata_is_refused_unless_named() {
        let c = cfg(RULES);
        let t = c.tool("fetch");
        for (ip, port) in [
            ("127.0.0.1", 443),
            ("10.1.2.3", 443),
            ("169.254.169.254", 80),
            ("100.64.0.1", 443),
            ("::1", 443),
            ("fd00:ec2::254", 443),
            ("fe80::1", 443),
            ("::ffff:127.0.0.1", 443),
            ("64:ff9b::a9fe:a9fe", 80),
            ("2002:a00:1::1", 443),
            ("224.0.0.1", 443),
            ("255.255.255.255", 443),
            ("0.0.0.0", 443),
        ] {
            let e = c
                .clear_address(t, "x.test", ip.parse().unwrap(), port, public(), &[])
                .unwrap_err();
            assert!(matches!(e, Refusal::Forbidden { .. }), "{ip}: {e}");
        }
        assert!(
            c.clear_address(
                t,
                "x.test",
                "93.184.216.34".parse().unwrap(),
                443,
                public(),
                &[]
            )
            .is_ok()
        );
        // The host's own address, public or not.
        let own: IpAddr = "93.184.216.34".parse().unwrap();
        assert!(
            c.clear_address(t, "x.test", own, 443, public(), &[own])
                .is_err()
        );
        // Named by address (and on its port): allowed.
        assert!(
            c.clear_address(
                t,
                "x.test",
                "127.0.0.1".parse().unwrap(),
                9000,
                public(),
                &[]
            )
            .is_ok()
        );
    }

    #[test]
    fn names_are_canonical_and_never_spell_an_address() {
        assert_eq!(normal_name("API.Example.COM.").unwrap(), "api.example.com");
        for bad in ["2130706433", "127.1", "a..b", "-a.com", "a b", "é.com", ""] {
            assert!(normal_name(bad).is_err(), "{bad}");
        }
        assert!(HostPattern::parse("a.*.com").is_err());
        assert!(HostPattern::parse("10.0.0.1/8").is_err(), "host bits set");
        assert_eq!(
            HostPattern::parse("10.0.0.0/8").unwrap(),
            HostPattern::Net(IpNet {
                addr: "10.0.0.0".parse().unwrap(),
                prefix: 8
            })
        );
    }
}
