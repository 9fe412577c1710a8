//! The rule table: what the text sanitizer looks for, as data.
//!
//! A [`Rule`] is an *outcome* — the kind of secret that was removed; it names the marker
//! (`[redacted:<rule>]`) and the counter in the redaction summary. A [`Detector`] is a *pattern*
//! — one `(?x)` regex in the combined alternation. Several rules share a detector: the
//! key/value detector finds `name=value` shapes and the key classifier (`keys.rs`) decides
//! whether the value is a password, a session id, a CSRF token and so on.
//!
//! Everything here is compiled once (`LazyLock`) and matched without `_` arms, so adding a rule
//! or a detector is a compile error until every `match` handles it.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::{Captures, Regex};
use std::sync::LazyLock;

/// One kind of redaction: the marker a reader sees and the counter in the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// PEM private key blocks (`-----BEGIN … PRIVATE KEY-----`).
    PrivateKey,
    /// `Cookie` / `Set-Cookie` header values and other cookie-named values.
    Cookie,
    /// `Authorization` / `Proxy-Authorization` header values (the scheme word is kept).
    Authorization,
    /// A credential after `Bearer`, `Basic`, `Token`, `Digest`, `Negotiate` or `NTLM` in free text.
    Bearer,
    /// A bare JSON Web Token: signed, unsigned (`alg: none`) or 5-part JWE.
    Jwt,
    /// An API key: `api_key=…` values and well-known token formats (GitHub, Slack, AWS, Google,
    /// Stripe, GitLab, npm, `sk-…`).
    ApiKey,
    /// The `user:password@` part of a URL.
    Userinfo,
    /// Query parameters that carry a capability: `code`, `key`, `sig`, `signature`, `state`,
    /// `ticket`, `hmac`, `nonce`.
    QueryToken,
    /// Values of password-like names (password, passwd, pwd, passphrase, passcode, pin).
    Password,
    /// Values of session names (session, sessid, sid, PHPSESSID, JSESSIONID, connect.sid).
    Session,
    /// Values of CSRF / XSRF names.
    Csrf,
    /// Values of one-time-code names (otp, totp, hotp, mfa, 2fa, verification code).
    Otp,
    /// Values of token names (token, access_token, id_token, jwt, auth, SAML request/response).
    Token,
    /// Values of other secret names (secret, client_secret, credential, private/access key,
    /// code_verifier, signature).
    Secret,
    /// A CDP capability URL path `/devtools/<kind>/<id>`: the id becomes a handle.
    CdpCapability,
    /// A bare CDP id (32 hex digits or a UUID): becomes a handle.
    CdpId,
}

impl Rule {
    /// Every rule, in summary order.
    pub const ALL: [Rule; 16] = [
        Rule::PrivateKey,
        Rule::Cookie,
        Rule::Authorization,
        Rule::Bearer,
        Rule::Jwt,
        Rule::ApiKey,
        Rule::Userinfo,
        Rule::QueryToken,
        Rule::Password,
        Rule::Session,
        Rule::Csrf,
        Rule::Otp,
        Rule::Token,
        Rule::Secret,
        Rule::CdpCapability,
        Rule::CdpId,
    ];

    /// The rule's name, as used in markers and in the redaction summary.
    pub fn name(self) -> &'static str {
        match self {
            Rule::PrivateKey => "private-key",
            Rule::Cookie => "cookie",
            Rule::Authorization => "authorization",
            Rule::Bearer => "bearer",
            Rule::Jwt => "jwt",
            Rule::ApiKey => "api-key",
            Rule::Userinfo => "userinfo",
            Rule::QueryToken => "query-token",
            Rule::Password => "password",
            Rule::Session => "session",
            Rule::Csrf => "csrf",
            Rule::Otp => "otp",
            Rule::Token => "token",
            Rule::Secret => "secret",
            Rule::CdpCapability => "cdp-capability",
            Rule::CdpId => "cdp-id",
        }
    }

    /// The text that replaces a value this rule removed. CDP ids are not masked but replaced by
    /// a handle (`target:<hex>`), so those two rules have no marker of their own.
    pub fn marker(self) -> &'static str {
        match self {
            Rule::PrivateKey => "[redacted:private-key]",
            Rule::Cookie => "[redacted:cookie]",
            Rule::Authorization => "[redacted:authorization]",
            Rule::Bearer => "[redacted:bearer]",
            Rule::Jwt => "[redacted:jwt]",
            Rule::ApiKey => "[redacted:api-key]",
            Rule::Userinfo => "[redacted:userinfo]",
            Rule::QueryToken => "[redacted:query-token]",
            Rule::Password => "[redacted:password]",
            Rule::Session => "[redacted:session]",
            Rule::Csrf => "[redacted:csrf]",
            Rule::Otp => "[redacted:otp]",
            Rule::Token => "[redacted:token]",
            Rule::Secret => "[redacted:secret]",
            Rule::CdpCapability | Rule::CdpId => "[redacted:cdp-id]",
        }
    }

    /// Index into counter arrays.
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// One pattern of the combined text regex. The order is the alternation order, which breaks
/// ties between detectors that match at the same position (leftmost-first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Detector {
    PrivateKey,
    Jwt,
    KnownToken,
    Userinfo,
    CdpCapability,
    QueryParam,
    KeyValue,
    SchemeCredential,
    CdpId,
}

impl Detector {
    const ALL: [Detector; 9] = [
        Detector::PrivateKey,
        Detector::Jwt,
        Detector::KnownToken,
        Detector::Userinfo,
        Detector::CdpCapability,
        Detector::QueryParam,
        Detector::KeyValue,
        Detector::SchemeCredential,
        Detector::CdpId,
    ];

    /// The capture group wrapping this detector in the combined regex.
    fn group(self) -> &'static str {
        match self {
            Detector::PrivateKey => "private_key",
            Detector::Jwt => "jwt",
            Detector::KnownToken => "known_token",
            Detector::Userinfo => "userinfo",
            Detector::CdpCapability => "cdp_capability",
            Detector::QueryParam => "query_param",
            Detector::KeyValue => "key_value",
            Detector::SchemeCredential => "scheme_credential",
            Detector::CdpId => "cdp_id",
        }
    }

    /// The pattern. Inner groups are named `<detector>_<part>` so they stay unique in the
    /// combined regex. Word boundaries are ASCII (`(?-u:\b)`) so the lazy DFA never gives up on
    /// non-ASCII text.
    fn pattern(self) -> &'static str {
        match self {
            Detector::PrivateKey => {
                r"(?x)
                -----BEGIN[\x20](?:[A-Z0-9]+[\x20])*PRIVATE[\x20]KEY(?:[\x20]BLOCK)?-----
                # Body: base64, PEM headers (Proc-Type: 4,ENCRYPTED), whitespace or JSON-escaped
                # newlines; a lone '-' is allowed (DEK-Info: AES-128-CBC) but '--' ends it.
                (?:[A-Za-z0-9+/=:,.\\\s]|-[A-Za-z0-9])*
                (?:-----END[\x20][A-Z0-9\x20]*-----)?"
            }
            Detector::Jwt => {
                r"(?x)
                (?-u:\b)
                # base64url of '{', '{\n', '{ ', '{\r\n': a JSON header, compact or pretty-printed
                (?:eyJ|ewo|eyAi|ew0K)[A-Za-z0-9_=-]{6,}
                (?:
                    # JWE: header.key.iv.ciphertext.tag (the key is empty for direct encryption)
                    \.[A-Za-z0-9_=-]*\.[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+
                    # JWS: header.payload.signature; the signature is empty for alg none
                  | \.[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]*
                )"
            }
            Detector::KnownToken => {
                r"(?x)
                (?-u:\b)
                (?:
                    gh[pousr]_[A-Za-z0-9]{30,}                 # GitHub
                  | github_pat_[A-Za-z0-9_]{40,}
                  | xox[abposr]-[A-Za-z0-9-]{10,}              # Slack
                  | (?:AKIA|ASIA)[0-9A-Z]{16}                  # AWS access key id
                  | AIza[0-9A-Za-z_-]{35}                      # Google API key
                  | (?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}   # Stripe secret / restricted
                  | glpat-[0-9A-Za-z_-]{20,}                   # GitLab
                  | npm_[A-Za-z0-9]{36}                        # npm
                  | sk-[A-Za-z0-9_-]{20,}                      # OpenAI-style secret keys
                )
                (?-u:\b)"
            }
            Detector::Userinfo => {
                r#"(?x)
                [A-Za-z][A-Za-z0-9+.-]*://
                (?P<userinfo_value>[^\s/?\#@"'<>\\]+)
                @"#
            }
            Detector::CdpCapability => {
                r"(?x)
                /devtools/
                (?P<cdp_capability_kind>page|browser|worker|shared_worker|service_worker|iframe
                    |other|tab|webview|background_page|app)
                /
                # Any id (handles included, so an already-sanitized path is seen whole).
                (?P<cdp_capability_id>[A-Za-z0-9._:-]+)"
            }
            Detector::QueryParam => {
                r#"(?x)
                [?&\#;]
                (?P<query_param_name>
                    (?i:(?:[A-Za-z0-9_.-]*[_.-])?(?:code|key|sig|signature|state|ticket|hmac|nonce))
                )
                =
                (?P<query_param_value>(?:\$\{[A-Z_][A-Z0-9_]*\}|[^\s"'&\#<>\\])+)"#
            }
            Detector::KeyValue => {
                r#"(?x)
                # A name containing a sensitive stem; keys.rs decides whether it really is one.
                (?P<key_value_name>
                    [A-Za-z0-9_.-]*
                    (?i:pass|pwd|secret|token|cred|auth|cookie|sess|sid|csrf|xsrf|jwt|otp|mfa|2fa
                        |pin|saml|verifier|signature|key|code|bearer)
                    [A-Za-z0-9_.-]*
                )
                # Optional closing quote of a quoted key (also JSON-escaped), then = : => :=
                (?P<key_value_sep>(?:\\?["'])?[\x20\t]*(?:=>|:=|[:=])[\x20\t]*)
                (?P<key_value_value>
                    \\"(?:[^"\\\r\n]|\\[^"\r\n])*(?:\\")?    # \"value\" inside a JSON string
                  | "(?:[^"\\\r\n]|\\.)*"?                   # "value" (to end of line if unclosed)
                  | '(?:[^'\\\r\n]|\\.)*'?                   # 'value'
                  | (?:\$\{[A-Z_][A-Z0-9_]*\}|[^\s"'&;,<>(){}\\])+   # bare value; ${NAME} whole
                )"#
            }
            Detector::SchemeCredential => {
                r"(?x)
                (?-u:\b)
                (?P<scheme_credential_scheme>(?i:bearer|basic|token|digest|negotiate|ntlm))
                [\x20\t]+
                # token68 (RFC 7235): '=' only as trailing padding
                (?P<scheme_credential_value>[A-Za-z0-9._~+/-]+=*)"
            }
            Detector::CdpId => {
                r"(?x)
                (?-u:\b)
                (?:
                    [0-9A-F]{32}       # Chromium target / frame / session / loader ids
                  | [0-9a-f]{32}
                  | [0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}  # browser ids
                )
                (?-u:\b)"
            }
        }
    }
}

/// The combined regex: every detector as one alternative, so one left-to-right pass finds the
/// leftmost match of any rule.
static COMBINED: LazyLock<Regex> = LazyLock::new(|| {
    let alternation: Vec<String> = Detector::ALL
        .iter()
        .map(|d| format!("(?P<{}>{})", d.group(), d.pattern()))
        .collect();
    // The patterns are constants covered by tests; failing here is a bug in this file.
    Regex::new(&alternation.join("|")).expect("the rule table compiles")
});

/// Finds the leftmost detector match at or after `start`.
pub(crate) fn find_at(text: &str, start: usize) -> Option<(Detector, Captures<'_>)> {
    let caps = COMBINED.captures_at(text, start)?;
    let detector = Detector::ALL
        .iter()
        .copied()
        .find(|d| caps.name(d.group()).is_some())?;
    Some((detector, caps))
}

/// Substrings at least one detector needs (ASCII case-insensitive). Text without any of them,
/// and without a hex run that could be a CDP id, cannot match, so it skips the regex entirely.
const TRIGGERS: &[&str] = &[
    // key/value stems and scheme words
    "pass",
    "pwd",
    "secret",
    "token",
    "cred",
    "auth",
    "cookie",
    "sess",
    "sid",
    "csrf",
    "xsrf",
    "jwt",
    "otp",
    "mfa",
    "2fa",
    "pin",
    "saml",
    "verifier",
    "signature",
    "key",
    "code",
    "bearer",
    "basic",
    "digest",
    "negotiate",
    "ntlm",
    // query-only names
    "sig",
    "state",
    "ticket",
    "hmac",
    "nonce",
    // JWT headers
    "eyj",
    "ewo",
    "eyai",
    "ew0k",
    // URLs, capability paths, PEM
    "://",
    "/devtools/",
    "-----begin",
    // well-known token prefixes
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xox",
    "akia",
    "asia",
    "aiza",
    "sk_live",
    "sk_test",
    "rk_live",
    "rk_test",
    "glpat-",
    "npm_",
    "sk-",
];

static TRIGGER_SET: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .build(TRIGGERS)
        .expect("the trigger list compiles")
});

/// Cheap pre-filter: false means no detector can match `text`.
pub(crate) fn may_match(text: &str) -> bool {
    has_id_candidate(text.as_bytes()) || TRIGGER_SET.is_match(text)
}

/// True when `b` holds a run of 32 hex digits or 8 hex digits followed by '-' (a UUID start).
fn has_id_candidate(b: &[u8]) -> bool {
    let mut run = 0usize;
    for &c in b {
        if c.is_ascii_hexdigit() {
            run += 1;
            if run >= 32 {
                return true;
            }
        } else {
            if c == b'-' && run >= 8 {
                return true;
            }
            run = 0;
        }
    }
    false
}

/// True when `s` is exactly a CDP id (32 hex digits of one case, or a UUID).
pub(crate) fn is_cdp_id(s: &str) -> bool {
    let b = s.as_bytes();
    match b.len() {
        32 => {
            b.iter()
                .all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(c))
                || b.iter()
                    .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        }
        36 => b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_regex_compiles_and_every_rule_has_a_distinct_name() {
        assert!(find_at("nothing here", 0).is_none());
        let mut names: Vec<_> = Rule::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Rule::ALL.len());
        for (i, r) in Rule::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
    }

    #[test]
    fn markers_name_their_rule() {
        for r in Rule::ALL {
            match r {
                Rule::CdpCapability | Rule::CdpId => {}
                _ => assert_eq!(r.marker(), format!("[redacted:{}]", r.name())),
            }
        }
    }

    #[test]
    fn prefilter_passes_what_detectors_need() {
        assert!(!may_match("GET /index.html 200 OK in 12ms"));
        assert!(may_match("Authorization: Bearer x"));
        assert!(may_match("id 8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1"));
        assert!(may_match("browser 3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44"));
        assert!(may_match("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"));
    }

    #[test]
    fn cdp_id_shapes() {
        assert!(is_cdp_id("8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1"));
        assert!(is_cdp_id("8e5b0e1c2f4d43a1b0b7a3f2e6d9c4b1"));
        assert!(!is_cdp_id("8e5b0e1c2f4d43a1b0b7a3f2e6d9C4B1"));
        assert!(is_cdp_id("3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44"));
        assert!(!is_cdp_id("3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a4"));
        assert!(!is_cdp_id(""));
    }

    #[test]
    fn detector_matches_at_the_expected_place() {
        let cases = [
            (
                "x -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- y",
                Detector::PrivateKey,
            ),
            ("t eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc", Detector::Jwt),
            (
                "k ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                Detector::KnownToken,
            ),
            ("u https://bob:pw@example.com/", Detector::Userinfo),
            ("ws://h/devtools/page/ABC", Detector::CdpCapability),
            ("/cb?code=abc", Detector::QueryParam),
            ("password=abc", Detector::KeyValue),
            ("Bearer abc123", Detector::SchemeCredential),
            ("8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1", Detector::CdpId),
        ];
        for (text, want) in cases {
            let got = find_at(text, 0).map(|(d, _)| d);
            assert_eq!(got, Some(want), "{text}");
        }
    }
}
