//! The tests' CDP client: the workspace's one client (`cdp_capture::client`) with what tests
//! want on top (a panic naming the method instead of an error, a generous deadline per call),
//! and the raw websocket for tests that need exact frames or a misbehaving peer ([`connect`]).

use cdp_capture::client::{self, Client, Config, Events, Overflow};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Websocket type used by the tests.
pub type Ws = WebSocketStream<TcpStream>;

/// Largest message the tests accept (5 MB results and full-page screenshots fit).
const MAX_MESSAGE: usize = 512 << 20;

/// A call's deadline: far past any test's own (`within`), so a test's timeout names the step.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// Opens a raw websocket to `url` (`ws://host:port/path`), with optional extra request headers.
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
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
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

/// One command on a raw websocket and the raw text of its reply, events before it skipped: for
/// benchmarks, which time the relay, not the tasks of a client.
pub async fn round_trip(ws: &mut Ws, id: u64, method: &str, params: Value) -> String {
    let cmd = json!({ "id": id, "method": method, "params": params });
    ws.send(Message::text(cmd.to_string()))
        .await
        .expect("send command");
    loop {
        match ws.next().await {
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

/// A CDP connection. Events are queued losslessly ([`Overflow::Wait`]: past the queue's bound
/// the client stops reading, as an idle socket would); while a call waits for its reply, the
/// events that arrive are skipped.
pub struct Cdp {
    /// The shared client, for calls alongside [`Cdp::events`] or with a timeout of a test's own.
    pub client: Client,
    /// Events not skipped by a call.
    pub events: Events,
}

impl Cdp {
    /// Connects to a `webSocketDebuggerUrl`.
    pub async fn connect(url: &str) -> Cdp {
        let config = Config {
            max_message: MAX_MESSAGE,
            overflow: Overflow::Wait,
            ..Config::default()
        };
        let (client, events) = client::connect(url, config)
            .await
            .unwrap_or_else(|e| panic!("connect {url}: {e}"));
        Cdp { client, events }
    }

    /// Sends a command and returns the raw text of its response (events are skipped).
    pub async fn call_raw(&mut self, method: &str, params: Value, session: Option<&str>) -> String {
        let reply = self.client.call_raw(method, params, session, CALL_TIMEOUT);
        match self.events.during(reply, drop).await {
            Ok(text) => text.to_string(),
            Err(e) => panic!("no answer to {method}: {e}"),
        }
    }

    /// Sends a command and returns its `result` with the events that arrived before it (a
    /// command can cause events the browser sends ahead of its reply: a fetch it starts).
    pub async fn call_keeping_events(
        &mut self,
        method: &str,
        params: Value,
    ) -> (Value, Vec<Value>) {
        let reply = self.client.call_raw(method, params, None, CALL_TIMEOUT);
        let mut kept = Vec::new();
        let raw = match self
            .events
            .during(reply, |e| {
                kept.push(serde_json::from_str(e.text()).expect("CDP JSON"));
            })
            .await
        {
            Ok(text) => text.to_string(),
            Err(e) => panic!("no answer to {method}: {e}"),
        };
        let v: Value = serde_json::from_str(&raw).expect("JSON");
        if let Some(e) = v.get("error") {
            panic!("{method} failed: {e}");
        }
        (v["result"].clone(), kept)
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

    /// The next event named `method` (others are skipped).
    pub async fn event(&mut self, method: &str) -> Value {
        loop {
            let Some(event) = self.events.recv().await else {
                panic!("the connection ended waiting for {method}");
            };
            if event.method().as_deref() == Some(method) {
                return serde_json::from_str(event.text()).expect("CDP JSON");
            }
        }
    }

    /// Waits until the connection ends: the peer's close frame (answered), or `None` when the
    /// socket ended without one. Events meanwhile are skipped.
    pub async fn wait_close(&mut self) -> Option<CloseFrame> {
        let closed = self.client.closed();
        self.events.during(closed, drop).await
    }
}
