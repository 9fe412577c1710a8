//! The gateway's transports as a raw agent sees them (JSON-RPC lines written and read by hand,
//! so nothing on the agent's side reorders or buffers): what the wrapped server sends on its own
//! arrives in order before the result, floods and over-long lines cost no memory, an over-long
//! message is answered with an error and recorded, a duplicate request id is refused, a borrowed
//! tool name is hidden after `tools/list_changed`, and an interruption says what happened. The
//! wrapped server is the scripted fake (`src/bin/mcp-fake.rs`); the browser is a real Chromium.

use cdp_evidence::StoredRecord;
use cdp_relay_tests::files::Scratch;
use cdp_relay_tests::mcp::runs_in;
use cdp_relay_tests::{relay_binary, within};
use serde_json::{json, Value};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const FAKE: &str = env!("CARGO_BIN_EXE_mcp-fake");

/// `cdp-relay mcp` with an agent that reads and writes lines itself. Killed on drop.
struct Raw {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    out: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    stderr: Arc<Mutex<String>>,
    evidence: tempfile::TempDir,
}

impl Raw {
    async fn spawn(scratch: &Scratch, relay: &[&str], fake: &[&str]) -> Raw {
        let evidence = tempfile::tempdir().expect("evidence tempdir");
        let mut cmd = tokio::process::Command::new(relay_binary());
        cmd.arg("mcp")
            .args(relay)
            .arg("--")
            .arg(FAKE)
            .args(fake)
            // Names the test's scratch directory, so assert_clean finds a process left behind.
            .arg("--tag")
            .arg(scratch.path())
            .env("CDP_RELAY_EVIDENCE_DIR", evidence.path())
            .env("TMPDIR", scratch.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawn cdp-relay mcp");
        let stderr = Arc::new(Mutex::new(String::new()));
        cdp_relay_tests::collect_stderr(child.stderr.take().expect("stderr"), stderr.clone(), None);
        let mut raw = Raw {
            stdin: child.stdin.take(),
            out: BufReader::new(child.stdout.take().expect("stdout")).lines(),
            child,
            stderr,
            evidence,
        };
        raw.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-agent", "version": "1"}}}),
        )
        .await;
        let init = raw.answer(0).await;
        assert!(init.get("result").is_some(), "{init}");
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        raw
    }

    async fn send(&mut self, v: Value) {
        let mut line = serde_json::to_vec(&v).expect("json");
        line.push(b'\n');
        self.send_bytes(&line).await;
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).await.expect("write");
        stdin.flush().await.expect("flush");
    }

    /// The next message the gateway sends.
    async fn recv(&mut self) -> Value {
        let line = within("a message from the gateway", self.out.next_line())
            .await
            .expect("read")
            .unwrap_or_else(|| panic!("the gateway closed stdout; stderr:\n{}", self.stderr()));
        serde_json::from_str(&line).expect("a JSON line")
    }

    /// Messages until the answer to request `id` (included, last).
    async fn until_answer(&mut self, id: i64) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let m = self.recv().await;
            let done = m.get("method").is_none() && m["id"] == id;
            seen.push(m);
            if done {
                return seen;
            }
        }
    }

    async fn answer(&mut self, id: i64) -> Value {
        self.until_answer(id).await.pop().expect("an answer")
    }

    fn stderr(&self) -> String {
        self.stderr.lock().expect("lock").clone()
    }

    fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// Closes stdin and waits for the gateway to exit; returns its journal and stderr.
    async fn close(mut self) -> (Vec<StoredRecord>, String, tempfile::TempDir) {
        drop(self.stdin.take());
        let status = within("the gateway's exit", self.child.wait())
            .await
            .expect("wait");
        // Its stderr reader ends with the pipe.
        let stderr = within("the gateway's stderr", async {
            loop {
                if Arc::strong_count(&self.stderr) == 1 {
                    return self.stderr();
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
        .await;
        assert_eq!(status.code(), Some(0), "{stderr}");
        let run = runs_in(self.evidence.path()).pop().expect("a run");
        let bytes = std::fs::read(run.join("actions.jsonl")).expect("journal");
        (
            cdp_evidence::parse_journal(&bytes).records,
            stderr,
            self.evidence,
        )
    }
}

fn call(id: i64, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": args}})
}

fn tool_calls<'a>(records: &'a [StoredRecord], method: &str) -> Vec<&'a StoredRecord> {
    records
        .iter()
        .filter(|r| r.source.as_deref() == Some("mcp") && r.kind == "action")
        .filter(|r| r.payload["method"] == method)
        .collect()
}

/// A process's memory from `/proc`: (current RSS, peak RSS), in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{name} in {status}"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[tokio::test]
async fn notifications_reach_the_agent_all_in_order_and_before_the_result() {
    within("order", async {
        let scratch = Scratch::new();
        let mut gw = Raw::spawn(&scratch, &[], &[]).await;
        for round in 0..5i64 {
            let id = 10 + round;
            let mut req = call(id, "flood", json!({"progress": 300, "logs": 300}));
            req["params"]["_meta"] = json!({"progressToken": format!("agent-token-{round}")});
            gw.send(req).await;
            let seen = gw.until_answer(id).await;
            let (result, notes) = seen.split_last().expect("the result");
            assert_eq!(result["result"]["content"][0]["text"], "flooded 600");
            assert_eq!(notes.len(), 600, "all 600 notifications, before the result");
            for (seq, n) in notes.iter().enumerate() {
                // The fake alternates progress and log, numbering both in the order sent.
                match n["method"].as_str() {
                    Some("notifications/progress") => {
                        assert_eq!(seq % 2, 0, "round {round}: {n}");
                        assert_eq!(n["params"]["message"], format!("seq {seq}"));
                        assert_eq!(
                            n["params"]["progressToken"],
                            format!("agent-token-{round}"),
                            "under the agent's own token"
                        );
                        assert_eq!(n["params"]["progress"], (seq / 2 + 1) as f64);
                    }
                    Some("notifications/message") => {
                        assert_eq!(seq % 2, 1, "round {round}: {n}");
                        assert_eq!(n["params"]["data"]["seq"], seq);
                    }
                    _ => panic!("round {round}: unexpected {n}"),
                }
            }
        }
        let (records, _, _) = gw.close().await;
        assert_eq!(tool_calls(&records, "flood").len(), 5);
        scratch.assert_clean();
    })
    .await;
}

/// Log notifications in the flood. 100k took 50 to 75 s (about 2,000 a second from the fake
/// server through the gateway), a slow test for what it proves: before the gateway read the
/// server's stdout with backpressure, 100k grew it by 496 MiB; 30k would be ~150 MiB, three
/// times the bound below.
const FLOOD_LOGS: usize = 30_000;

#[tokio::test]
async fn a_flood_of_log_notifications_is_passed_on_without_holding_memory() {
    within("flood", async {
        let scratch = Scratch::new();
        let mut gw = Raw::spawn(&scratch, &[], &[]).await;
        // Warm up: one small call, so that the baseline includes the session's own buffers.
        gw.send(call(1, "flood", json!({"logs": 100}))).await;
        gw.until_answer(1).await;
        let (before, _) = rss_kib(gw.pid());
        gw.send(call(2, "flood", json!({"logs": FLOOD_LOGS}))).await;
        let mut logs = 0usize;
        let mut peak = 0;
        loop {
            let m = gw.recv().await;
            if m["id"] == 2 {
                break;
            }
            assert_eq!(m["params"]["data"]["seq"], logs, "in order");
            logs += 1;
            if logs.is_multiple_of(3_000) {
                peak = peak.max(rss_kib(gw.pid()).0);
            }
        }
        assert_eq!(logs, FLOOD_LOGS, "none dropped");
        let (after, hwm) = rss_kib(gw.pid());
        let grew = hwm.saturating_sub(before);
        eprintln!(
            "{FLOOD_LOGS} log notifications: RSS {before} KiB before, {after} KiB after, peak {hwm} KiB (sampled {peak} KiB): +{grew} KiB"
        );
        // Before the gateway read the server's stdout with backpressure: +496 MiB for 100k.
        assert!(grew < 48 * 1024, "the gateway's peak grew by {grew} KiB");
        gw.close().await;
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn a_stderr_line_without_an_end_is_cut_and_counted_not_held() {
    within("stderr", async {
        let scratch = Scratch::new();
        let bytes = 64 << 20;
        let gw = Raw::spawn(&scratch, &[], &["--stderr-bytes", &bytes.to_string()]).await;
        within("the end of the flood on stderr", async {
            while !gw.stderr().contains("stderr-flood-end") {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        })
        .await;
        let (rss, hwm) = rss_kib(gw.pid());
        eprintln!("64 MiB stderr line: RSS {rss} KiB, peak {hwm} KiB");
        // Before: the whole line was held (64 MiB and more).
        assert!(hwm < 48 * 1024, "the gateway's peak RSS is {hwm} KiB");
        let stderr = gw.stderr();
        assert!(
            stderr.contains("more bytes of this line dropped"),
            "the cut is said: {}",
            &stderr[..stderr.len().min(2000)]
        );
        assert!(stderr.len() < 1 << 20, "at most a line's head is passed on");
        gw.close().await;
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn over_long_messages_are_answered_with_an_error_and_recorded() {
    within("over-long", async {
        let scratch = Scratch::new();
        let limit = 64 * 1024;
        let mut gw = Raw::spawn(&scratch, &["--max-message-size", &limit.to_string()], &[]).await;
        // The server's answer is over the limit: the call ends with an error, not a hang.
        gw.send(call(5, "huge", json!({"bytes": 300_000}))).await;
        let answer = gw.answer(5).await;
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("over cdp-relay's limit of 65536 bytes"),
            "{answer}"
        );
        // The agent's request is over the limit: answered with an error under its id.
        let big = "q".repeat(200_000);
        gw.send(call(6, "echo", json!({"text": big}))).await;
        let answer = gw.answer(6).await;
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("the request was"), "{answer}");
        assert!(message.contains("it was not run"), "{answer}");
        // The session goes on.
        gw.send(call(7, "echo", json!({"text": "still here"})))
            .await;
        assert_eq!(
            gw.answer(7).await["result"]["content"][0]["text"],
            "still here"
        );
        let (records, stderr, _) = gw.close().await;
        let huge = tool_calls(&records, "huge");
        assert_eq!(huge.len(), 1);
        assert_eq!(huge[0].status.as_deref(), Some("error"));
        assert!(
            huge[0]
                .error
                .as_deref()
                .is_some_and(|e| e.contains("over cdp-relay's limit")),
            "{:?}",
            huge[0]
        );
        let echo = tool_calls(&records, "echo");
        assert_eq!(echo.len(), 2, "the refused request and the one after");
        assert!(
            echo.iter().any(|r| r.status.as_deref() == Some("error")
                && r.error
                    .as_deref()
                    .is_some_and(|e| e.contains("over the limit"))),
            "{echo:?}"
        );
        assert!(!stderr.contains(&big[..1000]), "the request is not logged");
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn a_request_reusing_an_id_in_flight_is_refused_and_the_first_runs() {
    within("duplicate ids", async {
        let scratch = Scratch::new();
        let mut gw = Raw::spawn(&scratch, &[], &[]).await;
        gw.send(call(9, "slow", json!({"ms": 800}))).await;
        gw.send(call(9, "echo", json!({"text": "second"}))).await;
        let first = gw.answer(9).await;
        assert!(
            first["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("already in use")),
            "the second is refused at once: {first}"
        );
        let second = gw.answer(9).await;
        assert_eq!(second["result"]["content"][0]["text"], "slow done");
        // Once answered, the id is free again.
        gw.send(call(9, "echo", json!({"text": "again"}))).await;
        assert_eq!(gw.answer(9).await["result"]["content"][0]["text"], "again");
        let (records, _, _) = gw.close().await;
        let echo = tool_calls(&records, "echo");
        assert!(
            echo.iter().any(|r| r.status.as_deref() == Some("error")
                && r.error
                    .as_deref()
                    .is_some_and(|e| e.contains("already in use"))),
            "{echo:?}"
        );
        assert_eq!(
            tool_calls(&records, "slow")[0].status.as_deref(),
            Some("ok")
        );
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn a_tool_name_borrowed_after_list_changed_is_hidden_and_recorded() {
    within("late collision", async {
        let scratch = Scratch::new();
        let mut gw = Raw::spawn(&scratch, &[], &["--offer-later", "evidence_finalize"]).await;
        gw.send(call(3, "change_tools", json!({}))).await;
        let seen = gw.until_answer(3).await;
        assert!(seen
            .iter()
            .any(|m| m["method"] == "notifications/tools/list_changed"));
        gw.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}))
            .await;
        let list = gw.answer(4).await;
        let names: Vec<&str> = list["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(
            names.iter().filter(|n| **n == "evidence_finalize").count(),
            1,
            "{names:?}"
        );
        let (records, stderr, _) = gw.close().await;
        assert!(
            records.iter().any(|r| r.payload["method"] == "tools/list"
                && r.error
                    .as_deref()
                    .is_some_and(|e| e.contains("evidence_finalize"))),
            "recorded"
        );
        assert!(stderr.contains("hidden from the agent"), "{stderr}");
        scratch.assert_clean();
    })
    .await;
}

#[tokio::test]
async fn an_interrupted_call_says_whether_the_agent_cancelled_it_or_left() {
    within("interruptions", async {
        let scratch = Scratch::new();
        let mut gw = Raw::spawn(&scratch, &[], &[]).await;
        let mut req = call(1, "slow", json!({"ms": 60000}));
        req["params"]["_meta"] = json!({"progressToken": 1});
        gw.send(req).await;
        // In flight once its first progress arrives.
        assert_eq!(gw.recv().await["method"], "notifications/progress");
        gw.send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 1, "reason": "changed my mind"}}),
        )
        .await;
        // The second call is left running when the agent goes.
        let mut req = call(2, "slow", json!({"ms": 60000}));
        req["params"]["_meta"] = json!({"progressToken": 2});
        gw.send(req).await;
        loop {
            let m = gw.recv().await;
            if m["method"] == "notifications/progress" && m["params"]["progressToken"] == 2 {
                break;
            }
        }
        let (records, _, _) = gw.close().await;
        let slow = tool_calls(&records, "slow");
        assert_eq!(slow.len(), 2, "{slow:?}");
        let why = |i: usize| slow[i].error.clone().unwrap_or_default();
        let (cancelled, left) = if why(0).contains("cancelled") {
            (0, 1)
        } else {
            (1, 0)
        };
        assert_eq!(why(cancelled), "cancelled by the agent");
        assert_eq!(why(left), "the agent disconnected during the call");
        for r in slow {
            assert_eq!(r.status.as_deref(), Some("interrupted"));
        }
        scratch.assert_clean();
    })
    .await;
}
