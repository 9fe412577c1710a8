//! The relay's HTTP side: routing, discovery forwarding, and the relay's own API
//! (`/relay/v1/status`, `/relay/v1/secrets/<NAME>`). Applies the access policy before anything
//! else; responses for refused requests never echo a token.

use super::discovery::{self, Endpoint, Rewrite};
use super::policy::{self, ClientAuthority, Rejection, TokenVia};
use super::upstream::{self, UpstreamError};
use super::{reachable, upgrade, State};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE, UPGRADE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use std::net::SocketAddr;
use std::sync::Arc;

/// Largest request body accepted (discovery requests have none).
const MAX_REQUEST_BODY: usize = 1024 * 1024;

pub(super) type Body = Full<Bytes>;

/// Answers one request. `local` is the address the client connected to.
pub(super) async fn handle(
    mut req: Request<Incoming>,
    state: Arc<State>,
    local: SocketAddr,
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
    if req.uri().scheme().is_some() || req.uri().authority().is_some() {
        // `GET http://host/path`: a proxy request. Chromium answers 404; so does the relay.
        return text(
            StatusCode::NOT_FOUND,
            "cdp-relay: absolute-form request targets are not served; send the path only",
        );
    }
    if is_websocket_upgrade(&req) {
        return upgrade::upgrade(&mut req, state, local).await;
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

pub(super) fn is_websocket_upgrade<B>(req: &Request<B>) -> bool {
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

fn status_page(state: &State, method: &Method) -> Response<Body> {
    if method != Method::GET && method != Method::HEAD {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "cdp-relay: /relay/v1/status supports GET only",
        );
    }
    let evidence = state.evidence.as_ref().map(|e| e.status());
    let body = serde_json::json!({
        "relay": "cdp-relay",
        "version": env!("CARGO_PKG_VERSION"),
        "upstream": state.upstream.authority(),
        "evidenceDropped": evidence.as_ref().map_or(0, |e| e.dropped),
        "upstreamHealth": state.health.view(),
        "connectionsOpen": state.admission.open(),
        "evidence": evidence,
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
/// `${NAME}` in all evidence of this run. The literal is never echoed or logged. At most
/// `MAX_SECRETS` secrets of `MAX_SECRET_BYTES` each (413, 409 past them); the registration runs
/// on a blocking thread, so a registration waiting for the sanitizer never holds up forwarding.
async fn register_secret(state: &State, req: Request<Incoming>, name: &str) -> Response<Body> {
    use cdp_sanitize::{SecretError, MAX_SECRET_BYTES};
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
    let body = match Limited::new(req.into_body(), MAX_SECRET_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("cdp-relay: the secret is larger than {MAX_SECRET_BYTES} bytes, the most that can be registered"),
            )
        }
    };
    let Ok(literal) = String::from_utf8(body.to_vec()) else {
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
    let (evidence, owned) = (evidence.clone(), name.to_owned());
    let registered =
        tokio::task::spawn_blocking(move || evidence.register_secret(&owned, &literal)).await;
    match registered {
        Ok(Ok(_)) => {
            tracing::info!("secret {name} registered for this run");
            let mut r = Response::new(Full::new(Bytes::new()));
            *r.status_mut() = StatusCode::NO_CONTENT;
            r
        }
        Ok(Err(e @ SecretError::TooLong { .. })) => {
            text(StatusCode::PAYLOAD_TOO_LARGE, &format!("cdp-relay: {e}"))
        }
        Ok(Err(e @ SecretError::TooMany { .. })) => {
            text(StatusCode::CONFLICT, &format!("cdp-relay: {e}"))
        }
        Ok(Err(e)) => text(StatusCode::BAD_REQUEST, &format!("cdp-relay: {e}")),
        Err(_) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "cdp-relay: the secret could not be registered; try again",
        ),
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

pub(super) fn rejected<B>(state: &State, req: &Request<B>, r: Rejection) -> Response<Body> {
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

pub(super) fn bad_gateway(e: &UpstreamError) -> Response<Body> {
    tracing::warn!(error = %e, "upstream request failed");
    text(StatusCode::BAD_GATEWAY, &format!("cdp-relay: {e}"))
}

pub(super) fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(format!("{body}\n"))));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=UTF-8"),
    );
    resp
}
