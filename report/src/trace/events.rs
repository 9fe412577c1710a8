//! The run's step model as Playwright trace events (format version [`VERSION`]): one
//! `context-options`, a `before`/`after` pair per step (a tool call's browser actions as its
//! children), `log` lines for what folded into a step, `console` events, and for
//! `trace.network` one `resource-snapshot` per request the run kept. Pure: the timeline in, the
//! events out; the screencast frames are added by the archive writer once it has read them.
//!
//! Every string comes from the model, which took it from the journal through
//! [`crate::text`]: the trace holds nothing the journal does not.

use crate::har;
use crate::timeline::{
    Effect, FailWhat, Failure, Headline, Outcome, Page, Plumb, Step, Timeline, Verdict, What,
};
use cdp_evidence::{ConsoleLevel, Verified};
use serde::Serialize;

/// The trace format version written: the first with `title` on actions and `stepId`, which
/// every viewer since reads and upgrades (see docs/evidence-format.md).
pub(crate) const VERSION: u32 = 8;
/// `class` of every action: no Playwright class, so the viewer applies none of its own
/// titles, groups or parameter renderings.
const CLASS: &str = "CdpRelay";

/// One line of `trace.trace` or `trace.network`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub(crate) enum Event {
    #[serde(rename_all = "camelCase")]
    ContextOptions {
        version: u32,
        origin: &'static str,
        browser_name: &'static str,
        platform: &'static str,
        wall_time: f64,
        monotonic_time: f64,
        title: String,
        options: ContextOptions,
        sdk_language: &'static str,
        context_id: String,
    },
    #[serde(rename_all = "camelCase")]
    Before {
        call_id: String,
        step_id: String,
        start_time: f64,
        title: String,
        class: &'static str,
        method: &'static str,
        params: Params,
        #[serde(skip_serializing_if = "Option::is_none")]
        page_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_id: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Log {
        call_id: String,
        time: f64,
        message: String,
    },
    #[serde(rename_all = "camelCase")]
    After {
        call_id: String,
        end_time: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<ActionError>,
    },
    #[serde(rename_all = "camelCase")]
    ScreencastFrame {
        page_id: String,
        sha1: String,
        width: u32,
        height: u32,
        timestamp: f64,
    },
    #[serde(rename_all = "camelCase")]
    Console {
        time: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        page_id: Option<String>,
        message_type: &'static str,
        text: String,
        args: [(); 0],
        location: Location,
    },
    ResourceSnapshot {
        snapshot: har::Entry,
    },
}

#[derive(Debug, Default, Serialize)]
pub(crate) struct ContextOptions {}

/// What the viewer's Call tab lists for an action: where it happened and its outcome.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Params {
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<usize>,
    status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    page: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ActionError {
    name: &'static str,
    message: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Location {
    url: String,
    line_number: u32,
    column_number: u32,
}

/// A frame the archive writer is to add as a `screencast-frame`, in time order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameRef {
    /// The artifact's path as the journal names it (opened confined, never shown).
    pub raw_path: String,
    pub at_ms: u64,
    pub page_id: String,
}

/// What the trace counts, for the caller and the tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub actions: usize,
    pub failed_actions: usize,
    pub requests: usize,
    pub console: usize,
    /// Failures of no request or console kind (a lost connection, a payload that fit no kind):
    /// a log line of their step, not an event.
    pub other_failures: usize,
}

/// The events of the run in `tl`, as `trace.trace` (without frames) and `trace.network`
/// lines, and the frames to add.
pub(crate) struct Built {
    pub trace: Vec<Event>,
    pub network: Vec<Event>,
    pub frames: Vec<FrameRef>,
    pub counts: Counts,
}

/// A millisecond time as the trace writes it (Playwright's monotonic clock is a float).
fn t(ms: u64) -> f64 {
    ms as f64
}

/// The page id of a tab: stable across the trace, no handle of the run in it.
fn page_id(page: Option<&Page>) -> Option<String> {
    page.and_then(|p| p.tab).map(|tab| format!("page@{tab}"))
}

/// A headline as one line of plain text.
pub(crate) fn title(h: &Headline) -> String {
    let parts = [
        Some(h.verb.as_str()),
        h.object.as_deref(),
        h.note.as_deref(),
    ];
    let words: Vec<&str> = parts
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect();
    words.join(" ")
}

/// The word `method` of an action: which kind of step it is.
fn method(what: &What) -> &'static str {
    match what {
        What::Setup => "setup",
        What::Navigate { .. } => "navigate",
        What::Reload => "reload",
        What::History => "history",
        What::Click { .. } => "click",
        What::Tap { .. } => "tap",
        What::Scroll => "scroll",
        What::Type { .. } => "type",
        What::Press { .. } => "press",
        What::Screenshot => "screenshot",
        What::OpenPage { .. } => "openPage",
        What::ClosePage => "closePage",
        What::CloseBrowser => "closeBrowser",
        What::Upload { .. } => "upload",
        What::Pdf => "pdf",
        What::StopLoading => "stopLoading",
        What::Action { .. } => "action",
        What::ToolCall(_) => "toolCall",
        What::Gateway { .. } => "gateway",
        What::Generic { .. } => "record",
        What::Gap { .. } => "notShown",
    }
}

/// The error of an action: its record's failure, else a typing verdict that did not land
/// (its value-free note). A verdict that could not be read is not an error.
fn action_error(
    outcome: &Outcome,
    error: Option<&String>,
    verdict: Option<&Verdict>,
) -> Option<ActionError> {
    let failed = matches!(outcome, Outcome::Error | Outcome::Interrupted);
    let not_landed = verdict.filter(|v| v.verified == Verified::False);
    if !failed && not_landed.is_none() {
        return None;
    }
    let mut parts = Vec::new();
    if failed {
        parts.push(match error {
            Some(e) => e.clone(),
            None => format!("the step's status is {}", outcome.word()),
        });
    }
    if let Some(v) = not_landed {
        parts.push(format!(
            "the typed text did not land ({}): {}",
            v.reason, v.note
        ));
    }
    Some(ActionError {
        name: "Error",
        message: parts.join("; "),
    })
}

fn verdict_of(what: &What) -> Option<&Verdict> {
    match what {
        What::Type { verdict, .. } => verdict.as_ref(),
        _ => None,
    }
}

/// Builds every event of the run. `run_id` titles the trace.
pub(crate) fn build(tl: &Timeline, run_id: &str) -> Built {
    let start = tl
        .start_ms
        .or_else(|| tl.steps.iter().find_map(|s| s.at_ms))
        .unwrap_or(0);
    let mut b = Builder {
        built: Built {
            trace: vec![Event::ContextOptions {
                version: VERSION,
                origin: "library",
                browser_name: "chromium",
                platform: "cdp-relay",
                wall_time: t(start),
                monotonic_time: t(start),
                title: format!("cdp-relay run {run_id}"),
                options: ContextOptions::default(),
                sdk_language: "javascript",
                context_id: format!("run@{run_id}"),
            }],
            network: Vec::new(),
            frames: Vec::new(),
            counts: Counts::default(),
        },
        last_ms: start,
    };
    for (index, step) in tl.steps.iter().enumerate() {
        b.step(index, step);
    }
    for f in &tl.failures {
        b.failure(tl, f);
    }
    b.built
        .frames
        .sort_by(|a, b| (a.at_ms, &a.raw_path).cmp(&(b.at_ms, &b.raw_path)));
    b.built.frames.dedup_by(|a, b| a.raw_path == b.raw_path);
    b.built
}

struct Builder {
    built: Built,
    /// The last time known: a record without one is placed there (its step says so).
    last_ms: u64,
}

/// An action before its events are written.
struct Action {
    call_id: String,
    parent_id: Option<String>,
    title: String,
    method: &'static str,
    params: Params,
    page_id: Option<String>,
    start: u64,
    end: u64,
    error: Option<ActionError>,
    log: Vec<(u64, String)>,
}

impl Builder {
    fn step(&mut self, index: usize, s: &Step) {
        let at = s.at_ms.unwrap_or(self.last_ms);
        self.last_ms = self.last_ms.max(at);
        let pid = page_id(s.page.as_ref());
        if let Some(pid) = &pid {
            for f in &s.frames {
                self.built.frames.push(FrameRef {
                    raw_path: f.raw_path.clone(),
                    at_ms: f.at_ms.unwrap_or(at),
                    page_id: pid.clone(),
                });
            }
        }
        // The setup step is what happened before the first step: its frames are kept, it is
        // no action of the agent's.
        if matches!(s.what, What::Setup) {
            return;
        }
        let call_id = format!("call@{index}");
        let mut end = at + s.duration_ms.unwrap_or(0);
        // A tool call lasts until its last browser action ends (a viewer nests them by time).
        if let What::ToolCall(call) = &s.what {
            for e in &call.effects {
                end = end.max(e.at_ms.unwrap_or(at) + e.duration_ms.unwrap_or(0));
            }
        }
        let mut log: Vec<(u64, String)> = Vec::new();
        if !s.time_known {
            log.push((at, "time unknown: placed after the step before it".into()));
        }
        if let Some(v) = verdict_of(&s.what) {
            log.push((end, verdict_line(v)));
        }
        if let Some(w) = &s.withheld {
            log.push((at, format!("frame withheld: {w}")));
        }
        log.extend(s.plumbing.iter().map(|p| plumb_line(p, at)));
        if s.more_plumbing > 0 {
            log.push((end, format!("… and {} more folded", s.more_plumbing)));
        }
        self.push(Action {
            call_id: call_id.clone(),
            parent_id: None,
            title: title(&s.what.headline(s.repeat)),
            method: method(&s.what),
            params: Params {
                step: s.number,
                status: s.outcome.word().to_owned(),
                page: s.page.as_ref().and_then(|p| p.url.clone()),
                source: s.source.clone(),
                tool: s.tool.clone(),
            },
            page_id: pid.clone(),
            start: at,
            end,
            error: action_error(&s.outcome, s.error.as_ref(), verdict_of(&s.what)),
            log,
        });
        if let What::ToolCall(call) = &s.what {
            for (k, e) in call.effects.iter().enumerate() {
                self.effect(&call_id, k, e, pid.clone(), at);
            }
        }
    }

    fn effect(&mut self, parent: &str, k: usize, e: &Effect, pid: Option<String>, at: u64) {
        let start = e.at_ms.unwrap_or(at);
        let end = start + e.duration_ms.unwrap_or(0);
        self.push(Action {
            call_id: format!("{parent}.{k}"),
            parent_id: Some(parent.to_owned()),
            title: title(&e.headline()),
            method: method(&e.what),
            params: Params {
                status: e.outcome.word().to_owned(),
                ..Params::default()
            },
            page_id: pid,
            start,
            end,
            error: action_error(&e.outcome, e.error.as_ref(), e.verdict()),
            log: e
                .verdict()
                .map(|v| (end, verdict_line(v)))
                .into_iter()
                .collect(),
        });
    }

    fn push(&mut self, a: Action) {
        self.built.counts.actions += 1;
        self.built.counts.failed_actions += usize::from(a.error.is_some());
        self.built.trace.push(Event::Before {
            call_id: a.call_id.clone(),
            step_id: a.call_id.clone(),
            start_time: t(a.start),
            title: a.title,
            class: CLASS,
            method: a.method,
            params: a.params,
            page_id: a.page_id,
            parent_id: a.parent_id,
        });
        for (time, message) in a.log {
            self.built.trace.push(Event::Log {
                call_id: a.call_id.clone(),
                time: t(time),
                message,
            });
        }
        self.built.trace.push(Event::After {
            call_id: a.call_id,
            end_time: t(a.end),
            error: a.error,
        });
    }

    /// A failure: a request as a network entry, a console entry as a console event, anything
    /// else counted (its step's report says it).
    fn failure(&mut self, tl: &Timeline, f: &Failure) {
        let step = tl.step_of(f);
        let at = f.at_ms.or(step.at_ms).unwrap_or(self.last_ms);
        let pid = page_id(step.page.as_ref());
        match &f.what {
            FailWhat::Request { .. } => {
                let Some(mut entry) = har::entry(tl, f) else {
                    return;
                };
                entry.pageref = pid;
                entry.monotonic_time = Some(t(at));
                self.built.counts.requests += 1;
                self.built
                    .network
                    .push(Event::ResourceSnapshot { snapshot: entry });
            }
            FailWhat::Console {
                level,
                text,
                url,
                line,
                column,
            } => {
                self.built.counts.console += 1;
                let text = match f.repeat {
                    Some(r) => format!("{text} (and {} more times)", r.count),
                    None => text.clone(),
                };
                self.built.trace.push(Event::Console {
                    time: t(at),
                    page_id: pid,
                    message_type: message_type(*level),
                    text,
                    args: [],
                    location: Location {
                        url: url.clone().unwrap_or_default(),
                        // Playwright's are 0-based; the journal's 1-based.
                        line_number: line.unwrap_or(1).saturating_sub(1),
                        column_number: column.unwrap_or(1).saturating_sub(1),
                    },
                });
            }
            FailWhat::ConnectionLost { .. } | FailWhat::Generic { .. } => {
                self.built.counts.other_failures += 1;
            }
        }
    }
}

fn verdict_line(v: &Verdict) -> String {
    format!("typing {} ({}): {}", v.words(), v.reason, v.note)
}

fn plumb_line(p: &Plumb, at: u64) -> (u64, String) {
    let mut line = format!("+ {}", p.label);
    if let Some(d) = p.duration_ms {
        line.push_str(&format!(" ({})", crate::text::duration(d)));
    }
    if matches!(p.outcome, Outcome::Error | Outcome::Interrupted) {
        line.push_str(": failed");
        if let Some(e) = &p.error {
            line.push_str(&format!(": {e}"));
        }
    }
    (p.at_ms.unwrap_or(at), line)
}

/// Playwright's console message types for the journal's levels (an uncaught exception is an
/// error there too).
fn message_type(level: ConsoleLevel) -> &'static str {
    match level {
        ConsoleLevel::Warning => "warning",
        ConsoleLevel::Assert => "assert",
        ConsoleLevel::Error | ConsoleLevel::Exception => "error",
    }
}
