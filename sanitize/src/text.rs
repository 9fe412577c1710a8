//! The text engine: applies the rule table to a string in one left-to-right pass, then caps it.
//!
//! Pure: never does I/O, never logs its input. Output is a fixed point: running it again over
//! its own output changes nothing, because markers, placeholders and handles are protected
//! spans that no rule rewrites, and a value that already is one is left alone.

use crate::handles::{is_protected, protected_spans, Handles};
use crate::keys::{classify, is_whole_line_header, KeyClass};
use crate::prefilter::may_match;
use crate::rules::{find_at, Detector, Hit, Parts, Rule, Sibling};
use crate::summary::Counters;
use std::borrow::Cow;

mod cap;
mod value;

pub(crate) use cap::cap;
use value::{
    ends_token, html_inner, key_value, looks_like_credential, redact_inner, redact_value,
    ValueShape,
};

/// What to do with one detector match.
enum Action {
    /// Not a secret after all: continue scanning at this byte offset.
    Skip(usize),
    /// Replace `start..end` with `with`, count `rule`. `resume` is where the match ends as the
    /// rule read it; the scan no longer jumps there (see [`rescan_from`]), the value guard
    /// still uses it to step past a protected span.
    Replace {
        start: usize,
        end: usize,
        with: Cow<'static, str>,
        rule: Rule,
        resume: usize,
    },
}

/// Everything a rule needs besides the text.
pub(crate) struct Ctx<'s> {
    pub(crate) handles: &'s Handles,
    pub(crate) counters: &'s Counters,
}

/// One replacement a rule decided on, found on the text as it is, not yet applied or counted.
pub(crate) struct Replacement {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) with: Cow<'static, str>,
    pub(crate) rule: Rule,
}

/// Every text rule's replacements in `text`, from one left-to-right pass: sorted, never
/// overlapping, nothing counted yet.
pub(crate) fn replacements(text: &str, ctx: &Ctx<'_>) -> Vec<Replacement> {
    let mut out = Vec::new();
    if !may_match(text) {
        return out;
    }
    let protected = protected_spans(text, &|_| true);
    let mut pos = 0;
    while pos < text.len() {
        let Some(hit) = find_at(text, pos) else {
            break;
        };
        let action = decide(&hit, text, ctx);
        let action = guard(action, hit.detector, hit.start, hit.end, &protected);
        match action {
            Action::Skip(resume) => {
                pos = next_boundary(text, resume.max(hit.start + 1));
            }
            Action::Replace {
                start,
                end,
                with,
                rule,
                ..
            } => {
                // Kept sorted; a later match may replace text before an earlier one's value
                // (an attribute between `name=` and `value=`).
                let at = out.partition_point(|r: &Replacement| r.start < start);
                let before = at.checked_sub(1).and_then(|i| out.get(i));
                let taken = before
                    .filter(|r| r.end > start)
                    .or_else(|| out.get(at).filter(|r| r.start < end));
                pos = match taken {
                    // This value overlaps one already taken (`Bearer x` inside an
                    // `Authorization:` value): that one decides. A match inside the taken
                    // value may still hold the start of another that reaches past it (a
                    // `key:"…` in a `'…'` value running over the next tag's `name=`): go on
                    // from its own value, as if it had been taken. One that runs to the taken
                    // value's end or past it holds nothing more: on from there, which also
                    // keeps a value full of matches (`token=a_token=b_token=…`) linear.
                    Some(t) if hit.end < t.end => rescan_from(&hit, start),
                    Some(t) => t.end,
                    None => {
                        out.insert(
                            at,
                            Replacement {
                                start,
                                end,
                                with,
                                rule,
                            },
                        );
                        rescan_from(&hit, start)
                    }
                };
                pos = next_boundary(text, pos.max(hit.start + 1));
            }
        }
    }
    out
}

/// Where the scan goes on once `hit`'s replacement (starting at `start`) is taken: from the
/// start of what it judged as the value, not from the end of the match. Only the replaced text
/// is gone; the match may span the start of another (a quoted value run past its attribute's
/// closing quote into the next tag's `name="csrf-token"`, attributes between `name=` and
/// `value=`), and skipping to its end would leave that one's value in clear, for a second pass,
/// seeing the marker, to find. Never from inside a name (a name's tail is not a name) nor
/// inside a token replaced whole.
fn rescan_from(hit: &Hit, start: usize) -> usize {
    match hit.parts {
        // `name=… <other attributes> value=…`: the attributes between are judged too.
        Parts::NameValue {
            name: (_, name_end),
            value: (value_start, _),
            form: Sibling::Html,
        } if name_end <= value_start => name_end,
        Parts::Whole | Parts::CdpCapability { .. } | Parts::Unresolved | Parts::NoMatch => hit.end,
        Parts::Userinfo { .. }
        | Parts::QueryParam { .. }
        | Parts::KeyValue { .. }
        | Parts::NameValue { .. }
        | Parts::SchemeCredential { .. } => start,
    }
}

/// Applies every text rule to `text` in one left-to-right pass (borrowed when nothing changed).
fn apply_rules_once<'a>(text: &'a str, ctx: &Ctx<'_>) -> Cow<'a, str> {
    let found = replacements(text, ctx);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for r in found {
        out.push_str(&text[copied..r.start]);
        out.push_str(&r.with);
        copied = r.end;
        ctx.counters.count(r.rule);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Rounds of the text pipeline after the first; real text settles in one or two.
pub(crate) const MAX_EXTRA_ROUNDS: usize = 5;

/// Applies the rules until nothing changes. A replacement changes what its neighbours look
/// like (a key block removed from between `https://x` and `user@` leaves `https://x…@`, a marker
/// after `Bearer word+=` ends that word, a token that did not read as an HTML attribute does
/// once it is a marker), and only a fixed point makes sanitizing twice equal sanitizing once.
/// Every text that changed gets one more round: guessing which replacements could matter
/// missed shapes fuzzing found, twice. Borrowed when nothing changed.
pub(crate) fn apply_rules_fixpoint<'a>(text: &'a str, ctx: &Ctx<'_>) -> Cow<'a, str> {
    fixpoint(text, |t| apply_rules_once(t, ctx))
}

/// Applies `pass` until its output is its input, at most [`MAX_EXTRA_ROUNDS`] times after the
/// first. Borrowed when the first pass changed nothing.
pub(crate) fn fixpoint<'a>(
    text: &'a str,
    pass: impl for<'t> Fn(&'t str) -> Cow<'t, str>,
) -> Cow<'a, str> {
    let mut current = match pass(text) {
        Cow::Borrowed(_) => return Cow::Borrowed(text),
        Cow::Owned(o) => o,
    };
    for _ in 0..MAX_EXTRA_ROUNDS {
        match pass(&current) {
            Cow::Borrowed(_) => break,
            Cow::Owned(o) if o == current => break,
            Cow::Owned(o) => current = o,
        }
    }
    Cow::Owned(current)
}

/// The smallest char boundary at or after `i` (clamped to the text).
fn next_boundary(text: &str, mut i: usize) -> usize {
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i.min(text.len())
}

/// Keeps protected spans intact. Token-like detectors (a JWT, an id) never touch one; value-like
/// detectors leave a value that *is* one alone, redact a value that merely contains one, and
/// stop a value where a protected span would be cut.
fn guard(
    action: Action,
    detector: Detector,
    match_start: usize,
    match_end: usize,
    protected: &[(usize, usize)],
) -> Action {
    // Values with their own delimiters may contain a protected span whole (then the whole value
    // goes) or stop before one; a token-like match touching one is not a secret of ours.
    let delimited_value = match detector {
        Detector::QueryParam | Detector::NameValue | Detector::KeyValue | Detector::Userinfo => {
            true
        }
        Detector::CdpCapability
        | Detector::SchemeCredential
        | Detector::PrivateKey
        | Detector::Jwt
        | Detector::KnownToken
        | Detector::CdpId => false,
    };
    let Action::Replace {
        start,
        mut end,
        with,
        rule,
        resume,
    } = action
    else {
        return action;
    };
    let overlapping =
        |s: usize, e: usize| protected.iter().copied().find(|&(ps, pe)| ps < e && pe > s);
    if !delimited_value {
        return match overlapping(match_start, match_end) {
            Some((_, pe)) => Action::Skip(pe),
            None => Action::Replace {
                start,
                end,
                with,
                rule,
                resume,
            },
        };
    }
    for &(ps, pe) in protected {
        if pe <= start || ps >= end {
            continue;
        }
        if ps <= start && pe >= end {
            // The value is (inside) a placeholder, marker or handle: already safe.
            return Action::Skip(pe.max(resume));
        }
        if ps < start {
            return Action::Skip(pe);
        }
        if pe > end {
            // A protected span starts inside the value and runs past it: stop before it.
            end = ps;
            break;
        }
    }
    if end <= start {
        return Action::Skip(resume);
    }
    Action::Replace {
        start,
        end,
        with,
        rule,
        resume,
    }
}

/// The per-detector decision: one function per kind of match.
fn decide(hit: &Hit, text: &str, ctx: &Ctx<'_>) -> Action {
    let whole = (hit.start, hit.end);
    match hit.parts {
        Parts::Whole => decide_whole(hit.detector, text, whole, ctx),
        Parts::NoMatch => Action::Skip(hit.start + 1),
        Parts::Unresolved => {
            // Impossible by construction (see `Parts::Unresolved`); fail closed.
            debug_assert!(false, "{:?} matched without its groups", hit.detector);
            replace_whole(whole, Rule::Secret, Rule::Secret.marker().into())
        }
        Parts::Userinfo { value: (s, e) } => Action::Replace {
            start: s,
            end: e,
            with: Rule::Userinfo.marker().into(),
            rule: Rule::Userinfo,
            resume: whole.1,
        },
        Parts::CdpCapability { id: (s, e) } if !is_protected(&text[s..e]) => Action::Replace {
            start: s,
            end: e,
            with: ctx.handles.handle(&text[s..e]).into(),
            rule: Rule::CdpCapability,
            resume: e,
        },
        Parts::CdpCapability { .. } => Action::Skip(whole.1),
        Parts::QueryParam { name, value } => decide_query_param(text, name, value, whole.1),
        Parts::KeyValue { name, sep, value } => decide_key_value(text, name, sep, value, ctx),
        Parts::NameValue { name, value, form } => {
            decide_name_value(text, (name, value, form), whole.1, ctx)
        }
        Parts::SchemeCredential { value } => decide_scheme_credential(text, value),
    }
}

/// The whole match `start..end` replaced with `with`.
fn replace_whole((start, end): (usize, usize), rule: Rule, with: Cow<'static, str>) -> Action {
    Action::Replace {
        start,
        end,
        with,
        rule,
        resume: end,
    }
}

/// A match that is the secret itself (a PEM key, a JWT, a known token, a CDP id).
fn decide_whole(detector: Detector, text: &str, whole: (usize, usize), ctx: &Ctx<'_>) -> Action {
    match detector {
        Detector::PrivateKey => {
            replace_whole(whole, Rule::PrivateKey, Rule::PrivateKey.marker().into())
        }
        Detector::Jwt => replace_whole(whole, Rule::Jwt, Rule::Jwt.marker().into()),
        Detector::CdpId => replace_whole(
            whole,
            Rule::CdpId,
            ctx.handles.handle(&text[whole.0..whole.1]).into(),
        ),
        Detector::KnownToken => replace_whole(whole, Rule::ApiKey, Rule::ApiKey.marker().into()),
        // These report groups, never `Whole`; fail closed all the same.
        Detector::Userinfo
        | Detector::CdpCapability
        | Detector::QueryParam
        | Detector::NameValue
        | Detector::KeyValue
        | Detector::SchemeCredential => {
            debug_assert!(false, "{detector:?} matched without its groups");
            replace_whole(whole, Rule::Secret, Rule::Secret.marker().into())
        }
    }
}

/// `?name=value`: any value but a structural one's (a page number, a sort order).
fn decide_query_param(
    text: &str,
    (ns, ne): (usize, usize),
    (vs, ve): (usize, usize),
    whole_end: usize,
) -> Action {
    let rule = match classify(&text[ns..ne]) {
        KeyClass::Sensitive(rule) | KeyClass::IdLike(rule) => rule,
        KeyClass::Plain => Rule::QueryToken,
        KeyClass::Structural => return Action::Skip(vs),
    };
    redact_value(text, vs, ve, rule, whole_end)
}

/// `name: value`, `name=value`, a header line: the value when the name is a secret's.
fn decide_key_value(
    text: &str,
    (ns, ne): (usize, usize),
    (ss, se): (usize, usize),
    value: (usize, usize),
    ctx: &Ctx<'_>,
) -> Action {
    let name = &text[ns..ne];
    // A header quoted as a whole (`-H "Cookie: a=1"`) ends at its closing quote.
    let quote = text[..ns]
        .chars()
        .next_back()
        .filter(|&c| c == '"' || c == '\'');
    let (rule, id_like) = match classify(name) {
        KeyClass::Sensitive(rule) => (rule, false),
        KeyClass::IdLike(rule) => (rule, true),
        KeyClass::Plain | KeyClass::Structural => return Action::Skip(se),
    };
    let header = is_whole_line_header(name).then_some(quote);
    let url_param = text[..ns].ends_with(['?', '&', '#', ';']);
    let shape = ValueShape {
        url_param,
        header,
        header_sep: text[ss..se].contains(':') && !text[ss..se].contains('='),
        escapes: true,
    };
    key_value(text, shape, value, (rule, id_like), ctx)
}

/// A value whose name is in a sibling field (JSON `{"name":…,"value":…}`, an HTML input).
fn decide_name_value(
    text: &str,
    (name, value, form): ((usize, usize), (usize, usize), Sibling),
    whole_end: usize,
    ctx: &Ctx<'_>,
) -> Action {
    let (ns, ne) = match form {
        Sibling::Json => name,
        Sibling::Html => html_inner(text, name),
    };
    let (rule, id_like) = match classify(&text[ns..ne]) {
        KeyClass::Sensitive(rule) => (rule, false),
        KeyClass::IdLike(rule) => (rule, true),
        // Not a secret's name: scan the rest as usual — from the value on when it comes
        // first, since it may hold a secret of its own.
        KeyClass::Plain | KeyClass::Structural => {
            return Action::Skip(name.1.min(value.0));
        }
    };
    match form {
        Sibling::Json => {
            let shape = ValueShape {
                url_param: false,
                header: None,
                header_sep: false,
                escapes: true,
            };
            match key_value(text, shape, value, (rule, id_like), ctx) {
                Action::Replace {
                    start,
                    end,
                    with,
                    rule,
                    resume,
                } => Action::Replace {
                    start,
                    end,
                    with,
                    rule,
                    resume: resume.max(whole_end),
                },
                Action::Skip(resume) => Action::Skip(resume.max(whole_end)),
            }
        }
        // HTML attribute values have no backslash escapes, and their quotes come in
        // several spellings.
        Sibling::Html => {
            let (vs, ve) = html_inner(text, value);
            redact_inner(text, (vs, ve), whole_end, (rule, id_like), ctx)
        }
    }
}

/// `Bearer <token>` and other scheme words followed by a credential.
fn decide_scheme_credential(text: &str, (s, e): (usize, usize)) -> Action {
    // A token68 ends the header or is followed by a delimiter; `bearer sessionCount=3`
    // or `Bearer /devtools/page/target:…` are something else after a scheme word.
    if looks_like_credential(&text[s..e]) && ends_token(&text[e..]) {
        Action::Replace {
            start: s,
            end: e,
            with: Rule::Bearer.marker().into(),
            rule: Rule::Bearer,
            resume: e,
        }
    } else {
        Action::Skip(s)
    }
}

#[cfg(test)]
mod tests;
