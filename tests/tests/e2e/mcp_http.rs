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

use cdp_relay_tests::mcp::{chrome_devtools_mcp, playwright_mcp, resource_text, text_of};
use cdp_relay_tests::mcp_http::{Agent, HttpGateway};
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::{rss_kib, within};
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
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
            // Evidence shows this session's run only, though every run shares the root.
            let all_runs: Vec<String> = gw
                .runs()
                .iter()
                .map(|(d, _)| d.file_name().expect("id").to_string_lossy().into_owned())
                .collect();
            assert_eq!(all_runs.len(), n, "every session's run exists now");
            let listed = within("evidence://runs", agent.read_resource(ReadResourceRequestParams::new("evidence://runs")))
                .await
                .expect("evidence://runs");
            let listed: Value = serde_json::from_str(&resource_text(&listed)).expect("JSON");
            assert_eq!(listed.as_array().map(Vec::len), Some(1), "session {i} lists {listed}");
            let readable: Vec<&String> = {
                let mut ok = Vec::new();
                for run in &all_runs {
                    let uri = format!("evidence://runs/{run}/manifest.json");
                    if agent.read_resource(ReadResourceRequestParams::new(uri)).await.is_ok() {
                        ok.push(run);
                    }
                }
                ok
            };
            assert_eq!(readable.len(), 1, "session {i} reads the runs {readable:?}");
            assert_eq!(listed[0]["id"], readable[0].as_str());
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
    // `cdp-relay runs` lists every session's run with its MCP session id.
    let listed = std::process::Command::new(cdp_relay_tests::relay_binary())
        .arg("runs")
        .arg("--evidence-dir")
        .arg(gw.evidence.path())
        .output()
        .expect("cdp-relay runs");
    let listed = String::from_utf8_lossy(&listed.stdout);
    for (dir, session) in &runs {
        let run = dir.file_name().expect("run id").to_string_lossy();
        let line = listed
            .lines()
            .find(|l| l.starts_with(&*run))
            .unwrap_or_else(|| panic!("{run} not listed:\n{listed}"));
        assert!(
            line.contains(session.as_deref().expect("session")),
            "{line}"
        );
    }
    Arc::try_unwrap(gw)
        .ok()
        .expect("one owner")
        .process
        .stop()
        .await;
}

/// A session's id, from the status page (the only one open).
async fn only_session(gw: &HttpGateway, headers: &[(&str, &str)]) -> String {
    let status = gw.status(headers).await;
    let sessions = status["sessions"].as_array().expect("sessions").clone();
    assert_eq!(sessions.len(), 1, "{status}");
    sessions[0]["id"].as_str().expect("id").to_owned()
}

/// The journal of the only run, once it is finalized.
async fn finalized_journal(gw: &HttpGateway) -> String {
    within("the run to be finalized", async {
        loop {
            let runs = gw.runs();
            if let [(dir, _)] = runs.as_slice() {
                if dir.join("report.html").is_file() {
                    let text = std::fs::read_to_string(dir.join("actions.jsonl")).expect("journal");
                    if text.contains("runFinalized") {
                        return text;
                    }
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_session_ends_at_the_idle_timeout_and_leaves_nothing() {
    let out = tempfile::tempdir().expect("server output dir");
    let gw = HttpGateway::spawn(
        &["--session-idle", "2"],
        &Server::ChromeDevtools.command(out.path()),
    )
    .await;
    // initialize, then silence: no DELETE, no further request.
    let a = gw.raw_initialize(&[]).await;
    assert_eq!(a.status, 200, "{}", a.text());
    assert!(a.header("mcp-session-id").is_some());
    assert!(
        !gw.descendants().is_empty(),
        "the session's browser and server run"
    );
    let status = gw
        .status_until("the idle session to end", |s| s["mcp"]["sessionsOpen"] == 0)
        .await;
    assert_eq!(status["mcp"]["sessionsEnded"]["idle"], 1, "{status}");
    assert_eq!(gw.descendants(), vec![], "processes left behind");
    assert_eq!(
        gw.open_files_under(&[gw.evidence.path(), gw.tmp.path()]),
        Vec::<std::path::PathBuf>::new()
    );
    assert!(
        !gw.tmp_entries().iter().any(|e| e.contains("cdp-relay")),
        "{:?}",
        gw.tmp_entries()
    );
    let journal = finalized_journal(&gw).await;
    assert!(
        journal.contains("idle for 2s (--session-idle)"),
        "the reason is recorded:\n{journal}"
    );
    // The ended session is unknown now.
    let sid = a.header("mcp-session-id").expect("id").to_owned();
    let again = gw
        .raw_post(
            &[("Mcp-Session-Id", &sid)],
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        )
        .await;
    assert_eq!(again.status, 404, "{}", again.text());
    gw.process.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wrapped_server_dying_ends_its_session_and_sigterm_ends_the_rest() {
    let out = tempfile::tempdir().expect("server output dir");
    let gw = HttpGateway::spawn(&[], &Server::ChromeDevtools.command(out.path())).await;
    let dying = gw.connect(None).await;
    let sid = only_session(&gw, &[]).await;
    let server = gw
        .descendants()
        .into_iter()
        .find(|(_, cmd)| cmd.contains("chrome-devtools-mcp"))
        .expect("the wrapped server runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.0 as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill");
    let status = gw
        .status_until("the session of the dead server to end", |s| {
            s["mcp"]["sessionsOpen"] == 0
        })
        .await;
    assert_eq!(
        status["mcp"]["sessionsEnded"]["server_exited"], 1,
        "{status}"
    );
    assert_eq!(gw.descendants(), vec![], "its browser is stopped too");
    let journal = finalized_journal(&gw).await;
    assert!(
        journal.contains("\"serverExited\"") && journal.contains("the wrapped server exited"),
        "{journal}"
    );
    let gone = gw
        .raw_post(
            &[("Mcp-Session-Id", &sid)],
            br#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#,
        )
        .await;
    assert_eq!(gone.status, 404);
    drop(dying);
    // A second session, then SIGTERM: it ends (recorded), and the gateway exits cleanly.
    let _open = gw.connect(None).await;
    let second = only_session(&gw, &[]).await;
    let HttpGateway {
        process,
        evidence: evidence_dir,
        tmp: tmp_dir,
    } = gw;
    let stderr = process.stop().await;
    let (tmp, evidence) = (tmp_dir.path(), evidence_dir.path());
    assert!(stderr.contains("session ended (shutdown)"), "{stderr}");
    assert_eq!(
        cdp_relay_tests::processes_mentioning(&tmp.display().to_string()),
        Vec::<u32>::new(),
        "a browser outlived the gateway"
    );
    let run = std::fs::read_dir(evidence.join("runs"))
        .expect("runs")
        .flatten()
        .map(|d| d.path())
        .find(|d| {
            std::fs::read_to_string(d.join("manifest.json")).is_ok_and(|m| m.contains(&second))
        })
        .expect("the second session's run");
    let journal = std::fs::read_to_string(run.join("actions.jsonl")).expect("journal");
    assert!(
        journal.contains("\"stopRequested\"")
            && journal.contains("SIGTERM")
            && journal.contains("runFinalized"),
        "{journal}"
    );
}

/// The first non-loopback IPv4 address of this machine, if it has one.
fn non_loopback_address() -> Option<String> {
    let out = std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|a| {
            a.parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| !ip.is_loopback())
        })
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_loopback_the_token_is_required_and_refusals_start_nothing() {
    // Without a token, a non-loopback address is refused at start.
    let refused = within(
        "mcp --listen 0.0.0.0:0 without a token",
        tokio::process::Command::new(cdp_relay_tests::relay_binary())
            .args(["mcp", "--listen", "0.0.0.0:0"])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run");
    assert!(!refused.status.success());
    assert!(refused.stdout.is_empty());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("without authentication"));
    let host = non_loopback_address().unwrap_or_else(|| "0.0.0.0".to_owned());
    let gw = HttpGateway::spawn_at(&format!("{host}:0"), &["--token", "T0ken-for-http"], &[]).await;
    let bearer = [("Authorization", "Bearer T0ken-for-http")];
    let no_token = gw.raw_initialize(&[]).await;
    assert_eq!(no_token.status, 401, "{}", no_token.text());
    let wrong = gw
        .raw_initialize(&[("Authorization", "Bearer wrong")])
        .await;
    assert_eq!(wrong.status, 401);
    let origin = gw
        .raw_initialize(&[bearer[0], ("Origin", "http://rebinding.example")])
        .await;
    assert_eq!(origin.status, 403, "{}", origin.text());
    let host_header = gw
        .raw_initialize(&[bearer[0], ("Host", "rebinding.example")])
        .await;
    assert_ne!(host_header.status, 200);
    let unknown = gw
        .raw_post(
            &[
                bearer[0],
                ("Mcp-Session-Id", "0123456789abcdef0123456789abcdef"),
            ],
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        )
        .await;
    assert_eq!(unknown.status, 404);
    let status = gw.status(&bearer).await;
    assert_eq!(
        status["mcp"]["sessionsStarted"], 0,
        "nothing started: {status}"
    );
    assert_eq!(gw.descendants(), vec![], "no browser");
    assert!(gw.runs().is_empty(), "no run");
    assert_eq!(
        gw.status_answer(&[]).await,
        401,
        "the status page needs the token too"
    );
    let metrics =
        cdp_relay_tests::http::request(&gw.authority(), "GET", "/relay/v1/metrics", &bearer)
            .await
            .text();
    for line in [
        r#"cdp_relay_mcp_requests_refused_total{reason="token"} 3"#,
        r#"cdp_relay_mcp_requests_refused_total{reason="origin"} 1"#,
        r#"cdp_relay_mcp_requests_refused_total{reason="host"} 1"#,
        r#"cdp_relay_mcp_requests_refused_total{reason="unknown_session"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} in:\n{metrics}");
    }
    // With the token, a session starts and works.
    let agent = gw.connect(Some("T0ken-for-http")).await;
    let tools = within("tools/list", agent.list_all_tools())
        .await
        .expect("tools");
    assert!(tools.iter().any(|t| t.name == "evidence_summary"));
    assert!(gw
        .process
        .stderr_so_far()
        .contains("refused a POST /mcp (origin)"));
    drop(agent);
    gw.process.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answers_only_the_credential_that_created_it() {
    // Loopback, no token required: the session is still held to its creator's credential.
    let gw = HttpGateway::spawn(&[], &[]).await;
    let created = gw
        .raw_initialize(&[("Authorization", "Bearer agent-a")])
        .await;
    assert_eq!(created.status, 200, "{}", created.text());
    let sid = created
        .header("mcp-session-id")
        .expect("session id")
        .to_owned();
    let list = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let proto = ("MCP-Protocol-Version", "2025-06-18");
    let initialized = gw
        .raw_post(
            &[
                ("Authorization", "Bearer agent-a"),
                ("Mcp-Session-Id", &sid),
                proto,
            ],
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await;
    assert_eq!(initialized.status, 202, "{}", initialized.text());
    for other in [vec![("Authorization", "Bearer agent-b")], vec![]] {
        let mut headers = other.clone();
        headers.extend([("Mcp-Session-Id", sid.as_str()), proto]);
        let a = gw.raw_post(&headers, list).await;
        assert_eq!(a.status, 404, "{other:?}: {}", a.text());
    }
    let own = gw
        .raw_post(
            &[
                ("Authorization", "Bearer agent-a"),
                ("Mcp-Session-Id", &sid),
                proto,
            ],
            list,
        )
        .await;
    assert_eq!(own.status, 200, "{}", own.text());
    assert!(own.text().contains("evidence_summary"));
    let status = gw.status(&[]).await;
    assert_eq!(status["mcp"]["sessionsStarted"], 1, "{status}");
    let metrics = cdp_relay_tests::http::request(&gw.authority(), "GET", "/relay/v1/metrics", &[])
        .await
        .text();
    assert!(
        metrics.contains(r#"cdp_relay_mcp_requests_refused_total{reason="session_credential"} 2"#),
        "{metrics}"
    );
    gw.process.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_session_limit_initialize_gets_503_and_the_running_session_is_untouched() {
    let gw = HttpGateway::spawn(&["--max-sessions", "1"], &[]).await;
    let ready =
        cdp_relay_tests::http::request(&gw.authority(), "GET", "/relay/v1/ready", &[]).await;
    assert_eq!(ready.status, 200);
    let first = gw.connect(None).await;
    let ready =
        cdp_relay_tests::http::request(&gw.authority(), "GET", "/relay/v1/ready", &[]).await;
    assert_eq!(ready.status, 503, "not ready at the limit");
    let over = gw.raw_initialize(&[]).await;
    assert_eq!(over.status, 503, "{}", over.text());
    let body = over.json();
    assert_eq!(body["id"], 1, "{body}");
    let message = body["error"]["message"].as_str().expect("a JSON-RPC error");
    assert!(message.contains("--max-sessions 1"), "{message}");
    // The running session still answers.
    let params = CallToolRequestParams::new("relay_endpoint");
    let r = within("relay_endpoint", first.call_tool(params))
        .await
        .expect("call");
    assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
    let status = gw.status(&[]).await;
    assert_eq!(status["mcp"]["sessionsStarted"], 1, "{status}");
    within("close", first.cancel()).await.expect("close");
    gw.status_until("the place to free up", |s| s["mcp"]["sessionsOpen"] == 0)
        .await;
    let ready =
        cdp_relay_tests::http::request(&gw.authority(), "GET", "/relay/v1/ready", &[]).await;
    assert_eq!(ready.status, 200);
    gw.process.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_short_sessions_in_a_row_leave_fds_and_memory_flat() {
    let gw = HttpGateway::spawn(&[], &[]).await;
    let pid = gw.process.pid();
    let mut baseline = None;
    for i in 0..100 {
        let agent = gw.connect(None).await;
        let r = within(
            "relay_endpoint",
            agent.call_tool(CallToolRequestParams::new("relay_endpoint")),
        )
        .await
        .expect("call");
        assert_ne!(r.is_error, Some(true));
        within("close", agent.cancel()).await.expect("close");
        gw.status_until("the session to end", |s| s["mcp"]["sessionsOpen"] == 0)
            .await;
        if i == 4 {
            baseline = Some((gw.fd_count(), rss_kib(pid)));
        }
    }
    let (fds, rss) = baseline.expect("baseline");
    // A client's last connections close a moment after its DELETE: a leak never does.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while gw.fd_count() > fds && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (fds_after, rss_after) = (gw.fd_count(), rss_kib(pid));
    eprintln!("100 sessions: fds {fds} -> {fds_after}, RSS {rss} KiB -> {rss_after} KiB");
    assert!(fds_after <= fds, "fds grew: {fds} -> {fds_after}");
    assert!(
        rss_after <= rss + 8 * 1024,
        "RSS grew by more than 8 MiB over 95 sessions: {rss} -> {rss_after} KiB"
    );
    assert_eq!(gw.descendants(), vec![]);
    gw.process.stop().await;
}

/// Proportional set size of `pid` in KiB (`/proc/PID/smaps_rollup`), 0 when unreadable.
fn pss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// CPU seconds (user + system) used so far by `pid` and every process below it.
fn cpu_seconds(pid: u32) -> f64 {
    let ticks = |p: u32| -> u64 {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
            .and_then(|s| {
                let (_, rest) = s.rsplit_once(')')?;
                let f: Vec<&str> = rest.split_whitespace().collect();
                Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
            })
            .unwrap_or(0)
    };
    let all: u64 = std::iter::once(pid)
        .chain(
            cdp_relay_tests::mcp_http::descendants(pid)
                .into_iter()
                .map(|(p, _)| p),
        )
        .map(ticks)
        .sum();
    all as f64 / 100.0
}

/// 4 chrome-devtools-mcp sessions, each doing one navigation and one snapshot per second for
/// 20 s: the CPU they take together, per session.
async fn load(site: &Site) {
    let gw = Arc::new(HttpGateway::spawn(&[], &chrome_devtools_mcp()).await);
    let mut agents = Vec::new();
    for _ in 0..4 {
        agents.push(Arc::new(gw.connect(None).await));
    }
    let pid = gw.process.pid();
    let before = cpu_seconds(pid);
    let t0 = std::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (i, agent) in agents.iter().enumerate() {
        let (agent, url) = (agent.clone(), format!("{}/s{i}", site.origin));
        tasks.spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
            for _ in 0..20 {
                tick.tick().await;
                call(&agent, Server::ChromeDevtools.navigate(&url)).await;
                call(&agent, ("take_snapshot", json!({}))).await;
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let cores = (cpu_seconds(pid) - before) / t0.elapsed().as_secs_f64();
    eprintln!("4 sessions x (navigate + take_snapshot per second): {cores:.2} cores together, {:.2} per session", cores / 4.0);
    for a in agents {
        if let Ok(a) = Arc::try_unwrap(a) {
            let _ = a.cancel().await;
        }
    }
    if let Ok(gw) = Arc::try_unwrap(gw) {
        gw.process.stop().await;
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The numbers of BENCHMARKS.md ("The gateway over HTTP"): session start (initialize → first
/// tool call answered) per server, memory per open session (PSS of everything it started plus
/// the gateway's RSS growth), and a tool call's time over HTTP and over stdio. Prints only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn measure_sessions() {
    let site = site().await;
    for server in [Server::ChromeDevtools, Server::Playwright] {
        let out = tempfile::tempdir().expect("out");
        let gw = HttpGateway::spawn(&[], &server.command(out.path())).await;
        let before = rss_kib(gw.process.pid());
        let mut starts = Vec::new();
        let mut agents = Vec::new();
        for i in 0..4 {
            let t = std::time::Instant::now();
            let agent = gw.connect(None).await;
            call(&agent, server.navigate(&format!("{}/s{i}", site.origin))).await;
            starts.push(t.elapsed().as_secs_f64());
            agents.push(agent);
        }
        let pss: u64 = gw.descendants().iter().map(|(p, _)| pss_kib(*p)).sum();
        let growth = rss_kib(gw.process.pid()).saturating_sub(before);
        eprintln!(
            "{server:?}: session start (initialize -> navigation answered) {:?} s; 4 sessions: children PSS {} MiB + gateway growth {} MiB = {} MiB per session",
            starts.iter().map(|s| (s * 100.0).round() / 100.0).collect::<Vec<_>>(),
            pss / 1024,
            growth / 1024,
            (pss + growth) / 1024 / 4
        );
        for a in agents {
            let _ = a.cancel().await;
        }
        gw.process.stop().await;
    }
    load(&site).await;
    // A cheap call (list_pages), 40 times, over HTTP and over stdio.
    let gw = HttpGateway::spawn(&[], &chrome_devtools_mcp()).await;
    let agent = gw.connect(None).await;
    let mut http = Vec::new();
    for _ in 0..40 {
        let t = std::time::Instant::now();
        call(&agent, ("list_pages", json!({}))).await;
        http.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let _ = agent.cancel().await;
    gw.process.stop().await;
    let mut args = vec!["--".to_owned()];
    args.extend(chrome_devtools_mcp());
    let stdio = cdp_relay_tests::mcp::McpGateway::spawn(&args, &[]).await;
    let mut piped = Vec::new();
    for _ in 0..40 {
        let t = std::time::Instant::now();
        stdio.call("list_pages", json!({})).await;
        piped.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    eprintln!(
        "list_pages: median {:.1} ms over HTTP, {:.1} ms over stdio",
        median(http),
        median(piped)
    );
}

/// Eight agents at once, each with its own server and browser (both servers' tests together
/// took 26 s on two cores beside a clippy build).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_sessions_of_chrome_devtools_mcp_share_nothing() {
    isolation(Server::ChromeDevtools, 8).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_sessions_of_playwright_mcp_share_nothing() {
    isolation(Server::Playwright, 8).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_server_cannot_start_is_a_clear_error_and_leaves_nothing() {
    let gw = HttpGateway::spawn(&[], &["/nonexistent/mcp-server".to_owned()]).await;
    let a = gw.raw_initialize(&[]).await;
    let text = a.text();
    assert!(
        text.contains("\"error\"") && text.contains("could not start this session"),
        "{}: {text}",
        a.status
    );
    let status = gw
        .status_until("the failed session to be gone", |s| {
            s["mcp"]["sessionsOpen"] == 0
        })
        .await;
    assert_eq!(status["sessions"], json!([]), "{status}");
    assert_eq!(gw.descendants(), vec![], "its browser was stopped");
    // The place is free again: a second attempt gets the same answer, not 503.
    let again = gw.raw_initialize(&[]).await;
    assert_ne!(again.status, 503);
    gw.process.stop().await;
}

#[test]
fn the_kubernetes_example_runs_flags_the_binary_accepts() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/kubernetes/mcp-gateway.yaml");
    let yaml = std::fs::read_to_string(&path).expect("deploy/kubernetes/mcp-gateway.yaml");
    // The container's command: the `- ` items between `command:` and `ports:`.
    let command: Vec<String> = yaml
        .lines()
        .skip_while(|l| l.trim() != "command:")
        .skip(1)
        .take_while(|l| l.trim() != "ports:")
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|a| a.trim_matches('"').to_owned())
        .collect();
    let at = command
        .iter()
        .position(|a| a == "cdp-relay")
        .expect("cdp-relay in the command");
    let ours: Vec<&String> = command[at + 1..]
        .iter()
        .take_while(|a| *a != "--")
        .collect();
    assert!(
        ours.iter().any(|a| *a == "--listen") && ours[0] == "mcp",
        "{ours:?}"
    );
    let out = std::process::Command::new(cdp_relay_tests::relay_binary())
        .args(&ours)
        .arg("--help")
        .output()
        .expect("run cdp-relay");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{ours:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in ["CDP_RELAY_TOKEN_FILE", "CDP_RELAY_EVIDENCE_DIR"] {
        assert!(
            yaml.contains(name) && help.contains(&format!("[env: {name}")),
            "{name}"
        );
    }
    for probe in ["/relay/v1/ready", "/relay/v1/live"] {
        assert!(yaml.contains(probe), "{probe}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_browser_dies_records_it_and_keeps_its_evidence_tools() {
    let gw = HttpGateway::spawn(&[], &[]).await;
    let agent = gw.connect(None).await;
    // The browser: the session's process started with a profile in the gateway's TMPDIR.
    let tmp = gw.tmp.path().display().to_string();
    let browser = gw
        .descendants()
        .into_iter()
        .find(|(_, cmd)| {
            cmd.contains(&format!("--user-data-dir={tmp}")) && !cmd.contains("--type=")
        })
        .expect("the session's browser");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(browser.0 as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill");
    within("browserExited in the run", async {
        loop {
            let recorded = gw.runs().iter().any(|(d, _)| {
                std::fs::read_to_string(d.join("actions.jsonl"))
                    .is_ok_and(|j| j.contains("\"browserExited\""))
            });
            if recorded {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await;
    let r = within(
        "evidence_summary",
        agent.call_tool(CallToolRequestParams::new("evidence_summary")),
    )
    .await
    .expect("the session still answers");
    assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
    within("close", agent.cancel()).await.expect("close");
    let status = gw
        .status_until("the session to end", |s| s["mcp"]["sessionsOpen"] == 0)
        .await;
    assert_eq!(status["mcp"]["sessionsEnded"]["deleted"], 1, "{status}");
    assert_eq!(gw.descendants(), vec![]);
    gw.process.stop().await;
}
