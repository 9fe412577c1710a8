//! RFC 3339 timestamps in UTC with millisecond precision, without a date-time dependency.
//!
//! Owns the one timestamp shape the format writes (`2026-11-29T21:43:01.123Z`) and a lenient
//! parser for what other producers may write (any fraction, `Z` or a numeric offset). Never
//! consults the local time zone.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch; times before 1970 clamp to 0.
pub(crate) fn unix_millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Formats `t` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_rfc3339_millis(t: SystemTime) -> String {
    let mut out = Vec::with_capacity(24);
    push_rfc3339_millis(&mut out, t);
    ascii(out)
}

/// Appends `t` as `YYYY-MM-DDTHH:MM:SS.mmmZ`. The writer stamps every record: the digits go
/// into a fixed template, written once (`format!`, then digit-by-digit pushes, cost a quarter
/// of a record's line).
pub(crate) fn push_rfc3339_millis(out: &mut Vec<u8>, t: SystemTime) {
    let ms = unix_millis(t);
    let (secs, milli) = (ms / 1000, ms % 1000);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let (y, mo, d) = civil_from_days(days as i64);
    // From a u64 of milliseconds every field is positive.
    let field = |v: i64| u64::try_from(v).unwrap_or(0);
    let y = field(y);
    if y > 9999 {
        // Past the template (a clock or a producer's time gone wild): pad like `{y:04}`.
        push_decimal(out, y, 4);
        out.push(b'-');
        let mut rest = *b"00-00T00:00:00.000Z";
        put_digits(&mut rest[0..2], field(mo));
        put_time(&mut rest[3..], field(d), h, m, s, milli);
        out.extend_from_slice(&rest);
        return;
    }
    let mut stamp = *b"0000-00-00T00:00:00.000Z";
    put_digits(&mut stamp[0..4], y);
    put_digits(&mut stamp[5..7], field(mo));
    put_time(&mut stamp[8..], field(d), h, m, s, milli);
    out.extend_from_slice(&stamp);
}

/// `DDTHH:MM:SS.mmmZ` into the template's tail.
fn put_time(tail: &mut [u8], d: u64, h: u64, m: u64, s: u64, milli: u64) {
    put_digits(&mut tail[0..2], d);
    put_digits(&mut tail[3..5], h);
    put_digits(&mut tail[6..8], m);
    put_digits(&mut tail[9..11], s);
    put_digits(&mut tail[12..15], milli);
}

/// Writes the last `slot.len()` decimal digits of `v` into `slot`.
pub(crate) fn put_digits(slot: &mut [u8], mut v: u64) {
    for b in slot.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// Appends `v` in decimal, zero-padded to `width` digits (more when it needs more), like
/// `{v:0width$}` for widths up to 20 (a `u64`'s longest).
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut v: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let start = start.min(digits.len().saturating_sub(width));
    out.extend_from_slice(&digits[start..]);
}

/// Text written by the functions above (ASCII by construction) as a `String`.
pub(crate) fn ascii(bytes: Vec<u8>) -> String {
    bytes.into_iter().map(char::from).collect()
}

/// Compact UTC stamp used in run ids: `YYYYMMDDTHHMMSSmmmZ` (sorts like the time it names).
pub(crate) fn format_compact(t: SystemTime) -> String {
    let full = format_rfc3339_millis(t);
    full.chars().filter(|c| c.is_ascii_alphanumeric()).collect()
}

/// Parses an RFC 3339 date-time (`T` or space separator, optional fraction, `Z` or `±HH:MM`)
/// into milliseconds since the Unix epoch. Returns `None` for anything else or pre-1970 times.
pub fn parse_rfc3339_millis(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 || !b.is_ascii() {
        return None;
    }
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = s.get(from..from + len)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, se) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return None;
    }
    // 60 admits a leap second; it is folded into the next minute's first second.
    if h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 3 {
                millis = millis * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..3 {
            millis *= 10;
        }
    }
    let offset_secs = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let oh = num(i + 1, 2)?;
            let om = num(i + 4, 2)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let v = oh * 3600 + om * 60;
            if *sign == b'+' {
                v
            } else {
                -v
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset_secs;
    let total = secs.checked_mul(1000)?.checked_add(millis)?;
    // An offset (or a leap second) can carry 9999-12-31 into year 10000, which RFC 3339's
    // four-digit year cannot write back: such a time is refused, so every accepted one
    // formats and parses again to itself.
    if total > LAST_MILLIS {
        return None;
    }
    u64::try_from(total).ok()
}

/// 9999-12-31T23:59:59.999Z, the last instant RFC 3339 can write.
const LAST_MILLIS: i64 = 253_402_300_799_999;

/// Parses an RFC 3339 timestamp into a `SystemTime`.
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    parse_rfc3339_millis(s).map(|ms| UNIX_EPOCH + Duration::from_millis(ms))
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's civil-calendar algorithms (public domain), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_rfc3339_millis(at(0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_rfc3339_millis(at(951_782_400_123)),
            "2000-02-29T00:00:00.123Z"
        );
        assert_eq!(
            format_rfc3339_millis(at(1_709_251_199_999)),
            "2024-02-29T23:59:59.999Z"
        );
        assert_eq!(
            format_rfc3339_millis(at(4_102_444_800_000)),
            "2100-01-01T00:00:00.000Z"
        );
        assert_eq!(format_compact(at(1_709_251_199_999)), "20240229T235959999Z");
        // Past the template's four-digit year, padded like `{y:04}`.
        assert_eq!(
            format_rfc3339_millis(at(253_402_300_800_001)),
            "10000-01-01T00:00:00.001Z"
        );
    }

    #[test]
    fn decimals_pad_like_format() {
        for v in [
            0,
            7,
            42,
            999,
            1_000,
            123_456_789,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            for width in [0, 1, 2, 3, 4, 10, 13, 19, 20] {
                let mut s = Vec::new();
                push_decimal(&mut s, v, width);
                assert_eq!(ascii(s), format!("{v:0width$}"), "{v} {width}");
            }
        }
        // The year of the last representable millisecond has more than four digits.
        let s = format_rfc3339_millis(at(u64::MAX));
        assert_eq!(parse_rfc3339_millis(&s), None, "{s}");
        assert!(s.ends_with('Z') && s.len() > 24, "{s}");
    }

    #[test]
    fn round_trips_every_day_for_four_centuries() {
        // Steps of 1 day + 1 h + 1 ms cover every month/day/leap rule boundary in 400 years.
        let step = 86_400_000 + 3_600_000 + 1;
        let mut ms = 0u64;
        while ms < 13_000_000_000_000 {
            let s = format_rfc3339_millis(at(ms));
            assert_eq!(parse_rfc3339_millis(&s), Some(ms), "{s}");
            ms += step;
        }
    }

    #[test]
    fn parses_other_producers_shapes() {
        let base = parse_rfc3339_millis("2024-05-01T10:00:00.000Z").unwrap();
        assert_eq!(parse_rfc3339_millis("2024-05-01T10:00:00Z"), Some(base));
        assert_eq!(parse_rfc3339_millis("2024-05-01t10:00:00z"), Some(base));
        assert_eq!(
            parse_rfc3339_millis("2024-05-01T12:00:00.000+02:00"),
            Some(base)
        );
        assert_eq!(
            parse_rfc3339_millis("2024-05-01T09:30:00-00:30"),
            Some(base)
        );
        assert_eq!(
            parse_rfc3339_millis("2024-05-01T10:00:00.123456789Z"),
            Some(base + 123)
        );
        assert_eq!(
            parse_rfc3339_millis("2024-05-01T10:00:00.5Z"),
            Some(base + 500)
        );
        assert_eq!(parse_rfc3339_millis("2024-05-01 10:00:00Z"), Some(base));
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "2024-05-01",
            "2024-05-01T10:00:00",
            "2024-13-01T10:00:00Z",
            "2023-02-29T10:00:00Z",
            "2024-05-01T24:00:00Z",
            "2024-05-01T10:00:00.Z",
            "2024-05-01T10:00:00+2:00",
            "2024-05-01T10:00:00Zjunk",
            "1969-12-31T23:59:59Z",
            "+024-05-01T10:00:00Z",
            "2024-05-01T10:00:00.12é",
            "2024-05-01X10:00:00Z",
        ] {
            assert_eq!(parse_rfc3339_millis(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_time_an_offset_carries_past_year_9999_is_refused() {
        // Found by scripts/fuzz.sh (evidence_manifest): accepted, it could not round-trip.
        assert_eq!(
            parse_rfc3339_millis("9999-12-31T23:59:60.9999999999999-23:59"),
            None
        );
        assert_eq!(parse_rfc3339_millis("9999-12-31T23:00:00-01:00"), None);
        let last = parse_rfc3339_millis("9999-12-31T23:59:59.999Z").expect("the last instant");
        assert_eq!(last as i64, LAST_MILLIS);
        let t = UNIX_EPOCH + Duration::from_millis(last);
        assert_eq!(format_rfc3339_millis(t), "9999-12-31T23:59:59.999Z");
        assert_eq!(
            parse_rfc3339_millis("9999-12-31T23:59:59.999+01:00"),
            Some(last - 3_600_000)
        );
    }
}
