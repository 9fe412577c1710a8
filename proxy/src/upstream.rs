//! Talking to the browser's DevTools server: one short HTTP/1.1 exchange per discovery request,
//! `/json/version`, and the upstream half of a websocket splice. Always sends `Host: 127.0.0.1:<port>`, which is
//! the only kind of Host Chrome accepts besides `localhost`, and never forwards a client's Origin.

use crate::Upstream;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full, Limited};
use hyper::header::{
    HeaderMap, HeaderValue, CONNECTION, CONTENT_TYPE, HOST, SEC_WEBSOCKET_ACCEPT,
    SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

/// How long to wait for the browser to accept a TCP connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a discovery request may take end to end (`/json/new` opens a tab).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest discovery body relayed (`/json/protocol` is about 1 MiB; frontend files are small).
pub const MAX_HTTP_BODY: usize = 64 * 1024 * 1024;

/// Why talking to the browser failed. Messages never contain capability ids.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// TCP connect failed or timed out.
    #[error("cannot reach the browser at {addr}: {reason}")]
    Connect {
        /// `host:port`.
        addr: String,
        /// The OS error, or "timed out".
        reason: String,
    },
    /// The exchange failed after connecting.
    #[error("the browser at {addr} broke off the request: {reason}")]
    Exchange {
        /// `host:port`.
        addr: String,
        /// What went wrong.
        reason: String,
    },
    /// The browser refused the websocket upgrade.
    #[error("the browser at {addr} refused the websocket with HTTP {status}")]
    Refused {
        /// `host:port`.
        addr: String,
        /// The status it answered with.
        status: u16,
    },
    /// It answered, but not like a DevTools server.
    #[error("{addr} is not a DevTools endpoint: {reason}")]
    NotDevTools {
        /// `host:port`.
        addr: String,
        /// What was wrong with the answer.
        reason: String,
    },
}

/// A relayed HTTP answer.
#[derive(Debug)]
pub struct HttpAnswer {
    /// The status.
    pub status: StatusCode,
    /// `Content-Type`, if any.
    pub content_type: Option<HeaderValue>,
    /// The whole body (at most [`MAX_HTTP_BODY`]).
    pub body: Bytes,
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
pub async fn http(
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
pub struct BrowserSocket {
    /// The raw socket, for the splice.
    pub tcp: TcpStream,
    /// Frames the browser sent right behind its 101, already read.
    pub leftover: Bytes,
    /// The subprotocol the browser picked, if any.
    pub protocol: Option<HeaderValue>,
}

/// Opens the upstream websocket for `path_and_query` (a `/devtools/...` path), offering the
/// client's subprotocols and no extensions (frames then cross unchanged). The handshake is
/// hyper's client upgrade, the mirror of the server side; the splice then gets the raw socket.
pub async fn websocket(
    up: &Upstream,
    path_and_query: &str,
    client_headers: &HeaderMap,
) -> Result<BrowserSocket, UpstreamError> {
    let addr = up.authority();
    let broke = |reason: String| UpstreamError::Exchange {
        addr: addr.clone(),
        reason,
    };
    let tcp = connect(up).await?;
    let key = {
        use base64::Engine;
        let raw: [u8; 16] = std::array::from_fn(|_| fastrand::u8(..));
        base64::engine::general_purpose::STANDARD.encode(raw)
    };
    let mut req = Request::get(path_and_query)
        .header(HOST, up.host_header())
        .header(UPGRADE, "websocket")
        .header(CONNECTION, "Upgrade")
        .header(SEC_WEBSOCKET_KEY, &key)
        .header(SEC_WEBSOCKET_VERSION, "13");
    for p in client_headers.get_all(SEC_WEBSOCKET_PROTOCOL) {
        req = req.header(SEC_WEBSOCKET_PROTOCOL, p);
    }
    // The path names a capability id: the error says only that the request was unusable.
    let req = req
        .body(Empty::<Bytes>::new())
        .map_err(|_| broke("the websocket path is not a valid request target".into()))?;
    let exchange = async {
        let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
            .title_case_headers(true)
            .handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| broke(e.to_string()))?;
        // Resolves once the connection is handed over to the upgrade (or fails).
        let conn = tokio::spawn(conn.with_upgrades());
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| broke(e.to_string()))?;
        if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
            conn.abort();
            return Err(UpstreamError::Refused {
                addr: addr.clone(),
                status: resp.status().as_u16(),
            });
        }
        let expected = derive_accept_key(key.as_bytes());
        if resp
            .headers()
            .get(SEC_WEBSOCKET_ACCEPT)
            .map(|v| v.as_bytes())
            != Some(expected.as_bytes())
        {
            conn.abort();
            return Err(broke(
                "the browser's websocket handshake answer is not valid".into(),
            ));
        }
        let protocol = resp.headers().get(SEC_WEBSOCKET_PROTOCOL).cloned();
        let upgraded = hyper::upgrade::on(resp)
            .await
            .map_err(|e| broke(e.to_string()))?;
        let parts = upgraded
            .downcast::<TokioIo<TcpStream>>()
            .map_err(|_| broke("unexpected connection type after the upgrade".into()))?;
        Ok(BrowserSocket {
            tcp: parts.io.into_inner(),
            leftover: parts.read_buf,
            protocol,
        })
    };
    timeout(CONNECT_TIMEOUT, exchange)
        .await
        .map_err(|_| broke("websocket handshake timed out".into()))?
}

/// What a DevTools server's `/json/version` says about the browser.
#[derive(Debug, Clone)]
pub struct BrowserVersion {
    /// `webSocketDebuggerUrl`: the browser endpoint (a capability URL: never log it).
    pub websocket_url: String,
    /// `Browser`, e.g. `Chrome/156.0.8078.114`, when given.
    pub product: Option<String>,
}

impl BrowserVersion {
    /// The `/devtools/browser/<id>` path of [`BrowserVersion::websocket_url`].
    pub fn websocket_path(&self) -> Option<&str> {
        self.websocket_url
            .find("/devtools/")
            .map(|i| &self.websocket_url[i..])
    }
}

/// Asks `up` for `/json/version`: the one reader of it, for the relay's startup probe, its own
/// observer and the demo's client (pointed at a relay, the URL is the relay's rewrite).
pub async fn version(up: &Upstream) -> Result<BrowserVersion, UpstreamError> {
    let not_devtools = |reason: &str| UpstreamError::NotDevTools {
        addr: up.authority(),
        reason: reason.to_owned(),
    };
    let answer = http(up, Method::GET, "/json/version", None, Bytes::new()).await?;
    if !answer.status.is_success() {
        return Err(not_devtools(&format!(
            "/json/version answered HTTP {}",
            answer.status.as_u16()
        )));
    }
    let v: serde_json::Value = serde_json::from_slice(&answer.body)
        .map_err(|_| not_devtools("/json/version did not answer JSON"))?;
    let websocket_url = v
        .get("webSocketDebuggerUrl")
        .and_then(|u| u.as_str())
        .filter(|u| u.contains("/devtools/"))
        .ok_or_else(|| {
            not_devtools(
                "/json/version has no webSocketDebuggerUrl (is this a Chrome DevTools endpoint?)",
            )
        })?
        .to_owned();
    let product = v.get("Browser").and_then(|b| b.as_str()).map(str::to_owned);
    Ok(BrowserVersion {
        websocket_url,
        product,
    })
}

/// Checks that the upstream answers `/json/version` like a DevTools server.
pub async fn probe(up: &Upstream) -> Result<(), crate::Error> {
    version(up)
        .await
        .map(drop)
        .map_err(|e| crate::Error::Upstream {
            upstream: up.authority(),
            reason: match e {
                UpstreamError::NotDevTools { reason, .. } => reason,
                other => other.to_string(),
            },
        })
}
