//! A run read whole for the exports (a Playwright trace, a HAR): the same step model as the
//! report ([`crate::timeline`]), with the export's caps ([`Caps::whole`]) instead of the
//! report's, and the run's name and times from its manifest.

use crate::model;
use crate::text::line;
use crate::timeline::{Caps, Timeline, MAX_WORD};
use crate::ReportError;
use cdp_evidence::{RunDir, RunStatus, Word};
use std::path::Path;

/// The run, read.
pub(crate) struct Whole {
    pub run: RunDir,
    /// The manifest's run id, else the directory's name (cleaned).
    pub run_id: String,
    pub timeline: Timeline,
    /// Journal lines that are not records (a torn final line is not counted).
    pub unreadable: usize,
    /// The manifest says `running`: what is written after this read is not in the export.
    pub still_recording: bool,
}

/// Opens the run in `run_dir` (confined, as the report does) and reads it whole.
pub(crate) fn load(run_dir: &Path) -> Result<Whole, ReportError> {
    let run = crate::open::open(run_dir)?;
    // A manifest that cannot be read leaves the journal to read by its default name.
    let manifest = run.manifest().ok().flatten();
    let (timeline, journal) = model::read_journal(&run, manifest.as_ref(), Caps::whole());
    let dir_name = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let run_id = manifest
        .as_ref()
        .and_then(|m| m.run_id.as_deref())
        .map_or_else(
            || line(&dir_name, MAX_WORD * 2),
            |id| line(id, MAX_WORD * 2),
        );
    let still_recording = manifest
        .as_ref()
        .and_then(|m| m.status_word())
        .is_some_and(|w| w == Word::Known(RunStatus::Running));
    Ok(Whole {
        run,
        run_id,
        timeline,
        unreadable: journal.corrupt,
        still_recording,
    })
}
