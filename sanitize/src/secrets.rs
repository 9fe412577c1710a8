//! The explicit secrets registry (docs/security.md, *Explicit secrets*): literals registered
//! under names, found in one left-to-right pass and replaced by `${NAME}` (the replacing is
//! `merge.rs`'s job, together with the rules' replacements).
//!
//! - One pass, leftmost-longest among the registered literals, so a literal that is a prefix of
//!   another is never partially consumed.
//! - Found through an index of the first [`KEY_BYTES`] bytes of every way a literal can start
//!   (a 64 Ki-bit filter of the first two, then a hash map), not an automaton: registering a
//!   literal costs what its own start's spellings and its length cost, whatever else is
//!   registered (an automaton is rebuilt whole on every registration: 96 KiB secrets took
//!   seconds each and a gigabyte of memory by the tenth).
//! - Bounded: at most [`MAX_SECRETS`] explicit literals of at most [`MAX_SECRET_BYTES`] each.
//! - An existing `${NAME}` of a registered name, a rule marker or a handle is skipped whole, so a
//!   placeholder is never corrupted and running the pass twice finds nothing new.
//! - Names follow `[A-Z_][A-Z0-9_]*`, at most [`MAX_SECRET_NAME_CHARS`] characters, and never
//!   start with `TYPED_` (the relay's own names, below) — [`check_name`], the one rule every
//!   entry point uses; empty or whitespace-only literals are not registered;
//!   literals with fewer than [`MIN_SECRET_CHARS`] non-whitespace characters are refused; the
//!   first name registered for a literal wins.
//! - Each literal is found whatever mix of raw and percent-encoded characters a URL writer
//!   chose, JSON-escaped or not (`spelling.rs`): a match is checked by reading the literal
//!   character by character, so only the literal itself is kept, once.
//! - **Typed echoes** (`TYPED_<n>`) are literals that grow while the user types. Any prefix of
//!   one with at least [`MIN_TYPED_CHARS`] non-whitespace characters is protected, in every
//!   spelling. The index holds only each echo's shortest protected prefix (its *head*); a
//!   match of a head is extended greedily, character by character, against the echo's literal,
//!   in every spelling at once. Extending an echo therefore touches no index, and memory is
//!   linear in the literal, not quadratic.
//! - Memory only: nothing here is `Serialize`, and `Debug` prints counts, never literals.

use crate::handles::{is_handle, protected_spans};
use crate::spelling::{self, KEY_BYTES};
use crate::SecretError;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Prefix of the names typed echoes get.
const TYPED_PREFIX: &str = "TYPED_";

/// Minimum non-whitespace characters of an explicit secret. Four is a PIN: anything shorter
/// (`a`, `ok`, `id`) occurs inside ordinary words and names everywhere, so masking it would
/// shred the evidence (`p${SHORT}ssword`) without protecting anything worth the name.
pub const MIN_SECRET_CHARS: usize = 4;

/// Minimum non-whitespace characters of a typed literal, and of a protected prefix of one.
///
/// A page that echoes a field on every keystroke logs `T`, `Ty`, `Typ`, `Type`, … Prefixes of at
/// least four non-whitespace characters are masked; shorter ones are ordinary text (`a`, `the`,
/// `id=`): masking every occurrence of them would destroy the evidence for nothing. What leaks
/// is therefore the first three non-whitespace characters of a per-keystroke echo, as typed.
pub const MIN_TYPED_CHARS: usize = 4;

/// Longest secret name, in characters. A name is what every masked place reads (`${NAME}`):
/// a long one would bury the text around it, and no one needs more to say what a secret is.
pub const MAX_SECRET_NAME_CHARS: usize = 64;

/// Most explicit secrets a run holds (`--secret-env`, the secrets API, an MCP tool). Typed
/// echoes are not counted: they are bounded by what is typed.
pub const MAX_SECRETS: usize = 256;

/// Longest explicit secret, in bytes. A password, an API token or a PEM private key (an RSA-4096
/// key is about 3.3 KiB) fits; what is larger is not a literal anyone types or logs whole.
pub const MAX_SECRET_BYTES: usize = 8192;

/// Longest typed literal kept, in bytes (the relay buffers the same): characters typed beyond it
/// are not protected.
pub const TYPED_MAX_BYTES: usize = 4096;

/// A byte range of a text: start, end.
type Span = (usize, usize);

/// One occurrence of a registered literal (or of a protected prefix of a typed one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SecretMatch {
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// Index of the name the occurrence reads as.
    pub(crate) name: usize,
}

/// A typed literal that may still grow.
struct Echo {
    /// Index into `names`.
    name: usize,
    /// What was typed, leading whitespace dropped, at most [`TYPED_MAX_BYTES`].
    literal: String,
    /// Characters in the head: the shortest prefix with [`MIN_TYPED_CHARS`] non-whitespace ones.
    head_chars: usize,
    /// Length in bytes of the literal's longest spelling.
    longest: usize,
}

impl Echo {
    /// Where the longest protected prefix of this echo, in any spelling, that starts at byte
    /// `at` of `text` ends; `None` if not even the head is there. Blanks after the last
    /// matched non-blank character are left to the text (they are not part of the secret, and
    /// `${TYPED_1} y` reads better than `${TYPED_1}y`).
    fn extend_at(&self, text: &str, at: usize) -> Option<usize> {
        let mut chars = 0;
        let mut solid_end = None;
        spelling::walk(text.as_bytes(), at, self.literal.chars(), |c, end| {
            chars += 1;
            // The head ends with a non-blank character: from it on, every one is an end.
            if chars >= self.head_chars && !c.is_whitespace() {
                solid_end = Some(end);
            }
        });
        solid_end
    }

    fn head(&self) -> &str {
        let end = self
            .literal
            .char_indices()
            .nth(self.head_chars)
            .map_or(self.literal.len(), |(i, _)| i);
        &self.literal[..end]
    }
}

/// A pattern the index can find at a position: where a match may start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Candidate {
    /// Explicit literal `i` (index into `Registry::literals`): matches whole or not.
    Literal(usize),
    /// The head of echo `i`: extended as far as the text follows the echo.
    Echo(usize),
}

/// An explicit literal.
struct Literal {
    literal: String,
    /// Index of its name.
    name: usize,
    /// Holds neither `%` nor `\`: where the text holds it raw, it spells it no other way.
    unambiguous: bool,
}

impl Literal {
    /// Where this literal, in any spelling, starting at byte `at` of `text` ends, if it is there
    /// whole (the furthest end, when it is there in several spellings).
    fn end_at(&self, text: &str, at: usize) -> Option<usize> {
        if self.unambiguous {
            // Read raw as far as the text holds it raw; where it stops, only an escape (`%`,
            // `+` for a space, `\`) can go on spelling the character there.
            let literal = self.literal.as_bytes();
            let rest = &text.as_bytes()[at..];
            let same = rest.iter().zip(literal).take_while(|(a, b)| a == b).count();
            if same == literal.len() {
                return Some(at + same);
            }
            let mut stop = same;
            while !self.literal.is_char_boundary(stop) {
                stop -= 1;
            }
            if !matches!(rest.get(stop), Some(b'%' | b'+' | b'\\')) {
                return None;
            }
        }
        let mut end = at;
        spelling::walk(text.as_bytes(), at, self.literal.chars(), |_, e| end = e).then_some(end)
    }
}

/// Registered literals and the index that finds them.
#[derive(Default)]
pub(crate) struct Registry {
    /// Names in registration order; placeholders are `${names[i]}`.
    names: Vec<String>,
    /// Replacements made per name (summary); indexed like `names`.
    counts: Vec<AtomicU64>,
    /// The explicit literals, as the index refers to them.
    literals: Vec<Literal>,
    /// Name → index, for placeholder protection.
    by_name: HashMap<String, usize>,
    /// Typed echoes, in registration order.
    echoes: Vec<Echo>,
    /// First [`KEY_BYTES`] bytes of every way a pattern can start → the patterns.
    index: HashMap<[u8; KEY_BYTES], Vec<Candidate>>,
    /// One bit per first two bytes of a pattern: most positions of a text are ruled out by one
    /// bit test. Empty until something is registered.
    first2: Vec<u64>,
    /// Length in bytes of the longest spelling of an explicit literal (all its characters
    /// percent-encoded, or `\u00XX` for a control character).
    max_explicit_len: usize,
    /// Length in bytes of the longest spelling of a typed echo.
    max_echo_len: usize,
    /// Next `TYPED_<n>`.
    typed_next: u64,
    /// Bytes encoded and indexed by registrations so far: what registering costs (tests check
    /// it does not grow with what is already registered).
    work: u64,
    /// Changes whenever what is registered changes.
    generation: u64,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("names", &self.names.len())
            .field("literals", &self.literals.len())
            .field("echoes", &self.echoes.len())
            .field("indexed", &self.index.len())
            .finish_non_exhaustive()
    }
}

/// True for `[A-Z_][A-Z0-9_]*`.
fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b == b'_' || b.is_ascii_uppercase())
        && bytes.all(|b| b == b'_' || b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// The one rule for an explicit secret's name, shared by every way of registering one
/// (`--secret-env`, `PUT /relay/v1/secrets/<NAME>`, the gateway's `evidence_register_secret`):
/// at most [`MAX_SECRET_NAME_CHARS`] characters, `[A-Z_][A-Z0-9_]*`, and not a name the relay
/// generates (`TYPED_…`). Errors never repeat a name that fails: it may be the secret itself.
pub fn check_name(name: &str) -> Result<(), SecretError> {
    let chars = name.chars().count();
    if chars > MAX_SECRET_NAME_CHARS {
        return Err(SecretError::NameTooLong {
            chars,
            max: MAX_SECRET_NAME_CHARS,
        });
    }
    if !is_valid_name(name) {
        return Err(SecretError::InvalidName { chars });
    }
    if name.starts_with(TYPED_PREFIX) {
        return Err(SecretError::ReservedName {
            prefix: TYPED_PREFIX,
        });
    }
    Ok(())
}

/// True for a name a typing step's `payload.input.variable` may carry: an explicit secret's
/// name or a `TYPED_<n>` ([`check_name`]'s characters and length, the prefix allowed).
pub(crate) fn is_variable_name(name: &str) -> bool {
    name.chars().count() <= MAX_SECRET_NAME_CHARS && is_valid_name(name)
}

fn non_whitespace(s: &str) -> usize {
    s.chars().filter(|c| !c.is_whitespace()).count()
}

/// `s` cut to at most `max` bytes, on a character boundary.
fn capped(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Checks an explicit secret without registering it: `Ok(false)` for an empty or
/// whitespace-only literal (nothing to protect), an error for a bad name ([`check_name`]), a
/// literal shorter
/// than [`MIN_SECRET_CHARS`] non-whitespace characters or longer than [`MAX_SECRET_BYTES`].
pub(crate) fn check(name: &str, literal: &str) -> Result<bool, SecretError> {
    check_name(name)?;
    if literal.len() > MAX_SECRET_BYTES {
        return Err(SecretError::TooLong {
            name: name.to_owned(),
            bytes: literal.len(),
            max: MAX_SECRET_BYTES,
        });
    }
    match non_whitespace(literal) {
        0 => Ok(false),
        n if n < MIN_SECRET_CHARS => Err(SecretError::TooShort {
            name: name.to_owned(),
            min: MIN_SECRET_CHARS,
        }),
        _ => Ok(true),
    }
}

impl Registry {
    /// Registers `literal` under `name`. `Ok(false)` when nothing was registered: the literal
    /// is empty or whitespace-only, or already registered (under any name). Costs a copy of the
    /// literal and the spellings of its first characters, however many literals are registered.
    pub(crate) fn register(&mut self, name: &str, literal: &str) -> Result<bool, SecretError> {
        if !check(name, literal)? {
            return Ok(false);
        }
        if self.explicit(literal).is_some() || self.echoes.iter().any(|e| e.literal == literal) {
            return Ok(false);
        }
        if self.literals.len() >= MAX_SECRETS {
            return Err(SecretError::TooMany {
                name: name.to_owned(),
                max: MAX_SECRETS,
            });
        }
        self.generation += 1;
        let index = self.name_index(name);
        let candidate = Candidate::Literal(self.literals.len());
        self.index_start(literal, candidate);
        self.work += literal.len() as u64;
        self.max_explicit_len = self.max_explicit_len.max(longest(literal));
        self.literals.push(Literal {
            literal: literal.to_owned(),
            name: index,
            unambiguous: !literal.contains(['%', '\\']),
        });
        Ok(true)
    }

    /// Adds `candidate` to the index under every way `start` can be spelled (its first
    /// [`KEY_BYTES`] bytes).
    fn index_start(&mut self, start: &str, candidate: Candidate) {
        if self.first2.is_empty() {
            self.first2 = vec![0; (1 << 16) / 64];
        }
        for key in spelling::keys(start) {
            let bit = first2_bit(key[0], key[1]);
            self.first2[bit / 64] |= 1 << (bit % 64);
            self.work += KEY_BYTES as u64;
            self.index.entry(key).or_default().push(candidate);
        }
    }

    fn name_index(&mut self, name: &str) -> usize {
        if let Some(&i) = self.by_name.get(name) {
            return i;
        }
        self.names.push(name.to_owned());
        self.counts.push(AtomicU64::new(0));
        self.by_name.insert(name.to_owned(), self.names.len() - 1);
        self.names.len() - 1
    }

    /// Registers a whole typed literal as an echo under the next `TYPED_<n>`; returns the name
    /// it is registered under (the existing one if the same literal is already registered), or
    /// `None` if it has fewer than [`MIN_TYPED_CHARS`] non-whitespace characters.
    pub(crate) fn register_typed(&mut self, literal: &str) -> Option<String> {
        let literal = capped(literal.trim_start(), TYPED_MAX_BYTES);
        if non_whitespace(literal) < MIN_TYPED_CHARS {
            return None;
        }
        if let Some(i) = self.explicit(literal) {
            return self.names.get(i).cloned();
        }
        if let Some(e) = self.echoes.iter().find(|e| e.literal == literal) {
            return self.names.get(e.name).cloned();
        }
        let (_, name) = self.add_echo(literal, None)?;
        Some(name)
    }

    /// The name of the explicit secret whose literal is exactly `literal` (not one of its
    /// escaped or encoded spellings), if one is registered.
    pub(crate) fn secret_name(&self, literal: &str) -> Option<&str> {
        self.explicit(literal).map(|i| self.name(i))
    }

    /// The name index of the explicit literal that is exactly `literal`, found through the
    /// index: its first bytes, as they are, are one of its keys.
    fn explicit(&self, literal: &str) -> Option<usize> {
        let key = key_at(literal.as_bytes(), 0)?;
        self.index.get(&key)?.iter().find_map(|c| match *c {
            Candidate::Literal(i) => self
                .literals
                .get(i)
                .filter(|l| l.literal == literal)
                .map(|l| l.name),
            Candidate::Echo(_) => None,
        })
    }

    /// A `TYPED_<n>` number of its own for a typed literal too short to protect: nothing is
    /// registered, and no echo will read as it unless [`Registry::add_echo`] is given it.
    pub(crate) fn reserve_typed(&mut self) -> String {
        self.typed_next += 1;
        format!("{TYPED_PREFIX}{}", self.typed_next)
    }

    /// Starts a typed echo with `literal` (leading whitespace already dropped, at least
    /// [`MIN_TYPED_CHARS`] non-whitespace characters), under `reserved` (from
    /// [`Registry::reserve_typed`]) or the next `TYPED_<n>`. Returns its index and name.
    pub(crate) fn add_echo(
        &mut self,
        literal: &str,
        reserved: Option<String>,
    ) -> Option<(usize, String)> {
        let literal = capped(literal.trim_start(), TYPED_MAX_BYTES);
        let mut seen = 0;
        let head_chars = literal.chars().position(|c| {
            seen += usize::from(!c.is_whitespace());
            seen == MIN_TYPED_CHARS
        })? + 1;
        // Never taken by an explicit secret: `check_name` reserves the prefix.
        let name = match reserved {
            Some(name) => name,
            None => self.reserve_typed(),
        };
        let index = self.name_index(&name);
        let mut echo = Echo {
            name: index,
            literal: String::new(),
            head_chars,
            longest: 0,
        };
        push_capped(&mut echo, literal);
        self.max_echo_len = self.max_echo_len.max(echo.longest);
        let index = self.echoes.len();
        self.generation += 1;
        let head = echo.head().to_owned();
        self.echoes.push(echo);
        self.work += head.len() as u64;
        self.index_start(&head, Candidate::Echo(index));
        Some((index, name))
    }

    /// Appends `more` to echo `echo` (up to [`TYPED_MAX_BYTES`]). Its head, and so the
    /// automaton, stays as it is.
    pub(crate) fn extend_echo(&mut self, echo: usize, more: &str) {
        if let Some(e) = self.echoes.get_mut(echo) {
            self.generation += 1;
            push_capped(e, more);
            self.max_echo_len = self.max_echo_len.max(e.longest);
        }
    }

    /// The name at `index`.
    pub(crate) fn name(&self, index: usize) -> &str {
        self.names.get(index).map_or("", String::as_str)
    }

    /// Counts one placeholder emitted for name `index`.
    pub(crate) fn count(&self, index: usize) {
        if let Some(c) = self.counts.get(index) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Changes whenever what is registered changes.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// True when no literal is registered.
    pub(crate) fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Bytes encoded and indexed by every registration so far.
    #[cfg(test)]
    pub(crate) fn work(&self) -> u64 {
        self.work
    }

    /// Length in bytes of the longest registered spelling (0 when empty).
    pub(crate) fn max_len(&self) -> usize {
        self.max_explicit_len.max(self.max_echo_len)
    }

    /// Replacements per name, for the summary.
    pub(crate) fn counts(&self) -> impl Iterator<Item = (&str, u64)> {
        self.names
            .iter()
            .zip(&self.counts)
            .map(|(n, c)| (n.as_str(), c.load(Ordering::Relaxed)))
    }

    /// Every occurrence of a registered literal in `text`, in order, not overlapping: one pass,
    /// leftmost-longest, skipping protected spans. At equal length the name registered first
    /// wins.
    pub(crate) fn find(&self, text: &str) -> Vec<SecretMatch> {
        let mut out = Vec::new();
        if self.is_empty()
            || self
                .next_candidate(text.as_bytes(), 0, text.len())
                .is_none()
        {
            return out;
        }
        // A handle is no shelter: its characters and the text after it can spell a literal
        // (`…3c82` + `/devtools` holds `2/devt`). A match that touches one takes the whole
        // handle with it, so no fragment of either stays.
        let (handles, spans): (Vec<Span>, Vec<Span>) =
            protected_spans(text, &|n| self.by_name.contains_key(n))
                .into_iter()
                .partition(|&(start, end)| is_handle(&text[start..end]));
        let mut gap_start = 0;
        let gaps = spans
            .iter()
            .copied()
            .chain(std::iter::once((text.len(), text.len())));
        for (span_start, span_end) in gaps {
            // A match never runs into the protected span that ends the gap.
            let gap_text = &text[..span_start];
            let mut pos = gap_start;
            while let Some((at, candidates)) =
                self.next_candidate(gap_text.as_bytes(), pos, span_start)
            {
                match self.longest_at(gap_text, at, candidates) {
                    Some((end, name)) => {
                        out.push(SecretMatch {
                            start: at,
                            end,
                            name,
                        });
                        pos = end;
                    }
                    None => pos = at + 1,
                }
            }
            gap_start = span_end;
        }
        if !handles.is_empty() {
            for m in &mut out {
                let (first, last) = (m.start, m.end);
                for &(start, end) in handles.iter().filter(|&&(a, b)| a < last && first < b) {
                    m.start = m.start.min(start);
                    m.end = m.end.max(end);
                }
            }
        }
        out
    }

    /// The first position at or after `from` (and before `until`) where some pattern's first
    /// bytes are, with the patterns starting with them.
    fn next_candidate(
        &self,
        bytes: &[u8],
        from: usize,
        until: usize,
    ) -> Option<(usize, &[Candidate])> {
        let last = until.checked_sub(KEY_BYTES)?;
        let mut at = from;
        while at <= last {
            let bit = first2_bit(bytes[at], bytes[at + 1]);
            if self.first2[bit / 64] & (1 << (bit % 64)) != 0 {
                if let Some(found) = key_at(bytes, at).and_then(|k| self.index.get(&k)) {
                    return Some((at, found));
                }
            }
            at += 1;
        }
        None
    }

    /// The longest match starting at `at` among `candidates` (ties: the name registered first),
    /// as its end and name.
    fn longest_at(
        &self,
        text: &str,
        at: usize,
        candidates: &[Candidate],
    ) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        for &candidate in candidates {
            let found = match candidate {
                Candidate::Literal(i) => self
                    .literals
                    .get(i)
                    .and_then(|l| Some((l.end_at(text, at)?, l.name))),
                Candidate::Echo(i) => self
                    .echoes
                    .get(i)
                    .and_then(|e| Some((e.extend_at(text, at)?, e.name))),
            };
            if let Some((end, name)) = found {
                best = match best {
                    Some((b_end, b_name)) if b_end > end || (b_end == end && b_name < name) => {
                        Some((b_end, b_name))
                    }
                    _ => Some((end, name)),
                };
            }
        }
        best
    }
}

/// The [`KEY_BYTES`] bytes of `bytes` at `at`, if there are that many.
fn key_at(bytes: &[u8], at: usize) -> Option<[u8; KEY_BYTES]> {
    bytes.get(at..at + KEY_BYTES)?.try_into().ok()
}

/// The filter bit of a pattern starting with bytes `a`, `b`.
fn first2_bit(a: u8, b: u8) -> usize {
    usize::from(a) << 8 | usize::from(b)
}

/// Appends `more` to an echo's literal, keeping it within [`TYPED_MAX_BYTES`].
fn push_capped(echo: &mut Echo, more: &str) {
    let room = TYPED_MAX_BYTES.saturating_sub(echo.literal.len());
    let more = capped(more, room);
    echo.longest += longest(more);
    echo.literal.push_str(more);
}

/// Length in bytes of the longest spelling of `s`.
fn longest(s: &str) -> usize {
    s.chars().map(spelling::longest).sum()
}

#[cfg(test)]
mod tests;
