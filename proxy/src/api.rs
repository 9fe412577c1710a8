//! The relay's own HTTP API under `/relay/v1/`, split by who owns what. The proxy serves
//! `/relay/v1/status` (its counters, the browser's health, open connections) and applies the
//! access policy to every route; an embedder hands it an [`Api`] for everything else under
//! `/relay/v1/` (the evidence pipeline: secrets, remote records, …) and for fields of its own in
//! the status answer. The proxy never learns what those routes mean, so nothing there can make a
//! forwarding task wait: an [`Api`] answers on the connection's own task, never on a splice.

use crate::health::HealthView;
use crate::stats::StatsSnapshot;
use bytes::Bytes;
use hyper::{HeaderMap, Method, Response};
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;

/// Largest request body an [`Api`] gets by default.
pub const DEFAULT_MAX_BODY: usize = 1024 * 1024;

/// What the proxy knows about itself when a request arrives.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxyView {
    /// `host:port` of the browser's DevTools server.
    pub upstream: String,
    /// Whether the browser answers, and since when.
    pub upstream_health: HealthView,
    /// Client connections open now (HTTP and websocket).
    pub connections_open: usize,
    /// Counters since start.
    pub stats: StatsSnapshot,
}

/// A request under `/relay/v1/` that passed the access policy (Host; the token unless
/// [`Api::is_public`] says otherwise; for anything but `GET`/`HEAD` the Origin rule), with its
/// body read up to [`Api::max_body`].
#[derive(Debug)]
pub struct ApiRequest {
    /// The HTTP method.
    pub method: Method,
    /// The path after `/relay/v1/` (`secrets/NAME`, `evidence`), without a trailing slash.
    pub route: String,
    /// The query string, without the relay's `token` parameter.
    pub query: Option<String>,
    /// The request headers (the token, if any, was already checked; it is not removed).
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
    /// The proxy's own state at this moment.
    pub proxy: ProxyView,
}

/// A boxed answer, so an [`Api`] can be a trait object.
pub type ApiFuture<'a> = Pin<Box<dyn Future<Output = Option<Response<Bytes>>> + Send + 'a>>;

/// The part of `/relay/v1/` the embedder serves.
pub trait Api: Send + Sync + 'static {
    /// Fields added at the top level of the `/relay/v1/status` answer.
    fn status(&self) -> Map<String, Value> {
        Map::new()
    }

    /// Whether `route` answers without the token (e.g. a readiness probe, which a kubelet sends
    /// without credentials). Such a route must say nothing a stranger may not know. By default,
    /// none.
    fn is_public(&self, _route: &str) -> bool {
        false
    }

    /// Largest body accepted for `route` before [`Api::handle`] is called; a larger one gets a 413
    /// without reaching it. By default, [`DEFAULT_MAX_BODY`].
    fn max_body(&self, _route: &str) -> usize {
        DEFAULT_MAX_BODY
    }

    /// Answers `route`, or `None` when it is not one of the embedder's (the client gets a 404).
    fn handle(&self, req: ApiRequest) -> ApiFuture<'_>;
}
