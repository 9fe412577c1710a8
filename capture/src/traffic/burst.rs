//! One typing burst: consecutive keystrokes and insertions on one session, what is kept of them
//! (the length, the input type, the typed text in memory only for verification, its echo
//! protection), and the step it becomes. `typing.rs` decides when a burst starts and ends.

use super::groups::{self, Group};
use super::TOOL;
use crate::calls::BurstCalls;
use crate::pages::veto::{FieldFacts, FieldKind};
use crate::pages::Pages;
use cdp_evidence::{Action, ActionMethod, Locator, Record, RecordKind, Status, Verification};
use cdp_sanitize::{InputSummary, InputType, SafeJson, SafeText, Sanitizer, TypedEcho};
use std::time::SystemTime;

/// The typed text kept per burst for verification; longer input is counted, not kept (echo
/// protection has its own cap, in the sanitizer).
const MAX_KEPT_BYTES: usize = 4096;

/// Echo segments a burst extends besides its own (newest kept): an older one stops growing,
/// and what it registered stays protected.
const MAX_SEGMENTS: usize = 16;

/// Consecutive keystrokes and insertions on one session, reported as one typing step.
pub(crate) struct Burst {
    pub(crate) seq: u64,
    pub(super) started: SystemTime,
    pub(crate) last: SystemTime,
    pub(super) answered_at: SystemTime,
    pub(super) summary: InputSummary,
    /// The field that had focus when the burst started, as the page agent reported it.
    pub(super) kind: FieldKind,
    /// The typed text, in memory only, for verification in the page.
    pub(super) typed: String,
    /// Echo protection of what this burst typed, extended at every keystroke.
    pub(super) echo: TypedEcho,
    /// Echo protection from each point where another client may have emptied the field (an
    /// evaluation on another connection) on: the field then holds only what was typed since,
    /// which is no continuation of `echo`. Each is at least what the burst split there would
    /// have protected.
    segments: std::collections::VecDeque<TypedEcho>,
    /// The field may have been emptied since the last keystroke: the next starts a segment.
    emptied: bool,
    /// More was typed than is kept.
    pub(super) cut: bool,
    /// Some of the text was set as a `value` attribute, not typed.
    pub(super) attribute: bool,
    pub(super) commands: u64,
    pub(crate) outstanding: usize,
    pub(super) error: Option<SafeText>,
    pub(super) target: Option<SafeJson>,
    pub(super) target_id: Option<String>,
    /// What the page model tracks the typing under (`TrafficReader::typing_key`).
    pub(super) page: Option<String>,
    pub(super) verification: Option<Verification>,
    /// The name standing for the typed text (`payload.input.variable`; `targets.rs`).
    pub(super) variable: Option<String>,
    /// Where the text went (`payload.target`; `targets.rs`).
    pub(super) locator: Option<Locator>,
    /// The field typing started in, as the page agent reported it (`None`: no report).
    pub(super) field: Option<FieldFacts>,
    /// The group of short steps this one continues (`groups.rs`), while it is typed.
    pub(super) group: Option<Group>,
    /// Non-whitespace characters typed.
    solid: usize,
    /// The agent tool calls that could have typed it, tagged at its first key: its step is
    /// linked to them (`TrafficReader::step`).
    pub(super) calls: Option<BurstCalls>,
}

impl Burst {
    #[cfg(test)]
    pub(crate) fn new(
        seq: u64,
        at: SystemTime,
        target: Option<SafeJson>,
        target_id: Option<String>,
        echo: TypedEcho,
    ) -> Burst {
        Burst::of_kind(
            seq,
            at,
            target,
            target_id,
            FieldKind::Input(InputType::Unknown),
            echo,
        )
    }

    pub(crate) fn of_kind(
        seq: u64,
        at: SystemTime,
        target: Option<SafeJson>,
        target_id: Option<String>,
        kind: FieldKind,
        echo: TypedEcho,
    ) -> Burst {
        Burst {
            seq,
            started: at,
            last: at,
            answered_at: at,
            summary: InputSummary::of("", kind.input_type()),
            kind,
            typed: String::new(),
            echo,
            segments: std::collections::VecDeque::new(),
            emptied: false,
            cut: false,
            attribute: false,
            commands: 0,
            outstanding: 0,
            error: None,
            target,
            target_id,
            page: None,
            verification: None,
            variable: None,
            locator: None,
            field: None,
            group: None,
            solid: 0,
            calls: None,
        }
    }

    /// Another client may have emptied the field (`end_typing`): what is typed next also gets
    /// an echo segment of its own.
    pub(crate) fn may_be_emptied(&mut self) {
        self.emptied = true;
    }

    /// Starts the segment [`Burst::may_be_emptied`] asked for, with `echo` (call before
    /// [`Burst::add`]).
    pub(crate) fn restart_echo(&mut self, echo: impl FnOnce() -> TypedEcho) {
        if !std::mem::take(&mut self.emptied) {
            return;
        }
        if self.segments.len() >= MAX_SEGMENTS {
            self.segments.pop_front();
        }
        self.segments.push_back(echo());
    }

    pub(crate) fn add(&mut self, text: &str, attribute: bool, at: SystemTime) {
        self.summary.extend(text);
        // Protected from now on: the page may echo it before the burst ends.
        self.echo.extend(text);
        if let Some(group) = &mut self.group {
            group.echo.extend(groups::short_part(text, self.solid));
        }
        self.solid += groups::solid(text);
        for segment in &mut self.segments {
            segment.extend(text);
        }
        if self.typed.len() + text.len() <= MAX_KEPT_BYTES {
            self.typed.push_str(text);
        } else {
            self.cut = true;
        }
        self.attribute |= attribute;
        self.commands += 1;
        self.outstanding += 1;
        self.last = at;
    }

    /// The browser answered one of the burst's commands at `at`; the page model hears of it
    /// (the quiet after typing also counts from the answer).
    pub(crate) fn answered(&mut self, pages: &Pages, error: Option<SafeText>, at: SystemTime) {
        self.outstanding = self.outstanding.saturating_sub(1);
        self.answered_at = at;
        if self.error.is_none() {
            self.error = error;
        }
        if let Some(page) = &self.page {
            pages.typing_answered(page, self.seq, at);
        }
    }

    /// Fewer characters than a literal needs to be protected on its own, all typed and kept:
    /// a step of a group (`groups.rs`).
    pub(super) fn short(&self) -> bool {
        self.solid < cdp_sanitize::MIN_TYPED_CHARS && !self.cut && !self.attribute
    }

    /// The field turned out to be `kind` (the page agent read it where the burst landed).
    pub(super) fn retype(&mut self, kind: FieldKind) {
        self.kind = kind;
        self.summary = retyped(&self.summary, kind.input_type());
    }

    pub(super) fn into_record(
        self,
        sanitizer: &Sanitizer,
        at: SystemTime,
        interrupted: Option<&str>,
    ) -> Record {
        let mut action = Action::new(ActionMethod::Type);
        action.input = Some(match &self.variable {
            Some(name) => self.summary.with_variable(name),
            None => self.summary,
        });
        action.target = self.locator;
        let mut detail = serde_json::json!({ "commands": self.commands });
        match self.kind {
            FieldKind::Marked => detail["field"] = "marked sensitive by the page".into(),
            FieldKind::Unreadable => {
                detail["field"] = "inside a frame the relay cannot read".into()
            }
            FieldKind::NotEditable => detail["field"] = "no editable field had focus".into(),
            FieldKind::Input(_) => {}
        }
        action.detail = Some(sanitizer.json(&detail));
        action.verification = self.verification;
        let ended = self.answered_at.max(self.last);
        let (status, error) = match (interrupted, self.error) {
            (_, Some(e)) => (Status::Error, Some(e)),
            (Some(why), None) => (Status::Interrupted, Some(sanitizer.error(why))),
            (None, None) => (Status::Ok, None),
        };
        let end = if interrupted.is_some() { at } else { ended };
        let mut r = Record::new(SafeText::literal(TOOL), RecordKind::Action(action))
            .started_at(self.started)
            .duration(end.duration_since(self.started).unwrap_or_default())
            .status(status);
        if let Some(e) = error {
            r = r.error(e);
        }
        if let Some(t) = self.target {
            r = r.target(t);
        }
        r
    }

    /// Number of commands in the burst.
    #[cfg(test)]
    pub(crate) fn commands(&self) -> u64 {
        self.commands
    }
}

/// `summary` with another input type, same count. (`InputSummary` has no setter: it is rebuilt by
/// counting, from text that is not the typed text.)
fn retyped(summary: &InputSummary, input_type: InputType) -> InputSummary {
    const BLANKS: &str = "                                                                ";
    let mut out = InputSummary::of("", input_type);
    let mut left = summary.chars();
    while left > 0 {
        let n = left.min(BLANKS.len() as u64);
        out.extend(&BLANKS[..n as usize]);
        left -= n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_counts_characters_only() {
        let t0 = SystemTime::UNIX_EPOCH;
        let s = Sanitizer::new();
        let mut b = Burst::new(1, t0, None, None, s.typed_echo());
        b.add("hé", false, t0);
        b.add("llo", false, t0);
        assert_eq!(b.commands(), 2);
        let r = b.into_record(&s, t0, None);
        let RecordKind::Action(action) = r.kind() else {
            panic!("a typing step is an action");
        };
        let input = action.input.as_ref().expect("input summary");
        assert_eq!(input.chars(), 5);
        assert_eq!(input.input_type(), InputType::Unknown);
    }

    #[test]
    fn retyping_keeps_the_count() {
        let s = InputSummary::of(&"x".repeat(150), InputType::Unknown);
        let r = retyped(&s, InputType::Email);
        assert_eq!((r.chars(), r.input_type()), (150, InputType::Email));
    }
}
