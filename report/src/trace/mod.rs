//! `cdp-relay export --format trace`: the run as a Playwright trace archive, which Playwright's
//! trace viewer (`npx playwright show-trace run.zip`, trace.playwright.dev) and its `trace`
//! command line open.
//!
//! - **What is in it.** Each step of the report's step model is an action with its title,
//!   start, duration, status and error (a typing verdict that did not land is its action's
//!   error, with the verdict's value-free note); an agent's tool call has its browser actions
//!   as child actions; what folded into a step (evaluations, queries, …) is that action's log.
//!   Console errors and warnings are console events, the requests the run kept are the network
//!   log (the same reduced entries as [`crate::har`]), and the run's frames are screencast
//!   frames of their tab. There are no DOM snapshots: the run has none, and the viewer says so.
//! - **Nothing the journal would not hold.** Every string comes from the journal through the
//!   report's model; images are the run's own artifacts, opened confined and checked to be the
//!   image they claim to be.
//! - **The archive.** `trace.trace` and `trace.network` (newline-delimited JSON events, format
//!   version [`events::VERSION`]), deflated, and `resources/<sha1>` for each distinct frame,
//!   stored (the images are compressed already). Entries have fixed times: the same run
//!   exports to the same bytes.

mod dims;
mod events;

#[cfg(test)]
mod tests;

use crate::timeline::ImageType;
use crate::whole;
use crate::ReportError;
use sha1::Digest as _;
use std::collections::HashSet;
use std::io::{Seek, Write};
use std::path::Path;

/// The file name the trace has as an MCP resource and by default.
pub const TRACE_FILE: &str = "trace.zip";
/// A frame larger than this is left out (the relay's frames are a few hundred KiB at most).
const MAX_FRAME_BYTES: u64 = 16 << 20;
/// Frame bytes in one archive at most; later frames are left out, counted.
const MAX_FRAMES_BYTES: u64 = 512 << 20;

/// Figures of one trace export.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceFigures {
    /// Actions (steps, and the browser actions of tool calls).
    pub actions: usize,
    /// Actions with an error (a failed step, a typing verdict that did not land).
    pub failed_actions: usize,
    /// Network entries (the requests the run kept).
    pub requests: usize,
    /// Console events (errors, warnings, assertions, exceptions).
    pub console: usize,
    /// Screencast frames.
    pub frames: usize,
    /// Frames not in the archive (refused, unreadable, of no known size, over the budget).
    pub frames_left_out: usize,
    /// Failures that are neither a request nor a console entry (a lost connection): in the
    /// report, not in the trace.
    pub other_failures: usize,
    /// The run was still being recorded: what was written after this export is not in it.
    pub still_recording: bool,
    /// Journal lines that are not records.
    pub records_unreadable: usize,
    /// Bytes of the archive.
    pub bytes: u64,
}

/// Writes the trace of the run in `run_dir` to `out`. Reads the run only (confined, as the
/// report does).
pub fn write<W: Write + Seek>(run_dir: &Path, out: W) -> Result<TraceFigures, ReportError> {
    let w = whole::load(run_dir)?;
    let built = events::build(&w.timeline, &w.run_id);
    let mut figures = TraceFigures {
        actions: built.counts.actions,
        failed_actions: built.counts.failed_actions,
        requests: built.counts.requests,
        console: built.counts.console,
        other_failures: built.counts.other_failures,
        still_recording: w.still_recording,
        records_unreadable: w.unreadable,
        ..TraceFigures::default()
    };
    let archive = |e: zip::result::ZipError| ReportError::Export {
        what: "the trace archive",
        source: std::io::Error::other(e),
    };
    let io = |source: std::io::Error| ReportError::Export {
        what: "the trace archive",
        source,
    };
    let mut zip = zip::ZipWriter::new(out);
    let stored = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(true);
    let deflated = stored.compression_method(zip::CompressionMethod::Deflated);
    let mut trace = built.trace;
    let mut written = HashSet::new();
    let mut frame_bytes = 0u64;
    for f in &built.frames {
        let Some((bytes, kind)) = read_frame(&w.run, &f.raw_path) else {
            figures.frames_left_out += 1;
            continue;
        };
        let Some((width, height)) = dims::of(kind, &bytes) else {
            figures.frames_left_out += 1;
            continue;
        };
        let sha1 = hex(&sha1::Sha1::digest(&bytes));
        if !written.contains(&sha1) {
            if frame_bytes + bytes.len() as u64 > MAX_FRAMES_BYTES {
                figures.frames_left_out += 1;
                continue;
            }
            frame_bytes += bytes.len() as u64;
            zip.start_file(format!("resources/{sha1}"), stored)
                .map_err(archive)?;
            zip.write_all(&bytes).map_err(io)?;
            written.insert(sha1.clone());
        }
        figures.frames += 1;
        trace.push(events::Event::ScreencastFrame {
            page_id: f.page_id.clone(),
            sha1,
            width,
            height,
            timestamp: f.at_ms as f64,
        });
    }
    for (name, lines) in [("trace.trace", &trace), ("trace.network", &built.network)] {
        zip.start_file(name, deflated).map_err(archive)?;
        for event in lines {
            serde_json::to_writer(&mut zip, event).map_err(|e| io(e.into()))?;
            zip.write_all(b"\n").map_err(io)?;
        }
    }
    let mut out = zip.finish().map_err(archive)?;
    figures.bytes = out.stream_position().map_err(io)?;
    Ok(figures)
}

/// The trace of the run in `run_dir`, in memory (for the MCP resource).
pub fn to_memory(run_dir: &Path) -> Result<(Vec<u8>, TraceFigures), ReportError> {
    let mut buf = std::io::Cursor::new(Vec::new());
    let figures = write(run_dir, &mut buf)?;
    Ok((buf.into_inner(), figures))
}

/// A frame's bytes, when it is an image file of the run that is what its name says.
fn read_frame(run: &cdp_evidence::RunDir, raw_path: &str) -> Option<(Vec<u8>, ImageType)> {
    let kind = ImageType::of(raw_path)?;
    let file = run.artifact(raw_path).ok()?;
    let bytes = file.read_capped(MAX_FRAME_BYTES).ok()??;
    kind.matches(&bytes).then_some((bytes, kind))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
