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
    /// The method, the URL and the resource type, one after another: one allocation per
    /// request, on a path every request of a busy page takes.
    text: Box<str>,
    method_end: usize,
    url_end: usize,
    has_type: bool,
    /// CDP's monotonic timestamp (seconds) of the request.
    timestamp: f64,
    /// When the relay saw the request go out.
    seen_at: SystemTime,
    /// A ≥ 400 response was already recorded; a later loadingFailed is the same failure.
    reported: bool,
}

impl Request {
    fn method(&self) -> &str {
        &self.text[..self.method_end]
    }

    fn url(&self) -> &str {
        &self.text[self.method_end..self.url_end]
    }

    fn resource_type(&self) -> Option<&str> {
        self.has_type.then(|| &self.text[self.url_end..])
    }
}

/// Requests in flight on one stream of events, keyed by (CDP session, requestId) written as
/// one string ([`key`]), so a lookup allocates nothing.
pub(crate) struct Requests {
    map: IdMap<Box<str>, Request>,
    max: usize,
    /// A `Network.requestWillBeSent` went by: whoever reads these events enabled `Network`.
    seen: bool,
    /// The key of the request at hand.
    scratch: String,
}

/// (session, requestId) as one string, unambiguous: `-` for no session, else the session's
/// length, `:` and the session; then the requestId.
fn key<'a>(out: &'a mut String, session: Option<&str>, request_id: &str) -> &'a str {
    out.clear();
    match session {
        None => out.push('-'),
        Some(s) => {
            out.push_str(itoa::Buffer::new().format(s.len()));
            out.push(':');
            out.push_str(s);
        }
    }
    out.push_str(request_id);
    out
}

/// A failure to record, and when its request started (if it was seen).
pub(crate) type Failure = (NetworkFailure, Option<SystemTime>);

impl Requests {
    pub(crate) fn new(max: usize) -> Requests {
        Requests {
            map: IdMap::default(),
            max,
            seen: false,
            scratch: String::new(),
        }
    }

    /// True once a request went by.
    pub(crate) fn seen_any(&self) -> bool {
        self.seen
    }

    /// Tracks a request; `false` when the table is full and it was not tracked.
    pub(crate) fn sent(
        &mut self,
        session: Option<&str>,
        p: &cdp::RequestWillBeSent<'_>,
        at: SystemTime,
    ) -> bool {
        self.seen = true;
        let key = key(&mut self.scratch, session, &p.request_id);
        let request = || {
            let (method, url) = (&*p.request.method, &*p.request.url);
            let kind = p.resource_type.as_deref();
            let mut text =
                String::with_capacity(method.len() + url.len() + kind.map_or(0, str::len));
            text.push_str(method);
            text.push_str(url);
            text.push_str(kind.unwrap_or_default());
            Request {
                text: text.into_boxed_str(),
                method_end: method.len(),
                url_end: method.len() + url.len(),
                has_type: kind.is_some(),
                timestamp: p.timestamp,
                seen_at: at,
                reported: false,
            }
        };
        // A redirect reuses the requestId: the entry follows the request to its new URL.
        if let Some(r) = self.map.get_mut(key) {
            *r = request();
            return true;
        }
        if self.map.len() >= self.max {
            return false;
        }
        self.map.insert(Box::from(key), request());
        true
    }

    /// A response with status ≥ 400 is a failure (recorded once).
    pub(crate) fn response(
        &mut self,
        session: Option<&str>,
        p: &cdp::ResponseReceived<'_>,
        s: &Sanitizer,
    ) -> Option<Failure> {
        if p.response.status < 400 {
            return None;
        }
        let req = self
            .map
            .get_mut(key(&mut self.scratch, session, &p.request_id));
        let (method, url, resource_type, started, seen_at) = match &req {
            Some(r) => (
                r.method(),
                r.url(),
                r.resource_type().or(p.resource_type.as_deref()),
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
        session: Option<&str>,
        p: &cdp::LoadingFailed<'_>,
        s: &Sanitizer,
    ) -> Option<Failure> {
        let req = self
            .map
            .remove(key(&mut self.scratch, session, &p.request_id));
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
            method: req.as_ref().map_or("", Request::method),
            url: req.as_ref().map_or("", Request::url),
            status: None,
            resource_type: req
                .as_ref()
                .and_then(Request::resource_type)
                .or(p.resource_type.as_deref()),
            duration_ms: elapsed_ms(req.as_ref().map(|r| r.timestamp), p.timestamp),
            error_text: Some(error.trim()).filter(|e| !e.is_empty()),
        });
        Some((failure, req.map(|r| r.seen_at)))
    }

    pub(crate) fn finished(&mut self, session: Option<&str>, request_id: &str) {
        self.map.remove(key(&mut self.scratch, session, request_id));
    }
}

/// Milliseconds between two CDP monotonic timestamps, when both are sane.
fn elapsed_ms(start: Option<f64>, end: f64) -> Option<u64> {
    let start = start?;
    let ms = (end - start) * 1000.0;
    (0.0..1e12).contains(&ms).then_some(ms.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_different_sessions_and_requests_never_meet() {
        let pairs: [(Option<&str>, &str); 6] = [
            (None, "1:a1"),
            (Some("a"), "1"),
            (Some("a1"), ""),
            (Some(""), "a1"),
            (Some("1:a"), "1"),
            (Some("-"), "x"),
        ];
        let mut scratch = String::new();
        let keys: std::collections::HashSet<String> = pairs
            .iter()
            .map(|(s, r)| key(&mut scratch, *s, r).to_owned())
            .collect();
        assert_eq!(keys.len(), pairs.len(), "{keys:?}");
        assert_eq!(key(&mut scratch, Some("S12"), "7.1"), "3:S127.1");
    }
}
