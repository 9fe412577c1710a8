//! The gateway's two MCP transports (newline-delimited JSON-RPC over pipes), written here rather
//! than taken from rmcp because rmcp's loop cannot keep the promises the gateway makes:
//!
//! - **Order and backpressure** (wrapped server → agent). rmcp hands every notification it reads
//!   to a task of its own: a flood of them is held in memory all at once, they reach the agent
//!   in any order, and a result (delivered inline) overtakes them — its progress token is
//!   unmapped before the tail of its progress arrives. Here one reader takes the server's stdout
//!   line by line and forwards each notification for the agent itself, waiting until it is
//!   written, before it reads the next line: order is kept, nothing is dropped, and a slow agent
//!   slows the server's stdout instead of growing memory. Only what rmcp must see (answers,
//!   requests of the server) is handed to rmcp, after everything the server sent before it.
//! - **Bounded lines, and an answer when one is too long.** A line over the limit is never
//!   held: its bytes are dropped as they arrive while [`Scan`] picks out its `id` (and `method`,
//!   `params.name`), so the call it answers ends with a JSON-RPC error instead of hanging, and
//!   an agent's over-long request is answered with an error.
//! - **Duplicate request ids** from the agent: rmcp runs both and sends one answer; here the
//!   second is refused with a JSON-RPC error while the first is in flight.
//! - **Values the agent must not read** (`inputs.rs`): every message to the agent — results,
//!   errors, notifications, the server's own requests — is written through the
//!   [`Rewriter`](super::rewrite::Rewriter), which leaves a message without a known value byte
//!   for byte as serialized.

// Log messages are deprecated by SEP-2577 but still what servers send; they pass through.
#![allow(deprecated)]

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorData, JsonRpcMessage,
    ProgressToken, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::transport::Transport;
use rmcp::{Peer, RoleClient, RoleServer};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Longest MCP message read from the agent or the wrapped server (rmcp's own default, 16 MiB,
/// silently drops a larger line — a full-page screenshot can be one). As the relay's
/// `--max-message-size` default: Chrome's own limit.
pub const MAX_MESSAGE_BYTES: usize = cdp_relay_proxy::DEFAULT_MAX_MESSAGE_SIZE;

/// An MCP transport over a reader and a writer, reading lines of up to [`MAX_MESSAGE_BYTES`].
pub fn transport<Role, R, W>(
    read: R,
    write: W,
) -> rmcp::transport::async_rw::AsyncRwTransport<Role, R, W>
where
    Role: rmcp::service::ServiceRole,
    R: tokio::io::AsyncRead + Send + Unpin,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    rmcp::transport::async_rw::AsyncRwTransport::new(read, write)
        .with_max_line_length(MAX_MESSAGE_BYTES)
}

/// Where the agent is, once it has connected: what the server sends goes there.
#[derive(Clone, Default)]
pub(crate) struct AgentLink {
    pub(crate) peer: Arc<OnceLock<Peer<RoleServer>>>,
    /// Our progress token on a forwarded call → the agent's own token.
    pub(crate) progress: Arc<Mutex<HashMap<ProgressToken, ProgressToken>>>,
}

impl AgentLink {
    /// The agent's session, once it has connected.
    pub(crate) fn agent(&self) -> Option<&Peer<RoleServer>> {
        self.peer.get()
    }

    pub(crate) fn map_progress(&self, ours: ProgressToken, theirs: ProgressToken) {
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(ours, theirs);
    }

    pub(crate) fn unmap_progress(&self, ours: &ProgressToken) {
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(ours);
    }

    /// The agent's own token for our progress token `ours`, while its call is in flight.
    pub(crate) fn agent_token(&self, ours: &ProgressToken) -> Option<ProgressToken> {
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(ours)
            .cloned()
    }
}

/// Messages read ahead for rmcp at most: the reader waits when rmcp is behind.
const QUEUE: usize = 16;
/// A line buffer that grew past this for one big message is given back afterwards.
const KEEP_CAPACITY: usize = 1 << 20;
/// Longest value [`Scan`] keeps (an id, a method, a tool name).
const SCAN_VALUE: usize = 256;
const BOM: &[u8] = b"\xEF\xBB\xBF";

// ---------------------------------------------------------------------------------------------
// Lines

/// What [`Lines::next`] read.
#[derive(Debug)]
pub(crate) enum Next {
    /// A line (without its `\n`) is in [`Lines::line`].
    Line,
    /// A line over the limit, dropped: how long it was, and what [`Scan`] found in it (when
    /// asked to scan). With `keep_head`, its first bytes (up to the limit) are in
    /// [`Lines::line`].
    Over { bytes: u64, scan: Option<Scan> },
    /// The stream ended.
    Eof,
}

/// Reads `\n`-terminated lines of at most `max` bytes, never holding more than that.
pub(crate) struct Lines<R> {
    read: BufReader<R>,
    buf: Vec<u8>,
    max: usize,
    /// Keep an over-long line's head (stderr) instead of scanning it (JSON-RPC).
    keep_head: bool,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub(crate) fn new(read: R, max: usize, keep_head: bool) -> Lines<R> {
        Lines {
            read: BufReader::new(read),
            buf: Vec::new(),
            max: max.max(1),
            keep_head,
        }
    }

    /// The line [`Lines::next`] read (or the head of an over-long one).
    pub(crate) fn line(&self) -> &[u8] {
        let l = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
        l.strip_suffix(b"\r").unwrap_or(l)
    }

    pub(crate) async fn next(&mut self) -> std::io::Result<Next> {
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf = Vec::new();
        }
        self.buf.clear();
        let mut over: Option<(u64, Option<Scan>)> = None;
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                // A last line without `\n` still counts.
                return Ok(match over {
                    Some((bytes, scan)) => Next::Over { bytes, scan },
                    None if self.buf.is_empty() => Next::Eof,
                    None => Next::Line,
                });
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..take];
            match &mut over {
                Some((bytes, scan)) => {
                    *bytes += take as u64;
                    if let Some(s) = scan {
                        s.feed(chunk);
                    }
                }
                None if self.buf.len() + take > self.max => {
                    let bytes = (self.buf.len() + take) as u64;
                    let scan = if self.keep_head {
                        let room = self.max - self.buf.len();
                        self.buf.extend_from_slice(&chunk[..room.min(take)]);
                        None
                    } else {
                        let mut s = Scan::default();
                        s.feed(&self.buf);
                        s.feed(chunk);
                        self.buf = Vec::new();
                        Some(s)
                    };
                    over = Some((bytes, scan));
                }
                None => self.buf.extend_from_slice(chunk),
            }
            self.read.consume(take);
            if newline.is_some() {
                return Ok(match over {
                    Some((bytes, scan)) => Next::Over {
                        bytes: bytes.saturating_sub(1),
                        scan,
                    },
                    None => Next::Line,
                });
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scan

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Skip,
    Key1,
    Key2,
    Id,
    Method,
    Name,
}

/// Finds a JSON-RPC message's top-level `id` and `method` and its `params.name` in bytes fed
/// piece by piece, keeping only those short values: how an over-long line is answered without
/// being held. Tolerates anything (it never fails, it just finds less).
#[derive(Debug)]
pub(crate) struct Scan {
    depth: u64,
    /// Whether the containers at depth 1 and 2 are objects.
    object: [bool; 2],
    expect_key: [bool; 2],
    key1: Vec<u8>,
    key2: Vec<u8>,
    in_string: bool,
    escaped: bool,
    role: Role,
    value: Vec<u8>,
    too_long: bool,
    /// A number being read as the `id`.
    number: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    method: Option<Vec<u8>>,
    name: Option<Vec<u8>>,
}

impl Default for Scan {
    fn default() -> Self {
        Scan {
            depth: 0,
            object: [false; 2],
            expect_key: [false; 2],
            key1: Vec::new(),
            key2: Vec::new(),
            in_string: false,
            escaped: false,
            role: Role::Skip,
            value: Vec::new(),
            too_long: false,
            number: None,
            id: None,
            method: None,
            name: None,
        }
    }
}

impl Scan {
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn keep(&mut self, b: u8) {
        if self.value.len() < SCAN_VALUE {
            self.value.push(b);
        } else {
            self.too_long = true;
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
                self.keep(b);
            } else if b == b'\\' {
                self.escaped = true;
                self.keep(b);
            } else if b == b'"' {
                self.in_string = false;
                self.end_string();
            } else {
                self.keep(b);
            }
            return;
        }
        if let Some(n) = &mut self.number {
            if b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E') {
                if n.len() < SCAN_VALUE {
                    n.push(b);
                }
                return;
            }
            self.id = self.number.take();
        }
        let in_params = self.depth == 2 && self.object[1] && self.key1 == b"params";
        match b {
            b'"' => {
                self.in_string = true;
                self.value.clear();
                self.too_long = false;
                self.role = match self.depth {
                    1 if self.object[0] && self.expect_key[0] => Role::Key1,
                    1 if self.key1 == b"id" => Role::Id,
                    1 if self.key1 == b"method" => Role::Method,
                    2 if in_params && self.expect_key[1] => Role::Key2,
                    2 if in_params && self.key2 == b"name" => Role::Name,
                    _ => Role::Skip,
                };
            }
            b'{' | b'[' => {
                self.depth += 1;
                if let Some(i) = (self.depth as usize).checked_sub(1).filter(|&i| i < 2) {
                    self.object[i] = b == b'{';
                    self.expect_key[i] = b == b'{';
                    if i == 1 {
                        self.key2.clear();
                    }
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' => {
                if let Some(i) = self.level() {
                    self.expect_key[i] = false;
                }
            }
            b',' => {
                if let Some(i) = self.level() {
                    self.expect_key[i] = self.object[i];
                }
            }
            b'-' | b'0'..=b'9' if self.depth == 1 && !self.expect_key[0] && self.key1 == b"id" => {
                self.number = Some(vec![b]);
            }
            _ => {}
        }
    }

    fn level(&self) -> Option<usize> {
        (self.depth as usize).checked_sub(1).filter(|&i| i < 2)
    }

    fn end_string(&mut self) {
        if self.too_long && self.role != Role::Skip {
            // A key or value too long to be one we look for.
            if matches!(self.role, Role::Key1) {
                self.key1.clear();
            } else if matches!(self.role, Role::Key2) {
                self.key2.clear();
            }
            return;
        }
        let quoted = || {
            let mut v = Vec::with_capacity(self.value.len() + 2);
            v.push(b'"');
            v.extend_from_slice(&self.value);
            v.push(b'"');
            v
        };
        match self.role {
            Role::Skip => {}
            Role::Key1 => self.key1 = unescaped(&quoted()).into_bytes(),
            Role::Key2 => self.key2 = unescaped(&quoted()).into_bytes(),
            Role::Id => self.id = Some(quoted()),
            Role::Method => self.method = Some(quoted()),
            Role::Name => self.name = Some(quoted()),
        }
    }

    /// The message's `id`, when it had a readable one.
    pub(crate) fn id(&self) -> Option<RequestId> {
        let raw = self.id.as_ref().or(self.number.as_ref())?;
        serde_json::from_slice(raw).ok()
    }

    /// Its `method`.
    pub(crate) fn method(&self) -> Option<String> {
        self.method.as_deref().map(unescaped)
    }

    /// Its `params.name` (a tool's name in `tools/call`).
    pub(crate) fn name(&self) -> Option<String> {
        self.name.as_deref().map(unescaped)
    }
}

fn unescaped(quoted: &[u8]) -> String {
    serde_json::from_slice::<String>(quoted).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Writing

type Writer<W> = Arc<tokio::sync::Mutex<Option<W>>>;

fn write_line<W, M>(
    writer: &Writer<W>,
    message: &M,
) -> impl Future<Output = std::io::Result<()>> + Send + 'static
where
    W: AsyncWrite + Send + Unpin + 'static,
    M: serde::Serialize,
{
    write_bytes(writer, serde_json::to_vec(message))
}

/// Shuts the writer down once; later writes find it gone.
async fn shut<W: AsyncWrite + Unpin>(writer: &Writer<W>) {
    let w = writer.lock().await.take();
    if let Some(mut w) = w {
        let _ = w.shutdown().await;
    }
}

/// Writes one serialized message and its newline.
fn write_bytes<W>(
    writer: &Writer<W>,
    line: serde_json::Result<Vec<u8>>,
) -> impl Future<Output = std::io::Result<()>> + Send + 'static
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    let line = line.map(|mut v| {
        v.push(b'\n');
        v
    });
    let writer = writer.clone();
    async move {
        let line = line.map_err(std::io::Error::other)?;
        let mut w = writer.lock().await;
        let Some(w) = w.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "the pipe is closed",
            ));
        };
        w.write_all(&line).await?;
        w.flush().await
    }
}

/// Ids of requests sent and not answered yet.
#[derive(Clone, Default)]
pub(crate) struct Ids(Arc<Mutex<HashSet<RequestId>>>);

impl Ids {
    fn set(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
    /// Inserts `id`; false when it was already there.
    fn insert(&self, id: RequestId) -> bool {
        self.set().insert(id)
    }
    fn remove(&self, id: &RequestId) -> bool {
        self.set().remove(id)
    }
    /// The only id, when exactly one is pending.
    fn only(&self) -> Option<RequestId> {
        let set = self.set();
        (set.len() == 1)
            .then(|| set.iter().next().cloned())
            .flatten()
    }
}

// ---------------------------------------------------------------------------------------------
// The wrapped server's side

/// Our client transport to the wrapped server (see the module docs).
pub(crate) struct ChildTransport<W> {
    rx: mpsc::Receiver<ServerJsonRpcMessage>,
    writer: Writer<W>,
    pending: Ids,
}

impl<W: AsyncWrite + Send + Unpin + 'static> ChildTransport<W> {
    /// Reads the server's `stdout` (lines up to `max` bytes) on a task of its own, forwarding
    /// what it sends on its own to the agent on `link`; writes to its `stdin`.
    pub(crate) fn start<R>(stdout: R, stdin: W, link: AgentLink, max: usize) -> ChildTransport<W>
    where
        R: AsyncRead + Send + Unpin + 'static,
    {
        let (tx, rx) = mpsc::channel(QUEUE);
        let pending = Ids::default();
        tokio::spawn(read_child(
            Lines::new(stdout, max, false),
            tx,
            pending.clone(),
            link,
            max,
        ));
        ChildTransport {
            rx,
            writer: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            pending,
        }
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> Transport<RoleClient> for ChildTransport<W> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Request(r) => {
                self.pending.insert(r.id.clone());
            }
            // A cancelled call may never be answered.
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification {
                    if let Some(id) = &c.params.request_id {
                        self.pending.remove(id);
                    }
                }
            }
            _ => {}
        }
        write_line(&self.writer, &item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        self.rx.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The server reads EOF on its stdin: the MCP stdio shutdown.
        shut(&self.writer).await;
        Ok(())
    }
}

async fn read_child<R: AsyncRead + Unpin>(
    mut lines: Lines<R>,
    tx: mpsc::Sender<ServerJsonRpcMessage>,
    pending: Ids,
    link: AgentLink,
    max: usize,
) {
    loop {
        let next = match lines.next().await {
            Ok(n) => n,
            Err(e) => {
                tracing::debug!("mcp: reading the MCP server's stdout failed: {e}");
                return;
            }
        };
        let message = match next {
            Next::Eof => return,
            Next::Line => {
                let line = lines.line();
                let line = line.strip_prefix(BOM).unwrap_or(line);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
                    Ok(m) => m,
                    Err(_) => match unreadable(line, &pending) {
                        Some(m) => m,
                        None => continue,
                    },
                }
            }
            Next::Over { bytes, scan } => {
                let scan = scan.unwrap_or_default();
                // A message with a method and no id is a notification: nobody waits for it. One
                // with neither can only be an answer: with one call pending, it is that call's.
                let id = match (scan.id(), scan.method()) {
                    (Some(id), _) => Some(id),
                    (None, None) => pending.only(),
                    (None, Some(_)) => None,
                };
                let Some(id) = id.filter(|id| pending.remove(id)) else {
                    tracing::warn!(
                        "mcp: the MCP server sent a message of {bytes} bytes, over the limit of {max} bytes (--max-message-size); dropped"
                    );
                    continue;
                };
                tracing::warn!(
                    "mcp: the MCP server's answer was {bytes} bytes, over the limit of {max} bytes (--max-message-size); its call ends with an error"
                );
                JsonRpcMessage::error(
                    ErrorData::internal_error(
                        format!(
                            "the MCP server's answer was {bytes} bytes, over cdp-relay's limit of {max} bytes; raise --max-message-size or ask for less"
                        ),
                        None,
                    ),
                    Some(id),
                )
            }
        };
        let message = match message {
            JsonRpcMessage::Notification(n) => match forward(&link, n.notification).await {
                None => continue,
                Some(rest) => JsonRpcMessage::notification(rest),
            },
            JsonRpcMessage::Response(r) => {
                pending.remove(&r.id);
                JsonRpcMessage::Response(r)
            }
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    pending.remove(id);
                }
                JsonRpcMessage::Error(e)
            }
            other => other,
        };
        if tx.send(message).await.is_err() {
            return;
        }
    }
}

/// A line that is not a message rmcp reads: an answer to a pending request becomes an error
/// for it (its call must end); anything else is dropped.
fn unreadable(line: &[u8], pending: &Ids) -> Option<ServerJsonRpcMessage> {
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    let id = value
        .get("id")
        .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    let is_answer = value.get("method").is_none();
    match id {
        Some(id) if is_answer && pending.remove(&id) => {
            tracing::warn!("mcp: the MCP server sent an answer that is not valid MCP; its call ends with an error");
            Some(JsonRpcMessage::error(
                ErrorData::internal_error(
                    "the MCP server's answer is not a valid MCP message",
                    None,
                ),
                Some(id),
            ))
        }
        _ => {
            tracing::debug!("mcp: ignored a message of the MCP server that is not valid MCP");
            None
        }
    }
}

/// Sends what the server says on its own to the agent, waiting until it is written; returns
/// what is for rmcp instead.
async fn forward(link: &AgentLink, n: ServerNotification) -> Option<ServerNotification> {
    let n = match n {
        ServerNotification::ProgressNotification(mut p) => {
            // Progress only for a call whose agent asked for it, under the agent's token.
            match link.agent_token(&p.params.progress_token) {
                Some(token) => {
                    p.params.progress_token = token;
                    ServerNotification::ProgressNotification(p)
                }
                None => return None,
            }
        }
        n @ (ServerNotification::LoggingMessageNotification(_)
        | ServerNotification::ResourceUpdatedNotification(_)
        | ServerNotification::ResourceListChangedNotification(_)
        | ServerNotification::ToolListChangedNotification(_)
        | ServerNotification::PromptListChangedNotification(_)) => n,
        other => return Some(other),
    };
    if let Some(agent) = link.agent() {
        let _ = agent.send_notification(n).await;
    }
    None
}

// ---------------------------------------------------------------------------------------------
// The agent's side

/// A request of the agent the gateway answered itself, without running it.
#[derive(Clone, Debug)]
pub(crate) enum Refused {
    /// Its id is the id of a request still in flight.
    DuplicateId {
        method: Option<String>,
        tool: Option<String>,
    },
    /// It was over the size limit.
    TooLarge {
        bytes: u64,
        max: usize,
        method: Option<String>,
        tool: Option<String>,
    },
}

/// What the agent's side shares with the gateway.
#[derive(Clone, Default)]
pub(crate) struct AgentState {
    /// Requests the agent cancelled (`notifications/cancelled`), while they are in flight.
    cancelled: Ids,
    /// The agent closed its side.
    closed: Arc<AtomicBool>,
}

impl AgentState {
    /// Whether the agent cancelled request `id`.
    pub(crate) fn cancelled(&self, id: &RequestId) -> bool {
        self.cancelled.set().contains(id)
    }
    /// Forgets `id` (its call ended).
    pub(crate) fn done(&self, id: &RequestId) {
        self.cancelled.remove(id);
    }
    /// Notes that the agent cancelled `id` (a transport that tracks in-flight ids itself).
    pub(crate) fn cancel(&self, id: &RequestId) {
        self.cancelled.insert(id.clone());
    }
    /// Notes that the agent's session closed.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
    }
    /// Whether the agent closed its connection.
    pub(crate) fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

/// Our server transport to the agent (see the module docs).
pub(crate) struct AgentTransport<W> {
    rx: mpsc::Receiver<ClientJsonRpcMessage>,
    writer: Writer<W>,
    in_flight: Ids,
    rewriter: Arc<super::rewrite::Rewriter>,
}

pub(crate) type OnRefused = Arc<dyn Fn(Refused) + Send + Sync>;

impl<W: AsyncWrite + Send + Unpin + 'static> AgentTransport<W> {
    pub(crate) fn start<R>(
        read: R,
        write: W,
        max: usize,
        state: AgentState,
        on_refused: OnRefused,
        rewriter: Arc<super::rewrite::Rewriter>,
    ) -> AgentTransport<W>
    where
        R: AsyncRead + Send + Unpin + 'static,
    {
        let (tx, rx) = mpsc::channel(QUEUE);
        let writer = Arc::new(tokio::sync::Mutex::new(Some(write)));
        let in_flight = Ids::default();
        tokio::spawn(read_agent(
            Lines::new(read, max, false),
            tx,
            writer.clone(),
            in_flight.clone(),
            state,
            on_refused,
            max,
        ));
        AgentTransport {
            rx,
            writer,
            in_flight,
            rewriter,
        }
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> Transport<RoleServer> for AgentTransport<W> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Response(r) => {
                self.in_flight.remove(&r.id);
            }
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    self.in_flight.remove(id);
                }
            }
            _ => {}
        }
        let line = serde_json::to_vec(&item).map(|v| self.rewriter.json_line(&v).unwrap_or(v));
        write_bytes(&self.writer, line)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.rx.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        shut(&self.writer).await;
        Ok(())
    }
}

fn tool_name(request: &ClientRequest) -> Option<String> {
    match request {
        ClientRequest::CallToolRequest(c) => Some(c.params.name.to_string()),
        _ => None,
    }
}

async fn read_agent<R, W>(
    mut lines: Lines<R>,
    tx: mpsc::Sender<ClientJsonRpcMessage>,
    writer: Writer<W>,
    in_flight: Ids,
    state: AgentState,
    on_refused: OnRefused,
    max: usize,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let answer = |error: ErrorData, id: Option<RequestId>| {
        write_line(&writer, &ServerJsonRpcMessage::error(error, id))
    };
    loop {
        let next = match lines.next().await {
            Ok(n) => n,
            Err(_) => break,
        };
        let message = match next {
            Next::Eof => break,
            Next::Over { bytes, scan } => {
                let scan = scan.unwrap_or_default();
                let (method, tool) = (scan.method(), scan.name());
                let id = scan.id();
                if id.is_none() && method.is_some() {
                    // A notification: nothing to answer.
                    tracing::warn!(
                        "mcp: a notification of the agent was {bytes} bytes, over the limit of {max} bytes (--max-message-size); dropped"
                    );
                    continue;
                }
                let _ = answer(
                    ErrorData::invalid_request(
                        format!(
                            "the request was {bytes} bytes, over cdp-relay's limit of {max} bytes (--max-message-size); it was not run"
                        ),
                        None,
                    ),
                    id,
                )
                .await;
                on_refused(Refused::TooLarge {
                    bytes,
                    max,
                    method,
                    tool,
                });
                continue;
            }
            Next::Line => {
                let line = lines.line();
                let line = line.strip_prefix(BOM).unwrap_or(line);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
                    Ok(m) => m,
                    Err(e) => {
                        // As rmcp does: unparsable input is ignored (answering it can start an
                        // error storm); well-formed JSON that is not a message is an error.
                        if e.classify() == serde_json::error::Category::Data {
                            let id = serde_json::from_slice::<serde_json::Value>(line)
                                .ok()
                                .and_then(|v| v.get("id").cloned())
                                .and_then(|id| serde_json::from_value(id).ok());
                            let _ = answer(ErrorData::invalid_request("Invalid request", None), id)
                                .await;
                        }
                        continue;
                    }
                }
            }
        };
        match &message {
            // The guard also registers a new id as in flight.
            JsonRpcMessage::Request(r) if !in_flight.insert(r.id.clone()) => {
                let _ = answer(
                    ErrorData::invalid_request(
                        format!(
                            "request id {} is already in use by a request in flight; use a new id",
                            r.id
                        ),
                        None,
                    ),
                    Some(r.id.clone()),
                )
                .await;
                on_refused(Refused::DuplicateId {
                    method: Some(r.request.method().to_owned()),
                    tool: tool_name(&r.request),
                });
                continue;
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification {
                    if let Some(id) = &c.params.request_id {
                        // rmcp sends no answer to a cancelled request: the id is free again.
                        if in_flight.remove(id) {
                            state.cancelled.insert(id.clone());
                        }
                    }
                }
            }
            _ => {}
        }
        if tx.send(message).await.is_err() {
            break;
        }
    }
    state.closed.store(true, Ordering::Relaxed);
}

#[cfg(test)]
mod tests;
