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
//! `relay-bench mcp-feedback` tool calls of the real browser MCP servers through `cdp-relay mcp`
//! with and without its feedback (not part of `all`).
//! `relay-bench mcp-inputs` what `${NAME}` variables and the result rewriter add to a call
//! through `cdp-relay mcp`, and the rewriter's throughput on a 1 MiB snapshot (not part of `all`).
//! `relay-bench mcp-truth` typing calls of the real browser MCP servers, each verdict the agent
//! hears checked against what the field holds (`--calls`, default 500 per server; not part of
//! `all`).
//! `relay-bench report` measures `cdp-relay report` and Chromium on runs too big to show whole.
//! `relay-bench --help` lists the flags: `--smoke` (tiny sizes, seconds — what CI runs to keep
//! the benchmark working), `--rounds` (`BENCH_ROUNDS`, default 10), `--relay-args`
//! (`BENCH_RELAY_ARGS`, extra `serve` flags for both relays), `--no-node-peer`. Env
//! `BENCH_ONLY` (comma-separated: `rtt`, `large`, `flood`, `connections`): only those synthetic
//! tables (e.g. to rerun one, or to profile under it).
//!
//! What a benchmark needs is checked before anything starts: a missing `cdp-relay` binary or
//! missing npm clients (node-http-proxy's) is one line on stderr and exit status 1.

#![forbid(unsafe_code)]

mod exports;
mod mcp;
mod mcp_feedback;
mod mcp_inputs;
mod mcp_truth;
mod observer;
mod paths;
mod real;
mod report;
mod stats;
mod synthetic;

use clap::{Parser, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Which comparison to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Which {
    /// Everything below, in this order.
    All,
    /// `cdp-relay launch` with and without its own observer.
    Observer,
    /// The paths in front of a real headless Chromium.
    Real,
    /// The paths in front of `cdp-synthetic`, an upstream that answers at once.
    Synthetic,
    /// An MCP tool call direct and through `cdp-relay mcp`.
    Mcp,
    /// Tool calls of chrome-devtools-mcp and @playwright/mcp through `cdp-relay mcp` with and
    /// without its feedback (not part of `all`).
    McpFeedback,
    /// A call through `cdp-relay mcp` with 0, 1 and 50 `${NAME}` variables, and the result
    /// rewriter on a 1 MiB snapshot (not part of `all`).
    McpInputs,
    /// Typing calls of chrome-devtools-mcp and @playwright/mcp through `cdp-relay mcp`, each
    /// verdict checked against what the field holds: silent calls, false "landed" (not part of
    /// `all`).
    McpTruth,
    /// `cdp-relay report` on runs too big to show whole, and Chromium loading the result (not
    /// part of `all`).
    Report,
    /// `cdp-relay export --format trace|har` on the demo's run and on 147,000 console errors
    /// (not part of `all`).
    Exports,
}

/// Measures the relay side by side with a direct connection, nginx and node-http-proxy, and
/// prints the tables as Markdown (for BENCHMARKS.md).
#[derive(Debug, Parser)]
#[command(name = "relay-bench", version)]
struct Args {
    /// The comparison to run.
    #[arg(value_enum, default_value_t = Which::All)]
    which: Which,

    /// Tiny sizes and one round: seconds, what CI runs to keep the benchmark working.
    #[arg(long)]
    smoke: bool,

    /// Rounds per comparison (paths interleaved, order rotated). By default 10 (1 with --smoke).
    #[arg(long, env = "BENCH_ROUNDS", value_name = "N")]
    rounds: Option<usize>,

    /// Extra `cdp-relay serve` flags for both relays, space-separated.
    #[arg(
        long,
        env = "BENCH_RELAY_ARGS",
        value_name = "FLAGS",
        default_value = ""
    )]
    relay_args: String,

    /// Leave node-http-proxy out (it needs the npm clients in tests/clients).
    #[arg(long)]
    no_node_peer: bool,

    /// Typing calls per server for `mcp-truth`. By default 500 (12 with --smoke).
    #[arg(long, env = "BENCH_CALLS", value_name = "N")]
    calls: Option<usize>,
}

/// The npm clients' directory (node-http-proxy is one of them).
fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients")
}

/// Everything the chosen comparison needs, checked before anything starts.
fn preflight(args: &Args, clients: &Path) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find itself: {e}"))?;
    // As `cdp_relay_tests::relay_binary` looks for it, without its panic.
    let relay = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join("cdp-relay"))
        .find(|p| p.is_file());
    if relay.is_none() {
        return Err(
            "the cdp-relay binary is not built next to relay-bench: run \
             `cargo build --release --bin cdp-relay` first"
                .into(),
        );
    }
    if matches!(args.which, Which::McpFeedback | Which::McpTruth) {
        let servers = [
            "chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js",
            "@playwright/mcp/cli.js",
        ];
        if !servers
            .iter()
            .all(|s| clients.join("node_modules").join(s).is_file())
        {
            return Err(format!(
                "the browser MCP servers are not installed: run `npm ci --prefix {}`",
                clients.display()
            ));
        }
        return Ok(());
    }
    let needs_node = !matches!(
        args.which,
        Which::Observer | Which::Report | Which::Exports | Which::McpInputs
    ) && !args.no_node_peer;
    if needs_node && !clients.join("node_modules").join("http-proxy").is_dir() {
        return Err(format!(
            "the npm clients are not installed (node-http-proxy is one of them): run \
             `npm ci --prefix {}`, or pass --no-node-peer to leave it out",
            clients.display()
        ));
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            // --help and --version are answers; anything else is a usage error (EX_USAGE).
            return if e.use_stderr() {
                ExitCode::from(64)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if let Err(e) = preflight(&args, &clients_dir()) {
        eprintln!("relay-bench: {e}");
        return ExitCode::FAILURE;
    }
    let smoke = args.smoke;
    let which = args.which;
    let rounds = args.rounds.unwrap_or(if smoke { 1 } else { 10 });
    let extra: Vec<&str> = args.relay_args.split_whitespace().collect();
    let node = !args.no_node_peer;
    eprintln!(
        "relay binary: {}",
        cdp_relay_tests::relay_binary().display()
    );
    if matches!(which, Which::Observer | Which::All) {
        println!("### The relay's own observer\n");
        println!(
            "{}",
            observer::run(rounds, if smoke { 50 } else { 500 }).await
        );
    }
    if matches!(which, Which::Mcp | Which::All) {
        println!("### MCP gateway\n");
        let (calls, shots) = if smoke { (50, 5) } else { (1000, 100) };
        println!("{}", mcp::run(rounds.min(3), calls, shots, &extra).await);
    }
    if matches!(which, Which::Real | Which::All) {
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
        println!("{}", real::run(rounds, &sizes, &extra, node).await);
    }
    if matches!(which, Which::Synthetic | Which::All) {
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
        println!("{}", synthetic::run(rounds, &sizes, &extra, node).await);
    }
    if which == Which::McpFeedback {
        println!("### Feedback in tool results\n");
        let rounds = args.rounds.unwrap_or(if smoke { 1 } else { 4 });
        let calls = if smoke { 2 } else { 20 };
        println!("{}", mcp_feedback::run(rounds, calls, &extra).await);
    }
    if which == Which::McpInputs {
        println!("### Recorded inputs through the MCP gateway\n");
        let rounds = args.rounds.unwrap_or(if smoke { 1 } else { 5 });
        let calls = if smoke { 20 } else { 500 };
        println!("{}", mcp_inputs::run(rounds, calls, &extra).await);
    }
    if which == Which::McpTruth {
        println!("### What the agent hears about its typing, checked\n");
        let calls = args.calls.unwrap_or(if smoke { 12 } else { 500 });
        println!("{}", mcp_truth::run(calls).await);
    }
    if which == Which::Report {
        println!("### Rendering runs too big to show whole\n");
        println!("{}", report::run(smoke).await);
    }
    if which == Which::Exports {
        println!("### Exporting a run as a Playwright trace and a HAR\n");
        println!("{}", exports::run(smoke));
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;

    #[test]
    fn help_and_bad_words_are_answered_without_running_anything() {
        let help = Args::try_parse_from(["relay-bench", "--help"]).unwrap_err();
        assert_eq!(help.kind(), ErrorKind::DisplayHelp);
        assert!(help.to_string().contains("--no-node-peer"));
        let bad = Args::try_parse_from(["relay-bench", "everything"]).unwrap_err();
        assert_eq!(bad.kind(), ErrorKind::InvalidValue);
        let a =
            Args::try_parse_from(["relay-bench", "synthetic", "--smoke", "--rounds", "3"]).unwrap();
        assert_eq!(
            (a.which, a.smoke, a.rounds),
            (Which::Synthetic, true, Some(3))
        );
    }

    #[test]
    fn missing_clients_are_one_line_naming_the_fix() {
        let empty = tempfile::tempdir().unwrap();
        let args = Args::try_parse_from(["relay-bench", "real"]).unwrap();
        // Without a built cdp-relay next to the test binary, that is what is reported first.
        let err = preflight(&args, empty.path()).unwrap_err();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("npm ci") || err.contains("cargo build"),
            "{err}"
        );
        let args = Args::try_parse_from(["relay-bench", "observer"]).unwrap();
        if let Err(e) = preflight(&args, empty.path()) {
            assert!(
                e.contains("cargo build"),
                "observer needs no npm clients: {e}"
            );
        }
        let args = Args::try_parse_from(["relay-bench", "real", "--no-node-peer"]).unwrap();
        if let Err(e) = preflight(&args, empty.path()) {
            assert!(!e.contains("npm"), "{e}");
        }
        let args = Args::try_parse_from(["relay-bench", "mcp-feedback", "--no-node-peer"]).unwrap();
        let err = preflight(&args, empty.path()).unwrap_err();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("npm ci") || err.contains("cargo build"),
            "the servers are needed whatever --no-node-peer says: {err}"
        );
    }
}
