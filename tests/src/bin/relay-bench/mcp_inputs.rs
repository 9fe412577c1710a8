//! What recorded inputs cost `cdp-relay mcp`: a scripted server (`mcp-fake`, which answers at
//! once) wrapped by gateways given 0, 1 and 50 variables (`CDP_RELAY_VAR_*`), and called
//! directly, rounds interleaved with the order rotated. Two calls: `echo {text: "x"}` (nothing
//! to resolve or rewrite: what every call pays) and `echo {text: "${V00}"}` (resolved before it
//! is forwarded, and the echoed value rewritten back to `${V00}` in the result). Then the
//! result rewriter alone, in process, on a 1 MiB snapshot: with no known value in it, with one,
//! and with a thousand.

use crate::stats::{paired, percentile, rotation};
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

    // [path] samples in µs; path 0 is direct, then one per gateway. Per round too (its p50),
    // to compare paths round by round (`stats::paired`).
    let mut plain: Vec<Vec<f64>> = vec![Vec::new(); 1 + counts.len()];
    let mut resolving: Vec<Vec<f64>> = vec![Vec::new(); 1 + counts.len()];
    let mut plain_rounds: Vec<Vec<f64>> = vec![Vec::new(); 1 + counts.len()];
    let mut resolving_rounds: Vec<Vec<f64>> = vec![Vec::new(); 1 + counts.len()];
    let mut sink = Vec::new();
    time_calls(&direct, "x", 100, &mut sink).await;
    for gw in &gws {
        time_calls(gw.client(), "x", 100, &mut sink).await;
    }
    for r in 0..rounds {
        for i in rotation(r, 1 + counts.len()) {
            let (mut p, mut q) = (Vec::new(), Vec::new());
            if i == 0 {
                time_calls(&direct, "x", calls, &mut p).await;
                time_calls(&direct, &value(0), calls, &mut q).await;
            } else {
                let client = gws[i - 1].client();
                time_calls(client, "x", calls, &mut p).await;
                if counts[i - 1] > 0 {
                    time_calls(client, "${V00}", calls, &mut q).await;
                }
            }
            plain_rounds[i].push(percentile(&p, 0.5));
            plain[i].extend(p);
            if !q.is_empty() {
                resolving_rounds[i].push(percentile(&q, 0.5));
                resolving[i].extend(q);
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
    // Per round: a path's p50 against another's in the same round.
    let diff = |a: &[f64], b: &[f64]| {
        let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
        format!(
            "{:+.0} µs ({:+.0}…{:+.0})",
            percentile(&d, 0.5),
            percentile(&d, 0.0),
            percentile(&d, 1.0)
        )
    };
    let _ = writeln!(
        out,
        "\nPer round, median (lowest…highest) of the p50 differences. A plain call with 1 and 50 variables against none: {} and {} ({} and {}). Resolving `${{V00}}` and rewriting its echo, against a plain call of the same gateway: {} with 1 variable, {} with 50.\n",
        diff(&plain_rounds[2], &plain_rounds[1]),
        diff(&plain_rounds[3], &plain_rounds[1]),
        paired(&plain_rounds[2], &plain_rounds[1]),
        paired(&plain_rounds[3], &plain_rounds[1]),
        diff(&resolving_rounds[2], &plain_rounds[2]),
        diff(&resolving_rounds[3], &plain_rounds[3]),
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

/// One rewriting case: a rewriter, a line, and what it is.
struct Case {
    rewriter: Rewriter,
    line: Vec<u8>,
    vars: usize,
    kind: &'static str,
    hits: usize,
    /// Samples, in ms.
    ms: Vec<f64>,
}

/// The rewriter alone on a 1 MiB snapshot line: every case once per round, 50 rounds, so a
/// burst of load on the machine weighs on every case alike.
fn rewriting() -> String {
    let mut cases = Vec::new();
    for (vars, common) in [
        (0usize, false),
        (1, false),
        (50, false),
        (1, true),
        (50, true),
    ] {
        let value = |i: usize| {
            if common {
                format!("Field {i:02} textbox")
            } else {
                value(i)
            }
        };
        for hits in [0usize, 1, 1000] {
            if vars == 0 && hits > 0 {
                continue;
            }
            let rewriter = Rewriter::new();
            for i in 0..vars {
                rewriter.add(&format!("V{i:02}"), &value(i));
            }
            let kind = if common {
                "common letters"
            } else {
                "password-like"
            };
            let line = snapshot_line(&value(0), hits);
            cases.push(Case {
                rewriter,
                line,
                vars,
                kind,
                hits,
                ms: Vec::new(),
            });
        }
    }
    for _ in 0..50 {
        for c in &mut cases {
            let start = Instant::now();
            let changed = c.rewriter.json_line(&c.line).is_some();
            c.ms.push(start.elapsed().as_secs_f64() * 1e3);
            assert_eq!(
                changed,
                c.hits > 0 && c.vars > 0,
                "{} vars, {} hits",
                c.vars,
                c.hits
            );
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "The result rewriter alone, in process, on one 1 MiB snapshot (a JSON-RPC line; median of 50, the cases interleaved). Values like passwords (`Bv00-Qz7!kP#m4w`: bytes the snapshot never has, so the scan skips ahead) and values of letters the snapshot is full of (`Field 00 textbox`):\n"
    );
    let _ = writeln!(
        out,
        "| variables | values | occurrences | time (ms) | MiB/s |"
    );
    let _ = writeln!(out, "|---:|---|---:|---:|---:|");
    for c in &cases {
        let ms = percentile(&c.ms, 0.5);
        let mib = c.line.len() as f64 / f64::from(1 << 20);
        let rate = if c.vars == 0 {
            "not scanned".to_owned()
        } else {
            format!("{:.0}", mib / (ms / 1e3))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {ms:.2} | {rate} |",
            c.vars, c.kind, c.hits
        );
    }
    out
}
