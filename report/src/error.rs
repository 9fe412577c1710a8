//! The crate's one error type. Problems *inside* a run (a bad manifest, unreadable lines, a
//! refused artifact) are not errors: they are notes in the report. Errors are about the run
//! directory as a whole, and about writing the outputs.

use std::path::PathBuf;

/// Why a report could not be rendered or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The run directory could not be opened.
    #[error("cannot open run directory {}: {source}", path.display())]
    Open {
        /// The directory given.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: cdp_evidence::Error,
    },
    /// The directory has neither a manifest nor a journal.
    #[error("{} is not an evidence run (no manifest.json, no actions.jsonl)", path.display())]
    NotARun {
        /// The directory given.
        path: PathBuf,
    },
    /// An output file could not be written.
    #[error("cannot write {file}: {source}")]
    Write {
        /// `report.html` or `summary.md`.
        file: &'static str,
        /// What went wrong.
        #[source]
        source: cdp_evidence::Error,
    },
    /// An export (a trace archive) could not be written.
    #[error("cannot write {what}: {source}")]
    Export {
        /// What was being written.
        what: &'static str,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
}
