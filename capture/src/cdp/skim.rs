//! The top level of a CDP message read without parsing its values: `id`, `method` and
//! `sessionId` are read, `params` / `result` / `error` kept as spans of the text, every other
//! member stepped over. Strings are crossed with `memchr`, so a 1 MiB reply whose result nobody
//! reads costs a pass at memory speed, not a parse.
//!
//! It answers only when it is sure: any shape it does not read the way serde_json would (an
//! escaped key or method, an id that is not a plain integer, a repeated member, anything
//! malformed around the members) is left to the full parse in `frame.rs`, which decides.
//! Spans are not validated here; reading one (`Frame::params`, `Frame::result`) does.

use super::frame::{Frame, Raw};
use std::borrow::Cow;

/// The frame, or `None` when the full parse must decide.
pub(super) fn skim(text: &str) -> Option<Frame<'_>> {
    let mut c = Cursor { text, at: 0 };
    c.expect(b'{')?;
    let mut f = Frame::default();
    let mut seen = 0u8;
    if c.peek()? == b'}' {
        c.at += 1;
    } else {
        loop {
            let key = c.member_name()?;
            c.expect(b':')?;
            c.peek()?;
            let bit = match key {
                "id" => 1,
                "method" => 2,
                "sessionId" => 4,
                "params" => 8,
                "result" => 16,
                "error" => 32,
                _ => 0,
            };
            if seen & bit != 0 {
                // serde_json refuses a repeated member.
                return None;
            }
            seen |= bit;
            match key {
                "id" => f.id = Some(c.integer()?),
                "method" => f.method = Some(Cow::Borrowed(c.plain_string()?)),
                "sessionId" => f.session_id = Some(Cow::Borrowed(c.plain_string()?)),
                "params" => f.params = c.raw()?,
                "result" => f.result = c.raw()?,
                "error" => f.error = c.raw()?,
                _ => c.skip()?,
            }
            match c.peek()? {
                b',' => c.at += 1,
                b'}' => {
                    c.at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    c.space();
    (c.at == text.len()).then_some(f)
}

struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn space(&mut self) {
        while matches!(
            self.bytes().get(self.at),
            Some(b' ' | b'\t' | b'\n' | b'\r')
        ) {
            self.at += 1;
        }
    }

    /// The next byte after white space, not taken.
    fn peek(&mut self) -> Option<u8> {
        self.space();
        self.bytes().get(self.at).copied()
    }

    fn expect(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.at += 1)
    }

    /// A top-level member's name: the names a message is read for compared whole, any other
    /// read as a plain string.
    fn member_name(&mut self) -> Option<&'a str> {
        const NAMES: [&str; 6] = ["method", "id", "params", "sessionId", "result", "error"];
        self.space();
        let rest = self.bytes().get(self.at..)?;
        for name in NAMES {
            let n = name.len();
            if rest.get(1..n + 1) == Some(name.as_bytes())
                && rest.first() == Some(&b'"')
                && rest.get(n + 1) == Some(&b'"')
            {
                self.at += n + 2;
                return Some(name);
            }
        }
        self.plain_string()
    }

    /// A string with no escapes and no control characters (which serde_json refuses), borrowed.
    fn plain_string(&mut self) -> Option<&'a str> {
        self.expect(b'"')?;
        let start = self.at;
        let end = string_end(self.bytes(), start)?;
        if self.bytes()[end] != b'"' {
            return None;
        }
        let s = self.text.get(start..end)?;
        self.at = end + 1;
        Some(s)
    }

    /// An unsigned integer as serde_json reads a `u64`: digits, no leading zero, no fraction or
    /// exponent, no overflow.
    fn integer(&mut self) -> Option<u64> {
        let rest = self.bytes().get(self.at..)?;
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || (digits > 1 && rest[0] == b'0') {
            return None;
        }
        if matches!(rest.get(digits), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let n = self.text.get(self.at..self.at + digits)?.parse().ok()?;
        self.at += digits;
        Some(n)
    }

    /// A value's span; `None` inside for `null` (serde_json reads it as an absent member).
    fn raw(&mut self) -> Option<Option<Raw<'a>>> {
        let start = self.at;
        self.skip()?;
        let span = self.text.get(start..self.at)?;
        Some((span != "null").then_some(Raw(span)))
    }

    /// Steps over one value (white space before it already taken).
    fn skip(&mut self) -> Option<()> {
        match *self.bytes().get(self.at)? {
            b'"' => self.skip_string(),
            b'{' | b'[' => self.skip_nested(),
            _ => {
                let rest = self.bytes().get(self.at..)?;
                let n = rest
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                    .unwrap_or(rest.len());
                if n == 0 {
                    return None;
                }
                self.at += n;
                Some(())
            }
        }
    }

    fn skip_string(&mut self) -> Option<()> {
        let mut at = self.at + 1;
        loop {
            at = quote_or_backslash(self.bytes(), at)?;
            if self.bytes()[at] == b'"' {
                self.at = at + 1;
                return Some(());
            }
            // An escape: the next byte is never the string's end.
            at += 2;
        }
    }

    /// An object or array: counts brackets outside strings (no recursion, however deep).
    fn skip_nested(&mut self) -> Option<()> {
        let mut depth = 0usize;
        while let Some(&b) = self.bytes().get(self.at) {
            match b {
                b'"' => {
                    self.skip_string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.at += 1;
                        return Some(());
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
        None
    }
}

/// Eight bytes at a time, for strings too short to pay for `memchr`'s set-up (keys, methods,
/// session ids, most values).
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is zero; the lowest one flagged is exact.
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGH
}

fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The first `"`, `\\` or control character in `bytes` from `from`: where a plain string ends,
/// or why it is not one.
fn string_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(word) = word_at(bytes, at) {
        let found = zero_bytes(word ^ (ONES * u64::from(b'"')))
            | zero_bytes(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGH);
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    rest.iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|i| at + i)
}

/// The first `"` or `\\` in `bytes` from `from`; a long string's rest by `memchr2` (a 1 MiB
/// reply's value crosses at memory speed).
fn quote_or_backslash(bytes: &[u8], from: usize) -> Option<usize> {
    const SHORT: usize = 64;
    let mut at = from;
    let short_end = bytes.len().min(from.saturating_add(SHORT));
    while at + 8 <= short_end {
        let word = word_at(bytes, at)?;
        let found = zero_bytes(word ^ (ONES * u64::from(b'"')))
            | zero_bytes(word ^ (ONES * u64::from(b'\\')));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    memchr::memchr2(b'"', b'\\', bytes.get(at..)?).map(|i| at + i)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    /// What serde_json makes of `text` through the full parse, in comparable form.
    type Read = (
        Option<u64>,
        Option<String>,
        Option<String>,
        [Option<Value>; 3],
    );

    fn read(f: &Frame<'_>) -> Read {
        let value = |r: Option<Raw<'_>>| r.map(|r| serde_json::from_str(r.get()).unwrap());
        (
            f.id,
            f.method.as_deref().map(str::to_owned),
            f.session_id.as_deref().map(str::to_owned),
            [value(f.params), value(f.result), value(f.error)],
        )
    }

    fn full(text: &str) -> Option<Read> {
        #[derive(serde::Deserialize)]
        struct Full {
            #[serde(default)]
            id: Option<u64>,
            #[serde(default)]
            method: Option<String>,
            #[serde(default, rename = "sessionId")]
            session_id: Option<String>,
            #[serde(default)]
            params: Option<Value>,
            #[serde(default)]
            result: Option<Value>,
            #[serde(default)]
            error: Option<Value>,
        }
        let f: Full = serde_json::from_str(text).ok()?;
        Some((f.id, f.method, f.session_id, [f.params, f.result, f.error]))
    }

    #[test]
    fn reads_the_usual_shapes_as_serde_does() {
        let big = "x".repeat(100_000);
        for text in [
            r#"{"id":7,"method":"Page.navigate","params":{"url":"https://a/"},"sessionId":"S1"}"#,
            r#"{"id":7,"result":{"frameId":"F","loaderId":"L"},"sessionId":"S1"}"#,
            r#"{"id":7,"error":{"code":-32000,"message":"Cannot navigate"}}"#,
            r#"{"method":"Network.loadingFinished","params":{"requestId":"1","timestamp":1.5},"sessionId":"S"}"#,
            r#"{"id":0,"result":{}}"#,
            r#"{}"#,
            " {\n\t\"id\" : 3 ,\r\n \"result\" : [ 1, {\"a\": [\"]}\"]}, null, true ] } \n",
            r#"{"id":1,"result":{"v":"a\"b\\","w":"\\\"}"},"sessionId":"S"}"#,
            r#"{"id":1,"params":null,"result":null,"error":null,"x":null,"y":-1.5e3,"z":false}"#,
            r#"{"method":"A","other":{"id":2,"method":"B","sessionId":"C"},"sessionId":"D"}"#,
            r#"{"method":"Runtime.consoleAPICalled","params":{"args":[{"value":"é ☃ 😀"}]}}"#,
            &format!(
                r#"{{"id":9,"result":{{"result":{{"type":"string","value":"{big}"}}}},"sessionId":"S"}}"#
            ),
        ] {
            let f = skim(text).unwrap_or_else(|| panic!("not read: {text:.80}"));
            assert_eq!(Some(read(&f)), full(text), "{text:.80}");
        }
    }

    #[test]
    fn leaves_other_shapes_to_serde() {
        for text in [
            r#"{"i\u0064":1}"#,
            r#"{"method":"A.\u0062"}"#,
            r#"{"sessionId":"S\n"}"#,
            r#"{"id":1,"id":2}"#,
            r#"{"params":{},"params":{}}"#,
            r#"{"id":1.0}"#,
            r#"{"id":1e3}"#,
            r#"{"id":01}"#,
            r#"{"id":-1}"#,
            r#"{"id":null}"#,
            r#"{"id":"1"}"#,
            r#"{"id":18446744073709551616}"#,
            r#"{"method":7}"#,
            r#"{"id":1}x"#,
            r#"{"id":1,}"#,
            r#"{"id":1"#,
            r#"{"result":{"a":"unterminated}}"#,
            r#"{"result":[[[}"#,
            r#"{"x":}"#,
            "[1]",
            "",
        ] {
            assert!(skim(text).is_none(), "{text}");
        }
    }

    /// Members in any order, of any JSON shape, with the keys that matter among others.
    fn member() -> impl Strategy<Value = (String, Value)> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            "[ -~\\\\\"é\n]{0,12}".prop_map(Value::String),
        ];
        let value = leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-z\"{}]{1,4}", inner), 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        let text = "[ -~\\\\\"é\n]{0,12}".prop_map(Value::String);
        let key = prop_oneof![
            Just("id"),
            Just("method"),
            Just("sessionId"),
            Just("params"),
            Just("result"),
            Just("error"),
            Just("other"),
        ];
        prop_oneof![
            any::<u64>().prop_map(|id| ("id".to_owned(), Value::from(id))),
            text.clone().prop_map(|m| ("method".to_owned(), m)),
            text.prop_map(|s| ("sessionId".to_owned(), s)),
            (key.prop_map(str::to_owned), value),
        ]
    }

    proptest! {
        #[test]
        fn finds_the_first_quote_or_backslash_as_a_byte_loop_does(
            bytes in prop::collection::vec(prop_oneof![1 => Just(b'"'), 1 => Just(b'\\'), 40 => any::<u8>()], 0..200),
            from in 0usize..210,
        ) {
            let naive = bytes
                .get(from..)
                .and_then(|rest| rest.iter().position(|&b| b == b'"' || b == b'\\'))
                .map(|i| from + i);
            prop_assert_eq!(quote_or_backslash(&bytes, from), naive);
        }
    }

    proptest! {
        #[test]
        fn finds_where_a_plain_string_ends_as_a_byte_loop_does(
            bytes in prop::collection::vec(prop_oneof![1 => Just(b'"'), 1 => Just(b'\\'), 1 => 0u8..0x20, 40 => any::<u8>()], 0..100),
            from in 0usize..110,
        ) {
            let naive = bytes
                .get(from..)
                .and_then(|rest| rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20))
                .map(|i| from + i);
            prop_assert_eq!(string_end(&bytes, from), naive);
        }
    }

    /// An object of `members` written by hand, so a repeated name stays repeated.
    fn object_text(members: &[(String, Value)]) -> String {
        let body: Vec<String> = members
            .iter()
            .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), v))
            .collect();
        format!("{{{}}}", body.join(","))
    }

    proptest! {
        #[test]
        fn never_disagrees_with_serde(members in prop::collection::vec(member(), 0..5)) {
            let text = object_text(&members);
            if let Some(f) = skim(&text) {
                prop_assert_eq!(Some(read(&f)), full(&text), "{}", text);
            }
        }
    }
}
