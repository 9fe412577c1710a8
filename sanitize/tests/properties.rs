//! Property tests of the privacy contract (DESIGN §5):
//! - no registered literal survives outside the markers the sanitizer itself emits;
//! - sanitizing twice equals sanitizing once (text, capped text, JSON);
//! - no placeholder is ever nested or cut (`${${X}}` never appears unless it was in the input);
//! - any string in gives a string out without panicking;
//! - JSON stays valid JSON with the same shape.

use cdp_sanitize::Sanitizer;
use proptest::prelude::*;
use regex::Regex;
use serde_json::Value;
use std::sync::LazyLock;

/// What the sanitizer emits and never alters: placeholders, rule markers, handles, the
/// truncation marker. A registered literal may only survive inside one of these (a literal
/// such as `redacted` or `target` is part of the marker vocabulary itself).
static PROTECTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$\{[A-Z_][A-Z0-9_]*\}|\[redacted:[a-z-]+\]|target:[0-9a-f]{12}|…\[truncated [0-9]+ chars\]")
        .expect("valid")
});

fn unprotected_segments(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut last = 0;
    for m in PROTECTED.find_iter(s) {
        out.push(&s[last..m.start()]);
        last = m.end();
    }
    out.push(&s[last..]);
    out
}

/// Fragments from every rule's vocabulary, so generated text actually exercises the rules and
/// their interactions (a literal inside a JWT, a marker after `password=`, ids next to names).
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(vec![
            "password", "Password", "token", "Bearer ", "Basic ", "Cookie: ", "Set-Cookie: ",
            "Authorization: ", "sessionId", "sid", "api_key", "csrf_token", "otp", "inputTokens",
            "tokenType", "code", "state", "eyJhbGciOiJIUzI1NiJ9", ".eyJzdWIiOiIxIn0", ".c2ln",
            "ewogICJhbGciOiJub25lIgp9", "https://", "ws://127.0.0.1:9222", "/devtools/page/",
            "/devtools/browser/", "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1",
            "3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44", "user:pw@", "@", "?", "&", "#", ";", "=",
            ": ", "=>", "\"", "'", "\\\"", "\\", "{", "}", "[", "]", "${", "${SECRET_A}",
            "${UNKNOWN}", "[redacted:jwt]", "[redacted:nope]", "target:0123456789ab",
            "…[truncated 5 chars]", "-----BEGIN RSA PRIVATE KEY-----", "\nMIIEpAIBAAK\n",
            "-----END RSA PRIVATE KEY-----", "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "AKIAIOSFODNN7EXAMPLE", " ", "\t", "\n", "\r\n", "é", "日本", "\u{a0}", "…",
            "name=\"csrf\" value=\"", "{\"name\":\"SID\",\"value\":\"",
        ])
        .prop_map(str::to_owned),
        2 => "[a-zA-Z0-9_.:/=+-]{1,12}",
        1 => "[0-9A-F]{32}",
        1 => any::<String>().prop_map(|s| s.chars().take(8).collect()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(fragment(), 0..16).prop_map(|v| v.concat())
}

/// Literals a caller could register: no marker syntax in them (a literal containing `${` or
/// `[redacted:` cannot be told apart from the sanitizer's own output).
fn literal() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9!@%&*+=?/ _.-]{1,12}",
        proptest::sample::select(vec![
            "password",
            "SECRET",
            "8E5B0E1C",
            "eyJhbGci",
            "Bearer",
            "hunter2",
            "p@ss w0rd",
            "a",
            "ab",
            "abc",
            "é",
            "a\"b",
        ])
        .prop_map(str::to_owned),
    ]
}

fn sanitizer_with(literals: &[String]) -> Sanitizer {
    let s = Sanitizer::new();
    for (i, lit) in literals.iter().enumerate() {
        let name = if i == 0 {
            "SECRET_A".to_owned()
        } else {
            format!("SECRET_{i}")
        };
        let _ = s.register_secret(&name, lit).expect("valid name");
    }
    s
}

proptest! {
    // 2000 cases by default; `PROPTEST_CASES=100000` for a longer hunt.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000),
        ..ProptestConfig::default()
    })]

    #[test]
    fn no_registered_literal_survives(
        literals in proptest::collection::vec(literal(), 1..4),
        parts in proptest::collection::vec(prop_oneof![text(), literal()], 1..6),
    ) {
        let s = sanitizer_with(&literals);
        let input = parts.concat();
        let out = s.text_capped(&input, usize::MAX).into_string();
        for segment in unprotected_segments(&out) {
            for lit in &literals {
                if lit.trim().is_empty() {
                    continue;
                }
                prop_assert!(!segment.contains(lit.as_str()),
                    "literal {:?} survived in {:?} (input {:?})", lit, out, input);
            }
        }
    }

    #[test]
    fn sanitizing_twice_equals_once(
        literals in proptest::collection::vec(literal(), 0..3),
        input in text(),
        cap in prop_oneof![Just(usize::MAX), 0usize..80],
    ) {
        let s = sanitizer_with(&literals);
        let once = s.text_capped(&input, cap).into_string();
        let twice = s.text_capped(&once, cap).into_string();
        prop_assert_eq!(&twice, &once, "input {:?}", input);
        let url_once = s.url(&input).into_string();
        prop_assert_eq!(s.text_capped(&url_once, usize::MAX).into_string(), url_once);
    }

    #[test]
    fn placeholders_are_never_nested_or_cut(
        literals in proptest::collection::vec(literal(), 1..4),
        input in text(),
        cap in prop_oneof![Just(usize::MAX), 0usize..80],
    ) {
        let s = sanitizer_with(&literals);
        let out = s.text_capped(&input, cap).into_string();
        if !input.contains("${${") {
            prop_assert!(!out.contains("${${"), "nested placeholder in {:?} from {:?}", out, input);
        }
        // Every placeholder-shaped text in the output was emitted whole or came from the input.
        let names: Vec<String> = (0..literals.len())
            .map(|i| if i == 0 { "SECRET_A".to_owned() } else { format!("SECRET_{i}") })
            .collect();
        for name in &names {
            let open = format!("${{{name}");
            for (i, _) in out.match_indices(&open) {
                let rest = &out[i + open.len()..];
                let closed = rest.starts_with('}');
                let longer_name = rest.starts_with(|c: char| c == '_' || c.is_ascii_uppercase() || c.is_ascii_digit());
                prop_assert!(closed || longer_name || input.contains(&open),
                    "cut placeholder in {:?}", out);
            }
        }
    }

    #[test]
    fn any_string_in_gives_a_string_out(input in any::<String>(), cap in 0usize..200) {
        let s = Sanitizer::new();
        let out = s.text_capped(&input, cap);
        prop_assert!(out.as_str().chars().count() <= cap + "…[truncated  chars]".chars().count() + 20);
        let _ = s.url(&input);
        let _ = s.error(&input);
    }

    #[test]
    fn json_keeps_its_shape_and_stays_json(value in json_value(), literals in proptest::collection::vec(literal(), 0..2)) {
        let s = sanitizer_with(&literals);
        let out = s.json(&value).into_value();
        prop_assert!(same_shape(&value, &out), "{} -> {}", value, out);
        let reparsed: Value = serde_json::from_str(&serde_json::to_string(&out).expect("serializes"))
            .expect("output is valid JSON");
        prop_assert_eq!(&reparsed, &out);
        prop_assert_eq!(s.json(&out).into_value(), out.clone(), "walking twice equals once");
        // Streaming gives the same document as walking.
        let doc = serde_json::to_string(&value).expect("serializes");
        let mut de = serde_json::Deserializer::from_str(&doc);
        let streamed = s.json_stream(&mut de, serde_json::value::Serializer, cdp_sanitize::TEXT_MAX_CHARS)
            .expect("valid JSON streams");
        prop_assert_eq!(streamed, out);
    }
}

/// Same types everywhere, same array lengths, same number of keys, scalars other than strings
/// unchanged.
fn same_shape(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::String(_), Value::String(_)) => true,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_shape(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            // Keys may be rewritten (a CDP id as a key becomes a handle), so compare by order
            // of the sanitized values only when the key set is unchanged.
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_none_or(|w| same_shape(v, w)))
        }
        _ => false,
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        proptest::sample::select(vec![
            "password",
            "token",
            "inputTokens",
            "sessionId",
            "sessionCount",
            "tokenType",
            "cookies",
            "headers",
            "name",
            "value",
            "url",
            "id",
            "targetId",
            "Authorization",
            "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1",
            "hunter2",
            "api_key",
            "hasPassword",
        ])
        .prop_map(str::to_owned),
        "[a-zA-Z_]{1,10}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        // Decimals with few digits: serde_json's default float parsing does not round-trip
        // every f64 exactly, which is not what this property is about.
        any::<i32>().prop_map(|n| Value::from(f64::from(n) / 1000.0)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
