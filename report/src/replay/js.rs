//! Journal text made safe inside generated TypeScript: string literals that no quote, backslash
//! or line terminator can leave, and comments that no line break or `*/` can end.

use crate::text::line;
use std::fmt::Write as _;

/// `s` as a single-quoted JS string literal. Quotes and backslashes are escaped; control,
/// line-terminating (U+2028, U+2029), bidirectional and zero-width characters become `\u`
/// escapes, so the literal reads as what it holds and ends where it seems to.
pub(crate) fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if crate::text::is_invisible_control(c) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Text for a `//` comment: one line (line breaks become spaces, invisible characters visible
/// escapes), at most `max_chars` characters, and no `*/`, so it stays inert even pasted into a
/// block comment.
pub(crate) fn comment(s: &str, max_chars: usize) -> String {
    line(s, max_chars).replace("*/", "*\\/")
}

/// True for a name usable as an environment variable and a JS identifier: `[A-Za-z_]` then
/// `[A-Za-z0-9_]`, at most 64 characters.
pub(crate) fn is_variable_name(s: &str) -> bool {
    let mut chars = s.chars();
    s.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_cannot_be_left() {
        assert_eq!(string("it's"), r"'it\'s'");
        assert_eq!(string(r"a\b"), r"'a\\b'");
        assert_eq!(string("a\nb\r\u{2028}c\u{2029}"), r"'a\nb\r\u2028c\u2029'");
        assert_eq!(string("\u{202E}x\u{0}"), r"'\u202ex\u0000'");
        assert_eq!(string("${x} `y` */"), "'${x} `y` */'");
        assert_eq!(string("\u{E0041}"), r"'\udb40\udc41'");
        assert_eq!(string("Überweisung"), "'Überweisung'");
    }

    #[test]
    fn comments_stay_one_inert_line() {
        assert_eq!(comment("a\nb\r\nc", 100), "a b  c");
        assert_eq!(comment("x */ alert(1) /*", 100), "x *\\/ alert(1) /*");
        assert!(!comment("a\u{2028}b", 100).contains('\u{2028}'));
        assert_eq!(comment("abcdef", 3), "abc…[+3 chars]");
    }

    #[test]
    fn variable_names() {
        assert!(is_variable_name("PASSWORD"));
        assert!(is_variable_name("TYPED_1"));
        assert!(is_variable_name("_x9"));
        assert!(!is_variable_name("1X"));
        assert!(!is_variable_name("A-B"));
        assert!(!is_variable_name(""));
        assert!(!is_variable_name(&"A".repeat(65)));
    }
}
