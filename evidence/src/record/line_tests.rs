//! The journal line's format: every record kind and envelope member, awkward text in every text
//! field, byte for byte against a plain serde envelope (a map, the payload flattened beside
//! `toolCall`) kept here as the reference.

use super::*;
use crate::record::tool::{JsonType, ToolArgument, ToolResult};
use crate::vocab::{ConsoleLevel, LifecycleEvent};
use cdp_sanitize::{InputSummary, InputType, RawNetworkFailure, Sanitizer, Word};
use serde::ser::{SerializeMap, Serializer};
use serde_json::Map;
use std::time::UNIX_EPOCH;

/// The envelope as it was written with serde_json (a map, the payload flattened beside
/// `toolCall`): the reference the journal's own writer must match.
struct Reference<'a> {
    record: &'a Record,
    action_id: &'a str,
    session_id: &'a str,
    now: SystemTime,
}

impl Serialize for Reference<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.record;
        let time = crate::time::format_rfc3339_millis;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("actionId", self.action_id)?;
        m.serialize_entry("source", r.source.as_ref().unwrap_or(&Source::RELAY))?;
        m.serialize_entry("tool", r.tool.as_str())?;
        m.serialize_entry("sessionId", self.session_id)?;
        m.serialize_entry("startedAt", &time(r.started_at.unwrap_or(self.now)))?;
        let ms = u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX);
        m.serialize_entry("durationMs", &ms)?;
        m.serialize_entry("status", &r.status)?;
        if let Some(Value::Object(t)) = r.target.as_ref().map(SafeJson::as_value) {
            let kept: Map<String, Value> = t
                .iter()
                .filter(|(k, _)| TARGET_FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            m.serialize_entry("target", &RefTarget(t, kept.len()))?;
        }
        let artifacts: Vec<&str> = r.artifacts.iter().map(ArtifactRef::as_str).collect();
        m.serialize_entry("artifacts", &artifacts)?;
        if let Some(error) = &r.error {
            m.serialize_entry("error", error.as_str())?;
        }
        if let Some(rep) = &r.repeat {
            m.serialize_entry(
                "repeat",
                &RefRepeat {
                    count: rep.count,
                    first_at: time(rep.first_at),
                    last_at: time(rep.last_at),
                },
            )?;
        }
        m.serialize_entry("kind", r.kind.name())?;
        m.serialize_entry("payload", &RefPayload(&r.kind, r.link()))?;
        m.end()
    }
}

/// The allowlisted members in the map's own order (a `Map` of them would sort without
/// `preserve_order`).
struct RefTarget<'a>(&'a Map<String, Value>, usize);

impl Serialize for RefTarget<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.1))?;
        for (k, v) in self.0 {
            if TARGET_FIELDS.contains(&k.as_str()) {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RefRepeat {
    count: u64,
    first_at: String,
    last_at: String,
}

struct RefPayload<'a>(&'a RecordKind, Option<&'a ActionId>);

impl Serialize for RefPayload<'_> {
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

/// Text that needs every kind of escape, and some that must not be escaped.
const AWKWARD: &str = "q\"uote \\back\\slash \u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f} del\u{7f} \
                       sep\u{2028}\u{2029} é 日本 🦀 </script> /";

fn at(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// One record of every kind and every optional envelope member, with awkward text wherever
/// text goes.
fn every_kind(s: &Sanitizer) -> Vec<Record> {
    let text = || SafeText::literal(AWKWARD);
    let mut action = Action::new(Word::from_text(text()));
    action.url = Some(s.url("https://a.test/p\u{e9}th/\"q\"?secret=1"));
    action.input = Some(InputSummary::of("hunter2", InputType::Password));
    action.point = Some(Point { x: 1.5, y: -0.1 });
    action.bytes = Some(u64::MAX);
    action.detail = Some(s.json(&serde_json::json!({
        "b": [1, -2, 3.25, 1e300, true, null, AWKWARD], "a": {"": AWKWARD}, "z": 0.1
    })));
    let mut v = Verification::new(Verified::Indeterminate, text(), text());
    (v.expected, v.grew, v.fields) = (Some(7), Some(-5), Some(2));
    action.verification = Some(v);
    let mut arg = ToolArgument::new(text(), JsonType::Object);
    arg.items = Some(vec![ToolArgument::new(
        SafeText::literal("0"),
        JsonType::Null,
    )]);
    arg.value = Some(s.json(&serde_json::json!(42)));
    arg.input = Some(InputSummary::from_count(3, InputType::Text));
    arg.chars = Some(9);
    arg.count = Some(1);
    action.arguments = Some(vec![arg, ToolArgument::new(text(), JsonType::String)]);
    action.result = Some(ToolResult::new(2, 1, true, true));
    action.label = Some(text());

    let failure = s.network_failure(RawNetworkFailure {
        method: "POST",
        url: "https://a.test/api?token=1",
        status: Some(503),
        resource_type: Some("Fetch"),
        duration_ms: Some(12),
        error_text: Some("net::ERR \"x\"\n"),
    });
    let bare_failure = s.network_failure(RawNetworkFailure {
        method: "GET",
        url: "https://a.test/",
        ..Default::default()
    });
    let mut console = Console::new(ConsoleLevel::Error, text());
    console.url = Some(s.url("https://a.test/app.js"));
    (console.line, console.column) = (Some(3), Some(u32::MAX));
    let mut life = Lifecycle::new(LifecycleEvent::UpstreamLost, 7);
    (life.close_code, life.detail) = (Some(1011), Some(text()));
    let markers = [
        MarkerKind::RunStarted { pid: 1 },
        MarkerKind::RunFinalized {
            pid: 2,
            records: 3,
            artifact_bytes: 4,
            dropped_evidence: 5,
        },
        MarkerKind::EvidenceTruncated {
            budget_bytes: 1,
            used_bytes: 2,
            refused_bytes: 3,
        },
        MarkerKind::JournalTruncated {
            budget_bytes: 1,
            used_bytes: 2,
        },
        MarkerKind::EvidenceDropped {
            count: 4,
            reason: None,
        },
        MarkerKind::EvidenceDropped {
            count: 4,
            reason: Some(DropReason::RunDeleted),
        },
        MarkerKind::JournalRepaired { discarded_bytes: 9 },
        MarkerKind::OwnerRecovered {
            previous_pid: 1,
            pid: 2,
        },
    ];
    let custom =
        |name: &str, v: Value| RecordKind::Custom(CustomKind::new(name, s.json(&v)).unwrap());

    let mut kinds = vec![
        RecordKind::Action(action),
        RecordKind::Action(Action::new(crate::vocab::ActionMethod::Frame)),
        RecordKind::Network(failure),
        RecordKind::Network(bare_failure),
        RecordKind::Console(console),
        RecordKind::Console(Console::new(ConsoleLevel::Warning, s.text(AWKWARD))),
        RecordKind::Lifecycle(life),
        RecordKind::Lifecycle(Lifecycle::new(LifecycleEvent::ClientConnected, 0)),
        custom("gesture", serde_json::json!({"dx": 1, "t": AWKWARD})),
        custom("empty", serde_json::json!({})),
        custom("list", serde_json::json!([1, "x"])),
        custom("taken", serde_json::json!({"toolCall": "mine"})),
        custom("scalar", serde_json::json!("just text")),
    ];
    kinds.extend(
        markers
            .into_iter()
            .map(|m| RecordKind::Marker(Marker::internal(m))),
    );

    let call = ActionId::at(at(1_700_000_000_500));
    let mut out = Vec::new();
    for kind in kinds {
        let plain = Record::new(SafeText::literal("cdp"), kind);
        // Every optional envelope member, and a link to a tool call.
        let mut full = plain
            .clone()
            .source(Source::DEVICE)
            .status(Status::Interrupted)
            .target(s.target_info(&serde_json::json!({
                "targetId": "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1", "type": "page",
                "title": AWKWARD, "url": "https://a.test/", "zzz": "dropped", "attached": true
            })))
            .artifact(ArtifactRef::new("artifacts/000001-frame.png".into()))
            .artifact(ArtifactRef::new("artifacts/000002-frame.png".into()))
            .error(text())
            .repeat(Repeat {
                count: 65_000,
                first_at: at(1_700_000_000_000),
                last_at: at(1_700_000_009_500),
            });
        full.link_tool_call(call.clone());
        let mut linked = plain
            .clone()
            .started_at(at(0))
            .duration(Duration::from_secs(u64::MAX));
        linked.link_tool_call(call.clone());
        out.extend([plain, full, linked]);
    }
    out
}

#[test]
fn every_record_kind_is_written_as_serde_json_wrote_it() {
    let s = Sanitizer::new();
    let now = at(1_700_000_000_123);
    let records = every_kind(&s);
    assert!(records.len() > 60);
    for (id, session) in [("id-1", "sess"), (AWKWARD, AWKWARD)] {
        for r in &records {
            let ours = Envelope::new(r, &Source::RELAY, session, now)
                .with_id(id)
                .to_json()
                .unwrap();
            let reference = Reference {
                record: r,
                action_id: id,
                session_id: session,
                now,
            };
            let theirs = serde_json::to_vec(&reference).unwrap();
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(theirs).unwrap(),
                "{r:?}"
            );
        }
    }
}

#[test]
fn fresh_and_preset_ids_are_written_like_any_id() {
    let s = Sanitizer::new();
    let now = at(1_700_000_000_123);
    let preset = ActionId::at(now);
    for r in every_kind(&s) {
        for r in [r.clone(), r.action_id(preset.clone())] {
            let ours = Envelope::new(&r, &Source::RELAY, "sess", now)
                .to_json()
                .unwrap();
            let tree: Value = serde_json::from_slice(&ours).unwrap();
            let id = tree["actionId"].as_str().unwrap();
            crate::ids::validate_id("action", id).unwrap();
            assert!(id.starts_with("1700000000123-"), "{id}");
            if r.action_id.is_some() {
                assert_eq!(id, preset.as_str());
            }
            let reference = Reference {
                record: &r,
                action_id: id,
                session_id: "sess",
                now,
            };
            assert_eq!(ours, serde_json::to_vec(&reference).unwrap());
        }
    }
}

/// What a linked payload that is not an object would make: an error, not a broken line.
#[test]
fn a_link_needs_an_object() {
    let mut out = b"{\"payload\":".to_vec();
    let start = out.len();
    out.extend_from_slice(b"[1]");
    assert!(super::envelope::link(&mut out, start, "x").is_err());
    out.truncate(start);
    out.extend_from_slice(b"{}");
    super::envelope::link(&mut out, start, "x").unwrap();
    assert_eq!(out, b"{\"payload\":{\"toolCall\":\"x\"}");
}
