//! `cdp-relay export`: the spec on stdout or in `--out FILE`, the same bytes either way; a step
//! that cannot be replayed fails the test there, or with `--allow-gaps` marks it fixme; a run
//! still being recorded is said on stderr and in the spec; and one-line errors (exit 64 for a
//! usage error, 1 for a run that is not there).

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_cdp-relay");
const RUN: &str = "20261203T220229765Z-09442d7b50257d27";

fn export(root: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("export")
        .args(args)
        .arg("--evidence-dir")
        .arg(root)
        .env_remove("CDP_RELAY_EVIDENCE_DIR")
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A finalized run with a navigation and a typing step into a labelled field.
fn run(root: &Path) -> std::path::PathBuf {
    run_with(root, "finalized", &[])
}

/// A run of `status` with a navigation, a typing step into a labelled field, and `more` payloads.
fn run_with(root: &Path, status: &str, more: &[&str]) -> std::path::PathBuf {
    let dir = root.join("runs").join(RUN);
    std::fs::create_dir_all(dir.join("artifacts")).unwrap();
    std::fs::write(
        dir.join("manifest.json"),
        format!(
            r#"{{"evidenceVersion":1,"runId":"{RUN}","sessionId":"s","actionLog":"actions.jsonl","status":"{status}","startedAt":"2026-12-03T22:02:29.765Z"}}"#
        ),
    )
    .unwrap();
    let record = |i: u32, payload: &str, url: &str| {
        format!(
            r#"{{"actionId":"1796335350{i:03}-0000000001-{i:010}-00000000","kind":"action","source":"relay","tool":"cdp","sessionId":"s","startedAt":"2026-12-03T22:02:30.{i:03}Z","durationMs":1,"status":"ok","artifacts":[],"payload":{payload},"target":{{"targetId":"target:0123456789ab","url":"{url}"}}}}"#
        )
    };
    let mut journal = vec![
        record(
            1,
            r#"{"method":"Page.navigate","url":"https://shop.test/login"}"#,
            "about:blank",
        ),
        record(
            2,
            r#"{"method":"type","input":{"chars":9,"inputType":"password","variable":"SHOP_PASSWORD"},"target":{"label":"Password"}}"#,
            "https://shop.test/login",
        ),
    ];
    for (i, payload) in more.iter().enumerate() {
        journal.push(record(3 + i as u32, payload, "https://shop.test/login"));
    }
    let journal = journal.join("\n") + "\n";
    std::fs::write(dir.join("actions.jsonl"), journal).unwrap();
    dir
}

#[test]
fn export_writes_the_spec_to_stdout_or_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run(tmp.path());
    let out = export(tmp.path(), &[RUN]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let spec = text(&out.stdout);
    assert!(spec.contains("from '@playwright/test'"), "{spec}");
    assert!(
        spec.contains("await page.goto(BASE_URL + '/login');"),
        "{spec}"
    );
    assert!(
        spec.contains(
            "await page.getByLabel('Password').fill(await typed('SHOP_PASSWORD', 'the password typed at step 2'));"
        ),
        "{spec}"
    );
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("2 steps exported"), "{err}");

    let file = tmp.path().join("replay.spec.ts");
    let out = export(
        tmp.path(),
        &[
            &dir.to_string_lossy(),
            "--format",
            "playwright",
            "--out",
            &file.to_string_lossy(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), spec);
}

#[test]
fn a_gap_fails_the_test_there_unless_gaps_are_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    run_with(
        tmp.path(),
        "finalized",
        &[r#"{"method":"Page.navigate","url":"javascript:alert(document.cookie)"}"#],
    );
    let out = export(tmp.path(), &[RUN]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let spec = text(&out.stdout);
    assert!(
        spec.contains("  gap('step 3, navigate to javascript:"),
        "{spec}"
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("3 steps exported, 1 of them not replayable (the test fails at step 3; --allow-gaps marks it fixme there)"),
        "{err}"
    );
    let out = export(tmp.path(), &[RUN, "--allow-gaps"]);
    let spec = text(&out.stdout);
    assert!(
        spec.contains("  test.fixme(true, 'step 3, navigate to javascript:"),
        "{spec}"
    );
    assert!(text(&out.stderr).contains("the test stops as fixme at step 3"));
}

#[test]
fn a_run_still_being_recorded_is_said_on_stderr_and_in_the_spec() {
    let tmp = tempfile::tempdir().unwrap();
    run_with(tmp.path(), "running", &[]);
    let out = export(tmp.path(), &[RUN]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 2, "{err}");
    let still = err.lines().nth(1).unwrap();
    assert!(
        still.starts_with("cdp-relay: the run is still being recorded"),
        "{err}"
    );
    // One line of prose: no run of spaces left from wrapping the source.
    assert!(!still.contains("  "), "{still:?}");
    assert!(text(&out.stdout).contains("// The run was still being recorded when it was exported"));
}

#[test]
fn export_errors_are_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, code) in [
        (&["../etc"][..], 64),
        (&["no-such-run"], 1),
        (&[RUN, "--format", "cypress"], 2),
    ] {
        let out = export(tmp.path(), args);
        let err = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        if code != 2 {
            assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // A directory that is not a run.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = export(tmp.path(), &[&empty.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("not an evidence run"), "{err}");
}
