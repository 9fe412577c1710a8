//! The HTTP side of the gateway: hyper serving rmcp's Streamable HTTP service at `/mcp`, with
//! every request passed through the relay's access rules first, a session's requests held to
//! the credential that created it, the session limit on `initialize`, and the operator's
//! endpoints (`/relay/v1/status`, `/metrics` with the token; `/ready`, `/live` without, as the
//! relay's own).

use super::handler::SessionHandler;
use super::sessions::{credential, Admission, Hub};
use super::{HttpConfig, StartBrowser};
use crate::error::Error;
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;

type Body = BoxBody<Bytes, Infallible>;
type Mcp = StreamableHttpService<SessionHandler, Hub>;

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";

/// The HTTP gateway, bound and ready to serve.
pub struct HttpGateway {
    listener: TcpListener,
    local: SocketAddr,
    state: Arc<State>,
}

impl std::fmt::Debug for HttpGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpGateway")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

struct State {
    hub: Arc<Hub>,
    mcp: Mcp,
    policy: cdp_relay_proxy::ListenPolicy,
    max_body: usize,
    cancel: tokio_util::sync::CancellationToken,
}

pub(super) async fn bind(config: HttpConfig, start: StartBrowser) -> Result<HttpGateway, Error> {
    let listen = config.policy.listen;
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| Error::Session {
            reason: format!("cannot listen on {listen}: {e}; pick another --listen address"),
        })?;
    let local = listener.local_addr().map_err(|e| Error::Session {
        reason: format!("cannot read the address listened on: {e}"),
    })?;
    let max_body = config.gateway.max_message_bytes;
    let hub = Arc::new(Hub::new(
        config.gateway,
        start,
        config.max_sessions,
        config.session_idle,
    ));
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut mcp_config = StreamableHttpServerConfig::default()
        .with_cancellation_token(cancel.clone())
        .with_max_request_body_bytes(max_body)
        // Host and Origin are checked before rmcp sees a request, by the relay's own rules.
        .disable_allowed_hosts()
        .disable_allowed_origins();
    mcp_config.legacy_session_mode = true;
    let factory_hub = hub.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(SessionHandler::new(factory_hub.clone())),
        hub.clone(),
        mcp_config,
    );
    Ok(HttpGateway {
        listener,
        local,
        state: Arc::new(State {
            hub,
            mcp,
            policy: config.policy,
            max_body,
            cancel,
        }),
    })
}

impl HttpGateway {
    /// `http://HOST:PORT/mcp`, the endpoint agents connect to.
    pub fn endpoint(&self) -> String {
        let host = match self.local.ip() {
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        format!("http://{host}:{}{MCP_PATH}", self.local.port())
    }

    /// Serves until `shutdown` resolves (with the signal's name), then ends every session
    /// (each recorded as stopped by that signal) and returns once all have ended.
    pub async fn serve(self, shutdown: impl Future<Output = &'static str>) {
        let HttpGateway {
            listener, state, ..
        } = self;
        tokio::pin!(shutdown);
        let signal = loop {
            tokio::select! {
                name = &mut shutdown => break name,
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let Ok(local) = stream.local_addr() else { continue };
                    let state = state.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let state = state.clone();
                            async move { Ok::<_, Infallible>(handle(req, &state, local).await) }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        };
        drop(listener);
        tracing::info!("{signal} received; ending every MCP session");
        state.hub.shutdown(signal).await;
        state.cancel.cancel();
    }
}

fn text(status: StatusCode, body: impl Into<String>) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body.into())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn json(status: StatusCode, body: &serde_json::Value) -> Response<Body> {
    let mut r = text(status, body.to_string());
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

/// Every request of the gateway's port passes here.
async fn handle(req: Request<Incoming>, state: &State, local: SocketAddr) -> Response<Body> {
    let hub = &state.hub;
    match req.uri().path() {
        "/relay/v1/live" => return text(StatusCode::OK, "live\n"),
        "/relay/v1/ready" => {
            return if hub.stopping() || hub.admitted() >= hub.max {
                text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "not ready: at the session limit\n",
                )
            } else {
                text(StatusCode::OK, "ready\n")
            }
        }
        _ => {}
    }
    if let Err(r) = cdp_relay_proxy::admit(req.headers(), &state.policy, local) {
        hub.counts.refused(r.rule);
        tracing::warn!(
            rule = r.rule,
            "mcp: refused a {} {} ({}): {}",
            req.method(),
            req.uri().path(),
            r.rule,
            r.body
        );
        return text(r.status, r.body);
    }
    match req.uri().path() {
        MCP_PATH => mcp(req, state).await,
        "/relay/v1/status" => json(StatusCode::OK, &status(hub)),
        "/relay/v1/metrics" => metrics(hub),
        _ => text(
            StatusCode::NOT_FOUND,
            "cdp-relay: this is an MCP gateway; its endpoint is /mcp",
        ),
    }
}

/// A JSON-RPC error answer outside any session (`id` as the request gave it, or null).
fn jsonrpc_error(status: StatusCode, id: serde_json::Value, message: &str) -> Response<Body> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32000, "message": message},
    });
    json(status, &body)
}

/// `/mcp`: a request of a session must present the credential that created it; an
/// `initialize` (a POST without a session) needs a place under `--max-sessions`.
async fn mcp(req: Request<Incoming>, state: &State) -> Response<Body> {
    let hub = &state.hub;
    let session = req
        .headers()
        .get("mcp-session-id")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let (mut parts, body) = req.into_parts();
    if let Some(id) = session {
        let slot = hub.slot(&id);
        let presented = credential(&parts.headers);
        let Some(slot) = slot.filter(|s| s.credential_matches(presented.as_deref())) else {
            // Unknown, ended, or another credential's: the same answer, so ids cannot be probed.
            let why = if hub.slot(&id).is_some() {
                "session_credential"
            } else {
                "unknown_session"
            };
            hub.counts.refused(why);
            tracing::warn!(
                reason = why,
                "mcp: refused a {} for a session that is not the caller's ({why})",
                parts.method
            );
            return text(
                StatusCode::NOT_FOUND,
                "Not Found: no such MCP session for these credentials; send initialize to start one",
            );
        };
        slot.touch();
        let delete = parts.method == Method::DELETE;
        if delete {
            slot.mark(crate::StopReason::Deleted);
        }
        let answer = state.mcp.handle(Request::from_parts(parts, body)).await;
        if delete && !answer.status().is_success() {
            // rmcp refused the DELETE: the session goes on, and a later end has its own reason.
            slot.unmark();
        }
        return answer;
    }
    if parts.method != Method::POST {
        let req = Request::from_parts(parts, body);
        return state.mcp.handle(req).await;
    }
    let bytes = match Limited::new(body, state.max_body).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return jsonrpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                serde_json::Value::Null,
                &format!(
                    "the request is over cdp-relay's limit of {} bytes (--max-message-size)",
                    state.max_body
                ),
            )
        }
    };
    let Some(ticket) = hub.admit() else {
        let id = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("id").cloned())
            .unwrap_or(serde_json::Value::Null);
        hub.counts.refused("session_limit");
        let message = if hub.stopping() {
            "cdp-relay is shutting down; start the session on another gateway".to_owned()
        } else {
            format!(
                "cdp-relay is at its session limit ({} open, --max-sessions {}); retry later or use another gateway",
                hub.admitted(),
                hub.max
            )
        };
        tracing::warn!("mcp: refused a new session: {message}");
        return jsonrpc_error(StatusCode::SERVICE_UNAVAILABLE, id, &message);
    };
    parts
        .extensions
        .insert(Admission(Arc::new(Mutex::new(Some(ticket)))));
    let req = Request::from_parts(parts, Full::new(bytes));
    state.mcp.handle(req).await
}

/// `/relay/v1/status`: the gateway and one line per open session.
fn status(hub: &Hub) -> serde_json::Value {
    let sessions: Vec<serde_json::Value> = hub
        .open()
        .iter()
        .map(|s| {
            let g = s.gateway.get();
            serde_json::json!({
                "id": &*s.id,
                "openedAt": humantime::format_rfc3339_millis(s.opened).to_string(),
                "idleSeconds": s.idle_for().as_secs(),
                "requests": s.requests.load(std::sync::atomic::Ordering::Relaxed),
                "started": g.is_some(),
                "server": g.and_then(|g| g.server_name()),
                "serverAlive": g.is_some_and(|g| g.server_alive()),
                "runId": g.and_then(|g| g.run_id()),
            })
        })
        .collect();
    let ended = hub
        .counts
        .ended
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    serde_json::json!({
        "mcp": {
            "sessionsOpen": hub.admitted(),
            "maxSessions": hub.max,
            "sessionIdleSeconds": hub.idle.as_secs(),
            "sessionsStarted": hub.counts.started.load(std::sync::atomic::Ordering::Relaxed),
            "sessionsEnded": ended,
            "stopping": hub.stopping(),
        },
        "sessions": sessions,
    })
}

/// `/relay/v1/metrics`: the gateway's counters in the Prometheus text format.
fn metrics(hub: &Hub) -> Response<Body> {
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    let mut registry = prometheus_client::registry::Registry::with_prefix("cdp_relay_mcp");
    let gauge = |v: usize| {
        let g = Gauge::<i64>::default();
        g.set(i64::try_from(v).unwrap_or(i64::MAX));
        g
    };
    let open = hub.open();
    let children = open
        .iter()
        .filter(|s| s.gateway.get().is_some_and(|g| g.server_alive()))
        .count();
    registry.register(
        "sessions_open",
        "MCP sessions open or starting",
        gauge(hub.admitted()),
    );
    registry.register(
        "sessions_max",
        "The session limit (--max-sessions)",
        gauge(hub.max),
    );
    registry.register(
        "children_alive",
        "Wrapped MCP server processes running",
        gauge(children),
    );
    let started = Counter::<u64>::default();
    started.inc_by(
        hub.counts
            .started
            .load(std::sync::atomic::Ordering::Relaxed),
    );
    registry.register("sessions_started", "MCP sessions started", started);
    for (name, help, counts) in [
        (
            "sessions_ended",
            "MCP sessions ended, by reason",
            &hub.counts.ended,
        ),
        (
            "requests_refused",
            "Requests refused (access rules, sessions, the limit), by reason",
            &hub.counts.refused,
        ),
    ] {
        let family = Family::<Vec<(String, String)>, Counter>::default();
        for (reason, n) in counts.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            family
                .get_or_create(&vec![("reason".to_owned(), (*reason).to_owned())])
                .inc_by(*n);
        }
        registry.register(name, help, family);
    }
    let mut body = String::new();
    if prometheus_client::encoding::text::encode(&mut body, &registry).is_err() {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "cdp-relay: metrics could not be encoded",
        );
    }
    let mut r = text(StatusCode::OK, body);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        ),
    );
    r
}
