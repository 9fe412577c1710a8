//! What the MCP gateway adds to a tool call: a scripted server (`mcp-fake`, which answers at
//! once) called directly by an rmcp client, and the same server wrapped by `cdp-relay mcp`
//! (evidence on: every call is recorded), rounds interleaved with the order rotated. A trivial
//! tool (`echo`) and a screenshot-sized result (`image`, 256 KiB of PNG, 341 KiB of base64), then
//! the gateway's peak memory for one 20 MiB result and what of it reached the evidence. A third
//! path is the gateway with OpenTelemetry export on (`--otlp-endpoint`, a loopback receiver that
//! decodes every span), in the same rounds.

use crate::stats::{percentile, ratio, rotation};
use cdp_relay_tests::mcp::McpGateway;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;
use std::fmt::Write as _;
use std::time::Instant;

/// Bytes of the screenshot-sized image.
const SHOT: u64 = 256 * 1024;

pub fn fake_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let fake = exe.with_file_name("mcp-fake");
    assert!(
        fake.is_file(),
        "{} not found: build the bins (`cargo build --release -p cdp-relay-tests --bins`)",
        fake.display()
    );
    fake
}

fn params(name: &str, args: serde_json::Value) -> CallToolRequestParams {
    let p = CallToolRequestParams::new(name.to_owned());
    match args {
        serde_json::Value::Object(m) => p.with_arguments(m),
        _ => p,
    }
}

async fn time_calls(
    client: &RunningService<RoleClient, impl rmcp::service::Service<RoleClient>>,
    name: &str,
    args: serde_json::Value,
    n: usize,
    into: &mut Vec<f64>,
) {
    for _ in 0..n {
        let p = params(name, args.clone());
        let t = Instant::now();
        let r = client.call_tool(p).await.expect("call");
        into.push(t.elapsed().as_secs_f64() * 1e6);
        assert_ne!(r.is_error, Some(true));
    }
}

/// Runs the comparison; returns its tables as Markdown.
pub async fn run(rounds: usize, calls: usize, shots: usize, extra: &[&str]) -> String {
    let fake = fake_binary();
    let mut direct_child = tokio::process::Command::new(&fake)
        .kill_on_drop(true)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mcp-fake");
    let direct = ()
        .serve(cdp_relay_mcp::transport(
            direct_child.stdout.take().expect("stdout"),
            direct_child.stdin.take().expect("stdin"),
        ))
        .await
        .expect("direct session");
    let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    args.push("--".into());
    args.push(fake.display().to_string());
    let gw = McpGateway::spawn(&args, &[]).await;
    let receiver =
        cdp_relay_tests::otlp::Receiver::start(cdp_relay_tests::otlp::Mode::Accept).await;
    let mut otlp_args = vec!["--otlp-endpoint".to_owned(), receiver.url()];
    otlp_args.extend(args.iter().cloned());
    let gw_otlp = McpGateway::spawn(&otlp_args, &[]).await;

    // [path][workload] samples, in µs.
    let mut echo: Vec<Vec<f64>> = vec![Vec::new(), Vec::new(), Vec::new()];
    let mut shot: Vec<Vec<f64>> = vec![Vec::new(), Vec::new(), Vec::new()];
    // Warm every path.
    let mut sink = Vec::new();
    time_calls(&direct, "echo", json!({"text": "x"}), 100, &mut sink).await;
    time_calls(gw.client(), "echo", json!({"text": "x"}), 100, &mut sink).await;
    time_calls(
        gw_otlp.client(),
        "echo",
        json!({"text": "x"}),
        100,
        &mut sink,
    )
    .await;
    for r in 0..rounds {
        for i in rotation(r, 3) {
            let (e, s) = (&mut echo[i], &mut shot[i]);
            match i {
                0 => {
                    time_calls(&direct, "echo", json!({"text": "x"}), calls, e).await;
                    time_calls(&direct, "image", json!({"bytes": SHOT}), shots, s).await;
                }
                1 => {
                    time_calls(gw.client(), "echo", json!({"text": "x"}), calls, e).await;
                    time_calls(gw.client(), "image", json!({"bytes": SHOT}), shots, s).await;
                }
                _ => {
                    let c = gw_otlp.client();
                    time_calls(c, "echo", json!({"text": "x"}), calls, e).await;
                    time_calls(c, "image", json!({"bytes": SHOT}), shots, s).await;
                }
            }
        }
        eprintln!("mcp: round {}/{rounds} done", r + 1);
    }

    // One 20 MiB result through the gateway: its peak memory, and what reached the evidence.
    let pid = gw.pid();
    let before = cdp_relay_tests::status_kib(pid, "VmHWM");
    let t = Instant::now();
    gw.client()
        .call_tool(params("image", json!({"bytes": 20u64 << 20})))
        .await
        .expect("20 MiB image");
    let big_ms = t.elapsed().as_secs_f64() * 1e3;
    let after = cdp_relay_tests::status_kib(pid, "VmHWM");
    let t = Instant::now();
    direct
        .call_tool(params("image", json!({"bytes": 20u64 << 20})))
        .await
        .expect("20 MiB image, direct");
    let big_direct_ms = t.elapsed().as_secs_f64() * 1e3;
    let closed = gw.close().await;
    let evidence_bytes: u64 = closed
        .runs()
        .iter()
        .flat_map(|r| cdp_relay_tests::files::all_files(r))
        .map(|(_, b)| b.len() as u64)
        .sum();
    let _ = direct.cancel().await;
    let otlp_closed = gw_otlp.close().await;
    let otlp_line = otlp_closed
        .stderr
        .lines()
        .find(|l| l.contains("otlp: ") && l.contains("spans sent"))
        .map(|l| l[l.find("otlp: ").unwrap_or(0)..].to_owned())
        .unwrap_or_else(|| "no count line".to_owned());
    let spans_received = receiver.spans().len();

    let mut out = String::new();
    let _ = writeln!(
        out,
        "{rounds} rounds × {calls} sequential `echo` calls and {shots} `image` calls ({} KiB PNG) per path.\n",
        SHOT / 1024
    );
    let _ = writeln!(
        out,
        "| path | echo p50 (µs) | echo p99 (µs) | image p50 (µs) | image p99 (µs) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    let names = [
        "direct (rmcp client → mcp-fake)",
        "through `cdp-relay mcp`",
        "through `cdp-relay mcp --otlp-endpoint` (loopback receiver)",
    ];
    for (i, name) in names.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {name} | {:.0} | {:.0} | {:.0} | {:.0} |",
            percentile(&echo[i], 0.5),
            percentile(&echo[i], 0.99),
            percentile(&shot[i], 0.5),
            percentile(&shot[i], 0.99),
        );
    }
    let _ = writeln!(
        out,
        "\nAdded by the gateway at p50: echo {:+.0} µs ({}), image {:+.0} µs ({}); at p99: echo {:+.0} µs, image {:+.0} µs.",
        percentile(&echo[1], 0.5) - percentile(&echo[0], 0.5),
        ratio(percentile(&echo[1], 0.5), percentile(&echo[0], 0.5)),
        percentile(&shot[1], 0.5) - percentile(&shot[0], 0.5),
        ratio(percentile(&shot[1], 0.5), percentile(&shot[0], 0.5)),
        percentile(&echo[1], 0.99) - percentile(&echo[0], 0.99),
        percentile(&shot[1], 0.99) - percentile(&shot[0], 0.99),
    );
    let _ = writeln!(
        out,
        "\nOTLP export on, against the gateway with it off, at p50: echo {:+.0} µs, image {:+.0} µs; at p99: echo {:+.0} µs, image {:+.0} µs. The receiver decoded {spans_received} spans; the gateway said `{otlp_line}`.",
        percentile(&echo[2], 0.5) - percentile(&echo[1], 0.5),
        percentile(&shot[2], 0.5) - percentile(&shot[1], 0.5),
        percentile(&echo[2], 0.99) - percentile(&echo[1], 0.99),
        percentile(&shot[2], 0.99) - percentile(&shot[1], 0.99),
    );
    let _ = writeln!(
        out,
        "\nOne 20 MiB image (26.7 MiB of base64): {big_ms:.0} ms through the gateway, {big_direct_ms:.0} ms direct; the gateway's peak RSS went from {} to {} MiB; the whole evidence of the run ({} calls) is {} KiB.",
        before / 1024,
        after / 1024,
        100 + rounds * (calls + shots) + 1,
        evidence_bytes / 1024
    );
    out
}
