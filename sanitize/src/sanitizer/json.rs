//! The JSON walker: redacts by key, keeps structure.
//!
//! - A string under a sensitive key (`password`, `Cookie`, `access_token`) becomes its rule's
//!   marker; under an id-like key (`sessionId`) a CDP id becomes a handle and anything else a
//!   marker. A sensitive key over an object or array redacts the string leaves below it, except
//!   descriptive fields (`name`, `domain`, `path`, `expires`…), so a cookie list keeps its shape
//!   and cookie names while every value goes.
//! - `{"name": "Authorization", "value": "…"}` pairs (HAR headers, query strings, CDP
//!   `Fetch` header entries) are judged by the sibling `name`.
//! - Every other string is sanitized as text; keys are sanitized as text too (a CDP id used as a
//!   key becomes a handle). Numbers, booleans and null are never changed: a count is never a
//!   secret, so `inputTokens: 1234` survives whatever its key says.
//! - Arrays keep their length, objects their keys (a key that sanitizes to an existing key gets
//!   a `#2 ` prefix rather than overwriting it).

use crate::handles::is_protected;
use crate::keys::{classify, KeyClass};
use crate::rules::{is_cdp_id, Rule};
use crate::Sanitizer;
use serde_json::{Map, Value};

/// Longest sanitized object key, in characters.
const KEY_MAX_CHARS: usize = 256;

/// Descriptive fields kept (as text) inside a redacted subtree.
const DESCRIPTIVE_KEYS: &[&str] = &[
    "domain",
    "expires",
    "httpOnly",
    "name",
    "partitionKey",
    "path",
    "priority",
    "sameParty",
    "sameSite",
    "secure",
    "session",
    "size",
    "sourcePort",
    "sourceScheme",
    "type",
];

/// What the keys above a value say about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ctx {
    Plain,
    Redact(Rule),
    IdLike(Rule),
}

/// Walks `v`, capping every string at `max_chars`.
pub(crate) fn walk(s: &Sanitizer, v: &Value, max_chars: usize) -> Value {
    walk_ctx(s, v, Ctx::Plain, max_chars)
}

pub(crate) fn walk_ctx(s: &Sanitizer, v: &Value, ctx: Ctx, max_chars: usize) -> Value {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => v.clone(),
        Value::String(text) => Value::String(string(s, text, ctx, max_chars)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| walk_ctx(s, item, ctx, max_chars))
                .collect(),
        ),
        Value::Object(map) => Value::Object(object(s, map, ctx, max_chars)),
    }
}

fn object(
    s: &Sanitizer,
    map: &Map<String, Value>,
    ctx: Ctx,
    max_chars: usize,
) -> Map<String, Value> {
    // `{"name": "Cookie", "value": "…"}`: the value's meaning is in its sibling.
    let pair = match map.get("name") {
        Some(Value::String(name)) if map.contains_key("value") => pair_ctx(s, name, max_chars),
        _ => None,
    };
    let mut out = Map::new();
    for (key, value) in map {
        let clean_key = clean_key(s, key);
        let child = match pair {
            Some(pair) if key == "value" => pair,
            _ => child_ctx(ctx, key, &clean_key),
        };
        let walked = walk_ctx(s, value, child, max_chars);
        let key = unique_key(s, clean_key, |k| out.contains_key(k));
        out.insert(key, walked);
    }
    out
}

/// An object key, sanitized as text.
pub(crate) fn clean_key(s: &Sanitizer, key: &str) -> String {
    s.structural(key, KEY_MAX_CHARS).into_string()
}

/// The context a `{"name": …, "value": …}` pair's name gives its value, if the name is a
/// secret's (judged on the raw and the sanitized name, like keys).
pub(crate) fn pair_ctx(s: &Sanitizer, name: &str, max_chars: usize) -> Option<Ctx> {
    let clean = s.text_capped(name, max_chars);
    let class = if clean.as_str() == name {
        classify(name)
    } else {
        strongest(classify(name), classify(clean.as_str()))
    };
    match key_ctx(class) {
        Some(Ctx::Plain) | None => None,
        redacting => redacting,
    }
}

/// The context of a value under `key`, inside a value in context `parent`.
pub(crate) fn child_ctx(parent: Ctx, key: &str, clean_key: &str) -> Ctx {
    // Judged on the raw key and on its sanitized form, whichever says more: the raw key knows
    // `password` even if a registered literal rewrote part of it, and the sanitized key is what a
    // second walk sees, so a second walk decides the same.
    let class = if clean_key == key {
        classify(key)
    } else {
        strongest(classify(key), classify(clean_key))
    };
    match (parent, key_ctx(class)) {
        (_, Some(own)) => own,
        // Descriptive fields (a cookie's name, domain, path) stay readable inside a redacted
        // subtree; judged on the sanitized key only, which can only redact more.
        (Ctx::Redact(_) | Ctx::IdLike(_), None)
            if DESCRIPTIVE_KEYS.binary_search(&clean_key).is_ok() =>
        {
            Ctx::Plain
        }
        (inherited, None) => inherited,
    }
}

/// The class that redacts more: sensitive (the raw key's own rule first) over structural over
/// plain.
fn strongest(raw: KeyClass, clean: KeyClass) -> KeyClass {
    match (raw, clean) {
        (KeyClass::Sensitive(_) | KeyClass::IdLike(_), _) => raw,
        (_, KeyClass::Sensitive(_) | KeyClass::IdLike(_)) => clean,
        (KeyClass::Structural, _) | (_, KeyClass::Structural) => KeyClass::Structural,
        (KeyClass::Plain, KeyClass::Plain) => KeyClass::Plain,
    }
}

/// The context a key gives its value; `None` for keys that say nothing (inherit the parent's).
fn key_ctx(class: KeyClass) -> Option<Ctx> {
    match class {
        KeyClass::Sensitive(rule) => Some(Ctx::Redact(rule)),
        KeyClass::IdLike(rule) => Some(Ctx::IdLike(rule)),
        KeyClass::Structural => Some(Ctx::Plain),
        KeyClass::Plain => None,
    }
}

/// A key that collides after sanitization (two keys that differ only by a secret, or only after
/// the cap) gets a `#2 `, `#3 `, … prefix rather than overwriting the other. A prefix, because
/// the cap cuts from the end; `#n ` followed by a blank, because no rule reads across it; the
/// result is sanitized again, so a second walk sees a key it leaves alone.
pub(crate) fn unique_key(s: &Sanitizer, key: String, taken: impl Fn(&str) -> bool) -> String {
    if !taken(&key) {
        return key;
    }
    let mut n = 2u64;
    loop {
        let candidate = s
            .structural(&format!("#{n} {key}"), KEY_MAX_CHARS)
            .into_string();
        if !taken(&candidate) {
            return candidate;
        }
        n += 1;
    }
}

/// A string in context `ctx`: text, a marker, or a handle.
pub(crate) fn string(s: &Sanitizer, text: &str, ctx: Ctx, max_chars: usize) -> String {
    let (rule, id_like) = match ctx {
        Ctx::Plain => return s.text_capped(text, max_chars).into_string(),
        Ctx::Redact(rule) => (rule, false),
        Ctx::IdLike(rule) => (rule, true),
    };
    if text.trim().is_empty() || is_protected(text) || is_scheme_and_protected(text) {
        return text.to_owned();
    }
    if id_like && is_cdp_id(text) {
        s.count(Rule::CdpId);
        return s.handle(text).into_string();
    }
    s.count(rule);
    if rule == Rule::Authorization {
        // Keep the scheme word: "Bearer [redacted:authorization]".
        if let Some((scheme, rest)) = text.split_once(' ') {
            if is_scheme(scheme) && !rest.trim().is_empty() {
                return format!("{scheme} {}", rule.marker());
            }
        }
    }
    rule.marker().to_owned()
}

fn is_scheme(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 32
        && word.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// `Bearer [redacted:authorization]`, `Basic ${TOKEN}`: already redacted, whatever the key says
/// now (a second walk may classify a rewritten key differently).
fn is_scheme_and_protected(text: &str) -> bool {
    text.split_once(' ')
        .is_some_and(|(scheme, rest)| is_scheme(scheme) && is_protected(rest.trim()))
}

/// Keeps only the allowlisted fields of a CDP `TargetInfo` (or a `/json/list` entry): ids become
/// handles, URLs are sanitized, the title is capped text, flags stay booleans. Everything else,
/// including fields added by future Chromium versions, is dropped.
pub(crate) fn target_info(s: &Sanitizer, v: &Value) -> Value {
    const ID_KEYS: &[&str] = &[
        "targetId",
        "id",
        "openerId",
        "openerFrameId",
        "browserContextId",
        "parentId",
        "parentFrameId",
    ];
    const URL_KEYS: &[&str] = &["url", "faviconUrl", "webSocketDebuggerUrl"];
    const BOOL_KEYS: &[&str] = &["attached", "canAccessOpener"];
    const WORD_KEYS: &[&str] = &["type", "subtype"];
    let mut out = Map::new();
    let Value::Object(map) = v else {
        return Value::Object(out);
    };
    for (key, value) in map {
        let k = key.as_str();
        let kept = match value {
            Value::String(text) if ID_KEYS.contains(&k) => {
                Value::String(s.handle(text).into_string())
            }
            Value::String(text) if URL_KEYS.contains(&k) => {
                Value::String(s.url(text).into_string())
            }
            Value::String(text) if WORD_KEYS.contains(&k) => {
                Value::String(s.text_capped(text, 32).into_string())
            }
            Value::String(text) if k == "title" => Value::String(title(s, text)),
            Value::Bool(b) if BOOL_KEYS.contains(&k) => Value::Bool(*b),
            _ => continue,
        };
        out.insert(key.clone(), kept);
    }
    Value::Object(out)
}

/// A page title. Until a page sets one, Chromium titles it with its URL minus the scheme
/// (`shop.test/search?q=private&email=bob%40x.test`): such a title, and any URL inside a title,
/// is reduced like a URL (origin + path), so the query a URL field would never keep cannot come
/// back through the title.
fn title(s: &Sanitizer, text: &str) -> String {
    let trimmed = text.trim();
    let url_like = !trimmed.is_empty()
        && !trimmed.contains(char::is_whitespace)
        && trimmed.contains(['/', '?', '#']);
    if url_like && !trimmed.contains("://") {
        let reduced = s.url(&format!("http://{trimmed}")).into_string();
        if let Some(rest) = reduced.strip_prefix("http://") {
            return s.text_capped(rest, 256).into_string();
        }
    }
    let mut out = String::with_capacity(text.len());
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if word.contains("://") {
            out.push_str(s.url(word).as_str());
        } else {
            out.push_str(word);
        }
    }
    s.text_capped(&out, 256).into_string()
}

pub(crate) mod stream;

#[cfg(test)]
mod tests;
