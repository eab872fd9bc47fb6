//! Egress (docs/spec.md §3.5, "Destinations"): where a networked box may connect, through
//! boxmaker's proxy, and at which label. The rules here are the rules; the runner's proxy
//! decides every connection with them, and `box show` and `check` print them.
//!
//! - A destination is a sink with a **clearance**: an `[[egress]]` rule names it (a host
//!   name, a `*.suffix` glob, `*` for any name, or an address or CIDR) with the ports it
//!   may be reached on and `class`, the highest label a call may have and still connect
//!   there. So the network tightens by itself as the taint rises ("no write down", applied
//!   to the network).
//! - A connection is decided at the **call's label** ([`CallLabel`]): the highest of the
//!   session's floor, the tool's reach, the call's own label ([`Config::call_label`]: the
//!   tool's class, and where label rules will add theirs) and what the box has read in the
//!   call. It is allowed when some rule the tool may use ([`Config::egress_rules_of`])
//!   names the destination, allows the port and clears the label ([`Config::clearance`]).
//! - **The label floats up, never down.** What a destination answers carries a label, its
//!   rule's `returns` (by default its `class`) and **untrusted** unless the rule says
//!   `trusted = true` ([`EgressRule::answers`], [`Cleared::returns`]); once bytes of it have
//!   reached the box, the box is at that label for every later connection of the call (and
//!   a server's box for good). The runner's proxy keeps that part (`CallLabel::read`).
//! - **A tunnel is for TLS**: a `CONNECT` goes only to a port the rule names in
//!   `tunnel_ports` (443 when the rule allows it and says nothing else), so plain HTTP goes
//!   as an absolute-form request the proxy reads ([`Way`]).
//! - **One reading of a host** ([`classify_host`]): every host the proxy reads (a `CONNECT`
//!   target, a URL's host, a `Host` header, a TLS hello's server name) is a name, an
//!   address written canonically, or refused. A name's last label starts with a letter, so
//!   nothing an address parser reads as a number (`0xc0000202`, `192.0.2.0x2`, `127.1`)
//!   passes as a name.
//! - **Never reachable unless a rule names it by address**: loopback, the host's own
//!   addresses, private ranges, shared address space, link-local (the metadata address),
//!   multicast, unspecified, broadcast and reserved ([`forbidden`]). An IPv6 address that
//!   carries an IPv4 one (mapped, compatible, SIIT, NAT64, 6to4, Teredo) is checked as the
//!   IPv4 it carries ([`checked_as`]), whatever rule names the IPv6. A name that resolves to
//!   one of them is refused unless an address rule the tool may use clears it
//!   ([`Config::clear_address`]); an IP literal is reached only when an address rule names
//!   it, whatever the address.
//!
//! A [`Refusal`] is one sentence a model can act on; the proxy sends it as the reason of its
//! `403`, in an `X-Boxmaker-Refusal` header and as a `text/plain` body, and the tool's error
//! quotes it.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use policy::Label;
use proto::DataClass;

/// Ports a rule allows when it names none: HTTPS and HTTP.
pub const DEFAULT_PORTS: &[u16] = &[443, 80];

/// The port a rule allows tunnels to when it says nothing (and lists it in `ports`): HTTPS.
pub const DEFAULT_TUNNEL_PORT: u16 = 443;

/// The hosts a networked box's clients reach on the box's own `lo`, without the proxy,
/// unless a rule names them ([`Config::no_proxy`]).
pub const LOCAL_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

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
    /// The ports of `ports` a `CONNECT` tunnel may go to (`tunnel_ports`; by default
    /// [`DEFAULT_TUNNEL_PORT`] when `ports` has it, else none).
    pub tunnel_ports: Vec<u16>,
    /// The highest label a call may have and still connect there.
    pub class: DataClass,
    /// The label of what it answers (`returns`; by default its `class`): a box that has read
    /// any of it is at least at this label from then on.
    pub returns: DataClass,
    /// What it answers comes from someone the person trusts (`trusted = true`; by default
    /// not: a destination's bytes are someone else's words, docs/spec.md §3.6).
    pub trusted: bool,
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

    /// Whether `ip` is in this block, as written: an IPv6 address that carries an IPv4 one
    /// is not its IPv4 here ([`checked_as`] says what an address is checked as).
    pub fn contains(&self, ip: IpAddr) -> bool {
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
            let net = IpNet::parse(s)?;
            return match carrier_of(net) {
                Some(why) => Err(format!("{s:?} {why}")),
                None => Ok(HostPattern::Net(net)),
            };
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

    pub(crate) fn names(&self, name: &str) -> bool {
        match self {
            HostPattern::AnyName => true,
            HostPattern::Name(n) => n == name,
            HostPattern::Below(suffix) => name.len() > suffix.len() && name.ends_with(suffix),
            HostPattern::Net(_) => false,
        }
    }

    /// How specific the match is: an exact name over a suffix over any name.
    pub(crate) fn rank(&self) -> usize {
        match self {
            HostPattern::Name(_) | HostPattern::Net(_) => 3,
            HostPattern::Below(s) => 2 + s.len().min(1),
            HostPattern::AnyName => 1,
        }
    }
}

/// A host as the proxy reads it: a name or an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// Canonical ([`normal_name`]).
    Name(String),
    Address(IpAddr),
}

/// What `host` (no brackets, no port) is: an IPv6 address (it has a `:`), an IPv4 address
/// written as four decimal parts without leading zeros, or a name ([`normal_name`]);
/// anything else is refused, with why. This is the one reading of a host for every place
/// the proxy finds one (a `CONNECT` target, a URL, a `Host` header, a TLS server name) and
/// for a rule's `host`: no spelling an address parser reads as another address — `inet_aton`'s
/// 1 to 4 parts in decimal, octal (`0177`) or hex (`0x7f`), a URL parser's `0x` — is a name
/// or an address here, so what the proxy checks is what the resolver reads.
pub fn classify_host(host: &str) -> Result<Host, String> {
    if host.contains(':') {
        return host
            .parse::<Ipv6Addr>()
            .map(|a| Host::Address(IpAddr::V6(a)))
            .map_err(|_| "it has a `:` but is not an IPv6 address".into());
    }
    if let Ok(a) = host.parse::<Ipv4Addr>() {
        return Ok(Host::Address(IpAddr::V4(a)));
    }
    normal_name(host).map(Host::Name)
}

/// `name` checked and made canonical: lower case, no trailing dot, ASCII labels of letters,
/// digits, `-` and `_` (1 to 63 each), at most 253 characters, and a last label that starts
/// with a letter (RFC 1123 §2.1: the top-level label is alphabetic). So no spelling of an
/// address passes as a name: `2130706433`, `127.1`, `0x7f000001`, `192.0.2.0x2`, `1e3` —
/// an address parser reads a last part only when it starts with a digit. International
/// names are written in their `xn--` form (taken as written: the resolver is asked for
/// exactly these bytes).
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
    if !lower
        .rsplit('.')
        .next()
        .is_some_and(|last| last.starts_with(|c: char| c.is_ascii_alphabetic()))
    {
        return Err(
            "its last part does not start with a letter, so it may spell an address (as \
             `127.1`, `0x7f000001` or `192.0.2.0x2` do), not a name"
                .into(),
        );
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

/// How a connection goes out: a request the proxy reads and forwards, or a `CONNECT`
/// tunnel (for TLS: only to a rule's `tunnel_ports`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    Request,
    Tunnel,
}

/// The label a connection is decided at, and where it comes from (docs/spec.md §3.6). The
/// label is the join of the four ([`CallLabel::label`]); a connection is decided by its
/// class ([`CallLabel::class`]), and the box's answers carry the whole of it, the untrusted
/// bit too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLabel {
    /// The session's floor: what its workspace may hold, as the runner knows it.
    pub session: Label,
    /// The tool's reach: what its box can read (its mounts).
    pub reach: DataClass,
    /// The call's own label: the tool's class and `untrusted`, raised by every label rule
    /// that matches the call ([`Config::call_label`]).
    pub call: Label,
    /// What the box has read from destinations' answers so far: it only rises.
    pub read: Label,
}

impl CallLabel {
    /// The class a connection is decided at.
    pub fn class(&self) -> DataClass {
        self.label().class
    }

    /// The whole label: the session's floor, the reach, the call's own and what was read,
    /// joined (`policy::Label::join`, the one join).
    pub fn label(&self) -> Label {
        self.session
            .join(self.call)
            .join(self.read)
            .at_least(self.reach)
    }

    /// What holds the label, for a refusal: what the box read, the session's data, what the
    /// box can read, or the tool's own class.
    pub(crate) fn holder(&self) -> String {
        let c = self.class();
        if self.read.class == c && c > DataClass::Public {
            format!("this box has read {c} data (a destination's answer)")
        } else if self.session.class == c {
            format!("this session holds {c} data")
        } else if self.reach == c {
            format!("this tool's box can read {c} data (its mounts)")
        } else {
            format!("this tool's answers are {c} (its class)")
        }
    }
}

/// A connection [`Config::clearance`] allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cleared<'a> {
    /// The rule that allows it (the most specific one that clears the label).
    pub rule: &'a EgressRule,
    /// The highest label the box may reach and keep the connection: the rule's `class`
    /// (for an address that carries several IPv4 ones, the lowest of theirs).
    pub class: DataClass,
    /// The label of what the destination answers: the rule's `returns`, untrusted unless the
    /// rule says `trusted` ([`EgressRule::answers`]; for several rules, their join).
    pub returns: Label,
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
    #[error(
        "boxmaker refused {dest}:{port}: a CONNECT tunnel is for TLS, and its egress rule \
         allows tunnels {to} (tunnel_ports); send plain HTTP as a request for \
         http://{dest}:{port}/..."
    )]
    Tunnel {
        dest: String,
        port: u16,
        /// `only to port 443`, `only to ports 443, 8443` or `to no port`.
        to: String,
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
         rule naming {named} may reach"
    )]
    Forbidden {
        dest: String,
        port: u16,
        address: IpAddr,
        what: &'static str,
        /// `that address`, or the IPv4 address it carries.
        named: String,
    },
    #[error(
        "boxmaker refused {dest}:{port}: {how} {address}, a local-use NAT64 address \
         (64:ff9b:1::/48), which carries an IPv4 address where only its translator knows, so \
         it is never reached"
    )]
    Untranslatable {
        dest: String,
        port: u16,
        /// `it is` (an address) or `it resolves to` (a name).
        how: &'static str,
        address: Ipv6Addr,
    },
}

/// Why `ip` is never reached unless a rule names it by address, if it is one of those:
/// loopback, one of the host's own addresses (`own`), a private or shared range, link-local
/// (the cloud metadata address is in it), multicast, unspecified, broadcast or reserved.
/// An IPv6 address that carries IPv4 ones is judged by each IPv4 it carries ([`checked_as`]:
/// a gateway would forward it there); a local-use NAT64 one always is.
pub fn forbidden(ip: IpAddr, own: &[IpAddr]) -> Option<&'static str> {
    match checked_as(ip) {
        Err(_) => Some("a local-use NAT64 address, whose IPv4 address only its translator knows"),
        Ok(list) => list.into_iter().find_map(|a| forbidden_one(a, own)),
    }
}

/// [`forbidden`] for an address that carries no other.
pub(crate) fn forbidden_one(ip: IpAddr, own: &[IpAddr]) -> Option<&'static str> {
    let mine = own
        .iter()
        .any(|o| *o == ip || checked_as(*o).is_ok_and(|l| l.contains(&ip)));
    if mine {
        return Some("one of this machine's own addresses");
    }
    match ip {
        IpAddr::V4(v) => forbidden_v4(v),
        IpAddr::V6(v) => {
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
    } else if o[..3] == [192, 0, 0] {
        Some("an IETF protocol address (192.0.0.0/24: translators and tunnel ends)")
    } else if o[0] == 198 && o[1] & 0xfe == 18 {
        Some("a benchmarking address (198.18.0.0/15, used inside networks)")
    } else {
        None
    }
}

/// The IPv4 addresses an IPv6 one carries for a gateway to forward to, and the form:
/// mapped `::ffff:a.b.c.d` and compatible `::a.b.c.d` (RFC 4291), SIIT `::ffff:0:a.b.c.d`
/// (RFC 2765), NAT64 `64:ff9b::a.b.c.d` (RFC 6052), 6to4 `2002:AABB:CCDD::/48` (RFC 3056)
/// and Teredo `2001:0:SSSS:SSSS:…:CCCC:CCCC` (RFC 4380: its server, and its client's
/// address obfuscated by XOR with all ones). `Err` for local-use NAT64 (`64:ff9b:1::/48`,
/// RFC 8215): its IPv4 sits where the translator's prefix length puts it, which only the
/// translator knows.
fn carried(v: Ipv6Addr) -> Result<Option<(&'static str, Vec<Ipv4Addr>)>, ()> {
    let s = v.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    let low = v4(s[6], s[7]);
    if s[..5] == [0; 5] && s[5] == 0xffff {
        return Ok(Some(("mapped", vec![low])));
    }
    if s[..6] == [0; 6] && u32::from(low) > 1 {
        return Ok(Some(("compatible", vec![low])));
    }
    if s[..4] == [0; 4] && s[4] == 0xffff && s[5] == 0 {
        return Ok(Some(("SIIT", vec![low])));
    }
    if s[0] == 0x64 && s[1] == 0xff9b {
        if s[2..6] == [0; 4] {
            return Ok(Some(("NAT64", vec![low])));
        }
        if s[2] == 1 {
            return Err(());
        }
    }
    if s[0] == 0x2002 {
        return Ok(Some(("6to4", vec![v4(s[1], s[2])])));
    }
    if s[0] == 0x2001 && s[1] == 0 {
        return Ok(Some(("Teredo", vec![v4(s[2], s[3]), v4(!s[6], !s[7])])));
    }
    Ok(None)
}

/// What `ip` is checked as, against the rules and [`forbidden`]: itself, or the IPv4
/// addresses an IPv6 one carries (one, or a Teredo server and client) — never the IPv6
/// spelling, so no rule naming an IPv6 block clears the IPv4 inside it. `Err` (with the
/// address) for a local-use NAT64 address, which is never reached.
pub fn checked_as(ip: IpAddr) -> Result<Vec<IpAddr>, Ipv6Addr> {
    match ip {
        IpAddr::V4(_) => Ok(vec![ip]),
        IpAddr::V6(v) => match carried(v) {
            Err(()) => Err(v),
            Ok(None) => Ok(vec![ip]),
            Ok(Some((_, list))) => Ok(list.into_iter().map(IpAddr::V4).collect()),
        },
    }
}

/// Why a rule's IPv6 `host` can never match (every address of it is checked as the IPv4 it
/// carries), if so: one address that carries an IPv4, or a block inside a carrying range.
fn carrier_of(net: IpNet) -> Option<String> {
    let IpAddr::V6(v) = net.addr else {
        return None;
    };
    if net.prefix == 128 {
        return match carried(v) {
            Err(()) => Some(
                "is a local-use NAT64 address (64:ff9b:1::/48), never reached: its IPv4 \
                 address is where only its translator knows"
                    .into(),
            ),
            Ok(Some((form, list))) => {
                let names: Vec<String> = list.iter().map(|a| format!("\"{a}\"")).collect();
                Some(format!(
                    "carries the IPv4 address{} {} ({form}), which is what the proxy checks: \
                     write host = {}",
                    if list.len() == 1 { "" } else { "es" },
                    names.join(" and "),
                    names.join(" and host = ")
                ))
            }
            Ok(None) => None,
        };
    }
    let ranges: [(&str, u8, &str); 6] = [
        ("::ffff:0:0", 96, "IPv4-mapped"),
        ("::ffff:0:0:0", 96, "SIIT"),
        ("64:ff9b::", 96, "NAT64"),
        ("64:ff9b:1::", 48, "local-use NAT64"),
        ("2002::", 16, "6to4"),
        ("2001::", 32, "Teredo"),
    ];
    ranges.iter().find_map(|(addr, prefix, form)| {
        let range = IpNet {
            addr: addr.parse().ok()?,
            prefix: *prefix,
        };
        (net.prefix >= range.prefix && range.contains(net.addr)).then(|| {
            format!(
                "lies inside {range} ({form}), whose addresses are checked as the IPv4 \
                 addresses they carry: name those instead"
            )
        })
    })
}

pub(crate) fn plural(word: &str, n: usize) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

impl EgressRule {
    /// The label of what the destination answers: its `returns`, untrusted unless the rule
    /// says `trusted = true` (docs/spec.md §3.6).
    pub fn answers(&self) -> Label {
        Label::new(self.returns, !self.trusted)
    }

    /// The rule as a person reads it:
    /// `api.github.com ports 443, 80 cleared for public (tunnels to 443)`, with `, answers
    /// CLASS` after its clearance when its `returns` is another class.
    pub fn describe(&self) -> String {
        let ports: Vec<String> = self.ports.iter().map(u16::to_string).collect();
        let tunnels: Vec<String> = self.tunnel_ports.iter().map(u16::to_string).collect();
        let name = self
            .name
            .as_ref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        let answers = match (self.returns == self.class, self.trusted) {
            (true, false) => String::new(),
            (true, true) => ", answers trusted".to_owned(),
            (false, false) => format!(", answers {}", self.returns),
            (false, true) => format!(", answers {}, trusted", self.returns),
        };
        format!(
            "{}{name} {} {} cleared for {}{answers} (tunnels to {})",
            self.written,
            plural("port", ports.len()),
            ports.join(", "),
            self.class,
            if tunnels.is_empty() {
                "no port".into()
            } else {
                tunnels.join(", ")
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Config;

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
            session: Label::new(DataClass::Public, false),
            reach: DataClass::Public,
            call: Label::new(DataClass::Public, false),
            read: Label::new(DataClass::Public, false),
        }
    }

    #[test]
    fn a_listed_name_on_its_port_at_its_clearance_is_allowed() {
        let c = cfg(RULES);
        let t = c.tool("fetch");
        let r = c
            .clearance(
                t,
                Destination::Name("api.example.com"),
                443,
                Way::Request,
                public(),
            )
            .unwrap();
        assert_eq!(r.rule.written, "api.example.com");
        assert!(
            c.clearance(
                t,
                Destination::Name("files.pythonhosted.org"),
                443,
                Way::Request,
                public()
            )
            .is_ok()
        );
        assert!(
            c.clearance(
                t,
                Destination::Name("pythonhosted.org"),
                443,
                Way::Request,
                public()
            )
            .is_err(),
            "*.x does not name x itself"
        );
    }

    #[test]
    fn a_confidential_session_is_refused_a_public_destination_in_words() {
        let c = cfg(RULES);
        let label = CallLabel {
            session: Label::new(DataClass::Confidential, false),
            reach: DataClass::Public,
            call: Label::new(DataClass::Public, false),
            read: Label::new(DataClass::Public, false),
        };
        let e = c
            .clearance(
                c.tool("fetch"),
                Destination::Name("api.example.com"),
                443,
                Way::Request,
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
                Way::Request,
                label
            )
            .is_ok()
        );
        let reach = CallLabel {
            session: Label::new(DataClass::Public, false),
            reach: DataClass::Secret,
            call: Label::new(DataClass::Public, false),
            read: Label::new(DataClass::Public, false),
        };
        let e = c
            .clearance(
                c.tool("fetch"),
                Destination::Name("cleared.example.com"),
                443,
                Way::Request,
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
                Way::Request,
                public(),
            )
            .unwrap_err();
        assert!(matches!(e, Refusal::NotListed { .. }), "{e}");
        let e = c
            .clearance(
                c.tool("fetch"),
                Destination::Name("api.example.com"),
                22,
                Way::Request,
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
                Way::Request,
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
        assert!(
            c.clearance(t, ip("192.0.2.9"), 8080, Way::Request, public())
                .is_ok()
        );
        let e = c
            .clearance(t, ip("198.51.100.1"), 443, Way::Request, public())
            .unwrap_err();
        assert!(matches!(e, Refusal::UnnamedAddress { .. }), "{e}");
        // A name rule never names an address, even `*`.
        let any = cfg("[[egress]]\nhost = \"*\"\n");
        assert!(
            any.clearance(None, ip("93.184.216.34"), 443, Way::Request, public())
                .is_err()
        );
        assert!(
            any.clearance(
                None,
                Destination::Name("x.example"),
                443,
                Way::Request,
                public()
            )
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
                .clear_address(
                    t,
                    "x.test",
                    ip.parse().unwrap(),
                    port,
                    Way::Request,
                    public(),
                    &[],
                )
                .unwrap_err();
            assert!(matches!(e, Refusal::Forbidden { .. }), "{ip}: {e}");
        }
        assert!(
            c.clear_address(
                t,
                "x.test",
                "93.184.216.34".parse().unwrap(),
                443,
                Way::Request,
                public(),
                &[]
            )
            .is_ok()
        );
        // The host's own address, public or not.
        let own: IpAddr = "93.184.216.34".parse().unwrap();
        assert!(
            c.clear_address(t, "x.test", own, 443, Way::Request, public(), &[own])
                .is_err()
        );
        // Named by address (and on its port): allowed.
        assert!(
            c.clear_address(
                t,
                "x.test",
                "127.0.0.1".parse().unwrap(),
                9000,
                Way::Request,
                public(),
                &[]
            )
            .is_ok()
        );
    }

    #[test]
    fn a_name_on_an_address_only_an_address_rule_clears_is_cleared_no_higher_than_that_rule() {
        let c = cfg(r#"
[[egress]]
host = "intranet.test"
class = "confidential"

[[egress]]
host = "10.1.2.3"
class = "public"
"#);
        let ip: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(
            c.clear_address_within(None, "intranet.test", ip, 443, Way::Request, public(), &[]),
            Ok((Label::new(DataClass::Public, true), DataClass::Public))
        );
        // A public address needs no address rule: nothing lowers the name's clearance.
        let open: IpAddr = "93.184.216.34".parse().unwrap();
        assert_eq!(
            c.clear_address_within(
                None,
                "intranet.test",
                open,
                443,
                Way::Request,
                public(),
                &[]
            ),
            Ok((Label::PUBLIC, DataClass::Secret))
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

    // ---- issue 19, item 5: one classification of a host, every IPv4 an IPv6 carries ----

    /// What a host string is: `name`, `address`, or `bad` (a 400).
    fn kind(s: &str) -> &'static str {
        match classify_host(s) {
            Ok(Host::Address(_)) => "address",
            Ok(Host::Name(_)) => "name",
            Err(_) => "bad",
        }
    }

    #[test]
    fn a_host_is_a_name_only_if_no_address_parser_could_read_it_as_a_number() {
        let table: &[(&str, &str)] = &[
            // Names.
            ("example.com", "name"),
            ("EXAMPLE.com.", "name"),
            ("a-1.b_2.test", "name"),
            ("1.2.3.example", "name"),
            ("xn--bcher-kva.example", "name"),
            ("localhost", "name"),
            ("deadbeef", "name"),
            ("a.deadbeef", "name"),
            ("a.x1f", "name"),
            // Addresses, as written canonically.
            ("192.0.2.7", "address"),
            ("::1", "address"),
            ("2001:db8::1", "address"),
            ("::ffff:127.0.0.1", "address"),
            ("64:ff9b::a9fe:a9fe", "address"),
            // inet_aton's other spellings: 1 to 4 parts, decimal, octal, hex.
            ("2130706433", "bad"),
            ("127.1", "bad"),
            ("127.0.1", "bad"),
            ("0x7f.0.0.1", "bad"),
            ("0x7f000001", "bad"),
            ("0X7F000001", "bad"),
            ("0xc0000202", "bad"),
            ("192.0.2.0x2", "bad"),
            ("0xc0.0x0.0x2.0x2", "bad"),
            ("192.0.0x202", "bad"),
            ("017700000001", "bad"),
            ("0177.0.0.01", "bad"),
            ("01.2.3.4", "bad"),
            ("1.2.3.04", "bad"),
            ("256.1.1.1", "bad"),
            ("1.2.3.4.", "bad"),
            ("0x7f.1.", "bad"),
            // What a URL parser (WHATWG) reads as a number: `0x` alone is 0.
            ("192.0.2.0x", "bad"),
            ("a.0x", "bad"),
            ("a.0x1f", "bad"),
            ("a.017", "bad"),
            ("a.9", "bad"),
            // A last label that starts with a digit is never a name (RFC 1123 §2.1: the
            // top-level label is alphabetic), so no base, exponent or suffix can matter.
            ("1e3", "bad"),
            ("a.1e3", "bad"),
            ("a.4x", "bad"),
            // Not a name at all.
            ("", "bad"),
            ("a..b", "bad"),
            ("-a.com", "bad"),
            ("a b", "bad"),
            ("é.com", "bad"),
            ("ex\u{430}mple.com", "bad"),
            ("[::1]", "bad"),
            ("::1%lo", "bad"),
            ("a.com\0", "bad"),
        ];
        let wrong: Vec<String> = table
            .iter()
            .filter(|(h, want)| kind(h) != *want)
            .map(|(h, want)| format!("{h:?}: want {want}, got {}", kind(h)))
            .collect();
        assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
    }

    /// The IPv6 forms that carry `v4` (RFC 4291 mapped and compatible, RFC 2765 SIIT,
    /// RFC 6052 NAT64 well-known, RFC 8215 local-use, RFC 3056 6to4, RFC 4380 Teredo as
    /// its client and as its server).
    fn carriers(v4: Ipv4Addr) -> Vec<(&'static str, Ipv6Addr)> {
        let n = u32::from(v4);
        let (hi, lo) = ((n >> 16) as u16, n as u16);
        let x = !n;
        let (xhi, xlo) = ((x >> 16) as u16, x as u16);
        vec![
            ("mapped", Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, hi, lo)),
            ("compatible", Ipv6Addr::new(0, 0, 0, 0, 0, 0, hi, lo)),
            ("siit", Ipv6Addr::new(0, 0, 0, 0, 0xffff, 0, hi, lo)),
            ("nat64", Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, hi, lo)),
            (
                "nat64-local",
                Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, hi, lo),
            ),
            ("6to4", Ipv6Addr::new(0x2002, hi, lo, 0, 0, 0, 0, 1)),
            // Server 93.184.216.34 (public), client obfuscated.
            (
                "teredo-client",
                Ipv6Addr::new(0x2001, 0, 0x5db8, 0xd822, 0x8000, 0x63bf, xhi, xlo),
            ),
            // Server `v4`, client 93.184.216.34 (obfuscated).
            (
                "teredo-server",
                Ipv6Addr::new(0x2001, 0, hi, lo, 0, 0xfbff, 0xa247, 0x27dd),
            ),
        ]
    }

    #[test]
    fn every_spelling_of_a_forbidden_address_is_refused_and_public_ones_pass() {
        let c = cfg("[[egress]]\nhost = \"*\"\n");
        let forbidden_v4 = [
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "240.0.0.1",
            "224.0.0.1",
            "192.0.0.170",
            "198.18.0.1",
        ];
        let public_v4 = [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "192.0.2.2",
        ];
        let check = |ip: IpAddr| {
            c.clear_address(None, "x.test", ip, 443, Way::Request, public(), &[])
                .is_ok()
        };
        let mut wrong = Vec::new();
        for s in forbidden_v4 {
            let v4: Ipv4Addr = s.parse().unwrap();
            if check(IpAddr::V4(v4)) {
                wrong.push(format!("{s}: passed"));
            }
            for (form, v6) in carriers(v4) {
                if check(IpAddr::V6(v6)) {
                    wrong.push(format!("{s} as {form} {v6}: passed"));
                }
            }
        }
        for s in public_v4 {
            let v4: Ipv4Addr = s.parse().unwrap();
            if !check(IpAddr::V4(v4)) {
                wrong.push(format!("{s}: refused"));
            }
            for (form, v6) in carriers(v4) {
                // A local-use NAT64 address carries its IPv4 where only its translator
                // knows (RFC 6052 allows six layouts): never reached.
                let want = form != "nat64-local";
                if check(IpAddr::V6(v6)) != want {
                    wrong.push(format!("{s} as {form} {v6}: want passed={want}"));
                }
            }
        }
        for (s, want) in [
            ("::1", false),
            ("::", false),
            ("fe80::1", false),
            ("fec0::1", false),
            ("fc00::1", false),
            ("fd00:ec2::254", false),
            ("ff02::1", false),
            ("64:ff9b:1:ffff::1", false),
            ("2606:4700::1111", true),
            ("2001:db8::1", true),
        ] {
            if check(s.parse().unwrap()) != want {
                wrong.push(format!("{s}: want passed={want}"));
            }
        }
        assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
    }

    #[test]
    fn an_ipv6_literal_that_carries_an_ipv4_is_cleared_only_as_that_ipv4() {
        let c = cfg(r#"
[[egress]]
host = "127.0.0.1"
ports = [9000]

[[egress]]
host = "93.184.216.34"
ports = [443]

[[egress]]
host = "::/0"
ports = [443]
"#);
        let allowed = |s: &str, port: u16| {
            c.clearance(
                None,
                Destination::Address(s.parse().unwrap()),
                port,
                Way::Request,
                public(),
            )
            .is_ok()
        };
        let mut wrong = Vec::new();
        for (s, port, want) in [
            ("::ffff:127.0.0.1", 9000, true),
            ("::ffff:0:7f00:1", 9000, true),
            ("64:ff9b::7f00:1", 9000, true),
            // `::/0` names every IPv6 address, but these carry an IPv4 no rule names on 443.
            ("::ffff:127.0.0.1", 443, false),
            ("::ffff:0:7f00:1", 443, false),
            ("64:ff9b::7f00:1", 443, false),
            ("64:ff9b::a00:1", 443, false),
            ("2002:a9fe:a9fe::1", 443, false),
            ("2001:0:5db8:d822:8000:63bf:80ff:fffe", 443, false),
            ("2001:0:7f00:1:0:fbff:a247:27dd", 443, false),
            // Carrying 93.184.216.34, which a rule names on 443.
            ("64:ff9b::5db8:d822", 443, true),
            ("2002:5db8:d822::1", 443, true),
            ("2001:0:5db8:d822:0:fbff:a247:27dd", 443, true),
            // Its IPv4 unknowable: never.
            ("64:ff9b:1::5db8:d822", 443, false),
            // Plain IPv6, under `::/0`.
            ("2001:db8::1", 443, true),
        ] {
            if allowed(s, port) != want {
                wrong.push(format!("{s} port {port}: want allowed={want}"));
            }
        }
        assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
    }

    // ---- issue 19, item 4: a tunnel is for TLS ----

    #[test]
    fn a_tunnel_goes_only_to_a_port_its_rule_names_for_tunnels() {
        let c = cfg(r#"
[[egress]]
host = "api.example.com"

[[egress]]
host = "plain.example.com"
ports = [80, 8080]

[[egress]]
host = "both.example.com"
tunnel_ports = [443, 80]

[[egress]]
host = "*.example.com"
ports = [8443]
tunnel_ports = [8443]
"#);
        let at = |host: &str, port: u16, way: Way| {
            c.clearance(None, Destination::Name(host), port, way, public())
        };
        assert!(at("api.example.com", 443, Way::Tunnel).is_ok());
        assert!(at("api.example.com", 80, Way::Request).is_ok());
        let e = at("api.example.com", 80, Way::Tunnel).unwrap_err();
        assert_eq!(
            e.to_string(),
            "boxmaker refused api.example.com:80: a CONNECT tunnel is for TLS, and its egress \
             rule allows tunnels only to port 443 (tunnel_ports); send plain HTTP as a request \
             for http://api.example.com:80/..."
        );
        let e = at("plain.example.com", 8080, Way::Tunnel).unwrap_err();
        assert!(e.to_string().contains("allows tunnels to no port"), "{e}");
        assert!(at("plain.example.com", 8080, Way::Request).is_ok());
        assert!(at("both.example.com", 80, Way::Tunnel).is_ok());
        // Another rule naming the name may allow the tunnel.
        assert!(at("api.example.com", 8443, Way::Tunnel).is_ok());
        // The wrong port is still the wrong port.
        let e = at("api.example.com", 22, Way::Tunnel).unwrap_err();
        assert!(matches!(e, Refusal::Port { .. }), "{e}");
        assert_eq!(
            c.egress[0].describe(),
            "api.example.com ports 443, 80 cleared for public (tunnels to 443)"
        );
        assert_eq!(
            c.egress[1].describe(),
            "plain.example.com ports 80, 8080 cleared for public (tunnels to no port)"
        );
    }

    #[test]
    fn a_rule_cannot_name_an_ipv6_spelling_of_an_ipv4_address() {
        for (host, says) in [
            ("::ffff:127.0.0.1", "host = \"127.0.0.1\""),
            ("64:ff9b::a9fe:a9fe", "host = \"169.254.169.254\""),
            ("64:ff9b:1::1", "never reached"),
            ("2002:a00:1::1", "host = \"10.0.0.1\""),
            ("64:ff9b::/96", "name those instead"),
            ("2002::/16", "name those instead"),
            ("2001:0:5db8::/48", "name those instead"),
        ] {
            let e = HostPattern::parse(host).unwrap_err();
            assert!(e.contains(says), "{host}: {e}");
        }
        // Wider blocks, and the ordinary IPv6 loopback, are rules.
        for host in ["::/0", "2000::/3", "::1", "2001:db8::/32"] {
            assert!(HostPattern::parse(host).is_ok(), "{host}");
        }
        // A name rule is read as a name by the same reading.
        assert!(HostPattern::parse("0x7f000001").is_err());
        assert!(HostPattern::parse("*.0x1f").is_err());
    }

    #[test]
    fn a_name_resolving_to_a_carried_forbidden_ipv4_says_which_ipv4_to_name() {
        let c =
            cfg("[[egress]]\nhost = \"*\"\n\n[[egress]]\nhost = \"127.0.0.1\"\nports = [9000]\n");
        let ip: IpAddr = "64:ff9b::7f00:1".parse().unwrap();
        let e = c
            .clear_address(None, "x.test", ip, 443, Way::Request, public(), &[])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "boxmaker refused x.test:443: it resolves to 64:ff9b::7f00:1, a loopback address, \
             which only an egress rule naming 127.0.0.1, the IPv4 address it carries, may reach"
        );
        // Named by the IPv4 it carries, on its port: allowed.
        assert!(
            c.clear_address(None, "x.test", ip, 9000, Way::Request, public(), &[])
                .is_ok()
        );
        // The machine's own address, carried.
        let own: IpAddr = "93.184.216.34".parse().unwrap();
        let mapped: IpAddr = "::ffff:93.184.216.34".parse().unwrap();
        assert!(
            c.clear_address(None, "x.test", mapped, 443, Way::Request, public(), &[own])
                .is_err()
        );
        let e = c
            .clear_address(
                None,
                "x.test",
                "64:ff9b:1::5db8:d822".parse().unwrap(),
                443,
                Way::Request,
                public(),
                &[],
            )
            .unwrap_err();
        assert!(matches!(e, Refusal::Untranslatable { .. }), "{e}");
    }

    // ---- issue 19, item 3: the call's label, and what a destination's answers are ----

    const FLOAT: &str = r#"
[[egress]]
host = "api.example.com"

[[egress]]
name = "hr"
host = "hr.example.com"
class = "confidential"

[[egress]]
name = "bank"
host = "bank.example.com"
returns = "secret"

[[egress]]
name = "docs"
host = "docs.example.com"
class = "confidential"
returns = "public"

[[tool]]
name = "net"
builtin = "run"
network = true
class = "internal"

[[tool]]
name = "mail"
mcp = ["mail"]
network = true
class = "confidential"
"#;

    #[test]
    fn a_rules_answers_are_its_class_unless_it_says_returns() {
        let c = cfg(FLOAT);
        let returns: Vec<(DataClass, DataClass)> =
            c.egress.iter().map(|r| (r.class, r.returns)).collect();
        use DataClass::*;
        assert_eq!(
            returns,
            vec![
                (Public, Public),
                (Confidential, Confidential),
                (Public, Secret),
                (Confidential, Public),
            ]
        );
        assert_eq!(
            c.egress[2].describe(),
            "bank.example.com (bank) ports 443, 80 cleared for public, answers secret (tunnels \
             to 443)"
        );
        assert_eq!(
            c.egress[1].describe(),
            "hr.example.com (hr) ports 443, 80 cleared for confidential (tunnels to 443)"
        );
        let e = crate::parse(
            "[[egress]]\nhost = \"a.test\"\nreturns = \"private\"\n",
            "t.toml",
            std::path::Path::new("/tmp"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("t.toml:3:"), "{e}");
    }

    /// Issue 30: what a destination answers is someone else's words — untrusted — unless its
    /// rule says `trusted = true`; a connection through several rules answers as their join.
    #[test]
    fn a_destinations_answers_are_untrusted_unless_its_rule_says_trusted() {
        use DataClass::*;
        let c = cfg(r#"
[[egress]]
host = "api.example.com"

[[egress]]
host = "docs.example.com"
trusted = true
returns = "internal"

[[egress]]
host = "10.0.0.5"
trusted = true

[[egress]]
host = "10.0.0.6"
"#);
        assert_eq!(c.egress[0].answers(), Label::new(Public, true));
        assert_eq!(c.egress[1].answers(), Label::new(Internal, false));
        assert_eq!(
            c.egress[1].describe(),
            "docs.example.com ports 443, 80 cleared for public, answers internal, trusted \
             (tunnels to 443)"
        );
        assert_eq!(
            c.egress[2].describe(),
            "10.0.0.5 ports 443, 80 cleared for public, answers trusted (tunnels to 443)"
        );
        let at = |name: &str| {
            c.clearance(None, Destination::Name(name), 443, Way::Tunnel, public())
                .unwrap()
                .returns
        };
        assert_eq!(at("api.example.com"), Label::new(Public, true));
        assert_eq!(at("docs.example.com"), Label::new(Internal, false));
        // A name that resolves to an address only an address rule clears answers as both.
        let trusted_ip: IpAddr = "10.0.0.5".parse().unwrap();
        let untrusted_ip: IpAddr = "10.0.0.6".parse().unwrap();
        let via = |ip| {
            c.clear_address(
                None,
                "docs.example.com",
                ip,
                443,
                Way::Tunnel,
                public(),
                &[],
            )
            .unwrap()
        };
        assert_eq!(via(trusted_ip), Label::PUBLIC);
        assert_eq!(via(untrusted_ip), Label::new(Public, true));
        // A strict key: a string where a boolean belongs is refused at its line.
        let e = crate::parse(
            "[[egress]]\nhost = \"a.test\"\ntrusted = \"yes\"\n",
            "t.toml",
            std::path::Path::new("/tmp"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("t.toml:3:"), "{e}");
    }

    #[test]
    fn a_calls_label_is_the_highest_of_floor_reach_and_the_tools_class() {
        use DataClass::*;
        let c = cfg(FLOAT);
        let l = c.call_label("net", "{}", Label::new(Public, false), Public);
        assert_eq!(
            (l.call, l.read, l.class()),
            (Label::new(Internal, false), Label::PUBLIC, Internal)
        );
        assert_eq!(
            c.call_label("net", "{}", Label::new(Secret, false), Public)
                .class(),
            Secret
        );
        assert_eq!(
            c.call_label("net", "{}", Label::new(Public, false), Secret)
                .class(),
            Secret
        );
        // A server's exposed tool carries its server's class.
        assert_eq!(
            c.call_label("mail_send", "{}", Label::new(Public, false), Public)
                .call
                .class,
            Confidential
        );
        assert_eq!(
            c.call_label("nothing", "{}", Label::new(Public, false), Public)
                .class(),
            Public
        );
    }

    #[test]
    fn a_label_rule_that_matches_the_call_raises_the_label_its_connections_go_by() {
        use DataClass::*;
        // docs/spec.md §3.6: the call's label takes every label rule matching the call, with
        // its argument conditions, as its answers do (§3.4).
        let c = cfg(&format!(
            "{FLOAT}
[[label]]
tool = \"mail_*\"
when = [{{ pointer = \"/folder\", equals = \"hr\" }}]
class = \"secret\"
"
        ));
        assert_eq!(
            c.call_label("mail_read", r#"{"folder":"hr"}"#, Label::PUBLIC, Public)
                .call
                .class,
            Secret
        );
        // A call the rule's conditions do not match keeps the server's class.
        assert_eq!(
            c.call_label("mail_read", r#"{"folder":"inbox"}"#, Label::PUBLIC, Public)
                .call
                .class,
            Confidential
        );
        assert_eq!(
            c.call_label("net", r#"{"folder":"hr"}"#, Label::PUBLIC, Public)
                .call
                .class,
            Internal
        );
    }

    #[test]
    fn the_tools_class_and_what_the_box_read_refuse_a_public_destination_in_words() {
        use DataClass::*;
        let c = cfg(FLOAT);
        let t = c.tool("mail");
        let at = |label: CallLabel| {
            c.clearance(
                t,
                Destination::Name("api.example.com"),
                443,
                Way::Tunnel,
                label,
            )
        };
        let label = c.call_label("mail_send", "{}", Label::new(Public, false), Public);
        assert_eq!(
            at(label).unwrap_err().to_string(),
            "boxmaker refused api.example.com:443: this tool's answers are confidential (its \
             class) and that destination is cleared for public"
        );
        let read = CallLabel {
            read: Label::new(Confidential, false),
            ..c.call_label("net", "{}", Label::new(Public, false), Public)
        };
        assert_eq!(
            at(read).unwrap_err().to_string(),
            "boxmaker refused api.example.com:443: this box has read confidential data (a \
             destination's answer) and that destination is cleared for public"
        );
        // The session's floor, raised by the same read, still names the read.
        let both = CallLabel {
            session: Label::new(Confidential, false),
            ..read
        };
        assert!(
            at(both)
                .unwrap_err()
                .to_string()
                .contains("this box has read")
        );
        // Cleared for it: allowed, and its rule says what its answers are.
        let ok = c
            .clearance(
                t,
                Destination::Name("hr.example.com"),
                443,
                Way::Tunnel,
                label,
            )
            .unwrap();
        assert_eq!(
            (ok.class, ok.returns),
            (Confidential, Label::new(Confidential, true))
        );
        let docs = c
            .clearance(
                t,
                Destination::Name("docs.example.com"),
                443,
                Way::Tunnel,
                label,
            )
            .unwrap();
        assert_eq!(
            (docs.class, docs.returns),
            (Confidential, Label::new(Public, true))
        );
        let bank = c
            .clearance(
                t,
                Destination::Name("bank.example.com"),
                443,
                Way::Tunnel,
                public(),
            )
            .unwrap();
        assert_eq!(
            (bank.class, bank.returns),
            (Public, Label::new(Secret, true))
        );
    }

    #[test]
    fn an_address_is_labelled_by_the_rules_that_clear_what_it_carries() {
        use DataClass::*;
        // A Teredo address carries its server and its client: each must be cleared; the
        // connection is cleared as the lower, and answers as the higher.
        let c = cfg(r#"
[[egress]]
host = "93.184.216.34"
class = "secret"
returns = "internal"

[[egress]]
host = "198.51.100.7"
class = "confidential"
returns = "secret"

[[egress]]
host = "10.0.0.5"
class = "internal"
returns = "confidential"

[[egress]]
host = "*"
"#);
        let teredo: IpAddr = "2001:0:5db8:d822:0:fbff:39cc:9bf8".parse().unwrap();
        assert_eq!(
            checked_as(teredo).unwrap(),
            vec![
                IpAddr::V4("93.184.216.34".parse().unwrap()),
                IpAddr::V4("198.51.100.7".parse().unwrap())
            ]
        );
        let r = c
            .clearance(
                None,
                Destination::Address(teredo),
                443,
                Way::Tunnel,
                public(),
            )
            .unwrap();
        assert_eq!(
            (r.class, r.returns),
            (Confidential, Label::new(Secret, true))
        );
        assert_eq!(r.rule.written, "198.51.100.7");
        // A name whose address only an address rule clears answers by that rule too.
        let ip: IpAddr = "10.0.0.5".parse().unwrap();
        assert_eq!(
            c.clear_address(None, "intranet.test", ip, 443, Way::Tunnel, public(), &[]),
            Ok(Label::new(Confidential, true))
        );
        let other: IpAddr = "93.184.216.35".parse().unwrap();
        assert_eq!(
            c.clear_address(None, "x.test", other, 443, Way::Tunnel, public(), &[]),
            Ok(Label::PUBLIC),
            "an address no rule had to clear adds nothing: the name's rule says"
        );
    }

    #[test]
    fn no_proxy_leaves_out_every_local_host_a_rule_names() {
        let none = |text: &str| cfg(text).no_proxy();
        assert_eq!(
            none("[[egress]]\nhost = \"api.example.com\"\n").as_deref(),
            Some("localhost,127.0.0.1,::1")
        );
        // An address rule: that address goes through the proxy, to the host's loopback.
        assert_eq!(
            none("[[egress]]\nhost = \"127.0.0.1\"\nports = [8080]\n").as_deref(),
            Some("localhost,::1")
        );
        assert_eq!(
            none("[[egress]]\nhost = \"127.0.0.0/8\"\n[[egress]]\nhost = \"::1\"\n").as_deref(),
            Some("localhost")
        );
        // `*` names localhost, but the proxy reaches it only when its address is named too.
        assert_eq!(
            none("[[egress]]\nhost = \"*\"\n").as_deref(),
            Some("localhost,127.0.0.1,::1")
        );
        assert_eq!(
            none("[[egress]]\nhost = \"*\"\n[[egress]]\nhost = \"::1\"\n").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(
            none("[[egress]]\nhost = \"localhost\"\n").as_deref(),
            Some("127.0.0.1,::1")
        );
        assert_eq!(
            none(
                "[[egress]]\nhost = \"localhost\"\n[[egress]]\nhost = \"0.0.0.0/0\"\n[[egress]]\nhost = \"::/0\"\n"
            ),
            None
        );
    }
}
