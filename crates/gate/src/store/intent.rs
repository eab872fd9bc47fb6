//! The person's own words in the state database (docs/spec.md §3.10): a kind of trusted
//! sighting of its own, beside the provenance index (`provenance` is what answers showed;
//! these tables are what the person said), so the two never rewrite each other's rows.
//!
//! - `intent_prompts`: each prompt a conversation was handed, numbered from 1 — when, how
//!   (`hook` or `cli`), its SHA-256 and size. Never its text.
//! - `intent_values`: each value a prompt names, with the first prompt that named it.
//! - `intent_sources`: each source a prompt names (`host:dora.example`, `file:notes.txt`).
//! - `intent_sourced`: each value an answer showed of a call that read a named source, with
//!   that source, the call, and the prompt that named it; the first such answer wins.
//!
//! Bounded per session ([`IntentLimits`]): a prompt that would pass a bound is refused
//! whole ([`StoreError::IntentFull`]), nothing of it written, so what it names stays as
//! untrusted as it was (fail closed); a value an endorsed answer showed past the bound is
//! not kept (it is then only as trusted as the provenance index says). A prompt is written
//! in one synced transaction; a reset clears every table with the taint.

use super::db::{Db, p};
use super::{
    Store, StoreError, call_from_sql, call_to_sql, count_from_sql, sql, ts_from_sql, ts_to_sql,
};
use policy::values::Ident;
use proto::{CallId, SessionId, Timestamp};

/// The tables a session reset clears.
pub(super) const TABLES: [&str; 4] = [
    "intent_prompts",
    "intent_values",
    "intent_sources",
    "intent_sourced",
];

/// How a prompt reached the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntentVia {
    /// The client's own hook (`boxmaker intent --hook`).
    Hook,
    /// `boxmaker intent` from a program the person runs.
    Cli,
}

impl IntentVia {
    fn as_str(self) -> &'static str {
        match self {
            IntentVia::Hook => "hook",
            IntentVia::Cli => "cli",
        }
    }
}

/// One prompt as the database keeps it: never its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentPrompt {
    pub at: Timestamp,
    pub sha256: String,
    pub bytes: u64,
    pub via: IntentVia,
}

/// How much of the person's words one session keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntentLimits {
    pub prompts: u64,
    pub values: u64,
    pub sources: u64,
}

/// What a prompt added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntentAdded {
    /// Its number in the conversation (1 for the first).
    pub prompt: u64,
    /// How many of its values and sources were new to the session.
    pub values: u64,
    pub sources: u64,
}

/// A value an answer of a call that read a named source showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced {
    /// The source as the person named it (`Source::key`).
    pub source: String,
    pub tool: String,
    pub call: CallId,
    pub prompt: u64,
    pub at: Timestamp,
}

fn count(tx: &Db, table: &str, session: &SessionId) -> Result<u64, StoreError> {
    let n: i64 = tx
        .value(
            &format!("SELECT count(*) FROM {table} WHERE session = ?1"),
            p![session.as_str()],
        )
        .map_err(sql("count what a session's prompts named"))?;
    count_from_sql(n)
}

impl Store {
    /// Records one prompt of the person for `session`: its values and the sources it names
    /// (canonical), each new one with this prompt's number. One transaction, synced; refused
    /// whole past a bound of `limits`.
    pub fn add_intent(
        &mut self,
        session: &SessionId,
        prompt: &IntentPrompt,
        values: &[Ident],
        sources: &[String],
        limits: IntentLimits,
    ) -> Result<IntentAdded, StoreError> {
        let tx = self.write("record the person's prompt")?;
        let full = |what: String| StoreError::IntentFull {
            session: session.to_string(),
            what,
        };
        let prompts = count(&tx, "intent_prompts", session)?;
        if prompts >= limits.prompts {
            return Err(full(format!("{prompts} prompts")));
        }
        let n = prompts + 1;
        let n_sql = i64::try_from(n).unwrap_or(i64::MAX);
        tx.execute(
            "INSERT INTO intent_prompts (session, n, at, sha256, bytes, via)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            p![
                session.as_str(),
                n_sql,
                ts_to_sql(prompt.at),
                prompt.sha256,
                i64::try_from(prompt.bytes).unwrap_or(i64::MAX),
                prompt.via.as_str()
            ],
        )
        .map_err(sql("record the person's prompt"))?;
        let mut added = IntentAdded {
            prompt: n,
            values: 0,
            sources: 0,
        };
        for v in values {
            added.values += tx
                .execute(
                    "INSERT INTO intent_values (session, value, kind, prompt)
                     VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                    p![session.as_str(), v.text, v.kind.as_str(), n_sql],
                )
                .map_err(sql("record the values of the person's prompt"))?;
        }
        for source in sources {
            added.sources += tx
                .execute(
                    "INSERT INTO intent_sources (session, source, prompt)
                     VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                    p![session.as_str(), source, n_sql],
                )
                .map_err(sql("record the sources of the person's prompt"))?;
        }
        let held = count(&tx, "intent_values", session)?;
        if held > limits.values {
            return Err(full(format!("{} values the person named", limits.values)));
        }
        let named = count(&tx, "intent_sources", session)?;
        if named > limits.sources {
            return Err(full(format!("{} sources the person named", limits.sources)));
        }
        tx.commit().map_err(sql("commit the person's prompt"))?;
        Ok(added)
    }

    /// The prompt that first named `value` (canonical) in `session`: its number and time.
    pub fn intent_value(
        &self,
        session: &SessionId,
        value: &str,
    ) -> Result<Option<(u64, Timestamp)>, StoreError> {
        let row: Option<(i64, i64)> = self
            .conn
            .query_opt(
                "SELECT v.prompt, p.at FROM intent_values v
                 JOIN intent_prompts p ON p.session = v.session AND p.n = v.prompt
                 WHERE v.session = ?1 AND v.value = ?2",
                p![session.as_str(), value],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(sql("read what the person's prompts named"))?;
        row.map(|(n, at)| Ok((count_from_sql(n)?, ts_from_sql(at)?)))
            .transpose()
    }

    /// The sources `session`'s prompts named (`Source::key`), with the prompt of each.
    pub fn intent_sources(&self, session: &SessionId) -> Result<Vec<(String, u64)>, StoreError> {
        let rows = self
            .conn
            .query(
                "SELECT source, prompt FROM intent_sources WHERE session = ?1
                 ORDER BY prompt, source",
                p![session.as_str()],
                |r| Ok((r.get::<String>(0)?, r.get::<i64>(1)?)),
            )
            .map_err(sql("read the sources the person named"))?;
        rows.into_iter()
            .map(|(s, n)| Ok((s, count_from_sql(n)?)))
            .collect()
    }

    /// Where `value` came from when an answer of a call that read a named source showed it.
    pub fn intent_sourced(
        &self,
        session: &SessionId,
        value: &str,
    ) -> Result<Option<Sourced>, StoreError> {
        let row: Option<(String, String, i64, i64, i64)> = self
            .conn
            .query_opt(
                "SELECT s.source, s.tool, s.call, s.prompt, p.at FROM intent_sourced s
                 JOIN intent_prompts p ON p.session = s.session AND p.n = s.prompt
                 WHERE s.session = ?1 AND s.value = ?2",
                p![session.as_str(), value],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .map_err(sql("read what named sources showed"))?;
        row.map(|(source, tool, call, prompt, at)| {
            Ok(Sourced {
                source,
                tool,
                call: call_from_sql(call),
                prompt: count_from_sql(prompt)?,
                at: ts_from_sql(at)?,
            })
        })
        .transpose()
    }

    /// Records the values an answer of `call` (which read the named `source`, named by
    /// `prompt`) showed, at most `limit` a session; a value already recorded keeps its first
    /// source. Losing this write only trusts less, so it is not synced.
    pub fn record_sourced(
        &mut self,
        session: &SessionId,
        values: &[Ident],
        source: &str,
        (tool, call): (&str, CallId),
        prompt: u64,
        limit: u64,
    ) -> Result<u64, StoreError> {
        self.conn
            .set_sync(false)
            .map_err(sql("relax the sync of a trust-only commit"))?;
        let result = (|| {
            let tx = self.write("record what a named source showed")?;
            let mut held = count(&tx, "intent_sourced", session)?;
            let mut added = 0;
            for v in values {
                if held >= limit {
                    break;
                }
                let n = tx
                    .execute(
                        "INSERT INTO intent_sourced (session, value, source, tool, call, prompt)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
                        p![
                            session.as_str(),
                            v.text,
                            source,
                            tool,
                            call_to_sql(call),
                            i64::try_from(prompt).unwrap_or(i64::MAX)
                        ],
                    )
                    .map_err(sql("record what a named source showed"))?;
                held += n;
                added += n;
            }
            tx.commit()
                .map_err(sql("commit what a named source showed"))?;
            Ok(added)
        })();
        self.conn
            .set_sync(true)
            .map_err(sql("restore synchronous=FULL"))?;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy::values::Kind;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        (dir, s)
    }

    fn prompt() -> IntentPrompt {
        IntentPrompt {
            at: Timestamp(1_772_719_320),
            sha256: "00".repeat(32),
            bytes: 10,
            via: IntentVia::Hook,
        }
    }

    fn id(t: &str) -> Ident {
        Ident {
            kind: Kind::Iban,
            text: t.into(),
        }
    }

    const LIMITS: IntentLimits = IntentLimits {
        prompts: 3,
        values: 4,
        sources: 2,
    };

    #[test]
    fn a_prompt_is_numbered_and_its_values_keep_the_first_prompt() {
        let (_d, mut s) = store();
        let a = SessionId::new("mcp-0123456789abcdef").unwrap();
        let b = SessionId::new("mcp-fedcba9876543210").unwrap();
        let one = s
            .add_intent(
                &a,
                &prompt(),
                &[id("X1")],
                &["host:dora.example".into()],
                LIMITS,
            )
            .unwrap();
        assert_eq!((one.prompt, one.values, one.sources), (1, 1, 1));
        let two = s
            .add_intent(&a, &prompt(), &[id("X1"), id("X2")], &[], LIMITS)
            .unwrap();
        assert_eq!((two.prompt, two.values), (2, 1));
        assert_eq!(s.intent_value(&a, "X1").unwrap().unwrap().0, 1);
        assert_eq!(s.intent_value(&a, "X2").unwrap().unwrap().0, 2);
        // Another conversation's prompt is not this one's.
        assert!(s.intent_value(&b, "X1").unwrap().is_none());
        assert!(s.intent_sources(&b).unwrap().is_empty());
        assert_eq!(
            s.intent_sources(&a).unwrap(),
            vec![("host:dora.example".to_string(), 1)]
        );
    }

    #[test]
    fn a_prompt_past_a_bound_adds_nothing() {
        let (_d, mut s) = store();
        let a = SessionId::new("s1").unwrap();
        s.add_intent(&a, &prompt(), &[id("A"), id("B"), id("C")], &[], LIMITS)
            .unwrap();
        let e = s
            .add_intent(&a, &prompt(), &[id("D"), id("E")], &[], LIMITS)
            .unwrap_err();
        assert!(matches!(e, StoreError::IntentFull { .. }), "{e}");
        assert!(s.intent_value(&a, "D").unwrap().is_none(), "nothing of it");
        let many: Vec<String> = (0..3).map(|i| format!("host:h{i}.example")).collect();
        assert!(s.add_intent(&a, &prompt(), &[], &many, LIMITS).is_err());
        s.add_intent(&a, &prompt(), &[], &[], LIMITS).unwrap();
        s.add_intent(&a, &prompt(), &[], &[], LIMITS).unwrap();
        assert!(
            s.add_intent(&a, &prompt(), &[], &[], LIMITS).is_err(),
            "three prompts at most"
        );
    }

    #[test]
    fn a_reset_forgets_the_person_s_words_with_the_taint() {
        let (_d, mut s) = store();
        let a = SessionId::new("s1").unwrap();
        s.raise_taint(&a, proto::DataClass::Internal, true, Timestamp(1))
            .unwrap();
        s.add_intent(
            &a,
            &prompt(),
            &[id("A")],
            &["file:notes.txt".into()],
            LIMITS,
        )
        .unwrap();
        s.record_sourced(
            &a,
            &[id("Z")],
            "file:notes.txt",
            ("read_file", CallId(3)),
            1,
            10,
        )
        .unwrap();
        assert_eq!(s.intent_sourced(&a, "Z").unwrap().unwrap().call, CallId(3));
        s.reset_session(&a, Timestamp(2)).unwrap();
        assert!(s.intent_value(&a, "A").unwrap().is_none());
        assert!(s.intent_sourced(&a, "Z").unwrap().is_none());
        assert!(s.intent_sources(&a).unwrap().is_empty());
        let again = s.add_intent(&a, &prompt(), &[], &[], LIMITS).unwrap();
        assert_eq!(again.prompt, 1, "numbered from 1 again");
    }

    /// A session the gate knows only from the person's prompts (no call yet) is reset like
    /// any other: its prompts cleared, and the reset answered, not `not found`.
    #[test]
    fn a_session_known_only_from_its_prompts_is_reset_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path()).unwrap();
        let a = SessionId::new("prompt-only").unwrap();
        s.add_intent(&a, &prompt(), &[id("A")], &[], LIMITS)
            .unwrap();
        assert!(s.session(&a).unwrap().is_none());
        let before = s.reset_session(&a, Timestamp(2)).unwrap();
        assert_eq!(before, Some(crate::store::StoredTaint::START));
        assert!(s.intent_value(&a, "A").unwrap().is_none());
        let row = s.session(&a).unwrap().unwrap();
        assert_eq!(
            (row.taint, row.results, row.resets),
            (crate::store::StoredTaint::START, 0, 1)
        );
        // A session of which nothing is known is still not found.
        let nobody = SessionId::new("nobody").unwrap();
        assert_eq!(s.reset_session(&nobody, Timestamp(3)).unwrap(), None);
    }

    #[test]
    fn sourced_values_are_bounded_and_keep_their_first_source() {
        let (_d, mut s) = store();
        let a = SessionId::new("s1").unwrap();
        s.add_intent(&a, &prompt(), &[], &["file:notes.txt".into()], LIMITS)
            .unwrap();
        let n = s
            .record_sourced(
                &a,
                &[id("A"), id("B"), id("C")],
                "file:notes.txt",
                ("read_file", CallId(1)),
                1,
                2,
            )
            .unwrap();
        assert_eq!(n, 2);
        assert!(
            s.intent_sourced(&a, "C").unwrap().is_none(),
            "past the bound"
        );
        s.record_sourced(
            &a,
            &[id("A")],
            "host:x.example",
            ("fetch", CallId(2)),
            1,
            10,
        )
        .unwrap();
        assert_eq!(
            s.intent_sourced(&a, "A").unwrap().unwrap().source,
            "file:notes.txt"
        );
    }
}
