//! Issue 14, the attacks: the code in a networked box is the attacker's. Each test is an
//! attack it would try on the egress proxy, or around it, in the test's own network
//! (`netlab`); the canary (the lab host's own loopback and address) and the origin's log
//! show that nothing refused ever arrived.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod netlab;

use std::time::{Duration, Instant};

use netlab::*;
use serde_json::{Value, json};

/// A Python snippet, run in a `net` box, that talks to the proxy by hand: `PROXY` is
/// 127.0.0.1:3128 inside the box, and `ask(raw)` sends raw bytes and returns what came
/// back (its first 2000 bytes), or the error.
const RAW: &str = r#"
import socket, sys, time, json
PROXY = ("127.0.0.1", 3128)
def ask(raw, wait=10):
    s = socket.create_connection(PROXY, timeout=wait)
    s.sendall(raw)
    out = b""
    try:
        while len(out) < 2000:
            b = s.recv(4096)
            if not b:
                break
            out += b
            if b"\r\n\r\n" in out and not raw.startswith(b"GET"):
                break
    except Exception as e:
        out += ("<%s>" % e).encode()
    s.close()
    return out.decode("latin-1")
"#;

fn raw(lab: &Lab, cfg: &std::path::Path, session: &str, code: &str) -> String {
    let v = lab.python_in_box(cfg, session, "net", &format!("{RAW}\n{code}"));
    assert_eq!(v["exit"], 0, "{v}");
    stdout(&v).to_string()
}

fn status_line(answer: &str) -> &str {
    answer.lines().next().unwrap_or_default()
}

#[test]
fn a_name_that_resolves_to_loopback_private_metadata_or_the_host_itself_is_refused() {
    let lab = Lab::new("resolve");
    // `*`: any name at all — so what stops these is where they resolve.
    let cfg = lab.config("c", &format!("{BASE}\n[[egress]]\nhost = \"*\"\n"));
    for (name, addr) in [
        ("loop.test", "127.0.0.1"),
        ("localhost", "127.0.0.1"),
        ("private.test", "10.0.0.5"),
        ("meta.test", "169.254.169.254"),
        ("self.test", SELF_ADDR),
        ("mixed.test", "127.0.0.1"),
    ] {
        // A tunnel (to 443: one to 80 is refused before anything resolves).
        let port = 443;
        let out = raw(
            &lab,
            &cfg,
            "s1",
            &format!(
                "print(ask(b'CONNECT {name}:{port} HTTP/1.1\\r\\nHost: {name}:{port}\\r\\n\\r\\n'))"
            ),
        );
        assert!(
            status_line(&out).starts_with("HTTP/1.1 403 "),
            "{name}:{port}: {out}"
        );
        assert!(
            status_line(&out).contains(&format!(
                "boxmaker refused {name}:{port}: it resolves to {addr}"
            )),
            "{name}:{port}: {out}"
        );
        // Plain HTTP the same, on 80.
        let out = raw(
            &lab,
            &cfg,
            "s1",
            &format!("print(ask(b'GET http://{name}/ HTTP/1.1\\r\\nHost: {name}\\r\\n\\r\\n'))"),
        );
        assert!(
            status_line(&out).starts_with(&format!(
                "HTTP/1.1 403 boxmaker refused {name}:80: it resolves to {addr}"
            )),
            "{name}: {out}"
        );
    }
    assert!(
        lab.requests("canary").is_empty(),
        "{:?}",
        lab.requests("canary")
    );
    // Positive control: `*` does let a public-looking name through.
    let out = raw(
        &lab,
        &cfg,
        "s1",
        "print(ask(b'GET http://other.test/echo HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n'))",
    );
    assert!(status_line(&out).starts_with("HTTP/1.1 200"), "{out}");
}

#[test]
fn connect_to_an_ip_literal_is_allowed_only_when_a_rule_names_that_address() {
    let lab = Lab::new("literal");
    let cfg = lab.config(
        "c",
        &format!(
            "{BASE}\n[[egress]]\nhost = \"*\"\n\n[[egress]]\nhost = \"127.0.0.1\"\nports = [80]\n"
        ),
    );
    // Named (192.0.2.2 port 80 in BASE): allowed, as plain HTTP (a tunnel is for TLS).
    let out = raw(
        &lab,
        &cfg,
        "s1",
        &format!(
            "print(ask(b'GET http://{ORIGIN}/echo HTTP/1.1\\r\\nHost: {ORIGIN}\\r\\n\\r\\n'))"
        ),
    );
    assert!(status_line(&out).starts_with("HTTP/1.1 200"), "{out}");
    // The same address on another port, and another address: refused, even under `*`.
    for target in [
        format!("{ORIGIN}:443"),
        format!("{ORIGIN2}:443"),
        "[::1]:80".into(),
        "127.0.0.2:80".into(),
        "169.254.169.254:80".into(),
    ] {
        let out = raw(
            &lab,
            &cfg,
            "s1",
            &format!("print(ask(b'CONNECT {target} HTTP/1.1\\r\\n\\r\\n'))"),
        );
        assert!(
            status_line(&out).starts_with("HTTP/1.1 403 boxmaker refused"),
            "{target}: {out}"
        );
    }
    // Spellings of an address that are not a name: refused as bad requests.
    for target in ["2130706433:80", "127.1:80", "0x7f.0.0.1:80"] {
        let out = raw(
            &lab,
            &cfg,
            "s1",
            &format!("print(ask(b'CONNECT {target} HTTP/1.1\\r\\n\\r\\n'))"),
        );
        assert!(
            status_line(&out).starts_with("HTTP/1.1 400"),
            "{target}: {out}"
        );
    }
    assert!(
        lab.requests("canary")
            .iter()
            .all(|r| r["local"] == "127.0.0.1:80")
    );
    // A rule naming 127.0.0.1 by address lets the box reach the lab host's loopback, and
    // `localhost` (a name resolving there) is still refused: no name rule may resolve
    // there except through the address rule's port.
    let out = raw(
        &lab,
        &cfg,
        "s1",
        "print(ask(b'GET http://127.0.0.1/echo HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n'))",
    );
    assert!(status_line(&out).starts_with("HTTP/1.1 200"), "{out}");
    let out = raw(
        &lab,
        &cfg,
        "s1",
        "print(ask(b'CONNECT localhost:443 HTTP/1.1\\r\\n\\r\\n'))",
    );
    assert!(status_line(&out).starts_with("HTTP/1.1 403"), "{out}");
}

#[test]
fn absolute_form_with_another_host_header_or_a_smuggled_second_request_is_refused() {
    let lab = Lab::new("hostheader");
    let cfg = lab.config("c", BASE);
    let out = raw(
        &lab,
        &cfg,
        "s1",
        "print(ask(b'GET http://allowed.test/echo HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n'))",
    );
    assert!(status_line(&out).starts_with("HTTP/1.1 403 "), "{out}");
    assert!(out.contains("Host header"), "{out}");
    let out = raw(
        &lab,
        &cfg,
        "s1",
        "print(ask(b'GET http://allowed.test/echo HTTP/1.1\\r\\nHost: allowed.test\\r\\nHost: other.test\\r\\n\\r\\n'))",
    );
    assert!(status_line(&out).starts_with("HTTP/1.1 4"), "{out}");
    // Origin-form (as if the proxy were the server), an https:// absolute-form, a request
    // with both Content-Length and Transfer-Encoding: refused.
    for req in [
        "GET /echo HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n",
        "GET https://allowed.test/echo HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n",
        "POST http://allowed.test/sink HTTP/1.1\\r\\nHost: allowed.test\\r\\nContent-Length: 3\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n",
    ] {
        let out = raw(&lab, &cfg, "s1", &format!("print(ask(b'{req}'))"));
        assert!(
            status_line(&out).starts_with("HTTP/1.1 400"),
            "{req}: {out}"
        );
    }
    // A second request pipelined behind an allowed one, to another virtual host on the
    // same address: the proxy forwards one request per connection, so it never arrives.
    let out = raw(
        &lab,
        &cfg,
        "s1",
        "print(ask(b'GET http://allowed.test/echo HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n\
GET http://other.test/echo HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n\
GET /echo HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n'))",
    );
    assert!(status_line(&out).starts_with("HTTP/1.1 200"), "{out}");
    std::thread::sleep(Duration::from_millis(300));
    lab.assert_origin_never_saw("other.test");
    // A refused head is audited too, though it named no destination the proxy took.
    lab.wait_egress(&cfg, "refused for its Host header", |r| {
        r["outcome"] == "refused"
            && r["reason"]
                .as_str()
                .is_some_and(|w| w.contains("Host header"))
    });
}

#[test]
fn a_socket_that_ignores_the_proxy_reaches_nothing_and_no_dns_leaves_the_box() {
    let lab = Lab::new("bypass");
    let cfg = lab.config("c", BASE);
    let code = format!(
        r#"
import errno
def tcp(addr, port):
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
    s.settimeout(3)
    try:
        s.connect((addr, port)); return "connected"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
def udp(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", (addr, port)); return "sent"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
print(json.dumps({{
  "tcp_origin": tcp("{ORIGIN}", 80),
  "tcp_origin_tls": tcp("{ORIGIN}", 443),
  "tcp_self": tcp("{SELF_ADDR}", 80),
  "tcp_v6": tcp("2001:db8::1", 80),
  "tcp_loop": tcp("127.0.0.1", 80),
  "udp_dns": udp("8.8.8.8", 53),
  "udp_origin": udp("{ORIGIN}", 53),
}}))
try:
    print("resolved", socket.getaddrinfo("allowed.test", 443))
except OSError as e:
    print("no dns:", e)
try:
    s = socket.socket(); s.bind(("127.0.0.1", 3128)); print("bound the proxy port")
except OSError as e:
    print("proxy port taken:", errno.errorcode.get(e.errno, str(e)))
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print("raw socket")
except OSError as e:
    print("no raw socket:", errno.errorcode.get(e.errno, str(e)))
"#
    );
    let out = raw(&lab, &cfg, "s1", &code);
    let first: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    for k in [
        "tcp_origin",
        "tcp_origin_tls",
        "tcp_self",
        "tcp_v6",
        "udp_dns",
        "udp_origin",
    ] {
        assert_eq!(first[k], "ENETUNREACH", "{k}: {out}");
    }
    assert_eq!(
        first["tcp_loop"], "ECONNREFUSED",
        "the box's own loopback: {out}"
    );
    assert!(out.contains("no dns:"), "{out}");
    assert!(out.contains("proxy port taken: EADDRINUSE"), "{out}");
    assert!(out.contains("no raw socket:"), "{out}");
    assert!(
        lab.requests("origin").is_empty(),
        "{:?}",
        lab.requests("origin")
    );
    assert!(
        lab.requests("canary").is_empty(),
        "{:?}",
        lab.requests("canary")
    );
}

#[test]
fn a_slow_request_head_is_cut_off_and_an_idle_tunnel_closed() {
    let lab = Lab::new("slow");
    let cfg = lab.config(
        "c",
        &BASE.replace(
            "timeout_seconds = 60",
            "timeout_seconds = 60\negress_idle_seconds = 2",
        ),
    );
    let code = r#"
s = socket.create_connection(PROXY, timeout=30)
t0 = time.time()
head = b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\nX-Pad: " + b"a" * 40
out = b""
try:
    for b in head:
        s.sendall(bytes([b]))
        time.sleep(0.3)
except OSError as e:
    pass
try:
    out = s.recv(4096)
except OSError as e:
    out = str(e).encode()
print(json.dumps({"after": round(time.time() - t0, 1), "got": out.decode("latin-1")}))
s = socket.create_connection(PROXY, timeout=30)
s.sendall(b"CONNECT allowed.test:443 HTTP/1.1\r\n\r\n")
ok = s.recv(4096)
t0 = time.time()
rest = s.recv(4096)
print(json.dumps({"tunnel": ok.decode("latin-1"), "closed_after": round(time.time() - t0, 1), "rest": rest.decode("latin-1")}))
"#;
    let out = raw(&lab, &cfg, "s1", code);
    let mut lines = out.lines();
    let head: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert!(
        head["got"].as_str().unwrap().starts_with("HTTP/1.1 408"),
        "{out}"
    );
    let after = head["after"].as_f64().unwrap();
    assert!(
        (9.0..20.0).contains(&after),
        "the head was cut after {after} s: {out}"
    );
    let idle: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert!(
        idle["tunnel"].as_str().unwrap().starts_with("HTTP/1.1 200"),
        "{out}"
    );
    let closed = idle["closed_after"].as_f64().unwrap();
    assert!(
        (1.5..10.0).contains(&closed),
        "idle tunnel closed after {closed} s: {out}"
    );
    let rec = lab.wait_egress(&cfg, "closed idle", |r| {
        r["outcome"] == "closed"
            && r["reason"]
                .as_str()
                .is_some_and(|w| w.contains("egress_idle_seconds"))
    });
    assert_eq!(rec["host"], "allowed.test");
}

#[test]
fn a_huge_upload_is_cut_at_the_cap() {
    let lab = Lab::new("upload");
    let cfg = lab.config(
        "c",
        &BASE.replace(
            "timeout_seconds = 60",
            "timeout_seconds = 60\nmax_upload_bytes = 1048576",
        ),
    );
    let v = lab.run_in_box(
        &cfg,
        "s1",
        "net",
        &["sh", "-c", "head -c 8388608 /dev/zero | curl -sS -X POST --data-binary @- https://allowed.test/sink; echo exit=$?"],
    );
    let out = stdout(&v);
    assert!(!out.contains("got 8388608 bytes"), "{v}");
    let got: u64 = lab
        .requests("origin")
        .iter()
        .filter_map(|r| r["received"].as_u64())
        .sum();
    assert!(got < 2 << 20, "the origin got {got} bytes");
    let rec = lab.wait_egress(&cfg, "closed at the upload cap", |r| {
        r["outcome"] == "closed"
            && r["reason"]
                .as_str()
                .is_some_and(|w| w.contains("max_upload_bytes"))
    });
    assert!(rec["sent"].as_u64().unwrap() <= 1 << 20, "{rec}");
}

#[test]
fn many_parallel_connections_from_one_session_stop_at_its_cap_and_others_go_on() {
    let lab = Lab::new("cap");
    let cfg = lab.config(
        "c",
        &BASE.replace(
            "timeout_seconds = 60",
            "timeout_seconds = 60\nmax_connections_per_session = 4",
        ),
    );
    let code = r#"
socks, answers = [], []
for i in range(10):
    s = socket.create_connection(PROXY, timeout=20)
    s.sendall(b"CONNECT allowed.test:443 HTTP/1.1\r\n\r\n")
    answers.append(s.recv(4096).decode("latin-1").split("\r\n")[0])
    socks.append(s)
open("/work/holding", "w").write("yes")
time.sleep(6)
print(json.dumps(answers))
"#;
    let cfg2 = cfg.clone();
    let lab_dir = lab.dir.clone();
    let hog = std::thread::scope(|scope| {
        let hog = scope.spawn(|| raw(&lab, &cfg2, "hog", code));
        // While the hog holds its four, another session connects as usual.
        let holding = cfg.parent().unwrap().join("state/work/hog/holding");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !holding.exists() {
            assert!(
                Instant::now() < deadline,
                "the hog never held its connections ({})",
                lab_dir.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let other = lab.run_in_box(
            &cfg,
            "other",
            "net",
            &["curl", "-sS", "https://allowed.test/"],
        );
        assert_eq!(other["exit"], 0, "{other}");
        hog.join().unwrap()
    });
    let answers: Vec<String> = serde_json::from_str(hog.lines().last().unwrap()).unwrap();
    let ok = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 200"))
        .count();
    assert_eq!(ok, 4, "{answers:?}");
    let capped: Vec<&String> = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 429"))
        .collect();
    assert_eq!(capped.len(), 6, "{answers:?}");
    assert!(
        capped[0].contains("max_connections_per_session"),
        "{answers:?}"
    );
    lab.wait_egress(&cfg, "refused at the cap", |r| {
        r["outcome"] == "refused"
            && r["session"] == "hog"
            && r["reason"]
                .as_str()
                .is_some_and(|w| w.contains("max_connections_per_session"))
    });
}

const HOLDER: &str = r#"
[[tool]]
name = "holder"
mcp = ["/usr/bin/python3", "/opt/servers/egress_holder.py"]
network = true
mounts = ["servers"]
"#;

#[test]
fn a_server_connection_opened_at_public_is_closed_when_the_session_reads_confidential_data() {
    let lab = Lab::new("liveclearance");
    let cfg = lab.config("c", &format!("{BASE}{HOLDER}"));
    let open = lab.call(
        &cfg,
        "s1",
        "holder_open",
        &json!({"target": "allowed.test:443"}),
    );
    assert!(open.ok(), "{}", open.show());
    assert!(open.stdout.contains("HTTP/1.1 200"), "{}", open.show());
    let poke = lab.call(&cfg, "s1", "holder_poke", &json!({}));
    assert!(poke.ok() && poke.stdout.contains("open"), "{}", poke.show());
    lab.read_confidential(&cfg, "s1");
    // The connection the server kept is gone before the server could use it again.
    let poke = lab.call(&cfg, "s1", "holder_poke", &json!({}));
    assert!(poke.stdout.contains("closed"), "{}", poke.show());
    let rec = lab.wait_egress(&cfg, "closed when the label rose", |r| {
        r["outcome"] == "closed"
            && r["reason"]
                .as_str()
                .is_some_and(|w| w.contains("confidential"))
    });
    assert_eq!(rec["tool"], "holder");
}

// ---------------------------------------------------------------------------------------
// Issue 19, items 4 and 5: the proxy forwards only what it checked.

/// `talk(raw)`: sends raw bytes and reads until the proxy (or the origin behind it) closes,
/// or `wait` seconds pass; what came back, as text.
const TALK: &str = r#"
def talk(raw, wait=5):
    s = socket.create_connection(PROXY, timeout=wait)
    s.sendall(raw)
    out = b""
    try:
        while len(out) < 4000:
            b = s.recv(4096)
            if not b:
                break
            out += b
    except Exception as e:
        out += ("<%s>" % e).encode()
    s.close()
    return out.decode("latin-1")
"#;

/// What the proxy (or the origin behind it) sent back for the raw bytes `bytes` (a Python
/// bytes literal's inside) sent by `talk` from a box of session `s1`.
fn talk(lab: &Lab, cfg: &std::path::Path, bytes: &str) -> String {
    raw(lab, cfg, "s1", &format!("{TALK}\nprint(talk(b'{bytes}'))"))
}

/// Every request the origin or the canary got whose path holds `marker`.
fn reached(lab: &Lab, marker: &str) -> Vec<Value> {
    lab.reached(|p| p.contains(marker))
}

/// BASE with the `allowed.test` rule naming port 80 for tunnels too.
fn tunnel_80() -> String {
    let rule = "[[egress]]\nhost = \"allowed.test\"\n";
    assert!(BASE.contains(rule));
    BASE.replace(rule, &format!("{rule}tunnel_ports = [443, 80]\n"))
}

#[test]
fn a_connect_tunnel_to_port_80_is_refused_so_it_cannot_carry_another_host() {
    let lab = Lab::new("tunnel80");
    let cfg = lab.config("c", BASE);
    // allowed.test is cleared on ports 443 and 80; a tunnel to 80 would carry plain HTTP
    // with any Host, past the parser.
    let out = talk(
        &lab,
        &cfg,
        "CONNECT allowed.test:80 HTTP/1.1\\r\\nHost: allowed.test:80\\r\\n\\r\\n\
GET /zz-t80 HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n",
    );
    assert!(
        status_line(&out).starts_with("HTTP/1.1 403 boxmaker refused allowed.test:80: "),
        "{out}"
    );
    assert!(status_line(&out).contains("tunnel"), "{out}");
    assert!(reached(&lab, "zz-t80").is_empty(), "{out}");
    assert!(!lab.origin_saw_host("other.test"), "{out}");
    // Plain HTTP to the same port, as absolute-form, still goes (checked by the parser).
    let out = raw(
        &lab,
        &cfg,
        "s1",
        "print(ask(b'GET http://allowed.test/echo?zz-abs HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n'))",
    );
    assert!(status_line(&out).starts_with("HTTP/1.1 200"), "{out}");
    assert_eq!(reached(&lab, "zz-abs").len(), 1);
    lab.wait_egress(&cfg, "refused the tunnel to port 80", |r| {
        r["outcome"] == "refused"
            && r["port"] == 80
            && r["reason"].as_str().is_some_and(|w| w.contains("tunnel"))
    });
}

#[test]
fn plain_http_through_a_tunnel_a_rule_allows_is_one_request_whose_host_is_checked() {
    let lab = Lab::new("tunnelhttp");
    let cfg = lab.config("c", &tunnel_80());
    let connect = "CONNECT allowed.test:80 HTTP/1.1\\r\\nHost: allowed.test:80\\r\\n\\r\\n";
    // Another Host: refused inside the tunnel, never forwarded.
    let out = talk(
        &lab,
        &cfg,
        &format!("{connect}GET /zz-th1 HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n"),
    );
    assert!(status_line(&out).starts_with("HTTP/1.1 200"), "{out}");
    assert!(
        out.contains("HTTP/1.1 403 boxmaker refused allowed.test:80: "),
        "{out}"
    );
    assert!(out.contains("Host"), "{out}");
    // Its own Host: one request goes; a second one pipelined behind it never does.
    let out = talk(
        &lab,
        &cfg,
        &format!(
            "{connect}GET /echo?zz-th2 HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n\
GET /zz-th3 HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n"
        ),
    );
    assert!(out.contains("GET /echo?zz-th2 HTTP/1.1"), "{out}");
    assert_eq!(reached(&lab, "zz-th2").len(), 1, "{out}");
    // Neither HTTP nor TLS (say, a raw protocol): refused.
    let out = talk(&lab, &cfg, &format!("{connect}SSH-2.0-OpenSSH_9.6\\r\\n"));
    assert!(out.contains("HTTP/1.1 400"), "{out}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(reached(&lab, "zz-th1").is_empty());
    assert!(reached(&lab, "zz-th3").is_empty());
    lab.assert_origin_never_saw("other.test");
    lab.wait_egress(&cfg, "closed for the Host in the tunnel", |r| {
        r["outcome"] == "closed"
            && r["reason"]
                .as_str()
                .is_some_and(|w| w.contains("boxmaker refused") && w.contains("Host"))
    });
}

#[test]
fn plain_http_or_another_name_in_the_tls_hello_through_a_tls_tunnel_is_refused() {
    let lab = Lab::new("tunneltls");
    let cfg = lab.config("c", BASE);
    // Plain HTTP with another Host through a tunnel to 443.
    let out = talk(
        &lab,
        &cfg,
        "CONNECT allowed.test:443 HTTP/1.1\\r\\n\\r\\n\
GET /zz-p443 HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n",
    );
    assert!(status_line(&out).starts_with("HTTP/1.1 200"), "{out}");
    assert!(
        out.contains("HTTP/1.1 403 boxmaker refused allowed.test:443: "),
        "{out}"
    );
    // TLS naming another server (SNI) than the tunnel's host: domain fronting by SNI on a
    // shared address. The lab's certificate covers other.test too, so only the proxy stops it.
    let code = r#"
import ssl
ctx = ssl.create_default_context(cafile="/opt/lab/ca.pem")
def tls(target, sni, path):
    s = socket.create_connection(PROXY, timeout=10)
    s.sendall(b"CONNECT " + target.encode() + b" HTTP/1.1\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            return "closed before the tunnel"
        head += b
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, sni)).encode())
        out = b""
        while True:
            b = t.recv(4096)
            if not b:
                break
            out += b
        return out.decode("latin-1").split("\r\n")[0]
    except Exception as e:
        return "tls failed: %s" % e
print(json.dumps({
    "fronted": tls("allowed.test:443", "other.test", "/?zz-sni1"),
    "own": tls("allowed.test:443", "allowed.test", "/?zz-sni2"),
}))
"#;
    let out = raw(&lab, &cfg, "s1", code);
    let v: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert!(
        v["fronted"].as_str().unwrap().starts_with("tls failed"),
        "{out}"
    );
    assert_eq!(v["own"], "HTTP/1.1 200 OK", "{out}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(reached(&lab, "zz-p443").is_empty());
    assert!(reached(&lab, "zz-sni1").is_empty());
    assert_eq!(reached(&lab, "zz-sni2").len(), 1);
    lab.assert_origin_never_saw("other.test");
    lab.wait_egress(&cfg, "closed for the name in the TLS hello", |r| {
        r["outcome"] == "closed"
            && r["reason"]
                .as_str()
                .is_some_and(|w| w.contains("boxmaker refused") && w.contains("other.test"))
    });
}

#[test]
fn a_bare_cr_or_lf_a_nul_or_a_folded_line_in_a_head_is_a_bad_request_never_forwarded() {
    let lab = Lab::new("heads");
    let cfg = lab.config("c", BASE);
    // Each: a Python bytes literal of the head, and its marker (in its path).
    let cases = [
        // A bare LF in the target: an origin that ends lines at LF reads `Host: other.test`.
        (
            r"b'GET http://allowed.test/zz-h1\nHost:other.test\nX:y HTTP/1.1\r\nHost: allowed.test\r\n\r\n'",
            "zz-h1",
        ),
        (
            r"b'GET http://allowed.test/zz-h2\rHost:other.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n'",
            "zz-h2",
        ),
        // Lines ended by LF alone.
        (
            r"b'GET http://allowed.test/zz-h3 HTTP/1.1\nHost: allowed.test\n\n'",
            "zz-h3",
        ),
        (
            r"b'GET http://allowed.test/zz-h4 HTTP/1.1\r\nHost: allowed.test\nHost: other.test\r\n\r\n'",
            "zz-h4",
        ),
        (
            r"b'GET http://allowed.test/zz-h5 HTTP/1.1\r\nHost: allowed.test\r\nX: a\r\n b\r\n\r\n'",
            "zz-h5",
        ),
        (
            r"b'GET http://allowed.test/zz-h6\x00 HTTP/1.1\r\nHost: allowed.test\r\n\r\n'",
            "zz-h6",
        ),
        (
            r"b'GET http://allowed.test/zz-h7 HTTP/1.1\r\nHost: allowed.test\r\nX: a\x00b\r\n\r\n'",
            "zz-h7",
        ),
        (
            r"b'GET http://allowed.test/zz-h8\xc3\xa9 HTTP/1.1\r\nHost: allowed.test\r\n\r\n'",
            "zz-h8",
        ),
        (
            r"b'GET http://allowed.test/zz-h9\t HTTP/1.1\r\nHost: allowed.test\r\n\r\n'",
            "zz-h9",
        ),
        (
            r"b'GET http://allowed.test/zz-h10\x7f HTTP/1.1\r\nHost: allowed.test\r\n\r\n'",
            "zz-h10",
        ),
    ];
    let code: String = cases
        .iter()
        .map(|(head, _)| format!("print(json.dumps(talk({head}, 12)))\n"))
        .collect();
    let out = raw(&lab, &cfg, "s1", &format!("{TALK}\n{code}"));
    let answers: Vec<String> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), cases.len(), "{out}");
    for ((head, marker), answer) in cases.iter().zip(&answers) {
        assert!(
            status_line(answer).starts_with("HTTP/1.1 400"),
            "{marker} {head}: {answer}"
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    for (_, marker) in cases {
        assert!(reached(&lab, marker).is_empty(), "{marker}: {out}");
    }
    lab.assert_origin_never_saw("other.test");
}

#[test]
fn a_host_that_an_address_parser_reads_as_a_number_in_any_base_is_a_bad_request() {
    let lab = Lab::new("bases");
    // `*`: any name. Each of these glibc reads as an address (192.0.2.2, the origin, or the
    // loopback), or a URL parser might: none is a name.
    let cfg = lab.config("c", &format!("{BASE}\n[[egress]]\nhost = \"*\"\n"));
    let hosts = [
        "0xc0000202",
        "192.0.2.0x2",
        "0xc0.0x0.0x2.0x2",
        "192.0.0x202",
        "0X7F.1",
        "0x7f000001",
        "192.0.2.0x",
        "a.1e3",
        "allowed.0x1f",
    ];
    let mut code = String::from(TALK);
    for (i, h) in hosts.iter().enumerate() {
        code.push_str(&format!(
            "print(json.dumps(talk(b'GET http://{h}/zz-b{i} HTTP/1.1\\r\\nHost: {h}\\r\\n\\r\\n')))\n\
             print(json.dumps(talk(b'CONNECT {h}:443 HTTP/1.1\\r\\n\\r\\n')))\n"
        ));
    }
    let out = raw(&lab, &cfg, "s1", &code);
    let answers: Vec<String> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 2 * hosts.len(), "{out}");
    for (i, h) in hosts.iter().enumerate() {
        for a in &answers[2 * i..2 * i + 2] {
            assert!(status_line(a).starts_with("HTTP/1.1 400"), "{h}: {a}");
            assert!(status_line(a).contains("not a host name"), "{h}: {a}");
        }
        assert!(reached(&lab, &format!("zz-b{i}")).is_empty(), "{h}");
    }
    assert!(
        lab.requests("canary").is_empty(),
        "{:?}",
        lab.requests("canary")
    );
}

#[test]
fn a_name_resolving_to_an_ipv6_form_that_carries_a_forbidden_ipv4_is_refused() {
    let lab = Lab::new("embedded");
    let cfg = lab.config("c", &format!("{BASE}\n[[egress]]\nhost = \"*\"\n"));
    for (name, addr) in [
        ("siit.test", "::ffff:0:7f00:1"),
        ("nat64local.test", "64:ff9b:1::a9fe:a9fe"),
        ("teredo.test", "2001:0:4136:e378:8000:63bf:80ff:fffe"),
    ] {
        let out = raw(
            &lab,
            &cfg,
            "s1",
            &format!("print(ask(b'CONNECT {name}:443 HTTP/1.1\\r\\n\\r\\n'))"),
        );
        assert!(
            status_line(&out).starts_with(&format!(
                "HTTP/1.1 403 boxmaker refused {name}:443: it resolves to {addr}"
            )),
            "{name}: {out}"
        );
    }
    // As literals, under a rule naming every IPv6 address: each is checked as the IPv4 it
    // carries, which no rule names.
    let cfg = lab.config(
        "every-v6",
        &format!("{BASE}\n[[egress]]\nhost = \"::/0\"\nports = [443]\n"),
    );
    for target in [
        "[::ffff:0:7f00:1]:443",
        "[64:ff9b::7f00:1]:443",
        "[64:ff9b:1::a9fe:a9fe]:443",
        "[2002:7f00:1::1]:443",
        "[2001:0:4136:e378:8000:63bf:80ff:fffe]:443",
    ] {
        let out = raw(
            &lab,
            &cfg,
            "s1",
            &format!("print(ask(b'CONNECT {target} HTTP/1.1\\r\\n\\r\\n'))"),
        );
        assert!(
            status_line(&out).starts_with("HTTP/1.1 403 boxmaker refused"),
            "{target}: {out}"
        );
    }
    assert!(
        lab.requests("canary").is_empty(),
        "{:?}",
        lab.requests("canary")
    );
}
