//! The report's components, pinned as reviewed markup: a change to how a step, a failure, a
//! typing verdict, a withheld frame, a foreign record, an agent's tool call, a folded repeat or
//! the loss banner renders shows up as a snapshot diff (`report/tests/snapshots/*.snap`).
//!
//! One run holds one of each; each component is cut out of the rendered page and laid out one
//! tag per line so a diff reads. Update with `INSTA_UPDATE=always cargo test -p cdp-report
//! --test snapshots`, then review the `.snap` files before committing them.

mod support;

use serde_json::json;
use support::*;

const RUN_ID: &str = "20260314T092653Z-snap";

fn render() -> String {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(RUN_ID);
    let mut b = RunBuilder::new(&dir);
    let page = target("target:aaaaaaaaaaaa", "Sign in", "https://shop.test/login");
    b.rec(0, "marker", json!({"marker": "runStarted", "pid": 1}))["tool"] = json!("cdp-evidence");

    // A step (a click) with a failure (a failed request) during it.
    let r = b.action(100, "click", 30);
    r["payload"]["point"] = json!({"x": 40, "y": 80});
    r["payload"]["detail"] = json!({"button": "left", "clickCount": 1});
    r["target"] = page.clone();
    let r = b.rec(150, "network", json!({"method": "POST", "url": "https://shop.test/api/login", "status": 500, "resourceType": "Fetch", "durationMs": 41}));
    r["target"] = page.clone();

    // A typing verdict.
    let r = b.action(400, "type", 300);
    r["payload"]["input"] = json!({"chars": 12, "inputType": "email"});
    r["payload"]["verification"] = json!({"verified": false, "reason": "dropped-characters",
        "note": "expected 12 characters; the field grew by 10", "expected": 12, "grew": 10});
    r["target"] = page.clone();

    // A withheld frame, of the click before it.
    let r = b.action(700, "click", 20);
    r["payload"]["point"] = json!({"x": 50, "y": 60});
    r["target"] = page.clone();
    let r = b.action(800, "frame", 0);
    r["tool"] = json!("observer");
    r["status"] = json!("info");
    r["payload"]["detail"] =
        json!({"after": ["click"], "screenshotWithheld": "a password field has focus"});
    r["target"] = page.clone();

    // A folded repeat: one console error standing for 41 more, after a key press.
    let r = b.action(850, "press", 5);
    r["payload"]["detail"] = json!({"key": "Enter"});
    r["target"] = page.clone();
    let r = b.rec(
        900,
        "console",
        json!({"level": "error", "text": "Failed to load resource", "url": "https://shop.test/app.js"}),
    );
    r["repeat"] = json!({"count": 41, "firstAt": ts(T0 + 900), "lastAt": ts(T0 + 1900)});
    r["durationMs"] = json!(1000);
    r["target"] = page.clone();

    // A foreign record: a producer-defined kind from a device layer.
    let r = b.rec(2000, "gesture", json!({"dx": 12, "dy": -3, "fingers": 2}));
    r["source"] = json!("device");
    r["tool"] = json!("adb");

    // An agent's tool call with its CDP effects folded under it.
    let call = b.action(3000, "click", 400);
    call["source"] = json!("mcp");
    call["tool"] = json!("chrome_devtools");
    call["payload"]["arguments"] = json!([{"name": "uid", "type": "string", "value": "1_8"}]);
    call["payload"]["result"] = json!({"content": 1, "images": 0});
    let call_id = call["actionId"].as_str().unwrap().to_owned();
    let r = b.action(3050, "click", 5);
    r["payload"]["point"] = json!({"x": 10, "y": 20});
    r["payload"]["toolCall"] = json!(call_id);
    r["target"] = page.clone();
    let r = b.action(3100, "Runtime.callFunctionOn", 2);
    r["payload"]["toolCall"] = json!(call_id);
    r["target"] = page.clone();
    let r = b.rec(
        3200,
        "network",
        json!({"method": "GET", "url": "https://shop.test/api/cart", "status": 503, "toolCall": call_id}),
    );
    r["target"] = page.clone();

    // The loss banner: records refused for the journal budget, evidence dropped.
    b.rec(
        4000,
        "marker",
        json!({"marker": "journalTruncated", "budgetBytes": 65536, "usedBytes": 65000}),
    )["tool"] = json!("cdp-evidence");
    b.rec(
        4100,
        "marker",
        json!({"marker": "evidenceDropped", "count": 7, "reason": "writeFailed"}),
    )["tool"] = json!("cdp-evidence");
    b.finish();
    b.finalized_manifest(RUN_ID, T0 + 4200, json!({"droppedEvidence": 7}));
    let out = cdp_report::render_to_memory(&dir, &cdp_report::Options::default()).unwrap();
    out.html
}

/// The element that starts at `from` (its tag name is read there), through its closing tag.
fn element(html: &str, from: usize) -> &str {
    let name: String = html[from + 1..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    let (open, close) = (format!("<{name}"), format!("</{name}>"));
    let mut depth = 0usize;
    let mut i = from;
    loop {
        let next_open = html[i..].find(&open).map(|o| i + o);
        let next_close = html[i..].find(&close).map(|c| i + c).expect("closed");
        match next_open {
            Some(o) if o < next_close && is_tag(html, o + open.len()) => {
                depth += 1;
                i = o + open.len();
            }
            _ => {
                depth -= 1;
                i = next_close + close.len();
                if depth == 0 {
                    return &html[from..i];
                }
            }
        }
    }
}

/// True when the tag name ends at `at` (`<li ` or `<li>`, not `<link`).
fn is_tag(html: &str, at: usize) -> bool {
    matches!(html.as_bytes().get(at), Some(b' ' | b'>'))
}

/// The first element whose opening tag contains `marker`.
fn find<'a>(html: &'a str, marker: &str) -> &'a str {
    find_with(html, marker, "")
}

/// The first element whose opening tag contains `marker` and whose markup contains `needle`.
fn find_with<'a>(html: &'a str, marker: &str, needle: &str) -> &'a str {
    let mut from = 0;
    while let Some(at) = html[from..].find(marker).map(|a| from + a) {
        let start = html[..at].rfind('<').unwrap();
        let el = element(html, start);
        if el.contains(needle) {
            return el;
        }
        from = at + marker.len();
    }
    panic!("no {marker} with {needle:?} in the report");
}

/// The top-level step whose markup contains `needle`.
fn step_with<'a>(html: &'a str, needle: &str) -> &'a str {
    let list = find(html, "class=\"steps\"");
    let mut i = list.find('>').unwrap() + 1;
    while let Some(o) = list[i..].find("<li").map(|o| i + o) {
        let li = element(list, o);
        if li.contains(needle) {
            return li;
        }
        i = o + li.len();
    }
    panic!("no step with {needle}");
}

/// One tag per line, embedded images elided.
fn layout(markup: &str) -> String {
    let mut out = String::new();
    let mut rest = markup;
    while let Some(at) = rest.find("data:image/") {
        out.push_str(&rest[..at]);
        out.push_str("data:image/…");
        let end = rest[at..].find('"').map_or(rest.len(), |e| at + e);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.replace("><", ">\n<")
}

#[test]
fn a_step_and_its_failure() {
    let html = render();
    let click = step_with(&html, "api/login");
    insta::assert_snapshot!("step", layout(click));
    insta::assert_snapshot!("failure", layout(find(click, "class=\"fail\"")));
}

#[test]
fn a_typing_verdict() {
    let html = render();
    insta::assert_snapshot!(
        "typing_verdict",
        layout(step_with(&html, "the field grew by 10"))
    );
}

#[test]
fn a_withheld_frame() {
    let html = render();
    insta::assert_snapshot!("withheld_frame", layout(step_with(&html, "password field")));
}

#[test]
fn a_foreign_record() {
    let html = render();
    insta::assert_snapshot!("foreign_record", layout(step_with(&html, "gesture")));
}

#[test]
fn a_tool_call_with_its_effects() {
    let html = render();
    insta::assert_snapshot!("tool_call", layout(step_with(&html, "chrome_devtools")));
}

#[test]
fn a_folded_repeat() {
    let html = render();
    let repeat = step_with(&html, "Failed to load resource");
    insta::assert_snapshot!("repeat", layout(find_with(repeat, "class=\"fail\"", "×")));
}

#[test]
fn the_loss_banner() {
    let html = render();
    insta::assert_snapshot!("loss_banner", layout(find(&html, "aria-label=\"Notes\"")));
}
