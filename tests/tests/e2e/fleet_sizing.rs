//! Sizing one pod: memory and CPU of a relay (`cdp-relay launch`: observer on, uploads on) and
//! of its browser under an agent flow (the planted-secret Playwright flow of the sweeps, run
//! several times in a row), then the shutdown (finalize, render, upload). Not part of the suite
//! — the numbers are the machine's, not pass/fail — run it on the build you ship:
//!
//! ```text
//! cargo build --release --bin cdp-relay
//! CDP_RELAY_TEST_BINARY=target/release/cdp-relay \
//!   cargo test -p cdp-relay-tests --test e2e fleet_sizing:: -- --ignored --nocapture
//! ```
//!
//! `docs/deploy.md`'s sizing table and the StatefulSet's requests come from its output.
//! Memory is RSS for the relay and PSS summed over the browser's processes (RSS would count the
//! pages they share once per process); CPU is user + system time from `/proc`.

use cdp_relay_tests::planted::{site_routes, sweep_config, ENV_SECRET};
use cdp_relay_tests::s3::S3Server;
use cdp_relay_tests::site::Site;
use cdp_relay_tests::{run_node_client, RelayProcess};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const FLOWS: usize = 5;

#[derive(Default, Clone, Copy, Debug)]
struct Sample {
    at: f64,
    relay_rss_kib: u64,
    browser_pss_kib: u64,
    browser_procs: usize,
    /// CPU ticks so far (alive processes plus reaped children).
    relay_ticks: u64,
    browser_ticks: u64,
}

fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = s.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// (ppid, utime + stime, cutime + cstime) of `pid`.
fn ticks(pid: u32) -> Option<(u32, u64, u64)> {
    let f = stat_fields(pid)?;
    // Fields after the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    Some((n(1) as u32, n(11) + n(12), n(13) + n(14)))
}

fn pss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn sample(relay: u32, t0: Instant) -> Sample {
    let mut parent: HashMap<u32, u32> = HashMap::new();
    let mut own: HashMap<u32, (u64, u64)> = HashMap::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((ppid, t, c)) = ticks(pid) {
            parent.insert(pid, ppid);
            own.insert(pid, (t, c));
        }
    }
    let descends = |mut p: u32| {
        while let Some(&pp) = parent.get(&p) {
            if pp == relay {
                return true;
            }
            if pp <= 1 {
                return false;
            }
            p = pp;
        }
        false
    };
    let mut s = Sample {
        at: t0.elapsed().as_secs_f64(),
        relay_rss_kib: cdp_relay_tests::rss_kib(relay),
        ..Sample::default()
    };
    let (rt, _) = own.get(&relay).copied().unwrap_or_default();
    s.relay_ticks = rt;
    for (&pid, &(t, c)) in &own {
        if pid != relay && descends(pid) {
            s.browser_pss_kib += pss_kib(pid);
            s.browser_procs += 1;
            // A process's reaped children count in its cutime: renderers that came and went.
            s.browser_ticks += t + c;
        }
    }
    s
}

#[tokio::test]
#[ignore = "a measurement, not a test: run it with --ignored --nocapture on a release build"]
async fn measure_one_pod() {
    let hz: f64 = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0);
    let server = S3Server::start(&["sizing"]);
    let site = Site::start(site_routes()).await;
    let evidence = tempfile::tempdir().unwrap();
    let dir = evidence.path().to_string_lossy().into_owned();
    let mut env = server.env();
    env.push(("SWEEP_ENV_SECRET".into(), ENV_SECRET.into()));
    let env_ref: Vec<(&str, &OsStr)> = env
        .iter()
        .map(|(k, v)| (k.as_str(), OsStr::new(v.as_str())))
        .collect();
    let relay = RelayProcess::spawn(
        &[
            "launch",
            "--listen",
            "127.0.0.1:0",
            "--evidence-dir",
            &dir,
            "--secret-env",
            "SWEEP_ENV_SECRET",
            "--evidence-upload",
            "s3://sizing/runs",
            "--",
            "--host-resolver-rules=MAP *.invalid ~NOTFOUND",
        ],
        &env_ref,
    )
    .await;
    let pid = relay.pid();
    let t0 = Instant::now();
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let samples = samples.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let s = sample(pid, t0);
                samples.lock().unwrap().push(s);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    // Idle: the browser up, nothing driving it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = sample(pid, t0);
    let flow_start = t0.elapsed().as_secs_f64();
    for _ in 0..FLOWS {
        let run = run_node_client(
            "sweep.mjs",
            &sweep_config(&relay.endpoint, &site.origin).to_string(),
        )
        .await;
        assert!(run.ok, "{}", run.stderr);
    }
    let flow_end = t0.elapsed().as_secs_f64();
    let before_stop = sample(pid, t0);
    let stopping = Instant::now();
    relay.stop().await;
    let shutdown = stopping.elapsed();
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();

    let samples = samples.lock().unwrap().clone();
    let during: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.at >= flow_start && s.at <= flow_end)
        .collect();
    let peak = |f: &dyn Fn(&Sample) -> u64| samples.iter().map(f).max().unwrap_or(0);
    let cpu = |a: u64, b: u64, secs: f64| (b.saturating_sub(a)) as f64 / hz / secs;
    let flow_secs = flow_end - flow_start;
    let first = during.first().copied().copied().unwrap_or_default();
    // The busiest second of the flow, relay + browser.
    let mut busiest = 0.0f64;
    for w in during.windows(10) {
        let (a, b) = (w[0], w[w.len() - 1]);
        let secs = b.at - a.at;
        if secs > 0.5 {
            let total =
                (b.relay_ticks + b.browser_ticks).saturating_sub(a.relay_ticks + a.browser_ticks);
            busiest = busiest.max(total as f64 / hz / secs);
        }
    }
    let peak_total = samples
        .iter()
        .map(|s| s.relay_rss_kib + s.browser_pss_kib)
        .max()
        .unwrap_or(0);
    println!(
        "sizing: {FLOWS} agent flows in {flow_secs:.1} s ({} samples)",
        samples.len()
    );
    println!(
        "  idle:   relay RSS {} MiB, browser PSS {} MiB ({} processes)",
        idle.relay_rss_kib / 1024,
        idle.browser_pss_kib / 1024,
        idle.browser_procs
    );
    println!(
        "  peak:   relay RSS {} MiB, browser PSS {} MiB, together {} MiB, browser processes {}",
        peak(&|s| s.relay_rss_kib) / 1024,
        peak(&|s| s.browser_pss_kib) / 1024,
        peak_total / 1024,
        samples.iter().map(|s| s.browser_procs).max().unwrap_or(0)
    );
    println!(
        "  CPU over the flows: relay {:.3} cores, browser {:.3} cores; busiest second together {:.2} cores",
        cpu(first.relay_ticks, before_stop.relay_ticks, flow_secs),
        cpu(first.browser_ticks, before_stop.browser_ticks, flow_secs),
        busiest
    );
    println!(
        "  shutdown (finalize, render, upload, browser stop): {:.2} s",
        shutdown.as_secs_f64()
    );
    let objects = server.objects("sizing");
    println!(
        "  uploaded: {} objects, {} KiB",
        objects.len(),
        objects.iter().map(|(_, b)| b.len()).sum::<usize>() / 1024
    );
    assert!(
        objects.iter().any(|(k, _)| k.ends_with("manifest.json")),
        "the run was uploaded"
    );
}
