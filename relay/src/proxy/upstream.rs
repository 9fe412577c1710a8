//! Talking to the browser's DevTools server: one short HTTP/1.1 exchange per discovery request,
//! and the upstream half of a websocket splice. Always sends `Host: 127.0.0.1:<port>`, which is
//! the only kind of Host Chrome accepts besides `localhost`, and never forwards a client's Origin.

use crate::config::Upstream;
use bytes::Bytes;
use bytes::BytesMut;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE, HOST, SEC_WEBSOCKET_PROTOCOL};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

/// How long to wait for the browser to accept a TCP connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a discovery request may take end to end (`/json/new` opens a tab).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest discovery body relayed (`/json/protocol` is about 1 MiB; frontend files are small).
pub(crate) const MAX_HTTP_BODY: usize = 64 * 1024 * 1024;

/// Why talking to the browser failed. Messages never contain capability ids.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpstreamError {
    /// TCP connect failed or timed out.
    #[error("cannot reach the browser at {addr}: {reason}")]
    Connect { addr: String, reason: String },
    /// The exchange failed after connecting.
    #[error("the browser at {addr} broke off the request: {reason}")]
    Exchange { addr: String, reason: String },
    /// The browser refused the websocket upgrade.
    #[error("the browser at {addr} refused the websocket with HTTP {status}")]
    Refused { addr: String, status: u16 },
}

/// A relayed HTTP answer.
#[derive(Debug)]
pub(crate) struct HttpAnswer {
    pub(crate) status: StatusCode,
    pub(crate) content_type: Option<HeaderValue>,
    pub(crate) body: Bytes,
}

async fn connect(up: &Upstream) -> Result<TcpStream, UpstreamError> {
    let addr = up.authority();
    let fail = |reason: String| UpstreamError::Connect {
        addr: addr.clone(),
        reason,
    };
    let tcp = timeout(CONNECT_TIMEOUT, TcpStream::connect(&addr))
        .await
        .map_err(|_| fail("timed out".into()))?
        .map_err(|e| fail(e.to_string()))?;
    // CDP is request/response chatter; Nagle would add up to 40 ms per small frame.
    let _ = tcp.set_nodelay(true);
    Ok(tcp)
}

/// One discovery request. The connection is not pooled: discovery is rare and Chrome's server
/// closes idle connections on its own schedule.
pub(crate) async fn http(
    up: &Upstream,
    method: Method,
    path_and_query: &str,
    content_type: Option<&HeaderValue>,
    body: Bytes,
) -> Result<HttpAnswer, UpstreamError> {
    let addr = up.authority();
    let broke = |reason: String| UpstreamError::Exchange {
        addr: addr.clone(),
        reason,
    };
    let tcp = connect(up).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| broke(e.to_string()))?;
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut req = Request::builder()
        .method(method)
        .uri(path_and_query)
        .header(HOST, up.host_header());
    if let Some(ct) = content_type {
        req = req.header(CONTENT_TYPE, ct);
    }
    let req = req
        .body(Full::new(body))
        .map_err(|e| broke(e.to_string()))?;
    let exchange = async {
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| broke(e.to_string()))?;
        let (parts, body) = resp.into_parts();
        let body = Limited::new(body, MAX_HTTP_BODY)
            .collect()
            .await
            .map_err(|e| broke(e.to_string()))?
            .to_bytes();
        Ok(HttpAnswer {
            status: parts.status,
            content_type: parts.headers.get(CONTENT_TYPE).cloned(),
            body,
        })
    };
    let out = timeout(REQUEST_TIMEOUT, exchange)
        .await
        .map_err(|_| broke("timed out".into()))?;
    conn.abort();
    out
}

/// The browser side of a websocket session, after its handshake.
pub(crate) struct BrowserSocket {
    pub(crate) tcp: TcpStream,
    /// Frames the browser sent right behind its 101, already read.
    pub(crate) leftover: Bytes,
    /// The subprotocol the browser picked, if any.
    pub(crate) protocol: Option<HeaderValue>,
}

/// Largest handshake response accepted from the browser.
const MAX_HANDSHAKE: usize = 16 * 1024;

/// Opens the upstream websocket for `path_and_query` (a `/devtools/...` path), offering the
/// client's subprotocols and no extensions (frames then cross unchanged).
pub(crate) async fn websocket(
    up: &Upstream,
    path_and_query: &str,
    client_headers: &HeaderMap,
) -> Result<BrowserSocket, UpstreamError> {
    let addr = up.authority();
    let broke = |reason: String| UpstreamError::Exchange {
        addr: addr.clone(),
        reason,
    };
    let mut tcp = connect(up).await?;
    let key = {
        use base64::Engine;
        let raw: [u8; 16] = std::array::from_fn(|_| fastrand::u8(..));
        base64::engine::general_purpose::STANDARD.encode(raw)
    };
    let mut request = format!(
        "GET {path_and_query} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n",
        up.host_header()
    );
    for p in client_headers.get_all(SEC_WEBSOCKET_PROTOCOL) {
        if let Ok(p) = p.to_str() {
            request.push_str(&format!("Sec-WebSocket-Protocol: {p}\r\n"));
        }
    }
    request.push_str("\r\n");
    let exchange = async {
        tcp.write_all(request.as_bytes())
            .await
            .map_err(|e| broke(e.to_string()))?;
        let mut buf = BytesMut::with_capacity(1024);
        loop {
            if tcp
                .read_buf(&mut buf)
                .await
                .map_err(|e| broke(e.to_string()))?
                == 0
            {
                return Err(broke(
                    "the browser closed the connection during the websocket handshake".into(),
                ));
            }
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(&buf) {
                Ok(httparse::Status::Complete(len)) => {
                    let status = resp.code.unwrap_or(0);
                    if status != 101 {
                        return Err(UpstreamError::Refused {
                            addr: addr.clone(),
                            status,
                        });
                    }
                    let header = |name: &str| {
                        resp.headers
                            .iter()
                            .find(|h| h.name.eq_ignore_ascii_case(name))
                            .map(|h| h.value)
                    };
                    let expected = derive_accept_key(key.as_bytes());
                    if header("sec-websocket-accept") != Some(expected.as_bytes()) {
                        return Err(broke(
                            "the browser's websocket handshake answer is not valid".into(),
                        ));
                    }
                    let protocol = header("sec-websocket-protocol")
                        .and_then(|v| HeaderValue::from_bytes(v).ok());
                    let leftover = buf.split_off(len).freeze();
                    return Ok((leftover, protocol));
                }
                Ok(httparse::Status::Partial) if buf.len() < MAX_HANDSHAKE => {}
                _ => {
                    return Err(broke(
                        "the browser's websocket handshake answer is not HTTP".into(),
                    ))
                }
            }
        }
    };
    let (leftover, protocol) = timeout(CONNECT_TIMEOUT, exchange)
        .await
        .map_err(|_| broke("websocket handshake timed out".into()))??;
    Ok(BrowserSocket {
        tcp,
        leftover,
        protocol,
    })
}

/// Checks that the upstream answers `/json/version` like a DevTools server.
pub async fn probe(up: &Upstream) -> Result<(), crate::Error> {
    let err = |reason: String| crate::Error::Upstream {
        upstream: up.authority(),
        reason,
    };
    let answer = http(up, Method::GET, "/json/version", None, Bytes::new())
        .await
        .map_err(|e| err(e.to_string()))?;
    if !answer.status.is_success() {
        return Err(err(format!(
            "/json/version answered HTTP {}",
            answer.status.as_u16()
        )));
    }
    let v: serde_json::Value = serde_json::from_slice(&answer.body)
        .map_err(|_| err("/json/version did not answer JSON".into()))?;
    if v.get("webSocketDebuggerUrl")
        .and_then(|u| u.as_str())
        .is_none()
    {
        return Err(err(
            "/json/version has no webSocketDebuggerUrl (is this a Chrome DevTools endpoint?)"
                .into(),
        ));
    }
    Ok(())
}
