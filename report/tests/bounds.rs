//! Runs too big to show whole render to a bounded report: every failure counted, the first and
//! the last shown, the rest said; the same bytes every time, whatever the file order.

mod support;

use cdp_report::{render_to_memory, Options};
use serde_json::json;
use support::*;

/// Elements in a rendered page (what a browser has to build).
fn elements(html: &str) -> usize {
    html.matches('<').count() - html.matches("</").count()
}

/// The field test's noisy page: tens of thousands of console errors under a few steps (the
/// benchmark renders 100,000; a debug build is slow at that).
#[test]
fn tens_of_thousands_of_console_errors_render_bounded_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = RunBuilder::new(tmp.path());
    let page = target("target:000000000001", "Cart", "https://shop.test/cart");
    let mut at = 0;
    for step in 0..5u64 {
        at += 1000;
        let r = b.action(at, "Page.navigate", 100);
        r["payload"]["url"] = json!(format!("https://shop.test/cart/{step}"));
        r["target"] = page.clone();
        for i in 0..5_000u64 {
            at += 1;
            let r = b.rec(
                at,
                "console",
                json!({"level": "error", "text": format!("Uncaught TypeError: x is undefined #{step}-{i}")}),
            );
            r["status"] = json!("error");
            r["target"] = page.clone();
        }
    }
    b.finish();
    b.finalized_manifest(
        "20260314T092653000Z-0000000000025000",
        T0 + at + 10,
        json!({}),
    );
    let options = Options::default();
    let out = render_to_memory(tmp.path(), &options).unwrap();
    let f = &out.figures;
    assert_eq!(f.records, 25_005);
    assert_eq!(f.console_errors, 25_000, "every failure is counted");
    assert_eq!(f.failures, 25_000);
    assert_eq!(f.steps, 5);
    let html = &out.html;
    assert!(
        html.len() < 1_500_000,
        "report.html is {} bytes",
        html.len()
    );
    assert!(elements(html) < 20_000, "{} elements", elements(html));
    assert!(html.contains("25000 failures"));
    assert!(html.contains("more failures during this step"));
    // The tables show the first and the last ones, and say what is between.
    assert!(html.contains("#0-0"), "the first error is listed");
    assert!(html.contains("#4-4999"), "the last error is listed");
    assert!(html.contains("more between the first and the last ones listed"));
    let last_id = "F25000";
    assert!(html.contains(last_id), "the last failure keeps its number");
    assert!(
        out.summary.len() < 200_000,
        "summary.md is {} bytes",
        out.summary.len()
    );
    assert!(
        out.summary.contains("and 24900 more"),
        "{}",
        &out.summary[..2000]
    );
    // Deterministic.
    let again = render_to_memory(tmp.path(), &options).unwrap();
    assert!(again.html == out.html && again.summary == out.summary);
}

/// Steps over the cap: the first and the last half are shown, one entry counts the rest, step
/// numbers stay true, and the result does not depend on the journal's order.
#[test]
fn steps_over_the_cap_leave_one_entry_that_counts_them() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = RunBuilder::new(tmp.path());
    let mut at = 0;
    for i in 0..3000u64 {
        at += 100;
        let r = b.action(at, "click", 10);
        r["payload"]["point"] = json!({"x": i, "y": 1});
        at += 1;
        b.action(at, "Runtime.evaluate", 1);
        if i % 100 == 50 || i == 49 {
            at += 1;
            b.rec(
                at,
                "network",
                json!({"method": "GET", "url": format!("https://a.test/{i}"), "status": 500}),
            );
        }
    }
    b.finish();
    b.finalized_manifest(
        "20260314T092653000Z-0000000000003000",
        T0 + at + 10,
        json!({}),
    );
    let mut options = Options::default();
    options.max_steps = 100;
    let out = render_to_memory(tmp.path(), &options).unwrap();
    assert_eq!(out.figures.steps, 3000);
    assert_eq!(out.figures.failed_requests, 31);
    let html = &out.html;
    assert!(html.contains("2900 more steps not shown"), "gap entry");
    assert!(html.contains(r#"id="step-50""#) && !html.contains(r#"id="step-51""#));
    assert!(html.contains(r#"id="step-2951""#) && html.contains(r#"id="step-3000""#));
    assert!(html.contains("Steps left out"));
    // Failures during the gap are counted there; the tables still name them by number.
    assert!(html.contains("failures are counted in the figures above (29 during them"));
    assert!(html.contains("F31"), "the last failure keeps its number");
    // A failure after the last step shown before the gap, and before the first step left out,
    // is that step's.
    let last_head = &html[html.find(r#"id="step-50""#).unwrap()..html.find(r#"id="gap""#).unwrap()];
    assert!(last_head.contains("https://a.test/49"), "{last_head}");

    // Written in another order, the same run renders to the same bytes.
    let journal = std::fs::read_to_string(tmp.path().join("actions.jsonl")).unwrap();
    let mut lines: Vec<&str> = journal.lines().collect();
    lines.reverse();
    let shuffled = tempfile::tempdir().unwrap();
    copy_run(tmp.path(), shuffled.path());
    std::fs::write(
        shuffled.path().join("actions.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    let other = render_to_memory(shuffled.path(), &options).unwrap();
    assert!(other.html == out.html, "the file order changed the report");
}

/// The relay folds repeats into one record with a count: the report shows the count and the
/// span, and says how many were folded.
#[test]
fn folded_repeats_show_their_count() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = RunBuilder::new(tmp.path());
    b.action(0, "Page.navigate", 10);
    let r = b.rec(
        100,
        "console",
        json!({"level": "error", "text": "render loop failed"}),
    );
    r["status"] = json!("error");
    let r = b.rec(
        200,
        "console",
        json!({"level": "error", "text": "render loop failed"}),
    );
    r["status"] = json!("error");
    r["durationMs"] = json!(9_800);
    r["repeat"] = json!({"count": 66_498, "firstAt": ts(T0 + 200), "lastAt": ts(T0 + 10_000)});
    b.finish();
    b.finalized_manifest(
        "20260314T092653000Z-00000000000fold",
        T0 + 10_100,
        json!({}),
    );
    let out = render_to_memory(tmp.path(), &Options::default()).unwrap();
    assert!(out.html.contains("×66498 more"), "the count is shown");
    assert!(out.html.contains("+0.2 s – +10.0 s"), "and when");
    assert!(out.html.contains("66498 repeats"), "the figures say it");
    assert!(out.summary.contains("(×66498 more, +0.2 s – +10.0 s)"));
    assert_eq!(out.figures.console_errors, 2);
}

/// A journal truncated at its budget, and evidence that could not be written: the report says
/// what was cut and what was lost, and why.
#[test]
fn a_truncated_journal_and_lost_evidence_are_said() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = RunBuilder::new(tmp.path());
    b.action(0, "Page.navigate", 10);
    let m = b.rec(
        10,
        "marker",
        json!({"marker": "journalTruncated", "budgetBytes": 65536, "usedBytes": 65000}),
    );
    m["tool"] = json!("cdp-evidence");
    let m = b.rec(
        20,
        "marker",
        json!({"marker": "evidenceDropped", "count": 1493, "reason": "writeFailed"}),
    );
    m["tool"] = json!("cdp-evidence");
    let m = b.rec(
        30,
        "marker",
        json!({"marker": "evidenceDropped", "count": 12, "reason": "runDeleted"}),
    );
    m["tool"] = json!("cdp-evidence");
    b.finish();
    b.manifest(&json!({
        "evidenceVersion": 1, "runId": "r", "status": "finalized", "startedAt": ts(T0),
        "finalizedAt": ts(T0 + 100),
        "totals": {"records": 4, "droppedEvidence": 1505},
        "truncation": {"artifactsTruncated": false, "journalTruncated": true, "journalBudgetBytes": 65536,
            "refusedRecords": {"console": 4000, "network": 12}},
    }));
    let out = render_to_memory(tmp.path(), &Options::default()).unwrap();
    let html = &out.html;
    assert!(html.contains("Journal truncated"));
    assert!(html.contains("64.0 KiB"), "the budget");
    assert!(
        html.contains("4000 console, 12 network"),
        "what was refused"
    );
    assert!(html.contains("1505 pieces of evidence were lost"));
    assert!(html.contains("1493 pieces could not be written"));
    assert!(html.contains("12 records went with a run directory deleted while recording"));
    assert!(out.summary.contains("Journal truncated"));
}

fn copy_run(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to.join("artifacts")).unwrap();
    std::fs::copy(from.join("manifest.json"), to.join("manifest.json")).unwrap();
}
