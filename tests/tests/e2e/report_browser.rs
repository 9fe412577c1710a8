//! `report.html` in a real Chromium, opened from `file://`: it makes no request but for itself
//! and its `data:` frames, violates no CSP, logs nothing, runs no script, and lays out at
//! 1280 px and 390 px in light and dark. Screenshots go to the test's temp directory and, with
//! `CDP_REPORT_SHOTS` set, to `/tmp/report-shots/` for a person to look at.

#[path = "../../../report/tests/support/mod.rs"]
mod support;

use base64::Engine as _;
use cdp_capture::client;
use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::{page_ws, within, Chromium};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A CDP page session that keeps the events it sees while waiting for responses.
struct Session {
    cdp: Cdp,
    events: Vec<Value>,
}

impl Session {
    async fn connect(url: &str) -> Session {
        Session {
            cdp: Cdp::connect(url).await,
            events: Vec::new(),
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        let answer = self
            .cdp
            .client
            .call(method, params, None, Duration::from_secs(300));
        let events = &mut self.events;
        let keep =
            |e: client::Event| events.push(serde_json::from_str(e.text()).expect("CDP JSON"));
        within(method, self.cdp.events.during(answer, keep))
            .await
            .unwrap_or_else(|e| panic!("{method} failed: {e}"))
    }

    /// Reads events until one named `method` arrives (or returns it if already seen).
    async fn wait_event(&mut self, method: &str) -> Value {
        if let Some(e) = self.events.iter().find(|e| e["method"] == method) {
            return e.clone();
        }
        loop {
            let Some(e) = within(method, self.cdp.events.recv()).await else {
                panic!("socket ended waiting for {method}");
            };
            let v: Value = serde_json::from_str(e.text()).expect("CDP JSON");
            self.events.push(v.clone());
            if v["method"] == method {
                return v;
            }
        }
    }

    /// Navigates and waits for the load event; returns the events seen during the load.
    async fn load(&mut self, url: &str) -> Vec<Value> {
        self.events.clear();
        self.call("Page.navigate", json!({ "url": url })).await;
        self.wait_event("Page.loadEventFired").await;
        // A round trip after load lets late console or audit events arrive first.
        self.eval("new Promise(r => requestAnimationFrame(() => setTimeout(r, 50)))")
            .await;
        std::mem::take(&mut self.events)
    }

    async fn eval(&mut self, expr: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expr, "returnByValue": true, "awaitPromise": true }),
            )
            .await;
        r["result"]["value"].clone()
    }

    async fn screenshot(&mut self, clip: Option<(f64, f64, f64, f64)>) -> Vec<u8> {
        let mut params = json!({ "format": "png", "captureBeyondViewport": true });
        if let Some((x, y, w, h)) = clip {
            params["clip"] = json!({ "x": x, "y": y, "width": w, "height": h, "scale": 1 });
        }
        let r = self.call("Page.captureScreenshot", params).await;
        base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().expect("screenshot data"))
            .expect("base64")
    }
}

/// Where screenshots go: the test's temp dir, plus `/tmp/report-shots` when asked.
struct Shots {
    dir: PathBuf,
    copy: Option<PathBuf>,
}

impl Shots {
    fn new(dir: &Path) -> Shots {
        let copy = std::env::var_os("CDP_REPORT_SHOTS").map(|_| PathBuf::from("/tmp/report-shots"));
        if let Some(c) = &copy {
            std::fs::create_dir_all(c).expect("create /tmp/report-shots");
        }
        std::fs::create_dir_all(dir).expect("shots dir");
        Shots {
            dir: dir.to_path_buf(),
            copy,
        }
    }

    fn save(&self, name: &str, bytes: &[u8]) {
        assert!(
            bytes.starts_with(b"\x89PNG") || bytes.starts_with(b"%PDF"),
            "{name} is a PNG or a PDF"
        );
        std::fs::write(self.dir.join(name), bytes).expect("save shot");
        if let Some(c) = &self.copy {
            std::fs::write(c.join(name), bytes).expect("copy shot");
        }
    }
}

/// The app pages whose screenshots become the fixture's frames.
const LOGIN_PAGE: &str = r#"<!doctype html><meta charset=utf-8><title>Sign in</title>
<style>body{margin:0;font:16px system-ui,sans-serif;background:#f3f4f6}header{background:#1e3a8a;color:#fff;padding:18px 32px;font-weight:700}
main{max-width:420px;margin:60px auto;background:#fff;border-radius:12px;padding:32px;box-shadow:0 2px 12px #0002}
label{display:block;margin:14px 0 6px;color:#374151}input{width:100%;padding:10px;border:1px solid #d1d5db;border-radius:8px;font:inherit}
button{margin-top:22px;width:100%;padding:12px;border:0;border-radius:8px;background:#2563eb;color:#fff;font:inherit;font-weight:600}</style>
<header>Acme Shop</header><main><h2>Your account</h2><p>Welcome back. Your cart could not be loaded.</p><label>Email</label><input value="a.person@example.test"><button>Continue shopping</button></main>"#;
const SEARCH_PAGE: &str = r#"<!doctype html><meta charset=utf-8><title>Search</title>
<style>body{margin:0;font:16px system-ui,sans-serif;background:#f3f4f6}header{background:#1e3a8a;color:#fff;padding:18px 32px;font-weight:700}
main{max-width:720px;margin:40px auto}.err{background:#fee2e2;color:#991b1b;border-radius:10px;padding:18px 22px}.row{background:#fff;border-radius:10px;height:56px;margin:12px 0}</style>
<header>Acme Shop — Search</header><main><div class=err><b>Something went wrong.</b> Search is unavailable (500). Please try again.</div><div class=row></div><div class=row></div><div class=row></div></main>"#;

fn data_url(html: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(html);
    format!("data:text/html;base64,{b64}")
}

async fn app_screenshot(s: &mut Session, html: &str) -> Vec<u8> {
    s.load(&data_url(html)).await;
    s.screenshot(None).await
}

/// Screenshots of consecutive pieces of the page, readable at full size.
async fn save_pieces(
    s: &mut Session,
    shots: &Shots,
    prefix: &str,
    width: u32,
    height: f64,
    max: usize,
) {
    let piece: f64 = if width < 500 { 844.0 } else { 1100.0 };
    let mut y = 0.0;
    for i in 1..=max {
        if y >= height {
            break;
        }
        let png = s
            .screenshot(Some((0.0, y, f64::from(width), piece.min(height - y))))
            .await;
        shots.save(&format!("{prefix}-part{i}.png"), &png);
        y += piece;
    }
}

async fn set_view(s: &mut Session, width: u32, dark: bool) {
    s.call(
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 500 }),
    )
    .await;
    s.call(
        "Emulation.setEmulatedMedia",
        json!({ "media": "", "features": [{ "name": "prefers-color-scheme", "value": if dark { "dark" } else { "light" } }] }),
    )
    .await;
}

/// Requests other than the document itself and `data:` URLs.
fn foreign_requests(events: &[Value], doc: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["method"] == "Network.requestWillBeSent")
        .filter_map(|e| e["params"]["request"]["url"].as_str())
        .filter(|u| *u != doc && !u.starts_with("data:"))
        .map(str::to_owned)
        .collect()
}

/// Console messages, log entries, exceptions, CSP issues and dialogs.
fn complaints(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| {
            let m = e["method"].as_str().unwrap_or("");
            matches!(
                m,
                "Runtime.consoleAPICalled"
                    | "Runtime.exceptionThrown"
                    | "Log.entryAdded"
                    | "Page.javascriptDialogOpening"
            ) || (m == "Audits.issueAdded"
                && e["params"]["issue"]["code"] == "ContentSecurityPolicyIssue")
        })
        .cloned()
        .collect()
}

async fn enable(s: &mut Session) {
    for domain in ["Page", "Network", "Log", "Runtime", "Audits"] {
        s.call(&format!("{domain}.enable"), json!({})).await;
    }
}

#[tokio::test]
async fn report_opens_from_file_without_requests_and_lays_out_in_both_widths_and_schemes() {
    let chromium = Chromium::start().await;
    let ws = page_ws(&format!("127.0.0.1:{}", chromium.port())).await;
    let mut s = Session::connect(&ws).await;
    enable(&mut s).await;

    // Real frames: screenshots Chromium takes of two app pages.
    set_view(&mut s, 1280, false).await;
    s.call(
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": false }),
    )
    .await;
    let account = app_screenshot(&mut s, LOGIN_PAGE).await;
    let search = app_screenshot(&mut s, SEARCH_PAGE).await;

    let tmp = tempfile::tempdir().expect("tempdir");
    let run_dir = tmp.path().join(support::LOGIN_RUN_ID);
    support::login_flow(&run_dir, [&account, &search]);
    let rendered = cdp_report::render(&run_dir).expect("render");
    assert_eq!(rendered.figures.frames_embedded, 2);
    let url = format!("file://{}", rendered.html_path.display());

    let shots = Shots::new(&tmp.path().join("shots"));
    for (width, dark) in [(1280, false), (1280, true), (390, false), (390, true)] {
        set_view(&mut s, width, dark).await;
        let events = s.load(&url).await;
        assert_eq!(
            foreign_requests(&events, &url),
            Vec::<String>::new(),
            "the report fetched something"
        );
        let documents = events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .filter(|e| e["params"]["request"]["url"] == url.as_str())
            .count();
        assert_eq!(documents, 1, "the document itself is loaded once");
        assert_eq!(
            complaints(&events),
            Vec::<Value>::new(),
            "console, CSP or dialog"
        );

        // The pinned style applied (a hash mismatch would leave the page unstyled), no script,
        // both frames decoded, no horizontal overflow.
        let checks = s
            .eval(
                r#"({
                scripts: document.scripts.length,
                styled: getComputedStyle(document.querySelector('.steps')).listStyleType === 'none',
                images: [...document.images].filter(i => i.complete && i.naturalWidth > 0).length,
                handlers: [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on')).length,
                overflow: document.documentElement.scrollWidth - window.innerWidth,
                height: document.documentElement.scrollHeight,
            })"#,
            )
            .await;
        assert_eq!(checks["scripts"], 0);
        assert_eq!(checks["styled"], true, "the inline style was blocked");
        assert_eq!(checks["images"], 2);
        assert_eq!(checks["handlers"], 0);
        assert!(
            checks["overflow"].as_i64().unwrap_or(1) <= 0,
            "horizontal overflow at {width}px: {checks}"
        );

        let scheme = if dark { "dark" } else { "light" };
        let full = s.screenshot(None).await;
        shots.save(&format!("report-{width}-{scheme}.png"), &full);
        let height = checks["height"].as_f64().unwrap_or(900.0);
        save_pieces(
            &mut s,
            &shots,
            &format!("report-{width}-{scheme}"),
            width,
            height,
            8,
        )
        .await;
    }

    // An enlarged frame and an unfolded fold, for a person to look at.
    set_view(&mut s, 1280, false).await;
    s.load(&url).await;
    let top = s
        .eval(
            r#"(() => { document.querySelector('details.frame').open = true;
                 document.querySelector('details.fold').open = true;
                 return document.querySelector('details.frame').closest('li').getBoundingClientRect().top + scrollY; })()"#,
        )
        .await;
    let top = top.as_f64().unwrap_or(0.0);
    shots.save(
        "report-1280-frame-open.png",
        &s.screenshot(Some((0.0, top - 20.0, 1280.0, 1000.0))).await,
    );

    // Printable: the print stylesheet lays it out without errors.
    set_view(&mut s, 800, false).await;
    s.call("Emulation.setEmulatedMedia", json!({ "media": "print" }))
        .await;
    let events = s.load(&url).await;
    assert_eq!(complaints(&events), Vec::<Value>::new());
    shots.save("report-print.png", &s.screenshot(None).await);
    let pdf = s.call("Page.printToPDF", json!({})).await;
    let pdf = base64::engine::general_purpose::STANDARD
        .decode(pdf["data"].as_str().expect("pdf data"))
        .expect("base64");
    shots.save("report.pdf", &pdf);
    drop(chromium);
}

#[tokio::test]
async fn the_harness_sees_requests_and_csp_violations_when_there_are_some() {
    // A control: the same checks must fail for a page that breaks the rules, or the test above
    // proves nothing.
    let chromium = Chromium::start().await;
    let ws = page_ws(&format!("127.0.0.1:{}", chromium.port())).await;
    let mut s = Session::connect(&ws).await;
    enable(&mut s).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let run_dir = tmp.path().join("run");
    let png = support::fake_screenshot(40, 30, 1);
    support::login_flow(&run_dir, [&png, &png]);
    let rendered = cdp_report::render(&run_dir).expect("render");
    let html = std::fs::read_to_string(&rendered.html_path).expect("read report");
    let broken = html.replacen(
        "<main",
        r#"<img src="http://127.0.0.1:9/beacon.png"><div style="color:red">x</div><main"#,
        1,
    );
    let path = tmp.path().join("broken.html");
    std::fs::write(&path, broken).expect("write");
    let url = format!("file://{}", path.display());
    let events = s.load(&url).await;
    let c = complaints(&events);
    assert!(
        !c.is_empty(),
        "a blocked image and a blocked style attribute must be reported"
    );
    drop(chromium);
}

#[tokio::test]
async fn a_hostile_run_renders_inert_in_the_browser() {
    let chromium = Chromium::start().await;
    let ws = page_ws(&format!("127.0.0.1:{}", chromium.port())).await;
    let mut s = Session::connect(&ws).await;
    enable(&mut s).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let run_dir = tmp.path().join("hostile");
    support::hostile_run(&run_dir);
    let rendered = cdp_report::render(&run_dir).expect("render");
    let url = format!("file://{}", rendered.html_path.display());
    set_view(&mut s, 1280, false).await;
    let events = s.load(&url).await;
    assert_eq!(foreign_requests(&events, &url), Vec::<String>::new());
    assert_eq!(complaints(&events), Vec::<Value>::new());
    let checks = s
        .eval(
            r#"({
            scripts: document.scripts.length,
            iframes: document.querySelectorAll('iframe,object,embed,svg,form,base').length,
            handlers: [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on')).length,
            nonData: [...document.images].filter(i => !i.getAttribute('src').startsWith('data:image/')).length,
            links: [...document.querySelectorAll('a[href]')].filter(a => !a.getAttribute('href').startsWith('#')).length,
            shown: document.body.innerText.includes('<script>alert(1)</script>'),
        })"#,
        )
        .await;
    assert_eq!(checks["scripts"], 0, "{checks}");
    assert_eq!(checks["iframes"], 0, "{checks}");
    assert_eq!(checks["handlers"], 0, "{checks}");
    assert_eq!(checks["nonData"], 0, "{checks}");
    assert_eq!(checks["links"], 0, "{checks}");
    assert_eq!(checks["shown"], true, "hostile text is shown as text");
    let shots = Shots::new(&tmp.path().join("shots"));
    let height = s.eval("document.documentElement.scrollHeight").await;
    save_pieces(
        &mut s,
        &shots,
        "hostile-1280-light",
        1280,
        height.as_f64().unwrap_or(900.0),
        4,
    )
    .await;
    drop(chromium);
}

/// A foreign producer's record with a long payload key (no break in it) made the report scroll
/// sideways at 390 px: the key column of a generic step was as wide as the key.
#[tokio::test]
async fn long_payload_keys_wrap_at_phone_width() {
    let chromium = Chromium::start().await;
    let ws = page_ws(&format!("127.0.0.1:{}", chromium.port())).await;
    let mut s = Session::connect(&ws).await;
    enable(&mut s).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let run_dir = tmp.path().join("long-keys");
    let mut b = support::RunBuilder::new(&run_dir);
    // Exactly as long as a key segment is shown (40 characters), so nothing cuts it.
    let key = "averyveryverylongpayloadkeywithoutbreaks";
    let nested = json!({ key: { key: "v".repeat(300), "short": "x" }, "other": "y" });
    let r = b.rec(100, "gesture", nested);
    r["source"] = json!("device");
    let r = b.rec(200, "console", json!({ key: 1 }));
    r["source"] = json!("device");
    b.finish();
    b.finalized_manifest(
        "20260314T092653000Z-00000000000000aa",
        support::T0 + 300,
        json!({}),
    );
    let rendered = cdp_report::render(&run_dir).expect("render");
    let url = format!("file://{}", rendered.html_path.display());
    let shots = Shots::new(&tmp.path().join("shots"));
    for dark in [false, true] {
        set_view(&mut s, 390, dark).await;
        let events = s.load(&url).await;
        assert_eq!(complaints(&events), Vec::<Value>::new());
        let checks = s
            .eval(
                r#"({
                overflow: document.documentElement.scrollWidth - window.innerWidth,
                wide: [...document.querySelectorAll('body *')]
                    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
                    .map(e => e.tagName + '.' + e.className).slice(0, 5),
                keyShown: document.body.innerText.includes('averyveryverylong'),
                squeezed: [...document.querySelectorAll('.fields dd')]
                    .filter(d => d.getBoundingClientRect().width < 120).length,
                fields: document.querySelectorAll('.fields dd').length,
                height: document.documentElement.scrollHeight,
            })"#,
            )
            .await;
        let scheme = if dark { "dark" } else { "light" };
        shots.save(
            &format!("long-keys-390-{scheme}.png"),
            &s.screenshot(None).await,
        );
        assert_eq!(checks["keyShown"], true, "{checks}");
        assert!(
            checks["overflow"].as_i64().unwrap_or(1) <= 0,
            "horizontal overflow at 390px: {checks}"
        );
        assert_eq!(checks["wide"], json!([]), "{checks}");
        assert!(checks["fields"].as_u64().unwrap_or(0) >= 3, "{checks}");
        assert_eq!(
            checks["squeezed"], 0,
            "values squeezed by their keys: {checks}"
        );
    }
    drop(chromium);
}

/// The report of a run too big to show whole (tens of thousands of console errors, thousands of
/// steps) opens in Chromium without errors, lays out at 1280 px and 390 px, and stays small: the
/// browser builds a bounded number of elements whatever the run's size. (Load times are in
/// BENCHMARKS.md, measured on a release build.)
#[tokio::test]
async fn a_report_of_a_run_too_big_to_show_whole_opens_and_lays_out() {
    let chromium = Chromium::start().await;
    let ws = page_ws(&format!("127.0.0.1:{}", chromium.port())).await;
    let mut s = Session::connect(&ws).await;
    enable(&mut s).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let run_dir = tmp.path().join("noisy");
    let mut b = support::RunBuilder::new(&run_dir);
    let page = support::target("target:000000000001", "Cart", "https://shop.test/cart");
    let mut at = 0;
    for step in 0..2000u64 {
        at += 50;
        let r = b.action(at, "click", 10);
        r["payload"]["point"] = json!({"x": step % 500, "y": 10});
        r["target"] = page.clone();
        for _ in 0..5 {
            at += 1;
            b.action(at, "Runtime.callFunctionOn", 1)["target"] = page.clone();
        }
        for i in 0..10u64 {
            at += 1;
            let r = b.rec(at, "console", json!({"level": "error", "text": format!("TypeError: item {step}-{i} is undefined")}));
            r["status"] = json!("error");
            r["target"] = page.clone();
        }
    }
    b.finish();
    b.finalized_manifest(
        "20260314T092653000Z-000000000000b16b",
        support::T0 + at + 10,
        json!({}),
    );
    let rendered = cdp_report::render(&run_dir).expect("render");
    assert_eq!(rendered.figures.console_errors, 20_000);
    assert_eq!(rendered.figures.steps, 2000);
    let url = format!("file://{}", rendered.html_path.display());
    let shots = Shots::new(&tmp.path().join("shots"));
    for (width, dark) in [(1280, false), (390, true)] {
        set_view(&mut s, width, dark).await;
        let started = std::time::Instant::now();
        let events = s.load(&url).await;
        let took = started.elapsed();
        assert_eq!(foreign_requests(&events, &url), Vec::<String>::new());
        assert_eq!(complaints(&events), Vec::<Value>::new());
        let checks = s
            .eval(
                r#"({
                elements: document.getElementsByTagName('*').length,
                styled: getComputedStyle(document.querySelector('.steps')).listStyleType === 'none',
                overflow: document.documentElement.scrollWidth - window.innerWidth,
                gap: !!document.getElementById('gap'),
                last: !!document.getElementById('step-2000'),
            })"#,
            )
            .await;
        eprintln!("big report at {width}px: loaded in {took:?}: {checks}");
        assert_eq!(checks["styled"], true);
        assert_eq!(checks["gap"], true, "{checks}");
        assert_eq!(checks["last"], true, "{checks}");
        assert!(checks["elements"].as_u64().unwrap() < 40_000, "{checks}");
        assert!(checks["overflow"].as_i64().unwrap_or(1) <= 0, "{checks}");
        let scheme = if dark { "dark" } else { "light" };
        shots.save(
            &format!("big-{width}-{scheme}.png"),
            &s.screenshot(Some((0.0, 0.0, f64::from(width), 1800.0)))
                .await,
        );
    }
    drop(chromium);
}

/// A foreign producer's record with an unusual timestamp (years after the
/// run start, decades before it, a non-UTC offset, no time at all) made the step time label
/// overflow its rail by 19 px at 390 and 1280 px. Every label stays inside its rail, at both
/// widths.
#[tokio::test]
async fn step_time_labels_stay_inside_their_rail_whatever_the_timestamp() {
    let chromium = Chromium::start().await;
    let ws = page_ws(&format!("127.0.0.1:{}", chromium.port())).await;
    let mut s = Session::connect(&ws).await;
    enable(&mut s).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let run_dir = tmp.path().join("odd-times");
    let mut b = support::RunBuilder::new(&run_dir);
    b.action(100, "Page.navigate", 20);
    for (i, at) in [
        "9999-12-31T23:59:59.999Z",
        "1970-01-01T00:00:00Z",
        "2026-03-14T09:26:53.000+14:00",
        "2026-03-14T09:26:53.000-12:00",
        "2031-07-01T00:00:00.5Z",
        "yesterday",
    ]
    .iter()
    .enumerate()
    {
        let r = b.rec(200 + i as u64, "gesture", json!({ "swipe": i }));
        r["source"] = json!("device");
        r["startedAt"] = json!(at);
    }
    b.action(5_000, "Input.dispatchMouseEvent", 3);
    b.finish();
    b.finalized_manifest(
        "20260314T092653000Z-00000000000000ab",
        support::T0 + 6_000,
        json!({}),
    );
    let rendered = cdp_report::render(&run_dir).expect("render");
    let url = format!("file://{}", rendered.html_path.display());
    let shots = Shots::new(&tmp.path().join("shots"));
    for width in [1280, 390] {
        set_view(&mut s, width, false).await;
        let events = s.load(&url).await;
        assert_eq!(complaints(&events), Vec::<Value>::new());
        let checks = s
            .eval(
                r#"(() => {
                const labels = [...document.querySelectorAll('.step-time')];
                return {
                    labels: labels.map(l => l.textContent),
                    outside: labels.map(l => {
                        const b = l.getBoundingClientRect(), r = l.closest('.rail').getBoundingClientRect();
                        return Math.max(r.left - b.left, b.right - r.right);
                    }).filter(px => px > 0.5),
                    overflow: document.documentElement.scrollWidth - window.innerWidth,
                };
            })()"#,
            )
            .await;
        shots.save(&format!("odd-times-{width}.png"), &s.screenshot(None).await);
        let labels = checks["labels"].as_array().map_or(0, Vec::len);
        assert!(labels >= 7, "every step has its label: {checks}");
        assert_eq!(
            checks["outside"],
            json!([]),
            "a time label sticks out of its rail at {width}px: {checks}"
        );
        assert!(checks["overflow"].as_i64().unwrap_or(1) <= 0, "{checks}");
    }
    drop(chromium);
}
