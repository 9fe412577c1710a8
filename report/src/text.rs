//! Text as the report shows it: journal strings made visible and bounded, and the numbers
//! (times, durations, sizes) formatted once for both outputs.
//!
//! Escaping for HTML is not done here: the template engine escapes every string it is given.
//! What this module removes is what escaping leaves dangerous or invisible — control
//! characters, NUL, bidirectional overrides and zero-width characters become visible `\u{…}`
//! escapes, so a title cannot reorder the text around it or hide part of itself — and it cuts
//! long strings so no producer can make the report unreadable. Pure; never does I/O.

use std::fmt::Write as _;

/// Characters that reorder or hide text without being visible themselves, and controls: shown
/// as escapes wherever journal text is written out (the report, an exported spec).
pub(crate) fn is_invisible_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}'
    ) || c.is_control()
}

/// How line breaks are treated by [`clean`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lines {
    /// One line: newlines and tabs become spaces.
    One,
    /// Keep `\n` (shown in a pre-wrapped block); other controls are escaped.
    Keep,
}

/// A journal string ready to show: invisible and control characters escaped, at most
/// `max_chars` characters kept, with the number of cut characters said.
pub(crate) fn clean(s: &str, max_chars: usize, lines: Lines) -> String {
    let mut out = String::with_capacity(s.len().min(max_chars * 2));
    let mut chars = s.chars();
    for (kept, c) in chars.by_ref().enumerate() {
        if kept == max_chars {
            // The char just taken is cut too.
            let rest = 1 + chars.clone().count();
            let _ = write!(out, "…[+{rest} chars]");
            return out;
        }
        match c {
            '\n' if lines == Lines::Keep => out.push('\n'),
            '\n' | '\t' | '\r' if lines == Lines::One => out.push(' '),
            '\t' => out.push('\t'),
            c if is_invisible_control(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// One-line text of at most `max` characters.
pub(crate) fn line(s: &str, max: usize) -> String {
    clean(s, max, Lines::One)
}

/// Bytes in binary units: `812 B`, `14.2 KiB`, `3.1 MiB`.
pub(crate) fn bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if n < 1024 {
        format!("{n} B")
    } else if f < KIB * KIB {
        format!("{:.1} KiB", f / KIB)
    } else if f < KIB * KIB * KIB {
        format!("{:.1} MiB", f / KIB / KIB)
    } else {
        format!("{:.1} GiB", f / KIB / KIB / KIB)
    }
}

/// A duration: `0 ms`, `340 ms`, `2.4 s`, `1 min 05 s`, `2 h 03 min`.
pub(crate) fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else if ms < 3_600_000 {
        let s = ms / 1000;
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        let m = ms / 60_000;
        format!("{} h {:02} min", m / 60, m % 60)
    }
}

/// An offset from the run start: `+0.0 s`, `+12.3 s`, `+2:05.3`, `+1:02:03`, `−0.4 s`.
pub(crate) fn offset(ms: i64) -> String {
    let sign = if ms < 0 { "−" } else { "+" };
    let a = ms.unsigned_abs();
    let tenths = (a % 1000) / 100;
    let s = a / 1000;
    if s < 60 {
        format!("{sign}{s}.{tenths} s")
    } else if s < 3600 {
        format!("{sign}{}:{:02}.{tenths}", s / 60, s % 60)
    } else {
        format!("{sign}{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    }
}

/// [`offset`] short enough for the filmstrip's rail (at most 7 characters, breaking only at
/// a blank): minutes without tenths, `+1h02`, `+14 h`, then whole days and years. A foreign producer's record
/// can be decades from the run start, or before it.
pub(crate) fn rail_offset(ms: i64) -> String {
    let sign = if ms < 0 { "−" } else { "+" };
    let s = ms.unsigned_abs() / 1000;
    let (hours, days) = (s / 3600, s / 86_400);
    if s < 60 {
        offset(ms)
    } else if s < 3600 {
        format!("{sign}{}:{:02}", s / 60, s % 60)
    } else if hours < 10 {
        format!("{sign}{hours}h{:02}", s / 60 % 60)
    } else if hours < 100 {
        format!("{sign}{hours} h")
    } else if days < 1000 {
        format!("{sign}{days} d")
    } else {
        // Julian years (365.25 days): right to the year over any span a timestamp can hold.
        format!("{sign}{} y", days * 4 / 1461)
    }
}

/// A UTC wall-clock time: `2026-11-29 21:43:01 UTC`. Never the local zone: the same run renders
/// the same everywhere.
pub(crate) fn utc(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    let s = cdp_evidence::time::format_rfc3339_millis(t);
    // "YYYY-MM-DDTHH:MM:SS.mmmZ"
    match (s.get(..10), s.get(11..19)) {
        (Some(date), Some(time)) => format!("{date} {time} UTC"),
        _ => s,
    }
}

/// A Markdown code span that shows `s` literally whatever it contains (backticks included):
/// nothing in it is a link, emphasis or HTML to a Markdown renderer.
pub(crate) fn md_code(s: &str) -> String {
    if s.is_empty() {
        return "` `".to_owned();
    }
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// Plural helper: `1 frame`, `3 frames`.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Registered-secret counts for display: names a person registered, and the typed-text masks
/// (`TYPED_1`, `TYPED_2`, … — burst numbers that mean nothing to a reader) folded into one line:
/// (named secrets, typed-text replacements, typed literals).
pub(crate) fn secret_counts(
    secrets: &std::collections::BTreeMap<String, u64>,
) -> (Vec<(&str, u64)>, u64, usize) {
    let is_typed = |name: &str| {
        name.strip_prefix("TYPED_")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let named = secrets
        .iter()
        .filter(|(k, _)| !is_typed(k))
        .map(|(k, n)| (k.as_str(), *n))
        .collect();
    let typed: Vec<u64> = secrets
        .iter()
        .filter(|(k, _)| is_typed(k))
        .map(|(_, n)| *n)
        .collect();
    (named, typed.iter().sum(), typed.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_text_masks_fold_into_one_count() {
        let secrets: std::collections::BTreeMap<String, u64> = [
            ("PASSWORD", 2u64),
            ("TYPED_1", 3),
            ("TYPED_12", 4),
            ("TYPED_X", 1),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let (named, typed, literals) = secret_counts(&secrets);
        assert_eq!(named, vec![("PASSWORD", 2), ("TYPED_X", 1)]);
        assert_eq!((typed, literals), (7, 2));
    }

    #[test]
    fn controls_and_bidi_become_visible_escapes() {
        assert_eq!(line("a\u{202E}b\0c\u{7}", 100), "a\\u{202e}b\\u{0}c\\u{7}");
        assert_eq!(line("x\u{200B}y\u{2066}z", 100), "x\\u{200b}y\\u{2066}z");
        assert_eq!(line("one\ntwo\tthree", 100), "one two three");
        assert_eq!(clean("one\ntwo", 100, Lines::Keep), "one\ntwo");
        assert_eq!(line("\u{85}\u{9f}", 10), "\\u{85}\\u{9f}");
        // Ordinary right-to-left text stays as it is.
        assert_eq!(line("مرحبا", 10), "مرحبا");
    }

    #[test]
    fn long_text_is_cut_with_a_count() {
        let s = "é".repeat(20_000);
        let out = line(&s, 10);
        assert_eq!(out, format!("{}…[+19990 chars]", "é".repeat(10)));
        assert_eq!(line("abc", 3), "abc");
        assert_eq!(line("abcd", 3), "abc…[+1 chars]");
    }

    #[test]
    fn numbers() {
        assert_eq!(bytes(812), "812 B");
        assert_eq!(bytes(14_540), "14.2 KiB");
        assert_eq!(bytes(3 << 20), "3.0 MiB");
        assert_eq!(duration(340), "340 ms");
        assert_eq!(duration(2_449), "2.4 s");
        assert_eq!(duration(65_000), "1 min 05 s");
        assert_eq!(duration(7_380_000), "2 h 03 min");
        assert_eq!(offset(0), "+0.0 s");
        assert_eq!(offset(12_345), "+12.3 s");
        assert_eq!(offset(125_300), "+2:05.3");
        assert_eq!(offset(3_723_000), "+1:02:03");
        assert_eq!(offset(-400), "−0.4 s");
        assert_eq!(rail_offset(12_345), "+12.3 s");
        assert_eq!(rail_offset(125_300), "+2:05");
        assert_eq!(rail_offset(3_723_000), "+1h02");
        assert_eq!(rail_offset(-50_400_000), "−14 h");
        assert_eq!(rail_offset(360_000_000), "+4 d");
        // 9999-12-31 from a run in 2026, and 1970 from one in 2026.
        assert_eq!(
            rail_offset(253_402_300_799_999 - 1_773_480_413_000),
            "+7973 y"
        );
        assert_eq!(rail_offset(-1_773_480_413_000), "−56 y");
        for ms in [i64::MIN, i64::MAX, 0, -1, 359_999_999, 86_399_999_999] {
            assert!(rail_offset(ms).chars().count() <= 22, "{ms}");
        }
        for ms in [
            59_999,
            3_599_999,
            359_999_999,
            86_399_999_999,
            253_402_300_799_999,
        ] {
            assert!(rail_offset(ms).chars().count() <= 7, "{}", rail_offset(ms));
            assert!(
                rail_offset(-ms).chars().count() <= 7,
                "{}",
                rail_offset(-ms)
            );
        }
        assert_eq!(utc(1_764_452_581_123), "2025-11-29 21:43:01 UTC");
    }

    #[test]
    fn markdown_code_spans_hold_anything() {
        assert_eq!(md_code("a_b"), "`a_b`");
        assert_eq!(md_code("a`b"), "``a`b``");
        assert_eq!(md_code("`x"), "`` `x ``");
        assert_eq!(md_code(""), "` `");
        assert_eq!(md_code("<img src=x>"), "`<img src=x>`");
    }
}
