//! `cdp-relay mcp --otlp-endpoint`: the spans a loopback OTLP/HTTP receiver (`tests/src/otlp.rs`)
//! gets — one per MCP request, named and attributed as the OpenTelemetry MCP convention says,
//! parented to the agent's `traceparent`, whose context the wrapped server receives — with the
//! scripted server for the trace context and the errors, and with chrome-devtools-mcp and a
//! real Chromium for a call's browser effects as span events and a planted-secret sweep of every
//! byte the receiver got. A receiver that is down or hangs slows no call.

use cdp_relay_tests::files::{leaks, Scratch};
use cdp_relay_tests::http::get;
use cdp_relay_tests::mcp::{
    chrome_devtools_mcp, sign_in_page, sign_in_with_chrome_devtools_mcp, text_of, McpGateway,
};
use cdp_relay_tests::otlp::{attr, hex, Mode, Receiver, Span};
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::within;
use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use rmcp::ServiceError;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

const FAKE: &str = env!("CARGO_BIN_EXE_mcp-fake");
const AGENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const AGENT_SPAN: &str = "00f067aa0ba902b7";
/// `opentelemetry.proto.trace.v1.Span.SpanKind.SPAN_KIND_SERVER`.
const KIND_SERVER: i32 = 2;
/// `Status.StatusCode.STATUS_CODE_ERROR`.
const STATUS_ERROR: i32 = 2;

fn fake_args(endpoint: &str, scratch: &Scratch) -> Vec<String> {
    vec![
        "--otlp-endpoint".into(),
        endpoint.into(),
        "--".into(),
        FAKE.into(),
        // The fake names the scratch directory: `Scratch::assert_clean` finds it if left.
        "--tag".into(),
        scratch.path().display().to_string(),
    ]
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one span named {name}: {:#?}", names(spans));
    found[0]
}

fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

/// A call with the agent's W3C trace context in `_meta`.
async fn call_traced(
    gw: &McpGateway,
    tool: &str,
) -> Result<rmcp::model::CallToolResult, ServiceError> {
    let mut meta = RequestMetaObject::new();
    meta.set_traceparent(format!("00-{AGENT_TRACE}-{AGENT_SPAN}-01"));
    meta.set_tracestate("vendor=planted-free");
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.meta = Some(meta);
    within(tool, gw.client().call_tool(params)).await
}

#[tokio::test]
async fn one_span_per_request_after_the_mcp_convention_parented_to_the_agents_traceparent() {
    within("otlp spans", async {
        let receiver = Receiver::start(Mode::Accept).await;
        let scratch = Scratch::new();
        let gw = McpGateway::spawn(
            &fake_args(&receiver.url(), &scratch),
            &[
                ("TMPDIR", scratch.path().as_os_str()),
                ("OTEL_SERVICE_NAME", "otlp-e2e".as_ref()),
            ],
        )
        .await;
        gw.client().list_all_tools().await.expect("tools/list");
        let seen = call_traced(&gw, "trace_context")
            .await
            .expect("trace_context");
        let seen: Value = serde_json::from_str(&text_of(&seen)).expect("the fake's JSON");
        let failed = gw.call("fail", json!({})).await;
        assert_eq!(failed.is_error, Some(true));
        let code = match gw.try_call("rpc_error", json!({})).await {
            Err(ServiceError::McpError(e)) => e.code.0,
            other => panic!("a JSON-RPC error, not {other:?}"),
        };
        let run = gw.runs().pop().expect("a run");
        let closed = gw.close().await;
        let spans = receiver
            .wait_for(|s| {
                s.iter()
                    .filter(|s| s.name.starts_with("tools/call "))
                    .count()
                    >= 3
            })
            .await;

        // One span per tool call, each a SERVER span named `tools/call {tool}`.
        let calls: Vec<&Span> = spans
            .iter()
            .filter(|s| s.name.starts_with("tools/call"))
            .collect();
        assert_eq!(calls.len(), 3, "{:?}", names(&spans));
        let traced = one(&spans, "tools/call trace_context");
        assert_eq!(traced.kind, KIND_SERVER);
        // Parented to the agent's context; the server got the span's own.
        assert_eq!(hex(&traced.trace_id), AGENT_TRACE);
        assert_eq!(hex(&traced.parent_span_id), AGENT_SPAN);
        assert_eq!(
            seen["traceparent"],
            format!("00-{AGENT_TRACE}-{}-01", hex(&traced.span_id)),
            "the wrapped server's _meta"
        );
        assert_eq!(seen["tracestate"], "vendor=planted-free");
        assert_eq!(traced.trace_state, "vendor=planted-free");
        let run_id = run
            .file_name()
            .expect("a run id")
            .to_string_lossy()
            .into_owned();
        for (key, want) in [
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "trace_context"),
            ("gen_ai.operation.name", "execute_tool"),
            ("network.transport", "pipe"),
            ("cdp_relay.run.id", run_id.as_str()),
            (
                "cdp_relay.report.uri",
                &format!("evidence://runs/{run_id}/report.html"),
            ),
        ] {
            assert_eq!(attr(traced, key).as_deref(), Some(want), "{key}");
        }
        assert!(attr(traced, "jsonrpc.request.id").is_some_and(|id| !id.is_empty()));
        assert_eq!(attr(traced, "error.type"), None);
        assert_ne!(traced.status.as_ref().map_or(0, |s| s.code), STATUS_ERROR);

        // Without the agent's context, a trace of its own; failures say their error.type.
        let fail = one(&spans, "tools/call fail");
        assert!(fail.parent_span_id.is_empty());
        assert_ne!(hex(&fail.trace_id), AGENT_TRACE);
        assert_eq!(attr(fail, "error.type").as_deref(), Some("tool_error"));
        assert_eq!(fail.status.as_ref().map(|s| s.code), Some(STATUS_ERROR));
        let rpc = one(&spans, "tools/call rpc_error");
        assert_eq!(attr(rpc, "error.type"), Some(code.to_string()));
        assert_eq!(rpc.status.as_ref().map(|s| s.code), Some(STATUS_ERROR));
        // Requests other than calls: the method alone.
        for method in ["initialize", "tools/list"] {
            let s = one(&spans, method);
            assert_eq!(attr(s, "mcp.method.name").as_deref(), Some(method));
            assert_eq!(attr(s, "gen_ai.tool.name"), None);
        }
        assert!(receiver.service_names().iter().all(|n| n == "otlp-e2e"));
        assert!(
            closed
                .stderr
                .contains(&format!("otlp: {} spans sent", spans.len())),
            "{}",
            closed.stderr
        );
        scratch.assert_clean();
    })
    .await;
}

/// A receiver on a port nothing listens on: the port of one just closed.
async fn closed_port() -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = l.local_addr().expect("addr");
    drop(l);
    format!("http://{addr}")
}

#[tokio::test]
async fn a_receiver_that_is_down_or_hangs_slows_no_call_and_its_spans_are_counted() {
    within("otlp receiver down or hanging", async {
        let hanging = Receiver::start(Mode::Hang).await;
        for (what, endpoint) in [("down", closed_port().await), ("hanging", hanging.url())] {
            let scratch = Scratch::new();
            let gw = McpGateway::spawn(
                &fake_args(&endpoint, &scratch),
                &[("TMPDIR", scratch.path().as_os_str())],
            )
            .await;
            let calls = 20;
            let mut took = Vec::new();
            // Long enough for several exports to fail or hang (a batch leaves every 500 ms, a
            // call's span 2 s after its answer).
            let began = Instant::now();
            let mut n = 0;
            while n < calls || began.elapsed() < Duration::from_secs(4) {
                let t = Instant::now();
                let r = gw.call("echo", json!({"text": "x"})).await;
                took.push(t.elapsed());
                assert_eq!(text_of(&r), "x");
                n += 1;
            }
            took.sort();
            let (median, slowest) = (took[took.len() / 2], took[took.len() - 1]);
            eprintln!("otlp receiver {what}: {n} calls, median {median:?}, slowest {slowest:?}");
            // The exporter gives up after 5 s: a call that waited for it would take that long.
            assert!(
                slowest < Duration::from_secs(4),
                "{what}: a call took {slowest:?}"
            );
            // The relay's status has the counts while the gateway runs.
            let ep = gw.call("relay_endpoint", json!({})).await;
            let v = ep.structured_content.expect("structured");
            let relay = v["cdpUrl"]
                .as_str()
                .expect("cdpUrl")
                .trim_start_matches("http://");
            let status = cdp_relay_tests::http::get(relay, "/relay/v1/status")
                .await
                .json();
            let otlp = &status["otlp"];
            assert_eq!(otlp["sent"], 0, "{what}: {status}");
            assert_eq!(otlp["endpoint"], endpoint.as_str(), "{what}: {status}");
            let counted =
                otlp["dropped"].as_u64().unwrap_or(0) + otlp["queued"].as_u64().unwrap_or(0);
            assert!(counted > 0, "{what}: {status}");
            let closed = gw.close().await;
            let last = closed
                .stderr
                .lines()
                .find(|l| l.contains("otlp: ") && l.contains("spans sent"))
                .unwrap_or_else(|| panic!("{what}: no count line:\n{}", closed.stderr));
            let count = |word: &str| -> u64 {
                let before = last.split(word).next().expect("split");
                before
                    .split_whitespace()
                    .last()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("{what}: {word} in {last}"))
            };
            // initialize and every call (relay_endpoint too): none sent, each dropped or
            // unsent, none lost unsaid.
            assert_eq!(count(" spans sent"), 0, "{last}");
            assert_eq!(
                count(" dropped") + count(" unsent"),
                n + 2,
                "{what}: {last}"
            );
            let warnings = closed.stderr.matches("are dropped").count();
            assert!(
                warnings <= 1,
                "{what}: one warning at most:\n{}",
                closed.stderr
            );
            if what == "down" {
                assert_eq!(warnings, 1, "{}", closed.stderr);
            }
            scratch.assert_clean();
        }
        assert!(hanging.requests() > 0, "the hanging receiver was tried");
    })
    .await;
}

const USER: &str = "ada.otlp-planted@example.test";
const PASSWORD: &str = "Pl4nted-Otlp-Passw0rd";
const OTP: &str = "582913";
const QUERY_TOKEN: &str = "qtok_OtlpPlanted7Hq2";
const BEARER: &str = "bearer_OtlpPlanted3nV6";
const COOKIE: &str = "ck_OtlpPlanted9wE2r";
const ACCOUNT: &str = "ACCT-OTLP-PLANTED-7741";

fn site_routes() -> HashMap<&'static str, Route> {
    let login = sign_in_page(QUERY_TOKEN, BEARER, &format!(" + ' account {ACCOUNT}'"), "");
    let mut r = HashMap::new();
    r.insert(
        "/login",
        Route::ok("text/html", login).header(format!("Set-Cookie: session={COOKIE}; Path=/")),
    );
    r.insert("/api/login", Route::ok("text/plain", "down").status(500));
    r
}

/// Every spelling of `v` a span could carry it in.
fn spellings(v: &str) -> Vec<String> {
    use base64::Engine as _;
    let json = serde_json::to_string(v).expect("json");
    let url: String = v
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    vec![
        v.to_owned(),
        json[1..json.len() - 1].to_owned(),
        url,
        base64::engine::general_purpose::STANDARD.encode(v),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v),
    ]
}

fn events<'a>(span: &'a Span, name: &str) -> Vec<&'a cdp_relay_tests::otlp::Event> {
    span.events.iter().filter(|e| e.name == name).collect()
}

fn event_attr(e: &cdp_relay_tests::otlp::Event, key: &str) -> Option<String> {
    cdp_relay_tests::otlp::string_attr(&e.attributes, key)
}

#[tokio::test]
async fn a_calls_browser_effects_are_its_span_events_and_no_planted_secret_reaches_a_span() {
    within("otlp with chrome-devtools-mcp", async {
        let receiver = Receiver::start(Mode::Accept).await;
        let site = Site::start(site_routes()).await;
        let scratch = Scratch::new();
        let mut args = vec![
            "--otlp-endpoint".to_owned(),
            receiver.url(),
            "--".to_owned(),
        ];
        args.extend(chrome_devtools_mcp());
        let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;
        gw.call(
            "evidence_register_secret",
            json!({"name": "ACCOUNT_NUMBER", "value": ACCOUNT}),
        )
        .await;
        let url = format!("{}/login?token={QUERY_TOKEN}", site.origin);
        sign_in_with_chrome_devtools_mcp(&gw, &url, [USER, PASSWORD, OTP]).await;
        // Stopping ends the spans at once; what the relay had read of the click by then (its
        // request failed, the page logged the error before the click was answered) is linked.
        let closed = gw.close().await;
        let spans = receiver
            .wait_for(|s| s.iter().any(|s| s.name == "tools/call click"))
            .await;

        // navigate_page: a navigation, to the page without its query.
        let nav = one(&spans, "tools/call navigate_page");
        let navigations = events(nav, "cdp_relay.navigation");
        assert!(!navigations.is_empty(), "{:#?}", nav.events);
        let to = event_attr(navigations[0], "url.full").expect("a url");
        assert!(to.starts_with(&format!("{}/login", site.origin)), "{to}");
        // fill_form: one typing event per field, its length and verdict, never its text.
        let fill = one(&spans, "tools/call fill_form");
        let typing = events(fill, "cdp_relay.typing");
        let mut lengths: Vec<String> = typing
            .iter()
            .filter_map(|e| event_attr(e, "cdp_relay.input.chars"))
            .collect();
        lengths.sort();
        let mut want: Vec<String> = [USER, PASSWORD, OTP]
            .iter()
            .map(|v| v.len().to_string())
            .collect();
        want.sort();
        assert_eq!(lengths, want, "{:#?}", fill.events);
        assert!(typing
            .iter()
            .all(|e| event_attr(e, "cdp_relay.typing.verified").is_some()));
        // click: the click, then the failed request (origin + path) and the console error.
        let click = one(&spans, "tools/call click");
        assert!(
            !events(click, "cdp_relay.action").is_empty(),
            "{:#?}",
            click.events
        );
        let failed = events(click, "cdp_relay.request_failed");
        assert!(
            failed.iter().any(|e| event_attr(e, "url.full").as_deref()
                == Some(&format!("{}/api/login", site.origin))
                && event_attr(e, "http.response.status_code").as_deref() == Some("500")),
            "{:#?}",
            click.events
        );
        assert!(
            !events(click, "cdp_relay.console_error").is_empty(),
            "{:#?}",
            click.events
        );

        // No planted value, in any spelling, in any byte the receiver got.
        let bytes = receiver.bytes();
        assert!(!bytes.is_empty());
        let mut hits = Vec::new();
        for secret in [USER, PASSWORD, OTP, QUERY_TOKEN, BEARER, COOKIE, ACCOUNT] {
            for spelled in spellings(secret) {
                if leaks(&bytes, &spelled) {
                    hits.push(spelled);
                }
            }
        }
        assert!(hits.is_empty(), "planted values in the spans: {hits:?}");
        assert!(closed.stderr.contains("otlp: "), "{}", closed.stderr);
        scratch.assert_clean();
    })
    .await;
}

/// Over Streamable HTTP: one exporter for the gateway, each session's calls its own spans,
/// named by its `mcp.session.id`, each parented to its agent's context, which its own wrapped
/// server receives; a session ending does not end the exporter for the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_each_sessions_calls_are_spans_with_its_session_id() {
    within("otlp spans over HTTP", async {
        let receiver = Receiver::start(Mode::Accept).await;
        let scratch = Scratch::new();
        let url = receiver.url();
        let tag = scratch.path().display().to_string();
        let gw = cdp_relay_tests::mcp_http::HttpGateway::spawn(
            &["--otlp-endpoint", &url],
            &[FAKE.into(), "--tag".into(), tag],
        )
        .await;
        let (first, second) = (gw.connect(None).await, gw.connect(None).await);
        let mut seen = Vec::new();
        for agent in [&first, &second] {
            let mut meta = RequestMetaObject::new();
            meta.set_traceparent(format!("00-{AGENT_TRACE}-{AGENT_SPAN}-01"));
            let mut params = CallToolRequestParams::new("trace_context");
            params.meta = Some(meta);
            let r = within("trace_context", agent.call_tool(params))
                .await
                .expect("trace_context");
            seen.push(serde_json::from_str::<Value>(&text_of(&r)).expect("the fake's JSON"));
        }
        let status = gw.status(&[]).await;
        let mut ids: Vec<String> = status["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .map(|s| s["id"].as_str().expect("id").to_owned())
            .collect();
        ids.sort();
        assert_eq!(ids.len(), 2, "{status}");
        // The first session ends; the second's next call is still exported.
        within("close", first.cancel()).await.expect("close");
        gw.status_until("the first session to end", |s| {
            s["mcp"]["sessionsOpen"] == 1
        })
        .await;
        let after = within(
            "trace_context",
            second.call_tool(CallToolRequestParams::new("trace_context")),
        )
        .await
        .expect("after the first ended");
        assert_ne!(after.is_error, Some(true));
        let spans = receiver
            .wait_for(|s| {
                s.iter()
                    .filter(|s| s.name == "tools/call trace_context")
                    .count()
                    >= 3
            })
            .await;
        let calls = named(&spans, "tools/call trace_context");
        assert_eq!(calls.len(), 3, "{:?}", names(&spans));
        let mut by_session: Vec<String> = calls
            .iter()
            .map(|s| attr(s, "mcp.session.id").expect("mcp.session.id"))
            .collect();
        by_session.sort();
        by_session.dedup();
        assert_eq!(by_session, ids, "each call names its own session");
        for s in &calls {
            assert_eq!(attr(s, "network.transport").as_deref(), Some("tcp"));
            assert!(attr(s, "cdp_relay.run.id").is_some_and(|r| !r.is_empty()));
        }
        // Each wrapped server got the context of its own session's span.
        let traced: Vec<&&Span> = calls
            .iter()
            .filter(|s| hex(&s.parent_span_id) == AGENT_SPAN)
            .collect();
        assert_eq!(traced.len(), 2, "two calls carried the agent's context");
        for s in traced {
            assert_eq!(hex(&s.trace_id), AGENT_TRACE);
            let want = format!("00-{AGENT_TRACE}-{}-01", hex(&s.span_id));
            assert!(
                seen.iter().any(|v| v["traceparent"] == want),
                "{want} reached its server: {seen:?}"
            );
        }
        drop(second);
        gw.process.stop().await;
    })
    .await;
}

/// `launch --otlp-endpoint` with Playwright signing in through it: one span for the run (its id
/// and report, its counts), one per client connection as its child, and the run's browser
/// effects as their events — as many typing steps with the same verdicts, and as many failures,
/// as the journal holds — and no planted value in any spelling (the password also rides in the
/// form's GET query) in any byte the receiver got.
#[tokio::test]
async fn launch_spans_its_run_and_each_client_connection_with_the_journals_effects() {
    within("otlp with launch", async {
        let receiver = Receiver::start(Mode::Accept).await;
        let evidence = tempfile::tempdir().expect("tempdir");
        let dir = evidence.path().to_string_lossy().into_owned();
        let url = receiver.url();
        let relay = cdp_relay_tests::RelayProcess::spawn(
            &[
                "launch",
                "--listen",
                "127.0.0.1:0",
                "--evidence-dir",
                &dir,
                "--otlp-endpoint",
                &url,
            ],
            &[],
        )
        .await;
        cdp_relay_tests::observing(&relay.authority(), 1).await;
        sign_in_spans(relay, evidence.path(), &receiver).await;
    })
    .await;
}

/// The same through `serve` in front of a browser someone else runs (no observer of the relay's
/// own: the client's traffic alone).
#[tokio::test]
async fn serve_spans_its_run_and_each_client_connection_with_the_journals_effects() {
    within("otlp with serve", async {
        let chrome = cdp_relay_tests::Chromium::start().await;
        let receiver = Receiver::start(Mode::Accept).await;
        let evidence = tempfile::tempdir().expect("tempdir");
        let dir = evidence.path().to_string_lossy().into_owned();
        let url = receiver.url();
        let relay = cdp_relay_tests::RelayProcess::serve(
            &chrome.http(),
            &["--evidence-dir", &dir, "--otlp-endpoint", &url],
        )
        .await;
        sign_in_spans(relay, evidence.path(), &receiver).await;
    })
    .await;
}

/// Playwright signs in through `relay` (recording under `evidence`, spans to `receiver`); the
/// spans are checked against the run's journal, and every byte sent for planted values.
async fn sign_in_spans(relay: cdp_relay_tests::RelayProcess, evidence: &Path, receiver: &Receiver) {
    const USER: &str = "otlp.planted@example.com";
    const PASSWORD: &str = "Otlp-Pl4nted+pw/=";
    let site = Site::start(cdp_relay_tests::pages::login_routes()).await;
    let url = receiver.url();
    let status = get(&relay.authority(), "/relay/v1/status").await.json();
    assert_eq!(
        status["otlp"]["endpoint"].as_str(),
        Some(url.trim_end_matches('/')),
        "{status}"
    );
    let cfg = json!({"endpoint": relay.endpoint, "site": site.origin, "user": USER,
                     "password": PASSWORD, "reuseTab": true});
    let run = cdp_relay_tests::run_node_client("login.mjs", &cfg.to_string()).await;
    assert!(run.ok, "login.mjs failed:\n{}", run.stderr);
    let stderr = relay.stop().await;
    let spans = receiver
        .wait_for(|s| s.iter().any(|s| s.name == "cdp_relay.run"))
        .await;

    let run_dir = std::fs::read_dir(evidence.join("runs"))
        .expect("runs")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a run");
    let run_id = run_dir
        .file_name()
        .expect("id")
        .to_string_lossy()
        .into_owned();
    let journal = cdp_evidence::parse_journal(
        &std::fs::read(run_dir.join("actions.jsonl")).expect("journal"),
    );
    let records = &journal.records;
    let connected = records
        .iter()
        .filter(|r| r.kind == "lifecycle" && r.payload["event"] == "clientConnected")
        .count();
    let mut typed: Vec<String> = records
        .iter()
        .filter(|r| r.kind == "action" && r.payload["method"] == "type")
        .map(|r| {
            // A step without a verdict (no observer to read the field) has no attribute.
            let verdict = match &r.payload["verification"]["verified"] {
                Value::Null => String::new(),
                v => v.to_string().replace('"', ""),
            };
            format!("{} {verdict}", r.payload["input"]["chars"])
        })
        .collect();
    let failures = records
        .iter()
        .filter(|r| r.kind == "network" || (r.kind == "console" && r.payload["level"] != "warning"))
        .count();
    assert!(typed.len() >= 2 && failures >= 3, "{records:#?}");

    for s in &spans {
        let events: Vec<&str> = s.events.iter().map(|e| e.name.as_str()).collect();
        eprintln!("{}: {events:?}", s.name);
    }
    let run_span = one(&spans, "cdp_relay.run");
    assert_eq!(attr(run_span, "cdp_relay.run.id"), Some(run_id.clone()));
    let report = attr(run_span, "cdp_relay.report.uri").expect("report");
    assert!(
        report.starts_with("file://") && report.ends_with(&format!("/runs/{run_id}/report.html")),
        "{report}"
    );
    assert_eq!(
        attr(run_span, "cdp_relay.run.finalized").as_deref(),
        Some("true")
    );
    assert_eq!(
        attr(run_span, "cdp_relay.failures"),
        Some(failures.to_string())
    );
    assert_eq!(
        run_span.status.as_ref().map(|s| s.code),
        Some(STATUS_ERROR),
        "a run with failures is an error"
    );
    let conns = named(&spans, "cdp_relay.connection");
    assert_eq!(conns.len(), connected, "{:#?}", names(&spans));
    assert_eq!(
        attr(run_span, "cdp_relay.connections"),
        Some(connected.to_string())
    );
    for c in &conns {
        assert_eq!(c.trace_id, run_span.trace_id);
        assert_eq!(c.parent_span_id, run_span.span_id);
        assert_eq!(c.kind, KIND_SERVER);
        assert_eq!(attr(c, "cdp_relay.run.id"), Some(run_id.clone()));
        assert!(attr(c, "cdp_relay.connection.end").is_some(), "{c:#?}");
    }
    // Every effect once, on the run's span or a connection's.
    let all: Vec<&cdp_relay_tests::otlp::Event> = std::iter::once(run_span)
        .chain(conns.iter().copied())
        .flat_map(|s| s.events.iter())
        .collect();
    let mut typing: Vec<String> = all
        .iter()
        .filter(|e| e.name == "cdp_relay.typing")
        .map(|e| {
            format!(
                "{} {}",
                event_attr(e, "cdp_relay.input.chars").unwrap_or_default(),
                event_attr(e, "cdp_relay.typing.verified").unwrap_or_default()
            )
        })
        .collect();
    typing.sort();
    typed.sort();
    assert_eq!(typing, typed, "the typing steps and their verdicts");
    let failed = all
        .iter()
        .filter(|e| {
            matches!(
                e.name.as_str(),
                "cdp_relay.request_failed" | "cdp_relay.console_error"
            )
        })
        .count();
    assert_eq!(failed, failures, "{all:#?}");
    assert!(
        all.iter().any(|e| e.name == "cdp_relay.request_failed"
            && event_attr(e, "url.full").as_deref()
                == Some(&format!("{}/api/profile", site.origin))
            && event_attr(e, "http.response.status_code").as_deref() == Some("500")),
        "{all:#?}"
    );

    let bytes = receiver.bytes();
    let mut hits = Vec::new();
    for secret in [USER, PASSWORD] {
        for spelled in spellings(secret) {
            if leaks(&bytes, &spelled) || stderr.contains(&spelled) {
                hits.push(spelled);
            }
        }
    }
    assert!(
        hits.is_empty(),
        "planted values in the spans or stderr: {hits:?}"
    );
    assert!(
        stderr.contains("otlp: ") && stderr.contains(" 0 dropped"),
        "{stderr}"
    );
}
