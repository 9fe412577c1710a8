//! Joins `Network.requestWillBeSent` (URL, method, resource type) with `Network.loadingFailed`
//! (which carries no URL) and with `Network.responseReceived` statuses ≥ 400.
//!
//! Each observer keeps one table per stream of events it reads (the passive observer per
//! connection, keyed by session; the relay's own per page), and both join through here, so a
//! failed request reads the same whoever saw it. The table is bounded; raw URLs live here in
//! memory only until the request ends.

use crate::pipeline::cdp::params as cdp;
use crate::pipeline::IdMap;
use cdp_sanitize::{NetworkFailure, RawNetworkFailure, Sanitizer};
use std::time::SystemTime;

struct Request {
    url: String,
    method: String,
    resource_type: Option<String>,
    /// CDP's monotonic timestamp (seconds) of the request.
    timestamp: f64,
    /// When the relay saw the request go out.
    seen_at: SystemTime,
    /// A ≥ 400 response was already recorded; a later loadingFailed is the same failure.
    reported: bool,
}

type Key = (Option<Box<str>>, Box<str>);

/// Requests in flight on one stream of events, keyed by (CDP session, requestId).
pub(crate) struct Requests {
    map: IdMap<Key, Request>,
    max: usize,
    /// A `Network.requestWillBeSent` went by: whoever reads these events enabled `Network`.
    seen: bool,
}

/// A failure to record, and when its request started (if it was seen).
pub(crate) type Failure = (NetworkFailure, Option<SystemTime>);

impl Requests {
    pub(crate) fn new(max: usize) -> Requests {
        Requests {
            map: IdMap::default(),
            max,
            seen: false,
        }
    }

    /// True once a request went by.
    pub(crate) fn seen_any(&self) -> bool {
        self.seen
    }

    /// Tracks a request; `false` when the table is full and it was not tracked.
    pub(crate) fn sent(
        &mut self,
        session: &Option<Box<str>>,
        p: &cdp::RequestWillBeSent<'_>,
        at: SystemTime,
    ) -> bool {
        self.seen = true;
        let key = (session.clone(), Box::from(p.request_id.as_ref()));
        // A redirect reuses the requestId: the entry follows the request to its new URL.
        if !self.map.contains_key(&key) && self.map.len() >= self.max {
            return false;
        }
        self.map.insert(
            key,
            Request {
                url: p.request.url.clone().into_owned(),
                method: p.request.method.clone().into_owned(),
                resource_type: p.resource_type.as_deref().map(str::to_owned),
                timestamp: p.timestamp,
                seen_at: at,
                reported: false,
            },
        );
        true
    }

    /// A response with status ≥ 400 is a failure (recorded once).
    pub(crate) fn response(
        &mut self,
        session: &Option<Box<str>>,
        p: &cdp::ResponseReceived<'_>,
        s: &Sanitizer,
    ) -> Option<Failure> {
        if p.response.status < 400 {
            return None;
        }
        let key = (session.clone(), Box::from(p.request_id.as_ref()));
        let req = self.map.get_mut(&key);
        let (method, url, resource_type, started, seen_at) = match &req {
            Some(r) => (
                r.method.as_str(),
                r.url.as_str(),
                r.resource_type.as_deref().or(p.resource_type.as_deref()),
                Some(r.timestamp),
                Some(r.seen_at),
            ),
            None => (
                "",
                p.response.url.as_ref(),
                p.resource_type.as_deref(),
                None,
                None,
            ),
        };
        let failure = s.network_failure(RawNetworkFailure {
            method,
            url,
            status: Some(p.response.status),
            resource_type,
            duration_ms: elapsed_ms(started, p.timestamp),
            error_text: Some(p.response.status_text.as_ref()).filter(|t| !t.is_empty()),
        });
        if let Some(r) = req {
            r.reported = true;
        }
        Some((failure, seen_at))
    }

    /// `loadingFailed` ends the request: a failure unless a ≥ 400 response already said so.
    pub(crate) fn failed(
        &mut self,
        session: &Option<Box<str>>,
        p: &cdp::LoadingFailed<'_>,
        s: &Sanitizer,
    ) -> Option<Failure> {
        let key = (session.clone(), Box::from(p.request_id.as_ref()));
        let req = self.map.remove(&key);
        if req.as_ref().is_some_and(|r| r.reported) {
            return None;
        }
        let mut error = p.error_text.to_string();
        if p.canceled && !error.contains("ABORTED") {
            error.push_str(" (canceled)");
        }
        if let Some(reason) = p.blocked_reason.as_deref().filter(|r| !r.is_empty()) {
            error.push_str(&format!(" (blocked: {reason})"));
        }
        if let Some(cors) = p
            .cors_error_status
            .as_ref()
            .filter(|c| !c.cors_error.is_empty())
        {
            error.push_str(&format!(" (CORS: {})", cors.cors_error));
        }
        let failure = s.network_failure(RawNetworkFailure {
            method: req.as_ref().map_or("", |r| r.method.as_str()),
            url: req.as_ref().map_or("", |r| r.url.as_str()),
            status: None,
            resource_type: req
                .as_ref()
                .and_then(|r| r.resource_type.as_deref())
                .or(p.resource_type.as_deref()),
            duration_ms: elapsed_ms(req.as_ref().map(|r| r.timestamp), p.timestamp),
            error_text: Some(error.trim()).filter(|e| !e.is_empty()),
        });
        Some((failure, req.map(|r| r.seen_at)))
    }

    pub(crate) fn finished(&mut self, session: &Option<Box<str>>, request_id: &str) {
        self.map.remove(&(session.clone(), Box::from(request_id)));
    }
}

/// Milliseconds between two CDP monotonic timestamps, when both are sane.
fn elapsed_ms(start: Option<f64>, end: f64) -> Option<u64> {
    let start = start?;
    let ms = (end - start) * 1000.0;
    (0.0..1e12).contains(&ms).then_some(ms.round() as u64)
}
