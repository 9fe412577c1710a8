//! The ways a value the agent must not see comes back written in what a browser MCP server
//! returns: as typed, escaped for JSON or a JavaScript string (a snapshot, the code a tool ran),
//! percent-encoded as the page's scripts and the browser write URLs, HTML-escaped (markup read
//! back), and base64 of the whole value (a data attribute, a header). [`spellings`] lists them
//! all for one value, each also JSON-escaped (text that holds JSON). Pure string functions.

use base64::Engine as _;
use std::fmt::Write as _;

/// Every distinct spelling of `value`, longest first.
pub(crate) fn spellings(value: &str) -> Vec<String> {
    let mut base = vec![value.to_owned(), json(value), js_single(value)];
    for set in [
        Percent::Form,
        Percent::FormSpace,
        Percent::Component,
        Percent::Uri,
        Percent::Query,
        Percent::Path,
    ] {
        base.push(percent(value, set));
    }
    // A script's encoding, escaped again by the browser as it takes the URL: `'` that
    // `encodeURIComponent` leaves is `%27` in a query.
    for set in [Percent::Component, Percent::Uri] {
        base.push(percent(&percent(value, set), Percent::Query));
    }
    for set in [
        Html::Text,
        Html::Attribute,
        Html::AttributeOld,
        Html::Decimal,
        Html::Hex,
    ] {
        base.push(html(value, set));
    }
    let bytes = value.as_bytes();
    for engine in [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        base.push(engine.encode(bytes));
    }
    let mut all: Vec<String> = base.iter().map(|s| json(s)).collect();
    all.extend(base);
    all.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    all.dedup();
    all.retain(|s| !s.is_empty());
    all
}

/// The inside of a JSON string, escaped exactly as `serde_json` (and `JSON.stringify`) writes it.
pub(crate) fn json(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// The inside of a single-quoted JavaScript string as Playwright's generated code writes it
/// (`fill('…')`: JSON's escapes, `"` left alone, `'` escaped).
fn js_single(s: &str) -> String {
    json(s).replace("\\\"", "\"").replace('\'', "\\'")
}

/// Which bytes a percent-encoder leaves as they are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Percent {
    /// `application/x-www-form-urlencoded` (`URLSearchParams`, forms): space as `+`.
    Form,
    /// The same with a space as `%20`.
    FormSpace,
    /// `encodeURIComponent`.
    Component,
    /// `encodeURI`.
    Uri,
    /// What the browser itself escapes in a query it is given raw (WHATWG query set).
    Query,
    /// What the browser escapes in a path it is given raw (WHATWG path set).
    Path,
}

impl Percent {
    fn keeps(self, b: u8) -> bool {
        let alnum = b.is_ascii_alphanumeric();
        let controls_or_high = !(0x20..=0x7e).contains(&b);
        match self {
            Percent::Form | Percent::FormSpace => alnum || b"*-._".contains(&b),
            Percent::Component => alnum || b"-_.!~*'()".contains(&b),
            Percent::Uri => alnum || b"-_.!~*'();,/?:@&=+$#".contains(&b),
            Percent::Query => !controls_or_high && !b" \"#<>'".contains(&b),
            Percent::Path => !controls_or_high && !b" \"#<>?`{}".contains(&b),
        }
    }
}

fn percent(s: &str, set: Percent) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b == b' ' && set == Percent::Form {
            out.push('+');
        } else if set.keeps(b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Which characters an HTML serializer escapes.
#[derive(Clone, Copy)]
enum Html {
    /// Text content as the browser serializes it (`innerHTML`): `&`, `<`, `>`.
    Text,
    /// An attribute value as current Chromium serializes it: `&`, `"`, `<`, `>`.
    Attribute,
    /// An attribute value as older browsers serialize it: `&`, `"`.
    AttributeOld,
    /// A server-side escaper's full set, `'` as `&#39;`.
    Decimal,
    /// The same, `'` as `&#x27;`.
    Hex,
}

fn html(s: &str, set: Html) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let e = match (c, set) {
            ('&', _) => "&amp;",
            ('\u{a0}', _) => "&nbsp;",
            ('<' | '>', Html::AttributeOld) => "",
            ('<', _) => "&lt;",
            ('>', _) => "&gt;",
            ('"', Html::Text) => "",
            ('"', _) => "&quot;",
            ('\'', Html::Decimal) => "&#39;",
            ('\'', Html::Hex) => "&#x27;",
            _ => "",
        };
        if e.is_empty() {
            out.push(c);
        } else {
            out.push_str(e);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spelling_as_its_writer_writes_it() {
        let v = "Pw&<7\"Zq!x9'K d";
        let all = spellings(v);
        let has = |s: &str| all.iter().any(|x| x == s);
        assert!(has(v));
        assert!(has(r#"Pw&<7\"Zq!x9'K d"#), "JSON");
        assert!(has(r#"Pw&<7"Zq!x9\'K d"#), "Playwright's code");
        assert!(has("Pw%26%3C7%22Zq%21x9%27K+d"), "form");
        assert!(has("Pw%26%3C7%22Zq%21x9%27K%20d"), "form, %20");
        assert!(has("Pw%26%3C7%22Zq!x9'K%20d"), "encodeURIComponent");
        assert!(has("Pw&%3C7%22Zq!x9'K%20d"), "encodeURI");
        assert!(has("Pw&%3C7%22Zq!x9%27K%20d"), "the browser's query");
        assert!(
            has("Pw%26%3C7%22Zq!x9%27K%20d"),
            "encodeURIComponent, then the browser's query"
        );
        assert!(has("Pw&%3C7%22Zq!x9'K%20d"), "the browser's path");
        assert!(has("Pw&amp;&lt;7\"Zq!x9'K d"), "innerHTML text");
        assert!(has("Pw&amp;&lt;7&quot;Zq!x9'K d"), "attribute");
        assert!(has("Pw&amp;<7&quot;Zq!x9'K d"), "older attribute");
        assert!(has("Pw&amp;&lt;7&quot;Zq!x9&#39;K d"), "escaper");
        assert!(has("Pw&amp;&lt;7&quot;Zq!x9&#x27;K d"), "escaper, hex");
        assert!(has("UHcmPDciWnEheDknSyBk"), "base64");
        assert!(has(r#"Pw&amp;&lt;7&quot;Zq!x9'K d"#));
        // Longest first, no duplicates.
        assert!(all
            .windows(2)
            .all(|w| w[0].len() >= w[1].len() && w[0] != w[1]));
        // A plain value has few spellings: itself and its base64, padded or not.
        assert_eq!(
            spellings("abcd1234"),
            ["YWJjZDEyMzQ=", "YWJjZDEyMzQ", "abcd1234"]
        );
    }

    #[test]
    fn the_encoders_agree_with_the_libraries() {
        for s in ["a b+c/é\u{1}\"\\'<&>~!*()", "\u{a0}x\ty\nz\u{7f}", "🙂 ✓"] {
            let j = serde_json::to_string(s).unwrap();
            assert_eq!(json(s), j[1..j.len() - 1]);
            let form: String = url::form_urlencoded::byte_serialize(s.as_bytes()).collect();
            assert_eq!(percent(s, Percent::Form), form);
            assert_eq!(percent(s, Percent::FormSpace), form.replace('+', "%20"));
            // The browser's own escaping of a raw query and path (it drops tabs and newlines,
            // and reads `#`, `?` and `\` as URL syntax).
            let raw: String = s.chars().filter(|c| !"\t\n\r#?\\".contains(*c)).collect();
            let u = url::Url::parse(&format!("http://h/p{raw}?q={raw}")).unwrap();
            assert_eq!(u.path(), format!("/p{}", percent(&raw, Percent::Path)));
            assert_eq!(
                u.query().unwrap(),
                format!("q={}", percent(&raw, Percent::Query))
            );
        }
    }
}
