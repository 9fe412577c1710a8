//! The detectors: one `(?x)` regex each, in alternation order.

use super::Group;

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
    pub(crate) const ALL: [Detector; 10] = [
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

    /// Position in [`Detector::ALL`] (and in the compiled tables).
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The pattern used for captures, anchored at a match the combined search already found.
    /// Usually the search pattern; the key/value name drops its stem alternation (the search
    /// proved a stem is there, and the name always runs to the separator), which keeps the
    /// capture step from backtracking through every way a stem could sit inside the name.
    ///
    /// The name/value detector is the other way round: its search pattern only finds where an
    /// HTML attribute *could* start ([`Detector::is_triggered`]); the capture pattern is the
    /// whole thing.
    pub(crate) fn capture_pattern(self) -> &'static str {
        match self {
            Detector::KeyValue => concat!(
                r"(?x)(?P<key_value_name>[A-Za-z0-9_.-]+)",
                key_value_tail!()
            ),
            Detector::NameValue => concat!(
                r#"(?x)(?:"#,
                name_value_json!(),
                r#"
                  | "#,
                html_name_value!(),
                r#"
                )"#
            ),
            Detector::PrivateKey
            | Detector::Jwt
            | Detector::KnownToken
            | Detector::Userinfo
            | Detector::CdpCapability
            | Detector::QueryParam
            | Detector::SchemeCredential
            | Detector::CdpId => self.pattern(),
        }
    }

    /// True when the search pattern is only a trigger: a search match says "maybe here", and
    /// the capture pattern, anchored there, decides (and says where the match ends).
    pub(crate) fn is_triggered(self) -> bool {
        match self {
            Detector::NameValue => true,
            Detector::PrivateKey
            | Detector::Jwt
            | Detector::KnownToken
            | Detector::Userinfo
            | Detector::CdpCapability
            | Detector::QueryParam
            | Detector::KeyValue
            | Detector::SchemeCredential
            | Detector::CdpId => false,
        }
    }

    /// The named groups a detector reports (none for detectors that replace the whole match).
    pub(crate) fn groups(self) -> &'static [Group] {
        match self {
            Detector::PrivateKey | Detector::Jwt | Detector::KnownToken | Detector::CdpId => &[],
            Detector::Userinfo => &[Group::UserinfoValue],
            Detector::CdpCapability => &[Group::CdpCapabilityKind, Group::CdpCapabilityId],
            Detector::QueryParam => &[Group::QueryParamName, Group::QueryParamValue],
            Detector::KeyValue => &[
                Group::KeyValueName,
                Group::KeyValueSep,
                Group::KeyValueValue,
            ],
            Detector::NameValue => &[
                Group::NameValueJsonName,
                Group::NameValueJsonValue,
                Group::NameValueJsonRevValue,
                Group::NameValueJsonRevName,
                Group::NameValueHtmlName,
                Group::NameValueHtmlValue,
                Group::NameValueHtmlRevValue,
                Group::NameValueHtmlRevName,
            ],
            Detector::SchemeCredential => {
                &[Group::SchemeCredentialScheme, Group::SchemeCredentialValue]
            }
        }
    }

    /// The pattern. Inner groups are named `<detector>_<part>`. Word boundaries are ASCII (`(?-u:\b)`) so the lazy DFA never gives up on
    /// non-ASCII text.
    pub(crate) fn pattern(self) -> &'static str {
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
            Detector::NameValue => concat!(
                r#"(?x)
                # The secret's name is in a sibling field, not in front of the value.
                (?:"#,
                name_value_json!(),
                r#"
                  | # HTML: only the start of a `name=`, `value=` or `content=` attribute. The
                    # full attribute pattern (`html_name_value!`) is far too large for the
                    # combined lazy DFA; it runs anchored here, in the capture step.
                    (?:\A|[\x20\t\r\n"'/]|\\[nrt])(?i:name|value|content)[\x20\t]*=
                )"#
            ),
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
