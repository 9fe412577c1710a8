//! Real Chromium: the same CDP workload on a page through every path, interleaved round by round.

use crate::paths::Paths;
use crate::stats::{percentile, ratio, rotation};
use cdp_relay_tests::cdp::{connect, round_trip};
use cdp_relay_tests::{page_ws, Chromium};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use std::fmt::Write as _;
use std::time::Instant;
use tokio_tungstenite::tungstenite::Message;

const LARGE_EXPR: &str = "'x'.repeat(5 * 1024 * 1024)";

/// Work per round per path.
pub struct Sizes {
    pub small: usize,
    pub large: usize,
    pub pipelined: usize,
}

#[derive(Default)]
struct Samples {
    small_us: Vec<f64>,
    large_ms: Vec<f64>,
    pipelined_per_s: Vec<f64>,
}

async fn round(url: &str, sizes: &Sizes, out: &mut Samples) {
    // A raw socket: the rows time the path, not a client's tasks.
    let mut ws = connect(url, &[]).await.expect("connect");
    let mut id = 0;
    let mut next = || {
        id += 1;
        id
    };
    // Warm up the connection and the V8 context.
    for _ in 0..20 {
        round_trip(
            &mut ws,
            next(),
            "Runtime.evaluate",
            json!({"expression": "1"}),
        )
        .await;
    }
    for _ in 0..sizes.small {
        let t = Instant::now();
        round_trip(
            &mut ws,
            next(),
            "Runtime.evaluate",
            json!({"expression": "1"}),
        )
        .await;
        out.small_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    for _ in 0..sizes.large {
        let t = Instant::now();
        let raw = round_trip(
            &mut ws,
            next(),
            "Runtime.evaluate",
            json!({"expression": LARGE_EXPR, "returnByValue": true}),
        )
        .await;
        assert!(raw.len() > 5 * 1024 * 1024);
        out.large_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // Pipelined: all commands written back to back, then every reply read.
    let n = sizes.pipelined;
    let t = Instant::now();
    let (mut tx, mut rx) = ws.split();
    let writer = async {
        for id in 0..n {
            let cmd = json!({"id": 1_000_000 + id, "method": "Runtime.evaluate", "params": {"expression": "1"}});
            tx.feed(Message::text(cmd.to_string())).await.expect("send");
        }
        tx.flush().await.expect("flush");
    };
    let reader = async {
        let mut replies = 0;
        while replies < n {
            match rx.next().await {
                Some(Ok(Message::Text(t))) if t.contains("\"id\":1") => replies += 1,
                Some(Ok(_)) => {}
                other => panic!("pipelined run broke: {other:?}"),
            }
        }
    };
    tokio::join!(writer, reader);
    out.pipelined_per_s
        .push(n as f64 / t.elapsed().as_secs_f64());
}

/// Runs the real-Chromium table; returns it as Markdown.
pub async fn run(rounds: usize, sizes: &Sizes, extra: &[&str], node: bool) -> String {
    let chrome = Chromium::start().await;
    let paths = Paths::start(&chrome.http(), extra, node).await;
    let direct = &paths.list[0].authority;
    let direct_url = page_ws(direct).await;
    let urls: Vec<String> = paths
        .list
        .iter()
        .map(|p| direct_url.replace(direct.as_str(), &p.authority))
        .collect();
    let mut samples: Vec<Samples> = paths.list.iter().map(|_| Samples::default()).collect();
    for r in 0..rounds {
        for i in rotation(r, urls.len()) {
            round(&urls[i], sizes, &mut samples[i]).await;
            paths.settle().await;
        }
        eprintln!("real: round {}/{rounds} done", r + 1);
    }
    let base = &samples[0];
    let base_p50 = percentile(&base.small_us, 0.5);
    let base_large = percentile(&base.large_ms, 0.5);
    let base_pipe = percentile(&base.pipelined_per_s, 0.5);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| path | small RTT p50 (µs) | added (µs) | vs direct | p99 (µs) | 5 MB result p50 (ms) | vs direct | pipelined (cmd/s) | vs direct |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (p, s) in paths.list.iter().zip(&samples) {
        let p50 = percentile(&s.small_us, 0.5);
        let large = percentile(&s.large_ms, 0.5);
        let pipe = percentile(&s.pipelined_per_s, 0.5);
        let _ = writeln!(
            out,
            "| {} | {p50:.0} | {:+.0} | {} | {:.0} | {large:.1} | {} | {pipe:.0} | {} |",
            p.name,
            p50 - base_p50,
            ratio(p50, base_p50),
            percentile(&s.small_us, 0.99),
            ratio(large, base_large),
            ratio(pipe, base_pipe),
        );
    }
    let _ = writeln!(
        out,
        "\n{rounds} rounds × ({} sequential `Runtime.evaluate`, {} × 5 MB result, {} pipelined) per path, order rotated per round.",
        sizes.small, sizes.large, sizes.pipelined
    );
    out
}
