//! The relay's part of `/relay/v1/`: what the proxy hands to the evidence side. The proxy has
//! already applied the access policy (Host; the token except on the probes; the Origin rule for
//! writes) and serves `/relay/v1/status` itself. This adds the evidence and upload fields to it
//! and answers:
//!
//! - `PUT secrets/<NAME>`: a literal masked in all evidence of the run from now on;
//! - `POST evidence`: records from a remote producer (`remote`);
//! - `GET metrics`: Prometheus text (`ops::metrics`);
//! - `GET ready`, `GET live`: one word each, without the token (`ops::probe`).
//!
//! CPU work (building a secret's matcher, appending records) runs on a blocking thread, never on
//! the runtime that forwards frames.

use crate::ops::{self, Reply};
use crate::remote;
use crate::upload::UploadsHandle;
use bytes::Bytes;
use cdp_capture::PipelineHandle;
use cdp_relay_proxy::{Api, ApiFuture, ApiRequest};
use cdp_sanitize::SecretError;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Response, StatusCode};
use serde_json::{Map, Value};

/// The `/relay/v1/` routes of a relay, with or without evidence.
#[derive(Debug, Clone, Default)]
pub struct RelayApi {
    evidence: Option<PipelineHandle>,
    /// Evidence was asked for (so a relay recording nothing is not ready).
    evidence_wanted: bool,
    uploads: Option<UploadsHandle>,
    /// The owner's own fields of the status answer.
    extra: Vec<crate::config::StatusField>,
}

impl RelayApi {
    /// Serves `evidence`'s run; `evidence_wanted` says whether evidence was asked for at all
    /// (with `None`, the secrets API says evidence is off and readiness depends on it).
    pub fn new(evidence: Option<PipelineHandle>, evidence_wanted: bool) -> RelayApi {
        RelayApi {
            evidence,
            evidence_wanted,
            uploads: None,
            extra: Vec::new(),
        }
    }

    /// Adds the owner's fields to the status answer (after the relay's own, which win).
    pub fn with_status_fields(mut self, fields: Vec<crate::config::StatusField>) -> RelayApi {
        self.extra = fields;
        self
    }

    /// Reports `uploads` in the status answer and the metrics.
    pub fn with_uploads(mut self, uploads: UploadsHandle) -> RelayApi {
        self.uploads = Some(uploads);
        self
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
        let json = |v: Result<Value, serde_json::Error>| v.unwrap_or_default();
        // Why the ready probe says "not ready" for evidence (the probe itself says no reason).
        let problem = evidence
            .as_ref()
            .and_then(|e| ops::probe::evidence_problem(&e.run_dir));
        fields.insert("evidenceProblem".into(), problem.into());
        fields.insert("evidence".into(), json(serde_json::to_value(&evidence)));
        let uploads = self.uploads.as_ref().map(UploadsHandle::status);
        fields.insert("uploads".into(), json(serde_json::to_value(&uploads)));
        for extra in &self.extra {
            fields
                .entry(extra.name.to_owned())
                .or_insert_with(|| (extra.read)());
        }
        fields
    }

    fn is_public(&self, route: &str) -> bool {
        ops::probe::is_probe(&format!("/relay/v1/{route}"))
    }

    fn max_body(&self, route: &str) -> usize {
        match route {
            "evidence" => remote::MAX_BODY,
            _ => cdp_sanitize::MAX_SECRET_BYTES,
        }
    }

    fn handle(&self, req: ApiRequest) -> ApiFuture<'_> {
        Box::pin(async move {
            let route = req.route.as_str();
            if self.is_public(route) {
                return Some(self.probe(&req));
            }
            match route {
                "evidence" => Some(self.remote_evidence(req).await),
                "metrics" => Some(self.metrics(&req)),
                _ => {
                    let name = route.strip_prefix("secrets/")?.to_owned();
                    Some(self.register_secret(req.method, &name, req.body).await)
                }
            }
        })
    }
}

impl RelayApi {
    fn probe(&self, req: &ApiRequest) -> Response<Bytes> {
        let run_dir = self.evidence.as_ref().map(|e| e.status().run_dir);
        let evidence = match (&run_dir, self.evidence_wanted) {
            (Some(dir), _) => ops::probe::EvidenceReadiness::Recording(dir),
            (None, true) => ops::probe::EvidenceReadiness::Unavailable,
            (None, false) => ops::probe::EvidenceReadiness::Off,
        };
        reply(ops::probe::answer(
            &format!("/relay/v1/{}", req.route),
            req.method.as_str(),
            req.proxy.upstream_health.reachable,
            evidence,
        ))
    }

    fn metrics(&self, req: &ApiRequest) -> Response<Bytes> {
        reply(ops::metrics::answer(
            req.method.as_str(),
            ops::metrics::Snapshot {
                stats: req.proxy.stats,
                connections_open: req.proxy.connections_open,
                upstream_up: req.proxy.upstream_health.reachable,
                evidence: self.evidence.as_ref().map(PipelineHandle::status),
                uploads: self.uploads.as_ref().map(UploadsHandle::status),
            },
        ))
    }

    /// `POST /relay/v1/evidence`: records from a remote producer, all or nothing.
    async fn remote_evidence(&self, req: ApiRequest) -> Response<Bytes> {
        let method = req.method.as_str().to_owned();
        let content_type = req
            .headers
            .get(CONTENT_TYPE)
            .map(|v| v.to_str().unwrap_or("invalid").to_owned());
        let query = req.query;
        if let Err(r) = remote::check_request(&method, content_type.as_deref(), query.as_deref()) {
            return reply(r);
        }
        let (evidence, body) = (self.evidence.clone(), req.body);
        let answer = tokio::task::spawn_blocking(move || {
            remote::append_blocking(
                evidence.as_ref(),
                &method,
                content_type.as_deref(),
                query.as_deref(),
                &body,
            )
        })
        .await;
        match answer {
            Ok(r) => reply(r),
            Err(_) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cdp-relay: the records could not be appended; try again",
            ),
        }
    }

    /// `PUT /relay/v1/secrets/<NAME>` with the literal as the body: from now on the literal reads
    /// `${NAME}` in all evidence of this run. The literal is never echoed or logged. At most
    /// `MAX_SECRETS` secrets of `MAX_SECRET_BYTES` each (413 — from the proxy's body limit —
    /// and 409 past them).
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
}

/// An `ops` answer as a response.
fn reply(r: Reply) -> Response<Bytes> {
    let mut resp = Response::new(Bytes::from(r.body));
    *resp.status_mut() =
        StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(r.content_type));
    if let Some(allow) = r.allow {
        resp.headers_mut()
            .insert(ALLOW, HeaderValue::from_static(allow));
    }
    resp
}

/// A one-line plain-text answer.
fn text(status: StatusCode, body: &str) -> Response<Bytes> {
    reply(Reply::text(status.as_u16(), body))
}
