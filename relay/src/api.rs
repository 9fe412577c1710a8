//! The relay's part of `/relay/v1/`: what the proxy hands to the evidence side. The proxy has
//! already applied the access policy (Host, token, and the Origin rule for writes) and serves
//! `/relay/v1/status` itself; this adds the evidence fields to it and answers
//! `PUT /relay/v1/secrets/<NAME>`.

use crate::pipeline::PipelineHandle;
use bytes::Bytes;
use cdp_relay_proxy::{Api, ApiFuture, ApiRequest};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Response, StatusCode};
use serde_json::{Map, Value};

/// Largest secret accepted by `PUT /relay/v1/secrets/<NAME>`.
pub const MAX_SECRET_BYTES: usize = 1024 * 1024;

/// The `/relay/v1/` routes of a relay, with or without evidence.
#[derive(Debug, Clone, Default)]
pub struct RelayApi {
    evidence: Option<PipelineHandle>,
}

impl RelayApi {
    /// Serves `evidence`'s run (or, with `None`, says evidence is off).
    pub fn new(evidence: Option<PipelineHandle>) -> RelayApi {
        RelayApi { evidence }
    }
}

impl Api for RelayApi {
    fn status(&self) -> Map<String, Value> {
        let evidence = self.evidence.as_ref().map(PipelineHandle::status);
        let mut fields = Map::new();
        fields.insert(
            "evidenceDropped".into(),
            evidence.as_ref().map_or(0, |e| e.dropped).into(),
        );
        fields.insert(
            "evidence".into(),
            serde_json::to_value(&evidence).unwrap_or_default(),
        );
        fields
    }

    fn max_body(&self, _route: &str) -> usize {
        MAX_SECRET_BYTES
    }

    fn handle(&self, req: ApiRequest) -> ApiFuture<'_> {
        Box::pin(async move {
            let name = req.route.strip_prefix("secrets/")?.to_owned();
            Some(self.register_secret(req.method, &name, req.body).await)
        })
    }
}

impl RelayApi {
    /// `PUT /relay/v1/secrets/<NAME>` with the literal as the body: from now on the literal reads
    /// `${NAME}` in all evidence of this run. The literal is never echoed or logged.
    async fn register_secret(&self, method: Method, name: &str, body: Bytes) -> Response<Bytes> {
        if method != Method::PUT {
            return text(
                StatusCode::METHOD_NOT_ALLOWED,
                "cdp-relay: register a secret with PUT /relay/v1/secrets/<NAME> and the literal as the body",
            );
        }
        let Some(evidence) = &self.evidence else {
            return text(
                StatusCode::CONFLICT,
                "cdp-relay: evidence is off, so there is nothing to protect a secret from",
            );
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
        // Building the matcher is CPU work: off the runtime that forwards frames.
        let (evidence, owned_name) = (evidence.clone(), name.to_owned());
        let registered =
            tokio::task::spawn_blocking(move || evidence.register_secret(&owned_name, &literal))
                .await;
        match registered {
            Ok(Ok(_)) => {
                tracing::info!("secret {name} registered for this run");
                let mut r = Response::new(Bytes::new());
                *r.status_mut() = StatusCode::NO_CONTENT;
                r
            }
            Ok(Err(e)) => text(StatusCode::BAD_REQUEST, &format!("cdp-relay: {e}")),
            Err(_) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cdp-relay: registering the secret failed; try again",
            ),
        }
    }
}

/// A one-line plain-text answer.
fn text(status: StatusCode, body: &str) -> Response<Bytes> {
    let mut resp = Response::new(Bytes::from(format!("{body}\n")));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=UTF-8"),
    );
    resp
}
