//! The journal envelope: one serializer for a record's line. It writes straight from the
//! record's fields (no intermediate JSON tree), envelope fields always in the documented order;
//! the same serializer makes the tree a record too big for its line is cut down from.

use super::{ArtifactRef, Record, RecordKind, TARGET_FIELDS};
use crate::error::Error;
use crate::ids::{ActionId, Source};
use cdp_sanitize::SafeJson;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::time::SystemTime;

/// A record as its journal line: the record, and what the journal fills in.
pub(crate) struct Envelope<'a> {
    record: &'a Record,
    action_id: &'a str,
    source: &'a Source,
    session_id: &'a str,
    started_at: String,
}

impl<'a> Envelope<'a> {
    /// `record` written under `action_id` in `session_id`, from `default_source` unless it names
    /// its own; started `now` unless it says when.
    pub(crate) fn new(
        record: &'a Record,
        action_id: &'a str,
        default_source: &'a Source,
        session_id: &'a str,
        now: SystemTime,
    ) -> Envelope<'a> {
        Envelope {
            record,
            action_id,
            source: default_source,
            session_id,
            started_at: crate::time::format_rfc3339_millis(record.started_at.unwrap_or(now)),
        }
    }

    /// The journal line, without its newline.
    pub(crate) fn to_json(&self) -> Result<Vec<u8>, Error> {
        serde_json::to_vec(self).map_err(Error::Serialize)
    }

    /// The same object as a JSON tree (before size bounding).
    pub(crate) fn to_value(&self) -> Result<Value, Error> {
        serde_json::to_value(self).map_err(Error::Serialize)
    }
}

impl Serialize for Envelope<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.record;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("actionId", self.action_id)?;
        m.serialize_entry("source", r.source.as_ref().unwrap_or(self.source))?;
        m.serialize_entry("tool", r.tool.as_str())?;
        m.serialize_entry("sessionId", self.session_id)?;
        m.serialize_entry("startedAt", &self.started_at)?;
        let ms = u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX);
        m.serialize_entry("durationMs", &ms)?;
        m.serialize_entry("status", &r.status)?;
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

/// The allowlisted fields of `target`, in their order.
struct Target<'a>(&'a Map<String, Value>);

impl Serialize for Target<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
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

/// A payload, with the tool call it is linked to.
struct Payload<'a>(&'a RecordKind, Option<&'a ActionId>);

impl Serialize for Payload<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
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

/// A payload with `toolCall` added after its own members.
#[derive(Serialize)]
struct Linked<'a, P: Serialize> {
    #[serde(flatten)]
    payload: &'a P,
    #[serde(rename = "toolCall")]
    tool_call: &'a ActionId,
}

fn linked<S: Serializer, P: Serialize>(
    payload: &P,
    link: Option<&ActionId>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match link {
        None => payload.serialize(s),
        Some(tool_call) => Linked { payload, tool_call }.serialize(s),
    }
}
