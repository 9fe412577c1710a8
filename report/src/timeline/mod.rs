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
//! Pure: the records in, the model out. Every string in the model has been through
//! [`crate::text`] (visible, bounded); nothing here does I/O.

use crate::text::{clean, line, Lines};
use cdp_evidence::{LifecycleEvent, MarkerKind, StoredPayload, StoredRecord};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

mod mcp;
mod types;

pub(crate) use mcp::ToolCall;
pub(crate) use types::*;

/// Where a record sorts: its time (parsed `startedAt`, else the `actionId` millisecond prefix,
/// else last), then its `actionId`.
fn sort_time(r: &StoredRecord) -> (Option<u64>, bool) {
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
fn plumbing_category(method: &str) -> Option<Category> {
    Some(match method {
        "Runtime.evaluate" | "Runtime.callFunctionOn" => Category::Evaluation,
        "Target.attachToTarget"
        | "Target.activateTarget"
        | "Target.setAutoAttach"
        | "Target.getTargets"
        | "Target.getTargetInfo"
        | "Target.setDiscoverTargets"
        | "Page.bringToFront" => Category::Attach,
        "Page.startScreencast" | "Page.stopScreencast" | "Page.screencastFrame" => {
            Category::Screencast
        }
        "frame" => Category::Frame,
        "DOM.setFileInputFiles" => return None,
        m if m.starts_with("DOM.")
            || m.starts_with("Runtime.")
            || m.starts_with("Accessibility.")
            || m.starts_with("CSS.")
            || m.starts_with("DOMSnapshot.")
            || m.starts_with("Page.get")
            || m.starts_with("Page.addScriptToEvaluate")
            || m.starts_with("Page.createIsolatedWorld") =>
        {
            Category::Query
        }
        _ => return None,
    })
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

/// Page memory: the last page per target handle, and overall.
#[derive(Default)]
struct Pages {
    tabs: HashMap<String, usize>,
    by_target: HashMap<String, Page>,
    last: Option<Page>,
}

impl Pages {
    /// The page of a record, and whether it was inferred.
    fn of(&mut self, target: Option<&Value>) -> (Option<Page>, bool) {
        let Some(t) = target.filter(|t| t.is_object()) else {
            return (self.last.clone(), self.last.is_some());
        };
        if str_of(t, "type") == Some("browser") {
            return (self.last.clone(), self.last.is_some());
        }
        let handle = str_of(t, "targetId").or_else(|| str_of(t, "id"));
        let tab = handle.map(|h| {
            let next = self.tabs.len() + 1;
            *self.tabs.entry(h.to_owned()).or_insert(next)
        });
        let nonempty = |k: &str| str_of(t, k).filter(|s| !s.trim().is_empty());
        let url = nonempty("url").map(|s| line(s, MAX_URL));
        // Chromium titles an untitled page with its URL minus the scheme: saying it twice helps
        // nobody.
        let title = nonempty("title")
            .map(|s| line(s, MAX_TITLE))
            .filter(|t| !url.as_deref().is_some_and(|u| same_as_url(t, u)));
        if title.is_some() || url.is_some() {
            let page = Page { title, url, tab };
            if let Some(h) = handle {
                self.by_target.insert(h.to_owned(), page.clone());
            }
            self.last = Some(page.clone());
            return (Some(page), false);
        }
        let known = handle.and_then(|h| self.by_target.get(h)).cloned();
        match known {
            Some(p) => (Some(p), true),
            None => match &self.last {
                Some(p) => (Some(p.clone()), true),
                None => (
                    tab.map(|tab| Page {
                        tab: Some(tab),
                        ..Page::default()
                    }),
                    false,
                ),
            },
        }
    }
}

/// What one record becomes.
enum Role {
    Step(What),
    Plumb(Category, String),
    Fail(FailWhat, bool),
    Marker,
}

fn action_role(a: &cdp_evidence::StoredAction, foreign: bool) -> Role {
    let method = a.method.as_str();
    if !foreign {
        if let Some(c) = plumbing_category(method) {
            return Role::Plumb(c, line(method, MAX_WORD));
        }
    }
    let url = a.url.as_deref().map(|u| line(u, MAX_URL));
    let detail_str = |k: &str| a.detail.as_ref().and_then(|d| str_of(d, k));
    let detail_u64 = |k: &str| {
        a.detail
            .as_ref()
            .and_then(|d| d.get(k))
            .and_then(Value::as_u64)
    };
    Role::Step(match method {
        "Page.navigate" => What::Navigate { url },
        "Page.reload" => What::Reload,
        "Page.navigateToHistoryEntry" => What::History,
        "Page.captureScreenshot" => What::Screenshot,
        "Page.printToPDF" => What::Pdf,
        "Page.stopLoading" => What::StopLoading,
        "click" => match a.point {
            Some(p) => What::Click {
                x: p.x,
                y: p.y,
                button: detail_str("button").map(|b| line(b, 12)),
                count: detail_u64("clickCount"),
            },
            None => What::Action {
                method: "click".into(),
                url,
            },
        },
        "tap" => What::Tap {
            x: a.point.map(|p| p.x),
            y: a.point.map(|p| p.y),
        },
        "scroll" => What::Scroll,
        "type" => What::Type {
            chars: a.input.as_ref().map_or(0, |i| i.chars),
            input_type: a
                .input
                .as_ref()
                .and_then(|i| i.input_type.as_deref())
                .map(|t| line(t, 24)),
            verdict: a.verification.as_ref().map(|v| Verdict {
                verified: serde_json::to_value(v.verified)
                    .ok()
                    .map(|w| match w {
                        Value::Bool(b) => b.to_string(),
                        Value::String(s) => line(&s, 16),
                        _ => "indeterminate".into(),
                    })
                    .unwrap_or_else(|| "indeterminate".into()),
                reason: line(&v.reason, 40),
                note: line(&v.note, 200),
            }),
        },
        "press" => What::Press {
            key: detail_str("key").map(|k| line(k, 40)),
        },
        "Target.createTarget" => What::OpenPage { url },
        "Target.closeTarget" => What::ClosePage,
        "Browser.close" => What::CloseBrowser,
        "DOM.setFileInputFiles" => What::Upload {
            files: detail_u64("files"),
        },
        other => What::Action {
            method: line(other, MAX_WORD),
            url,
        },
    })
}

fn role(r: &StoredRecord, typed: StoredPayload) -> (Role, bool) {
    let foreign = r.source.as_deref().is_some_and(|s| s != "relay");
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
            let level = serde_json::to_value(c.level)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let is_error = level != "warning";
            Role::Fail(
                FailWhat::Console {
                    level,
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
        StoredPayload::Mismatch if r.kind == "network" || r.kind == "console" => Role::Fail(
            FailWhat::Generic {
                kind: r.kind.clone(),
                fields: flatten(&r.payload),
            },
            r.kind == "network" || r.status.as_deref() == Some("error"),
        ),
        StoredPayload::Mismatch if r.kind == "marker" => Role::Marker,
        StoredPayload::Mismatch | StoredPayload::Custom => Role::Step(generic(r)),
        // A future variant of the read model: show it generically.
        _ => Role::Step(generic(r)),
    };
    let is_generic = matches!(
        &role,
        Role::Step(What::Generic { .. }) | Role::Fail(FailWhat::Generic { .. }, _)
    );
    (role, is_generic)
}

fn marker(m: &mut Markers, r: &StoredRecord, typed: &StoredPayload) {
    match typed {
        StoredPayload::Marker(MarkerKind::EvidenceTruncated {
            budget_bytes,
            used_bytes,
            ..
        }) => m.truncated = Some((*budget_bytes, *used_bytes)),
        StoredPayload::Marker(MarkerKind::EvidenceDropped { count }) => {
            m.dropped = m.dropped.saturating_add(*count)
        }
        StoredPayload::Marker(MarkerKind::JournalRepaired { discarded_bytes }) => {
            m.repaired.push(*discarded_bytes)
        }
        StoredPayload::Marker(MarkerKind::OwnerRecovered { .. }) => m.recovered += 1,
        StoredPayload::Marker(MarkerKind::RunFinalized { records, .. }) => {
            m.finalized_records = Some(*records)
        }
        StoredPayload::Marker(MarkerKind::RunStarted { .. }) => {}
        _ => {
            let word = str_of(&r.payload, "marker").unwrap_or("(no marker word)");
            *m.unknown.entry(line(word, MAX_WORD)).or_insert(0) += 1;
        }
    }
}

fn is_repeatable(a: &What, b: &What) -> bool {
    match (a, b) {
        (What::Scroll, What::Scroll) => true,
        (What::Press { key: ka }, What::Press { key: kb }) => ka == kb,
        _ => false,
    }
}

fn setup_step(at_ms: Option<u64>, time_known: bool, page: Option<Page>) -> Step {
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
    }
}

/// Splits a record's artifacts into frames (declared images) and other files.
/// `attached`: every artifact path attached so far in the run. A frame several records name
/// (the relay's frame after a burst of failures) is shown once, where it first appears.
fn attach_artifacts<'a>(
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

/// Builds the model from the journal's records (any order) and the run's start time.
pub(crate) fn build(
    records: &[StoredRecord],
    manifest_start_ms: Option<u64>,
    manifest_end_ms: Option<u64>,
) -> Timeline {
    let mut order: Vec<(Option<u64>, bool, &StoredRecord)> = records
        .iter()
        .map(|r| {
            let (t, known) = sort_time(r);
            (t, known, r)
        })
        .collect();
    order.sort_by(|a, b| {
        let ka = (a.0.is_none(), a.0.unwrap_or(0), a.2.action_id.as_str());
        let kb = (b.0.is_none(), b.0.unwrap_or(0), b.2.action_id.as_str());
        ka.cmp(&kb)
    });

    let mut tl = Timeline {
        records: records.len(),
        ..Timeline::default()
    };
    let mut pages = Pages::default();
    let mut first_known: Option<u64> = None;
    let mut numbered = 0usize;
    let mut attached: HashSet<String> = HashSet::new();
    // Artifacts that a `frame` record (the relay's own picture, stamped when it was taken)
    // carries.
    let framed: HashSet<&String> = records
        .iter()
        .filter(|r| {
            r.kind == "action" && r.payload.get("method").and_then(|m| m.as_str()) == Some("frame")
        })
        .flat_map(|r| &r.artifacts)
        .collect();
    let mut last_end: Option<u64> = None;
    // Tool call steps by their action id: records naming one fold into it.
    let mut calls: HashMap<&str, usize> = HashMap::new();

    for (at_ms, time_known, r) in order {
        *tl.kinds.entry(line(&r.kind, MAX_WORD)).or_insert(0) += 1;
        let status = Outcome::of(r.status.as_deref());
        *tl.statuses.entry(status.word().to_owned()).or_insert(0) += 1;
        if !time_known {
            tl.bad_times += 1;
        } else if let Some(t) = at_ms {
            first_known = Some(first_known.map_or(t, |f| f.min(t)));
            let end = t.saturating_add(r.duration_ms.unwrap_or(0));
            last_end = Some(last_end.map_or(end, |e| e.max(end)));
        }
        let typed = r.typed_payload();
        let (page, inferred) = pages.of(r.target.as_ref());
        let (role, is_generic) = role(r, typed.clone());
        if is_generic {
            tl.generic += 1;
        }
        let source = r
            .source
            .as_deref()
            .filter(|s| *s != "relay")
            .map(|s| line(s, MAX_WORD));
        let error = r.error.as_deref().map(|e| line(e, MAX_ERROR));
        if let Some(&index) = r.tool_call().and_then(|id| calls.get(id)) {
            if !matches!(role, Role::Marker) {
                mcp::fold(
                    &mut tl,
                    index,
                    role,
                    r,
                    at_ms,
                    time_known,
                    status,
                    error,
                    page,
                    &mut attached,
                    &framed,
                );
                continue;
            }
        }
        match role {
            Role::Marker => marker(&mut tl.markers, r, &typed),
            Role::Step(what) => {
                if let Some(prev) = tl.steps.last_mut() {
                    if prev.number.is_some()
                        && is_repeatable(&prev.what, &what)
                        && prev.source == source
                        && prev.page == page
                    {
                        prev.repeat += 1;
                        prev.outcome = prev.outcome.clone().max(status);
                        if prev.error.is_none() {
                            prev.error = error;
                        }
                        if let (Some(d), Some(more)) = (prev.duration_ms, r.duration_ms) {
                            prev.duration_ms = Some(d.saturating_add(more));
                        }
                        attach_artifacts(prev, &r.artifacts, at_ms, false, &mut attached);
                        continue;
                    }
                }
                numbered += 1;
                let number = numbered;
                let fields = mcp::step_fields(r, &what);
                if matches!(what, What::ToolCall(_)) {
                    calls.insert(&r.action_id, tl.steps.len());
                }
                let withheld = withheld_reason(r);
                let mut step = Step {
                    number: Some(number),
                    what,
                    repeat: 1,
                    at_ms,
                    time_known,
                    duration_ms: r.duration_ms,
                    outcome: status,
                    error,
                    source,
                    tool: r.tool.as_deref().map(|t| line(t, MAX_WORD)),
                    page,
                    page_inferred: inferred,
                    frames: Vec::new(),
                    files: Vec::new(),
                    plumbing: Vec::new(),
                    failures: Vec::new(),
                    fields,
                    withheld,
                };
                attach_artifacts(&mut step, &r.artifacts, at_ms, false, &mut attached);
                tl.steps.push(step);
            }
            Role::Plumb(category, label) => {
                if tl.steps.is_empty() {
                    tl.steps.push(setup_step(at_ms, time_known, page.clone()));
                }
                if category == Category::Frame {
                    // The relay's own picture of a page, or why there is none: it belongs to the
                    // last step on the same tab (another tab may have moved on meanwhile).
                    let tab = page.as_ref().and_then(|p| p.tab);
                    let same_tab = tab.and_then(|t| {
                        tl.steps
                            .iter()
                            .rposition(|s| s.page.as_ref().and_then(|p| p.tab) == Some(t))
                    });
                    let index = same_tab.unwrap_or(tl.steps.len() - 1);
                    let step = &mut tl.steps[index];
                    attach_artifacts(step, &r.artifacts, at_ms, false, &mut attached);
                    if step.frames.is_empty() && step.withheld.is_none() {
                        step.withheld = withheld_reason(r);
                    }
                    continue;
                }
                let Some(step) = tl.steps.last_mut() else {
                    continue;
                };
                step.plumbing.push(Plumb {
                    category,
                    label,
                    at_ms,
                    duration_ms: r.duration_ms,
                    outcome: status,
                    error,
                });
                attach_artifacts(
                    step,
                    &r.artifacts,
                    at_ms,
                    category == Category::Screencast,
                    &mut attached,
                );
                if step.page.is_none() {
                    step.page = page;
                    step.page_inferred = inferred;
                }
            }
            Role::Fail(what, is_error) => {
                if tl.steps.is_empty() {
                    tl.steps.push(setup_step(at_ms, time_known, page.clone()));
                }
                let step = tl.steps.len() - 1;
                let id = tl.failures.len() + 1;
                tl.failures.push(Failure {
                    id,
                    step,
                    at_ms,
                    time_known,
                    what,
                    is_error,
                    source,
                    frame_after: None,
                });
                tl.steps[step].failures.push(id - 1);
                // A frame the relay's own frame record carries is shown in the step it was
                // taken in (maybe a later page), not here: the failure links to it.
                let own = r.artifacts.iter().filter(|p| !framed.contains(*p));
                attach_artifacts(&mut tl.steps[step], own, at_ms, false, &mut attached);
            }
        }
    }
    mcp::finish(&mut tl);
    tl.tabs = pages.tabs.len();
    tl.start_ms = manifest_start_ms.or(first_known);
    tl.end_ms = manifest_end_ms.or(last_end);
    tl
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
fn withheld_reason(r: &StoredRecord) -> Option<String> {
    r.payload
        .get("detail")
        .and_then(|d| str_of(d, "screenshotWithheld"))
        .map(|w| line(w, 120))
}
