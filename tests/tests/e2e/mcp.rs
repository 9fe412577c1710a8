//! An agent's browser session through `cdp-relay mcp`, with the real servers agents use
//! (chrome-devtools-mcp, @playwright/mcp from `tests/clients`) and a real Chromium: a login on a
//! local site with planted secrets — navigate, snapshot, fill a form with a password and a
//! one-time code, click, a failed request, console errors, the server's own network and console
//! listings, a screenshot, the evidence tools and resources.
//!
//! Then: one record per call with its arguments reduced, the CDP actions linked to the call
//! that caused them, the report's tool steps with their effects under them, the resources, and
//! a sweep of every byte of the run directory and of the gateway's stderr for every planted
//! value: zero hits.

use cdp_evidence::StoredRecord;
use cdp_relay_tests::files::{all_files, leaks, Scratch};
use cdp_relay_tests::mcp::{
    chrome_devtools_mcp, element, journal, mcp_calls, playwright_mcp, resource_text, sign_in_page,
    sign_in_with_chrome_devtools_mcp, text_of, Closed, McpGateway,
};
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::within;
use rmcp::model::ResourceContents;
use serde_json::{json, Value};
use std::collections::HashMap;

const USER: &str = "ada.planted@example.test";
const PASSWORD: &str = "Pl4nted-MCP-Passw0rd";
const OTP: &str = "731946";
const QUERY_TOKEN: &str = "qtok_McpPlanted8Hq2Lm";
const BEARER: &str = "bearer_McpPlanted3nV6yT";
const COOKIE: &str = "ck_McpPlanted9wE2rT5";
const ACCOUNT: &str = "ACCT-PLANTED-55190";
const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJtY3BwbGFudGVkIn0.dGhpc2lzbm90YXJlYWxzaWduYXR1cmVmb3J0ZXN0cw";

fn planted() -> [&'static str; 8] {
    [
        USER,
        PASSWORD,
        OTP,
        QUERY_TOKEN,
        BEARER,
        COOKIE,
        ACCOUNT,
        JWT,
    ]
}

fn site_routes() -> HashMap<&'static str, Route> {
    let login = sign_in_page(QUERY_TOKEN, BEARER, "", "location.href = '/welcome';");
    let welcome = format!(
        r#"<!doctype html><title>Welcome</title><h1>Welcome back</h1>
<p>Account {ACCOUNT}</p><img src="/missing.png" alt="avatar">
<script>console.error('account {ACCOUNT} token {JWT} cookie ' + document.cookie);</script>"#
    );
    let mut r = HashMap::new();
    r.insert("/login", Route::ok("text/html", login));
    r.insert(
        "/welcome",
        Route::ok("text/html", welcome).header(format!("Set-Cookie: session={COOKIE}; Path=/")),
    );
    r.insert("/api/login", Route::ok("text/plain", "down").status(500));
    r
}

fn call<'a>(records: &'a [StoredRecord], method: &str) -> &'a StoredRecord {
    mcp_calls(records)
        .into_iter()
        .find(|r| r.payload["method"] == method)
        .unwrap_or_else(|| panic!("no record of {method}"))
}

/// The relay's records linked to the call `of`.
fn linked<'a>(records: &'a [StoredRecord], of: &StoredRecord) -> Vec<&'a StoredRecord> {
    records
        .iter()
        .filter(|r| r.tool_call() == Some(of.action_id.as_str()))
        .collect()
}

/// What both sessions check once the gateway has exited: the run, the report, the sweep.
struct Expect<'a> {
    /// The tool calls made, in order (each must have exactly one record).
    calls: &'a [&'a str],
    navigate: &'a str,
    fill: &'a str,
    click: &'a str,
}

fn check(closed: &Closed, expect: &Expect<'_>) {
    assert_eq!(closed.code, Some(0), "{}", closed.stderr);
    let runs = closed.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    // To look at a run afterwards: CDP_RELAY_KEEP_RUN=/some/dir.
    if let Some(keep) = std::env::var_os("CDP_RELAY_KEEP_RUN") {
        let to = std::path::Path::new(&keep).join(expect.fill);
        let _ = std::process::Command::new("cp")
            .arg("-r")
            .arg(run)
            .arg(&to)
            .status();
        let _ = std::fs::write(to.join("gateway-stderr.txt"), &closed.stderr);
    }
    let records = journal(run);

    // One record per call, in order, named by the tool.
    let made: Vec<String> = mcp_calls(&records)
        .iter()
        .map(|r| r.payload["method"].as_str().unwrap_or_default().to_owned())
        .collect();
    let mut want: Vec<String> = expect.calls.iter().map(|s| s.to_string()).collect();
    let mut got = made.clone();
    want.sort();
    got.sort();
    assert_eq!(got, want, "one record per call: {made:?}");

    // Reduced arguments: the URL without its query, typed text as lengths.
    let nav = call(&records, expect.navigate);
    let url = nav.payload["arguments"]
        .as_array()
        .and_then(|a| a.iter().find_map(|x| x["url"].as_str()))
        .expect("a reduced url");
    assert!(url.ends_with("/login"), "{url}");
    let fill = call(&records, expect.fill);
    let inputs: Vec<u64> = fill.payload["arguments"]
        .to_string()
        .match_indices("\"chars\":")
        .filter_map(|(i, _)| {
            let rest = &fill.payload["arguments"].to_string()[i + 8..];
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect();
    for typed in [USER, PASSWORD, OTP] {
        assert!(
            inputs.contains(&(typed.chars().count() as u64)),
            "{typed:?} as its length in {}",
            fill.payload["arguments"]
        );
    }

    // The CDP actions name the call that caused them.
    let nav_effects = linked(&records, nav);
    assert!(
        nav_effects
            .iter()
            .any(|r| r.payload["method"] == "Page.navigate"),
        "{nav_effects:?}"
    );
    let typing: Vec<&StoredRecord> = linked(&records, fill)
        .into_iter()
        .filter(|r| r.payload["method"] == "type")
        .collect();
    assert!(!typing.is_empty(), "typing linked to {}", expect.fill);
    assert!(
        typing
            .iter()
            .any(|r| r.payload["input"]["inputType"] == "password"),
        "{typing:?}"
    );
    let click = call(&records, expect.click);
    let click_effects = linked(&records, click);
    assert!(
        click_effects.iter().any(|r| r.payload["method"] == "click"),
        "{click_effects:?}"
    );
    assert!(
        click_effects.iter().any(|r| r.kind == "network"
            && r.payload["url"]
                .as_str()
                .is_some_and(|u| u.ends_with("/api/login"))),
        "the failed request is the click's: {click_effects:?}"
    );

    // The report: tool calls are the steps, their CDP actions under them.
    let summary = std::fs::read_to_string(run.join("summary.md")).expect("summary.md");
    assert!(summary.contains(&format!("`{}`", expect.fill)), "{summary}");
    assert!(
        summary.contains("→ "),
        "effects listed under the calls:\n{summary}"
    );
    assert!(summary.contains("password"), "{summary}");
    let html = std::fs::read_to_string(run.join("report.html")).expect("report.html");
    assert!(
        html.contains("class=\"effects\""),
        "the calls' effects in report.html; summary.md was:\n{summary}"
    );
    assert!(html.contains(expect.fill));

    // The sweep: nothing planted anywhere on disk or on stderr.
    let mut hits = Vec::new();
    for (path, bytes) in all_files(run) {
        for secret in planted() {
            if leaks(&bytes, secret) {
                hits.push(format!("{secret} in {path}"));
            }
        }
    }
    for secret in planted() {
        if leaks(closed.stderr.as_bytes(), secret) {
            hits.push(format!("{secret} on the gateway's stderr"));
        }
    }
    assert!(hits.is_empty(), "planted values found: {hits:#?}");
    // The account number the agent registered shows as its name.
    assert!(
        std::fs::read_to_string(run.join("actions.jsonl"))
            .unwrap()
            .contains("${ACCOUNT_NUMBER}"),
        "the registered secret is masked by name"
    );
}

/// The evidence tools and resources in the middle of a session.
async fn check_evidence_tools(gw: &McpGateway, click: &str) {
    // With the observer on, a failure is written with the frame taken after it, up to seconds
    // later: wait until the journal has the failed login and a console error.
    gw.journal_until("the failures of the sign-in", |records| {
        records.iter().any(|r| {
            r.kind == "network"
                && r.payload["url"]
                    .as_str()
                    .is_some_and(|u| u.ends_with("/api/login"))
        }) && records.iter().any(|r| r.kind == "console")
    })
    .await;
    let summary = gw.call("evidence_summary", json!({})).await;
    let s = summary.structured_content.expect("structured");
    let failures = s["failures"].as_array().expect("failures");
    let login = failures
        .iter()
        .find(|f| f["url"].as_str().is_some_and(|u| u.ends_with("/api/login")))
        .unwrap_or_else(|| panic!("the failed login request in {s}"));
    assert_eq!(login["status"], 500);
    assert!(
        login["step"].as_str().is_some_and(|st| st.ends_with(click)),
        "{login}"
    );
    assert!(
        failures.iter().any(|f| f["kind"] == "console"),
        "console errors: {s}"
    );
    let text_all = s.to_string();
    for secret in planted() {
        assert!(
            !leaks(text_all.as_bytes(), secret),
            "{secret} in {text_all}"
        );
    }

    let runs = resource_text(&gw.read("evidence://runs").await.expect("runs"));
    assert!(runs.contains(s["runId"].as_str().expect("runId")));
    let summary_md = resource_text(
        &gw.read("evidence://runs/current/summary.md")
            .await
            .expect("summary"),
    );
    assert!(summary_md.contains(&format!("`{click}`")), "{summary_md}");
    let journal = resource_text(
        &gw.read("evidence://runs/current/actions.jsonl")
            .await
            .expect("journal"),
    );
    assert!(journal.contains("\"toolCall\""), "links in the journal");
    if let Some(frame) = failures.iter().find_map(|f| f["frame"].as_str()) {
        let image = gw.read(frame).await.expect("the frame");
        match &image.contents[0] {
            ResourceContents::BlobResourceContents {
                mime_type, blob, ..
            } => {
                assert_eq!(mime_type.as_deref(), Some("image/jpeg"));
                assert!(!blob.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn chrome_devtools_mcp_through_the_gateway() {
    within("chrome-devtools-mcp session", async {
        let site = Site::start(site_routes()).await;
        let scratch = Scratch::new();
        let mut args = vec!["--".to_owned()];
        args.extend(chrome_devtools_mcp());
        let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;

        gw.call(
            "evidence_register_secret",
            json!({"name": "ACCOUNT_NUMBER", "value": ACCOUNT}),
        )
        .await;
        gw.call("evidence_mark_step", json!({"label": "log in"}))
            .await;
        let url = format!("{}/login?token={QUERY_TOKEN}", site.origin);
        sign_in_with_chrome_devtools_mcp(&gw, &url, [USER, PASSWORD, OTP]).await;
        let welcome = gw.call("wait_for", json!({"text": ["Welcome back"]})).await;
        assert_ne!(welcome.is_error, Some(true), "{}", text_of(&welcome));
        let requests = text_of(&gw.call("list_network_requests", json!({})).await);
        assert!(requests.contains("missing.png"), "{requests}");
        gw.call("list_console_messages", json!({})).await;
        let shot = gw.call("take_screenshot", json!({})).await;
        assert!(
            shot.content
                .iter()
                .any(|c| matches!(c, rmcp::model::ContentBlock::Image(_))),
            "the screenshot passes through"
        );
        check_evidence_tools(&gw, "click").await;
        let closed = gw.close().await;
        check(
            &closed,
            &Expect {
                calls: &[
                    "evidence_register_secret",
                    "evidence_mark_step",
                    "navigate_page",
                    "take_snapshot",
                    "fill_form",
                    "click",
                    "wait_for",
                    "list_network_requests",
                    "list_console_messages",
                    "take_screenshot",
                    "evidence_summary",
                ],
                navigate: "navigate_page",
                fill: "fill_form",
                click: "click",
            },
        );
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn playwright_mcp_through_the_gateway() {
    within("@playwright/mcp session", async {
        let site = Site::start(site_routes()).await;
        let scratch = Scratch::new();
        let output = tempfile::tempdir().expect("output dir");
        let mut args = vec!["--".to_owned()];
        args.extend(playwright_mcp(output.path()));
        let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;

        gw.call(
            "evidence_register_secret",
            json!({"name": "ACCOUNT_NUMBER", "value": ACCOUNT}),
        )
        .await;
        let nav = gw
            .call(
                "browser_navigate",
                json!({"url": format!("{}/login?token={QUERY_TOKEN}", site.origin)}),
            )
            .await;
        assert_ne!(nav.is_error, Some(true), "{}", text_of(&nav));
        let snapshot = text_of(&gw.call("browser_snapshot", json!({})).await);
        let (email, password, otp, sign_in) = (
            element(&snapshot, "textbox \"Email\""),
            element(&snapshot, "textbox \"Password\""),
            element(&snapshot, "textbox \"One-time code\""),
            element(&snapshot, "button \"Sign in\""),
        );
        let filled = gw
            .call(
                "browser_fill_form",
                json!({"fields": [
                    {"name": "Email", "type": "textbox", "target": email, "value": USER},
                    {"name": "Password", "type": "textbox", "target": password, "value": PASSWORD},
                    {"name": "One-time code", "type": "textbox", "target": otp, "value": OTP}
                ]}),
            )
            .await;
        assert_ne!(filled.is_error, Some(true), "{}", text_of(&filled));
        let clicked = gw
            .call(
                "browser_click",
                json!({"element": "Sign in button", "target": sign_in}),
            )
            .await;
        assert_ne!(clicked.is_error, Some(true), "{}", text_of(&clicked));
        let welcome = gw
            .call("browser_wait_for", json!({"text": "Welcome back"}))
            .await;
        assert_ne!(welcome.is_error, Some(true), "{}", text_of(&welcome));
        let requests = text_of(
            &gw.call("browser_network_requests", json!({"static": true}))
                .await,
        );
        assert!(requests.contains("missing.png"), "{requests}");
        gw.call("browser_console_messages", json!({"level": "error"}))
            .await;
        gw.call("browser_take_screenshot", json!({"type": "png"}))
            .await;
        check_evidence_tools(&gw, "browser_click").await;
        let closed = gw.close().await;
        check(
            &closed,
            &Expect {
                calls: &[
                    "evidence_register_secret",
                    "browser_navigate",
                    "browser_snapshot",
                    "browser_fill_form",
                    "browser_click",
                    "browser_wait_for",
                    "browser_network_requests",
                    "browser_console_messages",
                    "browser_take_screenshot",
                    "evidence_summary",
                ],
                navigate: "browser_navigate",
                fill: "browser_fill_form",
                click: "browser_click",
            },
        );
        scratch.assert_clean();
    })
    .await;
}

/// Removes every `recordAs` property of a schema; true when there was one.
fn strip_record_as(v: &mut Value) -> bool {
    match v {
        Value::Object(m) => {
            let mut found = m
                .get_mut("properties")
                .and_then(Value::as_object_mut)
                .is_some_and(|p| p.remove("recordAs").is_some());
            for child in m.values_mut() {
                found |= strip_record_as(child);
            }
            found
        }
        Value::Array(items) => items.iter_mut().fold(false, |f, i| strip_record_as(i) | f),
        _ => false,
    }
}

#[tokio::test]
async fn the_wrapped_servers_tools_list_is_the_servers_own_plus_the_gateways() {
    within("tools/list", async {
        // The server alone, as an agent would start it.
        let chrome = cdp_relay_tests::Chromium::start().await;
        let (_child, direct) =
            cdp_relay_tests::mcp::serve_directly(&chrome_devtools_mcp(), &chrome.http()).await;
        let theirs = direct.list_all_tools().await.expect("direct tools");
        let scratch = Scratch::new();
        let mut args = vec!["--".to_owned()];
        args.extend(chrome_devtools_mcp());
        let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;
        let ours = gw.client().list_all_tools().await.expect("tools");
        // The gateway's own: evidence_mark_step, evidence_register_secret, evidence_summary,
        // evidence_finalize, evidence_export_test, evidence_list_variables, relay_endpoint.
        assert_eq!(ours.len(), theirs.len() + 7);
        // Unchanged but for the optional `recordAs` beside the typing tools' text.
        let mut with_record_as = Vec::new();
        let mut listed = serde_json::to_value(&ours[..theirs.len()]).unwrap();
        for tool in listed.as_array_mut().unwrap() {
            if strip_record_as(&mut tool["inputSchema"]) {
                with_record_as.push(tool["name"].as_str().unwrap().to_owned());
            }
        }
        assert_eq!(
            listed,
            serde_json::to_value(&theirs).unwrap(),
            "names, descriptions and schemas unchanged"
        );
        with_record_as.sort();
        assert_eq!(
            with_record_as,
            ["fill", "fill_form", "handle_dialog", "type_text"]
        );
        let _ = direct.cancel().await;
        let closed = gw.close().await;
        assert_eq!(closed.code, Some(0));
        scratch.assert_clean();
        let _: Value = json!(null);
    })
    .await;
}
