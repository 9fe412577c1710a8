//! Finding the extent of a secret value once a detector has named it: quotes, HTML entities,
//! URL parameters, whole-line headers and authorization scheme words.

use super::{Action, Ctx};
use crate::handles::is_protected;
use crate::rules::{is_cdp_id, Rule, Span};
use std::borrow::Cow;

/// Opening and closing delimiters of an HTML attribute value, besides backslashes before a
/// quote (a value inside a JSON string).
const HTML_QUOTES: &[(&str, &[&str])] = &[
    ("\"", &["\""]),
    ("'", &["'"]),
    ("&quot;", &["&quot;", "&#34;", "&#x22;", "&#X22;"]),
    ("&#34;", &["&quot;", "&#34;", "&#x22;", "&#X22;"]),
    ("&#x22;", &["&quot;", "&#34;", "&#x22;", "&#X22;"]),
    ("&#X22;", &["&quot;", "&#34;", "&#x22;", "&#X22;"]),
    ("&apos;", &["&apos;", "&#39;", "&#x27;", "&#X27;"]),
    ("&#39;", &["&apos;", "&#39;", "&#x27;", "&#X27;"]),
    ("&#x27;", &["&apos;", "&#39;", "&#x27;", "&#X27;"]),
    ("&#X27;", &["&apos;", "&#39;", "&#x27;", "&#X27;"]),
];

/// The inside of an HTML attribute value as the detector captured it: without its quotes
/// (`"…"`, `'…'`, `\"…\"` in a JSON string, `&quot;…&quot;`). An unclosed value runs to the end
/// of the capture; a bare value is all inside.
pub(super) fn html_inner(text: &str, (s, e): Span) -> Span {
    let raw = &text[s..e];
    let slashes = raw.len() - raw.trim_start_matches('\\').len();
    let after_slashes = &raw[slashes..];
    for &(open, closes) in HTML_QUOTES {
        let Some(body) = after_slashes.strip_prefix(open) else {
            continue;
        };
        let start = s + slashes + open.len();
        for close in closes {
            if let Some(inner) = body.strip_suffix(close) {
                let inner = inner.trim_end_matches('\\');
                return (start, start + inner.len());
            }
        }
        return (start, e);
    }
    (s, e)
}

/// Redacts a bare value (a query parameter).
pub(super) fn redact_value(text: &str, s: usize, e: usize, rule: Rule, resume: usize) -> Action {
    let value = &text[s..e];
    if value.trim().is_empty() || is_protected(value) {
        return Action::Skip(resume);
    }
    Action::Replace {
        start: s,
        end: e,
        with: rule.marker().into(),
        rule,
        resume,
    }
}

/// How to find the extent of a value, besides its quotes.
pub(super) struct ValueShape {
    /// The name follows `?`, `&`, `#` or `;`: the value stops at the URL's next part.
    pub(super) url_param: bool,
    /// `Some` for whole-line header names (`Cookie`, `Authorization`), holding the quote that
    /// opened the header if it sits inside a quoted string.
    pub(super) header: Option<Option<char>>,
    /// The separator was `:` (header style), not `=`.
    pub(super) header_sep: bool,
    /// Backslash escapes apply inside quotes (JSON, JS), not in HTML attributes.
    pub(super) escapes: bool,
}

/// `name=value`, `name: value`, `"name": "value"`: finds the value's inner span (inside quotes;
/// to the end of the line for `Cookie:`/`Authorization:` headers; after the scheme word for
/// authorization values) and redacts it.
pub(super) fn key_value(
    text: &str,
    shape: ValueShape,
    (vs, ve): (usize, usize),
    (rule, id_like): (Rule, bool),
    ctx: &Ctx<'_>,
) -> Action {
    let value = &text[vs..ve];
    let (mut start, mut end) = unquote(value, shape.escapes);
    start += vs;
    end += vs;
    let mut resume = ve;
    let quoted = start != vs;
    if !quoted && shape.url_param {
        // `;jsessionid=…?item=5`, `&token=…#frag`: a URL parameter ends where the URL's next
        // part begins.
        if let Some(i) = text[start..end].find(['?', '#']) {
            end = start + i;
        }
    }
    let header_quote = match shape.header {
        Some(q) if !quoted && shape.header_sep => Some(q),
        _ => None,
    };
    if let Some(quote) = header_quote {
        // Header form: `Cookie: a=1; b=2` — the value is the rest of the line (or of the
        // quoted string the whole header sits in).
        let line_end = text[vs..]
            .find(|c: char| c == '\r' || c == '\n' || Some(c) == quote)
            .map_or(text.len(), |i| vs + i);
        end = vs + text[vs..line_end].trim_end().len();
        resume = resume.max(end);
    }
    redact_inner(text, (start, end), resume, (rule, id_like), ctx)
}

/// Redacts the inside of a value (its quotes already stripped): after the scheme word for
/// authorization values, as a handle for a CDP id under an id-like name, else as the rule's
/// marker. A blank value, or one that already is a marker, placeholder or handle, is skipped.
pub(super) fn redact_inner(
    text: &str,
    (mut start, end): Span,
    resume: usize,
    (rule, id_like): (Rule, bool),
    ctx: &Ctx<'_>,
) -> Action {
    if rule == Rule::Authorization {
        start = skip_scheme(text, start, end);
    }
    let inner = &text[start..end];
    if inner.trim().is_empty() || is_protected(inner) {
        return Action::Skip(resume);
    }
    let (with, rule): (Cow<'static, str>, Rule) = if id_like && is_cdp_id(inner) {
        (ctx.handles.handle(inner).into(), Rule::CdpId)
    } else {
        (rule.marker().into(), rule)
    };
    Action::Replace {
        start,
        end,
        with,
        rule,
        resume,
    }
}

/// The inner span (relative to `value`) of a quoted value; the whole value when unquoted.
pub(super) fn unquote(value: &str, escapes: bool) -> (usize, usize) {
    let (open, close) = if value.starts_with("\\\"") {
        (2, "\\\"")
    } else if value.starts_with('"') {
        (1, "\"")
    } else if value.starts_with('\'') {
        (1, "'")
    } else {
        return (0, value.len());
    };
    let body = &value[open..];
    let closed = body.len() >= close.len()
        && body.ends_with(close)
        && !(escapes && escaped_at(body, body.len() - close.len()));
    if closed {
        (open, value.len() - close.len())
    } else {
        (open, value.len())
    }
}

/// True when the character at byte `i` of `s` is preceded by an odd number of backslashes.
pub(super) fn escaped_at(s: &str, i: usize) -> bool {
    s.as_bytes()[..i]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count()
        % 2
        == 1
}

/// Skips an authorization scheme word (`Bearer `, `Basic `) so the marker replaces only the
/// credential. A lone word is treated as the credential itself.
pub(super) fn skip_scheme(text: &str, start: usize, end: usize) -> usize {
    let v = &text[start..end];
    let word = v
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(v.len());
    let rest = &v[word..];
    let gap = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    if word > 0 && gap > 0 && word + gap < v.len() && v.as_bytes()[0].is_ascii_alphabetic() {
        start + word + gap
    } else {
        start
    }
}

/// True when `rest` (the text after a credential) starts with the end of a token.
pub(super) fn ends_token(rest: &str) -> bool {
    rest.chars().next().is_none_or(|c| {
        c.is_whitespace()
            || matches!(
                c,
                '"' | '\'' | ',' | ';' | ')' | ']' | '}' | '>' | '<' | '!' | '?' | '`' | '|' | '\\'
            )
    })
}

/// A word after `Bearer`/`Basic`/`Token` is a credential when it is long and random-looking,
/// not prose ("Token expired", "Basic authentication").
pub(super) fn looks_like_credential(s: &str) -> bool {
    let n = s.chars().count();
    n >= 20
        || (n >= 6
            && s.bytes().any(|b| {
                b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
            }))
}
