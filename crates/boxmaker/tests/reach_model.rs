//! docs/spec.md §3.2–3.5 as a property, against a small reference model: random configs
//! (mounts of random classes, writable or not; `run` tools given random sets of them), and
//! random sequences of calls in two sessions — reads, writes and copies by real tools in
//! real boxes, through the real gate and runner, and resets. Every file starts holding a
//! token that names its class; the model follows where tokens go, and after every step:
//! - no answer is released below its label (a token in a result is at most its class);
//! - the taint never falls without a reset, and is at least every token the session saw;
//! - no write lands below the writer's label: a mount never holds a token above its class,
//!   a session's workspace never one above the session's taint.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use gate::link::Cleared;
use gate::{Gate, ToolRunner};
use proptest::prelude::*;
use proto::control::{ControlAnswer, ControlOp};
use proto::{CallId, DataClass, SessionId, ToolRequest, ToolResponse};

const CLASSES: [DataClass; 4] = [
    DataClass::Public,
    DataClass::Internal,
    DataClass::Confidential,
    DataClass::Secret,
];

/// The runner role in this process, as the gate's runner.
struct InProcess(Arc<runner::Runner>);

impl ToolRunner for InProcess {
    fn run_approved(
        &self,
        req: &ToolRequest,
        taint: policy::Taint,
        files: &[proto::run::FileDigest],
    ) -> ToolResponse {
        self.0.handle_approved(req, taint.label(), files)
    }

    fn digest(&self, req: &ToolRequest) -> Result<Vec<proto::run::FileDigest>, String> {
        Ok(self.0.digest(req))
    }

    fn reset(&self, session: &SessionId) -> Result<Cleared, String> {
        self.0
            .reset_session(session)
            .map(|(servers, workspace)| Cleared { servers, workspace })
    }
}

#[derive(Debug, Clone)]
struct MountSpec {
    class: DataClass,
    write: bool,
}

#[derive(Debug, Clone)]
struct Setup {
    mounts: Vec<MountSpec>,
    /// Per `run` tool, the mounts it is given (`None`: all).
    runs: Vec<Option<Vec<usize>>>,
}

/// A place a tool can name: a mount's file, or a workspace file.
#[derive(Debug, Clone, Copy)]
enum Loc {
    Mount(usize, u8),
    Work(u8),
}

#[derive(Debug, Clone)]
enum Op {
    Read {
        session: usize,
        at: Loc,
    },
    /// `write_file` of the newest token the session has seen (or a public one).
    Write {
        session: usize,
        at: Loc,
    },
    /// `run` tool `tool` copying one place to another.
    Copy {
        session: usize,
        tool: usize,
        from: Loc,
        to: Loc,
    },
    Reset {
        session: usize,
    },
}

fn class_strategy() -> impl Strategy<Value = DataClass> {
    (0usize..4).prop_map(|i| CLASSES[i])
}

fn setup_strategy() -> impl Strategy<Value = Setup> {
    prop::collection::vec(
        (class_strategy(), any::<bool>()).prop_map(|(class, write)| MountSpec { class, write }),
        1..4,
    )
    .prop_flat_map(|mounts| {
        let n = mounts.len();
        let runs = prop::collection::vec(
            prop::option::of(prop::collection::btree_set(0..n, 0..=n))
                .prop_map(|s| s.map(|s| s.into_iter().collect::<Vec<_>>())),
            1..3,
        );
        (Just(mounts), runs).prop_map(|(mounts, runs)| Setup { mounts, runs })
    })
}

fn loc_strategy(mounts: usize) -> impl Strategy<Value = Loc> {
    prop_oneof![
        (0..mounts, 0u8..2).prop_map(|(m, f)| Loc::Mount(m, f)),
        (0u8..2).prop_map(Loc::Work),
    ]
}

fn ops_strategy(m: usize, r: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (0usize..2, loc_strategy(m)).prop_map(|(session, at)| Op::Read { session, at }),
        2 => (0usize..2, loc_strategy(m)).prop_map(|(session, at)| Op::Write { session, at }),
        4 => (0usize..2, 0..r, loc_strategy(m), loc_strategy(m))
            .prop_map(|(session, tool, from, to)| Op::Copy { session, tool, from, to }),
        1 => (0usize..2).prop_map(|session| Op::Reset { session }),
    ];
    prop::collection::vec(op, 1..9)
}

fn token(class: DataClass, id: &str) -> String {
    format!("TOK:{class}:{id};")
}

/// The classes of every token in `text`.
fn tokens(text: &str) -> Vec<DataClass> {
    text.split("TOK:")
        .skip(1)
        .filter_map(|t| t.split(':').next()?.parse().ok())
        .collect()
}

fn max_token(text: &str) -> Option<DataClass> {
    tokens(text).into_iter().max()
}

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    setup: Setup,
    gate: Arc<Gate>,
    calls: u64,
    /// The model: per session, the taint it must have at least, and the tokens it saw.
    taint: [DataClass; 2],
    seen: [Vec<String>; 2],
}

fn session(i: usize) -> SessionId {
    SessionId::new(format!("p{i}")).unwrap()
}

impl World {
    fn new(setup: Setup) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("reach-model-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let root = dir.path().to_path_buf();
        let mut text = String::from("[gate]\nstate = \"state\"\n\n[box]\ntimeout_seconds = 20\n");
        for (i, m) in setup.mounts.iter().enumerate() {
            let host = root.join(format!("m{i}"));
            std::fs::create_dir_all(&host).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o777)).unwrap();
            for f in 0..2 {
                let p = host.join(format!("f{f}"));
                std::fs::write(&p, token(m.class, &format!("m{i}f{f}"))).unwrap();
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
            }
            text.push_str(&format!(
                "[[mount]]\nname = \"m{i}\"\nhost = \"m{i}\"\nat = \"/data/m{i}\"\nclass = \"{}\"\nwrite = {}\n\n",
                m.class, m.write
            ));
        }
        text.push_str(
            "[[tool]]\nname = \"read_file\"\nbuiltin = \"read_file\"\n\n\
             [[tool]]\nname = \"write_file\"\nbuiltin = \"write_file\"\n\n",
        );
        for (k, run) in setup.runs.iter().enumerate() {
            text.push_str(&format!("[[tool]]\nname = \"run{k}\"\nbuiltin = \"run\"\n"));
            if let Some(ms) = run {
                let names: Vec<String> = ms.iter().map(|m| format!("\"m{m}\"")).collect();
                text.push_str(&format!("mounts = [{}]\n", names.join(", ")));
            }
            text.push('\n');
        }
        text.push_str("[[grant]]\ntool = \"*\"\neffect = \"allow\"\n");
        std::fs::write(root.join("boxmaker.toml"), &text).unwrap();
        // The tester's word for the config it wrote (docs/spec.md §6, "Whose config").
        assert!(
            testkit::trust(env!("CARGO_BIN_EXE_boxmaker"), root.join("boxmaker.toml")),
            "boxmaker trust"
        );
        let cfg = Arc::new(config::load(&root.join("boxmaker.toml")).unwrap());
        let runner = runner::Runner::with_binary(
            cfg.clone(),
            &cfg.gate.state,
            PathBuf::from(env!("CARGO_BIN_EXE_boxmaker")),
        )
        .unwrap();
        let (gate, _) = Gate::open(cfg, Box::new(InProcess(Arc::new(runner)))).unwrap();
        Self {
            _dir: dir,
            root,
            setup,
            gate,
            calls: 0,
            taint: [DataClass::Public; 2],
            seen: [Vec::new(), Vec::new()],
        }
    }

    fn path(loc: Loc) -> String {
        match loc {
            Loc::Mount(m, f) => format!("/data/m{m}/f{f}"),
            Loc::Work(f) => format!("/work/w{f}"),
        }
    }

    fn call(&mut self, s: usize, tool: &str, args: serde_json::Value) -> ToolResponse {
        self.calls += 1;
        let req = ToolRequest {
            session: session(s),
            call: CallId(self.calls),
            tool: tool.into(),
            arguments: args.to_string(),
        };
        self.gate.call(req, &mut |p| panic!("nothing asks: {p:?}"))
    }

    /// The gate's taint class of session `s`.
    fn gate_taint(&self, s: usize) -> DataClass {
        match self.gate.control(ControlOp::ListSessions {}) {
            ControlAnswer::Sessions { items } => items
                .iter()
                .find(|i| i.id == session(s))
                .map_or(DataClass::Public, |i| i.class),
            other => panic!("{other:?}"),
        }
    }

    fn step(&mut self, op: &Op) {
        let (s, resp) = match op {
            Op::Read { session, at } => {
                let r = self.call(
                    *session,
                    "read_file",
                    serde_json::json!({"path": Self::path(*at)}),
                );
                (*session, r)
            }
            Op::Write { session, at } => {
                let content = self.seen[*session]
                    .last()
                    .cloned()
                    .unwrap_or_else(|| token(DataClass::Public, "fresh"));
                let r = self.call(
                    *session,
                    "write_file",
                    serde_json::json!({"path": Self::path(*at), "content": content}),
                );
                (*session, r)
            }
            Op::Copy {
                session,
                tool,
                from,
                to,
            } => {
                let script = format!(
                    "cat {} > {}; cat {}",
                    Self::path(*from),
                    Self::path(*to),
                    Self::path(*from)
                );
                let r = self.call(
                    *session,
                    &format!("run{tool}"),
                    serde_json::json!({"argv": ["sh", "-c", script]}),
                );
                (*session, r)
            }
            Op::Reset { session } => {
                let r = self.gate.control(ControlOp::ResetSession {
                    session: self::session(*session),
                });
                if matches!(r, ControlAnswer::Session { .. }) {
                    self.taint[*session] = DataClass::Public;
                    self.seen[*session].clear();
                }
                return self.check_places();
            }
        };
        let now = self.gate_taint(s);
        // The taint never falls without a reset.
        assert!(
            now >= self.taint[s],
            "{op:?}: taint fell from {} to {now}",
            self.taint[s]
        );
        if let ToolResponse::Result { content, class, .. } = &resp {
            // No answer below its label.
            if let Some(t) = max_token(content) {
                assert!(
                    t <= *class,
                    "{op:?}: a {t} token released labelled {class}: {content}"
                );
            }
            // The taint holds everything the session was shown.
            assert!(*class <= now, "{op:?}: shown {class}, taint {now}");
            for tok in content.split_inclusive(';').filter(|t| t.contains("TOK:")) {
                let start = tok.find("TOK:").unwrap_or(0);
                self.seen[s].push(tok[start..].to_string());
            }
        }
        self.taint[s] = now;
        self.check_places();
    }

    /// No write landed below its writer's label.
    fn check_places(&self) {
        for (i, m) in self.setup.mounts.iter().enumerate() {
            for f in 0..2 {
                let text = std::fs::read_to_string(self.root.join(format!("m{i}/f{f}")))
                    .unwrap_or_default();
                if let Some(t) = max_token(&text) {
                    assert!(
                        t <= m.class,
                        "mount m{i} ({}) holds a {t} token: {text}",
                        m.class
                    );
                }
            }
        }
        for s in 0..2 {
            let work = self.root.join("state/work").join(format!("p{s}"));
            for f in 0..2 {
                let text = std::fs::read_to_string(work.join(format!("w{f}"))).unwrap_or_default();
                if let Some(t) = max_token(&text) {
                    let taint = self.gate_taint(s);
                    assert!(
                        t <= taint,
                        "p{s}'s workspace holds a {t} token at taint {taint}"
                    );
                }
            }
        }
    }
}

fn cases() -> u32 {
    std::env::var("REACH_MODEL_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn no_answer_below_its_label_no_taint_falls_no_write_down(
        (setup, ops) in setup_strategy().prop_flat_map(|s| {
            let ops = ops_strategy(s.mounts.len(), s.runs.len());
            (Just(s), ops)
        })
    ) {
        let mut w = World::new(setup);
        for op in &ops {
            w.step(op);
        }
    }
}

#[test]
fn the_model_catches_a_write_down() {
    // The checker itself, on a place that breaks the rule.
    let setup = Setup {
        mounts: vec![MountSpec {
            class: DataClass::Internal,
            write: true,
        }],
        runs: vec![None],
    };
    let w = World::new(setup);
    std::fs::write(w.root.join("m0/f0"), token(DataClass::Secret, "planted")).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.check_places()));
    assert!(
        caught.is_err(),
        "a secret token in an internal mount went unnoticed"
    );
}
