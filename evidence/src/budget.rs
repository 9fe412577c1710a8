//! The per-run budgets, correct across processes.
//!
//! `budget.json` holds `usedBytes`, `artifacts` (stored count, also the next file number),
//! `refusedArtifacts` and `truncated` for the artifact budget, and `journalTruncated` and
//! `refusedRecords` (by kind) for the journal budget (the journal's size is the file's own). It
//! is only read and rewritten (atomically) while holding the run lock, so concurrent producers
//! see one consistent counter, and each flag flips exactly once — which is what guarantees
//! exactly one `evidenceTruncated` and one `journalTruncated` marker. If the file is missing or
//! unreadable (older producer, crash, manual edit) it is rebuilt from the artifacts directory
//! and the journal's markers (refused-record counts cannot be rebuilt: they start over). This
//! module never writes artifacts or records itself.

use crate::error::Error;
use crate::paths::{read_small, write_atomic, ARTIFACTS_DIR, BUDGET_FILE};
use crate::reader::{scan_journal, JournalLine};
use crate::vocab::MarkerName;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, BufRead};
use std::path::Path;

const BUDGET_LIMIT: u64 = 4096;

/// What one pass over the journal says (for counting at finalize and rebuilding the budget).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct JournalFacts {
    /// Complete records.
    pub(crate) records: u64,
    /// A `runFinalized` marker is there.
    pub(crate) finalized: bool,
    /// An `evidenceTruncated` marker is there.
    pub(crate) artifacts_truncated: bool,
    /// A `journalTruncated` marker is there.
    pub(crate) journal_truncated: bool,
}

impl JournalFacts {
    /// One streaming pass: memory bounded by a line, whatever the journal's size.
    pub(crate) fn scan(input: impl BufRead) -> io::Result<JournalFacts> {
        let mut f = JournalFacts::default();
        scan_journal(input, |line| {
            if let JournalLine::Record(r) = line {
                f.records += 1;
                match r.marker().and_then(|m| m.known()) {
                    Some(MarkerName::RunFinalized) => f.finalized = true,
                    Some(MarkerName::EvidenceTruncated) => f.artifacts_truncated = true,
                    Some(MarkerName::JournalTruncated) => f.journal_truncated = true,
                    _ => {}
                }
            }
        })?;
        Ok(f)
    }
}

/// Accounting state of one run's budgets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BudgetState {
    pub(crate) used_bytes: u64,
    pub(crate) artifacts: u64,
    pub(crate) refused_artifacts: u64,
    pub(crate) truncated: bool,
    pub(crate) journal_truncated: bool,
    pub(crate) refused_records: BTreeMap<String, u64>,
}

impl BudgetState {
    fn parse(bytes: &[u8]) -> Option<BudgetState> {
        let v: Value = serde_json::from_slice(bytes).ok()?;
        Some(BudgetState {
            used_bytes: v.get("usedBytes")?.as_u64()?,
            artifacts: v.get("artifacts")?.as_u64()?,
            refused_artifacts: v.get("refusedArtifacts")?.as_u64()?,
            truncated: v.get("truncated")?.as_bool()?,
            // Written by producers that knew the journal budget; absent before.
            journal_truncated: v
                .get("journalTruncated")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            refused_records: v
                .get("refusedRecords")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, n)| Some((k.clone(), n.as_u64()?)))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// Loads the state; the caller holds the run lock. `journal` lazily scans the journal,
    /// needed only when the state must be rebuilt.
    pub(crate) fn load(
        run_dir: &Path,
        journal: impl FnOnce() -> Result<JournalFacts, Error>,
    ) -> Result<BudgetState, Error> {
        let path = run_dir.join(BUDGET_FILE);
        if let Some(state) = read_small(&path, BUDGET_LIMIT)
            .ok()
            .flatten()
            .and_then(|b| BudgetState::parse(&b))
        {
            return Ok(state);
        }
        Self::rebuild(run_dir, &journal()?)
    }

    /// Recomputes from the artifacts directory and the journal's markers.
    fn rebuild(run_dir: &Path, journal: &JournalFacts) -> Result<BudgetState, Error> {
        let mut state = BudgetState::default();
        let dir = run_dir.join(ARTIFACTS_DIR);
        if let Ok(entries) = fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let Ok(meta) = entry.metadata() else { continue };
                if meta.is_file() && !entry.file_name().to_string_lossy().starts_with('.') {
                    state.used_bytes += meta.len();
                    state.artifacts += 1;
                }
            }
        }
        state.truncated = journal.artifacts_truncated;
        state.journal_truncated = journal.journal_truncated;
        Ok(state)
    }

    pub(crate) fn save(&self, run_dir: &Path) -> Result<(), Error> {
        let mut bytes = serde_json::to_vec(self).map_err(Error::Serialize)?;
        bytes.push(b'\n');
        write_atomic(&run_dir.join(BUDGET_FILE), &bytes)
    }

    /// Whether `len` more bytes fit in `budget`.
    pub(crate) fn fits(&self, len: u64, budget: u64) -> bool {
        self.used_bytes
            .checked_add(len)
            .is_some_and(|total| total <= budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_loads_and_rebuilds() {
        let dir = tempfile::tempdir().unwrap();
        let none = || -> Result<JournalFacts, Error> { Ok(JournalFacts::default()) };
        assert_eq!(
            BudgetState::load(dir.path(), none).unwrap(),
            BudgetState::default()
        );
        let s = BudgetState {
            used_bytes: 10,
            artifacts: 2,
            refused_artifacts: 1,
            truncated: true,
            journal_truncated: true,
            refused_records: [("console".to_owned(), 3)].into(),
        };
        s.save(dir.path()).unwrap();
        assert_eq!(BudgetState::load(dir.path(), none).unwrap(), s);

        // Lost state is rebuilt from the artifacts and the journal's marker.
        fs::write(dir.path().join(BUDGET_FILE), b"{garbage").unwrap();
        fs::create_dir(dir.path().join(ARTIFACTS_DIR)).unwrap();
        fs::write(dir.path().join("artifacts/000001-a.png"), [0u8; 7]).unwrap();
        fs::write(dir.path().join("artifacts/000002-b.png"), [0u8; 5]).unwrap();
        let journal = br#"{"actionId":"1","kind":"marker","payload":{"marker":"evidenceTruncated"}}
"#;
        let facts = || JournalFacts::scan(&journal[..]).map_err(|e| Error::io("read", "j", e));
        let rebuilt = BudgetState::load(dir.path(), facts).unwrap();
        assert_eq!(
            rebuilt,
            BudgetState {
                used_bytes: 12,
                artifacts: 2,
                refused_artifacts: 0,
                truncated: true,
                journal_truncated: false,
                refused_records: BTreeMap::new(),
            }
        );
        // A budget.json written before the journal budget existed still reads.
        fs::write(
            dir.path().join(BUDGET_FILE),
            br#"{"usedBytes":1,"artifacts":1,"refusedArtifacts":0,"truncated":false}"#,
        )
        .unwrap();
        let old = BudgetState::load(dir.path(), none).unwrap();
        assert_eq!((old.used_bytes, old.journal_truncated), (1, false));
    }

    #[test]
    fn fits_is_inclusive_and_overflow_safe() {
        let s = BudgetState {
            used_bytes: 90,
            ..BudgetState::default()
        };
        assert!(s.fits(10, 100));
        assert!(!s.fits(11, 100));
        assert!(!s.fits(u64::MAX, u64::MAX));
    }
}
