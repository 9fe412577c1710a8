//! Joins the two kinds of replacement found on the *original* text: the rules' (`text.rs`) and
//! the registered literals' (`secrets.rs`).
//!
//! Both are computed on the text as it came in, so a registered literal can never hide from a
//! rule the name it needs (typing the word `password` must not turn `password=hunter2` into
//! `${TYPED_1}=hunter2`). Then every byte either side would remove is removed:
//!
//! - spans that overlap nobody are replaced as their side decided (`${NAME}`, a marker, a
//!   handle);
//! - overlapping spans are replaced by their union, as `${NAME}` when the rules' spans all lie
//!   inside one literal (the placeholder says more, and hides as much), else as the first rule's
//!   marker. No fragment of a literal is ever left in clear next to a marker.
//!
//! Pure: never does I/O, never logs its input.

use crate::rules::Rule;
use crate::secrets::{Registry, SecretMatch};
use crate::summary::Counters;
use crate::text::Replacement;
use std::borrow::Cow;

/// One overlapping group of replacements.
#[derive(Default)]
struct Component {
    start: usize,
    end: usize,
    rules: Vec<usize>,
    secrets: Vec<usize>,
}

/// Applies `rules` and `secrets` (each sorted; secrets overlap only where two take the same
/// handle; both found on `text`) to `text`, counting what it emits (borrowed when there are
/// none). `registry` is the one `secrets` came from (`None` when there are none).
pub(crate) fn merge<'a>(
    text: &'a str,
    rules: Vec<Replacement>,
    secrets: &[SecretMatch],
    registry: Option<&Registry>,
    counters: &Counters,
) -> Cow<'a, str> {
    if rules.is_empty() && secrets.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let (mut i, mut j) = (0, 0);
    while i < rules.len() || j < secrets.len() {
        // Start a component at the earliest remaining span, then absorb every span that
        // overlaps it (both lists are sorted, so those come next).
        let mut c = Component::default();
        let rule_first = match (rules.get(i), secrets.get(j)) {
            (Some(r), Some(s)) => r.start <= s.start,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if rule_first {
            c.start = rules[i].start;
            c.end = rules[i].end;
            c.rules.push(i);
            i += 1;
        } else {
            c.start = secrets[j].start;
            c.end = secrets[j].end;
            c.secrets.push(j);
            j += 1;
        }
        loop {
            if let Some(r) = rules.get(i).filter(|r| r.start < c.end) {
                c.end = c.end.max(r.end);
                c.rules.push(i);
                i += 1;
            } else if let Some(s) = secrets.get(j).filter(|s| s.start < c.end) {
                c.end = c.end.max(s.end);
                c.secrets.push(j);
                j += 1;
            } else {
                break;
            }
        }
        out.push_str(&text[copied..c.start]);
        copied = c.end;
        match (c.rules.as_slice(), c.secrets.as_slice()) {
            ([r], []) => {
                let r = &rules[*r];
                out.push_str(&r.with);
                counters.count(r.rule);
            }
            (rs, [s]) if rs.iter().all(|&r| within(&rules[r], &secrets[*s])) => {
                let name = secrets[*s].name;
                push_placeholder(&mut out, registry.map_or("", |r| r.name(name)));
                if let Some(r) = registry {
                    r.count(name);
                }
            }
            (rs, _) => {
                // A union of a literal and a rule's span that sticks out of it: the rule's
                // marker (a handle is for an id alone, not for a union).
                let rule = rs.first().map_or(Rule::Secret, |&r| rules[r].rule);
                out.push_str(rule.marker());
                counters.count(rule);
            }
        }
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

fn within(r: &Replacement, s: &SecretMatch) -> bool {
    r.start >= s.start && r.end <= s.end
}

/// Appends `${name}`. `${` + `${NAME}` would read as a nested placeholder: an unclosed `${…`
/// before it goes with the literal (dropping text, unlike inserting some, cannot create a new
/// occurrence of another literal).
fn push_placeholder(out: &mut String, name: &str) {
    out.truncate(unclosed_placeholder_start(out));
    out.push_str("${");
    out.push_str(name);
    out.push('}');
}

/// Where a trailing unclosed `${NAME…` starts in `s` (`s.len()` when there is none).
fn unclosed_placeholder_start(s: &str) -> usize {
    let trimmed =
        s.trim_end_matches(|c: char| c == '_' || c.is_ascii_uppercase() || c.is_ascii_digit());
    match trimmed.strip_suffix("${") {
        Some(before) => before.len(),
        None => s.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(pairs: &[(&str, &str)]) -> Registry {
        let mut r = Registry::default();
        for (n, l) in pairs {
            r.register(n, l).expect("valid");
        }
        r
    }

    fn rule(start: usize, end: usize, rule: Rule) -> Replacement {
        Replacement {
            start,
            end,
            with: rule.marker().into(),
            rule,
        }
    }

    fn run(text: &str, rules: Vec<Replacement>, r: &Registry) -> String {
        let secrets = r.find(text);
        merge(text, rules, &secrets, Some(r), &Counters::default()).into_owned()
    }

    #[test]
    fn disjoint_spans_are_replaced_each_as_its_side_decided() {
        let r = reg(&[("PW", "hunter2")]);
        // "password=abc hunter2": rule on "abc", literal after it.
        let out = run(
            "password=abc hunter2",
            vec![rule(9, 12, Rule::Password)],
            &r,
        );
        assert_eq!(out, "password=[redacted:password] ${PW}");
    }

    #[test]
    fn a_rule_span_inside_a_literal_reads_as_the_literal() {
        let r = reg(&[("TOKEN", "tok_123456")]);
        let out = run("token=tok_123456", vec![rule(6, 16, Rule::Token)], &r);
        assert_eq!(out, "token=${TOKEN}");
        let out = run("token=tok_123456", vec![rule(10, 16, Rule::Token)], &r);
        assert_eq!(out, "token=${TOKEN}");
    }

    #[test]
    fn a_literal_inside_a_rule_span_or_overlapping_it_goes_with_the_union() {
        let r = reg(&[("PW", "hunter2")]);
        let out = run("password=xhunter2y", vec![rule(9, 18, Rule::Password)], &r);
        assert_eq!(out, "password=[redacted:password]");
        // The literal starts inside the value and runs past it.
        let out = run(
            "password=abhunt hunter2",
            vec![rule(9, 15, Rule::Password)],
            &r,
        );
        assert_eq!(out, "password=[redacted:password] ${PW}");
        let r = reg(&[("PW", "ab cd")]);
        let out = run("password=xab cd!", vec![rule(9, 12, Rule::Password)], &r);
        assert_eq!(out, "password=[redacted:password]!");
    }

    #[test]
    fn never_nested() {
        let r = reg(&[("A", "SECRETX"), ("B", "xxxx")]);
        let once = run("${SECRETX} and xxxx", vec![], &r);
        assert_eq!(once, "${A}} and ${B}");
        assert_eq!(run(&once, vec![], &r), once);
        assert!(!once.contains("${${"));
    }
}
