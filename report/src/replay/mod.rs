//! `cdp-relay export`: a run written back as a test that replays it — a Playwright Test file
//! (`replay.spec.ts`) with the agent's navigations, clicks (double clicks, a hover a menu
//! needed), typing, key presses, options chosen, files chosen, the pages it opened, and the
//! navigations its clicks caused.
//!
//! - **Targets from the run.** Each step uses the locator the relay's page agent recorded
//!   (`payload.target`, read as evidence's own `StoredLocator`: a test id, role and name, label,
//!   placeholder, text or CSS path, `exact` when the whole name picks the element out, a
//!   `contentFrame()` per frame level).
//! - **A replay never passes green while it skipped or changed a step.** A step that cannot be
//!   replayed (no locator, a click the agent did not see, a navigation that is not to a web page,
//!   a selector on a generated-looking id) is a gap: the test fails at that step saying why, or,
//!   exported with `allow_gaps`, is marked `fixme` there.
//! - **No literal typed text, and inputs in their own namespace.** The run never held it: each
//!   typing step reads its text from `CDP_RELAY_VAR_<NAME>` — NAME the secret's name when the
//!   text was a registered secret, else `TYPED_<n>` — immediately before the step, and fails
//!   there, naming the variable, when it is not set; a file choice reads the paths from
//!   `CDP_RELAY_VAR_FILE_<n>`. No other variable is read as an input, so a name a page got an
//!   agent to register (`GITHUB_TOKEN`, `NODE_OPTIONS`) cannot make the spec type the runner's
//!   own environment into the page. Each origin the run visited is a variable too (`BASE_URL`,
//!   …) with the recorded origin as its default. A header comment lists every variable with
//!   what the run knows of it (its length and input type).
//! - **Only web pages are gone to.** `http(s)`, relative and `about:blank` navigations; a
//!   `javascript:`, `data:` or any other URL is a gap saying why.
//! - **The run's failures at their step.** Failed requests and console errors become comments
//!   where they happened (`// the original run saw: POST /api/login → 500`).
//! - **Safe and deterministic.** Every journal string goes into a single-quoted literal or a
//!   `//` comment through [`js`], so no quote, line break or `*/` in a name can leave it; the
//!   same run exports to the same bytes (no clock, no hash order).
//! - **Through a relay.** With `CDP_RELAY_ENDPOINT` set, the spec connects to that endpoint over
//!   CDP instead of launching a browser, so a relay records the replay as a run of its own, and
//!   registers each named input as that relay's secret before typing it.
//! - **A run still being recorded** is exported as far as it is written, and the spec's header
//!   says so ([`ExportFigures::still_recording`]).

mod guard;
mod js;
mod plan;
mod playwright;
mod read;

#[cfg(test)]
mod tests;

use crate::text::line;
use crate::ReportError;
use cdp_evidence::{JournalLine, RunStatus, Word};
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

/// How to export.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportOptions {
    /// What to write.
    pub format: Format,
    /// A step that cannot be replayed marks the test `fixme` there (it stops, reported as
    /// skipped) instead of failing it. By default, false: the test fails at that step.
    pub allow_gaps: bool,
}

impl ExportOptions {
    /// The default options with `allow_gaps` set as given.
    pub fn allowing_gaps(allow_gaps: bool) -> ExportOptions {
        ExportOptions {
            allow_gaps,
            ..ExportOptions::default()
        }
    }
}

/// Figures of one export.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportFigures {
    /// Steps of the run (navigations, clicks, typing, key presses, pages opened and closed, and
    /// other actions), replayable or not.
    pub steps: usize,
    /// Steps that cannot be replayed (the test fails at the first, or with `allow_gaps` is
    /// `fixme` there).
    pub not_replayable: usize,
    /// The number of the first step that cannot be replayed.
    pub first_gap: Option<usize>,
    /// The run was still being recorded (its manifest says `running`): records written after
    /// the export read the journal are not in it.
    pub still_recording: bool,
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

/// The Playwright locator expression the export writes for `locator` on the test's `page`
/// (`page.locator('#outer').contentFrame().getByRole('button', { name: 'Pay', exact: true })`),
/// or `None` for one that names no replayable locator. The end-to-end tests resolve it with
/// Playwright itself.
pub fn playwright_locator(locator: &cdp_evidence::StoredLocator) -> Option<String> {
    playwright::locator_expr("page", locator)
}

/// Exports the run in `run_dir` as a test in `format`, with the default options.
pub fn export(run_dir: &Path, format: Format) -> Result<Export, ReportError> {
    export_with(
        run_dir,
        ExportOptions {
            format,
            ..ExportOptions::default()
        },
    )
}

/// Exports the run in `run_dir` as `options` say. Reads the run only (through [`RunDir`]:
/// nothing below it is followed through a symlink); writes nothing.
pub fn export_with(run_dir: &Path, options: ExportOptions) -> Result<Export, ReportError> {
    let Format::Playwright = options.format;
    let run = crate::open::open(run_dir)?;
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
    let still_recording = manifest
        .as_ref()
        .and_then(|m| m.status_word())
        .is_some_and(|w| w == Word::Known(RunStatus::Running));
    let header = playwright::Header {
        run_id: &line(&run_id, 160),
        session: session.as_deref(),
        still_recording,
        allow_gaps: options.allow_gaps,
    };
    let (text, counts) = playwright::render(&header, &events);
    Ok(Export {
        text,
        figures: ExportFigures {
            steps: counts.steps,
            not_replayable: counts.not_replayable,
            first_gap: counts.first_gap,
            still_recording,
            variables: counts.variables,
            records_unreadable: events.unreadable,
            records_left_out: events.left_out,
        },
    })
}
