//! Fuzzes the URL sanitizer. Properties: no panic; no query, fragment or userinfo survives
//! (`?`, `#` never appear, no `user:password@` stays in the authority);
//! the length cap holds; a registered literal never survives.

#![no_main]

use cdp_relay_fuzz::in_marker_vocabulary;
use cdp_sanitize::{Sanitizer, URL_MAX_CHARS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let input = String::from_utf8_lossy(data);
    let s = Sanitizer::new();
    // A literal taken from the input itself, so it actually occurs.
    let literal: String = input.chars().skip(8).take(6).collect();
    let registered = matches!(s.register_secret("FUZZ_SECRET", &literal), Ok(true))
        && !literal.contains('%')
        && !in_marker_vocabulary(&literal, "${FUZZ_SECRET}");

    let out = s.url(&input).into_string();
    assert!(!out.contains('?'), "query survived: {out:?} from {input:?}");
    assert!(
        !out.contains('#'),
        "fragment survived: {out:?} from {input:?}"
    );
    assert!(out.chars().count() <= URL_MAX_CHARS + 40, "cap exceeded");
    // `scheme://user:password@host/…`: no userinfo survives in the authority. (Checked without
    // explicit secrets: a placeholder can swallow the path's slashes and blur the authority.)
    let plain = Sanitizer::new().url(&input).into_string();
    assert!(!plain.contains('?') && !plain.contains('#'));
    for (i, _) in plain.match_indices("//") {
        // The authority as a URL reader sees it: up to a path, query, fragment, blank or quote.
        let authority = plain[i + 2..]
            .split(|c: char| c.is_whitespace() || "/?#\"'<>\\".contains(c))
            .next()
            .unwrap_or("");
        let authority = authority.replace("[redacted:userinfo]@", "");
        // An empty userinfo (`//@host`) hides nothing.
        let authority = authority.strip_prefix('@').unwrap_or(&authority);
        assert!(
            !authority.contains('@'),
            "userinfo survived: {plain:?} from {input:?}"
        );
    }
    if registered {
        // Placeholders may legitimately hold the name, never the literal.
        let without = out.replace("${FUZZ_SECRET}", "\u{0}");
        for piece in without.split('\u{0}') {
            assert!(
                !piece.contains(&literal),
                "literal {literal:?} survived in {out:?}"
            );
        }
    }
});
