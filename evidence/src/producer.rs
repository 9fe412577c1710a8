//! One producer line — a stdin line of `cdp-relay evidence append`, or a line of a `POST
//! /relay/v1/evidence` body — → a sanitized [`Record`]: the input schema of
//! `docs/evidence-format.md`, kept beside the records it builds so that both doors share this
//! one validation without depending on each other.
//!
//! Strict: unknown fields and wrong types make the line bad (a producer bug should surface, not
//! silently lose data). Every string goes through the sanitizer before it can reach a record;
//! numbers and booleans carry no text. Error messages name fields, never values; a field name
//! that came from the input is never shown (only the allowed names).
//!
//! ```text
//! {"tool":"adb","kind":"action","payload":{"method":"tap","point":{"x":10,"y":20}},
//!  "status":"ok","startedAt":"2024-05-01T10:00:00.000Z","durationMs":120,
//!  "source":"device","target":{...TargetInfo...},"error":"..."}
//! ```

use crate::{
    Action, Console, ConsoleLevel, CustomKind, Kind, Lifecycle, LifecycleEvent, Marker, MarkerName,
    Point, Record, RecordKind, Source, Status,
};
use cdp_sanitize::{InputSummary, InputType, RawNetworkFailure, Sanitizer};
use serde_json::{Map, Value};
use std::time::Duration;

/// Largest typed-length count accepted in `payload.input.chars`.
const MAX_TYPED_CHARS: u64 = 1_000_000;
/// Largest `evidenceDropped` count one marker may report: a producer that lost more than this
/// in one go has a bug to report, and summary.md should not claim a trillion lost records.
pub const MAX_DROPPED_COUNT: u64 = 1_000_000;

/// Whether a producer may write records under `source`: `relay` is the relay's own, and
/// another producer's record must not pass for one.
pub fn source_allowed(source: &str) -> bool {
    source != Source::RELAY.as_str()
}

type Obj = Map<String, Value>;

/// Parses and sanitizes one line. `Err` is a message safe to print.
pub fn parse_line(line: &[u8], s: &Sanitizer) -> Result<Record, String> {
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        format!(
            "not valid JSON ({:?} error at column {})",
            e.classify(),
            e.column()
        )
    })?;
    let Value::Object(obj) = value else {
        return Err("not a JSON object".to_owned());
    };
    let f = Fields::new(&obj, "", s);
    f.only(&[
        "tool",
        "kind",
        "payload",
        "status",
        "startedAt",
        "durationMs",
        "source",
        "target",
        "error",
    ])?;
    let tool = s.text_capped(f.req_str("tool")?, 128);
    let kind_name = f.req_str("kind")?;
    let empty = Obj::new();
    let payload = match obj.get("payload") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(p)) => p,
        Some(_) if Kind::parse(kind_name).is_none() => &empty,
        Some(_) => return Err("field `payload` must be an object".to_owned()),
    };
    let fields = Fields::new(payload, "payload.", s);
    let kind = match Kind::parse(kind_name) {
        Some(Kind::Action) => RecordKind::Action(action(fields)?),
        Some(Kind::Network) => RecordKind::Network(network(fields)?),
        Some(Kind::Console) => RecordKind::Console(console(fields)?),
        Some(Kind::Lifecycle) => RecordKind::Lifecycle(lifecycle(fields)?),
        Some(Kind::Marker) => RecordKind::Marker(marker(fields)?),
        None => {
            // The kind's name is kept as written: one the sanitizer would change is refused.
            if s.text(kind_name).as_str() != kind_name {
                return Err(
                    "field `kind` holds text the sanitizer redacts (a registered secret \
                    or a token): name the kind without it"
                        .to_owned(),
                );
            }
            let custom = kind_name;
            let payload = obj
                .get("payload")
                .cloned()
                .unwrap_or(Value::Object(Obj::new()));
            let kind = CustomKind::new(custom, s.json(&payload)).map_err(|_| {
                "field `kind` must be a built-in kind or an id of A-Z a-z 0-9 . _ -"
            })?;
            RecordKind::Custom(kind)
        }
    };
    let mut record = Record::new(tool, kind);
    if let Some(status) = f.opt_str("status")? {
        let status = Status::parse(status)
            .ok_or_else(|| format!("field `status` must be one of {}", one_of(Status::ALL)))?;
        record = record.status(status);
    }
    if let Some(at) = f.opt_str("startedAt")? {
        let at = crate::time::parse_rfc3339(at)
            .ok_or("field `startedAt` must be an RFC 3339 time such as 2024-05-01T10:00:00.000Z")?;
        record = record.started_at(at);
    }
    if let Some(ms) = f.opt_f64("durationMs")? {
        if !(0.0..=1e15).contains(&ms) {
            return Err("field `durationMs` must be a non-negative number".to_owned());
        }
        record = record.duration(Duration::from_micros((ms * 1000.0).round() as u64));
    }
    if let Some(source) = f.opt_str("source")? {
        let source =
            Source::new(source).map_err(|_| "field `source` must be 1-128 of A-Z a-z 0-9 . _ -")?;
        if !source_allowed(source.as_str()) {
            return Err(
                "field `source` may not be `relay`: that names the relay's own records".into(),
            );
        }
        record = record.source(source);
    }
    match obj.get("target") {
        None | Some(Value::Null) => {}
        Some(t @ Value::Object(_)) => record = record.target(s.target_info(t)),
        Some(_) => return Err("field `target` must be an object".to_owned()),
    }
    if let Some(error) = f.opt_str("error")? {
        record = record.error(s.error(error));
    }
    Ok(record)
}

fn action(f: Fields<'_>) -> Result<Action, String> {
    f.only(&["method", "url", "input", "point", "bytes", "detail"])?;
    let mut a = Action::new(f.s.text_capped(f.req_str("method")?, 128));
    a.url = f.opt_str("url")?.map(|u| f.s.url(u));
    if let Some(input) = f.opt_obj("input")? {
        a.input = Some(typed(Fields::new(input, "payload.input.", f.s))?);
    }
    if let Some(point) = f.opt_obj("point")? {
        let p = Fields::new(point, "payload.point.", f.s);
        p.only(&["x", "y"])?;
        a.point = Some(Point {
            x: p.req_f64("x")?,
            y: p.req_f64("y")?,
        });
    }
    a.bytes = f.opt_u64("bytes")?;
    a.detail = f
        .obj
        .get("detail")
        .filter(|v| !v.is_null())
        .map(|v| f.s.json(v));
    Ok(a)
}

/// Typed input: the producer sends either the text (counted here, then dropped) or its length.
fn typed(f: Fields<'_>) -> Result<InputSummary, String> {
    f.only(&["text", "chars", "inputType"])?;
    let input_type = match f.opt_str("inputType")? {
        None => InputType::Unknown,
        Some(t) => InputType::parse(t).ok_or_else(|| {
            format!(
                "field `payload.input.inputType` must be one of {}",
                one_of(InputType::ALL)
            )
        })?,
    };
    match (f.opt_str("text")?, f.opt_u64("chars")?) {
        (Some(text), None) => Ok(InputSummary::of(text, input_type)),
        (None, Some(n)) if n <= MAX_TYPED_CHARS => Ok(InputSummary::from_count(n, input_type)),
        (None, Some(_)) => Err(format!(
            "field `payload.input.chars` must be at most {MAX_TYPED_CHARS}"
        )),
        _ => Err("field `payload.input` needs exactly one of `text` or `chars`".to_owned()),
    }
}

/// A closed set's words for an error message (`a, b, c`).
fn one_of<W: crate::Words>(all: &[W]) -> String {
    let words: Vec<&str> = all.iter().map(|w| w.as_str()).collect();
    words.join(", ")
}

fn network(f: Fields<'_>) -> Result<cdp_sanitize::NetworkFailure, String> {
    f.only(&[
        "method",
        "url",
        "status",
        "resourceType",
        "durationMs",
        "errorText",
    ])?;
    let status = match f.opt_u64("status")? {
        None => None,
        Some(n) => Some(
            u16::try_from(n).map_err(|_| "field `payload.status` must be an HTTP status code")?,
        ),
    };
    Ok(f.s.network_failure(RawNetworkFailure {
        method: f.opt_str("method")?.unwrap_or("GET"),
        url: f.req_str("url")?,
        status,
        resource_type: f.opt_str("resourceType")?,
        duration_ms: f.opt_u64("durationMs")?,
        error_text: f.opt_str("errorText")?,
    }))
}

fn console(f: Fields<'_>) -> Result<Console, String> {
    f.only(&["level", "text", "url", "line", "column"])?;
    let level = ConsoleLevel::parse(f.req_str("level")?).ok_or_else(|| {
        format!(
            "field `payload.level` must be one of {}",
            one_of(ConsoleLevel::ALL)
        )
    })?;
    let mut c = Console::new(level, f.s.text(f.req_str("text")?));
    c.url = f.opt_str("url")?.map(|u| f.s.url(u));
    c.line = f.opt_u32("line")?;
    c.column = f.opt_u32("column")?;
    Ok(c)
}

fn lifecycle(f: Fields<'_>) -> Result<Lifecycle, String> {
    f.only(&["event", "connection", "closeCode", "detail"])?;
    let event = LifecycleEvent::parse(f.req_str("event")?).ok_or_else(|| {
        format!(
            "field `payload.event` must be one of {}",
            one_of(LifecycleEvent::ALL)
        )
    })?;
    let connection = f
        .opt_u64("connection")?
        .ok_or("field `payload.connection` is required (a number)")?;
    let mut l = Lifecycle::new(event, connection);
    l.close_code = match f.opt_u64("closeCode")? {
        None => None,
        Some(n) => {
            Some(u16::try_from(n).map_err(|_| "field `payload.closeCode` must be a close code")?)
        }
    };
    l.detail = f.opt_str("detail")?.map(|d| f.s.text_capped(d, 256));
    Ok(l)
}

fn marker(f: Fields<'_>) -> Result<Marker, String> {
    f.only(&["marker", "count"])?;
    match MarkerName::parse(f.req_str("marker")?) {
        Some(MarkerName::EvidenceDropped) => {
            let count = f
                .opt_u64("count")?
                .ok_or("field `payload.count` is required (a number)")?;
            if count > MAX_DROPPED_COUNT {
                return Err(format!(
                    "field `payload.count` must be at most {MAX_DROPPED_COUNT}"
                ));
            }
            Ok(Marker::evidence_dropped(count))
        }
        _ => Err("producers may only write the `evidenceDropped` marker".to_owned()),
    }
}

/// Typed access to one JSON object's fields, with messages that name fields but never values.
struct Fields<'a> {
    obj: &'a Obj,
    prefix: &'static str,
    s: &'a Sanitizer,
}

impl<'a> Fields<'a> {
    fn new(obj: &'a Obj, prefix: &'static str, s: &'a Sanitizer) -> Fields<'a> {
        Fields { obj, prefix, s }
    }

    /// Refuses unknown fields. The unknown name is not shown: it is input too.
    fn only(&self, allowed: &[&str]) -> Result<(), String> {
        if self.obj.keys().all(|k| allowed.contains(&k.as_str())) {
            return Ok(());
        }
        let allowed: Vec<String> = allowed
            .iter()
            .map(|k| format!("{}{k}", self.prefix))
            .collect();
        Err(format!(
            "unknown field (allowed here: {})",
            allowed.join(", ")
        ))
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    fn wrong(&self, key: &str, what: &str) -> String {
        format!("field `{}{key}` must be {what}", self.prefix)
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(v)) => Ok(Some(v)),
            Some(_) => Err(self.wrong(key, "a string")),
        }
    }

    fn req_str(&self, key: &str) -> Result<&'a str, String> {
        self.opt_str(key)?
            .ok_or_else(|| format!("field `{}{key}` is required (a string)", self.prefix))
    }

    fn opt_u64(&self, key: &str) -> Result<Option<u64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a non-negative integer")),
        }
    }

    fn opt_u32(&self, key: &str) -> Result<Option<u32>, String> {
        match self.opt_u64(key)? {
            None => Ok(None),
            Some(n) => u32::try_from(n)
                .map(Some)
                .map_err(|_| self.wrong(key, "a 32-bit integer")),
        }
    }

    fn opt_f64(&self, key: &str) -> Result<Option<f64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|f| f.is_finite())
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a number")),
        }
    }

    fn req_f64(&self, key: &str) -> Result<f64, String> {
        self.opt_f64(key)?
            .ok_or_else(|| format!("field `{}{key}` is required (a number)", self.prefix))
    }

    fn opt_obj(&self, key: &str) -> Result<Option<&'a Obj>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(o)) => Ok(Some(o)),
            Some(_) => Err(self.wrong(key, "an object")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_json(line: &str) -> Result<Value, String> {
        let s = Sanitizer::new();
        s.register_secret("PASSWORD", "hunter2").unwrap();
        let r = parse_line(line.as_bytes(), &s)?;
        // Round-trip through a real journal to see what would be written.
        let tmp = tempfile::tempdir().unwrap();
        let store = crate::Store::open(crate::EvidenceConfig::at(tmp.path())).unwrap();
        let run = store.join_session("t", "cli").unwrap();
        run.append(r).unwrap();
        let j = store.read_journal(run.id()).unwrap();
        Ok(Value::Object(j.records[1].raw.clone()))
    }

    #[test]
    fn every_string_is_sanitized() {
        let v = record_json(
            r#"{"tool":"adb hunter2","kind":"action","status":"error","durationMs":12.4,
                "startedAt":"2024-05-01T10:00:00+02:00","source":"device",
                "error":"login failed for hunter2 Cookie: sid=31d4d96e407aad42",
                "target":{"targetId":"8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1","type":"page","cookie":"x"},
                "payload":{"method":"tap","url":"https://u:p@ex.com/a?token=abc#f",
                  "input":{"text":"hunter2","inputType":"password"},"point":{"x":1.5,"y":2},
                  "detail":{"note":"Bearer abc123def456ghi","n":3}}}"#,
        )
        .unwrap();
        let text = v.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("31d4d96e407aad42"), "{text}");
        assert!(!text.contains("8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1"), "{text}");
        assert!(!text.contains("abc123def456ghi"), "{text}");
        assert!(!text.contains("token=abc"), "{text}");
        assert_eq!(v["tool"], "adb ${PASSWORD}");
        assert_eq!(v["source"], "device");
        assert_eq!(v["status"], "error");
        assert_eq!(v["durationMs"], 12);
        assert_eq!(v["startedAt"], "2024-05-01T08:00:00.000Z");
        assert_eq!(v["payload"]["url"], "https://ex.com/a");
        assert_eq!(v["payload"]["input"]["chars"], 7);
        assert_eq!(v["payload"]["input"]["inputType"], "password");
        assert_eq!(v["payload"]["point"]["x"], 1.5);
        assert_eq!(v["payload"]["detail"]["n"], 3);
        assert!(v["target"].get("cookie").is_none());
        assert_eq!(v["target"]["type"], "page");
    }

    #[test]
    fn all_builtin_kinds_and_custom_kinds_parse() {
        for line in [
            r#"{"tool":"t","kind":"network","payload":{"method":"post","url":"https://a.b/c?x=1","status":503,"resourceType":"Fetch","durationMs":8,"errorText":"bad"}}"#,
            r#"{"tool":"t","kind":"console","payload":{"level":"exception","text":"boom","url":"https://a.b/app.js","line":3,"column":9}}"#,
            r#"{"tool":"t","kind":"lifecycle","payload":{"event":"upstreamLost","connection":4,"closeCode":1011,"detail":"gone"}}"#,
            r#"{"tool":"t","kind":"marker","payload":{"marker":"evidenceDropped","count":5}}"#,
            r#"{"tool":"t","kind":"gesture","payload":{"dx":3,"note":"hunter2"}}"#,
            r#"{"tool":"t","kind":"action","payload":{"method":"type","input":{"chars":12}}}"#,
        ] {
            let v = record_json(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert!(!v.to_string().contains("hunter2"));
        }
        let v = record_json(r#"{"tool":"t","kind":"network","payload":{"url":"https://a.b/"}}"#)
            .unwrap();
        assert_eq!(v["status"], "error");
        assert_eq!(v["payload"]["method"], "GET");
    }

    #[test]
    fn bad_lines_are_refused_without_echoing_values() {
        let s = Sanitizer::new();
        for (line, expect) in [
            ("not json hunter2", "not valid JSON"),
            ("[\"hunter2\"]", "not a JSON object"),
            (r#"{"kind":"action"}"#, "field `tool` is required"),
            (r#"{"tool":"t"}"#, "field `kind` is required"),
            (
                r#"{"tool":"t","kind":"action","payload":{}}"#,
                "`payload.method`",
            ),
            (
                r#"{"tool":"t","kind":"action","payload":{"method":"m"},"status":"hunter2"}"#,
                "`status`",
            ),
            (
                r#"{"tool":"t","kind":"action","payload":{"method":"m"},"startedAt":"hunter2"}"#,
                "`startedAt`",
            ),
            (
                r#"{"tool":"t","kind":"action","payload":{"method":"m"},"durationMs":-1}"#,
                "`durationMs`",
            ),
            (
                r#"{"tool":"t","kind":"action","payload":{"method":"m"},"source":"../hunter2"}"#,
                "`source`",
            ),
            (
                r#"{"tool":"t","kind":"action","payload":{"method":"m"},"hunter2":1}"#,
                "unknown field",
            ),
            (
                r#"{"tool":"t","kind":"action","payload":{"method":"m","input":{"text":"a","chars":1}}}"#,
                "exactly one",
            ),
            (
                r#"{"tool":"t","kind":"marker","payload":{"marker":"runFinalized"}}"#,
                "evidenceDropped",
            ),
            (r#"{"tool":"t","kind":"../hunter2"}"#, "`kind`"),
            (
                r#"{"tool":"t","kind":"console","payload":{"level":"info","text":"x"}}"#,
                "`payload.level`",
            ),
            (r#"{"tool":7,"kind":"action"}"#, "`tool` must be a string"),
        ] {
            let err = parse_line(line.as_bytes(), &s)
                .err()
                .unwrap_or_else(|| panic!("{line}"));
            assert!(err.contains(expect), "{line}: {err}");
            assert!(!err.contains("hunter2"), "{line}: {err}");
        }
    }

    #[test]
    fn a_custom_kind_holding_a_secret_is_refused() {
        // A registered secret spelled with id characters inside a custom kind's name.
        let line = r#"{"tool":"t","kind":"navigat.hunter2.ion","payload":{}}"#;
        let err = record_json(line).unwrap_err();
        assert!(
            err.contains("`kind` holds text the sanitizer redacts"),
            "{err}"
        );
        assert!(!err.contains("hunter2"), "{err}");
        assert!(record_json(r#"{"tool":"t","kind":"navigation.slow","payload":{}}"#).is_ok());
    }
}
