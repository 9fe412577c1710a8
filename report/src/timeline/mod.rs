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

use crate::text::{clean, line, Lines};
use cdp_evidence::{
    ActionMethod, ConsoleLevel, Kind, LifecycleEvent, MarkerKind, Source, Status, StoredAction,
    StoredPayload, StoredRecord, Word,
};
use serde_json::Value;
use std::collections::HashSet;

mod assemble;
mod mcp;
mod select;
mod types;

pub(crate) use mcp::ToolCall;
pub(crate) use select::FailureTotals;
pub(crate) use types::*;

/// Artifacts of one record that are looked at; a record naming more has the rest ignored.
pub(crate) const MAX_RECORD_ARTIFACTS: usize = 16;

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
            steps: 600,
            failures_per_step: 10,
            failures_total: 1000,
            plumbing_per_step: 50,
            plumbing_total: 2000,
            effects_per_step: mcp::MAX_EFFECTS,
            effects_total: 2000,
            frames_per_step: 20,
            frames_total: 1000,
            table_rows: 300,
            jump: 100,
        }
    }
}

impl Caps {
    /// A per-step cap shrunk so that `slots` steps list at most `total` together (at least 1
    /// each while the per-step cap allows any).
    pub(crate) fn share(per_step: usize, total: usize, slots: usize) -> usize {
        per_step.min((total / slots.max(1)).max(usize::from(per_step > 0)))
    }
}

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
    let mut p1 = select::Pass1::new(&caps);
    source(&mut |r| p1.record(r));
    let mut p2 = assemble::Pass2::new(&mut p1, caps);
    source(&mut |r| p2.record(r));
    let mut tl = std::mem::take(&mut p1.tl);
    tl.start_ms = manifest_start_ms.or(p1.first_known);
    tl.end_ms = manifest_end_ms.or(p1.last_end);
    p2.finish(tl)
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

/// Methods that are framework plumbing rather than steps.
fn plumbing_category(method: &Word<ActionMethod>) -> Option<Category> {
    use ActionMethod as M;
    Some(match method {
        Word::Known(M::RuntimeEvaluate | M::RuntimeCallFunctionOn) => Category::Evaluation,
        Word::Known(
            M::TargetAttachToTarget
            | M::TargetActivateTarget
            | M::TargetSetAutoAttach
            | M::TargetGetTargets
            | M::TargetGetTargetInfo
            | M::TargetSetDiscoverTargets
            | M::PageBringToFront,
        ) => Category::Attach,
        Word::Known(M::PageStartScreencast | M::PageStopScreencast | M::PageScreencastFrame) => {
            Category::Screencast
        }
        Word::Known(M::Frame) => Category::Frame,
        Word::Known(_) => return None,
        // CDP methods the format does not name: queries by their domain.
        Word::Other(m) if is_cdp_query(m) => Category::Query,
        Word::Other(_) => return None,
    })
}

/// A CDP method (not one of [`ActionMethod`]) that reads the page without changing it: one of
/// the query domains, or a `Page` getter.
fn is_cdp_query(method: &str) -> bool {
    const QUERY_DOMAINS: [&str; 5] = ["DOM", "Runtime", "Accessibility", "CSS", "DOMSnapshot"];
    const PAGE_QUERIES: [&str; 3] = ["get", "addScriptToEvaluate", "createIsolatedWorld"];
    match method.split_once('.') {
        Some(("Page", name)) => PAGE_QUERIES.iter().any(|p| name.starts_with(p)),
        Some((domain, _)) => QUERY_DOMAINS.contains(&domain),
        None => false,
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Flattens a JSON payload into at most [`MAX_FIELDS`] `(path, value)` pairs for display.
pub(crate) fn flatten(v: &Value) -> Vec<(String, String)> {
    fn walk(v: &Value, path: &mut String, out: &mut Vec<(String, String)>, depth: usize) {
        if out.len() > MAX_FIELDS {
            return;
        }
        match v {
            Value::Object(m) if depth < 4 && !m.is_empty() => {
                for (k, child) in m {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(&line(k, 40));
                    walk(child, path, out, depth + 1);
                    path.truncate(len);
                }
            }
            Value::Array(a) if depth < 4 && !a.is_empty() => {
                for (i, child) in a.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(child, path, out, depth + 1);
                    path.truncate(len);
                }
            }
            Value::String(s) => out.push((path.clone(), line(s, MAX_FIELD))),
            other => {
                let text = serde_json::to_string(other).unwrap_or_default();
                out.push((path.clone(), line(&text, MAX_FIELD)));
            }
        }
    }
    let mut out = Vec::new();
    let mut path = String::new();
    walk(v, &mut path, &mut out, 0);
    if out.len() > MAX_FIELDS {
        out.truncate(MAX_FIELDS);
        out.push(("…".to_owned(), "more fields not shown".to_owned()));
    }
    out
}

/// What one record becomes.
pub(crate) enum Role {
    Step(What),
    Plumb(Category, String),
    Fail(FailWhat, bool),
    Marker,
}

fn action_role(a: &StoredAction, foreign: bool) -> Role {
    use ActionMethod as M;
    if !foreign {
        if let Some(c) = plumbing_category(&a.method) {
            return Role::Plumb(c, line(a.method.as_str(), MAX_WORD));
        }
    }
    let url = a.url.as_deref().map(|u| line(u, MAX_URL));
    let detail = a.details();
    let Word::Known(method) = &a.method else {
        return Role::Step(What::Action {
            method: line(a.method.as_str(), MAX_WORD),
            url,
        });
    };
    Role::Step(match method {
        M::PageNavigate => What::Navigate { url },
        M::PageReload => What::Reload,
        M::PageNavigateToHistoryEntry => What::History,
        M::PageCaptureScreenshot => What::Screenshot,
        M::PagePrintToPdf => What::Pdf,
        M::PageStopLoading => What::StopLoading,
        M::Click => match a.point {
            Some(p) => What::Click {
                x: p.x,
                y: p.y,
                button: detail.button.map(|b| clean_word(b, 12)),
                count: detail.click_count,
            },
            None => What::Action {
                method: M::Click.as_str().into(),
                url,
            },
        },
        M::Tap => What::Tap {
            x: a.point.map(|p| p.x),
            y: a.point.map(|p| p.y),
        },
        M::Scroll => What::Scroll,
        M::Type => What::Type {
            chars: a.input.as_ref().map_or(0, |i| i.chars),
            input_type: a
                .input
                .as_ref()
                .and_then(|i| i.input_type.clone())
                .map(|t| clean_word(t, 24)),
            verdict: a.verification.as_ref().map(|v| Verdict {
                verified: v.verified,
                reason: clean_word(v.reason.clone(), 40),
                note: line(&v.note, 200),
            }),
        },
        M::Press => What::Press {
            key: detail.key.map(|k| line(&k, 40)),
        },
        M::TargetCreateTarget => What::OpenPage { url },
        M::TargetCloseTarget => What::ClosePage,
        M::BrowserClose => What::CloseBrowser,
        M::DomSetFileInputFiles => What::Upload {
            files: detail.files,
        },
        other => What::Action {
            method: other.as_str().into(),
            url,
        },
    })
}

/// A word as the report shows it: another producer's word visible and bounded.
pub(crate) fn clean_word<E: cdp_evidence::Words>(w: Word<E>, max_chars: usize) -> Word<E> {
    match w {
        Word::Other(s) => Word::Other(line(&s, max_chars)),
        known => known,
    }
}

pub(crate) fn role(r: &StoredRecord, typed: StoredPayload) -> (Role, bool) {
    let foreign = r.source.is_some() && !r.is_from(&Source::RELAY);
    let generic = |r: &StoredRecord| What::Generic {
        kind: line(&r.kind, MAX_WORD),
        method: str_of(&r.payload, "method").map(|m| line(m, MAX_WORD)),
    };
    let role = match typed {
        StoredPayload::Action(a) => mcp::action(r, &a, foreign),
        StoredPayload::Network(n) => Role::Fail(
            FailWhat::Request {
                method: line(&n.method, 16),
                url: line(&n.url, MAX_URL),
                status: n.status,
                resource_type: n.resource_type.as_deref().map(|t| line(t, 32)),
                duration_ms: n.duration_ms,
                error_text: n.error_text.as_deref().map(|t| line(t, MAX_ERROR)),
            },
            true,
        ),
        StoredPayload::Console(c) => {
            let is_error = c.level != ConsoleLevel::Warning;
            Role::Fail(
                FailWhat::Console {
                    level: c.level,
                    text: clean(&c.text, MAX_MESSAGE, Lines::Keep),
                    url: c.url.as_deref().map(|u| line(u, MAX_URL)),
                    line: c.line,
                    column: c.column,
                },
                is_error,
            )
        }
        StoredPayload::Lifecycle(l) => match mcp::lifecycle_role(&l) {
            Some(role) => role,
            None => match l.event {
                LifecycleEvent::UpstreamLost => Role::Fail(
                    FailWhat::ConnectionLost {
                        detail: l.detail.as_deref().map(|d| line(d, MAX_ERROR)),
                    },
                    true,
                ),
                LifecycleEvent::ClientConnected => {
                    Role::Plumb(Category::Connection, "client connected".into())
                }
                LifecycleEvent::ClientDisconnected => {
                    Role::Plumb(Category::Connection, "client disconnected".into())
                }
                // The gateway's events, handled above.
                _ => Role::Step(generic(r)),
            },
        },
        StoredPayload::Marker(_) => Role::Marker,
        StoredPayload::Mismatch => match r.kind_word().known() {
            Some(kind @ (Kind::Network | Kind::Console)) => Role::Fail(
                FailWhat::Generic {
                    kind,
                    fields: flatten(&r.payload),
                },
                kind == Kind::Network || r.status_word().is_some_and(|s| s == Status::Error),
            ),
            Some(Kind::Marker) => Role::Marker,
            _ => Role::Step(generic(r)),
        },
        StoredPayload::Custom => Role::Step(generic(r)),
        // A future variant of the read model: show it generically.
        _ => Role::Step(generic(r)),
    };
    let is_generic = matches!(
        &role,
        Role::Step(What::Generic { .. }) | Role::Fail(FailWhat::Generic { .. }, _)
    );
    (role, is_generic)
}

pub(crate) fn marker(m: &mut Markers, r: &StoredRecord, typed: &StoredPayload) {
    match typed {
        StoredPayload::Marker(MarkerKind::EvidenceTruncated {
            budget_bytes,
            used_bytes,
            ..
        }) => m.truncated = Some((*budget_bytes, *used_bytes)),
        StoredPayload::Marker(MarkerKind::JournalTruncated {
            budget_bytes,
            used_bytes,
        }) => m.journal_truncated = Some((*budget_bytes, *used_bytes)),
        StoredPayload::Marker(MarkerKind::EvidenceDropped { count, reason }) => {
            m.dropped = m.dropped.saturating_add(*count);
            match reason {
                Some(cdp_evidence::DropReason::WriteFailed) => {
                    m.dropped_writes = m.dropped_writes.saturating_add(*count)
                }
                Some(cdp_evidence::DropReason::RunDeleted) => {
                    m.dropped_deleted = m.dropped_deleted.saturating_add(*count)
                }
                _ => {}
            }
        }
        StoredPayload::Marker(MarkerKind::JournalRepaired { discarded_bytes }) => {
            if m.repaired.len() < 64 {
                m.repaired.push(*discarded_bytes)
            }
        }
        StoredPayload::Marker(MarkerKind::OwnerRecovered { .. }) => m.recovered += 1,
        StoredPayload::Marker(MarkerKind::RunFinalized { records, .. }) => {
            m.finalized_records = Some(*records)
        }
        StoredPayload::Marker(MarkerKind::RunStarted { .. }) => {}
        _ => {
            let word = r.marker();
            let word = word.as_ref().map_or("(no marker word)", |w| w.as_str());
            if m.unknown.len() < 64 {
                *m.unknown.entry(line(word, MAX_WORD)).or_insert(0) += 1;
            }
        }
    }
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

/// Why the relay kept no picture for a record (`detail.screenshotWithheld`).
pub(crate) fn withheld_reason(r: &StoredRecord) -> Option<String> {
    let StoredPayload::Action(a) = r.typed_payload() else {
        return None;
    };
    a.details().screenshot_withheld.map(|w| line(&w, 120))
}
