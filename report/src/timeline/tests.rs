//! Grouping, folding, failure placement, page naming and ordering.

use super::*;
use serde_json::json;

const T: u64 = 1_773_480_413_000;

fn rec(at: u64, seq: u64, kind: &str, payload: Value) -> Value {
    let ms = T + at;
    json!({
        "actionId": format!("{ms:013}-0000000001-{seq:010}-00000000"),
        "source": "relay", "tool": "cdp", "sessionId": "s",
        "startedAt": cdp_evidence::time::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms)),
        "durationMs": 5, "status": if kind == "network" { "error" } else { "ok" },
        "artifacts": [], "kind": kind, "payload": payload,
    })
}

fn act(at: u64, seq: u64, method: &str) -> Value {
    rec(at, seq, "action", json!({ "method": method }))
}

fn build_values(values: Vec<Value>) -> Timeline {
    let records: Vec<StoredRecord> = values
        .into_iter()
        .map(|v| StoredRecord::from_value(v).unwrap())
        .collect();
    build(&records, Some(T), None)
}

fn labels(tl: &Timeline) -> Vec<String> {
    tl.steps
        .iter()
        .map(|s| {
            let h = s.what.headline(s.repeat);
            format!("{}|{}", h.verb, h.object.unwrap_or_default())
        })
        .collect()
}

#[test]
fn evaluation_storms_fold_into_the_step_they_served_or_a_leading_setup() {
    let mut v = vec![act(0, 1, "Target.attachToTarget")];
    for i in 0..5 {
        v.push(act(1 + i, 2 + i, "Runtime.evaluate"));
    }
    let mut nav = act(10, 10, "Page.navigate");
    nav["payload"]["url"] = json!("https://a.test/");
    v.push(nav);
    for i in 0..38 {
        v.push(act(
            11 + i,
            20 + i,
            if i % 2 == 0 {
                "Runtime.callFunctionOn"
            } else {
                "DOM.querySelector"
            },
        ));
    }
    v.push(rec(
        60,
        80,
        "action",
        json!({"method": "click", "point": {"x": 1, "y": 2}}),
    ));
    let tl = build_values(v);
    assert_eq!(
        labels(&tl),
        vec!["Setup|", "Navigated to|https://a.test/", "Clicked|"]
    );
    assert_eq!(tl.real_steps(), 2);
    assert_eq!(tl.steps[0].number, None);
    let setup = tl.steps[0].fold_counts();
    assert_eq!(setup[&Category::Evaluation], (5, 0));
    assert_eq!(setup[&Category::Attach], (1, 0));
    let nav = tl.steps[1].fold_counts();
    assert_eq!(nav[&Category::Evaluation], (19, 0));
    assert_eq!(nav[&Category::Query], (19, 0));
    assert!(tl.steps[2].plumbing.is_empty());
}

#[test]
fn an_agent_run_of_eighty_evaluations_reads_as_its_ten_steps() {
    let mut v = Vec::new();
    let mut seq = 0;
    let mut at = 0;
    for step in 0..10 {
        seq += 1;
        at += 100;
        let method = [
            "Page.navigate",
            "click",
            "type",
            "press",
            "Page.captureScreenshot",
        ][step % 5];
        v.push(rec(at, seq, "action", json!({"method": method, "point": {"x": 1, "y": 1}, "input": {"chars": 3, "inputType": "text"}})));
        for _ in 0..8 {
            seq += 1;
            at += 3;
            v.push(act(at, seq, "Runtime.callFunctionOn"));
        }
    }
    let tl = build_values(v);
    assert_eq!(tl.real_steps(), 10);
    assert_eq!(
        tl.steps.len(),
        10,
        "no setup step: the run starts with a step"
    );
    assert!(tl.steps.iter().all(|s| s.plumbing.len() == 8));
}

#[test]
fn failures_sit_under_the_step_current_at_their_time_whatever_the_file_order() {
    let v = vec![
        // Written late (a typing burst is emitted when it ends) but started first.
        rec(
            400,
            9,
            "network",
            json!({"method": "GET", "url": "https://a.test/x", "status": 500}),
        ),
        act(100, 1, "Page.reload"),
        rec(50, 8, "console", json!({"level": "error", "text": "early"})),
        act(300, 2, "Page.captureScreenshot"),
        rec(
            300,
            3,
            "console",
            json!({"level": "warning", "text": "same ms as the screenshot"}),
        ),
    ];
    let tl = build_values(v);
    assert_eq!(
        labels(&tl),
        vec!["Setup|", "Reloaded the page|", "Took a screenshot|"]
    );
    let place: Vec<(usize, usize)> = tl.failures.iter().map(|f| (f.id, f.step)).collect();
    // Ordered by time: the early console error goes to a setup step.
    assert_eq!(place, vec![(1, 0), (2, 2), (3, 2)]);
    assert!(tl.failures[0].is_error && !tl.failures[1].is_error && tl.failures[2].is_error);
    assert_eq!(tl.steps[2].failures, vec![1, 2]);
}

#[test]
fn pages_come_from_the_target_or_the_last_known_page_of_that_target() {
    let page = |id: &str, title: &str, url: &str| json!({"targetId": id, "type": "page", "title": title, "url": url});
    let mut a = act(1, 1, "Page.reload");
    a["target"] = page("target:a", "Inbox", "https://mail.test/inbox");
    let mut b = act(2, 2, "Page.reload");
    b["target"] = page("target:b", "Docs", "https://docs.test/");
    let mut c = act(3, 3, "Page.reload");
    c["target"] = json!({"targetId": "target:a"});
    let d = act(4, 4, "Page.reload");
    let mut e = act(5, 5, "Page.reload");
    e["target"] = json!({"targetId": "target:a", "title": "", "url": "https://mail.test/sent"});
    let tl = build_values(vec![a, b, c, d, e]);
    type Shown<'a> = (Option<&'a str>, Option<&'a str>, Option<usize>, bool);
    let pages: Vec<Shown<'_>> = tl
        .steps
        .iter()
        .map(|s| {
            let p = s.page.as_ref().unwrap();
            (p.title.as_deref(), p.url.as_deref(), p.tab, s.page_inferred)
        })
        .collect();
    assert_eq!(
        pages,
        vec![
            (
                Some("Inbox"),
                Some("https://mail.test/inbox"),
                Some(1),
                false
            ),
            (Some("Docs"), Some("https://docs.test/"), Some(2), false),
            (
                Some("Inbox"),
                Some("https://mail.test/inbox"),
                Some(1),
                true
            ),
            (Some("Docs"), Some("https://docs.test/"), Some(2), true),
            (None, Some("https://mail.test/sent"), Some(1), false),
        ]
    );
    assert_eq!(tl.tabs, 2);
}

#[test]
fn steps_say_what_happened() {
    let t = |p: Value| {
        let tl = build_values(vec![rec(1, 1, "action", p)]);
        let h = tl.steps[0].what.headline(1);
        format!(
            "{} {} {}",
            h.verb,
            h.object.unwrap_or_default(),
            h.note.unwrap_or_default()
        )
        .trim()
        .to_owned()
    };
    assert_eq!(
        t(json!({"method": "type", "input": {"chars": 12, "inputType": "password"}})),
        "Typed 12 chars  (password)"
    );
    assert_eq!(
        t(json!({"method": "press", "detail": {"key": "Enter"}})),
        "Pressed Enter"
    );
    assert_eq!(
        t(json!({"method": "click", "point": {"x": 10.5, "y": 20}, "detail": {"button": "right"}})),
        "Right-clicked  at (10.5, 20)"
    );
    assert_eq!(
        t(json!({"method": "click", "point": {"x": 1, "y": 2}, "detail": {"clickCount": 2}})),
        "Double-clicked  at (1, 2)"
    );
    assert_eq!(
        t(json!({"method": "Target.createTarget", "url": "https://a.test/"})),
        "Opened a new page https://a.test/"
    );
    assert_eq!(t(json!({"method": "Browser.close"})), "Closed the browser");
    assert_eq!(
        t(json!({"method": "Page.navigateToHistoryEntry"})),
        "Went back or forward in history"
    );
    assert_eq!(t(json!({"method": "swipe", "dx": 3})), "swipe");
}

#[test]
fn foreign_producers_and_unknown_kinds_are_steps_and_never_fold() {
    let mut dev = rec(1, 1, "action", json!({"method": "Runtime.evaluate"}));
    dev["source"] = json!("mcp");
    let gesture = rec(2, 2, "gesture", json!({"dx": 1, "dy": {"deep": [1, 2]}}));
    let bad = rec(3, 3, "action", json!({"method": 42}));
    let tl = build_values(vec![dev, gesture, bad]);
    assert_eq!(tl.real_steps(), 3);
    assert_eq!(tl.steps[0].source.as_deref(), Some("mcp"));
    assert!(matches!(&tl.steps[1].what, What::Generic { kind, .. } if kind == "gesture"));
    assert_eq!(
        tl.steps[1].fields,
        vec![
            ("dx".to_owned(), "1".to_owned()),
            ("dy.deep[0]".to_owned(), "1".to_owned()),
            ("dy.deep[1]".to_owned(), "2".to_owned())
        ]
    );
    assert!(matches!(&tl.steps[2].what, What::Generic { kind, .. } if kind == "action"));
    assert_eq!(tl.generic, 2);
}

#[test]
fn repeated_scrolls_and_key_presses_merge() {
    let mut v = Vec::new();
    for i in 0..5 {
        v.push(rec(
            i,
            i,
            "action",
            json!({"method": "scroll", "point": {"x": 1, "y": 1}}),
        ));
    }
    for i in 5..8 {
        v.push(rec(
            i,
            i,
            "action",
            json!({"method": "press", "detail": {"key": "ArrowDown"}}),
        ));
    }
    v.push(rec(
        9,
        9,
        "action",
        json!({"method": "press", "detail": {"key": "Enter"}}),
    ));
    let tl = build_values(v);
    let reps: Vec<u32> = tl.steps.iter().map(|s| s.repeat).collect();
    assert_eq!(reps, vec![5, 3, 1]);
    assert_eq!(tl.steps[0].what.headline(5).note.as_deref(), Some("×5"));
}

#[test]
fn bad_timestamps_sort_by_the_action_id_time_or_last() {
    let mut late = act(0, 1, "Page.reload");
    late["startedAt"] = json!("yesterday");
    late["actionId"] = json!(format!("{:013}-0000000001-0000000001-00000000", T + 500));
    let mut nowhere = act(0, 2, "Page.stopLoading");
    nowhere["startedAt"] = json!(12);
    nowhere["actionId"] = json!("zzz");
    let tl = build_values(vec![nowhere, late, act(100, 3, "Browser.close")]);
    assert_eq!(
        labels(&tl),
        vec![
            "Closed the browser|",
            "Reloaded the page|",
            "Stopped loading|"
        ]
    );
    assert_eq!(tl.bad_times, 2);
    assert!(!tl.steps[1].time_known);
}

#[test]
fn the_model_does_not_depend_on_file_order() {
    let mut v = Vec::new();
    for i in 0..30u64 {
        let kind = ["action", "network", "console"][(i % 3) as usize];
        let mut r = rec(
            i * 7 % 50,
            i,
            kind,
            json!({"method": if i % 2 == 0 { "click" } else { "Runtime.evaluate" }, "url": "u", "level": "error", "text": "t", "point": {"x": 1, "y": 1}}),
        );
        r["target"] = json!({"targetId": format!("t{}", i % 4), "title": format!("p{i}")});
        v.push(r);
    }
    let a = format!("{:?}", build_values(v.clone()));
    v.reverse();
    let b = format!("{:?}", build_values(v));
    assert_eq!(a, b);
}

/// The relay's observer writes `frame` records after clicks and navigations, and names one frame
/// in every failure of a burst: the picture goes to the step (once), and a typing step shows its
/// verdict.
#[test]
fn observer_frames_fold_into_their_step_shared_frames_show_once_and_verdicts_are_read() {
    let mut click = act(0, 1, "click");
    click["payload"]["point"] = json!({"x": 1.0, "y": 2.0});
    let mut frame = act(300, 2, "frame");
    frame["tool"] = json!("observer");
    frame["artifacts"] = json!(["artifacts/000001-frame.jpeg"]);
    let mut fail_a = rec(
        400,
        3,
        "network",
        json!({"method": "GET", "url": "https://a.test/x"}),
    );
    fail_a["artifacts"] = json!(["artifacts/000002-frame.jpeg"]);
    let mut fail_b = rec(410, 4, "console", json!({"level": "error", "text": "boom"}));
    fail_b["status"] = json!("error");
    fail_b["artifacts"] = json!(["artifacts/000002-frame.jpeg"]);
    let mut typing = act(500, 5, "type");
    typing["payload"]["input"] = json!({"chars": 11, "inputType": "text"});
    typing["payload"]["verification"] = json!({
        "verified": false, "reason": "dropped-characters",
        "note": "expected 11 characters; the field grew by 10", "expected": 11, "grew": 10
    });
    let mut withheld = act(600, 6, "frame");
    withheld["tool"] = json!("observer");
    withheld["payload"]["detail"] = json!({"screenshotWithheld": "a sensitive field has focus"});
    let tl = build_values(vec![click, frame, fail_a, fail_b, typing, withheld]);
    assert_eq!(
        labels(&tl),
        vec!["Clicked|", "Typed 11 chars|"],
        "frames are not steps"
    );
    let shown: Vec<&str> = tl.steps[0]
        .frames
        .iter()
        .map(|f| f.raw_path.as_str())
        .collect();
    assert_eq!(
        shown,
        vec!["artifacts/000001-frame.jpeg", "artifacts/000002-frame.jpeg"],
        "the shared failure frame is attached once"
    );
    assert!(tl.steps[0].plumbing.is_empty(), "a frame is not plumbing");
    let What::Type {
        verdict: Some(v), ..
    } = &tl.steps[1].what
    else {
        panic!("typing step with a verdict: {:?}", tl.steps[1].what);
    };
    assert_eq!(
        (v.verified, v.reason.clone()),
        (
            cdp_evidence::Verified::False,
            cdp_evidence::VerdictReason::DroppedCharacters.into()
        )
    );
    assert_eq!(
        tl.steps[1].withheld.as_deref(),
        Some("a sensitive field has focus")
    );
}

#[test]
fn a_frame_shows_where_it_was_taken_on_its_own_tab_not_under_the_failure_that_waited_for_it() {
    let on = |mut r: Value, tab: &str| {
        r["target"] =
            json!({"targetId": tab, "type": "page", "url": format!("https://{tab}.test/")});
        r
    };
    let observer = |mut r: Value, artifact: &str| {
        r["tool"] = json!("observer");
        r["artifacts"] = json!([artifact]);
        r
    };
    let click = on(act(0, 1, "click"), "a");
    let mut failure = on(
        rec(
            100,
            2,
            "network",
            json!({"method": "GET", "url": "https://a.test/x"}),
        ),
        "a",
    );
    failure["artifacts"] = json!(["artifacts/000003-frame.jpeg"]);
    let mut navigate = on(act(200, 3, "Page.navigate"), "a");
    navigate["payload"]["url"] = json!("https://a.test/next");
    // Taken after the page navigated: a picture of the next document.
    let late = on(
        observer(act(300, 4, "frame"), "artifacts/000003-frame.jpeg"),
        "a",
    );
    let other_tab = on(act(400, 5, "click"), "b");
    // Tab a's frame, taken while tab b was the one being driven.
    let tab_a = on(
        observer(act(500, 6, "frame"), "artifacts/000004-frame.jpeg"),
        "a",
    );
    let tl = build_values(vec![click, failure, navigate, late, other_tab, tab_a]);
    let frames = |i: usize| -> Vec<&str> {
        tl.steps[i]
            .frames
            .iter()
            .map(|f| f.raw_path.as_str())
            .collect()
    };
    assert_eq!(tl.steps.len(), 3, "{:?}", labels(&tl));
    assert!(
        frames(0).is_empty(),
        "the failure's step does not show a later page"
    );
    assert_eq!(tl.failures.len(), 1);
    assert_eq!(
        frames(1),
        vec!["artifacts/000003-frame.jpeg", "artifacts/000004-frame.jpeg"],
        "both frames are tab a's, after its navigation"
    );
    assert!(
        frames(2).is_empty(),
        "tab b's step shows no picture of tab a"
    );
}
