//! The page model: the same events leave the same page state whichever observer read them, and
//! the decisions both observers feed — who records a page event, which failure waits for a
//! frame — are made once.

use super::*;
use crate::direct::sessions::Sessions;
use crate::pages::veto::{FieldFacts, FieldKind, Withheld};
use crate::traffic::{TrafficOptions, TrafficReader};
use crate::Emit;
use cdp_evidence::{EvidenceConfig, Record, RecordKind, Store};
use cdp_relay_tap::tap::{Direction, Payload, TapEvent};
use cdp_sanitize::InputType;
use serde_json::{json, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const PAGE: &str = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";
const UNKNOWN: FieldKind = FieldKind::Input(InputType::Unknown);

fn t(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms)
}

fn timing() -> FrameTiming {
    FrameTiming {
        failure_debounce: Duration::from_millis(250),
        after_click: Duration::from_millis(300),
        cooldown: Duration::from_secs(1),
    }
}

/// What a browser says on a flattened connection, as both a client (through the relay, to the
/// traffic reader) and the relay's own observer receive it: a page attaches, is renamed,
/// navigates to a fresh document, and reports failures, a warning and an exception.
fn browser_says() -> Vec<(u64, Value)> {
    let s = |mut m: Value| {
        m["sessionId"] = json!("S1");
        m
    };
    vec![
        (
            0,
            json!({"method": "Target.attachedToTarget", "params": {"sessionId": "S1", "targetInfo": {"targetId": PAGE, "type": "page", "title": "New Tab", "url": "about:blank", "browserContextId": "C0FFEE0C0FFEE0C0FFEE0C0FFEE0C0FF"}, "waitingForDebugger": false}}),
        ),
        (
            10,
            json!({"method": "Target.targetInfoChanged", "params": {"targetInfo": {"targetId": PAGE, "type": "page", "title": "Sign in", "url": "https://shop.test/login?next=%2F"}}}),
        ),
        (
            20,
            s(
                json!({"method": "Page.frameStartedNavigating", "params": {"frameId": PAGE, "url": "https://shop.test/login?next=%2F", "loaderId": "L1", "navigationType": "differentDocument"}}),
            ),
        ),
        (
            30,
            s(
                json!({"method": "Page.frameNavigated", "params": {"frame": {"id": PAGE, "url": "https://shop.test/login?next=%2F", "loaderId": "L1"}, "type": "Navigation"}}),
            ),
        ),
        // A subframe's commit is not the page's.
        (
            35,
            s(
                json!({"method": "Page.frameNavigated", "params": {"frame": {"id": "SUB", "parentId": PAGE, "url": "https://ads.test/x", "loaderId": "L9"}, "type": "Navigation"}}),
            ),
        ),
        (
            40,
            s(
                json!({"method": "Network.requestWillBeSent", "params": {"requestId": "R1", "request": {"url": "https://api.shop.test/session?token=abc123", "method": "POST"}, "type": "Fetch", "timestamp": 10.0}}),
            ),
        ),
        (
            50,
            s(
                json!({"method": "Network.loadingFailed", "params": {"requestId": "R1", "timestamp": 10.25, "type": "Fetch", "errorText": "net::ERR_CONNECTION_REFUSED", "canceled": false}}),
            ),
        ),
        (
            60,
            s(
                json!({"method": "Network.requestWillBeSent", "params": {"requestId": "R2", "request": {"url": "https://shop.test/cart", "method": "GET"}, "type": "XHR", "timestamp": 11.0}}),
            ),
        ),
        (
            70,
            s(
                json!({"method": "Network.responseReceived", "params": {"requestId": "R2", "timestamp": 11.5, "type": "XHR", "response": {"url": "https://shop.test/cart", "status": 503, "statusText": "Service Unavailable"}}}),
            ),
        ),
        (
            71,
            s(
                json!({"method": "Network.loadingFinished", "params": {"requestId": "R2", "timestamp": 11.6}}),
            ),
        ),
        (
            80,
            s(
                json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"type": "string", "value": "cart failed: 503"}], "executionContextId": 1, "timestamp": 1700000000080.0}}),
            ),
        ),
        (
            90,
            s(
                json!({"method": "Runtime.consoleAPICalled", "params": {"type": "warning", "args": [{"type": "string", "value": "slow cart"}], "executionContextId": 1, "timestamp": 1700000000090.0}}),
            ),
        ),
        (
            100,
            s(
                json!({"method": "Log.entryAdded", "params": {"entry": {"source": "network", "level": "error", "text": "Failed to load resource: 503", "timestamp": 1700000000100.0}}}),
            ),
        ),
        (
            110,
            s(
                json!({"method": "Runtime.exceptionThrown", "params": {"timestamp": 1700000000110.0, "exceptionDetails": {"exceptionId": 1, "text": "Uncaught", "lineNumber": 3, "columnNumber": 7, "url": "https://shop.test/app.js?v=2", "exception": {"type": "object", "description": "TypeError: cart is null"}}}}),
            ),
        ),
    ]
}

/// Records as a reader of the journal sees them, without what says which observer wrote them
/// (`tool`), in a stable order.
fn as_read(records: Vec<Record>) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(EvidenceConfig::at(dir.path())).expect("store");
    let run = store.join_session("pages", "relay").expect("run");
    for r in records {
        run.append(r).expect("append");
    }
    let mut read: Vec<Value> = store
        .read_journal(run.id())
        .expect("journal")
        .records
        .into_iter()
        .filter(|r| r.kind != "marker")
        .map(|r| {
            json!({"kind": r.kind, "status": r.status, "startedAt": r.started_at,
                "durationMs": r.duration_ms, "target": r.target, "error": r.error,
                "payload": r.payload})
        })
        .collect();
    read.sort_by_key(|v| v.to_string());
    read
}

fn reported(r: &Record) -> bool {
    matches!(r.kind(), RecordKind::Console(_) | RecordKind::Network(_))
}

fn records_of(emits: Vec<Emit>) -> impl Iterator<Item = Record> {
    emits.into_iter().flat_map(|e| match e {
        Emit::Record(r) | Emit::WithArtifact { record: r, .. } => vec![r],
        Emit::Shared { records, .. } => records,
    })
}

/// The traffic reader fed the browser's messages as tap copies, and the
/// relay's own observer's event handling fed the same messages as if from its own connection,
/// leave the same page: title, URL, main-frame document, veto, and the failures recorded.
#[test]
fn both_observers_fed_the_same_events_leave_the_same_page() {
    let sanitizer = Arc::new(Sanitizer::new());
    let model = || {
        let pages = Arc::new(Pages::new(sanitizer.clone(), true));
        // Typed into before the navigation (the traffic reader reports typing, whoever
        // observes the page): only a fresh document lifts the veto.
        pages.typed_into(PAGE, 1, UNKNOWN, t(5));
        pages
    };

    let passive_pages = model();
    let mut passive = TrafficReader::new(passive_pages.clone(), TrafficOptions::default());
    passive.handle(TapEvent::Opened {
        conn: 1,
        path: "/devtools/browser/3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44".into(),
        at: t(0),
    });
    for (ms, m) in browser_says() {
        passive.handle(TapEvent::Frame {
            conn: 1,
            dir: Direction::ToClient,
            at: t(ms),
            payload: Payload::text(m.to_string()),
        });
    }
    let passive_records: Vec<Record> = records_of(passive.take().emits).filter(reported).collect();

    let active_pages = model();
    active_pages.start_observing(timing());
    let mut sessions = Sessions::new(256, Duration::from_millis(100));
    let mut active_records = Vec::new();
    for (ms, m) in browser_says() {
        sessions.event(&active_pages, &m.to_string(), t(ms));
        let work = sessions.take();
        for s in &work.setup {
            // Its setup on the page succeeds at once.
            sessions.ready(&active_pages, s);
        }
        active_records.extend(records_of(work.emits));
    }
    assert!(active_pages.covered(PAGE));
    // Its failures wait for the frame it takes next; the frame carries them.
    let want = active_pages.unobserve(PAGE).expect("a frame wanted");
    assert_eq!(want.after, [After::Failure]);
    active_records.extend(want.group);

    let at = t(5_000);
    let state = passive_pages.state(PAGE, at);
    assert_eq!(state, active_pages.state(PAGE, at));
    assert_eq!(
        state,
        PageState {
            title: Some("Sign in".into()),
            url: Some("https://shop.test/login?next=%2F".into()),
            document: Some(("L1".into(), true)),
            veto: Ok(()),
        }
    );
    let (passive_read, active_read) = (as_read(passive_records), as_read(active_records));
    assert_eq!(passive_read, active_read);
    let kinds: Vec<(&str, &str)> = passive_read
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap_or_default(),
                r["status"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    // Two failed requests, a console error, a warning and an exception; Chromium's restating
    // `Log` line of the 503 is not a failure of its own.
    assert_eq!(kinds.len(), 5, "{passive_read:#?}");
    assert_eq!(kinds.iter().filter(|k| k.0 == "network").count(), 2);
    assert_eq!(kinds.iter().filter(|k| k.1 == "error").count(), 4);
    let text = serde_json::to_string(&passive_read).expect("json");
    assert!(
        text.contains("\"title\":\"Sign in\"") && text.contains("https://shop.test/login\""),
        "records name the page as it is now: {text}"
    );
    assert!(!text.contains("abc123") && !text.contains(PAGE), "{text}");
}

/// The observers disagreed about a navigation of a page they had no target info for: the
/// traffic reader recorded it, the relay's own dropped it. The model records it (the safe
/// side: records then name the URL the page shows rather than nothing but its handle); the
/// page is tracked like any other, within the table's bound.
#[test]
fn a_navigation_of_a_page_nothing_was_known_of_names_its_url() {
    let pages = Pages::new(Arc::new(Sanitizer::new()), true);
    pages.navigated(PAGE, "https://shop.test/pay?card=4111");
    let target = pages.target(PAGE);
    let v = serde_json::to_value(&target).expect("json");
    assert_eq!(v["url"], "https://shop.test/pay", "{v}");
    assert!(v["targetId"]
        .as_str()
        .is_some_and(|h| h.starts_with("target:")));
    assert_eq!(
        pages.state(PAGE, t(0)).url.as_deref(),
        Some("https://shop.test/pay?card=4111")
    );
    // An empty URL (a commit Chromium reports without one) changes nothing.
    pages.navigated(PAGE, "");
    assert_eq!(
        pages.state(PAGE, t(0)).url.as_deref(),
        Some("https://shop.test/pay?card=4111")
    );

    // Through the traffic reader, on a client connected to the page's own endpoint (which
    // never sees the page's target info): the failure after the commit names the page's URL.
    let pages = Arc::new(Pages::new(Arc::new(Sanitizer::new()), true));
    let mut passive = TrafficReader::new(pages.clone(), TrafficOptions::default());
    passive.handle(TapEvent::Opened {
        conn: 1,
        path: format!("/devtools/page/{PAGE}"),
        at: t(0),
    });
    for (ms, m) in [
        (
            10,
            json!({"method": "Page.frameNavigated", "params": {"frame": {"id": PAGE, "url": "https://shop.test/cart", "loaderId": "L1"}, "type": "Navigation"}}),
        ),
        (
            20,
            json!({"method": "Runtime.exceptionThrown", "params": {"timestamp": 1.0, "exceptionDetails": {"text": "Uncaught boom"}}}),
        ),
    ] {
        passive.handle(TapEvent::Frame {
            conn: 1,
            dir: Direction::ToClient,
            at: t(ms),
            payload: Payload::text(m.to_string()),
        });
    }
    let read = as_read(records_of(passive.take().emits).filter(reported).collect());
    assert_eq!(read.len(), 1);
    assert_eq!(
        read[0]["target"]["url"], "https://shop.test/cart",
        "{read:?}"
    );
}

#[test]
fn covering_is_per_page() {
    let pages = Pages::new(Arc::new(Sanitizer::new()), true);
    pages.cover("T1");
    assert!(pages.covered("T1") && !pages.covered("T2"));
    pages.unobserve("T1");
    assert!(!pages.covered("T1"));
    pages.cover("T2");
    pages.unobserve_all();
    assert!(!pages.covered("T2"));
}

fn console_error(text: &str) -> (cdp_evidence::Console, crate::pages::dedup::EventKey) {
    let s = Sanitizer::new();
    let console = cdp_evidence::Console::new(cdp_evidence::ConsoleLevel::Error, s.text(text));
    let key = crate::pages::dedup::EventKey::console(PAGE, "error", 1.0, text);
    (console, key)
}

/// A failure waits for the relay's own observer's next frame of its page when the observer is
/// on the page, whichever observer recorded it; on any other page it is written at once. The
/// traffic reader's failure wakes the relay's observer.
#[test]
fn a_failure_waits_for_the_frame_of_an_observed_page_only() {
    use reports::{By, Reported};
    let pages = Pages::new(Arc::new(Sanitizer::new()), true);
    let (console, key) = console_error("boom");
    // Nobody takes frames: written now.
    let now = pages.report(
        By::Traffic,
        PAGE,
        Some(PAGE),
        Reported::Console(console, key),
        t(1),
    );
    assert!(now.now.is_some());
    assert!(now.failure.is_some(), "a failure for the calls too");

    pages.start_observing(timing());
    pages.observe(PAGE);
    let (console, key) = console_error("boom again");
    let woken = pages.wanted().notified();
    let now = pages.report(
        By::Traffic,
        PAGE,
        Some(PAGE),
        Reported::Console(console, key),
        t(2),
    );
    assert!(now.now.is_none(), "it waits for the frame");
    assert!(now.failure.is_some(), "the calls hear of it at once");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(5), woken)
            .await
            .expect("the relay's observer is woken");
    });
    // A page the observer is not on (or a session the traffic reader cannot tie to a
    // page): written now.
    let (console, key) = console_error("elsewhere");
    assert!(pages
        .report(
            By::Traffic,
            "1/S9",
            None,
            Reported::Console(console, key),
            t(3)
        )
        .now
        .is_some());
    // Letting go hands the waiting failure back, to be written without a frame.
    let want = pages.unobserve(PAGE).expect("wanted");
    assert_eq!(want.group.len(), 1);
    assert!(pages.next_want_due().is_none());
}

/// A page's target may go before the relay's own observer lets go of its session: what it
/// knew of the page goes at once, the failures waiting for a frame stay until the session goes,
/// and then nothing of the page is left (a closed page costs no room in the table).
#[test]
fn a_destroyed_target_keeps_its_waiting_failures_until_the_session_goes() {
    use reports::{By, Reported};
    let pages = Pages::new(Arc::new(Sanitizer::new()), true);
    pages.start_observing(timing());
    pages.learn(&json!({"targetId": PAGE, "type": "page", "title": "Checkout"}));
    pages.observe(PAGE);
    pages.typed_into(PAGE, 1, UNKNOWN, t(0));
    let (console, key) = console_error("boom");
    assert!(pages
        .report(
            By::Direct,
            PAGE,
            Some(PAGE),
            Reported::Console(console, key),
            t(1)
        )
        .now
        .is_none());
    pages.destroyed(PAGE);
    assert_eq!(pages.state(PAGE, t(5_000)).title, None);
    assert_eq!(pages.state(PAGE, t(5_000)).veto, Ok(()));
    let want = pages.unobserve(PAGE).expect("still waiting");
    assert_eq!(want.group.len(), 1);
    assert!(pages.unobserve(PAGE).is_none());
}

/// A typing step the traffic reader decides after its page closed was typed while it was open:
/// the gone page still says which field had focus when, and nothing else, for a while.
#[test]
fn a_closed_page_still_says_which_field_had_focus_for_a_while() {
    let pages = Pages::new(Arc::new(Sanitizer::new()), true);
    let otp = Some(FieldKind::Input(InputType::OneTimeCode));
    let facts = FieldFacts {
        field: 3,
        group: 1,
        from: 0,
    };
    pages.learn(&json!({"targetId": "T2", "type": "page", "title": "Sign in"}));
    pages.focused_field_at("T2", otp, facts, t(100));
    pages.typed_into("T2", 1, UNKNOWN, t(150));
    pages.destroyed("T2");
    assert_eq!(pages.focused_kind_at("T2", t(200)), otp);
    assert_eq!(pages.state("T2", t(5_000)).title, None);
    // A gone page is never pictured; its last focus still withholds (more, never less).
    assert_eq!(
        pages.state("T2", t(5_000)).veto,
        Err(Withheld::SensitiveFocus)
    );
    // Gone longer than it is kept: the next page that goes takes it along.
    let long_ago = std::time::Instant::now().checked_sub(GONE_KEPT + Duration::from_secs(1));
    if let Some(long_ago) = long_ago {
        pages.table().pages.get_mut("T2").expect("kept").gone = Some(long_ago);
        pages.learn(&json!({"targetId": "T3", "type": "page"}));
        pages.destroyed("T3");
        assert_eq!(pages.focused_kind_at("T2", t(200)), None);
        assert!(pages.table().pages.contains_key("T3"));
    }
}

/// A frame wanted is due after its delay and the page's cooldown, waits while the page was
/// just typed into, and is taken once.
#[test]
fn a_frame_is_due_after_quiet_and_taken_once() {
    let pages = Pages::new(Arc::new(Sanitizer::new()), true);
    pages.start_observing(timing());
    pages.observe(PAGE);
    let now_sys = SystemTime::now();
    pages.typed_into(PAGE, 1, FieldKind::Input(InputType::Text), now_sys);
    pages.want_frame(PAGE, After::Navigation, Duration::ZERO);
    let now = std::time::Instant::now();
    assert!(matches!(
        pages.due_frame(PAGE, now, now_sys, false),
        frames::Due::No
    ));
    // Postponed until the page has been quiet.
    let due = pages.next_want_due().expect("still wanted");
    assert!(due >= now + Duration::from_millis(900), "{:?}", due - now);
    let later = now_sys + Duration::from_secs(2);
    let Due::Take(want) = pages.due_frame(PAGE, due, later, false) else {
        panic!("due once quiet");
    };
    assert_eq!(want.after, [After::Navigation]);
    assert_eq!(pages.start_frame(PAGE, later), Ok(()));
    // Taken out: nothing more is due; while it is taken no other is.
    pages.clicked(PAGE);
    assert!(matches!(
        pages.due_frame(PAGE, due + Duration::from_secs(5), later, false),
        Due::No
    ));
    pages.frame_done(PAGE);
    assert!(pages.next_want_due().is_some(), "the click's frame");
    // A sensitive field with focus: the veto says so.
    pages.focused_at(PAGE, Some(FieldKind::Input(InputType::Password)), later);
    assert_eq!(
        pages.start_frame(PAGE, later + Duration::from_millis(1)),
        Err(Withheld::SensitiveFocus)
    );
}

/// A page nothing is known of is named by its handle, made once per sanitizer generation; once
/// its target info is learned, records name what it is.
#[test]
fn a_page_nothing_is_known_of_is_named_by_its_handle_until_it_is_known() {
    let sanitizer = Arc::new(Sanitizer::new());
    let pages = Pages::new(sanitizer.clone(), true);
    let first = pages.target(PAGE).into_value();
    assert_eq!(
        first,
        json!({"targetId": sanitizer.handle(PAGE).into_string()})
    );
    assert_eq!(
        pages.target(PAGE).into_value(),
        first,
        "the same handle again"
    );
    assert!(!first.to_string().contains(PAGE), "{first}");
    sanitizer
        .register_secret("TOKEN", "s3cr3t-value-1234")
        .expect("registered");
    assert_eq!(
        pages.target(PAGE).into_value(),
        first,
        "made again, the same"
    );
    pages.learn(&json!({"targetId": PAGE, "type": "page", "title": "Checkout", "url": "https://shop.test/cart"}));
    let known = pages.target(PAGE).into_value();
    assert_eq!(known["title"], "Checkout", "{known}");
    assert_eq!(known["targetId"], first["targetId"]);
}

/// A failure the journal folds into a count still reaches the tool call it happened during:
/// an agent retrying a failing save hears of every failure, not the first ten.
#[test]
fn repeated_failures_still_reach_their_call() {
    use reports::{By, Reported};
    let pages = Pages::new(Arc::new(Sanitizer::new()), true);
    let calls = crate::calls::ToolCalls::default();
    let call = cdp_evidence::ActionId::at(t(0));
    calls.begin(call.clone(), t(0));
    let s = Sanitizer::new();
    let mut written = 0;
    for i in 0..30u32 {
        let console =
            cdp_evidence::Console::new(cdp_evidence::ConsoleLevel::Error, s.text("save failed"));
        let key =
            crate::pages::dedup::EventKey::console(PAGE, "error", f64::from(i), "save failed");
        let at = t(1 + u64::from(i));
        let told = pages.report(By::Traffic, PAGE, None, Reported::Console(console, key), at);
        // What the reader does with it.
        if let Some(failure) = &told.failure {
            calls.note_failure(failure);
        }
        written += usize::from(told.now.is_some());
    }
    assert!(
        written < 30,
        "the journal folds repeats ({written} written)"
    );
    let facts = calls.facts(&call).expect("the call");
    assert_eq!(facts.failures.len() + facts.more_failures, 30);
}
