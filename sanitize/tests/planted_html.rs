//! Planted tokens in HTML `name`/`value` attribute pairs: CSRF fields of the common frameworks,
//! in every attribute order, quoting and case a page or a log prints them in, plus other
//! sensitive field names (passwords, one-time codes, sessions) that the same detector covers.

use cdp_sanitize::Sanitizer;

/// How an attribute value is written.
#[derive(Clone, Copy, Debug)]
enum Quote {
    Double,
    Single,
    Bare,
    /// Inside a JSON string: `name=\"…\"`.
    JsonEscaped,
    /// Entity-escaped HTML (`&quot;`), e.g. inside another attribute or an escaped log.
    Entity,
    /// Entity-escaped by number (`&#34;`).
    NumericEntity,
}

const QUOTES: [Quote; 6] = [
    Quote::Double,
    Quote::Single,
    Quote::Bare,
    Quote::JsonEscaped,
    Quote::Entity,
    Quote::NumericEntity,
];

fn attr(name: &str, value: &str, q: Quote) -> String {
    match q {
        Quote::Double => format!(r#"{name}="{value}""#),
        Quote::Single => format!("{name}='{value}'"),
        Quote::Bare => format!("{name}={value}"),
        Quote::JsonEscaped => format!(r#"{name}=\"{value}\""#),
        Quote::Entity => format!("{name}=&quot;{value}&quot;"),
        Quote::NumericEntity => format!("{name}=&#34;{value}&#34;"),
    }
}

/// (field name, value attribute, planted token) — the CSRF fields of Django, Rails, Spring /
/// Express, ASP.NET, Laravel and generic apps, and other sensitive fields.
const FIELDS: &[(&str, &str, &str)] = &[
    ("csrfmiddlewaretoken", "value", "DJANGOLEAK0a1b2c3d4e5f"),
    ("authenticity_token", "value", "RAILSLEAK+9x8y7z6w5v=="),
    ("csrf-token", "content", "RAILSMETALEAK1q2w3e4r"),
    ("_csrf", "value", "SPRINGLEAK5t6y7u8i9o"),
    (
        "__RequestVerificationToken",
        "value",
        "ASPNETLEAKCfDJ8AbCdEf",
    ),
    ("_token", "value", "LARAVELLEAK0p9o8i7u6y"),
    ("csrf_token", "value", "FLASKLEAK1a2s3d4f5g"),
    ("xsrf-token", "content", "XSRFLEAK6h7j8k9l0z"),
    ("password", "value", "PWLEAK777hunter"),
    ("otp", "value", "OTPLEAK492113"),
    ("session_id", "value", "SESSLEAKq7k2m9x4"),
];

/// Attributes that sit between the name and the value in real markup.
const BETWEEN: &[&str] = &[
    "",
    r#" type="hidden""#,
    " type=hidden autocomplete=off",
    r#" id='f1' data-x="1" required"#,
];

fn tag(
    field: &str,
    value_attr: &str,
    token: &str,
    q: Quote,
    between: &str,
    value_first: bool,
    upper: bool,
) -> String {
    let (name_key, value_key) = if upper {
        ("NaMe".to_owned(), value_attr.to_uppercase())
    } else {
        ("name".to_owned(), value_attr.to_owned())
    };
    let between = match q {
        Quote::JsonEscaped => between.replace('"', "\\\""),
        Quote::Entity | Quote::NumericEntity => between.replace('"', "&quot;"),
        _ => between.to_owned(),
    };
    let name = attr(&name_key, field, q);
    let value = attr(&value_key, token, q);
    let (open, close) = match q {
        Quote::Entity | Quote::NumericEntity => ("&lt;input ", "&gt;"),
        _ => ("<input ", ">"),
    };
    if value_first {
        format!("{open}{value}{between} {name}{close}")
    } else {
        format!("{open}{name}{between} {value}{close}")
    }
}

#[test]
fn csrf_and_other_sensitive_fields_in_html_attributes() {
    let s = Sanitizer::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for &(field, value_attr, token) in FIELDS {
        for q in QUOTES {
            for between in BETWEEN {
                for value_first in [false, true] {
                    for upper in [false, true] {
                        let html = tag(field, value_attr, token, q, between, value_first, upper);
                        for input in [
                            html.clone(),
                            format!("page html: {html} (end)"),
                            // The same markup, quoted inside a JSON string in a log line.
                            format!(r#"{{"html":"{}"}}"#, html.replace('"', "\\\"")),
                        ] {
                            checked += 1;
                            let out = s.text(&input).into_string();
                            if out.contains(token) {
                                failures.push(format!("{token} survived: {input} -> {out}"));
                            }
                            if !out.contains(field) {
                                failures.push(format!("field name {field} lost: {input} -> {out}"));
                            }
                            let again = s.text(&out).into_string();
                            if again != out {
                                failures.push(format!("not a fixed point: {out} -> {again}"));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 1000);
    assert!(
        failures.is_empty(),
        "{} failures, first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn framework_markup_as_served() {
    let s = Sanitizer::new();
    let cases = [
        (
            r#"<form method="post"><input type="hidden" name="csrfmiddlewaretoken" value="Kp3nXw9ZqR5tLm2YvB8cHd4Fj6Gs1Ae0DJANGO"></form>"#,
            "Kp3nXw9ZqR5tLm2YvB8cHd4Fj6Gs1Ae0DJANGO",
            r#"<input type="hidden" name="csrfmiddlewaretoken" value="[redacted:csrf]">"#,
        ),
        (
            r#"<input type="hidden" name="authenticity_token" value="lHJ0+Yy8RAILS/3bQ==" autocomplete="off" />"#,
            "lHJ0+Yy8RAILS/3bQ==",
            r#"name="authenticity_token" value="[redacted:csrf]" autocomplete="off" />"#,
        ),
        (
            r#"<meta name="csrf-param" content="authenticity_token" />
<meta name="csrf-token" content="THvrj2Jk0GrQ3mJKLf9pRAILSMETA==" />"#,
            "THvrj2Jk0GrQ3mJKLf9pRAILSMETA==",
            r#"<meta name="csrf-param" content="authenticity_token" />
<meta name="csrf-token" content="[redacted:csrf]" />"#,
        ),
        (
            r#"<input type="hidden" name="_csrf" value="4bfd1575-3ad1-4d21-96c7-SPRING"/>"#,
            "4bfd1575-3ad1-4d21-96c7-SPRING",
            r#"name="_csrf" value="[redacted:csrf]"/>"#,
        ),
        (
            r#"<input name="__RequestVerificationToken" type="hidden" value="CfDJ8NrAkSASPNETxyz-_abc" />"#,
            "CfDJ8NrAkSASPNETxyz-_abc",
            r#"<input name="__RequestVerificationToken" type="hidden" value="[redacted:csrf]" />"#,
        ),
        (
            r#"<input type="hidden" name="_token" value="LARAVELa8d7f6e5c4b3a2918273645" autocomplete="off">"#,
            "LARAVELa8d7f6e5c4b3a2918273645",
            r#"name="_token" value="[redacted:token]" autocomplete="off">"#,
        ),
        (
            "<input type=hidden name=csrfmiddlewaretoken value=TOKUNQUOTED123>",
            "TOKUNQUOTED123",
            "<input type=hidden name=csrfmiddlewaretoken value=[redacted:csrf]>",
        ),
        (
            r#"<INPUT VALUE='TOKVALUEFIRST9' TYPE='hidden' NAME='csrf_token'>"#,
            "TOKVALUEFIRST9",
            r#"<INPUT VALUE='[redacted:csrf]' TYPE='hidden' NAME='csrf_token'>"#,
        ),
    ];
    for (input, token, want) in cases {
        let out = s.text(input).into_string();
        assert!(!out.contains(token), "{token} survived: {out}");
        assert!(out.contains(want), "want {want}\n got {out}");
    }
}

#[test]
fn plain_fields_and_descriptive_attributes_are_kept() {
    let s = Sanitizer::new();
    for input in [
        r#"<input type="text" name="q" value="running shoes">"#,
        r#"<input value="running shoes" name="search">"#,
        r#"<meta name="csrf-param" content="authenticity_token">"#,
        r#"<meta name="description" content="Shop for running shoes">"#,
        r#"<input name="password_confirmation_required" value="true">"#,
        "<option value=3 selected>three</option> name=size",
    ] {
        assert_eq!(s.text(input).as_str(), input);
    }
}

#[test]
fn a_secret_in_a_plain_fields_value_is_still_found() {
    let s = Sanitizer::new();
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZGEifQ.d2hhdGV2ZXI";
    for input in [
        format!(r#"<input value="{jwt}" type="hidden" name="state">"#),
        format!(r#"<input name="state" type="hidden" value="{jwt}">"#),
    ] {
        let out = s.text(&input).into_string();
        assert!(!out.contains("eyJzdWIiOiJhZGEifQ"), "{out}");
    }
}
