//! The run's journal read into what a replay needs, through the evidence format's own types
//! (`StoredRecord::typed_payload`, `StoredLocator::kind`), in the format's order (`startedAt`,
//! then `actionId`): the steps the agent took, the failures the browser answered, and where each
//! page was. Everything else (framework plumbing, screenshots, frames, markers) is left out.

use super::guard::generated_selector;
use cdp_evidence::{
    ActionMethod, LocatorKind, MouseButton, Source, Status, StoredAction, StoredConsole,
    StoredLocator, StoredNetwork, StoredPayload, StoredRecord, Word, GATEWAY_TOOL,
};
use std::collections::BTreeMap;

/// Events kept at most; a longer run is exported up to here and says so.
pub(crate) const MAX_EVENTS: usize = 100_000;
/// Presses of one double (or triple) click are at most this far apart (Chromium's own interval
/// is 500 ms; a client sends them back to back).
const MULTI_CLICK_MS: u64 = 1_000;

/// What a click, typing step, choice or file choice was aimed at.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Target {
    /// The element's locator (a replayable one), and the element to hover first, if the click
    /// needed one.
    Element {
        locator: Box<StoredLocator>,
        hover: Option<Box<StoredLocator>>,
    },
    /// The run says it cannot be replayed, and why.
    NotReplayable(String),
    /// No `payload.target` (a run recorded before locators, or a producer without them).
    Missing,
    /// A `payload.target` that names no locator this version reads.
    Unknown,
}

/// One event of the run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum What {
    Navigate {
        url: Option<String>,
        error: Option<String>,
    },
    Reload,
    History,
    Click {
        target: Target,
        point: Option<(f64, f64)>,
        button: Option<Word<MouseButton>>,
        count: u64,
    },
    Type {
        target: Target,
        chars: u64,
        input_type: Option<String>,
        variable: Option<String>,
    },
    Press {
        key: Option<String>,
    },
    /// Options chosen in a `<select>`, by label.
    Select {
        target: Target,
        options: Vec<String>,
    },
    /// Files set on a file input (`DOM.setFileInputFiles`): how many.
    Files {
        target: Target,
        count: Option<u64>,
    },
    /// `Target.createTarget`.
    OpenPage {
        url: Option<String>,
    },
    /// `Target.closeTarget` of the page with this handle.
    ClosePage {
        handle: Option<String>,
    },
    /// A mouse wheel: Playwright scrolls an element into view itself before acting on it.
    Scroll,
    /// A press the page never received (stopped on the window, as a client's hit-target check
    /// does before it retries the click): nothing to replay.
    UnreceivedClick,
    /// A step the export does not reproduce (a tap, another producer's action): its method
    /// word and why.
    NotExported {
        method: String,
        why: &'static str,
    },
    /// An agent's tool call (`source: "mcp"`): a comment before the steps it made.
    ToolCall {
        tool: Option<String>,
        name: String,
        label: Option<String>,
    },
    /// A failed request or a console error: a comment where it happened.
    Failure {
        text: String,
    },
    /// Nothing done: the record only says where a page was (plumbing, a frame, a screenshot).
    PageLocation,
}

impl What {
    /// True for what a replay does (or, for a gap, fails at): not a comment, not a location.
    pub(crate) fn is_step(&self) -> bool {
        !matches!(
            self,
            What::ToolCall { .. }
                | What::Failure { .. }
                | What::PageLocation
                | What::UnreceivedClick
        )
    }
}

/// One event, with the page it happened on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Event {
    pub at: Option<u64>,
    pub id: String,
    /// The page's handle (`target.targetId`), when the record names one.
    pub page: Option<String>,
    /// The page's URL when the record was made (`target.url`).
    pub page_url: Option<String>,
    /// The handle of the page that opened this one (`target.openerId`).
    pub opener: Option<String>,
    pub what: What,
}

/// The events of a journal, ordered, and how many were left out past [`MAX_EVENTS`].
#[derive(Debug, Default)]
pub(crate) struct Events {
    pub events: Vec<Event>,
    pub left_out: usize,
    pub unreadable: usize,
    /// The URL each page was last seen at (in file order).
    urls: BTreeMap<String, Option<String>>,
}

impl Events {
    pub(crate) fn push(&mut self, record: &StoredRecord) {
        let Some(what) = what(record) else { return };
        let page = record.page();
        if what == What::PageLocation {
            // Only a change of where a page is matters.
            let Some(handle) = &page.target_id else {
                return;
            };
            if self.urls.get(handle) == Some(&page.url) {
                return;
            }
        }
        if let Some(handle) = &page.target_id {
            if self.urls.get(handle) != Some(&page.url) {
                self.urls.insert(handle.clone(), page.url.clone());
            }
        }
        if self.events.len() >= MAX_EVENTS {
            self.left_out += 1;
            return;
        }
        self.events.push(Event {
            at: record.started_at_ms,
            id: record.action_id.clone(),
            page: page.target_id,
            page_url: page.url,
            opener: page.opener_id,
            what,
        });
    }

    /// Orders the events as the format says (`startedAt`, then `actionId`; a record without a
    /// time last) and folds the presses of a double or triple click into one click.
    pub(crate) fn sort(&mut self) {
        self.events
            .sort_by(|a, b| (a.at.is_none(), a.at, &a.id).cmp(&(b.at.is_none(), b.at, &b.id)));
        self.fold_multi_clicks();
    }

    /// A double click is recorded as two presses (click counts 1 and 2, as the browser receives
    /// them): replayed as they were recorded they would be a click and a double click, three
    /// clicks. A press whose count follows the previous step's, on the same element and page,
    /// soon after, is that click's next press.
    fn fold_multi_clicks(&mut self) {
        let mut kept: Vec<Event> = Vec::with_capacity(self.events.len());
        let mut last_step: Option<usize> = None;
        for event in std::mem::take(&mut self.events) {
            if let (
                What::Click {
                    target,
                    count,
                    button,
                    ..
                },
                Some(i),
            ) = (&event.what, last_step)
            {
                let before = &mut kept[i];
                let soon = match (before.at, event.at) {
                    (Some(a), Some(b)) => b.saturating_sub(a) <= MULTI_CLICK_MS,
                    _ => false,
                };
                if let What::Click {
                    target: t,
                    count: c,
                    button: b,
                    ..
                } = &mut before.what
                {
                    if *count >= 2 && *c + 1 == *count && t == target && b == button && soon {
                        *c = *count;
                        before.at = event.at.or(before.at);
                        continue;
                    }
                }
            }
            if event.what.is_step() {
                last_step = Some(kept.len());
            }
            kept.push(event);
        }
        self.events = kept;
    }
}

/// What one record means to a replay; `None` for records that do not matter at all.
fn what(record: &StoredRecord) -> Option<What> {
    match record.typed_payload() {
        StoredPayload::Action(action) => Some(action_step(record, &action)),
        StoredPayload::Network(failure) => Some(network(record, &failure)),
        StoredPayload::Console(entry) => console(record, &entry),
        StoredPayload::Custom => Some(What::PageLocation),
        StoredPayload::Mismatch => mismatched(record),
        _ => None,
    }
}

/// A built-in record whose payload does not fit the format: a gap when it was a step.
fn mismatched(record: &StoredRecord) -> Option<What> {
    let method = record.action_method()?;
    let step = is_step_method(&method) || is_foreign(record);
    Some(if step {
        What::NotExported {
            method: method.as_str().to_owned(),
            why: "its record does not fit the evidence format",
        }
    } else {
        What::PageLocation
    })
}

fn is_step_method(method: &Word<ActionMethod, &str>) -> bool {
    use ActionMethod as M;
    matches!(
        method,
        Word::Known(
            M::Click
                | M::Tap
                | M::Press
                | M::Type
                | M::Select
                | M::PageNavigate
                | M::PageReload
                | M::PageNavigateToHistoryEntry
                | M::DomSetFileInputFiles
                | M::Files
                | M::TargetCreateTarget
                | M::TargetCloseTarget
        )
    )
}

fn is_foreign(record: &StoredRecord) -> bool {
    record.source.is_some() && !record.is_from(&Source::RELAY)
}

/// An action record: a step, a tool call, or only where its page was.
fn action_step(record: &StoredRecord, action: &StoredAction) -> What {
    if record.is_from(&Source::MCP) {
        return tool_call(record, action).unwrap_or(What::PageLocation);
    }
    let detail = action.details();
    let target = || target_of(action);
    use ActionMethod as M;
    match &action.method {
        Word::Known(M::PageNavigate) => What::Navigate {
            url: action.url.clone(),
            error: record
                .error
                .clone()
                .filter(|_| record.status_word() == Some(Word::Known(Status::Error))),
        },
        Word::Known(M::PageReload) => What::Reload,
        Word::Known(M::PageNavigateToHistoryEntry) => What::History,
        Word::Known(M::Click) if action.received == Some(false) => What::UnreceivedClick,
        Word::Known(M::Click) => What::Click {
            target: target(),
            point: action.point.map(|p| (p.x, p.y)),
            button: detail.button,
            count: detail.click_count.unwrap_or(1),
        },
        Word::Known(M::Type) => {
            let input = action.input.as_ref();
            What::Type {
                target: target(),
                chars: input.map_or(0, |i| i.chars),
                input_type: input
                    .and_then(|i| i.input_type.as_ref())
                    .map(|t| t.as_str().to_owned()),
                variable: input.and_then(|i| i.variable.clone()),
            }
        }
        Word::Known(M::Press) => What::Press { key: detail.key },
        Word::Known(M::Select) => What::Select {
            target: target(),
            options: action.options.clone().unwrap_or_default(),
        },
        Word::Known(M::DomSetFileInputFiles | M::Files) => What::Files {
            target: target(),
            count: detail.files,
        },
        Word::Known(M::TargetCreateTarget) => What::OpenPage {
            url: action.url.clone(),
        },
        Word::Known(M::TargetCloseTarget) => What::ClosePage {
            handle: detail.target_id,
        },
        Word::Known(M::Tap) => What::NotExported {
            method: action.method.as_str().to_owned(),
            why: "a touch the export does not reproduce",
        },
        Word::Known(M::Scroll) => What::Scroll,
        Word::Other(method) if is_foreign(record) => What::NotExported {
            method: method.clone(),
            why: "another producer's action, not a browser step",
        },
        _ => What::PageLocation,
    }
}

/// An agent's tool call through the gateway; `None` for the gateway's own bookkeeping (a
/// summary, a secret registered, this export), which is no step of the agent's unless it
/// marked one.
fn tool_call(record: &StoredRecord, action: &StoredAction) -> Option<What> {
    let label = action.label.clone();
    if record.tool.as_deref() == Some(GATEWAY_TOOL) && label.is_none() {
        return None;
    }
    Some(What::ToolCall {
        tool: record.tool.clone(),
        name: action.method.as_str().to_owned(),
        label,
    })
}

/// `payload.target` (and `payload.hover`) read into a [`Target`]: the locator the format's
/// rule names ([`StoredLocator::kind`]), unless a selector in it looks generated.
fn target_of(action: &StoredAction) -> Target {
    let Some(locator) = &action.target else {
        return Target::Missing;
    };
    if let Some(refused) = refusal(locator) {
        return refused;
    }
    let hover = match &action.hover {
        None => None,
        Some(h) => match refusal(h) {
            None => Some(Box::new(h.clone())),
            Some(Target::NotReplayable(why)) => {
                return Target::NotReplayable(format!(
                    "the click needed a hover over another element first, and that one cannot be \
                     found again: {why}"
                ))
            }
            Some(_) => {
                return Target::NotReplayable(
                    "the click needed a hover over another element first, and its recorded \
                     locator is not one this version reads"
                        .to_owned(),
                )
            }
        },
    };
    Target::Element {
        locator: Box::new(locator.clone()),
        hover,
    }
}

/// Why `locator` cannot be replayed, as a [`Target`]; `None` when it can.
fn refusal(locator: &StoredLocator) -> Option<Target> {
    match locator.kind() {
        None => Some(Target::Unknown),
        Some(LocatorKind::NotReplayable(why)) => Some(Target::NotReplayable(if why.is_empty() {
            "no reason recorded".to_owned()
        } else {
            why.to_owned()
        })),
        Some(kind) => {
            let own_css = match kind {
                LocatorKind::Css(css) => Some(css),
                _ => None,
            };
            let generated = own_css
                .into_iter()
                .chain(locator.frame_path())
                .any(generated_selector);
            generated.then(|| {
                Target::NotReplayable(
                    "its CSS selector uses an id or class that looks generated (it would differ \
                     at the replay)"
                        .to_owned(),
                )
            })
        }
    }
}

fn network(record: &StoredRecord, failure: &StoredNetwork) -> What {
    let url = failure.url.as_str();
    // Same origin as the page: the path says enough.
    let page_url = record.page().url;
    let page_origin = page_url.as_deref().and_then(origin);
    let shown = match (origin(url), page_origin) {
        (Some(o), Some(po)) if o == po => &url[o.len()..],
        _ => url,
    };
    let outcome = match (failure.status, &failure.error_text) {
        (Some(status), _) => status.to_string(),
        (None, Some(e)) => e.clone(),
        (None, None) => "failed".to_owned(),
    };
    What::Failure {
        text: format!("{} {shown} → {outcome}{}", failure.method, repeats(record)),
    }
}

fn console(record: &StoredRecord, entry: &StoredConsole) -> Option<What> {
    if entry.level == cdp_evidence::ConsoleLevel::Warning {
        return None;
    }
    Some(What::Failure {
        text: format!(
            "console {} \"{}\"{}",
            entry.level.as_str(),
            entry.text,
            repeats(record)
        ),
    })
}

fn repeats(record: &StoredRecord) -> String {
    match record.repeat.as_ref().map(|rep| rep.count) {
        Some(n) if n > 0 => format!(" (and {n} more times)"),
        _ => String::new(),
    }
}

/// The origin of an absolute `http(s)` URL (`scheme://host[:port]`).
pub(crate) fn origin(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if end == 0 {
        return None;
    }
    Some(&url[..url.len() - rest.len() + end])
}
