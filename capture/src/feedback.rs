//! What the evidence learned about one agent tool call, while the run goes on: the typing steps
//! linked to it with their verdicts, and the failures (requests, console errors) that happened
//! during it. A producer of tool calls (the MCP gateway) reads it when the call is answered and
//! tells the agent, so a `fill` that did not land is not reported as a silent success.
//!
//! Everything here is a copy of a record that is already sanitized; nothing is kept beyond what
//! the journal keeps. Per call it is bounded ([`MAX_TYPING`], [`MAX_FAILURES`], the rest counted),
//! and it lives as long as the call is remembered for linking (`calls.rs`).
//!
//! [`TypingProgress`] says when the typing a call caused has reached the run writer: the
//! traffic reader counts the bursts it opens and the typing steps it hands over, so a waiter
//! knows when every step begun before a moment is written — with its verdict, or without one
//! once the verdict's own wait is over.

use cdp_evidence::{ActionMethod, Record, RecordKind};
use std::sync::atomic::{AtomicU64, Ordering};

/// Typing steps kept per call; beyond, counted.
pub const MAX_TYPING: usize = 16;
/// Failures kept per call; beyond, counted.
pub const MAX_FAILURES: usize = 5;

/// A record linked to a call.
#[derive(Clone, Debug)]
pub struct Linked {
    /// The record (sanitized, as written or about to be).
    pub record: Record,
    /// Another call in flight could have caused it too (`toolCallCandidates`).
    pub shared: bool,
}

/// What is known of one call so far.
#[derive(Clone, Debug, Default)]
pub struct CallFacts {
    /// Its typing steps, in the order they were written.
    pub typing: Vec<Linked>,
    /// Failed requests and console errors during it, in the order they were seen.
    pub failures: Vec<Linked>,
    /// Typing steps beyond [`MAX_TYPING`].
    pub more_typing: usize,
    /// Failures beyond [`MAX_FAILURES`].
    pub more_failures: usize,
}

impl CallFacts {
    /// Nothing to tell.
    pub fn is_empty(&self) -> bool {
        self.typing.is_empty()
            && self.failures.is_empty()
            && self.more_typing == 0
            && self.more_failures == 0
    }

    pub(crate) fn add_typing(&mut self, record: &Record, shared: bool) {
        if self.typing.len() < MAX_TYPING {
            self.typing.push(Linked {
                record: record.clone(),
                shared,
            });
        } else {
            self.more_typing += 1;
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

/// How far the traffic reader's typing has got: bursts opened, typing steps handed to the run
/// writer. Both only grow.
#[derive(Debug, Default)]
pub struct TypingProgress {
    started: AtomicU64,
    written: AtomicU64,
    changed: tokio::sync::Notify,
}

impl TypingProgress {
    /// A typing burst opened (its step will be written once it ends and has its verdict).
    pub(crate) fn opened(&self) {
        self.started.fetch_add(1, Ordering::Release);
    }

    /// `total` typing steps have been handed to the run writer so far.
    pub(crate) fn written_up_to(&self, total: u64) {
        if self.written.swap(total, Ordering::AcqRel) != total {
            self.changed.notify_waiters();
        }
    }

    /// Bursts opened so far.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Acquire)
    }

    /// Typing steps handed to the run writer so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// Waits until the steps of the first `started` bursts are with the run writer, or
    /// `deadline`; true when they are. A burst that ended with no step of its own (typing
    /// merged into another) leaves the count short: the deadline bounds that.
    pub async fn written_by(&self, started: u64, deadline: tokio::time::Instant) -> bool {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.written() >= started {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.written() >= started;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdp_evidence::{Action, Console, ConsoleLevel};
    use cdp_sanitize::SafeText;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn facts_keep_a_handful_and_count_the_rest() {
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
        let typing = Record::new(
            SafeText::literal("cdp"),
            RecordKind::Action(Action::new(SafeText::literal("type"))),
        );
        assert!(is_typing(&typing) && !is_typing(&failure));
        facts.add_typing(&typing, true);
        assert!(facts.typing[0].shared);
        assert!(!facts.is_empty());
    }

    #[tokio::test]
    async fn a_waiter_wakes_when_the_steps_begun_before_it_are_written() {
        let p = Arc::new(TypingProgress::default());
        p.opened();
        p.opened();
        let target = p.started();
        let soon = tokio::time::Instant::now() + Duration::from_millis(50);
        assert!(!p.written_by(target, soon).await, "nothing written yet");
        let waiter = {
            let p = p.clone();
            tokio::spawn(async move {
                let later = tokio::time::Instant::now() + Duration::from_secs(60);
                p.written_by(target, later).await
            })
        };
        p.written_up_to(1);
        p.opened(); // begun after the waiter looked: not waited for
        p.written_up_to(2);
        assert!(waiter.await.expect("the waiter"));
    }
}
