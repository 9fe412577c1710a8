//! `cdp-relay mcp --listen`: MCP over Streamable HTTP, driven by rmcp's Streamable HTTP client
//! (an official MCP SDK) and by raw HTTP where a client library would not misbehave.
//!
//! - Sessions in parallel, with each real server, share one loopback origin yet see only their
//!   own cookie and localStorage key, and each run holds exactly its own session's calls.
//! - DELETE, an abandoned client (the idle timeout), the wrapped server dying and SIGTERM each
//!   end the session, recorded with the reason, leaving no process, profile or open file.
//! - Access: a wrong Origin, no token where one is required, an unknown session id and another
//!   credential's session id are refused, counted, and start nothing; over the session limit an
//!   `initialize` gets 503 and a JSON-RPC error while the running session is untouched.
//! - Many short sessions in a row leave the gateway's fd count and RSS flat.

use cdp_relay_tests::mcp::{chrome_devtools_mcp, playwright_mcp, text_of};
use cdp_relay_tests::mcp_http::{Agent, HttpGateway};
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::within;
use rmcp::model::CallToolRequestParams;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone, Copy, Debug)]
enum Server {
    ChromeDevtools,
    Playwright,
}

impl Server {
    fn command(self, out: &std::path::Path) -> Vec<String> {
        match self {
            Server::ChromeDevtools => chrome_devtools_mcp(),
            Server::Playwright => playwright_mcp(out),
        }
    }

    fn navigate(self, url: &str) -> (&'static str, Value) {
        match self {
            Server::ChromeDevtools => ("navigate_page", json!({"type": "url", "url": url})),
            Server::Playwright => ("browser_navigate", json!({"url": url})),
        }
    }

    fn evaluate(self, function: &str) -> (&'static str, Value) {
        match self {
            Server::ChromeDevtools => ("evaluate_script", json!({"function": function})),
            Server::Playwright => ("browser_evaluate", json!({"function": function})),
        }
    }
}

async fn call(agent: &Agent, (name, args): (&'static str, Value)) -> String {
    let Value::Object(args) = args else {
        unreachable!("arguments are objects")
    };
    let params = CallToolRequestParams::new(name).with_arguments(args);
    let result = within(name, agent.call_tool(params))
        .await
        .unwrap_or_else(|e| panic!("{name} failed: {e}"));
    assert_ne!(result.is_error, Some(true), "{name}: {}", text_of(&result));
    text_of(&result)
}

/// Pages `/s0` … `/s7` on one loopback origin.
async fn site() -> Site {
    const PATHS: [&str; 8] = ["/s0", "/s1", "/s2", "/s3", "/s4", "/s5", "/s6", "/s7"];
    let routes: HashMap<&'static str, Route> = PATHS
        .iter()
        .map(|p| {
            (
                *p,
                Route::ok("text/html", "<!doctype html><title>s</title><p>page</p>"),
            )
        })
        .collect();
    Site::start(routes).await
}

/// `n` agents at once, each on its own session: each navigates to its own page on the same
/// origin, sets a cookie and a localStorage key, waits for all the others to have done so,
/// then reads both back.
async fn isolation(server: Server, n: usize) {
    let out = tempfile::tempdir().expect("server output dir");
    let gw = HttpGateway::spawn(
        &["--max-sessions", &n.to_string()],
        &server.command(out.path()),
    )
    .await;
    let site = Arc::new(site().await);
    let all_set = Arc::new(tokio::sync::Barrier::new(n));
    let gw = Arc::new(gw);
    let mut agents = tokio::task::JoinSet::new();
    for i in 0..n {
        let (gw, site, all_set) = (gw.clone(), site.clone(), all_set.clone());
        agents.spawn(async move {
            let agent = gw.connect(None).await;
            call(&agent, server.navigate(&format!("{}/s{i}", site.origin))).await;
            let set = format!(
                "() => {{ document.cookie = 'who=s{i}; path=/'; localStorage.setItem('who{i}', 's{i}'); return 'set'; }}"
            );
            call(&agent, server.evaluate(&set)).await;
            all_set.wait().await;
            let seen = call(
                &agent,
                server.evaluate("() => 'seen ' + document.cookie + ' keys ' + Object.keys(localStorage).sort().join(',')"),
            )
            .await;
            within("closing the session", agent.cancel())
                .await
                .expect("close");
            (i, seen)
        });
    }
    while let Some(done) = agents.join_next().await {
        let (i, seen) = done.expect("agent task");
        assert!(
            seen.contains(&format!("who=s{i}")) && seen.contains(&format!("who{i}")),
            "session {i} lost its own: {seen}"
        );
        for j in (0..n).filter(|j| *j != i) {
            assert!(
                !seen.contains(&format!("who=s{j}")) && !seen.contains(&format!("who{j}")),
                "session {i} sees session {j}'s cookie or storage: {seen}"
            );
        }
    }
    // DELETE ended every session: nothing is left running, open or on disk.
    let status = gw
        .status_until("every session ended", |s| s["mcp"]["sessionsOpen"] == 0)
        .await;
    assert_eq!(status["mcp"]["sessionsEnded"]["deleted"], n, "{status}");
    assert_eq!(status["mcp"]["sessionsStarted"], n, "{status}");
    assert_eq!(gw.descendants(), vec![], "processes left behind");
    assert_eq!(
        gw.tmp_entries()
            .iter()
            .filter(|e| e.contains("cdp-relay"))
            .count(),
        0,
        "profiles left: {:?}",
        gw.tmp_entries()
    );
    assert_eq!(
        gw.open_files_under(&[gw.evidence.path(), gw.tmp.path()]),
        Vec::<std::path::PathBuf>::new()
    );
    // One run per session, named by it, holding exactly its own three calls and its own page.
    let runs = gw.runs();
    assert_eq!(runs.len(), n, "{runs:?}");
    let mut pages_seen = Vec::new();
    for (dir, session) in &runs {
        let session = session.as_deref().expect("the run names its MCP session");
        assert!(
            session.len() == 32 && session.bytes().all(|b| b.is_ascii_hexdigit()),
            "{session}"
        );
        let bytes = std::fs::read(dir.join("actions.jsonl")).expect("journal");
        let records = cdp_evidence::parse_journal(&bytes).records;
        assert!(
            records
                .iter()
                .all(|r| r.session_id.as_deref() == Some(session)),
            "a record of another session in {dir:?}"
        );
        let calls = records
            .iter()
            .filter(|r| r.source.as_deref() == Some("mcp") && r.kind == "action")
            .count();
        assert_eq!(calls, 3, "{dir:?} holds {calls} tool calls");
        let text = String::from_utf8_lossy(&bytes);
        let pages: Vec<usize> = (0..n)
            .filter(|i| text.contains(&format!("/s{i}")))
            .collect();
        assert_eq!(pages.len(), 1, "{dir:?} mentions pages {pages:?}");
        pages_seen.push(pages[0]);
        assert!(
            text.contains("\"agentDisconnected\"") && text.contains("DELETE"),
            "the end is recorded in {dir:?}"
        );
        assert!(dir.join("report.html").is_file(), "{dir:?} was rendered");
    }
    pages_seen.sort_unstable();
    assert_eq!(pages_seen, (0..n).collect::<Vec<_>>());
    Arc::try_unwrap(gw)
        .ok()
        .expect("one owner")
        .process
        .stop()
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_sessions_of_chrome_devtools_mcp_share_nothing() {
    isolation(Server::ChromeDevtools, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_sessions_of_playwright_mcp_share_nothing() {
    isolation(Server::Playwright, 4).await;
}
