//! `kind: "marker"`: run bookkeeping, with the fields of each marker (numbers only).

use crate::vocab::MarkerName;
use serde::{Deserialize, Serialize};

/// `kind: "marker"` — run bookkeeping. Most markers are written by this crate itself (so that,
/// e.g., exactly one `evidenceTruncated` exists); producers can build only the ones they own.
#[derive(Clone, Debug, Serialize)]
pub struct Marker(MarkerKind);

/// The markers of the format and their fields (numbers only). Public so readers can parse them;
/// building one does not let anyone write it (only this crate wraps one in a [`Marker`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "marker",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum MarkerKind {
    /// The run was created.
    RunStarted {
        /// The creator's pid.
        pid: u32,
    },
    /// The run was finalized; the last record of a run.
    RunFinalized {
        /// The finalizer's pid.
        pid: u32,
        /// Complete records, this one included.
        records: u64,
        /// Bytes of stored artifacts.
        artifact_bytes: u64,
        /// Evidence the finalizer dropped.
        dropped_evidence: u64,
    },
    /// The first artifact refused for the budget (exactly one per run).
    EvidenceTruncated {
        /// The run's artifact budget.
        budget_bytes: u64,
        /// Bytes stored when the artifact was refused.
        used_bytes: u64,
        /// Size of the refused artifact.
        refused_bytes: u64,
    },
    /// The first record refused for the journal budget (exactly one per run): after it, only
    /// markers and lifecycle records are appended.
    JournalTruncated {
        /// The run's journal budget.
        budget_bytes: u64,
        /// The journal's size when the record was refused.
        used_bytes: u64,
    },
    /// A producer dropped evidence (e.g. its queue was full).
    EvidenceDropped {
        /// How many pieces.
        count: u64,
        /// Why, when the producer knows: `writeFailed` (a full disk, an unwritable directory),
        /// `runDeleted` (the run's directory was removed while recording).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<DropReason>,
    },
    /// A writer repaired a torn tail.
    JournalRepaired {
        /// Bytes of the partial line that was discarded.
        discarded_bytes: u64,
    },
    /// A producer took over a dead owner's run.
    OwnerRecovered {
        /// The dead owner.
        previous_pid: u32,
        /// The new owner.
        pid: u32,
    },
}

/// Why evidence was dropped (`evidenceDropped`'s `reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum DropReason {
    /// Writing failed: a full disk, an unwritable directory.
    WriteFailed,
    /// The run's directory was removed while it was being recorded; `count` records it held
    /// are gone.
    RunDeleted,
    /// A reason word this version does not know.
    #[serde(other)]
    Other,
}

impl Marker {
    /// The producer dropped `count` pieces of evidence (e.g. its queue was full).
    pub fn evidence_dropped(count: u64) -> Marker {
        Marker(MarkerKind::EvidenceDropped {
            count,
            reason: None,
        })
    }

    /// The producer lost `count` pieces of evidence for `reason`.
    pub fn evidence_lost(count: u64, reason: DropReason) -> Marker {
        Marker(MarkerKind::EvidenceDropped {
            count,
            reason: Some(reason),
        })
    }

    pub(crate) fn internal(kind: MarkerKind) -> Marker {
        Marker(kind)
    }

    /// What it marks.
    pub(crate) fn kind(&self) -> &MarkerKind {
        &self.0
    }
}

impl MarkerKind {
    /// The marker's word (its `marker` tag).
    pub fn name(&self) -> MarkerName {
        match self {
            MarkerKind::RunStarted { .. } => MarkerName::RunStarted,
            MarkerKind::RunFinalized { .. } => MarkerName::RunFinalized,
            MarkerKind::EvidenceTruncated { .. } => MarkerName::EvidenceTruncated,
            MarkerKind::JournalTruncated { .. } => MarkerName::JournalTruncated,
            MarkerKind::EvidenceDropped { .. } => MarkerName::EvidenceDropped,
            MarkerKind::JournalRepaired { .. } => MarkerName::JournalRepaired,
            MarkerKind::OwnerRecovered { .. } => MarkerName::OwnerRecovered,
        }
    }
}
