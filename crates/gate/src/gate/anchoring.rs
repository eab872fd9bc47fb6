//! The gate's side of the audit anchor (docs/spec.md §6, [`crate::anchor`]): every audit
//! write goes through [`Gate::append_audit`], which signs a checkpoint once `[audit]
//! checkpoint_every` records wait for one; the expiry thread signs one when
//! `checkpoint_secs` have passed with records waiting; [`Gate::shutdown`] signs the last.
//!
//! A checkpoint is signed under the log's lock, over records already durable, and its
//! `checkpoint` record is appended before the lock is let go, so it always follows the last
//! record it covers. The witnesses are handed it on a thread of their own: a slow or failing
//! witness never holds up a call, and each failure is said on stderr and audited
//! (`witness_failed`).

use std::time::{Duration, Instant};

use proto::Timestamp;

use super::{Gate, lock};
use crate::anchor::Checkpoint;
use crate::audit::{AuditError, AuditLog, Event, Record};

impl Gate {
    /// Appends `events` (one write, one `fdatasync`), then signs a checkpoint if `[audit]
    /// checkpoint_every` records now wait for one. Every audit write of the gate comes here.
    pub(crate) fn append_audit(
        &self,
        events: impl IntoIterator<Item = (Timestamp, Event)>,
    ) -> Result<Vec<Record>, AuditError> {
        self.append_audit_synced(events, true)
    }

    /// [`Gate::append_audit`], not yet durable when `sync` is false
    /// ([`AuditLog::append_batch_synced`]).
    pub(crate) fn append_audit_synced(
        &self,
        events: impl IntoIterator<Item = (Timestamp, Event)>,
        sync: bool,
    ) -> Result<Vec<Record>, AuditError> {
        let Some(traced) = self.telemetry() else {
            return self.append_audit_locked(events, sync);
        };
        // Telemetry takes its labels from the records, once they are written (spec §8).
        let events: Vec<(Timestamp, Event)> = events.into_iter().collect();
        let seen: Vec<(Timestamp, Event)> = events
            .iter()
            .filter(|(_, e)| e.names_a_call())
            .cloned()
            .collect();
        let records = self.append_audit_locked(events, sync)?;
        traced.observe(&seen);
        Ok(records)
    }

    fn append_audit_locked(
        &self,
        events: impl IntoIterator<Item = (Timestamp, Event)>,
        sync: bool,
    ) -> Result<Vec<Record>, AuditError> {
        let mut log = lock(&self.audit);
        let records = log.append_batch_synced(events, sync)?;
        if log.pending() >= self.anchor.every {
            self.sign(&mut log);
        }
        Ok(records)
    }

    /// The expiry thread's tick: a checkpoint when `[audit] checkpoint_secs` have passed
    /// since the last and records came meanwhile.
    pub(super) fn checkpoint_if_due(&self) {
        if lock(&self.last_checkpoint).elapsed() < self.anchor.period {
            return;
        }
        let mut log = lock(&self.audit);
        if log.pending() > 0 {
            self.sign(&mut log);
        } else {
            *lock(&self.last_checkpoint) = Instant::now();
        }
    }

    /// Signs a checkpoint now, unless the log's last record is already one (or the log is
    /// empty); returns it.
    pub fn checkpoint_now(&self) -> Option<Checkpoint> {
        let mut log = lock(&self.audit);
        if log.unanchored() {
            self.sign(&mut log)
        } else {
            None
        }
    }

    /// What a gate does when it stops: a last checkpoint of everything (if anything is new
    /// since the last one), then waits up to `wait` for the witnesses to have taken every
    /// checkpoint queued. Returns the last checkpoint it signed.
    pub fn shutdown(&self, wait: Duration) -> Option<Checkpoint> {
        let cp = self.checkpoint_now();
        if let Some(queue) = self.witness.get()
            && !queue.flush(wait)
        {
            eprintln!(
                "boxmaker: the audit witnesses had not taken every checkpoint after {} s; the \
                 gate stops anyway",
                wait.as_secs()
            );
        }
        cp
    }

    /// The public half of the key that signs this gate's checkpoints.
    pub fn audit_public_key(&self) -> &crate::anchor::PublicKey {
        self.anchor.key.public()
    }

    /// Signs the head of `log` (locked), appends its `checkpoint` record and queues it for
    /// the witnesses. Records written without an `fdatasync` are made durable first, and
    /// when that fails nothing is signed: a checkpoint covers durable records only, so a
    /// crash can never leave the log shorter than a checkpoint (a torn last line is always
    /// past the last one). A failure to append the record is said on stderr: the checkpoint
    /// covers durable records, so the witnesses still get it.
    ///
    /// The checkpoint extends the one before it by construction: the tree it signs is the
    /// one the log was shown to extend every known checkpoint with at open, grown only by
    /// this gate's appends since (docs/spec.md §6, "The writer").
    fn sign(&self, log: &mut AuditLog) -> Option<Checkpoint> {
        let head = log.head();
        if head.tree_size == 0 {
            return None;
        }
        if let Err(e) = log.sync() {
            eprintln!(
                "boxmaker: no checkpoint of the audit log signed: its last records could not \
                 be made durable: {e}"
            );
            return None;
        }
        let time = self.now();
        let cp = self.anchor.key.sign(head, time);
        log.signed(&cp);
        if let Err(e) = log.append(time, Event::checkpoint(&cp)) {
            eprintln!(
                "boxmaker: could not record the checkpoint of {} audit records in the log: {e}",
                cp.tree_size
            );
        }
        *lock(&self.last_checkpoint) = Instant::now();
        if let Some(queue) = self.witness.get() {
            queue.send(cp.clone());
        }
        Some(cp)
    }

    /// A witness did not take `cp`: said on stderr and audited, never fatal.
    pub(super) fn witness_failed(&self, cp: &Checkpoint, witness: &str, why: &str) {
        eprintln!(
            "boxmaker: the audit witness {witness} did not take the checkpoint of {} records: \
             {why}",
            cp.tree_size
        );
        let event = Event::WitnessFailed {
            tree_size: cp.tree_size,
            witness: witness.to_string(),
            detail: why.to_string(),
        };
        if let Err(e) = self.append_audit([(self.now(), event)]) {
            eprintln!("boxmaker: could not audit that failure either: {e}");
        }
    }
}
