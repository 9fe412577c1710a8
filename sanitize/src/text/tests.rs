//! Unit tests of the text engine: one block per detector, plus the fixed-point and cap rules.

use crate::Sanitizer;

fn clean(s: &Sanitizer, text: &str) -> String {
    s.text_capped(text, usize::MAX).into_string()
}

#[test]
fn clean_text_is_unchanged() {
    let s = Sanitizer::new();
    for text in [
        "",
        "GET /index.html 200 OK in 12ms",
        "Uncaught TypeError: Cannot read properties of undefined (reading 'x')",
        "keyboard event code=KeyA state: ready",
        "token expired, please log in again",
        "Basic authentication required",
        "tokenType=bearer sessionCount=3 inputTokens: 1234",
        "投稿 ✓ — naïve café",
    ] {
        assert_eq!(clean(&s, text), text);
    }
}

#[test]
fn key_value_forms() {
    let s = Sanitizer::new();
    let cases = [
        (
            "password=hunter2 user=bob",
            "password=[redacted:password] user=bob",
        ),
        ("password: hunter2", "password: [redacted:password]"),
        (
            r#"{"password": "hun ter2", "user": "bob"}"#,
            r#"{"password": "[redacted:password]", "user": "bob"}"#,
        ),
        ("{'api_key': 'k-123'}", "{'api_key': '[redacted:api-key]'}"),
        (
            r#"{\"client_secret\":\"abc\"}"#,
            r#"{\"client_secret\":\"[redacted:secret]\"}"#,
        ),
        ("db.password => 'x'", "db.password => '[redacted:password]'"),
        (
            r#"password="unterminated"#,
            r#"password="[redacted:password]"#,
        ),
        (
            "PHPSESSID=abc123; path=/",
            "PHPSESSID=[redacted:session]; path=/",
        ),
        (
            "csrftoken=xyz&otp=123456",
            "csrftoken=[redacted:csrf]&otp=[redacted:otp]",
        ),
        (
            "token_type=bearer&access_token=abc",
            "token_type=bearer&access_token=[redacted:token]",
        ),
        ("password=", "password="),
        (r#"password="""#, r#"password="""#),
    ];
    for (input, want) in cases {
        assert_eq!(clean(&s, input), want, "{input}");
    }
}

#[test]
fn headers_take_the_rest_of_the_line() {
    let s = Sanitizer::new();
    assert_eq!(
        clean(&s, "Cookie: a=1; sid=2\nAccept: */*"),
        "Cookie: [redacted:cookie]\nAccept: */*"
    );
    assert_eq!(
        clean(
            &s,
            "set-cookie: id=a3fWa; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Secure\r\n"
        ),
        "set-cookie: [redacted:cookie]\r\n"
    );
    assert_eq!(
        clean(&s, "Authorization: Bearer abc.def.ghi"),
        "Authorization: Bearer [redacted:authorization]"
    );
    assert_eq!(
        clean(&s, r#""authorization":"Basic dXNlcjpwYXNz""#),
        r#""authorization":"Basic [redacted:authorization]""#
    );
    assert_eq!(
        clean(&s, "Authorization: s3cr3t"),
        "Authorization: [redacted:authorization]"
    );
}

#[test]
fn scheme_credentials_need_to_look_like_one() {
    let s = Sanitizer::new();
    assert_eq!(
        clean(&s, "sent Bearer abc123xyz"),
        "sent Bearer [redacted:bearer]"
    );
    assert_eq!(
        clean(&s, "Token validation failed"),
        "Token validation failed"
    );
    assert_eq!(clean(&s, "token f00dbabe12"), "token [redacted:bearer]");
}

#[test]
fn capability_urls_and_ids_become_handles() {
    let s = Sanitizer::new();
    let id = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";
    let h = s.handle(id).into_string();
    assert_eq!(
        clean(&s, &format!("ws://127.0.0.1:9222/devtools/page/{id}")),
        format!("ws://127.0.0.1:9222/devtools/page/{h}")
    );
    assert_eq!(
        clean(&s, &format!("targetId {id} again {id}")),
        format!("targetId {h} again {h}")
    );
    assert_eq!(
        clean(&s, &format!("sessionId: {id}")),
        format!("sessionId: {h}")
    );
    assert_eq!(
        clean(&s, "sessionId: abc-def"),
        "sessionId: [redacted:session]"
    );
    // Not ids: other lengths, mixed case, part of a longer word.
    for text in [
        "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B",
        "8e5b0e1c2f4d43a1b0b7a3f2e6D9C4B1",
        "x_8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1",
        "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1F",
    ] {
        assert_eq!(clean(&s, text), text);
    }
}

#[test]
fn tokens_keys_and_userinfo() {
    let s = Sanitizer::new();
    let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
    assert_eq!(clean(&s, &format!("got {jwt}.")), "got [redacted:jwt].");
    assert_eq!(
        clean(&s, "git clone https://user:ghp_pw@github.com/o/r"),
        "git clone https://[redacted:userinfo]@github.com/o/r"
    );
    assert_eq!(
        clean(&s, "key AKIAIOSFODNN7EXAMPLE here"),
        "key [redacted:api-key] here"
    );
    assert_eq!(
        clean(
            &s,
            "-----BEGIN PRIVATE KEY-----\nMIIEvQ\nabc+/=\n-----END PRIVATE KEY-----\nnext"
        ),
        "[redacted:private-key]\nnext"
    );
    assert_eq!(
        clean(&s, "/cb?code=4%2F0Adeu5B&state=xyz&scope=email"),
        "/cb?code=[redacted:query-token]&state=[redacted:query-token]&scope=email"
    );
}

#[test]
fn output_is_a_fixed_point() {
    let s = Sanitizer::new();
    s.register_secret("PASSWORD", "hunter2").expect("valid");
    for text in [
        "password=hunter2 Cookie: a=b",
        "password=[redacted:jwt]hunter3",
        "Authorization: Bearer ${TOKEN}",
        "https://${USER}@host/ and https://a:b@host/",
        "sessionId: 8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1",
        "x ${ABCDEF0123456789ABCDEF0123456789} y",
        "password=ab${PASSWORD}cd",
    ] {
        let once = clean(&s, text);
        assert_eq!(clean(&s, &once), once, "{text}");
    }
}

#[test]
fn markers_in_input_are_not_rewritten() {
    let s = Sanitizer::new();
    assert_eq!(clean(&s, "password=${DB_PASS}"), "password=${DB_PASS}");
    assert_eq!(
        clean(&s, "Cookie: [redacted:cookie]"),
        "Cookie: [redacted:cookie]"
    );
    assert_eq!(
        clean(&s, "password=[redacted:jwt]hunter3"),
        "password=[redacted:password]"
    );
}

#[test]
fn cap_marks_and_never_splits() {
    let s = Sanitizer::new();
    let out = s.text_capped("hello wonderful world", 10).into_string();
    assert_eq!(out, "hello …[truncated 15 chars]");
    assert_eq!(
        s.text_capped(&out, 10).as_str(),
        out,
        "capping twice equals once"
    );
    let out = s.text_capped("ab ${PASSWORD} cd", 6).into_string();
    assert_eq!(out, "ab …[truncated 14 chars]");
    let hex = "0123456789abcdef".repeat(4);
    let out = s.text_capped(&format!("x {hex}"), 34).into_string();
    assert_eq!(out, "x …[truncated 64 chars]");
    let out = s.text_capped("ééééé", 2).into_string();
    assert_eq!(
        out, "éé…[truncated 3 chars]",
        "non-ASCII letters are cut on char boundaries"
    );
    assert_eq!(s.text_capped("short", 5).as_str(), "short");
    assert_eq!(s.summary().truncated, 4);
}

/// A console message of one word longer than the cap used to be recorded as the marker alone.
#[test]
fn one_long_word_keeps_a_sanitized_prefix() {
    let s = Sanitizer::new();
    let word = "x".repeat(5000);
    let out = s.text(&word).into_string();
    assert!(out.starts_with(&"x".repeat(4000)), "{}", &out[..40]);
    assert!(out.ends_with("…[truncated 904 chars]"), "{out}");
    // Still sanitized: a token inside the kept part is redacted, not cut around.
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlc2lnbmF0dXJl";
    let out = s
        .text(&format!("{} {jwt} {}", "a".repeat(100), "b".repeat(5000)))
        .into_string();
    assert!(!out.contains("eyJhbGciOiJIUzI1NiJ9"), "{}", &out[..200]);
    assert!(out.starts_with(&"a".repeat(100)));
    assert!(out.contains("…[truncated "));
    // A short kept part of a word is still dropped whole (it could look like an id).
    let hex = "0123456789abcdef".repeat(8);
    let out = s.text_capped(&format!("x {hex}"), 40).into_string();
    assert_eq!(out, "x …[truncated 128 chars]");
}

#[test]
fn html_attribute_values_lose_their_quotes_in_every_spelling() {
    for (raw, inner) in [
        (r#""abc""#, "abc"),
        ("'abc'", "abc"),
        (r#"\"abc\""#, "abc"),
        (r#"\\"abc\\""#, "abc"),
        ("&quot;abc&quot;", "abc"),
        ("&#34;abc&#x22;", "abc"),
        ("&apos;abc&#39;", "abc"),
        ("abc", "abc"),
        // Unclosed (a cut log line): to the end.
        (r#""abc"#, "abc"),
        ("&quot;abc", "abc"),
        (r#""""#, ""),
    ] {
        let text = format!("x {raw} y");
        let (s, e) = super::html_inner(&text, (2, 2 + raw.len()));
        assert_eq!(&text[s..e], inner, "{raw}");
    }
}

/// A quoted value that runs past its attribute's closing quote swallows the start of
/// the next tag's `name="…"`. The scan went on after the value, so that tag's `content=` was
/// left in clear; a second pass, seeing the marker, redacted it. One pass must do both.
#[test]
fn a_value_that_swallows_the_next_name_does_not_hide_its_value() {
    let s = Sanitizer::new();
    let cases = [
        // The fuzzer's input (its binary prefix dropped), and its family.
        (
            r#""html":disablt<meta name="csrf-pAME='_aram"":disablt<meta name="csrf-pAME='_aram" contrf-token content=TOK4>"#,
            r#""html":disablt<meta name="csrf-pAME='[redacted:csrf]'_aram" contrf-token content=[redacted:csrf]>"#,
        ),
        (
            r#"<meta name="token='x"><meta name="csrf-token" content='TOK4'>"#,
            r#"<meta name="token='[redacted:token]'[redacted:csrf]'>"#,
        ),
        (
            r#"<meta name="token='x password=1"><meta name="csrf-token" content='TOK4'>"#,
            r#"<meta name="token='[redacted:token]'[redacted:csrf]'>"#,
        ),
        // The quote that closes one value opens the next attribute.
        (
            "secret='abc'value=TOK4 name=csrf",
            "secret='[redacted:secret]'value=[redacted:csrf] name=csrf",
        ),
        // The joined name only reads as sensitive once the first value is a marker.
        (
            r#"<meta name="csrf-pAME='_aram"":disablt<meta name="x-pAME='_aram" contrf-token content=TOK4>"#,
            r#"<meta name="csrf-pAME='[redacted:csrf]'_aram" contrf-token content=[redacted:csrf]>"#,
        ),
        // An id between the attributes reads as one, as its handle does.
        (
            "<meta name=csrf 8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1 content=TOK4>",
            "<meta name=csrf HANDLE content=[redacted:csrf]>",
        ),
        // What sits between `name=` and `value=` is judged too.
        (
            "<input name=csrf data-jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl value=TOK4>",
            "<input name=csrf data-jwt=[redacted:token] value=[redacted:csrf]>",
        ),
    ];
    let handle = s.handle("8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1").into_string();
    for (input, want) in cases {
        let once = clean(&s, input);
        assert_eq!(once, want.replace("HANDLE", &handle), "{input}");
        assert!(!once.contains("TOK4"), "{once}");
        assert_eq!(clean(&s, &once), once, "not a fixed point: {input}");
    }
}

/// The rescan after a value never starts inside a name: `roxy-Authorization` is not a header.
#[test]
fn the_scan_after_a_value_never_reads_a_name_tail() {
    let s = Sanitizer::new();
    assert_eq!(
        clean(
            &s,
            "Proxy-Authorization: Basic dXNlcjpwYXNz\r\nHost: example.com"
        ),
        "Proxy-Authorization: Basic [redacted:authorization]\r\nHost: example.com"
    );
    assert_eq!(
        clean(&s, "x_session_token=abc next"),
        "x_session_token=[redacted:session] next"
    );
}

/// A token the name/value detector does not take for an attribute (a replacement character, a
/// `+`, more than 64 characters) sits between `value=` and `name=`; a rule replaces it with a
/// marker, which does read as one, so a second pass joined the two into one tag and redacted the
/// value the first pass kept. The campaign's finding (its binary prefix dropped) and its family.
#[test]
fn a_token_that_becomes_an_attribute_when_redacted_is_judged_in_the_same_pass() {
    let s = Sanitizer::new();
    // A JWT of more than 64 characters: a token detector replaces it whole.
    let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
    let cases = [
        "secrnt='abc'value=T\u{fffd}\u{fffd}Beaar\u{fffd}accesskeyhorzation: Beaar\u{fffd}\u{fffd}OK5 name=csrf".to_string(),
        format!("<input value=TOK4 {jwt} name=_csrf>"),
        format!("<input value=TOK4 data-a=1 {jwt} name=_csrf>"),
        format!("value=TOK4\t{jwt}\tname=csrf"),
    ];
    for input in cases {
        let once = clean(&s, &input);
        assert_eq!(clean(&s, &once), once, "not a fixed point: {input}");
        assert!(once.contains("value=[redacted:csrf]"), "{input} → {once}");
        assert!(!once.contains("TOK4"), "{once}");
    }
}

/// A fuzzing campaign's input (4 December 2026) where the value after `'abc'` was redacted only
/// by a third round: the second redacted `'abc'`, which the first had left to an overlapping
/// match. Every text that changes now gets another round, whatever changed it.
#[test]
fn a_value_two_rounds_deep_is_redacted_in_one_call() {
    let s = Sanitizer::new();
    let bytes = b"<ma a name=\"t='TOK1'>\nsname=\"t='TOK1'>\nsecrnt='abc'value=T\x90\x90Beaar\x9d\x8daccesskeyhorzatIon: Beaar\x9d\x8d\x90OK5 name=csrfecrnt='abc'value=T\x90\x90Beaar\x9d\x8daccesskeyhorzatIon: Beaar\x9d\x8d\x90OK5 name=csrf";
    let input = String::from_utf8_lossy(bytes);
    let once = clean(&s, &input);
    assert_eq!(clean(&s, &once), once, "not a fixed point: {input}");
    assert_eq!(once.matches("value=[redacted:csrf]").count(), 2, "{once}");
    assert!(!once.contains("OK5"), "{once}");
}
