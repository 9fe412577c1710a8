//! The relay's own observer on a page, and a failure's way to a frame.
//!
//! While the observer has a session on a page, the page can get frames: after a main-frame
//! navigation, after a client's click, after failures (debounced: failures until then share the
//! frame). A failure either observer records on such a page waits here, in the page's [`Want`],
//! for the frame the observer takes next (bounded: [`MAX_GROUP`] per frame); on any other page
//! it is written at once. Once the observer's setup on the page is done it *covers* the page:
//! the page's events are its to record, and the traffic reader leaves them out.
//!
//! The observer reads the wants (when due, what the veto says) and takes the frames on its own
//! connection; the traffic reader only adds to them, and wakes it.

use super::{Pages, Table};
use crate::pages::veto::Withheld;
use cdp_evidence::{FrameAfter, Record, Word};
use std::time::{Duration, Instant, SystemTime};

/// Failure records one frame may hold back; more are written at once, without a frame.
const MAX_GROUP: usize = 64;

/// Why a frame is wanted; also written as the frame record's `detail.after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    Navigation,
    Click,
    Failure,
}

impl After {
    pub(crate) fn word(self) -> FrameAfter {
        match self {
            After::Navigation => FrameAfter::Navigation,
            After::Click => FrameAfter::Click,
            After::Failure => FrameAfter::Failure,
        }
    }
}

/// A frame a page is waiting for, and the failure records it will illustrate.
pub(crate) struct Want {
    pub(crate) due: Instant,
    pub(crate) after: Vec<After>,
    /// Failure records held until their frame is stored (bounded).
    pub(crate) group: Vec<Record>,
    /// When the want was made: failures wait for a frame at most so long.
    pub(crate) born: Instant,
}

impl Want {
    pub(crate) fn new(due: Instant) -> Want {
        Want {
            due,
            after: Vec::new(),
            group: Vec::new(),
            born: Instant::now(),
        }
    }

    /// Adds a reason for the frame, once.
    pub(crate) fn add_after(&mut self, after: After) {
        if !self.after.contains(&after) {
            self.after.push(after);
        }
    }

    pub(crate) fn detail_after(&self) -> Vec<Word<FrameAfter>> {
        self.after.iter().map(|a| a.word().into()).collect()
    }
}

/// How the relay's own observer times its frames (its options).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FrameTiming {
    /// Failures within this window share one frame.
    pub(crate) failure_debounce: Duration,
    /// A frame after a click waits this long for the page to react.
    pub(crate) after_click: Duration,
    /// At most one frame per page per this interval.
    pub(crate) cooldown: Duration,
}

/// The relay's own observer on a page.
#[derive(Default)]
pub(super) struct Observed {
    /// Its setup on the page is done: the page's events are its to record.
    covered: bool,
    want: Option<Want>,
    /// A frame is being taken.
    capturing: bool,
    last_frame: Option<Instant>,
}

/// What a page's want says now.
pub(crate) enum Due {
    /// No frame to take now.
    No,
    /// The frame is due: the want, taken out of the page (the observer takes the frame, or
    /// writes its failures saying why not).
    Take(Want),
}

/// When a new want for a page becomes due: `delay` from now, but not before the page's
/// cooldown since its last frame is over.
pub(crate) fn due_at(
    now: Instant,
    delay: Duration,
    last_frame: Option<Instant>,
    cooldown: Duration,
) -> Instant {
    let earliest = last_frame.map_or(now, |l| l + cooldown);
    (now + delay).max(earliest)
}

/// `until` (wall clock) as an instant from `now`.
pub(crate) fn instant_of(until: SystemTime, now_sys: SystemTime, now: Instant) -> Instant {
    now + until.duration_since(now_sys).unwrap_or_default()
}

impl Table {
    /// Asks the relay's own observer for a frame of `target`, `delay` from now (joining the
    /// frame already wanted, which then comes no later), for `after`; false when the observer
    /// is not on the page. A `record` waits for the frame (taken out of the option) unless the
    /// frame holds as many failures as it may.
    pub(super) fn want(
        &mut self,
        target: &str,
        after: After,
        delay: Duration,
        record: &mut Option<Record>,
    ) -> bool {
        let (Some(timing), Some(o)) = (self.timing, self.pages.get_mut(target)) else {
            return false;
        };
        let Some(o) = o.observed.as_mut() else {
            return false;
        };
        let due = due_at(Instant::now(), delay, o.last_frame, timing.cooldown);
        let want = o.want.get_or_insert_with(|| Want::new(due));
        // A navigation's or click's frame does not wait for a failure's debounce.
        want.due = want.due.min(due);
        want.add_after(after);
        if want.group.len() < MAX_GROUP {
            want.group.extend(record.take());
        }
        true
    }

    /// A failure recorded on `page`: it waits for the relay's own observer's next frame of the
    /// page when the observer is on it; `Some` when it is to be written now.
    pub(super) fn failure(&mut self, page: Option<&str>, record: Record) -> Option<Record> {
        let Some(target) = page else {
            return Some(record);
        };
        let delay = self.timing.map(|t| t.failure_debounce).unwrap_or_default();
        let mut record = Some(record);
        self.want(target, After::Failure, delay, &mut record);
        record
    }
}

impl Pages {
    /// The relay's own observer runs, timing its frames so.
    pub(crate) fn start_observing(&self, timing: FrameTiming) {
        self.table().timing = Some(timing);
    }

    /// Wakes the relay's own observer when the traffic reader wants one of its frames.
    pub(crate) fn wanted(&self) -> &tokio::sync::Notify {
        &self.wanted
    }

    /// The relay's own observer has a session on `target`: frames of it may be wanted.
    pub(crate) fn observe(&self, target: &str) {
        self.with_page(target, |p| {
            p.observed.get_or_insert_with(Observed::default);
        });
    }

    /// Its setup on `target` is done: it records the page's events now.
    pub(crate) fn cover(&self, target: &str) {
        self.with_page(target, |p| {
            p.observed.get_or_insert_with(Observed::default).covered = true;
        });
        self.covering.notify_waiters();
    }

    /// Resolves once the relay's own observer records the events of at least `n` pages.
    pub(crate) async fn covering(&self, n: usize) {
        loop {
            let covered = self.covering.notified();
            tokio::pin!(covered);
            covered.as_mut().enable();
            if self.covered_count() >= n {
                return;
            }
            covered.await;
        }
    }

    /// Does the relay's own observer record `page`'s events?
    pub(crate) fn covered(&self, page: &str) -> bool {
        self.read_page(page, |p| p.observed.as_ref().is_some_and(|o| o.covered))
            .unwrap_or(false)
    }

    /// How many pages the relay's own observer records events of now.
    pub(crate) fn covered_count(&self) -> usize {
        let t = self.table();
        t.pages
            .values()
            .filter(|p| p.observed.as_ref().is_some_and(|o| o.covered))
            .count()
    }

    /// The relay's own observer let go of `target` (detached, or its connection is gone): the
    /// frame it wanted, whose failures are to be written now.
    pub(crate) fn unobserve(&self, target: &str) -> Option<Want> {
        let mut t = self.table();
        let page = t.pages.get_mut(target)?;
        // A gone page stays a while for what was typed before (`Pages::destroyed`).
        page.observed.take().and_then(|o| o.want)
    }

    /// The relay's own observer covers nothing any more (its connection is gone): the frames it
    /// wanted, whose failures are to be written now.
    pub(crate) fn unobserve_all(&self) -> Vec<Want> {
        let mut t = self.table();
        let wants = t
            .pages
            .values_mut()
            .filter_map(|p| p.observed.take().and_then(|o| o.want))
            .collect();
        wants
    }

    /// A client's click on `target` was answered: a frame after it, if the relay's own
    /// observer is on the page.
    pub(crate) fn clicked(&self, target: &str) {
        let mut t = self.table();
        let Some(delay) = t.timing.map(|t| t.after_click) else {
            return;
        };
        if t.want(target, After::Click, delay, &mut None) {
            drop(t);
            self.wanted.notify_one();
        }
    }

    /// The relay's own observer wants a frame of `target` `delay` from now, for `after`.
    pub(crate) fn want_frame(&self, target: &str, after: After, delay: Duration) {
        self.table().want(target, after, delay, &mut None);
    }

    /// When the next frame wanted (and not being taken) is due.
    pub(crate) fn next_want_due(&self) -> Option<Instant> {
        let t = self.table();
        t.pages
            .values()
            .filter_map(|p| p.observed.as_ref())
            .filter(|o| !o.capturing)
            .filter_map(|o| o.want.as_ref().map(|w| w.due))
            .min()
    }

    /// Is a frame of `target` due at `now`? Never right after typing, unless `draining`: the
    /// want waits until the page has been quiet.
    pub(crate) fn due_frame(
        &self,
        target: &str,
        now: Instant,
        now_sys: SystemTime,
        draining: bool,
    ) -> Due {
        let quiet = self.quiet_after_typing();
        let mut t = self.table();
        let Some(page) = t.pages.get_mut(target) else {
            return Due::No;
        };
        let until = page.veto.quiet_until(quiet, now_sys);
        let Some(o) = page.observed.as_mut() else {
            return Due::No;
        };
        if o.capturing || o.want.as_ref().is_none_or(|w| w.due > now) {
            return Due::No;
        }
        if let (false, Some(until)) = (draining, until) {
            if let Some(w) = o.want.as_mut() {
                w.due = instant_of(until, now_sys, now);
            }
            return Due::No;
        }
        o.want.take().map_or(Due::No, Due::Take)
    }

    /// The relay's own observer is about to take a frame of `target`: the veto's verdict for
    /// one taken at `at`; while it is being taken no other is.
    pub(crate) fn start_frame(&self, target: &str, at: SystemTime) -> Result<(), Withheld> {
        self.verdict_at(target, at)?;
        let mut t = self.table();
        if let Some(o) = t.observed_mut(target) {
            o.capturing = true;
        }
        Ok(())
    }

    /// A frame of `target` was taken (or given up on).
    pub(crate) fn frame_done(&self, target: &str) {
        let mut t = self.table();
        if let Some(o) = t.observed_mut(target) {
            o.capturing = false;
            o.last_frame = Some(Instant::now());
        }
    }

    /// Puts a want whose frame could not be kept back on its page, merged with any newer one,
    /// due at `due`; handed back when the observer is no longer on the page.
    pub(crate) fn requeue(&self, target: &str, mut want: Want, due: Instant) -> Option<Want> {
        let mut t = self.table();
        let Some(o) = t.observed_mut(target) else {
            return Some(want);
        };
        if let Some(newer) = o.want.take() {
            for a in newer.after {
                want.add_after(a);
            }
            want.group.extend(newer.group);
        }
        want.due = due;
        o.want = Some(want);
        None
    }

    /// Every frame wanted is due now (the pipeline stops).
    pub(crate) fn all_due(&self, now: Instant) {
        let mut t = self.table();
        for o in t.pages.values_mut().filter_map(|p| p.observed.as_mut()) {
            if let Some(w) = o.want.as_mut() {
                w.due = now;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wants_wait_for_the_cooldown() {
        let now = Instant::now();
        let d = Duration::from_millis(250);
        let c = Duration::from_secs(1);
        assert_eq!(due_at(now, d, None, c), now + d);
        assert_eq!(due_at(now, d, Some(now), c), now + c);
        assert_eq!(
            due_at(now + Duration::from_secs(5), d, Some(now), c),
            now + Duration::from_secs(5) + d
        );
    }
}
