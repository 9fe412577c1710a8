//! A journal record as a span event.

use cdp_evidence::{ActionMethod, ConsoleLevel, Record, RecordKind, Verified};
use opentelemetry::KeyValue;

/// Longest console text in an event, in characters (as the agent's note quotes it).
const MAX_TEXT: usize = 200;

fn capped(s: &str) -> String {
    let out: String = s.chars().take(MAX_TEXT).collect();
    out.replace(['\n', '\r'], " ")
}

/// `record` as a span event: its name and attributes, from the sanitized record's own types
/// only (the same words the journal and the agent's note use). `None` for what is no browser
/// effect (a kept frame, lifecycle, markers, producers' own kinds).
///
/// | record | event | attributes |
/// |---|---|---|
/// | typing step | `cdp_relay.typing` | `cdp_relay.action`, `cdp_relay.input.chars`, `cdp_relay.input.type`, `cdp_relay.typing.verified`, `cdp_relay.typing.reason` |
/// | navigation | `cdp_relay.navigation` | `cdp_relay.action`, `url.full` |
/// | other action but a frame | `cdp_relay.action` | `cdp_relay.action`, `url.full` when it has one |
/// | failed request | `cdp_relay.request_failed` | `http.request.method`, `url.full`, `http.response.status_code` or `error.type` |
/// | console | `cdp_relay.console_error` (`cdp_relay.console_warning` for a warning) | `cdp_relay.console.level`, `cdp_relay.console.text` (200 characters) |
pub fn record_event(record: &Record) -> Option<(&'static str, Vec<KeyValue>)> {
    let mut attrs = Vec::new();
    let name = match record.kind() {
        RecordKind::Action(a) if a.method.known() == Some(ActionMethod::Frame) => return None,
        RecordKind::Action(a) => {
            attrs.push(KeyValue::new(
                "cdp_relay.action",
                a.method.as_str().to_owned(),
            ));
            if let Some(url) = &a.url {
                attrs.push(KeyValue::new("url.full", url.as_str().to_owned()));
            }
            if let Some(i) = &a.input {
                attrs.push(KeyValue::new("cdp_relay.input.chars", i.chars() as i64));
                attrs.push(KeyValue::new(
                    "cdp_relay.input.type",
                    i.input_type().as_str().to_owned(),
                ));
            }
            if let Some(v) = &a.verification {
                let verified = match v.verified {
                    Verified::True => "true",
                    Verified::False => "false",
                    Verified::Indeterminate => "indeterminate",
                };
                attrs.push(KeyValue::new("cdp_relay.typing.verified", verified));
                attrs.push(KeyValue::new(
                    "cdp_relay.typing.reason",
                    v.reason.as_str().to_owned(),
                ));
            }
            match a.method.known() {
                Some(ActionMethod::Type) => "cdp_relay.typing",
                Some(
                    ActionMethod::PageNavigate
                    | ActionMethod::PageReload
                    | ActionMethod::PageNavigateToHistoryEntry,
                ) => "cdp_relay.navigation",
                _ => "cdp_relay.action",
            }
        }
        RecordKind::Network(n) => {
            attrs.push(KeyValue::new(
                "http.request.method",
                n.method().as_str().to_owned(),
            ));
            attrs.push(KeyValue::new("url.full", n.url().as_str().to_owned()));
            if let Some(s) = n.status() {
                attrs.push(KeyValue::new("http.response.status_code", i64::from(s)));
            }
            if let Some(e) = n.error_text() {
                attrs.push(KeyValue::new("error.type", e.as_str().to_owned()));
            }
            "cdp_relay.request_failed"
        }
        RecordKind::Console(c) => {
            attrs.push(KeyValue::new("cdp_relay.console.level", c.level.as_str()));
            attrs.push(KeyValue::new(
                "cdp_relay.console.text",
                capped(c.text.as_str()),
            ));
            if c.level == ConsoleLevel::Warning {
                "cdp_relay.console_warning"
            } else {
                "cdp_relay.console_error"
            }
        }
        _ => return None,
    };
    Some((name, attrs))
}
