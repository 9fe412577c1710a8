//! Typing bursts: consecutive keystrokes and insertions on one session, recorded as one step
//! with the length and the input type only. The typed text never leaves memory: from the first
//! keystroke it is registered with the run's sanitizer (a growing `${TYPED_n}`, so a page echoing
//! it — even partially, while typing goes on — is masked), and when the direct reader runs it
//! is handed over (in memory) for verification in the page it was typed into. A step waiting for
//! its verdict is held here, bounded in time.

use super::burst::Burst;
use super::commands::Reach;
use super::correlate::Waiting;
use super::sessions::Session;
use super::typed::{How, Typing};
use super::{Key, TrafficReader};
use crate::direct::verify::{self, Literal, VerifyReply, VerifyRequest};
use crate::pages::veto::FieldKind;
use cdp_sanitize::{InputType, SafeText};
use std::time::{Duration, SystemTime};

/// Typing steps waiting for a verdict at once; past it, steps are written without one.
const MAX_HELD: usize = 1024;

/// A typing step waiting for its verdict.
pub(crate) struct Held {
    burst: Burst,
    at: SystemTime,
    deadline: SystemTime,
    /// The text, kept (memory only) when it was not sent because the field was taken for a
    /// sensitive one: sent if the page agent says it was not.
    kept: Option<String>,
}

/// The way to the direct reader's verification, when it runs.
pub(crate) struct Verifier {
    pub(crate) requests: tokio::sync::mpsc::Sender<VerifyRequest>,
    pub(crate) replies: tokio::sync::mpsc::Receiver<VerifyReply>,
    /// How long a typing step waits for its verdict before it is written without one.
    pub(crate) wait: Duration,
}

impl TrafficReader {
    /// A client command that types (`typed.rs` read it): its text joins the burst of the
    /// session it went to, registered with the sanitizer before anything else is handled, and
    /// the command waits for its response. Text that duplicate keys or other nested messages
    /// could also have meant is registered as well, not counted.
    pub(super) fn typing_command(&mut self, conn: u64, typing: Typing, at: SystemTime) {
        let mut texts = typing.texts.into_iter();
        let Some(first) = texts.next() else {
            return;
        };
        for other in texts {
            self.sanitizer.register_typed(&other.text);
        }
        let key = self.keys.key(first.session.as_deref());
        if first.how == How::Composition {
            // Each update repeats the whole composition so far; it is committed by an
            // insertion, which is what is counted.
            self.sanitizer.register_typed(&first.text);
            return;
        }
        self.close_stale_typing(conn, &key, at);
        let seq = self.add_typing(conn, &key, &first.text, first.how == How::Set, at);
        let answered_by = self.keys.key(typing.session.as_deref());
        if let Some(id) = typing.id {
            self.expect(conn, (answered_by, id), at, Waiting::Typing { seq });
        }
    }

    /// Adds typed text to the session's burst and returns the burst's number (0 when it could
    /// join none: the text is registered all the same).
    pub(super) fn add_typing(
        &mut self,
        conn: u64,
        key: &Key,
        text: &str,
        attribute: bool,
        at: SystemTime,
    ) -> u64 {
        let max = self.opts.max_pending;
        let known = match self.conns.get_mut(&conn) {
            Some(c) if c.sessions.contains_key(key) => true,
            // A session the observer did not see attach (or a non-flat one): typing into it
            // is typing all the same.
            Some(c) if c.sessions.len() < max => {
                c.sessions.insert(key.clone(), Session::new(None));
                true
            }
            _ => false,
        };
        if !known {
            self.dropped += 1;
            self.sanitizer.register_typed(text);
            return 0;
        }
        let typed = self.typing_key(conn, key);
        let next = self.next_burst;
        let kind = self
            .pages
            .focused_kind_at(&typed, at)
            .unwrap_or(FieldKind::Input(InputType::Unknown));
        let target = self.target_for(conn, key);
        let target_id = self.raw_target(conn, key);
        let Some(session) = self
            .conns
            .get_mut(&conn)
            .and_then(|c| c.sessions.get_mut(key))
        else {
            self.sanitizer.register_typed(text);
            return 0;
        };
        if session.typing.is_none() && !listed(&self.typing_in, conn, key) {
            self.typing_in.push((conn, key.clone()));
        }
        let burst = session.typing.get_or_insert_with(|| {
            let mut b = Burst::of_kind(
                next,
                at,
                target,
                target_id,
                kind,
                self.sanitizer.typed_echo(),
            );
            // Its first key: the agent tool calls that could have typed it (per call, so a
            // call knows its own typing, not the process's).
            b.calls = self
                .calls
                .as_ref()
                .filter(|c| c.used())
                .and_then(|c| c.burst_began(at, handle_of(b.target.as_ref())));
            b
        });
        if burst.seq == next {
            self.next_burst += 1;
            // A short step may continue a group of them: what it types grows their literal.
            let pages = &self.pages;
            burst.field = pages.focused_field(&typed, at);
            burst.group = self.groups.join(&typed, burst.field, at, |since| {
                pages.navigated_since(&typed, since)
            });
        } else if let Some(calls) = self.calls.as_ref().filter(|c| c.used()) {
            calls.typed(at, handle_of(burst.target.as_ref()));
        }
        burst.restart_echo(|| self.sanitizer.typed_echo());
        burst.add(text, attribute, at);
        burst.page.get_or_insert_with(|| typed.clone());
        self.pages.typed_into(&typed, burst.seq, burst.kind, at);
        burst.seq
    }

    /// Ends the session's burst if the gap since its last key is long enough.
    pub(super) fn close_stale_typing(&mut self, conn: u64, key: &Key, at: SystemTime) {
        // Every open burst's place is listed: most commands need no table lookup.
        if !listed(&self.typing_in, conn, key) {
            return;
        }
        let gap = self.opts.typing_gap;
        let stale = self
            .conns
            .get(&conn)
            .and_then(|c| c.sessions.get(key))
            .and_then(|s| s.typing.as_ref())
            .is_some_and(|b| at.duration_since(b.last).unwrap_or_default() > gap);
        if stale {
            self.end_burst(conn, key, at);
        }
    }

    /// A command other than typing went to (connection, session), reaching as far as `reach`
    /// says. Its burst ends, and so does every burst the same client (connection) types into
    /// the same page through another session (a non-flat one): the command may have changed
    /// the field (emptied it, focused another), so what is typed next does not continue what
    /// was typed, and a burst's echo protection holds for continuations only. Another
    /// client's bursts on the page end only for what acts on the page as a user would; its
    /// reads do not split them (DevTools reads the page after every keystroke: a password
    /// became up to 8 steps), and an evaluation, which may have emptied the field, starts a
    /// fresh echo segment in them.
    pub(super) fn end_typing(&mut self, conn: u64, key: &Key, at: SystemTime, reach: Reach) {
        // No burst is open anywhere: the common case costs no lookup.
        if self.typing_in.is_empty() || reach == Reach::Nothing {
            return;
        }
        self.end_burst(conn, key, at);
        let Some(page) = self.raw_target(conn, key) else {
            return;
        };
        for (c, k) in self.open_bursts(|_| true) {
            if self.raw_target(c, &k).as_deref() != Some(page.as_str()) {
                continue;
            }
            if c == conn || reach == Reach::Page {
                self.end_burst(c, &k, at);
            } else if reach == Reach::Script {
                if let Some(b) = self
                    .conns
                    .get_mut(&c)
                    .and_then(|state| state.sessions.get_mut(&k))
                    .and_then(|s| s.typing.as_mut())
                {
                    b.may_be_emptied();
                }
            }
        }
    }

    /// The (connection, session) of every open burst that `pick` chooses; forgets the places
    /// whose burst has ended.
    fn open_bursts(&mut self, mut pick: impl FnMut(&Burst) -> bool) -> Vec<(u64, Key)> {
        let conns = &self.conns;
        let burst = |c: &u64, k: &Key| {
            conns
                .get(c)
                .and_then(|state| state.sessions.get(k))
                .and_then(|s| s.typing.as_ref())
        };
        self.typing_in.retain(|(c, k)| burst(c, k).is_some());
        self.typing_in
            .iter()
            .filter(|(c, k)| burst(c, k).is_some_and(&mut pick))
            .cloned()
            .collect()
    }

    /// Ends the session's burst: emits it now or, if keystrokes are still unanswered, when their
    /// responses arrive.
    fn end_burst(&mut self, conn: u64, key: &Key, at: SystemTime) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let Some(mut burst) = c.sessions.get_mut(key).and_then(|s| s.typing.take()) else {
            return;
        };
        if let Some(page) = burst.page.clone() {
            self.groups.ended(&page, &mut burst, &self.sanitizer);
        }
        let Some(c) = self.conns.get_mut(&conn) else {
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
            b.answered(&self.pages, error, at);
            return;
        }
        let done = match c.closing.get_mut(&seq) {
            Some(b) => {
                b.answered(&self.pages, error, at);
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

    /// The focus report a burst is typed by travels on the direct reader's own connection and
    /// can be registered after the burst's first keystroke: asked again when the burst ends, it
    /// may name the field. An unidentified burst takes what it says; an identified one only ever
    /// becomes more sensitive (the reading after the burst has the last word on the type).
    fn refine_kind(&self, burst: &mut Burst) {
        let Some(page) = burst.page.as_deref() else {
            return;
        };
        let Some(kind) = self.pages.focused_kind_at(page, burst.started) else {
            return;
        };
        let more_sensitive = kind.is_sensitive() && !burst.kind.is_sensitive();
        if kind != burst.kind && (burst.kind.is_unidentified() || more_sensitive) {
            self.pages.burst_kind(page, burst.seq, kind);
            burst.retype(kind);
        }
    }

    pub(super) fn emit_burst(
        &mut self,
        mut burst: Burst,
        at: SystemTime,
        interrupted: Option<&str>,
    ) {
        self.refine_kind(&mut burst);
        self.name_input(&mut burst);
        let target_id = burst.target_id.clone();
        if interrupted.is_none() && burst.error.is_none() {
            if let Some(v) = self.verifier.as_ref() {
                // A field taken for a sensitive one is still asked about (its kind may be a
                // stale report), but by length only: a credential is never sent back.
                let local = if burst.attribute {
                    Some(verify::attribute(burst.summary.chars()))
                } else if burst.cut {
                    Some(verify::too_long(burst.summary.chars()))
                } else {
                    None
                };
                if let Some(verdict) = local {
                    burst.verification = Some(verdict);
                } else if self.held.len() >= MAX_HELD {
                    burst.verification = Some(verify::unread(
                        burst.summary.chars(),
                        "too many typing steps were waiting for a reading",
                    ));
                } else if let Some(target_id) = target_id {
                    let typed = std::mem::take(&mut burst.typed);
                    let (literal, kept) = if burst.kind.is_sensitive() {
                        (None, Some(typed))
                    } else {
                        (Some(Literal::new(typed)), None)
                    };
                    let request = VerifyRequest {
                        burst: burst.seq,
                        target_id,
                        literal,
                        chars: burst.summary.chars(),
                        started_at: burst.started,
                        ended_at: burst.answered_at.max(burst.last),
                        attempts: 0,
                    };
                    match v.requests.try_send(request) {
                        Ok(()) => {
                            let deadline = at + v.wait;
                            self.held.insert(
                                burst.seq,
                                Held {
                                    burst,
                                    at,
                                    deadline,
                                    kept,
                                },
                            );
                            return;
                        }
                        Err(_) => {
                            burst.verification = Some(verify::unread(
                                burst.summary.chars(),
                                "the verifier was busy",
                            ))
                        }
                    }
                } else {
                    burst.verification = Some(verify::unread(
                        burst.summary.chars(),
                        "the page typed into is not known",
                    ));
                }
            }
        }
        self.step(burst, at, interrupted);
    }

    /// Writes the burst's step, linked to the calls that could have typed it.
    fn step(&mut self, mut burst: Burst, at: SystemTime, interrupted: Option<&str>) {
        let calls = burst.calls.take();
        let mut record = self.typing_record(burst, at, interrupted);
        if let Some(calls) = calls {
            calls.step(&mut record);
        }
        self.emit(record);
    }

    /// Typing steps waiting for a verdict, and clicks for their target.
    pub fn holding(&self) -> usize {
        self.held.len() + self.targets.holding()
    }

    /// Whether [`TrafficReader::tick`] has work due later: a burst to end, a step waiting for
    /// its verdict.
    pub(crate) fn ticking(&self) -> bool {
        !self.typing_in.is_empty() || !self.held.is_empty() || self.targets.holding() > 0
    }

    /// Ends every burst whose gap has passed by `now` (`all`: every burst), so its step — and
    /// its verdict — does not wait for the next keystroke.
    fn close_bursts(&mut self, now: SystemTime, all: bool) {
        let gap = self.opts.typing_gap;
        let open =
            self.open_bursts(|b| all || now.duration_since(b.last).unwrap_or_default() > gap);
        for (conn, key) in open {
            self.end_burst(conn, &key, now);
        }
    }

    /// Agent tool call `call` was answered: the open bursts it typed end now, so their verdicts
    /// are asked for at once rather than after the typing gap. Other clients' bursts, and other
    /// calls', go on. Without a call, every open burst ends.
    pub(super) fn typing_over(&mut self, at: SystemTime, call: Option<&str>) {
        let open = self.open_bursts(|b| match call {
            Some(call) => b.calls.as_ref().is_some_and(|c| c.has(call)),
            None => true,
        });
        for (conn, key) in open {
            self.end_burst(conn, &key, at);
        }
    }

    /// Ends every open burst (the pipeline is stopping): their verdicts are asked for now.
    pub fn finish_typing(&mut self, at: SystemTime) {
        self.close_bursts(at, true);
    }

    /// Ends bursts whose gap has passed, takes the verdicts that arrived and writes the steps
    /// whose wait is over.
    pub fn tick(&mut self, now: SystemTime) {
        self.close_bursts(now, false);
        let mut replies = Vec::new();
        if let Some(v) = self.verifier.as_mut() {
            while let Ok(reply) = v.replies.try_recv() {
                replies.push(reply);
            }
        }
        // Where steps went first: a verdict's step takes its target when it is written.
        let mut verdicts = Vec::with_capacity(replies.len());
        for reply in replies {
            match reply {
                VerifyReply::Verdict(v) => verdicts.push(v),
                VerifyReply::Located(l) => self.located(l),
            }
        }
        self.release_held(now, false);
        for reply in verdicts {
            let Some(mut held) = self.held.remove(&reply.burst) else {
                continue;
            };
            let not_sensitive = reply.kind.is_some_and(|k| !k.is_sensitive());
            if reply.needs_literal && not_sensitive {
                if let (Some(text), Some(v), Some(target_id)) = (
                    held.kept.take(),
                    self.verifier.as_ref(),
                    held.burst.target_id.clone(),
                ) {
                    // Taken for a sensitive field by a stale report: ask again, with the text.
                    let request = VerifyRequest {
                        burst: held.burst.seq,
                        target_id,
                        literal: Some(Literal::new(text)),
                        chars: held.burst.summary.chars(),
                        started_at: held.burst.started,
                        ended_at: held.burst.answered_at.max(held.burst.last),
                        attempts: 0,
                    };
                    if v.requests.try_send(request).is_ok() {
                        held.deadline = now + v.wait;
                        self.held.insert(reply.burst, held);
                        continue;
                    }
                }
            }
            if let Some(kind) = reply.kind {
                held.burst.retype(kind);
                if let Some(page) = held.burst.target_id.clone() {
                    self.pages.burst_kind(&page, held.burst.seq, kind);
                }
            }
            held.burst.verification = Some(reply.verification);
            self.step(held.burst, held.at, None);
        }
        let overdue: Vec<u64> = self
            .held
            .iter()
            .filter(|(_, h)| now >= h.deadline)
            .map(|(seq, _)| *seq)
            .collect();
        for seq in overdue {
            self.release(seq, "no reading arrived in time");
        }
    }

    /// Writes every held step without waiting longer (the pipeline stops).
    pub(super) fn release_all(&mut self) {
        self.release_held(SystemTime::now(), true);
        let all: Vec<u64> = self.held.keys().copied().collect();
        for seq in all {
            self.release(seq, "the relay stopped before the reading");
        }
    }

    fn release(&mut self, seq: u64, why: &'static str) {
        if let Some(mut held) = self.held.remove(&seq) {
            held.burst.verification = Some(verify::unread(held.burst.summary.chars(), why));
            self.step(held.burst, held.at, None);
        }
    }
}

/// The page handle a record of `target` names.
pub(super) fn handle_of(target: Option<&cdp_sanitize::SafeJson>) -> Option<&str> {
    target?.as_value().get("targetId")?.as_str()
}

/// Whether (connection, session) is among the places a burst may be open.
fn listed(places: &[(u64, Key)], conn: u64, key: &Key) -> bool {
    places.iter().any(|(c, k)| *c == conn && k == key)
}
