//! Short typing steps into one group of fields, protected as one literal.
//!
//! A one-time code typed a digit per box (six `maxlength=1` boxes, focus moving on) is six
//! typing steps of one character each, and nothing shorter than four characters is registered
//! with the sanitizer: the page's echo of the code (`code 757525 expired`, `GET
//! /api/verify/757525`) would be kept. So consecutive short steps (fewer than
//! [`MIN_TYPED_CHARS`] non-whitespace characters each) on one page grow one literal of their
//! own, protected from its fourth character like any typed text, when they go into one group of
//! fields as the page agent reports it (`FieldFacts`): the same form or row of short boxes, or a
//! field the page handed focus to from the previous one. Without the relay's observer nothing
//! is known of fields, and the page is the group.
//!
//! A group ends at a step of four characters or more (what it types is protected on its own),
//! a step into a field of another group, a new document in the page, or [`IDLE`] without a
//! step. A long step that continues a group adds only its first characters (while it is still
//! short) to the group's literal: nothing longer than the group is glued to it.

use super::burst::Burst;
use crate::pages::veto::FieldFacts;
use cdp_sanitize::{Sanitizer, TypedEcho, MIN_TYPED_CHARS};
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

/// A group of short steps ends this long after its last step (an agent that thinks between
/// boxes takes seconds per box).
pub(crate) const IDLE: Duration = Duration::from_secs(60);

/// Pages with a group open at once; past it, the oldest group ends.
const MAX_GROUPS: usize = 1024;

/// The literal of a group of short steps, growing as they are typed.
pub(crate) struct Group {
    pub(super) echo: TypedEcho,
    /// The field of the last step (what the page agent said), `None` without a report.
    field: Option<FieldFacts>,
    last: SystemTime,
}

impl Group {
    /// Whether a step starting at `at` into `field` continues this group.
    fn continued_by(&self, field: Option<FieldFacts>, at: SystemTime) -> bool {
        if at.duration_since(self.last).unwrap_or_default() > IDLE {
            return false;
        }
        match (self.field, field) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                (a.group != 0 && a.group == b.group) || (b.from != 0 && b.from == a.field)
            }
            _ => false,
        }
    }
}

/// The open group of each page (typing key).
#[derive(Default)]
pub(crate) struct Groups {
    by_page: HashMap<String, Group>,
}

impl Groups {
    /// A step starts on `page` at `at`, into `field`: the group it continues, taken out while the
    /// step is typed. `navigated` says whether the page committed a new document since `since`.
    pub(crate) fn join(
        &mut self,
        page: &str,
        field: Option<FieldFacts>,
        at: SystemTime,
        navigated: impl FnOnce(SystemTime) -> bool,
    ) -> Option<Group> {
        let group = self.by_page.remove(page)?;
        (group.continued_by(field, at) && !navigated(group.last)).then_some(group)
    }

    /// A step on `page` ended: a short one keeps its group open (or opens one), a longer one
    /// ends it.
    pub(crate) fn ended(&mut self, page: &str, burst: &mut Burst, sanitizer: &Sanitizer) {
        let group = burst.group.take();
        if !burst.short() {
            return;
        }
        let mut group = group.unwrap_or_else(|| {
            let mut echo = sanitizer.typed_echo();
            echo.extend(&burst.typed);
            Group {
                echo,
                field: None,
                last: burst.last,
            }
        });
        group.field = burst.field;
        group.last = burst.last;
        if self.by_page.len() >= MAX_GROUPS && !self.by_page.contains_key(page) {
            let oldest = self
                .by_page
                .iter()
                .min_by_key(|(_, g)| g.last)
                .map(|(p, _)| p.clone());
            if let Some(p) = oldest {
                self.by_page.remove(&p);
            }
        }
        self.by_page.insert(page.to_owned(), group);
    }
}

/// The part of `text` a step that has `solid` non-whitespace characters so far adds to its
/// group: what keeps the step short.
pub(crate) fn short_part(text: &str, solid: usize) -> &str {
    let mut left = MIN_TYPED_CHARS.saturating_sub(solid + 1);
    for (i, c) in text.char_indices() {
        if !c.is_whitespace() {
            if left == 0 {
                return &text[..i];
            }
            left -= 1;
        }
    }
    text
}

/// Non-whitespace characters of `text`.
pub(crate) fn solid(text: &str) -> usize {
    text.chars().filter(|c| !c.is_whitespace()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_adds_to_its_group_only_while_it_is_short() {
        assert_eq!(short_part("7", 0), "7");
        assert_eq!(short_part("757525", 0), "757");
        assert_eq!(short_part("a b c d", 1), "a b ");
        assert_eq!(short_part("x", 3), "");
        assert_eq!(solid(" 7 5 "), 2);
    }

    fn facts(field: u64, group: u64, from: u64) -> Option<FieldFacts> {
        Some(FieldFacts { field, group, from })
    }

    #[test]
    fn a_group_goes_on_in_its_own_fields_only() {
        let s = Sanitizer::new();
        let t = |ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
        let g = Group {
            echo: s.typed_echo(),
            field: facts(1, 9, 0),
            last: t(1000),
        };
        assert!(g.continued_by(facts(2, 9, 0), t(2000)), "same group");
        assert!(g.continued_by(facts(2, 0, 1), t(2000)), "handed on from it");
        assert!(!g.continued_by(facts(2, 0, 0), t(2000)), "no group");
        assert!(!g.continued_by(facts(2, 8, 0), t(2000)), "another group");
        assert!(!g.continued_by(facts(2, 9, 0), t(1000) + IDLE + Duration::from_millis(1)));
        assert!(!g.continued_by(None, t(2000)), "no report");
        let unknown = Group {
            echo: s.typed_echo(),
            field: None,
            last: t(1000),
        };
        assert!(unknown.continued_by(None, t(2000)), "no observer: the page");
        assert!(!unknown.continued_by(facts(2, 9, 0), t(2000)));
    }
}
