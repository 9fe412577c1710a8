//! A minimal CDP client over tokio-tungstenite, for tests that need exact frames.

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Websocket type used by the tests.
pub type Ws = WebSocketStream<TcpStream>;

/// Opens a websocket to `url` (`ws://host:port/path`), with optional extra request headers.
pub async fn connect(url: &str, headers: &[(&str, &str)]) -> Result<Ws, String> {
    let mut req = url.into_client_request().map_err(|e| e.to_string())?;
    for (n, v) in headers {
        req.headers_mut().insert(
            tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(n.as_bytes())
                .map_err(|e| e.to_string())?,
            v.parse().map_err(|_| "bad header value".to_string())?,
        );
    }
    let authority = req
        .uri()
        .authority()
        .map(|a| a.to_string())
        .ok_or("no authority")?;
    let tcp = TcpStream::connect(&authority)
        .await
        .map_err(|e| e.to_string())?;
    let config = WebSocketConfig::default()
        .max_message_size(Some(512 << 20))
        .max_frame_size(Some(512 << 20));
    let (ws, _) = tokio_tungstenite::client_async_with_config(req, tcp, Some(config))
        .await
        .map_err(|e| match e {
            tokio_tungstenite::tungstenite::Error::Http(resp) => {
                format!("HTTP {}", resp.status().as_u16())
            }
            other => other.to_string(),
        })?;
    Ok(ws)
}

/// A CDP session over one websocket.
pub struct Cdp {
    /// The socket, for tests that need raw access.
    pub ws: Ws,
    next_id: u64,
}

impl Cdp {
    /// Connects to a `webSocketDebuggerUrl`.
    pub async fn connect(url: &str) -> Cdp {
        let ws = connect(url, &[])
            .await
            .unwrap_or_else(|e| panic!("connect {url}: {e}"));
        Cdp { ws, next_id: 1 }
    }

    /// Sends a command and returns the raw text of its response (events are skipped).
    pub async fn call_raw(&mut self, method: &str, params: Value, session: Option<&str>) -> String {
        let id = self.next_id;
        self.next_id += 1;
        let mut cmd = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            cmd["sessionId"] = json!(s);
        }
        self.ws
            .send(Message::text(cmd.to_string()))
            .await
            .expect("send command");
        loop {
            match self.ws.next().await {
                Some(Ok(Message::Text(t))) => {
                    let v: Value = serde_json::from_str(&t).expect("CDP JSON");
                    if v.get("id").and_then(Value::as_u64) == Some(id) {
                        return t.to_string();
                    }
                }
                Some(Ok(_)) => {}
                other => panic!("socket ended while waiting for {method}: {other:?}"),
            }
        }
    }

    /// Sends a command and returns its `result` (panics on a CDP error).
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.call_in(method, params, None).await
    }

    /// Sends a command on a flattened session.
    pub async fn call_in(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        let raw = self.call_raw(method, params, session).await;
        let v: Value = serde_json::from_str(&raw).expect("JSON");
        if let Some(e) = v.get("error") {
            panic!("{method} failed: {e}");
        }
        v["result"].clone()
    }

    /// Reads until the socket reports a close frame (returned) or ends without one (`None`).
    /// Keeps reading after the frame so tungstenite completes the close handshake.
    pub async fn wait_close(&mut self) -> Option<CloseFrame> {
        loop {
            match self.ws.next().await {
                Some(Ok(Message::Close(frame))) => {
                    while let Some(Ok(_)) = self.ws.next().await {}
                    return frame;
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return None,
            }
        }
    }
}
