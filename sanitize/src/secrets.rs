//! The explicit secrets registry (DESIGN §5): literals registered under names, found in one
//! left-to-right pass and replaced by `${NAME}` (the replacing is `merge.rs`'s job, together
//! with the rules' replacements).
//!
//! - One pass, leftmost-longest among the registered literals (aho-corasick), so a literal that
//!   is a prefix of another is never partially consumed.
//! - An existing `${NAME}` of a registered name, a rule marker or a handle is skipped whole, so a
//!   placeholder is never corrupted and running the pass twice finds nothing new.
//! - Names follow `[A-Z_][A-Z0-9_]*`; empty or whitespace-only literals are not registered;
//!   literals with fewer than [`MIN_SECRET_CHARS`] non-whitespace characters are refused; the
//!   first name registered for a literal wins.
//! - Each literal is also matched in its JSON-escaped and URL-encoded spellings (`spelling.rs`).
//! - **Typed echoes** (`TYPED_<n>`) are literals that grow while the user types. Any prefix of
//!   one with at least [`MIN_TYPED_CHARS`] non-whitespace characters is protected, in every
//!   spelling. The automaton holds only each echo's shortest protected prefix (its *head*); a
//!   match of a head is extended greedily, character by character, against the echo's literal
//!   in that spelling. Extending an echo therefore costs no rebuild, and memory is linear in the
//!   literal, not quadratic.
//! - Memory only: nothing here is `Serialize`, and `Debug` prints counts, never literals.

use crate::handles::protected_spans;
use crate::spelling::{spellings, Spelling};
use crate::SecretError;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Input, MatchKind};
use std::collections::{BTreeMap, BTreeSet, HashMap};
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

/// Longest typed literal kept, in bytes (the relay buffers the same): characters typed beyond it
/// are not protected.
pub const TYPED_MAX_BYTES: usize = 4096;

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
    /// Length of the literal in each spelling (indexed like [`Spelling::ALL`]).
    spelled: [usize; 4],
}

impl Echo {
    /// Where the longest protected prefix of this echo, written in `spelling`, that starts at
    /// byte `at` of `text` ends; `None` if not even the head is there. Blanks after the last
    /// matched non-blank character are left to the text (they are not part of the secret, and
    /// `${TYPED_1} y` reads better than `${TYPED_1}y`).
    fn extend_at(
        &self,
        text: &str,
        at: usize,
        spelling: Spelling,
        buf: &mut String,
    ) -> Option<usize> {
        let mut pos = at;
        let mut solid_end = at;
        let mut chars = 0;
        for c in self.literal.chars() {
            buf.clear();
            spelling.push(c, buf);
            match text.get(pos..) {
                Some(rest) if rest.starts_with(buf.as_str()) => {
                    pos += buf.len();
                    chars += 1;
                    if !c.is_whitespace() {
                        solid_end = pos;
                    }
                }
                _ => break,
            }
        }
        // The head ends with a non-blank character, so `solid_end` never falls short of it.
        (chars >= self.head_chars).then_some(solid_end)
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

/// What one pattern of the automaton stands for.
#[derive(Default)]
struct Pattern {
    /// The explicit literal (spelling) this pattern is, if any: its name index.
    literal: Option<usize>,
    /// Echo heads that are a prefix of this pattern (itself included), in a spelling: every one
    /// of them matches wherever this pattern does, and is extended from there.
    echoes: Vec<(usize, Spelling)>,
}

/// Registered literals and the automaton that finds them.
#[derive(Default)]
pub(crate) struct Registry {
    /// Names in registration order; placeholders are `${names[i]}`.
    names: Vec<String>,
    /// Replacements made per name (summary); indexed like `names`.
    counts: Vec<AtomicU64>,
    /// Every spelling of every explicit literal → name index. First registration wins.
    spellings: HashMap<String, usize>,
    /// Name → index, for placeholder protection.
    by_name: HashMap<String, usize>,
    /// Typed echoes, in registration order.
    echoes: Vec<Echo>,
    /// Parallel to the automaton's patterns.
    patterns: Vec<Pattern>,
    automaton: Option<AhoCorasick>,
    /// Length in bytes of the longest spelling of an explicit literal.
    max_explicit_len: usize,
    /// Length in bytes of the longest spelling of a typed echo.
    max_echo_len: usize,
    /// Next `TYPED_<n>`.
    typed_next: u64,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("names", &self.names.len())
            .field("spellings", &self.spellings.len())
            .field("echoes", &self.echoes.len())
            .finish_non_exhaustive()
    }
}

/// True for `[A-Z_][A-Z0-9_]*`.
pub(crate) fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b == b'_' || b.is_ascii_uppercase())
        && bytes.all(|b| b == b'_' || b.is_ascii_uppercase() || b.is_ascii_digit())
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
/// whitespace-only literal (nothing to protect), an error for a bad name or a literal shorter
/// than [`MIN_SECRET_CHARS`] non-whitespace characters.
pub(crate) fn check(name: &str, literal: &str) -> Result<bool, SecretError> {
    if !is_valid_name(name) {
        return Err(SecretError::InvalidName {
            name: name.chars().take(64).collect(),
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
    /// is empty or whitespace-only, or already registered (under any name).
    pub(crate) fn register(&mut self, name: &str, literal: &str) -> Result<bool, SecretError> {
        if !check(name, literal)? {
            return Ok(false);
        }
        if self.spellings.contains_key(literal) || self.echoes.iter().any(|e| e.literal == literal)
        {
            return Ok(false);
        }
        let index = self.name_index(name);
        for spelling in spellings(literal) {
            self.max_explicit_len = self.max_explicit_len.max(spelling.len());
            self.spellings.entry(spelling).or_insert(index);
        }
        self.rebuild();
        Ok(true)
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
        if let Some(&i) = self.spellings.get(literal) {
            return self.names.get(i).cloned();
        }
        if let Some(e) = self.echoes.iter().find(|e| e.literal == literal) {
            return self.names.get(e.name).cloned();
        }
        let (_, name) = self.add_echo(literal)?;
        Some(name)
    }

    /// Starts a typed echo with `literal` (leading whitespace already dropped, at least
    /// [`MIN_TYPED_CHARS`] non-whitespace characters). Returns its index and name.
    pub(crate) fn add_echo(&mut self, literal: &str) -> Option<(usize, String)> {
        let literal = capped(literal.trim_start(), TYPED_MAX_BYTES);
        let mut seen = 0;
        let head_chars = literal.chars().position(|c| {
            seen += usize::from(!c.is_whitespace());
            seen == MIN_TYPED_CHARS
        })? + 1;
        let name = loop {
            self.typed_next += 1;
            let name = format!("{TYPED_PREFIX}{}", self.typed_next);
            // A caller may have chosen this name explicitly; never merge into it.
            if !self.by_name.contains_key(&name) {
                break name;
            }
        };
        let index = self.name_index(&name);
        let mut echo = Echo {
            name: index,
            literal: String::new(),
            head_chars,
            spelled: [0; 4],
        };
        push_capped(&mut echo, literal);
        self.max_echo_len = self
            .max_echo_len
            .max(echo.spelled.iter().copied().max().unwrap_or(0));
        self.echoes.push(echo);
        self.rebuild();
        Some((self.echoes.len() - 1, name))
    }

    /// Appends `more` to echo `echo` (up to [`TYPED_MAX_BYTES`]). Its head, and so the
    /// automaton, stays as it is.
    pub(crate) fn extend_echo(&mut self, echo: usize, more: &str) {
        if let Some(e) = self.echoes.get_mut(echo) {
            push_capped(e, more);
            self.max_echo_len = self
                .max_echo_len
                .max(e.spelled.iter().copied().max().unwrap_or(0));
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

    fn rebuild(&mut self) {
        let mut table: BTreeMap<String, Pattern> = BTreeMap::new();
        for (spelling, &index) in &self.spellings {
            table.entry(spelling.clone()).or_default().literal = Some(index);
        }
        let mut heads: HashMap<String, Vec<(usize, Spelling)>> = HashMap::new();
        for (i, echo) in self.echoes.iter().enumerate() {
            for spelling in Spelling::ALL {
                let head = spelling.encode(echo.head());
                heads.entry(head.clone()).or_default().push((i, spelling));
                table.entry(head).or_default();
            }
        }
        // Every pattern learns which heads are a prefix of it: those match wherever it does,
        // and the automaton (leftmost-longest) reports only the longest pattern at a position.
        let head_lens: BTreeSet<usize> = heads.keys().map(String::len).collect();
        for (text, pattern) in &mut table {
            for &len in &head_lens {
                if let Some(found) = text.get(..len).and_then(|prefix| heads.get(prefix)) {
                    pattern.echoes.extend(found.iter().copied());
                }
            }
        }
        // Deterministic pattern order; leftmost-longest makes the order irrelevant to results.
        let (texts, patterns): (Vec<String>, Vec<Pattern>) = table.into_iter().unzip();
        self.patterns = patterns;
        self.automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&texts)
            .ok();
    }

    /// True when no literal is registered.
    pub(crate) fn is_empty(&self) -> bool {
        self.automaton.is_none()
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
        let Some(ac) = &self.automaton else {
            return out;
        };
        if !ac.is_match(text) {
            return out;
        }
        let spans = protected_spans(text, &|n| self.by_name.contains_key(n));
        let mut buf = String::new();
        let mut gap_start = 0;
        let gaps = spans
            .iter()
            .copied()
            .chain(std::iter::once((text.len(), text.len())));
        for (span_start, span_end) in gaps {
            // A match never runs into the protected span that ends the gap.
            let gap_text = &text[..span_start];
            let mut pos = gap_start;
            while pos < span_start {
                let Some(m) = ac.find(Input::new(gap_text).span(pos..span_start)) else {
                    break;
                };
                let Some(pattern) = self.patterns.get(m.pattern().as_usize()) else {
                    break;
                };
                let mut best = pattern.literal.map(|name| (m.end(), name));
                for &(echo, spelling) in &pattern.echoes {
                    let Some(e) = self.echoes.get(echo) else {
                        continue;
                    };
                    if let Some(end) = e.extend_at(gap_text, m.start(), spelling, &mut buf) {
                        best = match best {
                            Some((b_end, b_name))
                                if b_end > end || (b_end == end && b_name < e.name) =>
                            {
                                Some((b_end, b_name))
                            }
                            _ => Some((end, e.name)),
                        };
                    }
                }
                let Some((end, name)) = best else {
                    // Not reachable: every pattern is a literal or an echo head.
                    pos = m.end();
                    continue;
                };
                out.push(SecretMatch {
                    start: m.start(),
                    end,
                    name,
                });
                pos = end;
            }
            gap_start = span_end;
        }
        out
    }
}

/// Appends `more` to an echo's literal, keeping it within [`TYPED_MAX_BYTES`].
fn push_capped(echo: &mut Echo, more: &str) {
    let room = TYPED_MAX_BYTES.saturating_sub(echo.literal.len());
    let more = capped(more, room);
    for c in more.chars() {
        for (len, spelling) in echo.spelled.iter_mut().zip(Spelling::ALL) {
            *len += spelling.len_of(c);
        }
    }
    echo.literal.push_str(more);
}

#[cfg(test)]
mod tests;
