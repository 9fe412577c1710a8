//! Each browser event is recorded once per page, however many sessions or clients observe it;
//! and an event that repeats is recorded a few times and then counted.
//!
//! Owns two facts of the page model ([`Pages`]), behind its lock; keys are hashes of raw text
//! (memory only):
//!
//! - which page events were already recorded: a console message by (level, timestamp, text), a
//!   failed request by `requestId`. A second session (DevTools, an agent's own model, the
//!   observer during its `Runtime.enable` replay) sees the same event with the same keys;
//! - which events **fold**: a console message with the same page, level and sanitized text as
//!   one recorded before, or a failed request with the same page, method, URL (origin + path),
//!   status and error text. The first [`RECORDED_BEFORE_FOLDING`] are recorded as usual (each
//!   under the step it happened in: a message seen a few times is worth seeing where); after
//!   that they are only counted, and the count goes to the journal as one record with `repeat`
//!   (the first occurrence's record, with the count and the first and last time of the repeats)
//!   when the fold closes: after [`FOLD_WINDOW`], when its slot is needed for a newer event, or
//!   at the end of the run. The run writer collects closed folds ([`Pages::take_closed`],
//!   [`Pages::take_all`]).
//!
//! Which observer records a page's events (the relay's own, when it covers the page) is the
//! page model's to say (`pages/reports.rs`); both go through here, so folding is the same
//! whichever of them saw the event. Only 64-bit hashes of raw text are kept; a fold keeps its
//! first record, which is already sanitized.

use crate::pages::Pages;
use cdp_evidence::{Console, Record, Repeat};
use cdp_sanitize::NetworkFailure;
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

/// Event keys remembered; the oldest are forgotten first. A duplicate older than this many
/// recorded events is recorded again (rare: replays are immediate).
const MAX_SEEN: usize = 64 * 1024;
/// Distinct foldable events remembered (each keeps its first record); the oldest is let go
/// first, its repeats written.
const MAX_FOLDS: usize = 1024;
/// A fold's repeats are written at the latest this long after the first of them, so a crash
/// loses at most this much of the count.
pub(crate) const FOLD_WINDOW: Duration = Duration::from_secs(60);
/// Occurrences of one event recorded one by one before the next are only counted.
pub(crate) const RECORDED_BEFORE_FOLDING: u64 = 10;

/// The key of one page event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct EventKey(u64);

/// A hasher keyed once per process. Event and fold keys hash text a page writes: with a fixed
/// key (`DefaultHasher::new()`), a page could search offline for a message that collides with
/// another and have it taken for "already recorded" or folded into it.
fn keyed() -> impl Hasher {
    static KEY: OnceLock<RandomState> = OnceLock::new();
    KEY.get_or_init(RandomState::new).build_hasher()
}

impl EventKey {
    /// A console entry on `page`: its level word, CDP timestamp and text.
    pub(crate) fn console(page: &str, level: &str, timestamp: f64, text: &str) -> EventKey {
        let mut h = keyed();
        ("console", page, level, timestamp.to_bits(), text).hash(&mut h);
        EventKey(h.finish())
    }

    /// A failed request on `page`.
    pub(crate) fn request(page: &str, request_id: &str) -> EventKey {
        let mut h = keyed();
        ("request", page, request_id).hash(&mut h);
        EventKey(h.finish())
    }
}

/// What makes two events "the same" for folding: a hash of the page and the sanitized content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FoldKey(u64);

impl FoldKey {
    /// A console entry on `page`: its level and sanitized text (not where it came from).
    pub(crate) fn console(page: &str, c: &Console) -> FoldKey {
        let mut h = keyed();
        ("console", page, c.level, c.text.as_str()).hash(&mut h);
        FoldKey(h.finish())
    }

    /// A failed request on `page`: method, origin + path, status and error text.
    pub(crate) fn network(page: &str, f: &NetworkFailure) -> FoldKey {
        let mut h = keyed();
        (
            "network",
            page,
            f.method().as_str(),
            f.url().as_str(),
            f.status(),
            f.error_text().map(|t| t.as_str()),
        )
            .hash(&mut h);
        FoldKey(h.finish())
    }
}

/// One foldable event: its first record, and the repeats counted since the last write.
struct Fold {
    first: Record,
    /// Occurrences recorded one by one so far.
    recorded: u64,
    count: u64,
    first_at: SystemTime,
    last_at: SystemTime,
}

impl Fold {
    /// The record of the repeats counted so far, if any; the count starts over.
    fn close(&mut self) -> Option<Record> {
        if self.count == 0 {
            return None;
        }
        let repeat = Repeat {
            count: std::mem::take(&mut self.count),
            first_at: self.first_at,
            last_at: self.last_at,
        };
        Some(self.first.clone().repeat(repeat))
    }
}

#[derive(Default)]
struct Folds {
    map: HashMap<FoldKey, Fold>,
    order: VecDeque<FoldKey>,
    /// Repeat records ready to be written.
    closed: Vec<Record>,
}

#[derive(Default)]
struct Seen {
    set: HashSet<EventKey>,
    order: VecDeque<EventKey>,
}

/// Page events recorded, and repeats counted: part of the page model, behind its lock.
#[derive(Default)]
pub(crate) struct Dedup {
    seen: Seen,
    folds: Folds,
}

impl Dedup {
    /// True the first time `key` is offered: the caller records the event.
    pub(crate) fn first(&mut self, key: EventKey) -> bool {
        let seen = &mut self.seen;
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

    /// Whether to record `record` (an event first seen at `at`, already known to be new by
    /// [`Dedup::first`]): true for the first event with this `key`, false for a repeat,
    /// which is counted instead.
    pub(crate) fn fold(&mut self, key: FoldKey, record: &Record, at: SystemTime) -> bool {
        let folds = &mut self.folds;
        if let Some(fold) = folds.map.get_mut(&key) {
            if fold.recorded < RECORDED_BEFORE_FOLDING {
                fold.recorded += 1;
                return true;
            }
            let expired = fold.count > 0
                && at.duration_since(fold.first_at).unwrap_or_default() >= FOLD_WINDOW;
            if expired {
                folds.closed.extend(fold.close());
            }
            if fold.count == 0 {
                fold.first_at = at;
            }
            fold.count += 1;
            fold.last_at = fold.last_at.max(at);
            return false;
        }
        if folds.map.len() >= MAX_FOLDS {
            if let Some(old) = folds.order.pop_front() {
                if let Some(mut f) = folds.map.remove(&old) {
                    folds.closed.extend(f.close());
                }
            }
        }
        folds.order.push_back(key);
        folds.map.insert(
            key,
            Fold {
                first: record.clone(),
                recorded: 1,
                count: 0,
                first_at: at,
                last_at: at,
            },
        );
        true
    }

    /// Repeat records of folds that closed, and of open ones whose first repeat is at least
    /// [`FOLD_WINDOW`] older than `now`.
    pub(crate) fn take_closed(&mut self, now: SystemTime) -> Vec<Record> {
        let folds = &mut self.folds;
        for fold in folds.map.values_mut() {
            if fold.count > 0
                && now.duration_since(fold.first_at).unwrap_or_default() >= FOLD_WINDOW
            {
                folds.closed.extend(fold.close());
            }
        }
        std::mem::take(&mut folds.closed)
    }

    /// Every repeat counted and not yet written (the run ends).
    pub(crate) fn take_all(&mut self) -> Vec<Record> {
        let folds = &mut self.folds;
        // In the order the events were first seen: deterministic for the same input.
        for key in &folds.order {
            if let Some(f) = folds.map.get_mut(key) {
                folds.closed.extend(f.close());
            }
        }
        std::mem::take(&mut folds.closed)
    }
}

impl Pages {
    /// Repeat records of folds that closed, and of open ones whose first repeat is at least
    /// [`FOLD_WINDOW`] older than `now` (the run writer asks at every batch).
    pub(crate) fn take_closed(&self, now: SystemTime) -> Vec<Record> {
        self.table().once.take_closed(now)
    }

    /// Every repeat counted and not yet written (the run ends).
    pub(crate) fn take_all(&self) -> Vec<Record> {
        self.table().once.take_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_page_text_are_not_the_fixed_key_hash() {
        let text = "Uncaught TypeError: x is undefined";
        let fixed = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            ("console", "P", "error", 1.0f64.to_bits(), text).hash(&mut h);
            h.finish()
        };
        let a = EventKey::console("P", "error", 1.0, text);
        assert_eq!(
            a,
            EventKey::console("P", "error", 1.0, text),
            "stable in a process"
        );
        assert_ne!(
            a.0, fixed,
            "keyed per process, not with the fixed DefaultHasher key"
        );
    }

    #[test]
    fn an_event_is_first_once() {
        let mut once = Dedup::default();
        let k = EventKey::console("T1", "error", 1.5, "boom");
        assert!(once.first(k));
        assert!(!once.first(k));
        assert!(once.first(EventKey::console("T2", "error", 1.5, "boom")));
        assert!(once.first(EventKey::console("T1", "error", 1.6, "boom")));
        assert!(once.first(EventKey::request("T1", "42.1")));
        assert!(!once.first(EventKey::request("T1", "42.1")));
    }

    fn console_record(text: &str, at: SystemTime) -> (Console, Record) {
        let s = cdp_sanitize::Sanitizer::new();
        let c = Console::new(cdp_evidence::ConsoleLevel::Error, s.text(text));
        let r = crate::pages::reports::console_record("cdp", c.clone(), at);
        (c, r)
    }

    fn repeat_of(r: &Record) -> serde_json::Value {
        // The record as the journal would hold it.
        let dir = tempfile::tempdir().unwrap();
        let store =
            cdp_evidence::Store::open(cdp_evidence::EvidenceConfig::at(dir.path())).unwrap();
        let run = store.join_session("fold", "relay").unwrap();
        run.append(r.clone()).unwrap();
        let j = store.read_journal(run.id()).unwrap();
        let last = j.records.last().unwrap();
        serde_json::Value::Object(last.raw.clone())
    }

    #[test]
    fn repeats_are_counted_and_written_once_with_their_times() {
        let mut once = Dedup::default();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        // The first ones are recorded, then repeats are counted.
        for i in 0..RECORDED_BEFORE_FOLDING {
            let at = t0 + Duration::from_millis(i);
            let (c2, r2) = console_record("boom", at);
            assert!(once.fold(FoldKey::console("T1", &c2), &r2, at), "{i}");
        }
        for i in 1..=1000u64 {
            let at = t0 + Duration::from_millis(i * 10);
            let (c2, r2) = console_record("boom", at);
            assert!(!once.fold(FoldKey::console("T1", &c2), &r2, at));
        }
        // Another page, another level or another text is its own event.
        let (c3, r3) = console_record("boom", t0);
        assert!(once.fold(FoldKey::console("T2", &c3), &r3, t0));
        let (c4, r4) = console_record("other", t0);
        assert!(once.fold(FoldKey::console("T1", &c4), &r4, t0));
        assert!(
            once.take_closed(t0 + Duration::from_secs(5)).is_empty(),
            "still open"
        );
        let all = once.take_all();
        assert_eq!(all.len(), 1);
        let v = repeat_of(&all[0]);
        assert_eq!(v["repeat"]["count"], 1000);
        assert_eq!(v["repeat"]["firstAt"], "2023-11-14T22:13:20.010Z");
        assert_eq!(v["repeat"]["lastAt"], "2023-11-14T22:13:30.000Z");
        assert_eq!(v["startedAt"], "2023-11-14T22:13:20.010Z");
        assert_eq!(v["durationMs"], 9990);
        assert_eq!(v["payload"]["text"], "boom");
        assert_eq!(v["status"], "error");
        assert!(once.take_all().is_empty(), "written once");
    }

    #[test]
    fn a_long_fold_is_written_every_window_and_a_full_table_lets_the_oldest_go() {
        let mut once = Dedup::default();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let (c, r) = console_record("tick", t0);
        let k = FoldKey::console("T1", &c);
        for _ in 0..RECORDED_BEFORE_FOLDING {
            assert!(once.fold(k, &r, t0));
        }
        // Repeats for three windows: the first two are written as they close.
        for s in 1..=180u64 {
            assert!(!once.fold(k, &r, t0 + Duration::from_secs(s)));
        }
        let closed = once.take_closed(t0 + Duration::from_secs(181));
        let counts: Vec<u64> = closed
            .iter()
            .map(|r| repeat_of(r)["repeat"]["count"].as_u64().unwrap())
            .collect();
        assert_eq!(counts, [60, 60, 60]);
        // MAX_FOLDS distinct events: the oldest fold (with a repeat) is let go and written.
        assert!(!once.fold(k, &r, t0 + Duration::from_secs(200)));
        for i in 0..MAX_FOLDS {
            let (c, r) = console_record(&format!("distinct {i}"), t0);
            assert!(once.fold(FoldKey::console("T1", &c), &r, t0));
        }
        let closed = once.take_closed(t0 + Duration::from_secs(201));
        assert_eq!(closed.len(), 1);
        assert_eq!(repeat_of(&closed[0])["payload"]["text"], "tick");
        // Forgotten: the next one is recorded again, as a first.
        assert!(once.fold(k, &r, t0 + Duration::from_secs(202)));
    }
}
