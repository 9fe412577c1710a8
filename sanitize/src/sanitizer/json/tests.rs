//! Unit tests of the JSON walker and the target-info allowlist.

use crate::Sanitizer;
use serde_json::json;

#[test]
fn descriptive_keys_are_sorted_for_binary_search() {
    let keys = super::DESCRIPTIVE_KEYS;
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
}

#[test]
fn redacts_by_key_and_keeps_structure() {
    let s = Sanitizer::new();
    let input = json!({
        "user": "bob",
        "password": "hunter2",
        "inputTokens": 1234,
        "usage": {"input_tokens": 10, "output_tokens": 20},
        "tokenType": "Bearer",
        "sessionCount": 3,
        "hasPassword": true,
        "access_token": {"value": "abc", "expires": 3600},
        "note": "Cookie: sid=1",
        "list": ["ok", "token=abc"],
        "nothing": null,
    });
    let out = s.json(&input).into_value();
    assert_eq!(
        out,
        json!({
            "user": "bob",
            "password": "[redacted:password]",
            "inputTokens": 1234,
            "usage": {"input_tokens": 10, "output_tokens": 20},
            "tokenType": "Bearer",
            "sessionCount": 3,
            "hasPassword": true,
            "access_token": {"value": "[redacted:token]", "expires": 3600},
            "note": "Cookie: [redacted:cookie]",
            "list": ["ok", "token=[redacted:token]"],
            "nothing": null,
        })
    );
}

#[test]
fn name_value_pairs_and_cookie_lists() {
    let s = Sanitizer::new();
    let har = json!({"headers": [
        {"name": "Cookie", "value": "a=1; b=2"},
        {"name": "Authorization", "value": "Bearer abc123"},
        {"name": "Accept", "value": "text/html"}
    ], "cookies": [{"name": "sid", "value": "s3cr3t", "domain": ".example.com", "path": "/", "httpOnly": true}]});
    let out = s.json(&har).into_value();
    assert_eq!(
        out,
        json!({"headers": [
            {"name": "Cookie", "value": "[redacted:cookie]"},
            {"name": "Authorization", "value": "Bearer [redacted:authorization]"},
            {"name": "Accept", "value": "text/html"}
        ], "cookies": [{"name": "sid", "value": "[redacted:session]", "domain": ".example.com", "path": "/", "httpOnly": true}]})
    );
}

#[test]
fn ids_become_handles_and_keys_are_sanitized() {
    let s = Sanitizer::new();
    let id = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";
    let h = s.handle(id).into_string();
    let out = s
        .json(&json!({"sessionId": id, "targetId": id, id: 1, "frameId": "x"}))
        .into_value();
    assert_eq!(
        out,
        json!({"sessionId": h, "targetId": h, h.clone(): 1, "frameId": "x"})
    );
    let again = s.json(&out).into_value();
    assert_eq!(again, out, "walking twice equals once");
}

#[test]
fn keys_colliding_after_the_cap_stay_apart_and_stable() {
    let s = Sanitizer::new();
    let long_a = format!("{}a", "k".repeat(300));
    let long_b = format!("{}b", "k".repeat(300));
    let out = s.json(&json!({long_a: 1, long_b: 2})).into_value();
    assert_eq!(out.as_object().map(|o| o.len()), Some(2), "{out}");
    assert_eq!(
        s.json(&out).into_value(),
        out,
        "a second walk keeps the keys"
    );
}

#[test]
fn colliding_keys_are_kept_apart() {
    let s = Sanitizer::new();
    s.register_secret("A", "alpha").expect("valid");
    s.register_secret("A", "beta").expect("valid");
    let out = s.json(&json!({"alpha": 1, "beta": 2})).into_value();
    let obj = out.as_object().expect("object");
    assert_eq!(obj.len(), 2);
    assert!(
        obj.contains_key("${A}") && obj.contains_key("#2 ${A}"),
        "{out}"
    );
}

#[test]
fn target_info_is_allowlisted() {
    let s = Sanitizer::new();
    let id = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";
    let info = json!({
        "targetId": id,
        "type": "page",
        "title": "Inbox (3) — token=abc",
        "url": "https://mail.example.com/u/0/?auth=xyz#inbox",
        "attached": true,
        "canAccessOpener": false,
        "browserContextId": "A1B2C3D4E5F60718293A4B5C6D7E8F90",
        "futureField": "secret stuff",
        "webSocketDebuggerUrl": format!("ws://127.0.0.1:9222/devtools/page/{id}"),
        "devtoolsFrontendUrl": format!("/devtools/inspector.html?ws=127.0.0.1:9222/devtools/page/{id}"),
    });
    let out = s.target_info(&info).into_value();
    let h = s.handle(id).into_string();
    assert_eq!(
        out,
        json!({
            "targetId": h,
            "type": "page",
            "title": "Inbox (3) — token=[redacted:token]",
            "url": "https://mail.example.com/u/0/",
            "attached": true,
            "canAccessOpener": false,
            "browserContextId": s.handle("A1B2C3D4E5F60718293A4B5C6D7E8F90").into_string(),
            "webSocketDebuggerUrl": format!("ws://127.0.0.1:9222/devtools/page/{h}"),
        })
    );
    assert_eq!(
        s.target_info(&json!("not an object")).into_value(),
        json!({})
    );
}

/// Chromium titles an untitled page with its URL minus the scheme: the query must not come back
/// through the title when the URL field drops it.
#[test]
fn titles_that_are_urls_lose_their_query() {
    let s = Sanitizer::new();
    let title = |t: &str| s.target_info(&json!({ "title": t })).into_value()["title"].clone();
    for (raw, want) in [
        (
            "shop.test:8080/search?q=private+medical+question&email=bob%40example.com",
            "shop.test:8080/search",
        ),
        (
            "127.0.0.1:8765/search.html?q=Q#frag",
            "127.0.0.1:8765/search.html",
        ),
        ("bob:pw@host.test/p?x=1", "host.test/p"),
        (
            "Results for https://shop.test/s?q=private — Shop",
            "Results for https://shop.test/s — Shop",
        ),
        ("Inbox (3) — Mail", "Inbox (3) — Mail"),
        ("a/b testing: why?", "a/b testing: why?"),
    ] {
        assert_eq!(title(raw), json!(want), "{raw}");
    }
}

fn stream(s: &Sanitizer, doc: &str) -> Result<serde_json::Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(doc);
    s.json_stream(&mut de, serde_json::value::Serializer, usize::MAX)
}

#[test]
fn streaming_matches_the_walker() {
    let s = Sanitizer::new();
    s.register_secret("PW", "hunter2").expect("valid");
    let doc = json!({
        "log": {"entries": [{
            "request": {
                "url": "https://api.example.com/login?token=abc",
                "headers": [{"name": "Cookie", "value": "sid=1"}, {"name": "Accept", "value": "*/*"}],
                "cookies": [{"name": "sid", "value": "x", "path": "/"}],
                "postData": {"text": "password=hunter2"}
            },
            "sessionId": "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1",
            "n": [1, 2.5, -3, true, null],
            "hunter2": "key is a literal"
        }]}
    });
    let streamed = stream(&s, &doc.to_string()).expect("valid JSON");
    assert_eq!(streamed, s.json_capped(&doc, usize::MAX).into_value());
}

#[test]
fn streaming_holds_a_value_until_its_name() {
    let s = Sanitizer::new();
    // "value" before "name": buffered, judged by the name, written last.
    let out = stream(&s, r#"{"value":"s3cr3t","name":"Authorization","x":1}"#).expect("valid");
    assert_eq!(
        out,
        json!({"name": "Authorization", "x": 1, "value": "[redacted:authorization]"})
    );
    // A "value" with no "name" is judged by its own key.
    let out = stream(&s, r#"{"type":"string","value":"token=abc"}"#).expect("valid");
    assert_eq!(
        out,
        json!({"type": "string", "value": "token=[redacted:token]"})
    );
}

#[test]
fn streaming_reports_the_parser_error() {
    let s = Sanitizer::new();
    let err = stream(&s, r#"{"a": [1, 2,, 3]}"#).expect_err("invalid");
    assert!(err.to_string().contains("line 1 column 13"), "{err}");
    assert!(err.is_syntax(), "{err:?}");
}
