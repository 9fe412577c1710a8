//! Typing bursts: consecutive keystrokes and insertions on one session, recorded as one step
//! with the length only. The typed text never leaves memory: from the first keystroke it is
//! registered with the run's sanitizer (a growing `${TYPED_n}`), so a page echoing it — even
//! partially, while typing goes on — is masked.

use super::{Key, Observer, TOOL};
use crate::pipeline::Trigger;
use cdp_evidence::{Action, Record, RecordKind, Status};
use cdp_sanitize::{InputSummary, InputType, SafeJson, SafeText, Sanitizer, TypedEcho};
use std::time::SystemTime;

/// Consecutive keystrokes and insertions on one session, reported as one typing step.
pub(crate) struct Burst {
    pub(crate) seq: u64,
    started: SystemTime,
    pub(crate) last: SystemTime,
    answered_at: SystemTime,
    summary: InputSummary,
    /// Echo protection of what this burst typed, extended at every keystroke.
    echo: TypedEcho,
    commands: u64,
    pub(crate) outstanding: usize,
    error: Option<SafeText>,
    target: Option<SafeJson>,
    target_id: Option<String>,
}

impl Burst {
    pub(crate) fn new(
        seq: u64,
        at: SystemTime,
        target: Option<SafeJson>,
        target_id: Option<String>,
        echo: TypedEcho,
    ) -> Burst {
        Burst {
            seq,
            started: at,
            last: at,
            answered_at: at,
            summary: InputSummary::of("", InputType::Unknown),
            echo,
            commands: 0,
            outstanding: 0,
            error: None,
            target,
            target_id,
        }
    }

    pub(crate) fn add(&mut self, text: &str, at: SystemTime) {
        self.summary.extend(text);
        // Protected from now on: the page may echo it before the burst ends.
        self.echo.extend(text);
        self.commands += 1;
        self.outstanding += 1;
        self.last = at;
    }

    pub(crate) fn answered(&mut self, error: Option<SafeText>, at: SystemTime) {
        self.outstanding = self.outstanding.saturating_sub(1);
        self.answered_at = at;
        if self.error.is_none() {
            self.error = error;
        }
    }

    fn into_record(
        self,
        sanitizer: &Sanitizer,
        at: SystemTime,
        interrupted: Option<&str>,
    ) -> Record {
        let mut action = Action::new(SafeText::literal("type"));
        action.input = Some(self.summary);
        action.detail = Some(sanitizer.json(&serde_json::json!({ "commands": self.commands })));
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

impl Observer {
    /// Adds typed text to the session's burst and returns the burst's number.
    pub(super) fn add_typing(&mut self, conn: u64, key: &Key, text: &str, at: SystemTime) -> u64 {
        let typed = self.typing_key(conn, key);
        self.capture.typed_into(&typed);
        let next = self.next_burst;
        let target = self.target_for(conn, key);
        let target_id = self.raw_target(conn, key);
        let Some(session) = self
            .conns
            .get_mut(&conn)
            .and_then(|c| c.sessions.get_mut(key))
        else {
            return 0;
        };
        let burst = session.typing.get_or_insert_with(|| {
            Burst::new(next, at, target, target_id, self.sanitizer.typed_echo())
        });
        if burst.seq == next {
            self.next_burst += 1;
        }
        burst.add(text, at);
        burst.seq
    }

    /// Ends the session's burst if the gap since its last key is long enough.
    pub(super) fn close_stale_typing(&mut self, conn: u64, key: &Key, at: SystemTime) {
        let gap = self.opts.typing_gap;
        let stale = self
            .conns
            .get(&conn)
            .and_then(|c| c.sessions.get(key))
            .and_then(|s| s.typing.as_ref())
            .is_some_and(|b| at.duration_since(b.last).unwrap_or_default() > gap);
        if stale {
            self.end_typing(conn, key, at);
        }
    }

    /// Ends the session's burst: emits it now or, if keystrokes are still unanswered, when their
    /// responses arrive.
    pub(super) fn end_typing(&mut self, conn: u64, key: &Key, at: SystemTime) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let Some(burst) = c.sessions.get_mut(key).and_then(|s| s.typing.take()) else {
            return;
        };
        if burst.outstanding == 0 {
            self.emit_burst(burst, at, None);
        } else {
            c.closing.insert(burst.seq, burst);
        }
    }

    pub(super) fn typing_answered(
        &mut self,
        conn: u64,
        seq: u64,
        error: Option<SafeText>,
        at: SystemTime,
    ) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if let Some(b) = c
            .sessions
            .values_mut()
            .filter_map(|s| s.typing.as_mut())
            .find(|b| b.seq == seq)
        {
            b.answered(error, at);
            return;
        }
        let done = match c.closing.get_mut(&seq) {
            Some(b) => {
                b.answered(error, at);
                b.outstanding == 0
            }
            None => false,
        };
        if done {
            if let Some(b) = c.closing.remove(&seq) {
                self.emit_burst(b, at, None);
            }
        }
    }

    pub(super) fn emit_burst(&mut self, burst: Burst, at: SystemTime, interrupted: Option<&str>) {
        let target_id = burst.target_id.clone();
        let record = burst.into_record(&self.sanitizer, at, interrupted);
        self.emit(record);
        self.out
            .triggers
            .push(Trigger::TypingEnded { target_id, at });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_counts_characters_only() {
        let t0 = SystemTime::UNIX_EPOCH;
        let s = Sanitizer::new();
        let mut b = Burst::new(1, t0, None, None, s.typed_echo());
        b.add("hé", t0);
        b.add("llo", t0);
        assert_eq!(b.commands(), 2);
        let r = b.into_record(&s, t0, None);
        let RecordKind::Action(action) = r.kind() else {
            panic!("a typing step is an action");
        };
        let input = action.input.as_ref().expect("input summary");
        assert_eq!(input.chars(), 5);
        assert_eq!(input.input_type(), InputType::Unknown);
    }
}
