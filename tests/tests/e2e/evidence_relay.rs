//! Evidence without giving up transparency: large frames stay byte-identical and an event flood
//! is relayed complete with evidence on; the run API registers secrets; evidence problems
//! (an unusable directory, a writer that starts failing) never stop forwarding; --no-evidence
//! writes nothing.

use cdp_evidence::{EvidenceConfig, Store};
use cdp_relay::EvidenceSettings;
use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::fake::{FakeUpstream, HttpMode, Script};
use cdp_relay_tests::http::{get, request, request_with_body};
use cdp_relay_tests::{page_ws, within, Chromium, RelayFixture, RelayProcess};
use serde_json::json;
use std::time::Duration;

fn settings(root: &std::path::Path) -> EvidenceSettings {
    EvidenceSettings {
        root: root.to_path_buf(),
        ..EvidenceSettings::default()
    }
}

#[tokio::test]
async fn large_frames_stay_identical_with_evidence_on() {
    within("5 MB with evidence", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start_recording(&chrome.http(), settings(dir.path())).await;
        let expr = json!({"expression": "'\\u00e9\"\\\\'.repeat(1024 * 1024) + '🙂'", "returnByValue": true});
        let url = page_ws(&relay.authority()).await;
        let direct_url = url.replace(&relay.authority(), &format!("127.0.0.1:{}", chrome.port()));
        let mut direct = Cdp::connect(&direct_url).await;
        let want = direct.call_raw("Runtime.evaluate", expr.clone(), None).await;
        drop(direct);
        let mut relayed = Cdp::connect(&url).await;
        let got = relayed.call_raw("Runtime.evaluate", expr, None).await;
        assert!(got.len() > 4 * 1024 * 1024);
        assert!(got == want, "payload differs with evidence on");
        drop(relayed);
        let summary = relay.stop().await.expect("recorder summary");
        let store = Store::open(EvidenceConfig::at(dir.path())).expect("store");
        let run_id = summary.run_dir.file_name().and_then(|n| n.to_str()).expect("id").to_owned();
        let records = store.read_journal(&run_id).expect("journal").records;
        let eval = records
            .iter()
            .find(|r| r.payload["method"] == "Runtime.evaluate")
            .expect("the evaluate is on record");
        assert_eq!(eval.status.as_deref(), Some("ok"));
        let manifest = store.read_manifest(&run_id).expect("manifest");
        assert_eq!(manifest.status.as_deref(), Some("finalized"));
    })
    .await;
}

#[tokio::test]
async fn an_event_flood_is_relayed_complete_and_accounted_for() {
    within("flood", async {
        const N: u64 = 20_000;
        let dir = tempfile::tempdir().expect("tempdir");
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start_recording(&chrome.http(), settings(dir.path())).await;
        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        page.call("Runtime.enable", json!({})).await;
        let flood = json!({"expression": format!("for (let i = 0; i < {N}; i++) console.error('flood ' + i)")});
        let answered = page.client.call_raw("Runtime.evaluate", flood, None, Duration::from_secs(300));
        // Every event arrives, in order, whatever the observer does with its copies.
        let events = &mut page.events;
        let read = async {
            let mut next = 0u64;
            while next < N {
                let event = events.recv().await.expect("open");
                if event.method().as_deref() == Some("Runtime.consoleAPICalled") {
                    assert_eq!(event.params()["args"][0]["value"], format!("flood {next}"));
                    next += 1;
                }
            }
        };
        let (answered, ()) = tokio::join!(answered, read);
        answered.expect("the flood's command is answered");
        drop(page);
        let summary = relay.stop().await.expect("summary");
        let store = Store::open(EvidenceConfig::at(dir.path())).expect("store");
        let run_id = summary.run_dir.file_name().and_then(|n| n.to_str()).expect("id").to_owned();
        let journal = store.read_journal(&run_id).expect("journal");
        assert!(journal.corrupt.is_empty());
        let recorded = journal.records.iter().filter(|r| r.kind == "console").count() as u64;
        // Each event is either on record or counted as dropped; none silently vanish.
        assert!(
            recorded + summary.dropped >= N,
            "recorded {recorded} + dropped {} < {N}",
            summary.dropped
        );
        assert!(recorded <= N, "recorded {recorded} console records for {N} events");
        let manifest = store.read_manifest(&run_id).expect("manifest");
        let totals = manifest.totals.expect("totals");
        assert_eq!(totals.dropped_evidence, summary.dropped);
        eprintln!("flood: {recorded} console records, {} dropped", summary.dropped);
    })
    .await;
}

#[tokio::test]
async fn secrets_api() {
    within("secrets api", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = FakeUpstream::start(HttpMode::DevTools, Script::Echo).await;
        let relay = RelayFixture::start_recording(&fake.http(), settings(dir.path())).await;
        let auth = relay.authority();
        let put = |name: &'static str, body: &'static str| {
            let auth = auth.clone();
            async move { put_body(&auth, &format!("/relay/v1/secrets/{name}"), body).await }
        };
        assert_eq!(put("DB_PASSWORD", "correct horse battery").await.0, 204);
        assert_eq!(put("DB_PASSWORD", "correct horse battery").await.0, 204);
        let (status, body) = put("lower_case", "value1234").await;
        assert_eq!(status, 400);
        assert!(!body.contains("value1234"), "{body}");
        assert_eq!(put("EMPTY", "   ").await.0, 400);
        assert_eq!(
            get(&auth, "/relay/v1/secrets/DB_PASSWORD").await.status,
            405
        );
        // The relay's own policy applies: a foreign Host is refused before anything else.
        let foreign = request(
            &auth,
            "PUT",
            "/relay/v1/secrets/X",
            &[("Host", "evil.example")],
        )
        .await;
        assert_eq!(foreign.status, 500);
        relay.stop().await;

        let fake = FakeUpstream::start(HttpMode::DevTools, Script::Echo).await;
        let off = RelayFixture::start(&fake.http()).await;
        assert_eq!(
            put_body(&off.authority(), "/relay/v1/secrets/X", "value1234")
                .await
                .0,
            409
        );
    })
    .await;
}

/// A web page can make a browser send a write to the relay (a form, `fetch` with `no-cors`): the
/// websocket Origin rule applies to every `/relay/v1/` write, whatever client sends it.
#[tokio::test]
async fn relay_api_writes_follow_the_origin_rule() {
    within("relay api origin rule", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = FakeUpstream::start(HttpMode::DevTools, Script::Echo).await;
        let relay = RelayFixture::start_recording_with(&fake.http(), settings(dir.path()), |c| {
            c.policy.origins.allowed = vec!["http://tools.example".into()];
        })
        .await;
        let auth = relay.authority();
        let own = format!("http://{auth}");
        let put = |origin: Option<String>| {
            let auth = auth.clone();
            async move {
                let headers: Vec<(&str, &str)> = match &origin {
                    Some(o) => vec![("Origin", o.as_str())],
                    None => vec![],
                };
                request_with_body(
                    &auth,
                    "PUT",
                    "/relay/v1/secrets/API_KEY",
                    &headers,
                    b"k3y-value-123",
                )
                .await
            }
        };
        for evil in [
            "http://evil.example",
            "null",
            "http://tools.example.evil.example",
            "http://tools.example/",
        ] {
            let r = put(Some(evil.to_owned())).await;
            assert_eq!(r.status, 403, "Origin {evil}: {}", r.text());
            assert!(r.text().contains("--allow-origin"), "{}", r.text());
        }
        assert_eq!(
            put(None).await.status,
            204,
            "no Origin: a non-browser client"
        );
        assert_eq!(
            put(Some("http://tools.example".into())).await.status,
            204,
            "allowed"
        );
        assert_eq!(put(Some(own)).await.status, 204, "the relay's own origin");
        // Reading is not a write: a page may not read it either (no CORS headers), but the rule
        // is the websocket one, for writes.
        let status = request(
            &auth,
            "GET",
            "/relay/v1/status",
            &[("Origin", "http://evil.example")],
        )
        .await;
        assert_eq!(status.status, 200);
        assert!(
            status.header("access-control-allow-origin").is_none(),
            "the relay never grants CORS"
        );
        relay.stop().await;
    })
    .await;
}

async fn put_body(auth: &str, path: &str, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(auth).await.expect("connect");
    let req = format!(
        "PUT {path} HTTP/1.1\r\nHost: {auth}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(req.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[tokio::test]
async fn unusable_evidence_dir_keeps_forwarding() {
    within("unusable dir", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("a-file");
        std::fs::write(&file, "not a directory").expect("write");
        let chrome = Chromium::start().await;
        let bad_root = file.join("evidence");
        let relay = RelayProcess::serve(
            &chrome.http(),
            &["--evidence-dir", &bad_root.to_string_lossy()],
        )
        .await;
        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        let r = page
            .call("Runtime.evaluate", json!({"expression": "1 + 1"}))
            .await;
        assert_eq!(r["result"]["value"], 2);
        let status = get(&relay.authority(), "/relay/v1/status").await.json();
        assert!(status["evidence"].is_null(), "{status}");
        drop(page);
        let stderr = relay.stop().await;
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("evidence is off"))
            .collect();
        assert_eq!(warnings.len(), 1, "{stderr}");
    })
    .await;
}

#[tokio::test]
async fn a_failing_writer_is_reported_once_and_forwarding_goes_on() {
    within("failing writer", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let chrome = Chromium::start().await;
        let root = dir.path().join("evidence");
        let relay =
            RelayProcess::serve(&chrome.http(), &["--evidence-dir", &root.to_string_lossy()]).await;
        // The evidence disappears under the relay (a full or unmounted disk looks the same).
        std::fs::remove_dir_all(&root).expect("remove evidence");
        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        for i in 0..20 {
            let r = page
                .call(
                    "Runtime.evaluate",
                    json!({"expression": format!("{i} * 2")}),
                )
                .await;
            assert_eq!(r["result"]["value"], i * 2);
        }
        drop(page);
        let stderr = relay.stop().await;
        let warnings = stderr
            .lines()
            .filter(|l| l.contains("evidence: cannot"))
            .count();
        assert_eq!(warnings, 1, "exactly one warning:\n{stderr}");
    })
    .await;
}

#[tokio::test]
async fn no_evidence_writes_nothing() {
    within("no evidence", async {
        let dir = tempfile::tempdir().expect("tempdir");
        let chrome = Chromium::start().await;
        let root = dir.path().join("evidence");
        let relay = RelayProcess::serve(
            &chrome.http(),
            &["--evidence-dir", &root.to_string_lossy(), "--no-evidence"],
        )
        .await;
        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        page.call("Page.navigate", json!({"url": "about:blank#x"}))
            .await;
        drop(page);
        relay.stop().await;
        assert!(!root.exists(), "--no-evidence created {}", root.display());
    })
    .await;
}
