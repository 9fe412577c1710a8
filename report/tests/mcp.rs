//! An agent's tool calls (`source: "mcp"`) render as steps with their CDP actions under them,
//! in both outputs; and nothing an MCP producer writes can break out of the report.

mod support;

use serde_json::json;
use support::*;

/// A short session as `cdp-relay mcp` records it: a marked step, a fill_form whose typing and
/// evaluations name it, a click whose failed request and frame name it, the agent leaving.
fn session(dir: &std::path::Path) {
    let mut b = RunBuilder::new(dir);
    let page = target("target:aaaaaaaaaaaa", "Sign in", "https://shop.test/login");
    let mark = b.action(100, "evidence_mark_step", 1);
    mark["source"] = json!("mcp");
    mark["tool"] = json!("cdp-relay");
    mark["payload"]["label"] = json!("log in");
    let fill = b.action(200, "fill_form", 900);
    fill["source"] = json!("mcp");
    fill["tool"] = json!("chrome_devtools");
    fill["payload"]["arguments"] = json!([{"name": "elements", "type": "array", "count": 2, "items": [
        {"name": "0", "type": "object", "count": 2, "items": [
            {"name": "uid", "type": "string", "value": "1_3"},
            {"name": "value", "type": "string", "input": {"chars": 16, "inputType": "unknown"}}]},
        {"name": "1", "type": "object", "count": 2, "items": [
            {"name": "uid", "type": "string", "value": "1_5"},
            {"name": "value", "type": "string", "input": {"chars": 12, "inputType": "unknown"}}]}
    ]}]);
    fill["payload"]["result"] = json!({"content": 1, "images": 0});
    let fill_id = fill["actionId"].as_str().unwrap().to_owned();
    let r = b.action(250, "Runtime.callFunctionOn", 2);
    r["payload"]["toolCall"] = json!(fill_id);
    let r = b.action(300, "type", 200);
    r["payload"]["input"] = json!({"chars": 16, "inputType": "email"});
    r["payload"]["verification"] = json!({"verified": true, "reason": "landed", "note": "the field changed exactly as typing 16 characters would"});
    r["payload"]["toolCall"] = json!(fill_id);
    r["target"] = page.clone();
    let r = b.action(600, "type", 200);
    r["payload"]["input"] = json!({"chars": 12, "inputType": "password"});
    r["payload"]["verification"] =
        json!({"verified": "indeterminate", "reason": "sensitive-field", "note": "not read back"});
    r["payload"]["toolCall"] = json!(fill_id);
    r["target"] = page.clone();
    let click = b.action(1200, "click", 400);
    click["source"] = json!("mcp");
    click["tool"] = json!("chrome_devtools");
    click["payload"]["arguments"] = json!([{"name": "uid", "type": "string", "value": "1_8"}]);
    let click_id = click["actionId"].as_str().unwrap().to_owned();
    let r = b.action(1250, "click", 5);
    r["payload"]["point"] = json!({"x": 40, "y": 80});
    r["payload"]["toolCall"] = json!(click_id);
    r["target"] = page.clone();
    let r = b.rec(
        1300,
        "network",
        json!({"method": "POST", "url": "https://shop.test/api/login", "status": 500, "toolCall": click_id}),
    );
    r["target"] = page.clone();
    let shot = fake_screenshot(160, 100, 3);
    let frame = b.artifact("frame", "png", &shot);
    let r = b.action(1700, "frame", 0);
    r["tool"] = json!("observer");
    r["payload"]["toolCall"] = json!(click_id);
    r["payload"]["detail"] = json!({"after": ["failure"]});
    r["artifacts"] = json!([frame]);
    r["target"] = page;
    let left = b.rec(
        2000,
        "lifecycle",
        json!({"event": "agentDisconnected", "connection": 0}),
    );
    left["source"] = json!("mcp");
    b.finish();
    b.finalized_manifest("mcp-session", T0 + 2100, json!({}));
}

#[test]
fn tool_calls_are_steps_with_their_browser_actions_under_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mcp-session");
    session(&dir);
    let out = cdp_report::render_to_memory(&dir, &cdp_report::Options::default()).unwrap();
    assert_eq!(out.figures.steps, 4, "{}", out.summary);
    assert_eq!(out.figures.failed_requests, 1);
    assert_eq!(out.figures.frames_embedded, 1);
    let s = &out.summary;
    for line in [
        "Step `log in`",
        "`fill_form` `2 fields — email 16 chars landed; password 12 chars not read back`",
        "→ +0.3 s Typed 16 chars (email) — verified: landed (`landed`)",
        "→ +1.2 s Clicked at (40, 80)",
        "`elements[1].value`: `12 chars of text, not kept (input type unknown)`",
        "The agent disconnected",
    ] {
        assert!(s.contains(line), "{line:?} not in:\n{s}");
    }
    // The failure and the frame sit with the click that caused them.
    let click = s.find("`click`").expect("the click step");
    let failure = s.rfind("500 `POST`").expect("the failure");
    let left = s.find("The agent disconnected").expect("the end");
    assert!(click < failure && failure < left, "{s}");
    let h = &out.html;
    assert!(h.contains("class=\"effects\""));
    assert!(h.contains("Typed 16 chars"));
    assert_eq!(h.matches("data:image/png;base64,").count(), 1);
}

#[test]
fn hostile_strings_from_an_mcp_producer_are_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mcp-hostile");
    let mut b = RunBuilder::new(&dir);
    let mut at = 0;
    for h in hostile_all() {
        at += 10;
        let r = b.action(at, &h, 1);
        r["source"] = json!("mcp");
        r["tool"] = json!(h);
        r["payload"]["label"] = json!(if at % 20 == 0 { Some(&h) } else { None });
        r["payload"]["arguments"] = json!([
            {"name": h, "type": "string", "value": h},
            {"name": "u", "type": "string", "url": h},
            {"name": "x", "type": h, "items": [{"name": h, "type": "object", "items": []}]},
            {"name": "bad"}
        ]);
        r["payload"]["result"] = json!({"content": h});
        let id = r["actionId"].as_str().unwrap().to_owned();
        let e = b.action(at + 1, "type", 1);
        e["payload"]["input"] = json!({"chars": 1, "inputType": h});
        e["payload"]["toolCall"] = json!(id);
        let e = b.action(at + 2, &h, 1);
        e["payload"]["toolCall"] = json!(h);
        let g = b.rec(
            at + 3,
            "lifecycle",
            json!({"event": "serverExited", "connection": 0, "detail": h}),
        );
        g["source"] = json!("mcp");
    }
    b.finish();
    let out = cdp_report::render_to_memory(&dir, &cdp_report::Options::default()).unwrap();
    assert!(!out.html.contains("<script>alert"), "escaped");
    assert!(!out.html.contains("<a href=\"http://127.0.0.1:9/\">"));
    assert!(!out.html.contains("<meta http-equiv=\"refresh\""));
    assert!(out.figures.steps > 0);
}
