//! The relay: the listening socket, the accept loop, one task per client connection, and
//! shutdown. Never waits on evidence: it offers copies to the [`Tap`] and hands `/relay/v1/`
//! routes it does not own to the embedder's [`Api`].

use crate::admission::{self, Admission};
use crate::api::Api;
use crate::health;
use crate::http;
use crate::stats::Stats;
use crate::tap::Tap;
use crate::{Error, ProxyConfig, Upstream};
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long open sessions get to close cleanly after shutdown is requested.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A bound relay, ready to serve.
pub struct Relay {
    listener: TcpListener,
    local: SocketAddr,
    config: ProxyConfig,
    upstream: Upstream,
    stats: Arc<Stats>,
    tap: Tap,
    api: Option<Arc<dyn Api>>,
}

/// What every connection task shares.
pub(crate) struct State {
    pub(crate) config: ProxyConfig,
    pub(crate) upstream: Upstream,
    pub(crate) stats: Arc<Stats>,
    /// The embedder's part of `/relay/v1/`.
    pub(crate) api: Option<Arc<dyn Api>>,
    /// Where message copies go (a disabled tap when nobody consumes them).
    pub(crate) tap: Tap,
    pub(crate) local: SocketAddr,
    pub(crate) next_session: AtomicU64,
    /// Cancelled when the relay stops; every connection and session watches it.
    pub(crate) stop: CancellationToken,
    /// Every connection and session task, so shutdown can wait for them.
    pub(crate) tasks: TaskTracker,
    /// The connection cap and the eviction of clients that never send a request.
    pub(crate) admission: Arc<Admission>,
    /// Whether the browser answers.
    pub(crate) health: Arc<health::Health>,
}

impl Relay {
    /// Binds the listen address of `config`; `config.upstream` must be set.
    pub async fn bind(config: ProxyConfig) -> Result<Relay, Error> {
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
        Ok(Relay {
            listener,
            local,
            config,
            upstream,
            stats: Arc::default(),
            tap: Tap::disabled(),
            api: None,
        })
    }

    /// Offers a copy of every forwarded message to `tap`. By default, nobody gets copies.
    pub fn with_tap(mut self, tap: Tap) -> Relay {
        self.tap = tap;
        self
    }

    /// Serves the rest of `/relay/v1/` with `api`, and adds its fields to the status answer. By
    /// default, only `/relay/v1/status` is served.
    pub fn with_api(mut self, api: Arc<dyn Api>) -> Relay {
        self.api = Some(api);
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
        self.stats.clone()
    }

    /// Serves until `shutdown` resolves, then closes open sessions (1001) and returns once they
    /// are gone or the grace period is over.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) {
        let state = Arc::new(State {
            tap: self.tap,
            api: self.api,
            config: self.config,
            upstream: self.upstream,
            stats: self.stats,
            local: self.local,
            next_session: AtomicU64::new(1),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
            admission: Admission::new(admission::default_max_connections()),
            health: Arc::default(),
        });
        health::watch_in_background(&state.health, &state.upstream, &state.stop);
        tokio::pin!(shutdown);
        let accept_failures = admission::RateLimited::default();
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((tcp, _peer)) => {
                        // Full of clients that all sent requests: the newcomer is closed.
                        if let Some(ticket) = state.admission.admit() {
                            state.tasks.spawn(serve_connection(tcp, ticket, state.clone()));
                        }
                    }
                    Err(e) => {
                        // Out of descriptors: make room by closing a client that never sent a
                        // request; otherwise keep serving the connections we have and retry.
                        if !state.admission.relieve() {
                            accept_failures.note(|n| {
                                tracing::warn!(error = %e, "{n} accept failure(s); retrying")
                            });
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                },
            }
        }
        drop(self.listener);
        state.stop.cancel();
        state.tasks.close();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, state.tasks.wait()).await;
    }
}

/// An address a client can dial: the unspecified address becomes loopback.
pub(crate) fn reachable(addr: SocketAddr) -> SocketAddr {
    let mut a = addr;
    if a.ip().is_unspecified() {
        a.set_ip(match a {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    a
}

async fn serve_connection(tcp: TcpStream, ticket: admission::Ticket, state: Arc<State>) {
    let _ = tcp.set_nodelay(true);
    // The address this client reached us on: the relay's own origin for the Origin rule.
    let local = tcp.local_addr().unwrap_or(state.local);
    let ticket = Arc::new(ticket);
    let svc_state = state.clone();
    let svc_ticket = ticket.clone();
    let service = service_fn(move |req| {
        svc_ticket.admitted();
        let state = svc_state.clone();
        async move { Ok::<_, Infallible>(http::handle(req, state, local).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(admission::HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(tcp), service)
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        r = &mut conn => {
            if let Err(e) = r {
                tracing::debug!(error = %e, "http connection ended with an error");
            }
        }
        _ = ticket.evicted.cancelled() => {}
        _ = state.stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn).await;
        }
    }
}
