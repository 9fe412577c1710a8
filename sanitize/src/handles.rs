//! Stable per-run handles for CDP ids, and the spans of text this crate itself emitted.
//!
//! A target id is the capability to drive a page, so it never reaches disk; a handle stands in
//! for it. Handles come from SipHash keyed with a random per-`Sanitizer` key (std's
//! `RandomState`): the same id gives the same handle within one run, so correlation survives,
//! while a handle cannot be reversed or matched against a guess without the key, and two runs
//! give unrelated handles.

use crate::rules::Rule;
use regex::Regex;
use std::hash::{BuildHasher, RandomState};
use std::sync::LazyLock;

/// The prefix of every handle.
pub(crate) const HANDLE_PREFIX: &str = "target:";

/// Hex digits in a handle: 48 bits, plenty for the ids of one run.
const HANDLE_HEX: usize = 12;

/// Keyed hashing of CDP ids into handles.
pub(crate) struct Handles {
    key: RandomState,
}

impl Handles {
    pub(crate) fn new() -> Handles {
        Handles {
            key: RandomState::new(),
        }
    }

    /// `target:<12 hex>` for `id`. Ids are compared case-insensitively (Chromium prints them in
    /// upper case, some clients lower-case them); an existing handle is returned unchanged.
    pub(crate) fn handle(&self, id: &str) -> String {
        let id = id.trim();
        if is_handle(id) {
            return id.to_owned();
        }
        let h = self.key.hash_one(id.to_ascii_uppercase());
        format!("{HANDLE_PREFIX}{:0width$x}", h >> 16, width = HANDLE_HEX)
    }
}

/// True when `s` is exactly a handle.
pub(crate) fn is_handle(s: &str) -> bool {
    s.strip_prefix(HANDLE_PREFIX).is_some_and(|hex| {
        hex.len() == HANDLE_HEX && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The truncation marker's text for `dropped` characters.
pub(crate) fn truncation_marker(dropped: usize) -> String {
    format!("…[truncated {dropped} chars]")
}

/// Text this crate emits and must never alter again: `${NAME}` placeholders, rule markers
/// (the closed set of rule names), handles, and a truncation marker at the very end.
static PROTECTED: LazyLock<Regex> = LazyLock::new(|| {
    let markers: Vec<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
    let pattern = format!(
        r"\$\{{(?P<name>[A-Z_][A-Z0-9_]*)\}}|\[redacted:(?:{})\]|(?-u:\b){HANDLE_PREFIX}[0-9a-f]{{{HANDLE_HEX}}}(?-u:\b)|…\[truncated [0-9]+ chars\]\z",
        markers.join("|")
    );
    // Built from constants; a failure is a bug in this file, caught by every test.
    Regex::new(&pattern).expect("the protected-span pattern compiles")
});

/// Byte spans of protected text in `text`, in order. `is_name` decides which `${NAME}` count:
/// the secrets pass protects only registered names (so a literal hidden in `${…}` is still
/// found), the rules pass protects every placeholder-shaped span.
pub(crate) fn protected_spans(text: &str, is_name: &dyn Fn(&str) -> bool) -> Vec<(usize, usize)> {
    PROTECTED
        .captures_iter(text)
        .filter(|c| c.name("name").is_none_or(|n| is_name(n.as_str())))
        .filter_map(|c| c.get(0).map(|m| (m.start(), m.end())))
        .collect()
}

/// True when `s` is exactly one placeholder, marker or handle (already safe, nothing to redact).
pub(crate) fn is_protected(s: &str) -> bool {
    PROTECTED
        .find(s)
        .is_some_and(|m| m.start() == 0 && m.end() == s.len())
}

/// The end of a trailing truncation marker's prefix, when `text` ends with one.
pub(crate) fn truncated_prefix_len(text: &str) -> Option<usize> {
    if !text.ends_with(" chars]") {
        return None;
    }
    let start = text.rfind("…[truncated ")?;
    is_protected(&text[start..]).then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_id_same_handle_within_a_run_different_across_runs() {
        let a = Handles::new();
        let b = Handles::new();
        let id = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";
        assert_eq!(a.handle(id), a.handle(id));
        assert_eq!(a.handle(id), a.handle(&id.to_ascii_lowercase()));
        assert_ne!(a.handle(id), b.handle(id));
        assert_ne!(a.handle(id), a.handle("8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B2"));
        let h = a.handle(id);
        assert!(is_handle(&h), "{h}");
        assert!(!h.contains("8E5B"));
        assert_eq!(a.handle(&h), h, "handles are fixed points");
    }

    #[test]
    fn protected_spans_cover_what_we_emit() {
        let text =
            "a ${PASSWORD} b [redacted:jwt] c target:0123456789ab d [redacted:nope] ${lower}";
        let spans = protected_spans(text, &|_| true);
        let got: Vec<&str> = spans.iter().map(|&(s, e)| &text[s..e]).collect();
        assert_eq!(
            got,
            ["${PASSWORD}", "[redacted:jwt]", "target:0123456789ab"]
        );
        assert!(protected_spans(text, &|n| n != "PASSWORD").len() == 2);
        assert!(is_protected("[redacted:cookie]"));
        assert!(!is_protected("[redacted:cookie] "));
        assert_eq!(truncated_prefix_len("abc…[truncated 12 chars]"), Some(3));
        assert_eq!(truncated_prefix_len("abc…[truncated 12 chars] x"), None);
    }
}
