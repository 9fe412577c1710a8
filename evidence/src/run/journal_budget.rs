//! Appending under the journal budget (`journalBudgetBytes`, fixed in the manifest). Far below
//! it a batch is written as is, reading no shared state. Past it only metadata continues —
//! markers and lifecycle records, the latter within [`METADATA_ALLOWANCE`] — the records
//! refused are counted by kind, and the journal holds exactly one `journalTruncated` marker,
//! however many processes hit the cap (the flag lives in `budget.json`, flipped under the lock).

use super::RunInner;
use crate::budget::BudgetState;
use crate::error::Error;
use crate::journal::Locked;
use crate::record::{MarkerKind, Record, RecordKind};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

/// Past the journal budget, lifecycle records and producers' `evidenceDropped` markers are still
/// appended until the journal is this much over it; the format's own markers always are.
pub const METADATA_ALLOWANCE: u64 = 1024 * 1024;

/// Refused-record counts are merged into `budget.json` at most this often (and at finalize):
/// past the cap, a busy producer would otherwise rewrite it for every batch.
const REFUSED_FLUSH: Duration = Duration::from_secs(1);

/// Refused-record counts waiting to be merged into `budget.json`.
#[derive(Debug, Default)]
pub(crate) struct Refused {
    counts: BTreeMap<String, u64>,
    flushed: Option<Instant>,
}

impl Refused {
    fn merge_into(&mut self, state: &mut BudgetState) -> bool {
        if self.counts.is_empty() {
            return false;
        }
        for (k, n) in std::mem::take(&mut self.counts) {
            *state.refused_records.entry(k).or_insert(0) += n;
        }
        self.flushed = Some(Instant::now());
        true
    }
}

/// How a record fares past the journal budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// The format's own markers: always appended.
    Own,
    /// Lifecycle records and producers' `evidenceDropped`: within [`METADATA_ALLOWANCE`].
    Metadata,
    /// Everything else: refused once the journal is truncated.
    Data,
}

impl Class {
    fn of(record: &Record) -> Class {
        match record.kind() {
            RecordKind::Marker(m) => match m.kind() {
                MarkerKind::EvidenceDropped { .. } => Class::Metadata,
                _ => Class::Own,
            },
            RecordKind::Lifecycle(_) => Class::Metadata,
            _ => Class::Data,
        }
    }
}

/// The word a refused record is counted under: its kind, or `other` for producer-defined kinds.
fn refused_kind(record: &Record) -> &'static str {
    record.kind().kind().map_or("other", |k| k.as_str())
}

impl RunInner {
    /// Writes `records` in one write, applying the journal budget. Returns how many were
    /// appended.
    pub(super) fn write_batch(
        &self,
        locked: &Locked<'_>,
        records: &[Record],
    ) -> Result<usize, Error> {
        let mut lines = Vec::with_capacity(records.len() * 512);
        let mut ends = Vec::with_capacity(records.len());
        for record in records {
            self.push_line(&mut lines, record)?;
            ends.push(lines.len());
        }
        let len = locked.len()?;
        let budget = self.journal_budget;
        // Far below the cap (the common case): no shared state to read.
        let room = (lines.len() + self.config.max_record_bytes) as u64;
        if !self.journal_truncated.load(Ordering::Relaxed) && len.saturating_add(room) <= budget {
            locked.write_lines(&lines)?;
            return Ok(records.len());
        }
        let mut state = BudgetState::load(&self.dir, || locked.facts())?;
        let mut out = Vec::with_capacity(lines.len());
        let mut used = len;
        let mut appended = 0;
        let mut refused: BTreeMap<&'static str, u64> = BTreeMap::new();
        let mut truncated_now = false;
        let mut start = 0;
        for (record, &end) in records.iter().zip(&ends) {
            let line = &lines[start..end];
            start = end;
            let n = line.len() as u64;
            // This process's own memory counts too: budget.json may not have been saved.
            let truncated = state.journal_truncated
                || truncated_now
                || self.journal_truncated.load(Ordering::Relaxed);
            let accept = match Class::of(record) {
                Class::Own => true,
                Class::Metadata => used + n <= budget.saturating_add(METADATA_ALLOWANCE),
                Class::Data => !truncated && used + n <= budget,
            };
            if accept {
                out.extend_from_slice(line);
                used += n;
                appended += 1;
                continue;
            }
            if !truncated {
                // The first refusal: exactly one marker, where it happened.
                truncated_now = true;
                let marker = self.line(&self.marker(MarkerKind::JournalTruncated {
                    budget_bytes: budget,
                    used_bytes: used,
                }))?;
                used += marker.len() as u64;
                out.extend_from_slice(&marker);
            }
            *refused.entry(refused_kind(record)).or_insert(0) += 1;
        }
        if !out.is_empty() {
            locked.write_lines(&out)?;
        }
        let mut pending = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        for (k, n) in refused {
            *pending.counts.entry(k.to_owned()).or_insert(0) += n;
        }
        let due = pending.flushed.is_none_or(|t| t.elapsed() >= REFUSED_FLUSH);
        // The records are in the journal: a budget.json that cannot be saved now (a full disk)
        // costs the counts, not the records (a rebuild sets the flag again from the marker).
        if truncated_now {
            state.journal_truncated = true;
            self.journal_truncated.store(true, Ordering::Relaxed);
            pending.merge_into(&mut state);
            let _ = state.save(&self.dir);
        } else if due && pending.merge_into(&mut state) {
            let _ = state.save(&self.dir);
        }
        if state.journal_truncated {
            self.journal_truncated.store(true, Ordering::Relaxed);
        }
        Ok(appended)
    }

    /// Merges refused-record counts not yet in `budget.json` (the caller holds the lock).
    pub(super) fn flush_refused(&self, state: &mut BudgetState) -> Result<(), Error> {
        let mut pending = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.merge_into(state) {
            state.save(&self.dir)?;
        }
        Ok(())
    }
}

impl Drop for RunInner {
    /// Refused-record counts not yet merged (the last second's) go to `budget.json` when the
    /// last handle on the run goes away. Best effort: a crash loses at most that second.
    fn drop(&mut self) {
        let pending = self
            .refused
            .get_mut()
            .map(|r| !r.counts.is_empty())
            .unwrap_or(false);
        if !pending {
            return;
        }
        let Ok(locked) = self.journal.lock() else {
            return;
        };
        if let Ok(mut state) = BudgetState::load(&self.dir, || locked.facts()) {
            let _ = self.flush_refused(&mut state);
        }
    }
}
