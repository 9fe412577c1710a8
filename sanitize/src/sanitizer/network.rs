//! Failed network requests, reduced to what docs/security.md allows: method, origin + path, status,
//! resource type, timing and sanitized error text. There is no field for headers or bodies, so
//! a [`NetworkFailure`] cannot carry them whatever the caller has at hand.

use crate::{SafeText, SafeUrl, Sanitizer};
use serde::Serialize;

/// Longest sanitized error text of a network failure, in characters.
const ERROR_MAX_CHARS: usize = 512;

/// The raw facts about a failed request, borrowed from CDP events
/// (`Network.requestWillBeSent`, `Network.loadingFailed`, `Network.responseReceived`).
/// Deliberately not `Debug`: it holds unsanitized text.
#[derive(Clone, Copy, Default)]
pub struct RawNetworkFailure<'a> {
    /// HTTP method (`GET`, `POST`); anything that is not an HTTP token is recorded as `OTHER`.
    pub method: &'a str,
    /// The full request URL; only its origin and path are kept.
    pub url: &'a str,
    /// HTTP status, when a response arrived (≥ 400 for failures).
    pub status: Option<u16>,
    /// CDP resource type (`Document`, `XHR`, `Fetch`, `Script`…); anything else is `Other`.
    pub resource_type: Option<&'a str>,
    /// Time from request to failure, in milliseconds.
    pub duration_ms: Option<u64>,
    /// The failure text (`net::ERR_NAME_NOT_RESOLVED`, a blocked reason, a status text).
    pub error_text: Option<&'a str>,
}

/// A failed request as the journal records it (camelCase JSON). Only
/// [`Sanitizer::network_failure`] builds one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkFailure {
    method: SafeText,
    url: SafeUrl,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_type: Option<SafeText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_text: Option<SafeText>,
}

impl NetworkFailure {
    /// The HTTP method, upper case (`OTHER` if the raw method was not an HTTP token).
    pub fn method(&self) -> &SafeText {
        &self.method
    }

    /// Origin and path of the request.
    pub fn url(&self) -> &SafeUrl {
        &self.url
    }

    /// HTTP status, if a response arrived.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// CDP resource type.
    pub fn resource_type(&self) -> Option<&SafeText> {
        self.resource_type.as_ref()
    }

    /// Time from request to failure, in milliseconds.
    pub fn duration_ms(&self) -> Option<u64> {
        self.duration_ms
    }

    /// Sanitized failure text.
    pub fn error_text(&self) -> Option<&SafeText> {
        self.error_text.as_ref()
    }
}

/// An HTTP method is a short token; anything else could be smuggled text.
fn method(raw: &str) -> SafeText {
    let ok = !raw.is_empty() && raw.len() <= 16 && raw.bytes().all(|b| b.is_ascii_alphabetic());
    if ok {
        SafeText::new(raw.to_ascii_uppercase())
    } else {
        SafeText::literal("OTHER")
    }
}

/// CDP resource types are single CamelCase words (`CSPViolationReport` is the longest).
fn resource_type(raw: &str) -> SafeText {
    let ok = !raw.is_empty() && raw.len() <= 32 && raw.bytes().all(|b| b.is_ascii_alphabetic());
    if ok {
        SafeText::new(raw.to_owned())
    } else {
        SafeText::literal("Other")
    }
}

pub(crate) fn network_failure(s: &Sanitizer, raw: RawNetworkFailure<'_>) -> NetworkFailure {
    NetworkFailure {
        method: method(raw.method),
        url: s.url(raw.url),
        status: raw.status,
        resource_type: raw.resource_type.map(resource_type),
        duration_ms: raw.duration_ms,
        error_text: raw
            .error_text
            .filter(|t| !t.trim().is_empty())
            .map(|t| s.text_capped(t, ERROR_MAX_CHARS)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_allowed_fields() {
        let s = Sanitizer::new();
        let f = s.network_failure(RawNetworkFailure {
            method: "post",
            url: "https://bob:pw@api.example.com/v1/login?password=hunter2#x",
            status: Some(401),
            resource_type: Some("Fetch"),
            duration_ms: Some(87),
            error_text: Some("Unauthorized: token=abc123def"),
        });
        let json = serde_json::to_string(&f).expect("serializes");
        assert_eq!(
            json,
            r#"{"method":"POST","url":"https://api.example.com/v1/login","status":401,"resourceType":"Fetch","durationMs":87,"errorText":"Unauthorized: token=[redacted:token]"}"#
        );
        assert_eq!(f.status(), Some(401));
    }

    #[test]
    fn odd_methods_and_types_are_not_smuggled() {
        let s = Sanitizer::new();
        let f = s.network_failure(RawNetworkFailure {
            method: "GET /secret?x HTTP/1.1",
            url: "not a url",
            resource_type: Some("Script; cookie=1"),
            error_text: Some("  "),
            ..RawNetworkFailure::default()
        });
        assert_eq!(f.method().as_str(), "OTHER");
        assert_eq!(f.resource_type().map(SafeText::as_str), Some("Other"));
        assert_eq!(f.error_text(), None);
        assert_eq!(f.url().as_str(), "not a url");
    }
}
