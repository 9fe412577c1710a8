//! What the relay's own observer costs a client: two `cdp-relay launch` processes (each with its
//! own Chromium), one with the observer (the default) and one with `--no-observe`, and rounds of
//! sequential `Runtime.evaluate` against each, interleaved.

use crate::stats::{percentile, ratio, rotation};
use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::{page_ws, RelayProcess};
use serde_json::json;
use std::fmt::Write as _;
use std::time::Instant;

/// Runs the comparison; returns its table as Markdown.
pub async fn run(rounds: usize, sequential: usize) -> String {
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
    // Wait until the observer covers the page (it attaches and enables its domains).
    for _ in 0..100 {
        let s = cdp_relay_tests::http::get(&on.authority(), "/relay/v1/status")
            .await
            .json();
        if s["evidence"]["observedPages"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(), Vec::new()];
    for r in 0..rounds {
        for i in rotation(r, paths.len()) {
            let mut cdp = Cdp::connect(&paths[i].1).await;
            for _ in 0..20 {
                cdp.call("Runtime.evaluate", json!({"expression": "1"}))
                    .await;
            }
            for _ in 0..sequential {
                let t = Instant::now();
                cdp.call("Runtime.evaluate", json!({"expression": "1"}))
                    .await;
                samples[i].push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        eprintln!("observer: round {}/{rounds} done", r + 1);
    }
    let base = percentile(&samples[1], 0.5);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| path | RTT p50 (µs) | p90 (µs) | p99 (µs) | p50 vs --no-observe |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    for ((name, _), s) in paths.iter().zip(&samples) {
        let p50 = percentile(s, 0.5);
        let _ = writeln!(
            out,
            "| {name} | {p50:.0} | {:.0} | {:.0} | {} |",
            percentile(s, 0.9),
            percentile(s, 0.99),
            ratio(p50, base)
        );
    }
    let _ = writeln!(
        out,
        "\n{rounds} rounds × {sequential} sequential `Runtime.evaluate` per path, order rotated per round."
    );
    out
}
