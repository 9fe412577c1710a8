//! TrafficReader unit tests: scripted frames in, journal records out (through a real evidence run, so
//! what is asserted is what a reader would see).

use super::*;
use crate::{Emit, NewArtifact};
use cdp_evidence::{EvidenceConfig, Run, Store, StoredRecord};
use cdp_relay_tap::tap::Payload;
use serde_json::json;
use std::time::UNIX_EPOCH;

struct Harness {
    _dir: tempfile::TempDir,
    store: Store,
    run: Run,
    run_id: String,
    observer: TrafficReader,
    sanitizer: Arc<Sanitizer>,
}

const PAGE: &str = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";

/// The relay's own observer is on `page` (its frames as the defaults time them).
fn observed(pages: &Pages, page: &str) {
    pages.start_observing(crate::pages::FrameTiming {
        failure_debounce: Duration::from_millis(250),
        after_click: Duration::from_millis(300),
        cooldown: Duration::from_secs(1),
    });
    pages.observe(page);
}

fn t(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms)
}

impl Harness {
    fn new(opts: TrafficOptions) -> Harness {
        Harness::with_screenshots(opts, true)
    }

    fn with_screenshots(opts: TrafficOptions, screenshots: bool) -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(EvidenceConfig::at(dir.path())).expect("store");
        let run = store.join_session("unit", "relay").expect("run");
        let run_id = run.id().to_owned();
        let sanitizer = Arc::new(Sanitizer::new());
        let pages = Arc::new(Pages::new(sanitizer.clone(), screenshots));
        let observer = TrafficReader::new(pages, opts);
        Harness {
            _dir: dir,
            store,
            run,
            run_id,
            observer,
            sanitizer,
        }
    }

    /// Feeds one event and writes what it produced, as the run writer would.
    fn handle(&mut self, event: TapEvent) {
        self.observer.handle(event);
        self.write();
    }

    /// Ticks at `ms` and writes what that produced.
    fn tick(&mut self, ms: u64) {
        self.observer.tick(t(ms));
        self.write();
    }

    /// Writes what the reader produced, as the run writer would.
    fn write(&mut self) {
        for emit in self.observer.take().emits {
            let record = match emit {
                Emit::Record(r) => r,
                Emit::WithArtifact {
                    record,
                    artifact: NewArtifact { stem, ext, bytes },
                } => match self
                    .run
                    .store_artifact(stem, ext, &bytes)
                    .expect("artifact")
                {
                    cdp_evidence::ArtifactOutcome::Stored(a) => record.artifact(a),
                    _ => record,
                },
                Emit::Shared { .. } => panic!("the traffic reader shares no artifacts"),
            };
            self.run.append(record).expect("append");
        }
    }

    fn open(&mut self, conn: u64, path: &str, ms: u64) {
        self.handle(TapEvent::Opened {
            conn,
            path: path.to_owned(),
            at: t(ms),
        });
    }

    fn send(&mut self, conn: u64, ms: u64, json: serde_json::Value) {
        self.frame(conn, Direction::ToBrowser, ms, &json.to_string());
    }

    fn recv(&mut self, conn: u64, ms: u64, json: serde_json::Value) {
        self.frame(conn, Direction::ToClient, ms, &json.to_string());
    }

    fn frame(&mut self, conn: u64, dir: Direction, ms: u64, text: &str) {
        self.handle(TapEvent::Frame {
            conn,
            dir,
            at: t(ms),
            payload: Payload::text(text.to_owned()),
        });
    }

    fn close(&mut self, conn: u64, how: SessionEnd, ms: u64) {
        self.handle(TapEvent::Closed {
            conn,
            how,
            at: t(ms),
        });
    }

    /// The journal so far; repeats folded so far are written first, as the run writer does
    /// when a fold closes.
    fn records(&self) -> Vec<StoredRecord> {
        for repeat in self.observer.pages.take_all() {
            self.run.append(repeat).expect("append a repeat");
        }
        self.store
            .read_journal(&self.run_id)
            .expect("journal")
            .records
    }

    fn of_kind(&self, kind: &str) -> Vec<StoredRecord> {
        self.records()
            .into_iter()
            .filter(|r| r.kind == kind)
            .collect()
    }

    fn actions(&self, method: &str) -> Vec<StoredRecord> {
        self.of_kind("action")
            .into_iter()
            .filter(|r| r.payload["method"] == method)
            .collect()
    }

    fn journal_text(&self) -> String {
        let path = self
            .store
            .run_dir(&self.run_id)
            .expect("dir")
            .join("actions.jsonl");
        std::fs::read_to_string(path).expect("journal text")
    }
}

#[test]
fn same_ids_on_two_sessions_correlate_separately() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(
        1,
        "/devtools/browser/3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44",
        0,
    );
    for (sid, target) in [
        ("SA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        ("SB", "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"),
    ] {
        h.recv(1, 1, json!({"method": "Target.attachedToTarget", "params": {"sessionId": sid, "targetInfo": {"targetId": target, "type": "page", "url": "https://example.com/a?token=x", "title": "t"}, "waitingForDebugger": false}}));
    }
    h.send(1, 10, json!({"id": 1, "method": "Page.navigate", "sessionId": "SA", "params": {"url": "https://a.example/x?q=1"}}));
    h.send(1, 20, json!({"id": 1, "method": "Page.navigate", "sessionId": "SB", "params": {"url": "https://b.example/y"}}));
    h.recv(
        1,
        50,
        json!({"id": 1, "sessionId": "SB", "result": {"frameId": "F"}}),
    );
    h.recv(1, 110, json!({"id": 1, "sessionId": "SA", "error": {"code": -32000, "message": "Cannot navigate to invalid URL"}}));
    let navs = h.actions("Page.navigate");
    assert_eq!(navs.len(), 2);
    let b = navs
        .iter()
        .find(|r| r.payload["url"] == "https://b.example/y")
        .expect("b");
    assert_eq!(b.status.as_deref(), Some("ok"));
    assert_eq!(b.duration_ms, Some(30));
    let a = navs
        .iter()
        .find(|r| r.payload["url"] == "https://a.example/x")
        .expect("a, without its query");
    assert_eq!(a.status.as_deref(), Some("error"));
    assert_eq!(a.duration_ms, Some(100));
    assert!(a
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("Cannot navigate"));
    // Targets are described by handle, never by raw id.
    let text = h.journal_text();
    assert!(
        !text.contains("AAAAAAAAAAAAAAAA") && !text.contains("3c8f9c3e"),
        "{text}"
    );
    assert!(
        a.target
            .as_ref()
            .is_some_and(|t| t.to_string().contains("target:")),
        "{:?}",
        a.target
    );
}

#[test]
fn error_reply_without_session_falls_back_to_the_id() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, "/devtools/browser/x", 0);
    h.send(
        1,
        10,
        json!({"id": 7, "method": "Page.reload", "sessionId": "GONE"}),
    );
    h.recv(
        1,
        15,
        json!({"id": 7, "error": {"code": -32001, "message": "Session with given id not found."}}),
    );
    let r = h.actions("Page.reload");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].status.as_deref(), Some("error"));
}

#[test]
fn typing_is_one_step_with_length_only_and_echoes_are_masked() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    let typed = "s3cr3t-Pass!";
    let mut id = 1;
    for (i, ch) in typed.chars().enumerate() {
        let ms = 100 + i as u64 * 50;
        h.send(1, ms, json!({"id": id, "method": "Input.dispatchKeyEvent", "params": {"type": "keyDown", "key": ch.to_string(), "text": ch.to_string()}}));
        h.recv(1, ms + 2, json!({"id": id, "result": {}}));
        id += 1;
        h.send(1, ms + 5, json!({"id": id, "method": "Input.dispatchKeyEvent", "params": {"type": "keyUp", "key": ch.to_string()}}));
        h.recv(1, ms + 6, json!({"id": id, "result": {}}));
        id += 1;
    }
    h.send(1, 2000, json!({"id": id, "method": "Input.dispatchKeyEvent", "params": {"type": "keyDown", "key": "Enter", "text": "\r"}}));
    h.recv(1, 2001, json!({"id": id, "result": {}}));
    h.recv(1, 2100, json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"type": "string", "value": format!("login failed for {typed}")}], "executionContextId": 1, "timestamp": 1.0}}));

    let typing = h.actions("type");
    assert_eq!(typing.len(), 1, "{typing:?}");
    assert_eq!(typing[0].payload["input"]["chars"], typed.chars().count());
    assert_eq!(typing[0].payload["input"]["inputType"], "unknown");
    assert_eq!(typing[0].status.as_deref(), Some("ok"));
    let press = h.actions("press");
    assert_eq!(press.len(), 1);
    assert_eq!(press[0].payload["detail"]["key"], "Enter");
    let console = h.of_kind("console");
    assert_eq!(console.len(), 1);
    let text = console[0].payload["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("login failed for ${TYPED_"), "{text}");
    assert!(!h.journal_text().contains(typed));
}

#[test]
fn insert_text_and_set_value_count_as_typing() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.send(
        1,
        10,
        json!({"id": 1, "method": "Input.insertText", "params": {"text": "hello wörld"}}),
    );
    h.recv(1, 11, json!({"id": 1, "result": {}}));
    h.send(1, 5000, json!({"id": 2, "method": "DOM.setAttributeValue", "params": {"nodeId": 4, "name": "value", "value": "0tp-123456"}}));
    h.recv(1, 5001, json!({"id": 2, "result": {}}));
    h.close(1, SessionEnd::ClientClosed, 6000);
    let typing = h.actions("type");
    assert_eq!(
        typing.len(),
        2,
        "a gap longer than typing_gap splits bursts"
    );
    assert_eq!(typing[0].payload["input"]["chars"], 11);
    assert_eq!(typing[1].payload["input"]["chars"], 10);
    let text = h.journal_text();
    assert!(
        !text.contains("hello") && !text.contains("0tp-123456"),
        "{text}"
    );
}

/// Each burst is tagged at its first key with the tool call in flight then; the call's answer
/// ends its own bursts at once (not another client's), and the step is linked to it.
#[test]
fn a_typing_call_answered_ends_its_own_burst_at_once_and_its_step_is_linked_to_it() {
    let mut h = Harness::new(TrafficOptions::default());
    let calls = crate::calls::ToolCalls::default();
    h.observer.calls = Some(calls.clone());
    let call = cdp_evidence::ActionId::at(t(5));
    calls.begin(call.clone(), t(5));
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.open(2, &format!("/devtools/page/{PAGE}"), 0);
    h.send(
        1,
        10,
        json!({"id": 1, "method": "Input.insertText", "params": {"text": "hello"}}),
    );
    h.recv(1, 11, json!({"id": 1, "result": {}}));
    let typing = calls.typing_of(&call).expect("remembered");
    assert_eq!((typing.bursts, typing.open), (1, 1));
    calls.end(&call, t(15));
    // Another client types after the call ended: no call of its own.
    h.send(
        2,
        16,
        json!({"id": 1, "method": "Input.insertText", "params": {"text": "other"}}),
    );
    h.recv(2, 17, json!({"id": 1, "result": {}}));
    assert!(h.actions("type").is_empty(), "the bursts are still open");
    h.handle(TapEvent::TypingOver {
        at: t(20),
        call: Some(call.as_str().to_owned()),
    });
    let steps = h.actions("type");
    assert_eq!(
        steps.len(),
        1,
        "the call's burst ended at once, the other's did not"
    );
    assert_eq!(steps[0].tool_call(), Some(call.as_str()));
    assert_eq!(steps[0].payload["input"]["chars"], 5);
    let typing = calls.typing_of(&call).expect("remembered");
    assert_eq!((typing.bursts, typing.open), (1, 0));
    let facts = calls.facts(&call).expect("remembered");
    assert_eq!(facts.typing_steps(), 1);
    // The other client's burst ends after its gap, linked to no call.
    h.tick(5_000);
    let steps = h.actions("type");
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[1].tool_call(), None);
    assert_eq!(calls.facts(&call).expect("remembered").typing_steps(), 1);
}

#[test]
fn network_failures_join_url_method_and_type() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.recv(1, 10, json!({"method": "Network.requestWillBeSent", "params": {"requestId": "R1", "request": {"url": "https://api.example/v1/data?access_token=abc123", "method": "POST", "headers": {"Authorization": "Bearer zzz"}}, "type": "Fetch", "timestamp": 100.0, "wallTime": 1.0}}));
    h.recv(1, 20, json!({"method": "Network.loadingFailed", "params": {"requestId": "R1", "timestamp": 100.25, "type": "Fetch", "errorText": "net::ERR_CONNECTION_REFUSED", "canceled": false}}));
    h.recv(1, 30, json!({"method": "Network.requestWillBeSent", "params": {"requestId": "R2", "request": {"url": "https://example.com/missing#frag", "method": "GET"}, "type": "Document", "timestamp": 101.0}}));
    h.recv(1, 40, json!({"method": "Network.responseReceived", "params": {"requestId": "R2", "timestamp": 101.5, "type": "Document", "response": {"url": "https://example.com/missing", "status": 404, "statusText": "Not Found", "headers": {"Set-Cookie": "sid=1"}}}}));
    h.recv(1, 41, json!({"method": "Network.loadingFinished", "params": {"requestId": "R2", "timestamp": 101.6}}));
    // A request that succeeds and one that is canceled.
    h.recv(1, 50, json!({"method": "Network.requestWillBeSent", "params": {"requestId": "R3", "request": {"url": "https://example.com/ok", "method": "GET"}, "type": "Script", "timestamp": 102.0}}));
    h.recv(1, 51, json!({"method": "Network.responseReceived", "params": {"requestId": "R3", "timestamp": 102.1, "response": {"url": "https://example.com/ok", "status": 200, "statusText": "OK"}}}));
    h.recv(1, 60, json!({"method": "Network.requestWillBeSent", "params": {"requestId": "R4", "request": {"url": "https://example.com/slow", "method": "GET"}, "type": "XHR", "timestamp": 103.0}}));
    h.recv(1, 70, json!({"method": "Network.loadingFailed", "params": {"requestId": "R4", "timestamp": 103.01, "errorText": "net::ERR_ABORTED", "canceled": true}}));

    let net = h.of_kind("network");
    assert_eq!(net.len(), 3, "{net:?}");
    let refused = &net[0].payload;
    assert_eq!(refused["method"], "POST");
    assert_eq!(refused["url"], "https://api.example/v1/data");
    assert_eq!(refused["resourceType"], "Fetch");
    assert_eq!(refused["durationMs"], 250);
    assert!(refused["errorText"]
        .as_str()
        .unwrap_or_default()
        .contains("ERR_CONNECTION_REFUSED"));
    let missing = &net[1].payload;
    assert_eq!(missing["status"], 404);
    assert_eq!(missing["url"], "https://example.com/missing");
    assert_eq!(missing["method"], "GET");
    assert_eq!(net[2].payload["url"], "https://example.com/slow");
    let text = h.journal_text();
    for leak in ["abc123", "Bearer", "zzz", "sid=1", "frag"] {
        assert!(!text.contains(leak), "{leak} leaked: {text}");
    }
}

#[test]
fn console_errors_exceptions_and_log_entries() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    h.recv(1, 10, json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"type": "string", "value": "token"}, {"type": "string", "value": jwt}, {"type": "number", "value": 42}], "stackTrace": {"callFrames": [{"url": "https://app.example/main.js?v=1", "lineNumber": 9, "columnNumber": 4, "functionName": "f", "scriptId": "1"}]}}}));
    h.recv(1, 11, json!({"method": "Runtime.consoleAPICalled", "params": {"type": "log", "args": [{"type": "string", "value": "not evidence"}]}}));
    h.recv(1, 12, json!({"method": "Runtime.exceptionThrown", "params": {"timestamp": 1.0, "exceptionDetails": {"exceptionId": 1, "text": "Uncaught", "lineNumber": 0, "columnNumber": 7, "url": "https://app.example/boom.js", "exception": {"type": "object", "description": "Error: session=abcdef0123456789 expired\n    at boom.js:1:8"}}}}));
    h.recv(1, 13, json!({"method": "Log.entryAdded", "params": {"entry": {"source": "network", "level": "error", "text": "Failed to load resource: 500", "url": "https://app.example/api?key=1", "timestamp": 1.0}}}));
    h.recv(1, 14, json!({"method": "Log.entryAdded", "params": {"entry": {"source": "other", "level": "verbose", "text": "x", "timestamp": 1.0}}}));
    let c = h.of_kind("console");
    assert_eq!(c.len(), 3, "{c:?}");
    assert_eq!(c[0].payload["level"], "error");
    assert_eq!(c[0].payload["url"], "https://app.example/main.js");
    assert_eq!(c[0].payload["line"], 10);
    assert_eq!(c[0].payload["column"], 5);
    assert!(c[0].payload["text"]
        .as_str()
        .unwrap_or_default()
        .ends_with("42"));
    assert_eq!(c[1].payload["level"], "exception");
    assert_eq!(c[2].payload["url"], "https://app.example/api");
    let text = h.journal_text();
    assert!(
        !text.contains(jwt) && !text.contains("abcdef0123456789"),
        "{text}"
    );
}

#[test]
fn a_large_reply_is_judged_by_its_head_and_read_whole_only_when_awaited() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    let big = "x".repeat(2 * HEAD);
    // Awaited: a refused navigation whose error message pushes the reply past the head.
    h.send(
        1,
        10,
        json!({"id": 5, "method": "Page.navigate", "params": {"url": "https://a.example/"}}),
    );
    h.recv(
        1,
        20,
        json!({"id": 5, "error": {"code": -32000, "message": format!("Cannot navigate {big}")}}),
    );
    // Not awaited (a command the observer does not record): skipped from the head alone.
    h.send(1, 30, json!({"id": 6, "method": "DOM.getDocument"}));
    h.recv(1, 40, json!({"id": 6, "result": {"root": big}}));
    // An event whose method name ends past the head is read whole, and recorded.
    let padded = format!(
        "{{\"method\":\"Runtime.exceptionThrown\",\"pad\":\"{big}\",\"params\":{{\"timestamp\":1,\"exceptionDetails\":{{\"text\":\"Uncaught boom\"}}}}}}"
    );
    h.frame(1, Direction::ToClient, 50, &padded);
    let navs = h.actions("Page.navigate");
    assert_eq!(navs.len(), 1);
    assert_eq!(navs[0].status.as_deref(), Some("error"), "{:?}", navs[0]);
    assert!(h.actions("DOM.getDocument").is_empty());
    let console = h.of_kind("console");
    assert!(
        console.iter().any(|r| r.payload["text"]
            .as_str()
            .is_some_and(|t| t.contains("boom"))),
        "{console:?}"
    );
}

#[test]
fn unanswered_commands_are_interrupted_at_close() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.send(
        1,
        10,
        json!({"id": 1, "method": "Page.navigate", "params": {"url": "https://slow.example/"}}),
    );
    h.send(
        1,
        20,
        json!({"id": 2, "method": "Input.insertText", "params": {"text": "abcd"}}),
    );
    h.close(1, SessionEnd::BrowserLost, 500);
    let navs = h.actions("Page.navigate");
    assert_eq!(navs[0].status.as_deref(), Some("interrupted"));
    assert_eq!(navs[0].duration_ms, Some(490));
    assert_eq!(h.actions("type")[0].status.as_deref(), Some("interrupted"));
    let life: Vec<_> = h
        .of_kind("lifecycle")
        .iter()
        .map(|r| r.payload["event"].clone())
        .collect();
    assert_eq!(life, vec![json!("clientConnected"), json!("upstreamLost")]);
}

#[test]
fn pending_timeout_interrupts() {
    let mut h = Harness::new(TrafficOptions {
        pending_timeout: Duration::from_secs(30),
        ..TrafficOptions::default()
    });
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.send(1, 0, json!({"id": 1, "method": "Page.reload"}));
    h.recv(
        1,
        60_000,
        json!({"method": "Page.loadEventFired", "params": {}}),
    );
    assert_eq!(
        h.actions("Page.reload")[0].status.as_deref(),
        Some("interrupted")
    );
    // A late answer finds nothing and records nothing twice.
    h.recv(1, 61_000, json!({"id": 1, "result": {}}));
    assert_eq!(h.actions("Page.reload").len(), 1);
}

const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[test]
fn screenshots_are_withheld_after_typing_until_navigation() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.send(
        1,
        10,
        json!({"id": 1, "method": "Page.captureScreenshot", "params": {}}),
    );
    h.recv(1, 20, json!({"id": 1, "result": {"data": PNG_1X1}}));
    h.send(
        1,
        30,
        json!({"id": 2, "method": "Input.insertText", "params": {"text": "secret"}}),
    );
    h.recv(1, 31, json!({"id": 2, "result": {}}));
    h.send(
        1,
        40,
        json!({"id": 3, "method": "Page.captureScreenshot", "params": {"format": "jpeg"}}),
    );
    h.recv(1, 50, json!({"id": 3, "result": {"data": PNG_1X1}}));
    // As Chromium reports a fresh navigation: how it started, then its commit.
    h.recv(1, 59, json!({"method": "Page.frameStartedNavigating", "params": {"frameId": PAGE, "url": "https://x/", "loaderId": "L", "navigationType": "differentDocument"}}));
    h.recv(1, 60, json!({"method": "Page.frameNavigated", "params": {"frame": {"id": PAGE, "url": "https://x/", "loaderId": "L"}, "type": "Navigation"}}));
    h.send(
        1,
        70,
        json!({"id": 4, "method": "Page.captureScreenshot", "params": {}}),
    );
    h.recv(1, 80, json!({"id": 4, "result": {"data": PNG_1X1}}));
    let shots = h.actions("Page.captureScreenshot");
    assert_eq!(shots.len(), 3);
    assert_eq!(shots[0].artifacts.len(), 1);
    assert!(shots[1].artifacts.is_empty(), "withheld after typing");
    assert_eq!(
        shots[1].payload["detail"]["screenshotWithheld"],
        "typing into a sensitive or unidentified field since the last navigation"
    );
    assert_eq!(
        shots[2].artifacts.len(),
        1,
        "allowed again after navigation"
    );
    let path = h
        .store
        .artifact_path(&h.run_id, &shots[0].artifacts[0])
        .expect("confined");
    assert_eq!(std::fs::read(path).expect("artifact")[1..4], *b"PNG");
}

#[test]
fn screencast_frames_are_sampled_and_can_be_switched_off() {
    for screenshots in [true, false] {
        let mut h = Harness::with_screenshots(TrafficOptions::default(), screenshots);
        h.open(1, &format!("/devtools/page/{PAGE}"), 0);
        for i in 0..10u64 {
            h.recv(1, i * 500, json!({"method": "Page.screencastFrame", "params": {"data": PNG_1X1, "sessionId": i, "metadata": {}}}));
        }
        let frames = h.actions("Page.screencastFrame");
        // 0 .. 4.5 s at one frame per 2 s: 0, 2, 4 s.
        assert_eq!(frames.len(), if screenshots { 3 } else { 0 });
    }
}

#[test]
fn malformed_and_hostile_frames_are_ignored() {
    let mut h = Harness::new(TrafficOptions {
        max_pending: 8,
        ..TrafficOptions::default()
    });
    h.open(1, "/devtools/page/P", 0);
    for bad in [
        "",
        "{",
        "[]",
        "null",
        "{\"id\":1e999}",
        "{\"id\":-5,\"method\":\"Page.reload\"}",
        "{\"id\":1,\"method\":\"Page.navigate\",\"params\":{\"url\":7}}",
        "{\"method\":\"Network.loadingFailed\",\"params\":[]}",
        "{\"method\":\"Runtime.consoleAPICalled\",\"params\":{\"type\":\"error\",\"args\":\"x\"}}",
    ] {
        h.frame(1, Direction::ToBrowser, 1, bad);
        h.frame(1, Direction::ToClient, 1, bad);
    }
    // Frames for unknown connections are ignored too.
    h.send(99, 2, json!({"id": 1, "method": "Page.reload"}));
    // The pending table is bounded.
    for id in 0..20 {
        h.send(1, 3, json!({"id": id, "method": "Page.reload"}));
    }
    assert_eq!(h.observer.dropped(), 12);
    h.handle(TapEvent::Finish { at: t(10) });
    assert_eq!(h.actions("Page.reload").len(), 8);
    let _ = &h.sanitizer;
}

/// A page seen by two sessions of one connection and by a second connection (an agent's own
/// DevTools model, a second client): each console message and each failed request is recorded
/// once.
#[test]
fn page_events_are_recorded_once_per_page() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, "/devtools/browser/b", 0);
    for sid in ["S1", "S2"] {
        h.recv(1, 1, json!({"method": "Target.attachedToTarget", "params": {"sessionId": sid, "targetInfo": {"targetId": PAGE, "type": "page", "url": "https://a.test/", "title": "t"}}}));
    }
    h.open(2, &format!("/devtools/page/{PAGE}"), 2);
    let console = |sid: Option<&str>| {
        let mut m = json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"type": "string", "value": "boom"}], "timestamp": 1700000000123.5, "executionContextId": 1}});
        if let Some(s) = sid {
            m["sessionId"] = json!(s);
        }
        m
    };
    h.recv(1, 10, console(Some("S1")));
    h.recv(1, 11, console(Some("S2")));
    h.recv(2, 12, console(None));
    // The same text at another moment is another message.
    let mut later = console(None);
    later["params"]["timestamp"] = json!(1700000000999.0);
    h.recv(2, 13, later);
    for (conn, sid) in [(1, Some("S1")), (1, Some("S2")), (2, None)] {
        let mut sent = json!({"method": "Network.requestWillBeSent", "params": {"requestId": "42.7", "request": {"url": "https://a.test/missing?token=1", "method": "GET"}, "type": "Fetch", "timestamp": 1.0}});
        let mut resp = json!({"method": "Network.responseReceived", "params": {"requestId": "42.7", "type": "Fetch", "timestamp": 1.2, "response": {"status": 404, "statusText": "Not Found", "url": "https://a.test/missing?token=1"}}});
        if let Some(s) = sid {
            sent["sessionId"] = json!(s);
            resp["sessionId"] = json!(s);
        }
        h.recv(conn, 20, sent);
        h.recv(conn, 21, resp);
    }
    assert_eq!(h.of_kind("console").len(), 2);
    assert_eq!(h.of_kind("network").len(), 1);
}

/// A noisy page: thousands of the same console error and the same failed request are recorded
/// ten times each, plus one record with the count and the first and last time of the rest; a
/// repeat triggers no frame (it does not join the failures waiting for the relay's own
/// observer's frame of the page).
#[test]
fn repeated_console_errors_and_failures_fold_into_a_count() {
    let mut h = Harness::new(TrafficOptions::default());
    observed(&h.observer.pages, PAGE);
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    for i in 0..3000u64 {
        h.recv(1, 10 + i, json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"type": "string", "value": "noisy ?token=abc"}], "timestamp": 1700000000000.0 + i as f64, "executionContextId": 1}}));
        let id = format!("9.{i}");
        h.recv(1, 10 + i, json!({"method": "Network.requestWillBeSent", "params": {"requestId": id, "request": {"url": format!("https://a.test/poll?n={i}"), "method": "GET"}, "type": "XHR", "timestamp": 1.0}}));
        h.recv(1, 10 + i, json!({"method": "Network.loadingFailed", "params": {"requestId": id, "type": "XHR", "timestamp": 1.1, "errorText": "net::ERR_FAILED"}}));
    }
    // The failures that waited for the observer's frame, written as a frame would carry them.
    let held = h.observer.pages.unobserve(PAGE).expect("a frame wanted");
    let triggers = held.group.len();
    for r in held.group {
        h.run.append(r).expect("append a held failure");
    }
    // A different message is its own event.
    h.recv(1, 5000, json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"type": "string", "value": "other"}], "timestamp": 1.0, "executionContextId": 1}}));
    let console = h.of_kind("console");
    let texts: Vec<&str> = console
        .iter()
        .map(|r| r.payload["text"].as_str().unwrap())
        .collect();
    let kept = crate::pages::dedup::RECORDED_BEFORE_FOLDING as usize;
    assert_eq!(texts.len(), kept + 2, "{texts:?}");
    let first = &console[0];
    assert!(first.repeat.is_none());
    let repeat = console.iter().find(|r| r.repeat.is_some()).unwrap();
    assert_eq!(repeat.payload["text"], first.payload["text"]);
    let rep = repeat.repeat.as_ref().unwrap();
    assert_eq!(rep.count, 3000 - kept as u64);
    assert_eq!(
        rep.first_at.as_deref(),
        Some(repeat.started_at.as_deref().unwrap())
    );
    assert_eq!(repeat.duration_ms, Some(3000 - kept as u64 - 1));
    let network = h.of_kind("network");
    assert_eq!(network.len(), kept + 1);
    let folded = network[kept].repeat.as_ref().unwrap();
    assert_eq!(folded.count, 3000 - kept as u64);
    assert_eq!(network[kept].payload["url"], "https://a.test/poll");
    assert!(!h.journal_text().contains("token=abc"));
    assert!(
        triggers <= 2 * kept,
        "a repeat triggers no frame: {triggers}"
    );
}

/// When the direct reader covers a page, the traffic reader leaves its page events to it.
#[test]
fn covered_pages_leave_page_events_to_the_active_observer() {
    let mut h = Harness::new(TrafficOptions::default());
    let pages = h.observer.pages.clone();
    pages.cover(PAGE);
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.recv(1, 10, json!({"method": "Runtime.exceptionThrown", "params": {"timestamp": 5.0, "exceptionDetails": {"text": "Uncaught", "lineNumber": 0, "columnNumber": 0}}}));
    assert!(h.of_kind("console").is_empty());
    pages.unobserve(PAGE);
    h.recv(1, 11, json!({"method": "Runtime.exceptionThrown", "params": {"timestamp": 6.0, "exceptionDetails": {"text": "Uncaught", "lineNumber": 0, "columnNumber": 0}}}));
    assert_eq!(h.of_kind("console").len(), 1);
}

/// Typing the observer used to miss. Each spelling is registered before the
/// next frame is handled (the echo after it is masked) and becomes a typing step.
#[test]
fn typing_in_any_spelling_is_registered_and_recorded() {
    let nested =
        json!({"id": 70, "method": "Input.insertText", "params": {"text": "Secr3tNested"}});
    let cases = [
        r#"{"params":{"text":"Secr3tParams"},"id":1,"method":"Input.insertText"}"#.to_owned(),
        r#"{"sessionId":"UNSEEN","id":1,"method":"Input.insertText","params":{"text":"Secr3tSession"}}"#.to_owned(),
        r#"{"id":1,"method":"Input.insert\u0054ext","params":{"text":"Secr3tEscape"}}"#.to_owned(),
        r#"{"id":1,"method":"DOM.setAttributeValue","params":{"nodeId":1,"name":"VALUE","value":"Secr3tUpper"}}"#.to_owned(),
        r#"{"id":1,"method":"DOM.setAttributesAsText","params":{"nodeId":1,"text":"value=\"Secr3tAsText\""}}"#.to_owned(),
        r#"{"id":1,"method":"Page.enable","method":"Input.insertText","params":{"text":"Secr3tDuplicate"}}"#.to_owned(),
        json!({"id": 1, "method": "Target.sendMessageToTarget",
            "params": {"sessionId": "NONFLAT", "message": nested.to_string()}})
        .to_string(),
    ];
    for raw in &cases {
        let mut h = Harness::new(TrafficOptions::default());
        h.open(1, &format!("/devtools/page/{PAGE}"), 0);
        h.frame(1, Direction::ToBrowser, 10, raw);
        let typed = raw
            .split("Secr3t")
            .nth(1)
            .and_then(|rest| rest.split(['"', '\\']).next())
            .map(|tail| format!("Secr3t{tail}"))
            .expect("a planted literal");
        h.recv(1, 12, json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"type": "string", "value": format!("live {typed}")}], "executionContextId": 1, "timestamp": 1.0}}));
        h.recv(1, 14, json!({"id": 1, "result": {}}));
        h.close(1, SessionEnd::ClientClosed, 5000);
        let console = h.of_kind("console");
        assert_eq!(console.len(), 1, "{raw}");
        assert_eq!(console[0].payload["text"], "live ${TYPED_1}", "{raw}");
        let typing = h.actions("type");
        assert_eq!(typing.len(), 1, "{raw}: {typing:?}");
        assert_eq!(
            typing[0].payload["input"]["chars"],
            typed.chars().count(),
            "{raw}"
        );
        assert!(!h.journal_text().contains("Secr3t"), "{raw}");
    }
}

/// A failure the traffic reader reads reaches the tool call in flight: the page model decides
/// what it is, the reader tells the calls.
#[test]
fn a_failure_read_reaches_the_call_in_flight() {
    let mut h = Harness::new(TrafficOptions::default());
    let calls = crate::calls::ToolCalls::default();
    h.observer.calls = Some(calls.clone());
    let call = cdp_evidence::ActionId::at(t(5));
    calls.begin(call.clone(), t(5));
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.recv(1, 20, json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"type": "string", "value": "save failed"}], "executionContextId": 1, "timestamp": 2.0}}));
    let facts = calls.facts(&call).expect("the call");
    assert_eq!(facts.failures.len() + facts.more_failures, 1);
}

/// A named key is a press, not typing, in any spelling; an IME composition is protected but
/// not counted (the insertion that commits it is).
#[test]
fn presses_and_compositions() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.send(1, 10, json!({"params": {"type": "keyDown", "key": "Enter", "text": "\r"}, "method": "Input.dispatchKeyEvent", "id": 1}));
    h.recv(1, 11, json!({"id": 1, "result": {}}));
    h.send(1, 20, json!({"id": 2, "method": "Input.imeSetComposition", "params": {"text": "かなかな漢字", "selectionStart": 6, "selectionEnd": 6}}));
    h.recv(1, 21, json!({"id": 2, "result": {}}));
    h.recv(1, 22, json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"type": "string", "value": "composing かなかな漢字"}], "executionContextId": 1, "timestamp": 2.0}}));
    h.close(1, SessionEnd::ClientClosed, 5000);
    assert_eq!(h.actions("press").len(), 1);
    assert!(h.actions("type").is_empty());
    let console = h.of_kind("console");
    assert_eq!(console[0].payload["text"], "composing ${TYPED_1}");
}

/// The fuzz target's seeds, replayed the way `fuzz/fuzz_targets/observer_frames.rs` reads them:
/// none may panic, and the typing seed's literals are registered (so the seeds keep exercising
/// what they were written for).
#[test]
fn fuzz_seeds_replay() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/observer_frames");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("seeds") {
        let path = entry.expect("entry").path();
        let data = std::fs::read(&path).expect("seed");
        let sanitizer = Arc::new(Sanitizer::new());
        let mut obs = TrafficReader::new(
            Arc::new(Pages::new(sanitizer.clone(), true)),
            TrafficOptions::default(),
        );
        super::fuzz::feed(&mut obs, &data, t(0));
        if path.ends_with("non_flat_session") {
            let out = sanitizer.text("live Secr3tNonFlat");
            assert_eq!(out.as_str(), "live ${TYPED_1}");
        }
        if path.ends_with("typing_any_spelling") {
            for planted in [
                "Secr3tParams",
                "Secr3tEscape",
                "Secr3tNested",
                "Secr3tUpper",
                "Secr3tNode",
            ] {
                let out = sanitizer.text(&format!("live {planted}"));
                assert!(
                    !out.as_str().contains("Secr3t"),
                    "{planted}: {}",
                    out.as_str()
                );
            }
        }
        seen += 1;
    }
    assert!(seen >= 4, "{seen} seeds in {}", dir.display());
}

/// Typing into a page through a non-flat session, emptied between values by commands on a flat
/// session to the same page: each value is a burst of its own (a burst's echo protection holds
/// for continuations of what it typed, not for text typed after the field changed).
#[test]
fn a_command_to_the_page_ends_bursts_typing_into_it_through_other_sessions() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, "/devtools/browser/b", 0);
    for sid in ["FLAT", "NONFLAT"] {
        h.recv(1, 1, json!({"method": "Target.attachedToTarget", "params": {"sessionId": sid, "targetInfo": {"targetId": PAGE, "type": "page", "url": "https://a.test/", "title": "t"}, "waitingForDebugger": false}}));
    }
    let mut id = 10;
    for (i, value) in ["FirstVal1", "SecondVal2", "ThirdVal3"].iter().enumerate() {
        let ms = 100 + i as u64 * 100;
        h.send(1, ms, json!({"id": id, "sessionId": "FLAT", "method": "Runtime.evaluate", "params": {"expression": "f.value = ''"}}));
        h.recv(
            1,
            ms + 1,
            json!({"id": id, "sessionId": "FLAT", "result": {}}),
        );
        id += 1;
        let inner = json!({"id": 900 + i, "method": "Input.insertText", "params": {"text": value}});
        h.send(1, ms + 2, json!({"id": id, "method": "Target.sendMessageToTarget", "params": {"sessionId": "NONFLAT", "message": inner.to_string()}}));
        h.recv(1, ms + 3, json!({"id": id, "result": {}}));
        id += 1;
        h.recv(1, ms + 4, json!({"method": "Runtime.consoleAPICalled", "sessionId": "FLAT", "params": {"type": "error", "args": [{"type": "string", "value": format!("live {value}")}], "executionContextId": 1, "timestamp": 1.0 + i as f64}}));
    }
    h.send(1, 900, json!({"id": 99, "sessionId": "FLAT", "method": "Runtime.evaluate", "params": {"expression": "1"}}));
    h.recv(1, 901, json!({"id": 99, "sessionId": "FLAT", "result": {}}));
    h.close(1, SessionEnd::ClientClosed, 5000);
    let typing = h.actions("type");
    assert_eq!(typing.len(), 3, "{typing:?}");
    assert!(
        typing.iter().all(|t| t.status.as_deref() == Some("ok")),
        "{typing:?}"
    );
    let text = h.journal_text();
    assert!(!text.contains("Val"), "{text}");
}

/// Two clients on one page (DevTools reads the page after every keystroke).
/// Another client's reads do not split the burst one client types: its screenshots, its
/// evaluations (which may have emptied the field: what is typed after one is protected from
/// there on), and side-effect-free evaluations from the typist itself. Another client's input
/// ends it, however many connections are open.
#[test]
fn another_clients_reads_do_not_split_a_burst_but_its_input_does() {
    let mut h = Harness::new(TrafficOptions::default());
    let page = format!("/devtools/page/{PAGE}");
    for conn in 1..=40 {
        h.open(conn, &page, 0);
    }
    let (typist, reader) = (7, 30);
    let mut id = 10;
    let mut ms = 100;
    let mut next = |step: u64| {
        id += 1;
        ms += step;
        (id, ms)
    };
    for value in ["FirstVal1", "SecondVal2"] {
        let (i, t) = next(10);
        h.send(
            typist,
            t,
            json!({"id": i, "method": "Input.insertText", "params": {"text": value}}),
        );
        h.recv(typist, t + 1, json!({"id": i, "result": {}}));
        // The page echoes what the field holds after the other client's evaluation, which
        // emptied it (or only read it: nobody can tell).
        h.recv(reader, t + 2, json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"type": "string", "value": format!("live {value}")}], "executionContextId": 1, "timestamp": t as f64}}));
        let (i, t) = next(10);
        h.send(reader, t, json!({"id": i, "method": "Runtime.evaluate", "params": {"expression": "f.value = ''"}}));
        h.recv(reader, t + 1, json!({"id": i, "result": {}}));
        let (i, t) = next(10);
        h.send(
            reader,
            t,
            json!({"id": i, "method": "Page.captureScreenshot", "params": {}}),
        );
        h.recv(
            reader,
            t + 1,
            json!({"id": i, "result": {"data": "aGVsbG8="}}),
        );
        let (i, t) = next(10);
        h.send(typist, t, json!({"id": i, "method": "Runtime.evaluate", "params": {"expression": "window.getNodeForIndex(3)", "throwOnSideEffect": true}}));
        h.recv(typist, t + 1, json!({"id": i, "result": {}}));
    }
    // Input from the other client ends the burst; the next value is a step of its own.
    let (i, t) = next(10);
    h.send(reader, t, json!({"id": i, "method": "Input.dispatchMouseEvent", "params": {"type": "mousePressed", "x": 5, "y": 5, "button": "left", "clickCount": 1}}));
    h.recv(reader, t + 1, json!({"id": i, "result": {}}));
    let (i, t) = next(10);
    h.send(
        typist,
        t,
        json!({"id": i, "method": "Input.insertText", "params": {"text": "ThirdVal3"}}),
    );
    h.recv(typist, t + 1, json!({"id": i, "result": {}}));
    for conn in 1..=40 {
        h.close(conn, SessionEnd::ClientClosed, 5000);
    }
    let typing = h.actions("type");
    let chars: Vec<&serde_json::Value> = typing
        .iter()
        .map(|t| &t.payload["input"]["chars"])
        .collect();
    assert_eq!(chars, [&json!(19), &json!(9)], "{typing:?}");
    let console = h.of_kind("console");
    assert_eq!(console.len(), 2, "{console:?}");
    for c in &console {
        let text = c.payload["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("live ${TYPED_"), "{text}");
    }
    assert_eq!(h.actions("Runtime.evaluate").len(), 4);
    let text = h.journal_text();
    assert!(!text.contains("Val"), "{text}");
}

/// What the client's own traffic tells the veto without the relay's observer: a `Page.navigate`
/// reply naming a loader is a fresh document; one without (a `#hash`) or with an error (a 204,
/// a download) commits none, and neither does a history step or a reload command by itself.
#[test]
fn only_a_fresh_document_lifts_the_veto_without_the_observer() {
    struct Client {
        h: Harness,
        id: u64,
        now: u64,
    }
    impl Client {
        fn step(&mut self, method: &str, params: serde_json::Value, result: serde_json::Value) {
            self.id += 1;
            self.now += 10;
            let (id, now) = (self.id, self.now);
            self.h.send(
                1,
                now,
                json!({"id": id, "method": method, "params": params}),
            );
            self.h.recv(1, now + 5, json!({"id": id, "result": result}));
        }
        fn shot_kept(&mut self) -> bool {
            self.step(
                "Page.captureScreenshot",
                json!({}),
                json!({"data": PNG_1X1}),
            );
            let shots = self.h.actions("Page.captureScreenshot");
            !shots
                .last()
                .expect("a screenshot step")
                .artifacts
                .is_empty()
        }
    }
    let mut c = Client {
        h: Harness::new(TrafficOptions::default()),
        id: 0,
        now: 0,
    };
    c.h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    c.step(
        "Input.insertText",
        json!({"text": "4111111111111111"}),
        json!({}),
    );
    assert!(!c.shot_kept(), "typed into an unidentified field");
    let page = |extra: serde_json::Value| {
        let mut v = json!({"frameId": PAGE, "isDownload": false});
        v.as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        v
    };
    c.step(
        "Page.navigate",
        json!({"url": "https://x/pay#receipt"}),
        page(json!({})),
    );
    assert!(!c.shot_kept(), "a #hash is the same document");
    c.step(
        "Page.navigate",
        json!({"url": "https://x/204"}),
        page(json!({"loaderId": "L1", "errorText": "net::ERR_ABORTED"})),
    );
    assert!(!c.shot_kept(), "a 204 commits nothing");
    c.step(
        "Page.navigate",
        json!({"url": "https://x/dl"}),
        page(json!({"loaderId": "L2", "errorText": "net::ERR_ABORTED", "isDownload": true})),
    );
    assert!(!c.shot_kept(), "a download commits nothing");
    c.step(
        "Page.navigateToHistoryEntry",
        json!({"entryId": 3}),
        json!({}),
    );
    assert!(!c.shot_kept(), "a history step says nothing by itself");
    c.step("Page.reload", json!({}), json!({}));
    assert!(!c.shot_kept(), "nor does a reload command");
    c.step(
        "Page.navigate",
        json!({"url": "https://x/next"}),
        page(json!({"loaderId": "L3"})),
    );
    assert!(c.shot_kept(), "a fresh document");
}

/// Types "abc" into PAGE at 100–120 ms (`before` reported and registered at 0 ms) and ends the
/// burst with another command at 500 ms; `late` (a kind and when it was reported) is registered
/// only after the first keystroke, as a focus report that lost its race would be. The step's
/// `input` member.
fn typed_with_focus(
    before: Option<cdp_sanitize::InputType>,
    late: Option<(cdp_sanitize::InputType, u64)>,
) -> serde_json::Value {
    use crate::pages::veto::FieldKind;
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    let pages = h.observer.pages.clone();
    if let Some(kind) = before {
        pages.focused_at(PAGE, Some(FieldKind::Input(kind)), t(0));
    }
    for (i, ch) in "abc".chars().enumerate() {
        let id = i as u64 + 1;
        let ms = 100 + i as u64 * 10;
        h.send(
            1,
            ms,
            json!({"id": id, "method": "Input.insertText", "params": {"text": ch.to_string()}}),
        );
        h.recv(1, ms + 2, json!({"id": id, "result": {}}));
        if let (0, Some((kind, at))) = (i, late) {
            pages.focused_at(PAGE, Some(FieldKind::Input(kind)), t(at));
        }
    }
    h.send(
        1,
        500,
        json!({"id": 9, "method": "Runtime.evaluate", "params": {"expression": "1"}}),
    );
    h.recv(
        1,
        501,
        json!({"id": 9, "result": {"result": {"type": "number", "value": 1}}}),
    );
    h.observer.tick(t(10_000));
    let typing = h.actions("type");
    assert_eq!(typing.len(), 1, "{typing:?}");
    assert_eq!(typing[0].payload["input"]["chars"], 3);
    typing[0].payload["input"].clone()
}

#[test]
fn a_focus_report_registered_after_the_first_keystroke_still_types_the_burst() {
    use cdp_sanitize::InputType::{Email, Password, Text};
    let kind = |before, late| typed_with_focus(before, late)["inputType"].clone();
    // Reported (by arrival) before the typing, registered after its first keystroke.
    assert_eq!(kind(None, Some((Email, 95))), "email");
    // No report at all: unidentified, as before.
    assert_eq!(kind(None, None), "unknown");
    // A focus reported after the burst started is another field's: not this burst's type.
    assert_eq!(kind(None, Some((Email, 300))), "unknown");
    // Typed by a stale report: the late one may make it more sensitive, never less.
    assert_eq!(kind(Some(Text), Some((Password, 98))), "password");
    assert_eq!(kind(Some(Password), Some((Text, 98))), "password");
    // On time: nothing to refine.
    assert_eq!(kind(Some(Email), None), "email");
}

/// A client on a non-flat session wraps every command in
/// `Target.sendMessageToTarget` and hears answers and events in
/// `Target.receivedMessageFromTarget`. Its navigation, clicks, screenshot, two fields' typing
/// and what the page reports are recorded as for a flat client; a wrapper the browser refuses
/// answers the command it carried.
#[test]
fn a_non_flat_session_is_read_like_a_flat_one() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, "/devtools/browser/b", 0);
    h.recv(1, 1, json!({"method": "Target.attachedToTarget", "params": {"sessionId": "NF", "targetInfo": {"targetId": PAGE, "type": "page", "url": "about:blank", "title": ""}, "waitingForDebugger": false}}));
    let mut outer = 100;
    let mut send = |h: &mut Harness, ms: u64, inner: serde_json::Value| {
        outer += 1;
        h.send(1, ms, json!({"id": outer, "method": "Target.sendMessageToTarget", "params": {"sessionId": "NF", "message": inner.to_string()}}));
        h.recv(1, ms + 1, json!({"id": outer, "result": {}}));
    };
    let answer = |h: &mut Harness, ms: u64, inner: serde_json::Value| {
        h.recv(1, ms, json!({"method": "Target.receivedMessageFromTarget", "params": {"sessionId": "NF", "message": inner.to_string(), "targetId": PAGE}}));
    };
    send(
        &mut h,
        10,
        json!({"id": 1, "method": "Page.navigate", "params": {"url": "https://a.test/form?token=x"}}),
    );
    answer(
        &mut h,
        40,
        json!({"id": 1, "result": {"frameId": PAGE, "loaderId": "L1"}}),
    );
    answer(
        &mut h,
        41,
        json!({"method": "Page.frameNavigated", "params": {"frame": {"id": PAGE, "loaderId": "L1", "url": "https://a.test/form"}, "type": "Navigation"}}),
    );
    // Before any typing: the screenshot is kept.
    send(
        &mut h,
        50,
        json!({"id": 2, "method": "Page.captureScreenshot", "params": {}}),
    );
    answer(
        &mut h,
        60,
        json!({"id": 2, "result": {"data": "aGVsbG8gd29ybGQ="}}),
    );
    let mut inner = 10;
    for (i, (x, value)) in [(20, "AlphaField1"), (80, "BetaField2")].iter().enumerate() {
        let ms = 100 + i as u64 * 300;
        for (k, kind) in ["mousePressed", "mouseReleased"].iter().enumerate() {
            inner += 1;
            send(
                &mut h,
                ms + k as u64,
                json!({"id": inner, "method": "Input.dispatchMouseEvent", "params": {"type": kind, "x": x, "y": 20, "button": "left", "clickCount": 1}}),
            );
            answer(
                &mut h,
                ms + 5 + k as u64,
                json!({"id": inner, "result": {}}),
            );
        }
        for (j, ch) in value.chars().enumerate() {
            let at = ms + 10 + j as u64 * 5;
            inner += 1;
            send(
                &mut h,
                at,
                json!({"id": inner, "method": "Input.dispatchKeyEvent", "params": {"type": "keyDown", "key": ch.to_string(), "text": ch.to_string()}}),
            );
            answer(&mut h, at + 2, json!({"id": inner, "result": {}}));
            inner += 1;
            send(
                &mut h,
                at + 3,
                json!({"id": inner, "method": "Input.dispatchKeyEvent", "params": {"type": "keyUp", "key": ch.to_string()}}),
            );
            answer(&mut h, at + 4, json!({"id": inner, "result": {}}));
        }
        answer(
            &mut h,
            ms + 200,
            json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"type": "string", "value": format!("live {value}")}], "executionContextId": 1, "timestamp": 1.0 + i as f64}}),
        );
    }
    // After typing: the screenshot is withheld, and says so.
    send(
        &mut h,
        900,
        json!({"id": 90, "method": "Page.captureScreenshot", "params": {}}),
    );
    answer(
        &mut h,
        910,
        json!({"id": 90, "result": {"data": "aGVsbG8gd29ybGQ="}}),
    );
    // A failed request the page reports through the wrapper.
    answer(
        &mut h,
        920,
        json!({"method": "Network.requestWillBeSent", "params": {"requestId": "R1", "request": {"url": "https://a.test/api?token=x", "method": "POST"}, "type": "Fetch", "timestamp": 1.0}}),
    );
    answer(
        &mut h,
        930,
        json!({"method": "Network.loadingFailed", "params": {"requestId": "R1", "errorText": "net::ERR_CONNECTION_REFUSED", "type": "Fetch", "timestamp": 1.1}}),
    );
    // The browser refuses a wrapper (the session is gone): the command it carried has failed.
    h.send(1, 950, json!({"id": 500, "method": "Target.sendMessageToTarget", "params": {"sessionId": "NF", "message": json!({"id": 91, "method": "Page.reload", "params": {}}).to_string()}}));
    h.recv(
        1,
        951,
        json!({"id": 500, "error": {"code": -32602, "message": "No session with given id"}}),
    );
    h.close(1, SessionEnd::ClientClosed, 5000);

    let navs = h.actions("Page.navigate");
    assert_eq!(navs.len(), 1, "{navs:?}");
    assert_eq!(navs[0].payload["url"], "https://a.test/form");
    assert_eq!(navs[0].duration_ms, Some(30));
    assert!(navs[0].target.is_some());
    assert_eq!(h.actions("click").len(), 2);
    let shots = h.actions("Page.captureScreenshot");
    assert_eq!(shots.len(), 2, "{shots:?}");
    assert_eq!(shots[0].artifacts.len(), 1, "{shots:?}");
    assert!(shots[1].artifacts.is_empty());
    assert!(shots[1].payload["detail"]["screenshotWithheld"].is_string());
    let typing = h.actions("type");
    let chars: Vec<&serde_json::Value> = typing
        .iter()
        .map(|t| &t.payload["input"]["chars"])
        .collect();
    assert_eq!(chars, [&json!(11), &json!(10)], "{typing:?}");
    let console = h.of_kind("console");
    assert_eq!(console.len(), 2, "{console:?}");
    assert!(console.iter().all(|c| c.payload["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("live ${TYPED_"))));
    let failed = h.of_kind("network");
    assert_eq!(failed.len(), 1, "{failed:?}");
    let reload = h.actions("Page.reload");
    assert_eq!(reload.len(), 1);
    assert_eq!(reload[0].status.as_deref(), Some("error"));
    let text = h.journal_text();
    assert!(!text.contains("Field") && !text.contains("token"), "{text}");
}

/// Wrappers inside wrappers are read up to four deep, on the session the innermost names;
/// deeper nesting, a wrapper naming no session and a message that is no JSON are ignored.
#[test]
fn nested_wrappers_are_read_within_bounds() {
    let nest = |inner: serde_json::Value, levels: usize, id: u64| {
        let mut m = inner.to_string();
        for level in 0..levels {
            m = json!({"id": id * 10 + level as u64, "method": "Target.sendMessageToTarget",
                "params": {"sessionId": format!("S{level}"), "message": m}})
            .to_string();
        }
        m
    };
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, "/devtools/browser/b", 0);
    for (id, levels) in [(1u64, 2usize), (2, 4), (3, 5), (4, 9)] {
        let inner = json!({"id": id, "method": "Page.navigate", "params": {"url": format!("https://a.test/{levels}")}});
        h.frame(1, Direction::ToBrowser, 10 * id, &nest(inner, levels, id));
        // The innermost wrapper, the first made, names S0.
        let answer = json!({"id": id, "result": {"frameId": "F", "loaderId": format!("L{id}")}});
        let wrapped = json!({"method": "Target.receivedMessageFromTarget",
            "params": {"sessionId": "S0", "message": answer.to_string()}});
        h.recv(1, 10 * id + 5, wrapped);
    }
    h.send(1, 100, json!({"id": 9, "method": "Target.sendMessageToTarget", "params": {"message": "{\"id\":1,\"method\":\"Page.reload\"}"}}));
    h.send(1, 101, json!({"id": 10, "method": "Target.sendMessageToTarget", "params": {"sessionId": "S0", "message": "not json"}}));
    h.recv(1, 102, json!({"method": "Target.receivedMessageFromTarget", "params": {"sessionId": "S0", "message": "[1,"}}));
    h.close(1, SessionEnd::ClientClosed, 5000);
    let urls: Vec<String> = h
        .actions("Page.navigate")
        .iter()
        .map(|r| format!("{} {}", r.payload["url"], r.status.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        urls,
        ["\"https://a.test/2\" ok", "\"https://a.test/4\" ok"],
        "{urls:?}"
    );
    assert!(h.actions("Page.reload").is_empty());
}

/// A harness whose reader has the direct reader's way in: the requests it sends, and the
/// sender of replies and page-agent reports.
fn with_agent() -> (
    Harness,
    tokio::sync::mpsc::Sender<crate::direct::verify::VerifyReply>,
    tokio::sync::mpsc::Receiver<crate::direct::verify::VerifyRequest>,
) {
    let mut h = Harness::new(TrafficOptions::default());
    let (requests, asked) = tokio::sync::mpsc::channel(64);
    let (reply, replies) = tokio::sync::mpsc::channel(64);
    let pages = h.observer.pages.clone();
    h.observer = TrafficReader::new(pages, TrafficOptions::default()).with_verifier(Verifier {
        requests,
        replies,
        wait: Duration::from_secs(3),
    });
    (h, reply, asked)
}

/// The page agent's report of `moment` at `ms` on [`PAGE`].
fn agent_saw(
    tx: &tokio::sync::mpsc::Sender<crate::direct::verify::VerifyReply>,
    moment: crate::direct::locate::Moment,
    ms: u64,
    locator: serde_json::Value,
) {
    agent_reported(tx, moment, ms, json!({"target": locator}));
}

/// The page agent's report of `moment` at `ms` on [`PAGE`], its members (`target`, `hover`,
/// `options`) as the agent writes them.
fn agent_reported(
    tx: &tokio::sync::mpsc::Sender<crate::direct::verify::VerifyReply>,
    moment: crate::direct::locate::Moment,
    ms: u64,
    report: serde_json::Value,
) {
    let l = crate::direct::locate::Located {
        target_id: PAGE.into(),
        at: t(ms),
        moment,
        locator: serde_json::from_value(report["target"].clone()).unwrap(),
        hover: serde_json::from_value(report["hover"].clone()).unwrap(),
        options: serde_json::from_value(report["options"].clone()).unwrap(),
        blocked: report["blocked"].as_bool().unwrap_or(false),
        count: report["count"].as_u64(),
        continued: report["continued"].as_bool().unwrap_or(false),
    };
    tx.try_send(crate::direct::verify::VerifyReply::Located(l))
        .unwrap();
}

#[test]
fn a_click_that_needed_a_hover_records_what_to_hover() {
    use crate::direct::locate::Moment::Hit;
    let (mut h, agent, _asked) = with_agent();
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    agent_reported(
        &agent,
        Hit,
        101,
        json!({"target": {"role": "link", "name": "Pricing", "exact": true},
               "hover": {"role": "button", "name": "Products", "exact": true}}),
    );
    h.tick(99);
    h.send(1, 100, json!({"id": 1, "method": "Input.dispatchMouseEvent", "params": {"type": "mousePressed", "x": 10, "y": 20, "button": "left", "clickCount": 1}}));
    h.recv(1, 104, json!({"id": 1, "result": {}}));
    let clicks = h.actions("click");
    assert_eq!(clicks.len(), 1);
    assert_eq!(
        clicks[0].payload["hover"],
        json!({"role": "button", "name": "Products", "exact": true})
    );
    assert_eq!(
        clicks[0].payload["target"],
        json!({"role": "link", "name": "Pricing", "exact": true})
    );
}

#[test]
fn a_select_changed_by_a_clients_script_is_a_step_with_the_options_label() {
    use crate::direct::locate::Moment::Chose;
    let (mut h, agent, _asked) = with_agent();
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.sanitizer
        .register_secret("HOME_ADDRESS", "12 Hidden Lane")
        .unwrap();
    // Playwright's selectOption: one script call, during which the select changes.
    h.send(1, 100, json!({"id": 1, "method": "Runtime.callFunctionOn", "params": {"functionDeclaration": "(e) => e", "objectId": "o"}}));
    agent_reported(
        &agent,
        Chose,
        102,
        json!({"target": {"label": "Colour", "exact": true}, "options": ["Blue"]}),
    );
    h.tick(103);
    // A page's own script changing a select, long after any command: not a step.
    agent_reported(
        &agent,
        Chose,
        5_000,
        json!({"target": {"label": "Colour"}, "options": ["Red"]}),
    );
    h.tick(5_001);
    // A choice whose label is a secret: the step is there, its label is not.
    h.send(1, 6_000, json!({"id": 2, "method": "Runtime.callFunctionOn", "params": {"functionDeclaration": "(e) => e", "objectId": "o"}}));
    agent_reported(
        &agent,
        Chose,
        6_001,
        json!({"target": {"label": "Ship to"}, "options": ["12 Hidden Lane"]}),
    );
    h.tick(6_002);
    let selects = h.actions("select");
    assert_eq!(selects.len(), 2, "{selects:?}");
    assert_eq!(
        selects[0].payload["target"],
        json!({"label": "Colour", "exact": true})
    );
    assert_eq!(selects[0].payload["options"], json!(["Blue"]));
    assert_eq!(selects[1].payload["target"]["replayable"], false);
    assert!(selects[1].payload.get("options").is_none());
    assert!(!h.journal_text().contains("Hidden Lane"));
}

#[test]
fn files_a_clients_script_sets_are_a_step_of_their_own() {
    use crate::direct::locate::Moment::Files;
    let (mut h, agent, _asked) = with_agent();
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    // Playwright over a remote connection: the files are set in the page by a script call.
    h.send(1, 100, json!({"id": 1, "method": "Runtime.callFunctionOn", "params": {"functionDeclaration": "(e) => e", "objectId": "o"}}));
    agent_reported(
        &agent,
        Files,
        102,
        json!({"target": {"label": "Receipt", "exact": true}, "count": 2}),
    );
    h.tick(103);
    // The page's own script, long after any command: not a step.
    agent_reported(
        &agent,
        Files,
        9_000,
        json!({"target": {"label": "Receipt"}, "count": 1}),
    );
    h.tick(9_001);
    let files = h.actions("files");
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        files[0].payload["target"],
        json!({"label": "Receipt", "exact": true})
    );
    assert_eq!(files[0].payload["detail"]["files"], 2);
    assert!(h.actions("DOM.setFileInputFiles").is_empty());
}

#[test]
fn a_press_the_page_never_received_says_so() {
    use crate::direct::locate::Moment::Hit;
    let (mut h, agent, _asked) = with_agent();
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    let press = |id: u64| json!({"id": id, "method": "Input.dispatchMouseEvent", "params": {"type": "mousePressed", "x": 10, "y": 20, "button": "left", "clickCount": 1}});
    // A client's hit-target check stopped the first press on the window; it retried.
    h.send(1, 100, press(1));
    agent_reported(
        &agent,
        Hit,
        101,
        json!({"target": {"testId": "behind"}, "blocked": true}),
    );
    h.recv(1, 104, json!({"id": 1, "result": {}}));
    h.send(1, 200, press(2));
    agent_reported(&agent, Hit, 201, json!({"target": {"testId": "tile"}}));
    h.recv(1, 204, json!({"id": 2, "result": {}}));
    h.tick(205);
    let clicks = h.actions("click");
    assert_eq!(clicks.len(), 2, "{clicks:?}");
    assert_eq!(clicks[0].payload["received"], false);
    assert!(clicks[1].payload.get("received").is_none());
    assert_eq!(clicks[1].payload["target"], json!({"testId": "tile"}));
}

#[test]
fn a_file_choice_records_its_input_and_never_a_file_name() {
    use crate::direct::locate::Moment::Files;
    let (mut h, agent, _asked) = with_agent();
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.send(1, 100, json!({"id": 1, "method": "DOM.setFileInputFiles", "params": {"files": ["/home/ada/private-receipt.pdf"], "objectId": "o"}}));
    agent_reported(
        &agent,
        Files,
        101,
        json!({"target": {"label": "Receipt", "exact": true}}),
    );
    h.recv(1, 103, json!({"id": 1, "result": {}}));
    h.tick(104);
    // Another, with no report: written after its wait, not replayable.
    h.send(1, 200, json!({"id": 2, "method": "DOM.setFileInputFiles", "params": {"files": ["/tmp/a", "/tmp/b"], "objectId": "o"}}));
    h.recv(1, 203, json!({"id": 2, "result": {}}));
    h.tick(1_300);
    let files = h.actions("DOM.setFileInputFiles");
    assert_eq!(files.len(), 2, "{files:?}");
    assert_eq!(
        files[0].payload["target"],
        json!({"label": "Receipt", "exact": true})
    );
    assert_eq!(files[0].payload["detail"]["files"], 1);
    assert_eq!(
        files[1].payload["target"],
        json!({"replayable": false, "why": "the relay's page agent saw no file input change"})
    );
    assert_eq!(files[1].payload["detail"]["files"], 2);
    assert!(!h.journal_text().contains("private-receipt"));
}

#[test]
fn a_click_waits_for_what_it_hit_and_is_written_without_it_past_its_wait() {
    use crate::direct::locate::Moment::Hit;
    let (mut h, agent, _asked) = with_agent();
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    let press = |id: u64| json!({"id": id, "method": "Input.dispatchMouseEvent", "params": {"type": "mousePressed", "x": 10, "y": 20, "button": "left", "clickCount": 1}});
    // Answered before the agent's report was read: the record waits for it.
    h.send(1, 100, press(1));
    h.recv(1, 105, json!({"id": 1, "result": {}}));
    assert!(h.actions("click").is_empty());
    assert_eq!(h.observer.holding(), 1);
    // A report on another page, or outside the click's window, is not its.
    agent_saw(&agent, Hit, 500, json!({"css": "#later"}));
    agent_saw(
        &agent,
        Hit,
        103,
        json!({"role": "button", "name": "Sign in"}),
    );
    h.tick(106);
    let clicks = h.actions("click");
    assert_eq!(clicks.len(), 1, "{clicks:?}");
    assert_eq!(
        clicks[0].payload["target"],
        json!({"role": "button", "name": "Sign in"})
    );
    assert_eq!(clicks[0].payload["point"]["x"], 10.0);
    // A report read before the answer: written at once.
    agent_saw(&agent, Hit, 201, json!({"testId": "menu"}));
    h.tick(150);
    h.send(1, 200, press(2));
    h.recv(1, 204, json!({"id": 2, "result": {}}));
    assert_eq!(
        h.actions("click")[1].payload["target"],
        json!({"testId": "menu"})
    );
    // No report (a frame the agent cannot read): written after its wait, not replayable.
    h.send(1, 300, press(3));
    h.recv(1, 305, json!({"id": 3, "result": {}}));
    h.tick(900);
    assert_eq!(h.actions("click").len(), 2);
    h.tick(1306);
    let clicks = h.actions("click");
    assert_eq!(clicks.len(), 3);
    assert_eq!(
        clicks[2].payload["target"],
        json!({"replayable": false, "why": "the relay's page agent saw no element receive the click"})
    );
    assert_eq!(h.observer.holding(), 0);
    // The pipeline stops: a click still waiting is written at once.
    h.send(1, 1400, press(4));
    h.recv(1, 1405, json!({"id": 4, "result": {}}));
    assert_eq!(h.observer.holding(), 1);
    h.handle(TapEvent::Finish { at: t(1406) });
    let clicks = h.actions("click");
    assert_eq!(clicks.len(), 4);
    assert_eq!(clicks[3].payload["target"]["replayable"], false);
    assert_eq!(h.observer.holding(), 0);
}

#[test]
fn a_typing_step_names_its_variable_and_where_its_text_went() {
    use crate::direct::locate::Moment::Typed;
    let (mut h, agent, mut asked) = with_agent();
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.sanitizer
        .register_secret("ACCOUNT_PASSWORD", "hunter2-Secret")
        .unwrap();
    let mut id = 0;
    let mut step = |h: &mut Harness, ms: u64, text: &str| {
        id += 1;
        h.send(
            1,
            ms,
            json!({"id": id, "method": "Input.insertText", "params": {"text": text}}),
        );
        h.recv(1, ms + 2, json!({"id": id, "result": {}}));
        // A command that ends the burst.
        id += 1;
        h.send(1, ms + 10, json!({"id": id, "method": "Input.dispatchKeyEvent", "params": {"type": "keyDown", "key": "Tab"}}));
        h.recv(1, ms + 11, json!({"id": id, "result": {}}));
    };
    agent_saw(&agent, Typed, 99, json!({"label": "Password"}));
    step(&mut h, 100, "hunter2-Secret");
    agent_saw(
        &agent,
        Typed,
        1_001,
        json!({"role": "textbox", "name": "Email"}),
    );
    step(&mut h, 1_000, "someone@example.com");
    agent_saw(&agent, Typed, 2_001, json!({"placeholder": "Code"}));
    step(&mut h, 2_000, "ab");
    // The page echoed the earlier text into the next field's label before typing reached it.
    agent_saw(
        &agent,
        Typed,
        3_001,
        json!({"label": "Hello someone@example.com"}),
    );
    step(&mut h, 3_000, "fourth-text");
    // Typed where the agent saw nothing.
    step(&mut h, 4_000, "fifth-text");
    // Every step asked for its verdict; none comes: written after the wait.
    let mut asked_for = 0;
    while asked.try_recv().is_ok() {
        asked_for += 1;
    }
    assert_eq!(asked_for, 5);
    h.tick(60_000);
    // Held steps are written as their wait ends, in any order: read in the format's order.
    let mut typing = h.actions("type");
    typing.sort_by_key(|r| r.started_at_ms);
    assert_eq!(typing.len(), 5, "{typing:?}");
    let input = |i: usize| typing[i].payload["input"]["variable"].clone();
    let target = |i: usize| typing[i].payload["target"].clone();
    assert_eq!(input(0), "ACCOUNT_PASSWORD");
    assert_eq!(target(0), json!({"label": "Password"}));
    let email = input(1);
    assert!(email.as_str().unwrap().starts_with("TYPED_"), "{email}");
    assert_eq!(target(1), json!({"role": "textbox", "name": "Email"}));
    // Too short to be masked: a number of its own all the same.
    let short = input(2);
    assert!(
        short.as_str().unwrap().starts_with("TYPED_") && short != email,
        "{short}"
    );
    assert_eq!(target(2), json!({"placeholder": "Code"}));
    assert_eq!(
        target(3),
        json!({"replayable": false, "why": "the element's name contains typed text"})
    );
    assert_eq!(
        target(4),
        json!({"replayable": false, "why": "the relay's page agent did not see where the text went"})
    );
    let journal = h.journal_text();
    for literal in [
        "hunter2-Secret",
        "someone@example.com",
        "fourth-text",
        "fifth-text",
    ] {
        assert!(!journal.contains(literal), "{literal} in {journal}");
    }
}

#[test]
fn typing_a_registered_value_whole_names_its_burst_for_the_screenshot_veto() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    h.sanitizer
        .register_secret("ACCOUNT_ID", "Acct-5589-Planted")
        .unwrap();
    let type_then_tab = |h: &mut Harness, id: u64, ms: u64, text: &str| {
        h.send(
            1,
            ms,
            json!({"id": id, "method": "Input.insertText", "params": {"text": text}}),
        );
        h.recv(1, ms + 2, json!({"id": id, "result": {}}));
        h.send(1, ms + 10, json!({"id": id + 1, "method": "Input.dispatchKeyEvent", "params": {"type": "keyDown", "key": "Tab"}}));
        h.recv(1, ms + 11, json!({"id": id + 1, "result": {}}));
    };
    // Text that is not a registered value whole: nothing named.
    type_then_tab(&mut h, 1, 100, "Acct-5589");
    assert!(!h.observer.pages.named_value_shown());
    type_then_tab(&mut h, 3, 200, "Acct-5589-Planted");
    assert!(h.observer.pages.named_value_shown());
    // A fresh document: no longer shown.
    h.recv(1, 300, json!({"method": "Page.frameStartedNavigating", "params": {"frameId": PAGE, "url": "https://x/", "loaderId": "L", "navigationType": "differentDocument"}}));
    h.recv(1, 301, json!({"method": "Page.frameNavigated", "params": {"frame": {"id": PAGE, "url": "https://x/", "loaderId": "L"}, "type": "Navigation"}}));
    assert!(!h.observer.pages.named_value_shown());
}

/// `text` with every `${TYPED_<n>}` read as `${TYPED}`: which number a literal gets depends on
/// when steps are written.
fn typed_shape(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${TYPED_") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "${TYPED_".len()..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with('}') {
            out.push_str("${TYPED}");
            rest = &after[digits + 1..];
        } else {
            out.push_str("${TYPED_");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Types `text` into PAGE at `ms` as a client fills one field: a focus by script (which ends the
/// burst before), then one insertion. `field`: what the page agent reports of the field (none:
/// no observer).
fn fill_one(h: &mut Harness, id: u64, ms: u64, text: &str, field: Option<(u64, u64, u64)>) {
    use crate::pages::veto::{FieldFacts, FieldKind};
    h.send(
        1,
        ms,
        json!({"id": id, "method": "Runtime.callFunctionOn", "params": {"functionDeclaration": "function () { this.focus(); }"}}),
    );
    h.recv(1, ms + 1, json!({"id": id, "result": {}}));
    if let Some((field, group, from)) = field {
        let facts = FieldFacts { field, group, from };
        let kind = Some(FieldKind::Input(cdp_sanitize::InputType::OneTimeCode));
        h.observer
            .pages
            .focused_field_at(PAGE, kind, facts, t(ms + 2));
    }
    h.send(
        1,
        ms + 5,
        json!({"id": id + 1000, "method": "Input.insertText", "params": {"text": text}}),
    );
    h.recv(1, ms + 6, json!({"id": id + 1000, "result": {}}));
}

#[test]
fn a_code_typed_box_by_box_into_one_group_of_fields_is_one_literal() {
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    let code = "757525";
    // Six boxes of one row (group 7), one fill each.
    for (i, digit) in code.chars().enumerate() {
        let i = i as u64;
        fill_one(
            &mut h,
            10 + i,
            100 + i * 50,
            &digit.to_string(),
            Some((i + 1, 7, 0)),
        );
        if i == 2 {
            assert_eq!(
                typed_shape(h.sanitizer.text("code 757").as_str()),
                "code 757",
                "three: not yet"
            );
        }
        if i == 3 {
            assert_eq!(
                typed_shape(h.sanitizer.text("code 7575").as_str()),
                "code ${TYPED}"
            );
        }
    }
    assert_eq!(
        typed_shape(h.sanitizer.text("code 757525 expired").as_str()),
        "code ${TYPED} expired"
    );
    assert_eq!(
        typed_shape(
            h.sanitizer
                .url("https://a.example/api/verify/757525")
                .as_str()
        ),
        "https://a.example/api/verify/${TYPED}"
    );
    // Boxes the page moves focus through (no form, no row: `from` names the box before).
    for (i, digit) in "4821".chars().enumerate() {
        let i = i as u64;
        let from = if i == 0 { 0 } else { 20 + i - 1 };
        fill_one(
            &mut h,
            30 + i,
            1000 + i * 50,
            &digit.to_string(),
            Some((20 + i, 0, from)),
        );
    }
    assert_eq!(
        typed_shape(h.sanitizer.text("pin 4821").as_str()),
        "pin ${TYPED}"
    );
    // Short typing into fields of no group, or of two groups: never glued.
    fill_one(&mut h, 40, 2000, "ok", Some((40, 0, 0)));
    fill_one(&mut h, 41, 2050, "go", Some((41, 0, 0)));
    fill_one(&mut h, 42, 2100, "12", Some((42, 8, 0)));
    fill_one(&mut h, 43, 2150, "34", Some((43, 9, 0)));
    for text in ["okgo", "go12", "1234"] {
        assert_eq!(h.sanitizer.text(text).as_str(), text);
    }
    h.tick(60_000);
    let steps = h.actions("type");
    assert_eq!(steps.len(), 14, "one step per fill");
    assert!(steps
        .iter()
        .all(|s| s.payload["input"]["chars"].as_u64() <= Some(2)));
}

#[test]
fn a_group_of_short_steps_ends_at_a_long_step_a_new_document_or_after_a_minute() {
    use crate::pages::veto::Commit;
    let mut h = Harness::new(TrafficOptions::default());
    h.open(1, &format!("/devtools/page/{PAGE}"), 0);
    // Without the relay's observer nothing is known of fields: the page is the group.
    fill_one(&mut h, 1, 100, "ab", None);
    fill_one(&mut h, 2, 200, "cd", None);
    assert_eq!(typed_shape(h.sanitizer.text("abcd").as_str()), "${TYPED}");
    // A long step is protected on its own, and glues at most its short start to the group.
    fill_one(&mut h, 3, 300, "Longer-Text", None);
    assert_eq!(
        typed_shape(h.sanitizer.text("Longer-Text").as_str()),
        "${TYPED}"
    );
    fill_one(&mut h, 4, 400, "ef", None);
    fill_one(&mut h, 5, 500, "gh", None);
    assert_eq!(
        typed_shape(h.sanitizer.text("cdefgh").as_str()),
        "cd${TYPED}"
    );
    // A new document ends the group.
    fill_one(&mut h, 6, 600, "ij", None);
    h.observer
        .pages
        .committed(PAGE, "L2", Commit::NavigateReply, t(650));
    fill_one(&mut h, 7, 700, "kl", None);
    assert_eq!(
        typed_shape(h.sanitizer.text("efghij").as_str()),
        "${TYPED}",
        "before the navigation"
    );
    assert_eq!(typed_shape(h.sanitizer.text("ijkl").as_str()), "ijkl");
    // So does a minute without a step.
    fill_one(&mut h, 8, 800, "mn", None);
    fill_one(
        &mut h,
        9,
        800 + groups::IDLE.as_millis() as u64 + 100,
        "op",
        None,
    );
    assert_eq!(
        typed_shape(h.sanitizer.text("klmnop").as_str()),
        "${TYPED}op"
    );
}
