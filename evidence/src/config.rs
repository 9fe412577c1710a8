//! Where evidence goes and how much of it to keep: the store's configuration and its defaults.

use std::path::PathBuf;

/// Default evidence root, relative to the working directory.
pub const DEFAULT_ROOT: &str = "./cdp-evidence";
/// Default per-run artifact budget: 100 MiB.
pub const DEFAULT_ARTIFACT_BUDGET_BYTES: u64 = 100 * 1024 * 1024;
/// Default number of finalized runs retention keeps.
pub const DEFAULT_KEEP_FINALIZED_RUNS: usize = 20;
/// Default bound on one journal line: 64 KiB.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 64 * 1024;
/// Smallest accepted `max_record_bytes`: every envelope fits in it.
pub const MIN_MAX_RECORD_BYTES: usize = 4096;
/// Default cap on a run's journal: 32 MiB (about 70,000 typical records).
pub const DEFAULT_JOURNAL_BUDGET_BYTES: u64 = 32 * 1024 * 1024;
/// Smallest accepted journal budget.
pub const MIN_JOURNAL_BUDGET_BYTES: u64 = 64 * 1024;

/// Where evidence goes and how much of it to keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvidenceConfig {
    /// The evidence root. By default, `./cdp-evidence` (the CLI resolves `--evidence-dir` and
    /// `CDP_RELAY_EVIDENCE_DIR`).
    pub root: PathBuf,
    /// When false nothing is created on disk and every write is a no-op. By default, true.
    pub enabled: bool,
    /// Artifact bytes a new run may store; fixed in its manifest at creation. By default, 100 MiB.
    pub artifact_budget_bytes: u64,
    /// Finalized runs kept by [`Store::prune`]. By default, 20.
    pub keep_finalized_runs: usize,
    /// Largest journal line; bigger records get fields cut. By default, 64 KiB; at least 4 KiB.
    pub max_record_bytes: usize,
    /// Journal bytes a new run may hold; fixed in its manifest at creation. Past it only
    /// markers and lifecycle records are appended. By default, 32 MiB; at least 64 KiB.
    pub journal_budget_bytes: u64,
}

impl Default for EvidenceConfig {
    fn default() -> Self {
        EvidenceConfig {
            root: PathBuf::from(DEFAULT_ROOT),
            enabled: true,
            artifact_budget_bytes: DEFAULT_ARTIFACT_BUDGET_BYTES,
            keep_finalized_runs: DEFAULT_KEEP_FINALIZED_RUNS,
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            journal_budget_bytes: DEFAULT_JOURNAL_BUDGET_BYTES,
        }
    }
}

impl EvidenceConfig {
    /// Defaults with another root.
    pub fn at(root: impl Into<PathBuf>) -> EvidenceConfig {
        EvidenceConfig {
            root: root.into(),
            ..EvidenceConfig::default()
        }
    }

    /// A configuration with evidence switched off.
    pub fn disabled() -> EvidenceConfig {
        EvidenceConfig {
            enabled: false,
            ..EvidenceConfig::default()
        }
    }
}
