//! Unit tests of the spellings: the issue's strings, each escape form, the `%` read two ways,
//! and properties against the libraries' own encoders.

use super::*;
use proptest::prelude::*;

/// The issue's strings: a registered secret with `!` raw beside `%40`, typed text with `%20`
/// or `+` for its spaces, mixed-case hex, a path with `@:,;=&+$` raw.
#[test]
fn the_issue_s_spellings_are_read_whole() {
    let cases = [
        ("Zq7!Mk@gevbFp", "Zq7!Mk%40gevbFp"),
        ("12 Main Street 42", "12%20Main%20Street%2042"),
        ("12 Main Street 42", "12+Main+Street+42"),
        ("12 Main Street 42", "12 Main+Street%2042"),
        ("a*b*c*d", "a%2ab%2Ac*d"),
        ("é@:,;=&+$x", "%c3%A9@:,;=&+$x"),
        ("p@ss \"w0rd\"", "p%40ss+%22w0rd%22"),
    ];
    for (literal, text) in cases {
        assert_eq!(
            spelled_end(text, 0, literal),
            Some(text.len()),
            "{literal:?} in {text:?}"
        );
    }
}

#[test]
fn what_is_not_a_spelling_is_not_read() {
    for (literal, text) in [
        ("abcd", "abce"),
        ("abcd", "abc"),
        // Half an escape, a wrong byte, a `+` for anything but a space.
        ("a@bc", "a%4bc"),
        ("a@bc", "a%41bc"),
        ("a+bc", "a bc"),
        // A multi-byte character is escaped whole or not at all.
        ("éabc", "%C3\u{a9}abc"),
        // JSON escapes hold only inside JSON-escaped text, and not beside raw quotes.
        ("a\"b\"c", "a\\\"b\"c"),
    ] {
        assert_eq!(
            spelled_end(text, 0, literal),
            None,
            "{literal:?} in {text:?}"
        );
    }
}

#[test]
fn json_escapes_in_every_form() {
    for (literal, text) in [
        ("a\"b\\c", r#"a\"b\\c"#),
        ("a/b/cd", r"a\/b/cd"),
        ("l1\nl2", r"l1\nl2"),
        ("l1\nl2", r"l1\u000Al2"),
        ("l1\nl2", r"l1\u000al2"),
        ("x\u{1}yz", r"x\u0001yz"),
        // Percent-encoded inside JSON: the quote needs no escape then.
        ("a\"b c", r"a%22b+c"),
        ("a\"b c", r#"a\"b%20c"#),
    ] {
        assert_eq!(
            spelled_end(text, 0, literal),
            Some(text.len()),
            "{literal:?} in {text:?}"
        );
    }
}

/// `%` is itself or the start of `%25`: both ways are followed, and the furthest full match
/// wins.
#[test]
fn a_percent_is_read_both_ways() {
    assert_eq!(spelled_end("50%off", 0, "50%off"), Some(6));
    assert_eq!(spelled_end("50%25off", 0, "50%off"), Some(8));
    // `%25` read as itself (three characters of the literal) or as `%`.
    assert_eq!(spelled_end("%2525x", 0, "%25x"), Some(6));
    assert_eq!(spelled_end("%25x", 0, "%25x"), Some(4));
    // Many `%` in a row: still linear, still found.
    let literal = "%".repeat(200);
    let text = "%25".repeat(200);
    assert_eq!(spelled_end(&text, 0, &literal), Some(text.len()));
}

#[test]
fn keys_are_the_starts_of_every_spelling() {
    let keys = keys("Zq7!Mk");
    for start in [
        "Zq7!", "Zq7%", "Zq%3", "Z%71", "%5Aq", "%5aq", "%5A%", "%5a%",
    ] {
        let key: [u8; 4] = start.as_bytes().try_into().expect("four bytes");
        assert!(keys.contains(&key), "{start}");
    }
    assert_eq!(keys.len(), 8, "{keys:?}");
    // A space: raw, `+`, `%20`; a quote: raw, or JSON-escaped.
    let keys = keys_of("a b\"");
    for start in ["a b\"", "a+b\"", "a+b\\", "a%20", "a b%", "a b\\"] {
        assert!(keys.iter().any(|k| k == start), "{start} in {keys:?}");
    }
    // Only the start counts: a long literal has no more keys than its first characters.
    assert_eq!(
        super::keys(&"k".repeat(8192)).len(),
        super::keys("kkkk").len()
    );
}

fn keys_of(s: &str) -> Vec<String> {
    super::keys(s)
        .into_iter()
        .map(|k| String::from_utf8_lossy(&k).into_owned())
        .collect()
}

/// One character as a URL writer may write it: raw, or percent-encoded with upper- or
/// lower-case hex, a space also as `+`.
fn spell_char(c: char, how: u8) -> String {
    let percent = |upper: bool| -> String {
        let mut utf8 = [0u8; 4];
        c.encode_utf8(&mut utf8)
            .bytes()
            .map(|b| {
                let e = format!("%{b:02X}");
                if upper {
                    e
                } else {
                    e.to_lowercase()
                }
            })
            .collect()
    };
    match how % 4 {
        0 => c.to_string(),
        1 => percent(true),
        2 => percent(false),
        _ if c == ' ' => "+".to_owned(),
        _ => percent(true),
    }
}

proptest! {
    /// Any mix of per-character spellings of any string is read whole, raw or JSON-escaped
    /// (serde_json's escapes), and its start is one of the keys.
    #[test]
    fn any_mix_is_read_whole(s in "\\PC{4,16}|[ !'()*~@:,;=&+$%/\"\\\\a-z]{4,16}", hows in proptest::collection::vec(any::<u8>(), 16), json in any::<bool>()) {
        let mut text = String::new();
        for (c, &how) in s.chars().zip(hows.iter().cycle()) {
            let spelled = spell_char(c, how);
            if json && spelled == c.to_string() {
                let escaped = serde_json::to_string(&spelled).expect("serializes");
                text.push_str(&escaped[1..escaped.len() - 1]);
            } else {
                text.push_str(&spelled);
            }
        }
        let framed = format!("x/{text}?y");
        prop_assert_eq!(spelled_end(&framed, 2, &s), Some(2 + text.len()), "{:?} as {:?}", s, text);
        let key: [u8; 4] = text.as_bytes()[..4].try_into().expect("four bytes");
        prop_assert!(keys(&s).contains(&key), "{:?} starts {:?}", s, text);
        let most: usize = s.chars().map(longest).sum();
        prop_assert!(text.len() <= most);
    }

    /// Whatever the text, a match ends on a character boundary, within the text.
    #[test]
    fn matches_stay_in_the_text(literal in "[%a ]{1,6}", text in "[%25a+ ]{0,24}") {
        let mut end = 0;
        walk(text.as_bytes(), 0, literal.chars(), |_, e| end = e);
        prop_assert!(end <= text.len() && text.is_char_boundary(end));
    }
}
