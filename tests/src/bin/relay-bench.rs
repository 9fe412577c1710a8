//! End-to-end relay benchmark: the same CDP workload against one real headless Chromium through
//! three paths measured side by side in one run, interleaved round by round:
//!
//! * `direct`: straight to Chromium's DevTools port;
//! * `relay`:  through the release `cdp-relay serve` binary, recording evidence;
//! * `relay --no-evidence`: the same binary forwarding only;
//! * `peer`:   through node-http-proxy (tests/clients/peer-proxy.mjs), the usual hand-rolled proxy.
//!
//! Run: `cargo build --release -p cdp-relay --bin cdp-relay && cargo run --release -p cdp-relay-tests --bin relay-bench`
//! Options (env): `BENCH_ROUNDS` (default 10), `BENCH_RELAY_ARGS` (extra `serve` flags for both
//! relays).
//! Prints a Markdown table for BENCHMARKS.md.
//!
//! `relay-bench observer` instead measures what the relay's own observer costs a client: two
//! `cdp-relay launch` processes (each with its own Chromium), one with the observer (the default)
//! and one with `--no-observe`, and rounds of 500 sequential `Runtime.evaluate` against each,
//! interleaved.

use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::{clients_dir, page_ws, relay_binary, Chromium, RelayProcess};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use std::process::Stdio;
use std::time::Instant;
use tokio::io::AsyncBufReadExt;
use tokio_tungstenite::tungstenite::Message;

const SMALL_PER_ROUND: usize = 200;
const LARGE_PER_ROUND: usize = 2;
const PIPELINED_PER_ROUND: usize = 5000;
const LARGE_EXPR: &str = "'x'.repeat(5 * 1024 * 1024)";

#[derive(Default)]
struct Samples {
    small_us: Vec<f64>,
    large_ms: Vec<f64>,
    pipelined_per_s: Vec<f64>,
}

fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return f64::NAN;
    }
    let idx = ((s.len() - 1) as f64 * p).round() as usize;
    s[idx]
}

async fn round(url: &str, out: &mut Samples) {
    let mut cdp = Cdp::connect(url).await;
    // Warm up the connection and the V8 context.
    for _ in 0..20 {
        cdp.call("Runtime.evaluate", json!({"expression": "1"}))
            .await;
    }
    for _ in 0..SMALL_PER_ROUND {
        let t = Instant::now();
        cdp.call("Runtime.evaluate", json!({"expression": "1"}))
            .await;
        out.small_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    for _ in 0..LARGE_PER_ROUND {
        let t = Instant::now();
        let raw = cdp
            .call_raw(
                "Runtime.evaluate",
                json!({"expression": LARGE_EXPR, "returnByValue": true}),
                None,
            )
            .await;
        assert!(raw.len() > 5 * 1024 * 1024);
        out.large_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // Pipelined: all commands written back to back, then every reply read.
    let t = Instant::now();
    let (mut tx, mut rx) = cdp.ws.split();
    let writer = async {
        for id in 0..PIPELINED_PER_ROUND {
            let cmd = json!({"id": 1_000_000 + id, "method": "Runtime.evaluate", "params": {"expression": "1"}});
            tx.feed(Message::text(cmd.to_string())).await.expect("send");
        }
        tx.flush().await.expect("flush");
    };
    let reader = async {
        let mut replies = 0;
        while replies < PIPELINED_PER_ROUND {
            match rx.next().await {
                Some(Ok(Message::Text(t))) if t.contains("\"id\":1") => replies += 1,
                Some(Ok(_)) => {}
                other => panic!("pipelined run broke: {other:?}"),
            }
        }
    };
    tokio::join!(writer, reader);
    out.pipelined_per_s
        .push(PIPELINED_PER_ROUND as f64 / t.elapsed().as_secs_f64());
}

struct Peer {
    _child: tokio::process::Child,
    authority: String,
}

async fn start_peer(chrome_http: &str) -> Peer {
    let mut child = tokio::process::Command::new("node")
        .arg("peer-proxy.mjs")
        .arg(chrome_http)
        .current_dir(clients_dir())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node peer-proxy.mjs");
    let stdout = child.stdout.take().expect("stdout");
    let line = tokio::io::BufReader::new(stdout)
        .lines()
        .next_line()
        .await
        .expect("peer output")
        .expect("peer endpoint");
    Peer {
        _child: child,
        authority: line.trim_start_matches("http://").to_owned(),
    }
}

/// Sequential round trips per round in the observer comparison.
const OBSERVER_SEQUENTIAL: usize = 500;

/// `relay-bench observer`: client round trips with the observer on and off, side by side.
async fn observer_cost(rounds: usize) {
    let on = RelayProcess::spawn(&["launch", "--listen", "127.0.0.1:0"], &[]).await;
    let off =
        RelayProcess::spawn(&["launch", "--listen", "127.0.0.1:0", "--no-observe"], &[]).await;
    let paths = [
        (
            "cdp-relay launch (observer on)",
            page_ws(&on.authority()).await,
        ),
        (
            "cdp-relay launch --no-observe",
            page_ws(&off.authority()).await,
        ),
    ];
    // Let the observer attach and enable its domains before measuring.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(), Vec::new()];
    for r in 0..rounds {
        for k in 0..paths.len() {
            let i = (r + k) % paths.len();
            let mut cdp = Cdp::connect(&paths[i].1).await;
            for _ in 0..20 {
                cdp.call("Runtime.evaluate", json!({"expression": "1"}))
                    .await;
            }
            for _ in 0..OBSERVER_SEQUENTIAL {
                let t = Instant::now();
                cdp.call("Runtime.evaluate", json!({"expression": "1"}))
                    .await;
                samples[i].push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        eprintln!("round {}/{rounds} done", r + 1);
    }
    let base = percentile(&samples[1], 0.5);
    println!("| path | RTT p50 (µs) | p90 (µs) | p99 (µs) | p50 vs --no-observe |");
    println!("|---|---:|---:|---:|---:|");
    for ((name, _), s) in paths.iter().zip(&samples) {
        let p50 = percentile(s, 0.5);
        println!(
            "| {name} | {p50:.0} | {:.0} | {:.0} | {:.2}× |",
            percentile(s, 0.9),
            percentile(s, 0.99),
            p50 / base
        );
    }
    println!(
        "\n{rounds} rounds × {OBSERVER_SEQUENTIAL} sequential `Runtime.evaluate` per path, order rotated per round."
    );
    drop((on, off));
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    if std::env::args().nth(1).as_deref() == Some("observer") {
        return observer_cost(rounds).await;
    }
    let extra = std::env::var("BENCH_RELAY_ARGS").unwrap_or_default();
    eprintln!("relay binary: {}", relay_binary().display());

    let chrome = Chromium::start().await;
    let upstream = chrome.http();
    let evidence = tempfile::tempdir().expect("evidence dir");
    let evidence_dir = evidence.path().to_string_lossy().into_owned();
    let mut args = vec!["serve", "--upstream", &upstream, "--listen", "127.0.0.1:0"];
    args.extend(extra.split_whitespace());
    let mut recording = args.clone();
    recording.extend(["--evidence-dir", &evidence_dir]);
    let relay = RelayProcess::spawn(&recording, &[]).await;
    let mut forwarding = args.clone();
    forwarding.push("--no-evidence");
    let plain = RelayProcess::spawn(&forwarding, &[]).await;
    let peer = start_peer(&chrome.http()).await;

    let direct_auth = format!("127.0.0.1:{}", chrome.port());
    let direct_url = page_ws(&direct_auth).await;
    let relay_url = page_ws(&relay.authority()).await;
    let plain_url = page_ws(&plain.authority()).await;
    let peer_url = direct_url.replace(&direct_auth, &peer.authority);

    let paths = [
        ("direct", direct_url),
        ("cdp-relay (evidence on)", relay_url),
        ("cdp-relay --no-evidence", plain_url),
        ("peer: node-http-proxy", peer_url),
    ];
    let mut samples: Vec<Samples> = paths.iter().map(|_| Samples::default()).collect();
    for r in 0..rounds {
        // Rotate the order each round so no path always runs first (or last).
        for k in 0..paths.len() {
            let i = (r + k) % paths.len();
            round(&paths[i].1, &mut samples[i]).await;
        }
        eprintln!("round {}/{rounds} done", r + 1);
    }

    let base = &samples[0];
    let base_p50 = percentile(&base.small_us, 0.5);
    let base_large = percentile(&base.large_ms, 0.5);
    let base_pipe = percentile(&base.pipelined_per_s, 0.5);
    println!(
        "| path | small RTT p50 (µs) | p99 (µs) | vs direct | 5 MB result p50 (ms) | vs direct | pipelined (cmd/s) | vs direct |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for ((name, _), s) in paths.iter().zip(&samples) {
        let p50 = percentile(&s.small_us, 0.5);
        let large = percentile(&s.large_ms, 0.5);
        let pipe = percentile(&s.pipelined_per_s, 0.5);
        println!(
            "| {name} | {p50:.0} | {:.0} | {:.2}× | {large:.1} | {:.2}× | {pipe:.0} | {:.2}× |",
            percentile(&s.small_us, 0.99),
            p50 / base_p50,
            large / base_large,
            pipe / base_pipe,
        );
    }
    println!(
        "\n{rounds} rounds × ({SMALL_PER_ROUND} sequential small, {LARGE_PER_ROUND} × 5 MB, {PIPELINED_PER_ROUND} pipelined) per path, order rotated per round."
    );
    // Keep the relays alive until every measurement is done.
    drop((relay, plain));
}
