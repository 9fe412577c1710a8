//! The synthetic upstream (`cdp-synthetic`): it answers instantly, so these tables show what each
//! path adds per round trip, how many messages it moves, how fast it carries big messages, how it
//! copes with an event flood and with many connections, and the forwarding process's peak memory.

use crate::paths::{peak_rss_kib, reset_peak, Path, Paths};
use crate::stats::{against, percentile, ratio, rotation};
use cdp_relay_tests::cdp::{connect, Ws};
use cdp_relay_tests::http::get;
use futures_util::{SinkExt, StreamExt};
use std::fmt::Write as _;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::AsyncBufReadExt;
use tokio_tungstenite::tungstenite::Message;

/// How much work each scenario does.
pub struct Sizes {
    pub small: usize,
    pub pipelined: usize,
    pub large_mib: Vec<usize>,
    pub flood: u64,
    pub connections: usize,
    pub per_connection: usize,
}

fn url(authority: &str) -> String {
    format!("ws://{authority}/devtools/page/SYNTHETIC")
}

async fn call(ws: &mut Ws, id: u64, text: String) -> usize {
    ws.send(Message::text(text)).await.expect("send");
    let want = format!("{{\"id\":{id},");
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) if t.starts_with(&want) => return t.len(),
            Some(Ok(_)) => {}
            other => panic!("connection broke: {other:?}"),
        }
    }
}

async fn small(authority: &str, n: usize, out: &mut Vec<f64>) {
    let mut ws = connect(&url(authority), &[]).await.expect("connect");
    for id in 0..200 {
        call(
            &mut ws,
            id,
            format!("{{\"id\":{id},\"method\":\"Runtime.evaluate\"}}"),
        )
        .await;
    }
    for i in 0..n as u64 {
        let id = 1000 + i;
        let t = Instant::now();
        call(
            &mut ws,
            id,
            format!("{{\"id\":{id},\"method\":\"Runtime.evaluate\"}}"),
        )
        .await;
        out.push(t.elapsed().as_secs_f64() * 1e6);
    }
}

async fn pipelined(authority: &str, n: usize) -> f64 {
    let ws = connect(&url(authority), &[]).await.expect("connect");
    let (mut tx, mut rx) = ws.split();
    let t = Instant::now();
    let writer = async {
        for id in 0..n {
            tx.feed(Message::text(format!(
                "{{\"id\":{id},\"method\":\"Runtime.evaluate\"}}"
            )))
            .await
            .expect("send");
        }
        tx.flush().await.expect("flush");
    };
    let reader = async {
        let mut replies = 0;
        while replies < n {
            match rx.next().await {
                Some(Ok(Message::Text(_))) => replies += 1,
                Some(Ok(_)) => {}
                other => panic!("pipelined run broke: {other:?}"),
            }
        }
    };
    tokio::join!(writer, reader);
    n as f64 / t.elapsed().as_secs_f64()
}

async fn large(authority: &str, mib: usize) -> f64 {
    let mut ws = connect(&url(authority), &[]).await.expect("connect");
    let size = mib << 20;
    let t = Instant::now();
    let got = call(
        &mut ws,
        1,
        format!("{{\"id\":1,\"method\":\"Synthetic.blob\",\"params\":{{\"size\":{size}}}}}"),
    )
    .await;
    assert!(got >= size);
    (size as f64 / (1 << 20) as f64) / t.elapsed().as_secs_f64()
}

/// The pace of the network flood, events per second.
const FLOOD_RATE: u64 = 100_000;

/// Floods `count` events of `kind` (at `rate` per second, 0 = unpaced) on one connection while a
/// second connection measures round trips; returns (events/s delivered, probe RTTs in µs).
async fn flood(authority: &str, count: u64, kind: &str, rate: u64) -> (f64, Vec<f64>) {
    let mut ws = connect(&url(authority), &[]).await.expect("connect");
    let mut probe = connect(&url(authority), &[]).await.expect("connect");
    let t = Instant::now();
    ws.send(Message::text(format!(
        "{{\"id\":1,\"method\":\"Synthetic.flood\",\"params\":{{\"count\":{count},\"kind\":\"{kind}\",\"rate\":{rate}}}}}"
    )))
    .await
    .expect("send");
    let receive = async {
        let mut events = 0u64;
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) if t.starts_with("{\"id\":1,") => break,
                Some(Ok(_)) => events += 1,
                other => panic!("flood broke: {other:?}"),
            }
        }
        assert_eq!(events, count);
        count as f64 / t.elapsed().as_secs_f64()
    };
    let probes = async {
        let mut rtts = Vec::new();
        let mut id = 10;
        // Probe while the flood runs; the receiver's end bounds it.
        while t.elapsed().as_millis() < 50 || rtts.len() < 20 {
            id += 1;
            let s = Instant::now();
            call(
                &mut probe,
                id,
                format!("{{\"id\":{id},\"method\":\"Runtime.evaluate\"}}"),
            )
            .await;
            rtts.push(s.elapsed().as_secs_f64() * 1e6);
            if rtts.len() >= 2000 {
                break;
            }
        }
        rtts
    };
    let (rate, rtts) = tokio::join!(receive, probes);
    (rate, rtts)
}

/// Rate = messages / time from all connected to all done: a handshake that waits out a
/// SYN retransmit (1 s) while 200 connect at once would otherwise dominate the row.
async fn concurrent(authority: &str, conns: usize, each: usize) -> (Vec<f64>, f64) {
    let ready = Arc::new(tokio::sync::Barrier::new(conns + 1));
    let tasks: Vec<_> = (0..conns)
        .map(|_| {
            let authority = authority.to_owned();
            let ready = ready.clone();
            tokio::spawn(async move {
                let ws = connect(&url(&authority), &[]).await;
                ready.wait().await;
                let mut ws = ws.expect("connect");
                let mut rtts = Vec::with_capacity(each);
                for id in 0..each as u64 {
                    let s = Instant::now();
                    call(
                        &mut ws,
                        id,
                        format!("{{\"id\":{id},\"method\":\"Runtime.evaluate\"}}"),
                    )
                    .await;
                    rtts.push(s.elapsed().as_secs_f64() * 1e6);
                }
                rtts
            })
        })
        .collect();
    ready.wait().await;
    let t = Instant::now();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("task"));
    }
    let rate = all.len() as f64 / t.elapsed().as_secs_f64();
    (all, rate)
}

struct Upstream {
    _child: tokio::process::Child,
    http: String,
}

async fn start_upstream() -> Upstream {
    let exe = std::env::current_exe()
        .expect("current_exe")
        .with_file_name("cdp-synthetic");
    let mut child = tokio::process::Command::new(&exe)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (build it with --bins)", exe.display()));
    let stdout = child.stdout.take().expect("stdout");
    let http = tokio::io::BufReader::new(stdout)
        .lines()
        .next_line()
        .await
        .expect("read")
        .expect("endpoint");
    Upstream {
        _child: child,
        http,
    }
}

fn rss(paths: &Paths) -> Vec<Option<u64>> {
    paths.list.iter().map(|p| p.pid.map(peak_rss_kib)).collect()
}

fn reset(paths: &Paths) {
    for p in paths.list.iter().filter_map(|p| p.pid) {
        reset_peak(p);
    }
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "—".into(), |k| format!("{:.1}", k as f64 / 1024.0))
}

/// Runs every synthetic scenario; returns the tables as Markdown.
pub async fn run(rounds: usize, sizes: &Sizes, extra: &[&str], node: bool) -> String {
    let upstream = start_upstream().await;
    let paths = Paths::start(&upstream.http, extra, node).await;
    let mut out = String::new();
    if section("rtt") {
        round_trips(&mut out, rounds, sizes, &paths).await;
    }
    if section("large") {
        large_table(&mut out, rounds, sizes, &paths).await;
    }
    if section("flood") {
        flood_tables(&mut out, rounds, sizes, &paths).await;
    }
    if section("connections") {
        connections_table(&mut out, rounds, sizes, &paths).await;
    }
    out
}

/// Event floods: events/s, probe latency meanwhile, and evidence written vs dropped.
async fn flood_tables(out: &mut String, rounds: usize, sizes: &Sizes, paths: &Paths) {
    let n = paths.list.len();
    // Network events paced at a rate a busy page can reach, then console errors as fast as
    // they go. Rounds interleave the paths, order rotated; the probe's percentiles pool them.
    let floods = [
        ("network", FLOOD_RATE, format!("{} `Network.*` events paced at {FLOOD_RATE}/s (requests sent, answered, finished; one in ten a 404)", sizes.flood)),
        ("console", 0, format!("{} `console.error` events back to back", sizes.flood)),
    ];
    let flood_rounds = rounds.clamp(1, 3);
    for (kind, rate, title) in floods {
        let _ = writeln!(out, "#### Event flood: {title}\n");
        let _ = writeln!(out, "| path | events/s | probe RTT p50 during flood (µs) | p99 | p99 vs nginx | evidence dropped | peak RSS (MiB) |");
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|");
        reset(paths);
        let mut rates: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut probes: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut p99s: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut drops: Vec<Option<u64>> = vec![Some(0); n];
        for r in 0..flood_rounds {
            for i in rotation(r, n) {
                let path = &paths.list[i];
                let authority = &path.authority;
                let before = dropped(path).await;
                let (got, probe) = flood(authority, sizes.flood, kind, rate).await;
                paths.settle().await;
                let after = dropped(path).await;
                rates[i].push(got);
                p99s[i].push(percentile(&probe, 0.99));
                probes[i].extend(probe);
                drops[i] = match (drops[i], before, after) {
                    (Some(d), Some(b), Some(a)) => Some(d + (a - b)),
                    _ => None,
                };
            }
        }
        let nginx = paths.index("nginx");
        for (i, p) in paths.list.iter().enumerate() {
            let _ = writeln!(
                out,
                "| {} | {:.0} | {:.0} | {:.0} | {} | {} | {} |",
                p.name,
                percentile(&rates[i], 0.5),
                percentile(&probes[i], 0.5),
                percentile(&probes[i], 0.99),
                against(&p99s, i, nginx),
                drops[i].map_or("—".into(), |d| d.to_string()),
                mib(p.pid.map(peak_rss_kib)),
            );
        }
        let _ = writeln!(
            out,
            "\n{flood_rounds} rounds; events/s is the median round, the probe's percentiles pool all rounds; p99 vs nginx pairs each round's p99 with nginx's in the same round (median, lowest–highest).\n"
        );
        eprintln!("synthetic: {kind} flood done");
    }
}

/// Round trips one at a time and pipelined, interleaved, order rotated per round.
async fn round_trips(out: &mut String, rounds: usize, sizes: &Sizes, paths: &Paths) {
    let n = paths.list.len();
    reset(paths);
    let mut rtts: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut pipes: Vec<Vec<f64>> = vec![Vec::new(); n];
    for r in 0..rounds {
        for i in rotation(r, n) {
            small(&paths.list[i].authority, sizes.small, &mut rtts[i]).await;
            paths.settle().await;
            pipes[i].push(pipelined(&paths.list[i].authority, sizes.pipelined).await);
            paths.settle().await;
        }
        eprintln!("synthetic: round {}/{rounds} done", r + 1);
    }
    let rss_small = rss(paths);
    let d50 = percentile(&rtts[0], 0.5);
    let d99 = percentile(&rtts[0], 0.99);
    let dpipe = percentile(&pipes[0], 0.5);
    let _ = writeln!(out, "#### Round trips and pipelining\n");
    let _ = writeln!(out, "| path | RTT p50 (µs) | p99 | p999 | added p50 | added p99 | pipelined (msg/s) | vs direct | peak RSS (MiB) |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (i, p) in paths.list.iter().enumerate() {
        let p50 = percentile(&rtts[i], 0.5);
        let p99 = percentile(&rtts[i], 0.99);
        let pipe = percentile(&pipes[i], 0.5);
        let _ = writeln!(
            out,
            "| {} | {p50:.0} | {p99:.0} | {:.0} | {:+.0} | {:+.0} | {pipe:.0} | {} | {} |",
            p.name,
            percentile(&rtts[i], 0.999),
            p50 - d50,
            p99 - d99,
            ratio(pipe, dpipe),
            mib(rss_small[i]),
        );
    }
    let _ = writeln!(
        out,
        "\n{rounds} rounds × {} sequential round trips and {} pipelined messages per path.\n",
        sizes.small, sizes.pipelined
    );
}

/// Big messages: one size at a time, peak RSS per size.
async fn large_table(out: &mut String, rounds: usize, sizes: &Sizes, paths: &Paths) {
    let n = paths.list.len();
    let _ = writeln!(out, "#### Large messages (browser → client)\n");
    let header: Vec<String> = sizes
        .large_mib
        .iter()
        .map(|m| format!("{m} MiB (MB/s) | peak RSS"))
        .collect();
    let _ = writeln!(out, "| path | {} |", header.join(" | "));
    let _ = writeln!(out, "|---|{}", "---:|---:|".repeat(sizes.large_mib.len()));
    let mut cells: Vec<Vec<String>> = vec![Vec::new(); n];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); n];
    for &m in &sizes.large_mib {
        for (i, p) in paths.list.iter().enumerate() {
            if let Some(pid) = p.pid {
                reset_peak(pid);
            }
            let mut samples = Vec::new();
            for _ in 0..rounds.clamp(1, 3) {
                samples.push(large(&p.authority, m).await);
                paths.settle().await;
            }
            let rate = percentile(&samples, 0.5);
            rates[i].push(rate);
            cells[i].push(format!("{rate:.0} | {}", mib(p.pid.map(peak_rss_kib))));
        }
        eprintln!("synthetic: {m} MiB done");
    }
    for (i, p) in paths.list.iter().enumerate() {
        let vs: Vec<String> = rates[i]
            .iter()
            .zip(&rates[0])
            .map(|(a, b)| format!("{:.0}%", 100.0 * a / b))
            .collect();
        let _ = writeln!(out, "| {} | {} |", p.name, cells[i].join(" | "));
        if i > 0 {
            eprintln!("{}: {} of direct", p.name, vs.join(", "));
        }
    }
    let _ = writeln!(
        out,
        "\nMB/s = payload MiB / time from request to complete reply; median of up to 3 runs.\n"
    );
}

/// Many connections at once: rounds interleave the paths, order rotated; msg/s is the median
/// round, the latency percentiles pool all rounds.
async fn connections_table(out: &mut String, rounds: usize, sizes: &Sizes, paths: &Paths) {
    let n = paths.list.len();
    let _ = writeln!(
        out,
        "#### {} concurrent connections × {} round trips\n",
        sizes.connections, sizes.per_connection
    );
    let _ = writeln!(
        out,
        "| path | RTT p50 (µs) | p99 | msg/s | vs forwarding only | vs nginx | peak RSS (MiB) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|");
    reset(paths);
    let mut rtts: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); n];
    for r in 0..rounds {
        for i in rotation(r, n) {
            let (all, rate) = concurrent(
                &paths.list[i].authority,
                sizes.connections,
                sizes.per_connection,
            )
            .await;
            paths.settle().await;
            rtts[i].extend(all);
            rates[i].push(rate);
        }
    }
    let (forwarding, nginx) = (paths.index("--no-evidence"), paths.index("nginx"));
    for (i, p) in paths.list.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.0} | {:.0} | {} | {} | {} |",
            p.name,
            percentile(&rtts[i], 0.5),
            percentile(&rtts[i], 0.99),
            percentile(&rates[i], 0.5),
            against(&rates, i, forwarding),
            against(&rates, i, nginx),
            mib(p.pid.map(peak_rss_kib)),
        );
    }
    let _ = writeln!(
        out,
        "\n{rounds} rounds; msg/s is the median round, the RTT percentiles pool all rounds. The \
         ratios pair each round with the same round of the other path: their median, and in \
         brackets the lowest and highest round.\n"
    );
}

/// Whether `BENCH_ONLY` (comma-separated: `rtt`, `large`, `flood`, `connections`) asks for a
/// table; all of them when it is unset. Lets one table be rerun or profiled alone.
fn section(name: &str) -> bool {
    match std::env::var("BENCH_ONLY") {
        Ok(only) => only.split(',').any(|s| s.trim() == name),
        Err(_) => true,
    }
}

/// A recording path's dropped-evidence count (`None` for the others).
async fn dropped(path: &Path) -> Option<u64> {
    if !path.records {
        return None;
    }
    // Let the observer catch up before reading, so drops are counted where they happen.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    get(&path.authority, "/relay/v1/status").await.json()["evidenceDropped"].as_u64()
}
