#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The state store through its public API: taint, approvals, grants, reopen, concurrency —
//! every test twice, on the embedded SQLite file and on a PostgreSQL database of a cluster
//! the tests start (docs/spec.md §6, "The store"): one rule set, two backends. On
//! PostgreSQL "reopen" is a new connection (another replica), and "two handles" are two
//! replicas writing at once.

use gate::store::{
    ApprovalFilter, ApprovalReason, ApprovalState, Decision, Effect, NewApproval, NewGrant,
    Sighting, Sightings, Store, StoreError, StoredTaint, TaintRaise,
};
use std::path::Path;

use proto::{CallId, DataClass, SessionId, Timestamp};

fn sid(s: &str) -> SessionId {
    SessionId::new(s).unwrap()
}

fn approval(session: &str, call: u64, created: u64, ttl: u64) -> NewApproval {
    NewApproval {
        session: sid(session),
        call: CallId(call),
        tool: "run".into(),
        arguments: "{\"cmd\":\"rm -rf ~/x\",\n  \"é\": \"\\u0000\"}".into(),
        reason: ApprovalReason::UntrustedContent,
        created: Timestamp(created),
        expires: Timestamp(created + ttl),
        files: Vec::new(),
    }
}

/// The tests both backends run; `open(dir)` opens "the store of `dir`".
macro_rules! store_tests {
    () => {
        #[test]
        fn taint_of_an_unknown_session_is_public_and_trusted() {
            let dir = tempfile::tempdir().unwrap();
            let store = open(dir.path()).unwrap();
            assert_eq!(store.taint(&sid("nobody")).unwrap(), StoredTaint::START);
            assert!(store.sessions().unwrap().is_empty());
        }

        #[test]
        fn taint_only_rises_and_survives_reopen() {
            let dir = tempfile::tempdir().unwrap();
            let s = sid("s1");
            {
                let mut store = open(dir.path()).unwrap();
                let t = store
                    .raise_taint(&s, DataClass::Confidential, false, Timestamp(10))
                    .unwrap();
                assert_eq!(t.class, DataClass::Confidential);
                // A lower class does not lower it; untrusted is sticky.
                let t = store
                    .raise_taint(&s, DataClass::Public, true, Timestamp(11))
                    .unwrap();
                assert_eq!(
                    t,
                    StoredTaint {
                        class: DataClass::Confidential,
                        untrusted: true
                    }
                );
                let t = store
                    .raise_taint(&s, DataClass::Internal, false, Timestamp(12))
                    .unwrap();
                assert_eq!(
                    t,
                    StoredTaint {
                        class: DataClass::Confidential,
                        untrusted: true
                    }
                );
            }
            let store = open(dir.path()).unwrap();
            assert_eq!(
                store.taint(&s).unwrap(),
                StoredTaint {
                    class: DataClass::Confidential,
                    untrusted: true
                }
            );
            let rows = store.sessions().unwrap();
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0].session, s);
            assert_eq!(rows[0].created, Timestamp(10));
            assert_eq!(rows[0].updated, Timestamp(12));
            assert_eq!(rows[0].results, 3);
        }

        #[test]
        fn batched_raises_apply_in_order_and_all_commit() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path()).unwrap();
            let r = |s: &str, class, untrusted| TaintRaise {
                session: sid(s),
                class,
                untrusted,
            };
            let out = store
                .raise_taints(
                    &[
                        r("a", DataClass::Internal, false),
                        r("b", DataClass::Public, true),
                        r("a", DataClass::Public, true),
                    ],
                    Timestamp(7),
                )
                .unwrap();
            assert_eq!(
                out,
                [
                    StoredTaint {
                        class: DataClass::Internal,
                        untrusted: false
                    },
                    StoredTaint {
                        class: DataClass::Public,
                        untrusted: true
                    },
                    StoredTaint {
                        class: DataClass::Internal,
                        untrusted: true
                    },
                ]
            );
            drop(store);
            let mut store = open(dir.path()).unwrap();
            assert_eq!(store.taint(&sid("a")).unwrap(), out[2]);
            assert_eq!(store.taint(&sid("b")).unwrap(), out[1]);
            assert_eq!(store.session(&sid("a")).unwrap().unwrap().results, 2);
            assert!(store.raise_taints(&[], Timestamp(8)).unwrap().is_empty());
        }

        #[test]
        fn reset_lowers_taint_and_reports_what_it_was() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path()).unwrap();
            let s = sid("s1");
            assert_eq!(store.reset_session(&s, Timestamp(1)).unwrap(), None);
            assert!(
                store.session(&s).unwrap().is_none(),
                "reset of an unknown session creates nothing"
            );
            store
                .raise_taint(&s, DataClass::Secret, true, Timestamp(2))
                .unwrap();
            let before = store.reset_session(&s, Timestamp(3)).unwrap();
            assert_eq!(
                before,
                Some(StoredTaint {
                    class: DataClass::Secret,
                    untrusted: true
                })
            );
            assert_eq!(store.taint(&s).unwrap(), StoredTaint::START);
            let row = store.session(&s).unwrap().unwrap();
            assert_eq!((row.resets, row.updated), (1, Timestamp(3)));
            drop(store);
            assert_eq!(
                open(dir.path()).unwrap().taint(&s).unwrap(),
                StoredTaint::START
            );
        }

        #[test]
        fn approval_lifecycle_approve_then_use_once() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path()).unwrap();
            let new = approval("s1", 4, 100, 300);
            let ap = store.create_approval(new.clone()).unwrap();
            assert!(gate::store::is_approval_id(&ap.id));
            assert_eq!(ap.state, ApprovalState::Pending);
            assert_eq!(
                ap.arguments, new.arguments,
                "arguments are kept byte for byte"
            );
            assert_eq!(store.approval(&ap.id).unwrap().unwrap(), ap);

            // Using a pending approval is refused.
            assert!(matches!(
                store.mark_used(&ap.id, Timestamp(110)),
                Err(StoreError::ApprovalNotApproved {
                    state: ApprovalState::Pending,
                    ..
                })
            ));
            let approved = store
                .decide(&ap.id, Decision::Approve, Timestamp(120))
                .unwrap();
            assert_eq!(approved.state, ApprovalState::Approved);
            assert_eq!(approved.decided, Some(Timestamp(120)));

            // Double decide names the state it is in.
            let err = store
                .decide(&ap.id, Decision::Refuse { reason: None }, Timestamp(121))
                .unwrap_err();
            assert!(matches!(
                err,
                StoreError::ApprovalAlreadyDecided {
                    state: ApprovalState::Approved,
                    ..
                }
            ));
            assert!(err.to_string().contains("already approved"), "{err}");

            // One-shot use.
            let used = store.mark_used(&ap.id, Timestamp(122)).unwrap();
            assert_eq!(used.used, Some(Timestamp(122)));
            assert!(matches!(
                store.mark_used(&ap.id, Timestamp(123)),
                Err(StoreError::ApprovalAlreadyUsed {
                    used: Timestamp(122),
                    ..
                })
            ));
            assert!(store.approvals(ApprovalFilter::Pending).unwrap().is_empty());
        }

        #[test]
        fn decide_after_expiry_is_an_expired_error_and_expire_due_collects_it() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path()).unwrap();
            let ap = store.create_approval(approval("s1", 1, 100, 50)).unwrap();
            let err = store
                .decide(&ap.id, Decision::Approve, Timestamp(150))
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    StoreError::ApprovalExpired {
                        expires: Timestamp(150),
                        ..
                    }
                ),
                "{err}"
            );
            let expired = store.expire_due(Timestamp(150)).unwrap();
            assert_eq!(expired.len(), 1);
            assert_eq!(expired[0].id, ap.id);
            assert_eq!(expired[0].state, ApprovalState::Expired);
            assert!(matches!(
                store.decide(&ap.id, Decision::Approve, Timestamp(151)),
                Err(StoreError::ApprovalAlreadyDecided {
                    state: ApprovalState::Expired,
                    ..
                })
            ));
            assert!(store.expire_due(Timestamp(1000)).unwrap().is_empty());
        }

        #[test]
        fn expire_due_takes_only_pending_ones_that_are_due() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path()).unwrap();
            let early = store.create_approval(approval("s1", 1, 100, 10)).unwrap();
            let late = store.create_approval(approval("s1", 2, 100, 100)).unwrap();
            let decided = store.create_approval(approval("s2", 1, 100, 10)).unwrap();
            store
                .decide(
                    &decided.id,
                    Decision::Refuse {
                        reason: Some("no".into()),
                    },
                    Timestamp(105),
                )
                .unwrap();
            let out = store.expire_due(Timestamp(110)).unwrap();
            assert_eq!(
                out.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
                [early.id.as_str()]
            );
            assert_eq!(
                store.approval(&late.id).unwrap().unwrap().state,
                ApprovalState::Pending
            );
            assert_eq!(
                store.approval(&decided.id).unwrap().unwrap().state,
                ApprovalState::Refused
            );
        }

        #[test]
        fn withdraw_and_not_found() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path()).unwrap();
            let ap = store.create_approval(approval("s1", 1, 100, 10)).unwrap();
            let w = store.withdraw(&ap.id, Timestamp(101)).unwrap();
            assert_eq!(w.state, ApprovalState::Withdrawn);
            assert!(matches!(
                store.withdraw(&ap.id, Timestamp(102)),
                Err(StoreError::ApprovalAlreadyDecided {
                    state: ApprovalState::Withdrawn,
                    ..
                })
            ));
            let missing = store
                .decide("ap-ffffffffffffffff", Decision::Approve, Timestamp(1))
                .unwrap_err();
            assert!(matches!(missing, StoreError::ApprovalNotFound { .. }));
            assert!(missing.to_string().contains("ap-ffffffffffffffff"));
        }

        #[test]
        fn approvals_survive_reopen_with_their_states() {
            let dir = tempfile::tempdir().unwrap();
            let mut ids = Vec::new();
            {
                let mut store = open(dir.path()).unwrap();
                for call in 0..5 {
                    ids.push(
                        store
                            .create_approval(approval("s1", call, 100 + call, 60))
                            .unwrap(),
                    );
                }
                store
                    .decide(&ids[0].id, Decision::Approve, Timestamp(110))
                    .unwrap();
                store.mark_used(&ids[0].id, Timestamp(111)).unwrap();
                store
                    .decide(
                        &ids[1].id,
                        Decision::Refuse {
                            reason: Some("not now".into()),
                        },
                        Timestamp(110),
                    )
                    .unwrap();
                store.withdraw(&ids[2].id, Timestamp(110)).unwrap();
                store.expire_due(Timestamp(163)).unwrap(); // ids[3] expires at 163, ids[4] at 164
            }
            let store = open(dir.path()).unwrap();
            let all = store.approvals(ApprovalFilter::All).unwrap();
            let states: Vec<_> = all.iter().map(|a| a.state).collect();
            assert_eq!(
                states,
                [
                    ApprovalState::Approved,
                    ApprovalState::Refused,
                    ApprovalState::Withdrawn,
                    ApprovalState::Expired,
                    ApprovalState::Pending,
                ]
            );
            assert_eq!(all[0].used, Some(Timestamp(111)));
            assert_eq!(all[1].note.as_deref(), Some("not now"));
            assert_eq!(all[4].arguments, ids[4].arguments);
            let pending = store.approvals(ApprovalFilter::Pending).unwrap();
            assert_eq!(pending, vec![ids[4].clone()]);
        }

        #[test]
        fn grants_are_added_listed_and_revoked_but_kept() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path()).unwrap();
            let g = |tool: &str| NewGrant {
                tool: tool.into(),
                sessions: "*".into(),
                effect: Effect::Ask,
                max_class: Some(DataClass::Internal),
                if_untrusted: Some(Effect::Deny),
                expires: Some(Timestamp(1_798_761_600)),
                added: Timestamp(5),
            };
            let a = store.add_grant(g("fetch_*")).unwrap();
            let b = store
                .add_grant(NewGrant {
                    max_class: None,
                    if_untrusted: None,
                    expires: None,
                    ..g("run")
                })
                .unwrap();
            assert_ne!(a, b);
            let revoked = store.revoke_grant(a, Timestamp(9)).unwrap();
            assert_eq!(revoked.revoked, Some(Timestamp(9)));
            assert!(matches!(
                store.revoke_grant(a, Timestamp(10)),
                Err(StoreError::GrantAlreadyRevoked { .. })
            ));
            assert!(matches!(
                store.revoke_grant(999, Timestamp(10)),
                Err(StoreError::GrantNotFound { id: 999 })
            ));
            drop(store);
            let store = open(dir.path()).unwrap();
            let live = store.grants().unwrap();
            assert_eq!(live.len(), 1);
            assert_eq!(live[0].id, b);
            assert_eq!(live[0].tool, "run");
            assert_eq!(
                (live[0].max_class, live[0].if_untrusted, live[0].expires),
                (None, None, None)
            );
            let all = store.all_grants().unwrap();
            assert_eq!(all.len(), 2);
            assert_eq!(all[0].max_class, Some(DataClass::Internal));
            assert_eq!(all[0].if_untrusted, Some(Effect::Deny));
            assert_eq!(all[0].expires, Some(Timestamp(1_798_761_600)));
        }

        #[test]
        fn two_handles_raising_concurrently_lose_no_raise() {
            let dir = tempfile::tempdir().unwrap();
            open(dir.path()).unwrap();
            const N: usize = 100;
            let spawn = |class: DataClass, untrusted: bool| {
                let path = dir.path().to_path_buf();
                std::thread::spawn(move || {
                    let mut store = open(&path).unwrap();
                    for i in 0..N {
                        store
                            .raise_taint(&sid(&format!("s{i}")), class, untrusted, Timestamp(1))
                            .unwrap();
                    }
                })
            };
            let a = spawn(DataClass::Confidential, false);
            let b = spawn(DataClass::Public, true);
            a.join().unwrap();
            b.join().unwrap();
            let store = open(dir.path()).unwrap();
            let rows = store.sessions().unwrap();
            assert_eq!(rows.len(), N);
            for row in rows {
                assert_eq!(
                    row.taint,
                    StoredTaint {
                        class: DataClass::Confidential,
                        untrusted: true
                    },
                    "{}",
                    row.session
                );
                assert_eq!(row.results, 2, "{}", row.session);
            }
        }

        #[test]
        fn a_raise_that_raises_nothing_counts_and_one_that_rises_still_rises() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path()).unwrap();
            let r = |class, untrusted| TaintRaise {
                session: sid("q"),
                class,
                untrusted,
            };
            let t = |class, untrusted| StoredTaint { class, untrusted };
            let raise = |store: &mut Store, class, untrusted| {
                store
                    .raise_taints(&[r(class, untrusted)], Timestamp(5))
                    .unwrap()[0]
            };
            assert_eq!(
                raise(&mut store, DataClass::Confidential, false),
                t(DataClass::Confidential, false)
            );
            // At or below what the session holds: counted, the taint as it was.
            for class in [
                DataClass::Public,
                DataClass::Internal,
                DataClass::Confidential,
            ] {
                assert_eq!(
                    raise(&mut store, class, false),
                    t(DataClass::Confidential, false)
                );
            }
            // Below in class but untrusted, then above in class: each rises.
            assert_eq!(
                raise(&mut store, DataClass::Public, true),
                t(DataClass::Confidential, true)
            );
            assert_eq!(
                raise(&mut store, DataClass::Secret, false),
                t(DataClass::Secret, true)
            );
            assert_eq!(
                raise(&mut store, DataClass::Secret, true),
                t(DataClass::Secret, true)
            );
            // In one batch, a raise after one that rises answers the taint after both.
            let out = store
                .raise_taints(
                    &[TaintRaise {
                        session: sid("o"),
                        class: DataClass::Internal,
                        untrusted: false,
                    }],
                    Timestamp(6),
                )
                .unwrap();
            assert_eq!(out, [t(DataClass::Internal, false)]);
            let o = |class| TaintRaise {
                session: sid("o"),
                class,
                untrusted: false,
            };
            let out = store
                .raise_taints(
                    &[o(DataClass::Confidential), o(DataClass::Public)],
                    Timestamp(7),
                )
                .unwrap();
            assert_eq!(
                out,
                [
                    t(DataClass::Confidential, false),
                    t(DataClass::Confidential, false)
                ]
            );
            drop(store);
            let store = open(dir.path()).unwrap();
            assert_eq!(store.taint(&sid("q")).unwrap(), t(DataClass::Secret, true));
            assert_eq!(store.session(&sid("q")).unwrap().unwrap().results, 7);
            assert_eq!(store.session(&sid("o")).unwrap().unwrap().results, 3);
        }

        #[test]
        fn batches_from_two_handles_at_once_lose_no_raise_and_no_count() {
            let dir = tempfile::tempdir().unwrap();
            open(dir.path()).unwrap();
            const N: usize = 60;
            // Each handle raises every session twice a batch: once with its label, once
            // with one at or below it (a count-only raise once the first has committed).
            let spawn = |first: (DataClass, bool), then: (DataClass, bool)| {
                let path = dir.path().to_path_buf();
                std::thread::spawn(move || {
                    let mut store = open(&path).unwrap();
                    for i in 0..N {
                        let s = sid(&format!("c{i}"));
                        let r = |(class, untrusted): (DataClass, bool)| TaintRaise {
                            session: s.clone(),
                            class,
                            untrusted,
                        };
                        store
                            .raise_taints(&[r(first), r(then)], Timestamp(1))
                            .unwrap();
                        store.raise_taints(&[r(then)], Timestamp(2)).unwrap();
                    }
                })
            };
            let a = spawn((DataClass::Confidential, false), (DataClass::Public, false));
            let b = spawn((DataClass::Internal, true), (DataClass::Public, true));
            a.join().unwrap();
            b.join().unwrap();
            let store = open(dir.path()).unwrap();
            let rows = store.sessions().unwrap();
            assert_eq!(rows.len(), N);
            for row in rows {
                assert_eq!(
                    row.taint,
                    StoredTaint {
                        class: DataClass::Confidential,
                        untrusted: true
                    },
                    "{}",
                    row.session
                );
                assert_eq!(row.results, 6, "{}", row.session);
            }
        }

        #[test]
        fn a_decisions_read_judges_the_arguments_as_their_commit_would() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path()).unwrap();
            let s = sid("d");
            let seen = |sighting, values: &[&str]| Sightings {
                session: s.clone(),
                tool: "t".into(),
                call: CallId(1),
                sighting,
                values: values
                    .iter()
                    .map(|v| policy::values::Ident {
                        kind: policy::values::Kind::Email,
                        text: (*v).to_string(),
                    })
                    .collect(),
                overflow: false,
            };
            let writes = |store: &Store, values: &[&str]| {
                store
                    .decision_read(&s, Some(&seen(Sighting::Argued, values)), 5)
                    .unwrap()
                    .argued_writes
            };
            let record = |store: &mut Store, sighting, values: &[&str]| {
                store
                    .raise_and_record(&[], &[seen(sighting, values)], 5, Timestamp(1))
                    .unwrap();
            };
            // Nothing held: each value would be written.
            assert!(writes(&store, &["a@x.org", "b'\"\\@x.org"]));
            record(&mut store, Sighting::Argued, &["a@x.org", "b'\"\\@x.org"]);
            assert!(!writes(&store, &["a@x.org", "b'\"\\@x.org"]));
            assert!(writes(&store, &["a@x.org", "c@x.org"]));
            // Trusted first: passing it in writes nothing more.
            record(&mut store, Sighting::Trusted, &["t@x.org"]);
            assert!(!writes(&store, &["t@x.org"]));
            // Seen untrusted, never passed in: passing it in is written (the echo guard).
            record(&mut store, Sighting::Untrusted, &["u@x.org"]);
            assert!(writes(&store, &["u@x.org"]));
            // Four held; a fifth fills the index, a sixth is not held and marks it full,
            // once.
            assert!(writes(&store, &["z@x.org"]));
            record(&mut store, Sighting::Argued, &["z@x.org"]);
            assert!(!writes(&store, &["z@x.org"]));
            assert!(writes(&store, &["y@x.org"]));
            record(&mut store, Sighting::Argued, &["y@x.org"]);
            assert!(store.provenance_size(&s).unwrap().full);
            assert!(!writes(&store, &["y@x.org"]));
            // And the taint and the grants stamp, as read alone.
            store
                .raise_taint(&s, DataClass::Confidential, true, Timestamp(2))
                .unwrap();
            let read = store.decision_read(&s, None, 5).unwrap();
            assert_eq!(read.taint, store.taint(&s).unwrap());
            assert_eq!(read.grants_stamp, store.grants_stamp().unwrap());
            assert!(!read.argued_writes);
            let fresh = store.decision_read(&sid("nobody"), None, 5).unwrap();
            assert_eq!(fresh.taint, StoredTaint::START);
        }

        #[test]
        fn a_remembered_grant_is_written_with_its_decision_or_not_at_all() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path()).unwrap();
            let ap = store.create_approval(approval("s1", 1, 100, 60)).unwrap();
            let by = gate::store::Decider {
                via: gate::store::DecidedVia::Page,
                by: "the approvals page".into(),
            };
            let remember = gate::store::Remember {
                expires: Timestamp(700),
                max_class: DataClass::Internal,
                if_untrusted: Effect::Ask,
                args_sha256: "ab".repeat(32),
                files: Vec::new(),
            };
            // Too late: neither the decision nor the grant is written.
            assert!(matches!(
                store.decide_as(
                    &ap.id,
                    Decision::Approve,
                    Some(&by),
                    Some(&remember),
                    Timestamp(160)
                ),
                Err(StoreError::ApprovalExpired { .. })
            ));
            assert!(store.grants().unwrap().is_empty());
            // A refusal is never remembered.
            assert!(matches!(
                store.decide_as(
                    &ap.id,
                    Decision::Refuse { reason: None },
                    Some(&by),
                    Some(&remember),
                    Timestamp(110)
                ),
                Err(StoreError::RememberRefusal { .. })
            ));
            let row = store
                .decide_as(
                    &ap.id,
                    Decision::Approve,
                    Some(&by),
                    Some(&remember),
                    Timestamp(110),
                )
                .unwrap();
            assert_eq!(row.decider, Some(by));
            let grants = store.grants().unwrap();
            assert_eq!(grants.len(), 1);
            assert_eq!(row.grant, Some(grants[0].id));
            let scope = grants[0].scope.as_ref().unwrap();
            assert_eq!(scope.approval, ap.id);
            assert_eq!(scope.arguments, ap.arguments);
            assert_eq!(grants[0].sessions, "s1");
            assert_eq!(store.approval(&ap.id).unwrap().unwrap(), row);
        }
    };
}

mod sqlite {
    use super::*;

    fn open(dir: &Path) -> Result<Store, StoreError> {
        Store::open(dir)
    }

    store_tests!();
}

mod postgres {
    use super::*;

    /// The store of `dir` on the shared cluster: a database of its own per directory.
    fn open(dir: &Path) -> Result<Store, StoreError> {
        let url = shared::database_for(dir);
        Store::open_shared(&gate::store::PgTarget::from_url(&url).unwrap())
    }

    store_tests!();
}

/// One cluster for this test binary, a database per test directory.
mod shared {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, OnceLock};

    use testkit::pg::Pg;

    fn cluster() -> &'static Pg {
        static PG: OnceLock<Pg> = OnceLock::new();
        PG.get_or_init(Pg::start_for_this_process)
    }

    pub fn database_for(dir: &Path) -> String {
        static DBS: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();
        let mut dbs = DBS.get_or_init(Default::default).lock().unwrap();
        let n = dbs.len();
        dbs.entry(dir.to_path_buf())
            .or_insert_with(|| cluster().database(&format!("t{n}")))
            .clone()
    }
}
#[test]
fn a_version_1_database_is_migrated_with_its_approvals_and_grants_kept() {
    let dir = tempfile::tempdir().unwrap();
    // The person's own state directory (marked, docs/spec.md §6 "Whose state").
    statedir::file::Dir::own(dir.path()).unwrap();
    {
        // What a boxmaker before issue 16 left: schema version 1, a decided approval, a
        // pending one, and a run-time grant.
        let conn = rusqlite::Connection::open(dir.path().join(gate::store::DB_FILE)).unwrap();
        conn.execute_batch(gate::store::MIGRATIONS[0]).unwrap();
        conn.execute_batch(
            "PRAGMA user_version = 1;
             INSERT INTO approvals (id, session, call, tool, arguments, reason, state, created,
                                    expires, decided)
             VALUES ('ap-00000000000000a1', 's1', 1, 'run', '{}', 'grant_ask', 'refused', 10,
                     310, 20),
                    ('ap-00000000000000a2', 's1', 2, 'run', '{}', 'grant_ask', 'pending', 30,
                     330, NULL);
             INSERT INTO grants (tool, sessions, effect, added) VALUES ('run', '*', 'allow', 5);",
        )
        .unwrap();
    }
    let mut store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.schema_version().unwrap(),
        gate::store::MIGRATIONS.len() as i64
    );
    let old = store.approval("ap-00000000000000a1").unwrap().unwrap();
    assert_eq!(old.state, ApprovalState::Refused);
    assert_eq!(old.decider, None);
    assert_eq!(old.grant, None);
    // Old rows are numbered in the order they were written; new changes come after them.
    let changes = store.approval_changes(0, 10, false).unwrap();
    assert_eq!(changes.len(), 2);
    assert!(changes[0].0.change < changes[1].0.change);
    let head = store.approvals_head().unwrap();
    let decided = store
        .decide("ap-00000000000000a2", Decision::Approve, Timestamp(40))
        .unwrap();
    assert!(decided.change > head);
    let grants = store.grants().unwrap();
    assert_eq!(grants.len(), 1);
    assert_eq!(
        grants[0].scope, None,
        "an old grant is a grant for its whole tool"
    );
}
