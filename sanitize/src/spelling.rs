//! How a registered literal is written where the evidence finds it: as is, inside a JSON string,
//! and in URLs, where every writer chooses its own characters to percent-encode
//! (`encodeURIComponent` leaves `!'()*~` alone, a browser keeps `@:,;=&+$` raw in a path, a form
//! writes a space as `+`, some write lower-case hex).
//!
//! So a literal is not compared with a few fixed encodings of it but read character by
//! character: each character may be written raw or percent-encoded as its UTF-8 bytes (hex digits
//! of either case), a space also as `+`, whatever its neighbours do. Inside JSON-escaped text
//! ([`JSON`]) "raw" is the character as a JSON string writes it (`\"`, `\\`, `\n` or `\u000a`,
//! `/` or `\/`); one occurrence is either JSON-escaped or not, never both.
//!
//! [`walk`] follows every way of spelling a literal at once; [`keys`] lists the first
//! [`KEY_BYTES`] bytes of every way a literal can start, for the registry's index. A prefix of a
//! literal is spelled by a prefix of its spelling, which lets a typed echo be extended character
//! by character. Pure functions.

use std::collections::HashSet;

/// Bytes of a spelling's start the registry's index is keyed by. Every literal it indexes has at
/// least four characters, and every character is at least one byte in every spelling.
pub(crate) const KEY_BYTES: usize = 4;

/// Text that is not JSON-escaped (a bit of a set of modes).
const TEXT: u8 = 1;
/// Inside a JSON string: characters are JSON-escaped, and may be percent-encoded too.
const JSON: u8 = 2;

/// Ways of spelling a literal followed at once. Only `%` (itself, or the start of `%25`) and,
/// across the two modes, `\` (itself, or JSON's `\\`) are read two ways at one place; more than
/// two ways at once needs a literal such as `%25%25…` over a text such as `%2525%2525…`. Past
/// eight, the ways furthest on are kept.
const MAX_WAYS: usize = 8;

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// One way of spelling a literal so far: where it has got to in the text, and in which modes.
#[derive(Clone, Copy)]
struct Way {
    pos: usize,
    modes: u8,
}

/// Follows `chars` through `text` from byte `at`, every spelling at once. After each character
/// spelled, `step` gets it and the furthest byte any spelling has reached. True when every
/// character was spelled; false when the text stopped spelling them (`step` has seen how far
/// they went).
pub(crate) fn walk(
    text: &[u8],
    at: usize,
    mut chars: impl Iterator<Item = char>,
    mut step: impl FnMut(char, usize),
) -> bool {
    // One way while the text allows only one (almost always): no set of ways to keep.
    let mut way = Way {
        pos: at,
        modes: TEXT | JSON,
    };
    while let Some(c) = chars.next() {
        // An ASCII character written raw, which no other spelling starts like.
        if c.is_ascii() && c != '%' && !differs_in_json(c) && text.get(way.pos) == Some(&(c as u8))
        {
            way.pos += 1;
            step(c, way.pos);
            continue;
        }
        let mut found = [NO_WAY; MAX_WAYS];
        let mut n = 0;
        expand(way, c, text, &mut found, &mut n);
        match n {
            0 => return false,
            1 => {
                way = found[0];
                step(c, way.pos);
            }
            _ => {
                step(c, furthest(&found[..n]));
                return walk_ways(text, found, n, chars, step);
            }
        }
    }
    true
}

/// [`walk`] from several ways at once (`ways[..n]`).
fn walk_ways(
    text: &[u8],
    mut ways: [Way; MAX_WAYS],
    mut n: usize,
    chars: impl Iterator<Item = char>,
    mut step: impl FnMut(char, usize),
) -> bool {
    let mut next = [NO_WAY; MAX_WAYS];
    for c in chars {
        let mut m = 0;
        for &w in &ways[..n] {
            expand(w, c, text, &mut next, &mut m);
        }
        if m == 0 {
            return false;
        }
        ways[..m].copy_from_slice(&next[..m]);
        n = m;
        step(c, furthest(&ways[..n]));
    }
    true
}

const NO_WAY: Way = Way { pos: 0, modes: 0 };

fn furthest(ways: &[Way]) -> usize {
    ways.iter().map(|w| w.pos).max().unwrap_or(0)
}

/// Adds to `ways[..*n]` every way `w` goes on by spelling `c`.
fn expand(w: Way, c: char, text: &[u8], ways: &mut [Way; MAX_WAYS], n: &mut usize) {
    let rest = text.get(w.pos..).unwrap_or_default();
    if differs_in_json(c) {
        for mode in [TEXT, JSON].into_iter().filter(|&b| w.modes & b != 0) {
            for len in lens(mode, c, rest).into_iter().filter(|&l| l > 0) {
                add(ways, n, w.pos + len, mode);
            }
        }
    } else {
        for len in lens(TEXT, c, rest).into_iter().filter(|&l| l > 0) {
            add(ways, n, w.pos + len, w.modes);
        }
    }
}

/// Adds a way to `ways[..*n]`: merged with one at the same place, else appended, else (all
/// [`MAX_WAYS`] taken) in place of the one least far on, if it is further.
fn add(ways: &mut [Way; MAX_WAYS], n: &mut usize, pos: usize, modes: u8) {
    if let Some(w) = ways[..*n].iter_mut().find(|w| w.pos == pos) {
        w.modes |= modes;
    } else if *n < MAX_WAYS {
        ways[*n] = Way { pos, modes };
        *n += 1;
    } else if let Some(w) = ways
        .iter_mut()
        .min_by_key(|w| w.pos)
        .filter(|w| w.pos < pos)
    {
        *w = Way { pos, modes };
    }
}

/// True for the characters a JSON string writes otherwise than raw text does.
fn differs_in_json(c: char) -> bool {
    matches!(c, '"' | '\\' | '/') || u32::from(c) < 0x20
}

/// The lengths (0: none) of the ways `text` starts with a spelling of `c` in `mode`. At most two
/// match at once: `%` itself and `%25`.
fn lens(mode: u8, c: char, text: &[u8]) -> [usize; 2] {
    let mut out = [0; 2];
    let mut k = 0;
    let mut push = |len: usize| {
        if k < out.len() {
            out[k] = len;
            k += 1;
        }
    };
    let Some(&first) = text.first() else {
        return out;
    };
    if mode == JSON && differs_in_json(c) {
        if let Some(len) = json_len(c, text) {
            push(len);
        }
        if c == '/' && first == b'/' {
            push(1);
        }
    } else {
        let mut utf8 = [0u8; 4];
        let raw = c.encode_utf8(&mut utf8).as_bytes();
        if text.starts_with(raw) {
            push(raw.len());
        }
    }
    if first == b'%' {
        if let Some(len) = percent_len(c, text) {
            push(len);
        }
    } else if first == b'+' && c == ' ' {
        push(1);
    }
    out
}

/// Length of the `%XX` escapes of `c`'s UTF-8 bytes at the start of `text`, hex of either case.
fn percent_len(c: char, text: &[u8]) -> Option<usize> {
    let mut utf8 = [0u8; 4];
    let bytes = c.encode_utf8(&mut utf8).as_bytes();
    let escapes = text.get(..bytes.len() * 3)?;
    let ok = bytes.iter().zip(escapes.chunks_exact(3)).all(|(&b, e)| {
        e[0] == b'%' && hex_value(e[1]) == Some(b >> 4) && hex_value(e[2]) == Some(b & 15)
    });
    ok.then_some(escapes.len())
}

/// Length of the JSON escape of `c` (one of [`differs_in_json`]'s) at the start of `text`:
/// the short form (`\"`, `\\`, `\/`, `\n`, …) or `\u00XX` with hex of either case.
fn json_len(c: char, text: &[u8]) -> Option<usize> {
    if let Some(short) = json_short(c) {
        if text.get(..2) == Some(&[b'\\', short][..]) {
            return Some(2);
        }
    }
    let code = u32::from(c);
    let u = text.get(..6)?;
    (code < 0x20
        && u[..4] == *b"\\u00"
        && hex_value(u[4]) == Some((code >> 4) as u8)
        && hex_value(u[5]) == Some((code & 15) as u8))
    .then_some(6)
}

/// The letter after the backslash of `c`'s two-character JSON escape, if it has one.
fn json_short(c: char) -> Option<u8> {
    Some(match c {
        '"' => b'"',
        '\\' => b'\\',
        '/' => b'/',
        '\n' => b'n',
        '\r' => b'r',
        '\t' => b't',
        '\u{8}' => b'b',
        '\u{c}' => b'f',
        _ => return None,
    })
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Length in bytes of the longest spelling of `c`: `\u00XX` for a control character, else its
/// UTF-8 bytes percent-encoded.
pub(crate) fn longest(c: char) -> usize {
    if u32::from(c) < 0x20 {
        6
    } else {
        3 * c.len_utf8()
    }
}

/// One byte of a spelling, and whether it is a hex digit of an escape (either case).
type Class = (u8, bool);

/// Every way of writing `c` in `mode`, as bytes.
fn alternatives(mode: u8, c: char) -> Vec<Vec<Class>> {
    let mut out: Vec<Vec<Class>> = Vec::with_capacity(3);
    let mut utf8 = [0u8; 4];
    let raw = c.encode_utf8(&mut utf8).as_bytes();
    if mode == JSON && differs_in_json(c) {
        if let Some(short) = json_short(c) {
            out.push(vec![(b'\\', false), (short, false)]);
        }
        let code = u32::from(c);
        if code < 0x20 {
            let digits = [(code >> 4) as usize, (code & 15) as usize];
            let mut u: Vec<Class> = b"\\u00".iter().map(|&b| (b, false)).collect();
            u.extend(digits.iter().map(|&d| (HEX[d], true)));
            out.push(u);
        }
        if c == '/' {
            out.push(vec![(b'/', false)]);
        }
    } else {
        out.push(raw.iter().map(|&b| (b, false)).collect());
    }
    out.push(
        raw.iter()
            .flat_map(|&b| {
                [
                    (b'%', false),
                    (HEX[usize::from(b >> 4)], true),
                    (HEX[usize::from(b & 15)], true),
                ]
            })
            .collect(),
    );
    if c == ' ' {
        out.push(vec![(b'+', false)]);
    }
    out
}

/// The first [`KEY_BYTES`] bytes of every spelling of `s`, in both modes, every case of its
/// escapes' hex digits (a spelling shorter than a key gives none). A few dozen at most, whatever
/// `s`'s length: only its first [`KEY_BYTES`] characters count.
pub(crate) fn keys(s: &str) -> HashSet<[u8; KEY_BYTES]> {
    let chars: Vec<char> = s.chars().take(KEY_BYTES).collect();
    let mut out = HashSet::new();
    for mode in [TEXT, JSON] {
        prefixes(mode, &chars, &mut Vec::new(), &mut out);
    }
    out
}

fn prefixes(mode: u8, chars: &[char], prefix: &mut Vec<Class>, out: &mut HashSet<[u8; KEY_BYTES]>) {
    if prefix.len() >= KEY_BYTES {
        cases(&prefix[..KEY_BYTES], [0; KEY_BYTES], 0, out);
        return;
    }
    let Some((&c, rest)) = chars.split_first() else {
        return;
    };
    for alternative in alternatives(mode, c) {
        let len = prefix.len();
        prefix.extend(alternative);
        prefixes(mode, rest, prefix, out);
        prefix.truncate(len);
    }
}

/// Every key `classes` stands for: each escape's hex letter in both cases.
fn cases(
    classes: &[Class],
    mut key: [u8; KEY_BYTES],
    i: usize,
    out: &mut HashSet<[u8; KEY_BYTES]>,
) {
    let Some(&(b, hex)) = classes.get(i) else {
        out.insert(key);
        return;
    };
    key[i] = b;
    cases(classes, key, i + 1, out);
    if hex && b.is_ascii_alphabetic() {
        key[i] = b.to_ascii_lowercase();
        cases(classes, key, i + 1, out);
    }
}

/// Test helpers: the whole-match of a literal, as the registry reads it.
#[cfg(test)]
pub(crate) fn spelled_end(text: &str, at: usize, literal: &str) -> Option<usize> {
    let mut end = at;
    walk(text.as_bytes(), at, literal.chars(), |_, e| end = e).then_some(end)
}

#[cfg(test)]
mod tests;
