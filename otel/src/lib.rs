//! OpenTelemetry spans of cdp-relay, over OTLP/HTTP (protobuf), configured off.
//!
//! - [`Exporter`]: the spans' way out, shared by every producer of spans in the process. Export
//!   never slows a tool call or a frame: spans end into a bounded queue that a thread of the
//!   SDK's batch processor empties; a span that finds the queue full, or whose batch the
//!   receiver refused or did not take in time, is dropped and counted ([`Exporter::dropped`]),
//!   with one warning.
//! - [`record_event`]: a journal record as a span event, from the sanitized record's own types
//!   (the same words the journal and the agent's note use): navigations and clicks, typing with
//!   its verdict and length, failed requests with the sanitized URL, console errors. Never a
//!   value the journal would not hold.
//! - [`RunSpans`]: the spans of `launch` and `serve`: one per run and one per client connection,
//!   built from what the run writer wrote (a [`cdp_capture::WriteObserver`]).
//!
//! The MCP gateway's spans (one per MCP request) are the gateway's own (`cdp-relay-mcp`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod events;
mod export;
mod runs;

pub use events::record_event;
pub use export::Exporter;
pub use runs::RunSpans;

/// The standard variables (the OTLP exporter's specification).
pub const ENV_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The traces endpoint, used as it is (no path added).
pub const ENV_TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The `service.name` of the spans; by default `cdp-relay`.
pub const ENV_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";

/// Where spans go: `--otlp-endpoint` (a base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`: `/v1/traces`
/// is added unless the path already ends with it), else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as
/// it is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces`. `None`: nothing is sent.
pub fn traces_endpoint(
    flag: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<url::Url>, String> {
    let nonempty = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
    let (raw, whence, add_path) = match (
        flag.filter(|f| !f.trim().is_empty()),
        nonempty(env(ENV_TRACES_ENDPOINT)),
        nonempty(env(ENV_ENDPOINT)),
    ) {
        (Some(f), _, _) => (f.to_owned(), "--otlp-endpoint", true),
        (None, Some(t), _) => (t, ENV_TRACES_ENDPOINT, false),
        (None, None, Some(b)) => (b, ENV_ENDPOINT, true),
        (None, None, None) => return Ok(None),
    };
    let mut url = url::Url::parse(raw.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .ok_or_else(|| {
            format!("{whence}: not an http:// or https:// URL; give the OTLP/HTTP receiver's address, e.g. http://127.0.0.1:4318")
        })?;
    if add_path && !url.path().trim_end_matches('/').ends_with("/v1/traces") {
        let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    Ok(Some(url))
}

/// The spans' `service.name`: `OTEL_SERVICE_NAME`, else `cdp-relay`.
pub fn service_name(env: impl Fn(&str) -> Option<String>) -> String {
    env(ENV_SERVICE_NAME)
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "cdp-relay".to_owned())
}

#[cfg(test)]
mod tests;
