//! Evidence to object storage, against a real S3-protocol server (`s3s-fs` with SigV4, in
//! process): runs arrive whole with the manifest last, large files in parts; a server killed in
//! the middle of an upload loses nothing; a relay stopped before its upload finished uploads
//! the run at its next start, and retention never prunes a run before it is in the bucket; a
//! bucket that cannot be written stops the relay from starting, with one line, in bounded time;
//! requests are retried by the store client alone, exactly as its policy says.

use cdp_evidence::{
    Console, ConsoleLevel, EvidenceConfig, Record, RecordKind, RetentionHold, Store, Totals,
};
use cdp_relay::upload::{
    self, Attempt, RunOptions, Target, UploadHold, UploadState, Uploader, BACKOFF_MAX, MAX_RETRIES,
    RETRY_WINDOW,
};
use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::s3::S3Server;
use cdp_relay_tests::{page_ws, relay_binary, within, Chromium, RelayProcess};
use cdp_sanitize::{SafeText, Sanitizer};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BUCKET: &str = "evidence";
const URL: &str = "s3://evidence/fleet";

/// Settings for the in-process server whose uploader scans the evidence root every second, so
/// that a test sees a failed run tried again without waiting out the default minute.
fn quick_scans(server: &S3Server) -> cdp_relay::UploadSettings {
    let mut s = server.settings(URL);
    s.scan_interval = Duration::from_secs(1);
    s
}

fn opts(only_failed: bool) -> RunOptions {
    RunOptions {
        only_failed,
        host: "test-host".into(),
        source: "test",
    }
}

/// A finalized, rendered run with `artifacts` of the given sizes; one console error when
/// `failed`.
fn make_run(root: &Path, session: &str, artifacts: &[usize], failed: bool) -> PathBuf {
    let store = Store::open(EvidenceConfig::at(root)).expect("store");
    let run = store.join_session(session, "relay").expect("run");
    if failed {
        let text = Sanitizer::new().text("TypeError: boom");
        run.append(Record::new(
            SafeText::literal("app"),
            RecordKind::Console(Console::new(ConsoleLevel::Error, text)),
        ))
        .expect("append");
    }
    for (i, size) in artifacts.iter().enumerate() {
        // Not an image the report would embed; the uploader does not care.
        let bytes: Vec<u8> = (0..*size).map(|n| (n * 31 + i) as u8).collect();
        run.store_artifact("blob", "bin", &bytes).expect("artifact");
    }
    run.finalize(Totals::default()).expect("finalize");
    cdp_report::render(run.dir()).expect("render");
    run.dir().to_path_buf()
}

/// Files a whole upload carries: everything in the run but locks, the upload sidecar and
/// temporary files (an uploader may be rewriting its sidecar right now).
fn local_files(run_dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(run_dir).expect("read run").flatten() {
        let name = e.file_name().into_string().expect("utf-8");
        if name == "artifacts" {
            for a in std::fs::read_dir(e.path())
                .expect("read artifacts")
                .flatten()
            {
                let n = a.file_name().into_string().expect("utf-8");
                out.push((
                    format!("artifacts/{n}"),
                    std::fs::read(a.path()).expect("read"),
                ));
            }
        } else if !name.ends_with(".lock") && name != upload::STATE_FILE && !name.starts_with('.') {
            out.push((name, std::fs::read(e.path()).expect("read")));
        }
    }
    out.sort();
    out
}

fn run_id(dir: &Path) -> String {
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

/// Asserts the bucket holds the run whole: every local file byte for byte, nothing else, and
/// a manifest that is the local one plus its `upload` member listing them.
fn assert_whole(server: &S3Server, run_dir: &Path) -> serde_json::Value {
    let id = run_id(run_dir);
    let prefix = format!("fleet/{id}/");
    let objects: Vec<(String, Vec<u8>)> = server
        .objects(BUCKET)
        .into_iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?.to_owned(), v)))
        .collect();
    let local = local_files(run_dir);
    let uploaded: Vec<&(String, Vec<u8>)> = objects
        .iter()
        .filter(|(k, _)| k != "manifest.json")
        .collect();
    let expected: Vec<&(String, Vec<u8>)> =
        local.iter().filter(|(k, _)| k != "manifest.json").collect();
    assert_eq!(
        uploaded.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        expected.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        "the bucket holds other files than the run"
    );
    for ((k, got), (_, want)) in uploaded.iter().zip(&expected) {
        assert!(
            got == want,
            "{k} differs in the bucket ({} vs {} bytes)",
            got.len(),
            want.len()
        );
    }
    let manifest = objects
        .iter()
        .find(|(k, _)| k == "manifest.json")
        .map(|(_, v)| serde_json::from_slice::<serde_json::Value>(v).expect("manifest json"))
        .expect("the manifest is in the bucket");
    let local_manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap();
    for (k, v) in local_manifest.as_object().unwrap() {
        assert_eq!(&manifest[k], v, "manifest field {k}");
    }
    let listed: Vec<(String, u64)> = manifest["upload"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = expected
        .iter()
        .map(|(k, v)| (k.clone(), v.len() as u64))
        .collect();
    assert_eq!(listed, want);
    manifest
}

fn manifest_in_bucket(server: &S3Server, run_dir: &Path) -> bool {
    server
        .object_path(BUCKET, &format!("fleet/{}/manifest.json", run_id(run_dir)))
        .exists()
}

#[tokio::test]
async fn a_run_arrives_whole_with_large_files_in_parts_and_the_manifest_last() {
    within("upload", async {
        let server = S3Server::start(&[BUCKET]);
        let evidence = tempfile::tempdir().unwrap();
        // 12 MiB goes in three parts; the others in one request each.
        let dir = make_run(evidence.path(), "s", &[12 << 20, 3000, 10], true);
        let target = Target::new(&server.settings(URL)).unwrap();
        let before = server.puts_seen();
        let attempt = upload::upload_run(&target, &dir, &opts(false))
            .await
            .unwrap();
        let Attempt::Done(state) = attempt else {
            panic!("{attempt:?}")
        };
        assert_eq!(state.state, UploadState::Uploaded);
        assert_eq!(state.failures, Some(1));
        let files = local_files(&dir).len() as u64;
        assert_eq!(state.files, Some(files));
        let manifest = assert_whole(&server, &dir);
        assert_eq!(manifest["upload"]["host"], "test-host");
        assert_eq!(manifest["upload"]["failures"], 1);
        // One request per small file and the manifest, three parts for the large one.
        assert_eq!(server.puts_seen() - before, (files as usize - 1) + 3);
        // The sidecar says so, and a second attempt does nothing.
        let st = upload::read_state(&dir).unwrap().unwrap();
        assert_eq!(st.state, UploadState::Uploaded);
        assert_eq!(st.target, format!("{URL}/{}/", run_id(&dir)));
        let puts = server.puts_seen();
        assert!(matches!(
            upload::upload_run(&target, &dir, &opts(false)).await.unwrap(),
            Attempt::AlreadyDone(s) if s.state == UploadState::Uploaded
        ));
        assert_eq!(server.puts_seen(), puts);
        // Listed and fetched back from the bucket.
        let listing = upload::list_runs(&target, 10, None).await.unwrap();
        assert_eq!(listing.runs.len(), 1);
        assert_eq!(listing.runs[0].id, run_id(&dir));
        assert_eq!(listing.runs[0].failures, Some(1));
        assert_eq!(listing.runs[0].session_id.as_deref(), Some("s"));
        let out = tempfile::tempdir().unwrap();
        let fetched = upload::fetch_run(&target, &run_id(&dir), out.path())
            .await
            .unwrap();
        // Everything but what the renderer derives (`report --remote` renders it from the
        // journal: a bucket's page is never trusted).
        assert_eq!(
            local_files(&fetched),
            local_files(&dir)
                .into_iter()
                .filter(|(k, _)| k != "report.html" && k != "summary.md")
                .map(|(k, v)| {
                    if k == "manifest.json" {
                        (
                            k,
                            serde_json::to_vec_pretty(&manifest)
                                .map(|mut b| {
                                    b.push(b'\n');
                                    b
                                })
                                .unwrap(),
                        )
                    } else {
                        (k, v)
                    }
                })
                .collect::<Vec<_>>()
        );
    })
    .await;
}

#[tokio::test]
async fn only_failed_runs_are_uploaded_when_asked_and_skipped_runs_may_be_pruned() {
    within("only failed", async {
        let server = S3Server::start(&[BUCKET]);
        let evidence = tempfile::tempdir().unwrap();
        let clean = make_run(evidence.path(), "clean", &[100], false);
        let failed = make_run(evidence.path(), "failed", &[100], true);
        let target = Target::new(&server.settings(URL)).unwrap();
        for (dir, want) in [
            (&clean, UploadState::Skipped),
            (&failed, UploadState::Uploaded),
        ] {
            match upload::upload_run(&target, dir, &opts(true)).await.unwrap() {
                Attempt::Done(s) => assert_eq!(s.state, want),
                other => panic!("{other:?}"),
            }
        }
        assert!(!manifest_in_bucket(&server, &clean));
        assert!(server
            .objects(BUCKET)
            .iter()
            .all(|(k, _)| !k.contains(&run_id(&clean))));
        assert_whole(&server, &failed);
        let store = Store::open(EvidenceConfig::at(evidence.path()))
            .unwrap()
            .with_retention_hold(Arc::new(UploadHold { uploads_on: true }));
        let report = store.prune_keeping(0).unwrap();
        assert_eq!(report.removed.len(), 2, "{report:?}");
    })
    .await;
}

#[tokio::test]
async fn a_server_killed_mid_upload_loses_nothing_and_the_run_arrives_whole_after_restart() {
    within("kill mid-upload", async {
        let server = S3Server::start(&[BUCKET]);
        let evidence = tempfile::tempdir().unwrap();
        let dir = make_run(
            evidence.path(),
            "s",
            &[2000, 2000, 2000, 2000, 2000, 2000],
            true,
        );
        let uploader = Uploader::start(&quick_scans(&server), evidence.path()).unwrap();
        uploader.check().await.expect("the bucket takes writes");
        let handle = uploader.handle();
        server.stall_puts_after(3);
        uploader.finalized(&dir);
        server.stalled().await;
        server.stop();
        // Failed, waiting for the next scan: the manifest is not in the bucket.
        loop {
            if handle.status().failing == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            !manifest_in_bucket(&server, &dir),
            "a partial run has a manifest"
        );
        // Writes were under way when it died (whether they completed is the server's affair).
        assert!(server.puts_seen() >= 4, "{}", server.puts_seen());
        let st = upload::read_state(&dir).unwrap().unwrap();
        assert_eq!(st.state, UploadState::Failed);
        assert!(st.last_error.is_some());
        let status = handle.status();
        assert_eq!(status.pending, 1);
        assert_eq!(status.runs[0].run_id, run_id(&dir));
        // Retention keeps it, even asked to keep nothing.
        let store = Store::open(EvidenceConfig::at(evidence.path()))
            .unwrap()
            .with_retention_hold(Arc::new(UploadHold { uploads_on: true }));
        let report = store.prune_keeping(0).unwrap();
        assert!(
            report.removed.is_empty() && report.skipped_held == 1,
            "{report:?}"
        );
        assert!(dir.exists());

        server.restart();
        loop {
            if handle.status().uploaded_runs == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_whole(&server, &dir);
        let report = uploader
            .finish(Instant::now() + Duration::from_secs(5))
            .await;
        assert!(report.left.is_empty(), "{report:?}");
        // Only now may retention take the local copy.
        let report = store.prune_keeping(0).unwrap();
        assert_eq!(report.removed, [run_id(&dir)]);
    })
    .await;
}

/// A relay stopped while its upload is stuck exits within its grace, leaves the run pending
/// and kept; its next start uploads it.
#[tokio::test]
async fn a_relay_stopped_mid_upload_uploads_the_run_at_its_next_start() {
    within("relay restart", async {
        let server = S3Server::start(&[BUCKET]);
        let chrome = Chromium::start().await;
        let evidence = tempfile::tempdir().unwrap();
        let dir = evidence.path().to_string_lossy().into_owned();
        let upstream = chrome.http();
        let args = [
            "serve",
            "--upstream",
            &upstream,
            "--listen",
            "127.0.0.1:0",
            "--evidence-dir",
            &dir,
            "--evidence-upload",
            URL,
            "--shutdown-grace",
            "4",
        ];
        let env = server.env();
        let env: Vec<(&str, &OsStr)> = env
            .iter()
            .map(|(k, v)| (k.as_str(), OsStr::new(v.as_str())))
            .collect();
        let relay = RelayProcess::spawn(&args, &env).await;
        // Something worth a report: a console error through the relay.
        let mut cdp = Cdp::connect(&page_ws(&relay.authority()).await).await;
        cdp.call("Runtime.enable", serde_json::json!({})).await;
        cdp.call(
            "Runtime.evaluate",
            serde_json::json!({"expression": "console.error('boom')"}),
        )
        .await;
        drop(cdp);
        let status = cdp_relay_tests::http::get(&relay.authority(), "/relay/v1/status")
            .await
            .json();
        assert_eq!(status["uploads"]["target"], URL, "{status}");
        let first = PathBuf::from(status["evidence"]["runDir"].as_str().unwrap());
        server.stall_puts_after(1);
        let t0 = Instant::now();
        let stderr = relay.stop().await;
        assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
        assert!(
            stderr.contains("not uploaded before the shutdown grace ran out"),
            "{stderr}"
        );
        assert!(!manifest_in_bucket(&server, &first));

        // Pending, listed as such, and kept by a prune that knows about uploads.
        let none: [(&str, &str); 0] = [];
        let runs = cli(&["runs", "--evidence-dir", &dir], &none).await;
        assert!(runs.contains("upload-pending"), "{runs}");
        let pruned = cli(
            &["prune", "--evidence-dir", &dir, "--keep", "0"],
            &[("CDP_RELAY_EVIDENCE_UPLOAD", URL)],
        )
        .await;
        assert!(pruned.contains("pruned 0 run(s)"), "{pruned}");
        assert!(first.exists());

        server.stop();
        server.restart();
        let relay = RelayProcess::spawn(&args, &env).await;
        loop {
            if manifest_in_bucket(&server, &first) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_whole(&server, &first);
        let stderr = relay.stop().await;
        assert!(stderr.contains("uploaded"), "{stderr}");
        let runs = cli(&["runs", "--evidence-dir", &dir, "--json"], &none).await;
        let runs: serde_json::Value = serde_json::from_str(&runs).unwrap();
        for r in runs.as_array().unwrap() {
            assert_eq!(r["upload"]["state"], "uploaded", "{r}");
        }
        assert_eq!(runs.as_array().unwrap().len(), 2);
        // Both in the bucket: both may go.
        let pruned = cli(
            &["prune", "--evidence-dir", &dir, "--keep", "0"],
            &[("CDP_RELAY_EVIDENCE_UPLOAD", URL)],
        )
        .await;
        assert!(pruned.contains("pruned 2 run(s)"), "{pruned}");
        // And the bucket lists them, newest first, from any machine.
        let listed = cli(&["runs", "--remote", URL, "--json"], &server.env()).await;
        let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
        assert_eq!(listed[1]["id"], run_id(&first));
        assert_eq!(listed[1]["failures"], 1, "{listed}");
    })
    .await;
}

/// Runs the binary to completion; returns stdout, panics with stderr on failure.
async fn cli<K: AsRef<OsStr>, V: AsRef<OsStr>>(args: &[&str], env: &[(K, V)]) -> String {
    let out = run_binary(args, env).await;
    assert!(
        out.status.success(),
        "cdp-relay {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn run_binary<K: AsRef<OsStr>, V: AsRef<OsStr>>(
    args: &[&str],
    env: &[(K, V)],
) -> std::process::Output {
    let mut cmd = tokio::process::Command::new(relay_binary());
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .env_remove("CDP_RELAY_EVIDENCE_UPLOAD");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().await.expect("run cdp-relay")
}

/// Bad credentials, a bucket that does not exist, an endpoint that accepts and never answers:
/// the relay refuses to start, with one line, in bounded time, and never echoes a secret.
#[tokio::test]
async fn a_bucket_that_cannot_be_written_stops_the_relay_from_starting() {
    within("refusals", async {
        let server = S3Server::start(&[BUCKET]);
        let chrome = Chromium::start().await;
        // Accepts connections (the kernel does) and never reads or answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let silent_url = format!("http://{}", silent.local_addr().unwrap());
        let wrong_secret = "wrong-secret-never-echoed-0123456789";
        let bad_creds = server.env_with(cdp_relay_tests::s3::ACCESS_KEY, wrong_secret);
        let mut silent_env = server.env();
        for (k, v) in silent_env.iter_mut() {
            if k == "AWS_ENDPOINT_URL" {
                v.clone_from(&silent_url);
            }
        }
        let cases = [
            (
                "bad credentials",
                URL.to_owned(),
                bad_creds,
                "access denied",
            ),
            (
                "no such bucket",
                "s3://no-such-bucket/fleet".to_owned(),
                server.env(),
                "not found",
            ),
            (
                "silent endpoint",
                URL.to_owned(),
                silent_env,
                "no answer within 10 s",
            ),
        ];
        let upstream = chrome.http();
        let runs = cases.iter().map(|(what, url, env, _)| {
            let upstream = upstream.clone();
            async move {
                let evidence = tempfile::tempdir().unwrap();
                let dir = evidence.path().to_string_lossy().into_owned();
                let t0 = Instant::now();
                let out = run_binary(
                    &[
                        "serve",
                        "--upstream",
                        &upstream,
                        "--listen",
                        "127.0.0.1:0",
                        "--evidence-dir",
                        &dir,
                        "--evidence-upload",
                        url,
                    ],
                    env,
                )
                .await;
                (*what, t0.elapsed(), out)
            }
        });
        let results = futures_util::future::join_all(runs).await;
        for ((what, took, out), (_, _, _, expect)) in results.iter().zip(&cases) {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
            assert!(out.stdout.is_empty(), "{what}: printed an endpoint");
            assert!(*took < Duration::from_secs(30), "{what} took {took:?}");
            let errors: Vec<&str> = stderr
                .lines()
                .filter(|l| l.starts_with("cdp-relay: "))
                .collect();
            assert_eq!(errors.len(), 1, "{what}: {stderr}");
            assert!(
                errors[0].contains("evidence upload to s3://"),
                "{what}: {}",
                errors[0]
            );
            assert!(errors[0].contains(expect), "{what}: {}", errors[0]);
            assert!(
                !stderr.contains(wrong_secret),
                "{what}: the secret was echoed"
            );
            assert!(
                !stderr.contains(cdp_relay_tests::s3::SECRET_KEY),
                "{what}: the secret was echoed"
            );
        }
        drop(silent);
    })
    .await;
}

#[test]
fn the_hold_is_what_retention_asks() {
    // Without uploads configured, a run with no sidecar is free to go; a pending one is not.
    let evidence = tempfile::tempdir().unwrap();
    let dir = make_run(evidence.path(), "s", &[], false);
    let store = Store::open(EvidenceConfig::at(evidence.path())).unwrap();
    let info = store.list_runs().unwrap().remove(0);
    assert!(!UploadHold { uploads_on: false }.holds(&info, &dir));
    assert!(UploadHold { uploads_on: true }.holds(&info, &dir));
}

/// A producer that finalizes with the CLI uploads too; when the bucket is down the run stays
/// local and pending (a warning, not a failed finalize), and `cdp-relay upload` sends it later.
#[tokio::test]
async fn cli_producers_upload_at_finalize_and_upload_sends_what_is_pending() {
    within("cli uploads", async {
        let server = S3Server::start(&[BUCKET]);
        let evidence = tempfile::tempdir().unwrap();
        let dir = evidence.path().to_string_lossy().into_owned();
        let mut env = server.env();
        env.push(("CDP_RELAY_EVIDENCE_UPLOAD".into(), URL.into()));
        let line = r#"{"tool":"adb","kind":"console","payload":{"level":"error","text":"device crashed"}}"#;
        let append = |session: &'static str| {
            let dir = dir.clone();
            async move {
                let mut child = tokio::process::Command::new(relay_binary())
                    .args(["evidence", "append", "--session", session, "--evidence-dir", &dir])
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .unwrap();
                use tokio::io::AsyncWriteExt;
                let mut stdin = child.stdin.take().unwrap();
                stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
                drop(stdin);
                let out = child.wait_with_output().await.unwrap();
                assert!(out.status.success());
                String::from_utf8_lossy(&out.stdout).trim().to_owned()
            }
        };
        // Bucket up: finalize uploads.
        let up = append("device-a").await;
        let out = run_binary(&["evidence", "finalize", "--session", "device-a", "--evidence-dir", &dir], &env).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains(&format!("uploaded {up}")), "{stderr}");
        assert_whole(&server, &evidence.path().join("runs").join(&up));

        // Bucket down: finalized, pending, said so.
        let down = append("device-b").await;
        server.stop();
        let out = run_binary(&["evidence", "finalize", "--session", "device-b", "--evidence-dir", &dir], &env).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), down);
        assert!(stderr.contains("finalized but not uploaded"), "{stderr}");
        let pending = evidence.path().join("runs").join(&down);
        let st = upload::read_state(&pending).unwrap().unwrap();
        assert_eq!(st.state, UploadState::Failed);
        assert!(!manifest_in_bucket(&server, &pending));

        // Back up: `cdp-relay upload` sends what is pending, and only that.
        server.restart();
        let out = run_binary(&["upload", "--evidence-dir", &dir], &env).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        assert!(stdout.starts_with(&format!("uploaded {down} to {URL}/{down}/")), "{stdout}");
        assert_whole(&server, &pending);
        let out = run_binary(&["upload", "--evidence-dir", &dir], &env).await;
        assert!(out.status.success() && out.stdout.is_empty());
        assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to upload"));
    })
    .await;
}

/// A small tmpfs mounted for one test, unmounted on drop (even when the test fails).
struct TinyDisk {
    dir: tempfile::TempDir,
}

impl TinyDisk {
    fn mount(size: &str) -> TinyDisk {
        let dir = tempfile::tempdir().expect("mount point");
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("run mount");
        assert!(ok.success(), "mounting a tmpfs needs root");
        TinyDisk { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes until the disk says it is full.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.path().join("filler")).expect("filler");
        let chunk = vec![7u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.flush();
        assert!(
            std::fs::write(self.path().join("probe"), b"x").is_err(),
            "the disk is full"
        );
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// A full evidence disk does not stop uploads: runs whose upload failed while the bucket was
/// down are uploaded once it is back, though no upload state can be written meanwhile.
#[tokio::test]
async fn a_full_evidence_disk_does_not_stop_uploads() {
    within("uploads on a full disk", async {
        let disk = TinyDisk::mount("2m");
        let root = disk.path().join("evidence");
        let runs: Vec<PathBuf> = (0..3)
            .map(|i| make_run(&root, &format!("s{i}"), &[2000], true))
            .collect();
        let server = S3Server::start(&[BUCKET]);
        server.stop();
        disk.fill();
        let uploader = Uploader::start(&quick_scans(&server), &root).expect("uploader");
        let status = uploader.handle();
        uploader.scan();
        // Every run fails at least once against the stopped server.
        while status.status().failed_attempts < 3 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(runs.iter().all(|r| !manifest_in_bucket(&server, r)));
        server.restart();
        while !runs.iter().all(|r| manifest_in_bucket(&server, r)) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for r in &runs {
            assert_whole(&server, r);
        }
        assert!(
            std::fs::write(disk.path().join("probe"), b"x").is_err(),
            "the disk stayed full throughout"
        );
        // Once there is room again, the uploader records what it did, so retention may prune.
        std::fs::remove_file(disk.path().join("filler")).unwrap();
        while !runs.iter().all(
            |r| matches!(upload::read_state(r), Ok(Some(s)) if s.state == UploadState::Uploaded),
        ) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let report = uploader
            .finish(Instant::now() + Duration::from_secs(5))
            .await;
        assert!(report.left.is_empty(), "{:?}", report.left);
    })
    .await;
}

/// One retry policy, the store client's: `cdp-relay upload` against a server that answers
/// `503 SlowDown` a few times uploads the run in one attempt; against one that always does, it
/// gives up with one line, within the policy's bound, after exactly [`MAX_RETRIES`] retries of
/// a request: no loop above the store client tries again.
#[tokio::test]
async fn a_throttled_store_is_retried_by_the_store_client_alone() {
    within("one retry policy", async {
        let server = S3Server::start(&[BUCKET]);
        let evidence = tempfile::tempdir().unwrap();
        let dir = evidence.path().to_string_lossy().into_owned();
        let mut env = server.env();
        env.push(("CDP_RELAY_EVIDENCE_UPLOAD".into(), URL.into()));

        // Refused a few times: ridden out within one attempt.
        let first = make_run(evidence.path(), "a", &[100, 200], true);
        server.fail_puts(MAX_RETRIES);
        let out = run_binary(&["upload", "--evidence-dir", &dir, "--attempts", "3"], &env).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("--attempts is ignored"), "{stderr}");
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        assert!(
            stdout.starts_with(&format!("uploaded {}", run_id(&first))),
            "{stdout}"
        );
        assert_whole(&server, &first);
        let st = upload::read_state(&first).unwrap().unwrap();
        assert_eq!(st.attempts, 1, "the retries were the store client's");
        let objects = local_files(&first).len();
        let tries: usize = server.put_tries_by_key().values().sum();
        assert_eq!(
            tries,
            objects + MAX_RETRIES,
            "{:?}",
            server.put_tries_by_key()
        );

        // Refused every time: one line, in bounded time, each request tried 1 + MAX_RETRIES times.
        let second = make_run(evidence.path(), "b", &[100, 200], true);
        let id = run_id(&second);
        server.fail_puts(usize::MAX);
        let t0 = Instant::now();
        let out = run_binary(&["upload", "--evidence-dir", &dir], &env).await;
        let took = t0.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(
            lines[0].starts_with(&format!("cdp-relay: run {id} not uploaded: ")),
            "{stderr}"
        );
        assert!(lines[0].contains("503"), "{stderr}");
        // Every wait of the policy (3.75 s at most) and a request answered at once: well inside
        // the bound a request is given before its last retry.
        assert!(took < RETRY_WINDOW + BACKOFF_MAX, "{took:?}");
        let tries: Vec<usize> = server
            .put_tries_by_key()
            .into_iter()
            .filter(|(k, _)| k.contains(&id))
            .map(|(_, n)| n)
            .collect();
        assert!(!tries.is_empty());
        assert_eq!(tries.iter().max(), Some(&(1 + MAX_RETRIES)), "{tries:?}");
        let st = upload::read_state(&second).unwrap().unwrap();
        assert_eq!((st.state, st.attempts), (UploadState::Failed, 1));
        assert!(st.last_error.unwrap().contains("503"));
        assert!(!manifest_in_bucket(&server, &second));
    })
    .await;
}

/// The relay's uploader retries nothing itself: a run whose attempt failed (after the store
/// client's retries) stays failed until a scan finds it, and that scan uploads it whole.
#[tokio::test]
async fn the_uploader_leaves_a_failed_run_to_the_next_scan() {
    within("failed run, next scan", async {
        let server = S3Server::start(&[BUCKET]);
        let evidence = tempfile::tempdir().unwrap();
        let dir = make_run(evidence.path(), "s", &[100], true);
        // The default minute between scans: no scan comes by itself during this test.
        let uploader = Uploader::start(&server.settings(URL), evidence.path()).unwrap();
        let handle = uploader.handle();
        server.fail_puts(usize::MAX);
        uploader.finalized(&dir);
        while handle.status().failing == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let status = handle.status();
        assert_eq!((status.failed_attempts, status.runs[0].attempts), (1, 1));
        let tries = server.put_tries_by_key();
        assert_eq!(tries.values().max(), Some(&(1 + MAX_RETRIES)), "{tries:?}");
        assert!(!manifest_in_bucket(&server, &dir));

        server.fail_puts(0);
        uploader.scan();
        while handle.status().uploaded_runs == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_whole(&server, &dir);
        assert_eq!(handle.status().failed_attempts, 1);
        let st = upload::read_state(&dir).unwrap().unwrap();
        assert_eq!((st.state, st.attempts), (UploadState::Uploaded, 2));
        let report = uploader
            .finish(Instant::now() + Duration::from_secs(5))
            .await;
        assert!(report.left.is_empty(), "{report:?}");
    })
    .await;
}
