//! Records as written and read back: the envelope, links, every payload in one schema.

use super::*;
use crate::vocab::{ActionMethod, ConsoleLevel, LifecycleEvent};
use cdp_sanitize::{Sanitizer, Word};
use std::time::UNIX_EPOCH;

fn value(r: &Record) -> Value {
    let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
    Envelope::new(r, &Source::RELAY, "sess", at)
        .with_id("id-1")
        .to_value()
        .unwrap()
}

fn line(r: &Record, at: SystemTime) -> Vec<u8> {
    Envelope::new(r, &Source::RELAY, "sess", at)
        .with_id("id-1")
        .to_json()
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
    let direct = line(&r, first);
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

/// The envelope's fields in the documented order; the tree a record too big for its line is cut
/// from is the same object (one serializer makes both).
#[test]
fn the_envelope_is_written_in_the_documented_order() {
    let s = Sanitizer::new();
    let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
    let mut action = Action::new(Word::from_text(SafeText::literal("Page.navigate")));
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
        let tree = value(r);
        let direct = line(r, at);
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
        RecordKind::Action(Action::new(Word::from_text(SafeText::literal(
            "Input.dispatchMouseEvent",
        )))),
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
        let direct: Value = serde_json::from_slice(&line(r, at)).unwrap();
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
        RecordKind::Action(Action::new(Word::from_text(SafeText::literal("click")))),
    )
    .action_id(call.clone());
    let written: Value = serde_json::from_slice(
        &Envelope::new(&own, &Source::RELAY, "sess", at)
            .to_json()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(written["actionId"], call.as_str());
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
fn a_tool_call_s_arguments_read_one_by_one() {
    let stored = |kind: &str, arguments: Value| {
        crate::StoredRecord::from_value(serde_json::json!({
            "actionId": "1", "kind": kind,
            "payload": {"method": "fill", "arguments": arguments}
        }))
        .unwrap()
    };
    let written = serde_json::json!([
        {"name": "uid", "type": "string", "value": "1_5"},
        {"name": "broken", "type": "string", "chars": "seven"},
        {"name": "value", "type": "string", "input": {"chars": 7, "inputType": "password"}},
    ]);
    let record = stored("action", written.clone());
    // The argument that does not fit leaves the payload a mismatch; the others still read.
    assert_eq!(record.typed_payload(), crate::StoredPayload::Mismatch);
    let read = record.tool_arguments();
    let names: Vec<&str> = read.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["uid", "value"]);
    assert_eq!(read[0].value, Some(serde_json::json!("1_5")));
    let input = read[1].input.as_ref().unwrap();
    assert_eq!(input.chars, 7);
    assert_eq!(input.input_type.as_ref().unwrap().as_str(), "password");
    assert!(stored("marker", written).tool_arguments().is_empty());
    assert!(stored("action", serde_json::json!({"name": "x"}))
        .tool_arguments()
        .is_empty());
}

#[test]
fn envelope_and_defaults() {
    let v = value(&Record::new(
        SafeText::literal("cdp"),
        RecordKind::Action(Action::new(Word::from_text(SafeText::literal(
            "Page.reload",
        )))),
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
            RecordKind::Action(Action::new(Word::from_text(SafeText::literal(
                "Target.attachToTarget",
            )))),
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
    let mut a = Action::new(Word::from_text(SafeText::literal("type")));
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
    assert_eq!(read.method, ActionMethod::Type);
    assert_eq!(read.input.as_ref().unwrap().chars, 7);
    assert_eq!(
        read.input
            .as_ref()
            .unwrap()
            .input_type
            .as_ref()
            .map(|t| t.as_str()),
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
    assert_eq!(a.method, ActionMethod::Click);
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

#[test]
fn tool_call_candidates_are_written_instead_of_a_single_call() {
    let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
    let (a, b) = (
        ActionId::at(at),
        ActionId::at(at + Duration::from_millis(1)),
    );
    let mut r = Record::new(
        SafeText::literal("cdp"),
        RecordKind::Action(Action::new(Word::from_text(SafeText::literal(
            "Runtime.evaluate",
        )))),
    );
    r.link_tool_call_candidates(vec![a.clone(), b.clone()]);
    let direct: Value = serde_json::from_slice(&line(&r, at)).unwrap();
    assert_eq!(
        direct["payload"][crate::TOOL_CALL_CANDIDATES_FIELD],
        serde_json::json!([a.as_str(), b.as_str()]),
        "{direct}"
    );
    assert!(direct["payload"].get(TOOL_CALL_FIELD).is_none());
    let stored = crate::StoredRecord::from_value(direct).unwrap();
    assert_eq!(stored.tool_call(), None, "an old reader sees no link");
    assert_eq!(stored.tool_call_candidates(), [a.as_str(), b.as_str()]);
    // A single call named wins; one candidate is no ambiguity.
    r.link_tool_call(a.clone());
    let direct: Value = serde_json::from_slice(&line(&r, at)).unwrap();
    assert!(direct["payload"]
        .get(crate::TOOL_CALL_CANDIDATES_FIELD)
        .is_none());
}

#[test]
fn a_step_s_locator_and_variable_read_back_as_written() {
    use crate::StoredPayload as P;
    let cases = [
        (
            Locator::test_id(SafeText::literal("submit")),
            serde_json::json!({"testId": "submit"}),
            LocatorKind::TestId("submit"),
        ),
        (
            Locator::role(SafeText::literal("button"), SafeText::literal("Sign in")),
            serde_json::json!({"role": "button", "name": "Sign in"}),
            LocatorKind::Role {
                role: "button",
                name: "Sign in",
            },
        ),
        (
            Locator::label(SafeText::literal("Email"))
                .exactly()
                .in_frames(vec![SafeText::literal("#outer"), SafeText::literal("#pay")]),
            serde_json::json!({"label": "Email", "exact": true, "frames": ["#outer", "#pay"]}),
            LocatorKind::Label("Email"),
        ),
        (
            Locator::text(SafeText::literal("Tile")),
            serde_json::json!({"text": "Tile"}),
            LocatorKind::Text("Tile"),
        ),
        (
            Locator::placeholder(SafeText::literal("you@example.com")),
            serde_json::json!({"placeholder": "you@example.com"}),
            LocatorKind::Placeholder("you@example.com"),
        ),
        (
            Locator::css(SafeText::literal("#email")),
            serde_json::json!({"css": "#email"}),
            LocatorKind::Css("#email"),
        ),
        (
            Locator::not_replayable(SafeText::literal("the element's name contains typed text")),
            serde_json::json!({"replayable": false, "why": "the element's name contains typed text"}),
            LocatorKind::NotReplayable("the element's name contains typed text"),
        ),
    ];
    for (locator, json, kind) in cases {
        assert_eq!(locator.kind(), Some(kind));
        let mut a = Action::new(ActionMethod::Type);
        a.target = Some(locator);
        a.input = Some(
            cdp_sanitize::InputSummary::of("hunter2", cdp_sanitize::InputType::Password)
                .with_variable("PASSWORD"),
        );
        let (written, read) = read_back(&Record::new(
            SafeText::literal("cdp"),
            RecordKind::Action(a),
        ));
        assert_eq!(written["target"], json);
        assert_eq!(written["input"]["variable"], "PASSWORD");
        let P::Action(read) = read else {
            panic!("{read:?}")
        };
        assert_eq!(read.target.as_ref().and_then(|t| t.kind()), Some(kind));
        assert_eq!(
            read.input.as_ref().and_then(|i| i.variable.as_deref()),
            Some("PASSWORD")
        );
        assert_eq!(serde_json::to_value(&read).unwrap(), written);
    }
    // A click's hover and a select's options read back as written; a run's one `frame` (as
    // runs before `frames` wrote it) reads as a path of one.
    let mut a = Action::new(ActionMethod::Select);
    a.target = Some(Locator::label(SafeText::literal("Colour")));
    a.hover = Some(Locator::role(
        SafeText::literal("button"),
        SafeText::literal("Products"),
    ));
    a.options = Some(vec![SafeText::literal("Blue")]);
    let (written, read) = read_back(&Record::new(
        SafeText::literal("cdp"),
        RecordKind::Action(a),
    ));
    assert_eq!(written["method"], "select");
    assert_eq!(written["options"], serde_json::json!(["Blue"]));
    assert_eq!(written["hover"]["name"], "Products");
    let P::Action(read) = read else {
        panic!("{read:?}")
    };
    assert_eq!(read.options.as_deref(), Some(&["Blue".to_owned()][..]));
    assert_eq!(read.method, ActionMethod::Select);
    let legacy: crate::StoredLocator =
        serde_json::from_value(serde_json::json!({"css": "#a", "frame": "#pay"})).unwrap();
    assert_eq!(legacy.frame_path(), ["#pay"]);
    assert!(!legacy.is_exact());
    // A record without them (an older run, another producer) reads as before.
    let (written, read) = read_back(&Record::new(
        SafeText::literal("cdp"),
        RecordKind::Action(Action::new(ActionMethod::Click)),
    ));
    assert!(written.get("target").is_none());
    let P::Action(read) = read else {
        panic!("{read:?}")
    };
    assert_eq!(read.target, None);
}
