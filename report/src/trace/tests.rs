//! The trace's events for a small hand-built journal: a tool call with its browser actions as
//! children, a typing verdict that did not land as its action's error, a failed step, a
//! console error and a warning, a failed request reduced to origin and path.

use super::events::{build, Built, Event, VERSION};
use crate::timeline::{build as timeline, Timeline};
use cdp_evidence::StoredRecord;
use serde_json::{json, Value};

const T: u64 = 1_773_480_413_000;

fn rec(at: u64, seq: u64, source: &str, kind: &str, status: &str, payload: Value) -> Value {
    let ms = T + at;
    json!({
        "actionId": format!("{ms:013}-0000000001-{seq:010}-00000000"),
        "source": source, "tool": "cdp", "sessionId": "s",
        "startedAt": cdp_evidence::time::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms)),
        "durationMs": 7, "status": status,
        "artifacts": [], "kind": kind, "payload": payload,
        "target": {"targetId": "target:aaaaaaaaaaaa", "type": "page", "title": "Sign in", "url": "https://a.test/login"},
    })
}

fn call_id(at: u64, seq: u64) -> String {
    format!("{:013}-0000000001-{seq:010}-00000000", T + at)
}

/// A navigation, a tool call (`fill`) whose typing did not land, a click that failed, a
/// console error and warning, a failed request, a frame.
fn journal() -> Timeline {
    let mut call = rec(
        100,
        2,
        "mcp",
        "action",
        "ok",
        json!({"method": "fill", "result": {"content": 1, "images": 0}}),
    );
    call["tool"] = json!("chrome_devtools");
    call.as_object_mut().unwrap().remove("target");
    let typing = json!({
        "method": "type", "toolCall": call_id(100, 2),
        "input": {"chars": 9, "inputType": "password"},
        "verification": {"verified": false, "reason": "dropped-characters", "note": "the field grew by 3 of 9 characters"},
    });
    let mut frame = rec(
        330,
        8,
        "relay",
        "action",
        "info",
        json!({"method": "frame"}),
    );
    frame["tool"] = json!("observer");
    frame["artifacts"] = json!(["artifacts/000001-frame.jpeg"]);
    let values = vec![
        rec(
            0,
            1,
            "relay",
            "action",
            "ok",
            json!({"method": "Page.navigate", "url": "https://a.test/login"}),
        ),
        call,
        rec(110, 3, "relay", "action", "ok", typing),
        rec(
            200,
            4,
            "relay",
            "action",
            "error",
            json!({"method": "click", "point": {"x": 10, "y": 20}}),
        )
        .as_object()
        .cloned()
        .map(|mut o| {
            o.insert("error".into(), json!("no element at the point"));
            Value::Object(o)
        })
        .unwrap(),
        rec(
            210,
            5,
            "relay",
            "console",
            "error",
            json!({"level": "error", "text": "Sign-in failed", "url": "https://a.test/app.js", "line": 12, "column": 3}),
        ),
        rec(
            220,
            6,
            "relay",
            "console",
            "error",
            json!({"level": "warning", "text": "slow"}),
        ),
        rec(
            230,
            7,
            "relay",
            "network",
            "error",
            json!({"method": "POST", "url": "https://a.test/api/login", "status": 500, "resourceType": "Fetch", "durationMs": 40, "errorText": "Internal Server Error"}),
        ),
        frame,
    ];
    let records: Vec<StoredRecord> = values
        .into_iter()
        .map(|v| StoredRecord::from_value(v).unwrap())
        .collect();
    timeline(&records, Some(T), Some(T + 400))
}

fn lines(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

fn built() -> Built {
    build(&journal(), "run-1")
}

#[test]
fn steps_are_actions_and_a_tool_calls_browser_actions_its_children() {
    let b = built();
    let trace = lines(&b.trace);
    assert_eq!(trace[0]["type"], "context-options");
    assert_eq!(trace[0]["version"], VERSION);
    assert_eq!(trace[0]["wallTime"], T as f64);
    let befores: Vec<&Value> = trace.iter().filter(|e| e["type"] == "before").collect();
    let titles: Vec<&str> = befores
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Navigated to https://a.test/login",
            "fill password 9 chars did not land",
            "Typed 9 chars (password)",
            "Clicked at (10, 20)",
        ]
    );
    let fill = befores[1]["callId"].as_str().unwrap();
    assert_eq!(
        befores[2]["parentId"], fill,
        "the typing is the call's child"
    );
    assert!(befores[0].get("parentId").is_none());
    assert!(befores[3].get("parentId").is_none());
    assert_eq!(b.counts.actions, 4);
    // Every action ends, after it starts.
    for before in &befores {
        let after = trace
            .iter()
            .find(|e| e["type"] == "after" && e["callId"] == before["callId"])
            .expect("an after for every before");
        assert!(after["endTime"].as_f64() >= before["startTime"].as_f64());
    }
    assert_eq!(befores[0]["startTime"], (T) as f64);
    assert_eq!(befores[0]["pageId"], "page@1");
}

#[test]
fn a_typing_verdict_that_did_not_land_and_a_failed_step_are_errors_without_values() {
    let b = built();
    let trace = lines(&b.trace);
    let errors: Vec<&str> = trace
        .iter()
        .filter(|e| e["type"] == "after")
        .filter_map(|e| e["error"]["message"].as_str())
        .collect();
    assert_eq!(
        errors,
        [
            "the typed text did not land (dropped-characters): the field grew by 3 of 9 characters",
            "no element at the point",
        ]
    );
    assert_eq!(b.counts.failed_actions, 2);
}

#[test]
fn console_entries_are_console_events_and_requests_network_entries_reduced() {
    let b = built();
    let trace = lines(&b.trace);
    let console: Vec<&Value> = trace.iter().filter(|e| e["type"] == "console").collect();
    assert_eq!(console.len(), 2);
    assert_eq!(console[0]["messageType"], "error");
    assert_eq!(console[0]["text"], "Sign-in failed");
    assert_eq!(
        console[0]["location"],
        json!({"url": "https://a.test/app.js", "lineNumber": 11, "columnNumber": 2})
    );
    assert_eq!(console[1]["messageType"], "warning");
    assert_eq!((b.counts.console, b.counts.requests), (2, 1));
    let network = lines(&b.network);
    assert_eq!(network.len(), 1);
    let s = &network[0]["snapshot"];
    assert_eq!(network[0]["type"], "resource-snapshot");
    assert_eq!(s["request"]["method"], "POST");
    assert_eq!(s["request"]["url"], "https://a.test/api/login");
    assert_eq!(s["request"]["headers"], json!([]));
    assert_eq!(s["request"]["queryString"], json!([]));
    assert_eq!(s["response"]["status"], 500);
    assert_eq!(s["response"]["headers"], json!([]));
    assert_eq!(s["_monotonicTime"], (T + 230) as f64);
    assert_eq!(s["_resourceType"], "fetch");
    assert_eq!(s["time"], 40.0);
    assert_eq!(s["_cdpRelay"]["step"], 3, "during the failed click");
}

#[test]
fn frames_are_handed_to_the_archive_writer_with_their_tab_and_time() {
    let b = built();
    assert_eq!(b.frames.len(), 1);
    assert_eq!(b.frames[0].raw_path, "artifacts/000001-frame.jpeg");
    assert_eq!(b.frames[0].page_id, "page@1");
    assert_eq!(b.frames[0].at_ms, T + 330);
}

#[test]
fn the_event_stream_reads_well() {
    let b = built();
    let text: String = lines(&b.trace)
        .iter()
        .chain(lines(&b.network).iter())
        .map(|v| format!("{v}\n"))
        .collect();
    insta::assert_snapshot!("trace_events", text);
}
