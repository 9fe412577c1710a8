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

use regex_automata::{meta, Anchored, Input, PatternID};
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

/// Separator and value of the key/value detector, shared by its search and capture patterns.
macro_rules! key_value_tail {
    () => {
        r#"
        # Optional closing quote of a quoted key (also JSON-escaped), then = : => :=
        (?P<key_value_sep>(?:\\?["'])?[\x20\t]*(?:=>|:=|[:=])[\x20\t]*)
        (?P<key_value_value>
            \\"(?:[^"\\\r\n]|\\[^"\r\n])*(?:\\")?    # \"value\" inside a JSON string
          | "(?:[^"\\\r\n]|\\.)*"?                   # "value" (to end of line if unclosed)
          | '(?:[^'\\\r\n]|\\.)*'?                   # 'value'
          | (?:\$\{[A-Z_][A-Z0-9_]*\}|[^\s"'&;,<>(){}\\])+   # bare value; ${NAME} whole
        )"#
    };
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
    NameValue,
    KeyValue,
    SchemeCredential,
    CdpId,
}

impl Detector {
    const ALL: [Detector; 10] = [
        Detector::PrivateKey,
        Detector::Jwt,
        Detector::KnownToken,
        Detector::Userinfo,
        Detector::CdpCapability,
        Detector::QueryParam,
        Detector::NameValue,
        Detector::KeyValue,
        Detector::SchemeCredential,
        Detector::CdpId,
    ];

    /// The pattern used for captures, anchored at a match the combined search already found.
    /// Usually the search pattern; the key/value name drops its stem alternation (the search
    /// proved a stem is there, and the name always runs to the separator), which keeps the
    /// capture step from backtracking through every way a stem could sit inside the name.
    fn capture_pattern(self) -> &'static str {
        match self {
            Detector::KeyValue => concat!(
                r"(?x)(?P<key_value_name>[A-Za-z0-9_.-]+)",
                key_value_tail!()
            ),
            Detector::PrivateKey
            | Detector::Jwt
            | Detector::KnownToken
            | Detector::Userinfo
            | Detector::CdpCapability
            | Detector::QueryParam
            | Detector::NameValue
            | Detector::SchemeCredential
            | Detector::CdpId => self.pattern(),
        }
    }

    /// The named groups a detector reports (none for detectors that replace the whole match).
    fn groups(self) -> &'static [&'static str] {
        match self {
            Detector::PrivateKey | Detector::Jwt | Detector::KnownToken | Detector::CdpId => &[],
            Detector::Userinfo => &["userinfo_value"],
            Detector::CdpCapability => &["cdp_capability_kind", "cdp_capability_id"],
            Detector::QueryParam => &["query_param_name", "query_param_value"],
            Detector::KeyValue => &["key_value_name", "key_value_sep", "key_value_value"],
            Detector::NameValue => &[
                "name_value_json_name",
                "name_value_json_value",
                "name_value_html_name",
                "name_value_html_value",
            ],
            Detector::SchemeCredential => &["scheme_credential_scheme", "scheme_credential_value"],
        }
    }

    /// The pattern. Inner groups are named `<detector>_<part>`. Word boundaries are ASCII (`(?-u:\b)`) so the lazy DFA never gives up on
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
                # scheme://user:pass@ or protocol-relative //user:pass@
                (?:[A-Za-z][A-Za-z0-9+.-]*:)?//
                # Up to the *last* '@' of the authority, as URL parsers read it.
                (?P<userinfo_value>[^\s/?\#"'<>\\]+)
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
            Detector::NameValue => {
                r#"(?x)
                # The secret's name is in a sibling field, not in front of the value.
                (?:
                    # JSON: {"name": "Cookie", "value": "…"} (HAR headers, CDP cookies)
                    "name"[\x20\t]*:[\x20\t]*"(?P<name_value_json_name>[^"\\\r\n]{1,128})"
                    [\x20\t]*,[\x20\t]*"value"[\x20\t]*:[\x20\t]*
                    (?P<name_value_json_value>"(?:[^"\\\r\n]|\\.)*"?)
                  | # HTML: <input type="hidden" name="csrf_token" value="…">, <meta name=… content=…>
                    (?:name|NAME|Name)=["'](?P<name_value_html_name>[^"'<>\r\n]{1,128})["']
                    (?:[\x20\t\r\n]+[A-Za-z-]{1,32}=(?:"[^"\r\n]*"|'[^'\r\n]*')){0,4}?
                    [\x20\t\r\n]+(?:value|VALUE|Value|content|CONTENT|Content)=
                    (?P<name_value_html_value>"[^"\r\n]*"?|'[^'\r\n]*'?)
                )"#
            }
            Detector::KeyValue => concat!(
                r#"(?x)
                # A name containing a sensitive stem; keys.rs decides whether it really is one.
                (?P<key_value_name>
                    [A-Za-z0-9_.-]*
                    (?i:pass|pwd|secret|token|cred|auth|cookie|sess|sid|csrf|xsrf|jwt|otp|mfa|2fa
                        |pin|saml|verifier|signature|key|code|bearer)
                    [A-Za-z0-9_.-]*
                )"#,
                key_value_tail!()
            ),
            Detector::SchemeCredential => {
                r"(?x)
                (?-u:\b)
                # The usual spellings only (lower, Title, UPPER), so a literal search can pre-filter them.
                (?P<scheme_credential_scheme>
                    Bearer|bearer|BEARER|Basic|basic|BASIC|Token|token|TOKEN|Digest|digest|DIGEST
                  | Negotiate|negotiate|NEGOTIATE|NTLM|ntlm)
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

/// A detector match: which detector, where, and its inner groups.
pub(crate) struct Hit {
    pub(crate) detector: Detector,
    pub(crate) start: usize,
    pub(crate) end: usize,
    groups: Vec<Option<(usize, usize)>>,
}

impl Hit {
    /// The byte span of one of the detector's named groups, if it participated.
    pub(crate) fn group(&self, name: &str) -> Option<(usize, usize)> {
        let i = self.detector.groups().iter().position(|g| *g == name)?;
        self.groups.get(i).copied().flatten()
    }
}

/// Every detector compiled twice: once together (one left-to-right search that reports which
/// detector matched, leftmost-first in table order, like one big alternation) and once alone
/// (anchored captures on the match only — far cheaper than captures over the combined NFA).
struct Compiled {
    all: meta::Regex,
    each: Vec<meta::Regex>,
    /// Each search pattern alone: the fallback should a capture pattern ever disagree.
    exact: Vec<meta::Regex>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let patterns: Vec<&str> = Detector::ALL.iter().map(|d| d.pattern()).collect();
    // The patterns are constants covered by tests; failing here is a bug in this file.
    let all = meta::Regex::new_many(&patterns).expect("the rule table compiles");
    let each = Detector::ALL
        .iter()
        .map(|d| meta::Regex::new(d.capture_pattern()).expect("each rule compiles"))
        .collect();
    let exact = patterns
        .iter()
        .map(|p| meta::Regex::new(p).expect("each rule compiles"))
        .collect();
    Compiled { all, each, exact }
});

/// Finds the leftmost detector match at or after `start`.
pub(crate) fn find_at(text: &str, start: usize) -> Option<Hit> {
    let compiled = &*COMPILED;
    let m = compiled.all.search(&Input::new(text).range(start..))?;
    let index = m.pattern().as_usize();
    let detector = *Detector::ALL.get(index)?;
    let names = detector.groups();
    let mut groups = Vec::new();
    if !names.is_empty() {
        // Anchored at the match start with the whole text as context, so look-around (\b)
        // sees the same neighbours as the combined search did.
        let input = Input::new(text).range(m.start()..).anchored(Anchored::Yes);
        let mut re = compiled.each.get(index)?;
        let mut caps = re.create_captures();
        re.search_captures(&input, &mut caps);
        if caps.get_match().map(|c| c.end()) != Some(m.end()) {
            debug_assert!(
                false,
                "capture pattern of {detector:?} disagrees with the search"
            );
            re = compiled.exact.get(index)?;
            caps = re.create_captures();
            re.search_captures(&input, &mut caps);
        }
        let info = re.group_info();
        groups = names
            .iter()
            .map(|name| {
                info.to_index(PatternID::ZERO, name)
                    .and_then(|i| caps.get_group(i))
                    .map(|span| (span.start, span.end))
            })
            .collect();
    }
    Some(Hit {
        detector,
        start: m.start(),
        end: m.end(),
        groups,
    })
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
            if matches!(r, Rule::CdpCapability | Rule::CdpId) {
                continue; // replaced by handles, not masked
            }
            assert_eq!(r.marker(), format!("[redacted:{}]", r.name()));
        }
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
            (r#"{"name":"SID","value":"x"}"#, Detector::NameValue),
            (
                r#"<input name="csrf" type="hidden" value="x">"#,
                Detector::NameValue,
            ),
            ("Bearer abc123", Detector::SchemeCredential),
            ("8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1", Detector::CdpId),
        ];
        for (text, want) in cases {
            let got = find_at(text, 0).map(|h| h.detector);
            assert_eq!(got, Some(want), "{text}");
        }
    }
}
