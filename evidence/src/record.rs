//! Records: what a producer appends to the journal, built only from sanitized values.
//!
//! The redaction boundary is expressed in types: every string a [`Record`] can hold is a
//! `cdp_sanitize` type ([`SafeText`], [`SafeUrl`], [`SafeJson`]) or a validated token ([`Source`],
//! [`CustomKind`]'s name), and none of those can be built from runtime text except by the
//! sanitizer. Numbers (durations, coordinates, sizes, counts) carry no text. Nothing here does I/O.
//!
//! One schema for writing and reading: each payload struct is generic over a [`Form`], the set of
//! string types it is made of. [`Sanitized`] (the write side: `Safe*` types, `Serialize` only) and
//! [`Stored`] (the read side: plain `String`s and JSON, `Deserialize` only) share the field
//! names, casing and optionality written once in the derives. A `Stored` payload can never reach
//! the journal: [`RecordKind`] only takes the `Sanitized` form, and `Safe*` types still have no
//! `Deserialize`.

use crate::error::Error;
use crate::ids::{validate_id, ActionId, Source};
use crate::tool::{ToolArgumentOf, ToolResult};
use cdp_sanitize::{InputSummary, NetworkFailure, SafeJson, SafeText, SafeUrl};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::time::{Duration, SystemTime};

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
    /// Free text (`method`, `text`, `detail` of a lifecycle event).
    type Text: Clone + fmt::Debug + PartialEq;
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
/// proof of sanitization, and not accepted by [`RecordKind`], so it cannot be written back.
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
    /// The field kind as written (`password`, `text`, ...); absent from some foreign producers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_type: Option<String>,
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

/// Outcome of a record. A closed set: readers may rely on these four words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    /// The action succeeded.
    Ok,
    /// The action failed, or the record describes a failure (network, console error).
    Error,
    /// No outcome: the connection closed or the producer stopped before the response.
    Interrupted,
    /// Not an action with an outcome: an observation or a marker.
    Info,
}

impl Status {
    /// The journal spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Interrupted => "interrupted",
            Status::Info => "info",
        }
    }

    /// Parses the journal spelling.
    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "ok" => Status::Ok,
            "error" => Status::Error,
            "interrupted" => Status::Interrupted,
            "info" => Status::Info,
            _ => return None,
        })
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
        deserialize = "F::Text: Deserialize<'de>, F::Url: Deserialize<'de>, F::Json: Deserialize<'de>, F::Input: Deserialize<'de>"
    )
)]
#[non_exhaustive]
pub struct ActionOf<F: Form> {
    /// The CDP method (or the producer's verb), e.g. `Page.navigate`.
    pub method: F::Text,
    /// The sanitized URL involved (navigation target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<F::Url>,
    /// Typed text reduced to length and input type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<F::Input>,
    /// Where a click or tap landed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<Point>,
    /// A size in bytes (an evaluated expression, a screenshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Small sanitized extra detail.
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

impl Serialize for Verified {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Verified::True => s.serialize_bool(true),
            Verified::False => s.serialize_bool(false),
            Verified::Indeterminate => s.serialize_str("indeterminate"),
        }
    }
}

impl<'de> Deserialize<'de> for Verified {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Verified, D::Error> {
        match Value::deserialize(d)? {
            Value::Bool(true) => Ok(Verified::True),
            Value::Bool(false) => Ok(Verified::False),
            Value::String(s) if s == "indeterminate" => Ok(Verified::Indeterminate),
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
        deserialize = "F::Text: Deserialize<'de>"
    )
)]
#[non_exhaustive]
pub struct VerificationOf<F: Form> {
    /// The verdict.
    pub verified: Verified,
    /// A short kebab-case reason (`landed`, `dropped-characters`, `sensitive-field`, …).
    pub reason: F::Text,
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
    pub fn new(verified: Verified, reason: SafeText, note: SafeText) -> Verification {
        Verification {
            verified,
            reason,
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

impl Action {
    /// An action with only its method; set the other fields as needed.
    pub fn new(method: SafeText) -> Action {
        Action {
            method,
            url: None,
            input: None,
            point: None,
            bytes: None,
            detail: None,
            verification: None,
            arguments: None,
            result: None,
            label: None,
        }
    }
}

/// Console entry levels that make evidence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConsoleLevel {
    /// `console.error` or a `Log` error entry.
    Error,
    /// `console.warn`.
    Warning,
    /// A failed `console.assert`.
    Assert,
    /// An uncaught exception.
    Exception,
}

impl ConsoleLevel {
    /// Parses the journal spelling.
    pub fn parse(s: &str) -> Option<ConsoleLevel> {
        Some(match s {
            "error" => ConsoleLevel::Error,
            "warning" => ConsoleLevel::Warning,
            "assert" => ConsoleLevel::Assert,
            "exception" => ConsoleLevel::Exception,
            _ => return None,
        })
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

/// Connection events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LifecycleEvent {
    /// A CDP client connected through the relay.
    ClientConnected,
    /// A CDP client disconnected.
    ClientDisconnected,
    /// The browser side went away without a close frame.
    UpstreamLost,
    /// An agent connected to the MCP gateway (`detail`: its name).
    AgentConnected,
    /// The agent closed its connection (stdin) to the MCP gateway.
    AgentDisconnected,
    /// The MCP server the gateway wraps answered `initialize` (`detail`: its name).
    ServerStarted,
    /// The wrapped MCP server exited (`detail`: how; status `error` when it failed or crashed).
    ServerExited,
    /// The gateway was asked to stop (`detail`: the signal).
    StopRequested,
    /// The browser the gateway launched exited (status `error` when it was not asked to).
    BrowserExited,
}

impl LifecycleEvent {
    /// Parses the journal spelling.
    pub fn parse(s: &str) -> Option<LifecycleEvent> {
        Some(match s {
            "clientConnected" => LifecycleEvent::ClientConnected,
            "clientDisconnected" => LifecycleEvent::ClientDisconnected,
            "upstreamLost" => LifecycleEvent::UpstreamLost,
            "agentConnected" => LifecycleEvent::AgentConnected,
            "agentDisconnected" => LifecycleEvent::AgentDisconnected,
            "serverStarted" => LifecycleEvent::ServerStarted,
            "serverExited" => LifecycleEvent::ServerExited,
            "stopRequested" => LifecycleEvent::StopRequested,
            "browserExited" => LifecycleEvent::BrowserExited,
            _ => return None,
        })
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

/// The `TargetInfo` fields a record's `target` may carry (ids are sanitizer handles).
pub const TARGET_FIELDS: [&str; 15] = [
    "targetId",
    "id",
    "type",
    "subtype",
    "title",
    "url",
    "faviconUrl",
    "webSocketDebuggerUrl",
    "attached",
    "canAccessOpener",
    "openerId",
    "openerFrameId",
    "browserContextId",
    "parentId",
    "parentFrameId",
];

/// The payload member naming the tool call a record happened during.
pub const TOOL_CALL_FIELD: &str = "toolCall";

/// Names of the kinds this crate defines; a [`CustomKind`] may not reuse them.
pub const BUILTIN_KINDS: [&str; 5] = ["action", "network", "console", "lifecycle", "marker"];

/// A producer-defined kind (e.g. a device layer's `gesture`) with a sanitized JSON payload.
#[derive(Clone, Debug)]
pub struct CustomKind {
    name: String,
    payload: SafeJson,
}

impl CustomKind {
    /// Validates `name` (an id, not one of [`BUILTIN_KINDS`]).
    pub fn new(name: &str, payload: SafeJson) -> Result<CustomKind, Error> {
        validate_id("record kind", name)?;
        if BUILTIN_KINDS.contains(&name) {
            return Err(Error::InvalidId {
                what: "record kind",
                reason: "is a built-in kind; use its typed payload",
            });
        }
        Ok(CustomKind {
            name: name.to_owned(),
            payload,
        })
    }
}

/// What a record is about, and its sanitized payload (`kind` + `payload` in the journal).
// Actions are most records and the largest variant: boxing them would allocate for nearly every
// record to save space in the rare others.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum RecordKind {
    /// A client command.
    Action(Action),
    /// A failed request (transport failure or HTTP status >= 400).
    Network(NetworkFailure),
    /// A console error, warning, assertion or exception.
    Console(Console),
    /// A connection event.
    Lifecycle(Lifecycle),
    /// Run bookkeeping.
    Marker(Marker),
    /// A producer-defined kind.
    Custom(CustomKind),
}

impl RecordKind {
    /// The `kind` word written to the journal.
    pub fn name(&self) -> &str {
        match self {
            RecordKind::Action(_) => "action",
            RecordKind::Network(_) => "network",
            RecordKind::Console(_) => "console",
            RecordKind::Lifecycle(_) => "lifecycle",
            RecordKind::Marker(_) => "marker",
            RecordKind::Custom(c) => &c.name,
        }
    }

    fn default_status(&self) -> Status {
        match self {
            RecordKind::Action(_) => Status::Ok,
            RecordKind::Network(_) => Status::Error,
            RecordKind::Console(_)
            | RecordKind::Lifecycle(_)
            | RecordKind::Marker(_)
            | RecordKind::Custom(_) => Status::Info,
        }
    }

    fn payload(&self) -> Result<Value, Error> {
        match self {
            RecordKind::Action(p) => serde_json::to_value(p),
            RecordKind::Network(p) => serde_json::to_value(p),
            RecordKind::Console(p) => serde_json::to_value(p),
            RecordKind::Lifecycle(p) => serde_json::to_value(p),
            RecordKind::Marker(p) => serde_json::to_value(p),
            RecordKind::Custom(c) => Ok(c.payload.as_value().clone()),
        }
        .map_err(Error::Serialize)
    }
}

/// One journal record, built with a builder. The journal fills in `actionId` and `sessionId`.
///
/// ```
/// use cdp_evidence::{Action, Record, RecordKind, Status};
/// use cdp_sanitize::SafeText;
/// use std::time::Duration;
/// let record = Record::new(
///     SafeText::literal("cdp"),
///     RecordKind::Action(Action::new(SafeText::literal("Page.reload"))),
/// )
/// .duration(Duration::from_millis(120))
/// .status(Status::Ok);
/// # let _ = record;
/// ```
#[derive(Clone, Debug)]
pub struct Record {
    /// Set when the producer made the id ahead of time ([`Record::action_id`]).
    action_id: Option<ActionId>,
    /// The tool call this record happened during (`payload.toolCall`).
    tool_call: Option<ActionId>,
    source: Option<Source>,
    tool: SafeText,
    kind: RecordKind,
    started_at: Option<SystemTime>,
    duration: Duration,
    status: Status,
    target: Option<SafeJson>,
    artifacts: Vec<ArtifactRef>,
    error: Option<SafeText>,
    repeat: Option<Repeat>,
}

/// A record that stands for further occurrences of the same event (see [`Record::repeat`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repeat {
    /// How many more times the event happened.
    pub count: u64,
    /// The first of those occurrences.
    pub first_at: SystemTime,
    /// The last of those occurrences.
    pub last_at: SystemTime,
}

impl Repeat {
    fn write(&self) -> RepeatOut {
        RepeatOut {
            count: self.count,
            first_at: crate::time::format_rfc3339_millis(self.first_at),
            last_at: crate::time::format_rfc3339_millis(self.last_at),
        }
    }
}

/// `repeat` as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RepeatOut {
    count: u64,
    first_at: String,
    last_at: String,
}

/// `repeat` as read back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredRepeat {
    /// How many more times the event happened.
    pub count: u64,
    /// The first of those occurrences (RFC 3339), as written.
    #[serde(default)]
    pub first_at: Option<String>,
    /// The last of those occurrences (RFC 3339), as written.
    #[serde(default)]
    pub last_at: Option<String>,
}

impl Record {
    /// A record from `tool` (the producer's component, e.g. `cdp`, `adb`) about `kind`.
    /// Defaults: the run's source, started now, duration 0, status `ok` for actions, `error`
    /// for network failures and `info` for everything else.
    pub fn new(tool: SafeText, kind: RecordKind) -> Record {
        Record {
            action_id: None,
            tool_call: None,
            source: None,
            tool,
            status: kind.default_status(),
            kind,
            started_at: None,
            duration: Duration::ZERO,
            target: None,
            artifacts: Vec::new(),
            error: None,
            repeat: None,
        }
    }

    /// Overrides the producer name given when the run was joined.
    pub fn source(mut self, source: Source) -> Record {
        self.source = Some(source);
        self
    }

    /// When the action started. By default, the time of the append.
    pub fn started_at(mut self, at: SystemTime) -> Record {
        self.started_at = Some(at);
        self
    }

    /// How long it took. By default, zero.
    pub fn duration(mut self, duration: Duration) -> Record {
        self.duration = duration;
        self
    }

    /// The outcome (default depends on the kind, see [`Record::new`]).
    pub fn status(mut self, status: Status) -> Record {
        self.status = status;
        self
    }

    /// Target metadata, as `Sanitizer::target_info` returns it. Only the allowlisted
    /// `TargetInfo` fields ([`TARGET_FIELDS`]) are written; anything else is dropped.
    pub fn target(mut self, target: SafeJson) -> Record {
        self.target = Some(target);
        self
    }

    /// Attaches a stored artifact. Repeatable.
    pub fn artifact(mut self, artifact: ArtifactRef) -> Record {
        self.artifacts.push(artifact);
        self
    }

    /// The redacted error message.
    pub fn error(mut self, error: SafeText) -> Record {
        self.error = Some(error);
        self
    }

    /// Makes this record stand for `repeat.count` more occurrences of the same event (a console
    /// message, a failed request) between `first_at` and `last_at`: the journal's `repeat`.
    /// The record starts at `first_at` and lasts until `last_at`.
    pub fn repeat(mut self, repeat: Repeat) -> Record {
        self.started_at = Some(repeat.first_at);
        self.duration = repeat
            .last_at
            .duration_since(repeat.first_at)
            .unwrap_or_default();
        self.repeat = Some(repeat);
        self
    }

    /// Writes the record under an id made ahead of time ([`ActionId::at`]) instead of a fresh
    /// one, so records written before it can name it.
    pub fn action_id(mut self, id: ActionId) -> Record {
        self.action_id = Some(id);
        self
    }

    /// Names the tool call this record happened during, as `payload.toolCall`. Markers are run
    /// bookkeeping and are never linked; neither is a producer-defined payload that is not an
    /// object or already has a `toolCall` member.
    pub fn link_tool_call(&mut self, call: ActionId) {
        self.tool_call = Some(call);
    }

    /// The record's kind.
    pub fn kind(&self) -> &RecordKind {
        &self.kind
    }

    /// When the action started, if the producer said ([`Record::started_at`]).
    pub fn start_time(&self) -> Option<SystemTime> {
        self.started_at
    }

    /// The producer named on the record itself ([`Record::source`]), if any.
    pub fn source_override(&self) -> Option<&Source> {
        self.source.as_ref()
    }

    /// The handle of the target the record is about (`target.targetId`), if it names one.
    pub fn target_handle(&self) -> Option<&str> {
        self.target
            .as_ref()
            .and_then(|t| t.as_value().get("targetId"))
            .and_then(Value::as_str)
    }

    /// The tool call this record is linked to, if any.
    pub fn tool_call(&self) -> Option<&ActionId> {
        self.tool_call.as_ref()
    }

    /// The link to write: none for markers and for custom payloads it cannot join.
    fn link(&self) -> Option<&ActionId> {
        let call = self.tool_call.as_ref()?;
        match &self.kind {
            RecordKind::Marker(_) => None,
            RecordKind::Custom(c) => match c.payload.as_value() {
                Value::Object(m) if !m.contains_key(TOOL_CALL_FIELD) => Some(call),
                _ => None,
            },
            _ => Some(call),
        }
    }

    /// The id this record is written under: the preset one, or a fresh one.
    pub(crate) fn id_for(&self, now: SystemTime) -> String {
        match &self.action_id {
            Some(id) => id.as_str().to_owned(),
            None => crate::ids::new_action_id(now),
        }
    }

    /// The journal line for this record, serialized straight from the record's fields (no
    /// intermediate JSON tree): the same JSON as [`Record::to_value`], envelope fields always in
    /// the documented order.
    pub(crate) fn to_json(
        &self,
        action_id: &str,
        default_source: &Source,
        session_id: &str,
        now: SystemTime,
    ) -> Result<Vec<u8>, Error> {
        use serde::ser::SerializeMap;
        struct Line<'a> {
            record: &'a Record,
            action_id: &'a str,
            source: &'a Source,
            session_id: &'a str,
            started_at: String,
        }
        /// The allowlisted fields of `target`, in their order.
        struct Target<'a>(&'a Map<String, Value>);
        impl Serialize for Target<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let kept = self
                    .0
                    .iter()
                    .filter(|(k, _)| TARGET_FIELDS.contains(&k.as_str()));
                let mut m = s.serialize_map(None)?;
                for (k, v) in kept {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
        struct Payload<'a>(&'a RecordKind, Option<&'a ActionId>);
        /// A payload with `toolCall` added after its own members.
        #[derive(Serialize)]
        struct Linked<'a, P: Serialize> {
            #[serde(flatten)]
            payload: &'a P,
            #[serde(rename = "toolCall")]
            tool_call: &'a ActionId,
        }
        fn linked<S: serde::Serializer, P: Serialize>(
            payload: &P,
            link: Option<&ActionId>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match link {
                None => payload.serialize(s),
                Some(tool_call) => Linked { payload, tool_call }.serialize(s),
            }
        }
        impl Serialize for Payload<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self.0 {
                    RecordKind::Action(p) => linked(p, self.1, s),
                    RecordKind::Network(p) => linked(p, self.1, s),
                    RecordKind::Console(p) => linked(p, self.1, s),
                    RecordKind::Lifecycle(p) => linked(p, self.1, s),
                    RecordKind::Marker(p) => p.serialize(s),
                    RecordKind::Custom(c) => linked(c.payload.as_value(), self.1, s),
                }
            }
        }
        impl Serialize for Line<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let r = self.record;
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("actionId", self.action_id)?;
                m.serialize_entry("source", r.source.as_ref().unwrap_or(self.source))?;
                m.serialize_entry("tool", r.tool.as_str())?;
                m.serialize_entry("sessionId", self.session_id)?;
                m.serialize_entry("startedAt", &self.started_at)?;
                let ms = u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX);
                m.serialize_entry("durationMs", &ms)?;
                m.serialize_entry("status", r.status.as_str())?;
                if let Some(Value::Object(t)) = r.target.as_ref().map(SafeJson::as_value) {
                    m.serialize_entry("target", &Target(t))?;
                }
                let artifacts: Vec<&str> = r.artifacts.iter().map(ArtifactRef::as_str).collect();
                m.serialize_entry("artifacts", &artifacts)?;
                if let Some(error) = &r.error {
                    m.serialize_entry("error", error.as_str())?;
                }
                if let Some(repeat) = &r.repeat {
                    m.serialize_entry("repeat", &repeat.write())?;
                }
                m.serialize_entry("kind", r.kind.name())?;
                m.serialize_entry("payload", &Payload(&r.kind, r.link()))?;
                m.end()
            }
        }
        let line = Line {
            record: self,
            action_id,
            source: default_source,
            session_id,
            started_at: crate::time::format_rfc3339_millis(self.started_at.unwrap_or(now)),
        };
        serde_json::to_vec(&line).map_err(Error::Serialize)
    }

    /// The JSON object written to the journal (before size bounding).
    pub(crate) fn to_value(
        &self,
        action_id: String,
        default_source: &Source,
        session_id: &str,
        now: SystemTime,
    ) -> Result<Value, Error> {
        let mut m = Map::new();
        m.insert("actionId".into(), Value::String(action_id));
        let source = self.source.as_ref().unwrap_or(default_source);
        m.insert("source".into(), source.as_str().into());
        m.insert("tool".into(), self.tool.as_str().into());
        m.insert("sessionId".into(), session_id.into());
        let started = self.started_at.unwrap_or(now);
        m.insert(
            "startedAt".into(),
            crate::time::format_rfc3339_millis(started).into(),
        );
        let ms = u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX);
        m.insert("durationMs".into(), ms.into());
        m.insert("status".into(), self.status.as_str().into());
        if let Some(Value::Object(target)) = self.target.as_ref().map(SafeJson::as_value) {
            let kept: Map<String, Value> = target
                .iter()
                .filter(|(k, _)| TARGET_FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            m.insert("target".into(), Value::Object(kept));
        }
        m.insert(
            "artifacts".into(),
            self.artifacts
                .iter()
                .map(|a| Value::from(a.as_str()))
                .collect(),
        );
        if let Some(error) = &self.error {
            m.insert("error".into(), error.as_str().into());
        }
        if let Some(repeat) = &self.repeat {
            let out = serde_json::to_value(repeat.write()).map_err(Error::Serialize)?;
            m.insert("repeat".into(), out);
        }
        m.insert("kind".into(), self.kind.name().into());
        let mut payload = self.kind.payload()?;
        if let (Some(call), Value::Object(p)) = (self.link(), &mut payload) {
            p.insert(TOOL_CALL_FIELD.into(), call.as_str().into());
        }
        m.insert("payload".into(), payload);
        Ok(Value::Object(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdp_sanitize::Sanitizer;
    use std::time::UNIX_EPOCH;

    fn value(r: &Record) -> Value {
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
        r.to_value("id-1".into(), &Source::RELAY, "sess", at)
            .unwrap()
    }

    #[test]
    fn a_repeat_is_written_in_the_envelope_and_read_back() {
        let s = Sanitizer::new();
        let first = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
        let last = first + Duration::from_millis(9_500);
        let r = Record::new(
            SafeText::literal("cdp"),
            RecordKind::Console(Console::new(ConsoleLevel::Error, s.text("boom"))),
        )
        .repeat(Repeat {
            count: 65_000,
            first_at: first,
            last_at: last,
        });
        let tree = value(&r);
        assert_eq!(tree["startedAt"], "2023-11-14T22:13:20.000Z");
        assert_eq!(tree["durationMs"], 9500);
        assert_eq!(
            tree["repeat"],
            serde_json::json!({"count": 65000, "firstAt": "2023-11-14T22:13:20.000Z", "lastAt": "2023-11-14T22:13:29.500Z"})
        );
        let direct = r.to_json("id-1", &Source::RELAY, "sess", first).unwrap();
        let parsed: Value = serde_json::from_slice(&direct).unwrap();
        assert_eq!(parsed, tree);
        let stored = crate::StoredRecord::from_value(parsed).unwrap();
        let rep = stored.repeat.unwrap();
        assert_eq!(rep.count, 65_000);
        assert_eq!(rep.last_at.as_deref(), Some("2023-11-14T22:13:29.500Z"));
        // A foreign `repeat` of the wrong shape reads as absent.
        let odd = serde_json::json!({"actionId": "1", "kind": "console", "repeat": "many"});
        assert_eq!(crate::StoredRecord::from_value(odd).unwrap().repeat, None);
    }

    /// The direct serialization writes exactly what the JSON tree would.
    #[test]
    fn direct_serialization_matches_the_tree() {
        let s = Sanitizer::new();
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
        let mut action = Action::new(SafeText::literal("Page.navigate"));
        action.url = Some(s.url("https://a.test/x?y=1"));
        action.detail = Some(s.json(&serde_json::json!({"b": 1, "a": [true, "t"]})));
        let records = [
            Record::new(SafeText::literal("cdp"), RecordKind::Action(action))
                .target(s.target_info(&serde_json::json!({
                    "targetId": "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1", "type": "page",
                    "title": "T \"q\"", "url": "https://a.test/", "zzz": "dropped"
                })))
                .error(SafeText::literal("boom"))
                .duration(Duration::from_millis(42)),
            Record::new(
                SafeText::literal("cdp"),
                RecordKind::Console(Console::new(ConsoleLevel::Error, s.text("x\ny"))),
            )
            .source(Source::DEVICE),
            Record::new(
                SafeText::literal("adb"),
                RecordKind::Custom(
                    CustomKind::new("gesture", s.json(&serde_json::json!({"n": 2}))).unwrap(),
                ),
            ),
        ];
        for r in &records {
            let tree = r
                .to_value("id-1".into(), &Source::RELAY, "sess", at)
                .unwrap();
            let direct = r.to_json("id-1", &Source::RELAY, "sess", at).unwrap();
            let parsed: Value = serde_json::from_slice(&direct).unwrap();
            assert_eq!(parsed, tree);
            // Envelope fields in the documented order, whatever map the tree would use.
            assert!(direct.starts_with(b"{\"actionId\":\"id-1\",\"source\":"));
            let text = String::from_utf8(direct).unwrap();
            assert!(text.find("\"kind\"") < text.find("\"payload\""), "{text}");
        }
    }

    /// A record linked to a tool call names it in its payload, both ways of serializing; a
    /// preset id is written as given.
    #[test]
    fn tool_call_links_and_preset_ids() {
        let s = Sanitizer::new();
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
        let call = ActionId::at(at);
        let link = |mut r: Record| {
            r.link_tool_call(call.clone());
            r
        };
        let action = link(Record::new(
            SafeText::literal("cdp"),
            RecordKind::Action(Action::new(SafeText::literal("Input.dispatchMouseEvent"))),
        ));
        let failure = link(Record::new(
            SafeText::literal("cdp"),
            RecordKind::Network(s.network_failure(cdp_sanitize::RawNetworkFailure {
                method: "GET",
                url: "https://a.test/x",
                status: Some(500),
                ..Default::default()
            })),
        ));
        let custom = link(Record::new(
            SafeText::literal("adb"),
            RecordKind::Custom(
                CustomKind::new("gesture", s.json(&serde_json::json!({"n": 2}))).unwrap(),
            ),
        ));
        for r in [&action, &failure, &custom] {
            let direct: Value =
                serde_json::from_slice(&r.to_json("id-1", &Source::RELAY, "sess", at).unwrap())
                    .unwrap();
            assert_eq!(
                direct["payload"][TOOL_CALL_FIELD],
                call.as_str(),
                "{direct}"
            );
            assert_eq!(direct, value(r));
            let stored = crate::StoredRecord::from_value(direct).unwrap();
            assert_eq!(stored.tool_call(), Some(call.as_str()));
        }
        // The typed read model is unaffected by the link.
        let stored = crate::StoredRecord::from_value(value(&failure)).unwrap();
        assert!(matches!(
            stored.typed_payload(),
            crate::StoredPayload::Network(_)
        ));
        // Markers and payloads the link cannot join stay as they are.
        let marker = link(Record::new(
            SafeText::literal("cdp-evidence"),
            RecordKind::Marker(Marker::evidence_dropped(1)),
        ));
        assert!(value(&marker)["payload"].get(TOOL_CALL_FIELD).is_none());
        let taken = link(Record::new(
            SafeText::literal("adb"),
            RecordKind::Custom(
                CustomKind::new("x", s.json(&serde_json::json!({"toolCall": "mine"}))).unwrap(),
            ),
        ));
        assert_eq!(value(&taken)["payload"][TOOL_CALL_FIELD], "mine");
        let array = link(Record::new(
            SafeText::literal("adb"),
            RecordKind::Custom(CustomKind::new("x", s.json(&serde_json::json!([1]))).unwrap()),
        ));
        assert_eq!(value(&array)["payload"], serde_json::json!([1]));
        // A preset id is the record's id.
        let own = Record::new(
            SafeText::literal("chrome-devtools-mcp"),
            RecordKind::Action(Action::new(SafeText::literal("click"))),
        )
        .action_id(call.clone());
        assert_eq!(own.id_for(at), call.as_str());
    }

    #[test]
    fn a_tool_call_reads_back_in_the_same_schema() {
        use crate::{JsonType, ToolArgument, ToolResult};
        let s = Sanitizer::new();
        let mut a = Action::new(SafeText::literal("fill_form"));
        let mut arg = ToolArgument::new(SafeText::literal("elements"), JsonType::Array);
        arg.count = Some(3);
        a.arguments = Some(vec![arg]);
        a.result = Some(ToolResult::new(1, 0, false, false));
        a.label = Some(s.text("log in"));
        let (written, read) = read_back(
            &Record::new(SafeText::literal("chrome_devtools"), RecordKind::Action(a))
                .source(Source::MCP),
        );
        let crate::StoredPayload::Action(read) = read else {
            panic!("{read:?}")
        };
        assert_eq!(read.arguments.as_ref().unwrap()[0].count, Some(3));
        assert_eq!(read.label.as_deref(), Some("log in"));
        assert_eq!(serde_json::to_value(&read).unwrap(), written);
    }

    #[test]
    fn envelope_and_defaults() {
        let v = value(&Record::new(
            SafeText::literal("cdp"),
            RecordKind::Action(Action::new(SafeText::literal("Page.reload"))),
        ));
        assert_eq!(v["actionId"], "id-1");
        assert_eq!(v["source"], "relay");
        assert_eq!(v["tool"], "cdp");
        assert_eq!(v["sessionId"], "sess");
        assert_eq!(v["startedAt"], "2023-11-14T22:13:20.000Z");
        assert_eq!(v["durationMs"], 0);
        assert_eq!(v["status"], "ok");
        assert_eq!(v["artifacts"], Value::Array(vec![]));
        assert_eq!(v["kind"], "action");
        assert_eq!(v["payload"], serde_json::json!({"method": "Page.reload"}));
        assert!(v.get("target").is_none() && v.get("error").is_none());

        let s = Sanitizer::new();
        let failure = s.network_failure(cdp_sanitize::RawNetworkFailure {
            method: "get",
            url: "https://a.test/x?token=1",
            status: Some(404),
            ..Default::default()
        });
        let v = value(&Record::new(
            SafeText::literal("cdp"),
            RecordKind::Network(failure),
        ));
        assert_eq!(v["status"], "error", "network failures default to error");
        assert_eq!(v["payload"]["status"], 404);
        assert_eq!(v["payload"]["url"], "https://a.test/x");
        let v = value(&Record::new(
            SafeText::literal("cdp"),
            RecordKind::Console(Console::new(ConsoleLevel::Assert, SafeText::literal("no"))),
        ));
        assert_eq!(v["status"], "info");
        assert_eq!(v["payload"]["level"], "assert");
    }

    #[test]
    fn markers_and_lifecycle_serialize_in_camel_case() {
        let v = value(&Record::new(
            SafeText::literal("cdp-evidence"),
            RecordKind::Marker(Marker::internal(MarkerKind::OwnerRecovered {
                previous_pid: 1,
                pid: 2,
            })),
        ));
        assert_eq!(
            v["payload"],
            serde_json::json!({"marker": "ownerRecovered", "previousPid": 1, "pid": 2})
        );
        let mut l = Lifecycle::new(LifecycleEvent::UpstreamLost, 7);
        l.close_code = Some(1011);
        let v = value(&Record::new(
            SafeText::literal("cdp"),
            RecordKind::Lifecycle(l),
        ));
        assert_eq!(
            v["payload"],
            serde_json::json!({"event": "upstreamLost", "connection": 7, "closeCode": 1011})
        );
    }

    #[test]
    fn target_keeps_only_allowlisted_fields() {
        let s = Sanitizer::new();
        // Even a SafeJson that did not come from target_info cannot smuggle other fields.
        let target = s.json(&serde_json::json!({
            "type": "page", "title": "Inbox", "attached": true, "cookies": "x", "nested": {"a": 1}
        }));
        let v = value(
            &Record::new(
                SafeText::literal("cdp"),
                RecordKind::Action(Action::new(SafeText::literal("Target.attachToTarget"))),
            )
            .target(target),
        );
        assert_eq!(
            v["target"],
            serde_json::json!({"type": "page", "title": "Inbox", "attached": true})
        );
    }

    #[test]
    fn custom_kinds_are_validated() {
        let s = Sanitizer::new();
        let payload = || s.json(&serde_json::json!({"dx": 1}));
        assert!(CustomKind::new("network", payload()).is_err());
        assert!(CustomKind::new("../x", payload()).is_err());
        let kind = CustomKind::new("gesture", payload()).unwrap();
        let v = value(&Record::new(
            SafeText::literal("adb"),
            RecordKind::Custom(kind),
        ));
        assert_eq!(v["kind"], "gesture");
        assert_eq!(v["payload"]["dx"], 1);
        for status in [Status::Ok, Status::Error, Status::Interrupted, Status::Info] {
            assert_eq!(Status::parse(status.as_str()), Some(status));
        }
    }

    /// Reads a written record back through the journal reader into the typed read model.
    fn read_back(r: &Record) -> (Value, crate::StoredPayload) {
        let v = value(r);
        let stored = crate::StoredRecord::from_value(v.clone()).unwrap();
        (v["payload"].clone(), stored.typed_payload())
    }

    #[test]
    fn every_written_payload_reads_back_in_the_same_schema() {
        use crate::StoredPayload as P;
        let s = Sanitizer::new();
        let mut a = Action::new(SafeText::literal("type"));
        a.url = Some(s.url("https://a.test/login?x=1"));
        a.input = Some(cdp_sanitize::InputSummary::of(
            "hunter2",
            cdp_sanitize::InputType::Password,
        ));
        a.point = Some(Point { x: 1.5, y: 2.0 });
        a.bytes = Some(9);
        a.detail = Some(s.json(&serde_json::json!({"key": "Enter"})));
        let mut v = Verification::new(
            Verified::False,
            SafeText::literal("dropped-characters"),
            SafeText::literal("the field grew by 5 of 7 typed characters"),
        );
        v.expected = Some(7);
        v.grew = Some(5);
        a.verification = Some(v);
        let (written, read) = read_back(&Record::new(
            SafeText::literal("cdp"),
            RecordKind::Action(a),
        ));
        let P::Action(read) = read else {
            panic!("{read:?}")
        };
        assert_eq!(read.method, "type");
        assert_eq!(read.input.as_ref().unwrap().chars, 7);
        assert_eq!(
            read.input.as_ref().unwrap().input_type.as_deref(),
            Some("password")
        );
        let v = read.verification.as_ref().unwrap();
        assert_eq!(
            (v.verified, v.expected, v.grew),
            (Verified::False, Some(7), Some(5))
        );
        assert_eq!(written["verification"]["verified"], false);
        // Same schema: the read form serializes back to exactly what the writer wrote.
        assert_eq!(serde_json::to_value(&read).unwrap(), written);

        let failure = s.network_failure(cdp_sanitize::RawNetworkFailure {
            method: "POST",
            url: "https://a.test/api?token=1",
            status: Some(500),
            resource_type: Some("Fetch"),
            duration_ms: Some(12),
            error_text: Some("boom"),
        });
        let (written, read) = read_back(&Record::new(
            SafeText::literal("cdp"),
            RecordKind::Network(failure),
        ));
        let P::Network(read) = read else {
            panic!("{read:?}")
        };
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            written,
            "StoredNetwork mirrors cdp_sanitize::NetworkFailure field for field"
        );

        let mut c = Console::new(ConsoleLevel::Exception, SafeText::literal("x"));
        c.url = Some(s.url("https://a.test/app.js"));
        c.line = Some(3);
        c.column = Some(4);
        let (written, read) = read_back(&Record::new(
            SafeText::literal("cdp"),
            RecordKind::Console(c),
        ));
        let P::Console(read) = read else {
            panic!("{read:?}")
        };
        assert_eq!(serde_json::to_value(&read).unwrap(), written);

        let mut l = Lifecycle::new(LifecycleEvent::ClientDisconnected, 3);
        l.close_code = Some(1000);
        l.detail = Some(SafeText::literal("bye"));
        let (written, read) = read_back(&Record::new(
            SafeText::literal("cdp"),
            RecordKind::Lifecycle(l),
        ));
        let P::Lifecycle(read) = read else {
            panic!("{read:?}")
        };
        assert_eq!(serde_json::to_value(&read).unwrap(), written);

        let (written, read) = read_back(&Record::new(
            SafeText::literal("cdp-evidence"),
            RecordKind::Marker(Marker::evidence_dropped(4)),
        ));
        assert_eq!(
            read,
            P::Marker(MarkerKind::EvidenceDropped {
                count: 4,
                reason: None
            })
        );
        assert_eq!(
            written,
            serde_json::json!({"marker": "evidenceDropped", "count": 4})
        );

        let custom = CustomKind::new("gesture", s.json(&serde_json::json!({"dx": 1}))).unwrap();
        let (_, read) = read_back(&Record::new(
            SafeText::literal("adb"),
            RecordKind::Custom(custom),
        ));
        assert_eq!(read, P::Custom);
    }

    #[test]
    fn payloads_that_do_not_fit_read_as_mismatch_and_unknown_fields_are_ignored() {
        use crate::StoredPayload as P;
        let read = |kind: &str, payload: Value| {
            crate::StoredRecord::from_value(serde_json::json!({
                "actionId": "1", "kind": kind, "payload": payload
            }))
            .unwrap()
            .typed_payload()
        };
        assert_eq!(read("action", serde_json::json!({"url": "x"})), P::Mismatch);
        assert_eq!(
            read("action", serde_json::json!({"method": 5})),
            P::Mismatch
        );
        assert_eq!(read("action", Value::Null), P::Mismatch);
        assert_eq!(
            read(
                "console",
                serde_json::json!({"level": "fatal", "text": "x"})
            ),
            P::Mismatch
        );
        assert_eq!(
            read("marker", serde_json::json!({"marker": "somethingNew"})),
            P::Mismatch
        );
        assert_eq!(
            read("network", serde_json::json!({"method": "GET"})),
            P::Mismatch
        );
        let P::Action(a) = read(
            "action",
            serde_json::json!({"method": "click", "extra": [1]}),
        ) else {
            panic!()
        };
        assert_eq!(a.method, "click");
        let P::Network(n) = read(
            "network",
            serde_json::json!({"method": "GET", "url": "u", "durationMs": 12.6}),
        ) else {
            panic!()
        };
        assert_eq!(
            n.duration_ms,
            Some(13),
            "fractions of a millisecond are rounded"
        );
    }

    #[test]
    fn verdicts_are_booleans_or_indeterminate() {
        for (v, json) in [
            (Verified::True, serde_json::json!(true)),
            (Verified::False, serde_json::json!(false)),
            (Verified::Indeterminate, serde_json::json!("indeterminate")),
        ] {
            assert_eq!(serde_json::to_value(v).unwrap(), json);
            assert_eq!(serde_json::from_value::<Verified>(json).unwrap(), v);
        }
        assert!(serde_json::from_value::<Verified>(serde_json::json!("yes")).is_err());
    }

    #[test]
    fn runs_are_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<crate::Run>();
        assert_send_sync::<crate::Store>();
        assert_send_sync::<Record>();
    }
}
