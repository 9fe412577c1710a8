//! What the evidence learned about one agent tool call, while the run goes on: the typing steps
//! linked to it with their verdicts, and the failures (requests, console errors) that happened
//! during it. A producer of tool calls (the MCP gateway) reads it when the call is answered and
//! tells the agent, so a `fill` that did not land is not reported as a silent success.
//!
//! Everything here is a copy of a record that is already sanitized; nothing is kept beyond what
//! the journal keeps. Per call it is bounded, and what is cut is what matters least: steps whose
//! text landed are counted instead of kept once [`MAX_TYPING`] steps are kept, so a step that
//! did not land (or was not verified) is never the one left out; up to [`MAX_UNLANDED`] of those
//! are kept, beyond that they are counted too. Every step's verdict is counted whether it is kept
//! or not ([`CallFacts::not_landed`]): a caller that judges the call judges every step. Failures
//! are kept up to [`MAX_FAILURES`], the rest counted. Facts live as long as the call is
//! remembered for linking (`calls.rs`).

use cdp_evidence::{ActionMethod, Record, RecordKind, Verified};

/// Typing steps kept per call while steps that landed are among them; beyond, a landed step is
/// counted instead of kept.
pub const MAX_TYPING: usize = 16;
/// Typing steps kept per call in all (each one that did not land, or was not verified, pushes
/// out a kept landed one first); beyond, counted.
pub const MAX_UNLANDED: usize = 64;
/// Failures kept per call; beyond, counted.
pub const MAX_FAILURES: usize = 5;
/// Other browser actions (navigations, clicks, key presses, …) kept per call; beyond, counted.
pub const MAX_ACTIONS: usize = 16;

/// A record linked to a call.
#[derive(Clone, Debug)]
pub struct Linked {
    /// The record (sanitized, as written or about to be).
    pub record: Record,
    /// Another call in flight could have caused it too (`toolCallCandidates`).
    pub shared: bool,
}

impl Linked {
    /// The verdict of a typing step, if it has one.
    pub fn verified(&self) -> Option<Verified> {
        verdict_of(&self.record)
    }
}

/// What is known of one call so far.
#[derive(Clone, Debug, Default)]
pub struct CallFacts {
    /// Its typing steps kept, in the order they were written (see the module docs for which).
    pub typing: Vec<Linked>,
    /// Failed requests and console errors during it, in the order they were seen.
    pub failures: Vec<Linked>,
    /// Typing steps linked but not kept.
    pub more_typing: usize,
    /// Of those, steps whose text landed.
    pub more_landed: usize,
    /// Typing steps whose text did not land (`verified: false`), kept or not.
    pub not_landed: usize,
    /// Failures beyond [`MAX_FAILURES`].
    pub more_failures: usize,
    /// Its browser actions other than typing and frames (navigations, clicks, presses, …),
    /// linked to it alone, in the order they were linked; up to [`MAX_ACTIONS`].
    pub actions: Vec<Linked>,
    /// Actions beyond [`MAX_ACTIONS`].
    pub more_actions: usize,
}

impl CallFacts {
    /// Nothing to tell.
    pub fn is_empty(&self) -> bool {
        self.typing.is_empty()
            && self.failures.is_empty()
            && self.more_typing == 0
            && self.more_failures == 0
    }

    /// Typing steps linked in all, kept or not.
    pub fn typing_steps(&self) -> usize {
        self.typing.len() + self.more_typing
    }

    pub(crate) fn add_typing(&mut self, record: &Record, shared: bool) {
        let verified = verdict_of(record);
        let landed = verified == Some(Verified::True);
        if verified == Some(Verified::False) {
            self.not_landed += 1;
        }
        let step = Linked {
            record: record.clone(),
            shared,
        };
        if self.typing.len() < MAX_TYPING {
            self.typing.push(step);
            return;
        }
        if landed {
            self.more_typing += 1;
            self.more_landed += 1;
            return;
        }
        // A step that did not land takes the place of a landed one, which is counted instead.
        if let Some(i) = self
            .typing
            .iter()
            .position(|l| l.verified() == Some(Verified::True))
        {
            self.typing.remove(i);
            self.more_typing += 1;
            self.more_landed += 1;
            self.typing.push(step);
        } else if self.typing.len() < MAX_UNLANDED {
            self.typing.push(step);
        } else {
            self.more_typing += 1;
        }
    }

    pub(crate) fn add_action(&mut self, record: &Record) {
        if self.actions.len() < MAX_ACTIONS {
            self.actions.push(Linked {
                record: record.clone(),
                shared: false,
            });
        } else {
            self.more_actions += 1;
        }
    }

    pub(crate) fn add_failure(&mut self, record: &Record, shared: bool) {
        if self.failures.len() < MAX_FAILURES {
            self.failures.push(Linked {
                record: record.clone(),
                shared,
            });
        } else {
            self.more_failures += 1;
        }
    }
}

/// A typing step (`"method": "type"`).
pub(crate) fn is_typing(record: &Record) -> bool {
    matches!(record.kind(), RecordKind::Action(a) if a.method == ActionMethod::Type)
}

/// A browser action of the call's other than typing: a navigation, a click, a key press, …
/// (not a kept frame, not a record of the call's own producer).
pub(crate) fn is_browser_action(record: &Record) -> bool {
    matches!(record.kind(), RecordKind::Action(a)
        if !matches!(a.method.known(), Some(ActionMethod::Type | ActionMethod::Frame)))
}

fn verdict_of(record: &Record) -> Option<Verified> {
    match record.kind() {
        RecordKind::Action(a) => a.verification.as_ref().map(|v| v.verified),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdp_evidence::{Action, Console, ConsoleLevel, VerdictReason, Verification};
    use cdp_sanitize::SafeText;

    fn step(verified: Option<Verified>) -> Record {
        let mut a = Action::new(SafeText::literal("type"));
        a.verification = verified.map(|v| {
            let reason = match v {
                Verified::True => VerdictReason::Landed,
                Verified::False => VerdictReason::DroppedCharacters,
                Verified::Indeterminate => VerdictReason::NotRead,
            };
            Verification::new(v, reason, SafeText::literal("x"))
        });
        Record::new(SafeText::literal("cdp"), RecordKind::Action(a))
    }

    #[test]
    fn facts_keep_a_handful_of_failures_and_count_the_rest() {
        let mut facts = CallFacts::default();
        assert!(facts.is_empty());
        let failure = Record::new(
            SafeText::literal("cdp"),
            RecordKind::Console(Console::new(ConsoleLevel::Error, SafeText::literal("x"))),
        );
        for _ in 0..MAX_FAILURES + 3 {
            facts.add_failure(&failure, false);
        }
        assert_eq!(
            (facts.failures.len(), facts.more_failures),
            (MAX_FAILURES, 3)
        );
        let typing = step(None);
        assert!(is_typing(&typing) && !is_typing(&failure));
        facts.add_typing(&typing, true);
        assert!(facts.typing[0].shared);
        assert!(!facts.is_empty());
    }

    /// Twenty fields filled in one call, three of them cut by `maxlength`, in the order a form
    /// is filled: the three are kept (each pushing out a landed step), every landed step beyond
    /// the kept ones is counted as landed, and every verdict is counted.
    #[test]
    fn what_is_cut_for_length_is_steps_that_landed_never_one_that_did_not() {
        let mut facts = CallFacts::default();
        for i in 0..20 {
            let cut = [3, 17, 19].contains(&i);
            facts.add_typing(
                &step(Some(if cut { Verified::False } else { Verified::True })),
                false,
            );
        }
        assert_eq!(facts.typing.len(), MAX_TYPING);
        assert_eq!((facts.more_typing, facts.more_landed), (4, 4));
        assert_eq!(facts.typing_steps(), 20);
        assert_eq!(facts.not_landed, 3);
        let kept_false = facts
            .typing
            .iter()
            .filter(|l| l.verified() == Some(Verified::False))
            .count();
        assert_eq!(kept_false, 3, "every step that did not land is listed");
        // Steps without a verdict are never cut for landed ones either, up to the bound.
        let mut facts = CallFacts::default();
        for _ in 0..MAX_UNLANDED + 5 {
            facts.add_typing(&step(None), false);
        }
        assert_eq!(facts.typing.len(), MAX_UNLANDED);
        assert_eq!((facts.more_typing, facts.more_landed), (5, 0));
    }
}
