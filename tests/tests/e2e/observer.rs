//! The direct reader (`--observe`) against a real Chromium: page events for a client that
//! enables nothing, recorded once per page however many sessions watch; frames around failures,
//! linked from the failure records; never a frame right after typing or while a sensitive field
//! has focus; honest typed-text verdicts per case and per client; nothing typed in any byte of
//! the run; a browser restarted on the same port; a dialog; and clients that cannot tell the
//! observer is there.

use cdp_evidence::{parse_journal, StoredRecord};
use cdp_relay::EvidenceSettings;
use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::files::{all_files, leaks};
use cdp_relay_tests::http::get;
use cdp_relay_tests::pages::{observer_routes, CASES};
use cdp_relay_tests::site::Site;
use cdp_relay_tests::{page_ws, run_node_client, within, Chromium, RelayFixture};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio_tungstenite::tungstenite::Message;

fn settings(root: &Path, observe: bool) -> EvidenceSettings {
    EvidenceSettings {
        root: root.to_path_buf(),
        observe,
        ..EvidenceSettings::default()
    }
}

/// Stops the relay (finalizing the run) and reads its journal, in `startedAt` order.
async fn finish(relay: RelayFixture) -> (PathBuf, Vec<StoredRecord>) {
    let summary = relay.stop().await.expect("pipeline summary");
    let bytes = std::fs::read(summary.run_dir.join("actions.jsonl")).expect("journal");
    let journal = parse_journal(&bytes);
    assert!(journal.corrupt.is_empty(), "{:?}", journal.corrupt);
    let mut records = journal.records;
    by_start(&mut records);
    (summary.run_dir, records)
}

fn by_start(records: &mut [StoredRecord]) {
    records.sort_by(|a, b| (&a.started_at, &a.action_id).cmp(&(&b.started_at, &b.action_id)));
}

/// How long one wait for the browser or the observer may take (well within [`within`]'s bound,
/// so a timeout names what was awaited).
const WAIT: Duration = Duration::from_secs(30);

/// Polls the running run's journal until `done` holds over its records (in `startedAt` order,
/// a line still being written left out) and returns them: how a test waits for the browser and
/// the observer, instead of sleeping.
async fn journal_until(
    relay: &RelayFixture,
    what: &str,
    done: impl Fn(&[StoredRecord]) -> bool,
) -> Vec<StoredRecord> {
    let journal = relay.run_dir().expect("recording").join("actions.jsonl");
    let mut records = Vec::new();
    let polled = tokio::time::timeout(WAIT, async {
        loop {
            if let Ok(bytes) = std::fs::read(&journal) {
                records = parse_journal(&bytes).records;
                by_start(&mut records);
                if done(&records) {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    if polled.is_err() {
        panic!("timed out after {WAIT:?} waiting for {what}; the journal holds {records:#?}");
    }
    records
}

/// Polls `expression` in the page behind `c` until it is `true` (an evaluation that fails, as
/// while a navigation replaces the document, counts as not yet).
async fn page_until(c: &mut Cdp, what: &str, expression: &str) {
    let polled = tokio::time::timeout(WAIT, async {
        loop {
            let raw = c
                .call_raw(
                    "Runtime.evaluate",
                    json!({ "expression": expression, "returnByValue": true }),
                    None,
                )
                .await;
            let v: Value = serde_json::from_str(&raw).expect("CDP JSON");
            if v["result"]["result"]["value"] == true {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        polled.is_ok(),
        "timed out after {WAIT:?} waiting for {what}"
    );
}

/// A recording relay with the observer on in front of a fresh Chromium, and a client on its page,
/// which shows the site's /verify once the observer has taken its frame after loading it.
struct VerifyPage {
    site: Site,
    _chrome: Chromium,
    _dir: tempfile::TempDir,
    relay: RelayFixture,
    c: Cdp,
}

async fn verify_page() -> VerifyPage {
    let site = Site::start(observer_routes()).await;
    let chrome = Chromium::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let relay = RelayFixture::start_recording(&chrome.http(), settings(dir.path(), true)).await;
    cdp_relay_tests::observing(&relay.authority(), 1).await;
    let mut c = Cdp::connect(&page_ws(&relay.authority()).await).await;
    c.call(
        "Page.navigate",
        json!({ "url": format!("{}/verify", site.origin) }),
    )
    .await;
    journal_until(&relay, "the frame after loading /verify", |r| {
        frames_after(r, "navigation")
            .iter()
            .any(|f| !f.artifacts.is_empty())
    })
    .await;
    VerifyPage {
        site,
        _chrome: chrome,
        _dir: dir,
        relay,
        c,
    }
}

/// The observer's frame records (taken or not) whose `detail.after` names `after`.
fn frames_after<'a>(records: &'a [StoredRecord], after: &str) -> Vec<&'a StoredRecord> {
    records
        .iter()
        .filter(|r| {
            r.kind == "action"
                && r.payload["method"] == "frame"
                && r.payload["detail"]["after"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|w| w == after))
        })
        .collect()
}

/// A record of the 404 of `/missing`.
fn is_missing(r: &StoredRecord) -> bool {
    r.kind == "network"
        && r.payload["url"]
            .as_str()
            .is_some_and(|u| u.ends_with("/missing"))
}

fn ms(r: &StoredRecord) -> u64 {
    let t = r.started_at.as_deref().expect("startedAt");
    cdp_evidence::time::parse_rfc3339_millis(t).expect("time")
}

/// The typing steps in the format's order (`startedAt`, then `actionId`): a step is written
/// when its verdict comes, and a `landed` one waits for its field to be read again.
fn typing(records: &[StoredRecord]) -> Vec<&StoredRecord> {
    let mut steps: Vec<&StoredRecord> = records
        .iter()
        .filter(|r| r.kind == "action" && r.payload["method"] == "type")
        .collect();
    steps.sort_by(|a, b| (&a.started_at, &a.action_id).cmp(&(&b.started_at, &b.action_id)));
    steps
}

/// A raw client that enables no domain still leaves network failures and console errors — each
/// once, however many sessions watch the page — and the failures name a frame taken after them.
/// With the observer off, the same client leaves none.
#[tokio::test]
async fn a_client_that_enables_nothing_still_leaves_failures_with_frames() {
    within("raw client, observer on and off", async {
        let site = Site::start(observer_routes()).await;
        let chrome = Chromium::start().await;
        for observe in [true, false] {
            let dir = tempfile::tempdir().expect("tempdir");
            let relay =
                RelayFixture::start_recording(&chrome.http(), settings(dir.path(), observe)).await;
            if observe {
                cdp_relay_tests::observing(&relay.authority(), 1).await;
            }
            let url = page_ws(&relay.authority()).await;
            let mut client = Cdp::connect(&url).await;
            // Start from an empty page: a previous document's messages would be replayed.
            client
                .call("Page.navigate", json!({ "url": "about:blank" }))
                .await;
            // A second connection to the same page that does enable domains, as an agent's own
            // DevTools model does: still once per page.
            let mut second = Cdp::connect(&url).await;
            second.call("Runtime.enable", json!({})).await;
            second.call("Network.enable", json!({})).await;
            second.call("Log.enable", json!({})).await;
            let before_failure = SystemTime::now();
            client
                .call(
                    "Page.navigate",
                    json!({ "url": format!("{}/noisy", site.origin) }),
                )
                .await;
            let noisy_error =
                |r: &StoredRecord| r.kind == "console" && r.payload["text"] == "noisy page error";
            // Both records are written (with the observer, each once its frame is stored).
            journal_until(&relay, "the 404 and the console error", |records| {
                records.iter().any(is_missing) && records.iter().any(noisy_error)
            })
            .await;
            // A copy through the second connection would come before this answer on it.
            second
                .call("Runtime.evaluate", json!({"expression": "1"}))
                .await;
            drop(client);
            drop(second);
            let (run_dir, records) = finish(relay).await;
            let missing: Vec<&StoredRecord> = records.iter().filter(|r| is_missing(r)).collect();
            let errors: Vec<&StoredRecord> = records.iter().filter(|r| noisy_error(r)).collect();
            if !observe {
                // The second connection enabled the domains: the traffic reader still sees
                // them, once.
                assert_eq!(missing.len(), 1, "{records:#?}");
                assert_eq!(errors.len(), 1, "{records:#?}");
                continue;
            }
            assert_eq!(missing.len(), 1, "one 404 record: {records:#?}");
            assert_eq!(errors.len(), 1, "one console record: {records:#?}");
            let failure = missing[0];
            assert_eq!(failure.payload["status"], 404);
            assert_eq!(failure.tool.as_deref(), Some("observer"));
            let frame = failure
                .artifacts
                .first()
                .expect("the failure names its frame");
            assert!(frame.ends_with("-frame.jpeg"), "{frame}");
            let path = run_dir.join(frame);
            let bytes = std::fs::read(&path).expect("frame file");
            assert_eq!(&bytes[..3], &[0xFF, 0xD8, 0xFF], "a JPEG");
            let written = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .expect("mtime");
            assert!(
                written > before_failure,
                "the frame was taken after the failure"
            );
            // A burst shares one frame (debounced); under load the two may fall apart.
            assert!(!errors[0].artifacts.is_empty(), "{:#?}", errors[0]);
        }
    })
    .await;
}

/// Never a frame right after typing (frames after clicks wait until the page has been quiet) and
/// never while a password, one-time-code or payment field has focus; frames come back after the
/// next navigation.
#[tokio::test]
async fn no_frame_right_after_typing_or_while_a_sensitive_field_has_focus() {
    within("frames and typing", async {
        // The page has loaded and the observer has taken its frame after the navigation, so
        // what follows gets a frame of its own.
        let VerifyPage {
            site,
            _chrome,
            _dir,
            relay,
            mut c,
        } = verify_page().await;
        let keep = c
            .call(
                "Runtime.evaluate",
                json!({"expression": "JSON.stringify(document.getElementById('keep').getBoundingClientRect())", "returnByValue": true}),
            )
            .await;
        let rect: Value =
            serde_json::from_str(keep["result"]["value"].as_str().expect("rect")).expect("json");
        let (x, y) = (
            rect["x"].as_f64().unwrap_or(0.0) + 5.0,
            rect["y"].as_f64().unwrap_or(0.0) + 5.0,
        );
        async fn click_at(c: &mut Cdp, x: f64, y: f64) {
            for kind in ["mousePressed", "mouseReleased"] {
                c.call(
                    "Input.dispatchMouseEvent",
                    json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
                )
                .await;
            }
        }
        let focus = |sel: &str| json!({"expression": format!("document.querySelector('{sel}').focus()")});
        // Each step below waits for the record that ends it: the frame record of its click (a
        // frame taken, or one saying why not), and for typing, the typing step.
        let clicked = |n: usize| move |r: &[StoredRecord]| frames_after(r, "click").len() >= n;
        // 1. Ordinary typing, then a click at once: its frame waits for quiet.
        c.call("Runtime.evaluate", focus("#plain")).await;
        c.call("Input.insertText", json!({"text": "Zq7plainLit"})).await;
        click_at(&mut c, x, y).await;
        journal_until(&relay, "the first click's frame and the typing step", |r| {
            clicked(1)(r) && !typing(r).is_empty()
        })
        .await;
        // 2. A one-time-code field has focus (nothing typed): a click's frame is withheld. (The
        // observer checks focus in the page itself before any frame, so no wait for its report.)
        c.call("Runtime.evaluate", focus("#code")).await;
        click_at(&mut c, x, y).await;
        journal_until(&relay, "the second click's frame record", clicked(2)).await;
        // 3. A password typed: no frame until the page navigates (the click's frame waits for
        // quiet, then is withheld).
        c.call("Runtime.evaluate", focus("#pw")).await;
        for ch in "Zq7Passw0rd!".chars() {
            let ch = ch.to_string();
            c.call("Input.dispatchKeyEvent", json!({"type": "keyDown", "key": ch, "text": ch}))
                .await;
            c.call("Input.dispatchKeyEvent", json!({"type": "keyUp", "key": ch}))
                .await;
        }
        c.call("Runtime.evaluate", json!({"expression": "document.activeElement.blur()"}))
            .await;
        click_at(&mut c, x, y).await;
        journal_until(&relay, "the third click's frame record and the typing step", |r| {
            clicked(3)(r) && typing(r).len() >= 2
        })
        .await;
        // 4. A navigation: frames again.
        c.call("Page.navigate", json!({ "url": format!("{}/done", site.origin) }))
            .await;
        journal_until(&relay, "a frame after the navigation to /done", |r| {
            let navs: Vec<u64> = r
                .iter()
                .filter(|r| r.payload["method"] == "Page.navigate")
                .map(ms)
                .collect();
            navs.len() >= 2
                && r.iter().any(|f| {
                    f.kind == "action"
                        && f.payload["method"] == "frame"
                        && !f.artifacts.is_empty()
                        && navs.iter().all(|&n| ms(f) >= n)
                })
        })
        .await;
        drop(c);
        let (run_dir, records) = finish(relay).await;

        let typed = typing(&records);
        assert_eq!(typed.len(), 2, "{typed:#?}");
        assert_eq!(typed[0].payload["input"]["inputType"], "text");
        assert_eq!(typed[1].payload["input"]["inputType"], "password");
        let frames: Vec<&StoredRecord> = records
            .iter()
            .filter(|r| r.kind == "action" && r.payload["method"] == "frame")
            .collect();
        let with_pixels: Vec<&StoredRecord> =
            records.iter().filter(|r| !r.artifacts.is_empty()).collect();
        // No picture within a second after any typing, and none between the password and the
        // navigation that followed it.
        let nav_ms = records
            .iter()
            .filter(|r| r.payload["method"] == "Page.navigate")
            .map(ms)
            .max()
            .expect("navigation");
        for r in &with_pixels {
            for t in &typed {
                let end = ms(t) + r_duration(t);
                assert!(
                    ms(r) < ms(t) || ms(r) >= end + 900,
                    "a frame {} ms after typing: {r:#?}",
                    ms(r).saturating_sub(end)
                );
            }
            assert!(
                ms(r) < ms(typed[1]) || ms(r) >= nav_ms,
                "a frame after the password and before the navigation: {r:#?}"
            );
            for a in &r.artifacts {
                assert!(run_dir.join(a).is_file(), "{a}");
            }
        }
        let after_click: Vec<&&StoredRecord> = frames
            .iter()
            .filter(|f| f.payload["detail"]["after"].as_array().is_some_and(|a| a.contains(&json!("click"))))
            .collect();
        assert_eq!(after_click.len(), 3, "{:#?}", after_click.iter().map(|f| (&f.payload, &f.artifacts, &f.started_at)).collect::<Vec<_>>());
        assert!(!after_click[0].artifacts.is_empty(), "the first click's frame, after quiet");
        assert_eq!(
            after_click[1].payload["detail"]["screenshotWithheld"],
            "a sensitive field has focus",
            "{:#?}",
            after_click.iter().map(|f| (&f.payload, &f.artifacts, &f.started_at)).collect::<Vec<_>>()
        );
        assert!(after_click[1].artifacts.is_empty());
        assert!(after_click[2].artifacts.is_empty());
        assert!(
            frames.iter().any(|f| ms(f) >= nav_ms && !f.artifacts.is_empty()),
            "a frame after the navigation: {frames:#?}"
        );
    })
    .await;
}

fn r_duration(r: &StoredRecord) -> u64 {
    r.duration_ms.unwrap_or(0)
}

/// The verdict each client must get for each case: (`verified`, accepted reasons).
fn expected(client: &str, case: &str) -> (Value, &'static [&'static str]) {
    let ind = || json!("indeterminate");
    match case {
        "plain" | "placeholder-equal" | "placeholder-edge" | "contenteditable" | "srcdoc"
        | "refill-1" | "refill-2" => (json!(true), &["landed"]),
        // Typed into #f, which hands focus to #g as it gets it: the text is in #g, not in the
        // field it was meant for.
        "bounce" => (ind(), &["focus-moved"]),
        // Earlier text in another field (a path the relay cannot see) is not this step's: the
        // read-only field stayed empty. When that text came moments before, the reading
        // cannot tell the two apart (see `alternatives`).
        "readonly" | "readonly-close" => (json!(false), &["dropped-characters"]),
        // Typed right before the client closed its connection: the reading may find the page
        // gone (see `alternatives`).
        "last" => (json!(true), &["landed"]),
        "lossy" => (json!(false), &["dropped-characters"]),
        // Keys into a full field holding the text change nothing; fill replaces it by itself.
        "held" => (ind(), &["already-held", "same-text"]),
        "selected" => (ind(), &["same-text"]),
        "mask" => (ind(), &["rewritten"]),
        // One insertion of six digits into a one-digit box: five never land.
        "boxes" if client == "pw-fill" => (json!(false), &["dropped-characters"]),
        "boxes" => (ind(), &["focus-moved"]),
        "password" | "one-time-code" | "payment" | "marked" => (ind(), &["sensitive-field"]),
        other => panic!("no expectation for {other}"),
    }
}

/// Other honest verdicts a case may get, depending on timing: (`verified`, reason).
fn alternatives(case: &str) -> &'static [(&'static str, &'static str)] {
    match case {
        "readonly-close" => &[("indeterminate", "ambiguous")],
        "last" => &[("indeterminate", "not-read")],
        _ => &[],
    }
}

fn input_type(case: &str) -> &'static str {
    match case {
        "mask" => "tel",
        "password" => "password",
        "one-time-code" => "one-time-code",
        "payment" => "payment",
        "marked" => "unknown",
        _ => "text",
    }
}

/// One case per verification bullet, through Playwright fill, Playwright type, Puppeteer type and
/// raw Input.insertText / Input.dispatchKeyEvent. No verdict is a false `true`, notes carry no
/// characters, and no typed literal is anywhere in the run directory.
#[tokio::test]
async fn typed_text_verdicts_per_case_and_client() {
    within("verdicts", async {
        let site = Site::start(observer_routes()).await;
        let chrome = Chromium::start().await;
        let cases: Vec<Value> = CASES
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "selector": c.selector,
                    "literal": c.literal,
                    "frame": c.frame,
                    "unseen": c.unseen,
                    "pauseMs": c.pause_ms,
                    "thenClose": c.then_close,
                })
            })
            .collect();
        let mut table = Vec::new();
        for client in ["raw", "pw-fill", "pw-type", "pptr-type"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let relay =
                RelayFixture::start_recording(&chrome.http(), settings(dir.path(), true)).await;
            cdp_relay_tests::observing(&relay.authority(), 1).await;
            let cfg = json!({
                "endpoint": relay.endpoint(),
                "direct": chrome.http(),
                "client": client,
                "site": site.origin,
                "cases": cases,
            });
            let run = run_node_client("verify.mjs", &cfg.to_string()).await;
            assert!(run.ok, "verify.mjs {client} failed:\n{}", run.stderr);
            let (run_dir, records) = finish(relay).await;
            let typed = typing(&records);
            let names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
            assert_eq!(
                typed.len(),
                CASES.len(),
                "{client}: one typing step per case {names:?}: {:#?}",
                typed.iter().map(|t| &t.payload).collect::<Vec<_>>()
            );
            for (case, step) in CASES.iter().zip(&typed) {
                let v = &step.payload["verification"];
                let (verified, reasons) = expected(client, case.name);
                table.push(format!(
                    "{client:9} {:18} {:14} {:15} {}",
                    case.name,
                    v["verified"].to_string(),
                    v["reason"].as_str().unwrap_or("-"),
                    v["note"].as_str().unwrap_or("-")
                ));
                let reason = v["reason"].as_str().unwrap_or_default();
                let alternative = alternatives(case.name)
                    .iter()
                    .any(|(w, r)| v["verified"] == *w && reason == *r);
                if !alternative {
                    assert_eq!(v["verified"], verified, "{client} {}: {v}", case.name);
                    assert!(reasons.contains(&reason), "{client} {}: {v}", case.name);
                }
                // Never a false true: whatever else, a step whose text is not where it was
                // meant to be is not `true`.
                if matches!(case.name, "bounce" | "readonly" | "readonly-close") {
                    assert_ne!(v["verified"], true, "{client} {}: {v}", case.name);
                }
                // The browser had answered every keystroke: complete, however the client left.
                assert_eq!(
                    step.status.as_deref(),
                    Some("ok"),
                    "{client} {}: {step:?}",
                    case.name
                );
                assert_eq!(
                    step.payload["input"]["inputType"],
                    input_type(case.name),
                    "{client} {}: {}",
                    case.name,
                    step.payload
                );
                assert_eq!(
                    step.payload["input"]["chars"],
                    case.literal.chars().count(),
                    "{client} {}",
                    case.name
                );
                // Value-free: counts and structural words only.
                let note = v["note"].as_str().unwrap_or_default();
                for c in CASES {
                    assert!(!note.contains(c.literal), "{note}");
                }
            }
            // Nothing typed is anywhere in the run directory.
            for (path, bytes) in all_files(&run_dir) {
                for c in CASES {
                    assert!(
                        !leaks(&bytes, c.literal),
                        "{client}: typed literal of {} in {}",
                        c.name,
                        path
                    );
                }
            }
        }
        println!("client    case               verified       reason          note");
        for line in table {
            println!("{line}");
        }
    })
    .await;
}

/// Playwright and Puppeteer cannot tell the observer is there: their own scripts run as without
/// it, through the relay.
#[tokio::test]
async fn real_clients_with_the_observer_on() {
    within("real clients, observer on", async {
        let chrome = Chromium::start().await;
        for script in ["playwright.mjs", "puppeteer.mjs"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let relay =
                RelayFixture::start_recording(&chrome.http(), settings(dir.path(), true)).await;
            cdp_relay_tests::observing(&relay.authority(), 1).await;
            let run = run_node_client(script, relay.endpoint()).await;
            assert!(run.ok, "{script} failed:\n{}", run.stderr);
            let report = run.report.expect("report");
            assert_eq!(report["text"], "hello", "{report}");
            assert_eq!(report["sum"], 42, "{report}");
            assert_eq!(report["title"], "through the relay", "{report}");
            assert_eq!(report["pngMagic"], "PNG", "{report}");
            let (_, records) = finish(relay).await;
            assert!(records.iter().any(|r| r.tool.as_deref() == Some("cdp")));
        }
    })
    .await;
}

/// With the observer on, a client's frames stay byte-identical (a 5 MB answer compared with the
/// browser's own), every answer it gets is to an id it sent, exactly once, and nothing of the
/// observer's own traffic (its sessions, its binding) reaches it.
#[tokio::test]
async fn client_frames_and_ids_are_untouched_with_the_observer_on() {
    within("transparency, observer on", async {
        let site = Site::start(observer_routes()).await;
        let chrome = Chromium::start().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let relay = RelayFixture::start_recording(&chrome.http(), settings(dir.path(), true)).await;
        cdp_relay_tests::observing(&relay.authority(), 1).await;
        let url = page_ws(&relay.authority()).await;
        let expr = json!({"expression": "'\\u00e9\"\\\\'.repeat(1024 * 1024) + '🙂'", "returnByValue": true});
        let direct_url = url.replace(&relay.authority(), &format!("127.0.0.1:{}", chrome.port()));
        let mut direct = Cdp::connect(&direct_url).await;
        let want = direct.call_raw("Runtime.evaluate", expr.clone(), None).await;
        drop(direct);

        let mut ws = cdp_relay_tests::cdp::connect(&url, &[])
            .await
            .expect("connect");
        let mut sent = Vec::new();
        fn command(sent: &mut Vec<u64>, method: &str, params: Value) -> Message {
            // Ids of the client's own choosing, not 1, 2, 3.
            let id = 100 + 7 * (sent.len() as u64 + 1);
            sent.push(id);
            Message::text(json!({"id": id, "method": method, "params": params}).to_string())
        }
        for m in ["Runtime.enable", "Network.enable", "Page.enable", "Log.enable"] {
            ws.send(command(&mut sent, m, json!({}))).await.expect("send");
        }
        ws.send(command(&mut sent, "Runtime.evaluate", expr)).await.expect("send");
        let mut answered = Vec::new();
        let mut big = None;
        let big_id = sent[4];
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        for phase in 0..2 {
            if phase == 1 {
                // Then a navigation to a page with failures, and more commands.
                ws.send(command(&mut sent, "Page.navigate", json!({"url": format!("{}/noisy", site.origin)})))
                    .await
                    .expect("send");
                for i in 0..20 {
                    ws.send(command(&mut sent, "Runtime.evaluate", json!({"expression": format!("{i} * 2")})))
                        .await
                        .expect("send");
                }
            }
            while answered.len() < sent.len() {
                let msg = tokio::time::timeout_at(deadline, ws.next())
                    .await
                    .expect("answers in time")
                    .expect("open")
                    .expect("frame");
                let Message::Text(text) = msg else { continue };
                assert!(!text.contains("__cdpRelayObserve"), "the observer's binding: {text}");
                let v: Value = serde_json::from_str(&text).expect("json");
                assert!(v.get("sessionId").is_none(), "a session the client never made: {text}");
                if let Some(i) = v.get("id").and_then(Value::as_u64) {
                    assert!(sent.contains(&i), "an answer to an id the client never sent: {i}");
                    assert!(!answered.contains(&i), "answered twice: {i}");
                    answered.push(i);
                    if i == big_id {
                        big = Some(text.to_string());
                    }
                }
            }
        }
        let big = big.expect("the 5 MB answer");
        assert!(big.len() > 4 * 1024 * 1024, "{}", &big[..big.len().min(300)]);
        // The direct answer had id 1; the relayed one carries the client's own id.
        let relayed_id = big_id;
        assert_eq!(
            big.replacen(&format!("{{\"id\":{relayed_id},"), "{\"id\":1,", 1),
            want,
            "the answer differs from the browser's own"
        );
        drop(ws);
        let _ = finish(relay).await;
    })
    .await;
}

/// The browser restarts on the same port (a new browser id): the relay keeps serving new
/// clients, and the observer reconnects and records again.
#[tokio::test]
async fn a_browser_restarted_on_the_same_port_is_observed_again() {
    within("browser restart", async {
        let site = Site::start(observer_routes()).await;
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let mut chrome = FixedPortChrome::start(port).await;
        let dir = tempfile::tempdir().expect("tempdir");
        let upstream = format!("http://127.0.0.1:{port}");
        let relay = RelayFixture::start_recording(&upstream, settings(dir.path(), true)).await;
        cdp_relay_tests::observing(&relay.authority(), 1).await;
        let first = get(&relay.authority(), "/json/version").await.json();
        chrome.kill();
        drop(chrome);
        let _chrome = FixedPortChrome::start(port).await;
        cdp_relay_tests::observing(&relay.authority(), 1).await;
        let second = get(&relay.authority(), "/json/version").await.json();
        assert_ne!(
            first["webSocketDebuggerUrl"],
            second["webSocketDebuggerUrl"]
        );
        let mut c = Cdp::connect(&page_ws(&relay.authority()).await).await;
        c.call(
            "Page.navigate",
            json!({ "url": format!("{}/noisy", site.origin) }),
        )
        .await;
        let observed = |r: &StoredRecord| is_missing(r) && r.tool.as_deref() == Some("observer");
        journal_until(&relay, "the observer's record of the 404", |records| {
            records.iter().any(observed)
        })
        .await;
        drop(c);
        let (_, records) = finish(relay).await;
        assert!(records.iter().any(observed), "{records:#?}");
    })
    .await;
}

/// A page blocked in a `confirm()` dialog and a crashed renderer: each is a recorded reason,
/// never a stuck observer, and the client's own commands are answered meanwhile.
#[tokio::test]
async fn a_dialog_and_a_crash_are_recorded_reasons() {
    within("dialog and crash", async {
        // The page has loaded and the observer has taken its frame after the navigation, so
        // what follows gets a frame of its own.
        let VerifyPage {
            site: _site,
            _chrome,
            _dir,
            relay,
            mut c,
        } = verify_page().await;
        page_until(
            &mut c,
            "/verify to have loaded",
            "location.pathname === '/verify' && document.readyState === 'complete'",
        )
        .await;
        c.call(
            "Runtime.evaluate",
            json!({"expression": "setTimeout(() => fetch('/boom').then(() => confirm('sure?')), 0)"}),
        )
        .await;
        let dialog_frame = |r: &StoredRecord| {
            r.payload["method"] == "frame"
                && r.status.as_deref() == Some("error")
                && r.error.as_deref().is_some_and(|e| e.contains("dialog"))
        };
        // The observer saw the dialog open: the failure's frame was given up for it.
        journal_until(&relay, "the frame given up for the dialog", |records| {
            records.iter().any(dialog_frame)
        })
        .await;
        // The client is answered while the page is blocked: the dialog stays open until the
        // client dismisses it below, and a relay waiting on the page would never answer.
        tokio::time::timeout(WAIT, c.call("Browser.getVersion", json!({})))
            .await
            .expect("the client answered while the page is blocked in a dialog");
        // The client dismisses the dialog (answered by the browser, whatever it says).
        let _ = c
            .call_raw("Page.handleJavaScriptDialog", json!({"accept": false}), None)
            .await;
        let crashed = |r: &StoredRecord| {
            r.kind == "console" && r.payload["text"].as_str().is_some_and(|t| t.contains("crashed"))
        };
        // The crashed renderer may never answer Page.crash: done once the crash is recorded.
        {
            let crash = c.call_raw("Page.crash", json!({}), None);
            let recorded = journal_until(&relay, "the crash record", |records| {
                records.iter().any(crashed)
            });
            tokio::pin!(recorded);
            tokio::select! {
                _ = crash => {
                    recorded.await;
                }
                _ = &mut recorded => {}
            }
        }
        drop(c);
        let (_, records) = finish(relay).await;
        let boom = records
            .iter()
            .find(|r| r.kind == "network" && r.payload["status"] == 500)
            .expect("the 500");
        assert!(boom.artifacts.is_empty(), "no frame while a dialog is open");
        assert!(records.iter().any(dialog_frame), "{records:#?}");
        assert!(records.iter().any(crashed), "{records:#?}");
    })
    .await;
}

/// A Chromium on a port of the test's choosing (the product's launcher always picks its own),
/// killed with its whole process group on drop.
struct FixedPortChrome {
    child: Option<std::process::Child>,
    _profile: tempfile::TempDir,
}

impl FixedPortChrome {
    async fn start(port: u16) -> FixedPortChrome {
        use std::os::unix::process::CommandExt;
        let profile = tempfile::tempdir().expect("profile");
        let exe = std::env::var_os("CDP_RELAY_BROWSER").unwrap_or_else(|| "chromium".into());
        let child = std::process::Command::new(exe)
            .args([
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                "--no-first-run",
                "--disable-dev-shm-usage",
                "--remote-debugging-address=127.0.0.1",
                &format!("--remote-debugging-port={port}"),
                &format!("--user-data-dir={}", profile.path().display()),
                "about:blank",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn chromium");
        let chrome = FixedPortChrome {
            child: Some(child),
            _profile: profile,
        };
        within("chromium on its port", async {
            loop {
                let up = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_ok();
                if up
                    && get(&format!("127.0.0.1:{port}"), "/json/list")
                        .await
                        .json()
                        .as_array()
                        .is_some_and(|l| !l.is_empty())
                {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await;
        chrome
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
        }
    }
}

impl Drop for FixedPortChrome {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Done when: a login flow through `cdp-relay launch` (observer on by default) leaves a run whose
/// failures each have a frame and whose typing steps carry input type and an honest verdict, with
/// nothing secret in any byte (stderr included).
#[tokio::test]
async fn a_login_flow_through_launch() {
    within("login through launch", async {
        const USER: &str = "kim.planted@example.com";
        const PASSWORD: &str = "Pl4nted-L0gin!pw";
        let site = Site::start(cdp_relay_tests::pages::login_routes()).await;
        let evidence = tempfile::tempdir().expect("tempdir");
        let dir = evidence.path().to_string_lossy().into_owned();
        let relay = cdp_relay_tests::RelayProcess::spawn(
            &["-vv", "launch", "--listen", "127.0.0.1:0", "--evidence-dir", &dir],
            &[],
        )
        .await;
        cdp_relay_tests::observing(&relay.authority(), 1).await;
        // Into the tab the observer covers: a tab opened a moment before may not be set up yet.
        let cfg = json!({"endpoint": relay.endpoint, "site": site.origin, "user": USER, "password": PASSWORD, "reuseTab": true});
        let run = run_node_client("login.mjs", &cfg.to_string()).await;
        assert!(run.ok, "login.mjs failed:\n{}", run.stderr);
        let stderr = relay.stop().await;
        let runs = evidence.path().join("runs");
        let run_dir = std::fs::read_dir(&runs)
            .expect("runs")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.is_dir())
            .expect("a run");
        let journal = parse_journal(&std::fs::read(run_dir.join("actions.jsonl")).expect("journal"));
        let records = journal.records;

        for r in &records {
            println!(
                "  {} {:8} {:9} {:12} {:60} {:?} {}",
                r.started_at.as_deref().unwrap_or("-"),
                r.tool.as_deref().unwrap_or("-"),
                r.kind,
                r.status.as_deref().unwrap_or("-"),
                r.payload.get("method").or(r.payload.get("text")).map(|v| v.to_string()).unwrap_or_default().chars().take(60).collect::<String>(),
                r.artifacts,
                r.payload.get("detail").map(|d| d.to_string()).unwrap_or_default()
            );
        }
        let failures: Vec<&StoredRecord> = records
            .iter()
            .filter(|r| r.kind == "network" || (r.kind == "console" && r.status.as_deref() == Some("error")))
            .collect();
        assert!(failures.len() >= 3, "{failures:#?}");
        for f in &failures {
            assert!(!f.artifacts.is_empty(), "a failure without a frame: {f:#?}");
            for a in &f.artifacts {
                assert!(run_dir.join(a).is_file(), "{a}");
            }
        }
        let typed = typing(&records);
        assert_eq!(typed.len(), 2, "{typed:#?}");
        assert_eq!(typed[0].payload["input"]["inputType"], "email");
        assert_eq!(typed[0].payload["verification"]["verified"], true);
        assert_eq!(typed[1].payload["input"]["inputType"], "password");
        assert_eq!(typed[1].payload["verification"]["verified"], "indeterminate");
        assert_eq!(typed[1].payload["verification"]["reason"], "sensitive-field");
        for (path, bytes) in all_files(&run_dir) {
            for secret in [USER, PASSWORD] {
                assert!(!leaks(&bytes, secret), "{secret} in {}", path);
            }
        }
        for secret in [USER, PASSWORD] {
            assert!(!stderr.contains(secret), "{secret} in stderr");
        }
        let frames = all_files(&run_dir.join("artifacts")).len();
        let first = records.iter().map(ms).min().unwrap_or(0);
        let last = records.iter().map(ms).max().unwrap_or(0);
        println!(
            "login flow: {} records, {} failures, {frames} frames in {} ms ({:.1} frames/min)",
            records.len(),
            failures.len(),
            last - first,
            frames as f64 * 60_000.0 / (last - first).max(1) as f64
        );
    })
    .await;
}

/// After a password, the frame the relay wanted after a click is withheld, and
/// a record says so at once — also while a failure reported after the password waits on for a
/// frame it may have (before, the click's frame silently became a frame of the next document,
/// and nothing said it had been withheld). The failure is then illustrated by the next
/// document's frame, and the password is nowhere.
#[tokio::test]
async fn a_frame_withheld_after_a_password_is_recorded_while_failures_wait() {
    within("a withheld frame after a password", async {
        let site = Site::start(cdp_relay_tests::pages::login_routes()).await;
        let chrome = Chromium::start().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let relay = RelayFixture::start_recording(&chrome.http(), settings(dir.path(), true)).await;
        cdp_relay_tests::observing(&relay.authority(), 1).await;
        let mut c = Cdp::connect(&page_ws(&relay.authority()).await).await;
        c.call(
            "Page.navigate",
            json!({ "url": format!("{}/login", site.origin) }),
        )
        .await;
        journal_until(&relay, "the frame after loading /login", |r| {
            frames_after(r, "navigation")
                .iter()
                .any(|f| !f.artifacts.is_empty())
        })
        .await;
        let password = "Zq7Withh3ld!";
        c.call(
            "Runtime.evaluate",
            json!({"expression": "document.querySelector('#password').focus()"}),
        )
        .await;
        for ch in password.chars() {
            let ch = ch.to_string();
            c.call(
                "Input.dispatchKeyEvent",
                json!({"type": "keyDown", "key": ch, "text": ch}),
            )
            .await;
            c.call(
                "Input.dispatchKeyEvent",
                json!({"type": "keyUp", "key": ch}),
            )
            .await;
        }
        // A failure after the password: it waits for a frame it may have.
        c.call(
            "Runtime.evaluate",
            json!({"expression": "console.error('checked after the password'); 1"}),
        )
        .await;
        // A click beside the form (the field loses focus): its frame is withheld.
        for kind in ["mousePressed", "mouseReleased"] {
            c.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": 400, "y": 300, "button": "left", "clickCount": 1}),
            )
            .await;
        }
        let records = journal_until(&relay, "the click's withheld frame record", |r| {
            frames_after(r, "click")
                .iter()
                .any(|f| f.payload["detail"]["screenshotWithheld"].is_string())
        })
        .await;
        let clicked = frames_after(&records, "click");
        assert_eq!(clicked.len(), 1, "{clicked:#?}");
        assert!(clicked[0].artifacts.is_empty(), "{:#?}", clicked[0]);
        assert_eq!(clicked[0].status.as_deref(), Some("info"));
        assert_eq!(
            clicked[0].payload["detail"]["after"],
            json!(["click"]),
            "the failure still waits: {:#?}",
            clicked[0]
        );
        // Sign in: the next document's frame illustrates the failure that waited.
        c.call(
            "Runtime.evaluate",
            json!({"expression": "document.querySelector('#submit').click()"}),
        )
        .await;
        let records = journal_until(&relay, "the failure written with the next frame", |r| {
            r.iter().any(|x| {
                x.kind == "console"
                    && x.payload["text"] == "checked after the password"
                    && !x.artifacts.is_empty()
            })
        })
        .await;
        let shown = records
            .iter()
            .find(|x| x.kind == "console" && x.payload["text"] == "checked after the password")
            .expect("the failure");
        let frame = records
            .iter()
            .find(|f| f.payload["method"] == "frame" && f.artifacts == shown.artifacts)
            .expect("its frame");
        assert!(
            ms(frame) > ms(clicked[0]),
            "the frame came after the withheld one: {frame:#?}"
        );
        drop(c);
        let (run_dir, records) = finish(relay).await;
        // The click's frame is recorded once: withheld, not again as a frame of /welcome.
        assert_eq!(frames_after(&records, "click").len(), 1, "{records:#?}");
        for (path, bytes) in all_files(&run_dir) {
            assert!(!leaks(&bytes, password), "the password in {path}");
        }
    })
    .await;
}
