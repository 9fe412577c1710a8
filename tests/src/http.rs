//! A raw HTTP/1.1 client: tests need to send arbitrary Host and Origin headers and read exact
//! status lines, which a friendly client library would normalize away.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads a request head (through the blank line) one byte at a time, so nothing after it (a
/// websocket's first frame) is consumed. `None` when the peer goes away first or the head grows
/// past `limit` bytes.
pub async fn read_request_head(tcp: &mut TcpStream, limit: usize) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match tcp.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
        if head.len() > limit {
            return None;
        }
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// Header lines as (lowercased name, value).
    pub headers: Vec<(String, String)>,
    /// The body (Content-Length or read to close).
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as UTF-8 text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON (panics with the body on failure).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// First header value by (lowercase) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `METHOD path` to `addr` (`host:port`) with the given extra header lines.
/// `Host` defaults to `addr` unless `headers` carries one.
pub async fn request(addr: &str, method: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    request_with_body(addr, method, path, headers, b"").await
}

/// Like [`request`], with a body (`Content-Length` is added for PUT and POST).
pub async fn request_with_body(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    if method == "PUT" || method == "POST" {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    tcp.write_all(&bytes).await.expect("write");
    // Chrome keeps connections open whatever the request says: stop at Content-Length.
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if let Some(total) = complete_length(&raw) {
            if raw.len() >= total {
                break;
            }
        }
        match tcp.read(&mut buf).await.expect("read") {
            0 => break,
            n => raw.extend_from_slice(&buf[..n]),
        }
    }
    parse(&raw)
}

/// Total response length once the headers are in and carry a Content-Length.
fn complete_length(raw: &[u8]) -> Option<usize> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))?
        .trim()
        .parse::<usize>()
        .ok()?;
    Some(split + 4 + len)
}

/// `GET path` with default headers.
pub async fn get(addr: &str, path: &str) -> Answer {
    request(addr, "GET", path, &[]).await
}

fn parse(raw: &[u8]) -> Answer {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&data[..eol])
                .split(';')
                .next()
                .unwrap_or("0")
                .trim(),
            16,
        )
        .unwrap_or(0);
        if size == 0 || data.len() < eol + 2 + size {
            return out;
        }
        out.extend_from_slice(&data[eol + 2..eol + 2 + size]);
        data = &data[(eol + 4 + size).min(data.len())..];
    }
}
