//! Fuzzes the JSON walker. Input: a literal terminated by NUL, then a JSON document.
//! Properties: no panic; the output is valid JSON with the same shape (types, array lengths,
//! key counts, numbers and booleans unchanged); walking twice equals walking once; streaming
//! gives what walking gives; the registered literal never survives in a key or string outside
//! the sanitizer's markers.

#![no_main]

use cdp_sanitize::Sanitizer;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let (literal, doc) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (
            String::from_utf8_lossy(&data[..nul]).into_owned(),
            &data[nul + 1..],
        ),
        None => (String::new(), data),
    };
    let Ok(value) = serde_json::from_slice::<Value>(doc) else {
        return;
    };
    let s = Sanitizer::new();
    let registered = matches!(s.register_secret("FUZZ_SECRET", &literal), Ok(true))
        && !literal.contains('#')
        && !in_marker_vocabulary(&literal);

    let out = s.json(&value).into_value();
    assert!(same_shape(&value, &out), "shape changed: {value} -> {out}");
    let text = serde_json::to_string(&out).expect("serializes");
    let _: Value = serde_json::from_str(&text).expect("output is valid JSON");
    assert_eq!(
        s.json(&out).into_value(),
        out,
        "walking twice changed the output"
    );
    let _ = s.target_info(&value);

    if registered {
        let mut strings = Vec::new();
        collect_strings(&out, &mut strings);
        for string in strings {
            let without = string.replace("${FUZZ_SECRET}", "\u{0}");
            for piece in without.split('\u{0}') {
                assert!(
                    !piece.contains(literal.as_str()),
                    "literal {literal:?} survived in {string:?}"
                );
            }
        }
    }
});

fn same_shape(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::String(_), Value::String(_)) => true,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_shape(a, b))
        }
        (Value::Object(x), Value::Object(y)) => x.len() == y.len(),
        _ => false,
    }
}

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

/// A literal that is part of the sanitizer's own vocabulary (`token` in `[redacted:token]`, a
/// hex digit of a handle) or uses marker syntax can legitimately appear in the output.
fn in_marker_vocabulary(literal: &str) -> bool {
    let mut vocabulary: String = cdp_sanitize::Rule::ALL.iter().map(|r| r.marker()).collect();
    vocabulary.push_str(" target:0123456789abcdef …[truncated 0123456789 chars] ${FUZZ_SECRET}");
    vocabulary.contains(literal) || literal.contains(['$', '{', '}', '[', ']', '…'])
}
