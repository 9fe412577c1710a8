//! Echo protection for typed text: a page that echoes what is being typed, as in
//! `console.log('live ' + el.value)` on every `input` event, must not leak the literal, nor any
//! prefix of it of at least four non-whitespace characters.

use cdp_sanitize::Sanitizer;

#[test]
fn prefixes_of_a_typed_literal_are_masked() {
    let s = Sanitizer::new();
    assert_eq!(
        s.register_typed("TypeSecretBBB2").as_deref(),
        Some("TYPED_1")
    );
    for (input, want) in [
        ("live TypeSecretBBB2", "live ${TYPED_1}"),
        ("live TypeSec", "live ${TYPED_1}"),
        ("live Type", "live ${TYPED_1}"),
        // Shorter prefixes are ordinary text.
        ("live Typ", "live Typ"),
        // A prefix followed by something else: only the prefix goes.
        ("live TypeSecXYZ", "live ${TYPED_1}XYZ"),
        ("a TypeSecretBBB2 b TypeS c", "a ${TYPED_1} b ${TYPED_1} c"),
    ] {
        assert_eq!(s.text(input).as_str(), want, "{input}");
    }
}

#[test]
fn prefixes_are_masked_in_every_spelling() {
    let s = Sanitizer::new();
    s.register_typed(r#"p@ss "w0rd" long"#)
        .expect("long enough");
    for (input, want) in [
        // JSON-escaped, inside a logged JSON string.
        (r#"{"live":"p@ss \"w0"}"#, r#"{"live":"${TYPED_1}"}"#),
        // URL-encoded, in a query string (both spellings of a space).
        ("GET /s?q=p%40ss+%22w0 200", "GET /s?q=${TYPED_1} 200"),
        ("GET /s?q=p%40ss%20%22w0rd 200", "GET /s?q=${TYPED_1} 200"),
        ("live p@ss \"w0rd\" lo", "live ${TYPED_1}"),
    ] {
        assert_eq!(s.text(input).as_str(), want, "{input}");
    }
}

#[test]
fn a_growing_literal_is_protected_from_the_keystroke_that_reaches_four_characters() {
    let s = Sanitizer::new();
    let mut echo = s.typed_echo();
    let typed = "TypeSecretBBB2";
    let mut lines = Vec::new();
    for (i, c) in typed.char_indices() {
        // The relay's one line per keystroke:
        echo.extend(&c.to_string());
        // … and the page's echo of the field, as it is now.
        let line = format!("live {}", &typed[..i + c.len_utf8()]);
        lines.push(s.text(&line).into_string());
    }
    assert_eq!(&lines[..3], ["live T", "live Ty", "live Typ"]);
    for line in &lines[3..] {
        assert_eq!(line, "live ${TYPED_1}");
    }
    assert_eq!(echo.name(), Some("TYPED_1"));
    // A later echo of the whole literal, and of any prefix, reads the same.
    assert_eq!(s.text("live TypeSec").as_str(), "live ${TYPED_1}");
    assert_eq!(s.text("live TypeSecretBBB2").as_str(), "live ${TYPED_1}");
    // The burst ends (the echo is dropped): still protected for the rest of the run.
    drop(echo);
    assert_eq!(s.text("saved TypeSecretBBB2").as_str(), "saved ${TYPED_1}");
    assert_eq!(s.summary().secrets.get("TYPED_1"), Some(&(11 + 3)));
}

#[test]
fn fill_registers_at_once_and_each_burst_has_its_own_name() {
    let s = Sanitizer::new();
    let mut fill = s.typed_echo();
    fill.extend("FillSecretAAA1");
    assert_eq!(fill.name(), Some("TYPED_1"));
    assert_eq!(s.text("live FillSecretAAA1").as_str(), "live ${TYPED_1}");
    let mut second = s.typed_echo();
    for c in ["a", "b", " ", "c"] {
        second.extend(c);
    }
    assert_eq!(second.name(), None, "three non-blank characters");
    second.extend("d");
    assert_eq!(second.name(), Some("TYPED_2"));
    // The relay's old end-of-burst call finds the literal registered and adds nothing.
    assert_eq!(
        s.register_typed("FillSecretAAA1").as_deref(),
        Some("TYPED_1")
    );
    assert_eq!(s.register_typed("ab cd").as_deref(), Some("TYPED_2"));
    let mut third = s.typed_echo();
    third.extend("zzzz");
    assert_eq!(third.name(), Some("TYPED_3"));
}

#[test]
fn leading_blanks_are_not_part_of_the_literal() {
    let s = Sanitizer::new();
    let mut echo = s.typed_echo();
    for c in [" ", "\t", "s", "e", "c", "r", "e", "t"] {
        echo.extend(c);
    }
    assert_eq!(s.text("value=' secret'").as_str(), "value=' ${TYPED_1}'");
    assert_eq!(s.text("trimmed: secret").as_str(), "trimmed: ${TYPED_1}");
}

#[test]
fn the_literal_never_shows_in_debug_or_summary() {
    let s = Sanitizer::new();
    let mut echo = s.typed_echo();
    echo.extend("hunter2-typed");
    let shown = format!(
        "{echo:?} {s:?} {}",
        serde_json::to_string(&s.summary()).expect("json")
    );
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("TYPED_1"), "{shown}");
}

#[test]
fn an_echo_outliving_its_sanitizer_does_nothing() {
    let s = Sanitizer::new();
    let mut echo = s.typed_echo();
    echo.extend("ab");
    drop(s);
    echo.extend("cdef");
    assert_eq!(echo.name(), None);
}

#[test]
fn echoes_are_bounded_by_the_typed_cap() {
    let s = Sanitizer::new();
    let mut echo = s.typed_echo();
    let mut typed: String = ('a'..='z').cycle().take(4096).collect();
    typed.push_str(&"0123456789".repeat(200));
    for chunk in typed.as_bytes().chunks(3) {
        echo.extend(std::str::from_utf8(chunk).expect("ascii"));
    }
    // Its longest spelling: the 4096 bytes kept, each percent-encoded.
    assert_eq!(s.longest_secret_len(), 3 * cdp_sanitize::TYPED_MAX_BYTES);
    let out = s.text_capped(&typed, usize::MAX).into_string();
    // The first 4096 bytes are protected; the rest was never registered.
    assert_eq!(out, format!("${{TYPED_1}}{}", &typed[4096..]));
}
