//! HTTP discovery through the relay against a real Chromium: every endpoint, with and without a
//! trailing slash, capability URLs rewritten to the authority the client used, upstream errors
//! passed through, and Chrome's Host/Origin/token policy enforced by the relay itself.

use cdp_relay_tests::http::{get, request};
use cdp_relay_tests::{within, Chromium, RelayFixture};
use serde_json::Value;

fn ws_urls(v: &Value) -> Vec<String> {
    let items = match v {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    let mut urls = Vec::new();
    for t in items {
        for key in [
            "webSocketDebuggerUrl",
            "devtoolsFrontendUrl",
            "devtoolsFrontendUrlCompat",
        ] {
            if let Some(s) = t.get(key).and_then(Value::as_str) {
                urls.push(s.to_owned());
            }
        }
    }
    urls
}

/// Every capability URL points at `authority` and none at the browser's own port.
fn assert_rewritten(v: &Value, authority: &str, browser_port: u16) {
    let urls = ws_urls(v);
    assert!(!urls.is_empty(), "no capability URLs in {v}");
    let body = v.to_string();
    assert!(
        !body.contains(&format!(":{browser_port}/")),
        "browser port leaked: {body}"
    );
    for u in urls {
        let ok = u.starts_with(&format!("ws://{authority}/devtools/"))
            || u.contains(&format!("ws={authority}/devtools/"));
        assert!(ok, "{u} does not point at {authority}");
    }
}

#[tokio::test]
async fn every_discovery_endpoint_is_rewritten() {
    within("discovery", async {
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start(&chrome.http()).await;
        let auth = relay.authority();

        for path in ["/json/version", "/json/version/"] {
            let a = get(&auth, path).await;
            assert_eq!(a.status, 200, "{path}");
            let v = a.json();
            assert!(v["Browser"].as_str().unwrap_or_default().contains("Chrome"));
            assert_rewritten(&v, &auth, chrome.port());
        }
        for path in ["/json", "/json/", "/json/list", "/json/list/"] {
            let a = get(&auth, path).await;
            assert_eq!(a.status, 200, "{path}");
            let v = a.json();
            assert!(v
                .as_array()
                .is_some_and(|l| l.iter().any(|t| t["type"] == "page")));
            assert_rewritten(&v, &auth, chrome.port());
        }

        // /json/new needs PUT, like Chrome; GET gets Chrome's own 405.
        let refused = get(&auth, "/json/new?about:blank").await;
        assert_eq!(refused.status, 405, "{}", refused.text());
        for path in ["/json/new?about:blank", "/json/new/?about:blank"] {
            let created = request(&auth, "PUT", path, &[]).await;
            assert_eq!(created.status, 200, "{path}: {}", created.text());
            let v = created.json();
            assert_eq!(v["type"], "page");
            assert_rewritten(&v, &auth, chrome.port());
            let id = v["id"].as_str().expect("id").to_owned();

            let act = get(&auth, &format!("/json/activate/{id}")).await;
            assert_eq!(act.status, 200, "{}", act.text());
            let act = get(&auth, &format!("/json/activate/{id}/")).await;
            assert_eq!(act.status, 200, "{}", act.text());
            let closed = get(&auth, &format!("/json/close/{id}")).await;
            assert_eq!(closed.status, 200, "{}", closed.text());
        }

        // Unknown targets: Chrome's 404 and its body pass through unchanged.
        let direct = get(&format!("127.0.0.1:{}", chrome.port()), "/json/close/NOPE").await;
        let relayed = get(&auth, "/json/close/NOPE").await;
        assert_eq!(relayed.status, 404);
        assert_eq!(relayed.status, direct.status);
        assert_eq!(relayed.body, direct.body);
        let relayed = get(&auth, "/json/activate/NOPE/").await;
        assert_eq!(relayed.status, 404);

        // The protocol description is relayed byte for byte.
        let direct = get(&format!("127.0.0.1:{}", chrome.port()), "/json/protocol").await;
        for path in ["/json/protocol", "/json/protocol/"] {
            let relayed = get(&auth, path).await;
            assert_eq!(relayed.status, 200);
            assert_eq!(relayed.body, direct.body, "{path}");
        }
        assert!(relayed_domains(&direct.json()) > 10);
    })
    .await;
}

fn relayed_domains(protocol: &Value) -> usize {
    protocol["domains"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn urls_follow_the_host_the_client_used() {
    within("host authority", async {
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start(&chrome.http()).await;
        let auth = relay.authority();
        let port = auth.rsplit(':').next().expect("port").to_owned();
        for host in [
            format!("localhost:{port}"),
            format!("relay.localhost:{port}"),
            format!("[::1]:{port}"),
            auth.clone(),
        ] {
            let a = request(&auth, "GET", "/json/list", &[("Host", &host)]).await;
            assert_eq!(a.status, 200, "{host}");
            assert_rewritten(&a.json(), &host, chrome.port());
        }
    })
    .await;
}

#[tokio::test]
async fn host_and_origin_policy_like_chrome() {
    within("policy", async {
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start_with(&chrome.http(), |c| {
            c.policy.allow_hosts = vec!["devbox.internal".into()];
        })
        .await;
        let auth = relay.authority();
        let port = auth.rsplit(':').next().expect("port").to_owned();

        // DNS rebinding: a foreign Host gets Chrome's 500 and wording.
        let direct = request(
            &format!("127.0.0.1:{}", chrome.port()),
            "GET",
            "/json/version",
            &[("Host", "evil.example")],
        )
        .await;
        let relayed = request(&auth, "GET", "/json/version", &[("Host", "evil.example")]).await;
        assert_eq!(relayed.status, 500);
        assert_eq!(relayed.status, direct.status);
        assert_eq!(relayed.text().trim(), direct.text().trim());
        let allowed = request(
            &auth,
            "GET",
            "/json/version",
            &[("Host", &format!("devbox.internal:{port}"))],
        )
        .await;
        assert_eq!(allowed.status, 200);
        assert_rewritten(
            &allowed.json(),
            &format!("devbox.internal:{port}"),
            chrome.port(),
        );

        // Websocket with a foreign Origin: 403 naming the flag; without Origin: accepted.
        let list = get(&auth, "/json/version").await.json();
        let ws = list["webSocketDebuggerUrl"]
            .as_str()
            .expect("ws url")
            .to_owned();
        let err = cdp_relay_tests::cdp::connect(&ws, &[("Origin", "http://evil.example")])
            .await
            .expect_err("origin must be refused");
        assert_eq!(err, "HTTP 403");
        let refused = request(
            &auth,
            "GET",
            ws.trim_start_matches(&format!("ws://{auth}")),
            &[
                ("Origin", "http://evil.example"),
                ("Upgrade", "websocket"),
                ("Connection", "Upgrade"),
                ("Sec-WebSocket-Version", "13"),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ],
        )
        .await;
        assert_eq!(refused.status, 403);
        assert!(
            refused.text().contains("--allow-origin"),
            "{}",
            refused.text()
        );
        assert!(cdp_relay_tests::cdp::connect(&ws, &[]).await.is_ok());
        // Host is checked on upgrades too.
        let err = cdp_relay_tests::cdp::connect(&ws, &[("Host", "evil.example")])
            .await
            .expect_err("host must be refused");
        assert_eq!(err, "HTTP 500");
        assert_eq!(relay.stats().upgrades_refused, 3);
    })
    .await;
}

#[tokio::test]
async fn allowed_origin_is_accepted_and_not_forwarded() {
    within("allowed origin", async {
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start_with(&chrome.http(), |c| {
            c.policy.origins.allowed = vec!["http://app.example".into()];
        })
        .await;
        let v = get(&relay.authority(), "/json/version").await.json();
        let ws = v["webSocketDebuggerUrl"].as_str().expect("ws").to_owned();
        // Chrome itself would answer 403 to this Origin: the relay must not forward it.
        let mut ws = cdp_relay_tests::cdp::connect(&ws, &[("Origin", "http://app.example")])
            .await
            .expect("allowed origin");
        use futures_util::{SinkExt, StreamExt};
        ws.send(tokio_tungstenite::tungstenite::Message::text(
            r#"{"id":1,"method":"Browser.getVersion"}"#,
        ))
        .await
        .expect("send");
        let reply = ws.next().await.expect("reply").expect("ok");
        assert!(reply.to_text().expect("text").contains("\"id\":1"));
    })
    .await;
}

#[tokio::test]
async fn token_is_required_and_never_forwarded() {
    within("token", async {
        let chrome = Chromium::start().await;
        let relay = RelayFixture::start_with(&chrome.http(), |c| {
            c.policy = cdp_relay::ListenPolicy::new(
                "127.0.0.1:0".parse().expect("addr"),
                vec![],
                vec![],
                Some("t0ken-Secret".into()),
                false,
            )
            .expect("policy");
        })
        .await;
        let auth = relay.authority();
        let denied = get(&auth, "/json/version").await;
        assert_eq!(denied.status, 401);
        assert_eq!(denied.header("www-authenticate"), Some("Bearer"));
        assert!(!denied.text().contains("t0ken-Secret"));

        let by_header = request(
            &auth,
            "GET",
            "/json/version",
            &[("Authorization", "Bearer t0ken-Secret")],
        )
        .await;
        assert_eq!(by_header.status, 200);
        let ws = by_header.json()["webSocketDebuggerUrl"]
            .as_str()
            .expect("ws")
            .to_owned();
        assert!(!ws.contains("token="), "{ws}");
        assert_eq!(
            cdp_relay_tests::cdp::connect(&ws, &[])
                .await
                .err()
                .as_deref(),
            Some("HTTP 401")
        );
        assert!(
            cdp_relay_tests::cdp::connect(&ws, &[("Authorization", "Bearer t0ken-Secret")])
                .await
                .is_ok()
        );

        // A client that authenticated by query gets URLs it can follow as they are.
        let by_query = get(&auth, "/json/list?token=t0ken-Secret").await;
        assert_eq!(by_query.status, 200);
        let page_ws = by_query.json()[0]["webSocketDebuggerUrl"]
            .as_str()
            .expect("ws")
            .to_owned();
        assert!(page_ws.ends_with("?token=t0ken-Secret"), "{page_ws}");
        let mut cdp = cdp_relay_tests::cdp::Cdp::connect(&page_ws).await;
        let r = cdp
            .call("Runtime.evaluate", serde_json::json!({"expression": "6*7"}))
            .await;
        assert_eq!(r["result"]["value"], 42);
    })
    .await;
}

#[tokio::test]
async fn unreachable_upstream_is_a_502_with_a_reason() {
    within("502", async {
        // A port nothing listens on: bind, note the port, close.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let relay = RelayFixture::start(&format!("http://127.0.0.1:{port}")).await;
        let a = get(&relay.authority(), "/json/version").await;
        assert_eq!(a.status, 502);
        let text = a.text();
        assert_eq!(text.trim().lines().count(), 1, "{text}");
        assert!(text.contains("cannot reach the browser"), "{text}");
        let ws = format!("ws://{}/devtools/browser/x", relay.authority());
        assert_eq!(
            cdp_relay_tests::cdp::connect(&ws, &[])
                .await
                .err()
                .as_deref(),
            Some("HTTP 502")
        );
        // The relay still answers about itself.
        let status = get(&relay.authority(), "/relay/v1/status").await;
        assert_eq!(status.status, 200);
        assert_eq!(status.json()["stats"]["upgradesRefused"], 1);
    })
    .await;
}
