//! The explicit secrets registry (DESIGN §5): literals registered under names, replaced by
//! `${NAME}` in one left-to-right pass.
//!
//! - One pass, leftmost-longest among the registered literals (aho-corasick), so a literal that
//!   is a prefix of another is never partially consumed.
//! - Emitted placeholders are never rescanned, and an existing `${NAME}` of a registered name,
//!   a rule marker or a handle is skipped whole, so a placeholder is never corrupted and running
//!   the pass twice changes nothing.
//! - Names follow `[A-Z_][A-Z0-9_]*`; empty or whitespace-only literals are not registered; the
//!   first name registered for a literal wins.
//! - Each literal is also matched in its JSON-escaped and URL-encoded spellings, which is how it
//!   shows up inside logged JSON and query strings.
//! - Memory only: nothing here is `Serialize`, and `Debug` prints counts, never literals.

use crate::handles::protected_spans;
use crate::SecretError;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Prefix of the names `register_typed` generates.
const TYPED_PREFIX: &str = "TYPED_";

/// Minimum non-whitespace characters for a typed literal to be worth protecting: shorter
/// strings ("a", "ok") would mask ordinary text everywhere.
pub(crate) const MIN_TYPED_CHARS: usize = 4;

/// Registered literals and the automaton that finds them.
#[derive(Default)]
pub(crate) struct Registry {
    /// Names in registration order; placeholders are `${names[i]}`.
    names: Vec<String>,
    /// Replacements made per name (summary); indexed like `names`.
    counts: Vec<AtomicU64>,
    /// Every spelling (literal and its encodings) → name index. First registration wins.
    spellings: HashMap<String, usize>,
    /// Name → index, for placeholder protection.
    by_name: HashMap<String, usize>,
    /// Pattern id → name index, parallel to the automaton's patterns.
    pattern_names: Vec<usize>,
    automaton: Option<AhoCorasick>,
    /// Length in bytes of the longest spelling.
    max_len: usize,
    /// Next `TYPED_<n>`.
    typed_next: u64,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("names", &self.names.len())
            .field("spellings", &self.spellings.len())
            .finish_non_exhaustive()
    }
}

/// True for `[A-Z_][A-Z0-9_]*`.
pub(crate) fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b == b'_' || b.is_ascii_uppercase())
        && bytes.all(|b| b == b'_' || b.is_ascii_uppercase() || b.is_ascii_digit())
}

impl Registry {
    /// Registers `literal` under `name`. `Ok(false)` when nothing was registered: the literal
    /// is empty or whitespace-only, or already registered (under any name).
    pub(crate) fn register(&mut self, name: &str, literal: &str) -> Result<bool, SecretError> {
        if !is_valid_name(name) {
            return Err(SecretError::InvalidName {
                name: name.chars().take(64).collect(),
            });
        }
        if literal.trim().is_empty() || self.spellings.contains_key(literal) {
            return Ok(false);
        }
        let index = match self.by_name.get(name) {
            Some(&i) => i,
            None => {
                self.names.push(name.to_owned());
                self.counts.push(AtomicU64::new(0));
                self.by_name.insert(name.to_owned(), self.names.len() - 1);
                self.names.len() - 1
            }
        };
        for spelling in spellings(literal) {
            self.spellings.entry(spelling).or_insert(index);
        }
        self.rebuild();
        Ok(true)
    }

    /// Registers a typed literal under the next `TYPED_<n>`; returns the name it is registered
    /// under (the existing one if the literal was already known), or `None` if too short.
    pub(crate) fn register_typed(&mut self, literal: &str) -> Option<String> {
        if literal.chars().filter(|c| !c.is_whitespace()).count() < MIN_TYPED_CHARS {
            return None;
        }
        if let Some(&i) = self.spellings.get(literal) {
            return self.names.get(i).cloned();
        }
        loop {
            self.typed_next += 1;
            let name = format!("{TYPED_PREFIX}{}", self.typed_next);
            if self.by_name.contains_key(&name) {
                continue; // a caller chose this name explicitly; never merge into it
            }
            return match self.register(&name, literal) {
                Ok(true) => Some(name),
                Ok(false) | Err(_) => None,
            };
        }
    }

    fn rebuild(&mut self) {
        let mut patterns: Vec<(&String, usize)> =
            self.spellings.iter().map(|(s, &i)| (s, i)).collect();
        // Deterministic pattern order; leftmost-longest makes the order irrelevant to results.
        patterns.sort_unstable();
        self.pattern_names = patterns.iter().map(|&(_, i)| i).collect();
        self.max_len = patterns.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
        self.automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(patterns.iter().map(|(s, _)| s.as_str()))
            .ok();
    }

    /// True when no literal is registered.
    pub(crate) fn is_empty(&self) -> bool {
        self.automaton.is_none()
    }

    /// Length in bytes of the longest registered spelling (0 when empty).
    pub(crate) fn max_len(&self) -> usize {
        self.max_len
    }

    /// Replacements per name, for the summary.
    pub(crate) fn counts(&self) -> impl Iterator<Item = (&str, u64)> {
        self.names
            .iter()
            .zip(&self.counts)
            .map(|(n, c)| (n.as_str(), c.load(Ordering::Relaxed)))
    }

    /// Replaces every registered literal in `text` by `${NAME}`, one pass, leftmost-longest,
    /// skipping protected spans. Returns the text unchanged (borrowed) when nothing matched.
    pub(crate) fn replace<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(ac) = &self.automaton else {
            return Cow::Borrowed(text);
        };
        if !ac.is_match(text) {
            return Cow::Borrowed(text);
        }
        let spans = protected_spans(text, &|n| self.by_name.contains_key(n));
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut gap_start = 0;
        let gaps = spans
            .iter()
            .map(|&(s, e)| (s, e))
            .chain(std::iter::once((text.len(), text.len())));
        for (span_start, span_end) in gaps {
            let gap = &text[gap_start..span_start];
            for m in ac.find_iter(gap) {
                let (start, end) = (gap_start + m.start(), gap_start + m.end());
                let Some(&index) = self.pattern_names.get(m.pattern().as_usize()) else {
                    continue;
                };
                let Some(name) = self.names.get(index) else {
                    continue;
                };
                out.push_str(&text[copied..start]);
                // `${` + `${NAME}` would read as a nested placeholder: the unclosed `${…` goes
                // with the literal (dropping text, unlike inserting some, cannot create a new
                // occurrence of another literal).
                out.truncate(unclosed_placeholder_start(&out));
                out.push_str("${");
                out.push_str(name);
                out.push('}');
                copied = end;
                if let Some(c) = self.counts.get(index) {
                    c.fetch_add(1, Ordering::Relaxed);
                }
            }
            gap_start = span_end;
        }
        if copied == 0 {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }
}

/// Where a trailing unclosed `${NAME…` starts in `s` (`s.len()` when there is none).
fn unclosed_placeholder_start(s: &str) -> usize {
    let trimmed =
        s.trim_end_matches(|c: char| c == '_' || c.is_ascii_uppercase() || c.is_ascii_digit());
    match trimmed.strip_suffix("${") {
        Some(before) => before.len(),
        None => s.len(),
    }
}

/// The literal and the other spellings it takes in logs: JSON-escaped (inside a logged JSON
/// string) and URL-encoded (in a query string or form body, with `%20` and `+` for spaces).
fn spellings(literal: &str) -> Vec<String> {
    let mut out = vec![literal.to_owned()];
    if let Ok(json) = serde_json::to_string(literal) {
        let inner = &json[1..json.len() - 1];
        out.push(inner.to_owned());
    }
    let form: String = url::form_urlencoded::byte_serialize(literal.as_bytes()).collect();
    out.push(form.replace('+', "%20"));
    out.push(form);
    out.sort_unstable();
    out.dedup();
    out.retain(|s| !s.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(pairs: &[(&str, &str)]) -> Registry {
        let mut r = Registry::default();
        for (n, l) in pairs {
            r.register(n, l).expect("valid name");
        }
        r
    }

    #[test]
    fn names_are_validated() {
        let mut r = Registry::default();
        assert!(r.register("PASSWORD", "x").is_ok());
        assert!(r.register("_X9", "y").is_ok());
        for bad in ["", "password", "9X", "A-B", "A B", "É"] {
            assert!(r.register(bad, "z").is_err(), "{bad}");
        }
    }

    #[test]
    fn empty_and_duplicate_literals_are_not_registered() {
        let mut r = Registry::default();
        assert_eq!(r.register("A", ""), Ok(false));
        assert_eq!(r.register("A", " \t\n"), Ok(false));
        assert!(r.is_empty());
        assert_eq!(r.register("A", "hunter2"), Ok(true));
        assert_eq!(r.register("B", "hunter2"), Ok(false), "first name wins");
        assert_eq!(r.replace("pw hunter2"), "pw ${A}");
    }

    #[test]
    fn leftmost_longest_and_no_rescan() {
        let r = reg(&[("SHORT", "abc"), ("LONG", "abcdef"), ("D", "def")]);
        assert_eq!(r.replace("xabcdefx abcx defx"), "x${LONG}x ${SHORT}x ${D}x");
        // A literal inside a placeholder name is never touched.
        let r = reg(&[("PASSWORD", "p4ss"), ("W", "WORD")]);
        assert_eq!(r.replace("p4ss"), "${PASSWORD}");
        assert_eq!(r.replace("${PASSWORD} WORD"), "${PASSWORD} ${W}");
    }

    #[test]
    fn idempotent_and_never_nested() {
        let r = reg(&[("A", "SECRETX"), ("B", "x")]);
        let once = r.replace("${SECRETX} and x");
        assert_eq!(once, "${A}} and ${B}");
        assert_eq!(r.replace(&once), once);
        assert!(!once.contains("${${"));
    }

    #[test]
    fn encoded_spellings_are_found() {
        let r = reg(&[("PW", "p@ss \"word\"")]);
        assert_eq!(r.replace(r#"{"pw":"p@ss \"word\""}"#), r#"{"pw":"${PW}"}"#);
        assert_eq!(r.replace("?pw=p%40ss+%22word%22&x"), "?pw=${PW}&x");
        assert_eq!(r.replace("?pw=p%40ss%20%22word%22&x"), "?pw=${PW}&x");
    }

    #[test]
    fn typed_literals_get_generated_names() {
        let mut r = Registry::default();
        assert_eq!(r.register_typed("abc"), None);
        assert_eq!(r.register_typed("a b c"), None);
        assert_eq!(r.register_typed("hunter2").as_deref(), Some("TYPED_1"));
        assert_eq!(r.register_typed("hunter2").as_deref(), Some("TYPED_1"));
        r.register("TYPED_2", "chosen").expect("valid");
        assert_eq!(r.register_typed("s3cr3t!").as_deref(), Some("TYPED_3"));
        assert_eq!(r.replace("hunter2 s3cr3t!"), "${TYPED_1} ${TYPED_3}");
    }

    #[test]
    fn debug_never_prints_literals() {
        let r = reg(&[("PW", "hunter2")]);
        let dbg = format!("{r:?}");
        assert!(!dbg.contains("hunter2"), "{dbg}");
    }
}
