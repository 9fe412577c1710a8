//! Separate OS processes sharing one evidence root: concurrent appends, pointer races, stale
//! owners, the budget under contention, and a writer SIGKILLed in the middle of a record.
//!
//! Children are this test binary re-invoked to run the ignored `worker` test, with its role in
//! `CDP_EVIDENCE_WORKER`. They start together when the parent writes a line to their stdin
//! (a pipe barrier, no sleeps), report on stdout after `@@worker-report `, and are killed on drop.

mod common;

use cdp_evidence::{
    ArtifactOutcome, EvidenceConfig, Lifecycle, LifecycleEvent, MarkerName, Record, RecordKind,
    Source, Store, Totals,
};
use cdp_sanitize::SafeText;
use common::{action, markers, store_at};
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

const ROLE: &str = "CDP_EVIDENCE_WORKER";
/// Prefix of a worker's report on stdout.
const REPORT: &str = "@@worker-report ";

/// A child process that is killed (and reaped) if the test ends early.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Worker {
    fn spawn(role: &str, root: &Path, env: &[(&str, String)]) -> Worker {
        let exe = std::env::current_exe().unwrap();
        let mut cmd = Command::new(exe);
        cmd.args([
            "--exact",
            "worker",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env("W_ROOT", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Worker {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next report (libtest's own output is skipped).
    fn report(&mut self) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "worker exited without reporting: {}", self.stderr());
            // libtest may have printed "test worker ... " on the same line first.
            if let Some(at) = line.find(REPORT) {
                return line[at + REPORT.len()..].trim_end().to_owned();
            }
        }
    }

    fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "worker failed: {}", self.stderr());
    }

    fn stderr(&mut self) -> String {
        let mut s = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut s);
        }
        s
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("worker needs {name}"))
}

fn wait_for_go() {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
}

fn report(s: &str) {
    println!("{REPORT}{s}");
    std::io::stdout().flush().unwrap();
}

/// Child-process entry point (see the module docs). Not a test on its own.
#[test]
#[ignore = "child-process entry point, spawned by the other tests in this file"]
fn worker() {
    let role = env(ROLE);
    let root = env("W_ROOT");
    let config = EvidenceConfig {
        artifact_budget_bytes: std::env::var("W_BUDGET")
            .map(|b| b.parse().unwrap())
            .unwrap_or(cdp_evidence::DEFAULT_ARTIFACT_BUDGET_BYTES),
        journal_budget_bytes: std::env::var("W_JOURNAL_BUDGET")
            .map(|b| b.parse().unwrap())
            .unwrap_or(cdp_evidence::DEFAULT_JOURNAL_BUDGET_BYTES),
        ..EvidenceConfig::at(&root)
    };
    let store = Store::open(config).unwrap();
    match role.as_str() {
        "append" => {
            let source = env("W_SOURCE");
            let count: u64 = env("W_COUNT").parse().unwrap();
            let run = store.join_session_transient("stress", &source).unwrap();
            report(run.id());
            wait_for_go();
            for i in 0..count {
                run.append(action("Test.append", i)).unwrap();
            }
            report("done");
        }
        "join" => {
            wait_for_go();
            let run = if env("W_TRANSIENT") == "1" {
                store.join_session_transient("race", "racer").unwrap()
            } else {
                store.join_session("race", "racer").unwrap()
            };
            report(run.id());
            // Stay alive (an owner) until the parent has every answer.
            wait_for_go();
        }
        "owner-dies" => {
            let run = store.join_session("orphaned", "relay").unwrap();
            run.append(action("Page.navigate", 1)).unwrap();
            report(run.id());
        }
        "artifacts" => {
            let run = store.join_session_transient("budget", "shooter").unwrap();
            let tries: usize = env("W_COUNT").parse().unwrap();
            wait_for_go();
            let mut stored = 0;
            for i in 0..tries {
                let outcome = run.store_artifact("shot", "png", &[i as u8; 1000]).unwrap();
                if let ArtifactOutcome::Stored(r) = outcome {
                    stored += 1;
                    run.append(action("Page.captureScreenshot", i as u64).artifact(r))
                        .unwrap();
                } else {
                    run.append(action("Page.captureScreenshot", i as u64))
                        .unwrap();
                }
            }
            report(&stored.to_string());
        }
        "journal" => {
            let run = store.join_session_transient("capped", "noisy").unwrap();
            let count: u64 = env("W_COUNT").parse().unwrap();
            wait_for_go();
            let mut appended = 0;
            for i in 0..count {
                // Mostly data, every fourth a lifecycle record (metadata): in batches, as the
                // relay writes.
                let batch = [action("Page.reload", i), lifecycle(i)];
                let n = if i % 4 == 0 { 2 } else { 1 };
                appended += run.append_all(&batch[..n]).unwrap();
            }
            report(&appended.to_string());
        }
        "torn" => {
            let run = store.join_session_transient("crash", "crasher").unwrap();
            for i in 0.. {
                // The hook tears one of these and blocks; the parent kills this process.
                run.append(lifecycle(i)).unwrap();
            }
        }
        other => panic!("unknown worker role {other}"),
    }
}

fn lifecycle(n: u64) -> Record {
    Record::new(
        SafeText::literal("test"),
        RecordKind::Lifecycle(Lifecycle::new(LifecycleEvent::ClientConnected, n)),
    )
}

#[test]
fn concurrent_processes_lose_and_corrupt_nothing() {
    const PROCS: usize = 10;
    const PER_PROC: u64 = 600;
    let tmp = tempfile::tempdir().unwrap();
    let store = store_at(tmp.path());
    // The parent owns the run and appends too, interleaved with the children.
    let run = store.join_session("stress", "relay").unwrap();
    let mut workers: Vec<Worker> = (0..PROCS)
        .map(|i| {
            Worker::spawn(
                "append",
                tmp.path(),
                &[
                    ("W_SOURCE", format!("w{i}")),
                    ("W_COUNT", PER_PROC.to_string()),
                ],
            )
        })
        .collect();
    for w in &mut workers {
        assert_eq!(w.report(), run.id(), "every process joins the same run");
    }
    let start = Instant::now();
    for w in &mut workers {
        w.send("go");
    }
    for i in 0..PER_PROC {
        run.append(action("Parent.append", i)).unwrap();
    }
    for w in &mut workers {
        assert_eq!(w.report(), "done");
    }
    let elapsed = start.elapsed();
    for w in workers {
        w.finish();
    }
    run.finalize(Totals::default()).unwrap();

    let journal = store.read_journal(run.id()).unwrap();
    assert!(journal.is_clean(), "{:?}", journal.corrupt);
    assert_eq!(journal.torn_tail, None);
    let total = (PROCS as u64 + 1) * PER_PROC;
    assert_eq!(
        journal.records.len() as u64,
        total + 2,
        "plus start and finalize markers"
    );
    let ids: HashSet<&str> = journal
        .records
        .iter()
        .map(|r| r.action_id.as_str())
        .collect();
    assert_eq!(ids.len(), journal.records.len(), "actionIds are unique");
    // Per producer: every sequence number exactly once, in append order.
    let mut seen: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for r in journal.records.iter().filter(|r| r.kind == "action") {
        seen.entry(r.source.clone().unwrap())
            .or_default()
            .push(r.payload["bytes"].as_u64().unwrap());
    }
    assert_eq!(seen.len(), PROCS + 1);
    for (source, seqs) in &seen {
        assert_eq!(*seqs, (0..PER_PROC).collect::<Vec<_>>(), "{source}");
    }
    let bytes = std::fs::read(run.dir().join("actions.jsonl")).unwrap();
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        serde_json::from_slice::<serde_json::Value>(line).unwrap();
    }
    let m = store.read_manifest(run.id()).unwrap();
    assert_eq!(m.totals.unwrap().records, total + 2);
    eprintln!(
        "stress: {} processes appended {total} records in {elapsed:?} ({:.0} records/s)",
        PROCS + 1,
        total as f64 / elapsed.as_secs_f64()
    );
}

#[test]
fn racing_joiners_adopt_one_run() {
    const PROCS: usize = 12;
    let tmp = tempfile::tempdir().unwrap();
    let mut workers: Vec<Worker> = (0..PROCS)
        .map(|i| {
            Worker::spawn(
                "join",
                tmp.path(),
                &[("W_TRANSIENT", ((i % 3 == 0) as u8).to_string())],
            )
        })
        .collect();
    for w in &mut workers {
        w.send("go");
    }
    let ids: HashSet<String> = workers.iter_mut().map(|w| w.report()).collect();
    assert_eq!(ids.len(), 1, "all joiners got the same run: {ids:?}");
    for mut w in workers {
        w.send("exit");
        w.finish();
    }
    let store = store_at(tmp.path());
    let runs = store.list_runs().unwrap();
    assert_eq!(runs.len(), 1, "no orphan run directories: {runs:?}");
    let id = ids.into_iter().next().unwrap();
    assert_eq!(runs[0].id, id);
    assert!(runs[0].active);
    let journal = store.read_journal(&id).unwrap();
    assert_eq!(markers(&journal), ["runStarted"]);
    let entries: Vec<_> = std::fs::read_dir(tmp.path().join("runs"))
        .unwrap()
        .collect();
    assert_eq!(entries.len(), 1);
}

#[test]
fn a_dead_owners_run_is_adopted_and_continued() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = Worker::spawn("owner-dies", tmp.path(), &[]);
    let id = w.report();
    let dead_pid = w.child.id();
    w.finish();

    let store = store_at(tmp.path());
    let pointer = std::fs::read_to_string(tmp.path().join("sessions/orphaned.active")).unwrap();
    assert!(pointer.contains(&format!("\"ownerPid\":{dead_pid}")));
    // A short-lived joiner adopts without taking ownership.
    let transient = store.join_session_transient("orphaned", "cli").unwrap();
    assert_eq!(transient.id(), id);
    // A long-lived joiner takes ownership and says so in the journal.
    let run = store.join_session("orphaned", "relay").unwrap();
    assert_eq!(run.id(), id);
    let pointer = std::fs::read_to_string(tmp.path().join("sessions/orphaned.active")).unwrap();
    assert!(pointer.contains(&format!("\"ownerPid\":{}", std::process::id())));
    run.append(action("Page.reload", 2)).unwrap();
    let journal = store.read_journal(&id).unwrap();
    assert_eq!(markers(&journal), ["runStarted", "ownerRecovered"]);
    let recovered = journal
        .records
        .iter()
        .find(|r| r.marker().is_some_and(|m| m == MarkerName::OwnerRecovered));
    assert_eq!(
        recovered.unwrap().payload["previousPid"].as_u64(),
        Some(u64::from(dead_pid))
    );
    assert_eq!(
        journal
            .records
            .iter()
            .filter(|r| r.kind == "action")
            .count(),
        2
    );
    // Joining again as the (live) owner changes nothing.
    store.join_session("orphaned", "relay").unwrap();
    assert_eq!(markers(&store.read_journal(&id).unwrap()).len(), 2);
}

#[test]
fn the_budget_holds_across_processes_with_one_marker() {
    const PROCS: usize = 8;
    const TRIES: usize = 20;
    const FIT: usize = 64;
    let tmp = tempfile::tempdir().unwrap();
    let budget = (FIT * 1000).to_string();
    let mut workers: Vec<Worker> = (0..PROCS)
        .map(|_| {
            Worker::spawn(
                "artifacts",
                tmp.path(),
                &[("W_BUDGET", budget.clone()), ("W_COUNT", TRIES.to_string())],
            )
        })
        .collect();
    for w in &mut workers {
        w.send("go");
    }
    let stored: usize = workers
        .iter_mut()
        .map(|w| w.report().parse::<usize>().unwrap())
        .sum();
    for w in workers {
        w.finish();
    }
    assert_eq!(stored, FIT);
    let store = store_at(tmp.path());
    let run = store.join_session("budget", "relay").unwrap();
    run.finalize(Totals::default()).unwrap();
    let journal = store.read_journal(run.id()).unwrap();
    assert!(journal.is_clean());
    let truncations = markers(&journal)
        .into_iter()
        .filter(|m| *m == "evidenceTruncated")
        .count();
    assert_eq!(truncations, 1);
    let attached: usize = journal.records.iter().map(|r| r.artifacts.len()).sum();
    assert_eq!(attached, FIT);
    assert_eq!(
        journal
            .records
            .iter()
            .filter(|r| r.kind == "action")
            .count(),
        PROCS * TRIES,
        "metadata is never refused"
    );
    let files = std::fs::read_dir(run.dir().join("artifacts"))
        .unwrap()
        .count();
    assert_eq!(files, FIT);
    let m = store.read_manifest(run.id()).unwrap();
    let t = m.truncation.unwrap();
    assert!(t.artifacts_truncated);
    assert_eq!(t.refused_artifacts as usize, PROCS * TRIES - FIT);
    assert_eq!(m.totals.unwrap().artifact_bytes as usize, FIT * 1000);
}

/// The journal budget, hit by eight processes at once: one `journalTruncated` marker, metadata
/// still appended, every refused record counted by kind.
#[test]
fn the_journal_budget_holds_across_processes_with_one_marker() {
    const PROCS: usize = 8;
    const EACH: u64 = 400;
    const BUDGET: u64 = 128 * 1024;
    let tmp = tempfile::tempdir().unwrap();
    let env = [
        ("W_JOURNAL_BUDGET", BUDGET.to_string()),
        ("W_COUNT", EACH.to_string()),
    ];
    // The run exists before the workers join it (its manifest fixes the budget).
    let config = EvidenceConfig {
        journal_budget_bytes: BUDGET,
        ..EvidenceConfig::at(tmp.path())
    };
    let store = Store::open(config).unwrap();
    let run = store.join_session("capped", "relay").unwrap();
    let mut workers: Vec<Worker> = (0..PROCS)
        .map(|_| Worker::spawn("journal", tmp.path(), &env))
        .collect();
    for w in &mut workers {
        w.send("go");
    }
    let appended: usize = workers
        .iter_mut()
        .map(|w| w.report().parse::<usize>().unwrap())
        .sum();
    for w in workers {
        w.finish();
    }
    run.finalize(Totals::default()).unwrap();
    let journal = store.read_journal(run.id()).unwrap();
    assert!(journal.is_clean());
    let marks = markers(&journal);
    assert_eq!(
        marks.iter().filter(|m| **m == "journalTruncated").count(),
        1,
        "{marks:?}"
    );
    let kind = |k: &str| journal.records.iter().filter(|r| r.kind == k).count();
    let lifecycles = PROCS * (EACH as usize).div_ceil(4);
    assert_eq!(kind("lifecycle"), lifecycles, "metadata is never refused");
    assert_eq!(kind("action") + kind("lifecycle"), appended);
    let size = std::fs::metadata(run.dir().join("actions.jsonl"))
        .unwrap()
        .len();
    assert!(size <= BUDGET + cdp_evidence::METADATA_ALLOWANCE, "{size}");
    // After the marker, only metadata.
    let at = journal
        .records
        .iter()
        .position(|r| {
            r.marker()
                .is_some_and(|m| m == MarkerName::JournalTruncated)
        })
        .unwrap();
    assert!(journal.records[at..].iter().all(|r| r.kind != "action"));
    let m = store.read_manifest(run.id()).unwrap();
    let t = m.truncation.unwrap();
    assert!(t.journal_truncated && !t.artifacts_truncated);
    assert_eq!(t.journal_budget_bytes, BUDGET);
    assert_eq!(
        t.refused_records.get("action").copied().unwrap_or(0) as usize,
        PROCS * EACH as usize - kind("action"),
        "every refused record is counted"
    );
    assert_eq!(m.journal_budget_bytes, Some(BUDGET));
    assert!(store.list_runs().unwrap()[0].truncated);
}

#[cfg_attr(
    not(debug_assertions),
    ignore = "the torn-write hook exists in debug builds only"
)]
#[test]
fn a_writer_killed_mid_record_loses_only_that_record() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_at(tmp.path());
    let run = store.join_session("crash", "relay").unwrap();
    for i in 0..10 {
        run.append(action("Before.crash", i)).unwrap();
    }
    // The child's 6th line is torn: 5 complete lifecycle records, then half of the 6th.
    let mut w = Worker::spawn(
        "torn",
        tmp.path(),
        &[(cdp_evidence::TEST_HOOK_TORN_APPEND_ENV, "6".to_owned())],
    );
    let mut stderr = BufReader::new(w.child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "worker exited first"
        );
        if line.trim_end() == cdp_evidence::TEST_HOOK_TORN_APPEND_READY {
            break;
        }
    }
    // The torn line is on disk now, and the child holds the lock.
    let torn = store.read_journal(run.id()).unwrap();
    assert!(torn.is_clean());
    assert!(
        torn.torn_tail.is_some(),
        "a half-written record is in place"
    );
    assert_eq!(torn.records.len(), 1 + 10 + 5);

    w.child.kill().unwrap();
    let status = w.child.wait().unwrap();
    assert!(!status.success());

    // The next append (the lock died with the child) repairs the tail first.
    run.append(action("After.crash", 0)).unwrap();
    let journal = store.read_journal(run.id()).unwrap();
    assert!(journal.is_clean(), "{:?}", journal.corrupt);
    assert_eq!(journal.torn_tail, None);
    let kinds: Vec<String> = journal
        .records
        .iter()
        .map(|r| r.marker().map_or(r.kind.clone(), |m| m.as_str().to_owned()))
        .collect();
    let mut expected = vec!["runStarted".to_owned()];
    expected.extend(std::iter::repeat_n("action".to_owned(), 10));
    expected.extend(std::iter::repeat_n("lifecycle".to_owned(), 5));
    expected.push("journalRepaired".to_owned());
    expected.push("action".to_owned());
    assert_eq!(kinds, expected);
    let repaired = &journal.records[16];
    assert_eq!(
        repaired.payload["discardedBytes"].as_u64(),
        torn.torn_tail.map(|t| t.len)
    );
    let connections: Vec<u64> = journal
        .records
        .iter()
        .filter(|r| r.kind == "lifecycle")
        .map(|r| r.payload["connection"].as_u64().unwrap())
        .collect();
    assert_eq!(connections, [0, 1, 2, 3, 4]);
    assert_eq!(
        journal.records[17].source.as_deref(),
        Some(Source::RELAY.as_str())
    );
}
