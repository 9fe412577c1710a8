//! Records: what a producer appends to the journal, built only from sanitized values.
//!
//! The redaction boundary is expressed in types: every string a [`Record`] can hold is a
//! `cdp_sanitize` type ([`SafeText`], [`SafeUrl`], [`SafeJson`]) or a validated token ([`Source`],
//! [`CustomKind`]'s name), and none of those can be built from runtime text except by the
//! sanitizer. Numbers (durations, coordinates, sizes, counts) carry no text. Nothing here does I/O.

use crate::error::Error;
use crate::ids::{validate_id, Source};
use cdp_sanitize::{InputSummary, NetworkFailure, SafeJson, SafeText, SafeUrl};
use serde::Serialize;
use serde_json::{Map, Value};
use std::time::{Duration, SystemTime};

/// Outcome of a record. A closed set: readers may rely on these four words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Point {
    /// Horizontal position.
    pub x: f64,
    /// Vertical position.
    pub y: f64,
}

/// `kind: "action"` — a client command worth a filmstrip step.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Action {
    /// The CDP method (or the producer's verb), e.g. `Page.navigate`.
    pub method: SafeText,
    /// The sanitized URL involved (navigation target).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<SafeUrl>,
    /// Typed text reduced to length and input type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<InputSummary>,
    /// Where a click or tap landed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub point: Option<Point>,
    /// A size in bytes (an evaluated expression, a screenshot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Small sanitized extra detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<SafeJson>,
}

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
        }
    }
}

/// Console entry levels that make evidence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
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
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Console {
    /// Severity.
    pub level: ConsoleLevel,
    /// The sanitized message.
    pub text: SafeText,
    /// Sanitized source URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<SafeUrl>,
    /// 1-based source line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based source column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum LifecycleEvent {
    /// A CDP client connected through the relay.
    ClientConnected,
    /// A CDP client disconnected.
    ClientDisconnected,
    /// The browser side went away without a close frame.
    UpstreamLost,
}

impl LifecycleEvent {
    /// Parses the journal spelling.
    pub fn parse(s: &str) -> Option<LifecycleEvent> {
        Some(match s {
            "clientConnected" => LifecycleEvent::ClientConnected,
            "clientDisconnected" => LifecycleEvent::ClientDisconnected,
            "upstreamLost" => LifecycleEvent::UpstreamLost,
            _ => return None,
        })
    }
}

/// `kind: "lifecycle"` — a connection event.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Lifecycle {
    /// What happened.
    pub event: LifecycleEvent,
    /// The producer's handle for the connection (a counter, never a CDP id).
    pub connection: u64,
    /// Websocket close code, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub close_code: Option<u16>,
    /// Sanitized detail (close reason, endpoint kind).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<SafeText>,
}

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

#[derive(Clone, Debug, Serialize)]
#[serde(
    tag = "marker",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub(crate) enum MarkerKind {
    RunStarted {
        pid: u32,
    },
    RunFinalized {
        pid: u32,
        records: u64,
        artifact_bytes: u64,
        dropped_evidence: u64,
    },
    EvidenceTruncated {
        budget_bytes: u64,
        used_bytes: u64,
        refused_bytes: u64,
    },
    EvidenceDropped {
        count: u64,
    },
    JournalRepaired {
        discarded_bytes: u64,
    },
    OwnerRecovered {
        previous_pid: u32,
        pid: u32,
    },
}

impl Marker {
    /// The producer dropped `count` pieces of evidence (e.g. its queue was full).
    pub fn evidence_dropped(count: u64) -> Marker {
        Marker(MarkerKind::EvidenceDropped { count })
    }

    pub(crate) fn internal(kind: MarkerKind) -> Marker {
        Marker(kind)
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
    source: Option<Source>,
    tool: SafeText,
    kind: RecordKind,
    started_at: Option<SystemTime>,
    duration: Duration,
    status: Status,
    target: Option<SafeJson>,
    artifacts: Vec<ArtifactRef>,
    error: Option<SafeText>,
}

impl Record {
    /// A record from `tool` (the producer's component, e.g. `cdp`, `adb`) about `kind`.
    /// Defaults: the run's source, started now, duration 0, status `ok` for actions, `error`
    /// for network failures and `info` for everything else.
    pub fn new(tool: SafeText, kind: RecordKind) -> Record {
        Record {
            source: None,
            tool,
            status: kind.default_status(),
            kind,
            started_at: None,
            duration: Duration::ZERO,
            target: None,
            artifacts: Vec::new(),
            error: None,
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

    /// The record's kind.
    pub fn kind(&self) -> &RecordKind {
        &self.kind
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
        m.insert("kind".into(), self.kind.name().into());
        m.insert("payload".into(), self.kind.payload()?);
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

    #[test]
    fn runs_are_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<crate::Run>();
        assert_send_sync::<crate::Store>();
        assert_send_sync::<Record>();
    }
}
