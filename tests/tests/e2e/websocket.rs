//! Websocket splice against a real Chromium: browser, page and worker endpoints, byte-identical
//! large frames, many concurrent clients, and a browser killed mid-session.

use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::http::get;
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::{browser_ws, page_ws, within, Chromium, RelayFixture};
use serde_json::{json, Value};
use std::collections::HashMap;

#[tokio::test]
async fn page_and_browser_websockets_through_the_relay() {
    within("page and browser ws", async {
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start(&chrome.http()).await;

        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        let r = page
            .call(
                "Runtime.evaluate",
                json!({"expression": "navigator.userAgent"}),
            )
            .await;
        assert!(r["result"]["value"]
            .as_str()
            .unwrap_or_default()
            .contains("Chrome"));

        let mut browser = Cdp::connect(&browser_ws(&relay.authority()).await).await;
        let created = browser
            .call("Target.createTarget", json!({"url": "about:blank"}))
            .await;
        let target = created["targetId"].as_str().expect("targetId").to_owned();
        let attached = browser
            .call(
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
            )
            .await;
        let session = attached["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_owned();
        let r = browser
            .call_in(
                "Runtime.evaluate",
                json!({"expression": "[1,2,3].map(x => x * 2).join()"}),
                Some(&session),
            )
            .await;
        assert_eq!(r["result"]["value"], "2,4,6");
        browser
            .call("Target.closeTarget", json!({"targetId": target}))
            .await;
        let s = relay.stats();
        assert_eq!(s.sessions_total, 2);
        assert_eq!(s.messages_to_browser, 5, "{s:?}");
        assert!(s.messages_to_client >= 5, "{s:?}");
    })
    .await;
}

#[tokio::test]
async fn worker_targets_are_relayed_too() {
    within("worker ws", async {
        let mut routes = HashMap::new();
        routes.insert(
            "/",
            Route::ok(
                "text/html",
                "<title>w</title><script>window.w = new SharedWorker('/worker.js');</script>",
            ),
        );
        routes.insert(
            "/worker.js",
            Route::ok(
                "text/javascript",
                "onconnect = e => e.ports[0].postMessage('hi');",
            ),
        );
        let site = Site::start(routes).await;
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start(&chrome.http()).await;
        let mut page = Cdp::connect(&page_ws(&relay.authority()).await).await;
        page.call("Page.enable", json!({})).await;
        page.call("Page.navigate", json!({"url": format!("{}/", site.origin)}))
            .await;
        // Wait for the worker target by asking the browser (an event, not a sleep).
        let mut browser = Cdp::connect(&browser_ws(&relay.authority()).await).await;
        browser
            .call("Target.setDiscoverTargets", json!({"discover": true}))
            .await;
        let worker_id = loop {
            let targets = browser.call("Target.getTargets", json!({})).await;
            let found = targets["targetInfos"].as_array().and_then(|l| {
                l.iter()
                    .find(|t| t["type"] == "shared_worker")
                    .and_then(|t| t["targetId"].as_str().map(str::to_owned))
            });
            if let Some(id) = found {
                break id;
            }
            // Each call is a browser round trip; the target appears within a few of them.
            tokio::task::yield_now().await;
        };
        let list = get(&relay.authority(), "/json/list").await.json();
        let worker = list
            .as_array()
            .and_then(|l| l.iter().find(|t| t["id"] == worker_id.as_str()))
            .cloned()
            .expect("worker listed in /json/list");
        let ws = worker["webSocketDebuggerUrl"]
            .as_str()
            .expect("ws")
            .to_owned();
        assert!(
            ws.starts_with(&format!("ws://{}/devtools/", relay.authority())),
            "{ws}"
        );
        let mut w = Cdp::connect(&ws).await;
        // The target exists before its script has run, so ask about the scope, not the script.
        let r = w
            .call(
                "Runtime.evaluate",
                json!({"expression": "self instanceof SharedWorkerGlobalScope"}),
            )
            .await;
        assert_eq!(r["result"]["value"], true, "{r}");
    })
    .await;
}

/// A deterministic 5 MB string with quotes, backslashes, control characters and non-ASCII,
/// so the JSON encoding of the reply exercises escapes and multi-byte UTF-8.
const FIVE_MB_EXPR: &str = r#"(() => {
  const parts = ['plain ascii ', '"quoted" ', 'back\\slash ', 'tab\there ', 'é ü ß ', '日本語 ', '🙂 ', '\u0001\u001f '];
  let s = ''; let i = 0;
  while (s.length < 5 * 1024 * 1024) { s += parts[i % parts.length] + (i * 7919 % 1000003) + ' '; i++; }
  return s;
})()"#;

#[tokio::test]
async fn five_megabyte_result_is_byte_identical_to_direct() {
    within("5 MB", async {
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start(&chrome.http()).await;
        let params = json!({"expression": FIVE_MB_EXPR, "returnByValue": true});

        let relayed_ws = page_ws(&relay.authority()).await;
        let direct_ws =
            relayed_ws.replace(&relay.authority(), &format!("127.0.0.1:{}", chrome.port()));
        let mut direct = Cdp::connect(&direct_ws).await;
        let direct_raw = direct
            .call_raw("Runtime.evaluate", params.clone(), None)
            .await;
        drop(direct);
        let mut relayed = Cdp::connect(&relayed_ws).await;
        let relayed_raw = relayed.call_raw("Runtime.evaluate", params, None).await;

        assert!(direct_raw.len() > 5 * 1024 * 1024, "{}", direct_raw.len());
        assert_eq!(relayed_raw.len(), direct_raw.len());
        assert!(relayed_raw == direct_raw, "payload bytes differ");
        let v: Value = serde_json::from_str(&relayed_raw).expect("JSON");
        assert!(v["result"]["result"]["value"]
            .as_str()
            .is_some_and(|s| s.contains("🙂")));
    })
    .await;
}

#[tokio::test]
async fn many_concurrent_clients() {
    within("concurrent clients", async {
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start(&chrome.http()).await;
        let page_ws = page_ws(&relay.authority()).await;
        let browser_ws = browser_ws(&relay.authority()).await;
        let mut tasks = Vec::new();
        for client in 0..24u64 {
            let url = if client % 2 == 0 {
                page_ws.clone()
            } else {
                browser_ws.clone()
            };
            tasks.push(tokio::spawn(async move {
                let mut cdp = Cdp::connect(&url).await;
                for i in 0..25u64 {
                    if client % 2 == 0 {
                        let r = cdp
                            .call(
                                "Runtime.evaluate",
                                json!({"expression": format!("{client} * 1000 + {i}")}),
                            )
                            .await;
                        assert_eq!(r["result"]["value"], client * 1000 + i);
                    } else {
                        let r = cdp.call("Browser.getVersion", json!({})).await;
                        assert!(r["product"].as_str().is_some());
                    }
                }
            }));
        }
        for t in tasks {
            t.await.expect("client task");
        }
        let s = relay.stats();
        assert_eq!(s.sessions_total, 24);
        assert!(s.messages_to_browser >= 24 * 25, "{s:?}");
    })
    .await;
}

#[tokio::test]
async fn browser_killed_mid_session_closes_clients_and_relay_stays_up() {
    within("browser killed", async {
        let mut chrome = Chromium::start().await;
        let relay = RelayFixture::start(&chrome.http()).await;
        let mut clients = Vec::new();
        for url in [
            page_ws(&relay.authority()).await,
            browser_ws(&relay.authority()).await,
        ] {
            let mut c = Cdp::connect(&url).await;
            c.call("Browser.getVersion", json!({})).await;
            clients.push(c);
        }
        chrome.kill().await;
        for c in &mut clients {
            let frame = c
                .wait_close()
                .await
                .expect("a close frame, not a dropped socket");
            assert_eq!(u16::from(frame.code), 1011, "{frame:?}");
        }
        // Discovery now fails cleanly, and the relay is still up.
        assert_eq!(get(&relay.authority(), "/json/version").await.status, 502);
        let status = get(&relay.authority(), "/relay/v1/status").await.json();
        assert_eq!(status["stats"]["sessionsTotal"], 2);

        // New websocket clients get a clean 502 instead of a dead socket.
        let ws = format!("ws://{}/devtools/browser/gone", relay.authority());
        assert_eq!(
            cdp_relay_tests::cdp::connect(&ws, &[])
                .await
                .err()
                .as_deref(),
            Some("HTTP 502")
        );
    })
    .await;
}
