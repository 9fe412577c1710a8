//! Two producers, one run: the relay and `cdp-relay evidence append` processes (a stand-in for a
//! device layer) write the same session's run at the same time. Nothing is lost, nothing is torn,
//! and each producer's records are in timestamp order.

use cdp_evidence::{EvidenceConfig, Store};
use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::http::get;
use cdp_relay_tests::{page_ws, relay_binary, within, Chromium, RelayProcess};
use serde_json::json;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

const APPENDERS: usize = 4;
const PER_APPENDER: usize = 500;
const EVALUATIONS: i64 = 200;

#[tokio::test]
async fn relay_and_cli_share_a_run_without_losing_records() {
    within("two producers", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_string_lossy().into_owned();
        let chrome = Chromium::start().await;
        let relay = RelayProcess::serve(
            &chrome.http(),
            &["--evidence-dir", &root, "--session", "shared"],
        )
        .await;
        let status = get(&relay.authority(), "/relay/v1/status").await.json();
        let run_id = status["evidence"]["runId"]
            .as_str()
            .expect("run id")
            .to_owned();

        // The device stand-ins start appending while the relay records live traffic.
        let mut appenders = Vec::new();
        for p in 0..APPENDERS {
            let mut child = tokio::process::Command::new(relay_binary())
                .args([
                    "evidence",
                    "append",
                    "--evidence-dir",
                    &root,
                    "--session",
                    "shared",
                    "--source",
                    "device",
                ])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("spawn evidence append");
            let mut stdin = child.stdin.take().expect("stdin");
            appenders.push(tokio::spawn(async move {
                for i in 0..PER_APPENDER {
                    let line = json!({"tool": "adb", "kind": "action", "status": "ok",
                        "payload": {"method": "tap", "point": {"x": p, "y": i}}});
                    stdin
                        .write_all(format!("{line}\n").as_bytes())
                        .await
                        .expect("write");
                }
                drop(stdin);
                child.wait_with_output().await.expect("append output")
            }));
        }
        let page = page_ws(&relay.authority()).await;
        let mut cdp = Cdp::connect(&page).await;
        for i in 0..EVALUATIONS {
            let r = cdp
                .call(
                    "Runtime.evaluate",
                    json!({"expression": format!("{i} + 1")}),
                )
                .await;
            assert_eq!(r["result"]["value"], i + 1);
        }
        for a in appenders {
            let out = a.await.expect("appender task");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                run_id,
                "appenders joined the relay's run"
            );
        }
        drop(cdp);
        relay.stop().await;

        let store = Store::open(EvidenceConfig::at(dir.path())).expect("store");
        let journal = store.read_journal(&run_id).expect("journal");
        assert!(journal.corrupt.is_empty(), "{:?}", journal.corrupt);
        assert!(journal.torn_tail.is_none());
        let records = journal.records;
        let device: Vec<_> = records
            .iter()
            .filter(|r| r.source.as_deref() == Some("device"))
            .collect();
        assert_eq!(
            device.len(),
            APPENDERS * PER_APPENDER,
            "device records lost"
        );
        for p in 0..APPENDERS {
            let ys: Vec<u64> = device
                .iter()
                .filter(|r| r.payload["point"]["x"].as_f64() == Some(p as f64))
                .filter_map(|r| r.payload["point"]["y"].as_f64().map(|y| y as u64))
                .collect();
            assert_eq!(
                ys,
                (0..PER_APPENDER as u64).collect::<Vec<_>>(),
                "appender {p} out of order or incomplete"
            );
        }
        let evals = records
            .iter()
            .filter(|r| {
                r.source.as_deref() == Some("relay") && r.payload["method"] == "Runtime.evaluate"
            })
            .count();
        assert_eq!(evals as i64, EVALUATIONS);
        // Timestamps: each producer's records go forward in time, and all fall inside the run.
        let manifest = store.read_manifest(&run_id).expect("manifest");
        let start = cdp_evidence::time::parse_rfc3339_millis(
            manifest.started_at.as_deref().expect("start"),
        )
        .expect("ms");
        let end = cdp_evidence::time::parse_rfc3339_millis(
            manifest.finalized_at.as_deref().expect("end"),
        )
        .expect("ms");
        for source in ["device", "relay"] {
            let times: Vec<u64> = records
                .iter()
                .filter(|r| r.source.as_deref() == Some(source) && r.kind != "marker")
                .filter(|r| source == "device" || r.payload["method"] == "Runtime.evaluate")
                .filter_map(|r| r.started_at_ms)
                .collect();
            assert!(
                times.windows(2).all(|w| w[0] <= w[1]),
                "{source} records go back in time"
            );
            assert!(
                times.iter().all(|t| (start..=end).contains(t)),
                "{source} record outside the run"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn relay_continues_in_a_new_run_when_another_producer_finalizes() {
    within("finalized under the relay", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_string_lossy().into_owned();
        let chrome = Chromium::start().await;
        let relay = RelayProcess::serve(
            &chrome.http(),
            &["--evidence-dir", &root, "--session", "handover"],
        )
        .await;
        let first = get(&relay.authority(), "/relay/v1/status").await.json()["evidence"]["runId"]
            .as_str()
            .expect("run")
            .to_owned();
        let out = within(
            "evidence finalize",
            tokio::process::Command::new(relay_binary())
                .args([
                    "evidence",
                    "finalize",
                    "--evidence-dir",
                    &root,
                    "--session",
                    "handover",
                    "--source",
                    "device",
                ])
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("finalize");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );

        let page = page_ws(&relay.authority()).await;
        let mut cdp = Cdp::connect(&page).await;
        cdp.call("Runtime.evaluate", json!({"expression": "1"}))
            .await;
        drop(cdp);
        let stderr = relay.stop().await;
        assert!(!stderr.contains("evidence: cannot"), "{stderr}");

        let store = Store::open(EvidenceConfig::at(dir.path())).expect("store");
        let runs = store.list_runs().expect("runs");
        let second = runs.iter().find(|r| r.id != first).expect("a second run");
        let records = store.read_journal(&second.id).expect("journal").records;
        assert!(
            records
                .iter()
                .any(|r| r.payload["method"] == "Runtime.evaluate"),
            "{records:?}"
        );
        assert_eq!(
            store
                .read_manifest(&second.id)
                .expect("manifest")
                .status
                .as_deref(),
            Some("finalized")
        );
    })
    .await;
}
