//! Property tests of the privacy contract (docs/security.md):
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

fn secret_name(i: usize) -> String {
    if i == 0 {
        "SECRET_A".to_owned()
    } else {
        format!("SECRET_{i}")
    }
}

/// A sanitizer with `literals` registered (those the registry accepts: literals with fewer than
/// four non-whitespace characters are refused).
fn sanitizer_with(literals: &[String]) -> Sanitizer {
    let s = Sanitizer::new();
    for (i, lit) in literals.iter().enumerate() {
        let _ = s.register_secret(&secret_name(i), lit);
    }
    s
}

/// The literals of `literals` that `sanitizer_with` actually registered.
fn registered(literals: &[String]) -> Vec<&str> {
    literals
        .iter()
        .enumerate()
        .filter(|(i, lit)| Sanitizer::check_secret(&secret_name(*i), lit) == Ok(true))
        .map(|(_, lit)| lit.as_str())
        .collect()
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
            for lit in registered(&literals) {
                prop_assert!(!segment.contains(lit),
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
        let names: Vec<String> = (0..literals.len()).map(secret_name).collect();
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

// --- typed echoes ---------------------------------------------------------------------------

/// Literals a user could type: words that are also secrets' names, phrases, punctuation that
/// has a JSON or URL spelling of its own. No marker syntax (see `literal`).
fn typed_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9!@%&*+=?/ _.\"-]{1,24}",
        proptest::sample::select(vec![
            "password",
            "code",
            "Bearer",
            "access_token",
            "hunter2 secret",
            "TypeSecretBBB2",
            "p@ss \"w0rd\" x",
            "  lead",
            "a b c d e",
        ])
        .prop_map(str::to_owned),
    ]
}

/// The characters of the shortest prefix with four non-whitespace ones (leading whitespace
/// dropped), or `None` when `literal` has fewer than four.
fn head_chars(literal: &str) -> Option<usize> {
    let mut seen = 0;
    literal
        .trim_start()
        .chars()
        .position(|c| {
            seen += usize::from(!c.is_whitespace());
            seen == 4
        })
        .map(|p| p + 1)
}

/// `s` in each spelling the registry handles, computed with the libraries (not the crate's own
/// encoders).
fn spelled(s: &str) -> [String; 4] {
    let json = serde_json::to_string(s).expect("strings serialize");
    let form: String = url::form_urlencoded::byte_serialize(s.as_bytes()).collect();
    [
        s.to_owned(),
        json[1..json.len() - 1].to_owned(),
        form.replace('+', "%20"),
        form,
    ]
}

/// Every protected prefix of `literal` (at least four non-whitespace characters, ending with a
/// non-whitespace one), in every spelling.
fn protected_prefixes(literal: &str) -> Vec<String> {
    let literal = literal.trim_start();
    let Some(head) = head_chars(literal) else {
        return Vec::new();
    };
    let chars: Vec<(usize, char)> = literal.char_indices().collect();
    let mut out = Vec::new();
    for k in head..=chars.len() {
        let end = chars.get(k).map_or(literal.len(), |&(i, _)| i);
        let prefix = &literal[..end];
        if prefix.ends_with(char::is_whitespace) {
            continue;
        }
        out.extend(spelled(prefix));
    }
    out.sort();
    out.dedup();
    out
}

/// A typed literal, how it was typed (chunks), and a text mixing rule vocabulary with prefixes
/// of the literal in its spellings.
fn typed_case() -> impl Strategy<Value = (String, Vec<String>, String)> {
    typed_literal().prop_flat_map(|lit| {
        let n = lit.chars().count();
        let chars: Vec<String> = lit.chars().map(String::from).collect();
        let prefixes = (1..=n, 0usize..4).prop_map({
            let lit = lit.clone();
            move |(k, sp)| {
                let end = lit.char_indices().nth(k).map_or(lit.len(), |(i, _)| i);
                spelled(&lit[..end])[sp].clone()
            }
        });
        let parts = proptest::collection::vec(prop_oneof![fragment(), prefixes], 0..10);
        let cuts = proptest::collection::vec(1usize..4, n);
        (Just(lit), Just(chars), cuts, parts).prop_map(|(lit, chars, cuts, parts)| {
            // Keystrokes of one to three characters.
            let mut chunks = Vec::new();
            let mut i = 0;
            for c in cuts {
                if i >= chars.len() {
                    break;
                }
                let j = (i + c).min(chars.len());
                chunks.push(chars[i..j].concat());
                i = j;
            }
            (lit, chunks, parts.concat())
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000),
        ..ProptestConfig::default()
    })]

    /// No protected prefix of a typed literal survives outside what the sanitizer emits,
    /// whatever else is registered, and the registry guarantees keep holding: a fixed point, no
    /// nested placeholder.
    #[test]
    fn typed_prefixes_never_survive(
        (lit, chunks, input) in typed_case(),
        literals in proptest::collection::vec(literal(), 0..3),
        cap in prop_oneof![3 => Just(usize::MAX), 1 => 0usize..80],
    ) {
        let s = sanitizer_with(&literals);
        let mut echo = s.typed_echo();
        for chunk in &chunks {
            echo.extend(chunk);
        }
        prop_assert_eq!(echo.name().is_some(), head_chars(&lit).is_some());
        let out = s.text_capped(&input, cap).into_string();
        if cap == usize::MAX {
            let prefixes = protected_prefixes(&lit);
            for segment in unprotected_segments(&out) {
                for p in &prefixes {
                    prop_assert!(!segment.contains(p.as_str()),
                        "prefix {:?} of {:?} survived in {:?} (input {:?})", p, lit, out, input);
                }
            }
        }
        let twice = s.text_capped(&out, cap).into_string();
        prop_assert_eq!(&twice, &out, "input {:?}", input);
        if !input.contains("${${") {
            prop_assert!(!out.contains("${${"), "nested placeholder in {:?}", out);
        }
    }

    /// Echoed keystroke by keystroke, `live <prefix>` reads `live ${TYPED_1}` from the fourth
    /// character on and is untouched before.
    #[test]
    fn each_keystroke_echo_is_masked_from_the_fourth_character(lit in "[a-zA-Z][a-zA-Z0-9]{3,30}") {
        let s = Sanitizer::new();
        let mut echo = s.typed_echo();
        for (k, c) in lit.chars().enumerate() {
            echo.extend(&c.to_string());
            let prefix: String = lit.chars().take(k + 1).collect();
            let line = format!("live {prefix}");
            let out = s.text(&line).into_string();
            if k + 1 < 4 {
                prop_assert_eq!(out, line);
                prop_assert_eq!(echo.name(), None);
            } else {
                prop_assert_eq!(out, "live ${TYPED_1}");
                prop_assert_eq!(echo.name(), Some("TYPED_1"));
            }
        }
    }
}
