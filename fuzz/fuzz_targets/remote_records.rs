//! The remote producer's records (`POST /relay/v1/evidence`, `cdp-relay evidence append`): a
//! body from another host, line by line through validation and the run's sanitizer.
//!
//! Input: a secret literal, a NUL, then the body. Properties: no panic; every accepted record
//! comes from a non-blank line; a registered secret never appears in an accepted record nor in
//! the refusal (which names lines by number, never their content).

#![no_main]

use cdp_relay::remote::parse_body;
use cdp_relay_fuzz::in_marker_vocabulary;
use cdp_sanitize::Sanitizer;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (literal, body) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (
            String::from_utf8_lossy(&data[..nul]).into_owned(),
            &data[nul + 1..],
        ),
        None => (String::new(), data),
    };
    let s = Sanitizer::new();
    // A literal in the refusal's own words can appear without being leaked.
    let registered = matches!(s.register_secret("FUZZ_SECRET", &literal), Ok(true))
        && !in_marker_vocabulary(&literal, REFUSAL_WORDS)
        && !literal.contains(['\\', '"']);
    let lines = body
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .count();
    match parse_body(body, &s) {
        Ok(records) => {
            assert!(!records.is_empty() && records.len() <= lines);
            if registered {
                for r in &records {
                    // Debug shows every field's text (escaped like a Rust string).
                    let shown = format!("{r:?}").replace("${FUZZ_SECRET}", "\u{0}");
                    let escaped = format!("{literal:?}");
                    let escaped = &escaped[1..escaped.len() - 1];
                    assert!(!shown.contains(escaped), "secret kept in {shown}");
                }
            }
        }
        Err(reply) => {
            assert_eq!(reply.status, 400);
            if registered {
                assert!(!reply.body.contains(&literal), "secret in {:?}", reply.body);
            }
        }
    }
});

const REFUSAL_WORDS: &str = "${FUZZ_SECRET} \
    cdp-relay: line 0123456789: ; nothing was appended (see docs/evidence-format.md) \
    (and more bad line(s)) no records in the body; send one JSON record per line";
