//! `recordAs`: a name for text the agent holds and types itself. The gateway adds an optional
//! `recordAs` string beside each typed-text property (`value`, `text`, …) of the typing tools it
//! lists, at whatever depth (`fill_form`'s `elements[]`, `browser_fill_form`'s `fields[]`), and
//! takes it out of a call's arguments before the call is forwarded: the wrapped server never
//! sees it. A tool whose own schema already has a `recordAs` keeps it, and its calls pass as
//! they are.
//!
//! Pure: what the name is registered with is `inputs.rs`'s business.

use super::args;
use rmcp::model::Tool;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The property's name.
pub(crate) const RECORD_AS: &str = "recordAs";

/// Schema levels walked at most (a tool's schema is a few levels deep).
const MAX_DEPTH: usize = 8;

fn property() -> Value {
    json!({
        "type": "string",
        "pattern": "^[A-Z_][A-Z0-9_]*$",
        "maxLength": cdp_sanitize::MAX_SECRET_NAME_CHARS,
        "description": "Optional (cdp-relay): a name for the text typed here, e.g. ACCOUNT_NUMBER. It is registered before the text is typed; from then on every result, the browser evidence and an exported test show ${NAME} in its place. The text must have at least 4 characters. Removed before the call reaches the browser tool."
    })
}

/// What adding `recordAs` to a tool's schema found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Schema {
    /// Added at this many places.
    Added(usize),
    /// No typed-text property: nothing added.
    Nothing,
    /// The tool has a `recordAs` of its own: nothing added, and its calls are left alone.
    Own,
}

/// Adds `recordAs` beside every typed-text string property of a typing tool's input schema.
pub(crate) fn augment(tool: &mut Tool) -> Schema {
    let mut schema = Value::Object((*tool.input_schema).clone());
    // Any tool's own `recordAs` is its business, typing tool or not.
    if has_own(&schema, 0) {
        return Schema::Own;
    }
    if !args::is_typing_tool(&tool.name) {
        return Schema::Nothing;
    }
    let added = add(&mut schema, 0);
    if added == 0 {
        return Schema::Nothing;
    }
    if let Value::Object(m) = schema {
        tool.input_schema = Arc::new(m);
    }
    Schema::Added(added)
}

/// The object schemas below `v`: its own properties, array items, combinators.
fn children(v: &mut Value) -> Vec<&mut Value> {
    let Value::Object(m) = v else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, child) in m.iter_mut() {
        match (k.as_str(), child) {
            ("properties", Value::Object(props)) => out.extend(props.values_mut()),
            ("items", c @ Value::Object(_)) => out.push(c),
            ("items" | "anyOf" | "oneOf" | "allOf", Value::Array(list)) => {
                out.extend(list.iter_mut())
            }
            _ => {}
        }
    }
    out
}

fn has_own(v: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let Value::Object(m) = v else {
        return false;
    };
    m.iter().any(|(k, child)| match (k.as_str(), child) {
        ("properties", Value::Object(props)) => {
            props.contains_key(RECORD_AS) || props.values().any(|p| has_own(p, depth + 1))
        }
        ("items", c @ Value::Object(_)) => has_own(c, depth + 1),
        ("items" | "anyOf" | "oneOf" | "allOf", Value::Array(list)) => {
            list.iter().any(|c| has_own(c, depth + 1))
        }
        _ => false,
    })
}

fn is_string_schema(v: &Value) -> bool {
    match v.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        // `{}` or a combinator: it may be a string.
        None => true,
        Some(_) => false,
    }
}

fn add(v: &mut Value, depth: usize) -> usize {
    if depth > MAX_DEPTH {
        return 0;
    }
    let here = v
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|props| {
            props
                .iter()
                .any(|(name, s)| args::is_text_name(name) && is_string_schema(s))
        });
    let mut added = 0;
    if here {
        if let Some(Value::Object(props)) = v.get_mut("properties") {
            props.insert(RECORD_AS.to_owned(), property());
            added += 1;
        }
    }
    for child in children(v) {
        added += add(child, depth + 1);
    }
    added
}

/// One `recordAs` taken out of a call: the name as given, and the typed-text strings beside it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Named {
    /// The `recordAs` value (`None` when it is not a string).
    pub(crate) name: Option<String>,
    /// The typed text it names, when there is exactly one; else how many there are.
    pub(crate) text: Result<String, usize>,
}

/// Takes every `recordAs` out of `args` (at any depth), with the typed text beside each.
pub(crate) fn strip(args: &mut Map<String, Value>) -> Vec<Named> {
    let mut out = Vec::new();
    strip_level(args, &mut out, 0);
    out
}

fn strip_level(obj: &mut Map<String, Value>, out: &mut Vec<Named>, depth: usize) {
    if let Some(name) = obj.remove(RECORD_AS) {
        let mut texts: Vec<&str> = Vec::new();
        for (k, v) in obj.iter() {
            if !args::is_text_name(k) {
                continue;
            }
            match v {
                Value::String(s) => texts.push(s),
                Value::Array(items) => texts.extend(items.iter().filter_map(Value::as_str)),
                _ => {}
            }
        }
        out.push(Named {
            name: name.as_str().map(str::to_owned),
            text: match texts.as_slice() {
                [one] => Ok((*one).to_owned()),
                more => Err(more.len()),
            },
        });
    }
    if depth >= MAX_DEPTH {
        return;
    }
    for v in obj.values_mut() {
        match v {
            Value::Object(m) => strip_level(m, out, depth + 1),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(m) = item {
                        strip_level(m, out, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &'static str, schema: Value) -> Tool {
        let Value::Object(m) = schema else {
            unreachable!()
        };
        Tool::new(name, "d", Arc::new(m))
    }

    #[test]
    fn typing_tools_get_record_as_beside_their_text_at_any_depth() {
        // chrome-devtools-mcp's shapes.
        let mut fill = tool(
            "fill",
            json!({"type": "object", "properties": {"uid": {"type": "string"}, "value": {"type": "string"}}, "required": ["uid", "value"]}),
        );
        assert_eq!(augment(&mut fill), Schema::Added(1));
        assert_eq!(
            fill.input_schema["properties"]["recordAs"]["type"],
            "string"
        );
        assert_eq!(fill.input_schema["required"], json!(["uid", "value"]));
        let mut form = tool(
            "fill_form",
            json!({"type": "object", "properties": {"elements": {"type": "array", "items": {"type": "object", "properties": {"uid": {"type": "string"}, "value": {"type": "string"}}}}}}),
        );
        assert_eq!(augment(&mut form), Schema::Added(1));
        assert!(
            form.input_schema["properties"]["elements"]["items"]["properties"]["recordAs"]
                .is_object()
        );
        assert!(form.input_schema["properties"].get("recordAs").is_none());
        // @playwright/mcp's.
        let mut typ = tool(
            "browser_type",
            json!({"type": "object", "properties": {"element": {"type": "string"}, "target": {"type": "string"}, "text": {"type": "string"}, "submit": {"type": "boolean"}}}),
        );
        assert_eq!(augment(&mut typ), Schema::Added(1));
        // Not typing, no text, or a recordAs of its own: left alone.
        let mut click = tool(
            "click",
            json!({"type": "object", "properties": {"uid": {"type": "string"}}}),
        );
        assert_eq!(augment(&mut click), Schema::Nothing);
        let mut key = tool(
            "press_key",
            json!({"type": "object", "properties": {"key": {"type": "string"}}}),
        );
        assert_eq!(augment(&mut key), Schema::Nothing);
        let mut theirs = tool(
            "search",
            json!({"type": "object", "properties": {"recordAs": {"type": "string"}}}),
        );
        assert_eq!(augment(&mut theirs), Schema::Own);
        let mut own = tool(
            "fill",
            json!({"type": "object", "properties": {"value": {"type": "string"}, "recordAs": {"type": "boolean"}}}),
        );
        let before = own.input_schema.clone();
        assert_eq!(augment(&mut own), Schema::Own);
        assert_eq!(own.input_schema, before);
    }

    #[test]
    fn record_as_is_taken_out_with_the_text_beside_it() {
        let Value::Object(mut args) = json!({
            "elements": [
                {"uid": "1_3", "value": "acct-0042", "recordAs": "ACCOUNT"},
                {"uid": "1_4", "value": "x"}
            ],
            "recordAs": 7,
            "text": "a",
            "values": ["b", "c"]
        }) else {
            unreachable!()
        };
        let named = strip(&mut args);
        assert_eq!(
            named,
            vec![
                Named {
                    name: None,
                    text: Err(3)
                },
                Named {
                    name: Some("ACCOUNT".into()),
                    text: Ok("acct-0042".into())
                },
            ]
        );
        assert!(!Value::Object(args).to_string().contains("recordAs"));
    }
}
