//! cdp-report: renders an evidence run directory as `summary.md` (plain text, for terminals and
//! MCP tools) and `report.html` — one self-contained, script-free filmstrip of what the agent did
//! and what the browser answered, to attach to a bug report.
//!
//! - **What the agent did, not protocol plumbing.** Navigations, clicks, typing (as
//!   `typed 12 chars (password)`, never the text), key presses, screenshots, pages opened and
//!   closed, and other producers' records are steps; framework evaluations, DOM queries and
//!   attach/activate calls fold into the step they served ("+38 evaluations"). Failed requests
//!   and console errors sit under the step that was current when they happened, and a jump list
//!   at the top links to each.
//! - **Safe to open.** `report.html` makes no network request (a Content-Security-Policy of
//!   `default-src 'none'`, images only from `data:`, the one inline style pinned by its hash, no
//!   script at all); every journal string is escaped by the template engine and stripped of
//!   invisible control characters; no URL from the journal becomes a link.
//! - **Confined.** The run is read through [`cdp_evidence::RunDir`]: nothing below the run
//!   directory is followed through a symlink, artifacts are only `artifacts/<name>` regular
//!   files, and an image is embedded only if its bytes are the image type its name declares.
//! - **Robust and deterministic.** Legacy manifests, torn journals, unknown kinds, wrong types
//!   and bad timestamps all render (generically where needed, with a note saying so); records
//!   are ordered by `startedAt` then `actionId`, and the same run renders to the same bytes.
//! - **Bounded.** The journal is read in two streaming passes, never whole, and the model keeps
//!   at most [`Options::max_steps`] steps (the first and the last ones; a gap entry counts the
//!   rest) and a few failures, plumbing entries and frames per step; everything beyond is
//!   counted and said. Frames are embedded within a size policy ([`Options`]); the rest are
//!   listed as left out. A run of any size renders in bounded memory to a report a browser
//!   opens in about a second.
//!
//! Rendering is synchronous and needs no runtime: call it from a finalize hook or a CLI.
//!
//! ```
//! # let tmp = tempfile::tempdir().unwrap();
//! # let store = cdp_evidence::Store::open(cdp_evidence::EvidenceConfig::at(tmp.path()))?;
//! # let run = store.join_session("demo", "relay")?;
//! # run.finalize(cdp_evidence::Totals::default())?;
//! # let run_dir = run.dir().to_path_buf();
//! let rendered = cdp_report::render(&run_dir)?;
//! println!(
//!     "{} ({} steps, {} failures)",
//!     rendered.html_path.display(),
//!     rendered.figures.steps,
//!     rendered.figures.failures,
//! );
//! # assert!(rendered.summary_path.ends_with("summary.md"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The rules (grouping, size policy, confinement) are documented in `docs/report.md`.

#![forbid(unsafe_code)]

mod error;
mod frames;
pub mod har;
mod html;
mod limits;
mod model;
mod notes;
mod open;
mod options;
pub mod replay;
mod summary;
mod text;
mod timeline;
pub mod trace;
mod whole;

pub use error::ReportError;
use open::open;
pub use options::Options;

/// A string from a run made safe to print on one line of a terminal or a page, as the report
/// shows it: control characters (ESC, BEL, NUL, …), bidirectional overrides and zero-width
/// characters become visible `\u{…}` escapes, line breaks become spaces, and at most
/// `max_chars` characters are kept (`…[+N chars]` says how many were cut).
pub fn visible(s: &str, max_chars: usize) -> String {
    text::line(s, max_chars)
}

use cdp_evidence::RunDir;
use std::path::{Path, PathBuf};

/// File name of the HTML report inside the run directory.
pub const HTML_FILE: &str = "report.html";
/// File name of the text summary inside the run directory.
pub const SUMMARY_FILE: &str = "summary.md";

/// Figures of one rendering, for the caller to print or log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Figures {
    /// Complete journal records read.
    pub records: usize,
    /// Steps in the filmstrip (the leading setup step not counted).
    pub steps: usize,
    /// Failed requests, console errors and lost connections (warnings not counted).
    pub failures: usize,
    /// Failed requests.
    pub failed_requests: usize,
    /// Console errors, exceptions and failed assertions.
    pub console_errors: usize,
    /// Frames embedded in `report.html`.
    pub frames_embedded: usize,
    /// Frames left out by the size policy.
    pub frames_left_out: usize,
    /// Artifacts refused (outside `artifacts/`, symlinks, not the image they claim to be).
    pub artifacts_refused: usize,
    /// Image bytes embedded (before base64).
    pub embedded_bytes: u64,
    /// Journal lines that are not records (a torn final line is not counted).
    pub records_unreadable: usize,
    /// Records shown generically (unknown kind, or a payload that does not fit its kind).
    pub records_generic: usize,
    /// Size of `report.html`.
    pub html_bytes: u64,
    /// Size of `summary.md`.
    pub summary_bytes: u64,
}

/// Both outputs in memory, before anything is written.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Output {
    /// The whole `report.html`.
    pub html: String,
    /// The whole `summary.md`.
    pub summary: String,
    /// What went into them.
    pub figures: Figures,
}

/// The files written by [`render`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Rendered {
    /// `<run>/report.html`.
    pub html_path: PathBuf,
    /// `<run>/summary.md`.
    pub summary_path: PathBuf,
    /// What went into them.
    pub figures: Figures,
}

/// Renders the run in `run_dir` and writes `report.html` and `summary.md` into it, each
/// atomically (temp file, fsync, rename). Uses the default [`Options`].
pub fn render(run_dir: &Path) -> Result<Rendered, ReportError> {
    render_with(run_dir, &Options::default())
}

/// [`render`] with explicit options.
pub fn render_with(run_dir: &Path, options: &Options) -> Result<Rendered, ReportError> {
    let run = open(run_dir)?;
    let out = render_run(&run, run_dir, options)?;
    let write = |name: &'static str, bytes: &[u8]| {
        run.write_output(name, bytes)
            .map_err(|source| ReportError::Write { file: name, source })
    };
    let html_path = write(HTML_FILE, out.html.as_bytes())?;
    let summary_path = write(SUMMARY_FILE, out.summary.as_bytes())?;
    Ok(Rendered {
        html_path,
        summary_path,
        figures: out.figures,
    })
}

/// Renders the run in `run_dir` without writing anything.
pub fn render_to_memory(run_dir: &Path, options: &Options) -> Result<Output, ReportError> {
    let run = open(run_dir)?;
    render_run(&run, run_dir, options)
}

fn render_run(run: &RunDir, run_dir: &Path, options: &Options) -> Result<Output, ReportError> {
    let dir_name = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let report = model::load(run, &dir_name, options);
    let html = html::render(&report);
    let summary = summary::render(&report);
    let tl = &report.timeline;
    let figures = Figures {
        records: tl.records,
        steps: tl.real_steps(),
        failures: tl.totals.errors,
        failed_requests: tl.totals.requests,
        console_errors: tl.totals.console,
        frames_embedded: report.frames.embedded,
        frames_left_out: report.frames.left_out,
        artifacts_refused: report.frames.refused,
        embedded_bytes: report.frames.embedded_bytes,
        records_unreadable: report.corrupt_lines,
        records_generic: tl.generic,
        html_bytes: html.len() as u64,
        summary_bytes: summary.len() as u64,
    };
    Ok(Output {
        html,
        summary,
        figures,
    })
}
