//! The typed vocabulary of an agent's tool calls (MCP): reduced arguments and result counts,
//! carried by an `action` record whose `source` is `mcp` (see `docs/evidence-format.md`).
//!
//! An argument is kept by name with its JSON type, and then at most one reduced form of its
//! value: a sanitized short identifier, number or boolean (`value`), a URL as origin and path
//! (`url`), typed text as length and input type (`input`), any other string as its length
//! (`chars`), or the reduced members of an object or items of an array (`items`, `count`).
//! Which form an argument gets is the producer's decision (the relay's is in
//! `mcp/src/args.rs`); this module only says what may be written. Like every payload here
//! it is generic over a [`Form`]: the write side holds only `cdp_sanitize` types.

use crate::record::{Form, Sanitized, Stored};
use cdp_sanitize::Word;
use serde::{Deserialize, Serialize};

cdp_sanitize::words! {
    /// The JSON type of an argument as the agent sent it.
    pub enum JsonType {
        /// A string.
        String = "string",
        /// A number.
        Number = "number",
        /// `true` or `false`.
        Boolean = "boolean",
        /// `null`.
        Null = "null",
        /// An array.
        Array = "array",
        /// An object.
        Object = "object",
    }
}

impl JsonType {
    /// The type of `v`.
    pub fn of(v: &serde_json::Value) -> JsonType {
        use serde_json::Value;
        match v {
            Value::String(_) => JsonType::String,
            Value::Number(_) => JsonType::Number,
            Value::Bool(_) => JsonType::Boolean,
            Value::Null => JsonType::Null,
            Value::Array(_) => JsonType::Array,
            Value::Object(_) => JsonType::Object,
        }
    }
}

/// One argument of a tool call, reduced (`payload.arguments[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "F::Text: Serialize, F::Url: Serialize, F::Json: Serialize, F::Input: Serialize",
        deserialize = "F::Text: Deserialize<'de>, F::Url: Deserialize<'de>, F::Json: Deserialize<'de>, F::Input: Deserialize<'de>, Word<JsonType, F::Text>: Deserialize<'de>"
    )
)]
#[non_exhaustive]
pub struct ToolArgumentOf<F: Form> {
    /// The argument's name (an array item's index).
    pub name: F::Text,
    /// Its JSON type (a newer producer's word reads as `Other`).
    #[serde(rename = "type")]
    pub json_type: Word<JsonType, F::Text>,
    /// A number, a boolean, or a short identifier (an element reference, a key name), sanitized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<F::Json>,
    /// A URL, reduced to origin and path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<F::Url>,
    /// Text the agent types or fills: its length and input type, never the characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<F::Input>,
    /// Any other string: only its length in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chars: Option<u64>,
    /// An object's members or an array's items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// The first members or items, each reduced the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<ToolArgumentOf<F>>>,
}

/// An argument to write (sanitized form).
pub type ToolArgument = ToolArgumentOf<Sanitized>;
/// An argument as read back from a journal.
pub type StoredToolArgument = ToolArgumentOf<Stored>;

impl ToolArgument {
    /// An argument known only by name and type; set one reduced form as needed.
    pub fn new(name: cdp_sanitize::SafeText, json_type: JsonType) -> ToolArgument {
        ToolArgument {
            name,
            json_type: json_type.into(),
            value: None,
            url: None,
            input: None,
            chars: None,
            count: None,
            items: None,
        }
    }
}

/// What a tool call returned (`payload.result`): never the content, only its shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResult {
    /// Content items (text, images, resources).
    #[serde(default)]
    pub content: u64,
    /// Of which images.
    #[serde(default)]
    pub images: u64,
    /// Whether it carried structured content.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub structured: bool,
    /// The server said the tool failed (`isError`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl ToolResult {
    /// A result of `content` items, `images` of them images.
    pub fn new(content: u64, images: u64, structured: bool, is_error: bool) -> ToolResult {
        ToolResult {
            content,
            images,
            structured,
            is_error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdp_sanitize::{InputSummary, InputType, SafeText, Sanitizer};

    #[test]
    fn arguments_serialize_in_one_schema_and_read_back() {
        let s = Sanitizer::new();
        let mut url = ToolArgument::new(SafeText::literal("url"), JsonType::String);
        url.url = Some(s.url("https://a.test/login?next=/x#top"));
        let mut typed = ToolArgument::new(SafeText::literal("value"), JsonType::String);
        typed.input = Some(InputSummary::of("hunter22", InputType::Unknown));
        let mut form = ToolArgument::new(SafeText::literal("elements"), JsonType::Array);
        form.count = Some(1);
        let mut item = ToolArgument::new(SafeText::literal("0"), JsonType::Object);
        let mut uid = ToolArgument::new(SafeText::literal("uid"), JsonType::String);
        uid.value = Some(s.json(&serde_json::json!("1_5")));
        item.count = Some(2);
        item.items = Some(vec![uid, typed.clone()]);
        form.items = Some(vec![item]);
        let written = serde_json::to_value(vec![url, typed, form]).unwrap();
        assert_eq!(
            written,
            serde_json::json!([
                {"name": "url", "type": "string", "url": "https://a.test/login"},
                {"name": "value", "type": "string", "input": {"chars": 8, "inputType": "unknown"}},
                {"name": "elements", "type": "array", "count": 1, "items": [
                    {"name": "0", "type": "object", "count": 2, "items": [
                        {"name": "uid", "type": "string", "value": "1_5"},
                        {"name": "value", "type": "string", "input": {"chars": 8, "inputType": "unknown"}}
                    ]}
                ]}
            ])
        );
        let read: Vec<StoredToolArgument> = serde_json::from_value(written.clone()).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), written);
        // A word from a newer producer still reads.
        let other: StoredToolArgument =
            serde_json::from_value(serde_json::json!({"name": "x", "type": "bigint"})).unwrap();
        assert_eq!(other.json_type, Word::Other("bigint".to_owned()));
    }

    #[test]
    fn results_keep_counts_and_flags_only() {
        let r = ToolResult::new(3, 1, false, true);
        assert_eq!(
            serde_json::to_value(r).unwrap(),
            serde_json::json!({"content": 3, "images": 1, "isError": true})
        );
        let back: ToolResult = serde_json::from_value(serde_json::json!({"content": 2})).unwrap();
        assert_eq!(back, ToolResult::new(2, 0, false, false));
    }
}
