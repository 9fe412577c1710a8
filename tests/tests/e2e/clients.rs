//! Real third-party clients through the relay: Playwright `connectOverCDP` and Puppeteer
//! `connect({ browserURL })`. Each must do its work *through* the relay, which the relay's own
//! counters prove (a client that followed an unrewritten URL would bypass them).

use cdp_relay_tests::{run_node_client, within, Chromium, RelayFixture};

async fn drive(script: &str) {
    let chrome = Chromium::start().await;
    let relay = RelayFixture::start(&chrome.http()).await;
    let run = run_node_client(script, relay.endpoint()).await;
    assert!(run.ok, "{script} failed:\n{}", run.stderr);
    let report = run
        .report
        .unwrap_or_else(|| panic!("{script} printed no report:\n{}", run.stderr));
    assert_eq!(report["text"], "hello", "{report}");
    assert_eq!(report["sum"], 42, "{report}");
    assert_eq!(report["title"], "through the relay", "{report}");
    assert_eq!(report["pngMagic"], "PNG", "{report}");
    assert!(
        report["screenshotBytes"].as_u64().unwrap_or(0) > 1000,
        "{report}"
    );
    if let Some(ws) = report.get("wsEndpoint").and_then(|v| v.as_str()) {
        assert!(
            ws.starts_with(&format!("ws://{}/devtools/browser/", relay.authority())),
            "client followed {ws}, not the relay"
        );
    }
    let s = relay.stats();
    assert!(
        s.sessions_total >= 1,
        "{script} never opened a websocket through the relay: {s:?}"
    );
    // newPage, setContent, two evaluates, a screenshot: far more than a handful of commands.
    assert!(s.messages_to_browser >= 10, "{s:?}");
    assert!(
        s.bytes_to_client > 1000,
        "the screenshot came back through the relay: {s:?}"
    );
    assert_eq!(s.upgrades_refused, 0, "{s:?}");
}

#[tokio::test]
async fn playwright_connect_over_cdp() {
    within("playwright", drive("playwright.mjs")).await;
}

#[tokio::test]
async fn puppeteer_connect_browser_url() {
    within("puppeteer", drive("puppeteer.mjs")).await;
}
