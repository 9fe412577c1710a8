//! Tool calls as steps: their CDP actions fold under them, failures and frames sit beside them.

use super::super::{build, StoredRecord, Timeline, What};
use serde_json::{json, Value};

const T: u64 = 1_773_480_413_000;

fn id(at: u64, seq: u64) -> String {
    format!("{:013}-0000000001-{seq:010}-00000000", T + at)
}

fn rec(at: u64, seq: u64, source: &str, kind: &str, payload: Value) -> Value {
    let ms = T + at;
    json!({
        "actionId": id(at, seq),
        "source": source, "tool": "cdp", "sessionId": "s",
        "startedAt": cdp_evidence::time::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms)),
        "durationMs": 5, "status": if kind == "network" { "error" } else { "ok" },
        "artifacts": [], "kind": kind, "payload": payload,
        "target": {"targetId": "target:aaaaaaaaaaaa", "type": "page", "title": "Sign in", "url": "https://a.test/login"},
    })
}

fn call(at: u64, seq: u64, tool: &str, arguments: Value) -> Value {
    let mut r = rec(
        at,
        seq,
        "mcp",
        "action",
        json!({"method": tool, "arguments": arguments, "result": {"content": 1, "images": 0}}),
    );
    r["tool"] = json!("chrome_devtools");
    r.as_object_mut().unwrap().remove("target");
    r
}

fn linked(mut v: Value, call: &str) -> Value {
    v["payload"]["toolCall"] = json!(call);
    v
}

fn build_values(values: Vec<Value>) -> Timeline {
    let records: Vec<StoredRecord> = values
        .into_iter()
        .map(|v| StoredRecord::from_value(v).unwrap())
        .collect();
    build(&records, Some(T), None)
}

fn typing(at: u64, seq: u64, chars: u64, input_type: &str, verdict: Value) -> Value {
    rec(
        at,
        seq,
        "relay",
        "action",
        json!({"method": "type", "input": {"chars": chars, "inputType": input_type}, "verification": verdict}),
    )
}

#[test]
fn a_tool_call_is_the_step_and_its_cdp_actions_fold_under_it() {
    let fill = id(100, 10);
    let click = id(2000, 30);
    let elements = json!([{"name": "elements", "type": "array", "count": 3, "items": [
        {"name": "0", "type": "object", "count": 2, "items": [
            {"name": "uid", "type": "string", "value": "1_5"},
            {"name": "value", "type": "string", "input": {"chars": 25, "inputType": "unknown"}}
        ]}
    ]}]);
    let tl = build_values(vec![
        // The child's own setup before any call: a setup step.
        rec(
            0,
            1,
            "relay",
            "action",
            json!({"method": "Target.setDiscoverTargets"}),
        ),
        call(100, 10, "fill_form", elements),
        linked(
            rec(
                150,
                11,
                "relay",
                "action",
                json!({"method": "Runtime.callFunctionOn"}),
            ),
            &fill,
        ),
        linked(
            typing(
                200,
                12,
                25,
                "email",
                json!({"verified": true, "reason": "landed", "note": "the field grew by 25 characters"}),
            ),
            &fill,
        ),
        linked(
            typing(
                400,
                13,
                14,
                "password",
                json!({"verified": "indeterminate", "reason": "sensitive-field", "note": "a password field is never read back"}),
            ),
            &fill,
        ),
        linked(
            rec(
                450,
                14,
                "relay",
                "action",
                json!({"method": "click", "point": {"x": 10, "y": 20}}),
            ),
            &fill,
        ),
        call(
            2000,
            30,
            "click",
            json!([{"name": "uid", "type": "string", "value": "1_9"}]),
        ),
        linked(
            rec(
                2010,
                31,
                "relay",
                "action",
                json!({"method": "click", "point": {"x": 5, "y": 6}}),
            ),
            &click,
        ),
        // A failure and a frame the relay recorded as effects of the click.
        linked(
            rec(
                2100,
                32,
                "relay",
                "network",
                json!({"method": "POST", "url": "https://a.test/api/login", "status": 500}),
            ),
            &click,
        ),
        {
            let mut f = linked(
                rec(
                    2400,
                    33,
                    "relay",
                    "action",
                    json!({"method": "frame", "detail": {"after": ["failure"]}}),
                ),
                &click,
            );
            f["tool"] = json!("observer");
            f["artifacts"] = json!(["artifacts/000001-frame.jpeg"]);
            f
        },
        // An unlinked record after the calls folds into the last step as before.
        rec(
            3000,
            40,
            "relay",
            "action",
            json!({"method": "Runtime.evaluate"}),
        ),
    ]);
    assert_eq!(tl.real_steps(), 2, "{:#?}", tl.steps);
    let fill_step = &tl.steps[1];
    let What::ToolCall(c) = &fill_step.what else {
        panic!("{:?}", fill_step.what)
    };
    assert_eq!(c.name, "fill_form");
    assert_eq!(c.effects.len(), 3, "typing ×2 and a click: {:?}", c.effects);
    let h = fill_step.what.headline(1);
    assert_eq!(h.object.as_deref(), Some("fill_form"));
    assert_eq!(
        h.note.as_deref(),
        Some("3 fields — email 25 chars landed; password 14 chars not read back; clicked")
    );
    assert_eq!(
        fill_step.fold_counts().len(),
        1,
        "the evaluation folds under the call"
    );
    assert_eq!(
        fill_step.page.as_ref().and_then(|p| p.url.as_deref()),
        Some("https://a.test/login"),
        "a call names the page it acted on"
    );
    assert!(!fill_step.page_inferred);
    assert!(fill_step
        .fields
        .iter()
        .any(|(k, v)| k == "elements[0].value"
            && v == "25 chars of text, not kept (input type unknown)"));
    assert!(fill_step
        .fields
        .iter()
        .any(|(k, v)| k == "elements" && v == "2 more not shown"));
    let click_step = &tl.steps[2];
    assert_eq!(
        click_step.what.headline(1).note,
        None,
        "`click` needs no `clicked`"
    );
    assert_eq!(
        click_step.failures.len(),
        1,
        "the failure sits beside its call"
    );
    assert_eq!(tl.failures[0].step, 2);
    assert_eq!(click_step.frames.len(), 1, "and the frame");
    assert_eq!(
        click_step.fold_counts().len(),
        1,
        "later plumbing folds as before"
    );
}

#[test]
fn a_marked_step_a_crash_and_a_link_to_an_unknown_call() {
    let tl = build_values(vec![
        {
            let mut r = call(
                10,
                1,
                "evidence_mark_step",
                json!([{"name": "label", "type": "string", "chars": 6}]),
            );
            r["payload"]["label"] = json!("log in");
            r
        },
        rec(
            20,
            2,
            "mcp",
            "lifecycle",
            json!({"event": "serverExited", "connection": 0, "detail": "killed by signal 9"}),
        ),
        // A record naming a call the journal does not have renders as it would unlinked.
        linked(
            rec(
                30,
                3,
                "relay",
                "action",
                json!({"method": "Page.navigate", "url": "https://b.test/"}),
            ),
            "1773480413000-0000000001-0000000099-00000000",
        ),
    ]);
    let labels: Vec<(String, Option<String>)> = tl
        .steps
        .iter()
        .map(|s| {
            let h = s.what.headline(1);
            (h.verb, h.object)
        })
        .collect();
    assert_eq!(
        labels,
        vec![
            ("Step".into(), Some("log in".into())),
            ("The MCP server exited".into(), None),
            ("Navigated to".into(), Some("https://b.test/".into())),
        ]
    );
    assert!(
        matches!(&tl.steps[1].what, What::Gateway { detail: Some(d), .. } if d == "killed by signal 9")
    );
}

fn build_capped(values: Vec<Value>, caps: super::super::Caps) -> Timeline {
    let records: Vec<StoredRecord> = values
        .into_iter()
        .map(|v| StoredRecord::from_value(v).unwrap())
        .collect();
    super::super::build_from(
        &mut |f: &mut dyn FnMut(&StoredRecord)| records.iter().for_each(&mut *f),
        Some(T),
        None,
        caps,
    )
}

/// Each step as one line: its headline, its effects, its failures (ids), and a gap's counts.
fn shape(tl: &Timeline) -> Vec<String> {
    tl.steps
        .iter()
        .map(|s| {
            let h = s.what.headline(s.repeat);
            let mut line = format!("{:?} {} {}", s.number, h.verb, h.object.unwrap_or_default());
            match &s.what {
                What::ToolCall(c) => {
                    let effects: Vec<String> =
                        c.effects.iter().map(|e| e.headline().verb).collect();
                    line.push_str(&format!(" effects {effects:?} +{}", c.more_effects));
                }
                What::Gap { steps, effects, .. } => {
                    line.push_str(&format!(" gap {steps} steps {effects} effects"))
                }
                _ => {}
            }
            let ids: Vec<usize> = s.failures.iter().map(|&i| tl.failures[i].id).collect();
            line.push_str(&format!(" failures {ids:?} of {}", s.failure_count));
            line
        })
        .collect()
}

/// Ten calls, each with a click and a failed request, written as the gateway writes them (the
/// effects first, the call when it ends), and an action naming a call the journal lacks.
fn ten_calls() -> Vec<Value> {
    let mut out = Vec::new();
    for i in 0..10u64 {
        let at = 100 + i * 1000;
        let id = id(at, i * 10);
        out.push(linked(
            rec(
                at + 10,
                i * 10 + 1,
                "relay",
                "action",
                json!({"method": "click", "point": {"x": i, "y": 1}}),
            ),
            &id,
        ));
        out.push(linked(
            rec(
                at + 20,
                i * 10 + 2,
                "relay",
                "network",
                json!({"method": "GET", "url": format!("https://a.test/{i}"), "status": 500}),
            ),
            &id,
        ));
        out.push(call(at, i * 10, "click", json!([])));
    }
    out.push(linked(
        rec(
            9500,
            200,
            "relay",
            "action",
            json!({"method": "Page.navigate", "url": "https://b.test/"}),
        ),
        "1773480413000-0000000001-0000000099-00000000",
    ));
    out
}

#[test]
fn effects_stay_with_their_calls_across_the_bound() {
    let caps = super::super::Caps {
        steps: 4,
        ..Default::default()
    };
    let tl = build_capped(ten_calls(), caps);
    assert_eq!(tl.real_steps(), 11, "ten calls and the orphan");
    assert_eq!(tl.totals.requests, 10);
    let clicked = r#"effects ["Clicked"] +0"#;
    assert_eq!(
        shape(&tl),
        vec![
            format!("Some(1)  click {clicked} failures [1] of 1"),
            format!("Some(2)  click {clicked} failures [2] of 1"),
            // The gap counts the seven calls left out, and their effects.
            "None 7 more steps not shown  gap 7 steps 7 effects failures [3, 4, 5, 6, 7, 8, 9] of 7"
                .to_owned(),
            format!("Some(10)  click {clicked} failures [10] of 1"),
            // Naming a call the journal does not have, it is a step of its own.
            "Some(11) Navigated to https://b.test/ failures [] of 0".to_owned(),
        ]
    );
    // The tables list every failure, numbered as in the filmstrip.
    let ids: Vec<usize> = tl.request_rows.iter().map(|&i| tl.failures[i].id).collect();
    assert_eq!(ids, (1..=10).collect::<Vec<_>>());

    // Any journal order gives the same model.
    let mut reversed = ten_calls();
    reversed.reverse();
    assert_eq!(shape(&build_capped(reversed, caps)), shape(&tl));
    let mut calls_first = ten_calls();
    calls_first.sort_by_key(|v| v["payload"]["toolCall"].is_string());
    assert_eq!(shape(&build_capped(calls_first, caps)), shape(&tl));

    // The whole run, uncapped: every call keeps its effect, and the accounts are computed.
    let all = build_values(ten_calls());
    assert_eq!(all.real_steps(), 11);
    assert!(all.steps.iter().all(|s| match &s.what {
        What::ToolCall(c) => c.effects.len() == 1 && s.failure_count == 1,
        _ => true,
    }));
}

#[test]
fn a_call_keeps_its_first_effects_and_counts_the_rest_wherever_they_land_in_time() {
    let a = id(100, 1);
    let mut records = vec![
        call(100, 1, "fill_form", json!([])),
        call(5000, 50, "navigate_page", json!([])),
    ];
    for i in 0..60u64 {
        records.push(linked(
            typing(
                200 + i,
                2 + i,
                3,
                "email",
                json!({"verified": true, "reason": "landed", "note": "n"}),
            ),
            &a,
        ));
    }
    // A late verdict and a failure stamped after the next call began are still the first
    // call's: they name it.
    records.push(linked(
        rec(
            6000,
            90,
            "relay",
            "network",
            json!({"method": "POST", "url": "https://a.test/api", "status": 502}),
        ),
        &a,
    ));
    let tl = build_values(records);
    let What::ToolCall(c) = &tl.steps[0].what else {
        panic!("{:?}", tl.steps[0].what)
    };
    assert_eq!(c.effects.len(), super::MAX_EFFECTS);
    assert_eq!(c.more_effects, 60 - super::MAX_EFFECTS);
    assert_eq!(
        c.account.as_deref(),
        Some(
            "email 3 chars landed; email 3 chars landed; email 3 chars landed; email 3 chars landed; email 3 chars landed; email 3 chars landed; 54 more"
        ),
        "the account names what the call did"
    );
    assert_eq!(tl.steps[0].failure_count, 1, "{:#?}", tl.steps);
    assert_eq!(tl.steps[1].failure_count, 0);
    assert_eq!(
        tl.steps[0].page.as_ref().and_then(|p| p.url.as_deref()),
        Some("https://a.test/login"),
        "the page the call acted on"
    );
}
