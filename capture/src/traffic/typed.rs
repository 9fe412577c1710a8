//! What a client types: the text a client → browser message would put into a page, read the
//! way JSON is read — whatever the order of its keys, however its strings are escaped, with
//! duplicate keys, and through `Target.sendMessageToTarget` messages nested in it — never by
//! where its keys sit (`params` before `method`, `"Input.insert\u0054ext"`, a
//! non-flat session's `Input.insertText` and `DOM.setAttributesAsText` were each echoed in
//! clear).
//!
//! [`may_type`] is a prefilter that can only say "maybe": a message whose `method` decodes to
//! a typing command holds either that name as written or a backslash (an escape, or the quotes
//! of a nested message). [`read`] then parses the message as JSON does; with duplicate keys
//! every value is considered (Chromium keeps one; which one is its business, not ours).
//!
//! The typed text goes no further than the observer's typing bursts and the sanitizer's
//! registry (memory only); nothing here logs it or keeps it.

use crate::cdp::methods::CommandMethod;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;
use std::sync::LazyLock;

/// Nested `Target.sendMessageToTarget` messages read, at most (a browser session typing into a
/// page through a non-flat session is two).
const MAX_DEPTH: usize = 4;

/// Keys whose names say nothing about what was typed; any other key is part of typing. The one
/// table of them: the MCP gateway decides a `press_key` by it too (`cdp_relay_mcp`'s `args::key_press`).
pub const NAMED_KEYS: &[&str] = &[
    "Enter",
    "NumpadEnter",
    "Tab",
    "Escape",
    "Backspace",
    "Delete",
    "ArrowUp",
    "ArrowDown",
    "ArrowLeft",
    "ArrowRight",
    "Home",
    "End",
    "PageUp",
    "PageDown",
    "Insert",
    "F1",
    "F2",
    "F3",
    "F4",
    "F5",
    "F6",
    "F7",
    "F8",
    "F9",
    "F10",
    "F11",
    "F12",
    "F13",
    "F14",
    "F15",
    "F16",
    "F17",
    "F18",
    "F19",
    "F20",
    "F21",
    "F22",
    "F23",
    "F24",
    "CapsLock",
    "NumLock",
    "ScrollLock",
    "Pause",
    "PrintScreen",
    "ContextMenu",
    "Clear",
    "Help",
    "Cancel",
    "AudioVolumeUp",
    "AudioVolumeDown",
    "AudioVolumeMute",
    "MediaTrackNext",
    "MediaTrackPrevious",
    "MediaStop",
    "MediaPlayPause",
    "Shift",
    "Control",
    "Alt",
    "AltGraph",
    "Meta",
];

/// How text reached the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    /// Inserted as if typed: `Input.insertText`, a key event's text.
    Typed,
    /// Set, not typed: a `value` attribute, a node's text.
    Set,
    /// An IME composition in progress: its whole text so far (each update repeats it).
    Composition,
}

/// One text a command puts into the page.
pub(crate) struct Text {
    pub(crate) text: String,
    pub(crate) how: How,
    /// The session it went to: the message's own, or a nested message's target session.
    pub(crate) session: Option<String>,
}

/// A client command that types.
pub(crate) struct Typing {
    /// The outer message's id and session: its response answers the typing.
    pub(crate) id: Option<u64>,
    pub(crate) session: Option<String>,
    /// What it types. The first is the command's text; any others are what duplicate keys or
    /// several nested messages could also have meant (registered, not counted).
    pub(crate) texts: Vec<Text>,
}

/// Method names that type, as written without escapes. The backslash any escaped spelling (or
/// nested message) needs is looked for on its own, with `memchr`: in one automaton with the
/// names, the check walked every byte of every command through the whole automaton.
static NEEDLES: LazyLock<Option<aho_corasick::AhoCorasick>> = LazyLock::new(|| {
    let needles: Vec<&str> = TYPING.iter().map(|m| m.name()).collect();
    aho_corasick::AhoCorasick::new(needles).ok()
});

/// The commands that put text into a page.
const TYPING: [CommandMethod; 7] = [
    CommandMethod::InputInsertText,
    CommandMethod::InputDispatchKeyEvent,
    CommandMethod::InputImeSetComposition,
    CommandMethod::DomSetAttributeValue,
    CommandMethod::DomSetAttributesAsText,
    CommandMethod::DomSetNodeValue,
    CommandMethod::TargetSendMessageToTarget,
];

/// False only for a message that cannot be a typing command, however it is spelled.
pub(crate) fn may_type(message: &str) -> bool {
    // Without the automaton (not reachable: a few short literals always build), everything.
    memchr::memchr(b'\\', message.as_bytes()).is_some()
        || NEEDLES.as_ref().is_none_or(|n| n.is_match(message))
}

/// The typing in `message`, if it is (or nests) a typing command that types something.
pub(crate) fn read(message: &str) -> Option<Typing> {
    let fields = fields(message)?;
    let id = fields
        .iter()
        .filter(|(k, _)| k == "id")
        .find_map(|(_, v)| serde_json::from_str::<u64>(v.get()).ok());
    let session = strings(&fields, "sessionId").into_iter().next();
    let mut texts = Vec::new();
    typed_in(&fields, session.as_deref(), 0, &mut texts);
    if texts.is_empty() {
        return None;
    }
    Some(Typing { id, session, texts })
}

/// Adds what the message made of `fields` types, sent to `session`.
fn typed_in(fields: &Fields<'_>, session: Option<&str>, depth: usize, out: &mut Vec<Text>) {
    let methods: Vec<CommandMethod> = strings(fields, "method")
        .iter()
        .filter_map(|m| CommandMethod::parse(m))
        .filter(|m| TYPING.contains(m))
        .collect();
    if methods.is_empty() {
        return;
    }
    let params: Vec<Fields<'_>> = fields
        .iter()
        .filter(|(k, _)| k == "params")
        .filter_map(|(_, v)| self::fields(v.get()))
        .collect();
    for &method in &methods {
        for p in &params {
            if method != CommandMethod::TargetSendMessageToTarget {
                for (text, how) in typed_by(method, p) {
                    if !text.is_empty() {
                        out.push(Text {
                            text,
                            how,
                            session: session.map(str::to_owned),
                        });
                    }
                }
                continue;
            }
            if depth >= MAX_DEPTH {
                continue;
            }
            // A non-flat session: the message goes to the target behind `sessionId` (or
            // `targetId`), as a JSON string of its own.
            let inner_session = strings(p, "sessionId")
                .into_iter()
                .chain(strings(p, "targetId"))
                .next();
            for message in strings(p, "message") {
                if let Some(inner) = self::fields(&message) {
                    typed_in(&inner, inner_session.as_deref(), depth + 1, out);
                }
            }
        }
    }
}

/// The texts `method` with `params` puts into the page.
fn typed_by(method: CommandMethod, p: &Fields<'_>) -> Vec<(String, How)> {
    use CommandMethod as M;
    let all = |key: &str, how: How| strings(p, key).into_iter().map(move |t| (t, how));
    match method {
        M::InputInsertText => all("text", How::Typed).collect(),
        M::InputDispatchKeyEvent => {
            // keyDown and char insert their text; keyUp and rawKeyDown insert nothing.
            let inserts = strings(p, "type")
                .iter()
                .any(|t| t == "keyDown" || t == "char");
            let keys = strings(p, "key");
            let named = !keys.is_empty() && keys.iter().all(|k| is_named_key(k));
            if !inserts || named {
                return Vec::new();
            }
            let texts: Vec<(String, How)> = all("text", How::Typed)
                .filter(|(t, _)| !t.is_empty())
                .collect();
            if texts.is_empty() {
                all("unmodifiedText", How::Typed).collect()
            } else {
                texts
            }
        }
        M::InputImeSetComposition => all("text", How::Composition).collect(),
        M::DomSetAttributeValue => {
            let is_value = strings(p, "name")
                .iter()
                .any(|n| n.eq_ignore_ascii_case("value"));
            if is_value {
                all("value", How::Set).collect()
            } else {
                Vec::new()
            }
        }
        M::DomSetAttributesAsText => strings(p, "text")
            .iter()
            .flat_map(|t| value_attributes(t))
            .map(|v| (v, How::Set))
            .collect(),
        M::DomSetNodeValue => all("value", How::Set).collect(),
        _ => Vec::new(),
    }
}

/// Key names that say nothing about what was typed (`Enter` carries `\r` as its text).
pub(crate) fn is_named_key(key: &str) -> bool {
    NAMED_KEYS.contains(&key)
}

/// A JSON object's members, duplicates included, values unparsed.
type Fields<'a> = Vec<(String, &'a RawValue)>;

/// The members of the JSON object `text`, in order; `None` if it is not one.
fn fields(text: &str) -> Option<Fields<'_>> {
    struct Members;
    impl<'de> Visitor<'de> for Members {
        type Value = Fields<'de>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                out.push((key, map.next_value::<&'de RawValue>()?));
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let out = (&mut de).deserialize_map(Members).ok()?;
    de.end().ok()?;
    Some(out)
}

/// Every string value of `key` among `fields`, decoded.
fn strings(fields: &Fields<'_>, key: &str) -> Vec<String> {
    fields
        .iter()
        .filter(|(k, _)| k == key)
        .filter_map(|(_, v)| serde_json::from_str::<String>(v.get()).ok())
        .collect()
}

/// The values of `value` attributes (any letter case) in HTML attribute text such as
/// `class=a value="x" VALUE='y' value=z`, each as written and, if it differs, with character
/// references decoded (the page sees the decoded one).
fn value_attributes(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    let blank = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c');
    while i < b.len() {
        while i < b.len() && (blank(b[i]) || b[i] == b'/') {
            i += 1;
        }
        let name_start = i;
        while i < b.len() && !blank(b[i]) && !matches!(b[i], b'=' | b'>' | b'/') {
            i += 1;
        }
        // A name may start with '=' (HTML allows it); take one char to make progress.
        if i == name_start && i < b.len() {
            i += 1;
        }
        let name = &text[name_start..i];
        while i < b.len() && blank(b[i]) {
            i += 1;
        }
        if i >= b.len() || b[i] != b'=' {
            continue;
        }
        i += 1;
        while i < b.len() && blank(b[i]) {
            i += 1;
        }
        let value = match b.get(i) {
            Some(&q @ (b'"' | b'\'')) => {
                let start = i + 1;
                let end = text[start..]
                    .find(char::from(q))
                    .map_or(b.len(), |e| start + e);
                i = (end + 1).min(b.len());
                &text[start..end]
            }
            _ => {
                let start = i;
                while i < b.len() && !blank(b[i]) && b[i] != b'>' {
                    i += 1;
                }
                &text[start..i]
            }
        };
        if name.eq_ignore_ascii_case("value") {
            out.push(value.to_owned());
            let decoded = decode_references(value);
            if decoded != value {
                out.push(decoded);
            }
        }
    }
    out
}

/// `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&#NN;` and `&#xHH;` decoded; anything else kept.
fn decode_references(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest[..rest.len().min(12)].find(';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let name = &rest[1..end];
        let c = match name {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            n if n.starts_with("#x") || n.starts_with("#X") => u32::from_str_radix(&n[2..], 16)
                .ok()
                .and_then(char::from_u32),
            n if n.starts_with('#') => n[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// The texts `message` types, as (text, how, session).
    fn typed(message: &str) -> Vec<(String, How, Option<String>)> {
        assert!(may_type(message), "the prefilter said no: {message}");
        read(message)
            .map(|t| {
                t.texts
                    .into_iter()
                    .map(|x| (x.text, x.how, x.session))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn one(text: &str, how: How) -> Vec<(String, How, Option<String>)> {
        vec![(text.to_owned(), how, None)]
    }

    #[test]
    fn key_order_escapes_and_duplicates_do_not_hide_typing() {
        for (message, want) in [
            (
                r#"{"params":{"text":"Secr3t1"},"id":1,"method":"Input.insertText"}"#,
                one("Secr3t1", How::Typed),
            ),
            (
                r#"{"id":1,"method":"Input.insert\u0054ext","params":{"text":"Secr3t2"}}"#,
                one("Secr3t2", How::Typed),
            ),
            (
                r#"{"\u0069d":1,"met\u0068od":"Input.insertText","p\u0061rams":{"t\u0065xt":"Secr\u00653t3"}}"#,
                one("Secre3t3", How::Typed),
            ),
            (
                r#" { "id" : 1 , "method" : "Input.insertText" , "params" : { "text" : "Secr3t4" } } "#,
                one("Secr3t4", How::Typed),
            ),
            // Duplicate keys: whichever one the browser keeps, the text is seen.
            (
                r#"{"id":1,"method":"Page.enable","method":"Input.insertText","params":{"text":"a"},"params":{"text":"Secr3t5"}}"#,
                vec![
                    ("a".to_owned(), How::Typed, None),
                    ("Secr3t5".to_owned(), How::Typed, None),
                ],
            ),
            (
                r#"{"id":2,"method":"DOM.setAttributeValue","params":{"nodeId":4,"name":"VALUE","value":"Secr3t6"}}"#,
                one("Secr3t6", How::Set),
            ),
            (
                r#"{"id":2,"method":"DOM.setAttributesAsText","params":{"nodeId":4,"text":"class=x VALUE='Secr3t7' data-v=\"no\""}}"#,
                one("Secr3t7", How::Set),
            ),
            (
                r#"{"id":2,"method":"DOM.setAttributesAsText","params":{"nodeId":4,"text":"value=Secr&amp;3t8 id=a"}}"#,
                vec![
                    ("Secr&amp;3t8".to_owned(), How::Set, None),
                    ("Secr&3t8".to_owned(), How::Set, None),
                ],
            ),
            (
                r#"{"id":3,"method":"DOM.setNodeValue","params":{"nodeId":9,"value":"Secr3t9"}}"#,
                one("Secr3t9", How::Set),
            ),
            (
                r#"{"id":4,"method":"Input.imeSetComposition","params":{"text":"にほんご","selectionStart":4,"selectionEnd":4}}"#,
                one("にほんご", How::Composition),
            ),
            (
                r#"{"id":5,"method":"Input.dispatchKeyEvent","params":{"type":"char","text":"S"}}"#,
                one("S", How::Typed),
            ),
            (
                r#"{"id":5,"method":"Input.dispatchKeyEvent","params":{"type":"keyDown","key":"s","unmodifiedText":"s"}}"#,
                one("s", How::Typed),
            ),
        ] {
            assert_eq!(typed(message), want, "{message}");
        }
    }

    #[test]
    fn nested_messages_type_into_their_session() {
        let inner =
            json!({"id": 7, "method": "Input.insertText", "params": {"text": "Nested5ecret"}});
        let outer = json!({"id": 9, "method": "Target.sendMessageToTarget",
            "params": {"sessionId": "NONFLAT1", "message": inner.to_string()}});
        let t = read(&outer.to_string()).expect("typing");
        assert_eq!((t.id, t.session.as_deref()), (Some(9), None));
        assert_eq!(t.texts.len(), 1);
        assert_eq!(t.texts[0].text, "Nested5ecret");
        assert_eq!(t.texts[0].session.as_deref(), Some("NONFLAT1"));
        // Twice nested, on a flat session, with the target named instead.
        let twice = json!({"id": 1, "sessionId": "FLAT", "method": "Target.sendMessageToTarget",
            "params": {"targetId": "T2", "message": outer.to_string()}});
        let t = read(&twice.to_string()).expect("typing");
        assert_eq!((t.id, t.session.as_deref()), (Some(1), Some("FLAT")));
        assert_eq!(t.texts[0].text, "Nested5ecret");
        assert_eq!(t.texts[0].session.as_deref(), Some("NONFLAT1"));
        // Nesting is bounded, and hostile nesting is just not read.
        let mut deep = inner.to_string();
        for _ in 0..(MAX_DEPTH + 2) {
            deep = json!({"id": 1, "method": "Target.sendMessageToTarget",
                "params": {"sessionId": "S", "message": deep}})
            .to_string();
        }
        assert!(read(&deep).is_none());
    }

    #[test]
    fn what_is_not_typing() {
        for message in [
            r#"{"id":1,"method":"Input.dispatchKeyEvent","params":{"type":"keyDown","key":"Enter","text":"\r"}}"#,
            r#"{"id":1,"method":"Input.dispatchKeyEvent","params":{"type":"keyUp","key":"a","text":"a"}}"#,
            r#"{"id":1,"method":"Input.dispatchKeyEvent","params":{"type":"rawKeyDown","key":"a","text":"a"}}"#,
            r#"{"id":1,"method":"DOM.setAttributeValue","params":{"nodeId":1,"name":"class","value":"big"}}"#,
            r#"{"id":1,"method":"DOM.setAttributesAsText","params":{"nodeId":1,"text":"class=\"value\" data-value=x"}}"#,
            r#"{"id":1,"method":"Input.insertText","params":{"text":""}}"#,
            r#"{"id":1,"method":"Runtime.evaluate","params":{"expression":"el.value = \"x\""}}"#,
            r#"{"id":1,"method":"Input.insertText","params":"not an object"}"#,
            r#"{"id":1,"method":"Input.insertText","params":{"text":"x"}"#,
            "[1,2]",
            "",
        ] {
            assert!(read(message).is_none(), "{message}");
        }
        assert!(!may_type(
            r#"{"id":1,"method":"Page.navigate","params":{"url":"https://a/"}}"#
        ));
    }

    #[test]
    fn attribute_text_is_read_as_html_reads_it() {
        assert_eq!(
            value_attributes(r#"value="a b" VALUE='c' Value=d/ id=value valuex=e value = " f ""#),
            ["a b", "c", "d/", " f "]
        );
        assert_eq!(value_attributes(r#"value="unterminated"#), ["unterminated"]);
        assert_eq!(value_attributes("=x value"), Vec::<String>::new());
        assert_eq!(
            decode_references("&lt;&#65;&#x42;&amp;&bogus;&"),
            "<AB&&bogus;&"
        );
    }

    /// `s` with each character written as is or as a `\uXXXX` escape, as `mask` says.
    fn escaped(s: &str, mask: &[bool]) -> String {
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            let mut units = [0u16; 2];
            if mask.get(i % mask.len().max(1)).copied().unwrap_or(false) {
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            } else {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
        }
        out
    }

    /// A typing command for each method this module reads: (method, params members, the text).
    fn command(which: usize, text: &str) -> (&'static str, Vec<(&'static str, String)>) {
        let s = |v: &str| serde_json::to_string(v).expect("string");
        match which % 6 {
            0 => ("Input.insertText", vec![("text", s(text))]),
            1 => (
                "Input.dispatchKeyEvent",
                vec![("type", s("keyDown")), ("key", s("x")), ("text", s(text))],
            ),
            2 => ("Input.imeSetComposition", vec![("text", s(text))]),
            3 => (
                "DOM.setAttributeValue",
                vec![
                    ("nodeId", "3".into()),
                    ("name", s("vAlUe")),
                    ("value", s(text)),
                ],
            ),
            4 => (
                "DOM.setAttributesAsText",
                vec![
                    ("nodeId", "3".into()),
                    ("text", s(&format!("value=\"{}\"", text.replace('"', "")))),
                ],
            ),
            _ => (
                "DOM.setNodeValue",
                vec![("nodeId", "3".into()), ("value", s(text))],
            ),
        }
    }

    fn object(members: &[(String, String)], order: &[usize]) -> String {
        let mut idx: Vec<usize> = (0..members.len()).collect();
        // A permutation from `order` (a Lehmer-like shuffle that is always valid).
        for (i, &o) in order.iter().enumerate().take(idx.len()) {
            let j = i + o % (idx.len() - i);
            idx.swap(i, j);
        }
        let body: Vec<String> = idx
            .iter()
            .map(|&i| format!("\"{}\":{}", members[i].0, members[i].1))
            .collect();
        format!("{{{}}}", body.join(","))
    }

    proptest! {
        /// Every method read here, in every key order, with any of its names' characters (method,
        /// keys) escaped, nested or not: the prefilter says maybe and the text is found.
        #[test]
        fn every_spelling_of_every_typing_command_is_read(
            which in 0usize..6,
            text in "[a-zA-Z0-9 é\"]{1,12}",
            order in proptest::collection::vec(0usize..8, 4),
            mask in proptest::collection::vec(any::<bool>(), 1..5),
            nested in any::<bool>(),
        ) {
            let want = if which % 6 == 4 { text.replace('"', "") } else { text.clone() };
            prop_assume!(!want.is_empty());
            let (method, params) = command(which, &text);
            let params: Vec<(String, String)> = params
                .into_iter()
                .map(|(k, v)| (escaped(k, &mask), v))
                .collect();
            let message = object(
                &[
                    (escaped("id", &mask), "12".into()),
                    (escaped("method", &mask), format!("\"{}\"", escaped(method, &mask))),
                    (escaped("params", &mask), object(&params, &order)),
                    (escaped("sessionId", &mask), "\"S1\"".into()),
                ],
                &order,
            );
            let message = if nested {
                let outer = json!({"id": 3, "method": "Target.sendMessageToTarget",
                    "params": {"sessionId": "S1", "message": message}});
                object(
                    &[
                        ("params".into(), outer["params"].to_string()),
                        ("method".into(), outer["method"].to_string()),
                        ("id".into(), "3".into()),
                    ],
                    &order,
                )
            } else {
                message
            };
            prop_assert!(may_type(&message), "{}", message);
            let t = read(&message);
            prop_assert!(t.is_some(), "{}", message);
            let t = t.expect("checked");
            prop_assert!(t.texts.iter().any(|x| x.text == want), "{} in {}", want, message);
            prop_assert_eq!(t.id, Some(if nested { 3 } else { 12 }));
            prop_assert!(t.texts.iter().all(|x| x.session.as_deref() == Some("S1")));
        }

        /// The prefilter never says no to a message that reads as typing.
        #[test]
        fn the_prefilter_only_says_maybe(message in "\\PC{0,80}") {
            if read(&message).is_some() {
                prop_assert!(may_type(&message));
            }
        }
    }
}
