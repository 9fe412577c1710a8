//! The relay tried as an attacker and a careless client would, side by side with Chromium's own
//! port as the reference: access rules, smuggled tokens, malformed frames, ping floods, slow and
//! idle connections, a dead browser behind a live relay.

use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::http::{get, request};
use cdp_relay_tests::raw::{self, client_frame, Incoming, Spy};
use cdp_relay_tests::{browser_ws, page_ws, rss_kib, within, Chromium, RelayProcess};
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The status of a websocket upgrade of `path` at `addr` with `headers` (sent as given).
async fn upgrade_status(addr: &str, path: &str, headers: &[(&str, &str)]) -> u16 {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    );
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    tcp.write_all(req.as_bytes()).await.expect("write");
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n") {
        if tcp.read(&mut b).await.expect("read") == 0 {
            break;
        }
        head.push(b[0]);
    }
    let line = String::from_utf8_lossy(&head).into_owned();
    line.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"))
}

fn path_of(ws_url: &str) -> String {
    let rest = ws_url.split_once("://").expect("scheme").1;
    rest[rest.find('/').expect("path")..].to_owned()
}

#[tokio::test]
async fn access_rules_match_chromium_side_by_side() {
    within("access rules", async {
        let chrome =
            Chromium::start_with(vec!["--remote-allow-origins=http://allowed.test".into()]).await;
        let relay =
            RelayProcess::serve(&chrome.http(), &["--allow-origin", "http://allowed.test"]).await;
        let direct = format!("127.0.0.1:{}", chrome.port());
        let relayed = relay.authority();

        for (what, path, headers) in [
            (
                "two Host headers",
                "/json/version",
                vec![("Host", "127.0.0.1"), ("Host", "evil.com")],
            ),
            (
                "two Host headers, the local one second",
                "/json/version",
                vec![("Host", "evil.com"), ("Host", "127.0.0.1")],
            ),
            (
                "absolute-form target",
                "http://evil.com/json/version",
                vec![],
            ),
            (
                "absolute-form target naming loopback",
                "http://127.0.0.1/json/version",
                vec![],
            ),
            ("an empty Host", "/json/version", vec![("Host", "")]),
            (
                "a foreign Host",
                "/json/version",
                vec![("Host", "evil.com")],
            ),
        ] {
            let d = request(&direct, "GET", path, &headers).await.status;
            let r = request(&relayed, "GET", path, &headers).await.status;
            assert_eq!(r, d, "{what}: relay {r}, Chromium {d}");
        }

        let chrome_ws = path_of(&browser_ws(&direct).await);
        let relay_ws = path_of(&browser_ws(&relayed).await);
        let chrome_own = format!("http://{direct}");
        let relay_own = format!("http://{relayed}");
        let chrome_own_path = format!("{chrome_own}/devtools/inspector.html");
        let relay_own_path = format!("{relay_own}/devtools/inspector.html");
        let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
            (
                "allowed",
                vec!["http://allowed.test"],
                vec!["http://allowed.test"],
            ),
            (
                "allowed, upper case",
                vec!["HTTP://ALLOWED.TEST"],
                vec!["HTTP://ALLOWED.TEST"],
            ),
            (
                "trailing slash",
                vec!["http://allowed.test/"],
                vec!["http://allowed.test/"],
            ),
            (
                "three slashes",
                vec!["http://allowed.test///"],
                vec!["http://allowed.test///"],
            ),
            (
                "two Origin headers, the first allowed",
                vec!["http://allowed.test", "http://evil.test"],
                vec!["http://allowed.test", "http://evil.test"],
            ),
            (
                "foreign",
                vec!["http://evil.test"],
                vec!["http://evil.test"],
            ),
            ("null", vec!["null"], vec!["null"]),
            ("its own origin", vec![&chrome_own], vec![&relay_own]),
            (
                "its own origin with a path",
                vec![&chrome_own_path],
                vec![&relay_own_path],
            ),
            (
                "the other one's origin",
                vec![&relay_own],
                vec![&chrome_own],
            ),
        ];
        for (what, to_chrome, to_relay) in cases {
            let h = |values: &[&str]| -> Vec<(String, String)> {
                values
                    .iter()
                    .map(|v| ("Origin".to_owned(), v.to_string()))
                    .collect()
            };
            let hc = h(&to_chrome);
            let hr = h(&to_relay);
            let hc: Vec<(&str, &str)> = hc.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            let hr: Vec<(&str, &str)> = hr.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            let d = upgrade_status(&direct, &chrome_ws, &hc).await;
            let r = upgrade_status(&relayed, &relay_ws, &hr).await;
            assert_eq!(r, d, "Origin {what}: relay {r}, Chromium {d}");
        }
    })
    .await;
}

#[tokio::test]
async fn chromiums_own_devtools_frontend_served_by_the_relay_connects_without_flags() {
    within("devtools frontend", async {
        let chrome = Chromium::start().await;
        let relay = RelayProcess::serve(&chrome.http(), &[]).await;
        let auth = relay.authority();
        let inspected = page_ws(&auth).await;
        let target = path_of(&inspected);
        let frontend = format!("http://{auth}/devtools/inspector.html?ws={auth}{target}");
        // Open the frontend in a new tab of the same browser, through the relay.
        let opened = request(&auth, "PUT", &format!("/json/new?{frontend}"), &[]).await;
        assert_eq!(opened.status, 200, "{}", opened.text());
        // The frontend connects back to the relay with Origin http://<relay>: wait for it.
        loop {
            let s = get(&auth, "/relay/v1/status").await.json();
            assert_eq!(s["stats"]["upgradesRefused"], 0, "frontend refused: {s}");
            if s["stats"]["sessionsTotal"].as_u64() >= Some(1) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_token_in_any_spelling_never_reaches_the_browser() {
    within("token smuggling", async {
        const TOKEN: &str = "Sm4ggl3dT0kenValue";
        let chrome = Chromium::start().await;
        let spy = Spy::start(&format!("127.0.0.1:{}", chrome.port())).await;
        let relay = RelayProcess::serve(&format!("http://{}", spy.addr), &["--token", TOKEN]).await;
        let auth = relay.authority();
        let bearer = format!("Bearer {TOKEN}");
        let version = request(&auth, "GET", "/json/version", &[("Authorization", &bearer)])
            .await
            .json();
        let ws_path = path_of(version["webSocketDebuggerUrl"].as_str().expect("ws"));
        for name in [
            "token",
            "%74oken",
            "t%6Fken",
            "to%6Ben",
            "toke%6E",
            "%74%6F%6B%65%6E",
            "%74%6f%6b%65%6e",
        ] {
            let q = format!("{name}={TOKEN}");
            let v = get(&auth, &format!("/json/version?{q}")).await;
            assert_eq!(v.status, 200, "{name} is accepted over HTTP");
            let new = request(&auth, "PUT", &format!("/json/new?about:blank&{q}"), &[]).await;
            assert_eq!(new.status, 200, "{name}: /json/new");
            // The new tab opened `about:blank`, not a URL carrying the token. (Rewritten websocket
            // URLs carry it back to a client that authenticated by query, by design.)
            let url = new.json()["url"].as_str().unwrap_or_default().to_owned();
            assert_eq!(url, "about:blank", "{name}");
            let status = upgrade_status(&auth, &format!("{ws_path}?{q}"), &[]).await;
            assert_eq!(status, 101, "{name} is accepted on websockets");
        }
        let seen = String::from_utf8_lossy(&spy.seen()).into_owned();
        assert!(
            seen.contains("GET /json/version"),
            "the spy saw the traffic"
        );
        assert!(!seen.contains(TOKEN), "the token reached the browser");
    })
    .await;
}

/// What a client sees after sending `frame` on a fresh session, then a good command: the first
/// thing that comes back, and whether the good command was answered.
async fn after_frame(addr: &str, path: &str, frame: &[u8]) -> (Incoming, bool) {
    let mut ws = raw::open(addr, path, &[]).await;
    ws.send(frame).await;
    let first = ws.next().await;
    if matches!(first, Incoming::Eof) || first.close_code().is_some() {
        return (first, false);
    }
    ws.send(&client_frame(
        true,
        0,
        1,
        br#"{"id":77,"method":"Browser.getVersion"}"#,
        true,
    ))
    .await;
    let answered = ws
        .until(|f| f.text().is_some_and(|t| t.contains("\"id\":77")))
        .await
        != Incoming::Eof;
    (first, answered)
}

#[tokio::test]
async fn malformed_frames_get_what_chromium_gives_or_a_protocol_close() {
    within("malformed frames", async {
        let chrome = Chromium::start().await;
        let relay = RelayProcess::serve(&chrome.http(), &[]).await;
        let direct = format!("127.0.0.1:{}", chrome.port());
        let relayed = relay.authority();
        let chrome_ws = path_of(&browser_ws(&direct).await);
        let relay_ws = path_of(&browser_ws(&relayed).await);

        // Chromium tolerates these: the relay must give the client exactly what Chromium gives.
        let tolerated: [(&str, Vec<u8>); 3] = [
            (
                "invalid UTF-8 text",
                client_frame(true, 0, 1, b"{\"id\":1,\"method\":\"x\xff\"}", true),
            ),
            (
                "a 200-byte ping",
                client_frame(true, 0, 9, &[b'p'; 200], true),
            ),
            (
                "a stray continuation",
                client_frame(
                    true,
                    0,
                    0,
                    br#"{"id":3,"method":"Browser.getVersion"}"#,
                    true,
                ),
            ),
        ];
        for (what, frame) in &tolerated {
            let (d, d_open) = after_frame(&direct, &chrome_ws, frame).await;
            let (r, r_open) = after_frame(&relayed, &relay_ws, frame).await;
            assert!(d_open, "Chromium kept the socket open after {what}");
            assert!(r_open, "the relay kept the socket open after {what}");
            match (&d, &r) {
                (Incoming::Frame(a, pa), Incoming::Frame(b, pb)) => {
                    assert_eq!(a, b, "{what}: same kind of answer");
                    if *a == 1 {
                        let da: serde_json::Value = serde_json::from_slice(pa).expect("json");
                        let db: serde_json::Value = serde_json::from_slice(pb).expect("json");
                        assert_eq!(da["error"]["code"], db["error"]["code"], "{what}");
                        assert_eq!(da["id"], db["id"], "{what}");
                    } else {
                        assert_eq!(pa, pb, "{what}: the same pong");
                    }
                }
                other => panic!("{what}: {other:?}"),
            }
        }
        // Invalid UTF-8 is answered with a parse error, as Chromium does.
        let (r, _) = after_frame(&relayed, &relay_ws, &tolerated[0].1).await;
        assert!(r.text().unwrap_or_default().contains("-32700"), "{r:?}");

        // Protocol violations: Chromium drops the TCP connection; the relay says why, 1002.
        let violations: [(&str, Vec<u8>); 3] = [
            (
                "an unmasked frame",
                client_frame(
                    true,
                    0,
                    1,
                    br#"{"id":1,"method":"Browser.getVersion"}"#,
                    false,
                ),
            ),
            (
                "reserved bits",
                client_frame(
                    true,
                    4,
                    1,
                    br#"{"id":1,"method":"Browser.getVersion"}"#,
                    true,
                ),
            ),
            ("a reserved opcode", client_frame(true, 0, 3, b"abc", true)),
        ];
        for (what, frame) in &violations {
            let (d, _) = after_frame(&direct, &chrome_ws, frame).await;
            assert_eq!(
                d,
                Incoming::Eof,
                "Chromium drops the connection after {what}"
            );
            let (r, _) = after_frame(&relayed, &relay_ws, frame).await;
            assert_eq!(r.close_code(), Some(1002), "{what}: {r:?}");
        }

        // A client's close code crosses, and the client hears the browser's answer, not its own
        // code echoed.
        for (addr, path) in [(&direct, &chrome_ws), (&relayed, &relay_ws)] {
            let mut ws = raw::open(addr, path, &[]).await;
            let mut payload = 4000u16.to_be_bytes().to_vec();
            payload.extend_from_slice(b"bye");
            ws.send(&client_frame(true, 0, 8, &payload, true)).await;
            let answer = ws.until(|f| f.close_code().is_some()).await;
            assert_eq!(answer.close_code(), Some(1000), "{addr}: {answer:?}");
        }
        // Once both closes have crossed, the relay drops the client's connection at once (as a
        // server should), instead of waiting for the client to do it.
        let mut ws = raw::open(&relayed, &relay_ws, &[]).await;
        let started = std::time::Instant::now();
        ws.send(&client_frame(true, 0, 8, &1000u16.to_be_bytes(), true))
            .await;
        assert_eq!(
            ws.until(|f| f.close_code().is_some()).await.close_code(),
            Some(1000)
        );
        assert_eq!(ws.next().await, Incoming::Eof);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "the relay held the closed session for {:?}",
            started.elapsed()
        );
        let stderr = relay.stop().await;
        assert_eq!(
            stderr.matches("broke the websocket protocol").count(),
            3,
            "logged once per violation:\n{stderr}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_ping_flood_from_a_client_that_never_reads_is_closed_and_memory_stays_flat() {
    within("ping flood", async {
        let chrome = Chromium::start().await;
        let relay = RelayProcess::serve(&chrome.http(), &["--no-evidence"]).await;
        let auth = relay.authority();
        let ws_path = path_of(&browser_ws(&auth).await);
        let before = rss_kib(relay.pid());
        let mut flooder = raw::open(&auth, &ws_path, &[]).await;
        // Never read: the pongs pile up unless someone stops the client.
        let _ = flooder.tcp.set_nodelay(true);
        let batch: Vec<u8> = (0..1000)
            .flat_map(|_| client_frame(true, 0, 9, b"ping", true))
            .collect();
        let mut sent = 0u64;
        let mut peak = before;
        let closed = loop {
            match flooder.tcp.write_all(&batch).await {
                Ok(()) => sent += 1000,
                Err(_) => break true,
            }
            peak = peak.max(rss_kib(relay.pid()));
            if sent > 50_000_000 {
                break false;
            }
        };
        assert!(closed, "the flooding client was never closed ({sent} pings)");
        // Others are unaffected.
        let mut cdp = Cdp::connect(&browser_ws(&auth).await).await;
        let v = cdp.call("Browser.getVersion", json!({})).await;
        assert!(v["product"].is_string(), "{v}");
        let grew = peak.saturating_sub(before);
        eprintln!("ping flood: {sent} pings sent before the close; relay RSS {before} KiB, peak +{grew} KiB");
        assert!(grew < 16 * 1024, "relay memory grew by {grew} KiB");
        let stderr = relay.stop().await;
        assert!(stderr.contains("pings without reading"), "{stderr}");
    })
    .await;
}

#[tokio::test]
async fn idle_half_open_connections_cannot_lock_out_clients() {
    within("slowloris", async {
        let chrome = Chromium::start().await;
        // A low descriptor limit: 300 idle connections would exhaust it.
        let relay = RelayProcess::spawn_with_fd_limit(
            96,
            &[
                "serve",
                "--upstream",
                &chrome.http(),
                "--listen",
                "127.0.0.1:0",
                "--no-evidence",
            ],
        )
        .await;
        let auth = relay.authority();
        let mut idle = Vec::new();
        for _ in 0..300 {
            if let Ok(mut tcp) = TcpStream::connect(&auth).await {
                // Headers that never finish.
                let _ = tcp
                    .write_all(b"GET /json/version HTTP/1.1\r\nHost: 127")
                    .await;
                idle.push(tcp);
            }
        }
        let started = std::time::Instant::now();
        let v = get(&auth, "/json/version").await;
        assert_eq!(v.status, 200);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a real client waited {:?}",
            started.elapsed()
        );
        drop(idle);
        let stderr = relay.stop().await;
        let lines = stderr.matches("had not sent a request").count();
        assert!(
            (1..=3).contains(&lines),
            "rate-limited log lines: {lines}\n{stderr}"
        );
        assert!(!stderr.contains("accept failed"), "{stderr}");
    })
    .await;
}

#[tokio::test]
async fn status_says_when_the_browser_behind_the_relay_died() {
    within("upstream health", async {
        let mut chrome = Chromium::start().await;
        let relay = RelayProcess::serve(&chrome.http(), &["--no-evidence"]).await;
        let auth = relay.authority();
        let health = |s: serde_json::Value| s["upstreamHealth"].clone();
        loop {
            let h = health(get(&auth, "/relay/v1/status").await.json());
            if h["reachable"] == true {
                assert!(h["since"].is_string(), "{h}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        chrome.kill().await;
        let h = loop {
            let h = health(get(&auth, "/relay/v1/status").await.json());
            if h["reachable"] == false {
                break h;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(h["since"].is_string() && h["reason"].is_string(), "{h}");
        assert!(!h.to_string().contains("/devtools/"), "{h}");
        relay.stop().await;
    })
    .await;
}
