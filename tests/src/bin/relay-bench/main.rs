//! End-to-end relay benchmark: the same workload through several paths measured side by side in
//! one run, interleaved round by round with the order rotated:
//!
//! * `direct`: straight to the upstream;
//! * `cdp-relay (evidence on)` and `cdp-relay --no-evidence`: the release `cdp-relay serve`;
//! * `nginx`: Debian's nginx as a websocket reverse proxy (one worker, access log off);
//! * `node-http-proxy`: the usual hand-rolled CDP proxy (tests/clients/peer-proxy.mjs).
//!
//! Two upstreams: a real headless Chromium (`real`), and `cdp-synthetic`, which answers at once
//! so the relay's own cost is not hidden behind Chromium's (`synthetic`).
//!
//! Run everything (prints Markdown for BENCHMARKS.md): `scripts/bench.sh`, or
//! `cargo build --release --workspace --bins && target/release/relay-bench [real|synthetic|all]`.
//! `relay-bench observer` compares `cdp-relay launch` with and without its own observer;
//! `relay-bench mcp` an MCP tool call direct and through `cdp-relay mcp`.
//! `--smoke`: tiny sizes, seconds — what CI runs to keep the benchmark working.
//! Env: `BENCH_ROUNDS` (default 10), `BENCH_RELAY_ARGS` (extra `serve` flags for both relays),
//! `BENCH_RTT_ONLY` (synthetic: only the round-trip table, e.g. to profile under it).

mod mcp;
mod observer;
mod paths;
mod real;
mod stats;
mod synthetic;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let smoke = args.iter().any(|a| a == "--smoke");
    let which = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map_or("all", String::as_str)
        .to_owned();
    if !matches!(
        which.as_str(),
        "all" | "real" | "synthetic" | "observer" | "mcp"
    ) {
        eprintln!("usage: relay-bench [real|synthetic|observer|mcp|all] [--smoke]");
        std::process::exit(64);
    }
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if smoke { 1 } else { 10 });
    let extra = std::env::var("BENCH_RELAY_ARGS").unwrap_or_default();
    let extra: Vec<&str> = extra.split_whitespace().collect();
    eprintln!(
        "relay binary: {}",
        cdp_relay_tests::relay_binary().display()
    );
    if which == "observer" || which == "all" {
        println!("### The relay's own observer\n");
        println!(
            "{}",
            observer::run(rounds, if smoke { 50 } else { 500 }).await
        );
    }
    if which == "mcp" || which == "all" {
        println!("### MCP gateway\n");
        let (calls, shots) = if smoke { (50, 5) } else { (1000, 100) };
        println!("{}", mcp::run(rounds.min(3), calls, shots, &extra).await);
    }
    if which == "all" || which == "real" {
        let sizes = if smoke {
            real::Sizes {
                small: 20,
                large: 1,
                pipelined: 200,
            }
        } else {
            real::Sizes {
                small: 200,
                large: 2,
                pipelined: 5000,
            }
        };
        println!("### Real Chromium\n");
        println!("{}", real::run(rounds, &sizes, &extra).await);
    }
    if which == "all" || which == "synthetic" {
        let sizes = if smoke {
            synthetic::Sizes {
                small: 200,
                pipelined: 2000,
                large_mib: vec![1],
                flood: 5_000,
                connections: 20,
                per_connection: 10,
            }
        } else {
            synthetic::Sizes {
                small: 2000,
                pipelined: 20_000,
                large_mib: vec![1, 16, 64, 200],
                flood: 200_000,
                connections: 200,
                per_connection: 50,
            }
        };
        println!("### Synthetic upstream\n");
        println!("{}", synthetic::run(rounds, &sizes, &extra).await);
    }
}
