//! `cdp-relay demo` end to end: the real binary launches a real Chromium behind the relay,
//! drives its built-in site, and prints the path of the report as its only stdout line. The run
//! holds every failure the site is built to produce and what the agent did, and not one byte of
//! what it typed, the token in a request's query or the session cookie — anywhere in the run
//! directory, the report included, or on stderr. Nothing of the browser is left behind.

use cdp_evidence::{EvidenceConfig, Store, StoredRecord};
use cdp_relay_tests::files::{all_files, leaks, Scratch};
use cdp_relay_tests::{relay_binary, within};
use serde_json::Value;
use std::path::PathBuf;

// The demo's planted secrets: the same literals as in cli/src/demo/mod.rs.
const USERNAME: &str = "alex.morgan@ledgerly.test";
const PASSWORD: &str = "demo-Passw0rd!";
const OTP: &str = "824913";
const LIVE_TOKEN: &str = "lvt_4Qm9Zr7TxK2pWb8N";
const SESSION_COOKIE: &str = "sess_7fH3kQ9vLm2XpR5w";
// Typed, so never recorded either (it is not a secret: the results page shows it, in pixels).
const SEARCH: &str = "overdue invoices";

struct Demo {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn demo(scratch: &Scratch, args: &[&str]) -> Demo {
    let out = within(
        "cdp-relay demo",
        tokio::process::Command::new(relay_binary())
            .arg("demo")
            .args(args)
            .env("TMPDIR", scratch.path())
            .env_remove("CDP_RELAY_EVIDENCE_DIR")
            .env_remove("RUST_LOG")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run cdp-relay demo");
    Demo {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn network<'a>(records: &'a [StoredRecord], path: &str) -> &'a Value {
    records
        .iter()
        .filter(|r| r.kind == "network")
        .map(|r| &r.payload)
        .find(|p| p["url"].as_str().is_some_and(|u| u.ends_with(path)))
        .unwrap_or_else(|| panic!("no failed request for {path}"))
}

fn actions<'a>(records: &'a [StoredRecord], method: &str) -> Vec<&'a StoredRecord> {
    records
        .iter()
        .filter(|r| r.kind == "action" && r.payload["method"] == method)
        .collect()
}

#[tokio::test]
async fn demo_reports_every_failure_and_leaks_nothing() {
    let scratch = Scratch::new();
    let evidence = tempfile::tempdir().expect("evidence dir");
    let run = demo(
        &scratch,
        &["--evidence-dir", &evidence.path().to_string_lossy()],
    )
    .await;
    assert_eq!(run.code, Some(0), "demo failed:\n{}", run.stderr);

    // One stdout line: an existing report.html inside a run directory of the evidence root.
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "stdout must be one line: {:?}", run.stdout);
    let report = PathBuf::from(lines[0]);
    assert!(report.is_absolute(), "{report:?}");
    assert!(report.is_file(), "{report:?} does not exist");
    assert_eq!(
        report.file_name().and_then(|n| n.to_str()),
        Some("report.html")
    );
    let run_dir = report.parent().expect("run dir").to_path_buf();
    let root = std::fs::canonicalize(evidence.path()).expect("canonical root");
    assert!(run_dir.starts_with(root.join("runs")), "{run_dir:?}");
    assert!(run_dir.join("summary.md").is_file());

    let store = Store::open(EvidenceConfig::at(evidence.path())).expect("store");
    let run_id = run_dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("run id");
    let manifest = store.read_manifest(run_id).expect("manifest");
    assert_eq!(manifest.status.as_deref(), Some("finalized"));
    let journal = store.read_journal(run_id).expect("journal");
    assert!(journal.corrupt.is_empty(), "{:?}", journal.corrupt);
    let records = journal.records;

    // The site's failures, each once, with URLs reduced to origin and path.
    let refused = network(&records, "/v1/updates");
    assert!(
        refused["errorText"]
            .as_str()
            .is_some_and(|e| e.contains("ERR_CONNECTION_REFUSED")),
        "{refused}"
    );
    let search = network(&records, "/api/search");
    assert_eq!(search["status"], 500, "{search}");
    assert_eq!(search["resourceType"], "Fetch", "{search}");
    let image = network(&records, "/files/INV-1042-receipt.png");
    assert_eq!(image["status"], 404, "{image}");
    assert_eq!(image["resourceType"], "Image", "{image}");
    for r in records.iter().filter(|r| r.kind == "network") {
        let url = r.payload["url"].as_str().unwrap_or_default();
        assert!(!url.contains('?'), "a query reached the journal: {url}");
    }
    let console: Vec<&str> = records
        .iter()
        .filter(|r| r.kind == "console" && r.payload["level"] == "error")
        .filter_map(|r| r.payload["text"].as_str())
        .collect();
    assert!(
        console
            .iter()
            .any(|t| t.starts_with("Live updates disconnected")),
        "{console:?}"
    );
    assert!(
        console
            .iter()
            .any(|t| t.starts_with("Search failed: HTTP 500")),
        "{console:?}"
    );

    // What the agent did: typing as lengths only, in order.
    let mut typed: Vec<&StoredRecord> = actions(&records, "type");
    // A typing step may be written after later records (it waits for the observer's verdict):
    // the timeline order is by start time.
    typed.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    let lengths: Vec<u64> = typed
        .iter()
        .filter_map(|r| r.payload["input"]["chars"].as_u64())
        .collect();
    let want: Vec<u64> = [USERNAME, PASSWORD, OTP, SEARCH]
        .iter()
        .map(|s| s.chars().count() as u64)
        .collect();
    assert_eq!(lengths, want, "typing steps");
    for r in &typed {
        let input = r.payload["input"].as_object().expect("input summary");
        let mut keys: Vec<&str> = input.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["chars", "inputType", "variable"], "{}", r.payload);
        // A name standing for the text, never the text.
        let variable = input["variable"].as_str().unwrap_or_default();
        assert!(
            variable
                .strip_prefix("TYPED_")
                .is_some_and(|n| n.parse::<u64>().is_ok()),
            "{}",
            r.payload
        );
    }
    // The relay's own observer read each field's real type, and judged whether the text landed
    // (credentials are not read back: their verdict is indeterminate, by design).
    let kinds: Vec<&str> = typed
        .iter()
        .map(|r| r.payload["input"]["inputType"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        ["email", "password", "one-time-code", "search"],
        "input types; stderr:\n{}",
        run.stderr
    );
    let verdicts: Vec<&serde_json::Value> = typed
        .iter()
        .map(|r| &r.payload["verification"]["verified"])
        .collect();
    assert_eq!(
        verdicts[0],
        &serde_json::json!(true),
        "{}",
        typed[0].payload
    );
    assert_eq!(verdicts[1], "indeterminate", "{}", typed[1].payload);
    assert_eq!(verdicts[2], "indeterminate", "{}", typed[2].payload);
    // Every failure has a frame taken after it, by the relay itself.
    for r in records
        .iter()
        .filter(|r| r.kind == "network" || r.kind == "console")
    {
        assert!(
            !r.artifacts.is_empty(),
            "a failure without a frame: {}",
            r.payload
        );
    }
    assert_eq!(actions(&records, "press").len(), 1, "Enter in the search");
    assert!(actions(&records, "click").len() >= 5);

    // Screenshots: the filled sign-in form is withheld, the four after navigations are kept.
    let shots = actions(&records, "Page.captureScreenshot");
    assert_eq!(shots.len(), 5, "{shots:?}");
    let kept: Vec<bool> = shots.iter().map(|r| !r.artifacts.is_empty()).collect();
    assert_eq!(
        kept,
        [true, false, true, true, true],
        "{:?}",
        shots
            .iter()
            .map(|r| &r.payload["detail"])
            .collect::<Vec<_>>()
    );
    assert!(
        shots[1].payload["detail"]["screenshotWithheld"]
            .as_str()
            .is_some_and(|w| w.contains("typing")),
        "{}",
        shots[1].payload
    );

    // Both pages: the second was opened as a new target, and steps name the page they were on.
    assert_eq!(actions(&records, "Target.createTarget").len(), 1);
    let page_of = |path: &str| {
        records
            .iter()
            .filter_map(|r| r.target.as_ref())
            .find(|t| t["url"].as_str().is_some_and(|u| u.ends_with(path)))
            .and_then(|t| t["targetId"].as_str())
            .unwrap_or_else(|| panic!("no record names the page {path}"))
            .to_owned()
    };
    let first = page_of("/dashboard");
    let second = page_of("/invoices/INV-1042");
    assert_ne!(first, second, "the invoice is on a second page");
    assert_eq!(page_of("/login"), first);
    assert_eq!(page_of("/search"), first);

    // The report shows it all.
    let rendered =
        cdp_report::render_to_memory(&run_dir, &cdp_report::Options::default()).expect("render");
    let f = &rendered.figures;
    assert_eq!(f.failed_requests, 3, "{f:?}");
    assert_eq!(f.console_errors, 2, "{f:?}");
    // The agent's four kept screenshots and the relay's own frames around failures.
    assert!(f.frames_embedded > 4, "{f:?}");
    assert_eq!(f.frames_left_out + f.artifacts_refused, 0, "{f:?}");
    assert_eq!(f.records_unreadable + f.records_generic, 0, "{f:?}");
    let html = std::fs::read_to_string(&report).expect("read report");
    assert_eq!(
        html, rendered.html,
        "report.html is the rendering of the final run"
    );

    // The sweep: nothing typed, no token, no cookie, in any byte of the evidence root or stderr.
    let planted = [
        ("username", USERNAME.to_owned()),
        ("username, form-encoded", USERNAME.replace('@', "%40")),
        ("password", PASSWORD.to_owned()),
        ("password, form-encoded", PASSWORD.replace('!', "%21")),
        ("one-time code", OTP.to_owned()),
        ("query token", LIVE_TOKEN.to_owned()),
        ("session cookie", SESSION_COOKIE.to_owned()),
        ("search text", SEARCH.to_owned()),
        ("search text, form-encoded", SEARCH.replace(' ', "+")),
    ];
    let files = all_files(evidence.path());
    assert!(
        files.len() >= 8,
        "{:?}",
        files.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (what, secret) in &planted {
        for (path, bytes) in &files {
            assert!(!leaks(bytes, secret), "the {what} is in {path}");
        }
        assert!(
            !leaks(run.stderr.as_bytes(), secret),
            "the {what} is on stderr:\n{}",
            run.stderr
        );
    }
    scratch.assert_clean();
}

#[tokio::test]
async fn demo_without_a_working_browser_fails_in_one_line_and_leaves_nothing() {
    let scratch = Scratch::new();
    let evidence = tempfile::tempdir().expect("evidence dir");
    let run = demo(
        &scratch,
        &[
            "--evidence-dir",
            &evidence.path().to_string_lossy(),
            "--browser",
            "/bin/false",
        ],
    )
    .await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one error line:\n{}", run.stderr);
    assert!(lines[0].starts_with("cdp-relay: "), "{}", run.stderr);
    assert!(lines[0].contains("failed to start"), "{}", run.stderr);
    assert!(
        !evidence.path().join("runs").exists(),
        "a demo that never ran must leave no run"
    );
    scratch.assert_clean();
}
