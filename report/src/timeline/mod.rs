//! From journal records to what the agent did: steps, the plumbing folded into them, and the
//! failures that happened during each.
//!
//! Rules (also in `docs/report.md`):
//! - Records are ordered by `startedAt`, then `actionId`. A record without a valid `startedAt`
//!   is placed by the millisecond prefix of its `actionId` when it has one, else at the end,
//!   and shows "time unknown".
//! - A **step** is something the agent did: a navigation, reload or history move, a click, tap
//!   or scroll, typing, a key press, a screenshot, opening or closing a page, closing the browser,
//!   an upload or a PDF; any other `action` method; and every record from another producer
//!   (a source other than `relay`) or of a kind this renderer does not know. Consecutive scrolls,
//!   and consecutive presses of the same key, merge into one step with a count.
//! - **Plumbing** — evaluations (`Runtime.evaluate`, `Runtime.callFunctionOn`), DOM and other
//!   queries, target attach/activate, screencast control and frames, connection events — folds
//!   into the step before it, or into a leading "Setup" step.
//! - A **failure** (a `network` record, a `console` entry, a lost browser connection) sits under
//!   the step that was current when it happened.
//! - Every step names its page from the record's `target` (title, URL); a record without one
//!   gets the last page known for its target, or the last page known at all (shown as such).
//!
//! - **Bounded.** The model is built in two passes over the records (a journal is read twice,
//!   streaming, never whole): the first counts everything and picks which steps, table rows
//!   and jump-list entries are kept whole; the second fills them in. At most [`Caps::steps`]
//!   steps are kept (the first and the last half by time; the ones between become one "gap"
//!   step that counts them), and per step at most a few failures, plumbing entries and frames
//!   are kept; everything else is counted, never dropped silently. Up to those caps the model
//!   is exactly what reading every record in order would give.
//!
//! Pure: the records in, the model out. Every string in the model has been through
//! [`crate::text`] (visible, bounded); nothing here does I/O.

use crate::text::line;
use cdp_evidence::{Kind, Source, StoredRecord};
use serde_json::Value;
use std::collections::HashSet;

mod assemble;
mod caps;
mod mcp;
mod role;
mod select;
mod types;

pub(crate) use crate::limits::*;
pub(crate) use caps::{Caps, MAX_MARKER_ENTRIES, MAX_RECORD_ARTIFACTS};
pub(crate) use mcp::{Effect, ToolCall};
pub(crate) use role::*;
pub(crate) use select::FailureTotals;
pub(crate) use types::*;

/// Builds the model from records in any order (both passes over the slice).
#[cfg(test)]
pub(crate) fn build(
    records: &[StoredRecord],
    manifest_start_ms: Option<u64>,
    manifest_end_ms: Option<u64>,
) -> Timeline {
    build_from(
        &mut |f: &mut dyn FnMut(&StoredRecord)| records.iter().for_each(&mut *f),
        manifest_start_ms,
        manifest_end_ms,
        Caps::default(),
    )
}

/// Something that hands every record over to the function it is given, in the same order
/// each time it is called.
pub(crate) type Records<'a> = dyn FnMut(&mut dyn FnMut(&StoredRecord)) + 'a;

/// Builds the model from a source that hands every record over, in the same order, each time
/// it is called (it is called twice).
pub(crate) fn build_from(
    source: &mut Records<'_>,
    manifest_start_ms: Option<u64>,
    manifest_end_ms: Option<u64>,
    caps: Caps,
) -> Timeline {
    let mut selection = select::Selection::new(&caps);
    source(&mut |r| selection.record(r));
    let mut assembly = assemble::Assembly::new(&mut selection, caps);
    source(&mut |r| assembly.record(r));
    let mut tl = std::mem::take(&mut selection.tl);
    tl.start_ms = manifest_start_ms.or(selection.first_known);
    tl.end_ms = manifest_end_ms.or(selection.last_end);
    assembly.finish(tl)
}

/// Which table a failure is a row of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailKind {
    Request,
    Console,
    Other,
}

impl FailKind {
    pub(crate) fn of(what: &FailWhat) -> FailKind {
        match what {
            FailWhat::Request { .. } => FailKind::Request,
            FailWhat::Console { .. } => FailKind::Console,
            FailWhat::Generic {
                kind: Kind::Network,
                ..
            } => FailKind::Request,
            FailWhat::Generic {
                kind: Kind::Console,
                ..
            } => FailKind::Console,
            _ => FailKind::Other,
        }
    }
}

/// A record's target handle (`targetId`, else `id`), unless it is the browser target.
pub(crate) fn handle_of(target: Option<&Value>) -> Option<&str> {
    let t = target.filter(|t| t.is_object())?;
    if str_of(t, "type") == Some("browser") {
        return None;
    }
    str_of(t, "targetId").or_else(|| str_of(t, "id"))
}

/// The page a record's own target names: title and URL (cleaned), and its tab number. `None`
/// when the target names neither a title, a URL nor a tab.
pub(crate) fn page_of(target: Option<&Value>, tab: Option<usize>) -> Option<Page> {
    let t = target.filter(|t| t.is_object())?;
    if str_of(t, "type") == Some("browser") {
        return None;
    }
    let nonempty = |k: &str| str_of(t, k).filter(|s| !s.trim().is_empty());
    let url = nonempty("url").map(|s| line(s, MAX_URL));
    // Chromium titles an untitled page with its URL minus the scheme: saying it twice helps
    // nobody.
    let title = nonempty("title")
        .map(|s| line(s, MAX_TITLE))
        .filter(|t| !url.as_deref().is_some_and(|u| same_as_url(t, u)));
    if title.is_none() && url.is_none() && tab.is_none() {
        return None;
    }
    Some(Page { title, url, tab })
}

/// Where a record sorts: its time (parsed `startedAt`, else the `actionId` millisecond prefix,
/// else last), then its `actionId`.
pub(crate) fn sort_time(r: &StoredRecord) -> (Option<u64>, bool) {
    if let Some(ms) = r.started_at_ms {
        return (Some(ms), true);
    }
    let prefix = r
        .action_id
        .get(..13)
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()));
    let from_id = prefix
        .and_then(|p| p.parse::<u64>().ok())
        .filter(|_| r.action_id.as_bytes().get(13) == Some(&b'-'));
    (from_id, false)
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

pub(crate) fn is_repeatable(a: &What, b: &What) -> bool {
    match (a, b) {
        (What::Scroll, What::Scroll) => true,
        (What::Press { key: ka }, What::Press { key: kb }) => ka == kb,
        _ => false,
    }
}

pub(crate) fn setup_step(at_ms: Option<u64>, time_known: bool, page: Option<Page>) -> Step {
    Step {
        number: None,
        what: What::Setup,
        repeat: 1,
        at_ms,
        time_known,
        duration_ms: None,
        outcome: Outcome::Info,
        error: None,
        source: None,
        tool: None,
        page_inferred: false,
        page,
        frames: Vec::new(),
        files: Vec::new(),
        plumbing: Vec::new(),
        failures: Vec::new(),
        fields: Vec::new(),
        withheld: None,
        plumb_counts: std::collections::BTreeMap::new(),
        failure_count: 0,
        more_failures: 0,
        more_plumbing: 0,
        more_frames: 0,
    }
}

/// Splits a record's artifacts into frames (declared images) and other files.
/// `attached`: every artifact path attached so far in the run. A frame several records name
/// (the relay's frame after a burst of failures) is shown once, where it first appears.
pub(crate) fn attach_artifacts<'a>(
    step: &mut Step,
    paths: impl IntoIterator<Item = &'a String>,
    at_ms: Option<u64>,
    screencast: bool,
    attached: &mut HashSet<String>,
) {
    for path in paths {
        if !attached.insert(path.clone()) {
            continue;
        }
        let shown_path = line(path, MAX_URL);
        let refused = cdp_evidence::check_artifact_path(path).err();
        match ImageType::of(path) {
            Some(kind) => {
                let frame = Frame {
                    shown_path,
                    raw_path: path.clone(),
                    kind,
                    at_ms,
                    state: match refused {
                        Some(why) => FrameState::Refused(why.reason().to_owned()),
                        None => FrameState::Pending,
                    },
                    size: None,
                    screencast,
                };
                if screencast && frame.state == FrameState::Pending {
                    // Only the last screencast frame of a step is kept: it shows the state the
                    // step left the page in.
                    for f in step.frames.iter_mut().filter(|f| f.screencast) {
                        if f.state == FrameState::Pending {
                            f.state = FrameState::LeftOut(SUPERSEDED);
                        }
                    }
                }
                step.frames.push(frame);
            }
            None => step.files.push(FileRef {
                shown_path,
                refused: refused.map(|r| r.reason()),
            }),
        }
    }
}

/// After the size policy: links each failure to the first step at or after it that shows a
/// frame taken at or after the failure.
pub(crate) fn link_frames_after(tl: &mut Timeline) {
    let shown = |f: &Frame| matches!(f.state, FrameState::Embedded { .. });
    // next[i]: the first step at or after step i that shows a frame.
    let mut next = vec![None; tl.steps.len() + 1];
    for i in (0..tl.steps.len()).rev() {
        next[i] = if tl.steps[i].frames.iter().any(shown) {
            Some(i)
        } else {
            next[i + 1]
        };
    }
    for f in &mut tl.failures {
        // In the failure's own step only a frame taken at or after it counts; every frame of a
        // later step was taken after it.
        let own = tl.steps[f.step]
            .frames
            .iter()
            .any(|fr| shown(fr) && matches!((fr.at_ms, f.at_ms), (Some(a), Some(b)) if a >= b));
        f.frame_after = if own { Some(f.step) } else { next[f.step + 1] };
    }
}

/// True when `title` is `url` without its scheme (or is the URL itself).
fn same_as_url(title: &str, url: &str) -> bool {
    let bare = url.split_once("://").map_or(url, |(_, rest)| rest);
    let t = title.trim_end_matches('/');
    t == url.trim_end_matches('/') || t == bare.trim_end_matches('/')
}

#[cfg(test)]
mod tests;
