//! The per-run artifact budget, correct across processes.
//!
//! `budget.json` holds `usedBytes`, `artifacts` (stored count, also the next file number),
//! `refusedArtifacts` and `truncated`. It is only read and rewritten (atomically) while holding
//! the run lock, so concurrent producers see one consistent counter, and the `truncated` flag
//! flips exactly once — which is what guarantees exactly one `evidenceTruncated` marker. If the
//! file is missing or unreadable (older producer, crash, manual edit) it is rebuilt from the
//! artifacts directory and the journal. This module never writes artifacts or records itself.

use crate::error::Error;
use crate::paths::{read_small, write_atomic, ARTIFACTS_DIR, BUDGET_FILE};
use crate::reader::parse_journal;
use serde::Serialize;
use serde_json::Value;
use std::fs;
use std::path::Path;

const BUDGET_LIMIT: u64 = 4096;

/// Accounting state of one run's artifacts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BudgetState {
    pub(crate) used_bytes: u64,
    pub(crate) artifacts: u64,
    pub(crate) refused_artifacts: u64,
    pub(crate) truncated: bool,
}

impl BudgetState {
    fn parse(bytes: &[u8]) -> Option<BudgetState> {
        let v: Value = serde_json::from_slice(bytes).ok()?;
        Some(BudgetState {
            used_bytes: v.get("usedBytes")?.as_u64()?,
            artifacts: v.get("artifacts")?.as_u64()?,
            refused_artifacts: v.get("refusedArtifacts")?.as_u64()?,
            truncated: v.get("truncated")?.as_bool()?,
        })
    }

    /// Loads the state; the caller holds the run lock. `journal` lazily supplies the journal
    /// bytes, needed only when the state must be rebuilt.
    pub(crate) fn load(
        run_dir: &Path,
        journal: impl FnOnce() -> Result<Vec<u8>, Error>,
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
    fn rebuild(run_dir: &Path, journal: &[u8]) -> Result<BudgetState, Error> {
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
        let read = parse_journal(journal);
        state.truncated = read
            .records
            .iter()
            .any(|r| r.marker() == Some("evidenceTruncated"));
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
        let none = || -> Result<Vec<u8>, Error> { Ok(Vec::new()) };
        assert_eq!(
            BudgetState::load(dir.path(), none).unwrap(),
            BudgetState::default()
        );
        let s = BudgetState {
            used_bytes: 10,
            artifacts: 2,
            refused_artifacts: 1,
            truncated: true,
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
        let rebuilt = BudgetState::load(dir.path(), || Ok(journal.to_vec())).unwrap();
        assert_eq!(
            rebuilt,
            BudgetState {
                used_bytes: 12,
                artifacts: 2,
                refused_artifacts: 0,
                truncated: true
            }
        );
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
