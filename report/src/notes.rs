//! The notes a report carries above its timeline: every banner the reader may see, with what
//! it needs to be worded, and the one place that words it ([`Note::title`], [`Note::text`]).
//!
//! A note's text is our fixed wording with numbers and, at most, journal words already cleaned
//! by [`crate::text`]; it never quotes file content or local paths.

use crate::text::{bytes, count};

/// How loud a note is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Warn,
    Info,
}

/// Refused-record kinds a "journal truncated" note names; the rest are left out.
pub(crate) const MAX_REFUSED_KINDS: usize = 8;
/// Unreadable journal lines a note names by number; the rest are counted.
pub(crate) const MAX_CORRUPT_LINES: usize = 8;
/// Unknown marker words a note names; more would drown the note.
pub(crate) const MAX_UNKNOWN_MARKERS: usize = 6;

/// A banner, in the order [`crate::model::load`] finds them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Note {
    NoManifest,
    /// Why `manifest.json` could not be used (our words).
    ManifestUnreadable {
        reason: String,
    },
    NoJournal,
    /// Why the journal was refused (our words).
    JournalRefused {
        reason: String,
    },
    /// The journal budget was reached; `refused` counts the records left out, by kind (cleaned).
    JournalTruncated {
        budget: Option<u64>,
        refused: Vec<(String, u64)>,
    },
    /// The artifact budget was reached.
    EvidenceTruncated {
        budget: Option<u64>,
        refused_artifacts: u64,
    },
    /// Evidence lost before it reached the journal: `total`, of which `writes` could not be
    /// written and `deleted` went with a deleted run directory.
    EvidenceDropped {
        total: u64,
        writes: u64,
        deleted: u64,
    },
    /// Journal lines that are not records, and the numbers of the first few.
    UnreadableRecords {
        count: usize,
        lines: Vec<u64>,
    },
    /// A run too long to show whole: `steps` in all, `shown_each_end` at each end, `gap` between.
    StepsLeftOut {
        steps: usize,
        shown_each_end: usize,
        gap: u64,
    },
    /// Table rows (failed requests and console entries) listed, of all.
    FailuresLeftOut {
        listed: usize,
        all: usize,
    },
    RepeatsFolded {
        repeats: u64,
    },
    NotFinalized,
    /// A torn last line of this many bytes.
    IncompleteLastLine {
        bytes: u64,
    },
    /// Frames left out by the size policy, and the policy.
    FramesLeftOut {
        left_out: usize,
        max_frames: usize,
        max_embedded_bytes: u64,
        max_frame_bytes: u64,
    },
    ArtifactsRefused {
        count: usize,
    },
    TimesUnknown {
        count: usize,
    },
    ShownGenerically {
        count: usize,
    },
    /// Marker words this report does not know (masked to id characters).
    UnknownMarkers {
        words: Vec<String>,
    },
    /// Bytes of incomplete last lines writers discarded.
    JournalRepaired {
        bytes: u64,
    },
    OwnerRecovered,
    LegacyRun,
}

impl Note {
    pub(crate) fn level(&self) -> Level {
        match self {
            Note::NoManifest
            | Note::ManifestUnreadable { .. }
            | Note::NoJournal
            | Note::JournalRefused { .. }
            | Note::JournalTruncated { .. }
            | Note::EvidenceTruncated { .. }
            | Note::EvidenceDropped { .. }
            | Note::UnreadableRecords { .. }
            | Note::ArtifactsRefused { .. } => Level::Warn,
            Note::StepsLeftOut { .. }
            | Note::FailuresLeftOut { .. }
            | Note::RepeatsFolded { .. }
            | Note::NotFinalized
            | Note::IncompleteLastLine { .. }
            | Note::FramesLeftOut { .. }
            | Note::TimesUnknown { .. }
            | Note::ShownGenerically { .. }
            | Note::UnknownMarkers { .. }
            | Note::JournalRepaired { .. }
            | Note::OwnerRecovered
            | Note::LegacyRun => Level::Info,
        }
    }

    pub(crate) fn title(&self) -> &'static str {
        match self {
            Note::NoManifest => "No manifest",
            Note::ManifestUnreadable { .. } => "Manifest unreadable",
            Note::NoJournal => "No journal",
            Note::JournalRefused { .. } => "Journal refused",
            Note::JournalTruncated { .. } => "Journal truncated",
            Note::EvidenceTruncated { .. } => "Evidence truncated",
            Note::EvidenceDropped { .. } => "Evidence dropped",
            Note::UnreadableRecords { .. } => "Unreadable records",
            Note::StepsLeftOut { .. } => "Steps left out",
            Note::FailuresLeftOut { .. } => "Failures left out of the tables",
            Note::RepeatsFolded { .. } => "Repeats folded",
            Note::NotFinalized => "Not finalized",
            Note::IncompleteLastLine { .. } => "Incomplete last line",
            Note::FramesLeftOut { .. } => "Frames left out",
            Note::ArtifactsRefused { .. } => "Artifacts refused",
            Note::TimesUnknown { .. } => "Times unknown",
            Note::ShownGenerically { .. } => "Shown generically",
            Note::UnknownMarkers { .. } => "Unknown markers",
            Note::JournalRepaired { .. } => "Journal repaired",
            Note::OwnerRecovered => "Owner recovered",
            Note::LegacyRun => "Legacy run",
        }
    }

    pub(crate) fn text(&self) -> String {
        match self {
            Note::NoManifest => {
                "The run has no manifest.json; this report is built from the journal alone.".into()
            }
            Note::ManifestUnreadable { reason } => format!(
                "manifest.json {reason}; this report is built from the journal alone."
            ),
            Note::NoJournal => {
                "The run has no journal (actions.jsonl): there is nothing to show.".into()
            }
            Note::JournalRefused { reason } => format!("The journal {reason}; it was not read."),
            Note::JournalTruncated { budget, refused } => journal_truncated(*budget, refused),
            Note::EvidenceTruncated {
                budget,
                refused_artifacts,
            } => evidence_truncated(*budget, *refused_artifacts),
            Note::EvidenceDropped {
                total,
                writes,
                deleted,
            } => evidence_dropped(*total, *writes, *deleted),
            Note::UnreadableRecords { count: n, lines } => unreadable_records(*n, lines),
            Note::StepsLeftOut {
                steps,
                shown_each_end,
                gap,
            } => format!(
                "The run has {steps} steps: the first and the last {shown_each_end} are shown, and the {gap} between them are counted in one entry. Every failure is counted in the figures above; the tables show the first and the last ones."
            ),
            Note::FailuresLeftOut { listed, all } => format!(
                "{listed} of {all} failed requests and console entries are listed (the first and the last by time); all are counted in the figures above."
            ),
            Note::RepeatsFolded { repeats } => format!(
                "{} of the same console message or failed request on the same page were recorded as counts, not one by one (shown as ×N).",
                count(*repeats as usize, "repeat", "repeats")
            ),
            Note::NotFinalized => "The run was not finalized: it may still be recording, or its producer stopped before finalizing. Records written after this report are not in it.".into(),
            Note::IncompleteLastLine { bytes: n } => format!(
                "The journal ends in an incomplete line of {} (a write in progress, or a writer that stopped mid-record). It is not a record and is not shown.",
                count(*n as usize, "byte", "bytes")
            ),
            Note::FramesLeftOut {
                left_out,
                max_frames,
                max_embedded_bytes,
                max_frame_bytes,
            } => format!(
                "{} left out to keep this file small: at most {max_frames} frames and {} of images are embedded, {} at most each; frames next to failures are kept first, then frames spread over the run.",
                count(*left_out, "frame was", "frames were"),
                bytes(*max_embedded_bytes),
                bytes(*max_frame_bytes),
            ),
            Note::ArtifactsRefused { count: n } => format!(
                "{} refused and not read: outside artifacts/, a symlink, not a regular file, or not the image its name declares. Each is marked where it occurs.",
                count(*n, "artifact was", "artifacts were")
            ),
            Note::TimesUnknown { count: n } => format!(
                "{} no valid startedAt; placed by the time in the action id when it has one, else at the end.",
                count(*n, "record has", "records have")
            ),
            Note::ShownGenerically { count: n } => format!(
                "{} of a kind this report does not know, or with a payload that does not fit its kind; shown field by field.",
                count(*n, "record is", "records are")
            ),
            Note::UnknownMarkers { words } => {
                format!("Markers this report does not know: {}.", words.join(", "))
            }
            Note::JournalRepaired { bytes: n } => format!(
                "A writer found an incomplete last line left by a crashed writer and discarded it ({}).",
                count(*n as usize, "byte", "bytes")
            ),
            Note::OwnerRecovered => "A producer took over this run after its owner stopped; nothing recorded before was lost.".into(),
            Note::LegacyRun => {
                "The manifest predates the evidence format version (no evidenceVersion).".into()
            }
        }
    }
}

/// [`Note::JournalTruncated`]'s text.
fn journal_truncated(budget: Option<u64>, refused: &[(String, u64)]) -> String {
    let mut text = format!("The run's journal budget{}", budget_words(budget));
    text.push_str(
        " was reached: after that point only connection events and markers were recorded",
    );
    if refused.is_empty() {
        text.push('.');
    } else {
        let parts: Vec<String> = refused.iter().map(|(k, n)| format!("{n} {k}")).collect();
        text.push_str(&format!("; records not recorded: {}.", parts.join(", ")));
    }
    text
}

/// [`Note::EvidenceTruncated`]'s text.
fn evidence_truncated(budget: Option<u64>, refused_artifacts: u64) -> String {
    let mut text = format!("The run's artifact budget{}", budget_words(budget));
    text.push_str(" was reached");
    if refused_artifacts > 0 {
        text.push_str(&format!(
            ": {} not stored",
            count(
                refused_artifacts as usize,
                "screenshot was",
                "screenshots were"
            )
        ));
    }
    text.push_str(". Steps, requests and console entries after that point are complete; only their frames are missing.");
    text
}

/// [`Note::EvidenceDropped`]'s text: what was lost, and why as far as it is known.
fn evidence_dropped(total: u64, writes: u64, deleted: u64) -> String {
    let mut why = Vec::new();
    if writes > 0 {
        why.push(format!(
            "{} could not be written (a full disk or an unwritable directory)",
            count(writes as usize, "piece", "pieces")
        ));
    }
    if deleted > 0 {
        why.push(format!(
            "{} went with a run directory deleted while recording",
            count(deleted as usize, "record", "records")
        ));
    }
    let rest = total.saturating_sub(writes.saturating_add(deleted));
    if rest > 0 {
        why.push(format!(
            "{rest} dropped because the recorder could not keep up or could not write {}",
            if rest == 1 { "it" } else { "them" }
        ));
    }
    format!(
        "{} lost: {}. The timeline may have gaps.",
        count(
            total as usize,
            "piece of evidence was",
            "pieces of evidence were"
        ),
        why.join("; ")
    )
}

/// [`Note::UnreadableRecords`]'s text.
fn unreadable_records(n: usize, lines: &[u64]) -> String {
    let numbers: Vec<String> = lines.iter().map(u64::to_string).collect();
    let more = if n > lines.len() { ", …" } else { "" };
    format!(
        "{} of the journal could not be read as records and {} not shown (line {}{more}).",
        count(n, "line", "lines"),
        if n == 1 { "is" } else { "are" },
        numbers.join(", ")
    )
}

/// " (2.0 MiB)" when the budget is known.
fn budget_words(budget: Option<u64>) -> String {
    budget.map_or_else(String::new, |b| format!(" ({})", bytes(b)))
}

/// A marker word as a note names it: word characters kept, anything else masked, so the note
/// stays plain text.
pub(crate) fn marker_word(w: &str) -> String {
    w.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_note_reads_as_one_sentence_with_its_numbers() {
        let dropped = Note::EvidenceDropped {
            total: 5,
            writes: 1,
            deleted: 2,
        };
        assert_eq!(dropped.level(), Level::Warn);
        assert_eq!(
            dropped.text(),
            "5 pieces of evidence were lost: 1 piece could not be written (a full disk or an \
             unwritable directory); 2 records went with a run directory deleted while recording; \
             2 dropped because the recorder could not keep up or could not write them. The \
             timeline may have gaps."
        );
        let corrupt = Note::UnreadableRecords {
            count: 9,
            lines: (1..=8).collect(),
        };
        assert!(corrupt
            .text()
            .ends_with("(line 1, 2, 3, 4, 5, 6, 7, 8, …)."));
        let one = Note::UnreadableRecords {
            count: 1,
            lines: vec![4],
        };
        assert_eq!(
            one.text(),
            "1 line of the journal could not be read as records and is not shown (line 4)."
        );
        let cut = Note::JournalTruncated {
            budget: None,
            refused: vec![("network".into(), 3)],
        };
        assert!(cut
            .text()
            .starts_with("The run's journal budget was reached:"));
        assert!(cut.text().ends_with("; records not recorded: 3 network."));
        assert_eq!(Note::LegacyRun.level(), Level::Info);
    }

    #[test]
    fn marker_words_keep_only_id_characters() {
        assert_eq!(marker_word("run.x-1_a"), "run.x-1_a");
        assert_eq!(marker_word("a<b>\u{202E}"), "a?b??");
    }
}
