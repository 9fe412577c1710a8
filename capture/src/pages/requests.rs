//! Joins `Network.requestWillBeSent` (URL, method, resource type) with `Network.loadingFailed`
//! (which carries no URL) and with `Network.responseReceived` statuses ≥ 400.
//!
//! A request the server answered below 400 and whose load Chromium then aborts is no failure:
//! a navigation answered 204 (a form posted to an API), or a body nobody read, ends in
//! `net::ERR_ABORTED` after a perfectly good response. Any other error after such a response
//! (a body cut short: `ERR_CONTENT_LENGTH_MISMATCH`) still is one.
//!
//! Each observer keeps one table per stream of events it reads (the traffic reader per
//! connection, keyed by session; the relay's own per page), and both join through here, so a
//! failed request reads the same whoever saw it. The table is bounded; raw URLs live here in
//! memory only until the request ends.
//!
//! A request DevTools makes for itself is not the page's, and its failure is not the page's
//! failure: the frontend, attached through the relay, fetches
//! [`DEVTOOLS_WELL_KNOWN`] from the inspected page's origin, which most sites do not serve
//! (`net::ERR_CACHE_MISS`, a 404), and a frontend opened as a tab makes its requests from a
//! `devtools://` document. Such requests are followed (their `loadingFailed` must not read as
//! an unknown request's) but never recorded.

use crate::cdp::params as cdp;
use crate::cdp::IdMap;
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
    /// A response below 400 came: an abort after it is no failure.
    answered: bool,
    /// DevTools made it for itself, not the page: it is no failure of the page's.
    devtools: bool,
}

/// What DevTools fetches from the inspected page's origin when it attaches (its automatic
/// workspace folders).
pub(crate) const DEVTOOLS_WELL_KNOWN: &str = "/.well-known/appspecific/com.chrome.devtools.json";

/// Whether a request to `url`, made by the document at `document_url`, is DevTools' own.
pub(crate) fn devtools_own(url: &str, document_url: &str) -> bool {
    document_url.starts_with("devtools://")
        || url.starts_with("devtools://")
        || path_of(url) == Some(DEVTOOLS_WELL_KNOWN)
}

/// The path of an absolute `scheme://authority/path?query#fragment` URL.
fn path_of(url: &str) -> Option<&str> {
    let rest = &url[url.find("://")? + 3..];
    let path = &rest[rest.find('/')?..];
    Some(path.split(['?', '#']).next().unwrap_or(path))
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
                answered: false,
                devtools: devtools_own(url, &p.document_url),
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

    /// A response with status ≥ 400 is a failure (recorded once); one below is remembered.
    pub(crate) fn response(
        &mut self,
        session: Option<&str>,
        p: &cdp::ResponseReceived<'_>,
        s: &Sanitizer,
    ) -> Option<Failure> {
        let req = self
            .map
            .get_mut(key(&mut self.scratch, session, &p.request_id));
        if p.response.status < 400 {
            if let Some(r) = req {
                r.answered = true;
            }
            return None;
        }
        let devtools = match &req {
            Some(r) => r.devtools,
            None => devtools_own(&p.response.url, ""),
        };
        if devtools {
            return None;
        }
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
        if req.as_ref().is_some_and(|r| r.reported || r.devtools) {
            return None;
        }
        let answered = req.as_ref().is_some_and(|r| r.answered);
        if answered && (p.canceled || p.error_text.contains("ERR_ABORTED")) {
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

    /// DevTools' own fetch of its well-known file from the page's origin,
    /// and requests of a `devtools://` document, fail without being the page's failures; the
    /// page's own requests, to look-alike paths too, still are.
    #[test]
    fn devtools_own_requests_are_no_failures_of_the_page() {
        let s = Sanitizer::new();
        let mut r = Requests::new(16);
        let sent = |r: &mut Requests, id: &str, url: &str, doc: &str| {
            let p = cdp::RequestWillBeSent {
                request_id: id.into(),
                document_url: doc.into(),
                request: cdp::Request {
                    url: url.into(),
                    method: "GET".into(),
                },
                resource_type: Some("Other".into()),
                timestamp: 1.0,
            };
            assert!(r.sent(Some("S"), &p, SystemTime::UNIX_EPOCH));
        };
        let failed = |r: &mut Requests, id: &str| {
            let p = cdp::LoadingFailed {
                request_id: id.into(),
                error_text: "net::ERR_CACHE_MISS".into(),
                timestamp: 1.5,
                ..cdp::LoadingFailed::default()
            };
            r.failed(Some("S"), &p, &s)
        };
        let page = "https://shop.test/cart";
        sent(
            &mut r,
            "1",
            &format!("https://shop.test{DEVTOOLS_WELL_KNOWN}"),
            page,
        );
        assert!(failed(&mut r, "1").is_none());
        sent(
            &mut r,
            "2",
            "devtools://devtools/bundled/core/sdk/sdk.js",
            page,
        );
        assert!(failed(&mut r, "2").is_none());
        sent(
            &mut r,
            "3",
            "https://shop.test/api",
            "devtools://devtools/bundled/inspector.html",
        );
        assert!(failed(&mut r, "3").is_none());
        // A 404 of it, seen or not seen going out.
        sent(
            &mut r,
            "4",
            &format!("https://shop.test{DEVTOOLS_WELL_KNOWN}?x=1"),
            page,
        );
        for id in ["4", "5"] {
            let p = cdp::ResponseReceived {
                request_id: id.into(),
                response: cdp::Response {
                    status: 404,
                    status_text: "Not Found".into(),
                    url: format!("https://shop.test{DEVTOOLS_WELL_KNOWN}").into(),
                },
                resource_type: None,
                timestamp: 2.0,
            };
            assert!(r.response(Some("S"), &p, &s).is_none(), "{id}");
        }
        // The page's own requests fail as ever.
        for (id, url) in [
            ("6", "https://shop.test/.well-known/appspecific/other.json"),
            ("7", "https://shop.test/api/com.chrome.devtools.json"),
            (
                "8",
                "https://shop.test/x?next=/.well-known/appspecific/com.chrome.devtools.json",
            ),
        ] {
            sent(&mut r, id, url, page);
            assert!(failed(&mut r, id).is_some(), "{url}");
        }
        assert_eq!(path_of("https://a.test"), None);
        assert_eq!(path_of("https://a.test/p#f"), Some("/p"));
        assert_eq!(path_of("nonsense"), None);
    }

    /// A navigation answered 204 (a form posted to an API) ends in `net::ERR_ABORTED` after its
    /// response, as Chromium reports it: no failure. A body cut short after a 200, an abort
    /// with no response, and an abort after a 500 (already recorded once) still read as before.
    #[test]
    fn an_abort_after_a_good_response_is_no_failure() {
        let s = Sanitizer::new();
        let mut r = Requests::new(16);
        let sent = |r: &mut Requests, id: &str| {
            let p = cdp::RequestWillBeSent {
                request_id: id.into(),
                document_url: "http://app.test/".into(),
                request: cdp::Request {
                    url: "http://app.test/api/save".into(),
                    method: "POST".into(),
                },
                resource_type: Some("Document".into()),
                timestamp: 1.0,
            };
            assert!(r.sent(None, &p, SystemTime::UNIX_EPOCH));
        };
        let answered = |r: &mut Requests, id: &str, status: u16| {
            let p = cdp::ResponseReceived {
                request_id: id.into(),
                response: cdp::Response {
                    status,
                    status_text: "".into(),
                    url: "http://app.test/api/save".into(),
                },
                resource_type: Some("Document".into()),
                timestamp: 1.2,
            };
            r.response(None, &p, &s)
        };
        let failed = |r: &mut Requests, id: &str, error: &str, canceled: bool| {
            let p = cdp::LoadingFailed {
                request_id: id.into(),
                error_text: error.into(),
                canceled,
                timestamp: 1.5,
                ..cdp::LoadingFailed::default()
            };
            r.failed(None, &p, &s)
        };
        for (id, status, canceled) in [("1", 204, true), ("2", 200, false), ("3", 304, true)] {
            sent(&mut r, id);
            assert!(answered(&mut r, id, status).is_none());
            assert!(
                failed(&mut r, id, "net::ERR_ABORTED", canceled).is_none(),
                "{id}"
            );
        }
        sent(&mut r, "4");
        assert!(answered(&mut r, "4", 200).is_none());
        let (cut, _) = failed(&mut r, "4", "net::ERR_CONTENT_LENGTH_MISMATCH", false)
            .expect("a body cut short is a failure");
        assert_eq!(cut.status(), None);
        sent(&mut r, "5");
        assert!(failed(&mut r, "5", "net::ERR_ABORTED", true).is_some());
        sent(&mut r, "6");
        assert!(answered(&mut r, "6", 500).is_some());
        assert!(failed(&mut r, "6", "net::ERR_ABORTED", true).is_none());
    }
}
