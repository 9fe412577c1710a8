//! The proxy: client ⇄ relay ⇄ browser.
//!
//! Owns the listening socket and every client connection: accepting (`mod.rs`), the access
//! policy (`policy.rs`), discovery (`discovery.rs`, `upstream.rs`), the relay's own HTTP API and
//! routing (`http.rs`), websocket upgrades (`upgrade.rs`) and the hot path that moves frames
//! (`splice.rs`). It never waits on evidence: it only offers copies to the pipeline's tap, and
//! never writes a capability id or a token to a log.

mod admission;
mod discovery;
// Public for the fuzzer only: not part of the API.
#[doc(hidden)]
pub mod frames;
mod health;
mod http;
mod policy;
mod splice;
mod upgrade;
pub(crate) mod upstream;

pub use upstream::probe as probe_upstream;

use crate::config::{Config, Upstream};
use crate::pipeline::tap::Tap;
use crate::pipeline::PipelineHandle;
use crate::stats::Stats;
use crate::upload::UploadsHandle;
use crate::Error;
use admission::Admission;
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
    config: Config,
    upstream: Upstream,
    stats: Arc<Stats>,
    evidence: Option<PipelineHandle>,
    uploads: Option<UploadsHandle>,
}

/// What every connection task shares.
struct State {
    config: Config,
    upstream: Upstream,
    stats: Arc<Stats>,
    evidence: Option<PipelineHandle>,
    /// The uploader's counters, when uploads are configured.
    uploads: Option<UploadsHandle>,
    /// The pipeline's tap, or a disabled one.
    tap: Tap,
    local: SocketAddr,
    next_session: AtomicU64,
    /// Cancelled when the relay stops; every connection and session watches it.
    stop: CancellationToken,
    /// Every connection and session task, so shutdown can wait for them.
    tasks: TaskTracker,
    /// The connection cap and the eviction of clients that never send a request.
    admission: Arc<Admission>,
    /// Whether the browser answers.
    health: Arc<health::Health>,
}

impl Relay {
    /// Binds the listen address of `config`; `config.upstream` must be set.
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
        Ok(Relay {
            listener,
            local,
            config,
            upstream,
            stats: Arc::default(),
            evidence: None,
            uploads: None,
        })
    }

    /// Offers frame copies to `evidence`'s tap and serves its run in the status and secrets
    /// API.
    pub fn with_evidence(mut self, evidence: PipelineHandle) -> Relay {
        self.evidence = Some(evidence);
        self
    }

    /// Serves the uploader's state in the status API and metrics.
    pub fn with_uploads(mut self, uploads: UploadsHandle) -> Relay {
        self.uploads = Some(uploads);
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
            tap: self
                .evidence
                .as_ref()
                .map(|e| e.tap().clone())
                .unwrap_or_default(),
            evidence: self.evidence,
            uploads: self.uploads,
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
