//! A synthetic CDP upstream for benchmarks: answers instantly, so what a relay adds is not hidden
//! behind Chromium's own latency and noise. It speaks enough of Chrome's DevTools HTTP surface for
//! a relay to accept it (`/json/version`, `/json/list`) and, on any `/devtools/...` websocket:
//!
//! - every command `{"id":N,...}` is answered `{"id":N,"result":{}}` at once;
//! - `Synthetic.blob {"size":S}` is answered with a result carrying `S` bytes of text;
//! - `Synthetic.flood {"count":C,"kind":"console"|"network","rate":R}` emits C events back to back
//!   (or R per second), then answers: `console` errors, or `network` requests as Chromium reports
//!   them (sent, response, finished; one in ten a 404).
//!
//! Usage: `cdp-synthetic` prints `http://127.0.0.1:PORT` on stdout and serves until killed.

#![forbid(unsafe_code)]

use cdp_relay_tests::http::read_request_head;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    println!("http://127.0.0.1:{port}");
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(serve(tcp, port));
    }
}

async fn serve(mut tcp: TcpStream, port: u16) {
    let Some(text) = read_request_head(&mut tcp, 16 * 1024).await else {
        return;
    };
    let path = text.split(' ').nth(1).unwrap_or("/").to_owned();
    if text.to_ascii_lowercase().contains("upgrade: websocket") {
        let key = text
            .lines()
            .find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim()
                    .eq_ignore_ascii_case("sec-websocket-key")
                    .then(|| v.trim().to_owned())
            })
            .unwrap_or_default();
        let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
        let reply = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
        );
        if tcp.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
        let config = WebSocketConfig::default()
            .max_message_size(Some(1 << 30))
            .max_frame_size(Some(1 << 30));
        let ws = tokio_tungstenite::WebSocketStream::from_raw_socket(
            tcp,
            tokio_tungstenite::tungstenite::protocol::Role::Server,
            Some(config),
        )
        .await;
        websocket(ws).await;
        return;
    }
    let ws_url = format!("ws://127.0.0.1:{port}/devtools/browser/synthetic");
    let body = match path.trim_end_matches('/') {
        "/json/version" => json!({
            "Browser": "Synthetic/1.0",
            "Protocol-Version": "1.3",
            "webSocketDebuggerUrl": ws_url,
        }),
        "/json" | "/json/list" => json!([{
            "id": "SYNTHETIC",
            "type": "page",
            "title": "synthetic",
            "url": "about:blank",
            "webSocketDebuggerUrl": format!("ws://127.0.0.1:{port}/devtools/page/SYNTHETIC"),
        }]),
        _ => Value::Null,
    };
    let (status, body) = if body.is_null() {
        ("404 Not Found", String::new())
    } else {
        ("200 OK", body.to_string())
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json; charset=UTF-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tcp.write_all(reply.as_bytes()).await;
}

async fn websocket(ws: tokio_tungstenite::WebSocketStream<TcpStream>) {
    let (mut tx, mut rx) = ws.split();
    while let Some(Ok(msg)) = rx.next().await {
        let Message::Text(text) = msg else {
            continue;
        };
        let cmd: Value = match serde_json::from_str(text.as_str()) {
            Ok(v) => v,
            Err(_) => continue,
        };
        let id = cmd["id"].clone();
        match cmd["method"].as_str().unwrap_or_default() {
            "Synthetic.blob" => {
                let size = cmd["params"]["size"].as_u64().unwrap_or(0) as usize;
                let reply = format!(
                    "{{\"id\":{id},\"result\":{{\"data\":\"{}\"}}}}",
                    "x".repeat(size)
                );
                if tx.send(Message::text(reply)).await.is_err() {
                    return;
                }
            }
            "Synthetic.flood" => {
                let count = cmd["params"]["count"].as_u64().unwrap_or(0);
                let console = cmd["params"]["kind"] == "console";
                // Events per second; 0 = as fast as the socket takes them.
                let rate = cmd["params"]["rate"].as_u64().unwrap_or(0);
                let started = tokio::time::Instant::now();
                for i in 0..count {
                    if rate > 0 && i % 100 == 0 {
                        let due =
                            started + std::time::Duration::from_secs_f64(i as f64 / rate as f64);
                        if tx.flush().await.is_err() {
                            return;
                        }
                        tokio::time::sleep_until(due).await;
                    }
                    let event = if console {
                        format!("{{\"method\":\"Runtime.consoleAPICalled\",\"params\":{{\"type\":\"error\",\"args\":[{{\"type\":\"string\",\"value\":\"flood {i}\"}}],\"executionContextId\":1,\"timestamp\":{i}}}}}")
                    } else {
                        network_event(i)
                    };
                    if tx.feed(Message::text(event)).await.is_err() {
                        return;
                    }
                }
                if tx
                    .send(Message::text(format!("{{\"id\":{id},\"result\":{{}}}}")))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            _ => {
                if tx
                    .send(Message::text(format!("{{\"id\":{id},\"result\":{{}}}}")))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

/// Event `i` of a network flood: requests go through Chromium's usual three events (sent,
/// response, finished); one request in ten answers 404, which a recorder keeps as a failure.
fn network_event(i: u64) -> String {
    let r = i / 3;
    match i % 3 {
        0 => format!("{{\"method\":\"Network.requestWillBeSent\",\"params\":{{\"requestId\":\"{r}\",\"request\":{{\"url\":\"https://example.com/r/{r}?q=1\",\"method\":\"GET\",\"headers\":{{\"Accept\":\"*/*\"}}}},\"timestamp\":{r}.0,\"wallTime\":{r}.0,\"type\":\"Fetch\",\"initiator\":{{\"type\":\"script\"}}}}}}"),
        1 => {
            let status = if r.is_multiple_of(10) { 404 } else { 200 };
            format!("{{\"method\":\"Network.responseReceived\",\"params\":{{\"requestId\":\"{r}\",\"timestamp\":{r}.5,\"type\":\"Fetch\",\"response\":{{\"url\":\"https://example.com/r/{r}?q=1\",\"status\":{status},\"statusText\":\"\",\"headers\":{{\"content-type\":\"application/json\"}},\"mimeType\":\"application/json\"}}}}}}")
        }
        _ => format!("{{\"method\":\"Network.loadingFinished\",\"params\":{{\"requestId\":\"{r}\",\"timestamp\":{r}.9,\"encodedDataLength\":512}}}}"),
    }
}
