//! The direct reader's own CDP connection: one websocket to the browser endpoint (dialled
//! upstream directly, never through the relay's listener), its own command ids, a timeout on
//! every command, and events handed out on a bounded channel, each stamped with when it arrived.
//!
//! It never logs a message's contents (commands can carry typed text on their way back into the
//! page they were typed into) and never blocks: a full event queue drops events, counted.

use cdp_relay_proxy::Upstream;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

/// Events buffered between the socket and the observer loop.
const EVENT_QUEUE: usize = 8192;
/// Commands buffered towards the socket.
const COMMAND_QUEUE: usize = 256;
/// Commands awaiting an answer at once; past it, a command fails at once.
const MAX_PENDING: usize = 1024;
/// Largest message accepted from the browser (a full-page screenshot fits).
const MAX_MESSAGE: usize = 256 * 1024 * 1024;

/// Why a command got no result.
#[derive(Debug, Clone)]
pub(crate) enum CallError {
    /// No answer within the command's timeout.
    Timeout,
    /// The connection closed (or was never there).
    Closed,
    /// The browser answered with an error; the message is raw (sanitize before keeping it).
    Refused(String),
}

impl CallError {
    /// A short reason for a record's note or error text (raw: sanitize before keeping it).
    pub(crate) fn reason(&self) -> String {
        match self {
            CallError::Timeout => "the browser did not answer in time".into(),
            CallError::Closed => "the observer's browser connection closed".into(),
            CallError::Refused(m) => format!("the browser refused: {m}"),
        }
    }
}

type Reply = Result<Value, CallError>;

/// An event from the browser and when it arrived: the page model orders what the page reported
/// against the client's keystrokes by these times, not by when the observer got round to it.
pub(crate) type Incoming = (String, SystemTime);
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Reply>>>>;

/// A cloneable handle to send commands on the observer's connection.
#[derive(Clone)]
pub(crate) struct Cdp {
    tx: mpsc::Sender<String>,
    pending: Pending,
    next: Arc<AtomicU64>,
}

/// The browser's websocket path, from its `/json/version`.
pub(crate) async fn browser_path(up: &Upstream) -> Result<String, String> {
    let version = cdp_relay_proxy::upstream::version(up)
        .await
        .map_err(|e| e.to_string())?;
    version
        .websocket_path()
        .map(str::to_owned)
        .ok_or_else(|| "the browser's webSocketDebuggerUrl has no /devtools/ path".to_string())
}

impl Cdp {
    /// Connects to `path` on the upstream; events arrive on the returned receiver until the
    /// connection ends (the receiver then yields `None`).
    pub(crate) async fn connect(
        up: &Upstream,
        path: &str,
        dropped: Arc<AtomicU64>,
    ) -> Result<(Cdp, mpsc::Receiver<Incoming>), String> {
        let tcp = tokio::time::timeout(
            Duration::from_secs(10),
            tokio::net::TcpStream::connect(up.authority()),
        )
        .await
        .map_err(|_| "connecting to the browser timed out".to_string())?
        .map_err(|e| format!("cannot reach the browser: {e}"))?;
        let _ = tcp.set_nodelay(true);
        // Chrome accepts only an IP literal or localhost as Host.
        let url = format!("ws://{}{path}", up.host_header());
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (ws, _) = tokio::time::timeout(
            Duration::from_secs(10),
            tokio_tungstenite::client_async_with_config(url.as_str(), tcp, Some(config)),
        )
        .await
        .map_err(|_| "the browser's websocket handshake timed out".to_string())?
        // The error names no path (the path holds the browser's capability id).
        .map_err(|e| match e {
            tokio_tungstenite::tungstenite::Error::Http(r) => {
                format!("the browser refused the websocket with HTTP {}", r.status())
            }
            _ => "the browser's websocket handshake failed".to_string(),
        })?;
        let (mut sink, mut stream) = ws.split();
        let (tx, mut outgoing) = mpsc::channel::<String>(COMMAND_QUEUE);
        let (events_tx, events) = mpsc::channel::<Incoming>(EVENT_QUEUE);
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        tokio::spawn(async move {
            while let Some(text) = outgoing.recv().await {
                if sink.send(Message::text(text)).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let answers = pending.clone();
        tokio::spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                let text = match msg {
                    Message::Text(t) => t,
                    Message::Close(_) => break,
                    _ => continue,
                };
                route(&text, &answers, &events_tx, &dropped);
            }
            // Every caller still waiting learns the connection is gone.
            answers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        });
        Ok((
            Cdp {
                tx,
                pending,
                next: Arc::new(AtomicU64::new(1)),
            },
            events,
        ))
    }

    /// Sends `method` (on `session`, or the browser session) and waits at most `timeout` for its
    /// result.
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut command = serde_json::json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            command["sessionId"] = Value::String(s.to_owned());
        }
        let (reply, answer) = oneshot::channel();
        {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            if pending.len() >= MAX_PENDING {
                return Err(CallError::Timeout);
            }
            pending.insert(id, reply);
        }
        let sent = tokio::time::timeout(timeout, self.tx.send(command.to_string())).await;
        let outcome = match sent {
            Ok(Ok(())) => match tokio::time::timeout(timeout, answer).await {
                Ok(Ok(reply)) => reply,
                Ok(Err(_)) => Err(CallError::Closed),
                Err(_) => Err(CallError::Timeout),
            },
            Ok(Err(_)) => Err(CallError::Closed),
            Err(_) => Err(CallError::Timeout),
        };
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        outcome
    }
}

/// A response goes to its caller, anything else to the event queue.
fn route(text: &str, answers: &Pending, events: &mpsc::Sender<Incoming>, dropped: &AtomicU64) {
    use crate::cdp::frame::{leading, Frame, Leading};
    let id = match leading(text) {
        Leading::Method(_) => None,
        Leading::Id(id) => Some(id),
        _ => Frame::parse(text).and_then(|f| if f.method.is_some() { None } else { f.id }),
    };
    let Some(id) = id else {
        if events
            .try_send((text.to_owned(), SystemTime::now()))
            .is_err()
        {
            dropped.fetch_add(1, Ordering::Relaxed);
        }
        return;
    };
    let Some(reply) = answers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&id)
    else {
        return;
    };
    let outcome = match Frame::parse(text) {
        Some(f) => match (f.error_message(), f.result) {
            (Some(m), _) => Err(CallError::Refused(m)),
            (None, Some(r)) => serde_json::from_str(r.get()).map_err(|_| CallError::Closed),
            (None, None) => Ok(Value::Null),
        },
        None => Err(CallError::Refused("an answer that is not CDP".into())),
    };
    let _ = reply.send(outcome);
}
