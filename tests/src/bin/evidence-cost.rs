//! What evidence costs per relayed message, on its own: a fixed workload of tap copies (round
//! trips, `Network.*` events, console errors, large replies) offered to a real evidence pipeline
//! (the traffic reader thread and the run writer thread, writing a real run), with no sockets
//! and no browser, so the numbers are the pipeline's alone and repeat from run to run.
//!
//! ```text
//! evidence-cost [--round-trips N] [--network N] [--console N] [--large N] [--json]
//! valgrind --tool=callgrind --separate-threads=yes target/release/evidence-cost
//! ```
//!
//! It prints CPU time per message of the observer and writer threads (from
//! `/proc/self/task/*/schedstat`, nanoseconds), the records written by kind (the same workload
//! must write the same records before and after a change), and the tap's drops (must be 0: the
//! workload is paced so the queue never fills).

#![forbid(unsafe_code)]

use bytes::Bytes;
use cdp_capture::{Hooks, Pipeline, Settings};
use cdp_relay_proxy::tap::{Direction, Payload, SessionEnd};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

struct Args {
    round_trips: u64,
    network: u64,
    console: u64,
    large: u64,
    json: bool,
    /// `launch --otlp-endpoint`'s run spans on, exported to a loopback receiver.
    spans: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        round_trips: 20_000,
        network: 30_000,
        console: 5_000,
        large: 20,
        json: false,
        spans: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut num = |name: &str| -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match flag.as_str() {
            "--round-trips" => a.round_trips = num("--round-trips")?,
            "--network" => a.network = num("--network")?,
            "--console" => a.console = num("--console")?,
            "--large" => a.large = num("--large")?,
            "--json" => a.json = true,
            "--spans" => a.spans = true,
            "-h" | "--help" => {
                println!("usage: evidence-cost [--round-trips N] [--network N] [--console N] [--large N] [--json] [--spans]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}; see --help")),
        }
    }
    Ok(a)
}

/// One message of the workload, in the order a client and a browser would exchange them.
fn workload(a: &Args) -> Vec<(Direction, Bytes)> {
    let mut out = Vec::new();
    let session = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";
    let mut id = 0u64;
    let mut next_id = || {
        id += 1;
        id
    };
    // Interleave the kinds the way a busy page does: a round trip, a few events, repeat.
    let total = a.round_trips.max(a.network / 3).max(a.console).max(1);
    let (mut rt, mut net, mut con, mut large) = (0, 0, 0, 0);
    for step in 0..total {
        if rt < a.round_trips {
            let i = next_id();
            out.push((Direction::ToBrowser, Bytes::from(format!(
                r#"{{"id":{i},"method":"Runtime.callFunctionOn","params":{{"functionDeclaration":"(e) => e.isConnected","objectId":"{i}.1.2","returnByValue":true,"awaitPromise":true}},"sessionId":"{session}"}}"#
            ))));
            out.push((Direction::ToClient, Bytes::from(format!(
                r#"{{"id":{i},"result":{{"result":{{"type":"boolean","value":true}}}},"sessionId":"{session}"}}"#
            ))));
            rt += 1;
        }
        for _ in 0..3 {
            if net < a.network {
                out.push((
                    Direction::ToClient,
                    Bytes::from(network_event(net, session)),
                ));
                net += 1;
            }
        }
        if con < a.console && step % (total / a.console.max(1)).max(1) == 0 {
            out.push((Direction::ToClient, Bytes::from(format!(
                r#"{{"method":"Runtime.consoleAPICalled","params":{{"type":"error","args":[{{"type":"string","value":"request {con} failed: timeout after 3000 ms"}}],"executionContextId":1,"timestamp":{con}.5}},"sessionId":"{session}"}}"#
            ))));
            con += 1;
        }
        if large < a.large && step % (total / a.large.max(1)).max(1) == 0 {
            let i = next_id();
            out.push((Direction::ToBrowser, Bytes::from(format!(
                r#"{{"id":{i},"method":"Runtime.evaluate","params":{{"expression":"document.documentElement.outerHTML","returnByValue":true}},"sessionId":"{session}"}}"#
            ))));
            let body = "x".repeat(1 << 20);
            out.push((Direction::ToClient, Bytes::from(format!(
                r#"{{"id":{i},"result":{{"result":{{"type":"string","value":"{body}"}}}},"sessionId":"{session}"}}"#
            ))));
            large += 1;
        }
    }
    out
}

/// Chromium's three events per request; one request in ten answers 404 (a failure to record).
fn network_event(i: u64, session: &str) -> String {
    let r = i / 3;
    match i % 3 {
        0 => format!(
            r#"{{"method":"Network.requestWillBeSent","params":{{"requestId":"{r}","loaderId":"L","documentURL":"https://example.com/","request":{{"url":"https://example.com/r/{r}?q=1","method":"GET","headers":{{"Accept":"*/*"}}}},"timestamp":{r}.0,"wallTime":{r}.0,"type":"Fetch","initiator":{{"type":"script"}}}},"sessionId":"{session}"}}"#
        ),
        1 => {
            let status = if r.is_multiple_of(10) { 404 } else { 200 };
            format!(
                r#"{{"method":"Network.responseReceived","params":{{"requestId":"{r}","loaderId":"L","timestamp":{r}.5,"type":"Fetch","response":{{"url":"https://example.com/r/{r}?q=1","status":{status},"statusText":"","headers":{{"content-type":"application/json"}},"mimeType":"application/json"}}}},"sessionId":"{session}"}}"#
            )
        }
        _ => format!(
            r#"{{"method":"Network.loadingFinished","params":{{"requestId":"{r}","timestamp":{r}.9,"encodedDataLength":512}},"sessionId":"{session}"}}"#
        ),
    }
}

/// CPU nanoseconds of each thread of this process whose name starts with `cdp-relay-`.
fn thread_cpu() -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in tasks.flatten() {
        let dir = task.path();
        let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let name = name.trim();
        // The span exporter's batch thread (`OpenTelemetry.Traces.BatchProcessor`, cut to 15).
        if !name.starts_with("cdp-relay-") && !name.starts_with("OpenTelemetry") {
            continue;
        }
        let ns = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        *out.entry(name.to_owned()).or_default() += ns;
    }
    out
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("evidence-cost: {e}");
            std::process::exit(64);
        }
    };
    let messages = workload(&args);
    let dir = tempfile::tempdir().expect("a temporary evidence directory");
    let settings = Settings::at(dir.path());
    // With spans, a worker of its own: the receiver answers while this thread offers.
    let rt = if args.spans {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    }
    .expect("runtime");
    let mut hooks = Hooks::default();
    let mut spans = None;
    if args.spans {
        let receiver = rt.block_on(cdp_relay_tests::otlp::Receiver::start(
            cdp_relay_tests::otlp::Mode::Accept,
        ));
        let url = cdp_relay_otel::traces_endpoint(Some(&receiver.url()), |_| None)
            .expect("the receiver's URL")
            .expect("an endpoint");
        let exporter =
            cdp_relay_otel::Exporter::start(&url, "evidence-cost").expect("the exporter");
        hooks.written = Some(std::sync::Arc::new(cdp_relay_otel::RunSpans::new(
            exporter.clone(),
        )));
        spans = Some((receiver, exporter));
    }
    let pipeline = Pipeline::start(&settings, hooks).expect("start the pipeline");
    let tap = pipeline.handle().tap().clone();
    let run_dir = pipeline.handle().status().run_dir;
    tap.opened(1, "/devtools/page/8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1".into());
    let started = Instant::now();
    // Paced well under the queue: the observer polls every 10 ms when idle.
    for chunk in messages.chunks(2_000) {
        for (dir, bytes) in chunk {
            let chunk = tap.chunk(*dir);
            tap.offer(&chunk, 1, *dir, Payload::text(bytes.clone()));
        }
        std::thread::sleep(Duration::from_millis(15));
    }
    // Wait until everything offered is handled and written. Not until the threads stop using
    // CPU: the observer polls while idle, so that never happens, and on a loaded machine a
    // starved thread looks idle. The passive thread hands its last records to the writer in
    // the round after the one that handled them; two more gates tried means that round is over.
    let order = pipeline.handle().order().clone();
    let mark = order.stamp();
    while !order.handled(mark) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let gates = order.gates_tried();
    while order.gates_tried() < gates + 2 {
        std::thread::sleep(Duration::from_millis(5));
    }
    rt.block_on(pipeline.handle().writer().sync());
    let last = thread_cpu();
    let offered = started.elapsed();
    tap.closed(1, SessionEnd::ClientClosed);
    let dropped = tap.dropped();
    rt.block_on(pipeline.finish());
    if let Some((receiver, exporter)) = &spans {
        exporter.shutdown_blocking();
        let events: usize = receiver.spans().iter().map(|s| s.events.len()).sum();
        println!(
            "spans: {} received ({events} events), {} dropped",
            receiver.spans().len(),
            exporter.dropped()
        );
    }
    let journal = std::fs::read_to_string(run_dir.join("actions.jsonl")).unwrap_or_default();
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for line in journal.lines() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            let kind = v["kind"].as_str().unwrap_or("?").to_owned();
            let kind = match v["payload"]["method"].as_str() {
                Some(m) => format!("{kind}:{m}"),
                None => kind,
            };
            *kinds.entry(kind).or_default() += 1;
        }
    }
    let n = messages.len() as u64;
    let per = |ns: u64| ns as f64 / n as f64;
    if args.json {
        let v = serde_json::json!({
            "messages": n,
            "droppedByTap": dropped,
            "threadsNs": last,
            "nsPerMessage": last.iter().map(|(k, v)| (k.clone(), per(*v))).collect::<BTreeMap<_, _>>(),
            "records": kinds,
        });
        println!("{v}");
    } else {
        println!(
            "{n} messages offered in {:.2} s, {dropped} dropped by the tap",
            offered.as_secs_f64()
        );
        for (name, ns) in &last {
            println!(
                "{name:<24} {:>9.2} ms CPU  {:>8.0} ns/message",
                *ns as f64 / 1e6,
                per(*ns)
            );
        }
        println!("records written:");
        for (k, c) in &kinds {
            println!("  {k:<40} {c}");
        }
    }
    if dropped > 0 {
        eprintln!(
            "evidence-cost: the tap dropped {dropped} copies; the numbers are not comparable"
        );
        std::process::exit(1);
    }
}
