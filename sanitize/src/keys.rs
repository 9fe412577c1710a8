//! Key classification: is the value under this name a secret, a structural field, or neither?
//!
//! Keys are split into lower-case words (`inputTokens` → `input tokens`, `X-CSRF-Token` →
//! `x csrf token`, `SAMLResponse` → `saml response`, `connect.sid` → `connect sid`). A key is
//! sensitive when one of its words is (or contains) a sensitive stem. Two exemptions keep data
//! that only *mentions* a secret: structural suffixes (`tokenType`, `sessionCount`,
//! `passwordRequired`, `tokenUrl`) and boolean/counting prefixes (`hasPassword`, `maxTokens`).
//! Multi-word keys with the plural `tokens` (`inputTokens`, `cache_read_input_tokens`) are
//! counts, not credentials. Keys ending in `id` (`sessionId`, `accessKeyId`) are *id-like*: a CDP
//! id under them becomes a handle, anything else is redacted.
//!
//! Pure string functions; the decision never depends on the value.

use crate::rules::Rule;

/// What a key says about its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyClass {
    /// Nothing sensitive in the name.
    Plain,
    /// Mentions a secret but names metadata about it (a count, a type, a URL, a flag).
    Structural,
    /// The value is a secret of this kind.
    Sensitive(Rule),
    /// An identifier of a secret thing (`sessionId`): CDP ids become handles, else redacted.
    IdLike(Rule),
}

/// Last words that make a key structural: the value describes the secret, it is not the secret.
const STRUCTURAL_SUFFIXES: &[&str] = &[
    "age",
    "alg",
    "algorithm",
    "at",
    "attempts",
    "changed",
    "count",
    "counts",
    "created",
    "date",
    "disabled",
    "domain",
    "duration",
    "enabled",
    "encoding",
    "endpoint",
    "exists",
    "expiration",
    "expired",
    "expires",
    "expiry",
    "field",
    "flow",
    "format",
    "header",
    "hidden",
    "hint",
    "idx",
    "index",
    "issuer",
    "kind",
    "label",
    "len",
    "length",
    "level",
    "lifetime",
    "limit",
    "location",
    "max",
    "method",
    "min",
    "mode",
    "modified",
    "ms",
    "name",
    "names",
    "num",
    "number",
    "param",
    "parameter",
    "path",
    "pattern",
    "placeholder",
    "policy",
    "prefix",
    "present",
    "provider",
    "remaining",
    "required",
    "retries",
    "rules",
    "scheme",
    "scope",
    "scopes",
    "score",
    "seconds",
    "secs",
    "selector",
    "sent",
    "shown",
    "size",
    "source",
    "status",
    "strategy",
    "strength",
    "time",
    "timeout",
    "timestamp",
    "total",
    "ttl",
    "type",
    "types",
    "updated",
    "uri",
    "url",
    "urls",
    "usage",
    "used",
    "valid",
    "verified",
    "version",
    "visible",
];

/// First words that make a multi-word key a flag or a count (`hasPassword`, `maxSessionAge`).
const STRUCTURAL_PREFIXES: &[&str] = &[
    "allow", "can", "count", "disable", "disabled", "enable", "enabled", "has", "is", "max", "min",
    "needs", "num", "require", "required", "requires", "should", "show", "supports", "total",
    "use",
];

/// Last words that make a key an identifier.
const ID_SUFFIXES: &[&str] = &["guid", "id", "ids", "uuid"];

/// Classifies a key (a JSON key, a header name, a `name=` in text, a query parameter name).
pub(crate) fn classify(key: &str) -> KeyClass {
    if !has_stem(key) || is_file_name(key) {
        return KeyClass::Plain;
    }
    let words = split_words(key);
    // ASP.NET's anti-forgery field and header (`__RequestVerificationToken`).
    if words.len() == 3
        && words[0] == "request"
        && words[1] == "verification"
        && words[2] == "token"
    {
        return KeyClass::Sensitive(Rule::Csrf);
    }
    let multi = words.len() > 1;
    let mut best: Option<Rule> = None;
    let mut prev: Option<&str> = None;
    for w in &words {
        if !(multi && w == "tokens") {
            if let Some(rule) = word_rule(w, prev) {
                best = Some(match best {
                    Some(b) if priority(b) <= priority(rule) => b,
                    _ => rule,
                });
            }
        }
        prev = Some(w);
    }
    let Some(rule) = best else {
        return KeyClass::Plain;
    };
    let (Some(first), Some(last)) = (words.first(), words.last()) else {
        return KeyClass::Plain;
    };
    if multi && ID_SUFFIXES.binary_search(&last.as_str()).is_ok() {
        return KeyClass::IdLike(rule);
    }
    if multi
        && (STRUCTURAL_SUFFIXES.binary_search(&last.as_str()).is_ok()
            || STRUCTURAL_PREFIXES.binary_search(&first.as_str()).is_ok())
    {
        return KeyClass::Structural;
    }
    KeyClass::Sensitive(rule)
}

/// `auth.3f2a1c.js` in `at refresh (…/auth.3f2a1c.js:12:345)` is a file, not a secret's name.
fn is_file_name(key: &str) -> bool {
    key.rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && FILE_EXTENSIONS.binary_search(&ext).is_ok())
}

/// Extensions of files that show up in stack traces and logs (sorted).
const FILE_EXTENSIONS: &[&str] = &[
    "cjs", "css", "go", "htm", "html", "java", "js", "json", "jsx", "map", "mjs", "php", "py",
    "rb", "rs", "scss", "svelte", "ts", "tsx", "vue", "wasm",
];

/// True for header names whose value runs to the end of the line in `Name: value` form
/// (`Cookie`, `Set-Cookie`, `Authorization`, `Proxy-Authorization`).
pub(crate) fn is_whole_line_header(name: &str) -> bool {
    let words = split_words(name);
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    matches!(
        w.as_slice(),
        ["cookie"]
            | ["cookie2"]
            | ["set", "cookie"]
            | ["set", "cookie2"]
            | ["authorization"]
            | ["proxy", "authorization"]
    )
}

/// Cheap gate: every sensitive word contains a key/value stem, so a key without one of the
/// stems' trigrams (the pre-filter's table) is plain without splitting it into words.
fn has_stem(key: &str) -> bool {
    crate::prefilter::has_stem_trigram(key.as_bytes())
}

/// The rule a single word (with the word before it) points at.
fn word_rule(w: &str, prev: Option<&str>) -> Option<Rule> {
    let pair = |a: &str| prev == Some(a);
    // Rails' anti-forgery field is `authenticity_token`.
    if w.contains("csrf") || w.contains("xsrf") || w == "authenticity" {
        return Some(Rule::Csrf);
    }
    if matches!(w, "otp" | "totp" | "hotp" | "mfa" | "2fa" | "onetimecode")
        || (w == "code"
            && [
                "verification",
                "sms",
                "security",
                "recovery",
                "backup",
                "mfa",
                "otp",
                "time",
            ]
            .iter()
            .any(|p| pair(p)))
    {
        return Some(Rule::Otp);
    }
    if w.contains("passw")
        || matches!(
            w,
            "pass" | "pwd" | "passphrase" | "passcode" | "pin" | "pincode"
        )
    {
        return Some(Rule::Password);
    }
    if w.contains("session") || w.contains("sessid") || w == "sid" {
        return Some(Rule::Session);
    }
    if w.contains("cookie") {
        return Some(Rule::Cookie);
    }
    if w == "authorization" {
        return Some(Rule::Authorization);
    }
    if w.contains("apikey") || (w == "key" && pair("api")) {
        return Some(Rule::ApiKey);
    }
    if w.contains("token")
        || w.contains("jwt")
        || w.contains("saml")
        || w == "auth"
        || w == "bearer"
    {
        return Some(Rule::Token);
    }
    if w.contains("secret")
        || w.contains("credential")
        || w.contains("privatekey")
        || w.contains("accesskey")
        || matches!(w, "creds" | "verifier" | "signature")
        || (w == "key"
            && [
                "private",
                "access",
                "signing",
                "encryption",
                "master",
                "client",
                "session",
            ]
            .iter()
            .any(|p| pair(p)))
    {
        return Some(Rule::Secret);
    }
    None
}

/// Lower wins when a key names two kinds (`csrf_token` is CSRF, `session_token` a session).
fn priority(rule: Rule) -> u8 {
    match rule {
        Rule::Csrf => 0,
        Rule::Otp => 1,
        Rule::Password => 2,
        Rule::Session => 3,
        Rule::Cookie => 4,
        Rule::Authorization => 5,
        Rule::ApiKey => 6,
        Rule::Token => 7,
        Rule::Secret => 8,
        Rule::PrivateKey
        | Rule::Bearer
        | Rule::Jwt
        | Rule::Userinfo
        | Rule::QueryToken
        | Rule::CdpCapability
        | Rule::CdpId => 9,
    }
}

/// Splits a key into lower-case words at punctuation and camelCase boundaries
/// (`SAMLResponse` → `saml`, `response`; digits stay with their word: `oauth2Token` → `oauth2`,
/// `token`).
pub(crate) fn split_words(key: &str) -> Vec<String> {
    let chars: Vec<char> = key.chars().collect();
    let mut words = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_tables_are_sorted_for_binary_search() {
        for table in [
            STRUCTURAL_SUFFIXES,
            STRUCTURAL_PREFIXES,
            ID_SUFFIXES,
            FILE_EXTENSIONS,
        ] {
            assert!(table.windows(2).all(|w| w[0] < w[1]), "{table:?}");
        }
    }

    #[test]
    fn splits_words() {
        assert_eq!(split_words("inputTokens"), ["input", "tokens"]);
        assert_eq!(split_words("X-CSRF-Token"), ["x", "csrf", "token"]);
        assert_eq!(split_words("SAMLResponse"), ["saml", "response"]);
        assert_eq!(split_words("connect.sid"), ["connect", "sid"]);
        assert_eq!(split_words("PHPSESSID"), ["phpsessid"]);
        assert_eq!(split_words("oauth2Token"), ["oauth2", "token"]);
        assert_eq!(
            split_words("ASP.NET_SessionId"),
            ["asp", "net", "session", "id"]
        );
        assert_eq!(split_words(""), Vec::<String>::new());
    }

    #[test]
    fn sensitive_keys() {
        use KeyClass::Sensitive as S;
        let cases = [
            ("password", S(Rule::Password)),
            ("new_password", S(Rule::Password)),
            ("passwd", S(Rule::Password)),
            ("user[password]", S(Rule::Password)),
            ("pin", S(Rule::Password)),
            ("client_secret", S(Rule::Secret)),
            ("secret", S(Rule::Secret)),
            ("api_key", S(Rule::ApiKey)),
            ("apiKey", S(Rule::ApiKey)),
            ("X-Api-Key", S(Rule::ApiKey)),
            ("private_key", S(Rule::Secret)),
            ("aws_secret_access_key", S(Rule::Secret)),
            ("credentials", S(Rule::Secret)),
            ("auth", S(Rule::Token)),
            ("X-Auth-Token", S(Rule::Token)),
            ("access_token", S(Rule::Token)),
            ("id_token", S(Rule::Token)),
            ("jwt", S(Rule::Token)),
            ("SAMLResponse", S(Rule::Token)),
            ("SAMLRequest", S(Rule::Token)),
            ("session", S(Rule::Session)),
            ("sessionid", S(Rule::Session)),
            ("PHPSESSID", S(Rule::Session)),
            ("JSESSIONID", S(Rule::Session)),
            ("connect.sid", S(Rule::Session)),
            ("sid", S(Rule::Session)),
            ("session_token", S(Rule::Session)),
            ("csrf_token", S(Rule::Csrf)),
            ("X-XSRF-TOKEN", S(Rule::Csrf)),
            ("csrfmiddlewaretoken", S(Rule::Csrf)),
            ("authenticity_token", S(Rule::Csrf)),
            ("__RequestVerificationToken", S(Rule::Csrf)),
            ("RequestVerificationToken", S(Rule::Csrf)),
            ("_csrf", S(Rule::Csrf)),
            ("xsrf-token", S(Rule::Csrf)),
            ("_token", S(Rule::Token)),
            ("otp", S(Rule::Otp)),
            ("totp", S(Rule::Otp)),
            ("mfa_code", S(Rule::Otp)),
            ("verificationCode", S(Rule::Otp)),
            ("one_time_code", S(Rule::Otp)),
            ("code_verifier", S(Rule::Secret)),
            ("Cookie", S(Rule::Cookie)),
            ("Set-Cookie", S(Rule::Cookie)),
            ("Authorization", S(Rule::Authorization)),
            ("Proxy-Authorization", S(Rule::Authorization)),
            ("tokens", S(Rule::Token)),
        ];
        for (key, want) in cases {
            assert_eq!(classify(key), want, "{key}");
        }
    }

    #[test]
    fn structural_and_plain_keys() {
        for key in [
            "inputTokens",
            "outputTokens",
            "cache_read_input_tokens",
            "max_tokens",
            "sessionCount",
            "tokenType",
            "token_type",
            "passwordRequired",
            "hasPassword",
            "isAuthenticated",
            "tokenUrl",
            "token_endpoint",
            "csrf_header_name",
            "csrf-param",
            "cookieCount",
            "session_expires",
            "maxSessionAge",
        ] {
            let c = classify(key);
            assert!(
                matches!(c, KeyClass::Structural | KeyClass::Plain),
                "{key}: {c:?}"
            );
        }
        for key in [
            "url",
            "type",
            "key",
            "code",
            "author",
            "keyboard",
            "statusCode",
            "targetId",
            "id",
            "inside",
            "timestamp",
        ] {
            assert_eq!(classify(key), KeyClass::Plain, "{key}");
        }
    }

    #[test]
    fn id_like_keys() {
        assert_eq!(classify("sessionId"), KeyClass::IdLike(Rule::Session));
        assert_eq!(
            classify("ASP.NET_SessionId"),
            KeyClass::IdLike(Rule::Session)
        );
        assert_eq!(classify("accessKeyId"), KeyClass::IdLike(Rule::Secret));
    }

    #[test]
    fn whole_line_headers() {
        assert!(is_whole_line_header("Cookie"));
        assert!(is_whole_line_header("set-cookie"));
        assert!(is_whole_line_header("Proxy-Authorization"));
        assert!(!is_whole_line_header("X-Auth-Token"));
    }
}
