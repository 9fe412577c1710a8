//! The sessions of the HTTP gateway. [`Hub`] is rmcp's session manager: rmcp's in-memory
//! sessions (`LocalSessionManager`) under our ids, and for each a [`Slot`] holding the session's
//! browser and gateway, started by `handler.rs` on `initialize` and ended here, once, whatever
//! ends it: DELETE, the idle timeout (rmcp's keep-alive), the wrapped server's exit, shutdown.
//! Every end passes through [`SessionManager::close_session`]: rmcp calls it for DELETE and when
//! a session's service stops, and so do we for the other reasons.

use super::super::gateway::{Gateway, GatewayConfig, StopReason};
use super::super::telemetry::Telemetry;
use super::{SessionBrowser, StartBrowser};
use cdp_relay_proxy::Token;
use futures_util::Stream;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, GetExtensions, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_server::session::local::{
    create_local_session, LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
    SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::{Transport, WorkerTransport};
use rmcp::RoleServer;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use tracing::Instrument;

/// A place among `--max-sessions`, held from the admitted `initialize` until the session ends.
pub(crate) struct Ticket(Arc<AtomicUsize>);

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The place an `initialize` was admitted with, carried in its HTTP request's extensions
/// (which must be `Clone`) to [`Hub::initialize_session`].
#[derive(Clone)]
pub(crate) struct Admission(pub(crate) Arc<Mutex<Option<Ticket>>>);

/// The session an `initialize` opens, carried in its extensions to `handler.rs`.
#[derive(Clone)]
pub(crate) struct SlotTag(pub(crate) Arc<Slot>);

/// One MCP session.
pub(crate) struct Slot {
    pub(crate) id: SessionId,
    pub(crate) opened: SystemTime,
    /// The `Authorization` credential of its `initialize` (`None`: it sent none); every later
    /// request must present the same.
    credential: OnceLock<Option<Token>>,
    pub(crate) gateway: OnceLock<Gateway>,
    browser: tokio::sync::Mutex<Option<SessionBrowser>>,
    last_seen: Mutex<Instant>,
    /// Why it ends, when that is known before rmcp closes it (DELETE, its server exited).
    reason: Mutex<Option<StopReason>>,
    ending: AtomicBool,
    /// Cancelled once the session has ended: its watchers stop with it.
    ended: tokio_util::sync::CancellationToken,
    ticket: Mutex<Option<Ticket>>,
    pub(crate) requests: AtomicU64,
}

impl Slot {
    fn new(id: SessionId) -> Slot {
        Slot {
            id,
            opened: SystemTime::now(),
            credential: OnceLock::new(),
            gateway: OnceLock::new(),
            browser: tokio::sync::Mutex::new(None),
            last_seen: Mutex::new(Instant::now()),
            reason: Mutex::new(None),
            ending: AtomicBool::new(false),
            ended: tokio_util::sync::CancellationToken::new(),
            ticket: Mutex::new(None),
            requests: AtomicU64::new(0),
        }
    }

    /// Whether `presented` (the request's `Authorization` credential) is the one that created
    /// the session; compared in constant time (the relay's [`Token`]).
    pub(crate) fn credential_matches(&self, presented: Option<&str>) -> bool {
        match (self.credential.get(), presented) {
            (Some(None), None) => true,
            (Some(Some(t)), Some(p)) => t.matches(p),
            _ => false,
        }
    }

    pub(crate) fn touch(&self) {
        *self.last_seen.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn idle_for(&self) -> Duration {
        self.last_seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }

    /// Says why the session is about to end (the first reason given wins).
    pub(crate) fn mark(&self, why: StopReason) {
        let mut r = self.reason.lock().unwrap_or_else(|e| e.into_inner());
        r.get_or_insert(why);
    }

    /// Forgets a reason given too early (a DELETE rmcp refused).
    pub(crate) fn unmark(&self) {
        self.take_reason();
    }

    fn take_reason(&self) -> Option<StopReason> {
        self.reason.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// What the status page and the metrics count.
#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) started: AtomicU64,
    pub(crate) ended: Mutex<BTreeMap<&'static str, u64>>,
    pub(crate) refused: Mutex<BTreeMap<&'static str, u64>>,
}

impl Counts {
    pub(crate) fn refused(&self, why: &'static str) {
        *self
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(why)
            .or_default() += 1;
    }

    fn ended(&self, why: &'static str) {
        *self
            .ended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(why)
            .or_default() += 1;
    }
}

/// The sessions, and rmcp's session manager over them.
pub(crate) struct Hub {
    config: GatewayConfig,
    start: StartBrowser,
    pub(crate) max: usize,
    pub(crate) idle: Duration,
    slots: Mutex<HashMap<SessionId, Arc<Slot>>>,
    admitted: Arc<AtomicUsize>,
    pub(crate) counts: Counts,
    local: LocalSessionManager,
    stopping: AtomicBool,
}

impl Hub {
    pub(crate) fn new(
        config: GatewayConfig,
        start: StartBrowser,
        max: usize,
        idle: Duration,
    ) -> Hub {
        Hub {
            config,
            start,
            max,
            idle,
            slots: Mutex::default(),
            admitted: Arc::default(),
            counts: Counts::default(),
            local: LocalSessionManager::default(),
            stopping: AtomicBool::new(false),
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn slot(&self, id: &str) -> Option<Arc<Slot>> {
        self.slots().get(id).cloned()
    }

    /// The sessions open now, oldest first.
    pub(crate) fn open(&self) -> Vec<Arc<Slot>> {
        let mut v: Vec<_> = self.slots().values().cloned().collect();
        v.sort_by_key(|s| s.opened);
        v
    }

    /// Sessions open or starting.
    pub(crate) fn admitted(&self) -> usize {
        self.admitted.load(Ordering::SeqCst)
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// A place for a new session, unless the limit is reached or the gateway is stopping.
    pub(crate) fn admit(&self) -> Option<Ticket> {
        if self.stopping() {
            return None;
        }
        self.admitted
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Ticket(self.admitted.clone()))
    }

    /// Starts the session's browser and gateway (on `initialize`). If the session was ended
    /// meanwhile, what started is stopped again.
    pub(crate) async fn start(self: &Arc<Self>, slot: &Arc<Slot>) -> Result<Gateway, String> {
        if let Some(g) = slot.gateway.get() {
            return Ok(g.clone());
        }
        let mut browser = (self.start)(slot.id.to_string()).await?;
        let exited = browser.exited.take();
        let mut config = self.config.clone();
        config.evidence_root = browser.evidence.as_ref().and(browser.evidence_root.clone());
        config.session = Some(slot.id.to_string());
        config.telemetry = self.config.telemetry.as_ref().map(Telemetry::for_session);
        let started =
            Gateway::start(config, browser.endpoints.clone(), browser.evidence.clone()).await;
        let gateway = match started {
            Ok(g) => g,
            Err(e) => {
                (browser.stop)().await;
                return Err(e.to_string());
            }
        };
        *slot.browser.lock().await = Some(browser);
        let _ = slot.gateway.set(gateway.clone());
        self.counts.started.fetch_add(1, Ordering::Relaxed);
        if slot.ending.load(Ordering::SeqCst) {
            // Ended while starting: `end` may not have seen what was just stored.
            self.stop_parts(slot, StopReason::AgentLeft).await;
            return Err("the session ended while it was starting".into());
        }
        tracing::info!(session = %slot.id, "mcp: session started ({} open)", self.admitted());
        if let Some(exited) = exited {
            let (g, ended) = (gateway.clone(), slot.ended.clone());
            tokio::spawn(
                async move {
                    tokio::select! {
                        () = ended.cancelled() => {}
                        how = exited => {
                            tracing::warn!("mcp: the session's browser exited ({how}); the evidence tools still work");
                            g.browser_exited(&how, false);
                        }
                    }
                }
                .in_current_span(),
            );
        }
        let hub = self.clone();
        let (slot2, g) = (slot.clone(), gateway.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = slot2.ended.cancelled() => {}
                () = g.server_gone() => {
                    slot2.mark(StopReason::ServerExited);
                    let _ = hub.close_session(&slot2.id).await;
                }
            }
        });
        Ok(gateway)
    }

    async fn stop_parts(&self, slot: &Slot, why: StopReason) {
        if let Some(g) = slot.gateway.get() {
            g.stop(why).await;
        }
        let browser = slot.browser.lock().await.take();
        if let Some(b) = browser {
            (b.stop)().await;
        }
    }

    /// Ends a session: its gateway (calls in flight written as interrupted, the server's
    /// process group stopped), then its run (finalized, rendered, uploaded) and browser.
    async fn end(&self, slot: Arc<Slot>, why: StopReason) {
        if slot.ending.swap(true, Ordering::SeqCst) {
            return;
        }
        self.stop_parts(&slot, why).await;
        slot.ticket.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.counts.ended(why.name());
        slot.ended.cancel();
        tracing::info!(session = %slot.id, reason = why.name(), "mcp: session ended ({})", why.name());
    }

    /// Why a session rmcp is closing ends, when nobody said so before.
    fn reason(&self, slot: &Slot) -> StopReason {
        if let Some(why) = slot.take_reason() {
            return why;
        }
        if self.stopping() {
            return StopReason::Signal("SIGTERM");
        }
        if slot.idle_for() + Duration::from_millis(500) >= self.idle {
            return StopReason::Idle(self.idle);
        }
        StopReason::AgentLeft
    }

    /// Ends every session (a signal): no new one is admitted, each ends concurrently.
    pub(crate) async fn shutdown(self: &Arc<Self>, signal: &'static str) {
        self.stopping.store(true, Ordering::SeqCst);
        let mut ending = tokio::task::JoinSet::new();
        for slot in self.open() {
            slot.mark(StopReason::Signal(signal));
            let hub = self.clone();
            ending.spawn(async move {
                let _ = hub.close_session(&slot.id).await;
            });
        }
        while ending.join_next().await.is_some() {}
    }

    fn session_config(&self) -> SessionConfig {
        let mut c = SessionConfig::default();
        c.keep_alive = Some(self.idle);
        c
    }
}

/// The `Authorization` credential of a request (`Bearer <this>`), if any.
pub(crate) fn credential(headers: &hyper::HeaderMap) -> Option<String> {
    let auth = headers.get(hyper::header::AUTHORIZATION)?.to_str().ok()?;
    Some(auth.trim().to_owned())
}

impl SessionManager for Hub {
    type Error = LocalSessionManagerError;
    type Transport = AgentHttp;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let id = new_session_id();
        let (handle, worker) = create_local_session(id.clone(), self.session_config());
        self.local.sessions.write().await.insert(id.clone(), handle);
        let slot = Arc::new(Slot::new(id.clone()));
        self.slots().insert(id.clone(), slot.clone());
        let transport = AgentHttp {
            inner: WorkerTransport::spawn(worker),
            slot,
            in_flight: Arc::default(),
        };
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let slot = self
            .slot(id)
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        if let JsonRpcMessage::Request(req) = &mut message {
            let ext = req.request.extensions_mut();
            if let Some(parts) = ext.get::<hyper::http::request::Parts>() {
                let presented = credential(&parts.headers).map(|c| Token::of(&c));
                let _ = slot.credential.set(presented);
                if let Some(Admission(ticket)) = parts.extensions.get::<Admission>() {
                    let t = ticket.lock().unwrap_or_else(|e| e.into_inner()).take();
                    *slot.ticket.lock().unwrap_or_else(|e| e.into_inner()) = t;
                }
            }
            ext.insert(SlotTag(slot.clone()));
        }
        slot.touch();
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let slot = self.slots().remove(id);
        if let Some(slot) = slot {
            let why = self.reason(&slot);
            self.end(slot, why).await;
        }
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.resume(id, last_event_id).await
    }
}

/// 128 random bits from the OS, as 32 hex digits (also a valid evidence session name).
fn new_session_id() -> SessionId {
    let mut bytes = [0u8; 16];
    // The OS's generator does not fail on Linux once booted; a failure is not worth a weak id.
    getrandom::fill(&mut bytes).expect("the OS random number generator failed");
    let mut id = String::with_capacity(32);
    for b in bytes {
        id.push_str(&format!("{b:02x}"));
    }
    id.into()
}

/// The agent's side of one session, over rmcp's session worker: what the agent reads is
/// rewritten (values back to `${NAME}`) as stdio's transport does, and the gateway learns of
/// cancelled requests and a closed session as it does on stdio.
pub(crate) struct AgentHttp {
    inner: WorkerTransport<LocalSessionWorker>,
    slot: Arc<Slot>,
    in_flight: Arc<Mutex<HashSet<RequestId>>>,
}

impl AgentHttp {
    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Transport<RoleServer> for AgentHttp {
    type Error = <WorkerTransport<LocalSessionWorker> as Transport<RoleServer>>::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Response(r) => {
                self.in_flight().remove(&r.id);
            }
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    self.in_flight().remove(id);
                }
            }
            _ => {}
        }
        let item = match self.slot.gateway.get() {
            Some(g) => g.rewritten(item),
            None => item,
        };
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let message = self.inner.receive().await;
        let gateway = self.slot.gateway.get();
        match &message {
            Some(JsonRpcMessage::Request(r)) => {
                self.in_flight().insert(r.id.clone());
            }
            Some(JsonRpcMessage::Notification(n)) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification {
                    if let (Some(id), Some(g)) = (&c.params.request_id, gateway) {
                        if self.in_flight().remove(id) {
                            g.agent_cancelled(id);
                        }
                    }
                }
            }
            Some(_) => {}
            None => {
                if let Some(g) = gateway {
                    g.agent_closed();
                }
            }
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn session_ids_are_128_random_bits_and_valid_session_names() {
        let a = super::new_session_id();
        let b = super::new_session_id();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
        cdp_evidence::validate_id("session", &a).unwrap();
    }

    #[test]
    fn a_session_answers_only_its_creators_credential() {
        use cdp_relay_proxy::Token;
        let slot = super::Slot::new("s".into());
        assert!(!slot.credential_matches(None), "not before initialize");
        slot.credential.set(Some(Token::of("Bearer a"))).ok();
        assert!(slot.credential_matches(Some("Bearer a")));
        assert!(!slot.credential_matches(Some("Bearer b")));
        assert!(!slot.credential_matches(None));
        let open = super::Slot::new("t".into());
        open.credential.set(None).ok();
        assert!(open.credential_matches(None));
        assert!(
            !open.credential_matches(Some("Bearer a")),
            "none then is none now"
        );
    }

    #[test]
    fn the_first_reason_given_wins() {
        let slot = super::Slot::new("s".into());
        slot.mark(super::StopReason::Deleted);
        slot.mark(super::StopReason::ServerExited);
        assert_eq!(slot.take_reason(), Some(super::StopReason::Deleted));
    }
}
