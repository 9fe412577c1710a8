//! The payloads of the built-in kinds, in one schema for writing and reading: each struct is
//! generic over a [`Form`], the set of string types it is made of. [`Sanitized`] (the write side:
//! `Safe*` types, `Serialize` only) and [`Stored`] (the read side: plain `String`s and JSON,
//! `Deserialize` only) share the field names, casing and optionality written once in the
//! derives. The words a payload carries (a method, a level, an event, a reason) are the
//! vocabulary's types (`crate::vocab`), the same on both sides.

use crate::record::tool::{ToolArgumentOf, ToolResult};
use crate::vocab::{ActionMethod, ConsoleLevel, LifecycleEvent, VerdictReason};
use cdp_sanitize::{InputSummary, InputType, SafeJson, SafeText, SafeUrl, Word};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Sanitized {}
    impl Sealed for super::Stored {}
}

/// The string types a payload is built from: [`Sanitized`] to write, [`Stored`] to read.
/// Sealed: there are exactly these two forms.
///
/// The write form cannot be deserialized, and the read form cannot be appended:
///
/// ```compile_fail
/// let a: cdp_evidence::Action = serde_json::from_str(r#"{"method":"x"}"#).unwrap();
/// ```
///
/// ```compile_fail
/// let a: cdp_evidence::StoredAction = serde_json::from_str(r#"{"method":"x"}"#).unwrap();
/// let _ = cdp_evidence::RecordKind::Action(a);
/// ```
pub trait Form: sealed::Sealed + Clone + fmt::Debug + PartialEq + 'static {
    /// Free text (`text`, `detail` of a lifecycle event, another producer's word).
    type Text: Clone + fmt::Debug + PartialEq + AsRef<str>;
    /// A URL reduced to origin and path.
    type Url: Clone + fmt::Debug + PartialEq;
    /// Small structured detail.
    type Json: Clone + fmt::Debug + PartialEq;
    /// Typed input reduced to its length and input type.
    type Input: Clone + fmt::Debug + PartialEq;
}

/// The write form: every string is a `cdp_sanitize` type, so a payload is sanitized by
/// construction. Payloads of this form serialize; they never deserialize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sanitized {}

impl Form for Sanitized {
    type Text = SafeText;
    type Url = SafeUrl;
    type Json = SafeJson;
    type Input = InputSummary;
}

/// The read form: plain strings and JSON as read back from a journal, whoever wrote it. Not
/// proof of sanitization, and not accepted by [`RecordKind`](crate::RecordKind), so it cannot be written back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {}

impl Form for Stored {
    type Text = String;
    type Url = String;
    type Json = Value;
    type Input = StoredInput;
}

/// `payload.input` as read back (the read side of `cdp_sanitize::InputSummary`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredInput {
    /// Number of characters typed.
    pub chars: u64,
    /// The field kind (`password`, `text`, ...); absent from some foreign producers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_type: Option<Word<InputType>>,
    /// What stands for the typed text in a replay: the name of a registered secret the text
    /// equals, else `TYPED_<n>` (the name its echoes are masked as); absent from runs recorded
    /// before and from some foreign producers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
}

/// `kind: "network"` as read back (the read side of `cdp_sanitize::NetworkFailure`, whose
/// fields are private to the sanitizer; a test pins the two schemas together).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredNetwork {
    /// HTTP method.
    pub method: String,
    /// Origin and path.
    pub url: String,
    /// HTTP status, if a response arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// CDP resource type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// Time from request to failure (fractions rounded).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_millis"
    )]
    pub duration_ms: Option<u64>,
    /// Failure text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_text: Option<String>,
}

/// A non-negative number of milliseconds; fractions are rounded (other producers write them).
fn lenient_millis<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Option::<f64>::deserialize(d)?;
    match v {
        None => Ok(None),
        Some(f) if f.is_finite() && f >= 0.0 => Ok(Some(f.round() as u64)),
        Some(_) => Err(serde::de::Error::custom("not a non-negative number")),
    }
}

/// A path relative to the run directory (`artifacts/<file>`). Only the artifact store makes one,
/// so a record can never point outside its run.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct ArtifactRef(String);

impl ArtifactRef {
    pub(crate) fn new(relative: String) -> ArtifactRef {
        ArtifactRef(relative)
    }

    /// The path relative to the run directory, e.g. `artifacts/000001-screenshot.png`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A click or touch point in CSS pixels.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Horizontal position.
    pub x: f64,
    /// Vertical position.
    pub y: f64,
}

/// `kind: "action"` — a client command worth a filmstrip step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "F::Text: Serialize, F::Url: Serialize, F::Json: Serialize, F::Input: Serialize",
        deserialize = "F::Text: Deserialize<'de>, F::Url: Deserialize<'de>, F::Json: Deserialize<'de>, F::Input: Deserialize<'de>, Word<ActionMethod, F::Text>: Deserialize<'de>, Word<VerdictReason, F::Text>: Deserialize<'de>, ToolArgumentOf<F>: Deserialize<'de>"
    )
)]
#[non_exhaustive]
pub struct ActionOf<F: Form> {
    /// What was done: one of the relay's verbs or a CDP method (`click`, `Page.navigate`), or
    /// another producer's verb.
    pub method: Word<ActionMethod, F::Text>,
    /// The sanitized URL involved (navigation target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<F::Url>,
    /// Typed text reduced to length and input type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<F::Input>,
    /// Where a click or tap landed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<Point>,
    /// For a click, a typing step, a `select` or a file choice: how a replay finds the element
    /// ([`LocatorOf`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<LocatorOf<F>>,
    /// For a click: the element the pointer rested on before it for the clicked one to show (a
    /// menu opened by hovering), which a replay hovers first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hover: Option<LocatorOf<F>>,
    /// For a `select` step: the labels of the options chosen (page text, sanitized).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<F::Text>>,
    /// For a click: `false` when the page never received the press (a listener on the window
    /// stopped it before the document, as a client's hit-target check does before it retries
    /// the click); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received: Option<bool>,
    /// A size in bytes (an evaluated expression, a screenshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Small sanitized extra detail ([`crate::ActionDetail`] for the members the format knows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<F::Json>,
    /// For a typing step: whether the typed text landed in the field the burst started in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<VerificationOf<F>>,
    /// For an agent's tool call: its arguments, reduced (see [`crate::ToolArgument`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<ToolArgumentOf<F>>>,
    /// For an agent's tool call: what it returned, as counts and `isError` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ToolResult>,
    /// An agent's own name for a step (`evidence_mark_step`), sanitized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<F::Text>,
}

/// `payload.target` of a click, a typing step, a `select` or a file choice: exactly one locator
/// for the element, the first that exists and picks it out alone in the order Playwright's code
/// generator prefers — a test id (`testId`), an ARIA role and accessible name (`role` + `name`),
/// a label, a placeholder, its text, a short CSS selector (`css`) — with `exact` when the whole
/// name (label, placeholder, text) picks it out, and `frames` (the CSS selector of each
/// `<iframe>` on the way down, outermost first) when the element is in a child frame; or
/// `replayable: false` and a value-free `why`. Its text is page text, sanitized; a name that held
/// typed text is never recorded (the step is not replayable instead).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "F::Text: Serialize",
        deserialize = "F::Text: Deserialize<'de>"
    )
)]
#[non_exhaustive]
pub struct LocatorOf<F: Form> {
    /// The element's `data-testid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_id: Option<F::Text>,
    /// Its ARIA role (explicit, or implicit: `button`, `link`, `textbox`, …), with `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<F::Text>,
    /// Its accessible name, with `role`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<F::Text>,
    /// The text of its label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<F::Text>,
    /// Its placeholder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<F::Text>,
    /// Its text (`getByText`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<F::Text>,
    /// A short CSS selector (by id, by `tag[name="…"]`, a short path down from an id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub css: Option<F::Text>,
    /// `true` when the name, label, placeholder or text matches as a whole, case-sensitively
    /// (Playwright's `exact: true`); absent: as a case-insensitive substring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<bool>,
    /// The CSS selector of each `<iframe>` between the top document and the element, outermost
    /// first, each in its parent document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<Vec<F::Text>>,
    /// One frame level, as runs recorded before `frames` wrote it; read, never written.
    #[serde(default, skip_serializing)]
    pub frame: Option<F::Text>,
    /// `false` when no locator is safe to record; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayable: Option<bool>,
    /// Why it is not replayable: one value-free sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<F::Text>,
}

/// A locator to write (sanitized form).
pub type Locator = LocatorOf<Sanitized>;
/// A locator as read back from a journal.
pub type StoredLocator = LocatorOf<Stored>;

impl<F: Form> LocatorOf<F> {
    fn empty() -> LocatorOf<F> {
        LocatorOf {
            test_id: None,
            role: None,
            name: None,
            label: None,
            placeholder: None,
            text: None,
            css: None,
            exact: None,
            frames: None,
            frame: None,
            replayable: None,
            why: None,
        }
    }

    /// By `data-testid`.
    pub fn test_id(id: F::Text) -> LocatorOf<F> {
        LocatorOf {
            test_id: Some(id),
            ..LocatorOf::empty()
        }
    }

    /// By ARIA role and accessible name.
    pub fn role(role: F::Text, name: F::Text) -> LocatorOf<F> {
        LocatorOf {
            role: Some(role),
            name: Some(name),
            ..LocatorOf::empty()
        }
    }

    /// By label text.
    pub fn label(label: F::Text) -> LocatorOf<F> {
        LocatorOf {
            label: Some(label),
            ..LocatorOf::empty()
        }
    }

    /// By placeholder.
    pub fn placeholder(placeholder: F::Text) -> LocatorOf<F> {
        LocatorOf {
            placeholder: Some(placeholder),
            ..LocatorOf::empty()
        }
    }

    /// By its text.
    pub fn text(text: F::Text) -> LocatorOf<F> {
        LocatorOf {
            text: Some(text),
            ..LocatorOf::empty()
        }
    }

    /// By a CSS selector.
    pub fn css(css: F::Text) -> LocatorOf<F> {
        LocatorOf {
            css: Some(css),
            ..LocatorOf::empty()
        }
    }

    /// Not replayable, and why (value-free).
    pub fn not_replayable(why: F::Text) -> LocatorOf<F> {
        LocatorOf {
            replayable: Some(false),
            why: Some(why),
            ..LocatorOf::empty()
        }
    }

    /// The same locator, matching its name, label, placeholder or text as a whole.
    pub fn exactly(mut self) -> LocatorOf<F> {
        self.exact = Some(true);
        self
    }

    /// The same locator, inside the `<iframe>`s `frames` select, outermost first (none: the top
    /// document).
    pub fn in_frames(mut self, frames: Vec<F::Text>) -> LocatorOf<F> {
        self.frames = (!frames.is_empty()).then_some(frames);
        self
    }

    /// Whether the name, label, placeholder or text matches as a whole.
    pub fn is_exact(&self) -> bool {
        self.exact == Some(true)
    }

    /// The `<iframe>` selectors on the way down to the element, outermost first: `frames`, or
    /// the one `frame` of runs recorded before it.
    pub fn frame_path(&self) -> Vec<&str> {
        match (&self.frames, &self.frame) {
            (Some(frames), _) => frames.iter().map(AsRef::as_ref).collect(),
            (None, Some(frame)) => vec![frame.as_ref()],
            (None, None) => Vec::new(),
        }
    }

    /// Which locator this is, in the format's order; `None` for one that names none.
    pub fn kind(&self) -> Option<LocatorKind<'_>> {
        if self.replayable == Some(false) {
            return Some(LocatorKind::NotReplayable(
                self.why.as_ref().map_or("", AsRef::as_ref),
            ));
        }
        fn t<T: AsRef<str>>(v: &Option<T>) -> Option<&str> {
            v.as_ref().map(AsRef::as_ref)
        }
        Some(if let Some(id) = t(&self.test_id) {
            LocatorKind::TestId(id)
        } else if let (Some(role), Some(name)) = (t(&self.role), t(&self.name)) {
            LocatorKind::Role { role, name }
        } else if let Some(label) = t(&self.label) {
            LocatorKind::Label(label)
        } else if let Some(p) = t(&self.placeholder) {
            LocatorKind::Placeholder(p)
        } else if let Some(text) = t(&self.text) {
            LocatorKind::Text(text)
        } else if let Some(css) = t(&self.css) {
            LocatorKind::Css(css)
        } else {
            return None;
        })
    }
}

/// A [`LocatorOf`] read as the one locator it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocatorKind<'a> {
    /// `getByTestId(id)`.
    TestId(&'a str),
    /// `getByRole(role, { name })`.
    Role {
        /// The ARIA role.
        role: &'a str,
        /// The accessible name.
        name: &'a str,
    },
    /// `getByLabel(label)`.
    Label(&'a str),
    /// `getByPlaceholder(placeholder)`.
    Placeholder(&'a str),
    /// `getByText(text)`.
    Text(&'a str),
    /// `locator(css)`.
    Css(&'a str),
    /// Not replayable, and why.
    NotReplayable(&'a str),
}

/// Whether typed text landed: `true`, `false`, or `"indeterminate"` in the journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verified {
    /// The field changed exactly as the typed text would change it.
    True,
    /// The text did not land, or only part of it did.
    False,
    /// No honest yes or no: the reading could not run, or what it saw fits both.
    Indeterminate,
}

impl Verified {
    /// How `Indeterminate` is written (`true` and `false` are JSON booleans).
    const INDETERMINATE: &'static str = "indeterminate";
}

impl Serialize for Verified {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Verified::True => s.serialize_bool(true),
            Verified::False => s.serialize_bool(false),
            Verified::Indeterminate => s.serialize_str(Verified::INDETERMINATE),
        }
    }
}

impl<'de> Deserialize<'de> for Verified {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Verified, D::Error> {
        match Value::deserialize(d)? {
            Value::Bool(true) => Ok(Verified::True),
            Value::Bool(false) => Ok(Verified::False),
            Value::String(s) if s == Verified::INDETERMINATE => Ok(Verified::Indeterminate),
            _ => Err(serde::de::Error::custom(
                "expected true, false or \"indeterminate\"",
            )),
        }
    }
}

/// `payload.verification` of a typing step: the verdict and a value-free account of it (counts
/// and structural facts, never characters).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "F::Text: Serialize",
        deserialize = "F::Text: Deserialize<'de>, Word<VerdictReason, F::Text>: Deserialize<'de>"
    )
)]
#[non_exhaustive]
pub struct VerificationOf<F: Form> {
    /// The verdict.
    pub verified: Verified,
    /// Why (`landed`, `dropped-characters`, `sensitive-field`, …).
    pub reason: Word<VerdictReason, F::Text>,
    /// One value-free sentence for people.
    pub note: F::Text,
    /// Characters typed in the burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<u64>,
    /// How many characters the field's length changed by (negative when it shrank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grew: Option<i64>,
    /// Fields the burst's input went to, when more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<u64>,
}

/// A verification to write (sanitized form).
pub type Verification = VerificationOf<Sanitized>;
/// A verification as read back from a journal.
pub type StoredVerification = VerificationOf<Stored>;

impl Verification {
    /// A verdict with its reason and note; counts are set as known.
    pub fn new(
        verified: Verified,
        reason: impl Into<Word<VerdictReason, SafeText>>,
        note: SafeText,
    ) -> Verification {
        Verification {
            verified,
            reason: reason.into(),
            note,
            expected: None,
            grew: None,
            fields: None,
        }
    }
}

/// An action to write (sanitized form).
pub type Action = ActionOf<Sanitized>;
/// An action as read back from a journal.
pub type StoredAction = ActionOf<Stored>;

impl StoredAction {
    /// The members of `detail` the format knows ([`crate::ActionDetail::read`]).
    pub fn details(&self) -> crate::ActionDetail {
        crate::ActionDetail::read(self.detail.as_ref())
    }
}

impl Action {
    /// An action with only its method (an [`ActionMethod`], or another producer's verb as
    /// `Word::from_text`); set the other fields as needed.
    pub fn new(method: impl Into<Word<ActionMethod, SafeText>>) -> Action {
        Action {
            method: method.into(),
            url: None,
            input: None,
            point: None,
            target: None,
            hover: None,
            options: None,
            received: None,
            bytes: None,
            detail: None,
            verification: None,
            arguments: None,
            result: None,
            label: None,
        }
    }
}

/// `kind: "console"` — a console error, warning, assertion or uncaught exception.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "F::Text: Serialize, F::Url: Serialize",
        deserialize = "F::Text: Deserialize<'de>, F::Url: Deserialize<'de>"
    )
)]
#[non_exhaustive]
pub struct ConsoleOf<F: Form> {
    /// Severity.
    pub level: ConsoleLevel,
    /// The sanitized message.
    pub text: F::Text,
    /// Sanitized source URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<F::Url>,
    /// 1-based source line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based source column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

/// A console entry to write (sanitized form).
pub type Console = ConsoleOf<Sanitized>;
/// A console entry as read back from a journal.
pub type StoredConsole = ConsoleOf<Stored>;

impl Console {
    /// A console entry without a source location.
    pub fn new(level: ConsoleLevel, text: SafeText) -> Console {
        Console {
            level,
            text,
            url: None,
            line: None,
            column: None,
        }
    }
}

/// `kind: "lifecycle"` — a connection event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "F::Text: Serialize",
        deserialize = "F::Text: Deserialize<'de>"
    )
)]
#[non_exhaustive]
pub struct LifecycleOf<F: Form> {
    /// What happened.
    pub event: LifecycleEvent,
    /// The producer's handle for the connection (a counter, never a CDP id).
    pub connection: u64,
    /// Websocket close code, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_code: Option<u16>,
    /// Sanitized detail (close reason, endpoint kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<F::Text>,
}

/// A connection event to write (sanitized form).
pub type Lifecycle = LifecycleOf<Sanitized>;
/// A connection event as read back from a journal.
pub type StoredLifecycle = LifecycleOf<Stored>;

impl Lifecycle {
    /// An event on connection `connection`.
    pub fn new(event: LifecycleEvent, connection: u64) -> Lifecycle {
        Lifecycle {
            event,
            connection,
            close_code: None,
            detail: None,
        }
    }
}
