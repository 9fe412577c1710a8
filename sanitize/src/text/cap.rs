//! The length cap: where text may be cut without leaving a secret-shaped prefix.

use super::{apply_rules_fixpoint, Ctx};
use crate::handles::{protected_spans, truncated_prefix_len, truncation_marker};
use std::borrow::Cow;

/// A word cut by [`cap`] keeps at least this many characters, or none: longer than any id or
/// token shape a rule knows (CDP ids are 32 hex digits, GUIDs 36 characters), so a kept prefix
/// can never look like a whole one.
const MIN_KEPT_WORD: usize = 64;

/// Caps `text` at `max_chars` characters with a visible marker (`…[truncated N chars]`, N
/// counting the sanitized characters not shown).
///
/// The cut never splits a protected span, nor a run of word characters unless at least
/// [`MIN_KEPT_WORD`] of them are kept (a cut inside a long hex string could leave exactly a
/// CDP-id-shaped prefix; a one-word message longer than the cap keeps its sanitized start). Cutting can still change what a rule
/// sees at the new end (`Bearer api_key:…` cut after `api_key` reads as a credential), so the
/// kept part goes through the rules once more; if that makes it longer than the cap, it is cut
/// again. The result is a fixed point: text that already ends with a truncation marker within
/// the cap is left alone, and the kept part is already sanitized.
pub(crate) fn cap<'a>(text: Cow<'a, str>, max_chars: usize, ctx: &Ctx<'_>) -> Cow<'a, str> {
    if text.len() <= max_chars {
        return text;
    }
    let total = text.chars().count();
    if total <= max_chars {
        return text;
    }
    if let Some(prefix) = truncated_prefix_len(&text) {
        if text[..prefix].chars().count() <= max_chars {
            return text;
        }
    }
    ctx.counters.count_truncation();
    let mut kept: String = text[..cut_point(&text, max_chars)].to_owned();
    // Each round shortens the kept part or ends; a handful of rounds always suffices in
    // practice, and the last resort (nothing kept) is trivially a fixed point.
    for _ in 0..8 {
        let resanitized = apply_rules_fixpoint(&kept, ctx).into_owned();
        if resanitized.chars().count() <= max_chars {
            kept = resanitized;
            return Cow::Owned(format!(
                "{kept}{}",
                truncation_marker(total.saturating_sub(kept.chars().count()))
            ));
        }
        kept = resanitized[..cut_point(&resanitized, max_chars)].to_owned();
    }
    Cow::Owned(truncation_marker(total))
}

/// Byte offset at which to cut `text` to at most `max_chars` characters, stepping back out of
/// protected spans and word runs — except out of a word run of which at least
/// [`MIN_KEPT_WORD`] characters would be kept: no id shape is that long, and stepping back
/// would drop the whole of a one-word message.
fn cut_point(text: &str, max_chars: usize) -> usize {
    let mut cut = text
        .char_indices()
        .nth(max_chars)
        .map_or(text.len(), |(i, _)| i);
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let in_word_run = |i: usize| {
        text[..i].chars().next_back().is_some_and(is_word)
            && text[i..].chars().next().is_some_and(is_word)
    };
    let out_of_short_word = |cut: usize| {
        let start = text[..cut].trim_end_matches(is_word).len();
        if in_word_run(cut) && cut - start < MIN_KEPT_WORD {
            start
        } else {
            cut
        }
    };
    cut = out_of_short_word(cut);
    for (ps, pe) in protected_spans(text, &|_| true) {
        if ps < cut && cut < pe {
            cut = ps;
            break;
        }
    }
    // Stepping back over a protected span can land in a word run again.
    out_of_short_word(cut)
}
