//! The one way the report and the exports open a run.

use crate::error::ReportError;
use cdp_evidence::RunDir;
use std::path::Path;

/// Opens the run in `run_dir` (nothing below it followed through a symlink), refusing a
/// directory that holds neither a manifest nor a journal: what the report and the exports read.
pub(crate) fn open(run_dir: &Path) -> Result<RunDir, ReportError> {
    let run = RunDir::open(run_dir).map_err(|source| ReportError::Open {
        path: run_dir.to_path_buf(),
        source,
    })?;
    let has = |name: &str| std::fs::symlink_metadata(run_dir.join(name)).is_ok();
    if !has(cdp_evidence::MANIFEST_FILE) && !has(cdp_evidence::JOURNAL_FILE) {
        return Err(ReportError::NotARun {
            path: run_dir.to_path_buf(),
        });
    }
    Ok(run)
}
