//! What a rendering may embed and list: the report's caps, chosen by its caller.

use crate::timeline;

/// How much of the run's screenshots `report.html` may embed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// A frame larger than this is left out (not downscaled). By default, 2 MiB.
    pub max_frame_bytes: u64,
    /// Total image bytes embedded (before base64, which adds a third). By default, 8 MiB.
    pub max_embedded_bytes: u64,
    /// At most this many frames are embedded. By default, 60.
    pub max_frames: usize,
    /// Steps shown: the first half and the last half by time; the ones between are one entry
    /// that counts them. By default, 600.
    pub max_steps: usize,
    /// Failures listed under one step (the rest are counted there); fewer when there are many
    /// steps, so that all steps together list at most 1000. By default, 10.
    pub max_failures_per_step: usize,
    /// Plumbing entries listed in one step's fold (all are counted); fewer when there are many
    /// steps, so that all folds together list at most 2000. By default, 50.
    pub max_plumbing_per_step: usize,
    /// Rows of the failed-requests table and of the console table: the first half and the
    /// last half by time (the rest are counted). By default, 300.
    pub max_table_rows: usize,
}

impl Default for Options {
    fn default() -> Self {
        let caps = timeline::Caps::default();
        Options {
            max_frame_bytes: 2 << 20,
            max_embedded_bytes: 8 << 20,
            max_frames: 60,
            max_steps: caps.steps,
            max_failures_per_step: caps.failures_per_step,
            max_plumbing_per_step: caps.plumbing_per_step,
            max_table_rows: caps.table_rows,
        }
    }
}

impl Options {
    pub(crate) fn caps(&self) -> timeline::Caps {
        timeline::Caps {
            steps: self.max_steps.max(2),
            failures_per_step: self.max_failures_per_step,
            plumbing_per_step: self.max_plumbing_per_step,
            table_rows: self.max_table_rows,
            ..timeline::Caps::default()
        }
    }
}
