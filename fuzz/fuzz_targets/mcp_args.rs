//! The MCP gateway's argument reduction on arbitrary tool calls (the agent writes them).
//!
//! Input: a tool name, a newline, then a JSON document (the call's `arguments`). Properties: no
//! panic in `typed_literals`, `typed_key`, `key_press` or `reduce`; at most `MAX_ARGUMENTS`
//! arguments kept; and, as the gateway does it (every typed literal registered with the run's
//! sanitizer before the call is reduced), no typed literal of 8 or more characters appears in
//! any string of the reduced arguments outside the sanitizer's own markers.

#![no_main]

use cdp_relay_fuzz::{collect_strings, in_marker_vocabulary, unprotected_segments};
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
        if literal.chars().count() < 8 || in_marker_vocabulary(literal, "${TYPED_}") {
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
