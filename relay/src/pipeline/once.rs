//! Each browser event is recorded once per page, however many sessions or clients observe it.
//!
//! Owns two shared facts, both keyed by raw target id (memory only):
//!
//! - which pages the active observer *covers* (its session is attached and its domains are
//!   enabled): page-reported events of those pages (console, exceptions, `Log`, failed requests)
//!   are recorded by the active observer alone; the passive observer leaves them out;
//! - which page events were already recorded: a console message by (level, timestamp, text), a
//!   failed request by `requestId`. A second session (DevTools, an agent's own model, the
//!   observer during its `Runtime.enable` replay) sees the same event with the same keys.
//!
//! Only 64-bit hashes are kept, never text. Never blocks for long: every call is one short
//! critical section.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};

/// Event keys remembered; the oldest are forgotten first. A duplicate older than this many
/// recorded events is recorded again (rare: replays are immediate).
const MAX_SEEN: usize = 64 * 1024;
/// Pages the active observer can cover at once.
const MAX_COVERED: usize = 4096;

/// The key of one page event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct EventKey(u64);

impl EventKey {
    /// A console entry on `page`: its level word, CDP timestamp and text.
    pub(crate) fn console(page: &str, level: &str, timestamp: f64, text: &str) -> EventKey {
        let mut h = DefaultHasher::new();
        ("console", page, level, timestamp.to_bits(), text).hash(&mut h);
        EventKey(h.finish())
    }

    /// A failed request on `page`.
    pub(crate) fn request(page: &str, request_id: &str) -> EventKey {
        let mut h = DefaultHasher::new();
        ("request", page, request_id).hash(&mut h);
        EventKey(h.finish())
    }
}

#[derive(Default)]
struct Seen {
    set: HashSet<EventKey>,
    order: VecDeque<EventKey>,
}

/// Shared between the passive and the active observer.
#[derive(Default)]
pub struct OncePerPage {
    covered: Mutex<HashSet<String>>,
    seen: Mutex<Seen>,
}

impl std::fmt::Debug for OncePerPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OncePerPage").finish_non_exhaustive()
    }
}

impl OncePerPage {
    /// True the first time `key` is offered: the caller records the event.
    pub(crate) fn first(&self, key: EventKey) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if !seen.set.insert(key) {
            return false;
        }
        seen.order.push_back(key);
        if seen.order.len() > MAX_SEEN {
            if let Some(old) = seen.order.pop_front() {
                seen.set.remove(&old);
            }
        }
        true
    }

    /// The active observer now records `page`'s events.
    pub(crate) fn cover(&self, page: &str) {
        let mut c = self.covered.lock().unwrap_or_else(PoisonError::into_inner);
        if c.len() < MAX_COVERED {
            c.insert(page.to_owned());
        }
    }

    /// The active observer no longer records `page`'s events.
    pub(crate) fn uncover(&self, page: &str) {
        self.covered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(page);
    }

    /// The active observer lost its browser connection: it covers nothing.
    pub(crate) fn uncover_all(&self) {
        self.covered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// How many pages the active observer records events of now.
    pub(crate) fn covered_count(&self) -> usize {
        self.covered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Does the active observer record `page`'s events?
    pub(crate) fn covered(&self, page: &str) -> bool {
        self.covered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_first_once() {
        let once = OncePerPage::default();
        let k = EventKey::console("T1", "error", 1.5, "boom");
        assert!(once.first(k));
        assert!(!once.first(k));
        assert!(once.first(EventKey::console("T2", "error", 1.5, "boom")));
        assert!(once.first(EventKey::console("T1", "error", 1.6, "boom")));
        assert!(once.first(EventKey::request("T1", "42.1")));
        assert!(!once.first(EventKey::request("T1", "42.1")));
    }

    #[test]
    fn covering_is_per_page() {
        let once = OncePerPage::default();
        once.cover("T1");
        assert!(once.covered("T1") && !once.covered("T2"));
        once.uncover("T1");
        assert!(!once.covered("T1"));
        once.cover("T2");
        once.uncover_all();
        assert!(!once.covered("T2"));
    }
}
