//! The relay's HTTP side: routing, discovery forwarding, `/relay/v1/status`, and the rest of
//! `/relay/v1/` handed to the embedder's [`Api`](crate::Api). Applies the access policy before
//! anything else (and the Origin rule to every `/relay/v1/` write); responses for refused
//! requests never echo a token.

use crate::api::{ApiRequest, ProxyView};
use crate::discovery::{self, Endpoint, Rewrite};
use crate::policy::{self, ClientAuthority, Rejection, TokenVia};
use crate::relay::{reachable, State};
use crate::upgrade;
use crate::upstream::{self, UpstreamError};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE, UPGRADE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use std::net::SocketAddr;
use std::sync::Arc;

/// Largest request body accepted (discovery requests have none).
const MAX_REQUEST_BODY: usize = 1024 * 1024;

pub(crate) type Body = Full<Bytes>;

/// Answers one request. `local` is the address the client connected to.
pub(crate) async fn handle(
    mut req: Request<Incoming>,
    state: Arc<State>,
    local: SocketAddr,
) -> Response<Body> {
    let policy = &state.config.policy;
    let authority = match policy::check_host(req.headers(), policy) {
        Ok(a) => a,
        Err(r) => return rejected(&state, &req, r),
    };
    // Routes the embedder serves without the token (a kubelet's probe has none).
    if let Some(route) = public_route(&state, req.uri().path()) {
        return relay_api(req, &state, local, route).await;
    }
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
    if let Some(route) = api_route(&path) {
        return relay_api(req, &state, local, route).await;
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

pub(crate) fn is_websocket_upgrade<B>(req: &Request<B>) -> bool {
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

/// The route of a `/relay/v1/<route>` path, without a trailing slash.
fn api_route(path: &str) -> Option<String> {
    let route = path.strip_prefix("/relay/v1/")?;
    Some(route.trim_end_matches('/').to_owned())
}

/// The route of `path` when the embedder serves it to anyone who passed the Host rule.
fn public_route(state: &State, path: &str) -> Option<String> {
    let route = api_route(path)?;
    state
        .api
        .as_ref()
        .is_some_and(|api| api.is_public(&route))
        .then_some(route)
}

/// `/relay/v1/<route>`: the status page here, everything else to the embedder's API. A write
/// (anything but `GET`/`HEAD`) must also pass the websocket Origin rule: browsers send an Origin
/// with every cross-site write, and a page must not register secrets or append evidence.
async fn relay_api(
    req: Request<Incoming>,
    state: &State,
    local: SocketAddr,
    route: String,
) -> Response<Body> {
    let read_only = matches!(*req.method(), Method::GET | Method::HEAD);
    if !read_only {
        if let Err(r) = policy::check_origin(req.headers(), &state.config.policy, local) {
            return rejected(state, &req, r);
        }
    }
    if route == "status" {
        return status_page(state, req.method());
    }
    let Some(api) = state.api.clone() else {
        return not_served(&route);
    };
    let (parts, body) = req.into_parts();
    let limit = api.max_body(&route);
    let body = match Limited::new(body, limit).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "cdp-relay: request body too large (limit {limit} bytes for /relay/v1/{route})"
                ),
            )
        }
    };
    let request = ApiRequest {
        method: parts.method,
        route: route.clone(),
        query: policy::strip_token_param(parts.uri.query()),
        headers: parts.headers,
        body,
        proxy: proxy_view(state),
    };
    match api.handle(request).await {
        Some(resp) => resp.map(Full::new),
        None => not_served(&route),
    }
}

fn not_served(route: &str) -> Response<Body> {
    text(
        StatusCode::NOT_FOUND,
        &format!("cdp-relay: no such relay API: /relay/v1/{route}"),
    )
}

fn proxy_view(state: &State) -> ProxyView {
    ProxyView {
        upstream: state.upstream.authority(),
        upstream_health: state.health.view(),
        connections_open: state.admission.open(),
        stats: state.stats.snapshot(),
    }
}

fn status_page(state: &State, method: &Method) -> Response<Body> {
    if method != Method::GET && method != Method::HEAD {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "cdp-relay: /relay/v1/status supports GET only",
        );
    }
    let view = proxy_view(state);
    let mut body = serde_json::Map::new();
    body.insert("relay".into(), "cdp-relay".into());
    body.insert("version".into(), env!("CARGO_PKG_VERSION").into());
    body.insert("upstream".into(), view.upstream.into());
    if let Some(api) = &state.api {
        body.extend(api.status());
    }
    let json = |v: Result<serde_json::Value, serde_json::Error>| v.unwrap_or_default();
    body.insert(
        "upstreamHealth".into(),
        json(serde_json::to_value(&view.upstream_health)),
    );
    body.insert("connectionsOpen".into(), view.connections_open.into());
    body.insert("stats".into(), json(serde_json::to_value(view.stats)));
    let mut resp = Response::new(Full::new(Bytes::from(
        serde_json::Value::Object(body).to_string(),
    )));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=UTF-8"),
    );
    resp
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

pub(crate) fn rejected<B>(state: &State, req: &Request<B>, r: Rejection) -> Response<Body> {
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

pub(crate) fn bad_gateway(e: &UpstreamError) -> Response<Body> {
    tracing::warn!(error = %e, "upstream request failed");
    text(StatusCode::BAD_GATEWAY, &format!("cdp-relay: {e}"))
}

pub(crate) fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(format!("{body}\n"))));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=UTF-8"),
    );
    resp
}
