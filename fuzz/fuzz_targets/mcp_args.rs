//! The MCP gateway's argument reduction on arbitrary tool calls (the agent writes them).
//!
//! Input: a tool name, a newline, then a JSON document (the call's `arguments`). Properties: no
//! panic in `typed_literals`, `typed_key`, `key_press` or `reduce`; at most `MAX_ARGUMENTS`
//! arguments kept; and, as the gateway does it (every typed literal registered with the run's
//! sanitizer before the call is reduced), no typed literal of 8 or more characters appears in
//! any string of the reduced arguments that comes from the call (a name, a value, a URL, an
//! input's variable) outside the sanitizer's own markers. The record's own keys and words (`type`,
//! `inputType`) are checked to be the record's vocabulary: typed text `inputTyp` is not kept by a
//! key `inputType` (the campaign's first finding, a false alarm of the check).

#![no_main]

use cdp_evidence::{InputType, JsonType};
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
    call_strings(out.as_array().expect("reduced arguments are a list"), &mut strings);
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

/// The strings of reduced arguments that come from the call, after checking that everything else
/// in them is the record's own vocabulary: the keys an argument may have, a JSON type's word, an
/// input type's word.
fn call_strings<'a>(args: &'a [Value], out: &mut Vec<&'a str>) {
    const KEYS: [&str; 7] = ["name", "type", "value", "url", "input", "chars", "count"];
    for arg in args {
        let arg = arg.as_object().expect("a reduced argument is an object");
        for key in arg.keys() {
            assert!(
                KEYS.contains(&key.as_str()) || key == "items",
                "a reduced argument with an unknown key {key:?}: check what it holds, then add it"
            );
        }
        out.push(arg["name"].as_str().expect("an argument has a name"));
        let json_type = arg["type"].as_str().expect("an argument has a type");
        assert!(JsonType::ALL.iter().any(|t| t.as_str() == json_type));
        if let Some(value) = arg.get("value") {
            collect_strings(value, out);
        }
        if let Some(url) = arg.get("url") {
            out.push(url.as_str().expect("a url is a string"));
        }
        if let Some(input) = arg.get("input") {
            let input = input.as_object().expect("an input is an object");
            for (key, v) in input {
                match key.as_str() {
                    "chars" => assert!(v.is_u64()),
                    "inputType" => {
                        let word = v.as_str().expect("an input type is a word");
                        assert!(InputType::ALL.iter().any(|t| t.as_str() == word));
                    }
                    "variable" => out.push(v.as_str().expect("a variable is a name")),
                    other => panic!("an input with an unknown key {other:?}"),
                }
            }
        }
        if let Some(items) = arg.get("items") {
            call_strings(items.as_array().expect("items are a list"), out);
        }
    }
}
