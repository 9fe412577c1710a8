//! The MCP gateway's argument reduction on arbitrary tool calls (the agent writes them).
//!
//! Input: a tool name, a newline, then a JSON document (the call's `arguments`). Properties: no
//! panic in `typed_literals`, `typed_key`, `key_press` or `reduce`; at most `MAX_ARGUMENTS`
//! arguments kept; and, as the gateway does it (every typed literal registered with the run's
//! sanitizer before the call is reduced), no typed literal of 8 or more characters appears in
//! any string of the reduced arguments outside the sanitizer's own markers.

#![no_main]

use cdp_relay_mcp::fuzzing::{key_press, reduce, typed_key, typed_literals, KeyPress};
use cdp_sanitize::Sanitizer;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let (tool, doc) = match data.iter().position(|&b| b == b'\n') {
        Some(nl) => (
            String::from_utf8_lossy(&data[..nl]).into_owned(),
            &data[nl + 1..],
        ),
        None => (String::new(), data),
    };
    if let KeyPress::Typed(t) = key_press(&tool) {
        assert!(!t.is_empty() || tool.is_empty() || tool.chars().all(|c| c == '+'));
    }
    let Ok(value) = serde_json::from_slice::<Value>(doc) else {
        return;
    };
    let args = value.as_object();

    let s = Sanitizer::new();
    let mut protected = Vec::new();
    let mut literals = typed_literals(&tool, args);
    literals.extend(typed_key(&tool, args));
    for literal in &literals {
        if s.register_typed(literal).is_some() {
            protected.push(literal.as_str());
        }
    }
    let reduced = reduce(&s, &tool, args);
    assert!(reduced.len() <= 32, "more than MAX_ARGUMENTS kept");
    let out = serde_json::to_value(&reduced).expect("reduced arguments serialize");
    let mut strings = Vec::new();
    collect_strings(&out, &mut strings);
    for literal in protected {
        if literal.chars().count() < 8 || in_marker_vocabulary(literal) {
            continue;
        }
        for string in &strings {
            for segment in unprotected_segments(string) {
                assert!(
                    !segment.contains(literal),
                    "typed {literal:?} kept in {string:?} (tool {tool:?}, arguments {value})"
                );
            }
        }
    }
});

fn collect_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k);
                collect_strings(v, out);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A literal spelled with marker syntax, or part of the markers' words, can appear in output
/// that holds none of it.
fn in_marker_vocabulary(literal: &str) -> bool {
    let mut vocabulary: String = cdp_sanitize::Rule::ALL.iter().map(|r| r.marker()).collect();
    vocabulary.push_str(" target:0123456789abcdef …[truncated 0123456789 chars] ${TYPED_}");
    vocabulary.contains(literal) || literal.contains(['$', '{', '}', '[', ']', '…'])
}

/// Text outside `${NAME}` and `[redacted:rule]`.
fn unprotected_segments(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut last, mut i) = (0, 0);
    while i < s.len() {
        if let Some(len) = protected_len(&s[i..]) {
            out.push(&s[last..i]);
            i += len;
            last = i;
        } else {
            i += s[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out.push(&s[last..]);
    out
}

fn protected_len(s: &str) -> Option<usize> {
    if let Some(rest) = s.strip_prefix("${") {
        let name = rest
            .bytes()
            .take_while(|b| *b == b'_' || b.is_ascii_uppercase() || b.is_ascii_digit())
            .count();
        return (name > 0 && rest[name..].starts_with('}')).then_some(2 + name + 1);
    }
    if let Some(rest) = s.strip_prefix("[redacted:") {
        let name = rest
            .bytes()
            .take_while(|b| *b == b'-' || b.is_ascii_lowercase())
            .count();
        return (name > 0 && rest[name..].starts_with(']')).then_some(10 + name + 1);
    }
    None
}
