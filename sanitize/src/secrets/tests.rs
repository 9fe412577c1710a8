//! Unit tests of the registry: names, minimum lengths, leftmost-longest matching, spellings, and
//! typed echoes (prefixes, extension without rebuilding, bounded memory).

use super::*;

fn reg(pairs: &[(&str, &str)]) -> Registry {
    let mut r = Registry::default();
    for (n, l) in pairs {
        r.register(n, l).expect("valid name and literal");
    }
    r
}

/// The matches of `text`, applied as `${NAME}` (the merge with the rules is `merge.rs`'s).
fn replace(r: &Registry, text: &str) -> String {
    let mut out = String::new();
    let mut copied = 0;
    for m in r.find(text) {
        out.push_str(&text[copied..m.start]);
        out.push_str("${");
        out.push_str(r.name(m.name));
        out.push('}');
        copied = m.end;
    }
    out.push_str(&text[copied..]);
    out
}

#[test]
fn names_are_validated() {
    let mut r = Registry::default();
    assert!(r.register("PASSWORD", "xxxx").is_ok());
    assert!(r.register("_X9", "yyyy").is_ok());
    for bad in ["", "password", "9X", "A-B", "A B", "É"] {
        assert!(r.register(bad, "zzzz").is_err(), "{bad}");
    }
}

#[test]
fn empty_short_and_duplicate_literals_are_not_registered() {
    let mut r = Registry::default();
    assert_eq!(r.register("A", ""), Ok(false));
    assert_eq!(r.register("A", " \t\n"), Ok(false));
    assert_eq!(
        r.register("A", "abc"),
        Err(SecretError::TooShort {
            name: "A".into(),
            min: MIN_SECRET_CHARS
        })
    );
    assert_eq!(
        r.register("A", " a b c "),
        Err(SecretError::TooShort {
            name: "A".into(),
            min: MIN_SECRET_CHARS
        })
    );
    assert!(r.is_empty());
    assert_eq!(r.register("A", "hunter2"), Ok(true));
    assert_eq!(r.register("B", "hunter2"), Ok(false), "first name wins");
    assert_eq!(replace(&r, "pw hunter2"), "pw ${A}");
    // The name is checked first: a bad name with a short literal is a bad name.
    assert!(matches!(
        r.register("bad", "a"),
        Err(SecretError::InvalidName { .. })
    ));
}

#[test]
fn leftmost_longest_and_no_rescan() {
    let r = reg(&[("SHORT", "abcd"), ("LONG", "abcdefgh"), ("D", "efgh")]);
    assert_eq!(
        replace(&r, "xabcdefghx abcdx efghx"),
        "x${LONG}x ${SHORT}x ${D}x"
    );
    // A literal inside a registered placeholder is never touched.
    let r = reg(&[("PASSWORD", "p4ss"), ("W", "WORD")]);
    assert_eq!(replace(&r, "p4ss"), "${PASSWORD}");
    assert_eq!(replace(&r, "${PASSWORD} WORD"), "${PASSWORD} ${W}");
}

#[test]
fn encoded_spellings_are_found() {
    let r = reg(&[("PW", "p@ss \"word\"")]);
    assert_eq!(
        replace(&r, r#"{"pw":"p@ss \"word\""}"#),
        r#"{"pw":"${PW}"}"#
    );
    assert_eq!(replace(&r, "?pw=p%40ss+%22word%22&x"), "?pw=${PW}&x");
    assert_eq!(replace(&r, "?pw=p%40ss%20%22word%22&x"), "?pw=${PW}&x");
}

#[test]
fn typed_literals_get_generated_names() {
    let mut r = Registry::default();
    assert_eq!(r.register_typed("abc"), None);
    assert_eq!(r.register_typed("a b c"), None);
    assert_eq!(r.register_typed("hunter2").as_deref(), Some("TYPED_1"));
    assert_eq!(r.register_typed("hunter2").as_deref(), Some("TYPED_1"));
    assert_eq!(r.register_typed("  hunter2").as_deref(), Some("TYPED_1"));
    r.register("TYPED_2", "chosen").expect("valid");
    assert_eq!(r.register_typed("s3cr3t!").as_deref(), Some("TYPED_3"));
    assert_eq!(replace(&r, "hunter2 s3cr3t!"), "${TYPED_1} ${TYPED_3}");
    // An explicit literal already registered keeps its name.
    assert_eq!(r.register_typed("chosen").as_deref(), Some("TYPED_2"));
    // And an explicit secret equal to an echo is already registered.
    assert_eq!(r.register("PW", "hunter2"), Ok(false));
}

#[test]
fn typed_prefixes_are_protected_from_the_fourth_non_blank_character() {
    let mut r = Registry::default();
    let (echo, name) = r.add_echo("Type").expect("four characters");
    assert_eq!(name, "TYPED_1");
    r.extend_echo(echo, "Secret");
    r.extend_echo(echo, "BBB2");
    for (text, want) in [
        ("live TypeSecretBBB2", "live ${TYPED_1}"),
        ("live TypeSecretBBB2 and more", "live ${TYPED_1} and more"),
        ("TypeSecret BBB2", "${TYPED_1} BBB2"),
        ("live TypeSe", "live ${TYPED_1}"),
        ("live Type", "live ${TYPED_1}"),
        ("live Typ", "live Typ"),
        ("TypeSecretBBB2TypeSecretBBB2", "${TYPED_1}${TYPED_1}"),
        ("TypTypeX", "Typ${TYPED_1}X"),
    ] {
        assert_eq!(replace(&r, text), want, "{text}");
    }
    // Blanks do not count towards the minimum.
    let mut r = Registry::default();
    assert!(r.add_echo("a b c").is_none());
    let (_, name) = r.add_echo("a b cd e").expect("four non-blank");
    assert_eq!(name, "TYPED_1");
    assert_eq!(replace(&r, "x a b c y"), "x a b c y");
    assert_eq!(replace(&r, "x a b cd y"), "x ${TYPED_1} y");
}

#[test]
fn typed_prefixes_in_every_spelling() {
    let mut r = Registry::default();
    let (echo, _) = r.add_echo("p@ss").expect("four characters");
    r.extend_echo(echo, " \"w0rd\"\n!");
    for (text, want) in [
        (r#"{"v":"p@ss \"w0"}"#, r#"{"v":"${TYPED_1}"}"#),
        (r#"{"v":"p@ss \"w0rd\"\n!"}"#, r#"{"v":"${TYPED_1}"}"#),
        ("?q=p%40ss+%22w0&x", "?q=${TYPED_1}&x"),
        ("?q=p%40ss%20%22w0rd%22%0A%21&x", "?q=${TYPED_1}&x"),
        // A spelling is never mixed halfway: this stops after the plain prefix.
        ("p@ss %22w0", "${TYPED_1} %22w0"),
    ] {
        assert_eq!(replace(&r, text), want, "{text}");
    }
}

#[test]
fn the_longest_candidate_wins_and_ties_go_to_the_first_name() {
    let mut r = reg(&[("PW", "passw0")]);
    let (_, name) = r.add_echo("password123").expect("long enough");
    assert_eq!(name, "TYPED_1");
    // The explicit literal is the longest *pattern* at the position, but the echo extends
    // further: the echo wins.
    assert_eq!(replace(&r, "x password123 y"), "x ${TYPED_1} y");
    assert_eq!(replace(&r, "x passw0rd y"), "x ${PW}rd y");
    // Equal length: the name registered first.
    let mut r2 = reg(&[("PW", "password")]);
    r2.add_echo("password").expect("long enough");
    assert_eq!(replace(&r2, "password"), "${PW}");
    // Two echoes with the same head: each extends, the longer match wins.
    let mut r3 = Registry::default();
    r3.add_echo("pass one").expect("long enough");
    r3.add_echo("pass two").expect("long enough");
    assert_eq!(
        replace(&r3, "pass two pass one pass"),
        "${TYPED_2} ${TYPED_1} ${TYPED_1}"
    );
}

#[test]
fn extending_an_echo_does_not_grow_the_automaton() {
    let mut r = Registry::default();
    let (echo, _) = r.add_echo("abcd").expect("four characters");
    let patterns = r.patterns.len();
    assert!(patterns <= Spelling::ALL.len());
    let long: String = "x".repeat(10_000);
    for chunk in long.as_bytes().chunks(7) {
        r.extend_echo(echo, std::str::from_utf8(chunk).expect("ascii"));
    }
    assert_eq!(r.patterns.len(), patterns, "no pattern per prefix");
    let e = &r.echoes[echo];
    assert_eq!(e.literal.len(), TYPED_MAX_BYTES, "capped");
    assert_eq!(r.max_len(), TYPED_MAX_BYTES);
    // The whole capped literal is found; what was typed beyond the cap is not protected.
    let text = format!("abcd{long}");
    let found = r.find(&text);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].end, TYPED_MAX_BYTES);
}

#[test]
fn debug_never_prints_literals() {
    let mut r = reg(&[("PW", "hunter2")]);
    r.register_typed("typed secret").expect("long enough");
    let dbg = format!("{r:?}");
    assert!(!dbg.contains("hunter2"), "{dbg}");
    assert!(!dbg.contains("typed"), "{dbg}");
}
