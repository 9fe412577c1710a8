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

/// An HTML attribute value: double- or single-quoted (the quote may be JSON-escaped, `\"`, once
/// or more), entity-quoted (`&quot;…&quot;`, `&#34;`, `&#x22;`, and the single-quote forms), or
/// bare. `…_last_value` is the same for the value that ends a match: it may be unclosed (a cut
/// log line), then it runs to the end of the line.
macro_rules! html_attr_value {
    () => {
        r#"(?:
            \\*"[^"\r\n]*?\\*"
          | \\*'[^'\r\n]*?\\*'
          | &(?:quot|\#34|\#[xX]22);[^"\r\n]*?&(?:quot|\#34|\#[xX]22);
          | &(?:apos|\#39|\#[xX]27);[^'\r\n]*?&(?:apos|\#39|\#[xX]27);
          | [^\x20\t\r\n"'<>`\\]+
        )"#
    };
}

macro_rules! html_attr_last_value {
    () => {
        r#"(?:
            \\*"[^"\r\n]*"?
          | \\*'[^'\r\n]*'?
          | &(?:quot|\#34|\#[xX]22);(?:[^"\r\n]*?&(?:quot|\#34|\#[xX]22);|[^"\r\n]*)
          | &(?:apos|\#39|\#[xX]27);(?:[^'\r\n]*?&(?:apos|\#39|\#[xX]27);|[^'\r\n]*)
          | [^\x20\t\r\n"'<>`\\]+
        )"#
    };
}

/// Blanks between HTML attributes (also JSON-escaped newlines and tabs).
macro_rules! html_attr_sep {
    () => {
        r#"(?:[\x20\t\r\n]|\\[nrt])+"#
    };
}

/// One other HTML attribute: a name, and a value unless it is a boolean attribute. What a rule
/// puts in a token's place reads as the token did, or a tag would read differently once one of
/// its attributes is redacted, and sanitizing twice would redact what sanitizing once kept: a
/// name may start with a digit, as HTML allows (a CDP id `8E5B…` reads like its handle
/// `target:…`), and a marker or placeholder stands for an attribute.
macro_rules! html_attr {
    () => {
        concat!(
            r#"(?:[A-Za-z0-9_:@][A-Za-z0-9_:.@-]{0,63}|\[redacted:[a-z-]{1,20}\]|\$\{[A-Z_][A-Z0-9_]{0,127}\})"#,
            r#"(?:[\x20\t]*=[\x20\t]*"#,
            html_attr_value!(),
            r#")?"#
        )
    };
}

/// The JSON sibling forms of the name/value detector: `{"name": …, "value": …}` and the other
/// way round.
macro_rules! name_value_json {
    () => {
        r#"
                    # JSON: {"name": "Cookie", "value": "…"} (HAR headers, CDP cookies)
                    "name"[\x20\t]*:[\x20\t]*"(?P<name_value_json_name>[^"\\\r\n]{1,128})"
                    [\x20\t]*,[\x20\t]*"value"[\x20\t]*:[\x20\t]*
                    (?P<name_value_json_value>"(?:[^"\\\r\n]|\\.)*"?)
                  | # … and the other way round: {"value": "…", "name": "Cookie"}
                    "value"[\x20\t]*:[\x20\t]*
                    (?P<name_value_json_rev_value>"(?:[^"\\\r\n]|\\.)*")
                    [\x20\t]*,[\x20\t]*"name"[\x20\t]*:[\x20\t]*
                    "(?P<name_value_json_rev_name>[^"\\\r\n]{1,128})""#
    };
}

/// The HTML form of the name/value detector: a `name` attribute and a `value` / `content`
/// attribute of one tag, in either order.
macro_rules! html_name_value {
    () => {
        concat!(
            r#"# HTML attributes of one tag, in either order, any letter case, with up to
                    # six other attributes between them: <input type="hidden" name="_csrf"
                    # value="…">, <meta name=csrf-token content=…>, <input value='…' name='…'>.
                    # An attribute starts the text or follows a blank, a quote, '/' or a
                    # JSON-escaped newline, so `data-name=` and `username=` are not `name=`.
                    (?:\A|[\x20\t\r\n"'/]|\\[nrt])
                    (?:
                        (?i:name)[\x20\t]*=[\x20\t]*(?P<name_value_html_name>"#,
            html_attr_value!(),
            r#")
                        (?:"#,
            html_attr_sep!(),
            html_attr!(),
            r#"){0,6}?"#,
            html_attr_sep!(),
            r#"(?i:value|content)[\x20\t]*=[\x20\t]*(?P<name_value_html_value>"#,
            html_attr_last_value!(),
            r#")
                      | (?i:value|content)[\x20\t]*=[\x20\t]*(?P<name_value_html_rev_value>"#,
            html_attr_value!(),
            r#")
                        (?:"#,
            html_attr_sep!(),
            html_attr!(),
            r#"){0,6}?"#,
            html_attr_sep!(),
            r#"(?i:name)[\x20\t]*=[\x20\t]*(?P<name_value_html_rev_name>"#,
            html_attr_value!(),
            r#")
                    )"#
        )
    };
}

/// A detector match: which detector, where, and its parts.
pub(crate) struct Hit {
    pub(crate) detector: Detector,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) parts: Parts,
}

/// Every detector compiled twice: once together (one left-to-right search that reports which
/// detector matched, leftmost-first in table order, like one big alternation) and once alone
/// (anchored captures on the match only — far cheaper than captures over the combined NFA).
struct Compiled {
    all: meta::Regex,
    each: Vec<meta::Regex>,
    /// Each search pattern alone: the fallback should a capture pattern ever disagree.
    exact: Vec<meta::Regex>,
    /// Capture slot of every [`Group`] (indexed by `Group as usize`) in `each` and in `exact`.
    slots: Vec<(usize, usize)>,
}

/// The capture slot of `group` in `re`. The names are constants of this file: a group missing
/// from its pattern is a bug here, caught by every test that sanitizes anything.
fn slot(re: &meta::Regex, group: Group) -> usize {
    re.group_info()
        .to_index(PatternID::ZERO, group.name())
        .unwrap_or_else(|| {
            panic!(
                "group {} is not in the pattern of {:?}",
                group.name(),
                group.detector()
            )
        })
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let patterns: Vec<&str> = Detector::ALL.iter().map(|d| d.pattern()).collect();
    // The patterns are constants covered by tests; failing here is a bug in this file.
    let all = meta::Regex::new_many(&patterns).expect("the rule table compiles");
    let each: Vec<meta::Regex> = Detector::ALL
        .iter()
        .map(|d| meta::Regex::new(d.capture_pattern()).expect("each rule compiles"))
        .collect();
    // A triggered detector's search pattern has no groups: its fallback is its capture pattern.
    let exact: Vec<meta::Regex> = Detector::ALL
        .iter()
        .map(|d| {
            let p = if d.is_triggered() {
                d.capture_pattern()
            } else {
                d.pattern()
            };
            meta::Regex::new(p).expect("each rule compiles")
        })
        .collect();
    let slots = Group::ALL
        .iter()
        .map(|&g| {
            let d = g.detector().index();
            (slot(&each[d], g), slot(&exact[d], g))
        })
        .collect();
    Compiled {
        all,
        each,
        exact,
        slots,
    }
});

/// Finds the leftmost detector match at or after `start`. A triggered detector whose full
/// pattern does not match where its trigger did reports [`Parts::NoMatch`]: the caller moves on.
pub(crate) fn find_at(text: &str, start: usize) -> Option<Hit> {
    let compiled = &*COMPILED;
    let m = compiled.all.search(&Input::new(text).range(start..))?;
    let index = m.pattern().as_usize();
    let detector = *Detector::ALL.get(index)?;
    let mut end = m.end();
    let parts = if detector.groups().is_empty() {
        Parts::Whole
    } else {
        // Anchored at the match start with the whole text as context, so look-around (\b)
        // sees the same neighbours as the combined search did.
        let input = Input::new(text).range(m.start()..).anchored(Anchored::Yes);
        let mut re = compiled.each.get(index)?;
        let mut exact = false;
        let mut caps = re.create_captures();
        re.search_captures(&input, &mut caps);
        if detector.is_triggered() {
            match caps.get_match() {
                Some(full) => end = full.end(),
                None => {
                    return Some(Hit {
                        detector,
                        start: m.start(),
                        end,
                        parts: Parts::NoMatch,
                    })
                }
            }
        } else if caps.get_match().map(|c| c.end()) != Some(m.end()) {
            debug_assert!(
                false,
                "capture pattern of {detector:?} disagrees with the search"
            );
            re = compiled.exact.get(index)?;
            exact = true;
            caps = re.create_captures();
            re.search_captures(&input, &mut caps);
        }
        let get = |g: Group| -> Option<Span> {
            let &(in_each, in_exact) = compiled.slots.get(g as usize)?;
            let span = caps.get_group(if exact { in_exact } else { in_each })?;
            Some((span.start, span.end))
        };
        groups::parts_of(detector, get)
    };
    Some(Hit {
        detector,
        start: m.start(),
        end,
        parts,
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

mod detectors;
mod groups;

pub(crate) use detectors::Detector;

pub(crate) use groups::{Group, Parts, Sibling, Span};

#[cfg(test)]
mod tests;
