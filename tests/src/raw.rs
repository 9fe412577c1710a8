//! Raw websocket and TCP tools for hostile tests: hand-built frames (malformed ones included), a
//! frame reader that reports exactly what a peer sent, and a spy that sits between the relay and
//! the real browser and records what reached the browser.

use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A websocket opened by hand, with any bytes that came right behind the 101.
pub struct RawWs {
    /// The socket.
    pub tcp: TcpStream,
    buf: Vec<u8>,
}

/// What the peer sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// A frame: opcode and (unmasked) payload.
    Frame(u8, Vec<u8>),
    /// The connection ended without (more) frames.
    Eof,
}

impl Incoming {
    /// The status code of a close frame.
    pub fn close_code(&self) -> Option<u16> {
        match self {
            Incoming::Frame(8, p) if p.len() >= 2 => Some(u16::from_be_bytes([p[0], p[1]])),
            _ => None,
        }
    }

    /// The payload of a text frame.
    pub fn text(&self) -> Option<String> {
        match self {
            Incoming::Frame(1, p) => Some(String::from_utf8_lossy(p).into_owned()),
            _ => None,
        }
    }
}

/// Upgrades `path` at `addr` with the given extra headers; panics unless the answer is 101.
pub async fn open(addr: &str, path: &str, headers: &[(&str, &str)]) -> RawWs {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    );
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    tcp.write_all(req.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    let end = loop {
        let mut chunk = [0u8; 4096];
        let n = tcp.read(&mut chunk).await.expect("read");
        assert!(n > 0, "closed during the handshake");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    assert!(head.starts_with("HTTP/1.1 101"), "not upgraded: {head}");
    RawWs {
        tcp,
        buf: buf[end..].to_vec(),
    }
}

impl RawWs {
    /// Sends raw bytes.
    pub async fn send(&mut self, bytes: &[u8]) {
        self.tcp.write_all(bytes).await.expect("send");
    }

    /// Reads the next frame, or `Eof` once the peer closed (or reset) the connection.
    pub async fn next(&mut self) -> Incoming {
        loop {
            if let Some((frame, used)) = parse_server_frame(&self.buf) {
                self.buf.drain(..used);
                return frame;
            }
            let mut chunk = vec![0u8; 64 * 1024];
            match self.tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return Incoming::Eof,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Reads frames until one satisfies `want` or the connection ends; returns that frame or
    /// `Eof`.
    pub async fn until(&mut self, want: impl Fn(&Incoming) -> bool) -> Incoming {
        loop {
            let f = self.next().await;
            if f == Incoming::Eof || want(&f) {
                return f;
            }
        }
    }
}

/// Parses one unmasked or masked frame from the front of `buf`.
fn parse_server_frame(buf: &[u8]) -> Option<(Incoming, usize)> {
    if buf.len() < 2 {
        return None;
    }
    let opcode = buf[0] & 0x0F;
    let masked = buf[1] & 0x80 != 0;
    let (len, mut at) = match buf[1] & 0x7F {
        126 => (
            u64::from(u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?])),
            4,
        ),
        127 => {
            let b: [u8; 8] = buf.get(2..10)?.try_into().ok()?;
            (u64::from_be_bytes(b), 10)
        }
        n => (u64::from(n), 2),
    };
    let key = if masked {
        let k: [u8; 4] = buf.get(at..at + 4)?.try_into().ok()?;
        at += 4;
        Some(k)
    } else {
        None
    };
    let end = at + usize::try_from(len).ok()?;
    let mut payload = buf.get(at..end)?.to_vec();
    if let Some(k) = key {
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= k[i % 4];
        }
    }
    Some((Incoming::Frame(opcode, payload), end))
}

/// A frame as a client writes it: masked with a fixed key unless `masked` is false, `rsv` in
/// bits 4–6 of the first byte.
pub fn client_frame(fin: bool, rsv: u8, opcode: u8, payload: &[u8], masked: bool) -> Vec<u8> {
    let mut out = vec![(if fin { 0x80 } else { 0 }) | (rsv & 0x7) << 4 | opcode];
    let m = if masked { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(m | n as u8),
        n if n < 65536 => {
            out.push(m | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(m | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    if masked {
        let key = [0x37, 0xFA, 0x21, 0x3D];
        out.extend_from_slice(&key);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    } else {
        out.extend_from_slice(payload);
    }
    out
}

/// A TCP forwarder in front of `target` that records every byte sent towards it: put it between
/// the relay and the real browser to see exactly what reached the browser.
pub struct Spy {
    /// `127.0.0.1:PORT` to give the relay as its upstream.
    pub addr: String,
    seen: Arc<Mutex<Vec<u8>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Spy {
    /// Starts forwarding to `target` (`host:port`).
    pub async fn start(target: &str) -> Spy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind spy");
        let addr = listener.local_addr().expect("addr").to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let target = target.to_owned();
        let recorded = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = TcpStream::connect(&target).await else {
                    continue;
                };
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let (mut ir, mut iw) = inbound.into_split();
                    let (mut or, mut ow) = outbound.into_split();
                    let up = async {
                        let mut buf = vec![0u8; 64 * 1024];
                        while let Ok(n) = ir.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            recorded
                                .lock()
                                .expect("spy lock")
                                .extend_from_slice(&buf[..n]);
                            if ow.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                        let _ = ow.shutdown().await;
                    };
                    let down = async {
                        let _ = tokio::io::copy(&mut or, &mut iw).await;
                        let _ = iw.shutdown().await;
                    };
                    tokio::join!(up, down);
                });
            }
        });
        Spy { addr, seen, task }
    }

    /// Everything sent towards the target so far (websocket payloads still masked).
    pub fn seen(&self) -> Vec<u8> {
        self.seen.lock().expect("spy lock").clone()
    }
}

impl Drop for Spy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
