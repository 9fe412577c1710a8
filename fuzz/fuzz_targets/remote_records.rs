//! The remote producer's records (`POST /relay/v1/evidence`, `cdp-relay evidence append`): a
//! body from another host, line by line through validation and the run's sanitizer.
//!
//! Input: a secret literal, a NUL, then the body. Properties: no panic; every accepted record
//! comes from a non-blank line; a registered secret never appears in an accepted record nor in
//! the refusal (which names lines by number, never their content), unless the refusal's own
//! words spell it.

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
            if registered && reply.body.contains(&literal) {
                // The refusal's own words and numbers can spell a literal (` 2: no` in `line 2:
                // not valid JSON`): it is echoed only if it goes when the body no longer holds
                // it (each occurrence masked by as many bytes, so columns stay put).
                let masked = mask(body, literal.as_bytes());
                let again = parse_body(&masked, &s)
                    .err()
                    .map(|r| r.body)
                    .unwrap_or_default();
                assert!(again.contains(&literal), "secret in {:?}", reply.body);
            }
        }
    }
});

const REFUSAL_WORDS: &str = "${FUZZ_SECRET} \
    cdp-relay: line 0123456789: ; nothing was appended (see docs/evidence-format.md) \
    (and more bad line(s)) no records in the body; send one JSON record per line";

/// `body` with every occurrence of `literal` replaced by as many `x`s.
fn mask(body: &[u8], literal: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    if literal.is_empty() {
        return out;
    }
    let mut i = 0;
    while i + literal.len() <= out.len() {
        if out[i..].starts_with(literal) {
            out[i..i + literal.len()].fill(b'x');
            i += literal.len();
        } else {
            i += 1;
        }
    }
    out
}
