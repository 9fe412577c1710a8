//! Clients nobody here wrote, against a real Chromium through the relay.
//!
//! - A client on non-flat sessions (item 14), as pyppeteer 2.0.0 drives a page: it attaches
//!   with `flatten: false`, wraps every command in `Target.sendMessageToTarget` and hears
//!   answers and events in `Target.receivedMessageFromTarget`. Its run must hold what a flat
//!   client's would: the navigation, the clicks, the screenshots, one typing step per field —
//!   and no typed character anywhere.
//! - A second connection reading the page after every keystroke, as Chromium's DevTools
//!   frontend does (item 15): the typing stays one step, and DevTools' fetch of its well-known
//!   file is no failure of the page's.

use cdp_evidence::{parse_journal, StoredRecord};
use cdp_relay::EvidenceSettings;
use cdp_relay_tests::cdp::{connect, Cdp, Ws};
use cdp_relay_tests::files::{all_files, leaks};
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::{browser_ws, page_ws, within, Chromium, RelayFixture};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

const FIRST: &str = "FirstNonFlatSecret1";
const SECOND: &str = "SecondNonFlatSecret2";

/// Two text fields the page echoes into its console on every input, as a careless page does.
fn form_routes() -> HashMap<&'static str, Route> {
    let mut r = HashMap::new();
    r.insert(
        "/.well-known/appspecific/com.chrome.devtools.json",
        Route::ok("text/plain", "no").status(404),
    );
    r.insert("/missing", Route::ok("text/plain", "no").status(404));
    r.insert("/favicon.ico", Route::ok("image/x-icon", ""));
    r.insert(
        "/form",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Two fields</title>
<style>input{position:absolute;left:10px;width:300px;height:30px;font:16px monospace}</style>
<input id="a" type="text" style="top:10px"><input id="b" type="text" style="top:80px">
<script>for (const f of document.querySelectorAll('input'))
  f.addEventListener('input', () => console.error('live ' + f.value));</script>"#,
        ),
    );
    r
}

/// One websocket to the browser endpoint, driving one page through a non-flat session.
struct NonFlat {
    ws: Ws,
    next: u64,
    session: String,
}

impl NonFlat {
    /// Sends `message` and reads until `done` says the awaited answer came; returns it.
    async fn exchange(
        &mut self,
        message: Value,
        mut done: impl FnMut(&Value) -> Option<Value>,
    ) -> Value {
        self.ws
            .send(Message::text(message.to_string()))
            .await
            .expect("send");
        loop {
            match self.ws.next().await {
                Some(Ok(Message::Text(t))) => {
                    let v: Value = serde_json::from_str(&t).expect("CDP JSON");
                    if let Some(answer) = done(&v) {
                        return answer;
                    }
                }
                Some(Ok(_)) => {}
                other => panic!("the socket ended: {other:?}"),
            }
        }
    }

    /// A command on the browser's root session.
    async fn root(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let answer = self
            .exchange(json!({"id": id, "method": method, "params": params}), |v| {
                (v["id"] == id).then(|| v.clone())
            })
            .await;
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// A command to the page, wrapped; returns the page's answer to it (which may come before
    /// or after the wrapper's own).
    async fn page(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let outer = self.next;
        self.next += 1;
        let inner = self.next;
        let message = json!({"id": inner, "method": method, "params": params}).to_string();
        let wrapper = json!({"id": outer, "method": "Target.sendMessageToTarget",
            "params": {"sessionId": self.session, "message": message}});
        let (mut delivered, mut answer) = (false, None::<Value>);
        let session = self.session.clone();
        self.exchange(wrapper, |v| {
            if v["id"] == outer {
                assert!(v.get("error").is_none(), "{method} not delivered: {v}");
                delivered = true;
            } else if v["method"] == "Target.receivedMessageFromTarget"
                && v["params"]["sessionId"] == session.as_str()
            {
                let m: Value =
                    serde_json::from_str(v["params"]["message"].as_str().unwrap_or("null"))
                        .expect("wrapped JSON");
                if m["id"] == inner {
                    answer = Some(m);
                }
            }
            match (&answer, delivered) {
                (Some(a), true) => Some(a.clone()),
                _ => None,
            }
        })
        .await;
        let answer = answer.expect("answered");
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    async fn evaluate(&mut self, expression: &str) -> Value {
        let r = self
            .page(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true}),
            )
            .await;
        r["result"]["value"].clone()
    }

    async fn click(&mut self, x: f64, y: f64) {
        for kind in ["mousePressed", "mouseReleased"] {
            self.page(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            )
            .await;
        }
    }

    /// Key by key, as pyppeteer's `keyboard.type` does.
    async fn type_keys(&mut self, text: &str) {
        for ch in text.chars() {
            let key = ch.to_string();
            self.page(
                "Input.dispatchKeyEvent",
                json!({"type": "keyDown", "key": key, "text": key, "unmodifiedText": key}),
            )
            .await;
            self.page(
                "Input.dispatchKeyEvent",
                json!({"type": "keyUp", "key": key}),
            )
            .await;
        }
    }
}

fn actions<'a>(records: &'a [StoredRecord], method: &str) -> Vec<&'a StoredRecord> {
    records
        .iter()
        .filter(|r| r.kind == "action" && r.payload["method"] == method)
        .collect()
}

#[tokio::test]
async fn a_non_flat_client_leaves_the_same_evidence_as_a_flat_one() {
    within("a non-flat client through the relay", async {
        let site = Site::start(form_routes()).await;
        let chrome = Chromium::start().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let settings = EvidenceSettings {
            root: dir.path().to_path_buf(),
            observe: false,
            ..EvidenceSettings::default()
        };
        let relay = RelayFixture::start_recording(&chrome.http(), settings).await;
        let ws = connect(&browser_ws(&relay.authority()).await, &[])
            .await
            .expect("connect");
        let mut c = NonFlat {
            ws,
            next: 0,
            session: String::new(),
        };
        let targets = c.root("Target.getTargets", json!({})).await;
        let page = targets["targetInfos"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["targetId"].as_str())
            .expect("a page")
            .to_owned();
        let attached = c
            .root(
                "Target.attachToTarget",
                json!({"targetId": page, "flatten": false}),
            )
            .await;
        c.session = attached["sessionId"].as_str().expect("session").to_owned();
        for domain in ["Page.enable", "Runtime.enable", "Network.enable"] {
            c.page(domain, json!({})).await;
        }
        c.page(
            "Page.navigate",
            json!({"url": format!("{}/form?token=planted", site.origin)}),
        )
        .await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while c
            .evaluate("document.readyState === 'complete' && !!document.getElementById('b')")
            .await
            != json!(true)
        {
            assert!(tokio::time::Instant::now() < deadline, "the form never loaded");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Before typing: a picture the relay keeps.
        c.page("Page.captureScreenshot", json!({"format": "png"})).await;
        c.click(60.0, 25.0).await;
        c.type_keys(FIRST).await;
        c.click(60.0, 95.0).await;
        c.type_keys(SECOND).await;
        let lengths = c
            .evaluate("document.getElementById('a').value.length + ',' + document.getElementById('b').value.length")
            .await;
        assert_eq!(
            lengths,
            json!(format!("{},{}", FIRST.len(), SECOND.len())),
            "the typing landed"
        );
        // After typing: withheld.
        c.page("Page.captureScreenshot", json!({"format": "png"})).await;
        drop(c);

        let summary = relay.stop().await.expect("pipeline summary");
        let records = the_evidence_of_a_flat_client(&summary.run_dir, dir.path(), &site.origin);
        // The page's echoes came wrapped too, and are masked.
        let echoes: Vec<&StoredRecord> = records
            .iter()
            .filter(|r| r.kind == "console")
            .filter(|r| r.payload["text"].as_str().is_some_and(|t| t.starts_with("live")))
            .collect();
        assert!(!echoes.is_empty(), "{records:#?}");
    })
    .await;
}

/// What a run driven by either non-flat client holds, as a flat client's would: the navigation
/// (its query stripped), both clicks, a kept screenshot before typing and a withheld one after,
/// one typing step per field — and, anywhere under `root`, no typed text, no prefix of it past
/// what the echo rule allows, and no planted query token. Returns the run's records.
fn the_evidence_of_a_flat_client(
    run_dir: &std::path::Path,
    root: &std::path::Path,
    origin: &str,
) -> Vec<StoredRecord> {
    let bytes = std::fs::read(run_dir.join("actions.jsonl")).expect("journal");
    let records = parse_journal(&bytes).records;
    let navs = actions(&records, "Page.navigate");
    assert_eq!(navs.len(), 1, "{records:#?}");
    assert_eq!(navs[0].payload["url"], format!("{origin}/form"));
    assert_eq!(navs[0].status.as_deref(), Some("ok"));
    assert_eq!(actions(&records, "click").len(), 2, "{records:#?}");
    let shots = actions(&records, "Page.captureScreenshot");
    assert_eq!(shots.len(), 2, "{records:#?}");
    assert_eq!(shots[0].artifacts.len(), 1, "{:#?}", shots[0]);
    assert!(
        run_dir.join(&shots[0].artifacts[0]).is_file(),
        "{:#?}",
        shots[0]
    );
    assert!(shots[1].artifacts.is_empty(), "{:#?}", shots[1]);
    assert!(
        shots[1].payload["detail"]["screenshotWithheld"].is_string(),
        "{:#?}",
        shots[1]
    );
    let typing = actions(&records, "type");
    let chars: Vec<&Value> = typing
        .iter()
        .map(|t| &t.payload["input"]["chars"])
        .collect();
    assert_eq!(
        chars,
        [&json!(FIRST.len()), &json!(SECOND.len())],
        "one typing step per field: {typing:#?}"
    );
    for (path, bytes) in all_files(root) {
        for planted in [FIRST, SECOND, "planted", &FIRST[..6], &SECOND[..6]] {
            assert!(!leaks(&bytes, planted), "{planted} in {path}");
        }
    }
    records
}

/// Evaluates `expression` on `c` and returns its value.
async fn value(c: &mut Cdp, expression: &str) -> Value {
    let r = c
        .call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        )
        .await;
    r["result"]["value"].clone()
}

#[tokio::test]
async fn another_connections_reads_do_not_split_typing_nor_fail_the_page() {
    within("a reader beside a typist", async {
        let site = Site::start(form_routes()).await;
        let chrome = Chromium::start().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let settings = EvidenceSettings {
            root: dir.path().to_path_buf(),
            observe: false,
            ..EvidenceSettings::default()
        };
        let relay = RelayFixture::start_recording(&chrome.http(), settings).await;
        let url = page_ws(&relay.authority()).await;
        let mut typist = Cdp::connect(&url).await;
        let mut reader = Cdp::connect(&url).await;
        reader.call("Network.enable", json!({})).await;
        typist
            .call(
                "Page.navigate",
                json!({"url": format!("{}/form", site.origin)}),
            )
            .await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while value(
            &mut typist,
            "document.readyState === 'complete' && !!document.getElementById('b')",
        )
        .await
            != json!(true)
        {
            assert!(tokio::time::Instant::now() < deadline, "the form never loaded");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // DevTools attaches: it fetches its well-known file from the page's origin (a 404
        // here), from the page's own network stack.
        let status = value(
            &mut reader,
            "fetch('/.well-known/appspecific/com.chrome.devtools.json').then(r => r.status)",
        )
        .await;
        assert_eq!(status, json!(404));
        value(&mut typist, "document.getElementById('a').focus(); true").await;
        for (i, ch) in FIRST.chars().enumerate() {
            let key = ch.to_string();
            typist
                .call(
                    "Input.dispatchKeyEvent",
                    json!({"type": "keyDown", "key": key, "text": key}),
                )
                .await;
            typist
                .call("Input.dispatchKeyEvent", json!({"type": "keyUp", "key": key}))
                .await;
            // The frontend's read after the keystroke, on its own connection.
            value(
                &mut reader,
                &format!("(window.getNodeForIndex || (n => document.querySelectorAll('*')[n]))({i}) ? 1 : 0"),
            )
            .await;
        }
        let typed = value(&mut typist, "document.getElementById('a').value.length").await;
        assert_eq!(typed, json!(FIRST.len()));
        // The page's own failure is still one.
        let status = value(&mut typist, "fetch('/missing').then(r => r.status)").await;
        assert_eq!(status, json!(404));
        // Its event may reach the relay after the fetch's answer: wait for its record (the
        // well-known fetch's events, on the same connection before it, have been read then).
        let journal = relay.run_dir().expect("recording").join("actions.jsonl");
        let missing = format!("{}/missing", site.origin);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let bytes = std::fs::read(&journal).unwrap_or_default();
            if parse_journal(&bytes)
                .records
                .iter()
                .any(|r| r.kind == "network" && r.payload["url"] == missing.as_str())
            {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the page's failure was never recorded"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        drop((typist, reader));

        let summary = relay.stop().await.expect("pipeline summary");
        let bytes = std::fs::read(summary.run_dir.join("actions.jsonl")).expect("journal");
        let records = parse_journal(&bytes).records;
        let typing = actions(&records, "type");
        assert_eq!(typing.len(), 1, "{typing:#?}");
        assert_eq!(typing[0].payload["input"]["chars"], FIRST.len());
        let failures: Vec<&StoredRecord> =
            records.iter().filter(|r| r.kind == "network").collect();
        assert_eq!(failures.len(), 1, "{records:#?}");
        assert_eq!(
            failures[0].payload["url"],
            format!("{}/missing", site.origin),
            "{failures:#?}"
        );
        for (path, bytes) in all_files(dir.path()) {
            assert!(!leaks(&bytes, FIRST), "{FIRST} in {path}");
            assert!(!leaks(&bytes, "com.chrome.devtools"), "the well-known fetch in {path}");
        }
    })
    .await;
}

/// The Python interpreter of the venv `scripts/test.sh` installs `tests/clients/requirements.txt`
/// into (`CDP_RELAY_TEST_PYTHON` overrides it).
fn python_clients() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("CDP_RELAY_TEST_PYTHON") {
        return p.into();
    }
    let python =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pyclients/bin/python");
    assert!(
        python.is_file(),
        "the Python test clients are not installed: run scripts/test.sh, or `python3 -m venv target/pyclients && target/pyclients/bin/pip install -r tests/clients/requirements.txt`"
    );
    python
}

/// pyppeteer 2.0.0 itself, where item 14 was seen: the same evidence as a flat client's.
#[tokio::test]
async fn pyppeteer_leaves_the_same_evidence_as_a_flat_client() {
    within("pyppeteer through the relay", async {
        let python = python_clients();
        let site = Site::start(form_routes()).await;
        let chrome = Chromium::start().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let settings = EvidenceSettings {
            root: dir.path().to_path_buf(),
            ..EvidenceSettings::default()
        };
        let relay = RelayFixture::start_recording(&chrome.http(), settings).await;
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/pyppeteer_flow.py");
        let out = tokio::process::Command::new(&python)
            .arg(&script)
            .arg(relay.endpoint())
            .arg(format!("{}/form?token=planted", site.origin))
            .arg(FIRST)
            .arg(SECOND)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .expect("run pyppeteer");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "pyppeteer failed:\n{stderr}");
        let report: Value = String::from_utf8_lossy(&out.stdout)
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("pyppeteer printed no report:\n{stderr}"));
        assert_eq!(
            report["lengths"],
            json!([FIRST.len(), SECOND.len()]),
            "{report}"
        );
        assert!(
            report["ws"]
                .as_str()
                .is_some_and(|ws| ws.starts_with(&format!("ws://{}/", relay.authority()))),
            "pyppeteer went around the relay: {report}"
        );

        let summary = relay.stop().await.expect("pipeline summary");
        the_evidence_of_a_flat_client(&summary.run_dir, dir.path(), &site.origin);
    })
    .await;
}
