//! The one CDP client of the workspace: the direct reader's connection to the browser, the
//! demo's agent and the end-to-end tests all drive a browser through it, each with thin code of
//! its own on top.
//!
//! One websocket, two tasks: a writer that sends commands in the order they were given, and a
//! reader that hands each reply to the call waiting for it (by `id`) and everything with a
//! `method` to [`Events`], stamped with when it arrived. Flattened sessions are a `sessionId` on
//! the command and on the event; nothing here keeps state per session.
//!
//! - Every call has a timeout (one deadline for sending and answering) and fails with a
//!   [`CallError`]: no answer in time, the connection gone, too many calls waiting, or the
//!   browser's own error message. A call dropped before its answer forgets its id at once.
//! - Order: the reader handles messages one at a time, so an event the browser sent before a
//!   reply is in [`Events`] before that reply reaches its caller (a round trip on a session
//!   flushes the events sent before it).
//! - Bounded memory. Queued events are bounded by count ([`Config::event_count`]) and by text
//!   ([`Config::event_bytes`]; one event larger than that is taken only into an empty queue);
//!   past either bound, [`Overflow`] says what happens: `Drop` drops the event and counts it
//!   ([`Events::dropped`]), `Wait` stops reading the socket until the user takes events, which
//!   leaves the flood in the peer's send buffer (TCP backpressure) and holds replies behind it
//!   too (a `Wait` user keeps taking events while it waits for a reply: [`Events::during`]).
//!   At most [`Config::max_pending`] calls wait at once, each for one message of at most
//!   [`Config::max_message`] bytes; replies nobody waits for (a call that timed out) and text
//!   that is no CDP message are discarded.
//! - A clean close: [`Client::close`] sends a close frame and waits for the peer's; dropping
//!   every [`Client`] does the same without waiting. A peer's close frame is answered and kept
//!   ([`Client::closed`]). Either way the reader gives the peer a bounded grace, then lets go.
//!
//! Nothing here logs or returns a message's contents or the URL (its path carries the
//! browser's capability id): errors name what failed, not what was sent.

use super::frame::{leading, Frame, Leading};
use futures_util::{SinkExt, StreamExt};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

/// Commands buffered towards the socket.
const COMMAND_QUEUE: usize = 256;
/// The unit of [`Config::event_bytes`]'s accounting.
const KIB: usize = 1024;

/// What happens to an event that arrives when the event queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Drop it and count it: the connection keeps being read (replies keep coming).
    Drop,
    /// Stop reading the socket until the user takes events: nothing is lost, the peer waits.
    Wait,
}

/// How a [`Client`] connects and what it keeps.
#[derive(Debug, Clone)]
pub struct Config {
    /// Each of the TCP connect and the websocket handshake gets this long. By default, 10 s.
    pub connect_timeout: Duration,
    /// The address to dial (`host:port`) when it is not the URL's: Chrome accepts only an IP
    /// literal or `localhost` as Host, so a browser known by name is dialled by name and asked
    /// for by `127.0.0.1`. By default, the URL's.
    pub dial: Option<String>,
    /// Extra request headers for the handshake.
    pub headers: Vec<(String, String)>,
    /// Largest message accepted from the peer. By default, 256 MiB (a full-page screenshot).
    pub max_message: usize,
    /// Events queued at most. By default, 8192.
    pub event_count: usize,
    /// Bytes of event text queued at most (counted in KiB per event, rounded up). By default,
    /// 64 MiB.
    pub event_bytes: usize,
    /// Past either event bound. By default, [`Overflow::Drop`].
    pub overflow: Overflow,
    /// Calls waiting for an answer at once; past it, a call fails at once. By default, 1024.
    pub max_pending: usize,
    /// How long the peer gets to answer a close frame. By default, 5 s.
    pub close_grace: Duration,
    /// Where dropped events are counted; a counter of the client's own when `None`.
    pub dropped: Option<Arc<AtomicU64>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            connect_timeout: Duration::from_secs(10),
            dial: None,
            headers: Vec::new(),
            max_message: 256 * 1024 * 1024,
            event_count: 8192,
            event_bytes: 64 * 1024 * 1024,
            overflow: Overflow::Drop,
            max_pending: 1024,
            close_grace: Duration::from_secs(5),
            dropped: None,
        }
    }
}

/// Why a connection could not be opened. Names no URL or path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The URL or a header does not make a websocket request.
    #[error("not a websocket URL or header")]
    BadRequest,
    /// TCP connect or handshake took longer than [`Config::connect_timeout`].
    #[error("the {0} timed out")]
    Timeout(&'static str),
    /// The TCP connection failed.
    #[error("cannot connect: {0}")]
    Unreachable(String),
    /// The peer answered the handshake with this HTTP status.
    #[error("HTTP {0}")]
    Refused(u16),
    /// The handshake failed otherwise.
    #[error("the websocket handshake failed: {0}")]
    Handshake(String),
}

impl ConnectError {
    /// The HTTP status of a refused handshake.
    pub fn status(&self) -> Option<u16> {
        match self {
            ConnectError::Refused(s) => Some(*s),
            _ => None,
        }
    }
}

/// Why a call got no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No answer within the call's timeout.
    #[error("no answer in time")]
    Timeout,
    /// The connection closed (or closes before the answer).
    #[error("the connection closed")]
    Closed,
    /// [`Config::max_pending`] calls are already waiting.
    #[error("too many calls waiting")]
    Busy,
    /// The browser answered with an error (or with something that is not CDP); the message is
    /// raw: sanitize it before keeping it.
    #[error("the browser refused: {0}")]
    Refused(String),
}

/// A message with a `method` from the peer, and when it arrived.
#[derive(Debug)]
pub struct Event {
    text: Utf8Bytes,
    at: SystemTime,
    /// Its share of [`Config::event_bytes`], given back when the event is dropped.
    _held: OwnedSemaphorePermit,
}

impl Event {
    /// The message as the peer sent it.
    pub fn text(&self) -> &str {
        self.text.as_str()
    }

    /// When the reader took it off the socket.
    pub fn at(&self) -> SystemTime {
        self.at
    }

    /// `Domain.event`.
    pub fn method(&self) -> Option<String> {
        match leading(self.text()) {
            Leading::Method(m) => Some(m.to_owned()),
            _ => Frame::parse(self.text())?.method().map(str::to_owned),
        }
    }

    /// The flattened session it belongs to (`None`: the browser session).
    pub fn session(&self) -> Option<String> {
        Frame::parse(self.text())?.session().map(str::to_owned)
    }

    /// Its `params` (`Null` when absent or not JSON).
    pub fn params(&self) -> Value {
        Frame::parse(self.text())
            .and_then(|f| f.params())
            .unwrap_or(Value::Null)
    }
}

/// Events as they arrive. Dropping it discards events from then on; calls keep working.
#[derive(Debug)]
pub struct Events {
    rx: mpsc::Receiver<Event>,
    dropped: Arc<AtomicU64>,
}

impl Events {
    /// The next event; `None` once the connection has ended and every event was taken.
    pub async fn recv(&mut self) -> Option<Event> {
        self.rx.recv().await
    }

    /// The next event if one is queued.
    pub fn try_recv(&mut self) -> Option<Event> {
        self.rx.try_recv().ok()
    }

    /// Events queued now.
    pub fn len(&self) -> usize {
        self.rx.len()
    }

    /// True when no event is queued.
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Events dropped so far (under [`Overflow::Drop`]).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Runs `fut` to completion while handing every event that arrives meanwhile to `keep`:
    /// what an [`Overflow::Wait`] user does while it waits for a reply.
    pub async fn during<T>(
        &mut self,
        fut: impl Future<Output = T>,
        mut keep: impl FnMut(Event),
    ) -> T {
        tokio::pin!(fut);
        let mut open = true;
        loop {
            tokio::select! {
                biased;
                out = &mut fut => return out,
                event = self.rx.recv(), if open => match event {
                    Some(event) => keep(event),
                    None => open = false,
                },
            }
        }
    }
}

/// What the writer task sends.
enum Out {
    Text(String),
    Close,
}

type Pending = HashMap<u64, oneshot::Sender<Utf8Bytes>>;

/// State the handles and the reader share.
#[derive(Debug)]
struct Shared {
    /// Callers waiting, by id. `None` once the connection has ended.
    pending: Mutex<Option<Pending>>,
    next: AtomicU64,
    max_pending: usize,
    /// The peer's close frame, once received.
    close_frame: Mutex<Option<CloseFrame>>,
    /// Cancelled when the reader has ended.
    ended: CancellationToken,
    /// Set when a close frame of ours went out.
    closing: CancellationToken,
    close_asked: AtomicBool,
}

/// A cloneable handle to send commands on one connection.
#[derive(Debug, Clone)]
pub struct Client {
    tx: mpsc::Sender<Out>,
    shared: Arc<Shared>,
}

#[derive(Serialize)]
struct Command<'a, P: Serialize> {
    id: u64,
    method: &'a str,
    #[serde(rename = "sessionId", skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    params: P,
}

/// Removes a call's id from the pending table however the call ends (answered, timed out,
/// dropped by its caller).
struct Forget<'a>(&'a Shared, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        if let Some(p) = lock(&self.0.pending).as_mut() {
            p.remove(&self.1);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Opens a websocket to `url` (`ws://host:port/path`) and starts the client on it (needs a tokio
/// runtime).
pub async fn connect(url: &str, config: Config) -> Result<(Client, Events), ConnectError> {
    use tokio_tungstenite::tungstenite::http::HeaderName;
    let mut request = url
        .into_client_request()
        .map_err(|_| ConnectError::BadRequest)?;
    for (name, value) in &config.headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| ConnectError::BadRequest)?;
        let value = value.parse().map_err(|_| ConnectError::BadRequest)?;
        request.headers_mut().insert(name, value);
    }
    let dial = match &config.dial {
        Some(d) => d.clone(),
        None => {
            let authority = request.uri().authority().ok_or(ConnectError::BadRequest)?;
            match authority.port_u16() {
                Some(_) => authority.as_str().to_owned(),
                None => format!("{}:80", authority.as_str()),
            }
        }
    };
    let tcp = tokio::time::timeout(
        config.connect_timeout,
        tokio::net::TcpStream::connect(dial.as_str()),
    )
    .await
    .map_err(|_| ConnectError::Timeout("connection"))?
    .map_err(|e| ConnectError::Unreachable(e.kind().to_string()))?;
    let _ = tcp.set_nodelay(true);
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(config.max_message))
        .max_frame_size(Some(config.max_message));
    let (ws, _) = tokio::time::timeout(
        config.connect_timeout,
        tokio_tungstenite::client_async_with_config(request, tcp, Some(ws_config)),
    )
    .await
    .map_err(|_| ConnectError::Timeout("websocket handshake"))?
    .map_err(|e| {
        use tokio_tungstenite::tungstenite::Error as E;
        match e {
            E::Http(r) => ConnectError::Refused(r.status().as_u16()),
            E::Io(io) => ConnectError::Handshake(io.kind().to_string()),
            E::Protocol(p) => ConnectError::Handshake(p.to_string()),
            _ => ConnectError::Handshake("an unexpected answer".into()),
        }
    })?;
    Ok(Client::over(ws, config))
}

impl Client {
    /// Starts the client on a websocket opened elsewhere (its size limits are the caller's).
    pub fn over<S>(ws: WebSocketStream<S>, config: Config) -> (Client, Events)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (sink, stream) = ws.split();
        let (tx, outgoing) = mpsc::channel(COMMAND_QUEUE);
        let (events_tx, rx) = mpsc::channel(config.event_count.max(1));
        let dropped = config.dropped.clone().unwrap_or_default();
        let shared = Arc::new(Shared {
            pending: Mutex::new(Some(HashMap::new())),
            next: AtomicU64::new(1),
            max_pending: config.max_pending,
            close_frame: Mutex::new(None),
            ended: CancellationToken::new(),
            closing: CancellationToken::new(),
            close_asked: AtomicBool::new(false),
        });
        let budget_kib = (config.event_bytes / KIB).clamp(1, u32::MAX as usize);
        let reader = Reader {
            shared: shared.clone(),
            events: events_tx,
            budget: Arc::new(Semaphore::new(budget_kib)),
            budget_kib,
            overflow: config.overflow,
            dropped: dropped.clone(),
            grace: config.close_grace,
        };
        tokio::spawn(write(sink, outgoing, shared.clone(), config.close_grace));
        tokio::spawn(reader.run(stream));
        (Client { tx, shared }, Events { rx, dropped })
    }

    /// Sends `method` (on `session`, or the browser session) and returns its `result`, waiting
    /// at most `timeout` for sending and answering together.
    pub async fn call(
        &self,
        method: &str,
        params: impl Serialize,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let reply = self.call_raw(method, params, session, timeout).await?;
        result(reply.as_str())
    }

    /// Like [`Client::call`], but returns the reply as the peer sent it, whether a result or an
    /// error.
    pub async fn call_raw(
        &self,
        method: &str,
        params: impl Serialize,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Utf8Bytes, CallError> {
        let deadline = Instant::now() + timeout;
        let id = self.shared.next.fetch_add(1, Ordering::Relaxed);
        let command = serde_json::to_string(&Command {
            id,
            method,
            session,
            params,
        })
        .map_err(|_| CallError::Refused("parameters that are not JSON".into()))?;
        let (reply, answer) = oneshot::channel();
        {
            let mut pending = lock(&self.shared.pending);
            let Some(pending) = pending.as_mut() else {
                return Err(CallError::Closed);
            };
            if pending.len() >= self.shared.max_pending {
                return Err(CallError::Busy);
            }
            pending.insert(id, reply);
        }
        let _forget = Forget(&self.shared, id);
        match tokio::time::timeout_at(deadline, self.tx.send(Out::Text(command))).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return Err(CallError::Closed),
            Err(_) => return Err(CallError::Timeout),
        }
        match tokio::time::timeout_at(deadline, answer).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err(CallError::Closed),
            Err(_) => Err(CallError::Timeout),
        }
    }

    /// Sends a close frame and waits at most `within` for the connection to end (the peer's
    /// close frame, then the socket); returns the peer's close frame, if it sent one.
    pub async fn close(&self, within: Duration) -> Option<CloseFrame> {
        if !self.shared.close_asked.swap(true, Ordering::Relaxed) {
            let _ = tokio::time::timeout(within, self.tx.send(Out::Close)).await;
        }
        let _ = tokio::time::timeout(within, self.shared.ended.cancelled()).await;
        lock(&self.shared.close_frame).clone()
    }

    /// Waits until the connection has ended; returns the peer's close frame, `None` when the
    /// socket ended without one.
    pub async fn closed(&self) -> Option<CloseFrame> {
        self.shared.ended.cancelled().await;
        lock(&self.shared.close_frame).clone()
    }

    /// True once the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.ended.is_cancelled()
    }

    /// Calls waiting for an answer now.
    pub fn pending(&self) -> usize {
        lock(&self.shared.pending).as_ref().map_or(0, HashMap::len)
    }
}

/// The `result` of a reply, or its error.
fn result(reply: &str) -> Result<Value, CallError> {
    if let Some(f) = Frame::parse(reply) {
        return match (f.error_message(), f.result) {
            (Some(m), _) => Err(CallError::Refused(m)),
            (None, Some(r)) => serde_json::from_str(r.get())
                .map_err(|_| CallError::Refused("an answer that is not JSON".into())),
            (None, None) => Ok(Value::Null),
        };
    }
    // Past what the frame parser reads: parse it whole.
    let mut v: Value = serde_json::from_str(reply)
        .map_err(|_| CallError::Refused("an answer that is not CDP".into()))?;
    if let Some(e) = v.get("error") {
        let m = e.get("message").and_then(Value::as_str).unwrap_or_default();
        return Err(CallError::Refused(m.to_owned()));
    }
    Ok(v.get_mut("result").map(Value::take).unwrap_or(Value::Null))
}

/// Sends commands in order until the handles are gone or a close is asked for (then a close
/// frame), or the connection has ended.
async fn write<S>(
    mut sink: futures_util::stream::SplitSink<WebSocketStream<S>, Message>,
    mut outgoing: mpsc::Receiver<Out>,
    shared: Arc<Shared>,
    grace: Duration,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        let out = tokio::select! {
            () = shared.ended.cancelled() => return,
            out = outgoing.recv() => out,
        };
        match out {
            Some(Out::Text(text)) => {
                tokio::select! {
                    () = shared.ended.cancelled() => return,
                    sent = sink.send(Message::text(text)) => if sent.is_err() { return },
                }
            }
            Some(Out::Close) | None => {
                let _ = tokio::time::timeout(grace, sink.close()).await;
                shared.closing.cancel();
                return;
            }
        }
    }
}

/// The reading half: routes replies and events, keeps the peer's close frame.
struct Reader {
    shared: Arc<Shared>,
    events: mpsc::Sender<Event>,
    budget: Arc<Semaphore>,
    budget_kib: usize,
    overflow: Overflow,
    dropped: Arc<AtomicU64>,
    grace: Duration,
}

impl Reader {
    async fn run<S>(self, mut stream: futures_util::stream::SplitStream<WebSocketStream<S>>)
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let mut until: Option<Instant> = None;
        loop {
            let far = Instant::now() + Duration::from_secs(3600);
            let msg = tokio::select! {
                msg = stream.next() => msg,
                () = self.shared.closing.cancelled(), if until.is_none() => {
                    until = Some(Instant::now() + self.grace);
                    continue;
                }
                () = tokio::time::sleep_until(until.unwrap_or(far)), if until.is_some() => break,
            };
            match msg {
                Some(Ok(Message::Text(text))) => self.route(text).await,
                // tungstenite answers it while the stream is read on to its end.
                Some(Ok(Message::Close(frame))) => {
                    *lock(&self.shared.close_frame) = frame;
                    until.get_or_insert_with(|| Instant::now() + self.grace);
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            }
        }
        // Every caller still waiting learns the connection is gone; later calls fail at once.
        lock(&self.shared.pending).take();
        self.shared.ended.cancel();
    }

    /// A reply goes to its caller, a message with a method to the events.
    async fn route(&self, text: Utf8Bytes) {
        let id = match leading(text.as_str()) {
            Leading::Method(_) | Leading::IdMethod(_) => None,
            Leading::Id(id) => Some(id),
            Leading::Unknown => match Frame::parse(text.as_str()) {
                Some(f) if f.method.is_some() => None,
                Some(Frame { id: Some(id), .. }) => Some(id),
                // Not a CDP message.
                _ => return,
            },
        };
        if let Some(id) = id {
            let caller = lock(&self.shared.pending)
                .as_mut()
                .and_then(|p| p.remove(&id));
            if let Some(caller) = caller {
                let _ = caller.send(text);
            }
            return;
        }
        let at = SystemTime::now();
        let need = text.len().div_ceil(KIB).clamp(1, self.budget_kib) as u32;
        let held = match self.overflow {
            Overflow::Drop => self.budget.clone().try_acquire_many_owned(need).ok(),
            Overflow::Wait => self.budget.clone().acquire_many_owned(need).await.ok(),
        };
        let Some(held) = held else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let event = Event {
            text,
            at,
            _held: held,
        };
        let sent = match self.overflow {
            Overflow::Drop => self.events.try_send(event).is_ok(),
            Overflow::Wait => self.events.send(event).await.is_ok(),
        };
        // An event nobody will take (the receiver is gone) is not a drop.
        if !sent && !self.events.is_closed() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests;
