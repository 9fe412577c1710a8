//! A scripted fake DevTools upstream, for fault injection only: the things a real Chromium will
//! not do on demand (vanish without a close frame, send an oversized message, answer garbage,
//! use custom close codes, flood a reader that does not read).

use futures_util::{SinkExt, StreamExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// What the fake does with each websocket.
#[derive(Debug, Clone)]
pub enum Script {
    /// Echo every data message; answer a close like a normal peer.
    Echo,
    /// After the first message arrives, drop the TCP connection without a close frame.
    VanishAfterFirstMessage,
    /// After the first message arrives, send one text message of this many bytes.
    SendBytes(usize),
    /// After the first message arrives, close with this code and reason.
    CloseWith(u16, &'static str),
    /// Send text messages of this size forever; count bytes that made it into the socket.
    Flood(usize),
}

/// What the fake HTTP server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMode {
    /// A plausible `/json/version` (so `serve` accepts it) and 404 elsewhere.
    DevTools,
    /// Bytes that are not HTTP at all.
    Garbage,
    /// HTTP 200 with a body that is not DevTools JSON.
    NotDevTools,
}

/// Things the fake saw.
#[derive(Debug)]
pub enum Seen {
    /// A data message arrived.
    Message(Message),
    /// A close frame arrived.
    Close(Option<CloseFrame>),
    /// A websocket upgrade request arrived with these raw request headers.
    Upgrade(String),
}

/// A running fake upstream; stops on drop.
pub struct FakeUpstream {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Events from the fake, in order.
    pub seen: mpsc::UnboundedReceiver<Seen>,
    /// Bytes successfully written by a [`Script::Flood`].
    pub flooded: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeUpstream {
    /// Starts the fake on an OS-chosen loopback port.
    pub async fn start(http: HttpMode, script: Script) -> FakeUpstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind fake");
        let addr = listener.local_addr().expect("addr").to_string();
        let (tx, seen) = mpsc::unbounded_channel();
        let flooded = Arc::new(AtomicU64::new(0));
        let counter = flooded.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (tx, script, counter) = (tx.clone(), script.clone(), counter.clone());
                tokio::spawn(serve(tcp, http, script, tx, counter));
            }
        });
        FakeUpstream {
            addr,
            seen,
            flooded,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn http(&self) -> String {
        format!("http://{}", self.addr)
    }
}

async fn serve(
    mut tcp: TcpStream,
    http: HttpMode,
    script: Script,
    tx: mpsc::UnboundedSender<Seen>,
    flooded: Arc<AtomicU64>,
) {
    let Some(head) = crate::http::read_request_head(&mut tcp, usize::MAX).await else {
        return;
    };
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    if let Some(key) = header("sec-websocket-key") {
        let _ = tx.send(Seen::Upgrade(head.clone()));
        let resp = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
            derive_accept_key(key.as_bytes())
        );
        if tcp.write_all(resp.as_bytes()).await.is_err() {
            return;
        }
        let config = WebSocketConfig::default()
            .max_message_size(None)
            .max_frame_size(None);
        let ws = WebSocketStream::from_raw_socket(tcp, Role::Server, Some(config)).await;
        run_script(ws, script, tx, flooded).await;
        return;
    }
    let port = tcp.local_addr().map(|a| a.port()).unwrap_or_default();
    let resp = match http {
        HttpMode::Garbage => "\u{1}\u{2}garbage, not HTTP\r\n\r\n".to_owned(),
        HttpMode::NotDevTools => {
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\r\n<html></html>"
                .to_owned()
        }
        HttpMode::DevTools if head.starts_with("GET /json/version") => {
            let body = format!(
                "{{\"Browser\":\"Fake/1.0\",\"webSocketDebuggerUrl\":\"ws://127.0.0.1:{port}/devtools/browser/fake\"}}"
            );
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=UTF-8\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
        }
        HttpMode::DevTools => {
            "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found".to_owned()
        }
    };
    let _ = tcp.write_all(resp.as_bytes()).await;
    let _ = tcp.shutdown().await;
}

async fn run_script(
    mut ws: WebSocketStream<TcpStream>,
    script: Script,
    tx: mpsc::UnboundedSender<Seen>,
    flooded: Arc<AtomicU64>,
) {
    if let Script::Flood(size) = script {
        let payload = "x".repeat(size);
        loop {
            if ws.send(Message::text(payload.clone())).await.is_err() {
                return;
            }
            flooded.fetch_add(size as u64, Ordering::Relaxed);
        }
    }
    while let Some(Ok(msg)) = ws.next().await {
        match msg {
            Message::Close(frame) => {
                let _ = tx.send(Seen::Close(frame));
                // Reading on writes tungstenite's close reply.
                while let Some(Ok(_)) = ws.next().await {}
                return;
            }
            Message::Text(_) | Message::Binary(_) => {
                let _ = tx.send(Seen::Message(msg.clone()));
                match &script {
                    Script::Echo => {
                        if ws.send(msg).await.is_err() {
                            return;
                        }
                    }
                    Script::VanishAfterFirstMessage => return,
                    Script::SendBytes(n) => {
                        let _ = ws.send(Message::text("y".repeat(*n))).await;
                    }
                    Script::CloseWith(code, reason) => {
                        let frame = CloseFrame {
                            code: (*code).into(),
                            reason: (*reason).into(),
                        };
                        let _ = ws.send(Message::Close(Some(frame))).await;
                    }
                    Script::Flood(_) => return,
                }
            }
            _ => {}
        }
    }
}
