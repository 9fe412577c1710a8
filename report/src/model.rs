//! Reading a run into the one model both outputs render: the manifest's figures, the timeline,
//! the frames chosen by the size policy, and the notes a reader must see (truncated or dropped
//! evidence, unreadable lines, a missing manifest, ...).
//!
//! Problems with the run's files are notes in the report, not errors: a report of a damaged run
//! is what its reader needs most. Notes never quote file content or local paths.

use crate::frames::{self, FrameStats};
use crate::notes::{marker_word, Note, MAX_CORRUPT_LINES, MAX_REFUSED_KINDS, MAX_UNKNOWN_MARKERS};
use crate::text::line;
use crate::timeline::{self, Timeline, MAX_STATUS_WORD, MAX_WORD};
use crate::Options;
use cdp_evidence::{
    time, JournalLine, Manifest, Redactions, RunDir, RunStatus, StoredRecord, TornTail, Truncation,
};

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
    let manifest = read_manifest(run, &mut notes);
    let (mut tl, mut journal) = read_journal(run, manifest.as_ref(), options.caps());
    notes.extend(journal.missing_note());
    let frames = frames::embed(&mut tl, run, options);
    timeline::link_frames_after(&mut tl);
    let state = run_state(manifest.as_ref());

    // Evidence lost before it reached the journal, then what reading it found, then what the
    // report itself left out.
    let truncation = manifest.as_ref().and_then(|m| m.truncation.as_ref());
    notes.extend(journal_truncated(truncation, &tl));
    notes.extend(evidence_truncated(truncation, &tl));
    notes.extend(evidence_dropped(manifest.as_ref(), &tl));
    notes.extend(journal.corrupt_note());
    notes.extend(steps_left_out(&tl, options));
    notes.extend(failures_left_out(&tl));
    if tl.totals.repeated > 0 {
        notes.push(Note::RepeatsFolded {
            repeats: tl.totals.repeated,
        });
    }
    if state == RunState::Running {
        notes.push(Note::NotFinalized);
    }
    if let Some(t) = journal.torn_tail {
        notes.push(Note::IncompleteLastLine { bytes: t.len });
    }
    notes.extend(frame_notes(&frames, options));
    if tl.bad_times > 0 {
        notes.push(Note::TimesUnknown {
            count: tl.bad_times,
        });
    }
    if tl.generic > 0 {
        notes.push(Note::ShownGenerically { count: tl.generic });
    }
    notes.extend(marker_notes(&tl.markers));
    if let RunState::Legacy(_) = state {
        notes.push(Note::LegacyRun);
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

/// The manifest, or a note saying why there is none.
fn read_manifest(run: &RunDir, notes: &mut Vec<Note>) -> Option<Manifest> {
    match run.manifest() {
        Ok(m) => {
            if m.is_none() {
                notes.push(Note::NoManifest);
            }
            m
        }
        Err(e) => {
            notes.push(Note::ManifestUnreadable {
                reason: evidence_reason(&e),
            });
            None
        }
    }
}

/// The timeline, from two streaming passes over the journal (never the whole file in memory);
/// the second reads no further than the first did, so a journal still being written gives one
/// consistent model. Beside it, what the first pass found about the journal's lines.
pub(crate) fn read_journal(
    run: &RunDir,
    manifest: Option<&Manifest>,
    caps: timeline::Caps,
) -> (Timeline, JournalFacts) {
    let parse_time = |s: Option<&String>| s.and_then(|s| time::parse_rfc3339_millis(s));
    let start = parse_time(manifest.and_then(|m| m.started_at.as_ref()));
    let end = parse_time(manifest.and_then(|m| m.finalized_at.as_ref()));
    let mut journal = JournalFacts::default();
    let mut first = true;
    let mut limit = None;
    let mut source = |f: &mut dyn FnMut(&StoredRecord)| {
        let pass_one = first;
        first = false;
        let scanned = run.scan_journal(manifest, limit, |line| match line {
            JournalLine::Record(r) => f(&r),
            JournalLine::Corrupt(c) if pass_one => journal.corrupt_line(c.line),
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
    let tl = timeline::build_from(&mut source, start, end, caps);
    (tl, journal)
}

fn run_state(manifest: Option<&Manifest>) -> RunState {
    match manifest {
        None => RunState::Unknown,
        Some(m) if m.is_legacy() => {
            RunState::Legacy(m.status.as_deref().map(|s| line(s, MAX_STATUS_WORD)))
        }
        Some(m) => match m.run_status() {
            Some(RunStatus::Finalized) => RunState::Finalized,
            _ => RunState::Running,
        },
    }
}

/// The journal budget reached, by the manifest's word or the journal's marker.
fn journal_truncated(truncation: Option<&Truncation>, tl: &Timeline) -> Option<Note> {
    let marker = tl.markers.journal_truncated;
    if !truncation.is_some_and(|t| t.journal_truncated) && marker.is_none() {
        return None;
    }
    let budget = truncation
        .map(|t| t.journal_budget_bytes)
        .filter(|b| *b > 0)
        .or(marker.map(|(budget, _)| budget));
    let refused = truncation.map_or_else(Vec::new, |t| {
        t.refused_records
            .iter()
            .take(MAX_REFUSED_KINDS)
            .map(|(k, n)| (line(k, MAX_WORD), *n))
            .collect()
    });
    Some(Note::JournalTruncated { budget, refused })
}

/// The artifact budget reached, by the manifest's word or the journal's marker.
fn evidence_truncated(truncation: Option<&Truncation>, tl: &Timeline) -> Option<Note> {
    let marker = tl.markers.truncated;
    if !truncation.is_some_and(|t| t.artifacts_truncated) && marker.is_none() {
        return None;
    }
    let budget = truncation
        .map(|t| t.artifact_budget_bytes)
        .filter(|b| *b > 0)
        .or(marker.map(|(budget, _)| budget));
    Some(Note::EvidenceTruncated {
        budget,
        refused_artifacts: truncation.map_or(0, |t| t.refused_artifacts),
    })
}

/// Evidence dropped: the larger of the journal's markers and the manifest's total.
fn evidence_dropped(manifest: Option<&Manifest>, tl: &Timeline) -> Option<Note> {
    let m = &tl.markers;
    let total = m.dropped.max(
        manifest
            .and_then(|m| m.totals.as_ref())
            .map_or(0, |t| t.dropped_evidence),
    );
    (total > 0).then_some(Note::EvidenceDropped {
        total,
        writes: m.dropped_writes,
        deleted: m.dropped_deleted,
    })
}

fn steps_left_out(tl: &Timeline, options: &Options) -> Option<Note> {
    let gap = tl.steps.iter().find_map(|s| match s.what {
        timeline::What::Gap { steps, .. } => Some(steps),
        _ => None,
    })?;
    Some(Note::StepsLeftOut {
        steps: tl.real_steps(),
        shown_each_end: options.max_steps.max(2) / 2,
        gap,
    })
}

fn failures_left_out(tl: &Timeline) -> Option<Note> {
    let listed = tl.request_rows.len() + tl.console_rows.len();
    let all = tl.totals.table_rows();
    (all > listed).then_some(Note::FailuresLeftOut { listed, all })
}

/// Frames the size policy left out, and artifacts refused.
fn frame_notes(frames: &FrameStats, options: &Options) -> Vec<Note> {
    let mut notes = Vec::new();
    if frames.left_out > 0 {
        notes.push(Note::FramesLeftOut {
            left_out: frames.left_out,
            max_frames: options.max_frames,
            max_embedded_bytes: options.max_embedded_bytes,
            max_frame_bytes: options.max_frame_bytes,
        });
    }
    if frames.refused > 0 {
        notes.push(Note::ArtifactsRefused {
            count: frames.refused,
        });
    }
    notes
}

/// What the journal's markers say beyond truncation and drops.
fn marker_notes(m: &timeline::Markers) -> Vec<Note> {
    let mut notes = Vec::new();
    if !m.unknown.is_empty() {
        let words = m
            .unknown
            .keys()
            .take(MAX_UNKNOWN_MARKERS)
            .map(|w| marker_word(w))
            .collect();
        notes.push(Note::UnknownMarkers { words });
    }
    if !m.repaired.is_empty() {
        notes.push(Note::JournalRepaired {
            bytes: m.repaired.iter().sum(),
        });
    }
    if m.recovered > 0 {
        notes.push(Note::OwnerRecovered);
    }
    notes
}

/// What reading the journal said about its lines (not its records).
#[derive(Default)]
pub(crate) struct JournalFacts {
    pub(crate) corrupt: usize,
    corrupt_lines: Vec<u64>,
    torn_tail: Option<TornTail>,
    /// No journal (`Some(None)`), or one refused for a reason.
    missing: Option<Option<String>>,
}

impl JournalFacts {
    fn corrupt_line(&mut self, number: u64) {
        self.corrupt += 1;
        if self.corrupt_lines.len() < MAX_CORRUPT_LINES {
            self.corrupt_lines.push(number);
        }
    }

    fn missing_note(&mut self) -> Option<Note> {
        Some(match self.missing.take()? {
            None => Note::NoJournal,
            Some(reason) => Note::JournalRefused { reason },
        })
    }

    fn corrupt_note(&self) -> Option<Note> {
        (self.corrupt > 0).then(|| Note::UnreadableRecords {
            count: self.corrupt,
            lines: self.corrupt_lines.clone(),
        })
    }
}
