//! Reading a run into the one model both outputs render: the manifest's figures, the timeline,
//! the frames chosen by the size policy, and the notes a reader must see (truncated or dropped
//! evidence, unreadable lines, a missing manifest, ...).
//!
//! Problems with the run's files are notes in the report, not errors: a report of a damaged run
//! is what its reader needs most. Notes never quote file content or local paths.

use crate::frames::{self, FrameStats};
use crate::text::{count, line};
use crate::timeline::{self, Timeline, MAX_WORD};
use crate::Options;
use cdp_evidence::{JournalLine, Redactions, RunDir, RunStatus, StoredRecord, TornTail};

/// How loud a note is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Warn,
    Info,
}

/// A banner: fixed wording with numbers and, at most, cleaned journal words.
#[derive(Clone, Debug)]
pub(crate) struct Note {
    pub level: Level,
    pub title: &'static str,
    pub text: String,
}

/// Where the run stands, from its manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RunState {
    Finalized,
    Running,
    /// A manifest without `evidenceVersion`, with its status word if any.
    Legacy(Option<String>),
    /// No usable manifest.
    Unknown,
}

/// Everything the templates need.
#[derive(Clone, Debug)]
pub(crate) struct Report {
    pub run_id: String,
    pub session: Option<String>,
    pub state: RunState,
    pub started_utc: Option<String>,
    pub duration_ms: Option<u64>,
    pub timeline: Timeline,
    pub notes: Vec<Note>,
    pub redactions: Option<Redactions>,
    pub frames: FrameStats,
    pub corrupt_lines: usize,
}

fn evidence_reason(e: &cdp_evidence::Error) -> String {
    match e {
        cdp_evidence::Error::Confinement { reason, .. } => (*reason).to_owned(),
        cdp_evidence::Error::Manifest { reason, .. } => reason.clone(),
        cdp_evidence::Error::Io { source, .. } => format!("cannot be read ({})", source.kind()),
        _ => "cannot be read".to_owned(),
    }
}

/// Reads the run behind `run` into a [`Report`]. `dir_name` names the run when its manifest
/// does not.
pub(crate) fn load(run: &RunDir, dir_name: &str, options: &Options) -> Report {
    let mut notes = Vec::new();
    let warn = |title, text: String| Note {
        level: Level::Warn,
        title,
        text,
    };
    let info = |title, text: String| Note {
        level: Level::Info,
        title,
        text,
    };

    let manifest = match run.manifest() {
        Ok(Some(m)) => Some(m),
        Ok(None) => {
            notes.push(warn(
                "No manifest",
                "The run has no manifest.json; this report is built from the journal alone.".into(),
            ));
            None
        }
        Err(e) => {
            notes.push(warn(
                "Manifest unreadable",
                format!(
                    "manifest.json {}; this report is built from the journal alone.",
                    evidence_reason(&e)
                ),
            ));
            None
        }
    };
    // Two streaming passes over the journal (never the whole file in memory); the second reads
    // no further than the first did, so a journal still being written gives one consistent
    // model.
    let parse_time =
        |s: Option<&String>| s.and_then(|s| cdp_evidence::time::parse_rfc3339_millis(s));
    let start = parse_time(manifest.as_ref().and_then(|m| m.started_at.as_ref()));
    let end = parse_time(manifest.as_ref().and_then(|m| m.finalized_at.as_ref()));
    let mut journal = JournalFacts::default();
    let mut tl = {
        let mut first = true;
        let mut limit = None;
        let mut source = |f: &mut dyn FnMut(&StoredRecord)| {
            let pass_one = first;
            first = false;
            let scanned = run.scan_journal(manifest.as_ref(), limit, |line| match line {
                JournalLine::Record(r) => f(&r),
                JournalLine::Corrupt(c) if pass_one => {
                    journal.corrupt += 1;
                    if journal.corrupt_lines.len() < 8 {
                        journal.corrupt_lines.push(c.line);
                    }
                }
                JournalLine::Torn(t) if pass_one => journal.torn_tail = Some(t),
                _ => {}
            });
            match scanned {
                Ok(Some(n)) if pass_one => limit = Some(n),
                Ok(Some(_)) => {}
                Ok(None) if pass_one => journal.missing = Some(None),
                Err(e) if pass_one => journal.missing = Some(Some(evidence_reason(&e))),
                _ => {}
            }
        };
        timeline::build_from(&mut source, start, end, options.caps())
    };
    match journal.missing.take() {
        Some(None) => notes.push(warn(
            "No journal",
            "The run has no journal (actions.jsonl): there is nothing to show.".into(),
        )),
        Some(Some(reason)) => notes.push(warn(
            "Journal refused",
            format!("The journal {reason}; it was not read."),
        )),
        None => {}
    }
    let frames = frames::embed(&mut tl, run, options);
    timeline::link_frames_after(&mut tl);

    let state = match &manifest {
        None => RunState::Unknown,
        Some(m) if m.is_legacy() => RunState::Legacy(m.status.as_deref().map(|s| line(s, 24))),
        Some(m) => match m.run_status() {
            Some(RunStatus::Finalized) => RunState::Finalized,
            _ => RunState::Running,
        },
    };

    // Evidence lost before it reached the journal.
    let truncation = manifest.as_ref().and_then(|m| m.truncation.clone());
    let journal_cut = truncation.as_ref().is_some_and(|t| t.journal_truncated)
        || tl.markers.journal_truncated.is_some();
    if journal_cut {
        let budget = truncation
            .as_ref()
            .map(|t| t.journal_budget_bytes)
            .filter(|b| *b > 0)
            .or(tl.markers.journal_truncated.map(|t| t.0));
        let mut text = String::from("The run's journal budget");
        if let Some(b) = budget {
            text.push_str(&format!(" ({})", crate::text::bytes(b)));
        }
        text.push_str(
            " was reached: after that point only connection events and markers were recorded",
        );
        let refused = truncation
            .as_ref()
            .map(|t| &t.refused_records)
            .filter(|r| !r.is_empty());
        match refused {
            Some(r) => {
                let parts: Vec<String> = r
                    .iter()
                    .take(8)
                    .map(|(k, n)| format!("{n} {}", line(k, MAX_WORD)))
                    .collect();
                text.push_str(&format!("; records not recorded: {}.", parts.join(", ")));
            }
            None => text.push('.'),
        }
        notes.push(warn("Journal truncated", text));
    }
    let refused = truncation.as_ref().map_or(0, |t| t.refused_artifacts);
    let truncated = truncation.as_ref().is_some_and(|t| t.artifacts_truncated)
        || tl.markers.truncated.is_some();
    if truncated {
        let budget = truncation
            .as_ref()
            .map(|t| t.artifact_budget_bytes)
            .filter(|b| *b > 0)
            .or(tl.markers.truncated.map(|t| t.0));
        let mut text = String::from("The run's artifact budget");
        if let Some(b) = budget {
            text.push_str(&format!(" ({})", crate::text::bytes(b)));
        }
        text.push_str(" was reached");
        if refused > 0 {
            text.push_str(&format!(
                ": {} not stored",
                count(refused as usize, "screenshot was", "screenshots were")
            ));
        }
        text.push_str(". Steps, requests and console entries after that point are complete; only their frames are missing.");
        notes.push(warn("Evidence truncated", text));
    }
    let dropped = tl.markers.dropped.max(
        manifest
            .as_ref()
            .and_then(|m| m.totals.as_ref())
            .map_or(0, |t| t.dropped_evidence),
    );
    if dropped > 0 {
        let m = &tl.markers;
        let mut why = Vec::new();
        if m.dropped_writes > 0 {
            why.push(format!(
                "{} could not be written (a full disk or an unwritable directory)",
                count(m.dropped_writes as usize, "piece", "pieces")
            ));
        }
        if m.dropped_deleted > 0 {
            why.push(format!(
                "{} went with a run directory deleted while recording",
                count(m.dropped_deleted as usize, "record", "records")
            ));
        }
        let rest = dropped.saturating_sub(m.dropped_writes + m.dropped_deleted);
        if rest > 0 {
            why.push(format!(
                "{rest} dropped because the recorder could not keep up or could not write {}",
                if rest == 1 { "it" } else { "them" }
            ));
        }
        notes.push(warn(
            "Evidence dropped",
            format!(
                "{} lost: {}. The timeline may have gaps.",
                count(
                    dropped as usize,
                    "piece of evidence was",
                    "pieces of evidence were"
                ),
                why.join("; ")
            ),
        ));
    }
    if journal.corrupt > 0 {
        let lines: Vec<String> = journal.corrupt_lines.iter().map(u64::to_string).collect();
        let more = if journal.corrupt > 8 { ", …" } else { "" };
        notes.push(warn(
            "Unreadable records",
            format!(
                "{} of the journal could not be read as records and {} not shown (line {}{more}).",
                count(journal.corrupt, "line", "lines"),
                if journal.corrupt == 1 { "is" } else { "are" },
                lines.join(", ")
            ),
        ));
    }
    if let Some(gap) = tl.steps.iter().find_map(|s| match s.what {
        timeline::What::Gap { steps, .. } => Some(steps),
        _ => None,
    }) {
        notes.push(info(
            "Steps left out",
            format!(
                "The run has {} steps: the first and the last {} are shown, and the {gap} between them are counted in one entry. Every failure is counted in the figures above; the tables show the first and the last ones.",
                tl.real_steps(),
                options.max_steps.max(2) / 2,
            ),
        ));
    }
    let listed_rows = tl.request_rows.len() + tl.console_rows.len();
    let all_rows = tl.totals.request_rows + tl.totals.console_rows;
    if all_rows > listed_rows {
        notes.push(info(
            "Failures left out of the tables",
            format!(
                "{} of {} failed requests and console entries are listed (the first and the last by time); all are counted in the figures above.",
                listed_rows, all_rows
            ),
        ));
    }
    if tl.totals.repeated > 0 {
        notes.push(info(
            "Repeats folded",
            format!(
                "{} of the same console message or failed request on the same page were recorded as counts, not one by one (shown as ×N).",
                count(tl.totals.repeated as usize, "repeat", "repeats")
            ),
        ));
    }
    if state == RunState::Running {
        notes.push(info(
            "Not finalized",
            "The run was not finalized: it may still be recording, or its producer stopped before finalizing. Records written after this report are not in it.".into(),
        ));
    }
    if let Some(t) = journal.torn_tail {
        notes.push(info(
            "Incomplete last line",
            format!(
                "The journal ends in an incomplete line of {} (a write in progress, or a writer that stopped mid-record). It is not a record and is not shown.",
                count(t.len as usize, "byte", "bytes")
            ),
        ));
    }
    if frames.left_out > 0 {
        notes.push(info(
            "Frames left out",
            format!(
                "{} left out to keep this file small: at most {} frames and {} of images are embedded, {} at most each; frames next to failures are kept first, then frames spread over the run.",
                count(frames.left_out, "frame was", "frames were"),
                options.max_frames,
                crate::text::bytes(options.max_embedded_bytes),
                crate::text::bytes(options.max_frame_bytes),
            ),
        ));
    }
    if frames.refused > 0 {
        notes.push(warn(
            "Artifacts refused",
            format!(
                "{} refused and not read: outside artifacts/, a symlink, not a regular file, or not the image its name declares. Each is marked where it occurs.",
                count(frames.refused, "artifact was", "artifacts were")
            ),
        ));
    }
    if tl.bad_times > 0 {
        notes.push(info(
            "Times unknown",
            format!(
                "{} no valid startedAt; placed by the time in the action id when it has one, else at the end.",
                count(tl.bad_times, "record has", "records have")
            ),
        ));
    }
    if tl.generic > 0 {
        notes.push(info(
            "Shown generically",
            format!(
                "{} of a kind this report does not know, or with a payload that does not fit its kind; shown field by field.",
                count(tl.generic, "record is", "records are")
            ),
        ));
    }
    if !tl.markers.unknown.is_empty() {
        // Marker words are ids; anything else in them is masked so the note stays plain text.
        let words: Vec<String> = tl
            .markers
            .unknown
            .keys()
            .take(6)
            .map(|w| {
                w.chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || "._-".contains(c) {
                            c
                        } else {
                            '?'
                        }
                    })
                    .collect()
            })
            .collect();
        notes.push(info(
            "Unknown markers",
            format!("Markers this report does not know: {}.", words.join(", ")),
        ));
    }
    if !tl.markers.repaired.is_empty() {
        let bytes: u64 = tl.markers.repaired.iter().sum();
        notes.push(info(
            "Journal repaired",
            format!(
                "A writer found an incomplete last line left by a crashed writer and discarded it ({}).",
                count(bytes as usize, "byte", "bytes")
            ),
        ));
    }
    if tl.markers.recovered > 0 {
        notes.push(info(
            "Owner recovered",
            "A producer took over this run after its owner stopped; nothing recorded before was lost.".into(),
        ));
    }
    if let RunState::Legacy(_) = state {
        notes.push(info(
            "Legacy run",
            "The manifest predates the evidence format version (no evidenceVersion).".into(),
        ));
    }

    let run_id = manifest
        .as_ref()
        .and_then(|m| m.run_id.as_deref())
        .map_or_else(|| line(dir_name, MAX_WORD * 2), |id| line(id, MAX_WORD * 2));
    let session = manifest
        .as_ref()
        .and_then(|m| m.session_id.as_deref())
        .map(|s| line(s, MAX_WORD * 2));
    let duration_ms = match (tl.start_ms, tl.end_ms) {
        (Some(s), Some(e)) if e >= s => Some(e - s),
        _ => None,
    };
    Report {
        run_id,
        session,
        state,
        started_utc: tl.start_ms.map(crate::text::utc),
        duration_ms,
        redactions: manifest
            .as_ref()
            .and_then(|m| m.totals.as_ref())
            .and_then(|t| t.redactions.clone()),
        timeline: tl,
        notes,
        frames,
        corrupt_lines: journal.corrupt,
    }
}

/// What reading the journal said about its lines (not its records).
#[derive(Default)]
struct JournalFacts {
    corrupt: usize,
    corrupt_lines: Vec<u64>,
    torn_tail: Option<TornTail>,
    /// No journal (`Some(None)`), or one refused for a reason.
    missing: Option<Option<String>>,
}
