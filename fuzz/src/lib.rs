//! What the targets share to check the sanitizer's output: the strings of a JSON value, the text
//! outside the sanitizer's markers, and whether a literal is part of the markers' own words.

#![forbid(unsafe_code)]

use serde_json::Value;

/// Every string of `v`, object keys included, in document order.
pub fn collect_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
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

/// A literal that is part of the markers' words (`token` in `[redacted:token]`, a hex digit of a
/// handle), of `own_words` (the target's placeholder or refusal text), or uses marker syntax can
/// appear in output that holds none of it.
pub fn in_marker_vocabulary(literal: &str, own_words: &str) -> bool {
    let mut vocabulary: String = cdp_sanitize::Rule::ALL.iter().map(|r| r.marker()).collect();
    vocabulary.push_str(" target:0123456789abcdef …[truncated 0123456789 chars] ");
    vocabulary.push_str(own_words);
    vocabulary.contains(literal) || literal.contains(['$', '{', '}', '[', ']', '…'])
}

/// Text outside `${NAME}`, `[redacted:rule]`, `target:<12 hex>` and `…[truncated N chars]`.
pub fn unprotected_segments(s: &str) -> Vec<&str> {
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

/// The length of the marker `s` starts with, if it starts with one.
fn protected_len(s: &str) -> Option<usize> {
    if let Some(rest) = s.strip_prefix("${") {
        let name = rest
            .bytes()
            .take_while(|b| *b == b'_' || b.is_ascii_uppercase() || b.is_ascii_digit())
            .count();
        let first_ok = rest
            .bytes()
            .next()
            .is_some_and(|b| b == b'_' || b.is_ascii_uppercase());
        return (first_ok && rest[name..].starts_with('}')).then_some(2 + name + 1);
    }
    if let Some(rest) = s.strip_prefix("[redacted:") {
        let name = rest
            .bytes()
            .take_while(|b| *b == b'-' || b.is_ascii_lowercase())
            .count();
        return (name > 0 && rest[name..].starts_with(']')).then_some(10 + name + 1);
    }
    if let Some(rest) = s.strip_prefix("target:") {
        let hex = rest
            .bytes()
            .take_while(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            .count();
        return (hex == 12).then_some(7 + 12);
    }
    if let Some(rest) = s.strip_prefix("…[truncated ") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let tail = " chars]";
        return (digits > 0 && rest[digits..].starts_with(tail))
            .then_some("…[truncated ".len() + digits + tail.len());
    }
    None
}
