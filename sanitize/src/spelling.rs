//! The spellings a registered literal takes in logs: as is, JSON-escaped (inside a logged JSON
//! string) and URL-encoded (a query string or form body, with `+` or `%20` for a space).
//!
//! Every spelling encodes one character at a time, independently of its neighbours, so the
//! spelling of a prefix is a prefix of the spelling: that is what lets a typed echo be matched by
//! extending a short prefix character by character (`secrets.rs`). Pure string functions.

use std::fmt::Write as _;

/// One way of writing a literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Spelling {
    /// The literal itself.
    Plain,
    /// The inside of a JSON string, escaped exactly as `serde_json` writes it.
    Json,
    /// `application/x-www-form-urlencoded` as the `url` crate writes it (space as `+`).
    Form,
    /// The same with a space as `%20`, as `encodeURIComponent` writes it.
    FormPercent,
}

impl Spelling {
    pub(crate) const ALL: [Spelling; 4] = [
        Spelling::Plain,
        Spelling::Json,
        Spelling::Form,
        Spelling::FormPercent,
    ];

    /// Appends `c` as this spelling writes it.
    pub(crate) fn push(self, c: char, out: &mut String) {
        match self {
            Spelling::Plain => out.push(c),
            Spelling::Json => match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if u32::from(c) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
                c => out.push(c),
            },
            Spelling::Form | Spelling::FormPercent => {
                let mut utf8 = [0u8; 4];
                for &b in c.encode_utf8(&mut utf8).as_bytes() {
                    match b {
                        b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                            out.push(char::from(b));
                        }
                        b' ' if self == Spelling::Form => out.push('+'),
                        _ => {
                            let _ = write!(out, "%{b:02X}");
                        }
                    }
                }
            }
        }
    }

    /// `s` in this spelling.
    pub(crate) fn encode(self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            self.push(c, &mut out);
        }
        out
    }

    /// Length in bytes of `c` in this spelling.
    pub(crate) fn len_of(self, c: char) -> usize {
        match self {
            Spelling::Plain => c.len_utf8(),
            Spelling::Json => match c {
                '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
                c if u32::from(c) < 0x20 => 6,
                c => c.len_utf8(),
            },
            Spelling::Form | Spelling::FormPercent => {
                let mut utf8 = [0u8; 4];
                c.encode_utf8(&mut utf8)
                    .bytes()
                    .map(|b| match b {
                        b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => 1,
                        b' ' if self == Spelling::Form => 1,
                        _ => 3,
                    })
                    .sum()
            }
        }
    }
}

/// Every distinct, non-empty spelling of `literal`.
pub(crate) fn spellings(literal: &str) -> Vec<String> {
    let mut out: Vec<String> = Spelling::ALL.iter().map(|s| s.encode(literal)).collect();
    out.sort_unstable();
    out.dedup();
    out.retain(|s| !s.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_spellings() {
        let lit = "p@ss \"w0rd\"\n\u{1}é";
        assert_eq!(Spelling::Plain.encode(lit), lit);
        assert_eq!(Spelling::Json.encode(lit), "p@ss \\\"w0rd\\\"\\n\\u0001é");
        assert_eq!(Spelling::Form.encode(lit), "p%40ss+%22w0rd%22%0A%01%C3%A9");
        assert_eq!(
            Spelling::FormPercent.encode(lit),
            "p%40ss%20%22w0rd%22%0A%01%C3%A9"
        );
    }

    proptest! {
        /// The per-character encoders agree with serde_json and the url crate, and `len_of`
        /// with `push`.
        #[test]
        fn encoders_match_the_libraries(s in any::<String>()) {
            let json = serde_json::to_string(&s).expect("strings serialize");
            prop_assert_eq!(Spelling::Json.encode(&s), &json[1..json.len() - 1]);
            let form: String = url::form_urlencoded::byte_serialize(s.as_bytes()).collect();
            prop_assert_eq!(Spelling::Form.encode(&s), form.clone());
            prop_assert_eq!(Spelling::FormPercent.encode(&s), form.replace('+', "%20"));
            for sp in Spelling::ALL {
                let total: usize = s.chars().map(|c| sp.len_of(c)).sum();
                prop_assert_eq!(total, sp.encode(&s).len());
            }
        }
    }
}
