//! `cdp-relay export`: a run written back as a test that replays it — a Playwright Test file
//! (`replay.spec.ts`) with the agent's navigations, clicks, typing and key presses, the pages it
//! opened, and the navigations its clicks caused.
//!
//! - **Targets from the run.** Clicks and typing use the locator the relay's page agent recorded
//!   (`payload.target`: a test id, role and name, label, placeholder or CSS path, maybe inside a
//!   frame). A step without one (a run recorded before locators, a click at coordinates, a step
//!   marked not replayable because its name echoed typed text) stays as a commented line that
//!   says why.
//! - **No literal typed text.** The run never held it: each typing step reads its text from an
//!   environment variable — the secret's name when the text was a registered secret, else
//!   `TYPED_<n>` — immediately before the step, and fails there, naming the variable, when it
//!   is not set. Each origin the run visited is a variable too (`BASE_URL`, …) with the
//!   recorded origin as its default. A header comment lists every variable with what the run
//!   knows of it (its length and input type).
//! - **The run's failures at their step.** Failed requests and console errors become comments
//!   where they happened (`// the original run saw: POST /api/login → 500`).
//! - **Safe and deterministic.** Every journal string goes into a single-quoted literal or a
//!   `//` comment through [`js`], so no quote, line break or `*/` in a name can leave it; the
//!   same run exports to the same bytes (no clock, no hash order).
//! - **Through a relay.** With `CDP_RELAY_ENDPOINT` set, the spec connects to that endpoint over
//!   CDP instead of launching a browser, so a relay records the replay as a run of its own.

mod js;
mod playwright;
mod read;

#[cfg(test)]
mod tests;

use crate::text::line;
use crate::ReportError;
use cdp_evidence::{JournalLine, RunDir};
use std::path::Path;

/// The file name the export has as an MCP resource, in report.html's link and by default.
pub const SPEC_FILE: &str = "replay.spec.ts";

/// The formats `export` writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// A Playwright Test file (TypeScript).
    #[default]
    Playwright,
}

/// Figures of one export.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportFigures {
    /// Steps of the run (navigations, clicks, typing, key presses, pages opened and closed, and
    /// other actions), replayable or not.
    pub steps: usize,
    /// Steps written as comments that say why they cannot be replayed.
    pub not_replayable: usize,
    /// Environment variables the spec reads (origins and typed inputs).
    pub variables: usize,
    /// Journal lines that are not records (a torn final line is not counted).
    pub records_unreadable: usize,
    /// Records past the export's limit, not exported.
    pub records_left_out: usize,
}

/// One export, in memory.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Export {
    /// The whole file.
    pub text: String,
    /// What went into it.
    pub figures: ExportFigures,
}

/// Exports the run in `run_dir` as a test in `format`. Reads the run only (through
/// [`RunDir`]: nothing below it is followed through a symlink); writes nothing.
pub fn export(run_dir: &Path, format: Format) -> Result<Export, ReportError> {
    let Format::Playwright = format;
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
    // A manifest that cannot be read leaves the journal to read by its default name.
    let manifest = run.manifest().ok().flatten();
    let mut events = read::Events::default();
    let scanned = run.scan_journal(manifest.as_ref(), None, |l| match l {
        JournalLine::Record(r) => events.push(&r),
        JournalLine::Corrupt(_) => events.unreadable += 1,
        _ => {}
    });
    if let Err(source) = scanned {
        return Err(ReportError::Open {
            path: run_dir.to_path_buf(),
            source,
        });
    }
    events.sort();
    let dir_name = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let run_id = manifest
        .as_ref()
        .and_then(|m| m.run_id.clone())
        .unwrap_or(dir_name);
    let session = manifest.as_ref().and_then(|m| m.session_id.clone());
    let header = playwright::Header {
        run_id: &line(&run_id, 160),
        session: session.as_deref(),
    };
    let (text, counts) = playwright::render(&header, &events);
    Ok(Export {
        text,
        figures: ExportFigures {
            steps: counts.steps,
            not_replayable: counts.not_replayable,
            variables: counts.variables,
            records_unreadable: events.unreadable,
            records_left_out: events.left_out,
        },
    })
}
