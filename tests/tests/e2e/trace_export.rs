//! `cdp-relay export --format trace|har` end to end, on the demo's run (a real Chromium driven
//! through the relay): Playwright 1.65.1's own `trace` command line (`open`, `actions`,
//! `requests`, `console`, `errors`) reads the archive without error and finds as many actions
//! as the run has steps, and as many requests, console messages and failed steps as the journal
//! holds (counted here from the journal's typed records); its trace viewer, served by
//! `show-trace` on loopback and loaded in headless Chromium, lists the same actions. The HAR
//! reads as HAR 1.2 (the typed model in `tests/src/har.rs`) with the journal's requests, in
//! order, and Chrome DevTools' own HAR importer (bundled in Chromium) imports the same ones. No byte of any zip entry or of the HAR holds what the demo typed, the token in a
//! request's query or the session cookie, in any spelling. An agent's run through the MCP
//! gateway (chrome-devtools-mcp) exports, and serves as `evidence://runs/current/trace.zip`, a
//! trace whose top-level actions are its steps and whose `fill_form` call has its three typing
//! steps as children, with nothing it typed.

use cdp_evidence::{RunDir, Status, StoredPayload, StoredRecord, Verified, Word};
use cdp_relay_tests::files::{leaks, spellings, Scratch};
use cdp_relay_tests::har::Har;
use cdp_relay_tests::mcp::{
    chrome_devtools_mcp, element, playwright_mcp, text_of, McpGateway, SIGN_IN_FORM,
};
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::{clients_dir, demo_run, relay_binary, within};
use serde_json::json;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::AsyncBufReadExt as _;

// The demo's planted values: the same literals as in cli/src/demo/mod.rs.
const PLANTED: [(&str, &str); 6] = [
    ("username", "alex.morgan@ledgerly.test"),
    ("password", "demo-Passw0rd!"),
    ("one-time code", "824913"),
    ("query token", "lvt_4Qm9Zr7TxK2pWb8N"),
    ("session cookie", "sess_7fH3kQ9vLm2XpR5w"),
    ("search text", "overdue invoices"),
];

/// Playwright's command line, as the tests pin it.
fn playwright_cli() -> PathBuf {
    clients_dir()
        .join("node_modules")
        .join("@playwright")
        .join("test")
        .join("cli.js")
}

/// `cdp-relay export RUN --format FORMAT --out OUT`; its stderr (the export must succeed).
fn export(run_dir: &Path, format: &str, out: &Path) -> String {
    let o = std::process::Command::new(relay_binary())
        .arg("export")
        .arg(run_dir)
        .args(["--format", format, "--out"])
        .arg(out)
        .output()
        .expect("run cdp-relay export");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "export --format {format}: {stderr}");
    stderr
}

/// What the journal holds, counted from its typed records.
#[derive(Debug, Default)]
struct Journal {
    /// The failed requests, in time order: (method, url, status).
    requests: Vec<(String, String, Option<u16>)>,
    console: usize,
    /// Steps whose record failed, or whose typing did not land.
    failed_steps: usize,
}

fn journal(run_dir: &Path) -> Journal {
    let run = RunDir::open(run_dir).expect("open run");
    let manifest = run.manifest().expect("manifest");
    let read = run
        .journal(manifest.as_ref())
        .expect("journal")
        .expect("a journal");
    let mut records: Vec<&StoredRecord> = read.records.iter().collect();
    records.sort_by(|a, b| (a.started_at_ms, &a.action_id).cmp(&(b.started_at_ms, &b.action_id)));
    let mut j = Journal::default();
    for r in records {
        let failed = matches!(
            r.status_word(),
            Some(Word::Known(Status::Error | Status::Interrupted))
        );
        match r.typed_payload() {
            StoredPayload::Network(n) => j.requests.push((n.method, n.url, n.status)),
            StoredPayload::Console(_) => j.console += 1,
            StoredPayload::Action(a) => {
                let not_landed = a
                    .verification
                    .as_ref()
                    .is_some_and(|v| v.verified == Verified::False);
                j.failed_steps += usize::from(failed || not_landed);
            }
            _ => {}
        }
    }
    j
}

/// `playwright trace ARGS…` in `cwd` (where `trace open` extracts the archive); its stdout.
async fn trace_cli(cwd: &Path, args: &[&str]) -> String {
    let out = within(
        "playwright trace",
        tokio::process::Command::new("node")
            .arg(playwright_cli())
            .arg("trace")
            .args(args)
            .current_dir(cwd)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run playwright trace");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "playwright trace {args:?} failed:\n{stdout}\n{stderr}"
    );
    stdout
}

/// The number after `label` on its line of `trace open`'s summary.
fn figure(info: &str, label: &str) -> usize {
    let line = info
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label} in:\n{info}"));
    line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number in {line:?}"))
}

/// The numbered rows of a `trace actions` / `trace requests` listing.
fn rows(listing: &str) -> Vec<&str> {
    listing
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            t.split_once('.')
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect()
}

/// Every entry of a zip archive, by name.
fn zip_entries(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a zip archive");
    (0..archive.len())
        .map(|i| {
            let mut f = archive.by_index(i).expect("entry");
            let mut data = Vec::new();
            f.read_to_end(&mut data).expect("read entry");
            (f.name().expect("an entry name").to_string(), data)
        })
        .collect()
}

fn assert_no_planted(place: &str, bytes: &[u8]) {
    for (what, value) in PLANTED {
        for spelling in spellings(value) {
            assert!(
                !leaks(bytes, &spelling),
                "the {what} ({spelling}) is in {place}"
            );
        }
    }
}

#[tokio::test]
async fn the_demos_trace_opens_in_playwrights_trace_cli_with_the_journals_counts() {
    let evidence = tempfile::tempdir().expect("evidence");
    let run_dir = demo_run(evidence.path()).await;
    let work = tempfile::tempdir().expect("work");
    let zip_path = work.path().join("run.zip");
    let stderr = export(&run_dir, "trace", &zip_path);
    assert!(stderr.contains("npx playwright show-trace"), "{stderr}");
    // A zip never goes to a terminal: without --out the export is a usage error naming it.
    let no_out = std::process::Command::new(relay_binary())
        .arg("export")
        .arg(&run_dir)
        .args(["--format", "trace"])
        .output()
        .expect("run cdp-relay export");
    let said = String::from_utf8_lossy(&no_out.stderr);
    assert!(
        no_out.status.code() == Some(64) && no_out.stdout.is_empty() && said.contains("--out"),
        "{said}"
    );
    assert_eq!(said.trim().lines().count(), 1, "one line: {said}");

    // report.html names the command that gets the trace, and the one that opens it.
    let html = std::fs::read_to_string(run_dir.join("report.html")).expect("report.html");
    let run_id = run_dir.file_name().expect("a name").to_string_lossy();
    assert!(
        html.contains(&format!(
            "cdp-relay export {run_id} --format trace --out run.zip"
        )) && html.contains("npx playwright show-trace run.zip"),
        "report.html names no trace command"
    );

    let j = journal(&run_dir);
    let steps = cdp_report::render_to_memory(&run_dir, &cdp_report::Options::default())
        .expect("render")
        .figures
        .steps;
    assert!(
        steps > 10 && !j.requests.is_empty() && j.console > 0,
        "{j:?}"
    );

    let info = trace_cli(work.path(), &["open", "run.zip"]).await;
    assert_eq!(figure(&info, "Actions:"), steps, "{info}");
    assert_eq!(figure(&info, "Network:"), j.requests.len(), "{info}");
    assert_eq!(figure(&info, "Console:"), j.console, "{info}");
    assert_eq!(figure(&info, "Errors:"), j.failed_steps, "{info}");
    assert_eq!(
        figure(&info, "Pages:"),
        2,
        "the demo opens a second page:\n{info}"
    );

    let actions = trace_cli(work.path(), &["actions"]).await;
    assert_eq!(rows(&actions).len(), steps, "{actions}");
    assert!(actions.contains("Typed 14 chars (password)"), "{actions}");
    let failed = trace_cli(work.path(), &["actions", "--errors-only"]).await;
    assert_eq!(rows(&failed).len(), j.failed_steps, "{failed}");

    let requests = trace_cli(work.path(), &["requests"]).await;
    assert_eq!(rows(&requests).len(), j.requests.len(), "{requests}");
    for (method, url, status) in &j.requests {
        let name = url.rsplit('/').next().unwrap_or_default();
        let status = status.map_or("ERR".to_owned(), |s| s.to_string());
        assert!(
            rows(&requests)
                .iter()
                .any(|r| r.contains(method.as_str()) && r.contains(name) && r.contains(&status)),
            "{method} {url} {status} not in:\n{requests}"
        );
    }
    let console = trace_cli(work.path(), &["console"]).await;
    assert_eq!(
        console.lines().filter(|l| l.contains("[browser]")).count(),
        j.console,
        "{console}"
    );
    let errors = trace_cli(work.path(), &["errors"]).await;
    if j.failed_steps == 0 {
        assert!(errors.contains("No errors"), "{errors}");
    } else {
        assert_eq!(errors.matches('✗').count(), j.failed_steps, "{errors}");
    }

    // The sweep: every byte of every entry.
    let bytes = std::fs::read(&zip_path).expect("read run.zip");
    let entries = zip_entries(&bytes);
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"trace.trace") && names.contains(&"trace.network"),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("resources/")),
        "{names:?}"
    );
    for (name, data) in &entries {
        assert_no_planted(name, data);
    }
    assert_no_planted("run.zip", &bytes);
    assert_no_planted("export's stderr", stderr.as_bytes());
}

#[tokio::test]
async fn the_demos_har_is_har_1_2_with_the_journals_requests_and_no_secret() {
    let evidence = tempfile::tempdir().expect("evidence");
    let run_dir = demo_run(evidence.path()).await;
    let work = tempfile::tempdir().expect("work");
    let har_path = work.path().join("run.har");
    let stderr = export(&run_dir, "har", &har_path);
    let text = std::fs::read_to_string(&har_path).expect("read run.har");
    let har = Har::read(&text).unwrap_or_else(|e| panic!("not HAR 1.2: {e}\n{text}"));

    let j = journal(&run_dir);
    let read: Vec<(String, String, Option<u16>)> = har
        .log
        .entries
        .iter()
        .map(|e| {
            let status = u16::try_from(e.response.status).ok().filter(|s| *s > 0);
            (e.request.method.clone(), e.request.url.clone(), status)
        })
        .collect();
    assert_eq!(
        read, j.requests,
        "the HAR's requests are the journal's, in order"
    );
    for e in &har.log.entries {
        assert!(e.request.headers.is_empty() && e.response.headers.is_empty());
        assert!(e.request.cookies.is_empty() && e.response.cookies.is_empty());
        assert!(e.request.query_string.is_empty() && !e.request.url.contains('?'));
        assert!(e.request.post_data.is_none() && e.response.content.text.is_none());
        let ours = e.custom.get("_cdpRelay").expect("_cdpRelay on every entry");
        assert!(ours["step"].as_u64().is_some_and(|s| s >= 1), "{ours}");
    }
    assert_no_planted("run.har", text.as_bytes());
    assert_no_planted("export's stderr", stderr.as_bytes());

    // Chrome DevTools' own importer (the frontend bundled in Chromium) takes the same requests.
    let out = within(
        "DevTools' HAR importer",
        tokio::process::Command::new("node")
            .arg(clients_dir().join("devtools_har.mjs"))
            .arg(&har_path)
            .current_dir(clients_dir())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run devtools_har.mjs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "DevTools cannot import the HAR: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let imported: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a line")).expect("JSON");
    let imported: Vec<(String, String, Option<u16>)> = imported["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .map(|r| {
            let status = r["status"].as_u64().filter(|s| *s > 0).map(|s| s as u16);
            (
                r["method"].as_str().expect("method").to_owned(),
                r["url"].as_str().expect("url").to_owned(),
                status,
            )
        })
        .collect();
    assert_eq!(
        imported, j.requests,
        "DevTools imports the journal's requests"
    );
}

/// `playwright show-trace --host 127.0.0.1 --port 0 FILE`: the viewer's server, killed on drop.
struct Viewer {
    _child: tokio::process::Child,
    url: String,
}

impl Viewer {
    async fn serve(trace: &Path) -> Viewer {
        let mut child = tokio::process::Command::new("node")
            .arg(playwright_cli())
            .args(["show-trace", "--host", "127.0.0.1", "--port", "0"])
            .arg(trace)
            .current_dir(trace.parent().expect("a directory"))
            // It opens the URL with xdg-open, which runs $BROWSER: a no-op here.
            .env("BROWSER", "true")
            .env_remove("DISPLAY")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn show-trace");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        let url = within("show-trace to listen", async {
            while let Some(line) = lines.next_line().await.expect("read show-trace") {
                if let Some(url) = line.trim().strip_prefix("Listening on ") {
                    return url.to_owned();
                }
            }
            panic!("show-trace exited without listening");
        })
        .await;
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Viewer { _child: child, url }
    }
}

#[tokio::test]
async fn the_trace_viewer_served_on_loopback_lists_the_demos_steps() {
    let evidence = tempfile::tempdir().expect("evidence");
    let run_dir = demo_run(evidence.path()).await;
    let work = tempfile::tempdir().expect("work");
    let zip_path = work.path().join("run.zip");
    export(&run_dir, "trace", &zip_path);
    let actions = trace_cli(work.path(), &["open", "run.zip"]).await;
    let steps = figure(&actions, "Actions:");
    let listed = trace_cli(work.path(), &["actions"]).await;

    let viewer = Viewer::serve(&zip_path).await;
    // Kept where a person can look at it after the run.
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace-viewer-demo.png");
    let out = within(
        "the trace viewer in Chromium",
        tokio::process::Command::new("node")
            .arg(clients_dir().join("trace_viewer.mjs"))
            .arg(&viewer.url)
            .arg(&shot)
            .arg(steps.to_string())
            .current_dir(clients_dir())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run trace_viewer.mjs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a line")).expect("JSON");
    assert_eq!(report["pageErrors"], serde_json::json!([]), "{report}");
    let titles: Vec<String> = report["titles"]
        .as_array()
        .expect("titles")
        .iter()
        .map(|t| {
            t.as_str()
                .expect("a title")
                .lines()
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(titles.len(), steps, "{report}");
    // Each title the viewer shows is the one Playwright's command line lists, in order.
    let listed_titles: Vec<String> = rows(&listed)
        .iter()
        .map(|r| r.split_whitespace().skip(2).collect::<Vec<_>>().join(" "))
        .collect();
    for (shown, row) in titles.iter().zip(&listed_titles) {
        assert!(row.starts_with(shown.as_str()), "{shown:?} vs {row:?}");
    }
    assert!(
        titles.iter().any(|t| t == "Typed 14 chars (password)"),
        "{titles:?}"
    );
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a screenshot of the viewer");
}

// What the agent types through the gateway (planted: no trace may hold them).
const AGENT_USER: &str = "trace.agent@example.test";
const AGENT_PASSWORD: &str = "Tr4ce-Gateway-Passw0rd";
const AGENT_OTP: &str = "738204";

/// A sign-in page that logs an error and whose sign-in request fails with a 500.
fn failing_sign_in() -> std::collections::HashMap<&'static str, Route> {
    let script = r#"<script>
console.error('sign-in widget failed to load');
document.getElementById('f').addEventListener('submit', async (e) => {
  e.preventDefault();
  const r = await fetch('/api/session?next=%2Fhome', { method: 'POST' });
  document.title = r.ok ? 'Welcome' : 'Sign-in failed';
  document.body.insertAdjacentHTML('beforeend', '<h1>' + document.title + '</h1>');
});
</script>"#;
    let mut r = std::collections::HashMap::new();
    r.insert(
        "/login",
        Route::ok(
            "text/html",
            format!("<!doctype html><title>Sign in</title>\n{SIGN_IN_FORM}\n{script}"),
        ),
    );
    r.insert(
        "/api/session",
        Route::ok("application/json", "{\"error\":\"down\"}").status(500),
    );
    r
}

/// The rows of `trace actions` that are children (indented under their parent's title).
fn child_rows(listing: &str) -> Vec<&str> {
    rows(listing)
        .into_iter()
        .filter(|r| {
            // `  N. M:SS.mmm  title`: a child's title is indented by two more spaces.
            let after_ts = r.trim_start().splitn(3, ' ').nth(2).unwrap_or("");
            after_ts.starts_with("   ")
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Server {
    ChromeDevtools,
    Playwright,
}

#[tokio::test]
async fn a_chrome_devtools_mcp_runs_trace_has_its_tool_calls_with_their_browser_actions() {
    gateway_run_trace(Server::ChromeDevtools).await;
}

#[tokio::test]
async fn a_playwright_mcp_runs_trace_has_its_tool_calls_with_their_browser_actions() {
    gateway_run_trace(Server::Playwright).await;
}

/// Signs in with each server's own tools (a fill_form of three fields, a click the site answers
/// with a 500, a wait), then clicks an element the page never had: a failed call.
async fn sign_in_and_fail(gw: &McpGateway, server: Server, url: &str) -> String {
    let pw = matches!(server, Server::Playwright);
    let tool = |cdm: &'static str, pwm: &'static str| if pw { pwm } else { cdm };
    let nav = gw
        .call(
            tool("navigate_page", "browser_navigate"),
            if pw {
                json!({"url": url})
            } else {
                json!({"type": "url", "url": url})
            },
        )
        .await;
    assert_ne!(nav.is_error, Some(true), "{}", text_of(&nav));
    let snapshot = text_of(
        &gw.call(tool("take_snapshot", "browser_snapshot"), json!({}))
            .await,
    );
    let (email, password, otp, sign_in) = (
        element(&snapshot, "textbox \"Email\""),
        element(&snapshot, "textbox \"Password\""),
        element(&snapshot, "textbox \"One-time code\""),
        element(&snapshot, "button \"Sign in\""),
    );
    let fields = if pw {
        json!({"fields": [
            {"name": "Email", "type": "textbox", "target": email, "value": AGENT_USER},
            {"name": "Password", "type": "textbox", "target": password, "value": AGENT_PASSWORD},
            {"name": "One-time code", "type": "textbox", "target": otp, "value": AGENT_OTP}
        ]})
    } else {
        json!({"elements": [
            {"uid": email, "value": AGENT_USER},
            {"uid": password, "value": AGENT_PASSWORD},
            {"uid": otp, "value": AGENT_OTP}
        ]})
    };
    let fill = tool("fill_form", "browser_fill_form");
    let filled = gw.call(fill, fields).await;
    assert_ne!(filled.is_error, Some(true), "{}", text_of(&filled));
    let click = tool("click", "browser_click");
    let target = |t: &str| {
        if pw {
            json!({"element": "Sign in button", "target": t})
        } else {
            json!({"uid": t})
        }
    };
    let clicked = gw.call(click, target(&sign_in)).await;
    assert_ne!(clicked.is_error, Some(true), "{}", text_of(&clicked));
    let failed = gw
        .call(
            tool("wait_for", "browser_wait_for"),
            if pw {
                json!({"text": "Sign-in failed"})
            } else {
                json!({"text": ["Sign-in failed"]})
            },
        )
        .await;
    assert_ne!(failed.is_error, Some(true), "{}", text_of(&failed));
    // A call that fails: an element the page never had.
    let missing = gw
        .call(click, target(if pw { "e999" } else { "9_999" }))
        .await;
    assert_eq!(missing.is_error, Some(true), "{}", text_of(&missing));
    fill.to_owned()
}

async fn gateway_run_trace(server: Server) {
    let site = Site::start(failing_sign_in()).await;
    let scratch = Scratch::new();
    let output = tempfile::tempdir().expect("output dir");
    let mut args = vec!["--".to_owned()];
    args.extend(match server {
        Server::ChromeDevtools => chrome_devtools_mcp(),
        Server::Playwright => playwright_mcp(output.path()),
    });
    let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;
    let fill = sign_in_and_fail(&gw, server, &format!("{}/login", site.origin)).await;

    // The resource, built on read while the run is recorded.
    let read = gw
        .read("evidence://runs/current/trace.zip")
        .await
        .expect("the trace resource");
    let rmcp::model::ResourceContents::BlobResourceContents { blob, .. } = &read.contents[0] else {
        panic!("not a blob: {read:?}")
    };
    use base64::Engine as _;
    let resource = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .expect("base64");
    let closed = gw.close().await;
    let run_dir = closed.runs().remove(0);

    let work = tempfile::tempdir().expect("work");
    let during = work.path().join("during.zip");
    std::fs::write(&during, &resource).expect("write during.zip");
    let info = trace_cli(work.path(), &["open", "during.zip"]).await;
    assert!(figure(&info, "Actions:") >= 5, "{info}");

    let zip_path = work.path().join("run.zip");
    let stderr = export(&run_dir, "trace", &zip_path);
    let j = journal(&run_dir);
    let steps = cdp_report::render_to_memory(&run_dir, &cdp_report::Options::default())
        .expect("render")
        .figures
        .steps;
    let info = trace_cli(work.path(), &["open", "run.zip"]).await;
    assert_eq!(figure(&info, "Network:"), j.requests.len(), "{info}");
    assert!(!j.requests.is_empty(), "the sign-in request failed: {j:?}");
    assert_eq!(figure(&info, "Console:"), j.console, "{info}");
    assert!(j.console > 0, "the page logged an error: {j:?}");
    assert_eq!(figure(&info, "Errors:"), j.failed_steps, "{info}");
    assert!(j.failed_steps > 0, "the failed click: {j:?}");
    let listing = trace_cli(work.path(), &["actions"]).await;
    let failed_rows = trace_cli(work.path(), &["actions", "--errors-only"]).await;
    assert_eq!(rows(&failed_rows).len(), j.failed_steps, "{failed_rows}");
    assert!(
        rows(&failed_rows).iter().all(|r| r.contains("click")),
        "{failed_rows}"
    );
    let errors = trace_cli(work.path(), &["errors"]).await;
    assert_eq!(errors.matches('✗').count(), j.failed_steps, "{errors}");
    let children = child_rows(&listing);
    assert_eq!(
        rows(&listing).len() - children.len(),
        steps,
        "the top-level actions are the report's steps:\n{listing}"
    );
    assert_eq!(figure(&info, "Actions:"), rows(&listing).len(), "{info}");
    // The fill_form call, then its three typing steps as its children.
    let all = rows(&listing);
    let fill = all
        .iter()
        .position(|r| r.contains(&fill))
        .unwrap_or_else(|| panic!("no {fill} call:\n{listing}"));
    let typed: Vec<&&str> = all[fill + 1..]
        .iter()
        .take_while(|r| children.contains(r))
        .filter(|r| r.contains("Typed "))
        .collect();
    assert_eq!(
        typed.len(),
        3,
        "three fields typed under {fill}:\n{listing}"
    );
    let requests = trace_cli(work.path(), &["requests"]).await;
    assert!(
        rows(&requests)
            .iter()
            .any(|r| r.contains("POST") && r.contains("session") && r.contains("500")),
        "{requests}"
    );
    assert!(!requests.contains("next="), "no query: {requests}");

    for (name, bytes) in [
        ("the resource", resource),
        ("run.zip", std::fs::read(&zip_path).expect("read")),
    ] {
        for (entry, data) in zip_entries(&bytes)
            .iter()
            .chain([(name.to_owned(), bytes.clone())].iter())
        {
            for planted in [AGENT_USER, AGENT_PASSWORD, AGENT_OTP] {
                for spelling in spellings(planted) {
                    assert!(
                        !leaks(data, &spelling),
                        "{planted} ({spelling}) in {name}: {entry}"
                    );
                }
            }
        }
    }
    for planted in [AGENT_USER, AGENT_PASSWORD, AGENT_OTP] {
        assert!(!leaks(stderr.as_bytes(), planted), "{stderr}");
    }
}
