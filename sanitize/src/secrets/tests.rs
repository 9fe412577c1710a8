//! Unit tests of the registry: names, minimum and maximum lengths, how many, leftmost-longest
//! matching, spellings, typed echoes (prefixes, extension without re-indexing, bounded memory),
//! and registration cost that does not grow with what is registered.

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
    r.register("CHOSEN", "chosen").expect("valid");
    assert_eq!(r.register_typed("s3cr3t!").as_deref(), Some("TYPED_2"));
    assert_eq!(replace(&r, "hunter2 s3cr3t!"), "${TYPED_1} ${TYPED_2}");
    // An explicit literal already registered keeps its name.
    assert_eq!(r.register_typed("chosen").as_deref(), Some("CHOSEN"));
    // And an explicit secret equal to an echo is already registered.
    assert_eq!(r.register("PW", "hunter2"), Ok(false));
}

#[test]
fn typed_prefixes_are_protected_from_the_fourth_non_blank_character() {
    let mut r = Registry::default();
    let (echo, name) = r.add_echo("Type", None).expect("four characters");
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
    assert!(r.add_echo("a b c", None).is_none());
    let (_, name) = r.add_echo("a b cd e", None).expect("four non-blank");
    assert_eq!(name, "TYPED_1");
    assert_eq!(replace(&r, "x a b c y"), "x a b c y");
    assert_eq!(replace(&r, "x a b cd y"), "x ${TYPED_1} y");
}

#[test]
fn typed_prefixes_in_every_spelling() {
    let mut r = Registry::default();
    let (echo, _) = r.add_echo("p@ss", None).expect("four characters");
    r.extend_echo(echo, " \"w0rd\"\n!");
    for (text, want) in [
        (r#"{"v":"p@ss \"w0"}"#, r#"{"v":"${TYPED_1}"}"#),
        (r#"{"v":"p@ss \"w0rd\"\n!"}"#, r#"{"v":"${TYPED_1}"}"#),
        ("?q=p%40ss+%22w0&x", "?q=${TYPED_1}&x"),
        ("?q=p%40ss%20%22w0rd%22%0A%21&x", "?q=${TYPED_1}&x"),
        // Spellings mixed character by character, as URL writers do: read whole.
        ("p@ss %22w0", "${TYPED_1}"),
        ("?q=p@ss+%22w0rd%22%0a!&x", "?q=${TYPED_1}&x"),
        ("p@ss \"w0rd%22", "${TYPED_1}"),
        // Where the text stops spelling the echo, the rest is text.
        ("p@ss \"w0rX", "${TYPED_1}X"),
    ] {
        assert_eq!(replace(&r, text), want, "{text}");
    }
}

#[test]
fn the_longest_candidate_wins_and_ties_go_to_the_first_name() {
    let mut r = reg(&[("PW", "passw0")]);
    let (_, name) = r.add_echo("password123", None).expect("long enough");
    assert_eq!(name, "TYPED_1");
    // The explicit literal is the longest *pattern* at the position, but the echo extends
    // further: the echo wins.
    assert_eq!(replace(&r, "x password123 y"), "x ${TYPED_1} y");
    assert_eq!(replace(&r, "x passw0rd y"), "x ${PW}rd y");
    // Equal length: the name registered first.
    let mut r2 = reg(&[("PW", "password")]);
    r2.add_echo("password", None).expect("long enough");
    assert_eq!(replace(&r2, "password"), "${PW}");
    // Two echoes with the same head: each extends, the longer match wins.
    let mut r3 = Registry::default();
    r3.add_echo("pass one", None).expect("long enough");
    r3.add_echo("pass two", None).expect("long enough");
    assert_eq!(
        replace(&r3, "pass two pass one pass"),
        "${TYPED_2} ${TYPED_1} ${TYPED_1}"
    );
}

#[test]
fn extending_an_echo_does_not_grow_the_index() {
    let mut r = Registry::default();
    let (echo, _) = r.add_echo("abcd", None).expect("four characters");
    let patterns: usize = r.index.values().map(Vec::len).sum();
    assert_eq!(patterns, crate::spelling::keys("abcd").len());
    let work = r.work();
    let long: String = "x".repeat(10_000);
    for chunk in long.as_bytes().chunks(7) {
        r.extend_echo(echo, std::str::from_utf8(chunk).expect("ascii"));
    }
    assert_eq!(
        r.index.values().map(Vec::len).sum::<usize>(),
        patterns,
        "no pattern per prefix"
    );
    assert_eq!(r.work(), work, "extending indexes nothing");
    let e = &r.echoes[echo];
    assert_eq!(e.literal.len(), TYPED_MAX_BYTES, "capped");
    // Its longest spelling: every character percent-encoded.
    assert_eq!(r.max_len(), 3 * TYPED_MAX_BYTES);
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

#[test]
fn size_and_count_are_bounded() {
    let mut r = Registry::default();
    let max = "k".repeat(MAX_SECRET_BYTES);
    assert_eq!(r.register("BIG", &max), Ok(true));
    let over = "k".repeat(MAX_SECRET_BYTES + 1);
    let err = r.register("BIGGER", &over).expect_err("too long");
    assert_eq!(
        err,
        SecretError::TooLong {
            name: "BIGGER".into(),
            bytes: MAX_SECRET_BYTES + 1,
            max: MAX_SECRET_BYTES
        }
    );
    // One line, naming the secret and the limit, never the literal.
    let msg = err.to_string();
    assert_eq!(
        msg,
        format!(
            "secret BIGGER is {} bytes; at most {MAX_SECRET_BYTES} bytes can be registered",
            MAX_SECRET_BYTES + 1
        )
    );
    for i in 1..MAX_SECRETS {
        assert_eq!(
            r.register(&format!("S{i}"), &format!("secret-{i:04}")),
            Ok(true)
        );
    }
    let err = r.register("ONE_MORE", "secret-more").expect_err("too many");
    assert_eq!(
        err.to_string(),
        format!("secret ONE_MORE is not registered: this run holds {MAX_SECRETS} secrets already, the most it can")
    );
    assert!(!err.to_string().contains("secret-more"));
    // What is registered already is still "nothing new", not an error; typed echoes still come.
    assert_eq!(r.register("AGAIN", "secret-0001"), Ok(false));
    assert_eq!(
        r.register_typed("typed after the cap").as_deref(),
        Some("TYPED_1")
    );
    assert_eq!(
        replace(&r, "secret-0255 and typed after"),
        "${S255} and ${TYPED_1}"
    );
}

/// Registering the 100th secret costs what registering the first did (the
/// automaton used to be rebuilt from every literal, at every registration).
#[test]
fn registration_cost_does_not_grow_with_what_is_registered() {
    let mut r = Registry::default();
    let mut costs = Vec::new();
    for i in 0..200 {
        // Same length, same shape, different bytes.
        let literal = format!("{i:06}-{}", "abcdefgh".repeat(16));
        let before = r.work();
        assert_eq!(r.register(&format!("S{i}"), &literal), Ok(true));
        costs.push(r.work() - before);
    }
    assert!(costs.iter().all(|&c| c == costs[0]), "{costs:?}");
    // Proportional to the literal: one copy of it, and the keys of its start's spellings.
    let keys = crate::spelling::keys("000000-").len();
    assert_eq!(keys, 6, "0000 000% 00%3 0%30 %300 %30%");
    assert_eq!(costs[0], (6 + 1 + 128 + keys * KEY_BYTES) as u64);
    let mut costs = Vec::new();
    for i in 0..200 {
        let before = r.work();
        r.register_typed(&format!("typed {i:04} text"))
            .expect("long enough");
        costs.push(r.work() - before);
    }
    assert!(costs.iter().all(|&c| c == costs[0]), "{costs:?}");
    // Every one of them is still found.
    assert_eq!(replace(&r, "x 000199-abcdefgh"), "x 000199-abcdefgh");
    assert_eq!(
        replace(&r, &format!("x 000199-{} y", "abcdefgh".repeat(16))),
        "x ${S199} y"
    );
    assert_eq!(replace(&r, "typed 0007 te"), "${TYPED_8}");
}

mod reference {
    use super::*;
    use proptest::prelude::*;

    /// A regex that matches exactly the spellings of `literal` (`^…$`): each character raw (or,
    /// with `json`, as a JSON string escapes it), or percent-encoded with hex of either case,
    /// a space also as `+`. Written from the URL and JSON rules, not from `spelling.rs`.
    fn spellings_regex(literal: &str, json: bool) -> regex::Regex {
        let mut re = String::from("^(?:");
        for c in literal.chars() {
            let mut ways = Vec::new();
            let escaped = serde_json::to_string(&c.to_string()).expect("serializes");
            match (json, c) {
                (true, '/') => ways.extend([r"/".to_owned(), r"\\/".to_owned()]),
                (true, _) => ways.push(regex::escape(&escaped[1..escaped.len() - 1])),
                (false, _) => ways.push(regex::escape(&c.to_string())),
            }
            let mut utf8 = [0u8; 4];
            let percent: String = c
                .encode_utf8(&mut utf8)
                .bytes()
                .map(|b| format!("%(?i:{b:02X})"))
                .collect();
            ways.push(percent);
            if c == ' ' {
                ways.push(r"\+".to_owned());
            }
            re.push_str(&format!("(?:{})", ways.join("|")));
        }
        re.push_str(")$");
        regex::Regex::new(&re).expect("valid")
    }

    /// Leftmost-longest over every spelling of every explicit literal, the slow obvious way:
    /// every end tried at every position.
    fn naive(literals: &[(usize, [regex::Regex; 2])], text: &str) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < text.len() {
            let mut best: Option<(usize, usize)> = None;
            for (name, res) in literals {
                let end = (pos + 1..=text.len()).rev().find(|&e| {
                    text.is_char_boundary(e) && res.iter().any(|re| re.is_match(&text[pos..e]))
                });
                if let Some(end) = end {
                    if best.is_none_or(|(e, n)| end > e || (end == e && *name < n)) {
                        best = Some((end, *name));
                    }
                }
            }
            match best {
                Some((end, name)) => {
                    out.push((pos, end, name));
                    pos = end;
                }
                None => pos += text[pos..].chars().next().map_or(1, char::len_utf8),
            }
        }
        out
    }

    proptest! {
        /// The index finds exactly what a naive leftmost-longest scan finds, in texts that mix
        /// raw, percent-encoded (either case) and JSON-escaped characters.
        #[test]
        fn index_agrees_with_a_naive_scan(
            literals in proptest::collection::vec("[ab %\"é+/]{4,9}", 1..6),
            text in r#"([ab %"é+x2/]|%2[0bB25]|%[cC]3|%[aA]9|\\"|\\/){0,40}"#,
        ) {
            let mut r = Registry::default();
            let mut registered = Vec::new();
            for (i, l) in literals.iter().enumerate() {
                if r.register(&format!("S{i}"), l) == Ok(true) {
                    let name = r.by_name[&format!("S{i}")];
                    registered.push((name, [spellings_regex(l, false), spellings_regex(l, true)]));
                }
            }
            let got: Vec<(usize, usize, usize)> =
                r.find(&text).iter().map(|m| (m.start, m.end, m.name)).collect();
            prop_assert_eq!(got, naive(&registered, &text));
        }
    }
}

#[test]
fn names_are_bounded_and_the_relays_own_are_reserved() {
    let mut r = Registry::default();
    // The relay's names cannot be taken: an explicit `TYPED_1` would read like typed text.
    for reserved in ["TYPED_1", "TYPED_2", "TYPED_", "TYPED_X"] {
        assert_eq!(
            r.register(reserved, "chosen-literal"),
            Err(SecretError::ReservedName { prefix: "TYPED_" }),
            "{reserved}"
        );
    }
    assert_eq!(r.register("TYPED", "chosen-literal"), Ok(true));
    // 64 characters are a name; 65 are refused, and a huge name is refused without being kept.
    let longest = "N".repeat(MAX_SECRET_NAME_CHARS);
    assert_eq!(r.register(&longest, "another-literal"), Ok(true));
    let huge = "N".repeat(100_000);
    let e = r.register(&huge, "third-literal").unwrap_err();
    assert_eq!(
        e,
        SecretError::NameTooLong {
            chars: 100_000,
            max: MAX_SECRET_NAME_CHARS
        }
    );
    assert!(e.to_string().len() < 100, "{e}");
    assert_eq!(replace(&r, "third-literal"), "third-literal");
    // A name that fails is never repeated: it may be the secret, passed as the name.
    let swapped = "s3cret-Passw0rd!";
    let e = r.register(swapped, "ACCOUNT_PASSWORD").unwrap_err();
    assert_eq!(e, SecretError::InvalidName { chars: 16 });
    assert!(!e.to_string().contains(swapped), "{e}");
    assert!(!format!("{e:?}").contains(swapped), "{e:?}");
    // A typed echo still gets the next free number.
    assert_eq!(r.register_typed("hunter2").as_deref(), Some("TYPED_1"));
}

#[test]
fn a_secret_is_found_by_its_value_never_by_a_spelling_or_a_typed_echo() {
    let mut r = Registry::default();
    assert_eq!(r.register("PASSWORD", "pass word&1"), Ok(true));
    assert_eq!(r.register("TOKEN", "tok-1234"), Ok(true));
    assert_eq!(r.secret_name("pass word&1"), Some("PASSWORD"));
    assert_eq!(r.secret_name("tok-1234"), Some("TOKEN"));
    // Its encoded spellings are masked in text, but typing them is typing something else.
    assert_eq!(r.secret_name("pass+word%261"), None);
    assert_eq!(r.secret_name("pass%20word%261"), None);
    // A prefix, a longer text, a short text, a typed echo: no secret.
    assert_eq!(r.secret_name("pass word"), None);
    assert_eq!(r.secret_name("pass word&12"), None);
    assert_eq!(r.secret_name("ab"), None);
    assert_eq!(
        r.register_typed("typed-literal").as_deref(),
        Some("TYPED_1")
    );
    assert_eq!(r.secret_name("typed-literal"), None);
}

#[test]
fn a_short_typed_literal_gets_a_number_of_its_own_and_keeps_it_when_it_grows() {
    let mut r = Registry::default();
    assert_eq!(r.reserve_typed(), "TYPED_1");
    assert_eq!(r.register_typed("later").as_deref(), Some("TYPED_2"));
    let reserved = r.reserve_typed();
    assert_eq!(reserved, "TYPED_3");
    let (_, name) = r.add_echo("grown", Some(reserved)).expect("long enough");
    assert_eq!(name, "TYPED_3");
    assert_eq!(replace(&r, "x grown y"), "x ${TYPED_3} y");
    assert_eq!(r.register_typed("another").as_deref(), Some("TYPED_4"));
    assert!(is_variable_name("TYPED_3") && is_variable_name("PASSWORD"));
    assert!(!is_variable_name("pass word") && !is_variable_name(&"N".repeat(65)));
}
