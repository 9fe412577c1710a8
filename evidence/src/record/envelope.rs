//! The journal envelope: one serializer for a record's line. It appends straight from the
//! record's fields to the caller's buffer (no intermediate JSON tree), envelope fields always in
//! the documented order, values through `serde_json::to_writer`; a record too big for its line
//! is cut down from the tree of the line this writes.

use super::{Record, RecordKind, TARGET_FIELDS, TOOL_CALL_CANDIDATES_FIELD, TOOL_CALL_FIELD};
use crate::error::Error;
use crate::ids::Source;
use cdp_sanitize::SafeJson;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::time::SystemTime;

/// A record as its journal line: the record, and what the journal fills in.
pub(crate) struct Envelope<'a> {
    record: &'a Record,
    /// `None`: the record's preset id, or a fresh one made as the line is written.
    action_id: Option<&'a str>,
    source: &'a Source,
    session_id: &'a str,
    now: SystemTime,
}

impl<'a> Envelope<'a> {
    /// `record` as the journal writes it in `session_id`: under its preset id or a fresh one,
    /// from `default_source` unless it names its own, started `now` unless it says when.
    pub(crate) fn new(
        record: &'a Record,
        default_source: &'a Source,
        session_id: &'a str,
        now: SystemTime,
    ) -> Envelope<'a> {
        Envelope {
            record,
            action_id: record.action_id.as_ref().map(|id| id.as_str()),
            source: default_source,
            session_id,
            now,
        }
    }

    /// The same, under `action_id` whatever the record says (tests pin the id).
    #[cfg(test)]
    pub(crate) fn with_id(mut self, action_id: &'a str) -> Envelope<'a> {
        self.action_id = Some(action_id);
        self
    }

    /// Appends the journal line, without its newline, to `out`. On error `out` is as it was.
    pub(crate) fn write(&self, out: &mut Vec<u8>) -> Result<(), Error> {
        let start = out.len();
        let written = self.write_unchecked(out);
        if written.is_err() {
            out.truncate(start);
        }
        written
    }

    fn write_unchecked(&self, out: &mut Vec<u8>) -> Result<(), Error> {
        let r = self.record;
        out.extend_from_slice(b"{\"actionId\":");
        match self.action_id {
            Some(id) => write(out, id)?,
            None => {
                // Digits, dashes and hex: nothing to escape.
                out.push(b'"');
                crate::ids::push_action_id(out, self.now);
                out.push(b'"');
            }
        }
        out.extend_from_slice(b",\"source\":");
        write(out, r.source.as_ref().unwrap_or(self.source).as_str())?;
        out.extend_from_slice(b",\"tool\":");
        write(out, r.tool.as_str())?;
        out.extend_from_slice(b",\"sessionId\":");
        write(out, self.session_id)?;
        out.extend_from_slice(b",\"startedAt\":");
        push_time(out, r.started_at.unwrap_or(self.now));
        out.extend_from_slice(b",\"durationMs\":");
        let ms = u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX);
        write(out, &ms)?;
        out.extend_from_slice(b",\"status\":");
        write(out, &r.status)?;
        if let Some(Value::Object(t)) = r.target.as_ref().map(SafeJson::as_value) {
            out.extend_from_slice(b",\"target\":");
            write(out, &Target(t))?;
        }
        out.extend_from_slice(b",\"artifacts\":[");
        for (i, a) in r.artifacts.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write(out, a.as_str())?;
        }
        out.push(b']');
        if let Some(error) = &r.error {
            out.extend_from_slice(b",\"error\":");
            write(out, error.as_str())?;
        }
        if let Some(repeat) = &r.repeat {
            out.extend_from_slice(b",\"repeat\":{\"count\":");
            write(out, &repeat.count)?;
            out.extend_from_slice(b",\"firstAt\":");
            push_time(out, repeat.first_at);
            out.extend_from_slice(b",\"lastAt\":");
            push_time(out, repeat.last_at);
            out.push(b'}');
        }
        out.extend_from_slice(b",\"kind\":");
        write(out, r.kind.name())?;
        out.extend_from_slice(b",\"payload\":");
        let payload = out.len();
        match &r.kind {
            RecordKind::Action(p) => write(out, p),
            RecordKind::Network(p) => write(out, p),
            RecordKind::Console(p) => write(out, p),
            RecordKind::Lifecycle(p) => write(out, p),
            RecordKind::Marker(p) => write(out, p),
            RecordKind::Custom(c) => write(out, c.payload.as_value()),
        }?;
        if let Some(call) = r.link() {
            link(out, payload, call.as_str())?;
        } else if let Some(calls) = r.candidates() {
            link_candidates(out, payload, calls)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// The journal line, without its newline.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        self.write(&mut out)?;
        Ok(out)
    }

    /// The line as a JSON tree (what a record too big for its line is cut down from).
    #[cfg(test)]
    pub(crate) fn to_value(&self) -> Result<Value, Error> {
        serde_json::from_slice(&self.to_json()?).map_err(Error::Serialize)
    }
}

/// Appends `value` as compact JSON. On error, `out` may hold part of it ([`Envelope::write`]
/// takes it back).
fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), Error> {
    serde_json::to_writer(out, value).map_err(Error::Serialize)
}

/// A timestamp as a JSON string (digits and punctuation: nothing to escape).
fn push_time(out: &mut Vec<u8>, t: SystemTime) {
    out.push(b'"');
    crate::time::push_rfc3339_millis(out, t);
    out.push(b'"');
}

/// Adds `toolCall` after the members of the payload object written from `start`: what
/// `#[serde(flatten)]` of the payload beside a `toolCall` field would write, without its
/// buffering. `Record::link` names a call only for payloads that are objects.
pub(super) fn link(out: &mut Vec<u8>, start: usize, call: &str) -> Result<(), Error> {
    reopen(out, start)?;
    write(out, TOOL_CALL_FIELD)?;
    out.push(b':');
    write(out, call)?;
    out.push(b'}');
    Ok(())
}

/// Adds `toolCallCandidates` as [`link`] adds `toolCall`.
pub(super) fn link_candidates(
    out: &mut Vec<u8>,
    start: usize,
    calls: &[crate::ActionId],
) -> Result<(), Error> {
    reopen(out, start)?;
    write(out, TOOL_CALL_CANDIDATES_FIELD)?;
    out.extend_from_slice(b":[");
    for (i, c) in calls.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(out, c.as_str())?;
    }
    out.extend_from_slice(b"]}");
    Ok(())
}

/// Opens the payload object written from `start` again for one more member.
fn reopen(out: &mut Vec<u8>, start: usize) -> Result<(), Error> {
    let object = out.len() >= start + 2 && out[start] == b'{' && out.last() == Some(&b'}');
    if !object {
        return Err(Error::Serialize(serde::ser::Error::custom(
            "a payload linked to a tool call is not an object",
        )));
    }
    out.pop();
    if out.len() > start + 1 {
        out.push(b',');
    }
    Ok(())
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
