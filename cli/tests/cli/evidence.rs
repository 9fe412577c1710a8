//! `cdp-relay evidence append|finalize`, `runs` and `prune`, driven as a real binary, alongside
//! library writers in other processes (this test binary re-invoked as the ignored `worker` test).
//! Children start on a pipe barrier, never on sleeps, and are killed on drop.

use cdp_evidence::{Action, EvidenceConfig, Record, RecordKind, Store, Totals};
use cdp_sanitize::SafeText;
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_cdp-relay");
const ROLE: &str = "CDP_RELAY_TEST_WORKER";
const REPORT: &str = "@@worker-report ";

/// A child killed and reaped if the test ends early.
struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Proc {
    fn spawn(mut cmd: Command) -> Proc {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        Proc { child, stdin }
    }

    fn stdin(&mut self) -> &mut ChildStdin {
        self.stdin.as_mut().unwrap()
    }

    /// Closes stdin, waits, returns (success, stdout, stderr).
    fn finish(mut self) -> (bool, String, String) {
        drop(self.stdin.take());
        let (mut out, mut err) = (String::new(), String::new());
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let ok = self.child.wait().unwrap().success();
        (ok, out, err)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn cli(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .arg("--evidence-dir")
        .arg(dir)
        .env_remove("CDP_RELAY_EVIDENCE_DIR")
        .env_remove("RUST_LOG");
    cmd
}

fn run_cli(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut p = cli(dir, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = p.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    p.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn store(dir: &Path) -> Store {
    Store::open(EvidenceConfig::at(dir)).unwrap()
}

/// The worker's name as the test harness knows it (its module path without the crate's name):
/// the binary holds other modules' tests too.
fn worker_test_name() -> &'static str {
    let path = concat!(module_path!(), "::worker");
    path.split_once("::").map_or(path, |(_, rest)| rest)
}

/// Library-writer child entry point. Not a test on its own.
#[test]
#[ignore = "child-process entry point, spawned by the other tests in this file"]
fn worker() {
    let role = std::env::var(ROLE).expect("spawned by a test");
    let dir = std::env::var("W_DIR").unwrap();
    let source = std::env::var("W_SOURCE").unwrap();
    let count: u64 = std::env::var("W_COUNT").unwrap().parse().unwrap();
    assert_eq!(role, "append");
    let run = store(Path::new(&dir))
        .join_session_transient("mixed", &source)
        .unwrap();
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();
    for i in 0..count {
        let mut a = Action::new(SafeText::literal("Lib.append"));
        a.bytes = Some(i);
        run.append(Record::new(SafeText::literal("lib"), RecordKind::Action(a)))
            .unwrap();
    }
    println!("{REPORT}done");
}

fn cli_lines(source: &str, count: u64) -> String {
    (0..count)
        .map(|i| {
            format!(
                r#"{{"tool":"node","kind":"action","source":"{source}","payload":{{"method":"Cli.append","bytes":{i}}}}}"#
            ) + "\n"
        })
        .collect()
}

#[test]
fn cli_and_library_processes_append_concurrently_without_loss() {
    const EACH: u64 = 800;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // The run exists and is owned by this (live) process before anyone appends.
    let owner = store(dir).join_session("mixed", "relay").unwrap();
    let mut libs: Vec<Proc> = (0..4)
        .map(|i| {
            let mut cmd = Command::new(std::env::current_exe().unwrap());
            cmd.args(["--exact", worker_test_name(), "--ignored", "--nocapture"])
                .env(ROLE, "append")
                .env("W_DIR", dir)
                .env("W_SOURCE", format!("lib{i}"))
                .env("W_COUNT", EACH.to_string());
            Proc::spawn(cmd)
        })
        .collect();
    let mut clis: Vec<Proc> = (0..4)
        .map(|_| Proc::spawn(cli(dir, &["evidence", "append", "--session", "mixed"])))
        .collect();
    let inputs: Vec<String> = (0..4)
        .map(|i| cli_lines(&format!("cli{i}"), EACH))
        .collect();
    let start = Instant::now();
    // Barrier: every process is running; release them together.
    for p in &mut libs {
        writeln!(p.stdin(), "go").unwrap();
    }
    let writers: Vec<_> = clis
        .iter_mut()
        .zip(inputs)
        .map(|(p, input)| {
            let mut stdin = p.stdin.take().unwrap();
            std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap())
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    for p in clis {
        let (ok, out, err) = p.finish();
        assert!(ok, "{err}");
        assert_eq!(out.trim(), owner.id(), "the CLI joined the active run");
    }
    for p in libs {
        let (ok, out, err) = p.finish();
        assert!(ok && out.contains(&format!("{REPORT}done")), "{err}");
    }
    let elapsed = start.elapsed();
    owner.finalize(Totals::default()).unwrap();

    let journal = store(dir).read_journal(owner.id()).unwrap();
    assert!(journal.is_clean(), "{:?}", journal.corrupt);
    assert_eq!(journal.torn_tail, None);
    let mut seen: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for r in journal.records.iter().filter(|r| r.kind == "action") {
        seen.entry(r.source.clone().unwrap())
            .or_default()
            .push(r.payload["bytes"].as_u64().unwrap());
    }
    assert_eq!(seen.len(), 8);
    for (source, seqs) in &seen {
        assert_eq!(*seqs, (0..EACH).collect::<Vec<_>>(), "{source}");
    }
    let ids: HashSet<&str> = journal
        .records
        .iter()
        .map(|r| r.action_id.as_str())
        .collect();
    assert_eq!(ids.len(), journal.records.len());
    let raw = std::fs::read(owner.dir().join("actions.jsonl")).unwrap();
    for line in raw.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        serde_json::from_slice::<serde_json::Value>(line).unwrap();
    }
    eprintln!(
        "mixed stress: 8 processes (4 CLI, 4 library) appended {} records in {elapsed:?}",
        8 * EACH
    );
}

#[test]
fn bad_lines_are_reported_by_number_and_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let input = [
        r#"{"tool":"t","kind":"action","payload":{"method":"Page.reload"}}"#,
        r#"{"tool":"t","kind":"action","payload":{"method":"x"},"status":"hunter2-status"}"#,
        "",
        "this is not json: hunter2",
        r#"{"tool":"t","kind":"console","payload":{"level":"error","text":"boom"}}"#,
        r#"{"tool":"t","kind":"action","payload":{"method":"x"},"hunter2":true}"#,
    ]
    .join("\n");
    let out = run_cli(
        tmp.path(),
        &["evidence", "append", "--session", "s", "--source", "device"],
        &input,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("stdin line 2:"), "{err}");
    assert!(err.contains("stdin line 4:"), "{err}");
    assert!(err.contains("stdin line 6:"), "{err}");
    assert!(!err.contains("line 3"), "blank lines are not errors: {err}");
    assert!(!err.contains("hunter2"), "content is never echoed: {err}");
    let id = text(&out.stdout).trim().to_owned();
    let journal = store(tmp.path()).read_journal(&id).unwrap();
    let kinds: Vec<&str> = journal.records.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["marker", "action", "console"]);
    assert_eq!(journal.records[1].source.as_deref(), Some("device"));
}

#[test]
fn secrets_never_reach_the_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    let input = [
        format!(r#"{{"tool":"node","kind":"console","payload":{{"level":"error","text":"token {jwt} for s3cr3t-Pa55word","url":"https://app.test/x.js?sid=abc123SESSION"}}}}"#),
        r#"{"tool":"node","kind":"network","payload":{"method":"GET","url":"https://u:pw@api.test/v1?access_token=tok123XYZ","status":500,"errorText":"Cookie: sid=31d4d96e407aad42"}}"#.to_owned(),
        r#"{"tool":"node","kind":"action","payload":{"method":"type","input":{"text":"s3cr3t-Pa55word","inputType":"password"}},"error":"Authorization: Bearer abc123def456ghi789"}"#.to_owned(),
        r#"{"tool":"node","kind":"lifecycle","payload":{"event":"clientConnected","connection":1,"detail":"ws://127.0.0.1:9222/devtools/page/8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1"}}"#.to_owned(),
    ]
    .join("\n");
    let mut cmd = cli(
        tmp.path(),
        &[
            "evidence",
            "append",
            "--session",
            "sweep",
            "--secret-env",
            "APP_PASSWORD",
        ],
    );
    cmd.env("APP_PASSWORD", "s3cr3t-Pa55word")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut p = cmd.spawn().unwrap();
    p.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = p.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run_cli(
        tmp.path(),
        &[
            "evidence",
            "finalize",
            "--session",
            "sweep",
            "--dropped",
            "3",
        ],
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));

    let planted = [
        "s3cr3t-Pa55word",
        jwt,
        "abc123SESSION",
        "tok123XYZ",
        "u:pw",
        "31d4d96e407aad42",
        "abc123def456ghi789",
        "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1",
    ];
    let mut files = 0;
    let mut stack = vec![tmp.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
                continue;
            }
            files += 1;
            let bytes = std::fs::read(e.path()).unwrap();
            for secret in planted {
                assert!(
                    !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                    "{secret} found in {}",
                    e.path().display()
                );
            }
        }
    }
    assert!(files >= 4);
    let s = store(tmp.path());
    let runs = s.list_runs().unwrap();
    let journal = s.read_journal(&runs[0].id).unwrap();
    let typed = journal.records.iter().find(|r| r.kind == "action").unwrap();
    assert_eq!(typed.payload["input"]["chars"], 15);
    let m = s.read_manifest(&runs[0].id).unwrap();
    assert_eq!(m.status.as_deref(), Some("finalized"));
    assert_eq!(m.totals.unwrap().dropped_evidence, 3);
}

#[test]
fn runs_lists_and_prune_deletes_only_old_finalized_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let s = store(tmp.path());
    let mut finalized = Vec::new();
    for i in 0..4 {
        let run = s.join_session(&format!("done{i}"), "relay").unwrap();
        run.finalize(Totals::default()).unwrap();
        finalized.push(run.id().to_owned());
    }
    let running = s.join_session("live", "relay").unwrap();
    let legacy = tmp.path().join("runs/legacy-run");
    std::fs::create_dir_all(&legacy).unwrap();
    std::fs::write(
        legacy.join("manifest.json"),
        br#"{"runId":"legacy-run","status":"finalized"}"#,
    )
    .unwrap();

    let out = run_cli(tmp.path(), &["runs"], "");
    assert!(out.status.success());
    let table = text(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 7, "{table}");
    assert!(lines[0].starts_with("RUN"));
    assert!(table.contains("running,active"), "{table}");
    assert!(table.contains("legacy:finalized"), "{table}");
    for id in finalized.iter().chain([&running.id().to_owned()]) {
        assert!(table.contains(id.as_str()), "{table}");
    }

    let out = run_cli(tmp.path(), &["runs", "--json"], "");
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 6);
    let live = list
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == running.id())
        .unwrap();
    assert_eq!(live["status"], "running");
    assert_eq!(live["active"], true);
    assert_eq!(live["records"], 1);

    let out = run_cli(tmp.path(), &["prune", "--keep", "1"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("pruned 3 run(s)"), "{report}");
    let mut left: Vec<String> = std::fs::read_dir(tmp.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    let mut expected = vec![
        finalized[3].clone(),
        running.id().to_owned(),
        "legacy-run".to_owned(),
    ];
    expected.sort();
    assert_eq!(left, expected);
}

#[test]
fn the_evidence_dir_comes_from_the_environment_too() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["evidence", "append", "--session", "env"])
        .env("CDP_RELAY_EVIDENCE_DIR", tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut p = cmd.spawn().unwrap();
    p.stdin
        .take()
        .unwrap()
        .write_all(br#"{"tool":"t","kind":"action","payload":{"method":"m"}}"#)
        .unwrap();
    let out = p.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(store(tmp.path()).list_runs().unwrap().len(), 1);
}

#[test]
fn usage_errors_are_one_line_and_exit_64() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["evidence", "append", "--session", "../etc"][..],
        &["evidence", "append", "--session", "s", "--source", "a/b"],
        &[
            "evidence",
            "append",
            "--session",
            "s",
            "--secret-env",
            "CDP_TEST_SURELY_UNSET_VAR",
        ],
    ] {
        let out = run_cli(tmp.path(), args, "");
        assert_eq!(out.status.code(), Some(64), "{args:?}");
        let err = text(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.starts_with("cdp-relay: "), "{err}");
    }
    // Empty input creates nothing.
    let out = run_cli(tmp.path(), &["evidence", "append", "--session", "s"], "");
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert!(!tmp.path().join("runs").exists());
    // Finalizing a session without a run is not an error.
    let out = run_cli(tmp.path(), &["evidence", "finalize", "--session", "s"], "");
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("nothing to finalize"));
}

#[test]
fn an_unwritable_evidence_dir_is_one_clear_line() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let out = run_cli(
        &file,
        &["evidence", "append", "--session", "s"],
        r#"{"tool":"t","kind":"action","payload":{"method":"m"}}"#,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--evidence-dir"), "{err}");
}

#[cfg_attr(
    not(debug_assertions),
    ignore = "the torn-write hook exists in debug builds only"
)]
#[test]
fn a_cli_writer_killed_mid_record_is_repaired_by_the_next_append() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let owner = store(dir).join_session("crash", "relay").unwrap();
    let mut cmd = cli(dir, &["evidence", "append", "--session", "crash"]);
    // The CLI's 4th line write tears (it adopts the run, so no marker of its own comes first).
    cmd.env(cdp_evidence::TEST_HOOK_TORN_APPEND_ENV, "4");
    let mut p = Proc::spawn(cmd);
    // Keep stdin open: the hook blocks reading it until the kill.
    p.stdin()
        .write_all(cli_lines("cli", 10).as_bytes())
        .unwrap();
    let mut stderr = BufReader::new(p.child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "CLI exited first");
        if line.trim_end() == cdp_evidence::TEST_HOOK_TORN_APPEND_READY {
            break;
        }
    }
    let before = store(dir).read_journal(owner.id()).unwrap();
    assert!(before.torn_tail.is_some());
    p.child.kill().unwrap();
    p.child.wait().unwrap();

    let out = run_cli(
        dir,
        &["evidence", "append", "--session", "crash"],
        &cli_lines("next", 2),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let journal = store(dir).read_journal(owner.id()).unwrap();
    assert!(journal.is_clean());
    assert_eq!(journal.torn_tail, None);
    let summary: Vec<String> = journal
        .records
        .iter()
        .map(|r| match r.marker() {
            Some(m) => m.as_str().to_owned(),
            None => format!("{}:{}", r.source.as_deref().unwrap(), r.payload["bytes"]),
        })
        .collect();
    assert_eq!(
        summary,
        [
            "runStarted",
            "cli:0",
            "cli:1",
            "cli:2",
            "journalRepaired",
            "next:0",
            "next:1"
        ]
    );
}

/// `cdp-relay runs | head -0`: a reader that closed the pipe is not a failure, for every command
/// that prints.
#[test]
fn a_closed_stdout_is_success_for_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_cli(
        tmp.path(),
        &["evidence", "append", "--session", "pipe"],
        "{\"tool\":\"t\",\"kind\":\"action\",\"payload\":{\"method\":\"Page.reload\"}}\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    for args in [
        &["runs"][..],
        &["runs", "--json"],
        &["evidence", "finalize", "--session", "pipe"],
    ] {
        let mut p = cli(tmp.path(), args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Closed before anything was written: the first write fails with EPIPE.
        drop(p.stdout.take());
        let out = p.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            !text(&out.stderr).contains("Broken pipe"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// A 165 KB record of 2000 small string fields used to burn seconds of CPU, fail "even after
/// cutting", and stop the stream: every later line was lost. It is cut to size now, and the
/// lines after it land.
#[test]
fn a_record_of_thousands_of_small_fields_is_cut_and_the_lines_after_it_land() {
    let tmp = tempfile::tempdir().unwrap();
    let fields: serde_json::Map<String, serde_json::Value> = (0..2000)
        .map(|i| (format!("k{i:04}"), "v".repeat(60).into()))
        .collect();
    let big = serde_json::json!({"tool": "t", "kind": "gesture", "payload": fields}).to_string();
    assert!(big.len() > 140_000);
    let mut input = vec![cli_lines("before", 1), big];
    input.push(cli_lines("after", 3));
    let started = Instant::now();
    let out = run_cli(
        tmp.path(),
        &["evidence", "append", "--session", "big"],
        &input.join("\n"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let id = text(&out.stdout).trim().to_owned();
    let journal = store(tmp.path()).read_journal(&id).unwrap();
    assert!(journal.is_clean());
    let sources: Vec<&str> = journal
        .records
        .iter()
        .filter(|r| r.marker().is_none())
        .map(|r| r.source.as_deref().unwrap())
        .collect();
    assert_eq!(sources, ["before", "cli", "after", "after", "after"]);
    let cut = journal
        .records
        .iter()
        .find(|r| r.kind == "gesture")
        .unwrap();
    assert!(cut.fields_cut > 0);
    let payload = cut.payload.as_object().unwrap();
    assert_eq!(payload["k0000"], "v".repeat(60));
    assert!(payload["…"].as_str().unwrap().contains(" fields, "));
    let lines =
        std::fs::read_to_string(tmp.path().join("runs").join(&id).join("actions.jsonl")).unwrap();
    assert!(lines.lines().all(|l| l.len() < 65_536));
}

/// The run directory removed while a long-running producer streams: the records after that go
/// to the session's next run instead of failing one by one.
#[test]
fn records_after_the_run_directory_is_removed_go_to_a_new_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut p = Proc::spawn(cli(dir, &["evidence", "append", "--session", "gone"]));
    p.stdin()
        .write_all(cli_lines("first", 1).as_bytes())
        .unwrap();
    p.stdin().write_all(b"\n").unwrap();
    p.stdin().flush().unwrap();
    // The first record lands (the run is created for it); then the run is removed under it.
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    let first = loop {
        let runs = store(dir).list_runs().unwrap_or_default();
        if let Some(r) = runs.first().filter(|r| r.records >= 2) {
            break r.id.clone();
        }
        assert!(Instant::now() < deadline, "the first record never landed");
        // Polling the journal: the CLI has no way to say a line landed.
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    std::fs::remove_dir_all(dir.join("runs").join(&first)).unwrap();
    p.stdin()
        .write_all(cli_lines("second", 2).as_bytes())
        .unwrap();
    let (ok, out, err) = p.finish();
    assert!(ok, "{err}");
    let next = out.trim();
    assert_ne!(next, first);
    let journal = store(dir).read_journal(next).unwrap();
    let sources: Vec<&str> = journal
        .records
        .iter()
        .filter(|r| r.marker().is_none())
        .map(|r| r.source.as_deref().unwrap())
        .collect();
    assert_eq!(sources, ["second", "second"]);
}

/// A manifest planted with ESC and BEL in its `sessionId` and `status` used to retitle the
/// terminal and clear the screen of whoever ran `cdp-relay runs`.
#[test]
fn runs_escapes_control_characters_from_manifests() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("runs/planted-run");
    std::fs::create_dir_all(&run).unwrap();
    let hostile = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}evil";
    let manifest = serde_json::json!({
        "evidenceVersion": 1, "runId": "planted-run", "sessionId": hostile,
        "status": hostile, "startedAt": hostile, "actionLog": "actions.jsonl",
    });
    std::fs::write(run.join("manifest.json"), manifest.to_string()).unwrap();
    let out = run_cli(tmp.path(), &["runs"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    for c in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(!table.contains(c), "{c:?} reached the terminal: {table:?}");
    }
    assert!(table.contains("\\u{1b}]0;pwned\\u{7}"), "{table}");
    assert!(table.contains("\\u{202e}evil"), "{table}");
    // Each run is still one line.
    assert_eq!(table.lines().count(), 2, "{table}");
}
