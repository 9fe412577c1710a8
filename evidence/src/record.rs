//! Records: what a producer appends to the journal, built only from sanitized values.
//!
//! The redaction boundary is expressed in types: every string a [`Record`] can hold is a
//! `cdp_sanitize` type ([`SafeText`], [`SafeUrl`], [`SafeJson`]) or a validated token ([`Source`],
//! [`CustomKind`]'s name), and none of those can be built from runtime text except by the
//! sanitizer. Numbers (durations, coordinates, sizes, counts) carry no text. Nothing here does I/O.
//!
//! One schema for writing and reading (`payload.rs`): each payload struct is generic over a
//! [`Form`], the set of string types it is made of. A `Stored` payload can never reach the
//! journal: [`RecordKind`] only takes the `Sanitized` form, and `Safe*` types still have no
//! `Deserialize`. One serializer for the journal line (`envelope.rs`).

use crate::error::Error;
use crate::ids::{validate_id, ActionId, Source};
use crate::vocab::{Kind, Status};
use cdp_sanitize::{NetworkFailure, SafeJson, SafeText};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{Duration, SystemTime};

mod envelope;
mod marker;
mod payload;
pub(crate) mod tool;

pub(crate) use envelope::Envelope;
pub use marker::{DropReason, Marker, MarkerKind};
pub use payload::{
    Action, ActionOf, ArtifactRef, Console, ConsoleOf, Form, Lifecycle, LifecycleOf, Locator,
    LocatorKind, LocatorOf, Point, Sanitized, Stored, StoredAction, StoredConsole, StoredInput,
    StoredLifecycle, StoredLocator, StoredNetwork, StoredVerification, Verification,
    VerificationOf, Verified,
};

#[cfg(doc)]
use cdp_sanitize::SafeUrl;

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
/// The payload member naming the tool calls a record may have happened during, when more than
/// one could have caused it (written instead of `toolCall`).
pub const TOOL_CALL_CANDIDATES_FIELD: &str = "toolCallCandidates";

/// A producer-defined kind (e.g. a device layer's `gesture`) with a sanitized JSON payload.
#[derive(Clone, Debug)]
pub struct CustomKind {
    name: String,
    payload: SafeJson,
}

impl CustomKind {
    /// Validates `name` (an id, not a built-in [`Kind`]).
    pub fn new(name: &str, payload: SafeJson) -> Result<CustomKind, Error> {
        validate_id("record kind", name)?;
        if Kind::parse(name).is_some() {
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
        match self.kind() {
            Some(k) => k.as_str(),
            None => match self {
                RecordKind::Custom(c) => &c.name,
                _ => unreachable!("every other kind is built in"),
            },
        }
    }

    /// The built-in kind, `None` for a producer-defined one.
    pub fn kind(&self) -> Option<Kind> {
        Some(match self {
            RecordKind::Action(_) => Kind::Action,
            RecordKind::Network(_) => Kind::Network,
            RecordKind::Console(_) => Kind::Console,
            RecordKind::Lifecycle(_) => Kind::Lifecycle,
            RecordKind::Marker(_) => Kind::Marker,
            RecordKind::Custom(_) => return None,
        })
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
    /// The tool calls it may have happened during (`payload.toolCallCandidates`).
    tool_call_candidates: Vec<ActionId>,
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
            tool_call_candidates: Vec::new(),
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

    /// Names the tool calls this record may have happened during when more than one could
    /// have caused it, as `payload.toolCallCandidates` (instead of `toolCall`, which a reader
    /// would take as certain). Same rules as [`Record::link_tool_call`].
    pub fn link_tool_call_candidates(&mut self, calls: Vec<ActionId>) {
        self.tool_call_candidates = calls;
    }

    /// The tool calls this record may have happened during (none when it names one, or none).
    pub fn tool_call_candidates(&self) -> &[ActionId] {
        &self.tool_call_candidates
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

    /// Its status (`status`): what [`Record::status`] set, else its kind's default.
    pub fn recorded_status(&self) -> Status {
        self.status
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

    /// The candidates to write when no single call is named: as [`Record::link`].
    pub(crate) fn candidates(&self) -> Option<&[ActionId]> {
        if self.tool_call.is_some() || self.tool_call_candidates.len() < 2 {
            return None;
        }
        match &self.kind {
            RecordKind::Marker(_) => None,
            RecordKind::Custom(c) => match c.payload.as_value() {
                Value::Object(m)
                    if !m.contains_key(TOOL_CALL_FIELD)
                        && !m.contains_key(TOOL_CALL_CANDIDATES_FIELD) =>
                {
                    Some(&self.tool_call_candidates)
                }
                _ => None,
            },
            _ => Some(&self.tool_call_candidates),
        }
    }

    /// The link to write: none for markers and for custom payloads it cannot join.
    pub(crate) fn link(&self) -> Option<&ActionId> {
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
}

#[cfg(test)]
mod line_tests;
#[cfg(test)]
mod tests;
