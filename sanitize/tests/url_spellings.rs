//! Issue 38, item 2, as a property: any value, registered as a secret and, separately, typed,
//! written into a URL the way any URL writer writes it, embedded anywhere in the path or the
//! query, is masked whole by every public entry point that sees URLs.
//!
//! - **Values:** at least four non-whitespace characters of arbitrary Unicode, weighted towards
//!   the characters URL writers disagree about (`!'()~*`, `@:,;=&+$/?#`, `%`, quotes, spaces).
//!   No marker syntax (`${`, `[redacted`, `target:`): a value holding one cannot be told from
//!   the sanitizer's own output.
//! - **Spellings:** `encodeURIComponent`'s set (raw `A-Za-z0-9-_.!~*'()`), `encodeURI`'s (also
//!   `;,/?:@&=+$#`), the WHATWG path percent-encode set (what Chromium leaves raw in a path), the
//!   query set, and the form set (`*-._` raw, a space as `+`). Every other character is
//!   percent-encoded as its UTF-8 bytes; each escape's hex is upper- or lower-case at random,
//!   and a character a set leaves raw is escaped anyway at random. In a path, `/` and `\` are
//!   always escaped: raw, they make segments the URL parser rewrites (`..` is resolved, `\`
//!   becomes `/`), which is the value transformed, not spelled.
//! - **Embedding:** `https://app.test/<text><value><text>[?…]` or
//!   `https://app.test/<path>?<params><text><value><text>[&…|#…]`, the surrounding text random
//!   (letters, digits, `_~-`, `%XX`, `/` between path segments: never `//`, which reads as an
//!   authority with userinfo to the text rules).
//! - **Entry points:** [`Sanitizer::url`], [`Sanitizer::text`] of a console line holding the
//!   URL, [`Sanitizer::text`] of a JSON dump holding it (JSON-escaped), and the JSON walker's
//!   `url` key.
//!
//! What is asserted of each output, outside the placeholders, markers and handles the
//! sanitizer emits:
//! 1. the placeholder (`${SECRET}`, `${TYPED_1}`) is there — or, where a rule's span overlaps
//!    the value (a raw `//…@` in a query reads as userinfo), a rule's marker, which replaces the
//!    union of both (docs/security.md, *What is redacted*) — except for [`Sanitizer::url`] of a
//!    value that starts in the query (or the fragment), which it drops whole;
//! 2. neither the value as embedded, nor the value itself, nor the value in any of the five
//!    sets (no optional escapes, hex upper- and lower-case) is there;
//! 3. no head or tail of the value as embedded (its spelling from the start to a character's
//!    end, or from a character's start to the end) that carries more than three non-whitespace
//!    characters of the value is there more often than the surrounding text holds it by itself.

use cdp_sanitize::Sanitizer;
use proptest::prelude::*;
use regex::Regex;
use serde_json::json;
use std::sync::LazyLock;

/// What the sanitizer emits and never alters (as in `properties.rs`).
static PROTECTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$\{[A-Z_][A-Z0-9_]*\}|\[redacted:[a-z-]+\]|target:[0-9a-f]{12}|…\[truncated [0-9]+ chars\]")
        .expect("valid")
});

fn unprotected(s: &str) -> Vec<&str> {
    PROTECTED.split(s).collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Set {
    /// `encodeURIComponent`.
    Component,
    /// `encodeURI`.
    Uri,
    /// The WHATWG path percent-encode set.
    Path,
    /// The WHATWG (special-)query percent-encode set.
    Query,
    /// `application/x-www-form-urlencoded` (`URLSearchParams`).
    Form,
}

const SETS: [Set; 5] = [Set::Component, Set::Uri, Set::Path, Set::Query, Set::Form];

/// True when `set` leaves `c` raw.
fn keeps_raw(set: Set, c: char, in_path: bool) -> bool {
    if in_path && matches!(c, '/' | '\\') {
        return false;
    }
    let printable = c.is_ascii_graphic();
    match set {
        Set::Component => c.is_ascii_alphanumeric() || "-_.!~*'()".contains(c),
        Set::Uri => c.is_ascii_alphanumeric() || "-_.!~*'();,/?:@&=+$#".contains(c),
        Set::Path => printable && !"\"#<>?^`{}".contains(c),
        Set::Query => printable && !"\"#<>'".contains(c),
        Set::Form => c.is_ascii_alphanumeric() || "*-._".contains(c),
    }
}

fn escape(c: char, lower: bool) -> String {
    let mut utf8 = [0u8; 4];
    c.encode_utf8(&mut utf8)
        .bytes()
        .map(|b| {
            if lower {
                format!("%{b:02x}")
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `value` in `set`, one piece per character; `choices` decide the optional escapes (bit 0)
/// and the hex case (bit 1).
fn spell(value: &str, set: Set, in_path: bool, choices: &[u8]) -> Vec<String> {
    value
        .chars()
        .zip(choices.iter().cycle())
        .map(|(c, &choice)| {
            let lower = choice & 2 != 0;
            if keeps_raw(set, c, in_path) && choice & 1 == 0 {
                c.to_string()
            } else if set == Set::Form && c == ' ' && choice & 1 == 0 {
                "+".to_owned()
            } else {
                escape(c, lower)
            }
        })
        .collect()
}

fn non_blank(chars: &[char]) -> usize {
    chars.iter().filter(|c| !c.is_whitespace()).count()
}

/// Heads and tails of the spelled value that carry more than three non-whitespace characters.
fn heads_and_tails(value: &str, pieces: &[String]) -> Vec<String> {
    let chars: Vec<char> = value.chars().collect();
    let mut out = Vec::new();
    for k in 1..chars.len() {
        if non_blank(&chars[..k]) > 3 {
            out.push(pieces[..k].concat());
        }
        if non_blank(&chars[k..]) > 3 {
            out.push(pieces[k..].concat());
        }
    }
    out
}

/// Every spelling the output must not hold: the value itself and in each set, without
/// optional escapes, upper- and lower-case hex.
fn whole_spellings(value: &str, in_path: bool) -> Vec<String> {
    let mut out = vec![value.to_owned()];
    for set in SETS {
        for case in [0, 2] {
            out.push(spell(value, set, in_path, &[case]).concat());
        }
    }
    out
}

fn value() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-zA-Z0-9]",
        4 => proptest::sample::select(
            " !'()~*-_.@:,;=&+$/?#%[]{}\"<>\\^`|"
                .chars()
                .map(String::from)
                .collect::<Vec<_>>()
        ),
        2 => any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(piece, 4..14)
        .prop_map(|v| v.concat())
        .prop_filter("a registrable value without marker syntax", |v| {
            Sanitizer::check_secret("SECRET", v) == Ok(true)
                && !["${", "[redacted", "target:", "…[truncated"]
                    .iter()
                    .any(|m| v.contains(m))
        })
}

/// Where the value goes: in the path or in the query, with the text around it.
#[derive(Clone, Debug)]
struct Place {
    in_path: bool,
    before: String,
    after: String,
    /// The URL up to the text before the value, and after the text after it.
    head: String,
    tail: String,
}

fn place() -> impl Strategy<Value = Place> {
    let path_text = "(([a-z0-9_~-]|%[0-9A-Fa-f]{2}){1,4}/?){0,3}";
    let query_text = "([a-z0-9_~-]|%[0-9A-Fa-f]{2}){0,6}";
    prop_oneof![
        (
            path_text,
            path_text,
            proptest::option::of("[a-z]{1,4}=[0-9]{1,3}")
        )
            .prop_map(|(before, after, query)| Place {
                in_path: true,
                before,
                after,
                head: "https://app.test/".to_owned(),
                tail: query.map(|q| format!("?{q}")).unwrap_or_default(),
            }),
        (
            "[a-z/]{0,6}",
            proptest::sample::select(vec!["q=", "page=2&q=", "x=1&term=", ""]),
            query_text,
            query_text,
            proptest::sample::select(vec!["", "&lang=en", "#top"]),
        )
            .prop_map(|(path, param, before, after, rest)| Place {
                in_path: false,
                before,
                after,
                head: format!("https://app.test/{path}?{param}"),
                tail: rest.to_owned(),
            }),
    ]
}

/// How often `needle` occurs in `hay`, overlapping occurrences included.
fn count(hay: &str, needle: &str) -> usize {
    (0..hay.len())
        .filter(|&i| hay.is_char_boundary(i) && hay[i..].starts_with(needle))
        .count()
}

/// The checks 1–3 of the module doc on one output. `escaped` writes text as the entry point
/// saw it (JSON-escaped or not).
fn check(
    out: &str,
    placeholder: Option<&str>,
    forbidden: &[String],
    pieces: &[String],
    value: &str,
    place: &Place,
    escaped: &dyn Fn(&str) -> String,
) -> Result<(), TestCaseError> {
    if let Some(p) = placeholder {
        prop_assert!(
            out.contains(p) || out.contains("[redacted:"),
            "no {} in {:?}",
            p,
            out
        );
    }
    let segments = unprotected(out);
    for f in forbidden {
        let f = escaped(f);
        for seg in &segments {
            prop_assert!(!seg.contains(&f), "{:?} in {:?}", f, out);
        }
    }
    let (before, after) = (escaped(&place.before), escaped(&place.after));
    for part in heads_and_tails(value, pieces) {
        let part = escaped(&part);
        let found: usize = segments.iter().map(|s| count(s, &part)).sum();
        let around = count(&before, &part) + count(&after, &part);
        prop_assert!(
            found <= around,
            "{:?} left {} times in {:?} (the text around holds it {} times)",
            part,
            found,
            out,
            around
        );
    }
    Ok(())
}

/// Every entry point, on one sanitizer.
fn check_entry_points(
    s: &Sanitizer,
    name: &str,
    value: &str,
    pieces: &[String],
    place: &Place,
) -> Result<(), TestCaseError> {
    let spelled = pieces.concat();
    let url = format!(
        "{}{}{spelled}{}{}",
        place.head, place.before, place.after, place.tail
    );
    let placeholder = format!("${{{name}}}");
    let mut forbidden = whole_spellings(value, place.in_path);
    forbidden.push(spelled.clone());
    let plain = |t: &str| t.to_owned();
    let json_escaped = |t: &str| {
        let q = serde_json::to_string(t).expect("serializes");
        q[1..q.len() - 1].to_owned()
    };
    // The reduced URL holds the value if it starts before the query or fragment does (typed
    // text from its first non-whitespace character: leading blanks are not part of it).
    let blanks = if name.starts_with("TYPED_") {
        value.chars().take_while(|c| c.is_whitespace()).count()
    } else {
        0
    };
    let starts = place.head.len() + place.before.len() + pieces[..blanks].concat().len();
    let in_path = url.find(['?', '#']).is_none_or(|cut| cut > starts);
    let in_url = in_path.then_some(placeholder.as_str());
    let reduced = s.url(&url).into_string();
    check(&reduced, in_url, &forbidden, pieces, value, place, &plain)?;
    let walked = s.json(&json!({ "url": url })).into_value();
    let walked = walked["url"].as_str().unwrap_or_default().to_owned();
    check(&walked, in_url, &forbidden, pieces, value, place, &plain)?;
    let line = s.text(&format!("GET {url} 404 (Not Found)")).into_string();
    check(
        &line,
        Some(&placeholder),
        &forbidden,
        pieces,
        value,
        place,
        &plain,
    )?;
    let dump = serde_json::to_string(&json!({ "request": url })).expect("serializes");
    let dumped = s.text(&dump).into_string();
    check(
        &dumped,
        Some(&placeholder),
        &forbidden,
        pieces,
        value,
        place,
        &json_escaped,
    )?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000),
        ..ProptestConfig::default()
    })]

    /// The property of the module doc.
    #[test]
    fn any_value_in_any_url_spelling_is_masked_whole(
        value in value(),
        set in proptest::sample::select(SETS.to_vec()),
        choices in proptest::collection::vec(any::<u8>(), 1..32),
        place in place(),
        keystrokes in proptest::collection::vec(1usize..4, 1..16),
    ) {
        let pieces = spell(&value, set, place.in_path, &choices);

        let secret = Sanitizer::new();
        secret.register_secret("SECRET", &value).expect("a registrable value");
        check_entry_points(&secret, "SECRET", &value, &pieces, &place)?;

        // Typed in keystrokes of one to three characters.
        let typed = Sanitizer::new();
        let mut echo = typed.typed_echo();
        let chars: Vec<char> = value.chars().collect();
        let mut i = 0;
        for n in keystrokes.iter().cycle() {
            if i >= chars.len() {
                break;
            }
            let j = (i + n).min(chars.len());
            echo.extend(&chars[i..j].iter().collect::<String>());
            i = j;
        }
        prop_assert_eq!(echo.name(), Some("TYPED_1"));
        check_entry_points(&typed, "TYPED_1", &value, &pieces, &place)?;
    }
}
