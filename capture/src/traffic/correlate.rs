//! Commands and their responses: classification of client commands, correlation by
//! (connection, `sessionId`, `id`) with an id-only fallback for error replies that carry no
//! `sessionId`, and interruption of commands left unanswered (close, detach, timeout).

use super::commands::{self, Command, Reach};
use super::targets::Answered;
use super::{Key, TrafficReader, TOOL};
use crate::cdp::frame::Frame;
use crate::cdp::methods::CommandMethod;
use crate::cdp::params as cdp;
use crate::direct::locate::Moment;
use crate::pages::veto::{Commit, Withheld};
use crate::{cdp::IdMap, Emit, NewArtifact};
use cdp_evidence::{Action, ActionMethod, Record, RecordKind, Status};
use cdp_sanitize::{SafeJson, SafeText};
use std::time::{Duration, SystemTime};

/// Commands waiting for their response on one connection, by (session, id), with a count per id
/// so that "may a reply with this id be awaited" is one lookup: a scan of the table costs its
/// capacity, which a pipelined burst leaves large, on every reply after the burst.
#[derive(Default)]
pub(super) struct PendingTable {
    map: IdMap<(Key, u64), Pending>,
    ids: IdMap<u64, u32>,
}

impl PendingTable {
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    pub(super) fn insert(&mut self, key: (Key, u64), p: Pending) {
        let id = key.1;
        if self.map.insert(key, p).is_none() {
            *self.ids.entry(id).or_default() += 1;
        }
    }

    /// True when a command with this id waits, on any session.
    fn has_id(&self, id: u64) -> bool {
        self.ids.contains_key(&id)
    }

    fn remove(&mut self, key: &(Key, u64)) -> Option<Pending> {
        let p = self.map.remove(key)?;
        if let Some(n) = self.ids.get_mut(&key.1) {
            *n -= 1;
            if *n == 0 {
                self.ids.remove(&key.1);
            }
        }
        // Give back what a burst grew, so iteration stays proportional to what waits.
        if self.map.capacity() > 1024 && self.map.len() < self.map.capacity() / 8 {
            self.map.shrink_to(self.map.len() * 2);
            self.ids.shrink_to(self.ids.len() * 2);
        }
        Some(p)
    }

    /// The command with this id on whichever session (error replies may lack theirs).
    fn remove_any_session(&mut self, id: u64) -> Option<Pending> {
        if !self.has_id(id) {
            return None;
        }
        let key = self.map.keys().find(|(_, i)| *i == id).cloned()?;
        self.remove(&key)
    }

    /// Removes and returns every command `pred` selects.
    pub(super) fn take_where(
        &mut self,
        pred: impl Fn(&(Key, u64), &Pending) -> bool,
    ) -> Vec<Pending> {
        let keys: Vec<(Key, u64)> = self
            .map
            .iter()
            .filter(|(k, p)| pred(k, p))
            .map(|(k, _)| k.clone())
            .collect();
        keys.iter().filter_map(|k| self.remove(k)).collect()
    }
}

/// A command waiting for its response.
pub(super) struct Pending {
    pub(super) started: SystemTime,
    pub(super) what: Waiting,
}

pub(super) enum Waiting {
    /// Record `action` when the response arrives.
    Action {
        action: Action,
        target: Option<SafeJson>,
        /// A click (the relay's own observer takes a frame after it) or a navigation (its reply
        /// may name the fresh document the veto waits for).
        trigger: Option<StepKind>,
    },
    /// A screenshot: keep the image unless it is withheld.
    Screenshot {
        action: Action,
        target: Option<SafeJson>,
        ext: &'static str,
        withheld: Option<Withheld>,
    },
    /// One keystroke or insertion of typing burst `seq`.
    Typing { seq: u64 },
    /// A `Target.sendMessageToTarget` whose wrapped command waits under `inner`.
    Carrier { inner: (Key, u64) },
}

/// Steps after which a frame of the page is worth having.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StepKind {
    Click,
    Navigation,
    /// A file input's files set (`DOM.setFileInputFiles`): its record waits for the agent's
    /// report of the input, as a click's does.
    Files,
}

/// How often unanswered commands are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

impl TrafficReader {
    /// A client → browser message. Returns the (session, id) it now waits under, if any.
    pub(super) fn command(
        &mut self,
        conn: u64,
        frame: &Frame<'_>,
        at: SystemTime,
    ) -> Option<(Key, u64)> {
        let (Some(id), Some(method)) = (frame.id, frame.method()) else {
            return None;
        };
        let method = CommandMethod::parse(method)?;
        if method == CommandMethod::TargetSendMessageToTarget {
            return self.wrapped_command(conn, frame, at);
        }
        let cmd = commands::classify(method, frame, &self.sanitizer)?;
        let key = self.keys.key(frame.session());
        if let Some(calls) = self.calls.as_ref().filter(|c| c.used()) {
            // The tool calls that could have sent it act on its page from now, not only once
            // its record is written (a call's producer reads that when the call is answered).
            let target = self.target_for(conn, &key);
            calls.commanded(at, super::typing::handle_of(target.as_ref()));
        }
        self.close_stale_typing(conn, &key, at);
        let waiting = match cmd {
            Command::Action(action, reach) => {
                self.end_typing(conn, &key, at, reach);
                if matches!(reach, Reach::Page | Reach::Script) {
                    if let Some(page) = self.raw_target(conn, &key) {
                        let files = action.method == ActionMethod::DomSetFileInputFiles;
                        self.targets.acted(page, at, files);
                    }
                }
                let trigger = if action.method == ActionMethod::Click {
                    Some(StepKind::Click)
                } else if action.method == ActionMethod::DomSetFileInputFiles {
                    Some(StepKind::Files)
                } else {
                    None
                };
                let target = self.target_for(conn, &key);
                Waiting::Action {
                    action,
                    target,
                    trigger,
                }
            }
            Command::Navigate(action) => {
                // The command is no navigation yet: only the document it commits (its reply's
                // loader, or the page's events) may end what was typed before it.
                self.end_typing(conn, &key, at, Reach::Page);
                let target = self.target_for(conn, &key);
                Waiting::Action {
                    action,
                    target,
                    trigger: Some(StepKind::Navigation),
                }
            }
            Command::Screenshot { action, ext } => {
                self.end_typing(conn, &key, at, Reach::Client);
                let withheld = self
                    .pages
                    .verdict_at(&self.typing_key(conn, &key), at)
                    .err();
                let target = self.target_for(conn, &key);
                Waiting::Screenshot {
                    action,
                    target,
                    ext,
                    withheld,
                }
            }
        };
        self.expect(conn, (key.clone(), id), at, waiting)
            .then_some((key, id))
    }

    /// Waits for the response to command `id` on `conn`'s session `key`, sent `at`; false (and
    /// counted as dropped) when the connection is gone or waits for too many already.
    pub(super) fn expect(
        &mut self,
        conn: u64,
        (key, id): (Key, u64),
        at: SystemTime,
        what: Waiting,
    ) -> bool {
        let max = self.opts.max_pending;
        let Some(c) = self.conns.get_mut(&conn) else {
            return false;
        };
        if c.pending.len() >= max {
            self.dropped += 1;
            return false;
        }
        c.pending.insert((key, id), Pending { started: at, what });
        true
    }

    /// True when a response with this id may be awaited on `conn` (the cheap pre-filter).
    pub(super) fn may_await(&self, conn: u64, id: u64) -> bool {
        self.conns.get(&conn).is_some_and(|c| c.pending.has_id(id))
    }

    pub(super) fn response(&mut self, conn: u64, id: u64, frame: &Frame<'_>, at: SystemTime) {
        let key = self.keys.key(frame.session());
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let pending = match c.pending.remove(&(key.clone(), id)) {
            Some(p) => Some(p),
            // Some error replies lack the sessionId of their command: match on the id alone.
            None if key.is_none() => c.pending.remove_any_session(id),
            None => None,
        };
        let Some(p) = pending else {
            return;
        };
        self.answered(conn, &key, p, frame, at);
    }

    /// `p`, waiting under session `key`, is answered by `frame`.
    fn answered(&mut self, conn: u64, key: &Key, p: Pending, frame: &Frame<'_>, at: SystemTime) {
        let error = frame.error_message().map(|m| self.sanitizer.error(&m));
        let status = if error.is_some() {
            Status::Error
        } else {
            Status::Ok
        };
        let duration = at.duration_since(p.started).unwrap_or_default();
        match p.what {
            Waiting::Typing { seq } => self.typing_answered(conn, seq, error, at),
            Waiting::Carrier { inner } => {
                // Delivered: the page answers the wrapped command itself. Refused (no such
                // session): that refusal is the wrapped command's answer.
                if error.is_none() {
                    return;
                }
                let inner_p = self
                    .conns
                    .get_mut(&conn)
                    .and_then(|c| c.pending.remove(&inner));
                if let Some(inner_p) = inner_p {
                    self.answered(conn, &inner.0, inner_p, frame, at);
                }
            }
            Waiting::Action {
                action,
                target,
                trigger,
            } => {
                if trigger == Some(StepKind::Navigation)
                    && action.method == ActionMethod::PageNavigate
                {
                    if let Some(loader) = frame
                        .result::<cdp::Navigated>()
                        .as_ref()
                        .and_then(cdp::Navigated::fresh_loader)
                    {
                        // A fresh document committed; typing since the command went to the
                        // document it replaced, or stays withheld.
                        let typed = self.typing_key(conn, key);
                        self.pages
                            .committed(&typed, loader, Commit::NavigateReply, p.started);
                    }
                }
                if (trigger, status) == (Some(StepKind::Click), Status::Ok) {
                    if let Some(target) = self.raw_target(conn, key) {
                        self.pages.clicked(&target);
                    }
                }
                let moment = match trigger {
                    Some(StepKind::Click) => Some(Moment::Hit),
                    Some(StepKind::Files) => Some(Moment::Files),
                    Some(StepKind::Navigation) | None => None,
                };
                if let Some(moment) = moment {
                    // Its record waits for the page agent's report of what it acted on.
                    let step = Answered {
                        action,
                        started: p.started,
                        duration,
                        status,
                        error,
                        target,
                        at,
                    };
                    return self.held_answered(conn, key, moment, step);
                }
                let r = action_record(action, p.started, duration, status, error, target);
                self.emit(r);
            }
            Waiting::Screenshot {
                mut action,
                target,
                ext,
                withheld,
            } => {
                let bytes = match error {
                    None => self.screenshot_bytes(&mut action, frame, withheld),
                    Some(_) => None,
                };
                let record = action_record(action, p.started, duration, status, error, target);
                match bytes {
                    Some(bytes) => self.out.emits.push(Emit::WithArtifact {
                        record,
                        artifact: NewArtifact {
                            stem: "screenshot",
                            ext,
                            bytes,
                        },
                    }),
                    None => self.emit(record),
                }
            }
        }
    }

    /// Interrupts commands older than the timeout. Runs at most every [`SWEEP_EVERY`] of frame
    /// time.
    pub(super) fn sweep(&mut self, now: SystemTime) {
        let due = self
            .last_sweep
            .is_none_or(|last| now.duration_since(last).unwrap_or_default() >= SWEEP_EVERY);
        if !due {
            return;
        }
        self.last_sweep = Some(now);
        let timeout = self.opts.pending_timeout;
        let mut expired = Vec::new();
        for c in self.conns.values_mut() {
            expired.extend(
                c.pending.take_where(|_, p| {
                    now.duration_since(p.started).unwrap_or_default() >= timeout
                }),
            );
        }
        for p in expired {
            self.interrupt(
                p,
                now,
                "no response from the browser within the pending timeout",
            );
        }
    }

    /// Interrupts a pending command (close, detach, timeout). Typing keystrokes are not
    /// recorded one by one: their burst is flushed (as interrupted) by the caller.
    pub(super) fn interrupt(&mut self, p: Pending, at: SystemTime, why: &'static str) {
        let (action, target) = match p.what {
            Waiting::Action { action, target, .. } | Waiting::Screenshot { action, target, .. } => {
                (action, target)
            }
            // The keystroke's burst, or the wrapped command, says it.
            Waiting::Typing { .. } | Waiting::Carrier { .. } => return,
        };
        let duration = at.duration_since(p.started).unwrap_or_default();
        let r = action_record(
            action,
            p.started,
            duration,
            Status::Interrupted,
            Some(SafeText::literal(why)),
            target,
        );
        self.emit(r);
    }
}

/// An action record with its outcome.
pub(super) fn action_record(
    action: Action,
    started: SystemTime,
    duration: Duration,
    status: Status,
    error: Option<SafeText>,
    target: Option<SafeJson>,
) -> Record {
    let mut r = Record::new(SafeText::literal(TOOL), RecordKind::Action(action))
        .started_at(started)
        .duration(duration)
        .status(status);
    if let Some(e) = error {
        r = r.error(e);
    }
    if let Some(t) = target {
        r = r.target(t);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting() -> Pending {
        Pending {
            started: SystemTime::UNIX_EPOCH,
            what: Waiting::Action {
                action: Action::new(SafeText::literal("Runtime.evaluate")),
                target: None,
                trigger: None,
            },
        }
    }

    #[test]
    fn ids_are_counted_across_sessions_and_a_burst_gives_its_room_back() {
        let mut t = PendingTable::default();
        let s: Key = Some("S".into());
        t.insert((None, 7), waiting());
        t.insert((s.clone(), 7), waiting());
        assert!(t.has_id(7) && !t.has_id(8));
        assert!(t.remove(&(None, 7)).is_some());
        assert!(t.has_id(7), "still waiting on session S");
        assert!(t.remove_any_session(7).is_some());
        assert!(!t.has_id(7) && t.len() == 0);
        assert!(t.remove_any_session(7).is_none());

        for id in 0..20_000 {
            t.insert((None, id), waiting());
        }
        let grown = t.map.capacity();
        for id in 1..20_000 {
            assert!(t.remove(&(None, id)).is_some());
        }
        assert!(t.has_id(0) && t.len() == 1);
        assert!(
            t.map.capacity() < grown / 8,
            "{} of {grown}",
            t.map.capacity()
        );
        assert_eq!(t.take_where(|_, _| true).len(), 1);
        assert!(!t.has_id(0));
    }
}
