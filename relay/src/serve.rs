//! The relay server: accepts connections, applies the access policy, answers discovery, and hands
//! websocket upgrades to the splice. Owns connection lifetimes and graceful shutdown.

use crate::config::{Config, Upstream};
use crate::discovery::{self, Endpoint, Rewrite};
use crate::policy::{self, ClientAuthority, Rejection, TokenVia};
use crate::recorder::{EvidenceHandle, Recorder};
use crate::splice::{splice, SessionId};
use crate::stats::Stats;
use crate::tap::{Tap, TapEvent};
use crate::upstream::{self, UpstreamError};
use crate::Error;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, CONNECTION, CONTENT_TYPE, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY,
    SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, UPGRADE, WWW_AUTHENTICATE,
};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

/// How long open sessions get to close cleanly after shutdown is requested.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Largest request body accepted (discovery requests have none).
const MAX_REQUEST_BODY: usize = 1024 * 1024;

type Body = Full<Bytes>;

/// A bound relay, ready to serve.
pub struct Relay {
    listener: TcpListener,
    local: SocketAddr,
    state: Arc<State>,
}

struct State {
    config: Config,
    upstream: Upstream,
    ws_config: WebSocketConfig,
    stats: Arc<Stats>,
    tap: Tap,
    evidence: Option<EvidenceHandle>,
    local: SocketAddr,
    next_session: AtomicU64,
}

impl Relay {
    /// Binds the listen address of `config` without evidence. `config.upstream` must be set.
    pub async fn bind(config: Config) -> Result<Relay, Error> {
        let upstream = config
            .upstream
            .clone()
            .ok_or_else(|| Error::Usage("no upstream configured; pass --upstream".into()))?;
        let addr = config.policy.listen;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| Error::Bind { addr, source })?;
        let ws_config = WebSocketConfig::default()
            .max_message_size(Some(config.max_message_size))
            .max_frame_size(Some(config.max_message_size));
        let state = Arc::new(State {
            config,
            upstream,
            ws_config,
            stats: Arc::default(),
            tap: Tap::disabled(),
            evidence: None,
            local,
            next_session: AtomicU64::new(1),
        });
        Ok(Relay {
            listener,
            local,
            state,
        })
    }

    /// Offers frame copies to a recorder's tap and serves its run in the status and secrets API.
    /// Call before [`Relay::run_until`] (the relay is not shared before it runs).
    pub fn with_evidence(mut self, evidence: EvidenceHandle) -> Relay {
        if let Some(state) = Arc::get_mut(&mut self.state) {
            state.tap = evidence.tap.clone();
            state.evidence = Some(evidence);
        }
        self
    }

    /// The bound address (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The HTTP endpoint clients should use, e.g. `http://127.0.0.1:9223`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", reachable(self.local))
    }

    /// Live counters.
    pub fn stats(&self) -> Arc<Stats> {
        self.state.stats.clone()
    }

    /// Serves until `shutdown` resolves, then closes open sessions (1001) and returns once they
    /// are gone or the grace period is over.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) {
        let (stop_tx, stop_rx) = watch::channel(false);
        // Every connection task holds a clone; `recv` yields `None` once all are gone.
        let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((tcp, _peer)) => {
                        let state = self.state.clone();
                        let stop = stop_rx.clone();
                        let alive = alive_tx.clone();
                        tokio::spawn(serve_connection(tcp, state, stop, alive));
                    }
                    Err(e) => {
                        // Out of descriptors or similar: keep serving the connections we have.
                        tracing::warn!(error = %e, "accept failed; retrying");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
        }
        drop(self.listener);
        let _ = stop_tx.send(true);
        drop(alive_tx);
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, alive_rx.recv()).await;
    }
}

/// An address a client can dial: the unspecified address becomes loopback.
fn reachable(addr: SocketAddr) -> SocketAddr {
    let mut a = addr;
    if a.ip().is_unspecified() {
        a.set_ip(match a {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    a
}

async fn serve_connection(
    tcp: TcpStream,
    state: Arc<State>,
    mut stop: watch::Receiver<bool>,
    alive: mpsc::Sender<()>,
) {
    let _ = tcp.set_nodelay(true);
    let svc_state = state.clone();
    let svc_stop = stop.clone();
    let svc_alive = alive.clone();
    let service = service_fn(move |req| {
        let state = svc_state.clone();
        let stop = svc_stop.clone();
        let alive = svc_alive.clone();
        async move { Ok::<_, Infallible>(handle(req, state, stop, alive).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(tcp), service)
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        r = &mut conn => {
            if let Err(e) = r {
                tracing::debug!(error = %e, "http connection ended with an error");
            }
        }
        _ = crate::signals::stopped(&mut stop) => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn).await;
        }
    }
    drop(alive);
}

async fn handle(
    mut req: Request<Incoming>,
    state: Arc<State>,
    stop: watch::Receiver<bool>,
    alive: mpsc::Sender<()>,
) -> Response<Body> {
    let policy = &state.config.policy;
    let authority = match policy::check_host(req.headers(), policy) {
        Ok(a) => a,
        Err(r) => return rejected(&state, &req, r),
    };
    let via = match policy::check_token(req.headers(), req.uri().query(), policy) {
        Ok(v) => v,
        Err(r) => return rejected(&state, &req, r),
    };
    if is_websocket_upgrade(&req) {
        return upgrade(&mut req, state, stop, alive).await;
    }
    state.stats.http_request();
    let path = req.uri().path().to_owned();
    if path == "/relay/v1/status" || path == "/relay/v1/status/" {
        return status_page(&state, req.method());
    }
    if let Some(name) = path.strip_prefix("/relay/v1/secrets/") {
        let name = name.trim_end_matches('/').to_owned();
        return register_secret(&state, req, &name).await;
    }
    let query = policy::strip_token_param(req.uri().query());
    let (upstream_path, kind) = match discovery::classify(&path) {
        Some((p, k)) => (p, Some(k)),
        None => (path, None),
    };
    let path_and_query = match &query {
        Some(q) => format!("{upstream_path}?{q}"),
        None => upstream_path,
    };
    let method = req.method().clone();
    let content_type = req.headers().get(CONTENT_TYPE).cloned();
    let body = match read_body(
        req.into_body(),
        "request body too large (discovery requests carry none)",
    )
    .await
    {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let answer = match upstream::http(
        &state.upstream,
        method,
        &path_and_query,
        content_type.as_ref(),
        body,
    )
    .await
    {
        Ok(a) => a,
        Err(e) => return bad_gateway(&e),
    };
    let body = match kind {
        Some(kind @ (Endpoint::Version | Endpoint::List | Endpoint::New))
            if answer.status.is_success() =>
        {
            let authority = client_authority(&authority, state.local);
            let token = match (via, &policy.token) {
                (TokenVia::Query, Some(t)) => Some(t.expose()),
                _ => None,
            };
            let rw = Rewrite {
                authority: &authority,
                token,
            };
            discovery::rewrite_body(kind, &answer.body, &rw)
                .map(Bytes::from)
                .unwrap_or(answer.body)
        }
        _ => answer.body,
    };
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = answer.status;
    if let Some(ct) = answer.content_type {
        resp.headers_mut().insert(CONTENT_TYPE, ct);
    }
    resp
}

/// The authority to write into rewritten URLs: the Host the client used, else our address.
fn client_authority(authority: &ClientAuthority, local: SocketAddr) -> String {
    match &authority.0 {
        Some(a) => a.clone(),
        None => reachable(local).to_string(),
    }
}

fn is_websocket_upgrade<B>(req: &Request<B>) -> bool {
    let has_token = |name, token: &str| {
        req.headers().get_all(name).iter().any(|v| {
            v.to_str()
                .map(|s| s.split(',').any(|p| p.trim().eq_ignore_ascii_case(token)))
                .unwrap_or(false)
        })
    };
    req.method() == Method::GET
        && has_token(UPGRADE, "websocket")
        && has_token(CONNECTION, "upgrade")
}

async fn upgrade(
    req: &mut Request<Incoming>,
    state: Arc<State>,
    stop: watch::Receiver<bool>,
    alive: mpsc::Sender<()>,
) -> Response<Body> {
    if let Err(r) = policy::check_origin(req.headers(), &state.config.policy) {
        return rejected(&state, req, r);
    }
    let path = req.uri().path();
    if !path.starts_with("/devtools/") {
        state.stats.upgrade_refused();
        return text(
            StatusCode::NOT_FOUND,
            "cdp-relay: websockets are relayed under /devtools/ only (use webSocketDebuggerUrl from /json/version or /json/list)",
        );
    }
    let Some(key) = req.headers().get(SEC_WEBSOCKET_KEY).cloned() else {
        state.stats.upgrade_refused();
        return text(
            StatusCode::BAD_REQUEST,
            "cdp-relay: missing Sec-WebSocket-Key",
        );
    };
    if req
        .headers()
        .get(SEC_WEBSOCKET_VERSION)
        .map(|v| v.as_bytes())
        != Some(b"13")
    {
        state.stats.upgrade_refused();
        let mut r = text(
            StatusCode::UPGRADE_REQUIRED,
            "cdp-relay: only websocket version 13 is supported",
        );
        r.headers_mut()
            .insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
        return r;
    }
    let path_and_query = match policy::strip_token_param(req.uri().query()) {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    // Connect upstream first: if the browser refuses, the client gets a 502, not a dead socket.
    let (browser, protocol) = match upstream::websocket(
        &state.upstream,
        &path_and_query,
        req.headers(),
        state.ws_config,
    )
    .await
    {
        Ok(ok) => ok,
        Err(e) => {
            state.stats.upgrade_refused();
            return bad_gateway(&e);
        }
    };
    let on_upgrade = hyper::upgrade::on(req);
    let session = SessionId(state.next_session.fetch_add(1, Ordering::Relaxed));
    let capability_path = path_and_query;
    tokio::spawn(async move {
        let _alive = alive;
        let upgraded = match on_upgrade.await {
            Ok(u) => u,
            Err(e) => {
                tracing::debug!(session = session.0, error = %e, "client left during the upgrade");
                return;
            }
        };
        let client = WebSocketStream::from_raw_socket(
            TokioIo::new(upgraded),
            Role::Server,
            Some(state.ws_config),
        )
        .await;
        state.stats.session_opened();
        state.tap.offer(TapEvent::Opened {
            conn: session.0,
            path: capability_path,
            at: SystemTime::now(),
        });
        tracing::debug!(session = session.0, "websocket session opened");
        let how = splice(session, client, browser, &state.tap, &state.stats, stop).await;
        state.stats.session_closed();
        state.tap.offer(TapEvent::Closed {
            conn: session.0,
            how,
            at: SystemTime::now(),
        });
        tracing::debug!(session = session.0, ?how, "websocket session ended");
    });
    let mut resp = Response::new(Full::new(Bytes::new()));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(accept) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        h.insert(SEC_WEBSOCKET_ACCEPT, accept);
    }
    if let Some(p) = protocol {
        h.insert(SEC_WEBSOCKET_PROTOCOL, p);
    }
    resp
}

fn status_page(state: &State, method: &Method) -> Response<Body> {
    if method != Method::GET && method != Method::HEAD {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "cdp-relay: /relay/v1/status supports GET only",
        );
    }
    let evidence = state.evidence.as_ref().map(|e| {
        serde_json::json!({
            "runId": e.run_id(),
            "runDir": e.run_dir(),
            "session": e.session,
            "dropped": e.dropped(),
        })
    });
    let body = serde_json::json!({
        "relay": "cdp-relay",
        "version": env!("CARGO_PKG_VERSION"),
        "upstream": state.upstream.authority(),
        "evidence": evidence,
        "evidenceDropped": state.evidence.as_ref().map_or(0, EvidenceHandle::dropped),
        "stats": state.stats.snapshot(),
    });
    let mut resp = Response::new(Full::new(Bytes::from(body.to_string())));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=UTF-8"),
    );
    resp
}

/// `PUT /relay/v1/secrets/<NAME>` with the literal as the body: from now on the literal reads
/// `${NAME}` in all evidence of this run. The literal is never echoed or logged.
async fn register_secret(state: &State, req: Request<Incoming>, name: &str) -> Response<Body> {
    if req.method() != Method::PUT {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "cdp-relay: register a secret with PUT /relay/v1/secrets/<NAME> and the literal as the body",
        );
    }
    let Some(evidence) = &state.evidence else {
        return text(
            StatusCode::CONFLICT,
            "cdp-relay: evidence is off, so there is nothing to protect a secret from",
        );
    };
    let body = match read_body(req.into_body(), "secret too large (limit 1 MiB)").await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let Ok(literal) = std::str::from_utf8(&body) else {
        return text(
            StatusCode::BAD_REQUEST,
            "cdp-relay: the secret must be UTF-8 text",
        );
    };
    if literal.trim().is_empty() {
        return text(
            StatusCode::BAD_REQUEST,
            "cdp-relay: an empty or whitespace-only secret is not registered",
        );
    }
    match evidence.sanitizer.register_secret(name, literal) {
        Ok(_) => {
            tracing::info!("secret {name} registered for this run");
            let mut r = Response::new(Full::new(Bytes::new()));
            *r.status_mut() = StatusCode::NO_CONTENT;
            r
        }
        Err(e) => text(StatusCode::BAD_REQUEST, &format!("cdp-relay: {e}")),
    }
}

/// Collects a request body of at most [`MAX_REQUEST_BODY`]; a 413 saying `too_large` otherwise.
async fn read_body(body: Incoming, too_large: &str) -> Result<Bytes, Response<Body>> {
    match Limited::new(body, MAX_REQUEST_BODY).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(_) => Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("cdp-relay: {too_large}"),
        )),
    }
}

fn rejected<B>(state: &State, req: &Request<B>, r: Rejection) -> Response<Body> {
    if is_websocket_upgrade(req) {
        state.stats.upgrade_refused();
    }
    tracing::info!(
        status = r.status.as_u16(),
        "request refused by the access policy"
    );
    let unauthorized = r.status == StatusCode::UNAUTHORIZED;
    let mut resp = text(r.status, &r.body);
    if unauthorized {
        resp.headers_mut()
            .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    resp
}

fn bad_gateway(e: &UpstreamError) -> Response<Body> {
    tracing::warn!(error = %e, "upstream request failed");
    text(StatusCode::BAD_GATEWAY, &format!("cdp-relay: {e}"))
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(format!("{body}\n"))));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=UTF-8"),
    );
    resp
}

/// `cdp-relay serve`: probe the upstream, bind, print the endpoint, serve until a signal.
pub(crate) async fn run_serve(config: Config) -> anyhow::Result<ExitCode> {
    let upstream = config
        .upstream
        .clone()
        .ok_or_else(|| Error::Usage("serve needs --upstream".into()))?;
    upstream::probe(&upstream).await?;
    let evidence = config.evidence.clone();
    let mut relay = Relay::bind(config).await?;
    // Bound first: a relay that cannot listen leaves no evidence run behind.
    let recorder = start_recorder(&evidence);
    if let Some(r) = &recorder {
        relay = relay.with_evidence(r.handle().clone());
    }
    announce(&relay, &upstream);
    let signal = crate::signals::shutdown_signal();
    relay
        .run_until(async {
            let name = signal.await;
            tracing::info!("{name} received; shutting down");
        })
        .await;
    finish_recorder(recorder).await;
    Ok(ExitCode::SUCCESS)
}

/// Starts evidence recording as configured. A directory that cannot be used turns evidence off
/// with one warning: forwarding matters more.
pub(crate) fn start_recorder(settings: &crate::EvidenceSettings) -> Option<Recorder> {
    match Recorder::start(settings) {
        Ok(Some(r)) => {
            let h = r.handle();
            tracing::info!(
                "evidence: recording run {} in {}",
                h.run_id(),
                h.run_dir().display()
            );
            Some(r)
        }
        Ok(None) => None,
        Err(e) => {
            tracing::warn!("{e}");
            None
        }
    }
}

/// Finalizes the run (pending commands become interrupted) and says where it is.
pub(crate) async fn finish_recorder(recorder: Option<Recorder>) {
    let Some(recorder) = recorder else {
        return;
    };
    if let Some(summary) = recorder.finish().await {
        if summary.dropped > 0 {
            tracing::warn!(
                "evidence: {} pieces of evidence were dropped (queue full or write failures)",
                summary.dropped
            );
        }
        tracing::info!("evidence: run finalized in {}", summary.run_dir.display());
    }
}

/// Prints the endpoint as the only stdout line, and a human note on stderr.
pub(crate) fn announce(relay: &Relay, upstream: &Upstream) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // A closed stdout (e.g. `| head -1` already exited) is not a reason to stop relaying.
    let _ = writeln!(out, "{}", relay.endpoint());
    let _ = out.flush();
    tracing::info!(
        "relaying {} -> browser at {}",
        relay.endpoint(),
        upstream.authority()
    );
}
