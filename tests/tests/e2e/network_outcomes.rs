//! What counts as a failed request, against a real Chromium: a form posted to an API that
//! answers 204 is a navigation Chromium aborts after a good response (`net::ERR_ABORTED`,
//! `canceled`), and that is no failure of the page's; a 500 beside it still is. Through the
//! client's own traffic and through the relay's own observer.

use cdp_evidence::parse_journal;
use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::{page_ws, within, Chromium, RelayProcess};
use serde_json::json;
use std::collections::HashMap;

const PAGE: &str = r#"<!doctype html><title>outcomes</title>
<form id="save" method="post" action="/api/save"><button>save</button></form>
<form id="empty" method="post" action="/api/empty"><button>empty</button></form>"#;

fn routes() -> HashMap<&'static str, Route> {
    HashMap::from([
        ("/page", Route::ok("text/html", PAGE)),
        ("/favicon.ico", Route::ok("image/x-icon", "")),
        ("/api/save", Route::ok("text/plain", "").status(204)),
        ("/api/broken", Route::ok("text/plain", "no").status(500)),
    ])
}

/// Runs `expression` in the page, then returns the `Network.loadingFailed` or `loadingFinished`
/// of the request for a URL ending in `path` it starts. The events that arrive before the
/// evaluation's reply count too: Chromium can report a fetch the expression started first.
async fn outcome(cdp: &mut Cdp, expression: &str, path: &str) -> serde_json::Value {
    let (_, early) = cdp
        .call_keeping_events("Runtime.evaluate", json!({ "expression": expression }))
        .await;
    let mut ids = Vec::new();
    let mut early = early.into_iter();
    within(path, async {
        loop {
            let v = match early.next() {
                Some(v) => v,
                None => {
                    let Some(e) = cdp.events.recv().await else {
                        panic!("the connection ended waiting for {path}");
                    };
                    serde_json::from_str(e.text()).expect("CDP JSON")
                }
            };
            let p = &v["params"];
            match v["method"].as_str() {
                Some("Network.requestWillBeSent")
                    if p["request"]["url"]
                        .as_str()
                        .is_some_and(|u| u.ends_with(path)) =>
                {
                    ids.push(p["requestId"].clone());
                }
                Some("Network.loadingFailed" | "Network.loadingFinished")
                    if ids.contains(&p["requestId"]) =>
                {
                    return v;
                }
                _ => {}
            }
        }
    })
    .await
}

async fn posted_forms(observe: bool) {
    let site = Site::start(routes()).await;
    let chrome = Chromium::start().await;
    let evidence = tempfile::tempdir().expect("tempdir");
    let dir = evidence.path().to_string_lossy().into_owned();
    let mut extra = vec!["--evidence-dir", &dir];
    if observe {
        extra.push("--observe");
    }
    let relay = RelayProcess::serve(&chrome.http(), &extra).await;
    if observe {
        cdp_relay_tests::observing(&relay.authority(), 1).await;
    }
    let mut cdp = Cdp::connect(&page_ws(&relay.authority()).await).await;
    cdp.call("Network.enable", json!({})).await;
    cdp.call("Page.enable", json!({})).await;
    cdp.call(
        "Page.navigate",
        json!({"url": format!("{}/page", site.origin)}),
    )
    .await;
    cdp.event("Page.loadEventFired").await;

    let saved = outcome(
        &mut cdp,
        "document.getElementById('save').requestSubmit()",
        "/api/save",
    )
    .await;
    // What the fix is about: Chromium does report this as a failed load.
    assert_eq!(saved["method"], "Network.loadingFailed", "{saved}");
    assert_eq!(saved["params"]["errorText"], "net::ERR_ABORTED", "{saved}");

    outcome(
        &mut cdp,
        "fetch('/api/broken').catch(() => {})",
        "/api/broken",
    )
    .await;
    // Stopping writes what the observer still holds (a failure waiting for its frame).
    drop(cdp);
    relay.stop().await;

    let runs = std::fs::read_dir(evidence.path().join("runs")).expect("runs");
    let run = runs
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a run");
    let journal = std::fs::read(run.join("actions.jsonl")).expect("journal");
    let failures: Vec<String> = parse_journal(&journal)
        .records
        .iter()
        .filter(|r| r.kind == "network")
        .map(|r| {
            format!(
                "{} {} {}",
                r.payload["method"], r.payload["url"], r.payload["status"]
            )
        })
        .collect();
    assert_eq!(failures.len(), 1, "observe={observe}: {failures:?}");
    assert!(
        failures[0].contains("/api/broken") && failures[0].contains("500"),
        "{failures:?}"
    );
}

#[tokio::test]
async fn a_form_answered_204_is_no_failure_through_the_clients_traffic() {
    posted_forms(false).await;
}

#[tokio::test]
async fn a_form_answered_204_is_no_failure_through_the_relays_observer() {
    posted_forms(true).await;
}
