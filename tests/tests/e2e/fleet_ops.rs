//! Operating a relay in a cluster: remote producers appending over HTTP while the relay records
//! (no record lost or interleaved, bad bodies refused with the right status and nothing
//! written, a run finalized by another producer followed into the session's next run, a full
//! disk answered with 503 and nothing half-written), the token from a file, the unauthenticated ready/live probes that say one word,
//! Prometheus metrics behind the token, and JSON logs.

use cdp_evidence::{EvidenceConfig, Store};
use cdp_relay::{EvidenceSettings, ListenPolicy};
use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::http::{get, request, request_with_body};
use cdp_relay_tests::{within, Chromium, RelayFixture, RelayProcess};
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "fleet-ops-token-8Hq2LmZ9";
const PRODUCERS: usize = 8;
const REQUESTS: usize = 20;
const PER_REQUEST: usize = 25;

/// An in-process relay with a token, recording into `root`.
async fn relay_with_token(upstream: &str, root: &std::path::Path) -> RelayFixture {
    let policy = ListenPolicy::new(
        "127.0.0.1:0".parse().unwrap(),
        vec![],
        vec![],
        Some(TOKEN.into()),
        false,
    )
    .unwrap();
    let settings = EvidenceSettings {
        root: root.to_path_buf(),
        session: Some("ops".into()),
        ..EvidenceSettings::default()
    };
    RelayFixture::start_recording_with(upstream, settings, |c| c.policy = policy).await
}

fn auth() -> String {
    format!("Bearer {TOKEN}")
}

async fn post(
    addr: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> cdp_relay_tests::http::Answer {
    let auth = auth();
    let mut headers = vec![("Authorization", auth.as_str())];
    if let Some(ct) = content_type {
        headers.push(("Content-Type", ct));
    }
    request_with_body(addr, "POST", path, &headers, body).await
}

#[tokio::test]
async fn remote_producers_append_while_the_relay_records_without_loss_or_interleaving() {
    within("remote producers", async {
        let chrome = Chromium::start().await;
        let evidence = tempfile::tempdir().unwrap();
        let relay = relay_with_token(&chrome.http(), evidence.path()).await;
        let addr = relay.authority();

        // The relay records a client's console errors while producers post.
        let list = get(&addr, &format!("/json/list?token={TOKEN}")).await.json();
        let ws = list
            .as_array()
            .and_then(|l| l.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            .expect("page")
            .to_owned();
        let client = tokio::spawn(async move {
            let mut cdp = Cdp::connect(&ws).await;
            cdp.call("Runtime.enable", json!({})).await;
            for i in 0..200 {
                cdp.call("Runtime.evaluate", json!({"expression": format!("console.error('relay side {i}')")}))
                    .await;
            }
        });
        let producers = (0..PRODUCERS).map(|p| {
            let addr = addr.clone();
            tokio::spawn(async move {
                for r in 0..REQUESTS {
                    let body: String = (0..PER_REQUEST)
                        .map(|i| {
                            format!(
                                "{}\n",
                                json!({"tool": "stress", "kind": "stress", "source": format!("producer-{p}"),
                                       "payload": {"p": p, "r": r, "i": i}})
                            )
                        })
                        .collect();
                    let a = post(&addr, "/relay/v1/evidence?source=remote-test", Some("application/x-ndjson"), body.as_bytes()).await;
                    assert_eq!(a.status, 200, "{}", a.text());
                    assert_eq!(a.json()["appended"], PER_REQUEST);
                }
            })
        });
        for p in futures_util::future::join_all(producers).await {
            p.expect("producer");
        }
        client.await.expect("client");
        let summary = relay.stop().await.expect("finished");

        let store = Store::open(EvidenceConfig::at(evidence.path())).unwrap();
        let run_id = summary.run_dir.file_name().unwrap().to_string_lossy().into_owned();
        let journal = store.read_journal(&run_id).unwrap();
        assert!(journal.corrupt.is_empty(), "{:?}", journal.corrupt);
        // File order: each request's records are one block, in order.
        let mut blocks: HashMap<(u64, u64), Vec<(usize, u64)>> = HashMap::new();
        for (pos, rec) in journal.records.iter().enumerate() {
            if rec.kind == "stress" {
                let pl = &rec.payload;
                blocks
                    .entry((pl["p"].as_u64().unwrap(), pl["r"].as_u64().unwrap()))
                    .or_default()
                    .push((pos, pl["i"].as_u64().unwrap()));
                assert_eq!(rec.source.as_deref(), Some(format!("producer-{}", pl["p"]).as_str()));
            }
        }
        assert_eq!(blocks.len(), PRODUCERS * REQUESTS, "requests lost");
        for ((p, r), recs) in &blocks {
            assert_eq!(recs.len(), PER_REQUEST, "records of {p}/{r} lost or doubled");
            for (k, (pos, i)) in recs.iter().enumerate() {
                assert_eq!(*i, k as u64, "{p}/{r} out of order");
                assert_eq!(*pos, recs[0].0 + k, "{p}/{r} interleaved with other records");
            }
        }
        let relay_side = journal
            .records
            .iter()
            .filter(|r| r.kind == "console" && r.payload["text"].as_str().is_some_and(|t| t.starts_with("relay side")))
            .count();
        assert_eq!(relay_side, 200, "the relay's own records");
    })
    .await;
}

#[tokio::test]
async fn bad_bodies_are_refused_with_the_right_status_and_nothing_is_written() {
    within("bad bodies", async {
        let chrome = Chromium::start().await;
        let evidence = tempfile::tempdir().unwrap();
        let relay = relay_with_token(&chrome.http(), evidence.path()).await;
        let addr = relay.authority();
        let good = r#"{"tool":"t","kind":"marked","payload":{"planted":"refused-marker"}}"#;
        let path = "/relay/v1/evidence";

        let no_token = request_with_body(&addr, "POST", path, &[], good.as_bytes()).await;
        assert_eq!(no_token.status, 401);
        let get_it = request(&addr, "GET", path, &[("Authorization", &auth())]).await;
        assert_eq!(get_it.status, 405);
        assert_eq!(get_it.header("allow"), Some("POST"));
        assert_eq!(
            post(&addr, path, Some("multipart/form-data"), good.as_bytes())
                .await
                .status,
            415
        );
        let bad_line =
            format!("{good}\n{{\"tool\":\"t\",\"kind\":\"action\",\"payload\":{{}}}}\n{good}\n");
        let a = post(&addr, path, None, bad_line.as_bytes()).await;
        assert_eq!(a.status, 400);
        assert!(
            a.text().contains("line 2:") && a.text().contains("nothing was appended"),
            "{}",
            a.text()
        );
        let a = post(
            &addr,
            path,
            None,
            b"{\"tool\":\"t\",\"kind\":\"marked\",\"secret\":\"refused-marker\"}",
        )
        .await;
        assert_eq!(a.status, 400);
        assert!(
            !a.text().contains("refused-marker"),
            "a value was echoed: {}",
            a.text()
        );
        assert_eq!(post(&addr, path, None, b"").await.status, 400);
        assert_eq!(
            post(&addr, "/relay/v1/evidence?run=x", None, good.as_bytes())
                .await
                .status,
            400
        );
        assert_eq!(
            post(
                &addr,
                "/relay/v1/evidence?source=../x",
                None,
                good.as_bytes()
            )
            .await
            .status,
            400
        );
        // A remote record cannot pass for the relay's own, nor report a trillion lost records.
        for spoof in [
            r#"{"tool":"t","kind":"action","payload":{"method":"refused-marker"},"source":"relay"}"#,
            r#"{"tool":"refused-marker","kind":"marker","payload":{"marker":"evidenceDropped","count":999999999999}}"#,
        ] {
            let a = post(&addr, path, None, spoof.as_bytes()).await;
            assert_eq!(a.status, 400, "{spoof}: {}", a.text());
        }
        assert_eq!(
            post(&addr, "/relay/v1/evidence?source=relay", None, good.as_bytes())
                .await
                .status,
            400
        );
        assert_eq!(too_large(&addr).await, 413);
        // One good request, to show the door works and where records go.
        let ok = post(
            &addr,
            &format!("{path}?token={TOKEN}"),
            None,
            b"{\"tool\":\"t\",\"kind\":\"accepted\"}\n",
        )
        .await;
        assert_eq!(ok.status, 200, "{}", ok.text());

        let summary = relay.stop().await.expect("finished");
        let files = cdp_relay_tests::files::all_files(&summary.run_dir);
        for (path, bytes) in &files {
            assert!(
                !cdp_relay_tests::files::leaks(bytes, "refused-marker"),
                "a refused record reached {path}"
            );
        }
        let journal = std::fs::read_to_string(summary.run_dir.join("actions.jsonl")).unwrap();
        assert_eq!(journal.matches("\"kind\":\"accepted\"").count(), 1);
        assert!(!journal.contains("999999999999"), "a bogus count was recorded");

        // Evidence off: nothing to append to.
        let off = RelayFixture::start(&chrome.http()).await;
        let a = request_with_body(&off.authority(), "POST", path, &[], good.as_bytes()).await;
        assert_eq!(a.status, 409);
    })
    .await;
}

/// Where a record was found: its run, its line among the run's records, its index in its request.
type Landed = (String, usize, u64);

/// The relay's current run, from its status.
async fn current_run(addr: &str) -> String {
    let status = request(
        addr,
        "GET",
        "/relay/v1/status",
        &[("Authorization", &auth())],
    )
    .await;
    status.json()["evidence"]["runId"]
        .as_str()
        .expect("run id")
        .to_owned()
}

/// A request of `n` records tagged `(p, r)`, in order.
fn tagged(p: usize, r: usize, n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{}\n",
                json!({"tool": "t", "kind": "tagged", "payload": {"p": p, "r": r, "i": i}})
            )
        })
        .collect()
}

#[tokio::test]
async fn a_run_finalized_by_another_producer_is_followed_into_the_next_run() {
    within("finalized under remote producers", async {
        let chrome = Chromium::start().await;
        let evidence = tempfile::tempdir().unwrap();
        let relay = relay_with_token(&chrome.http(), evidence.path()).await;
        let addr = relay.authority();
        let store = Store::open(EvidenceConfig::at(evidence.path())).unwrap();
        let path = "/relay/v1/evidence?source=device";

        // One request, then another producer (`evidence finalize`) finalizes the run: the next
        // request lands in the session's next run (not a 503), and the relay records there too.
        let first = post(&addr, path, None, tagged(0, 0, 3).as_bytes()).await;
        assert_eq!(first.status, 200, "{}", first.text());
        let first_run = first.json()["runId"].as_str().expect("run").to_owned();
        assert_eq!(current_run(&addr).await, first_run);
        let other = store
            .active_run("ops", "device")
            .unwrap()
            .expect("active run");
        other.finalize(cdp_evidence::Totals::default()).unwrap();
        let second = post(&addr, path, None, tagged(0, 1, 3).as_bytes()).await;
        assert_eq!(second.status, 200, "{}", second.text());
        let second_run = second.json()["runId"].as_str().expect("run").to_owned();
        assert_ne!(second_run, first_run);
        assert_eq!(
            current_run(&addr).await,
            second_run,
            "the relay moved with its writer"
        );

        // Requests from several producers while the run is finalized under them, three times
        // over: every one is answered 200 and its records are where the answer says, in one
        // block. The next finalize waits until a request landed in the run after.
        let (answered_tx, mut answered) = tokio::sync::mpsc::unbounded_channel::<String>();
        let producers: Vec<_> = (1..=4)
            .map(|p| {
                let (addr, answered_tx) = (addr.clone(), answered_tx.clone());
                tokio::spawn(async move {
                    let mut runs = Vec::new();
                    for r in 0..15 {
                        let a = post(&addr, path, None, tagged(p, r, 10).as_bytes()).await;
                        assert_eq!(a.status, 200, "{}", a.text());
                        let run = a.json()["runId"].as_str().expect("run").to_owned();
                        let _ = answered_tx.send(run.clone());
                        runs.push(((p, r), run));
                    }
                    runs
                })
            })
            .collect();
        drop(answered_tx);
        let mut finalized = vec![first_run.clone()];
        while finalized.len() < 4 {
            let Some(run) = answered.recv().await else {
                break;
            };
            if finalized.contains(&run) {
                continue;
            }
            let other = store
                .active_run("ops", "device")
                .unwrap()
                .expect("active run");
            assert_eq!(other.id(), run);
            other.finalize(cdp_evidence::Totals::default()).unwrap();
            finalized.push(run);
        }
        let mut landed = HashMap::new();
        for p in futures_util::future::join_all(producers).await {
            landed.extend(p.expect("producer"));
        }
        assert_eq!(
            finalized.len(),
            4,
            "the run was finalized under the producers 3 times"
        );
        let summary = relay.stop().await.expect("finished");

        // Every request's records exactly once, in one block, in the run its answer named.
        let mut seen: HashMap<(u64, u64), Vec<Landed>> = HashMap::new();
        for run in store.list_runs().unwrap() {
            let journal = store.read_journal(&run.id).unwrap();
            assert!(journal.corrupt.is_empty(), "{:?}", journal.corrupt);
            for (pos, rec) in journal.records.iter().enumerate() {
                if rec.kind == "tagged" {
                    let at = |k: &str| rec.payload[k].as_u64().unwrap();
                    assert_eq!(rec.source.as_deref(), Some("device"));
                    seen.entry((at("p"), at("r"))).or_default().push((
                        run.id.clone(),
                        pos,
                        at("i"),
                    ));
                }
            }
        }
        assert_eq!(seen.len(), 2 + 4 * 15, "requests lost");
        for ((p, r), run) in &landed {
            let recs = &seen[&(*p as u64, *r as u64)];
            assert_eq!(recs.len(), 10, "{p}/{r} lost or doubled");
            for (k, (in_run, pos, i)) in recs.iter().enumerate() {
                assert_eq!(in_run, run, "{p}/{r} is not in the run its answer named");
                assert_eq!(
                    (*i, *pos),
                    (k as u64, recs[0].1 + k),
                    "{p}/{r} torn or interleaved"
                );
            }
        }
        for run in &finalized {
            let manifest = store.read_manifest(run).unwrap();
            assert_eq!(manifest.status.as_deref(), Some("finalized"), "{run}");
        }
        assert!(summary.finalized);
        assert!(
            !finalized.iter().any(|r| summary.run_dir.ends_with(r)),
            "the relay's last run is its own"
        );
    })
    .await;
}

#[tokio::test]
async fn a_full_disk_is_answered_503_and_nothing_is_half_written() {
    within("remote producer on a full disk", async {
        let chrome = Chromium::start().await;
        let evidence = tempfile::tempdir().unwrap();
        let relay = relay_with_token(&chrome.http(), evidence.path()).await;
        let addr = relay.authority();
        let path = "/relay/v1/evidence?source=device";

        cdp_evidence::fail_writes_under(evidence.path(), true);
        let refused = post(&addr, path, None, tagged(0, 0, 50).as_bytes()).await;
        cdp_evidence::fail_writes_under(evidence.path(), false);
        assert_eq!(refused.status, 503, "{}", refused.text());
        assert_eq!(
            refused.text(),
            "cdp-relay: the records could not be written to the run; try again\n"
        );
        // Space is back: the producer tries again and the records are there once.
        let again = post(&addr, path, None, tagged(0, 0, 50).as_bytes()).await;
        assert_eq!(again.status, 200, "{}", again.text());
        let summary = relay.stop().await.expect("finished");
        assert!(summary.finalized);
        let store = Store::open(EvidenceConfig::at(evidence.path())).unwrap();
        let run_id = summary
            .run_dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let journal = store.read_journal(&run_id).unwrap();
        assert!(journal.corrupt.is_empty(), "{:?}", journal.corrupt);
        let tagged: Vec<u64> = journal
            .records
            .iter()
            .filter(|r| r.kind == "tagged")
            .map(|r| r.payload["i"].as_u64().unwrap())
            .collect();
        assert_eq!(
            tagged,
            (0..50).collect::<Vec<_>>(),
            "written once, whole, in order"
        );
        // The producer was told, so the relay does not count the refused request as its loss.
        assert_eq!(summary.dropped, 0);
    })
    .await;
}

/// 5 MiB announced and sent: the relay answers 413 (possibly before it read everything).
async fn too_large(addr: &str) -> u16 {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = vec![b'x'; 5 << 20];
    let head = format!(
        "POST /relay/v1/evidence HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        auth(),
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    // The relay may answer and close before the whole body is in: a failed write is fine.
    let _ = tcp.write_all(&body).await;
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn probes_metrics_token_file_and_json_logs() {
    within("ops", async {
        let mut chrome = Chromium::start().await;
        let secret_dir = tempfile::tempdir().unwrap();
        let token_file = secret_dir.path().join("token");
        // As a Kubernetes Secret mounts it: with a trailing newline.
        std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
        let upstream = chrome.http();
        let token_path = token_file.to_string_lossy().into_owned();
        let relay = RelayProcess::spawn(
            &[
                "serve",
                "--upstream",
                &upstream,
                "--listen",
                "127.0.0.1:0",
                "--token-file",
                &token_path,
                "--log-format",
                "json",
                "-v",
            ],
            &[],
        )
        .await;
        let addr = relay.authority();
        // Ready once the browser answered a probe; no token needed, one word said.
        let ready = loop {
            let a = get(&addr, "/relay/v1/ready").await;
            if a.status == 200 {
                break a;
            }
            assert_eq!(a.text(), "not ready\n");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(ready.text(), "ready\n");
        let live = get(&addr, "/relay/v1/live").await;
        assert_eq!((live.status, live.text().as_str()), (200, "live\n"));
        // Everything else needs the token from the file.
        assert_eq!(get(&addr, "/relay/v1/status").await.status, 401);
        assert_eq!(get(&addr, "/relay/v1/metrics").await.status, 401);
        let m = request(
            &addr,
            "GET",
            "/relay/v1/metrics",
            &[("Authorization", &auth())],
        )
        .await;
        assert_eq!(m.status, 200);
        assert!(m
            .header("content-type")
            .unwrap()
            .starts_with("text/plain; version=0.0.4"));
        let text = m.text();
        for line in [
            "cdp_relay_upstream_up 1",
            "cdp_relay_evidence_recording 1",
            "cdp_relay_up 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(
            text.contains("# TYPE cdp_relay_messages_total counter"),
            "{text}"
        );
        assert!(
            !text.contains("uploads_pending"),
            "no uploads configured: {text}"
        );

        // The browser dies: not ready, still live.
        chrome.kill().await;
        loop {
            let a = get(&addr, "/relay/v1/ready").await;
            if a.status == 503 {
                assert_eq!(a.text(), "not ready\n");
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(get(&addr, "/relay/v1/live").await.status, 200);
        let m = request(
            &addr,
            "GET",
            "/relay/v1/metrics",
            &[("Authorization", &auth())],
        )
        .await;
        assert!(
            m.text().lines().any(|l| l == "cdp_relay_upstream_up 0"),
            "{}",
            m.text()
        );

        let stderr = relay.stop().await;
        assert!(!stderr.contains(TOKEN), "the token reached the logs");
        let mut lines = 0;
        for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            assert!(
                v["level"].is_string() && v["timestamp"].is_string(),
                "{line}"
            );
            assert!(v["fields"]["message"].is_string(), "{line}");
            lines += 1;
        }
        assert!(lines >= 3, "{stderr}");
    })
    .await;
}

#[tokio::test]
async fn token_flags_are_given_once_and_the_file_must_hold_one() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let file = empty.to_string_lossy().into_owned();
    for (args, expect) in [
        (
            vec![
                "serve",
                "--upstream",
                "127.0.0.1:9",
                "--token-file",
                file.as_str(),
            ],
            "is empty",
        ),
        (
            vec![
                "serve",
                "--upstream",
                "127.0.0.1:9",
                "--token-file",
                "/nonexistent/token",
            ],
            "cannot read --token-file",
        ),
        (
            vec![
                "serve",
                "--upstream",
                "127.0.0.1:9",
                "--token",
                "abc",
                "--token-file",
                file.as_str(),
            ],
            "give the token once",
        ),
    ] {
        let out = tokio::process::Command::new(cdp_relay_tests::relay_binary())
            .args(&args)
            .env_remove("CDP_RELAY_TOKEN")
            .env_remove("CDP_RELAY_TOKEN_FILE")
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

/// Under `--log-format json` every stderr line is a JSON object, the fatal one included (a log
/// collector files it as an error); a usage error is JSON too when the variable asks for it.
#[tokio::test]
async fn fatal_errors_are_json_under_the_json_log_format() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let runs: [(&[&str], Option<&str>, u8); 2] = [
        (
            &[
                "--log-format",
                "json",
                "serve",
                "--upstream",
                &upstream,
                "--listen",
                "127.0.0.1:0",
                "--no-evidence",
            ],
            None,
            1,
        ),
        (&["serve", "--no-such-flag"], Some("json"), 64),
    ];
    for (args, env, code) in runs {
        let mut cmd = tokio::process::Command::new(cdp_relay_tests::relay_binary());
        cmd.args(args)
            .kill_on_drop(true)
            .env_remove("CDP_RELAY_LOG_FORMAT");
        if let Some(v) = env {
            cmd.env("CDP_RELAY_LOG_FORMAT", v);
        }
        let out = within("a failing command", cmd.output()).await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(i32::from(code)), "{stderr}");
        let lines: Vec<serde_json::Value> = stderr
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l}")))
            .collect();
        let last = lines.last().expect("a fatal line");
        assert_eq!(last["level"], "ERROR", "{stderr}");
        assert!(
            last["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("cdp-relay: ")),
            "{stderr}"
        );
    }
}
