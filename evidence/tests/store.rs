//! In-process behaviour of the store: run lifecycle, pointer recovery, confinement, budget,
//! retention, disabled mode. Cross-process behaviour is in `multiprocess.rs`.

mod common;

use cdp_evidence::{
    Action, ArtifactOutcome, Error, EvidenceConfig, Marker, MarkerName, Record, RecordKind,
    RunStatus, Status, Store, Totals, Word,
};
use cdp_sanitize::SafeText;
use common::{action, files_under, markers, store_at};
use std::fs;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

#[test]
fn a_run_is_created_appended_and_finalized() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_at(tmp.path());
    let run = store.join_session("s1", "relay").unwrap();
    assert!(run.is_enabled());
    assert_eq!(run.session(), "s1");
    assert!(run.dir().starts_with(store.root()));
    let started = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
    run.append(
        action("Page.navigate", 1)
            .started_at(started)
            .duration(Duration::from_millis(42))
            .status(Status::Error)
            .error(SafeText::literal("net::ERR_NAME_NOT_RESOLVED")),
    )
    .unwrap();
    let pointer = store.root().join("sessions/s1.active");
    assert!(pointer.exists());

    let manifest = store.read_manifest(run.id()).unwrap();
    assert_eq!(manifest.evidence_version, Some(1));
    assert_eq!(manifest.run_status(), Some(RunStatus::Running));
    assert_eq!(manifest.session_id.as_deref(), Some("s1"));
    assert_eq!(manifest.action_log.as_deref(), Some("actions.jsonl"));

    let sanitizer = cdp_sanitize::Sanitizer::new();
    sanitizer.register_secret("PASSWORD", "hunter2").unwrap();
    let text = sanitizer.text("login hunter2; Cookie: sid=31d4d96e407aad42");
    run.append(action("Runtime.consoleAPICalled", 9).error(text))
        .unwrap();
    run.finalize(Totals {
        dropped_evidence: 2,
        dropped_recorded: 0,
        redactions: Some(sanitizer.summary()),
    })
    .unwrap();
    assert!(!pointer.exists(), "finalize clears the pointer");
    let manifest = store.read_manifest(run.id()).unwrap();
    assert_eq!(manifest.run_status(), Some(RunStatus::Finalized));
    assert!(manifest.finalized_at.is_some());
    let totals = manifest.totals.unwrap();
    assert_eq!(totals.records, 5); // runStarted, 2 actions, evidenceDropped, runFinalized
    assert_eq!(totals.dropped_evidence, 2);
    let redactions = totals.redactions.unwrap();
    assert_eq!(redactions.secrets["PASSWORD"], 1);
    assert_eq!(redactions.total, 2);

    let journal = store.read_journal(run.id()).unwrap();
    assert!(journal.is_clean());
    assert_eq!(journal.torn_tail, None);
    assert_eq!(
        markers(&journal),
        ["runStarted", "evidenceDropped", "runFinalized"]
    );
    let rec = &journal.records[1];
    assert_eq!(rec.kind, "action");
    assert_eq!(rec.source.as_deref(), Some("relay"));
    assert_eq!(rec.tool.as_deref(), Some("test"));
    assert_eq!(rec.session_id.as_deref(), Some("s1"));
    assert_eq!(rec.started_at.as_deref(), Some("2023-11-14T22:13:20.123Z"));
    assert_eq!(rec.duration_ms, Some(42));
    assert_eq!(rec.status.as_deref(), Some("error"));
    assert_eq!(rec.error.as_deref(), Some("net::ERR_NAME_NOT_RESOLVED"));
    assert_eq!(rec.payload["method"], "Page.navigate");
    assert_eq!(rec.payload["bytes"], 1);
    // actionIds are unique and sort in append order within a process.
    let ids: Vec<&str> = journal
        .records
        .iter()
        .map(|r| r.action_id.as_str())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len());

    // Finalize is idempotent; appends after it are refused with a clear error.
    run.finalize(Totals::default()).unwrap();
    assert!(matches!(
        run.append(action("Page.reload", 2)),
        Err(Error::RunFinalized { .. })
    ));
    assert!(matches!(
        run.store_artifact("screenshot", "png", b"x"),
        Err(Error::RunFinalized { .. })
    ));
    assert_eq!(store.read_journal(run.id()).unwrap().records.len(), 5);

    // The next join starts a new run.
    let next = store.join_session("s1", "relay").unwrap();
    assert_ne!(next.id(), run.id());
}

#[test]
fn joiners_share_the_active_run_and_any_of_them_may_finalize() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_at(tmp.path());
    let relay = store.join_session("shared", "relay").unwrap();
    let device = store.join_session_transient("shared", "device").unwrap();
    assert_eq!(relay.id(), device.id());
    relay.append(action("Input.dispatchMouseEvent", 1)).unwrap();
    device
        .append(action("tap", 2).source(cdp_evidence::Source::new("adb").unwrap()))
        .unwrap();
    device.finalize(Totals::default()).unwrap();
    assert!(matches!(
        relay.append(action("Page.reload", 3)),
        Err(Error::RunFinalized { .. })
    ));
    relay.finalize(Totals::default()).unwrap();
    let journal = store.read_journal(relay.id()).unwrap();
    let sources: Vec<_> = journal
        .records
        .iter()
        .map(|r| r.source.as_deref().unwrap())
        .collect();
    assert_eq!(sources, ["relay", "relay", "adb", "device"]);
    assert_eq!(markers(&journal), ["runStarted", "runFinalized"]);
}

#[test]
fn disabled_store_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("never");
    let store = Store::open(EvidenceConfig {
        enabled: false,
        ..EvidenceConfig::at(&root)
    })
    .unwrap();
    let run = store.join_session("s", "relay").unwrap();
    assert!(!run.is_enabled());
    assert_eq!(run.id(), "");
    run.append(action("Page.reload", 1)).unwrap();
    assert_eq!(
        run.store_artifact("shot", "png", b"png").unwrap(),
        ArtifactOutcome::Disabled
    );
    run.finalize(Totals::default()).unwrap();
    assert!(store.list_runs().unwrap().is_empty());
    assert!(store.prune().unwrap().removed.is_empty());
    assert!(matches!(store.read_journal("x"), Err(Error::Disabled)));
    assert!(!root.exists());
}

#[test]
fn opening_creates_nothing_and_listing_a_missing_root_is_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("later");
    let store = store_at(&root);
    assert!(store.list_runs().unwrap().is_empty());
    assert!(store.prune().unwrap().removed.is_empty());
    assert!(!root.exists());
    assert!(matches!(
        Store::open(EvidenceConfig {
            max_record_bytes: 100,
            ..EvidenceConfig::at(&root)
        }),
        Err(Error::Config { .. })
    ));
}

#[test]
fn ids_and_paths_are_confined() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_at(&tmp.path().join("root"));
    for bad in ["..", "../x", "/etc", "a/b", ".hidden", "", "a b"] {
        assert!(
            matches!(
                store.join_session(bad, "relay"),
                Err(Error::InvalidId { .. })
            ),
            "{bad:?}"
        );
        assert!(matches!(
            store.read_journal(bad),
            Err(Error::InvalidId { .. })
        ));
    }
    assert!(matches!(
        store.join_session("ok", "../relay"),
        Err(Error::InvalidId { .. })
    ));
    let run = store.join_session("ok", "relay").unwrap();
    for bad in [
        "../manifest.json",
        "artifacts/../manifest.json",
        "/etc/passwd",
        "artifacts/",
        "manifest.json",
    ] {
        assert!(store.artifact_path(run.id(), bad).is_err(), "{bad:?}");
    }
    assert!(matches!(
        run.store_artifact("../x", "png", b"x"),
        Err(Error::InvalidId { .. })
    ));
    assert!(files_under(&tmp.path().join("root"))
        .iter()
        .all(|p| p.starts_with(tmp.path().join("root"))));
}

#[cfg(unix)]
#[test]
fn symlinks_pointing_outside_are_refused() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    fs::create_dir_all(outside.join("evil-run")).unwrap();
    fs::write(outside.join("evil-run/actions.jsonl"), b"{}\n").unwrap();
    fs::write(outside.join("secret.png"), b"secret").unwrap();

    // A symlinked runs/ directory.
    let root = tmp.path().join("root1");
    fs::create_dir(&root).unwrap();
    symlink(&outside, root.join("runs")).unwrap();
    let store = store_at(&root);
    assert!(matches!(
        store.join_session("s", "relay"),
        Err(Error::Confinement { .. })
    ));
    assert!(matches!(
        store.read_journal("evil-run"),
        Err(Error::Confinement { .. })
    ));
    assert!(store.list_runs().is_err());

    // A symlinked run directory, journal, artifact and session pointer.
    let root = tmp.path().join("root2");
    let store = store_at(&root);
    let run = store.join_session("s", "relay").unwrap();
    symlink(outside.join("evil-run"), root.join("runs/linked")).unwrap();
    assert!(matches!(
        store.read_journal("linked"),
        Err(Error::Confinement { .. })
    ));
    assert!(store.list_runs().unwrap().iter().all(|r| r.id != "linked"));
    symlink(
        outside.join("secret.png"),
        run.dir().join("artifacts/000001-x.png"),
    )
    .unwrap();
    assert!(matches!(
        store.artifact_path(run.id(), "artifacts/000001-x.png"),
        Err(Error::Confinement { .. })
    ));
    // The artifact store skips the planted name instead of writing through the link.
    match run.store_artifact("x", "png", b"mine").unwrap() {
        ArtifactOutcome::Stored(r) => assert_eq!(r.as_str(), "artifacts/000002-x.png"),
        other => panic!("{other:?}"),
    }
    assert_eq!(fs::read(outside.join("secret.png")).unwrap(), b"secret");

    let other = store.join_session("t", "relay").unwrap();
    fs::remove_file(other.dir().join("actions.jsonl")).unwrap();
    symlink(
        outside.join("evil-run/actions.jsonl"),
        other.dir().join("actions.jsonl"),
    )
    .unwrap();
    let fresh = store_at(&root).join_session("t", "relay").unwrap();
    assert!(matches!(
        fresh.append(action("Page.reload", 1)),
        Err(Error::Confinement { .. })
    ));
    assert_eq!(
        fs::read(outside.join("evil-run/actions.jsonl")).unwrap(),
        b"{}\n"
    );

    fs::remove_file(root.join("sessions/u.active")).ok();
    symlink(outside.join("secret.png"), root.join("sessions/u.active")).unwrap();
    assert!(matches!(
        store.join_session("u", "relay"),
        Err(Error::Confinement { .. })
    ));
}

#[test]
fn stale_pointers_are_recovered_without_orphans() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_at(tmp.path());
    let sessions = store.root().join("sessions");
    let runs = store.root().join("runs");

    // Pointer to a run that was never created (creator died right after claiming).
    fs::create_dir_all(&sessions).unwrap();
    fs::create_dir_all(&runs).unwrap();
    fs::write(
        sessions.join("a.active"),
        br#"{"runId":"ghost","ownerPid":1234567}"#,
    )
    .unwrap();
    let run = store.join_session("a", "relay").unwrap();
    assert_ne!(run.id(), "ghost");
    assert!(!runs.join("ghost").exists());

    // Pointer to a run directory whose manifest was never written: creation is finished.
    fs::create_dir(runs.join("half")).unwrap();
    fs::write(sessions.join("b.active"), b"half\n").unwrap();
    let run = store.join_session("b", "relay").unwrap();
    assert_eq!(run.id(), "half");
    assert_eq!(
        store.read_manifest("half").unwrap().run_status(),
        Some(RunStatus::Running)
    );

    // Garbage pointer.
    fs::write(sessions.join("c.active"), b"\x00\xffnot a pointer").unwrap();
    let run = store.join_session("c", "relay").unwrap();
    assert!(cdp_evidence::validate_id("run", run.id()).is_ok());

    // Pointer left behind after the run was finalized (crash between manifest and unlink).
    let done = store.join_session("d", "relay").unwrap();
    let done_id = done.id().to_owned();
    let pointer = fs::read(sessions.join("d.active")).unwrap();
    done.finalize(Totals::default()).unwrap();
    fs::write(sessions.join("d.active"), pointer).unwrap();
    let run = store.join_session("d", "relay").unwrap();
    assert_ne!(run.id(), done_id);

    // Every run directory is named by a pointer or was finalized: no orphans.
    for info in store.list_runs().unwrap() {
        assert!(
            info.active || info.status == RunStatus::Finalized,
            "{info:?}"
        );
    }
}

#[test]
fn artifacts_respect_the_budget_with_one_truncation_marker() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(EvidenceConfig {
        artifact_budget_bytes: 2500,
        ..EvidenceConfig::at(tmp.path())
    })
    .unwrap();
    let run = store.join_session("b", "relay").unwrap();
    let mut stored = Vec::new();
    for _ in 0..5 {
        match run
            .store_artifact("screenshot", "png", &[7u8; 1000])
            .unwrap()
        {
            ArtifactOutcome::Stored(r) => stored.push(r),
            ArtifactOutcome::OverBudget => {}
            other => panic!("{other:?}"),
        }
        run.append(action("Page.captureScreenshot", 1)).unwrap();
    }
    // A small one still fits after a big one was refused: the cap is on bytes.
    assert!(matches!(
        run.store_artifact("thumb", "png", &[1u8; 500]).unwrap(),
        ArtifactOutcome::Stored(_)
    ));
    assert_eq!(
        run.store_artifact("thumb", "png", &[1u8; 1]).unwrap(),
        ArtifactOutcome::OverBudget
    );
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0].as_str(), "artifacts/000001-screenshot.png");
    let path = store.artifact_path(run.id(), stored[1].as_str()).unwrap();
    assert_eq!(fs::read(path).unwrap(), [7u8; 1000]);
    run.append(action("Page.captureScreenshot", 1).artifact(stored[0].clone()))
        .unwrap();
    run.finalize(Totals::default()).unwrap();

    let journal = store.read_journal(run.id()).unwrap();
    assert_eq!(
        markers(&journal)
            .iter()
            .filter(|m| **m == "evidenceTruncated")
            .count(),
        1
    );
    assert_eq!(
        journal
            .records
            .iter()
            .filter(|r| r.kind == "action")
            .count(),
        6,
        "metadata continues past the cap"
    );
    assert_eq!(
        journal.records.last().unwrap().payload["artifactBytes"],
        2500
    );
    let m = store.read_manifest(run.id()).unwrap();
    let t = m.truncation.unwrap();
    assert!(t.artifacts_truncated);
    assert_eq!(t.refused_artifacts, 4);
    assert_eq!(t.artifact_budget_bytes, 2500);
    assert_eq!(m.totals.unwrap().artifact_bytes, 2500);
}

#[test]
fn oversized_records_are_cut_into_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(EvidenceConfig {
        max_record_bytes: 4096,
        ..EvidenceConfig::at(tmp.path())
    })
    .unwrap();
    let run = store.join_session("big", "relay").unwrap();
    let huge: &'static str = Box::leak("x".repeat(100_000).into_boxed_str());
    run.append(
        Record::new(
            SafeText::literal("test"),
            RecordKind::Action(Action::new(SafeText::literal("Runtime.evaluate"))),
        )
        .error(SafeText::literal(huge)),
    )
    .unwrap();
    let bytes = fs::read(run.dir().join("actions.jsonl")).unwrap();
    assert!(bytes.split(|&b| b == b'\n').all(|l| l.len() < 4096));
    let journal = store.read_journal(run.id()).unwrap();
    assert!(journal.is_clean());
    let rec = &journal.records[1];
    assert_eq!(rec.fields_cut, 1);
    assert!(rec.error.as_deref().unwrap().contains("…[cut "));
    assert_eq!(rec.payload["method"], "Runtime.evaluate");
}

#[test]
fn producers_can_record_dropped_evidence() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_at(tmp.path());
    let run = store.join_session("m", "relay").unwrap();
    run.append(Record::new(
        SafeText::literal("observer"),
        RecordKind::Marker(Marker::evidence_dropped(17)),
    ))
    .unwrap();
    let journal = store.read_journal(run.id()).unwrap();
    assert_eq!(journal.records[1].payload["count"], 17);
    assert_eq!(journal.records[1].status.as_deref(), Some("info"));
}

fn write_run(root: &Path, id: &str, manifest: &str) {
    let dir = root.join("runs").join(id);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("manifest.json"), manifest).unwrap();
    fs::write(
        dir.join("actions.jsonl"),
        b"{\"actionId\":\"1\",\"kind\":\"x\"}\n",
    )
    .unwrap();
}

fn finalized(id: &str, started: &str) -> String {
    format!(
        r#"{{"evidenceVersion":1,"runId":"{id}","sessionId":"s","status":"finalized","startedAt":"{started}","totals":{{"records":1}}}}"#
    )
}

#[test]
fn retention_keeps_the_newest_finalized_runs_only() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Directory names deliberately do not sort like start times.
    write_run(root, "r-c", &finalized("r-c", "2024-01-01T00:00:00.000Z"));
    write_run(root, "r-a", &finalized("r-a", "2024-01-03T00:00:00.000Z"));
    write_run(root, "r-b", &finalized("r-b", "2024-01-02T00:00:00.000Z"));
    write_run(root, "r-d", &finalized("r-d", "2024-01-04T00:00:00.000Z"));
    // Same start as r-d: the id breaks the tie.
    write_run(root, "r-e", &finalized("r-e", "2024-01-04T00:00:00.000Z"));
    write_run(
        root,
        "old-running",
        r#"{"evidenceVersion":1,"status":"running","startedAt":"2020-01-01T00:00:00.000Z"}"#,
    );
    write_run(
        root,
        "legacy",
        r#"{"runId":"legacy","status":"finalized","startedAt":"2019-01-01T00:00:00.000Z"}"#,
    );
    write_run(root, "garbage", "not json");
    // Finalized, old, but a session pointer still names it (finalize crashed before unlink).
    write_run(root, "held", &finalized("held", "2018-01-01T00:00:00.000Z"));
    fs::create_dir_all(root.join("sessions")).unwrap();
    fs::write(root.join("sessions/x.active"), br#"{"runId":"held"}"#).unwrap();
    // Leftover of an interrupted prune.
    fs::create_dir_all(root.join("runs/.trash-zzz-1/artifacts")).unwrap();

    let store = store_at(root);
    let listed: Vec<String> = store
        .list_runs()
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(listed.len(), 9);
    let report = store.prune_keeping(2).unwrap();
    assert_eq!(report.kept, ["r-e", "r-d"]);
    assert_eq!(report.removed, ["r-c", "r-b", "r-a"]);
    assert_eq!(report.skipped_legacy, 2);
    assert_eq!(report.skipped_active, 2);
    assert!(report.freed_bytes > 0);
    let mut left: Vec<String> = fs::read_dir(root.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["garbage", "held", "legacy", "old-running", "r-d", "r-e"]
    );

    // Deterministic: pruning again changes nothing.
    let again = store.prune_keeping(2).unwrap();
    assert!(again.removed.is_empty());
    assert_eq!(again.kept, ["r-e", "r-d"]);
    // Keep 0 removes every finalized unheld run and nothing else.
    assert_eq!(store.prune_keeping(0).unwrap().removed, ["r-d", "r-e"]);
}

/// Holds runs whose directory has a `keep-me` file: the shape of the uploader's hold.
#[derive(Debug)]
struct KeepMarked;

impl cdp_evidence::RetentionHold for KeepMarked {
    fn holds(&self, run: &cdp_evidence::RunInfo, dir: &Path) -> bool {
        assert_eq!(dir.file_name().unwrap().to_str(), Some(run.id.as_str()));
        dir.join("keep-me").exists()
    }
}

#[test]
fn a_retention_hold_keeps_runs_and_they_do_not_count_as_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write_run(root, "r-a", &finalized("r-a", "2024-01-01T00:00:00.000Z"));
    write_run(root, "r-b", &finalized("r-b", "2024-01-02T00:00:00.000Z"));
    write_run(root, "r-c", &finalized("r-c", "2024-01-03T00:00:00.000Z"));
    fs::write(root.join("runs/r-a/keep-me"), b"").unwrap();
    fs::write(root.join("runs/r-c/keep-me"), b"").unwrap();
    let store = store_at(root).with_retention_hold(std::sync::Arc::new(KeepMarked));
    let report = store.prune_keeping(0).unwrap();
    assert_eq!(report.removed, ["r-b"]);
    assert_eq!(report.skipped_held, 2);
    assert!(report.kept.is_empty());
    // Released: the next prune deletes it.
    fs::remove_file(root.join("runs/r-a/keep-me")).unwrap();
    assert_eq!(store.prune_keeping(0).unwrap().removed, ["r-a"]);
    // Without a hold the same store configuration deletes everything finalized.
    assert_eq!(store_at(root).prune_keeping(0).unwrap().removed, ["r-c"]);
}

#[test]
fn a_listed_status_is_typed_and_another_writers_word_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_at(tmp.path());
    store
        .join_session("b", "relay")
        .unwrap()
        .finalize(Totals::default())
        .unwrap();
    write_run(
        tmp.path(),
        "newer",
        r#"{"evidenceVersion":1,"runId":"newer","status":"archived","startedAt":"2030-01-01T00:00:00Z"}"#,
    );
    let runs = store.list_runs().unwrap();
    let known = runs.iter().find(|r| r.id != "newer").unwrap();
    assert_eq!(known.status, Word::Known(RunStatus::Finalized));
    let newer = runs.iter().find(|r| r.id == "newer").unwrap();
    assert_eq!(newer.status, Word::Other("archived".to_owned()));
    assert!(!newer.legacy);
    // Listed as written, in JSON and in text.
    let json = serde_json::to_value(&runs).unwrap();
    let words: Vec<_> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert!(
        words.contains(&"finalized") && words.contains(&"archived"),
        "{words:?}"
    );
    assert_eq!(newer.status.to_string(), "archived");
    // Not finalized by this format: retention leaves it alone.
    let report = store.prune_keeping(0).unwrap();
    assert_eq!(report.removed, std::slice::from_ref(&known.id));
    assert!(tmp.path().join("runs/newer").is_dir());
}

#[test]
fn listing_shows_status_records_and_size() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_at(tmp.path());
    let a = store.join_session("a", "relay").unwrap();
    a.append(action("Page.reload", 1)).unwrap();
    let b = store.join_session("b", "relay").unwrap();
    b.finalize(Totals::default()).unwrap();
    write_run(
        tmp.path(),
        "legacy",
        r#"{"runId":"legacy","startedAt":"2019-01-01T00:00:00Z"}"#,
    );
    let runs = store.list_runs().unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0].id, "legacy", "oldest first");
    assert!(runs[0].legacy);
    assert_eq!(runs[0].status.as_str(), "unknown");
    let ra = runs.iter().find(|r| r.id == a.id()).unwrap();
    assert_eq!(
        (ra.status.as_str(), ra.records, ra.active),
        ("running", 2, true)
    );
    assert!(ra.size_bytes > 0);
    let rb = runs.iter().find(|r| r.id == b.id()).unwrap();
    assert_eq!(
        (rb.status.as_str(), rb.records, rb.active),
        ("finalized", 2, false)
    );
}

#[test]
fn append_all_writes_a_batch_in_order_and_respects_finalize() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_at(tmp.path());
    let run = store.join_session("batch", "relay").unwrap();
    let batch: Vec<Record> = (0..50).map(|n| action("Runtime.evaluate", n)).collect();
    assert_eq!(run.append_all(&batch).unwrap(), 50);
    assert_eq!(run.append_all(&[]).unwrap(), 0);
    let journal = store.read_journal(run.id()).unwrap();
    let sizes: Vec<u64> = journal
        .records
        .iter()
        .filter(|r| r.kind == "action")
        .filter_map(|r| r.payload["bytes"].as_u64())
        .collect();
    assert_eq!(sizes, (0..50).collect::<Vec<_>>());
    run.finalize(Totals::default()).unwrap();
    let refused = run.append_all(&batch).unwrap_err();
    assert!(matches!(refused, Error::RunFinalized { .. }), "{refused}");
    let disabled = Store::open(EvidenceConfig::disabled()).unwrap();
    let noop = disabled.join_session("batch", "relay").unwrap();
    assert_eq!(noop.append_all(&batch).unwrap(), 0);
}

/// A disk that fills up mid-run: appends fail (and lose nothing already written), finalize
/// fails while the disk is full and succeeds once there is space again, saying what was lost
/// exactly once however many times it was tried.
#[test]
fn a_run_whose_disk_filled_up_finalizes_once_there_is_space() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_at(tmp.path());
    let run = store.join_session("full", "relay").unwrap();
    run.append(action("Page.reload", 1)).unwrap();
    cdp_evidence::fail_writes_under(tmp.path(), true);
    let err = run.append(action("Page.reload", 2)).unwrap_err();
    assert!(err.to_string().contains("No space left"), "{err}");
    assert!(run.store_artifact("shot", "png", b"x").is_err());
    let totals = Totals {
        dropped_evidence: 7,
        dropped_recorded: 4,
        redactions: None,
    };
    assert!(run.finalize(totals.clone()).is_err());
    assert_eq!(
        store.read_manifest(run.id()).unwrap().run_status(),
        Some(RunStatus::Running)
    );
    // The markers got in, the manifest did not (a disk that freed a few bytes, then filled).
    cdp_evidence::fail_writes_under(tmp.path(), false);
    cdp_evidence::fail_writes_under(&run.dir().join("manifest.json"), true);
    assert!(run.finalize(totals.clone()).is_err());
    cdp_evidence::fail_writes_under(&run.dir().join("manifest.json"), false);
    run.finalize(totals).unwrap();
    let journal = store.read_journal(run.id()).unwrap();
    assert!(journal.is_clean());
    assert_eq!(
        markers(&journal),
        ["runStarted", "evidenceDropped", "runFinalized"],
        "the loss is said once"
    );
    let dropped = journal
        .records
        .iter()
        .find(|r| r.marker().is_some_and(|m| m == MarkerName::EvidenceDropped));
    assert_eq!(
        dropped.unwrap().payload["count"],
        3,
        "only what was not said before"
    );
    let m = store.read_manifest(run.id()).unwrap();
    assert_eq!(m.run_status(), Some(RunStatus::Finalized));
    let t = m.totals.unwrap();
    assert_eq!((t.dropped_evidence, t.records), (7, 4));
}

/// Unmounts (lazily) on drop: a failing test leaves no mount behind.
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// A small tmpfs of `kib` KiB at a fresh directory; `None` (said on stderr) when this test
/// cannot mount one (not root, no mount(8)).
fn small_tmpfs(kib: u64) -> Option<(tempfile::TempDir, Mount)> {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("SKIPPED: mounting a small tmpfs needs root (CI runs as root)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
        .arg(dir.path())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "SKIPPED: could not mount a tmpfs at {}",
            dir.path().display()
        );
        return None;
    }
    let mount = Mount(dir.path().to_path_buf());
    Some((dir, mount))
}

/// A real full disk (ENOSPC from a 512 KiB tmpfs): appends fail, the space reserve lets the run
/// finalize anyway, and the journal says what was lost. (Without the reserve, this finalize
/// fails with "short write (disk full?)".)
#[test]
fn a_real_full_disk_still_finalizes_thanks_to_the_reserve() {
    let Some((dir, _mount)) = small_tmpfs(512) else {
        return;
    };
    let store = store_at(dir.path());
    let run = store.join_session("enospc", "relay").unwrap();
    run.reserve_space(64 * 1024).unwrap();
    assert!(run.dir().join(cdp_evidence::RESERVE_FILE).is_file());
    run.append(action("Page.reload", 1)).unwrap();
    // Fill the disk to the last byte.
    let filler = dir.path().join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0u8; 4096];
    while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
    while std::io::Write::write_all(&mut f, &[0u8]).is_ok() {}
    drop(f);
    let mut lost = 0;
    for i in 0..50 {
        if run.append(action("Runtime.evaluate", i)).is_err() {
            lost += 1;
        }
    }
    assert!(lost > 0, "the disk is full");
    run.finalize(Totals {
        dropped_evidence: lost,
        dropped_recorded: 0,
        redactions: None,
    })
    .unwrap();
    assert!(!run.dir().join(cdp_evidence::RESERVE_FILE).exists());
    let m = store.read_manifest(run.id()).unwrap();
    assert_eq!(m.run_status(), Some(RunStatus::Finalized));
    assert_eq!(m.totals.unwrap().dropped_evidence, lost);
    let journal = store.read_journal(run.id()).unwrap();
    assert!(journal.is_clean());
    assert_eq!(
        journal.torn_tail, None,
        "a failed append leaves no torn tail"
    );
    let dropped = journal
        .records
        .iter()
        .find(|r| r.marker().is_some_and(|m| m == MarkerName::EvidenceDropped));
    assert_eq!(dropped.unwrap().payload["count"], lost);
}

/// The journal budget in one process: data refused past it, metadata kept, one marker.
#[test]
fn past_the_journal_budget_only_metadata_is_appended() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(EvidenceConfig {
        journal_budget_bytes: 64 * 1024,
        ..EvidenceConfig::at(tmp.path())
    })
    .unwrap();
    let run = store.join_session("cap", "relay").unwrap();
    let lifecycle = |n| {
        Record::new(
            SafeText::literal("t"),
            RecordKind::Lifecycle(cdp_evidence::Lifecycle::new(
                cdp_evidence::LifecycleEvent::ClientConnected,
                n,
            )),
        )
    };
    let mut appended = 0;
    for i in 0..1000 {
        appended += run.append_all(&[action("Page.reload", i)]).unwrap();
    }
    assert!(appended > 100 && appended < 1000, "{appended}");
    run.append(lifecycle(1)).unwrap();
    run.append(Record::new(
        SafeText::literal("t"),
        RecordKind::Marker(Marker::evidence_dropped(2)),
    ))
    .unwrap();
    assert_eq!(run.append_all(&[action("Page.reload", 0)]).unwrap(), 0);
    run.finalize(Totals::default()).unwrap();
    let journal = store.read_journal(run.id()).unwrap();
    assert_eq!(
        markers(&journal),
        [
            "runStarted",
            "journalTruncated",
            "evidenceDropped",
            "runFinalized"
        ]
    );
    assert_eq!(
        journal
            .records
            .iter()
            .filter(|r| r.kind == "lifecycle")
            .count(),
        1
    );
    let truncated = journal.records.iter().find(|r| {
        r.marker()
            .is_some_and(|m| m == MarkerName::JournalTruncated)
    });
    assert_eq!(truncated.unwrap().payload["budgetBytes"], 64 * 1024);
    let t = store.read_manifest(run.id()).unwrap().truncation.unwrap();
    assert!(t.journal_truncated);
    assert_eq!(t.refused_records["action"], 1001 - appended as u64);
    let size = std::fs::metadata(run.dir().join("actions.jsonl"))
        .unwrap()
        .len();
    assert!(size < 64 * 1024 + 4096, "{size}");
}
