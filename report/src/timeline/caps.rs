//! How much of a run the model keeps whole; everything beyond is counted, never dropped
//! silently. The defaults are sized so that the largest report a browser is handed still opens
//! in about a second (a few thousand list entries at most), while a run of ordinary length
//! (tens to hundreds of steps) is shown whole.

use super::mcp;

/// Steps kept: 300 at each end. Enough for any run a person reads step by step.
const STEPS: usize = 600;
/// Failures listed under one step: a failing page usually fails the same way many times.
const FAILURES_PER_STEP: usize = 10;
/// Failures listed under all steps together (about as many as the tables list).
const FAILURES_TOTAL: usize = 1000;
/// Plumbing entries listed in one step's fold: a framework issues dozens per action.
const PLUMBING_PER_STEP: usize = 50;
/// Plumbing entries listed in all folds together: the biggest share of the page's elements.
const PLUMBING_TOTAL: usize = 2000;
/// Browser actions listed under all tool calls together.
const EFFECTS_TOTAL: usize = 2000;
/// Frames and other artifacts listed with one step (a screencast step names many).
const FRAMES_PER_STEP: usize = 20;
/// Frames and other artifacts listed with all steps together.
const FRAMES_TOTAL: usize = 1000;
/// Rows of each table: 150 at each end, enough to see how a failure started and how it ended.
const TABLE_ROWS: usize = 300;
/// Entries of the jump list at the top: it must stay a list a reader scans, not a second table.
const JUMP: usize = 100;

/// Artifacts of one record that are looked at; a record naming more has the rest ignored (the
/// relay names one or two).
pub(crate) const MAX_RECORD_ARTIFACTS: usize = 16;
/// Distinct unknown marker words, and journal repairs, remembered: enough to name them in a
/// note, bounded against a journal of nothing but markers.
pub(crate) const MAX_MARKER_ENTRIES: usize = 64;

/// How much of a run the model keeps whole; the rest is counted. Per-step lists shrink when
/// there are many steps, so the whole report never lists more than the `*_total` caps: a long
/// run still opens quickly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Caps {
    /// Steps kept: the first half and the last half by time.
    pub steps: usize,
    /// Failures listed under a step, and under all steps together.
    pub failures_per_step: usize,
    pub failures_total: usize,
    /// Plumbing entries listed in a step's fold, and in all folds together.
    pub plumbing_per_step: usize,
    pub plumbing_total: usize,
    /// Browser actions listed under a tool call, and under all calls together.
    pub effects_per_step: usize,
    pub effects_total: usize,
    /// Frames (and other artifacts) listed with a step, and with all steps together.
    pub frames_per_step: usize,
    pub frames_total: usize,
    /// Rows of each table (failed requests, console): the first half and the last half.
    pub table_rows: usize,
    /// Entries of the jump list.
    pub jump: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            steps: STEPS,
            failures_per_step: FAILURES_PER_STEP,
            failures_total: FAILURES_TOTAL,
            plumbing_per_step: PLUMBING_PER_STEP,
            plumbing_total: PLUMBING_TOTAL,
            effects_per_step: mcp::MAX_EFFECTS,
            effects_total: EFFECTS_TOTAL,
            frames_per_step: FRAMES_PER_STEP,
            frames_total: FRAMES_TOTAL,
            table_rows: TABLE_ROWS,
            jump: JUMP,
        }
    }
}

/// What the exports (a Playwright trace, a HAR) keep whole: every step, failure, browser action
/// and frame of any run a person or a viewer would open, and still a bound for a runaway one
/// (the rest is counted, as in the report). No tables or jump list: the exports have none.
const WHOLE: usize = 500_000;

impl Caps {
    /// The caps of the exports: everything, up to [`WHOLE`] of each; plumbing as in the report
    /// (it is only an action's log there).
    pub(crate) fn whole() -> Caps {
        Caps {
            steps: WHOLE,
            failures_per_step: WHOLE,
            failures_total: WHOLE,
            effects_per_step: WHOLE,
            effects_total: WHOLE,
            frames_per_step: WHOLE,
            frames_total: WHOLE,
            table_rows: 0,
            jump: 0,
            ..Caps::default()
        }
    }

    /// A per-step cap shrunk so that `slots` steps list at most `total` together (at least 1
    /// each while the per-step cap allows any).
    pub(crate) fn share(per_step: usize, total: usize, slots: usize) -> usize {
        per_step.min((total / slots.max(1)).max(usize::from(per_step > 0)))
    }
}
