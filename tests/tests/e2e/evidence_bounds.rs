//! Evidence that is bounded and never silently lost, against a real Chromium: a noisy page's
//! repeats fold into counts (through the client's traffic and through the relay's own observer),
//! the journal budget holds, a full disk (injected, and a real one where root allows) is said in
//! the status, in the journal and in the report and the run still finalizes, and a run directory
//! deleted mid-run is said and recording continues in the session's next run.

use cdp_evidence::{parse_journal, EvidenceConfig, JournalRead, MarkerName, Store};
use cdp_relay::EvidenceSettings;
use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::http::get;
use cdp_relay_tests::{page_ws, within, Chromium, RelayFixture, RelayProcess};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn settings(root: &Path, observe: bool) -> EvidenceSettings {
    EvidenceSettings {
        root: root.to_path_buf(),
        observe,
        ..EvidenceSettings::default()
    }
}

fn journal(run_dir: &Path) -> JournalRead {
    parse_journal(&std::fs::read(run_dir.join("actions.jsonl")).expect("journal"))
}

fn markers(j: &JournalRead) -> Vec<String> {
    j.records
        .iter()
        .filter_map(|r| Some(r.marker()?.as_str().to_owned()))
        .collect()
}

/// Polls the relay's status until `pred` holds for its `evidence` object.
async fn status_until(authority: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    within(what, async {
        loop {
            let s = get(authority, "/relay/v1/status").await.json();
            if pred(&s["evidence"]) {
                return s["evidence"].clone();
            }
            // Polling an HTTP endpoint: the relay has no event to wait on for this.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// Waits until `text` is in the run's journal.
async fn landed(run_dir: &Path, text: &str) {
    within("a record to land in the journal", async {
        loop {
            let j = std::fs::read_to_string(run_dir.join("actions.jsonl")).unwrap_or_default();
            if j.contains(text) {
                return;
            }
            // Polling a file: the writer has no event to wait on.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// Runs `expr` in the page (awaiting a promise it returns).
async fn eval(page: &mut Cdp, expr: &str) -> Value {
    page.call(
        "Runtime.evaluate",
        json!({"expression": expr, "awaitPromise": true, "returnByValue": true}),
    )
    .await
}

/// The noisy page of the field test, in miniature: the same console error thousands of times,
/// the same refused fetch (with a token in its query) hundreds of times, and one console
/// message of a single 5000-character word.
const NOISE: &str = r#"(async () => {
    for (let i = 0; i < 5000; i++) console.error('render loop failed: widget missing');
    for (let i = 0; i < 200; i++) { try { await fetch('http://127.0.0.1:9/poll?token=abc123secret'); } catch (e) {} }
    console.error('w'.repeat(5000));
    return true;
})()"#;

/// Asserts the noise folded: each distinct message recorded ten times, then counted.
fn assert_folded(j: &JournalRead, dropped: u64) {
    const KEPT: u64 = 10;
    assert!(j.is_clean());
    let console: Vec<_> = j.records.iter().filter(|r| r.kind == "console").collect();
    let noisy: Vec<_> = console
        .iter()
        .filter(|r| r.payload["text"] == "render loop failed: widget missing")
        .collect();
    let first = noisy.iter().filter(|r| r.repeat.is_none()).count();
    let repeats: u64 = noisy
        .iter()
        .filter_map(|r| r.repeat.as_ref())
        .map(|r| r.count)
        .sum();
    assert_eq!(first as u64, KEPT, "the first ones are recorded one by one");
    // Identical messages in the same tick can share a timestamp, and then are one event.
    assert!(
        repeats >= 2500 && KEPT + repeats + dropped >= 2500 && KEPT + repeats <= 5000,
        "repeats {repeats}, dropped {dropped}"
    );
    let fetches: Vec<_> = j
        .records
        .iter()
        .filter(|r| r.kind == "network" && r.payload["url"] == "http://127.0.0.1:9/poll")
        .collect();
    assert_eq!(
        fetches.iter().filter(|r| r.repeat.is_none()).count() as u64,
        KEPT
    );
    let fetch_repeats: u64 = fetches
        .iter()
        .filter_map(|r| r.repeat.as_ref())
        .map(|r| r.count)
        .sum();
    assert!(
        fetch_repeats + KEPT + dropped >= 200 && fetch_repeats >= 150,
        "{fetch_repeats}"
    );
    // The one-word message keeps a sanitized prefix, not only a marker.
    let word = console
        .iter()
        .find(|r| {
            r.payload["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("www"))
        })
        .expect("the long word is on record");
    let text = word.payload["text"].as_str().unwrap();
    assert!(text.starts_with(&"w".repeat(4000)), "{}", &text[..20]);
    assert!(text.contains("…[truncated"));
    assert!(j.records.len() < 80, "{} records", j.records.len());
}

#[tokio::test]
async fn a_noisy_page_folds_into_counts_through_the_clients_traffic() {
    within("noise, passive", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let chrome = Chromium::start().await;
        let relay =
            RelayFixture::start_recording(&chrome.http(), settings(dir.path(), false)).await;
        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        page.call("Runtime.enable", json!({})).await;
        page.call("Network.enable", json!({})).await;
        assert_eq!(eval(&mut page, NOISE).await["result"]["value"], true);
        drop(page);
        let summary = relay.stop().await.expect("summary");
        assert!(summary.finalized);
        let j = journal(&summary.run_dir);
        assert_folded(&j, summary.dropped);
        let bytes = std::fs::metadata(summary.run_dir.join("actions.jsonl"))
            .unwrap()
            .len();
        assert!(bytes < 64 * 1024, "the journal stays small: {bytes} bytes");
        let all = std::fs::read_to_string(summary.run_dir.join("actions.jsonl")).unwrap();
        assert!(!all.contains("abc123secret"));
    })
    .await;
}

#[tokio::test]
async fn a_noisy_page_folds_into_counts_through_the_relays_observer() {
    within("noise, observer", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start_recording(&chrome.http(), settings(dir.path(), true)).await;
        status_until(&relay.authority(), "the observer to attach", |e| {
            e["observedPages"].as_u64().unwrap_or(0) >= 1
        })
        .await;
        // The client enables nothing: the relay's own connection records the page's events.
        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        assert_eq!(eval(&mut page, NOISE).await["result"]["value"], true);
        drop(page);
        let summary = relay.stop().await.expect("summary");
        assert!(summary.finalized);
        let j = journal(&summary.run_dir);
        assert_folded(&j, summary.dropped);
        // The repeats took no frames: at most a few frames for the first failures.
        let frames = j
            .records
            .iter()
            .filter(|r| r.payload["method"] == "frame")
            .count();
        assert!(frames <= 8, "{frames} frames");
    })
    .await;
}

#[tokio::test]
async fn the_journal_budget_bounds_a_run_of_distinct_errors() {
    within("journal budget", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let chrome = Chromium::start().await;
        let mut s = settings(dir.path(), false);
        s.journal_budget_bytes = 128 * 1024;
        let relay = RelayFixture::start_recording(&chrome.http(), s).await;
        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        page.call("Runtime.enable", json!({})).await;
        eval(
            &mut page,
            "for (let i = 0; i < 3000; i++) console.error('distinct ' + i); 1",
        )
        .await;
        drop(page);
        let summary = relay.stop().await.expect("summary");
        assert!(summary.finalized);
        let size = std::fs::metadata(summary.run_dir.join("actions.jsonl"))
            .unwrap()
            .len();
        assert!(
            size <= 128 * 1024 + cdp_evidence::METADATA_ALLOWANCE,
            "{size}"
        );
        let j = journal(&summary.run_dir);
        assert_eq!(
            markers(&j)
                .iter()
                .filter(|m| **m == "journalTruncated")
                .count(),
            1
        );
        // Metadata continues: the client's disconnection is after the cap.
        let at = j
            .records
            .iter()
            .position(|r| {
                r.marker()
                    .is_some_and(|m| m == MarkerName::JournalTruncated)
            })
            .unwrap();
        assert!(j.records[at..].iter().any(|r| r.kind == "lifecycle"));
        assert!(j.records[at..].iter().all(|r| r.kind != "console"));
        let m = Store::open(EvidenceConfig::at(dir.path()))
            .unwrap()
            .read_manifest(summary.run_dir.file_name().unwrap().to_str().unwrap())
            .unwrap();
        let t = m.truncation.expect("truncation");
        assert!(t.journal_truncated);
        let recorded = j.records.iter().filter(|r| r.kind == "console").count() as u64;
        let refused = t.refused_records.get("console").copied().unwrap_or(0);
        assert!(refused > 0);
        assert!(
            recorded + refused + summary.dropped >= 3000,
            "{recorded} + {refused} + {}",
            summary.dropped
        );
    })
    .await;
}

/// A disk that fills up mid-run (injected): forwarding goes on, the status says evidence is
/// failing, the first write after space returns says what was lost, the run finalizes.
#[tokio::test]
async fn a_full_disk_is_said_and_the_run_finalizes_once_space_returns() {
    within("full disk", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let chrome = Chromium::start().await;
        let relay =
            RelayFixture::start_recording(&chrome.http(), settings(dir.path(), false)).await;
        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        page.call("Runtime.enable", json!({})).await;
        eval(&mut page, "console.error('before the disk filled'); 1").await;
        landed(&relay.run_dir().expect("run dir"), "before the disk filled").await;
        cdp_evidence::fail_writes_under(dir.path(), true);
        eval(
            &mut page,
            "for (let i = 0; i < 300; i++) console.error('lost ' + i); 1",
        )
        .await;
        // Every one of them was tried (and lost) before space returns.
        let failing = status_until(
            &relay.authority(),
            "the status to say evidence fails",
            |e| e["failing"].is_string() && e["dropped"].as_u64().unwrap_or(0) >= 300,
        )
        .await;
        assert!(
            failing["failing"]
                .as_str()
                .unwrap()
                .contains("No space left"),
            "{failing}"
        );
        // Forwarding is unharmed.
        assert_eq!(eval(&mut page, "6 * 7").await["result"]["value"], 42);
        cdp_evidence::fail_writes_under(dir.path(), false);
        eval(&mut page, "console.error('after space returned'); 1").await;
        let back = status_until(&relay.authority(), "evidence to be written again", |e| {
            e["failing"].is_null() && e["lastLoss"].is_string()
        })
        .await;
        assert!(back["dropped"].as_u64().unwrap() >= 300, "{back}");
        drop(page);
        let summary = relay.stop().await.expect("summary");
        assert!(summary.finalized);
        let j = journal(&summary.run_dir);
        assert!(j.is_clean());
        let texts: Vec<&str> = j
            .records
            .iter()
            .filter(|r| r.kind == "console")
            .filter_map(|r| r.payload["text"].as_str())
            .collect();
        assert!(texts.contains(&"before the disk filled"));
        assert!(texts.contains(&"after space returned"));
        let said = j
            .records
            .iter()
            .find(|r| r.marker().is_some_and(|m| m == MarkerName::EvidenceDropped))
            .expect("the loss is said in the journal");
        assert_eq!(said.payload["reason"], "writeFailed");
        let count = said.payload["count"].as_u64().unwrap();
        assert!(count >= 300, "{count}");
        let lost_at = j
            .records
            .iter()
            .position(|r| r.marker().is_some_and(|m| m == MarkerName::EvidenceDropped));
        let after_at = j
            .records
            .iter()
            .position(|r| r.payload["text"] == "after space returned");
        assert!(lost_at < after_at, "said where it happened");
        let m = Store::open(EvidenceConfig::at(dir.path()))
            .unwrap()
            .read_manifest(summary.run_dir.file_name().unwrap().to_str().unwrap())
            .unwrap();
        assert_eq!(m.status.as_deref(), Some("finalized"));
        assert!(m.totals.unwrap().dropped_evidence >= count);
        // Said once: no second marker for the same loss at finalize.
        let total_said: u64 = j
            .records
            .iter()
            .filter(|r| r.marker().is_some_and(|m| m == MarkerName::EvidenceDropped))
            .filter_map(|r| r.payload["count"].as_u64())
            .sum();
        assert_eq!(total_said, summary.dropped);
        // The report rendered at finalize says it too.
        let report = std::fs::read_to_string(summary.run_dir.join("report.html")).unwrap();
        assert!(
            report.contains("could not be written"),
            "the report says what was lost"
        );
    })
    .await;
}

/// The run's directory deleted while recording: one clear status line, the records after it go
/// to the session's next run (which says what was lost), and that run is the one finalized.
#[tokio::test]
async fn a_run_directory_deleted_mid_run_is_said_and_recording_continues() {
    within("deleted run", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let chrome = Chromium::start().await;
        let relay =
            RelayFixture::start_recording(&chrome.http(), settings(dir.path(), false)).await;
        let first_dir = relay.run_dir().expect("run dir");
        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        page.call("Runtime.enable", json!({})).await;
        eval(&mut page, "console.error('into the first run'); 1").await;
        // Wait until it is on disk, then delete the run under the relay.
        landed(&first_dir, "into the first run").await;
        std::fs::remove_dir_all(&first_dir).unwrap();
        eval(&mut page, "console.error('into the next run'); 1").await;
        let first_id = first_dir.file_name().unwrap().to_str().unwrap().to_owned();
        let status = status_until(&relay.authority(), "the relay to move on", |e| {
            e["runId"].as_str().is_some_and(|id| id != first_id) && e["lastLoss"].is_string()
        })
        .await;
        let loss = status["lastLoss"].as_str().unwrap();
        assert!(
            loss.contains("deleted") && loss.contains(&first_id),
            "{loss}"
        );
        drop(page);
        let summary = relay.stop().await.expect("summary");
        assert!(summary.finalized);
        assert_ne!(summary.run_dir, first_dir);
        assert!(
            !first_dir.exists(),
            "nothing is written into the deleted run"
        );
        let j = journal(&summary.run_dir);
        assert!(j
            .records
            .iter()
            .any(|r| r.payload["text"] == "into the next run"));
        let said = j
            .records
            .iter()
            .find(|r| r.marker().is_some_and(|m| m == MarkerName::EvidenceDropped))
            .expect("the loss is said");
        assert_eq!(said.payload["reason"], "runDeleted");
        assert!(said.payload["count"].as_u64().unwrap() >= 2);
        let report = std::fs::read_to_string(summary.run_dir.join("report.html")).unwrap();
        assert!(
            report.contains("deleted while recording"),
            "the report says what was lost"
        );
    })
    .await;
}

/// Unmounts (lazily) on drop.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// A real full disk (a 1 MiB tmpfs, root only): the relay binary keeps forwarding, its status
/// says evidence fails, and on SIGTERM the run still finalizes (its space reserve) and says
/// what it lost, all of it and once; stderr says it in one line per outage, with the OS error.
#[tokio::test]
async fn a_real_full_disk_with_the_relay_binary() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("SKIPPED: a real full disk needs a tmpfs, and mounting one needs root (CI runs as root)");
        return;
    }
    within("real ENOSPC", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("SKIPPED: could not mount a tmpfs");
            return;
        }
        let _mount = Mount(dir.path().to_path_buf());
        let evidence = dir.path().to_str().unwrap().to_owned();
        let chrome = Chromium::start().await;
        let relay = RelayProcess::serve(&chrome.http(), &["--evidence-dir", &evidence]).await;
        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        page.call("Runtime.enable", json!({})).await;
        eval(&mut page, "console.error('before the disk filled'); 1").await;
        let status = get(&relay.authority(), "/relay/v1/status").await.json();
        let run_dir = PathBuf::from(status["evidence"]["runDir"].as_str().expect("runDir"));
        landed(&run_dir, "before the disk filled").await;
        // Fill the disk to the last byte.
        let mut f = std::fs::File::create(dir.path().join("filler")).unwrap();
        while std::io::Write::write_all(&mut f, &[0u8; 4096]).is_ok() {}
        while std::io::Write::write_all(&mut f, &[0u8]).is_ok() {}
        drop(f);
        eval(
            &mut page,
            "for (let i = 0; i < 500; i++) console.error('lost ' + i); 1",
        )
        .await;
        // A full tmpfs still takes small appends into the journal's last, partly used page, so
        // writes may fail and succeed by turns: the status says it fails, or that it lost some.
        let status = status_until(
            &relay.authority(),
            "the status to say evidence fails",
            |e| {
                e["dropped"].as_u64().unwrap_or(0) > 0
                    && (e["failing"].is_string() || e["lastLoss"].is_string())
            },
        )
        .await;
        eprintln!("status while the disk is full: {status}");
        assert_eq!(eval(&mut page, "6 * 7").await["result"]["value"], 42);
        drop(page);
        let stderr = relay.stop().await;
        eprintln!("relay stderr:\n{stderr}");
        // Said once per outage, in one line naming the OS error.
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("cannot append"))
            .collect();
        assert!(!warnings.is_empty(), "{stderr}");
        assert!(
            warnings
                .iter()
                .all(|l| l.contains("No space left on device")),
            "{stderr}"
        );
        let runs = std::fs::read_dir(dir.path().join("runs")).unwrap().count();
        assert_eq!(runs, 1);
        let m = Store::open(EvidenceConfig::at(dir.path()))
            .unwrap()
            .read_manifest(run_dir.file_name().unwrap().to_str().unwrap())
            .unwrap();
        assert_eq!(m.status.as_deref(), Some("finalized"), "{stderr}");
        assert!(stderr.contains("run finalized in"), "{stderr}");
        let j = journal(&run_dir);
        assert!(j.is_clean());
        let said: u64 = j
            .records
            .iter()
            .filter(|r| r.marker().is_some_and(|m| m == MarkerName::EvidenceDropped))
            .filter_map(|r| r.payload["count"].as_u64())
            .sum();
        let dropped = m.totals.expect("totals").dropped_evidence;
        assert!(dropped > 0);
        assert_eq!(said, dropped, "the journal says all that was lost, once");
    })
    .await;
}
