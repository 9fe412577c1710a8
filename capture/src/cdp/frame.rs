//! Parses just enough of a CDP message to route it: `id`, `method`, `sessionId`, and the raw
//! `params` / `result` / `error`, borrowed from the frame without copying.
//!
//! Anything that does not parse (not JSON, wrong types, a huge id, nesting past serde_json's
//! recursion limit) is `None`: the frame was forwarded as is and the observer ignores it. The
//! values of `params` / `result` / `error` are parsed (and validated) only when read: a reply
//! whose result nobody reads is matched by its id without parsing a byte of it.

use super::skim;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// Largest message the observer parses. Bigger ones are forwarded and counted, not inspected;
/// screenshots are well below this.
pub(crate) const MAX_PARSED_BYTES: usize = 64 * 1024 * 1024;

/// One CDP message, borrowed from the frame text.
#[derive(Debug, Default)]
pub(crate) struct Frame<'a> {
    pub(crate) id: Option<u64>,
    pub(crate) method: Option<Cow<'a, str>>,
    pub(crate) session_id: Option<Cow<'a, str>>,
    pub(crate) params: Option<Raw<'a>>,
    pub(crate) result: Option<Raw<'a>>,
    pub(crate) error: Option<Raw<'a>>,
}

/// A member's value as text, not parsed yet: reading it ([`Frame::params`], [`Frame::result`])
/// parses and validates it, so a member nobody reads costs nothing more.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Raw<'a>(pub(super) &'a str);

impl<'a> Raw<'a> {
    /// The JSON text.
    pub(crate) fn get(&self) -> &'a str {
        self.0
    }
}

/// The full parse, for the shapes [`skim`] leaves to serde_json.
#[derive(Deserialize)]
struct Full<'a> {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "sessionId")]
    session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

impl<'a> Frame<'a> {
    /// `None` for anything that is not a CDP message object. The usual shapes are read by
    /// [`skim`] (no value parsed that is not read); anything else by serde_json.
    pub(crate) fn parse(text: &'a str) -> Option<Frame<'a>> {
        if text.len() > MAX_PARSED_BYTES {
            return None;
        }
        if let Some(f) = skim::skim(text) {
            return Some(f);
        }
        let f: Full<'a> = serde_json::from_str(text).ok()?;
        let raw = |v: Option<&'a RawValue>| v.map(|v| Raw(v.get()));
        Some(Frame {
            id: f.id,
            method: f.method,
            session_id: f.session_id,
            params: raw(f.params),
            result: raw(f.result),
            error: raw(f.error),
        })
    }

    /// The params parsed into `T`; `None` when absent or of another shape.
    pub(crate) fn params<T: Deserialize<'a>>(&self) -> Option<T> {
        serde_json::from_str(self.params?.get()).ok()
    }

    /// The result parsed into `T`.
    pub(crate) fn result<T: Deserialize<'a>>(&self) -> Option<T> {
        serde_json::from_str(self.result?.get()).ok()
    }

    /// The error message of an error reply (raw: sanitize before keeping it).
    pub(crate) fn error_message(&self) -> Option<String> {
        #[derive(Deserialize)]
        struct E {
            #[serde(default)]
            message: String,
        }
        let e: E = serde_json::from_str(self.error?.get()).ok()?;
        Some(e.message)
    }

    /// The method, if any.
    pub(crate) fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// The flattened session, if any.
    pub(crate) fn session(&self) -> Option<&str> {
        self.session_id.as_deref()
    }
}

/// What a frame's first bytes say, in the shapes Chromium and CDP clients write.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Leading<'a> {
    /// `{"method":"X"…`: an event.
    Method(&'a str),
    /// `{"id":N,"method":"X"…`: a command.
    IdMethod(&'a str),
    /// `{"id":N,` followed by anything but `"method"`: a response.
    Id(u64),
    /// Any other shape.
    Unknown,
}

/// Reads the leading `"method"` / `"id"` without parsing the frame.
pub(crate) fn leading(text: &str) -> Leading<'_> {
    if let Some(rest) = text.strip_prefix("{\"method\":\"") {
        return quoted(rest).map_or(Leading::Unknown, Leading::Method);
    }
    let Some(rest) = text.strip_prefix("{\"id\":") else {
        return Leading::Unknown;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Ok(id) = rest[..digits].parse::<u64>() else {
        return Leading::Unknown;
    };
    match rest[digits..].strip_prefix(",\"method\":\"") {
        Some(m) => quoted(m).map_or(Leading::Unknown, Leading::IdMethod),
        None if rest[digits..].starts_with(',') => Leading::Id(id),
        None => Leading::Unknown,
    }
}

/// What the first bytes of the message a `Target.receivedMessageFromTarget` event wraps say
/// (a non-flat session's answer or event, a JSON string inside the event): Chromium writes it
/// as `"message":"{\"method\":\"X\"…` or `"message":"{\"id\":N,…`. Read from the escaped text,
/// without decoding it. Escaped quotes cannot close the outer string, so the first
/// `"message":"` is the member's key.
pub(crate) fn wrapped_leading(text: &str) -> Leading<'_> {
    const KEY: &str = r#""message":"{\""#;
    let Some(at) = text.find(KEY) else {
        return Leading::Unknown;
    };
    let rest = &text[at + KEY.len()..];
    if let Some(name) = rest.strip_prefix(r#"method\":\""#) {
        let end = name.bytes().position(|b| b == b'"' || b == b'\\');
        return match end {
            Some(end) if name[end..].starts_with(r#"\""#) => Leading::Method(&name[..end]),
            _ => Leading::Unknown,
        };
    }
    let Some(rest) = rest.strip_prefix(r#"id\":"#) else {
        return Leading::Unknown;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    match (
        rest[..digits].parse::<u64>(),
        rest[digits..].starts_with(','),
    ) {
        (Ok(id), true) if !rest[digits..].starts_with(r#",\"method\""#) => Leading::Id(id),
        _ => Leading::Unknown,
    }
}

/// The text up to the closing quote, if it has no escapes (method names never do).
fn quoted(s: &str) -> Option<&str> {
    // A byte loop: method names are short, and a `char` pattern search costs more than them.
    let end = s.bytes().position(|b| b == b'"' || b == b'\\')?;
    (s.as_bytes()[end] == b'"').then(|| &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_response_event() {
        let c = Frame::parse(
            r#"{"id":7,"method":"Page.navigate","params":{"url":"https://a/"},"sessionId":"S1"}"#,
        )
        .unwrap();
        assert_eq!(
            (c.id, c.method(), c.session()),
            (Some(7), Some("Page.navigate"), Some("S1"))
        );
        #[derive(Deserialize)]
        struct P<'a> {
            #[serde(borrow)]
            url: Cow<'a, str>,
        }
        assert_eq!(c.params::<P>().unwrap().url, "https://a/");

        let r = Frame::parse(r#"{"id":7,"error":{"code":-32000,"message":"Cannot navigate"}}"#)
            .unwrap();
        assert_eq!(r.error_message().as_deref(), Some("Cannot navigate"));
        assert!(r.method.is_none());

        let e = Frame::parse(r#"{"method":"Runtime.consoleAPICalled","params":{}}"#).unwrap();
        assert_eq!(e.id, None);
    }

    #[test]
    fn leading_bytes() {
        assert_eq!(
            leading(r#"{"method":"Page.lifecycleEvent","params":{}}"#),
            Leading::Method("Page.lifecycleEvent")
        );
        assert_eq!(
            leading(r#"{"id":12,"method":"Page.navigate","params":{}}"#),
            Leading::IdMethod("Page.navigate")
        );
        assert_eq!(leading(r#"{"id":12,"result":{}}"#), Leading::Id(12));
        for other in [
            r#"{ "method":"A"}"#,
            r#"{"method":"A\u0062"}"#,
            r#"{"id":"1","result":{}}"#,
            r#"{"id":1}"#,
            r#"{"id":99999999999999999999,"result":{}}"#,
            r#"{"method":"unterminated"#,
            r#"{"sessionId":"S","id":1,"method":"Page.navigate"}"#,
            "",
        ] {
            assert_eq!(leading(other), Leading::Unknown, "{other}");
        }
    }

    #[test]
    fn leading_bytes_of_a_wrapped_message() {
        let wrap = |inner: &str| {
            serde_json::json!({"method": "Target.receivedMessageFromTarget",
                "params": {"sessionId": "5A1B", "message": inner, "targetId": "T"}})
            .to_string()
        };
        assert_eq!(
            wrapped_leading(&wrap(r#"{"method":"Network.loadingFailed","params":{}}"#)),
            Leading::Method("Network.loadingFailed")
        );
        assert_eq!(
            wrapped_leading(&wrap(r#"{"id":42,"result":{"data":"x"}}"#)),
            Leading::Id(42)
        );
        for other in [
            r#"{"id":42,"method":"Page.enable"}"#,
            r#"{"method":"A\u0062","params":{}}"#,
            r#"{ "id":1,"result":{}}"#,
            r#"{"sessionId":"S","id":1,"result":{}}"#,
            r#"{"id":99999999999999999999,"result":{}}"#,
            r#"{"method":"unterminated"#,
        ] {
            assert_eq!(wrapped_leading(&wrap(other)), Leading::Unknown, "{other}");
        }
        assert_eq!(
            wrapped_leading(r#"{"method":"X","params":{}}"#),
            Leading::Unknown
        );
    }

    #[test]
    fn malformed_input_is_ignored() {
        for bad in [
            "",
            "null",
            "[1,2]",
            "{\"id\":-1}",
            "{\"id\":1e400}",
            "{\"id\":18446744073709551616}",
            "{\"id\":\"7\"}",
            "{\"method\":7}",
            "{\"id\":1",
        ] {
            assert!(Frame::parse(bad).is_none(), "{bad}");
        }
        // Deep nesting is skipped as raw text, never recursed into; reading it fails cleanly.
        let deep = format!(
            "{{\"params\":{}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        if let Some(f) = Frame::parse(&deep) {
            assert!(f.params::<serde_json::Value>().is_none());
        }
        // Escaped strings still come out right (borrowed or owned).
        let f = Frame::parse(r#"{"method":"A.\u0062"}"#).unwrap();
        assert_eq!(f.method(), Some("A.b"));
    }
}
