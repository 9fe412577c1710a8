//! Fuzzes the JSON walker. Input: a literal terminated by NUL, then a JSON document.
//! Properties: no panic; the output is valid JSON with the same shape (types, array lengths,
//! key counts, numbers and booleans unchanged); walking twice equals walking once; streaming
//! gives what walking gives; the registered literal never survives in a key or string outside
//! the sanitizer's markers.

#![no_main]

use cdp_relay_fuzz::{collect_strings, in_marker_vocabulary};
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
        && !in_marker_vocabulary(&literal, "${FUZZ_SECRET}");

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
