//! The params read for nearly every message of a busy page (`Network.*` events, `Runtime.*`
//! commands) without serde's generic machinery: members walked by [`skim::members`], only the
//! named ones read. A reader answers only when it reads the params exactly as serde_json would
//! read them into the same struct; anything else (an escaped key, a repeated member, a value of
//! another type, another shape) is left to serde_json, which decides. Like [`skim`], it does not
//! validate the values it does not read.

use super::params::{Evaluate, Request, RequestId, RequestWillBeSent, Response, ResponseReceived};
use super::skim;
use serde::Deserialize;
use std::borrow::Cow;

/// A params shape with a quick reader.
pub(crate) trait Quick<'a>: Deserialize<'a> {
    /// The params `text` (whose members are `walked`, if [`skim`] took them) as serde_json
    /// would read them, or `None` to let it.
    fn quick(text: &'a str, walked: Option<&skim::Members<'a>>) -> Option<Self>;
}

/// Marks member `bit` seen; `None` when it was already (serde_json refuses a repeated member).
fn once(seen: &mut u8, bit: u8) -> Option<()> {
    let mask = 1 << bit;
    (*seen & mask == 0).then(|| *seen |= mask)
}

/// A string: borrowed when plain, else unescaped by serde_json (an error is `None`).
fn string(v: &str) -> Option<Cow<'_, str>> {
    match skim::plain(v) {
        Some(s) => Some(Cow::Borrowed(s)),
        None => serde_json::from_str::<String>(v).ok().map(Cow::Owned),
    }
}

/// An optional string: `null` is absent.
fn optional(v: &str) -> Option<Option<Cow<'_, str>>> {
    if v == "null" {
        return Some(None);
    }
    string(v).map(Some)
}

/// An object member of the params: its members walked here.
fn nested<'a, T: Quick<'a>>(v: &'a str) -> Option<T> {
    T::quick(v, None)
}

fn number<'a, T: Deserialize<'a>>(v: &'a str) -> Option<T> {
    serde_json::from_str(v).ok()
}

/// A quick reader for a `#[serde(default)]` struct: each named member read by its reader, every
/// other member stepped over.
macro_rules! quick {
    ($ty:ident { $($key:literal => $field:ident: $read:expr),+ $(,)? }) => {
        impl<'a> Quick<'a> for $ty<'a> {
            fn quick(text: &'a str, walked: Option<&skim::Members<'a>>) -> Option<Self> {
                let mut p = $ty::default();
                let mut seen = 0u8;
                skim::members(text, walked, |k, v| {
                    let mut bit = 0u8;
                    $(
                        if k == $key {
                            once(&mut seen, bit)?;
                            p.$field = $read(v)?;
                            return Some(());
                        }
                        bit += 1;
                    )+
                    let _ = bit;
                    Some(())
                })?;
                Some(p)
            }
        }
    };
}

quick!(RequestId { "requestId" => request_id: string });
quick!(Request { "url" => url: string, "method" => method: string });
quick!(RequestWillBeSent {
    "requestId" => request_id: string,
    "documentURL" => document_url: string,
    "request" => request: nested::<Request>,
    "type" => resource_type: optional,
    "timestamp" => timestamp: number,
});
quick!(Response {
    "status" => status: number,
    "statusText" => status_text: string,
    "url" => url: string,
});
quick!(ResponseReceived {
    "requestId" => request_id: string,
    "response" => response: nested::<Response>,
    "type" => resource_type: optional,
    "timestamp" => timestamp: number,
});
quick!(Evaluate {
    "expression" => expression: string,
    "functionDeclaration" => function_declaration: string,
    "throwOnSideEffect" => throw_on_side_effect: number,
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cdp::frame::Frame;
    use proptest::prelude::*;
    use serde_json::Value;

    /// What the quick reader makes of the params of `message`, walking them itself or with the
    /// members `skim` took, agrees with serde_json whenever it answers.
    fn agrees<'a, T: Quick<'a> + PartialEq + std::fmt::Debug>(message: &'a str) -> bool {
        let Some(f) = Frame::parse(message) else {
            return true;
        };
        let Some(text) = f.params.map(|r| r.get()) else {
            return true;
        };
        let serde = serde_json::from_str::<T>(text).ok();
        let alone = T::quick(text, None);
        let walked = T::quick(text, f.params_members.as_ref());
        [alone, walked]
            .into_iter()
            .all(|q| q.is_none_or(|q| Some(q) == serde))
    }

    fn all_agree(params: &str) -> bool {
        let message = format!(r#"{{"method":"M","params":{params},"sessionId":"S"}}"#);
        agrees::<RequestId>(&message)
            && agrees::<Request>(&message)
            && agrees::<RequestWillBeSent>(&message)
            && agrees::<Response>(&message)
            && agrees::<ResponseReceived>(&message)
            && agrees::<Evaluate>(&message)
    }

    #[test]
    fn reads_what_chromium_and_clients_send() {
        let sent = r#"{"requestId":"1.2","loaderId":"L","documentURL":"https://a/","request":{"url":"https://a/r?q=1","method":"GET","headers":{"Accept":"*/*"},"initialPriority":"High"},"timestamp":123.5,"wallTime":1.7e9,"initiator":{"type":"script","stack":{"callFrames":[{"url":"https://a/app.js","lineNumber":3}]}},"redirectHasExtraInfo":false,"type":"Fetch","frameId":"F","hasUserGesture":false}"#;
        let p = RequestWillBeSent::quick(sent, None).expect("read");
        assert_eq!(
            (
                &*p.request_id,
                &*p.request.url,
                &*p.request.method,
                p.resource_type.as_deref(),
                p.timestamp
            ),
            ("1.2", "https://a/r?q=1", "GET", Some("Fetch"), 123.5)
        );
        let received = r#"{"requestId":"1.2","loaderId":"L","timestamp":124,"type":"XHR","response":{"url":"https://a/r","status":404,"statusText":"Not Found","headers":{"a":"b"},"mimeType":"text/html","timing":{"requestTime":1.5}},"hasExtraInfo":true,"frameId":"F"}"#;
        let p = ResponseReceived::quick(received, None).expect("read");
        assert_eq!(
            (p.response.status, &*p.response.status_text, p.timestamp),
            (404, "Not Found", 124.0)
        );
        let p = Evaluate::quick(
            r#"{"functionDeclaration":"(e) => {\n  return \"x\";\n}","objectId":"1","awaitPromise":true}"#,
            None,
        )
        .expect("read");
        assert_eq!(p.function_declaration, "(e) => {\n  return \"x\";\n}");
        assert!(!p.throw_on_side_effect);
        let p = Evaluate::quick(
            r#"{"expression":"document.title","throwOnSideEffect":true,"timeout":500}"#,
            None,
        )
        .expect("read");
        assert!(p.throw_on_side_effect);
        for text in [sent, received] {
            assert!(all_agree(text), "{text}");
        }
        // Left to serde_json: an escaped key, a repeated member, a member of another type.
        for text in [
            r#"{"request\u0049d":"1"}"#,
            r#"{"requestId":"1","requestId":"2"}"#,
            r#"{"requestId":7}"#,
            r#"{"requestId":null}"#,
            r#"["1"]"#,
        ] {
            assert!(RequestId::quick(text, None).is_none(), "{text}");
        }
    }

    /// Members under the keys these structs read, and others, with values of every JSON shape.
    fn member() -> impl Strategy<Value = (String, Value)> {
        let key = prop_oneof![
            Just("requestId"),
            Just("documentURL"),
            Just("request"),
            Just("response"),
            Just("url"),
            Just("method"),
            Just("status"),
            Just("statusText"),
            Just("type"),
            Just("timestamp"),
            Just("expression"),
            Just("functionDeclaration"),
            Just("throwOnSideEffect"),
            Just("other"),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0u64..70_000).prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            "[ -~\\\\\"é\u{2028}\n]{0,12}".prop_map(Value::String),
        ];
        let value = leaf.prop_recursive(3, 24, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec((key_name(), inner), 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        (key.prop_map(str::to_owned), value)
    }

    fn key_name() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("url".to_owned()),
            Just("status".to_owned()),
            Just("method".to_owned()),
            "[a-z]{1,3}"
        ]
    }

    proptest! {
        #[test]
        fn never_disagrees_with_serde(members in prop::collection::vec(member(), 0..6)) {
            let text = super::skim::tests::object_text(&members);
            prop_assert!(all_agree(&text), "{}", text);
        }
    }
}
