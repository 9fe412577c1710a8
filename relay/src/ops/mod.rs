//! What the relay's own API answers about the relay itself: the readiness and liveness probes
//! (`probe.rs`) and Prometheus metrics (`metrics.rs`), and the [`Reply`] every endpoint of
//! `api.rs` answers with (remote producers' `POST /relay/v1/evidence` is `crate::remote`).
//!
//! Each endpoint is a plain function from what the request carried (method, a few headers,
//! body) and what the relay knows (counters, health, the evidence handle) to a [`Reply`]. None
//! of them touches a socket, applies the access policy (the proxy does, before calling them) or
//! logs a request body.

pub mod metrics;
pub mod probe;

/// An answer: status, content type and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type` of the body.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
    /// `Allow` header, for 405 answers.
    pub allow: Option<&'static str>,
}

/// Plain text content type of every one-line answer.
pub const TEXT: &str = "text/plain; charset=UTF-8";

impl Reply {
    /// A one-line plain-text answer (a newline is added).
    pub fn text(status: u16, line: &str) -> Reply {
        Reply {
            status,
            content_type: TEXT,
            body: format!("{line}\n"),
            allow: None,
        }
    }

    /// 405 naming the methods that are allowed.
    pub fn method_not_allowed(allow: &'static str, what: &str) -> Reply {
        Reply {
            allow: Some(allow),
            ..Reply::text(405, &format!("cdp-relay: {what}"))
        }
    }
}
