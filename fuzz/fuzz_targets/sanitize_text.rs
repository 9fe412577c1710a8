//! Fuzzes the text sanitizer with explicit secrets and typed echoes registered.
//!
//! Input layout: up to three literals, each terminated by a NUL byte, then one cap byte, then
//! the text. A literal that starts with byte 0x01 is typed instead (the rest of it, one
//! character per keystroke, through `Sanitizer::typed_echo`). Properties: no panic; the output
//! is a fixed point; no registered literal survives outside the markers the sanitizer emits,
//! nor any prefix of a typed one with four or more non-whitespace characters (in plain,
//! JSON-escaped or URL-encoded spelling); no nested placeholder unless the input had one; the
//! cap holds.

#![no_main]

use cdp_relay_fuzz::unprotected_segments;
use cdp_sanitize::Sanitizer;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    let mut literals = Vec::new();
    while literals.len() < 3 {
        let Some(nul) = rest.iter().position(|&b| b == 0) else {
            break;
        };
        literals.push(String::from_utf8_lossy(&rest[..nul]).into_owned());
        rest = &rest[nul + 1..];
    }
    let (cap, text) = match rest.split_first() {
        Some((&c, text)) if c < 128 => (usize::from(c), text),
        Some((_, text)) => (usize::MAX, text),
        None => (usize::MAX, rest),
    };
    let input = String::from_utf8_lossy(text);

    let s = Sanitizer::new();
    let mut registered = Vec::new();
    let mut typed = Vec::new();
    for (i, literal) in literals.iter().enumerate() {
        if let Some(keys) = literal.strip_prefix('\u{1}') {
            let mut echo = s.typed_echo();
            for c in keys.chars() {
                echo.extend(c.encode_utf8(&mut [0; 4]));
            }
            if echo.name().is_some() {
                typed.push(keys);
            }
        } else if let Ok(true) = s.register_secret(&format!("FUZZ_{i}"), literal) {
            registered.push(literal.as_str());
        }
    }

    let once = s.text_capped(&input, cap).into_string();
    let twice = s.text_capped(&once, cap).into_string();
    assert_eq!(once, twice, "not a fixed point for {input:?}");

    for segment in unprotected_segments(&once) {
        for literal in &registered {
            // A literal spelled with marker syntax cannot be told apart from our own output.
            if looks_like_marker_syntax(literal) {
                continue;
            }
            assert!(
                !segment.contains(literal),
                "literal {literal:?} survived in {once:?} (input {input:?})"
            );
        }
    }
    if cap == usize::MAX {
        for keys in &typed {
            if looks_like_marker_syntax(keys) || keys.chars().count() > 64 {
                continue;
            }
            let prefixes = protected_prefixes(keys);
            for segment in unprotected_segments(&once) {
                for p in &prefixes {
                    assert!(
                        !segment.contains(p.as_str()),
                        "typed prefix {p:?} survived in {once:?} (input {input:?})"
                    );
                }
            }
        }
    }
    if !input.contains("${${") {
        assert!(!once.contains("${${"), "nested placeholder in {once:?}");
    }
    if cap != usize::MAX {
        assert!(
            once.chars().count() <= cap + 40,
            "cap {cap} exceeded: {once:?}"
        );
    }
    let _ = s.error(&input);
    let _ = s.summary();
});

fn looks_like_marker_syntax(literal: &str) -> bool {
    [
        "$",
        "{",
        "}",
        "[",
        "]",
        "…",
        "redacted",
        "target:",
        "truncated",
    ]
    .iter()
    .any(|m| literal.contains(m))
}

/// Every prefix of a typed literal that must not survive: at least four non-whitespace
/// characters, ending with one, leading whitespace dropped; in each spelling.
fn protected_prefixes(typed: &str) -> Vec<String> {
    let typed = typed.trim_start();
    let mut out = Vec::new();
    let mut solid = 0;
    for (i, c) in typed.char_indices() {
        if c.is_whitespace() {
            continue;
        }
        solid += 1;
        if solid >= 4 {
            let prefix = &typed[..i + c.len_utf8()];
            let json = serde_json::to_string(prefix).expect("strings serialize");
            let form = form_urlencoded(prefix);
            out.push(prefix.to_owned());
            out.push(json[1..json.len() - 1].to_owned());
            out.push(form.replace('+', "%20"));
            out.push(form);
        }
    }
    out
}

/// `application/x-www-form-urlencoded`, as the `url` crate writes it.
fn form_urlencoded(s: &str) -> String {
    let mut out = String::new();
    for &b in s.as_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
