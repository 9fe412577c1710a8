//! A fleet on one box: four `cdp-relay launch` processes, each with its own Chromium and its own
//! evidence directory, each driven by a Playwright agent flow that plants secrets, stopped
//! together (SIGTERM) so they finalize and upload concurrently into one bucket. Then from
//! "another machine" (the CLI with only the bucket URL): four whole runs listed, one fetched
//! and its report opened — and every byte in the bucket searched for every planted value.

use cdp_relay_tests::files::{all_files, leaks};
use cdp_relay_tests::http::get;
use cdp_relay_tests::planted::{planted, site_routes, sweep_config, ENV_SECRET};
use cdp_relay_tests::s3::S3Server;
use cdp_relay_tests::site::Site;
use cdp_relay_tests::{relay_binary, run_node_client, within, RelayProcess};
use std::ffi::OsStr;
use std::time::Duration;

const RELAYS: usize = 4;
const BUCKET: &str = "fleet";
const URL: &str = "s3://fleet/prod/runs";

#[tokio::test]
async fn four_relays_upload_whole_runs_to_one_bucket_and_nothing_planted_is_in_it() {
    // Four browsers and four Playwright flows on two cores: give it room, still bounded.
    let guard = Duration::from_secs(240);
    let done = tokio::time::timeout(guard, fleet()).await;
    assert!(done.is_ok(), "the fleet test took longer than {guard:?}");
}

async fn fleet() {
    let server = S3Server::start(&[BUCKET]);
    let site = Site::start(site_routes()).await;
    let mut env: Vec<(String, String)> = server.env();
    env.push(("SWEEP_ENV_SECRET".into(), ENV_SECRET.into()));
    env.push(("CDP_RELAY_EVIDENCE_UPLOAD".into(), URL.into()));
    let env_ref: Vec<(&str, &OsStr)> = env
        .iter()
        .map(|(k, v)| (k.as_str(), OsStr::new(v.as_str())))
        .collect();

    let dirs: Vec<tempfile::TempDir> = (0..RELAYS).map(|_| tempfile::tempdir().unwrap()).collect();
    let sessions: Vec<String> = (0..RELAYS).map(|i| format!("fleet-session-{i}")).collect();
    let starts = (0..RELAYS).map(|i| {
        let dir = dirs[i].path().to_string_lossy().into_owned();
        let session = sessions[i].clone();
        let env_ref = &env_ref;
        async move {
            let args = [
                "launch",
                "--listen",
                "127.0.0.1:0",
                "--evidence-dir",
                dir.as_str(),
                "--session",
                session.as_str(),
                "--secret-env",
                "SWEEP_ENV_SECRET",
                "--",
                "--host-resolver-rules=MAP *.invalid ~NOTFOUND",
            ];
            RelayProcess::spawn(&args, env_ref).await
        }
    });
    let relays = futures_util::future::join_all(starts).await;

    // Each relay's capability ids, as its own browser hands them out.
    let mut cdp_ids = Vec::new();
    for r in &relays {
        let version = get(&r.authority(), "/json/version").await.json();
        if let Some(id) = version["webSocketDebuggerUrl"]
            .as_str()
            .and_then(|u| u.rsplit('/').next())
        {
            cdp_ids.push(id.to_owned());
        }
    }
    // The agent flows, all at once.
    let flows = relays.iter().map(|r| {
        let cfg = sweep_config(&r.endpoint, &site.origin).to_string();
        async move { run_node_client("sweep.mjs", &cfg).await }
    });
    for run in futures_util::future::join_all(flows).await {
        assert!(run.ok, "sweep.mjs failed:\n{}", run.stderr);
    }
    for r in &relays {
        for t in get(&r.authority(), "/json/list")
            .await
            .json()
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(id) = t["id"].as_str() {
                cdp_ids.push(id.to_owned());
            }
        }
        let status = get(&r.authority(), "/relay/v1/status").await.json();
        assert_eq!(status["uploads"]["target"], URL, "{status}");
    }
    assert!(cdp_ids.len() >= 2 * RELAYS, "{cdp_ids:?}");

    // Stopped together, as a rollout does: each finalizes and uploads before it exits.
    let stderrs: Vec<String> =
        futures_util::future::join_all(relays.into_iter().map(RelayProcess::stop)).await;
    for (i, err) in stderrs.iter().enumerate() {
        assert!(
            err.contains("uploaded to s3://fleet/prod/runs/"),
            "relay {i}:\n{err}"
        );
        assert!(!err.contains("not uploaded before"), "relay {i}:\n{err}");
        assert_eq!(err.matches(" uploaded to ").count(), 1, "relay {i}:\n{err}");
    }

    // Every run whole in the bucket: each local file, byte for byte, under <prefix>/<runId>/.
    let objects = server.objects(BUCKET);
    let mut run_ids = Vec::new();
    for dir in &dirs {
        let runs = std::fs::read_dir(dir.path().join("runs")).unwrap();
        for run in runs.flatten() {
            let id = run.file_name().into_string().unwrap();
            for (rel, bytes) in local_files(&run.path()) {
                let key = format!("prod/runs/{id}/{rel}");
                let obj = objects.iter().find(|(k, _)| *k == key);
                let Some((_, got)) = obj else {
                    panic!("{key} is not in the bucket")
                };
                if rel != "manifest.json" {
                    assert!(got == &bytes, "{key} differs from the local file");
                }
            }
            run_ids.push(id);
        }
    }
    assert_eq!(run_ids.len(), RELAYS, "{run_ids:?}");

    // From anywhere with the bucket URL: listed newest first, with sessions and failures.
    let listed = cli(&["runs", "--remote", URL, "--json"], &server.env()).await;
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), RELAYS, "{listed:?}");
    let mut seen: Vec<&str> = listed
        .iter()
        .map(|r| r["sessionId"].as_str().unwrap())
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        sessions.iter().map(String::as_str).collect::<Vec<_>>()
    );
    for r in listed {
        assert_eq!(r["status"], "finalized", "{r}");
        assert!(r["failures"].as_u64().unwrap() >= 6, "{r}");
        assert!(r["host"].is_string(), "{r}");
    }
    let started: Vec<&str> = listed
        .iter()
        .map(|r| r["startedAt"].as_str().unwrap())
        .collect();
    assert!(
        started.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {started:?}"
    );
    let table = cli(
        &["runs", "--remote", URL, "--session", &sessions[2]],
        &server.env(),
    )
    .await;
    assert_eq!(table.lines().count(), 2, "{table}");
    assert!(table.contains(&sessions[2]), "{table}");

    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().to_string_lossy().into_owned();
    let report = cli(
        &["report", "--remote", URL, &run_ids[0], "--out", &out_dir],
        &server.env(),
    )
    .await;
    let report = std::path::PathBuf::from(report.trim());
    assert!(
        report.is_file() && report.ends_with("report.html"),
        "{}",
        report.display()
    );

    // The sweep: the bucket's every byte (objects, metadata, leftovers), what was fetched, and
    // the relays' stderr.
    let mut files = all_files(server.data_dir());
    files.extend(all_files(out.path()));
    assert!(files.len() > 5 * RELAYS, "{}", files.len());
    for (what, secret) in &planted(&cdp_ids) {
        for (path, bytes) in &files {
            assert!(!leaks(bytes, secret), "{what} found in {path}");
        }
        for err in &stderrs {
            assert!(
                !err.contains(secret.as_str()),
                "{what} found in a relay's stderr"
            );
        }
    }
}

fn local_files(run_dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (path, bytes) in all_files(run_dir) {
        let rel = path
            .strip_prefix(&format!("{}/", run_dir.display()))
            .unwrap()
            .to_owned();
        if !rel.ends_with(".lock") && rel != "upload.json" {
            out.push((rel, bytes));
        }
    }
    out
}

async fn cli(args: &[&str], env: &[(String, String)]) -> String {
    let out = tokio::process::Command::new(relay_binary())
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .kill_on_drop(true)
        .output();
    let out = within("cdp-relay", out).await.expect("run cdp-relay");
    assert!(
        out.status.success(),
        "cdp-relay {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
