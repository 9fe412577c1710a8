//! Registered literals (typed echoes and explicit secrets) must never switch off rule-based
//! redaction: the rules judge the original text, so a registered word that is also a secret's
//! *name* (`code`, `password`, `Bearer`, `access_token`) cannot hide the value after it.
//!
//! Planted values (`…LEAK…`) must never appear in the output, whatever was registered.

use cdp_sanitize::{Sanitizer, SecretError};

/// Texts with a planted value after a sensitive name, in the shapes evidence carries.
const INPUTS: &[&str] = &[
    "GET https://app.example.com/cb?code=OAUTHLEAK999&state=STATELEAK111 302",
    "navigated to /cb#access_token=TOKENLEAK555&token_type=Bearer",
    "password=PWLEAK777",
    "login form: password: PWLEAK777",
    r#"{"access_token": "TOKENLEAK555", "expires_in": 3600}"#,
    r#"{"password":"PWLEAK777","token":"TOKLEAK444","session":"SESSLEAK222"}"#,
    r#"{\"access_token\":\"TOKENLEAK555\"}"#,
    "Authorization: Bearer BEARERLEAK333xyz",
    "retrying with Bearer BEARERLEAK333xyz now",
    "Cookie: session=SESSLEAK222; theme=dark",
    "X-Session: SESSLEAK222",
    "token=TOKLEAK444&session=SESSLEAK222",
    "db.password => 'PWLEAK777'",
    "Set-Cookie: session=SESSLEAK222; Path=/; HttpOnly",
    "access_token=TOKENLEAK555",
];

const PLANTED: &[&str] = &[
    "OAUTHLEAK999",
    "STATELEAK111",
    "TOKENLEAK555",
    "PWLEAK777",
    "TOKLEAK444",
    "SESSLEAK222",
    "BEARERLEAK333xyz",
];

fn assert_no_plant(s: &Sanitizer, what: &str) {
    let mut failures = Vec::new();
    for input in INPUTS {
        let out = s.text(input).into_string();
        for plant in PLANTED {
            if out.contains(plant) {
                failures.push(format!(
                    "{what}: {plant} survived in {out:?} (input {input:?})"
                ));
            }
        }
        let again = s.text(&out).into_string();
        if again != out {
            failures.push(format!("{what}: not a fixed point: {out:?} -> {again:?}"));
        }
        // The JSON walker sees the same strings as values.
        let json = s
            .json(&serde_json::json!({ "message": input }))
            .into_value();
        let json = json.to_string();
        for plant in PLANTED {
            if json.contains(plant) {
                failures.push(format!("{what}: {plant} survived in JSON {json}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rules_alone_remove_every_plant() {
    assert_no_plant(&Sanitizer::new(), "no registrations");
}

#[test]
fn typed_words_that_are_secret_names_do_not_unmask_values() {
    let s = Sanitizer::new();
    for word in [
        "code",
        "password",
        "Bearer",
        "access_token",
        "token",
        "session",
    ] {
        assert!(s.register_typed(word).is_some(), "{word}");
    }
    assert_no_plant(&s, "typed names");
    // The name itself reads as a placeholder, the value as the rule's marker.
    assert_eq!(
        s.text("cb?code=OAUTHLEAK999").as_str(),
        "cb?${TYPED_1}=[redacted:query-token]"
    );
    assert_eq!(
        s.text("password=PWLEAK777").as_str(),
        "${TYPED_2}=[redacted:password]"
    );
    assert_eq!(
        s.text(r#"{"access_token": "TOKENLEAK555"}"#).as_str(),
        r#"{"${TYPED_4}": "[redacted:token]"}"#
    );
    // A header's value is the rest of its line: with its scheme word now a placeholder, the
    // second round of rules takes the whole value.
    assert_eq!(
        s.text("Authorization: Bearer BEARERLEAK333xyz").as_str(),
        "Authorization: [redacted:authorization]"
    );
    assert_eq!(
        s.text("retrying with Bearer BEARERLEAK333xyz now").as_str(),
        "retrying with ${TYPED_3} [redacted:bearer] now"
    );
}

#[test]
fn explicit_secrets_inside_names_do_not_unmask_values() {
    // Each of these is part of a sensitive name, or straddles a name and its value.
    let parts = [
        ("PART_A", "assw"),
        ("PART_B", "access_"),
        ("PART_C", "ssword=PW"),
        ("PART_D", "Bearer BEAR"),
        ("PART_E", "sion=SESS"),
    ];
    for (name, literal) in parts {
        let s = Sanitizer::new();
        assert_eq!(s.register_secret(name, literal), Ok(true), "{name}");
        assert_no_plant(&s, name);
        // No fragment of the literal survives next to a marker: it goes whole or with the
        // value it runs into.
        for input in INPUTS {
            let out = s.text(input).into_string();
            for fragment in ["ssword=", "Bearer B", "sion=S"] {
                if literal.contains(fragment) {
                    assert!(!out.contains(fragment), "{fragment} in {out:?}");
                }
            }
        }
    }
    let all = Sanitizer::new();
    for (name, literal) in parts {
        assert_eq!(all.register_secret(name, literal), Ok(true), "{name}");
    }
    assert_no_plant(&all, "all parts");

    let s = Sanitizer::new();
    s.register_secret("PART_C", "ssword=PW").expect("valid");
    // The literal runs into the value: their union goes, as the rule's marker.
    assert_eq!(
        s.text("password=PWLEAK777").as_str(),
        "pa[redacted:password]"
    );
    let s = Sanitizer::new();
    s.register_secret("PART_A", "assw").expect("valid");
    assert_eq!(
        s.text("password=PWLEAK777").as_str(),
        "p${PART_A}ord=[redacted:password]"
    );
}

#[test]
fn a_one_character_secret_is_refused_not_registered() {
    let s = Sanitizer::new();
    let err = s.register_secret("SHORT", "a").expect_err("too short");
    assert!(
        matches!(err, SecretError::TooShort { min: 4, .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert_eq!(msg.lines().count(), 1, "{msg}");
    assert!(msg.contains('4'), "names the minimum: {msg}");
    assert_eq!(
        s.text("password=PWSHORTLEAK42").as_str(),
        "password=[redacted:password]"
    );
    for short in ["ab", "abc", " a b c ", "12\t3"] {
        assert!(
            matches!(
                s.register_secret("SHORT", short),
                Err(SecretError::TooShort { .. })
            ),
            "{short:?}"
        );
    }
    // Four non-whitespace characters (a PIN) are enough.
    assert_eq!(s.register_secret("PIN", "4921"), Ok(true));
    assert_eq!(s.text("my pin is 4921").as_str(), "my pin is ${PIN}");
    // Empty and whitespace-only literals are still "nothing to register", not an error.
    assert_eq!(s.register_secret("EMPTY", ""), Ok(false));
    assert_eq!(s.register_secret("EMPTY", " \t\n"), Ok(false));
}

#[test]
fn short_secret_error_never_quotes_the_literal() {
    let s = Sanitizer::new();
    let err = s.register_secret("PIN", "x9z").expect_err("too short");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("x9z"), "{shown}");
}

#[test]
fn a_secret_and_a_rule_on_the_same_span_read_as_the_secret() {
    let s = Sanitizer::new();
    s.register_secret("API_TOKEN", "tok_live_1234567890")
        .expect("valid");
    s.register_secret("SPLIT", "b2 c3d4").expect("valid");
    for (input, want) in [
        (
            "Authorization: Bearer tok_live_1234567890",
            "Authorization: Bearer ${API_TOKEN}",
        ),
        ("token=tok_live_1234567890", "token=${API_TOKEN}"),
        (
            r#"{"access_token":"tok_live_1234567890"}"#,
            r#"{"access_token":"${API_TOKEN}"}"#,
        ),
        // A literal inside a longer value: the value goes, with the literal in it.
        ("token=xx-tok_live_1234567890-yy", "token=[redacted:token]"),
        // A literal after the value: each goes on its own.
        (
            "password=abc tok_live_1234567890",
            "password=[redacted:password] ${API_TOKEN}",
        ),
        // A literal that starts inside the value and runs past its end: their union goes, as
        // the rule's marker, so no fragment of either is left.
        ("password=a1b2 c3d4 end", "password=[redacted:password] end"),
    ] {
        assert_eq!(s.text(input).as_str(), want, "{input}");
    }
}

/// Found by the property tests: a literal that overlaps a rule's span is replaced together
/// with it, and the union ends where the literal does, inside a word. What follows (here a bare
/// CDP id, glued to `%22` in the original) must still be judged, in the same call.
#[test]
fn a_union_that_ends_inside_a_word_is_judged_again() {
    let s = Sanitizer::new();
    let mut echo = s.typed_echo();
    echo.extend("_MM*\"&6");
    let id = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";
    let input = format!("/devtools/page/sessionId_MM*%22{id}");
    let out = s.text(&input).into_string();
    assert!(!out.contains(id), "{out}");
    assert_eq!(
        out,
        format!("/devtools/page/[redacted:cdp-id]{}", s.handle(id).as_str())
    );
    assert_eq!(s.text(&out).as_str(), out);
}
