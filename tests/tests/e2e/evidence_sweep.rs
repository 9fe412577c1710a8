//! The privacy proof of docs/security.md: a real Playwright session through the relay plants cookies,
//! an Authorization header, query-string tokens, a JWT, a session id, an API key, a typed password
//! and one-time code, and CDP ids; then every byte of the run directory and of the relay's stderr
//! is searched for them. Zero hits — and the journal still says what happened.

use cdp_evidence::{EvidenceConfig, Store, StoredRecord};
use cdp_relay_tests::files::{all_files, leaks};
use cdp_relay_tests::http::get;
use cdp_relay_tests::planted::*;
use cdp_relay_tests::site::Site;
use cdp_relay_tests::{run_node_client, within, Chromium, RelayProcess};
use serde_json::Value;

/// The network failure of the `GET` (not a CORS preflight) whose URL ends with `path`.
fn network<'a>(records: &'a [StoredRecord], path: &str) -> Option<&'a Value> {
    records
        .iter()
        .filter(|r| r.kind == "network")
        .map(|r| &r.payload)
        .find(|p| p["method"] == "GET" && p["url"].as_str().is_some_and(|u| u.ends_with(path)))
}

#[tokio::test]
async fn planted_secrets_never_reach_disk_or_stderr() {
    sweep(false).await;
}

/// The same sweep with the relay's own observer on: typed literals travel back into the page
/// for verification, frames are taken around failures — and still nothing planted is anywhere.
#[tokio::test]
async fn planted_secrets_never_reach_disk_or_stderr_with_the_observer_on() {
    sweep(true).await;
}

async fn sweep(observe: bool) {
    within("the sweep", async {
        let site = Site::start(site_routes()).await;
        let chrome =
            Chromium::start_with(vec!["--host-resolver-rules=MAP *.invalid ~NOTFOUND".into()])
                .await;
        let evidence = tempfile::tempdir().expect("tempdir");
        let upstream = chrome.http();
        let dir = evidence.path().to_string_lossy().into_owned();
        let mut args = vec![
            "-vv",
            "serve",
            "--upstream",
            &upstream,
            "--listen",
            "127.0.0.1:0",
            "--evidence-dir",
            &dir,
            "--session",
            "sweep",
            "--secret-env",
            "SWEEP_ENV_SECRET",
        ];
        if observe {
            args.push("--observe");
        }
        let relay = RelayProcess::spawn(
            &args,
            &[("SWEEP_ENV_SECRET", std::ffi::OsStr::new(ENV_SECRET))],
        )
        .await;

        // CDP capability ids, straight from the browser.
        let direct = format!("127.0.0.1:{}", chrome.port());
        let mut cdp_ids: Vec<String> = Vec::new();
        let version = get(&direct, "/json/version").await.json();
        if let Some(id) = version["webSocketDebuggerUrl"]
            .as_str()
            .and_then(|u| u.rsplit('/').next())
        {
            cdp_ids.push(id.to_owned());
        }

        let cfg = sweep_config(&relay.endpoint, &site.origin);
        let run = run_node_client("sweep.mjs", &cfg.to_string()).await;
        assert!(run.ok, "sweep.mjs failed:\n{}", run.stderr);
        let report = run.report.expect("sweep report");
        assert_eq!(report["statuses"]["notFound"], 404, "{report}");
        assert_eq!(report["statuses"]["authorized"], 200, "{report}");

        for t in get(&direct, "/json/list")
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
        let status = get(&relay.authority(), "/relay/v1/status").await.json();
        let run_id = status["evidence"]["runId"]
            .as_str()
            .expect("run id")
            .to_owned();
        let stderr = relay.stop().await;

        // What happened is on record.
        let store = Store::open(EvidenceConfig::at(evidence.path())).expect("store");
        let journal = store.read_journal(&run_id).expect("journal");
        assert!(journal.corrupt.is_empty(), "{:?}", journal.corrupt);
        let records = journal.records;
        let manifest = store.read_manifest(&run_id).expect("manifest");
        assert_eq!(manifest.status.as_deref(), Some("finalized"));

        let typed: Vec<u64> = records
            .iter()
            .filter(|r| r.kind == "action" && r.payload["method"] == "type")
            .filter_map(|r| r.payload["input"]["chars"].as_u64())
            .collect();
        for len in [USER.len(), PASSWORD.len(), OTP.len()] {
            assert!(
                typed.contains(&(len as u64)),
                "typed lengths {typed:?} lack {len}"
            );
        }
        let expect_net = [
            ("/missing", Some(404), None),
            ("/boom", Some(500), None),
            ("/x", None, Some("ERR_CONNECTION_REFUSED")),
            ("/y", None, Some("ERR_NAME_NOT_RESOLVED")),
            ("/hang", None, Some("ERR_ABORTED")),
            ("/cors", None, Some("CORS")),
        ];
        for (path, status, error) in expect_net {
            let n = network(&records, path).unwrap_or_else(|| {
                panic!(
                    "no network record for {path}: {:#?}",
                    records
                        .iter()
                        .filter(|r| r.kind != "action")
                        .map(|r| (&r.kind, r.payload.to_string()))
                        .collect::<Vec<_>>()
                )
            });
            assert_eq!(n["resourceType"], "Fetch", "{path}: {n}");
            if let Some(s) = status {
                assert_eq!(n["status"], s, "{path}: {n}");
            }
            if let Some(e) = error {
                assert!(
                    n["errorText"].as_str().unwrap_or_default().contains(e),
                    "{path}: {n}"
                );
            }
        }
        assert!(network(&records, "/nowhere").is_none());
        let dns = network(&records, "/y").expect("dns");
        assert_eq!(dns["url"], "http://nowhere.invalid/y");

        let consoles: Vec<&Value> = records
            .iter()
            .filter(|r| r.kind == "console")
            .map(|r| &r.payload)
            .collect();
        let texts: Vec<&str> = consoles.iter().filter_map(|c| c["text"].as_str()).collect();
        assert!(
            texts
                .iter()
                .any(|t| t.contains("token expired") && t.contains("[redacted:jwt]")),
            "{texts:?}"
        );
        assert!(
            texts.iter().any(|t| t.contains("key in use: ${API_KEY}")),
            "{texts:?}"
        );
        assert!(
            texts
                .iter()
                .any(|t| t.contains("login page for ${SWEEP_ENV_SECRET}")),
            "{texts:?}"
        );
        assert!(
            consoles.iter().any(|c| c["level"] == "exception"),
            "{consoles:?}"
        );
        assert!(
            consoles.iter().any(|c| c["level"] == "assert"),
            "{consoles:?}"
        );

        let shots: Vec<&StoredRecord> = records
            .iter()
            .filter(|r| r.kind == "action" && r.payload["method"] == "Page.captureScreenshot")
            .collect();
        assert_eq!(shots.len(), 3, "{shots:?}");
        assert_eq!(shots.iter().filter(|r| !r.artifacts.is_empty()).count(), 2);
        assert!(
            shots[1].artifacts.is_empty(),
            "the screenshot after typing must be withheld"
        );

        // And nothing planted is anywhere.
        let planted = planted(&cdp_ids);
        assert!(cdp_ids.len() >= 2, "{cdp_ids:?}");
        let files = all_files(evidence.path());
        assert!(files.len() >= 4, "{files:?}");
        for (what, secret) in &planted {
            for (path, bytes) in &files {
                assert!(!leaks(bytes, secret), "{what} found in {path}");
            }
            assert!(
                !stderr.contains(secret.as_str()),
                "{what} found in the relay's stderr"
            );
        }
        if observe {
            // The observer was there: verdicts on the typing steps, its own records.
            let verdicts = records
                .iter()
                .filter(|r| r.kind == "action" && r.payload["method"] == "type")
                .filter(|r| r.payload.get("verification").is_some())
                .count();
            assert!(verdicts >= 3, "{records:#?}");
            assert!(records
                .iter()
                .any(|r| r.tool.as_deref() == Some("observer")));
        }
        // The sweep is only as good as its coverage: the relay did log and record plenty.
        assert!(stderr.lines().count() > 5, "{stderr}");
        assert!(records.len() > 30, "{}", records.len());
    })
    .await;
}
