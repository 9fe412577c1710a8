//! Whatever a run holds, it renders: legacy manifests, torn tails, foreign producers, wrong
//! types, bad timestamps, corrupt lines, missing files. Never a panic, and the same bytes twice.

mod support;

use cdp_report::{render, render_to_memory, Options, ReportError};
use serde_json::json;
use std::fs;
use std::path::Path;
use support::*;

fn mem(dir: &Path) -> cdp_report::Output {
    render_to_memory(dir, &Options::default()).expect("render")
}

#[test]
fn a_legacy_manifest_renders() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = RunBuilder::new(tmp.path());
    b.action(10, "Page.navigate", 30)["payload"]["url"] = json!("https://old.test/");
    b.finish();
    b.manifest(&json!({"runId": "old-run", "status": "completed", "startedAt": 5}));
    let out = mem(tmp.path());
    assert_eq!(out.figures.steps, 1);
    assert!(out.html.contains("Legacy run (completed)"), "state shown");
    assert!(out.summary.contains("legacy run, status `completed`"));
    assert!(out.summary.contains("# cdp-relay run `old-run`"));
}

#[test]
fn a_run_without_a_manifest_or_with_a_broken_one_renders_from_the_journal() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run-x");
    let mut b = RunBuilder::new(&dir);
    b.action(10, "Page.reload", 30);
    b.finish();
    let out = mem(&dir);
    assert_eq!(out.figures.steps, 1);
    assert!(out.html.contains("No manifest"));
    assert!(out.summary.contains("`run-x`"), "named by its directory");
    for broken in [&b"[1,2]"[..], b"{\"runId\": ", b"\xff\xfe", b"\"hunter2\""] {
        fs::write(dir.join("manifest.json"), broken).unwrap();
        let out = mem(&dir);
        assert_eq!(out.figures.steps, 1);
        assert!(out.html.contains("Manifest unreadable"));
        assert!(
            !out.html.contains("hunter2"),
            "manifest content is never quoted"
        );
    }
}

#[test]
fn a_torn_tail_is_skipped_and_noted_and_corrupt_lines_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = RunBuilder::new(tmp.path());
    b.action(10, "Page.reload", 30);
    b.raw_line("{\"not\": \"a record\"}");
    b.raw_line("[1, 2, 3]");
    b.raw_line("{this is not json, but it holds sk_live_SECRET}");
    b.raw_line("");
    b.action(20, "Browser.close", 5);
    b.finish_with_tail(Some(
        "{\"actionId\":\"9\",\"kind\":\"action\",\"payload\":{\"method\":\"Page.navigate\"",
    ));
    b.finalized_manifest("torn", T0 + 100, json!({}));
    let out = mem(tmp.path());
    assert_eq!(out.figures.steps, 2);
    assert_eq!(out.figures.records_unreadable, 4);
    assert!(out
        .html
        .contains("4 lines of the journal could not be read as records"));
    assert!(out.html.contains("Incomplete last line"));
    assert!(!out.html.contains("sk_live_SECRET") && !out.summary.contains("sk_live_SECRET"));
}

#[test]
fn foreign_producers_unknown_kinds_and_fields_render_generically() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = RunBuilder::new(tmp.path());
    let r = b.action(10, "tap", 85);
    r["source"] = json!("device");
    r["tool"] = json!("adb");
    r["payload"]["point"] = json!({"x": 10, "y": 20});
    r["payload"]["pressure"] = json!(0.7);
    r["deviceSerial"] = json!("emulator-5554");
    let r = b.rec(
        20,
        "gesture",
        json!({"dx": 12, "dy": -3, "fingers": [{"id": 1}]}),
    );
    r["source"] = json!("device");
    let r = b.rec(
        30,
        "mcpCall",
        json!({"tool": "browser_snapshot", "ok": true}),
    );
    r["source"] = json!("mcp");
    r["status"] = json!("ok");
    b.rec(40, "marker", json!({"marker": "somethingNew", "x": 1}));
    b.finish();
    b.finalized_manifest("foreign", T0 + 100, json!({}));
    let out = mem(tmp.path());
    assert_eq!(out.figures.steps, 3, "{}", out.summary);
    assert_eq!(out.figures.records_generic, 2);
    assert!(out.summary.contains("Tapped at (10, 20)"));
    assert!(out.summary.contains("(from `device`)"));
    assert!(out.html.contains("gesture") && out.html.contains("fingers[0].id"));
    assert!(out.html.contains("mcpCall") && out.html.contains("browser_snapshot"));
    assert!(out.html.contains("Unknown markers") && out.html.contains("somethingNew"));
}

#[test]
fn wrong_types_and_missing_fields_still_render() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = RunBuilder::new(tmp.path());
    b.rec(1, "action", json!({"method": ["not", "a", "string"]}));
    b.rec(2, "action", json!("payload is a string"));
    b.rec(3, "network", json!({"method": "GET"}));
    b.rec(
        4,
        "network",
        json!({"method": "GET", "url": "https://a.test/", "status": "five hundred"}),
    );
    b.rec(5, "console", json!({"level": "fatal", "text": 7}));
    b.rec(6, "lifecycle", json!({"event": "exploded"}));
    let r = b.action(7, "type", 1);
    r["payload"]["input"] = json!({"chars": "twelve"});
    let r = b.action(8, "click", 1);
    r["payload"]["point"] = json!({"x": "left"});
    let r = b.action(9, "Page.reload", 1);
    r["durationMs"] = json!("slow");
    r["status"] = json!(3);
    r["target"] = json!("not an object");
    r["artifacts"] = json!("not an array");
    r["error"] = json!({"nested": true});
    b.rec(10, "action", json!(null))["payload"] = json!(null);
    b.finish();
    let out = mem(tmp.path());
    // Every record is somewhere: as a step, a failure, or folded.
    assert_eq!(out.figures.records, 10);
    assert_eq!(
        out.figures.failed_requests, 2,
        "generic network records are failures"
    );
    assert!(out.figures.records_generic >= 7, "{:?}", out.figures);
    assert!(out.html.contains("five hundred"));
    assert!(out.html.contains("no status"));
}

#[test]
fn bad_timestamps_render_as_time_unknown() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = RunBuilder::new(tmp.path());
    b.action(10, "Page.reload", 1)["startedAt"] = json!("2026-02-30T25:61:00Z");
    b.action(20, "Page.stopLoading", 1)["startedAt"] = json!(null);
    b.action(30, "Browser.close", 1);
    let r = b.action(40, "Page.printToPDF", 1);
    r["startedAt"] = json!(-5);
    r["actionId"] = json!("not-a-time-id");
    b.finish();
    b.manifest(&json!({"evidenceVersion": 1, "runId": "t", "startedAt": "whenever"}));
    let out = mem(tmp.path());
    assert_eq!(out.figures.steps, 4);
    assert!(out.html.contains("no time"), "the rail says so");
    assert!(out.html.contains("3 records have no valid startedAt"));
}

#[test]
fn missing_journal_symlinked_journal_and_non_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    fs::create_dir(&dir).unwrap();
    assert!(matches!(
        render_to_memory(&dir, &Options::default()),
        Err(ReportError::NotARun { .. })
    ));
    assert!(matches!(
        render_to_memory(&tmp.path().join("nope"), &Options::default()),
        Err(ReportError::Open { .. })
    ));
    fs::write(dir.join("manifest.json"), b"{\"evidenceVersion\":1}").unwrap();
    let out = mem(&dir);
    assert!(out.html.contains("No journal"));
    let outside = tmp.path().join("elsewhere.jsonl");
    let mut other = RunBuilder::new(&tmp.path().join("other"));
    other.action(1, "Page.reload", 1);
    other.finish();
    fs::rename(tmp.path().join("other/actions.jsonl"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("actions.jsonl")).unwrap();
    let out = mem(&dir);
    assert_eq!(
        out.figures.records, 0,
        "a symlinked journal is not followed"
    );
    assert!(out.html.contains("Journal refused"));
}

#[test]
fn rendering_is_deterministic_and_writes_only_its_two_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(LOGIN_RUN_ID);
    let a = fake_screenshot(64, 40, 1);
    let b = fake_screenshot(64, 40, 2);
    login_flow(&dir, [&a, &b]);
    let before = snapshot(&dir);
    let first = render(&dir).unwrap();
    let html1 = fs::read(&first.html_path).unwrap();
    let md1 = fs::read(&first.summary_path).unwrap();
    let second = render(&dir).unwrap();
    assert_eq!(html1, fs::read(&second.html_path).unwrap());
    assert_eq!(md1, fs::read(&second.summary_path).unwrap());
    assert_eq!(first.figures, second.figures);
    assert_eq!(first.figures.html_bytes, html1.len() as u64);
    let mut after = snapshot(&dir);
    after.retain(|(name, _)| name != "report.html" && name != "summary.md");
    assert_eq!(before, after, "the run's own files are untouched");
    // The same run in another directory renders the same bytes: nothing depends on the path.
    let copy = tmp.path().join("copy");
    let c = fake_screenshot(64, 40, 1);
    let d = fake_screenshot(64, 40, 2);
    login_flow(&copy, [&c, &d]);
    assert_eq!(mem(&copy).html.as_bytes(), &html1[..]);
}

fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walk(dir) {
        let name = e.strip_prefix(dir).unwrap().display().to_string();
        out.push((name, fs::read(&e).unwrap()));
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v
}

#[test]
fn a_run_written_with_the_evidence_writer_api_renders() {
    use cdp_evidence::{
        Action, ArtifactOutcome, Console, ConsoleLevel, CustomKind, EvidenceConfig, Record,
        RecordKind, Store, Totals,
    };
    use cdp_sanitize::{InputSummary, InputType, RawNetworkFailure, SafeText, Sanitizer};
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(EvidenceConfig::at(tmp.path())).unwrap();
    let run = store.join_session("writer-api", "relay").unwrap();
    let s = Sanitizer::new();
    s.register_secret("PASSWORD", "hunter2hunter2").unwrap();
    let page = s.target_info(&json!({"targetId": "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1", "type": "page", "title": "Login", "url": "https://app.test/login?session=abc"}));
    let mut nav = Action::new(SafeText::literal("Page.navigate"));
    nav.url = Some(s.url("https://app.test/login?token=abc"));
    let mut typed = Action::new(SafeText::literal("type"));
    typed.input = Some(InputSummary::of("hunter2hunter2", InputType::Password));
    let png = fake_screenshot(32, 20, 3);
    let ArtifactOutcome::Stored(shot) = run.store_artifact("screenshot", "png", &png).unwrap()
    else {
        panic!("artifact not stored")
    };
    let failure = s.network_failure(RawNetworkFailure {
        method: "GET",
        url: "https://app.test/api?token=abc",
        status: Some(500),
        ..Default::default()
    });
    let mut console = Console::new(
        ConsoleLevel::Error,
        s.text("login failed for hunter2hunter2"),
    );
    console.url = Some(s.url("https://app.test/app.js"));
    console.line = Some(3);
    run.append_all(&[
        Record::new(SafeText::literal("cdp"), RecordKind::Action(nav)).target(page.clone()),
        Record::new(SafeText::literal("cdp"), RecordKind::Action(typed)).target(page.clone()),
        Record::new(SafeText::literal("cdp"), RecordKind::Network(failure)).target(page.clone()),
        Record::new(SafeText::literal("cdp"), RecordKind::Console(console)),
        Record::new(
            SafeText::literal("cdp"),
            RecordKind::Action(Action::new(SafeText::literal("Page.captureScreenshot"))),
        )
        .artifact(shot),
        Record::new(
            SafeText::literal("adb"),
            RecordKind::Custom(CustomKind::new("gesture", s.json(&json!({"dx": 3}))).unwrap()),
        ),
    ])
    .unwrap();
    run.finalize(Totals {
        dropped_evidence: 2,
        dropped_recorded: 0,
        redactions: Some(s.summary()),
    })
    .unwrap();
    let rendered = render(run.dir()).unwrap();
    let f = &rendered.figures;
    assert_eq!(
        (
            f.steps,
            f.failed_requests,
            f.console_errors,
            f.frames_embedded
        ),
        (4, 1, 1, 1)
    );
    let html = fs::read_to_string(&rendered.html_path).unwrap();
    let md = fs::read_to_string(&rendered.summary_path).unwrap();
    for text in [&html, &md] {
        assert!(!text.contains("hunter2"), "typed text never appears");
        assert!(
            !text.contains("8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1"),
            "no CDP ids"
        );
        assert!(!text.contains("token=abc"));
        assert!(text.contains("PASSWORD"), "the secret's name is shown");
    }
    assert!(html.contains("Typed 14 chars") && html.contains("(password)"));
    assert!(html.contains("Evidence dropped"));
    assert!(md.contains("Typed 14 chars (password)"));
}

#[test]
fn random_journals_never_panic() {
    // A small deterministic generator of JSON-ish lines: valid records with random field
    // types, broken JSON, random bytes.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let values = [
        json!(null),
        json!(1),
        json!(-1.5),
        json!("s"),
        json!("<x>"),
        json!([]),
        json!({}),
        json!(["artifacts/../x.png"]),
        json!({"x": 1}),
        json!(true),
        json!("2026-01-01T00:00:00Z"),
        json!(u64::MAX),
        json!("artifacts/a.png"),
    ];
    let fields = [
        "actionId",
        "kind",
        "payload",
        "source",
        "tool",
        "startedAt",
        "durationMs",
        "status",
        "artifacts",
        "target",
        "error",
        "fieldsCut",
    ];
    let kinds = [
        "action",
        "network",
        "console",
        "lifecycle",
        "marker",
        "x",
        "",
    ];
    let payload_keys = [
        "method", "url", "input", "point", "detail", "level", "text", "status", "event", "marker",
        "line", "count",
    ];
    for round in 0..40 {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("artifacts")).unwrap();
        fs::write(
            tmp.path().join("artifacts/a.png"),
            b"\x89PNG\r\n\x1a\nnot really",
        )
        .unwrap();
        let mut journal = Vec::new();
        for _ in 0..60 {
            match next() % 10 {
                0 => {
                    let n = (next() % 40) as usize;
                    journal.extend((0..n).map(|_| (next() % 256) as u8));
                }
                _ => {
                    let mut obj = serde_json::Map::new();
                    obj.insert("actionId".into(), json!(format!("{}", next() % 1000)));
                    obj.insert(
                        "kind".into(),
                        json!(kinds[(next() % kinds.len() as u64) as usize]),
                    );
                    for f in fields {
                        if next() % 2 == 0 {
                            obj.insert(
                                f.into(),
                                values[(next() % values.len() as u64) as usize].clone(),
                            );
                        }
                    }
                    let mut payload = serde_json::Map::new();
                    for k in payload_keys {
                        if next() % 3 == 0 {
                            payload.insert(
                                k.into(),
                                values[(next() % values.len() as u64) as usize].clone(),
                            );
                        }
                    }
                    if next() % 4 != 0 {
                        obj.insert("payload".into(), json!(payload));
                    }
                    journal.extend(serde_json::to_vec(&obj).unwrap());
                }
            }
            journal.push(b'\n');
        }
        if round % 2 == 0 {
            journal.truncate(journal.len() - 1 - (next() % 5) as usize);
        }
        fs::write(tmp.path().join("actions.jsonl"), &journal).unwrap();
        let out = mem(tmp.path());
        assert!(out.html.starts_with("<!DOCTYPE html>"));
    }
}
