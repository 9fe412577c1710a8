//! `cdp-relay mcp` with a scripted MCP server (`src/bin/mcp-fake.rs`): transparency (tools and
//! results exactly as the server gives them), the gateway's records of each call, and faults a
//! real server will not produce on demand — a crash mid-call, a server that never initializes,
//! a call it never answers, the agent leaving mid-call, a 20 MB result, a borrowed tool name,
//! signals — plus the confinement of the `evidence://` resources. The browser behind the relay is a real Chromium.

// Log messages are deprecated by SEP-2577, and still what servers send.
#![allow(deprecated)]

use cdp_evidence::StoredRecord;
use cdp_relay_tests::files::Scratch;
use cdp_relay_tests::mcp::{calls, journal, text_of, McpGateway};
use cdp_relay_tests::within;
use rmcp::model::CallToolRequestParams;
use rmcp::{ServiceError, ServiceExt};
use serde_json::{json, Value};

const FAKE: &str = env!("CARGO_BIN_EXE_mcp-fake");

fn args(extra_relay: &[&str], fake_args: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = extra_relay.iter().map(|s| s.to_string()).collect();
    a.push("--".into());
    a.push(FAKE.into());
    a.extend(fake_args.iter().map(|s| s.to_string()));
    a
}

/// The gateway with the fake, both tagged with the test's scratch directory: the browser's
/// profile is in it and the fake names it on its command line, so
/// [`Scratch::assert_clean`] finds any process of this test left behind.
async fn gateway(scratch: &Scratch, fake_args: &[&str]) -> McpGateway {
    McpGateway::spawn(
        &tagged(scratch, &[], fake_args),
        &[("TMPDIR", scratch.path().as_os_str())],
    )
    .await
}

fn tagged(scratch: &Scratch, relay: &[&str], fake_args: &[&str]) -> Vec<String> {
    let mut a = args(relay, fake_args);
    a.push("--tag".into());
    a.push(scratch.path().display().to_string());
    a
}

fn lifecycle<'a>(records: &'a [StoredRecord], event: &str) -> Option<&'a StoredRecord> {
    records
        .iter()
        .find(|r| r.kind == "lifecycle" && r.payload["event"] == event)
}

#[tokio::test]
async fn tools_and_results_pass_through_unchanged_and_each_call_is_recorded() {
    within("transparency", async {
        // The server on its own, as an agent would see it without the gateway.
        let mut cmd = tokio::process::Command::new(FAKE);
        cmd.kill_on_drop(true)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut direct_child = cmd.spawn().expect("spawn the fake");
        let direct = ()
            .serve(cdp_relay_mcp::transport(
                direct_child.stdout.take().expect("stdout"),
                direct_child.stdin.take().expect("stdin"),
            ))
            .await
            .expect("direct session");
        let scratch = Scratch::new();
        let gw = gateway(&scratch, &[]).await;
        let quiet_scratch = Scratch::new();
        let quiet = McpGateway::spawn(
            &tagged(&quiet_scratch, &["--no-feedback"], &[]),
            &[("TMPDIR", quiet_scratch.path().as_os_str())],
        )
        .await;

        let theirs = direct.list_all_tools().await.expect("direct tools");
        let ours = gw.client().list_all_tools().await.expect("tools through the gateway");
        assert_eq!(&ours[..theirs.len()], &theirs[..], "the server's tools, unchanged");
        let own: Vec<&str> = ours[theirs.len()..].iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            own,
            [
                "evidence_mark_step",
                "evidence_register_secret",
                "evidence_summary",
                "evidence_finalize",
                "evidence_export_test",
                "evidence_list_variables",
                "relay_endpoint"
            ]
        );

        let cases = [
            ("echo", json!({"text": "hello through the gateway"})),
            ("structured", json!({})),
            ("image", json!({"bytes": 3000})),
            ("fail", json!({})),
        ];
        for (name, a) in &cases {
            let mut p = CallToolRequestParams::new(name.to_string());
            if let Value::Object(m) = a.clone() {
                p = p.with_arguments(m);
            }
            let want = direct.call_tool(p).await.expect("direct call");
            let got = gw.call(name, a.clone()).await;
            assert_eq!(
                serde_json::to_string(&got).unwrap(),
                serde_json::to_string(&want).unwrap(),
                "{name}: byte for byte"
            );
            // And with the gateway's feedback off.
            let got = quiet.call(name, a.clone()).await;
            assert_eq!(
                serde_json::to_string(&got).unwrap(),
                serde_json::to_string(&want).unwrap(),
                "{name}: byte for byte with --no-feedback"
            );
        }
        drop(quiet);
        // The server's resources and prompts pass through, with the gateway's resources added.
        let direct_resources = direct.list_all_resources().await.expect("direct resources");
        let resources = gw.client().list_all_resources().await.expect("resources");
        assert_eq!(&resources[..direct_resources.len()], &direct_resources[..]);
        assert!(resources.iter().any(|r| r.uri == "evidence://runs"));
        let read = |uri: &str| rmcp::model::ReadResourceRequestParams::new(uri.to_owned());
        assert_eq!(
            gw.client().read_resource(read("fake://note")).await.expect("note"),
            direct.read_resource(read("fake://note")).await.expect("direct note")
        );
        assert_eq!(
            gw.client().list_all_prompts().await.expect("prompts"),
            direct.list_all_prompts().await.expect("direct prompts")
        );
        let greet = || {
            rmcp::model::GetPromptRequestParams::new("greet")
                .with_arguments(json!({"name": "Ada"}).as_object().cloned().expect("object"))
        };
        assert_eq!(
            gw.client().get_prompt(greet()).await.expect("prompt"),
            direct.get_prompt(greet()).await.expect("direct prompt")
        );

        // A JSON-RPC error passes through as an error.
        let direct_err = direct
            .call_tool(CallToolRequestParams::new("rpc_error"))
            .await
            .expect_err("direct error");
        let err = gw.try_call("rpc_error", json!({})).await.expect_err("error");
        match (direct_err, err) {
            (ServiceError::McpError(a), ServiceError::McpError(b)) => assert_eq!(a, b),
            other => panic!("{other:?}"),
        }

        // Progress reaches the agent under its own token; a log message passes through.
        let p = CallToolRequestParams::new("slow").with_arguments(
            json!({"ms": 40}).as_object().cloned().expect("object"),
        );
        // The agent's own progress token (its rmcp peer picks one per request).
        let handle = gw
            .client()
            .send_request_with_option(
                rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(p)),
                rmcp::service::PeerRequestOptions::no_options(),
            )
            .await
            .expect("slow sent");
        let token = handle.progress_token.clone();
        let done = within("slow", handle.await_response()).await.expect("slow");
        assert!(matches!(done, rmcp::model::ServerResult::CallToolResult(_)));
        let seen = async {
            loop {
                let wait = gw.agent.seen.notified();
                if gw.agent.progress.lock().unwrap().len() >= 4 {
                    break;
                }
                wait.await;
            }
        };
        within("four progress notifications", seen).await;
        let progress = gw.agent.progress.lock().unwrap().clone();
        assert!(progress.iter().all(|p| p.progress_token == token), "{progress:?}");
        gw.call("log", json!({})).await;
        let logged = async {
            loop {
                let wait = gw.agent.seen.notified();
                if !gw.agent.logs.lock().unwrap().is_empty() {
                    break;
                }
                wait.await;
            }
        };
        within("a log message", logged).await;
        assert_eq!(gw.agent.logs.lock().unwrap()[0].data, json!("a log line from the fake"));

        gw.call("change_tools", json!({})).await;
        within("tools/list_changed", async {
            loop {
                let wait = gw.agent.seen.notified();
                if *gw.agent.tools_changed.lock().unwrap() > 0 {
                    break;
                }
                wait.await;
            }
        })
        .await;

        let closed = gw.close().await;
        assert_eq!(closed.code, Some(0), "{}", closed.stderr);
        let _ = direct.cancel().await;
        let runs = closed.runs();
        assert_eq!(runs.len(), 1);
        let records = journal(&runs[0]);
        // One record per call, each with its reduced arguments and the shape of its result.
        let made = [
            "echo",
            "structured",
            "image",
            "fail",
            "rpc_error",
            "slow",
            "log",
            "change_tools",
        ];
        for name in made {
            assert_eq!(calls(&records, name).len(), 1, "{name}");
        }
        let echo = calls(&records, "echo")[0];
        assert_eq!(echo.tool.as_deref(), Some("mcp-fake"));
        assert_eq!(echo.status.as_deref(), Some("ok"));
        assert_eq!(
            echo.payload["arguments"],
            json!([{"name": "text", "type": "string", "input": {"chars": 25, "inputType": "unknown"}}])
        );
        let image = calls(&records, "image")[0];
        assert_eq!(image.payload["result"], json!({"content": 1, "images": 1}));
        assert_eq!(image.payload["arguments"][0]["value"], 3000);
        let fail = calls(&records, "fail")[0];
        assert_eq!(fail.status.as_deref(), Some("error"));
        assert_eq!(fail.error.as_deref(), Some("the element was not found"), "first line only");
        assert_eq!(fail.payload["result"]["isError"], true);
        let rpc = calls(&records, "rpc_error")[0];
        assert_eq!(rpc.status.as_deref(), Some("error"));
        assert!(lifecycle(&records, "serverStarted").is_some());
        assert!(lifecycle(&records, "agentConnected").is_some());
        assert!(lifecycle(&records, "agentDisconnected").is_some());
        let exited = lifecycle(&records, "serverExited").expect("serverExited");
        assert_eq!(exited.status.as_deref(), Some("info"), "asked to stop: not a failure");
        scratch.assert_clean();
    })
    .await;
}

/// The line the gateway printed as its error (`cdp-relay: ...`).
fn error_line(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| l.starts_with("cdp-relay: "))
        .unwrap_or_else(|| panic!("no error line in:\n{stderr}"))
}

#[tokio::test]
async fn a_server_that_never_initializes_is_one_line_within_the_timeout() {
    within("never initializes", async {
        let scratch = Scratch::new();
        let started = std::time::Instant::now();
        let closed = McpGateway::spawn_failing(
            &tagged(
                &scratch,
                &["--init-timeout", "2"],
                &["--never-init", "--stderr", "fake starting"],
            ),
            &[("TMPDIR", scratch.path().as_os_str())],
        )
        .await;
        let took = started.elapsed();
        assert_eq!(closed.code, Some(1), "{}", closed.stderr);
        let line = error_line(&closed.stderr);
        assert!(
            line.contains("did not answer initialize within 2s"),
            "{line}"
        );
        assert!(
            line.contains("fake starting"),
            "its last output is named: {line}"
        );
        assert!(took < std::time::Duration::from_secs(20), "{took:?}");
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn a_server_offering_an_evidence_tool_name_is_refused_at_start() {
    within("collision", async {
        let scratch = Scratch::new();
        let closed = McpGateway::spawn_failing(
            &tagged(&scratch, &[], &["--offer", "evidence_summary"]),
            &[("TMPDIR", scratch.path().as_os_str())],
        )
        .await;
        assert_eq!(closed.code, Some(1));
        let line = error_line(&closed.stderr);
        assert!(
            line.contains("offers a tool named `evidence_summary`"),
            "{line}"
        );
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_gives_clean_errors_and_the_evidence_tools_keep_working() {
    within("crash", async {
        let scratch = Scratch::new();
        let gw = gateway(&scratch, &[]).await;
        gw.call("echo", json!({"text": "before"})).await;
        let crashed = gw.call("crash", json!({})).await;
        assert_eq!(crashed.is_error, Some(true));
        assert!(
            text_of(&crashed).contains("is not running"),
            "{}",
            text_of(&crashed)
        );
        let after = gw.call("echo", json!({"text": "after"})).await;
        assert_eq!(after.is_error, Some(true), "a clean error, not a hang");
        let summary = gw.call("evidence_summary", json!({})).await;
        assert_ne!(summary.is_error, Some(true), "{}", text_of(&summary));
        let s = summary.structured_content.expect("structured summary");
        assert_eq!(s["toolCalls"], 3, "{s}");
        let closed = gw.close().await;
        assert_eq!(closed.code, Some(0), "{}", closed.stderr);
        let records = journal(&closed.runs()[0]);
        let crash = calls(&records, "crash")[0];
        assert_eq!(crash.status.as_deref(), Some("interrupted"), "{crash:?}");
        let exits: Vec<&StoredRecord> = records
            .iter()
            .filter(|r| r.kind == "lifecycle" && r.payload["event"] == "serverExited")
            .collect();
        assert_eq!(exits.len(), 1, "recorded once");
        assert_eq!(exits[0].status.as_deref(), Some("error"));
        assert_eq!(exits[0].payload["detail"], "exit status 3");
        assert!(
            closed.stderr.contains("exited (exit status 3)"),
            "{}",
            closed.stderr
        );
        scratch.assert_clean();
    })
    .await;
}

/// Issue 38 item 12: a call the server never answers ends at `--call-timeout` with an error
/// result, the server is told to cancel it, the record says `interrupted`, and the next call
/// works.
#[tokio::test]
async fn a_call_the_server_never_answers_ends_at_the_call_timeout() {
    within("call timeout", async {
        let scratch = Scratch::new();
        let gw = McpGateway::spawn(
            &tagged(&scratch, &["--call-timeout", "2"], &[]),
            &[("TMPDIR", scratch.path().as_os_str())],
        )
        .await;
        let started = std::time::Instant::now();
        let hung = gw.call("hang", json!({})).await;
        let took = started.elapsed();
        assert_eq!(hung.is_error, Some(true), "{hung:?}");
        assert!(
            text_of(&hung).contains("did not answer `hang` within 2 s"),
            "{}",
            text_of(&hung)
        );
        // Not before the limit; well before the harness's own (60 s).
        assert!(took >= std::time::Duration::from_secs(2), "{took:?}");
        gw.wait_for_stderr("mcp-fake: hang was cancelled by the client")
            .await;
        let echo = gw.call("echo", json!({"text": "still here"})).await;
        assert_eq!(text_of(&echo), "still here");
        let closed = gw.close().await;
        assert_eq!(closed.code, Some(0), "{}", closed.stderr);
        let records = journal(&closed.runs()[0]);
        let hang = calls(&records, "hang")[0];
        assert_eq!(hang.status.as_deref(), Some("interrupted"), "{hang:?}");
        assert!(
            hang.error
                .as_deref()
                .is_some_and(|e| e.contains("--call-timeout")),
            "{hang:?}"
        );
        // Its record says how long it ran: the limit, not the wait for the next call.
        let ms = hang.duration_ms.unwrap_or_default();
        assert!((2000..10_000).contains(&ms), "{hang:?}");
        assert_eq!(calls(&records, "echo")[0].status.as_deref(), Some("ok"));
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn the_agent_leaving_mid_call_records_it_interrupted_and_leaves_nothing_behind() {
    within("agent leaves", async {
        let scratch = Scratch::new();
        let gw = gateway(&scratch, &[]).await;
        let peer = gw.client().peer().clone();
        let call = tokio::spawn(async move {
            let p = CallToolRequestParams::new("slow")
                .with_arguments(json!({"ms": 120000}).as_object().cloned().expect("object"));
            peer.call_tool(p).await
        });
        // In flight once its first progress notification arrives.
        within("the first progress notification", async {
            loop {
                let wait = gw.agent.seen.notified();
                if !gw.agent.progress.lock().unwrap().is_empty() {
                    break;
                }
                wait.await;
            }
        })
        .await;
        let closed = gw.close().await;
        assert_eq!(closed.code, Some(0), "{}", closed.stderr);
        assert!(
            call.await.expect("join").is_err(),
            "the call did not complete"
        );
        let records = journal(&closed.runs()[0]);
        let slow = calls(&records, "slow")[0];
        assert_eq!(slow.status.as_deref(), Some("interrupted"), "{slow:?}");
        assert!(lifecycle(&records, "agentDisconnected").is_some());
        assert!(records
            .last()
            .is_some_and(|r| r.payload["marker"] == "runFinalized"));
        assert!(closed.runs()[0].join("report.html").is_file());
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn sigterm_stops_the_gateway_and_a_server_that_ignores_its_closed_stdin() {
    within("sigterm", async {
        let scratch = Scratch::new();
        let gw = gateway(&scratch, &["--ignore-stdin-close"]).await;
        gw.call("echo", json!({"text": "x"})).await;
        gw.signal(nix::sys::signal::Signal::SIGTERM);
        let closed = gw.wait().await;
        assert_eq!(closed.code, Some(0), "{}", closed.stderr);
        let records = journal(&closed.runs()[0]);
        let stop = lifecycle(&records, "stopRequested").expect("stopRequested");
        assert_eq!(stop.payload["detail"], "SIGTERM");
        let exited = lifecycle(&records, "serverExited").expect("serverExited");
        assert_eq!(exited.payload["detail"], "killed by signal 15 (SIGTERM)");
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn a_20_mb_result_passes_through_without_a_copy_into_evidence() {
    within("huge result", async {
        let scratch = Scratch::new();
        let gw = gateway(&scratch, &[]).await;
        let pid = gw.pid();
        let before = cdp_relay_tests::status_kib(pid, "VmRSS");
        let big = gw.call("image", json!({"bytes": 20 << 20})).await;
        let rmcp::model::ContentBlock::Image(img) = &big.content[0] else {
            panic!("not an image")
        };
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&img.data)
            .expect("base64");
        assert_eq!(bytes.len(), 20 << 20);
        assert!(bytes.starts_with(b"\x89PNG"));
        let peak = cdp_relay_tests::status_kib(pid, "VmHWM");
        let closed = gw.close().await;
        let run = &closed.runs()[0];
        let records = journal(run);
        let image = calls(&records, "image")[0];
        assert_eq!(image.payload["result"], json!({"content": 1, "images": 1}));
        let stored: u64 = cdp_relay_tests::files::all_files(run)
            .iter()
            .map(|(_, b)| b.len() as u64)
            .sum();
        assert!(
            stored < (2 << 20),
            "no copy of the result in evidence: {stored} bytes"
        );
        eprintln!("gateway RSS before {before} KiB, peak {peak} KiB for a 20 MiB image");
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn resources_are_confined_to_the_evidence_root() {
    within("resources", async {
        let scratch = Scratch::new();
        let gw = gateway(&scratch, &[]).await;
        gw.call("echo", json!({"text": "x"})).await;
        let run = gw.runs().pop().expect("a run");
        let run_id = run.file_name().unwrap().to_string_lossy().into_owned();
        // A secret outside the run, and links to it planted inside.
        let elsewhere = tempfile::tempdir().unwrap();
        let outside = elsewhere.path().join("outside-secret.txt");
        std::fs::write(&outside, "OUTSIDE-SECRET-7731").unwrap();
        std::os::unix::fs::symlink(&outside, run.join("artifacts/leak.png")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), gw.evidence.path().join("runs/linked-run"))
            .unwrap();

        let text = |r: rmcp::model::ReadResourceResult| match &r.contents[0] {
            rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
            other => panic!("{other:?}"),
        };
        let runs = text(gw.read("evidence://runs").await.expect("runs"));
        assert!(runs.contains(&run_id), "{runs}");
        let summary = text(
            gw.read("evidence://runs/current/summary.md")
                .await
                .expect("summary"),
        );
        assert!(summary.contains("`echo`"), "{summary}");
        let html = text(
            gw.read(&format!("evidence://runs/{run_id}/report.html"))
                .await
                .expect("report"),
        );
        assert!(html.starts_with("<!DOCTYPE html>"));
        let journal_text = text(
            gw.read("evidence://runs/current/actions.jsonl")
                .await
                .expect("journal"),
        );
        assert!(journal_text.contains("\"method\":\"echo\""));
        assert!(gw
            .read("evidence://runs/current/manifest.json")
            .await
            .is_ok());
        for bad in [
            "evidence://runs/../summary.md".to_owned(),
            "evidence://runs/current/../../../outside-secret.txt".to_owned(),
            "evidence://runs/%2e%2e/summary.md".to_owned(),
            "evidence://runs/current/artifacts/%2e%2e%2foutside-secret.txt".to_owned(),
            "evidence://runs/current/artifacts/leak.png".to_owned(),
            "evidence://runs/linked-run/summary.md".to_owned(),
            format!("evidence://runs/{}/summary.md", outside.display()),
            "evidence://runs/no-such-run/summary.md".to_owned(),
            "evidence://runs/current/artifacts/none.png".to_owned(),
            "evidence://runs/current/budget.json".to_owned(),
        ] {
            match gw.read(&bad).await {
                Err(ServiceError::McpError(e)) => {
                    assert!(!e.message.contains("OUTSIDE-SECRET"), "{bad}: {e:?}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        let closed = gw.close().await;
        assert!(!closed.stderr.contains("OUTSIDE-SECRET"));
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn evidence_finalize_renders_now_and_later_calls_go_to_a_new_run() {
    within("finalize", async {
        let scratch = Scratch::new();
        let gw = gateway(&scratch, &[]).await;
        gw.call("echo", json!({"text": "first run"})).await;
        let done = gw.call("evidence_finalize", json!({})).await;
        let v = done.structured_content.expect("structured");
        // Resource URIs, never the run directory's path.
        let run_id = v["runId"].as_str().expect("runId").to_owned();
        assert_eq!(
            v["reportResource"],
            format!("evidence://runs/{run_id}/report.html"),
            "{v}"
        );
        assert!(v.get("report").is_none(), "{v}");
        assert!(gw.runs()[0].join("report.html").is_file(), "{v}");
        assert_ne!(v["runId"], v["nextRunId"]);
        gw.call("echo", json!({"text": "second run"})).await;
        let closed = gw.close().await;
        let runs = closed.runs();
        assert_eq!(runs.len(), 2, "{runs:?}");
        let first = journal(&runs[0]);
        let second = journal(&runs[1]);
        assert_eq!(calls(&first, "echo").len(), 1);
        assert_eq!(calls(&first, "evidence_finalize").len(), 1);
        assert_eq!(calls(&second, "echo").len(), 1);
        assert!(runs[1].join("report.html").is_file());
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn without_a_command_the_gateway_serves_its_own_tools_for_its_browser() {
    within("bare", async {
        let scratch = Scratch::new();
        let gw = McpGateway::spawn(&[], &[("TMPDIR", scratch.path().as_os_str())]).await;
        let tools = gw.client().list_all_tools().await.expect("tools");
        assert_eq!(tools.len(), 7);
        let ep = gw.call("relay_endpoint", json!({})).await;
        let v = ep.structured_content.expect("structured");
        let cdp = v["cdpUrl"].as_str().expect("cdpUrl");
        let version =
            cdp_relay_tests::http::get(cdp.trim_start_matches("http://"), "/json/version")
                .await
                .json();
        assert_eq!(v["wsUrl"], version["webSocketDebuggerUrl"], "{v} {version}");
        let unknown = gw.try_call("click", json!({"uid": "1_2"})).await;
        assert!(
            matches!(unknown, Err(ServiceError::McpError(_))),
            "{unknown:?}"
        );
        gw.call("evidence_mark_step", json!({"label": "look around"}))
            .await;
        let secret = gw
            .call(
                "evidence_register_secret",
                json!({"name": "PIN_CODE", "value": "98xy"}),
            )
            .await;
        assert!(!format!("{secret:?}").contains("98xy"), "never echoed");
        let short = gw
            .call(
                "evidence_register_secret",
                json!({"name": "TINY", "value": "ab"}),
            )
            .await;
        assert_eq!(short.is_error, Some(true));
        let closed = gw.close().await;
        let records = journal(&closed.runs()[0]);
        let mark = calls(&records, "evidence_mark_step")[0];
        assert_eq!(mark.payload["label"], "look around");
        assert_eq!(calls(&records, "click")[0].status.as_deref(), Some("error"));
        let all = std::fs::read_to_string(closed.runs()[0].join("actions.jsonl")).unwrap();
        assert!(!all.contains("98xy"));
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn the_browser_dying_is_recorded_and_the_evidence_tools_keep_working() {
    within("browser dies", async {
        let scratch = Scratch::new();
        let gw = gateway(&scratch, &[]).await;
        gw.call("echo", json!({"text": "x"})).await;
        // The browser's processes name their profile, which is in this test's scratch directory.
        let browser: Vec<u32> = cdp_relay_tests::processes_mentioning(&format!(
            "{}/cdp-relay-profile-",
            scratch.path().display()
        ));
        assert!(!browser.is_empty(), "the gateway's browser runs");
        for pid in browser {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        gw.wait_for_stderr("the browser exited").await;
        let summary = gw.call("evidence_summary", json!({})).await;
        assert_ne!(summary.is_error, Some(true), "{}", text_of(&summary));
        let closed = gw.close().await;
        assert_eq!(closed.code, Some(0), "{}", closed.stderr);
        let records = journal(&closed.runs()[0]);
        let exited = lifecycle(&records, "browserExited").expect("browserExited");
        assert_eq!(exited.status.as_deref(), Some("error"));
        assert!(closed.runs()[0].join("report.html").is_file());
        scratch.assert_clean();
    })
    .await;
}
