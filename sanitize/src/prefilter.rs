//! The pre-filter: decides cheaply that a text cannot match any detector, so clean text (most
//! console output) never reaches the regex.
//!
//! It must never say "no" when a detector would match (a proptest checks exactly that), so each
//! check mirrors a detector's necessary condition and errs towards "maybe".

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use std::sync::LazyLock;

/// Name stems of the key/value detector (lower case, as in its regex). A `=` or `:` whose name
/// contains none of these cannot start a key/value match.
const NAME_STEMS: &[&[u8]] = &[
    b"pass",
    b"pwd",
    b"secret",
    b"token",
    b"cred",
    b"auth",
    b"cookie",
    b"sess",
    b"sid",
    b"csrf",
    b"xsrf",
    b"jwt",
    b"otp",
    b"mfa",
    b"2fa",
    b"pin",
    b"saml",
    b"verifier",
    b"signature",
    b"key",
    b"code",
    b"bearer",
];

/// Query-parameter names the query detector needs at the *end* of a name before `=`, beyond
/// those [`NAME_STEMS`] already covers.
const QUERY_SUFFIXES: &[&[u8]] = &[b"sig", b"state", b"ticket", b"hmac", b"nonce"];

/// Why a literal trigger matters: what must follow it for its detector to have a chance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trigger {
    /// The detector can match right here (JWT header, PEM header, token prefix, capability path).
    Strong,
    /// An authorization scheme word: matters only if a blank follows.
    Scheme,
}

/// Case-sensitive literals the other detectors need (their regexes are case-sensitive too, so a
/// SIMD literal search can stand in for them).
const TRIGGERS: &[(&str, Trigger)] = &[
    ("eyJ", Trigger::Strong),
    ("ewo", Trigger::Strong),
    ("eyAi", Trigger::Strong),
    ("ew0K", Trigger::Strong),
    ("/devtools/", Trigger::Strong),
    ("-----BEGIN ", Trigger::Strong),
    ("\"name\"", Trigger::Strong),
    ("ghp_", Trigger::Strong),
    ("gho_", Trigger::Strong),
    ("ghu_", Trigger::Strong),
    ("ghs_", Trigger::Strong),
    ("ghr_", Trigger::Strong),
    ("github_pat_", Trigger::Strong),
    ("xox", Trigger::Strong),
    ("AKIA", Trigger::Strong),
    ("ASIA", Trigger::Strong),
    ("AIza", Trigger::Strong),
    ("sk_live_", Trigger::Strong),
    ("sk_test_", Trigger::Strong),
    ("rk_live_", Trigger::Strong),
    ("rk_test_", Trigger::Strong),
    ("glpat-", Trigger::Strong),
    ("npm_", Trigger::Strong),
    ("sk-", Trigger::Strong),
    ("Bearer", Trigger::Scheme),
    ("bearer", Trigger::Scheme),
    ("BEARER", Trigger::Scheme),
    ("Basic", Trigger::Scheme),
    ("basic", Trigger::Scheme),
    ("BASIC", Trigger::Scheme),
    ("Token", Trigger::Scheme),
    ("token", Trigger::Scheme),
    ("TOKEN", Trigger::Scheme),
    ("Digest", Trigger::Scheme),
    ("digest", Trigger::Scheme),
    ("DIGEST", Trigger::Scheme),
    ("Negotiate", Trigger::Scheme),
    ("negotiate", Trigger::Scheme),
    ("NEGOTIATE", Trigger::Scheme),
    ("NTLM", Trigger::Scheme),
    ("ntlm", Trigger::Scheme),
];

static TRIGGER_SET: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostFirst)
        .build(TRIGGERS.iter().map(|(t, _)| t))
        .expect("the trigger list compiles")
});

/// Cheap pre-filter: false means no detector can match `text`, so clean text never reaches
/// the regex. It mirrors each detector's necessary condition:
/// - key/value and query parameters: a `=` or `:` whose name (before an optional closing quote
///   and blanks) contains a [`NAME_STEMS`] stem — found from the separators, which are rare;
/// - HTML name/value attributes: a `=` after a name ending in `name` (any case);
/// - scheme credentials: a scheme word followed by a blank;
/// - userinfo: an `@` ending a non-empty run that starts right after `//`;
/// - JWT, PEM, token prefixes, capability paths: their literal prefix;
/// - CDP ids: a run of 32 or more `[0-9A-Fa-f-]`.
pub(crate) fn may_match(text: &str) -> bool {
    let b = text.as_bytes();
    has_id_candidate(b) || has_sensitive_separator(b) || has_userinfo(b) || has_live_trigger(text)
}

fn has_live_trigger(text: &str) -> bool {
    let b = text.as_bytes();
    let mut at = 0;
    while let Some(m) = TRIGGER_SET.find(&text[at..]) {
        let (start, end) = (at + m.start(), at + m.end());
        let live = match TRIGGERS.get(m.pattern().as_usize()).map(|t| t.1) {
            Some(Trigger::Strong) | None => true,
            Some(Trigger::Scheme) => matches!(b.get(end), Some(b' ' | b'\t')),
        };
        if live {
            return true;
        }
        // Resume one byte later, not after the match: no trigger can hide another.
        at = start + 1;
        while at < text.len() && !text.is_char_boundary(at) {
            at += 1;
        }
    }
    false
}

/// The two separators; aho-corasick searches single bytes with a vectorized `memchr2`.
static SEPARATORS: LazyLock<AhoCorasick> =
    LazyLock::new(|| AhoCorasick::new(["=", ":"]).expect("two literals compile"));

/// True when some `=` or `:` is preceded by a name that contains a sensitive stem.
fn has_sensitive_separator(b: &[u8]) -> bool {
    SEPARATORS
        .find_iter(b)
        .any(|m| sensitive_name_before(b, m.start()))
}

/// The name before a separator: blanks, an optional closing quote (maybe JSON-escaped), then
/// `[A-Za-z0-9_.-]+`. Checked for a stem case-insensitively.
fn sensitive_name_before(b: &[u8], sep: usize) -> bool {
    let mut end = sep;
    while end > 0 && matches!(b[end - 1], b' ' | b'\t') {
        end -= 1;
    }
    if end > 0 && matches!(b[end - 1], b'"' | b'\'') {
        end -= 1;
        if end > 0 && b[end - 1] == b'\\' {
            end -= 1;
        }
    }
    let mut start = end;
    while start > 0
        && (b[start - 1].is_ascii_alphanumeric() || matches!(b[start - 1], b'_' | b'.' | b'-'))
    {
        start -= 1;
    }
    let name = &b[start..end];
    has_stem_trigram(name)
        || (b[sep] == b'='
            && (QUERY_SUFFIXES
                .iter()
                .any(|q| ends_with_ignore_case(name, q))
                // An HTML `name=` attribute (any case; `\nname=` in a JSON string): the
                // name/value detector's value may come before or after it.
                || ends_with_ignore_case(name, b"name")))
}

/// True when `name` contains the first three letters of a key/value stem (case-insensitive):
/// a necessary condition for the name to be a secret's name.
pub(crate) fn has_stem_trigram(name: &[u8]) -> bool {
    let set = &*STEM_TRIGRAMS;
    name.windows(3).any(|w| set.contains(w))
}

fn ends_with_ignore_case(name: &[u8], suffix: &[u8]) -> bool {
    name.len() >= suffix.len()
        && name[name.len() - suffix.len()..]
            .iter()
            .zip(suffix)
            .all(|(a, b)| a.to_ascii_lowercase() == *b)
}

/// The first three bytes of every [`NAME_STEMS`] entry, as a bitset over case-folded trigrams:
/// a name contains a stem only if it contains one of these (an over-approximation is fine for
/// a pre-filter, and a table lookup per byte is far cheaper than comparing every stem).
static STEM_TRIGRAMS: LazyLock<TrigramSet> = LazyLock::new(|| {
    let mut set = TrigramSet {
        bits: vec![0u64; TrigramSet::SIZE / 64],
    };
    for stem in NAME_STEMS {
        if let [a, b, c, ..] = stem {
            set.insert([*a, *b, *c]);
        }
    }
    set
});

struct TrigramSet {
    bits: Vec<u64>,
}

impl TrigramSet {
    /// 32 symbols per byte (letters case-folded, digits and everything else share slots).
    const SIZE: usize = 32 * 32 * 32;

    fn symbol(b: u8) -> usize {
        match b {
            b'a'..=b'z' => usize::from(b - b'a'),
            b'A'..=b'Z' => usize::from(b - b'A'),
            b'0'..=b'9' => 26 + usize::from(b - b'0') % 5,
            _ => 31,
        }
    }

    fn index(w: &[u8]) -> usize {
        match w {
            [a, b, c, ..] => Self::symbol(*a) << 10 | Self::symbol(*b) << 5 | Self::symbol(*c),
            _ => 0,
        }
    }

    fn insert(&mut self, w: [u8; 3]) {
        let i = Self::index(&w);
        if let Some(word) = self.bits.get_mut(i / 64) {
            *word |= 1 << (i % 64);
        }
    }

    fn contains(&self, w: &[u8]) -> bool {
        let i = Self::index(w);
        self.bits
            .get(i / 64)
            .is_some_and(|word| word & (1 << (i % 64)) != 0)
    }
}

/// Some `//…@`: an `@` (rare in console text, found with `memchr`) whose run of userinfo
/// characters (the detector's class: no blank, `/`, `?`, `#`, quote, `<`, `>`, `\`) starts
/// right after `//` and is not empty.
fn has_userinfo(b: &[u8]) -> bool {
    let userinfo_byte = |c: u8| {
        !c.is_ascii_whitespace()
            && !matches!(c, b'/' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>' | b'\\')
    };
    AT_SIGN.find_iter(b).any(|m| {
        let at = m.start();
        let mut start = at;
        while start > 0 && userinfo_byte(b[start - 1]) {
            start -= 1;
        }
        start < at && start >= 2 && &b[start - 2..start] == b"//"
    })
}

/// `@`, searched with aho-corasick's single-byte (`memchr`) path.
static AT_SIGN: LazyLock<AhoCorasick> =
    LazyLock::new(|| AhoCorasick::new(["@"]).expect("one literal compiles"));

/// True when `b` holds a run of at least 32 bytes of `[0-9A-Fa-f-]`: every CDP id (32 hex
/// digits, or a 36-byte UUID) is one. Strides 32 bytes at a time: a run of 32 must cover the
/// probed byte, so a probe outside the class skips the whole window.
fn has_id_candidate(b: &[u8]) -> bool {
    const RUN: usize = 32;
    let in_class = |c: u8| c.is_ascii_hexdigit() || c == b'-';
    let mut probe = RUN - 1;
    while probe < b.len() {
        if !in_class(b[probe]) {
            probe += RUN;
            continue;
        }
        // Measure the run around the probe.
        let mut start = probe;
        while start > 0 && in_class(b[start - 1]) {
            start -= 1;
        }
        let mut end = probe + 1;
        while end < b.len() && in_class(b[end]) {
            end += 1;
        }
        if end - start >= RUN {
            return true;
        }
        probe = end + RUN;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{find_at, Parts};

    #[test]
    fn prefilter_passes_what_detectors_need() {
        for clean in [
            "GET /index.html 200 OK in 12ms",
            "GET https://example.com/a?b=c 404 (Not Found)",
            "A cookie associated with a cross-site resource",
            "Each child should have a unique \"key\" prop.",
            "Basic",
            "mapping the typing pass",
            "Failed to load resource: the server responded with a status of 404 (Not Found)",
            "Uncaught TypeError: Cannot read properties of undefined (reading 'map')",
            "    at App (https://shop.example.com/static/js/main.4f9a1c2e.js:2:14523)",
            r#"{"level":"info","time":"2024-05-01T12:00:03.120Z","msg":"done","status":200}"#,
            "Access to fetch at 'https://api.example.com/v1/cart' from origin 'https://shop.example.com' has been blocked by CORS policy: No 'Access-Control-Allow-Origin' header is present.",
            "Warning: Each child in a list should have a unique \"key\" prop.",
            "[Violation] 'requestAnimationFrame' handler took 62ms",
        ] {
            assert!(!may_match(clean), "{clean}");
        }
        for dirty in [
            "password=x",
            "\"password\": \"x\"",
            "{\\\"token\\\":1}",
            "Token abc",
            "https://u:p@h/",
            "?code=1",
            "x-----BEGIN ",
        ] {
            assert!(may_match(dirty), "{dirty}");
        }
        assert!(may_match("Authorization: Bearer x"));
        assert!(may_match("id 8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1"));
        assert!(may_match("browser 3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44"));
        assert!(may_match("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"));
    }

    use proptest::prelude::*;

    proptest! {
        /// The pre-filter is sound: whenever it says "nothing here", no detector matches.
        #[test]
        fn prefilter_never_hides_a_match(parts in proptest::collection::vec(
            prop_oneof![
                proptest::sample::select(vec![
                    "password", "Token", "token", "Bearer", "basic", "sid", "PHPSESSID", "otp",
                    "api_key", "code", "state", "sig", "nonce", "secret", "x-Auth", "eyJhbGciOi",
                    "ewogICJh", "://", "//", "https://", "@", "/devtools/page/", "-----BEGIN ",
                    "\"name\":\"sid\",", "\"value\":", "name=\"csrf\"", " value=", "content=",
                    "NaMe=", " name=", "VALUE=", "&quot;", "\\\"", "_csrf", "authenticity_token",
                    "PRIVATE KEY-----", "ghp_", "AKIA", "sk-", "=", ":", "=>", "\"", "'", "\\",
                    " ", "\t", "\n", "?", "&", "#", ";", ".", "-", "_", "abc", "é", "\u{a0}",
                ]).prop_map(str::to_owned),
                "[0-9a-fA-F-]{1,40}",
                "[a-zA-Z0-9+/=_.-]{1,30}",
            ],
            0..12,
        )) {
            let text: String = parts.concat();
            if !may_match(&text) {
                // Every hit, not only the first: a trigger that turns out to be nothing
                // (`Parts::NoMatch`) is not a match, but a real one may follow it.
                let mut pos = 0;
                while let Some(hit) = find_at(&text, pos) {
                    prop_assert!(hit.parts == Parts::NoMatch, "missed: {:?}", text);
                    pos = hit.start + 1;
                    while pos < text.len() && !text.is_char_boundary(pos) {
                        pos += 1;
                    }
                }
            }
        }
    }
}
