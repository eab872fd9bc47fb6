//! Issue 14, the ordinary clients: real programs in real boxes (`network = true`) reach an
//! allowed destination through boxmaker's egress proxy, and are refused an unlisted one —
//! curl, Python's urllib and requests, Node's fetch, `pip download`, `git ls-remote`, over
//! HTTPS (CONNECT) and plain HTTP (absolute-form) — and `mcp-server-fetch` behind boxmaker,
//! driven by the official Python MCP SDK, fetches an allowed page, is refused an unlisted
//! one and the metadata address, and is refused a public destination once the session has
//! read a confidential file (while one cleared for confidential still works).
//!
//! Everything runs in the test's own network (`netlab`): two network namespaces it made,
//! the origin servers it started there, a CA it generated.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod netlab;

use netlab::*;
use serde_json::Value;

const REFUSED_OTHER: &str =
    "boxmaker refused other.test:443: it is not in the config's egress rules";

#[test]
fn curl_reaches_an_allowed_destination_and_is_refused_an_unlisted_one() {
    let lab = Lab::new("curl");
    let cfg = lab.config("c", BASE);
    let ok = lab.run_in_box(&cfg, "s1", "net", &["curl", "-sS", "https://allowed.test/"]);
    assert_eq!(exit(&ok), 0, "{ok}");
    assert!(
        stdout(&ok).contains("origin page for allowed.test over https"),
        "{ok}"
    );
    // Plain HTTP goes as an absolute-form request, rewritten to origin-form.
    let plain = lab.run_in_box(
        &cfg,
        "s1",
        "net",
        &["curl", "-sS", "http://allowed.test/echo"],
    );
    assert_eq!(exit(&plain), 0, "{plain}");
    assert!(stdout(&plain).starts_with("GET /echo HTTP/1.1"), "{plain}");
    assert!(stdout(&plain).contains("Host: allowed.test"), "{plain}");
    // A name under a *.suffix rule.
    let sub = lab.run_in_box(
        &cfg,
        "s1",
        "net",
        &["curl", "-sS", "https://www.allowed.test/"],
    );
    assert!(
        stdout(&sub).contains("origin page for www.allowed.test"),
        "{sub}"
    );

    let no = lab.run_in_box(&cfg, "s1", "net", &["curl", "-sSv", "https://other.test/"]);
    assert_ne!(exit(&no), 0, "{no}");
    assert!(stderr(&no).contains(REFUSED_OTHER), "{no}");
    let no_plain = lab.run_in_box(
        &cfg,
        "s1",
        "net",
        &["curl", "-sS", "-i", "http://other.test/"],
    );
    assert!(stdout(&no_plain).starts_with("HTTP/1.1 403"), "{no_plain}");
    assert!(
        stdout(&no_plain)
            .contains("boxmaker refused other.test:80: it is not in the config's egress rules"),
        "{no_plain}"
    );
    assert!(
        !lab.origin_saw_host("other.test"),
        "a refused request reached the origin"
    );

    // Every attempt is in the gate's audit log: where, the address used, why, bytes.
    let opened = lab.wait_egress(&cfg, "opened allowed.test", |r| {
        r["outcome"] == "opened" && r["host"] == "allowed.test" && r["port"] == 443
    });
    assert_eq!(opened["address"], format!("{ORIGIN}:443"));
    assert_eq!(opened["session"], "s1");
    assert_eq!(opened["tool"], "net");
    assert!(opened["call"].as_u64().is_some(), "{opened}");
    let closed = lab.wait_egress(&cfg, "closed allowed.test", |r| {
        r["outcome"] == "closed" && r["conn"] == opened["conn"]
    });
    assert!(closed["received"].as_u64().unwrap() > 0, "{closed}");
    assert!(closed["sent"].as_u64().unwrap() > 0, "{closed}");
    let refused = lab.wait_egress(&cfg, "refused other.test", |r| {
        r["outcome"] == "refused" && r["host"] == "other.test"
    });
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .starts_with(REFUSED_OTHER),
        "{refused}"
    );
    // `boxmaker audit tail` shows them.
    let tail = lab.boxmaker(&cfg, &["audit", "tail", "-n", "50"]);
    assert!(tail.ok(), "{}", tail.show());
    assert!(tail.stdout.contains("egress"), "{}", tail.show());
    assert!(tail.stdout.contains("other.test"), "{}", tail.show());
}

/// Issue 21 item 8: a rule naming a loopback address names the host's, so the box's
/// `NO_PROXY` leaves it out and an ordinary client goes through the proxy to it (it used to
/// go to the box's own `lo`, and fail with no audit record).
#[test]
fn a_rule_naming_a_loopback_address_is_reached_through_the_proxy_by_plain_curl() {
    let lab = Lab::new("loopback");
    let env = |cfg: &std::path::Path| {
        let v = lab.run_in_box(
            cfg,
            "s1",
            "net",
            &["sh", "-c", "echo \"NO_PROXY=$NO_PROXY no_proxy=$no_proxy\""],
        );
        assert_eq!(exit(&v), 0, "{v}");
        stdout(&v).trim().to_string()
    };
    let base = lab.config("base", BASE);
    assert_eq!(
        env(&base),
        "NO_PROXY=localhost,127.0.0.1,::1 no_proxy=localhost,127.0.0.1,::1"
    );

    let cfg = lab.config(
        "c",
        &format!("{BASE}\n[[egress]]\nhost = \"127.0.0.1\"\nports = [80]\n"),
    );
    let v = lab.run_in_box(&cfg, "s1", "net", &["curl", "-sS", "http://127.0.0.1/echo"]);
    assert_eq!(exit(&v), 0, "{v}");
    assert!(stdout(&v).starts_with("GET /echo HTTP/1.1"), "{v}");
    assert!(stdout(&v).contains("Host: 127.0.0.1"), "{v}");
    // The host-side server on the lab host's loopback answered it, through the proxy.
    assert!(
        lab.requests("canary").iter().any(|r| r["path"] == "/echo"),
        "{:?}",
        lab.requests("canary")
    );
    let opened = lab.wait_egress(&cfg, "opened 127.0.0.1:80", |r| {
        r["outcome"] == "opened" && r["host"] == "127.0.0.1" && r["port"] == 80
    });
    assert_eq!(opened["address"], "127.0.0.1:80", "{opened}");
    assert_eq!(opened["tool"], "net", "{opened}");
    // The box is told to go to the proxy for it: NO_PROXY lists only what no rule names.
    assert_eq!(env(&cfg), "NO_PROXY=localhost,::1 no_proxy=localhost,::1");
}

/// Issue 21 item 9: the proxy's refusal is one sentence in the three places a client may
/// show — the status line's reason, an `X-Boxmaker-Refusal` header and a `text/plain` body —
/// for a `CONNECT` and for a plain-HTTP request, spoken to the proxy by hand.
#[test]
fn a_refusal_says_its_sentence_in_the_status_line_a_header_and_a_text_body() {
    let lab = Lab::new("refusal");
    let cfg = lab.config("c", BASE);
    let code = r#"
import json, socket
def ask(raw):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(raw)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode("ascii").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(": ")
        headers[k.lower()] = v
    return {"status": lines[0], "headers": headers, "body": body.decode("utf-8")}
print(json.dumps([
    ask(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n"),
    ask(b"GET http://other.test/page HTTP/1.1\r\nHost: other.test\r\n\r\n"),
]))
"#;
    let v = lab.python_in_box(&cfg, "s1", "net", code);
    assert_eq!(exit(&v), 0, "{v}");
    let answers: Value = serde_json::from_str(stdout(&v).trim()).unwrap();
    for (answer, port) in answers.as_array().unwrap().iter().zip([443, 80]) {
        let why = format!(
            "boxmaker refused other.test:{port}: it is not in the config's egress rules (an \
             [[egress]] rule in boxmaker.toml names the hosts a networked tool may reach)"
        );
        assert_eq!(answer["status"], format!("HTTP/1.1 403 {why}"), "{answer}");
        assert_eq!(answer["headers"]["x-boxmaker-refusal"], why, "{answer}");
        assert_eq!(
            answer["headers"]["content-type"], "text/plain; charset=utf-8",
            "{answer}"
        );
        assert_eq!(answer["body"], format!("{why}\n"), "{answer}");
    }
    assert!(!lab.origin_saw_host("other.test"));
}

#[test]
fn python_urllib_and_requests_go_through_the_proxy() {
    let lab = Lab::new("python");
    let cfg = lab.config("c", BASE);
    let fetch = "import sys, urllib.request\n\
                 try:\n    print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())\n\
                 except Exception as e:\n    print('ERROR', e, file=sys.stderr); sys.exit(3)\n";
    for url in ["https://allowed.test/", "http://allowed.test/"] {
        let v = lab.run_in_box(&cfg, "s1", "net", &["/usr/bin/python3", "-c", fetch, url]);
        assert_eq!(exit(&v), 0, "{url}: {v}");
        assert!(stdout(&v).contains("origin page for allowed.test"), "{v}");
    }
    let v = lab.run_in_box(
        &cfg,
        "s1",
        "net",
        &["/usr/bin/python3", "-c", fetch, "https://other.test/"],
    );
    assert_eq!(exit(&v), 3, "{v}");
    assert!(stderr(&v).contains("403"), "{v}");

    let req = "import sys, requests\n\
               try:\n    r = requests.get(sys.argv[1], timeout=20); print(r.status_code); print(r.text)\n\
               except Exception as e:\n    print('ERROR', e, file=sys.stderr); sys.exit(3)\n";
    let py = format!("{PYVENV_AT}/bin/python3");
    let v = lab.run_in_box(
        &cfg,
        "s1",
        "net",
        &[&py, "-c", req, "https://allowed.test/"],
    );
    assert_eq!(exit(&v), 0, "{v}");
    assert!(
        stdout(&v).contains("origin page for allowed.test over https"),
        "{v}"
    );
    let v = lab.run_in_box(&cfg, "s1", "net", &[&py, "-c", req, "https://other.test/"]);
    assert_eq!(exit(&v), 3, "{v}");
    assert!(
        stderr(&v).contains("boxmaker refused other.test:443"),
        "{v}"
    );
    assert!(!lab.origin_saw_host("other.test"));
}

#[test]
fn node_fetch_goes_through_the_proxy() {
    let lab = Lab::new("node");
    let cfg = lab.config("c", BASE);
    let node = format!("{NODE_AT}/node/bin/node");
    let js = "fetch(process.argv[1]).then(r => r.text()).then(t => console.log(t), \
              e => { console.error('ERROR', e.cause ? e.cause.message || String(e.cause) : e.message); process.exit(3); })";
    let v = lab.run_in_box(
        &cfg,
        "s1",
        "net",
        &[&node, "-e", js, "https://allowed.test/"],
    );
    assert_eq!(exit(&v), 0, "{v}");
    assert!(
        stdout(&v).contains("origin page for allowed.test over https"),
        "{v}"
    );
    let v = lab.run_in_box(
        &cfg,
        "s1",
        "net",
        &[&node, "-e", js, "http://allowed.test/"],
    );
    assert_eq!(exit(&v), 0, "{v}");
    assert!(
        stdout(&v).contains("origin page for allowed.test over http"),
        "{v}"
    );
    let v = lab.run_in_box(&cfg, "s1", "net", &[&node, "-e", js, "https://other.test/"]);
    assert_eq!(exit(&v), 3, "{v}");
    assert!(!lab.origin_saw_host("other.test"));
    lab.wait_egress(&cfg, "refused other.test", |r| {
        r["outcome"] == "refused" && r["host"] == "other.test"
    });
}

#[test]
fn pip_download_and_git_ls_remote_go_through_the_proxy() {
    let lab = Lab::new("pipgit");
    let cfg = lab.config("c", BASE);
    // `python3 -m pip`: the venv's `bin/pip` script names the host path of its python in its
    // `#!` line, which the box does not show.
    let py = format!("{PYVENV_AT}/bin/python3");
    let dl = |index: &str| {
        lab.run_in_box(
            &cfg,
            "s1",
            "net",
            &[
                &py,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--disable-pip-version-check",
                "--no-cache-dir",
                "-d",
                "/tmp/dl",
                "--index-url",
                index,
                "--retries",
                "0",
                "--timeout",
                "20",
                "tinypkg",
            ],
        )
    };
    let v = dl("https://allowed.test/static/simple/");
    assert_eq!(exit(&v), 0, "{v}");
    assert!(stdout(&v).contains("tinypkg-0.1-py3-none-any.whl"), "{v}");
    let v = dl("https://other.test/static/simple/");
    assert_ne!(exit(&v), 0, "{v}");

    let v = lab.run_in_box(
        &cfg,
        "s1",
        "net",
        &["git", "ls-remote", "https://allowed.test/static/repo.git"],
    );
    assert_eq!(exit(&v), 0, "{v}");
    assert!(stdout(&v).contains("refs/heads/main"), "{v}");
    let v = lab.run_in_box(
        &cfg,
        "s1",
        "net",
        &["git", "ls-remote", "http://allowed.test/static/repo.git"],
    );
    assert_eq!(exit(&v), 0, "{v}");
    let v = lab.run_in_box(
        &cfg,
        "s1",
        "net",
        &["git", "ls-remote", "https://other.test/static/repo.git"],
    );
    assert_ne!(exit(&v), 0, "{v}");
    assert!(stderr(&v).contains("403"), "{v}");
    assert!(!lab.origin_saw_host("other.test"));
}

#[test]
fn clearance_a_session_that_read_confidential_data_reaches_only_confidential_destinations() {
    let lab = Lab::new("clearance");
    let cfg = lab.config("c", BASE);
    let curl =
        |session: &str, url: &str| lab.run_in_box(&cfg, session, "net", &["curl", "-sSv", url]);
    assert_eq!(exit(&curl("s1", "https://allowed.test/")), 0);
    lab.read_confidential(&cfg, "s1");
    let v = curl("s1", "https://allowed.test/");
    assert_ne!(exit(&v), 0, "{v}");
    assert!(
        stderr(&v).contains(
            "boxmaker refused allowed.test:443: this session holds confidential data and that \
             destination is cleared for public"
        ),
        "{v}"
    );
    let v = curl("s1", "https://cleared.test/");
    assert_eq!(exit(&v), 0, "{v}");
    assert!(stdout(&v).contains("origin page for cleared.test"), "{v}");
    // Another session is not affected.
    assert_eq!(exit(&curl("s2", "https://allowed.test/")), 0);
}

// ---------------------------------------------------------------------------------------
// mcp-server-fetch behind boxmaker, through the official Python SDK.

const FETCH: &str = r#"
[[tool]]
name = "fetch"
mcp = ["/opt/pyvenv/bin/python3", "-m", "mcp_server_fetch", "--ignore-robots-txt", "--allow-private-ips"]
network = true
untrusted = true
mounts = ["pyvenv", "lab"]
env = ["SSL_CERT_FILE"]

# A name the config allows that resolves to the metadata address: refused by where it
# resolves.
[[egress]]
host = "meta.test"
"#;

#[test]
fn mcp_server_fetch_is_allowed_refused_and_cleared_as_the_config_says() {
    let lab = Lab::new("fetch");
    let cfg = lab.config("c", &format!("{BASE}{FETCH}"));
    let mut c = lab.python_client(&cfg, "egress_fetch_client.py");
    c.env("FETCH_SESSION", "mcp-fetch");
    let r = run_to_end(c, &lab.dir, "egress_fetch_client", DEADLINE);
    assert!(r.ok(), "{}", r.show());
    assert!(r.stdout.contains("fetch client: ok"), "{}", r.show());
    assert!(!lab.origin_saw_host("other.test"));
    assert!(
        lab.requests("canary").is_empty(),
        "{:?}",
        lab.requests("canary")
    );
    let meta = lab.wait_egress(&cfg, "refused meta.test", |r| {
        r["outcome"] == "refused"
            && r["host"] == "meta.test"
            && r["reason"]
                .as_str()
                .is_some_and(|w| w.contains("169.254.169.254"))
    });
    // A server's connection names the one call in flight on it.
    assert_eq!(meta["tool"], "fetch", "{meta}");
    assert!(meta["call"].as_u64().is_some(), "{meta}");
}

/// The guide's mcp-server-fetch tool, as it is written there (its venv mounted where the
/// lab has it), and the same server without `--ignore-robots-txt`.
const GUIDE_FETCH: &str = r#"
[[tool]]
name = "fetch"
mcp = ["/opt/pyvenv/bin/python3", "-m", "mcp_server_fetch", "--ignore-robots-txt"]
network = true
untrusted = true
mounts = ["pyvenv"]

[[tool]]
name = "robots"
mcp = ["/opt/pyvenv/bin/python3", "-m", "mcp_server_fetch"]
network = true
untrusted = true
mounts = ["pyvenv"]
"#;

/// Issue 21 item 9: what the guide says a model sees when boxmaker refuses mcp-server-fetch
/// is what it sees, with the config the guide shows.
#[test]
fn the_guides_mcp_server_fetch_refusal_is_what_the_model_sees() {
    let lab = Lab::new("guide-fetch");
    let cfg = lab.config("c", &format!("{BASE}{GUIDE_FETCH}"));
    let mut c = lab.python_client(&cfg, "egress_fetch_urls.py");
    c.args([
        "fetch_fetch",
        "https://example.com/",
        "fetch_fetch",
        "http://example.com/",
        "robots_fetch",
        "https://example.com/",
        "robots_fetch",
        "http://example.com/",
    ])
    .env("FETCH_SESSION", "mcp-guide");
    let r = run_to_end(c, &lab.dir, "egress_fetch_urls", DEADLINE);
    assert!(r.ok(), "{}", r.show());
    let seen: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(seen.len(), 4, "{}", r.show());
    for s in &seen {
        assert_eq!(s["is_error"], true, "{s}");
    }
    let text = |i: usize| seen[i]["text"].as_str().unwrap();
    let guide = std::fs::read_to_string(repo_root().join("docs/guide/src/egress.md")).unwrap();
    assert!(
        guide.contains(
            r#"mcp = ["/opt/mcp-py/bin/python3", "-m", "mcp_server_fetch", "--ignore-robots-txt"]"#
        ),
        "the guide's fetch tool is not the one this test runs"
    );
    // HTTPS: the sentence, in the words the guide shows, whole.
    assert!(
        text(0).contains(
            "boxmaker refused example.com:443: it is not in the config's egress rules (an \
             [[egress]] rule in boxmaker.toml names the hosts a networked tool may reach)"
        ),
        "{}",
        text(0)
    );
    // What the server said, then where its stderr is kept (which names the session and the
    // state directory: the guide shows it with those left out).
    let (said, logged) = text(0)
        .split_once(" (the server's stderr: `boxmaker tools log fetch --session ")
        .unwrap_or((text(0), ""));
    assert!(
        guide.contains(&format!(
            "\n{said} (the server's stderr: `boxmaker tools log fetch --session mcp-…` \
             (…/logs/mcp-…/fetch.stderr))\n"
        )),
        "the guide does not show what the model sees:\n{}",
        text(0)
    );
    assert!(logged.ends_with("/fetch.stderr))"), "{}", text(0));
    // Plain HTTP: mcp-server-fetch shows only the status; the guide says so, and where the
    // sentence is.
    let plain = "Failed to fetch http://example.com/ - status code 403";
    let said = |i: usize| {
        text(i)
            .split_once(" (the server's stderr: ")
            .map_or(text(i), |(said, _)| said)
    };
    assert!(said(1).ends_with(plain), "{}", text(1));
    assert!(guide.contains(plain), "the guide does not say {plain:?}");
    let refused = lab.wait_egress(&cfg, "refused example.com:80", |r| {
        r["outcome"] == "refused" && r["host"] == "example.com" && r["port"] == 80
    });
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .starts_with("boxmaker refused example.com:80: it is not in the config's egress rules"),
        "{refused}"
    );
    // Without --ignore-robots-txt its robots.txt check fails first and keeps no reason, as
    // the guide says.
    for (i, words) in [(2, "due to a connection issue"), (3, "received status 403")] {
        assert!(text(i).contains(words), "{}", text(i));
        assert!(!text(i).contains("boxmaker refused"), "{}", text(i));
        assert!(guide.contains(words), "the guide does not say {words:?}");
    }
}

#[test]
fn box_show_prints_a_tools_egress_rules_and_doctor_says_networked_boxes_are_confined() {
    let lab = Lab::new("show");
    let cfg = lab.config(
        "c",
        &format!(
            "{BASE}\n[[tool]]\nname = \"pinned\"\nbuiltin = \"run\"\nnetwork = true\n\
             egress = [\"cleared\"]\n\n[[tool]]\nname = \"lonely\"\nbuiltin = \"run\"\n\
             network = true\negress = []\n"
        ),
    );
    let show = lab.boxmaker(&cfg, &["box", "show", "--tool", "net"]);
    assert!(show.ok(), "{}", show.show());
    for line in [
        "network: only through boxmaker's egress proxy (127.0.0.1:3128 in the box",
        "allowed.test ports 443, 80 cleared for public",
        "*.allowed.test ports 443, 80 cleared for public",
        "cleared.test (cleared) ports 443, 80 cleared for confidential",
        "192.0.2.2 port 80 cleared for public",
    ] {
        assert!(
            show.stdout.contains(line),
            "no {line:?} in:\n{}",
            show.show()
        );
    }
    let pinned = lab.boxmaker(&cfg, &["box", "show", "--tool", "pinned"]);
    assert!(
        pinned.stdout.contains("cleared.test (cleared)"),
        "{}",
        pinned.show()
    );
    assert!(
        !pinned.stdout.contains("allowed.test ports"),
        "{}",
        pinned.show()
    );
    let lonely = lab.boxmaker(&cfg, &["box", "show", "--tool", "lonely"]);
    assert!(
        lonely.stdout.contains("it reaches nothing"),
        "{}",
        lonely.show()
    );

    let doctor = lab.boxmaker(&cfg, &["doctor"]);
    assert!(
        doctor
            .stdout
            .contains("networked boxes: confined: each has its own network namespace"),
        "{}",
        doctor.show()
    );
    assert!(
        doctor
            .stdout
            .contains("tool lonely has network = true but no [[egress]] rule"),
        "{}",
        doctor.show()
    );
}
