//! Non-flat sessions: a client that attaches with `flatten: false`
//! (pyppeteer 2.0.0) wraps every command to a page in `Target.sendMessageToTarget` (its `message`
//! is the command as a JSON string) and hears the page's answers and events in
//! `Target.receivedMessageFromTarget` events (the same, the other way). The wrapped message is
//! read here as if it had come flat on the session the wrapper names: a command is classified,
//! correlated and recorded like any other, an answer answers it, an event reaches the page
//! model — so navigations, clicks, screenshots, typing bursts and what the page reports are the
//! same evidence whichever way the client talks. (Typing inside a wrapper is read before all of
//! this, by `typed.rs`.)
//!
//! The wrapper's own answer comes at once, before the page answers the wrapped command; it is
//! awaited only to pass on an error (no such session), which then answers the wrapped command.

use super::correlate::Waiting;
use super::{Key, TrafficReader};
use crate::cdp::frame::Frame;
use crate::cdp::params as cdp;
use std::borrow::Cow;
use std::time::SystemTime;

/// Wrappers inside wrappers read, at most (a hostile client or page can nest without end; each
/// level doubles the escaping, so real ones stop at two).
const MAX_DEPTH: u8 = 4;

impl TrafficReader {
    /// A client's `Target.sendMessageToTarget`: the command it carries, on the session it
    /// names. Returns the pending key of what now waits for an answer.
    pub(super) fn wrapped_command(
        &mut self,
        conn: u64,
        outer: &Frame<'_>,
        at: SystemTime,
    ) -> Option<(Key, u64)> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        let p = outer.params::<cdp::Wrapped>()?;
        let session = self.wrapped_session(conn, &p)?;
        let mut inner = Frame::parse(&p.message)?;
        if inner.session_id.is_none() {
            inner.session_id = Some(Cow::Borrowed(&session));
        }
        self.depth += 1;
        let waiting = self.command(conn, &inner, at);
        self.depth -= 1;
        let (inner_key, outer_id) = (waiting?, outer.id?);
        let outer_key = self.keys.key(outer.session());
        // A closed connection waits for nothing.
        self.conns.get(&conn)?;
        self.expect(
            conn,
            (outer_key.clone(), outer_id),
            at,
            Waiting::Carrier {
                inner: inner_key.clone(),
            },
        );
        Some((outer_key, outer_id))
    }

    /// A `Target.receivedMessageFromTarget` event: the answer or event it carries, read as if it
    /// had come on the session it names.
    pub(super) fn wrapped_message(&mut self, conn: u64, outer: &Frame<'_>, at: SystemTime) {
        if self.depth >= MAX_DEPTH {
            return;
        }
        let Some(p) = outer.params::<cdp::Wrapped>() else {
            return;
        };
        let Some(session) = self.wrapped_session(conn, &p) else {
            return;
        };
        let Some(mut inner) = Frame::parse(&p.message) else {
            return;
        };
        if inner.session_id.is_none() {
            inner.session_id = Some(Cow::Borrowed(&session));
        }
        self.depth += 1;
        self.browser_message(conn, &inner, at);
        self.depth -= 1;
    }

    /// The session a wrapper names: its `sessionId`, or the one session on the connection
    /// attached to its `targetId` (the deprecated form).
    fn wrapped_session(&self, conn: u64, p: &cdp::Wrapped<'_>) -> Option<String> {
        if !p.session_id.is_empty() {
            return Some(p.session_id.clone().into_owned());
        }
        if p.target_id.is_empty() {
            return None;
        }
        let c = self.conns.get(&conn)?;
        let mut attached = c
            .sessions
            .iter()
            .filter(|(_, s)| s.target_id.as_deref() == Some(&*p.target_id))
            .filter_map(|(k, _)| k.as_deref());
        let one = attached.next()?;
        attached.next().is_none().then(|| one.to_owned())
    }
}
