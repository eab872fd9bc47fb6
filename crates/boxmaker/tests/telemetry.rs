//! OpenTelemetry end to end (docs/spec.md §8), through the real binary and a real OTLP
//! receiver (`tests/servers/otlp_receiver.py`: the OpenTelemetry project's generated
//! protobuf classes decode what the exporter POSTed to /v1/traces and /v1/metrics).
//!
//! An MCP client calls through `boxmaker mcp` with a `traceparent` in its requests' `_meta`:
//! the receiver must get one trace per call — the client's trace, the call's span a child of
//! the client's span — with the decision, the taint and the runner's and box's spans, and
//! nothing of the call's arguments, its result or a secret's value in any spelling. Without
//! an endpoint, no exporter process runs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use testkit::{Lab, McpClient, files_below, python_server};

const DEADLINE: Duration = Duration::from_secs(90);
const VAR: &str = "BXM_OTEL_SECRET";
/// The secret: long, and spelled differently by every encoding.
const VALUE: &str = "otel_S3cr3t/with+odd chars?&=~q";
/// Text only the call's arguments hold.
const ARG_MARK: &str = "argument-mark-5e1d0c";
/// Text only the call's result holds (the arguments spell it in two halves).
const RESULT_MARK: &str = "result-mark-a93b";
/// The client's trace contexts.
const T1: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const T2: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// Every spelling of the secret a leak could take, computed here independently of boxmaker.
fn spellings() -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let b = VALUE.as_bytes();
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    vec![
        VALUE.to_string(),
        STANDARD.encode(b),
        STANDARD_NO_PAD.encode(b),
        URL_SAFE.encode(b),
        URL_SAFE_NO_PAD.encode(b),
        hex.clone(),
        hex.to_uppercase(),
        VALUE[4..20].to_string(),
        STANDARD_NO_PAD.encode(&b[3..18]),
    ]
}

fn config(lab: &Lab) -> String {
    format!(
        r#"
[gate]
state = {state:?}

[[secret]]
name = "token"
env = "{VAR}"

[[tool]]
name = "run"
builtin = "run"
mounts = []
secrets = ["token"]

[[tool]]
name = "read_file"
builtin = "read_file"

[[tool]]
name = "list_dir"
builtin = "list_dir"

[[grant]]
tool = "run"
effect = "allow"

[[grant]]
tool = "read_file"
effect = "allow"
"#,
        state = lab.path(".boxmaker"),
    )
}

/// A lab whose processes export to the receiver at `port`, or to nowhere.
fn lab(name: &str, port: Option<u16>) -> Lab {
    let mut lab = testkit::lab!("telemetry", name).in_its_dir();
    lab.vars.push((VAR.into(), VALUE.into()));
    if let Some(port) = port {
        lab.vars.push((
            "OTEL_EXPORTER_OTLP_ENDPOINT".into(),
            format!("http://127.0.0.1:{port}"),
        ));
        // Spans leave within 100 ms of ending, metrics every half second.
        lab.vars
            .push(("OTEL_BSP_SCHEDULE_DELAY".into(), "100".into()));
        lab.vars
            .push(("OTEL_METRIC_EXPORT_INTERVAL".into(), "500".into()));
    }
    lab.write_config(&config(&lab));
    lab
}

fn call(m: &mut McpClient, tool: &str, args: Value, traceparent: Option<&str>) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(t) = traceparent {
        params["_meta"] = json!({"traceparent": t});
    }
    m.request("tools/call", params)
}

fn lines(dir: &Path, file: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The pids of this lab's `__telemetry` processes (children of its gate).
fn exporters(lab: &Lab) -> Vec<u32> {
    let config = lab.config().display().to_string();
    let cmdline = |pid: &str| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default()
    };
    let ppid = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(str::to_string))
            })
            .unwrap_or_default()
    };
    let pids: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    let gates: BTreeSet<String> = pids
        .iter()
        .filter(|p| {
            let c = cmdline(p);
            c.contains("__gate") && c.contains(&config)
        })
        .cloned()
        .collect();
    pids.iter()
        .filter(|p| cmdline(p).contains("__telemetry") && gates.contains(&ppid(p)))
        .map(|p| p.parse().unwrap())
        .collect()
}

fn spans_named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

#[test]
fn the_receiver_gets_one_trace_per_call_with_its_decision_and_no_argument_result_or_secret() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("telemetry-receiver");
    let _ = std::fs::remove_dir_all(&out);
    let (_receiver, port) = python_server(
        "otlp_receiver.py",
        &[out.to_str().unwrap()],
        &PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("telemetry-receiver.err"),
    );
    let lab = lab("export", Some(port));
    let mut m = McpClient::spawn(lab.mcp("s1"), DEADLINE);
    m.initialize("telemetry-test");

    // 1. Allowed: a `run` that is handed the secret, prints it (redacted on the way out),
    //    and prints a text only its result holds.
    let script =
        format!("echo {ARG_MARK} >/dev/null; printf '%s-%s\\n' result-mark a93b; echo \"${VAR}\"");
    let r1 = call(
        &mut m,
        "run",
        json!({"argv": ["/bin/sh", "-c", script]}),
        Some(T1),
    );
    let text = r1["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains(RESULT_MARK), "{r1}");
    assert!(
        exporters(&lab).len() == 1,
        "one exporter process, the gate's child, while the gate runs"
    );
    // 2. Denied: no grant names it.
    let r2 = call(&mut m, "list_dir", json!({"path": ARG_MARK}), Some(T2));
    assert_eq!(r2["result"]["isError"], true, "{r2}");
    // 3. Allowed, with a traceparent that is not one (it smuggles text): the call gets a
    //    trace of its own and the text goes nowhere.
    let forged = format!("{}-{ARG_MARK}", &T1[..50]);
    let r3 = call(
        &mut m,
        "read_file",
        json!({"path": format!("/work/{ARG_MARK}")}),
        Some(&forged),
    );
    assert!(r3.get("result").is_some(), "{r3}");
    drop(m);

    // The on-demand gate ends 3 s after its last client; its exporter flushes on the pipe's
    // end. Wait for the three calls' spans.
    let found = testkit::poll(Duration::from_secs(30), || {
        let spans = lines(&out, "traces.jsonl");
        let calls = spans
            .iter()
            .filter(|s| s["name"].as_str().unwrap_or("").starts_with("tools/call "))
            .count();
        (calls >= 3).then_some(spans)
    });
    let spans = found.unwrap_or_else(|| {
        panic!(
            "the receiver did not get three call spans: {:?}",
            lines(&out, "traces.jsonl")
        )
    });

    // One trace per call: the client's for 1 and 2, a new one for 3.
    let c1 = spans_named(&spans, "tools/call run");
    let c2 = spans_named(&spans, "tools/call list_dir");
    let c3 = spans_named(&spans, "tools/call read_file");
    assert_eq!((c1.len(), c2.len(), c3.len()), (1, 1, 1), "{spans:#?}");
    let (c1, c2, c3) = (c1[0], c2[0], c3[0]);
    assert_eq!(c1["trace_id"], &T1[3..35]);
    assert_eq!(c1["parent_span_id"], &T1[36..52]);
    assert_eq!(c2["trace_id"], &T2[3..35]);
    assert_eq!(c2["parent_span_id"], &T2[36..52]);
    assert_ne!(c3["trace_id"], &T1[3..35]);
    assert_eq!(
        c3["parent_span_id"], "",
        "a forged traceparent is not a parent"
    );
    let traces: BTreeSet<&str> = spans
        .iter()
        .map(|s| s["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        traces.len(),
        3,
        "every span is in one of the three calls' traces"
    );

    // The decision and the labels.
    let a1 = &c1["attributes"];
    assert_eq!(a1["boxmaker.decision"], "allow", "{c1}");
    assert_eq!(a1["boxmaker.status"], "result");
    assert_eq!(a1["gen_ai.tool.name"], "run");
    assert_eq!(a1["mcp.session.id"], "s1");
    assert_eq!(a1["boxmaker.taint.before.class"], "public");
    assert!(a1["boxmaker.taint.after.untrusted"].is_boolean(), "{c1}");
    let a2 = &c2["attributes"];
    assert_eq!(a2["boxmaker.decision"], "deny", "{c2}");
    assert_eq!(a2["boxmaker.deny_reason"], "no_grant");
    assert_eq!(a2["boxmaker.status"], "denied");
    assert_eq!(c3["attributes"]["boxmaker.decision"], "allow", "{c3}");

    // The runner's span and the box's, under the call of run.
    let run: Vec<&Value> = spans_named(&spans, "tool run")
        .into_iter()
        .filter(|s| s["parent_span_id"] == c1["span_id"])
        .collect();
    assert_eq!(run.len(), 1, "{spans:#?}");
    let boxes: Vec<&Value> = spans_named(&spans, "box start")
        .into_iter()
        .filter(|s| s["parent_span_id"] == run[0]["span_id"])
        .collect();
    assert_eq!(boxes.len(), 1, "{spans:#?}");
    assert_eq!(boxes[0]["attributes"]["boxmaker.box.kind"], "run");
    assert!(
        spans_named(&spans, "tool run")
            .iter()
            .all(|s| s["trace_id"] != c2["trace_id"])
    );

    // The replica is named: the service, and an instance of its own.
    let res = &c1["resource"];
    assert_eq!(res["service.name"], "boxmaker", "{res}");
    assert_eq!(
        res["service.instance.id"].as_str().map(str::len),
        Some(32),
        "{res}"
    );

    // Metrics: calls by decision.
    let metrics = testkit::poll(Duration::from_secs(15), || {
        let m = lines(&out, "metrics.jsonl");
        m.iter().any(|x| x["name"] == "boxmaker.calls").then_some(m)
    })
    .expect("the receiver got no boxmaker.calls metric");
    let decisions: BTreeSet<String> = metrics
        .iter()
        .filter(|x| x["name"] == "boxmaker.calls")
        .flat_map(|x| x["points"].as_array().unwrap().clone())
        .map(|p| {
            p["attributes"]["boxmaker.decision"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(
        decisions.contains("allow") && decisions.contains("deny"),
        "{decisions:?}"
    );
    assert!(
        metrics.iter().any(|x| x["name"] == "boxmaker.box.starts"),
        "no box start counted"
    );

    // Nothing above a call's label: every byte the receiver got, as it came and decoded.
    let files = files_below(&out, None);
    assert!(
        files
            .iter()
            .any(|f| f.extension().is_some_and(|e| e == "bin"))
    );
    let mut forbidden = spellings();
    forbidden.push(ARG_MARK.into());
    forbidden.push(RESULT_MARK.into());
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        for s in &forbidden {
            assert!(
                !bytes.windows(s.len()).any(|w| w == s.as_bytes()),
                "{} holds {s:?}",
                f.display()
            );
        }
    }
}

#[test]
fn without_an_endpoint_no_exporter_runs_and_nothing_is_sent() {
    let lab = lab("off", None);
    let mut m = McpClient::spawn(lab.mcp("s1"), DEADLINE);
    m.initialize("telemetry-test");
    let r = call(&mut m, "run", json!({"argv": ["/bin/true"]}), Some(T1));
    assert!(r.get("result").is_some(), "{r}");
    // The gate is up (it answered), and has no exporter child.
    assert_eq!(exporters(&lab), Vec::<u32>::new());
}
