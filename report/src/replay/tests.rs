//! The export of hand-written runs: the Playwright spec pinned by a snapshot, and each rule
//! (locators, variables, popups, waits, failures, escaping) by a focused test.

use super::{export, Format};
use serde_json::{json, Value};
use std::path::Path;

const RUN: &str = "20261203T220229765Z-09442d7b50257d27";
const ORIGIN: &str = "http://127.0.0.1:38237";
const PAGE: &str = "target:6ab217919c73";
const PAGE2: &str = "target:f90f6a67888e";

/// Writes a run directory holding `records` (each given `actionId`, `startedAt` by position,
/// `status: ok` and `source: relay` unless it has them).
fn run(dir: &Path, records: &[Value]) {
    std::fs::create_dir_all(dir.join("artifacts")).unwrap();
    let manifest = json!({
        "evidenceVersion": 1, "runId": RUN, "sessionId": "demo", "actionLog": "actions.jsonl",
        "status": "finalized", "startedAt": "2026-12-03T22:02:29.765Z",
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    let mut journal = String::new();
    for (i, r) in records.iter().enumerate() {
        let mut r = r.clone();
        let o = r.as_object_mut().unwrap();
        let defaults = [
            (
                "actionId",
                json!(format!("1796335350{i:03}-0000019792-{i:010}-00000000")),
            ),
            (
                "startedAt",
                json!(format!(
                    "2026-12-03T22:02:{:02}.{:03}Z",
                    30 + i / 1000,
                    i % 1000
                )),
            ),
            ("status", json!("ok")),
            ("source", json!("relay")),
            ("tool", json!("cdp")),
            ("sessionId", json!("demo")),
            ("durationMs", json!(1)),
            ("artifacts", json!([])),
        ];
        for (k, v) in defaults {
            o.entry(k).or_insert(v);
        }
        journal.push_str(&r.to_string());
        journal.push('\n');
    }
    std::fs::write(dir.join("actions.jsonl"), journal).unwrap();
}

fn on(page: &str, path: &str, payload: Value) -> Value {
    json!({"kind": "action", "payload": payload,
           "target": {"targetId": page, "type": "page", "url": format!("{ORIGIN}{path}")}})
}

fn spec(records: &[Value]) -> super::Export {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(RUN);
    run(&dir, records);
    export(&dir, Format::Playwright).unwrap()
}

/// The demo's run as the relay records it with locators and named inputs.
fn demo() -> Vec<Value> {
    let field = |label: &str| json!({"label": label});
    let typed = |chars: u64, t: &str, var: &str, target: Value| {
        on(
            PAGE,
            "/login",
            json!({"method": "type", "input": {"chars": chars, "inputType": t, "variable": var},
            "target": target, "detail": {"commands": 1}}),
        )
    };
    vec![
        json!({"kind": "marker", "tool": "cdp-evidence", "status": "info", "payload": {"marker": "runStarted", "pid": 1}}),
        json!({"kind": "action", "payload": {"method": "Target.attachToTarget", "detail": {"targetId": PAGE}}}),
        json!({"kind": "action", "payload": {"method": "Page.navigate", "url": format!("{ORIGIN}/login")},
               "target": {"targetId": PAGE, "type": "page", "url": "about:blank"}}),
        on(
            PAGE,
            "/login",
            json!({"method": "Runtime.evaluate", "bytes": 42}),
        ),
        on(
            PAGE,
            "/login",
            json!({"method": "Page.captureScreenshot", "bytes": 23317}),
        ),
        on(
            PAGE,
            "/login",
            json!({"method": "click", "point": {"x": 512.0, "y": 276.25},
            "detail": {"button": "left", "clickCount": 1}, "target": field("Email")}),
        ),
        typed(25, "email", "EMAIL", field("Email")),
        on(
            PAGE,
            "/login",
            json!({"method": "click", "point": {"x": 512.0, "y": 357.25},
            "detail": {"button": "left", "clickCount": 1}, "target": field("Password")}),
        ),
        typed(14, "password", "PASSWORD", field("Password")),
        on(
            PAGE,
            "/login",
            json!({"method": "click", "point": {"x": 512.0, "y": 438.25},
            "detail": {"button": "left", "clickCount": 1}, "target": field("One-time code")}),
        ),
        typed(6, "one-time-code", "OTP", field("One-time code")),
        on(
            PAGE,
            "/login",
            json!({"method": "click", "point": {"x": 390.2, "y": 497.75},
            "detail": {"button": "left", "clickCount": 1}, "target": {"role": "button", "name": "Sign in"}}),
        ),
        json!({"kind": "action", "tool": "observer", "payload": {"method": "frame", "detail": {"after": ["navigation", "click"]}},
               "target": {"targetId": PAGE, "type": "page", "url": format!("{ORIGIN}/dashboard")}}),
        json!({"kind": "network", "tool": "observer", "status": "error",
               "payload": {"method": "GET", "url": "http://127.0.0.1:42545/v1/updates", "resourceType": "Fetch", "errorText": "net::ERR_CONNECTION_REFUSED"},
               "target": {"targetId": PAGE, "type": "page", "url": format!("{ORIGIN}/dashboard")}}),
        json!({"kind": "console", "tool": "observer", "status": "error",
               "payload": {"level": "error", "text": "Live updates disconnected: Failed to fetch"},
               "target": {"targetId": PAGE, "type": "page", "url": format!("{ORIGIN}/dashboard")}}),
        on(
            PAGE,
            "/dashboard",
            json!({"method": "Page.navigate", "url": format!("{ORIGIN}/search")}),
        ),
        on(
            PAGE,
            "/search",
            json!({"method": "click", "point": {"x": 460.96, "y": 158.75},
            "detail": {"button": "left", "clickCount": 1}, "target": {"role": "searchbox", "name": "Search"}}),
        ),
        on(
            PAGE,
            "/search",
            json!({"method": "type", "input": {"chars": 16, "inputType": "search", "variable": "TYPED_1"},
            "target": {"role": "searchbox", "name": "Search"}}),
        ),
        on(
            PAGE,
            "/search",
            json!({"method": "press", "detail": {"key": "Enter"}}),
        ),
        json!({"kind": "network", "tool": "observer", "status": "error",
               "payload": {"method": "GET", "url": format!("{ORIGIN}/api/search"), "status": 500, "errorText": "Internal Server Error"},
               "target": {"targetId": PAGE, "type": "page", "url": format!("{ORIGIN}/search")}}),
        json!({"kind": "action", "payload": {"method": "Target.createTarget", "url": "about:blank"}}),
        json!({"kind": "action", "payload": {"method": "Target.attachToTarget", "detail": {"targetId": PAGE2}}}),
        json!({"kind": "action", "payload": {"method": "Page.navigate", "url": format!("{ORIGIN}/invoices/INV-1042")},
               "target": {"targetId": PAGE2, "type": "page", "url": "about:blank"}}),
        json!({"kind": "network", "tool": "observer", "status": "error",
               "payload": {"method": "GET", "url": format!("{ORIGIN}/files/INV-1042-receipt.png"), "status": 404},
               "target": {"targetId": PAGE2, "type": "page", "url": format!("{ORIGIN}/invoices/INV-1042")}}),
        json!({"kind": "marker", "tool": "cdp-evidence", "status": "info", "payload": {"marker": "runFinalized", "pid": 1}}),
    ]
}

#[test]
fn the_demo_run_exports_to_a_pinned_spec() {
    let out = spec(&demo());
    insta::assert_snapshot!("demo_spec", out.text);
    assert_eq!(out.figures.steps, 14, "{}", out.text);
    assert_eq!(out.figures.not_replayable, 0);
    // BASE_URL and the four typed inputs.
    assert_eq!(out.figures.variables, 5);
}

#[test]
fn the_same_run_exports_to_the_same_bytes() {
    assert_eq!(spec(&demo()).text, spec(&demo()).text);
}

#[test]
fn each_typed_input_is_read_from_its_variable_before_its_step() {
    let text = spec(&demo()).text;
    assert!(text.contains(
        "await page.getByLabel('Password').fill(input('PASSWORD', 'the password typed at step 5'));"
    ), "{text}");
    assert!(text.contains("throw new Error(`missing environment variable ${name} (${what})`)"));
    assert!(
        text.contains("//   PASSWORD  14 characters typed into a password field at step 5"),
        "{text}"
    );
    assert!(
        text.contains("//   BASE_URL  an origin the run visited; default http://127.0.0.1:38237")
    );
    assert!(text.contains("const BASE_URL = origin('BASE_URL', 'http://127.0.0.1:38237');"));
}

#[test]
fn a_click_that_navigated_waits_for_the_page_it_went_to() {
    let text = spec(&demo()).text;
    let click = text
        .find("getByRole('button', { name: 'Sign in' }).click();")
        .unwrap();
    let wait = text
        .find("await page.waitForURL(at(BASE_URL + '/dashboard'));")
        .unwrap();
    assert!(wait > click, "{text}");
    // The search's Enter stayed on /search (its query is not kept): no wait.
    assert_eq!(text.matches("waitForURL").count(), 1, "{text}");
}

#[test]
fn failures_are_comments_at_their_step() {
    let text = spec(&demo()).text;
    let enter = text.find("await page.keyboard.press('Enter');").unwrap();
    let seen = text
        .find("// the original run saw: GET /api/search → 500")
        .unwrap();
    let open = text.find("const page1 = await context.newPage();").unwrap();
    assert!(enter < seen && seen < open, "{text}");
    assert!(text.contains(
        "// the original run saw: GET http://127.0.0.1:42545/v1/updates → net::ERR_CONNECTION_REFUSED"
    ));
    assert!(text.contains(
        "// the original run saw: console error \"Live updates disconnected: Failed to fetch\""
    ));
}

#[test]
fn steps_without_a_target_stay_commented_and_say_why() {
    let out = spec(&[
        on(
            PAGE,
            "/",
            json!({"method": "click", "point": {"x": 10.0, "y": 20.5}}),
        ),
        on(
            PAGE,
            "/",
            json!({"method": "type", "input": {"chars": 3, "inputType": "text"},
            "target": {"replayable": false, "why": "its accessible name holds typed text"}}),
        ),
        on(
            PAGE,
            "/",
            json!({"method": "click", "point": {"x": 1.0, "y": 2.0}, "target": {"shape": "new"}}),
        ),
    ]);
    let t = &out.text;
    assert!(t.contains("  // 1. click at (10, 20.5): not replayable: no target recorded\n  // await page.mouse.click(10, 20.5);\n"), "{t}");
    assert!(t.contains("  // 2. type 3 characters (text): not replayable: its accessible name holds typed text\n  // await page.keyboard.insertText(input('TYPED_1', 'the text typed at step 2'));\n"), "{t}");
    assert!(
        t.contains("not replayable: its recorded target is not one this version reads"),
        "{t}"
    );
    assert!(
        t.contains("TYPED_1  3 characters typed into a text field at step 2 (not replayable)"),
        "{t}"
    );
    assert_eq!(out.figures.not_replayable, 3);
    assert_eq!(out.figures.steps, 3);
}

#[test]
fn every_locator_kind_and_frames() {
    let click = |target: Value| on(PAGE, "/", json!({"method": "click", "target": target}));
    let t = spec(&[
        click(json!({"testId": "save"})),
        click(json!({"role": "link", "name": "Home"})),
        click(json!({"role": "main"})),
        click(json!({"label": "Name"})),
        click(json!({"placeholder": "you@x"})),
        click(json!({"css": "#a > b"})),
        click(json!({"role": "button", "name": "Pay", "frame": "iframe[name=\"checkout\"]"})),
        on(
            PAGE,
            "/",
            json!({"method": "click", "target": {"testId": "x"}, "detail": {"clickCount": 2}}),
        ),
        on(
            PAGE,
            "/",
            json!({"method": "click", "target": {"testId": "x"}, "detail": {"button": "right"}}),
        ),
    ])
    .text;
    for line in [
        "await page.getByTestId('save').click();",
        "await page.getByRole('link', { name: 'Home' }).click();",
        "await page.getByRole('main').click();",
        "await page.getByLabel('Name').click();",
        "await page.getByPlaceholder('you@x').click();",
        "await page.locator('#a > b').click();",
        "await page.locator('iframe[name=\"checkout\"]').contentFrame().getByRole('button', { name: 'Pay' }).click();",
        "await page.getByTestId('x').dblclick();",
        "await page.getByTestId('x').click({ button: 'right' });",
    ] {
        assert!(t.contains(line), "{line} not in\n{t}");
    }
}

#[test]
fn journal_text_cannot_break_out_of_literals_or_comments() {
    let evil = "x'); require('child_process').exec('id'); ('\n*/ // \u{2028}`${process.exit()}`\\";
    let t = spec(&[
        on(
            PAGE,
            "/",
            json!({"method": "click", "target": {"role": "button", "name": evil}}),
        ),
        json!({"kind": "console", "status": "error", "payload": {"level": "error", "text": evil},
               "target": {"targetId": PAGE, "url": format!("{ORIGIN}/")}}),
        on(
            PAGE,
            "/",
            json!({"method": "type", "input": {"chars": 1, "inputType": evil, "variable": evil},
            "target": {"label": evil}}),
        ),
    ])
    .text;
    assert!(!t.contains('\u{2028}'));
    assert!(t.contains(r#"getByRole('button', { name: 'x\'); require(\'child_process\').exec(\'id\'); (\'\n*/ // \u2028`${process.exit()}`\\' }).click();"#), "{t}");
    // The text unescaped is only ever inside a `//` comment.
    for l in t.lines().filter(|l| l.contains("require('child_process')")) {
        assert!(l.trim_start().starts_with("//"), "{l}");
    }
    // A variable name that is not one is replaced.
    assert!(
        t.contains("input('TYPED_1', 'the text typed at step 2')"),
        "{t}"
    );
}

#[test]
fn pages_opened_by_a_click_are_popups() {
    let t = spec(&[
        on(PAGE, "/", json!({"method": "click", "target": {"role": "link", "name": "Open"}})),
        json!({"kind": "action", "payload": {"method": "click", "target": {"testId": "ok"}},
               "target": {"targetId": PAGE2, "openerId": PAGE, "url": format!("{ORIGIN}/popup")}}),
        on(PAGE, "/", json!({"method": "press", "detail": {"key": "Tab"}})),
        json!({"kind": "action", "payload": {"method": "Target.closeTarget", "detail": {"targetId": PAGE2}}}),
    ])
    .text;
    assert!(t.contains(
        "  const page1Promise = page.waitForEvent('popup');\n  await page.getByRole('link', { name: 'Open' }).click();\n  const page1 = await page1Promise;\n"
    ), "{t}");
    assert!(t.contains("await page1.getByTestId('ok').click();"), "{t}");
    assert!(t.contains("await page.keyboard.press('Tab');"), "{t}");
    assert!(t.contains("await page1.close();"), "{t}");
    assert!(t.contains("async ({ page }) =>"), "{t}");
}

#[test]
fn a_run_created_page_is_the_tests_page_and_origins_get_variables() {
    let t = spec(&[
        json!({"kind": "action", "payload": {"method": "Target.createTarget", "url": "about:blank"}}),
        json!({"kind": "action", "payload": {"method": "Page.navigate", "url": "https://shop.test/cart"},
               "target": {"targetId": PAGE, "url": "about:blank"}}),
        json!({"kind": "action", "payload": {"method": "Page.navigate", "url": "https://pay.test"},
               "target": {"targetId": PAGE, "url": "https://shop.test/cart"}}),
        json!({"kind": "action", "payload": {"method": "Page.navigate", "url": "https://shop.test/reset/[redacted:token]"},
               "target": {"targetId": PAGE, "url": "https://pay.test/"}}),
        json!({"kind": "action", "source": "mcp", "tool": "chrome_devtools", "payload": {"method": "navigate_page"}}),
        json!({"kind": "action", "source": "device", "tool": "adb", "payload": {"method": "swipe"}}),
        json!({"kind": "action", "source": "mcp", "tool": "cdp-relay", "payload": {"method": "evidence_summary"}}),
        json!({"kind": "action", "source": "mcp", "tool": "cdp-relay", "payload": {"method": "evidence_mark_step", "label": "pay"}}),
    ])
    .text;
    assert!(
        t.contains("// 1. open a page: the test's own `page`"),
        "{t}"
    );
    assert!(t.contains("await page.goto(BASE_URL + '/cart');"), "{t}");
    assert!(t.contains("await page.goto(BASE_URL_2);"), "{t}");
    assert!(
        t.contains("const BASE_URL_2 = origin('BASE_URL_2', 'https://pay.test');"),
        "{t}"
    );
    assert!(
        t.contains("not replayable: the recorded URL is not one to go to"),
        "{t}"
    );
    assert!(
        t.contains("// agent: navigate_page (chrome_devtools)"),
        "{t}"
    );
    assert!(
        t.contains("// 5. swipe: not replayable: another producer's action"),
        "{t}"
    );
    assert!(!t.contains("context"), "{t}");
}

#[test]
fn not_a_run_is_an_error_and_an_empty_run_is_a_spec() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(export(tmp.path(), Format::Playwright).is_err());
    let t = spec(&[]).text;
    assert!(t.contains("// The run has no steps to replay."), "{t}");
    assert!(t.contains("// Variables: none."));
}

#[test]
fn report_html_says_how_to_export_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(RUN);
    run(&dir, &demo());
    let out = crate::render_to_memory(&dir, &crate::Options::default()).unwrap();
    assert!(
        out.html
            .contains(&format!("cdp-relay export {RUN} --out replay.spec.ts")),
        "{}",
        out.html
    );
}

#[test]
fn a_long_run_of_plumbing_on_interleaved_pages_exports_quickly() {
    let mut records = vec![on(PAGE, "/a", json!({"method": "Runtime.evaluate"}))];
    for i in 0..20_000 {
        // The second page is somewhere new each time (kept); the first never moves (skipped).
        let (page, path) = match i % 4 {
            0 => (PAGE2, "/b"),
            2 => (PAGE2, "/c"),
            _ => (PAGE, "/a"),
        };
        records.push(on(
            page,
            path,
            json!({"method": "Runtime.evaluate", "bytes": i}),
        ));
    }
    records.push(on(
        PAGE,
        "/a",
        json!({"method": "press", "detail": {"key": "Enter"}}),
    ));
    let started = std::time::Instant::now();
    let out = spec(&records);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(out.figures.steps, 1, "{}", out.text);
}
