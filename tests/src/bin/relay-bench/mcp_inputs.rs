//! What recorded inputs cost `cdp-relay mcp`: a scripted server (`mcp-fake`, which answers at
//! once) wrapped by gateways given 0, 1 and 50 variables (`CDP_RELAY_VAR_*`), and called
//! directly, rounds interleaved with the order rotated. Two calls: `echo {text: "x"}` (nothing
//! to resolve or rewrite: what every call pays) and `echo {text: "${V00}"}` (resolved before it
//! is forwarded, and the echoed value rewritten back to `${V00}` in the result). Then the
//! result rewriter alone, in process, on a 1 MiB snapshot: with no known value in it, with one,
//! and with a thousand.

use crate::stats::{percentile, rotation};
use cdp_relay_mcp::fuzzing::Rewriter;
use cdp_relay_tests::mcp::McpGateway;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::time::Instant;

/// The value of variable `i` (16 characters, nothing like the snapshot's text).
fn value(i: usize) -> String {
    format!("Bv{i:02}-Qz7!kP#m4w")
}

fn params(args: serde_json::Value) -> CallToolRequestParams {
    let p = CallToolRequestParams::new("echo");
    match args {
        serde_json::Value::Object(m) => p.with_arguments(m),
        _ => p,
    }
}

async fn time_calls(
    client: &RunningService<RoleClient, impl rmcp::service::Service<RoleClient>>,
    text: &str,
    n: usize,
    into: &mut Vec<f64>,
) {
    for _ in 0..n {
        let t = Instant::now();
        let r = client
            .call_tool(params(json!({ "text": text })))
            .await
            .expect("call");
        into.push(t.elapsed().as_secs_f64() * 1e6);
        assert_ne!(r.is_error, Some(true), "{r:?}");
    }
}

async fn gateway(fake: &std::path::Path, vars: usize, extra: &[&str]) -> McpGateway {
    let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    args.push("--".into());
    args.push(fake.display().to_string());
    let env: Vec<(String, OsString)> = (0..vars)
        .map(|i| (format!("CDP_RELAY_VAR_V{i:02}"), value(i).into()))
        .collect();
    let env: Vec<(&str, &std::ffi::OsStr)> = env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_os_str()))
        .collect();
    McpGateway::spawn(&args, &env).await
}

/// Runs the comparison; returns its tables as Markdown.
pub async fn run(rounds: usize, calls: usize, extra: &[&str]) -> String {
    let fake = super::mcp::fake_binary();
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
    let counts = [0usize, 1, 50];
    let mut gws = Vec::new();
    for n in counts {
        gws.push(gateway(&fake, n, extra).await);
    }
    // Proof the resolving call resolves: the server got the value, the agent reads the name.
    let r = gws[2]
        .client()
        .call_tool(params(json!({"text": "${V00}"})))
        .await
        .expect("resolving call");
    let said = cdp_relay_tests::mcp::text_of(&r);
    assert!(
        said.contains("${V00}") && !said.contains(&value(0)),
        "{said}"
    );

    // [path][workload] samples in µs; path 0 is direct, then one per gateway.
    let mut plain: Vec<Vec<f64>> = vec![Vec::new(); 1 + counts.len()];
    let mut resolving: Vec<Vec<f64>> = vec![Vec::new(); 1 + counts.len()];
    let mut sink = Vec::new();
    time_calls(&direct, "x", 100, &mut sink).await;
    for gw in &gws {
        time_calls(gw.client(), "x", 100, &mut sink).await;
    }
    for r in 0..rounds {
        for i in rotation(r, 1 + counts.len()) {
            if i == 0 {
                time_calls(&direct, "x", calls, &mut plain[0]).await;
                time_calls(&direct, &value(0), calls, &mut resolving[0]).await;
                continue;
            }
            let client = gws[i - 1].client();
            time_calls(client, "x", calls, &mut plain[i]).await;
            if counts[i - 1] > 0 {
                time_calls(client, "${V00}", calls, &mut resolving[i]).await;
            }
        }
        eprintln!("mcp-inputs: round {}/{rounds} done", r + 1);
    }
    for gw in gws {
        gw.close().await;
    }
    let _ = direct.cancel().await;

    let mut out = String::new();
    let _ = writeln!(
        out,
        "{rounds} rounds × {calls} sequential calls per path and workload: `echo {{text: \"x\"}}`, and `echo {{text: \"${{V00}}\"}}` (resolved before forwarding, the echo rewritten back; direct: the value itself).\n"
    );
    let _ = writeln!(
        out,
        "| path | plain p50 (µs) | plain p99 (µs) | resolving p50 (µs) | resolving p99 (µs) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    let cell = |v: &[f64], p: f64| {
        if v.is_empty() {
            "—".to_owned()
        } else {
            format!("{:.0}", percentile(v, p))
        }
    };
    for i in 0..=counts.len() {
        let name = match i {
            0 => "direct (rmcp client → mcp-fake)".to_owned(),
            i => format!("`cdp-relay mcp`, {} variables", counts[i - 1]),
        };
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} |",
            cell(&plain[i], 0.5),
            cell(&plain[i], 0.99),
            cell(&resolving[i], 0.5),
            cell(&resolving[i], 0.99),
        );
    }
    let base = percentile(&plain[1], 0.5);
    let _ = writeln!(
        out,
        "\nAdded by variables at p50 over the gateway without any: {:+.0} µs with 1, {:+.0} µs with 50 (plain calls); resolving and rewriting one: {:+.0} µs with 1, {:+.0} µs with 50.\n",
        percentile(&plain[2], 0.5) - base,
        percentile(&plain[3], 0.5) - base,
        percentile(&resolving[2], 0.5) - base,
        percentile(&resolving[3], 0.5) - base,
    );
    out.push_str(&rewriting());
    out
}

/// A 1 MiB accessibility snapshot as a JSON-RPC result line, with `hits` occurrences of
/// `value` spread through it.
fn snapshot_line(value: &str, hits: usize) -> Vec<u8> {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 1 << 20 {
        let _ = writeln!(
            text,
            "  uid=1_{i} textbox \"Field number {i}\" value=\"ordinary page text {i}\" focusable"
        );
        i += 1;
    }
    let lines: Vec<&str> = text.lines().collect();
    let every = lines.len() / hits.max(1);
    let mut out = String::with_capacity(text.len() + hits * (value.len() + 1));
    for (n, l) in lines.iter().enumerate() {
        out.push_str(l);
        if hits > 0 && n % every == every / 2 && n / every < hits {
            out.push(' ');
            out.push_str(value);
        }
        out.push('\n');
    }
    let msg =
        json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": out}]}});
    serde_json::to_vec(&msg).expect("line")
}

/// Median time of `f` over `n` runs, in ms.
fn median_ms(n: usize, mut f: impl FnMut()) -> f64 {
    let mut t = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        f();
        t.push(start.elapsed().as_secs_f64() * 1e3);
    }
    percentile(&t, 0.5)
}

/// The rewriter alone on a 1 MiB snapshot line.
fn rewriting() -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "The result rewriter alone, in process, on one 1 MiB snapshot (a JSON-RPC line; median of 20):\n"
    );
    let _ = writeln!(out, "| variables | occurrences | time (ms) | MiB/s |");
    let _ = writeln!(out, "|---:|---:|---:|---:|");
    for vars in [0usize, 1, 50] {
        let r = Rewriter::new();
        for i in 0..vars {
            r.add(&format!("V{i:02}"), &value(i));
        }
        for hits in [0usize, 1, 1000] {
            if vars == 0 && hits > 0 {
                continue;
            }
            let line = snapshot_line(&value(0), hits);
            let mib = line.len() as f64 / f64::from(1 << 20);
            let mut changed = false;
            let ms = median_ms(20, || {
                changed = r.json_line(&line).is_some();
            });
            assert_eq!(changed, hits > 0 && vars > 0, "{vars} vars, {hits} hits");
            let _ = writeln!(
                out,
                "| {vars} | {hits} | {ms:.2} | {:.0} |",
                mib / (ms / 1e3)
            );
        }
    }
    out
}
