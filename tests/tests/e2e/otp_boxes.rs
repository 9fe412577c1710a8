//! A one-time code typed one digit per box is never kept (issue 38, item 1): a real six-box
//! page (`maxlength=1`, focus moving on as a digit lands) that echoes the code into its text,
//! its title and a console error, asks `GET /api/verify/<code>` and opens `/verify/<code>`,
//! driven
//!
//! - through `cdp-relay launch` by Playwright: one `keyboard.type` across the boxes, and one
//!   `fill` per box;
//! - through `cdp-relay mcp` by chrome-devtools-mcp (`fill` per box) and @playwright/mcp
//!   (`browser_type` per box).
//!
//! The run directory (journal, report.html, summary.md, frames), the spec `cdp-relay export`
//! writes, the relay's stderr and, for the gateway, every item and `_meta` it added to a
//! result hold no code. Each run must show the echoes happened (masked): a sweep that finds
//! nothing because nothing was echoed proves nothing.

use super::verdict_truth::{call, Server};
use cdp_evidence::StoredRecord;
use cdp_relay_tests::files::{all_files, leaks, Scratch};
use cdp_relay_tests::mcp::{element, journal, text_of, McpGateway};
use cdp_relay_tests::site::Site;
use cdp_relay_tests::typing_pages::typing_routes;
use cdp_relay_tests::{export_spec, only_run, run_node_client, within, RelayProcess};
use serde_json::{json, Value};
use std::path::Path;

/// The first line of the gateway's own content item.
const HEADER: &str = "cdp-relay evidence for this call:";

/// Where `code` is in `bytes`, plain or URL-encoded (the same for digits: the page's
/// `encodeURIComponent` and the browser's path leave them as they are).
fn hits(place: &str, bytes: &[u8], code: &str, out: &mut Vec<String>) {
    if leaks(bytes, code) {
        out.push(format!("{code} in {place}"));
    }
}

/// Sweeps the run, its report and summary, its exported spec and `stderr` for `codes`; checks
/// the page's echoes of each code were recorded, masked.
fn sweep_run(run: &Path, stderr: &str, codes: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    let files = all_files(run);
    for name in ["report.html", "summary.md", "actions.jsonl"] {
        assert!(
            files.iter().any(|(p, _)| p.ends_with(name)),
            "{name} in {run:?}"
        );
    }
    let spec = export_spec(run, &[]);
    for code in codes {
        for (path, bytes) in &files {
            hits(path, bytes, code, &mut found);
        }
        hits("the exported spec", spec.as_bytes(), code, &mut found);
        if let Some(line) = cdp_relay_tests::files::log_leak(stderr, code) {
            found.push(format!("{code} in stderr: {line}"));
        }
    }
    // The echoes were there, masked: the failed request's path, the console error, the page
    // the code opened.
    let records = journal(run);
    let masked = |r: &StoredRecord, key: &str, needle: &str| {
        r.payload[key]
            .as_str()
            .is_some_and(|t| t.contains(needle) && t.contains("${TYPED_"))
    };
    let requests = records
        .iter()
        .filter(|r| r.kind == "network" && masked(r, "url", "/api/verify/"))
        .count();
    let consoles = records
        .iter()
        .filter(|r| r.kind == "console" && masked(r, "text", "expired"))
        .count();
    assert!(requests >= codes.len(), "{records:#?}");
    assert!(consoles >= codes.len(), "{records:#?}");
    assert!(
        spec.contains("/verify/${") || spec.contains("TYPED_"),
        "the spec follows the code's page, masked:\n{spec}"
    );
    found
}

/// Playwright through `cdp-relay launch`: the code typed across the boxes in one
/// `keyboard.type`, and another filled box by box.
#[tokio::test]
async fn a_code_typed_box_by_box_through_launch_is_never_kept() {
    within("six boxes through launch", async {
        const TYPED: &str = "757525";
        const FILLED: &str = "318642";
        let site = Site::start(typing_routes()).await;
        let scratch = Scratch::new();
        let evidence = tempfile::tempdir().expect("evidence");
        let dir = evidence.path().to_string_lossy().into_owned();
        let relay = RelayProcess::spawn(
            &[
                "-vv",
                "launch",
                "--listen",
                "127.0.0.1:0",
                "--evidence-dir",
                &dir,
            ],
            &[("TMPDIR", scratch.path().as_os_str())],
        )
        .await;
        cdp_relay_tests::observing(&relay.authority(), 1).await;
        let cfg = json!({
            "endpoint": relay.endpoint,
            "site": site.origin,
            "codes": [["type", TYPED], ["fill", FILLED]],
        });
        let run = run_node_client("otp.mjs", &cfg.to_string()).await;
        assert!(run.ok, "otp.mjs failed:\n{}", run.stderr);
        let stderr = relay.stop().await;
        let run_dir = only_run(evidence.path());
        let records = journal(&run_dir);
        let mut typing: Vec<&StoredRecord> = records
            .iter()
            .filter(|r| r.kind == "action" && r.payload["method"] == "type")
            .collect();
        typing.sort_by(|a, b| (&a.started_at, &a.action_id).cmp(&(&b.started_at, &b.action_id)));
        let chars: Vec<u64> = typing
            .iter()
            .map(|r| r.payload["input"]["chars"].as_u64().unwrap_or(0))
            .collect();
        assert_eq!(
            chars,
            [6, 1, 1, 1, 1, 1, 1],
            "one step across the boxes, then one per box"
        );
        for t in &typing {
            assert_eq!(t.payload["input"]["inputType"], "one-time-code", "{t:?}");
        }
        let found = sweep_run(&run_dir, &stderr, &[TYPED, FILLED]);
        assert!(found.is_empty(), "the code was kept: {found:#?}");
        scratch.assert_clean();
    })
    .await;
}

/// The code filled one box per call through `cdp-relay mcp` in front of `server`.
async fn boxes_through(server: Server, code: &str) {
    let site = Site::start(typing_routes()).await;
    let scratch = Scratch::new();
    let output = tempfile::tempdir().expect("output dir");
    let mut args: Vec<String> = vec!["--".into()];
    args.extend(server.command(output.path()));
    let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;
    let mut results = Vec::new();
    let nav = call(&gw, server.navigate(&format!("{}/otp", site.origin))).await;
    assert_ne!(nav.is_error, Some(true), "{}", text_of(&nav));
    let snapshot = text_of(&call(&gw, server.snapshot()).await);
    for (i, digit) in code.chars().enumerate() {
        let label = format!("Digit {}", i + 1);
        let target = element(&snapshot, &format!("textbox \"{label}\""));
        let r = call(&gw, server.fill(&target, &label, &digit.to_string())).await;
        assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
        results.push(r);
    }
    // The page the code opens says "not found".
    let (wait, args) = match server {
        Server::ChromeDevtools => ("wait_for", json!({"text": ["not found"]})),
        Server::Playwright => ("browser_wait_for", json!({"text": "not found"})),
    };
    results.push(gw.call(wait, args).await);
    results.push(gw.call("evidence_summary", json!({})).await);
    let closed = gw.close().await;
    assert_eq!(closed.code, Some(0), "{}", closed.stderr);
    let runs = closed.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let mut found = sweep_run(&runs[0], &closed.stderr, &[code]);
    for (i, r) in results.iter().enumerate() {
        let value = serde_json::to_value(r).expect("result");
        let meta = value["_meta"]["cdp-relay/evidence"].to_string();
        hits(
            &format!("result {i}: _meta"),
            meta.as_bytes(),
            code,
            &mut found,
        );
        for item in r.content.iter().filter_map(|c| c.as_text()) {
            if item.text.starts_with(HEADER) || i == results.len() - 1 {
                hits(
                    &format!("result {i}: the gateway's item"),
                    item.text.as_bytes(),
                    code,
                    &mut found,
                );
            }
        }
    }
    assert!(
        found.is_empty(),
        "{server:?}: the code was kept: {found:#?}"
    );
    // Nothing pretends the boxes were verified: a sensitive field's steps are not read back.
    let records = journal(&runs[0]);
    let steps: Vec<&Value> = records
        .iter()
        .filter(|r| r.kind == "action" && r.payload["method"] == "type")
        .map(|r| &r.payload)
        .collect();
    assert_eq!(steps.len(), code.len(), "{steps:#?}");
    for s in steps {
        assert_eq!(s["input"]["inputType"], "one-time-code", "{s}");
        assert_eq!(s["verification"]["reason"], "sensitive-field", "{s}");
    }
    scratch.assert_clean();
}

#[tokio::test]
async fn a_code_filled_box_by_box_through_chrome_devtools_mcp_is_never_kept() {
    within(
        "six boxes through chrome-devtools-mcp",
        boxes_through(Server::ChromeDevtools, "580614"),
    )
    .await;
}

#[tokio::test]
async fn a_code_filled_box_by_box_through_playwright_mcp_is_never_kept() {
    within(
        "six boxes through @playwright/mcp",
        boxes_through(Server::Playwright, "462097"),
    )
    .await;
}
