//! What rendering costs on runs that are too big to show whole: `cdp-relay report` (the release
//! binary, a fresh process per run) on generated journals — 100,000 distinct console errors, and
//! a 131 MB journal of a long agent run — measured for wall and CPU time and peak RSS
//! (`/usr/bin/time`; `BENCH_RENDERER=<program>` measures `<program> <run-dir>` instead),
//! the size of `report.html`, and how long a real headless Chromium takes to load it from
//! `file://` (navigation to the load event, median of three) with its DOM node count.

use crate::stats::percentile;
use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::{page_ws, relay_binary, Chromium};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// 2026-03-14T09:26:53.000Z.
const T0: u64 = 1_773_480_413_000;

fn ts(ms: u64) -> String {
    cdp_evidence::time::format_rfc3339_millis(std::time::UNIX_EPOCH + Duration::from_millis(ms))
}

/// Writes journal lines the way the relay does (envelope order, a target on page records).
struct Journal {
    out: BufWriter<std::fs::File>,
    seq: u64,
    records: u64,
}

impl Journal {
    fn create(dir: &Path, run_id: &str) -> Journal {
        std::fs::create_dir_all(dir.join("artifacts")).expect("run dir");
        let manifest = json!({
            "evidenceVersion": 1, "runId": run_id, "sessionId": "bench",
            "actionLog": "actions.jsonl", "status": "running", "startedAt": ts(T0),
            "createdBy": {"source": "relay", "pid": 1}, "artifactBudgetBytes": 104857600u64,
        });
        std::fs::write(dir.join("manifest.json"), manifest.to_string()).expect("manifest");
        let file = std::fs::File::create(dir.join("actions.jsonl")).expect("journal");
        Journal {
            out: BufWriter::with_capacity(1 << 20, file),
            seq: 0,
            records: 0,
        }
    }

    fn rec(&mut self, at: u64, kind: &str, status: &str, payload: Value, page: u64) {
        self.seq += 1;
        let ms = T0 + at;
        let line = json!({
            "actionId": format!("{ms:013}-0000004242-{:010}-{:08x}", self.seq, self.seq.wrapping_mul(2_654_435_761) & 0xffff_ffff),
            "source": "relay", "tool": "cdp", "sessionId": "bench",
            "startedAt": ts(ms), "durationMs": 3, "status": status,
            "target": {"targetId": format!("target:{page:012x}"), "type": "page",
                "title": format!("Checkout · step {page}"), "url": format!("https://shop.example.test/checkout/{page}")},
            "artifacts": [], "kind": kind, "payload": payload,
        });
        serde_json::to_writer(&mut self.out, &line).expect("write");
        self.out.write_all(b"\n").expect("write");
        self.records += 1;
    }

    fn finish(mut self) -> u64 {
        self.out.flush().expect("flush");
        self.records
    }
}

/// 100,000 distinct console errors under a handful of steps (the field test's noisy page, with
/// every message different so nothing folds).
pub(crate) fn console_storm(dir: &Path, errors: u64) -> u64 {
    let mut j = Journal::create(dir, "20260314T092653000Z-00000000000c0001");
    let mut at = 0;
    for step in 0..10u64 {
        at += 500;
        j.rec(at, "action", "ok", json!({"method": "Page.navigate", "url": format!("https://shop.example.test/checkout/{step}")}), step);
        for i in 0..errors / 10 {
            at += 1;
            let n = step * (errors / 10) + i;
            j.rec(at, "console", "error", json!({"level": "error",
                "text": format!("Uncaught TypeError: Cannot read properties of undefined (reading 'price') at renderLine (cart.js:{n}:17) #{n}"),
                "url": "https://shop.example.test/static/cart.js", "line": n % 5000, "column": 17}), step);
        }
    }
    j.finish()
}

/// A long agent run: steps with their evaluation storms, console errors and failed requests,
/// until the journal is `bytes` long.
fn long_run(dir: &Path, bytes: u64) -> u64 {
    let mut j = Journal::create(dir, "20260314T092653000Z-00000000000c0002");
    let mut at = 0;
    let mut step = 0u64;
    let path = dir.join("actions.jsonl");
    loop {
        for _ in 0..50 {
            step += 1;
            at += 400;
            let page = step / 20;
            let payload = match step % 4 {
                0 => {
                    json!({"method": "Page.navigate", "url": format!("https://shop.example.test/item/{step}")})
                }
                1 => json!({"method": "click", "point": {"x": 100 + step % 700, "y": 220}}),
                2 => json!({"method": "type", "input": {"chars": 12, "inputType": "text"}}),
                _ => json!({"method": "press", "detail": {"key": "Enter"}}),
            };
            j.rec(at, "action", "ok", payload, page);
            for e in 0..40 {
                j.rec(at + 1 + e, "action", "ok", json!({"method": if e % 2 == 0 { "Runtime.callFunctionOn" } else { "Runtime.evaluate" }, "bytes": 120}), page);
            }
            for c in 0..5 {
                j.rec(at + 50 + c, "console", "error", json!({"level": "error", "text": format!("Error: widget {step}-{c} failed to render"), "url": "https://shop.example.test/app.js", "line": 10, "column": c}), page);
            }
            for r in 0..2 {
                j.rec(at + 60 + r, "network", "error", json!({"method": "GET", "url": format!("https://api.example.test/v1/items/{step}/{r}"), "status": 503, "resourceType": "XHR", "durationMs": 80}), page);
            }
        }
        j.out.flush().expect("flush");
        if std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) >= bytes {
            break;
        }
    }
    j.finish()
}

/// `cdp-relay report <dir>` under `/usr/bin/time`: (wall seconds, CPU seconds, peak RSS KiB).
/// `BENCH_RENDERER=<program>` renders with `<program> <dir>` instead (an older build, to
/// compare).
fn render(dir: &Path) -> Result<(f64, f64, u64), String> {
    let mut cmd = match std::env::var_os("BENCH_RENDERER") {
        Some(other) => std::process::Command::new(other),
        None => {
            let mut c = std::process::Command::new(relay_binary());
            c.arg("report");
            c
        }
    };
    cmd.arg(dir);
    timed(cmd, "cdp-relay report")
}

/// Runs `cmd` under `/usr/bin/time`: (wall seconds, CPU seconds, peak RSS KiB); `what` names it
/// when it fails.
pub(crate) fn timed(cmd: std::process::Command, what: &str) -> Result<(f64, f64, u64), String> {
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "@@time %e %U %S %M"])
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .output()
        .map_err(|e| format!("cannot run /usr/bin/time (apt-get install time): {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("{what} failed: {err}"));
    }
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("@@time "))
        .ok_or("no timing line")?;
    let n: Vec<f64> = line
        .split_whitespace()
        .map(|s| s.parse().map_err(|_| "bad timing line"))
        .collect::<Result<_, _>>()?;
    let [wall, user, sys, rss] = n[..] else {
        return Err("bad timing line".into());
    };
    Ok((wall, user + sys, rss as u64))
}

/// Loads `file://<html>` in the page: (ms from navigation to the load event, DOM nodes).
async fn load(cdp: &mut Cdp, html: &Path) -> (f64, u64) {
    let url = format!("file://{}", html.display());
    let started = Instant::now();
    cdp.call("Page.navigate", json!({"url": url})).await;
    cdp.event("Page.loadEventFired").await;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let nodes = cdp
        .call(
            "Runtime.evaluate",
            json!({"expression": "document.getElementsByTagName('*').length", "returnByValue": true}),
        )
        .await["result"]["value"]
        .as_u64()
        .unwrap_or(0);
    (ms, nodes)
}

/// Runs both scenarios; returns the table as Markdown.
pub async fn run(smoke: bool) -> String {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (errors, bytes) = if smoke {
        (2_000, 2 << 20)
    } else {
        (100_000, 131_000_000)
    };
    let storm = tmp.path().join("console-storm");
    let long = tmp.path().join("long-run");
    let scenarios = [
        (
            format!("{errors} distinct console errors"),
            storm.clone(),
            console_storm(&storm, errors),
        ),
        (
            "long agent run (131 MB journal)".to_owned(),
            long.clone(),
            long_run(&long, bytes),
        ),
    ];
    let chrome = Chromium::start().await;
    let mut cdp = Cdp::connect(&page_ws(&format!("127.0.0.1:{}", chrome.port())).await).await;
    cdp.call("Page.enable", json!({})).await;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| run | records | journal | render: wall | CPU | peak RSS | report.html | DOM nodes | Chromium load (median of 3) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, dir, records) in scenarios {
        let journal = std::fs::metadata(dir.join("actions.jsonl")).map_or(0, |m| m.len());
        eprintln!("report: rendering {name} ({records} records, {journal} bytes)");
        let (wall, cpu, rss) = match render(&dir) {
            Ok(r) => r,
            Err(e) => {
                let _ = writeln!(out, "| {name} | {records} | — | {e} | | | | | |");
                continue;
            }
        };
        let html = dir.join("report.html");
        let html_bytes = std::fs::metadata(&html).map_or(0, |m| m.len());
        let mut loads = Vec::new();
        let mut nodes = 0;
        for _ in 0..3 {
            let (ms, n) = load(&mut cdp, &html).await;
            loads.push(ms);
            nodes = n;
        }
        let _ = writeln!(
            out,
            "| {name} | {records} | {:.1} MB | {wall:.2} s | {cpu:.2} s | {:.0} MiB | {:.2} MB | {nodes} | {:.0} ms |",
            journal as f64 / 1e6,
            rss as f64 / 1024.0,
            html_bytes as f64 / 1e6,
            percentile(&loads, 0.5),
        );
    }
    out
}
