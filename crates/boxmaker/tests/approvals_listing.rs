//! `boxmaker approvals [--all] [--json]` over a history longer than one answer of the gate
//! may carry (docs/spec.md §7): every approval is listed, none is lost, whatever the size.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use gate::store::{Decision, NewApproval, Store};
use proto::control::ApprovalReason;
use proto::{CallId, SessionId, Timestamp};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// A config and a state directory whose store already holds `pending` pending approvals and
/// `decided` refused ones, each with `size` bytes of arguments.
fn lab(name: &str, pending: usize, decided: usize, size: usize) -> PathBuf {
    let lab = testkit::lab!("approvals-listing", name);
    let state = lab.path("state");
    let file = lab.config();
    lab.write_config(&format!(
        "[gate]\nstate = {state:?}\napproval_ttl = 86400\n\n[[tool]]\nname = \"run\"\nbuiltin = \"run\"\n"
    ));
    // The tester's config, trusted as a person would.
    assert!(testkit::trust(BIN, &file), "boxmaker trust");
    let mut store = Store::open(&state).unwrap();
    // In the past, so that every one is still pending when the listing runs.
    let now = Timestamp::from_system_time(std::time::SystemTime::now());
    let now = Timestamp(now.0 - 2 * (pending + decided) as u64);
    let pad = "x".repeat(size);
    for i in 0..pending + decided {
        let row = store
            .create_approval(NewApproval {
                session: SessionId::new("s1").unwrap(),
                call: CallId(i as u64 + 1),
                tool: "run".into(),
                arguments: format!(r#"{{"argv":["echo","{i}","{pad}"]}}"#),
                reason: ApprovalReason::GrantAsk,
                // A second apart, so "oldest first" has one answer.
                created: now.plus(i as u64),
                expires: now.plus(86_400 + i as u64),
                files: Vec::new(),
            })
            .unwrap();
        if i >= pending {
            store
                .decide(&row.id, Decision::Refuse { reason: None }, now)
                .unwrap_or_else(|e| panic!("refuse {}: {e}", row.id));
        }
    }
    file
}

fn approvals(file: &Path, extra: &[&str]) -> (String, String, bool) {
    let o = Command::new(BIN)
        .arg("approvals")
        .args(["--config", file.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    (testkit::stdout(&o), testkit::stderr(&o), o.status.success())
}

#[test]
fn a_history_larger_than_one_answer_is_listed_whole() {
    // 1,200 approvals of 1.5 KB each: about 2 MB, twice what one answer may carry.
    let file = lab("big", 200, 1_000, 1_500);
    let (out, err, ok) = approvals(&file, &["--all", "--json"]);
    assert!(ok, "approvals --all --json failed: {err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let items = v["body"]["items"]
        .as_array()
        .or_else(|| v["items"].as_array())
        .unwrap_or_else(|| panic!("no items in {}", &out[..out.len().min(300)]));
    assert_eq!(items.len(), 1_200);
    // Each one once, whole, oldest first.
    let mut seen: Vec<u64> = items.iter().map(|i| i["call"].as_u64().unwrap()).collect();
    let sorted = {
        let mut s = seen.clone();
        s.sort_unstable();
        s
    };
    assert!(seen == sorted, "not oldest first");
    seen.dedup();
    assert_eq!(seen.len(), 1_200);
    assert!(
        items
            .iter()
            .all(|i| i["arguments"].as_str().unwrap().len() > 1_500)
    );
    // The pending ones alone, and the text form too.
    let (out, err, ok) = approvals(&file, &[]);
    assert!(ok, "approvals failed: {err}");
    assert_eq!(
        out.lines().filter(|l| l.contains("ap-")).count(),
        200,
        "{err}"
    );
}
