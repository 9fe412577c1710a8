//! What the agent reads back, parameterized: every value the agent must not see (a `${NAME}`
//! variable's, a literal it named with `recordAs`) is replaced by `${NAME}` in everything the
//! gateway sends it — results, errors, notifications, the wrapped server's stderr — in every
//! spelling `spellings.rs` lists.
//!
//! One automaton (aho-corasick, leftmost-longest) over the few values × their spellings, rebuilt
//! when a value is added: one pass, the longest spelling at the leftmost position wins, text
//! already replaced is never looked at again, and a `${NAME}` of a known name already in the
//! text is left whole (a value that holds `NAME}` cannot cut it). A serialized JSON-RPC message
//! is first scanned as it is, for the JSON-escaped spellings: most messages hold none and go out
//! untouched, byte for byte; one that does is rewritten string by string, keys included, so the
//! JSON stays valid.
//!
//! Values shorter than [`cdp_sanitize::MIN_SECRET_CHARS`] non-blank characters are not
//! rewritten (they occur inside ordinary words). Memory only; `Debug` prints counts.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use cdp_capture::SecretValue;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, PoisonError, RwLock};

/// Replaces known values with their `${NAME}` (see the module docs). Cheap to share.
#[derive(Default)]
pub struct Rewriter {
    table: RwLock<Arc<Table>>,
}

impl std::fmt::Debug for Rewriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = self.table();
        f.debug_struct("Rewriter")
            .field("values", &t.values.len())
            .field("spellings", &t.pattern_names.len())
            .finish()
    }
}

#[derive(Default)]
struct Table {
    /// (value, name), in the order added: the first name added for a value keeps it.
    values: Vec<(SecretValue, String)>,
    /// The names, for the placeholders left whole.
    names: HashSet<String>,
    /// Every spelling of every value (`None` when there is none).
    spelled: Option<AhoCorasick>,
    /// The same spellings JSON-escaped: a serialized message holds one of these if any of its
    /// strings holds a spelling.
    serialized: Option<AhoCorasick>,
    /// Pattern → index into `values`.
    pattern_names: Vec<usize>,
}

/// What adding a value did.
#[derive(Debug, PartialEq, Eq)]
pub enum Added {
    /// It is rewritten from now on.
    New,
    /// It was already known, under this name (the first wins).
    Known(String),
    /// Too short to rewrite.
    TooShort,
}

fn non_blank(s: &str) -> usize {
    s.chars().filter(|c| !c.is_whitespace()).count()
}

impl Table {
    fn build(values: Vec<(SecretValue, String)>) -> Table {
        let mut seen = HashSet::new();
        let mut patterns = Vec::new();
        let mut pattern_names = Vec::new();
        for (i, (value, _)) in values.iter().enumerate() {
            for s in super::spellings::spellings(value.expose()) {
                // Two values spelled alike: the first keeps the spelling.
                if seen.insert(s.clone()) {
                    patterns.push(s);
                    pattern_names.push(i);
                }
            }
        }
        let automaton = |patterns: &[String], kind| {
            (!patterns.is_empty())
                .then(|| {
                    AhoCorasickBuilder::new()
                        .match_kind(kind)
                        .build(patterns)
                        .ok()
                })
                .flatten()
        };
        let escaped: Vec<String> = patterns.iter().map(|p| super::spellings::json(p)).collect();
        Table {
            names: values.iter().map(|(_, n)| n.clone()).collect(),
            spelled: automaton(&patterns, MatchKind::LeftmostLongest),
            serialized: automaton(&escaped, MatchKind::Standard),
            pattern_names,
            values,
        }
    }

    /// `s` rewritten, or `None` when nothing in it is rewritten.
    fn text(&self, s: &str) -> Option<String> {
        let ac = self.spelled.as_ref()?;
        if !ac.is_match(s) {
            return None;
        }
        let kept = self.placeholders(s);
        let mut out = String::with_capacity(s.len());
        let (mut copied, mut gap_start, mut replaced) = (0, 0, false);
        for (kept_start, kept_end) in kept.into_iter().chain(std::iter::once((s.len(), s.len()))) {
            // A match never runs into the placeholder that ends the gap.
            for m in ac.find_iter(&s[gap_start..kept_start]) {
                let name = &self.values[self.pattern_names[m.pattern().as_usize()]].1;
                out.push_str(&s[copied..gap_start + m.start()]);
                out.push_str("${");
                out.push_str(name);
                out.push('}');
                copied = gap_start + m.end();
                replaced = true;
            }
            gap_start = kept_end;
        }
        out.push_str(&s[copied..]);
        replaced.then_some(out)
    }

    /// Where `s` holds `${NAME}` of a known name: left whole.
    fn placeholders(&self, s: &str) -> Vec<(usize, usize)> {
        s.match_indices("${")
            .filter_map(|(i, _)| {
                let rest = &s[i + 2..];
                let end = rest.find('}')?;
                self.names
                    .contains(&rest[..end])
                    .then_some((i, i + 2 + end + 1))
            })
            .collect()
    }

    /// Rewrites every string (and key) of `v`; true when anything changed.
    fn value(&self, v: &mut Value) -> bool {
        match v {
            Value::String(s) => match self.text(s) {
                Some(new) => {
                    *s = new;
                    true
                }
                None => false,
            },
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, item| self.value(item) | changed),
            Value::Object(map) => {
                let keys = map.keys().any(|k| self.text(k).is_some());
                let mut changed = false;
                if keys {
                    let old = std::mem::take(map);
                    for (k, val) in old {
                        map.insert(self.text(&k).unwrap_or(k), val);
                    }
                    changed = true;
                }
                map.values_mut()
                    .fold(changed, |changed, item| self.value(item) | changed)
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }
}

impl Rewriter {
    /// A rewriter that knows no value yet.
    pub fn new() -> Rewriter {
        Rewriter::default()
    }

    fn table(&self) -> Arc<Table> {
        self.table
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// From now on `value` (in every spelling) reads `${name}`, unless it is too short or
    /// already known (the first name keeps it).
    pub fn add(&self, name: &str, value: &str) -> Added {
        if non_blank(value) < cdp_sanitize::MIN_SECRET_CHARS {
            return Added::TooShort;
        }
        let mut guard = self.table.write().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, first)) = guard.values.iter().find(|(v, _)| v.expose() == value) {
            return Added::Known(first.clone());
        }
        let mut values = guard.values.clone();
        values.push((SecretValue::new(value.to_owned()), name.to_owned()));
        // Built outside nothing: the table is small (a few values × about twenty spellings).
        *guard = Arc::new(Table::build(values));
        Added::New
    }

    /// Nothing to rewrite.
    pub fn is_empty(&self) -> bool {
        self.table().values.is_empty()
    }

    /// `s` with every known value replaced.
    pub fn text<'a>(&self, s: &'a str) -> Cow<'a, str> {
        match self.table().text(s) {
            Some(new) => Cow::Owned(new),
            None => Cow::Borrowed(s),
        }
    }

    /// A serialized JSON message (one line, without its newline) with every known value
    /// replaced in its strings; `None` when it holds none (send it as it is).
    pub fn json_line(&self, line: &[u8]) -> Option<Vec<u8>> {
        let t = self.table();
        let ac = t.serialized.as_ref()?;
        if !ac.is_match(line) {
            return None;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(mut v) => {
                if !t.value(&mut v) {
                    return None;
                }
                serde_json::to_vec(&v).ok()
            }
            // Not JSON after all (never what the gateway serializes): the text as text. The
            // placeholder holds no JSON syntax, so what was valid stays valid.
            Err(_) => {
                let text = String::from_utf8_lossy(line);
                t.text(&text).map(String::into_bytes)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        /// Any value (without the placeholder's own characters), in any of its spellings,
        /// anywhere in any text, JSON or not: never left in what comes out, never a panic.
        #[test]
        fn no_spelling_of_a_value_survives(
            value in "[^${}]{4,24}",
            before in any::<String>(),
            after in any::<String>(),
            pick in any::<prop::sample::Index>(),
        ) {
            prop_assume!(value.chars().filter(|c| !c.is_whitespace()).count() >= 4);
            let r = Rewriter::new();
            prop_assert_eq!(r.add("VALUE", &value), Added::New);
            let all = crate::spellings::spellings(&value);
            let spelled = pick.get(&all);
            let text = format!("{before}{spelled}{after}");
            let out = r.text(&text).into_owned();
            prop_assert!(out.contains("${VALUE}"), "{:?}", out);
            prop_assert!(!out.contains(value.as_str()), "{:?} in {:?}", value, out);
            let line = serde_json::to_vec(&json!({"t": text, "k": [before, after]})).unwrap();
            let rewritten = r.json_line(&line).expect("rewritten");
            let v: Value = serde_json::from_slice(&rewritten).expect("still JSON");
            prop_assert!(!v["t"].as_str().unwrap().contains(value.as_str()));
            // Arbitrary bytes: no panic.
            let _ = r.json_line(&text.into_bytes());
        }
    }

    fn rw(pairs: &[(&str, &str)]) -> Rewriter {
        let r = Rewriter::new();
        for (name, value) in pairs {
            r.add(name, value);
        }
        r
    }

    #[test]
    fn every_spelling_becomes_the_placeholder_longest_first_in_one_pass() {
        let r = rw(&[("PASSWORD", "Pw&<7\"Zq!x9'K d"), ("SHORT_PW", "Pw&<7")]);
        let text = concat!(
            "fill('Pw&<7\"Zq!x9\\'K d') ",
            "{\"v\":\"Pw&<7\\\"Zq!x9'K d\"} ",
            "?pw=Pw%26%3C7%22Zq!x9'K%20d&f=Pw%26%3C7%22Zq%21x9%27K+d ",
            "<b title=\"Pw&amp;&lt;7&quot;Zq!x9'K d\">Pw&amp;&lt;7\"Zq!x9'K d</b> ",
            "data-b64=UHcmPDciWnEheDknSyBk ",
            "short Pw&<7 only"
        );
        let out = r.text(text);
        assert_eq!(
            out,
            concat!(
                "fill('${PASSWORD}') {\"v\":\"${PASSWORD}\"} ",
                "?pw=${PASSWORD}&f=${PASSWORD} ",
                "<b title=\"${PASSWORD}\">${PASSWORD}</b> data-b64=${PASSWORD} ",
                "short ${SHORT_PW} only"
            )
        );
    }

    #[test]
    fn placeholders_already_there_are_left_whole_and_the_first_name_wins() {
        let r = rw(&[
            ("A", "RD}x-val"),
            ("B", "shared-value"),
            ("C", "shared-value"),
        ]);
        assert_eq!(r.text("${PASSWORD}"), "${PASSWORD}");
        // `${A}` already written is not cut by a value that ends like it.
        let r2 = rw(&[("A", "abcd"), ("X", "A}abcd")]);
        assert_eq!(r2.text("${A}abcd"), "${A}${A}");
        assert_eq!(r.text("shared-value"), "${B}");
        assert_eq!(r.add("D", "shared-value"), Added::Known("B".into()));
        assert_eq!(r.add("E", "abc"), Added::TooShort);
        assert_eq!(r.add("E", " a b c "), Added::TooShort);
        assert_eq!(r.text("abc"), "abc");
        // Nothing known: nothing changes, nothing is copied.
        assert!(matches!(Rewriter::new().text("anything"), Cow::Borrowed(_)));
        assert!(matches!(r.text("no value here"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_messages_are_rewritten_string_by_string_or_left_byte_for_byte() {
        let r = rw(&[("ACCOUNT_ID", "AC 5589\"&Ry"), ("MEMO", "memo\\line")]);
        let untouched =
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"nothing"}]}}"#;
        assert_eq!(r.json_line(untouched), None);
        let msg = json!({
            "jsonrpc": "2.0",
            "id": 7,
            "result": {
                "content": [
                    {"type": "text", "text": "Account: AC 5589\"&Ry; as JSON: {\"a\":\"AC 5589\\\"&Ry\"}"},
                    {"type": "resource", "resource": {"uri": "x", "text": "memo\\line"}}
                ],
                "structuredContent": {"AC 5589\"&Ry": [1, "QUMgNTU4OSImUnk="]},
                "_meta": {"echo": "AC+5589%22%26Ry"}
            }
        });
        let line = serde_json::to_vec(&msg).unwrap();
        let out = r.json_line(&line).expect("rewritten");
        let text = String::from_utf8(out.clone()).unwrap();
        for leak in ["AC 5589", "AC+5589", "QUMgNTU4OSIm", "memo\\\\line"] {
            assert!(!text.contains(leak), "{leak} in {text}");
        }
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v["result"]["content"][0]["text"],
            "Account: ${ACCOUNT_ID}; as JSON: {\"a\":\"${ACCOUNT_ID}\"}"
        );
        assert_eq!(v["result"]["content"][1]["resource"]["text"], "${MEMO}");
        assert_eq!(
            v["result"]["structuredContent"]["${ACCOUNT_ID}"],
            json!([1, "${ACCOUNT_ID}"])
        );
        assert_eq!(v["result"]["_meta"]["echo"], "${ACCOUNT_ID}");
        assert_eq!(v["id"], 7);
        // Not JSON (never what the gateway writes): rewritten as text all the same.
        let broken = r.json_line(b"{\"text\":\"AC 5589\\\"&Ry").unwrap();
        assert_eq!(broken, b"{\"text\":\"${ACCOUNT_ID}");
    }
}
