//! `cdp-relay mcp` with a scripted MCP server (`src/bin/mcp-fake.rs`): transparency (tools and
//! results exactly as the server gives them), the gateway's records of each call, and faults a
//! real server will not produce on demand — a crash mid-call, a server that never initializes,
//! the agent leaving mid-call, a 20 MB result, a borrowed tool name, signals — plus the
//! confinement of the `evidence://` resources. The browser behind the relay is a real Chromium.

// Log messages are deprecated by SEP-2577, and still what servers send.
#![allow(deprecated)]

use cdp_evidence::StoredRecord;
use cdp_relay_tests::files::Scratch;
use cdp_relay_tests::mcp::McpGateway;
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

async fn gateway(scratch: &Scratch, fake_args: &[&str]) -> McpGateway {
    McpGateway::spawn(
        &args(&[], fake_args),
        &[("TMPDIR", scratch.path().as_os_str())],
    )
    .await
}

/// The journal of the only run, as records.
fn journal(run: &std::path::Path) -> Vec<StoredRecord> {
    let bytes = std::fs::read(run.join("actions.jsonl")).expect("journal");
    cdp_evidence::parse_journal(&bytes).records
}

fn calls<'a>(records: &'a [StoredRecord], method: &str) -> Vec<&'a StoredRecord> {
    records
        .iter()
        .filter(|r| r.source.as_deref() == Some("mcp") && r.kind == "action")
        .filter(|r| r.payload["method"] == method)
        .collect()
}

fn lifecycle<'a>(records: &'a [StoredRecord], event: &str) -> Option<&'a StoredRecord> {
    records
        .iter()
        .find(|r| r.kind == "lifecycle" && r.payload["event"] == event)
}

/// The fake's process, found by its path on a command line.
fn fake_running() -> Vec<u32> {
    cdp_relay_tests::processes_mentioning(FAKE)
        .into_iter()
        .filter(|pid| *pid != std::process::id())
        .collect()
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
            .serve((
                direct_child.stdout.take().expect("stdout"),
                direct_child.stdin.take().expect("stdin"),
            ))
            .await
            .expect("direct session");
        let scratch = Scratch::new();
        let gw = gateway(&scratch, &[]).await;

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
        }
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

        let closed = gw.close().await;
        assert_eq!(closed.code, Some(0), "{}", closed.stderr);
        let _ = direct.cancel().await;
        let runs = closed.runs();
        assert_eq!(runs.len(), 1);
        let records = journal(&runs[0]);
        // One record per call, each with its reduced arguments and the shape of its result.
        for (name, count) in [("echo", 1), ("structured", 1), ("image", 1), ("fail", 1), ("rpc_error", 1), ("slow", 1), ("log", 1)] {
            assert_eq!(calls(&records, name).len(), count, "{name}");
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
        assert!(fake_running().is_empty(), "the wrapped server is gone");
        scratch.assert_clean();
    })
    .await;
}
