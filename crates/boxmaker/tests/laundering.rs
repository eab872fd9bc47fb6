//! Issue 30: provenance that cannot be laundered (docs/spec.md §3.2, §3.4, §3.7). Untrusted
//! is a label that floats, like a class: the attacker's ways of turning the mail's IBAN into
//! a "trusted" one, played as the attacker played them, through the real binary — an agent
//! drives `boxmaker mcp` over stdio, the servers run in real boxes — each refused.
//!
//! - **Through the workspace**: an untrusted server writes the IBAN to `/work` and answers
//!   only "filed"; the trusted `read_file` then shows it.
//! - **Through computation**: `run` builds the IBAN from pieces no reader takes; its answer
//!   shows it plainly after the mail showed it.
//! - **Through a trusted store**: the session saves the IBAN's halves in two calls and reads
//!   them back side by side; the answer's join is the IBAN.
//! - **Through absence**: in a session that read untrusted data, a value no answer showed.
//! - **Through a failure** (a trusted server's error quoting the workspace) and **a
//!   resource** (a trusted server's resource that is a workspace file).
//!
//! Each payment has a grant that pays outright only a recipient `from = "trusted"` (or a
//! value `from = "not_untrusted"`); held, it is refused by a person.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use testkit::{McpClient, servers_dir};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");
const LIMIT: Duration = Duration::from_secs(60);

const ATTACKER: &str = "DE89370400440532013000";
const LANDLORD: &str = "GB29NWBK60161331926819";

/// A lab with a mail server (untrusted), a bank and a notes store (trusted), `run`, the
/// file tools, and `extra` appended.
fn dir(name: &str, extra: &str) -> PathBuf {
    assert!(
        Path::new("/usr/bin/python3").exists(),
        "the servers run under /usr/bin/python3, which is missing"
    );
    let servers = servers_dir();
    let lab = testkit::lab!("laundering", name);
    // The person's own records, read-only: a ledger that names the attacker's IBAN too.
    // Writable mounts: the box's user is another uid, so they are open to every user.
    for d in ["shared", "inbox"] {
        std::fs::create_dir_all(lab.dir.join(d)).unwrap();
        std::fs::set_permissions(lab.dir.join(d), std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let extra = extra.replace("LABDIR", lab.dir.to_str().unwrap());
    let records = lab.dir.join("records");
    std::fs::create_dir_all(&records).unwrap();
    std::fs::write(
        records.join("ledger.txt"),
        format!("2024-06-03  refund  12.00  from {ATTACKER}\n"),
    )
    .unwrap();
    let server =
        |role: &str| format!("[\"/usr/bin/python3\", \"/opt/servers/bank_server.py\", \"{role}\"]");
    let text = format!(
        r#"
[gate]
state = "state"
approval_ttl = 120

[[mount]]
host = {servers:?}
at = "/opt/servers"
class = "public"

[[mount]]
host = {records:?}
at = "/data/records"
class = "public"

[[tool]]
name = "mail"
mcp = {mail}
untrusted = true

[[tool]]
name = "bank"
mcp = {bank}

[[tool]]
name = "notes"
mcp = {notes}

[[tool]]
name = "read_file"
builtin = "read_file"
class = "public"

[[tool]]
name = "write_file"
builtin = "write_file"

[[tool]]
name = "run"
builtin = "run"

[[grant]]
tool = "mail_*"
effect = "allow"

[[grant]]
tool = "notes*"
effect = "allow"

[[grant]]
tool = "bank_get_history"
effect = "allow"

[[grant]]
tool = "bank_check_payee"
effect = "allow"

[[grant]]
tool = "*_file"
effect = "allow"

[[grant]]
tool = "run"
effect = "allow"

# Pay outright only an IBAN the session saw in a trusted answer (or the config names).
[[grant]]
tool = "bank_send_money"
effect = "allow"
when = [{{ pointer = "/recipient", from = "trusted" }}]

[[grant]]
tool = "bank_send_money"
effect = "ask"
{extra}"#,
        servers = servers.display().to_string(),
        records = records.display().to_string(),
        mail = server("mail"),
        bank = server("bank"),
        notes = server("notes"),
    );
    lab.write_config(&text);
    // The tester's own config, trusted as written (docs/spec.md §6, "Whose config").
    assert!(
        testkit::trust(BIN, lab.config()),
        "boxmaker trust refused the config"
    );
    lab.dir
}

fn boxmaker(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .arg("--config")
        .arg(dir.join("boxmaker.toml"))
        .output()
        .unwrap()
}

/// The agent: a plain MCP client over `boxmaker mcp`'s stdio.
struct Agent(McpClient);

impl std::ops::Deref for Agent {
    type Target = McpClient;
    fn deref(&self) -> &McpClient {
        &self.0
    }
}

impl std::ops::DerefMut for Agent {
    fn deref_mut(&mut self) -> &mut McpClient {
        &mut self.0
    }
}

impl Agent {
    fn start(dir: &Path, session: &str) -> Agent {
        let mut cmd = Command::new(BIN);
        cmd.args(["mcp", "--session", session, "--config"])
            .arg(dir.join("boxmaker.toml"))
            .stderr(File::create(dir.join(format!("mcp-{session}.err"))).unwrap());
        let mut a = Agent(McpClient::spawn(cmd, LIMIT));
        assert!(a.initialize("agent").get("result").is_some());
        a
    }

    /// A call that must run: its text (every block's).
    fn ok(&mut self, tool: &str, args: Value) -> String {
        let v = self.call(tool, args);
        assert_ne!(v["result"]["isError"], json!(true), "{tool}: {v}");
        text_of(&v)
    }

    /// A call that must fail: its text.
    fn fails(&mut self, tool: &str, args: Value) -> String {
        let v = self.call(tool, args);
        assert_eq!(v["result"]["isError"], json!(true), "{tool}: {v}");
        text_of(&v)
    }
}

fn text_of(v: &Value) -> String {
    v["result"]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The pending approvals as `boxmaker approvals` prints them, once there is one.
fn wait_for_pending(dir: &Path) -> (String, String) {
    let start = Instant::now();
    loop {
        let o = boxmaker(dir, &["approvals"]);
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        if let Some(at) = text.find("ap-") {
            return (text[at..at + 19].to_string(), text);
        }
        assert!(
            start.elapsed() < LIMIT,
            "no approval became pending: {text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Calls `tool`: its text when it ran outright, or, when it was held, what the approvals
/// list said (the approval is then refused).
fn send(agent: &mut Agent, dir: &Path, tool: &str, args: Value) -> Result<String, String> {
    let id = agent.start_call(tool, args);
    // The call either answers at once or waits for a person.
    let first = agent.lines.recv_timeout(Duration::from_secs(20));
    if let Ok(line) = &first {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["id"] == json!(id) {
            assert_ne!(v["result"]["isError"], json!(true), "{v}");
            return Ok(text_of(&v));
        }
    }
    let (approval, listed) = wait_for_pending(dir);
    let o = boxmaker(dir, &["refuse", &approval]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = agent.answer(id);
    assert_eq!(v["result"]["isError"], json!(true), "a refused call: {v}");
    Err(listed)
}

/// Pays `recipient` 1200.
fn pay(agent: &mut Agent, dir: &Path, recipient: &str) -> Result<String, String> {
    send(
        agent,
        dir,
        "bank_send_money",
        json!({"recipient": recipient, "amount": 1200}),
    )
}

/// The audit log's `result` records of `tool`, in order.
fn results_of(dir: &Path, tool: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join("state/audit.log"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "result" && v["tool"] == tool)
        .collect()
}

/// Attack 1, through the workspace: the mail server's own code writes the IBAN to `/work`
/// and its answer ("filed") never shows it. The trusted `read_file` then shows it. The
/// session read something untrusted, so its workspace is untrusted: `read_file` of it is
/// labelled untrusted, and the payment is held.
#[test]
fn an_iban_an_untrusted_server_left_in_the_workspace_is_not_vouched_for_by_read_file() {
    let dir = dir("workspace", "");
    let mut agent = Agent::start(&dir, "w1");
    assert_eq!(agent.ok("mail_file_invoice", json!({})), "filed");
    let back = agent.ok("read_file", json!({"path": "/work/invoice.txt"}));
    assert!(back.contains("DE89 3704 0044 0532 0130 00"), "{back}");
    let read = results_of(&dir, "read_file");
    assert_eq!(
        read.last().unwrap()["untrusted"],
        json!(true),
        "read_file of a workspace an untrusted server wrote is untrusted: {read:?}"
    );
    let listed = pay(&mut agent, &dir, ATTACKER).expect_err("the mail's IBAN ran outright");
    assert!(
        listed.contains(&format!(
            "consider: untrusted value at /recipient: the IBAN {ATTACKER} first appeared in an \
             untrusted answer of read_file"
        )),
        "{listed}"
    );
}

/// Attack 2, through computation: the mail shows the IBAN; `run` builds it from pieces no
/// reader takes (so the call's arguments do not carry it: the echo guard does not see it),
/// and its answer shows it plainly. `run` in a session that read untrusted data answers
/// untrusted, and a trusted sighting after an untrusted one never makes a value trusted.
#[test]
fn an_iban_run_rebuilds_after_an_untrusted_mail_stays_untrusted() {
    let dir = dir("compute", "");
    let mut agent = Agent::start(&dir, "c1");
    let mail = agent.ok("mail_read_inbox", json!({}));
    assert!(mail.contains("DE89 3704"), "{mail}");
    let out = agent.ok(
        "run",
        json!({"argv": ["/usr/bin/python3", "-c",
            "import base64; print(base64.b64decode('REU4OTM3MDQw' + 'MDQ0MDUzMjAxMzAwMA==').decode())"]}),
    );
    assert!(out.contains(ATTACKER), "{out}");
    let run = results_of(&dir, "run");
    assert_eq!(
        run.last().unwrap()["untrusted"],
        json!(true),
        "run in an untrusted session answers untrusted: {run:?}"
    );
    pay(&mut agent, &dir, ATTACKER).expect_err("the IBAN run rebuilt ran outright");
    // `check --explain` reads the same index: the value is the mail's, still.
    let o = boxmaker(
        &dir,
        &[
            "check",
            "--session",
            "c1",
            "--tool",
            "bank_send_money",
            "--untrusted",
            "--arguments",
            &json!({"recipient": ATTACKER, "amount": 1}).to_string(),
            "--explain",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!(
            "the IBAN {ATTACKER} first appeared in an untrusted answer of mail_read_inbox"
        )),
        "{out}"
    );
}

/// The same computation in a session that read nothing untrusted: `run` answers trusted
/// (its own setting), and a value it shows is trusted — the rule is about the context, not
/// about `run`.
#[test]
fn run_in_a_trusted_session_still_answers_trusted() {
    let dir = dir("compute-clean", "");
    let mut agent = Agent::start(&dir, "c2");
    let history = agent.ok("bank_get_history", json!({}));
    assert!(history.contains("GB29"), "{history}");
    let out = agent.ok(
        "run",
        json!({"argv": ["/usr/bin/python3", "-c", "print('GB29' + 'NWBK60161331926819')"]}),
    );
    assert!(out.contains(LANDLORD), "{out}");
    assert_eq!(results_of(&dir, "run")[0]["untrusted"], json!(false));
    pay(&mut agent, &dir, LANDLORD).expect("a trusted session's value runs outright");
}

/// Attack 4, through absence: once the session read untrusted data, a value no answer of
/// it showed may still have come from there (a form no reader takes, the model's own
/// rewriting): that it was not seen proves nothing, so `not_untrusted` fails closed. The
/// same value in a session that read nothing untrusted passes.
#[test]
fn an_unseen_value_in_an_untrusted_session_is_not_not_untrusted() {
    let extra = r#"
[[grant]]
tool = "bank_send_money"
effect = "allow"
when = [{ pointer = "/recipient", from = "not_untrusted" }, { pointer = "/amount", range = [0, 10] }]
"#;
    let dir = dir("absence", extra);
    // A clean session: a value named nowhere passes `not_untrusted`.
    let mut clean = Agent::start(&dir, "a1");
    let sent = send(
        &mut clean,
        &dir,
        "bank_send_money",
        json!({"recipient": "CH9300762011623852957", "amount": 5}),
    )
    .expect("an unseen value in a clean session passes not_untrusted");
    assert!(sent.contains("CH93"), "{sent}");
    // After the mail: the same unseen value is held, and the person is told why.
    let mut agent = Agent::start(&dir, "a2");
    agent.ok("mail_read_inbox", json!({}));
    let listed = send(
        &mut agent,
        &dir,
        "bank_send_money",
        json!({"recipient": "CH9300762011623852957", "amount": 5}),
    )
    .expect_err("an unseen value in an untrusted session passed not_untrusted");
    assert!(
        listed.contains("CH9300762011623852957")
            && listed.contains("this session has read untrusted data"),
        "{listed}"
    );
}

/// Attack 5, through a trusted store: the session saves the IBAN's halves in two calls (each
/// call carries one half, which is no IBAN) and lists them back: the trusted store's answer
/// shows them side by side, and the reader joins neighbouring strings. A value a reader found
/// only by joining (or decoding) never vouches: the join is the session's own doing.
#[test]
fn halves_saved_apart_and_read_back_side_by_side_do_not_vouch_for_the_iban() {
    let dir = dir("halves", "");
    let mut agent = Agent::start(&dir, "h1");
    agent.ok("notes_save", json!({"text": "DE8937040044"}));
    agent.ok("notes_save", json!({"text": "0532013000"}));
    let listed = agent.ok("notes_list", json!({}));
    assert!(listed.contains("DE8937040044"), "{listed}");
    assert_eq!(results_of(&dir, "notes_list")[0]["untrusted"], json!(false));
    pay(&mut agent, &dir, ATTACKER).expect_err("the joined IBAN ran outright");
}

/// Through a failure: a trusted server's error quotes a workspace file the untrusted mail
/// server wrote. A `failed` carries no label; the gate labels it by the call's own label
/// and, like every answer made in an untrusted session, untrusted.
#[test]
fn a_trusted_servers_failure_quoting_the_workspace_does_not_vouch() {
    let dir = dir("failure", "");
    let mut agent = Agent::start(&dir, "f1");
    assert_eq!(agent.ok("mail_file_invoice", json!({})), "filed");
    let why = agent.fails("bank_check_payee", json!({}));
    assert!(why.contains("DE89 3704 0044 0532 0130 00"), "{why}");
    let failed = results_of(&dir, "bank_check_payee");
    assert_eq!(failed[0]["untrusted"], json!(true), "{failed:?}");
    pay(&mut agent, &dir, ATTACKER).expect_err("the IBAN a failure quoted ran outright");
}

/// Through a resource: a trusted server's resource is a workspace file the untrusted mail
/// server wrote. A server's answers in a session that read untrusted data are untrusted,
/// its resources' too.
#[test]
fn a_trusted_servers_resource_read_from_the_workspace_does_not_vouch() {
    let dir = dir("resource", "");
    let mut agent = Agent::start(&dir, "r1");
    assert_eq!(agent.ok("mail_file_invoice", json!({})), "filed");
    let read = agent.request("resources/read", json!({"uri": "file:///work/invoice.txt"}));
    let shown = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(shown.contains("DE89 3704"), "{read}");
    let records = results_of(&dir, "notes");
    assert_eq!(
        records.last().unwrap()["untrusted"],
        json!(true),
        "{records:?}"
    );
    pay(&mut agent, &dir, ATTACKER).expect_err("the IBAN a resource showed ran outright");
}

/// The order of sightings cannot be played either: the mail shows the IBAN, then a trusted
/// answer — the person's own ledger, read from a read-only mount, which `read_file` labels
/// by the mount — shows it again. A value once seen untrusted in a session stays untrusted
/// there; the other order (trusted first) stays trusted.
#[test]
fn a_value_seen_untrusted_is_not_made_trusted_by_a_later_trusted_sighting() {
    let dir = dir("order", "");
    let mut agent = Agent::start(&dir, "o1");
    agent.ok("mail_read_inbox", json!({}));
    let ledger = agent.ok("read_file", json!({"path": "/data/records/ledger.txt"}));
    assert!(ledger.contains(ATTACKER), "{ledger}");
    assert_eq!(
        results_of(&dir, "read_file")[0]["untrusted"],
        json!(false),
        "a read-only mount's file is labelled by its mount"
    );
    let listed = pay(&mut agent, &dir, ATTACKER).expect_err("a later trusted sighting vouched");
    assert!(
        listed.contains("first appeared in an untrusted answer of mail_read_inbox"),
        "{listed}"
    );
    // Trusted first, untrusted after: the value stays trusted.
    let mut agent = Agent::start(&dir, "o2");
    agent.ok("bank_get_history", json!({}));
    agent.ok("mail_read_inbox", json!({}));
    pay(&mut agent, &dir, LANDLORD).expect("a value first seen trusted stays trusted");
}

/// A server's tool definition is untrusted in every session, and stays so: the shop's
/// description names its escrow IBAN; `run` rebuilds it from pieces (its arguments never
/// carry it) in a session that read nothing untrusted, so its answer is trusted — and still
/// does not vouch for what a server's own words named first. Only the config lifts it.
#[test]
fn a_value_a_tool_description_names_is_not_vouched_for_by_a_later_trusted_answer() {
    let dir = dir(
        "described",
        r#"
[[tool]]
name = "shop"
mcp = ["/usr/bin/python3", "/opt/servers/bank_server.py", "shop"]

[[grant]]
tool = "shop_send_money"
effect = "allow"
when = [{ pointer = "/recipient", from = "trusted" }]

[[grant]]
tool = "shop_send_money"
effect = "ask"
"#,
    );
    let mut agent = Agent::start(&dir, "d1");
    let tools = agent.request("tools/list", json!({}));
    assert!(tools.to_string().contains("NL91 ABNA"), "{tools}");
    let out = agent.ok(
        "run",
        json!({"argv": ["/usr/bin/python3", "-c", "print('NL91' + 'ABNA0417164300')"]}),
    );
    assert!(out.contains("NL91ABNA0417164300"), "{out}");
    assert_eq!(results_of(&dir, "run")[0]["untrusted"], json!(false));
    let listed = send(
        &mut agent,
        &dir,
        "shop_send_money",
        json!({"recipient": "NL91ABNA0417164300", "amount": 5, "cc": "me@home.example",
               "callback": "https://example.org/paid"}),
    )
    .expect_err("a trusted answer vouched for the description's IBAN");
    assert!(
        listed.contains("is named by the definition of tool shop_send_money"),
        "{listed}"
    );
}

/// The mounts of the cross-session tests: `shared`, writable, whose files are the person's
/// (trusted); `inbox`, writable, that says its files come from outside.
const WRITABLE_MOUNTS: &str = r#"
[[mount]]
host = "LABDIR/shared"
at = "/data/shared"
class = "public"
write = true

[[mount]]
host = "LABDIR/inbox"
at = "/data/inbox"
class = "public"
write = true
untrusted = true
"#;

/// Through a writable mount, across sessions: a session that read the mail writes the IBAN
/// into a mount whose files are the person's (`write_file`, or `run`), and another session,
/// which read nothing untrusted, reads it back with `read_file` — labelled by the mount,
/// trusted — and pays. No write down holds for the untrusted bit as for the class: once a
/// session read untrusted data, a mount whose files are trusted is read-only for it.
#[test]
fn a_session_that_read_untrusted_data_cannot_leave_it_in_a_trusted_mount() {
    let dir = dir("mount", WRITABLE_MOUNTS);
    let mut tainted = Agent::start(&dir, "m1");
    agent_reads_mail(&mut tainted);
    let refused = tainted.fails(
        "write_file",
        json!({"path": "/data/shared/payee.txt", "content": format!("payee: {ATTACKER}\n")}),
    );
    assert!(
        refused.contains("a mount whose files are trusted and this session has read untrusted"),
        "{refused}"
    );
    let ran = tainted.ok(
        "run",
        json!({"argv": ["/bin/sh", "-c",
            format!("echo 'payee: {ATTACKER}' > /data/shared/payee.txt; echo rc=$?")]}),
    );
    assert!(ran.contains("Read-only file system"), "{ran}");
    assert!(!dir.join("shared/payee.txt").exists());
    // The other session finds nothing there to pay.
    let mut clean = Agent::start(&dir, "m2");
    let v = clean.call("read_file", json!({"path": "/data/shared/payee.txt"}));
    assert_eq!(v["result"]["isError"], json!(true), "{v}");
    pay(&mut clean, &dir, ATTACKER).expect_err("the IBAN crossed sessions through a mount");
    // A clean session still writes there.
    clean.ok(
        "write_file",
        json!({"path": "/data/shared/note.txt", "content": "hello\n"}),
    );
}

/// A mount that says its files come from outside (`untrusted = true`) is writable by a
/// session that read untrusted data, and every session reads it back as untrusted.
#[test]
fn an_untrusted_mount_takes_what_an_untrusted_session_writes_and_gives_it_back_untrusted() {
    let dir = dir("mount-untrusted", WRITABLE_MOUNTS);
    let mut tainted = Agent::start(&dir, "u1");
    agent_reads_mail(&mut tainted);
    tainted.ok(
        "write_file",
        json!({"path": "/data/inbox/payee.txt", "content": format!("payee: {ATTACKER}\n")}),
    );
    let mut clean = Agent::start(&dir, "u2");
    let back = clean.ok("read_file", json!({"path": "/data/inbox/payee.txt"}));
    assert!(back.contains(ATTACKER), "{back}");
    let read = results_of(&dir, "read_file");
    assert_eq!(read.last().unwrap()["untrusted"], json!(true), "{read:?}");
    pay(&mut clean, &dir, ATTACKER).expect_err("an untrusted mount's file vouched");
}

fn agent_reads_mail(agent: &mut Agent) {
    let mail = agent.ok("mail_read_inbox", json!({}));
    assert!(mail.contains("DE89 3704"), "{mail}");
}

/// A reset lowers both parts of the label, and only then: the runner forgets the session's
/// floor (class and untrusted bit) with its workspace, so a `run` after the reset answers
/// trusted again — and one before it, in the same session, did not.
#[test]
fn a_reset_forgets_the_untrusted_floor_with_the_workspace() {
    let dir = dir("reset", "");
    let mut agent = Agent::start(&dir, "z1");
    assert_eq!(agent.ok("mail_file_invoice", json!({})), "filed");
    let argv = json!({"argv": ["/bin/cat", "/work/invoice.txt"]});
    assert!(agent.ok("run", argv.clone()).contains("DE89 3704"));
    let o = boxmaker(&dir, &["sessions", "reset", "z1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = agent.call("run", argv);
    assert!(text_of(&v).contains("No such file"), "{v}");
    let runs = results_of(&dir, "run");
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["untrusted"], json!(true), "{runs:?}");
    assert_eq!(runs[1]["untrusted"], json!(false), "{runs:?}");
}

/// The workspace in the instant before an untrusted answer: the mail server writes the
/// IBAN to `/work` and takes its time to answer; a `read_file` of the session that runs
/// meanwhile (an agent calls tools in parallel) must already read it as untrusted — else it
/// is the first sighting, trusted, and the mail's answer after it changes nothing. As the
/// reach's class is, the untrusted bit of a call of code boxmaker does not control is in
/// the session's taint before its box starts.
#[test]
fn a_file_an_untrusted_server_writes_before_it_answers_is_untrusted_at_once() {
    let dir = dir("before-answer", "");
    let mut agent = Agent::start(&dir, "b1");
    let slow = agent.start_call("mail_file_slowly", json!({}));
    let written = dir.join("state/work/b1/invoice.txt");
    let start = Instant::now();
    while !written.exists() {
        assert!(
            start.elapsed() < LIMIT,
            "the mail server never wrote the invoice"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let back = agent.ok("read_file", json!({"path": "/work/invoice.txt"}));
    assert!(back.contains("DE89 3704"), "{back}");
    let read = results_of(&dir, "read_file");
    assert_eq!(read[0]["untrusted"], json!(true), "{read:?}");
    let v = agent.answer(slow);
    assert_eq!(text_of(&v), "filed", "{v}");
    pay(&mut agent, &dir, ATTACKER).expect_err("the IBAN read before the mail answered ran");
}
