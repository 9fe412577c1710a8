//! Websocket upgrades under `/devtools/`: the Origin rule, the browser side dialled first (a
//! refusal is a 502, not a dead socket), then the 101 and the splice.

use crate::http::{bad_gateway, rejected, text, Body};
use crate::policy;
use crate::relay::State;
use crate::splice::{splice, Context, SessionId, Side};
use crate::upstream;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL,
    SEC_WEBSOCKET_VERSION, UPGRADE,
};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

/// Answers a websocket upgrade request: a refusal, or the 101 once the browser accepted the
/// same upgrade (the splice then runs as a task of its own).
pub(crate) async fn upgrade(
    req: &mut Request<Incoming>,
    state: Arc<State>,
    local: std::net::SocketAddr,
) -> Response<Body> {
    let (key, path_and_query) = match admit(req, &state, local) {
        Ok(admitted) => admitted,
        Err(refusal) => return *refusal,
    };
    // Connect upstream first: if the browser refuses, the client gets a 502, not a dead socket.
    let browser = match upstream::websocket(&state.upstream, &path_and_query, req.headers()).await {
        Ok(ok) => ok,
        Err(e) => {
            state.stats.upgrade_refused();
            if let upstream::UpstreamError::Connect { reason, .. } = &e {
                state.health.observe(false, Some(reason.clone()));
            }
            return bad_gateway(&e);
        }
    };
    state.health.observe(true, None);
    let protocol = browser.protocol.clone();
    let on_upgrade = hyper::upgrade::on(req);
    let session = SessionId(state.next_session.fetch_add(1, Ordering::Relaxed));
    state.tasks.spawn(session_task(
        state.clone(),
        on_upgrade,
        session,
        path_and_query,
        browser,
    ));
    switching_protocols(&key, protocol)
}

/// The request's `Sec-WebSocket-Key` and the path and query to ask the browser for (the
/// relay's token left out), or the answer that refuses it.
fn admit(
    req: &Request<Incoming>,
    state: &State,
    local: std::net::SocketAddr,
) -> Result<(HeaderValue, String), Box<Response<Body>>> {
    if let Err(r) = policy::check_origin(req.headers(), &state.config.policy, local) {
        return Err(Box::new(rejected(state, req, r)));
    }
    let path = req.uri().path();
    if !path.starts_with("/devtools/") {
        state.stats.upgrade_refused();
        return Err(Box::new(text(
            StatusCode::NOT_FOUND,
            "cdp-relay: websockets are relayed under /devtools/ only (use webSocketDebuggerUrl from /json/version or /json/list)",
        )));
    }
    let Some(key) = req.headers().get(SEC_WEBSOCKET_KEY).cloned() else {
        state.stats.upgrade_refused();
        return Err(Box::new(text(
            StatusCode::BAD_REQUEST,
            "cdp-relay: missing Sec-WebSocket-Key",
        )));
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
        return Err(Box::new(r));
    }
    let path_and_query = match policy::strip_token_param(req.uri().query()) {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    Ok((key, path_and_query))
}

/// One session, once the client's upgrade completes: the splice between the client's socket
/// and the browser's, opened and closed on the tap.
async fn session_task(
    state: Arc<State>,
    on_upgrade: hyper::upgrade::OnUpgrade,
    session: SessionId,
    capability_path: String,
    browser: upstream::BrowserSocket,
) {
    let upgraded = match on_upgrade.await {
        Ok(u) => u,
        Err(e) => {
            tracing::debug!(session = session.0, error = %e, "client left during the upgrade");
            return;
        }
    };
    // The raw socket, so each direction reads and writes it without a lock.
    let parts = match upgraded.downcast::<TokioIo<TcpStream>>() {
        Ok(parts) => parts,
        Err(_) => {
            tracing::warn!(
                session = session.0,
                "unexpected connection type after the upgrade; closing"
            );
            return;
        }
    };
    let client_tcp = parts.io.into_inner();
    state.stats.session_opened();
    let tap = &state.tap;
    tap.opened(session.0, capability_path);
    tracing::debug!(session = session.0, "websocket session opened");
    // Owned halves: each direction runs as a task of its own.
    let (client_read, client_write) = client_tcp.into_split();
    let (browser_read, browser_write) = browser.tcp.into_split();
    let cx = Arc::new(Context {
        tap: tap.clone(),
        stats: state.stats.clone(),
        stop: state.stop.clone(),
        max_message: state.config.max_message_size,
    });
    let how = splice(
        session,
        Side {
            read: client_read,
            write: client_write,
            leftover: parts.read_buf,
        },
        Side {
            read: browser_read,
            write: browser_write,
            leftover: browser.leftover,
        },
        cx,
    )
    .await;
    state.stats.session_closed();
    tap.closed(session.0, how);
    tracing::debug!(session = session.0, ?how, "websocket session ended");
}

/// The 101 that completes the client's handshake.
fn switching_protocols(key: &HeaderValue, protocol: Option<HeaderValue>) -> Response<Body> {
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
