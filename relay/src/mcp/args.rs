//! Reducing a tool call's arguments to what the evidence may keep, and finding the text the
//! agent types (registered as secrets before the call reaches the browser).
//!
//! Each argument is kept by name with its JSON type, plus at most one reduced form of its value,
//! decided from its name (split into words: `submitKey` → `submit key`, `from_uid` → `from
//! uid`) and then its value:
//!
//! 1. **typed text** — a name with the word `value`, `values`, `text`, `input` or `typed`, or
//!    any string inside such an argument: its length and input type, never the characters;
//! 2. **secret-looking names** (`password`, `token`, `secret`, `cookie`, …): the length only;
//! 3. **URLs** — a name with `url`, `uri`, `href`, `link`, or a string that parses as an
//!    absolute URL: origin and path (the sanitizer's URL reduction);
//! 4. **short identifiers** — element references and descriptions (`uid`, `ref`, `target`,
//!    `element`, `selector`), key and button names, modes and formats, up to
//!    [`MAX_IDENTIFIER_CHARS`]: the text, sanitized;
//! 5. numbers and booleans as they are; `null` as its type;
//! 6. every other string: its length only;
//! 7. objects and arrays: their size and their first [`MAX_ITEMS`] members, reduced the same
//!    way (array items under their parent's name), [`MAX_DEPTH`] levels deep.
//!
//! Pure: the sanitizer is the only thing touched, and nothing is logged.

use cdp_evidence::{JsonType, ToolArgument};
use cdp_sanitize::{InputSummary, InputType, SafeText, Sanitizer};
use serde_json::{Map, Value};

/// Members or items kept per object or array.
pub const MAX_ITEMS: usize = 16;
/// Levels of nesting reduced (deeper values keep their type and size only).
pub const MAX_DEPTH: usize = 3;
/// Longest identifier kept as text; a longer one is kept as its length.
pub const MAX_IDENTIFIER_CHARS: usize = 200;
/// Arguments kept per call.
pub const MAX_ARGUMENTS: usize = 32;

/// Tools whose typed-text arguments reach the page as keystrokes or a filled value.
const TYPING_TOOLS: &[&str] = &[
    "fill",
    "fill_form",
    "type_text",
    "browser_type",
    "browser_fill_form",
    "browser_press_sequentially",
    "browser_select_option",
];

/// The kind of value an argument's name announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Typed,
    Secret,
    Url,
    Identifier,
    Other,
}

/// Splits a name into lowercase words at `_`, `-`, `.`, blanks and lower→upper case changes.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn classify(name: &str) -> Class {
    let w = words(name);
    let has = |set: &[&str]| w.iter().any(|x| set.contains(&x.as_str()));
    if has(&[
        "value", "values", "text", "texts", "input", "typed", "prompt",
    ]) {
        Class::Typed
    } else if has(&[
        "password",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "secret",
        "token",
        "auth",
        "authorization",
        "cookie",
        "cookies",
        "session",
        "otp",
        "pin",
        "credential",
        "credentials",
        "apikey",
        "jwt",
        "bearer",
        "signature",
    ]) || (has(&["api", "private", "access", "secret"]) && has(&["key"]))
    {
        Class::Secret
    } else if has(&["url", "urls", "uri", "href", "link", "endpoint", "origin"]) {
        Class::Url
    } else if has(&[
        "uid",
        "ref",
        "target",
        "element",
        "selector",
        "locator",
        "key",
        "keys",
        "button",
        "modifier",
        "modifiers",
        "type",
        "level",
        "format",
        "part",
        "action",
        "mode",
        "direction",
        "scale",
        "media",
        "scheme",
        "motion",
        "colors",
        "contrast",
        "role",
        "name",
        "tab",
        "kind",
        "method",
        "resource",
        "unload",
        "submit",
        "accept",
        "dialog",
        "id",
        "label",
    ]) {
        Class::Identifier
    } else {
        Class::Other
    }
}

/// True for strings that parse as an absolute URL of a scheme the browser loads.
fn looks_like_url(s: &str) -> bool {
    let s = s.trim();
    [
        "http://",
        "https://",
        "ws://",
        "wss://",
        "file://",
        "about:",
        "data:",
        "chrome://",
    ]
    .iter()
    .any(|p| s.len() > p.len() && s[..p.len()].eq_ignore_ascii_case(p))
}

/// True for tools whose typed-text arguments are typed into the page.
pub fn is_typing_tool(tool: &str) -> bool {
    TYPING_TOOLS.contains(&tool)
}

/// The text the agent types in this call: every string under a typed-text name of a typing
/// tool, except checkbox and radio toggles (`"true"`, `"false"`, or a field whose `type` says
/// so). These are registered with the run's sanitizer before the call is forwarded.
pub fn typed_literals<'a>(tool: &str, args: Option<&'a Map<String, Value>>) -> Vec<&'a str> {
    let mut out = Vec::new();
    if !is_typing_tool(tool) {
        return out;
    }
    if let Some(args) = args {
        collect_typed(args, false, &mut out);
    }
    out
}

fn collect_typed<'a>(obj: &'a Map<String, Value>, typed: bool, out: &mut Vec<&'a str>) {
    // Playwright's form fields say what they are: a checkbox's value is not typed text.
    let toggle = obj
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| matches!(t, "checkbox" | "radio" | "switch" | "slider"));
    for (name, value) in obj {
        let typed_here = typed || classify(name) == Class::Typed;
        collect_value(value, typed_here && !toggle, out);
    }
}

fn collect_value<'a>(value: &'a Value, typed: bool, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) if typed && !matches!(s.as_str(), "true" | "false") => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| collect_value(v, typed, out)),
        Value::Object(m) => collect_typed(m, typed, out),
        _ => {}
    }
}

/// The reduced arguments of a call (see the module docs), at most [`MAX_ARGUMENTS`].
pub fn reduce(sanitizer: &Sanitizer, args: Option<&Map<String, Value>>) -> Vec<ToolArgument> {
    let Some(args) = args else {
        return Vec::new();
    };
    args.iter()
        .take(MAX_ARGUMENTS)
        .map(|(name, value)| reduce_one(sanitizer, name, classify(name), value, 0))
        .collect()
}

fn name_text(sanitizer: &Sanitizer, name: &str) -> SafeText {
    sanitizer.text_capped(name, 64)
}

fn reduce_one(
    sanitizer: &Sanitizer,
    name: &str,
    class: Class,
    value: &Value,
    depth: usize,
) -> ToolArgument {
    let mut arg = ToolArgument::new(name_text(sanitizer, name), JsonType::of(value));
    match value {
        Value::Null => {}
        Value::Bool(_) => arg.value = Some(sanitizer.json(value)),
        Value::Number(n) => match class {
            // A code typed as a number is still typed text.
            Class::Typed | Class::Secret => {
                arg.input = Some(InputSummary::of(&n.to_string(), InputType::Unknown))
            }
            _ => arg.value = Some(sanitizer.json(value)),
        },
        Value::String(s) => match class {
            Class::Typed => arg.input = Some(InputSummary::of(s, InputType::Unknown)),
            Class::Secret => arg.chars = Some(s.chars().count() as u64),
            Class::Url => arg.url = Some(sanitizer.url(s)),
            _ if looks_like_url(s) => arg.url = Some(sanitizer.url(s)),
            Class::Identifier if s.chars().count() <= MAX_IDENTIFIER_CHARS => {
                arg.value = Some(sanitizer.json(&Value::String(s.clone())))
            }
            Class::Identifier | Class::Other => arg.chars = Some(s.chars().count() as u64),
        },
        Value::Array(items) => {
            arg.count = Some(items.len() as u64);
            if depth < MAX_DEPTH {
                let reduced = items
                    .iter()
                    .take(MAX_ITEMS)
                    .enumerate()
                    .map(|(i, v)| {
                        let mut item = reduce_one(sanitizer, name, class, v, depth + 1);
                        item.name = sanitizer.text(&i.to_string());
                        item
                    })
                    .collect();
                arg.items = Some(reduced);
            }
        }
        Value::Object(members) => {
            arg.count = Some(members.len() as u64);
            if depth < MAX_DEPTH {
                let reduced = members
                    .iter()
                    .take(MAX_ITEMS)
                    .map(|(k, v)| {
                        // Inside typed text everything is typed text; a secret stays secret.
                        let inner = match class {
                            Class::Typed | Class::Secret => class,
                            _ => classify(k),
                        };
                        reduce_one(sanitizer, k, inner, v, depth + 1)
                    })
                    .collect();
                arg.items = Some(reduced);
            }
        }
    }
    arg
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    fn reduced(args: Value) -> Value {
        let s = Sanitizer::new();
        serde_json::to_value(reduce(&s, Some(&obj(args)))).unwrap()
    }

    #[test]
    fn names_split_into_words() {
        assert_eq!(words("submitKey"), ["submit", "key"]);
        assert_eq!(words("from_uid"), ["from", "uid"]);
        assert_eq!(words("textGone"), ["text", "gone"]);
        assert_eq!(words("X-API-Key"), ["x", "api", "key"]);
        assert_eq!(classify("apiKey"), Class::Secret);
        assert_eq!(classify("key"), Class::Identifier);
        assert_eq!(classify("promptText"), Class::Typed);
        assert_eq!(classify("pageUrl"), Class::Url);
        assert_eq!(classify("function"), Class::Other);
    }

    #[test]
    fn chrome_devtools_mcp_calls_reduce_to_names_types_and_lengths() {
        let v = reduced(json!({
            "elements": [
                {"uid": "1_5", "value": "ada@example.test"},
                {"uid": "1_7", "value": "S3cret-Passw0rd!"}
            ],
            "includeSnapshot": false
        }));
        assert_eq!(
            v,
            json!([
                {"name": "elements", "type": "array", "count": 2, "items": [
                    {"name": "0", "type": "object", "count": 2, "items": [
                        {"name": "uid", "type": "string", "value": "1_5"},
                        {"name": "value", "type": "string", "input": {"chars": 16, "inputType": "unknown"}}
                    ]},
                    {"name": "1", "type": "object", "count": 2, "items": [
                        {"name": "uid", "type": "string", "value": "1_7"},
                        {"name": "value", "type": "string", "input": {"chars": 16, "inputType": "unknown"}}
                    ]}
                ]},
                {"name": "includeSnapshot", "type": "boolean", "value": false}
            ])
        );
        let v = reduced(json!({
            "url": "https://shop.test/login?token=abc#x",
            "type": "url",
            "timeout": 5000,
            "initScript": "window.secret = 'x'"
        }));
        assert_eq!(v[0]["url"], "https://shop.test/login");
        assert_eq!(v[1]["value"], "url");
        assert_eq!(v[2]["value"], 5000);
        assert_eq!(
            v[3],
            json!({"name": "initScript", "type": "string", "chars": 19})
        );
        let v = reduced(json!({"function": "() => document.cookie", "key": "Control+A"}));
        assert_eq!(
            v[0],
            json!({"name": "function", "type": "string", "chars": 21})
        );
        assert_eq!(v[1]["value"], "Control+A");
    }

    #[test]
    fn playwright_mcp_calls_reduce_the_same_way() {
        let v = reduced(json!({
            "fields": [{"name": "Password", "type": "textbox", "ref": "e12", "value": "hunter2hunter2"}],
            "element": "Sign in button",
            "target": "e14",
            "text": "typed words",
            "modifiers": ["Shift"],
            "paths": ["/home/ada/passport.pdf"]
        }));
        let field = &v[0]["items"][0]["items"];
        assert_eq!(field[0]["value"], "Password");
        assert_eq!(field[1]["value"], "textbox");
        assert_eq!(field[2]["value"], "e12");
        assert_eq!(
            field[3]["input"],
            json!({"chars": 14, "inputType": "unknown"})
        );
        assert_eq!(v[1]["value"], "Sign in button");
        assert_eq!(v[2]["value"], "e14");
        assert_eq!(v[3]["input"]["chars"], 11);
        assert_eq!(v[4]["items"][0]["value"], "Shift");
        assert_eq!(
            v[5]["items"][0],
            json!({"name": "0", "type": "string", "chars": 22})
        );
    }

    #[test]
    fn secrets_numbers_and_depth() {
        let v = reduced(json!({
            "password": "pw-123456",
            "apiKey": "sk-abc",
            "otp": 482913,
            "value": 123456,
            "deep": {"a": {"b": {"c": {"d": "x"}}}},
            "nothing": null
        }));
        assert_eq!(
            v[0],
            json!({"name": "password", "type": "string", "chars": 9})
        );
        assert_eq!(v[1]["chars"], 6);
        assert_eq!(
            v[2]["input"]["chars"], 6,
            "a code typed as a number is not kept"
        );
        assert_eq!(v[3]["input"]["chars"], 6);
        assert!(v[4]["items"][0]["items"][0]["items"][0]
            .get("items")
            .is_none());
        assert_eq!(v[4]["items"][0]["items"][0]["items"][0]["count"], 1);
        assert_eq!(v[5], json!({"name": "nothing", "type": "null"}));
        let text = v.to_string();
        for planted in ["pw-123456", "sk-abc", "482913", "123456"] {
            assert!(!text.contains(planted), "{planted} in {text}");
        }
    }

    #[test]
    fn registered_literals_mask_identifiers_that_repeat_them() {
        let s = Sanitizer::new();
        s.register_typed("S3cret-Passw0rd!");
        let v = serde_json::to_value(reduce(
            &s,
            Some(&obj(json!({"selector": "input[value=S3cret-Passw0rd!]"}))),
        ))
        .unwrap();
        assert!(!v.to_string().contains("S3cret"), "{v}");
    }

    #[test]
    fn typed_literals_come_from_typing_tools_only_and_skip_toggles() {
        let args = obj(json!({
            "elements": [
                {"uid": "1", "value": "ada@example.test"},
                {"uid": "2", "value": "true"},
                {"uid": "3", "value": "S3cret"}
            ]
        }));
        assert_eq!(
            typed_literals("fill_form", Some(&args)),
            vec!["ada@example.test", "S3cret"]
        );
        assert!(typed_literals("wait_for", Some(&obj(json!({"text": "Welcome"})))).is_empty());
        let pw = obj(json!({"fields": [
            {"name": "Remember me", "type": "checkbox", "ref": "e3", "value": "yes"},
            {"name": "Code", "type": "textbox", "ref": "e4", "value": "482913"}
        ]}));
        assert_eq!(
            typed_literals("browser_fill_form", Some(&pw)),
            vec!["482913"]
        );
        assert_eq!(
            typed_literals(
                "browser_type",
                Some(&obj(json!({"target": "e1", "text": "hello world"})))
            ),
            vec!["hello world"]
        );
    }
}
