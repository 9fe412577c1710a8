//! The timeline's types: steps, what they did, the pages they happened on, folded plumbing,
//! frames and failures. Plain data, built by [`super::build_from`]; every string in them has been
//! through [`crate::text`].

use crate::limits::MAX_STATUS_WORD;
use crate::text::line;
use cdp_evidence::{
    ConsoleLevel, InputType, Kind, MouseButton, Status, VerdictReason, Verified, Word,
};
use std::collections::BTreeMap;

/// A record's outcome as the report shows it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Outcome {
    Info,
    Ok,
    /// A status word outside the format's four (shown as written, cleaned).
    Other(String),
    /// No `status` field.
    Missing,
    Interrupted,
    Error,
}

impl Outcome {
    pub(crate) fn of(status: Option<Word<Status, &str>>) -> Outcome {
        match status {
            Some(Word::Known(Status::Ok)) => Outcome::Ok,
            Some(Word::Known(Status::Error)) => Outcome::Error,
            Some(Word::Known(Status::Interrupted)) => Outcome::Interrupted,
            Some(Word::Known(Status::Info)) => Outcome::Info,
            Some(Word::Other(other)) => Outcome::Other(line(other, MAX_STATUS_WORD)),
            None => Outcome::Missing,
        }
    }

    /// The word shown in a badge.
    pub(crate) fn word(&self) -> &str {
        match self {
            Outcome::Ok => Status::Ok.as_str(),
            Outcome::Error => Status::Error.as_str(),
            Outcome::Interrupted => Status::Interrupted.as_str(),
            Outcome::Info => Status::Info.as_str(),
            Outcome::Missing => "no status",
            Outcome::Other(s) => s,
        }
    }

    /// CSS class of the badge.
    pub(crate) fn class(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Interrupted => "interrupted",
            Outcome::Info | Outcome::Missing | Outcome::Other(_) => "info",
        }
    }
}

/// The page a step happened on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Page {
    pub title: Option<String>,
    pub url: Option<String>,
    /// 1-based tab number by first appearance of the target handle.
    pub tab: Option<usize>,
}

/// What a step did.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum What {
    Setup,
    Navigate {
        url: Option<String>,
    },
    Reload,
    History,
    Click {
        x: f64,
        y: f64,
        button: Option<Word<MouseButton>>,
        count: Option<u64>,
    },
    Tap {
        x: Option<f64>,
        y: Option<f64>,
    },
    Scroll,
    Type {
        chars: u64,
        input_type: Option<Word<InputType>>,
        /// `payload.verification`: whether the text landed, and why (value-free).
        verdict: Option<Verdict>,
    },
    Press {
        key: Option<String>,
    },
    Screenshot,
    OpenPage {
        url: Option<String>,
    },
    ClosePage,
    CloseBrowser,
    Upload {
        files: Option<u64>,
    },
    Pdf,
    StopLoading,
    /// Any other action method (from the relay or another producer).
    Action {
        method: String,
        url: Option<String>,
    },
    /// An agent's tool call, with the CDP actions done during it.
    ToolCall(Box<super::ToolCall>),
    /// An event of the MCP gateway (the agent left, the wrapped server exited, a signal).
    Gateway {
        words: String,
        detail: Option<String>,
    },
    /// A record of a kind this renderer does not know, or whose payload did not fit its kind.
    Generic {
        kind: String,
        method: Option<String>,
    },
    /// Steps left out between the first and the last ones kept (a run too long to show
    /// whole), until the time of the next step shown.
    Gap {
        steps: u64,
        until_ms: Option<u64>,
        /// Browser actions the agent's tool calls among them did (not shown).
        effects: u64,
    },
}

/// A headline: a fixed verb from this renderer and an optional object from the journal.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Headline {
    pub verb: String,
    /// Journal text (a URL, a key, a method): shown in code style, escaped.
    pub object: Option<String>,
    /// Short fixed detail after the object: `(password)`, `×3`.
    pub note: Option<String>,
}

impl What {
    pub(crate) fn headline(&self, repeat: u32) -> Headline {
        let h = |verb: &str, object: Option<&String>, note: Option<String>| Headline {
            verb: verb.to_owned(),
            object: object.cloned(),
            note,
        };
        let times = (repeat > 1).then(|| format!("×{repeat}"));
        match self {
            What::Setup => h("Setup", None, Some("before the first step".into())),
            What::Navigate { url } => h("Navigated to", url.as_ref(), None),
            What::Reload => h("Reloaded the page", None, None),
            What::History => h("Went back or forward in history", None, None),
            What::Click {
                x,
                y,
                button,
                count,
            } => {
                let button = button.as_ref().and_then(Word::known);
                let verb = match (button, count) {
                    (Some(MouseButton::Right), _) => "Right-clicked",
                    (Some(MouseButton::Middle), _) => "Middle-clicked",
                    (_, Some(2)) => "Double-clicked",
                    (_, Some(3)) => "Triple-clicked",
                    _ => "Clicked",
                };
                h(
                    verb,
                    None,
                    Some(format!("at ({}, {})", coord(*x), coord(*y))),
                )
            }
            What::Tap {
                x: Some(x),
                y: Some(y),
            } => h(
                "Tapped",
                None,
                Some(format!("at ({}, {})", coord(*x), coord(*y))),
            ),
            What::Tap { .. } => h("Tapped", None, None),
            What::Scroll => h("Scrolled", None, times),
            What::Type {
                chars, input_type, ..
            } => {
                let what = if *chars == 1 { "char" } else { "chars" };
                let note = input_type.as_ref().map(|t| format!("({t})"));
                h(&format!("Typed {chars} {what}"), None, note)
            }
            What::Press { key } => h("Pressed", key.as_ref(), times),
            What::Screenshot => h("Took a screenshot", None, None),
            What::OpenPage { url } => h("Opened a new page", url.as_ref(), None),
            What::ClosePage => h("Closed a page", None, None),
            What::CloseBrowser => h("Closed the browser", None, None),
            What::Upload { files } => h(
                "Chose files to upload",
                None,
                files.map(|n| format!("({n})")),
            ),
            What::Pdf => h("Printed the page to PDF", None, None),
            What::StopLoading => h("Stopped loading", None, None),
            What::Action { method, url } => Headline {
                verb: String::new(),
                object: Some(method.clone()),
                note: url.as_ref().map(|u| format!("→ {u}")),
            },
            What::Gap { steps, .. } => Headline {
                verb: format!(
                    "{steps} more {} not shown",
                    if *steps == 1 { "step" } else { "steps" }
                ),
                object: None,
                note: Some("(the run is too long to show whole)".into()),
            },
            What::ToolCall(call) => call.headline(),
            What::Gateway { words, detail } => Headline {
                verb: words.clone(),
                object: None,
                note: detail.as_ref().map(|d| format!("({d})")),
            },
            What::Generic { kind, method } => Headline {
                verb: String::new(),
                object: Some(match method {
                    Some(m) => format!("{kind}: {m}"),
                    None => kind.clone(),
                }),
                note: None,
            },
        }
    }
}

fn coord(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e9 {
        format!("{}", v as i64)
    } else if v.is_finite() {
        format!("{v:.1}")
    } else {
        "?".to_owned()
    }
}

/// Categories of folded plumbing, in the order a fold summary lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Category {
    Evaluation,
    Query,
    Attach,
    Screencast,
    Connection,
    /// The relay's own frames (`frame` records of the observer): their picture goes to the step.
    Frame,
}

impl Category {
    pub(crate) fn words(self, n: usize) -> &'static str {
        match (self, n == 1) {
            (Category::Evaluation, true) => "evaluation",
            (Category::Evaluation, false) => "evaluations",
            (Category::Query, true) => "query",
            (Category::Query, false) => "queries",
            (Category::Attach, _) => "attach/activate",
            (Category::Screencast, true) => "screencast event",
            (Category::Screencast, false) => "screencast events",
            (Category::Connection, true) => "connection event",
            (Category::Connection, false) => "connection events",
            (Category::Frame, true) => "frame",
            (Category::Frame, false) => "frames",
        }
    }
}

/// One folded plumbing record.
#[derive(Clone, Debug)]
pub(crate) struct Plumb {
    pub label: String,
    pub at_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    pub outcome: Outcome,
    pub error: Option<String>,
}

/// Declared image type of an artifact, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ImageType {
    Png,
    Jpeg,
    Webp,
}

impl ImageType {
    pub(crate) fn of(path: &str) -> Option<ImageType> {
        let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match ext.as_str() {
            "png" => ImageType::Png,
            "jpg" | "jpeg" => ImageType::Jpeg,
            "webp" => ImageType::Webp,
            _ => return None,
        })
    }

    pub(crate) fn mime(self) -> &'static str {
        match self {
            ImageType::Png => "image/png",
            ImageType::Jpeg => "image/jpeg",
            ImageType::Webp => "image/webp",
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            ImageType::Png => "PNG",
            ImageType::Jpeg => "JPEG",
            ImageType::Webp => "WebP",
        }
    }

    /// True when `head` starts with this type's file signature.
    pub(crate) fn matches(self, head: &[u8]) -> bool {
        match self {
            ImageType::Png => head.starts_with(b"\x89PNG\r\n\x1a\n"),
            ImageType::Jpeg => head.starts_with(&[0xFF, 0xD8, 0xFF]),
            ImageType::Webp => head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP",
        }
    }
}

/// Why a frame is not in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FrameState {
    /// Not decided yet (before the size policy runs).
    Pending,
    /// Embedded as a `data:` URI.
    Embedded { data_uri: String, bytes: u64 },
    /// Left out by the size policy (the reason is fixed text).
    LeftOut(&'static str),
    /// Refused: not opened, or opened and found not to be what it claims (fixed text).
    Refused(String),
}

/// Why an earlier screencast frame of a step is not shown.
pub(crate) const SUPERSEDED: &str = "an earlier screencast frame of the same step";

/// An image artifact attached to a step.
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    /// The path as written (cleaned for display).
    pub shown_path: String,
    /// The path as written (raw, for opening; never displayed).
    pub raw_path: String,
    pub kind: ImageType,
    pub at_ms: Option<u64>,
    pub state: FrameState,
    /// The byte size seen when it was opened.
    pub size: Option<u64>,
    /// A screencast frame (only the last of a step is kept).
    pub screencast: bool,
}

/// A non-image artifact (listed, never opened).
#[derive(Clone, Debug)]
pub(crate) struct FileRef {
    pub shown_path: String,
    /// `None` when its path is acceptable, else why it is refused.
    pub refused: Option<&'static str>,
}

/// A step of the filmstrip.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// 1-based; `None` for the leading setup step.
    pub number: Option<usize>,
    pub what: What,
    pub repeat: u32,
    pub at_ms: Option<u64>,
    pub time_known: bool,
    pub duration_ms: Option<u64>,
    pub outcome: Outcome,
    pub error: Option<String>,
    /// Producer, when not the relay.
    pub source: Option<String>,
    pub tool: Option<String>,
    pub page: Option<Page>,
    /// The page was not in this record: it is the last one known.
    pub page_inferred: bool,
    pub frames: Vec<Frame>,
    pub files: Vec<FileRef>,
    pub plumbing: Vec<Plumb>,
    /// Indexes into [`Timeline::failures`].
    pub failures: Vec<usize>,
    /// Flattened payload of a generic step.
    pub fields: Vec<(String, String)>,
    /// Why a screenshot was withheld (the relay says so in `detail`).
    pub withheld: Option<String>,
    /// Plumbing per category: (entries, failed), all of them (not only those listed).
    pub plumb_counts: BTreeMap<Category, (usize, usize)>,
    /// Failures during the step, all of them.
    pub failure_count: usize,
    /// Failures, plumbing entries and artifacts of the step not listed (over the caps).
    pub more_failures: usize,
    pub more_plumbing: usize,
    pub more_frames: usize,
}

impl Step {
    pub(crate) fn anchor(&self) -> String {
        match (self.number, &self.what) {
            (Some(n), _) => format!("step-{n}"),
            (None, What::Gap { .. }) => "gap".to_owned(),
            (None, _) => "setup".to_owned(),
        }
    }

    pub(crate) fn label(&self) -> String {
        match self.number {
            Some(n) => n.to_string(),
            None => "Setup".to_owned(),
        }
    }

    /// Plumbing counts per category, and how many of them failed (all of them, listed or not).
    pub(crate) fn fold_counts(&self) -> BTreeMap<Category, (usize, usize)> {
        self.plumb_counts.clone()
    }
}

/// What failed.
#[derive(Clone, Debug)]
pub(crate) enum FailWhat {
    Request {
        method: String,
        url: String,
        status: Option<u16>,
        resource_type: Option<String>,
        duration_ms: Option<u64>,
        error_text: Option<String>,
    },
    Console {
        level: ConsoleLevel,
        text: String,
        url: Option<String>,
        line: Option<u32>,
        column: Option<u32>,
    },
    ConnectionLost {
        detail: Option<String>,
    },
    /// A `network` or `console` record whose payload did not fit its kind.
    Generic {
        kind: Kind,
        fields: Vec<(String, String)>,
    },
}

/// A failed request, console entry or lost connection, under the step current at its time.
#[derive(Clone, Debug)]
pub(crate) struct Failure {
    /// 1-based, in time order (`F3`).
    pub id: usize,
    /// Index into [`Timeline::steps`].
    pub step: usize,
    pub at_ms: Option<u64>,
    pub time_known: bool,
    pub what: FailWhat,
    /// Errors go to the jump list; warnings are listed but not jumped to.
    pub is_error: bool,
    pub source: Option<String>,
    /// Step index of the first frame taken at or after it, when there is one.
    pub frame_after: Option<usize>,
    /// The record stands for this many more occurrences (the relay folded repeats).
    pub repeat: Option<Repeat>,
}

/// A failure's repeats: how many more times, from when to when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Repeat {
    pub count: u64,
    pub first_ms: Option<u64>,
    pub last_ms: Option<u64>,
}

impl Failure {
    pub(crate) fn anchor(&self) -> String {
        format!("f-{}", self.id)
    }
}

/// Run-level notes from markers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Markers {
    pub truncated: Option<(u64, u64)>,
    pub dropped: u64,
    pub repaired: Vec<u64>,
    pub recovered: usize,
    /// Marker words this renderer does not know (cleaned), with counts.
    pub unknown: BTreeMap<String, usize>,
    pub finalized_records: Option<u64>,
    /// `journalTruncated`: (budget, journal size when the first record was refused).
    pub journal_truncated: Option<(u64, u64)>,
    /// Of `dropped`, what could not be written, and what went with a deleted run.
    pub dropped_writes: u64,
    pub dropped_deleted: u64,
}

/// The whole model.
#[derive(Clone, Debug, Default)]
pub(crate) struct Timeline {
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    pub steps: Vec<Step>,
    pub failures: Vec<Failure>,
    pub markers: Markers,
    /// Records per `kind` (cleaned), and per `status`.
    pub kinds: BTreeMap<String, usize>,
    pub statuses: BTreeMap<String, usize>,
    pub records: usize,
    /// Records rendered generically (unknown kind, or a payload that did not fit its kind).
    pub generic: usize,
    /// Records whose `startedAt` is missing or invalid.
    pub bad_times: usize,
    /// Distinct pages (targets) seen.
    pub tabs: usize,
    /// Failures in all (the model keeps only some whole).
    pub totals: super::FailureTotals,
    /// The failures each table shows (indexes into `failures`, in time order), and the jump
    /// list's.
    pub request_rows: Vec<usize>,
    pub console_rows: Vec<usize>,
    pub jump: Vec<usize>,
}

impl Timeline {
    /// Steps in the run: those shown, and those a gap stands for.
    pub(crate) fn real_steps(&self) -> usize {
        self.steps
            .iter()
            .map(|s| match s.what {
                What::Gap { steps, .. } => steps as usize,
                _ => usize::from(s.number.is_some()),
            })
            .sum()
    }

    pub(crate) fn offset(&self, at: Option<u64>) -> Option<i64> {
        let (Some(at), Some(start)) = (at, self.start_ms) else {
            return None;
        };
        Some(at as i64 - start as i64)
    }

    /// When something happened, as an offset from the run's start, or "time unknown".
    pub(crate) fn when(&self, at: Option<u64>, known: bool) -> String {
        match self.offset(at) {
            Some(o) if known => crate::text::offset(o),
            _ => "time unknown".into(),
        }
    }

    pub(crate) fn step_of(&self, f: &Failure) -> &Step {
        &self.steps[f.step]
    }
}

/// A typing step's verification, as the relay's observer judged it in the page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub verified: Verified,
    /// Why (`landed`, `dropped-characters`, …; another producer's word cleaned).
    pub reason: Word<VerdictReason>,
    /// One value-free sentence.
    pub note: String,
}

impl Verdict {
    /// The verdict in words.
    pub(crate) fn words(&self) -> &'static str {
        match self.verified {
            Verified::True => "landed",
            Verified::False => "did not land",
            Verified::Indeterminate => "not verified",
        }
    }
}
