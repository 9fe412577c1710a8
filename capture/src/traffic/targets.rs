//! The element a click or a typing step went to (`payload.target`), and the name standing for a
//! step's typed text (`payload.input.variable`).
//!
//! The relay's page agent reports a locator whenever an element receives a trusted
//! `pointerdown` or typing starts in one (`direct/locate.rs`); the reports reach this reader,
//! raw and in memory only, with the verdicts. A click's record waits — bounded, like a typing
//! step waits for its verdict — for the report in its time window; a typing step takes the
//! report of where its first character went when it is written. Either is sanitized only then,
//! after every keystroke forwarded before the step was registered with the sanitizer. The hot
//! path never waits: only records do.

use super::burst::Burst;
use super::correlate::action_record;
use super::{Key, TrafficReader};
use crate::cdp::IdMap;
use crate::direct::locate::{Located, Moment};
use cdp_evidence::{Action, Locator, Record, Status};
use cdp_sanitize::{SafeJson, SafeText};
use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

/// Reports kept per page, newest last.
const PER_PAGE: usize = 64;
/// Pages reports are kept for; past it the table starts again.
const MAX_PAGES: usize = 256;
/// Clicks waiting for their report at once; past it, clicks are written at once.
const MAX_HELD: usize = 1024;
/// How long a click's record waits for the agent's report (it usually arrives before the
/// click's answer: the agent reports from inside the event).
const CLICK_WAIT: Duration = Duration::from_secs(1);
/// How much earlier than the relay's stamp of a command the page may see it (the relay stamps a
/// copy after forwarding it, on a busy machine a while after).
const EARLY: Duration = Duration::from_millis(250);
/// How much later than the stamp of its answer the page's report may be stamped (the page and
/// the relay read one wall clock through different clocks).
const LATE: Duration = Duration::from_millis(25);

const NOT_SEEN_CLICK: &str = "the relay's page agent saw no element receive the click";
const NOT_SEEN_TYPING: &str = "the relay's page agent did not see where the text went";
const SET_BY_SCRIPT: &str = "the text was set as a value attribute, not typed";
const TOO_LONG: &str = "more text was typed than the relay keeps";
const UNKNOWN_PAGE: &str = "the page is not known";

/// The agent's reports and the clicks waiting for theirs.
#[derive(Default)]
pub(super) struct Targets {
    recent: IdMap<String, VecDeque<Located>>,
    held: VecDeque<HeldClick>,
}

impl Targets {
    /// Clicks waiting for their report.
    pub(super) fn holding(&self) -> usize {
        self.held.len()
    }

    fn keep(&mut self, l: Located) {
        if self.recent.len() >= MAX_PAGES && !self.recent.contains_key(&l.target_id) {
            self.recent.clear();
        }
        let q = self.recent.entry(l.target_id.clone()).or_default();
        if q.len() >= PER_PAGE {
            q.pop_front();
        }
        q.push_back(l);
    }

    /// The first unclaimed `moment` report on `page` in [`lo`, `hi`], claimed.
    fn claim(
        &mut self,
        page: &str,
        moment: Moment,
        lo: SystemTime,
        hi: SystemTime,
    ) -> Option<Located> {
        let q = self.recent.get_mut(page)?;
        let i = q
            .iter()
            .position(|l| l.moment == moment && l.at >= lo && l.at <= hi)?;
        q.remove(i)
    }
}

/// A click answered by the browser whose record waits for the agent's report.
pub(super) struct HeldClick {
    page: String,
    lo: SystemTime,
    hi: SystemTime,
    deadline: SystemTime,
    action: Action,
    started: SystemTime,
    duration: Duration,
    status: Status,
    error: Option<SafeText>,
    target: Option<SafeJson>,
}

fn earlier(t: SystemTime, by: Duration) -> SystemTime {
    t.checked_sub(by).unwrap_or(SystemTime::UNIX_EPOCH)
}

impl TrafficReader {
    /// A report from the page agent: kept for the step it belongs to.
    pub(super) fn located(&mut self, l: Located) {
        self.targets.keep(l);
    }

    /// A click on (connection, session), forwarded at `started` and answered at `at`: written
    /// once the agent's report of what it hit is here (or its wait is over). Without the relay's
    /// own observer there is no report to wait for.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn click_answered(
        &mut self,
        conn: u64,
        key: &Key,
        mut action: Action,
        started: SystemTime,
        duration: Duration,
        status: Status,
        error: Option<SafeText>,
        target: Option<SafeJson>,
        at: SystemTime,
    ) {
        if self.verifier.is_none() {
            let r = action_record(action, started, duration, status, error, target);
            return self.emit(r);
        }
        let page = match self.raw_target(conn, key) {
            Some(page) if self.targets.held.len() < MAX_HELD => page,
            page => {
                action.target = Some(Locator::not_replayable(SafeText::literal(
                    if page.is_none() {
                        UNKNOWN_PAGE
                    } else {
                        NOT_SEEN_CLICK
                    },
                )));
                let r = action_record(action, started, duration, status, error, target);
                return self.emit(r);
            }
        };
        self.targets.held.push_back(HeldClick {
            page,
            lo: earlier(started, EARLY),
            hi: at.max(started) + LATE,
            deadline: at + CLICK_WAIT,
            action,
            started,
            duration,
            status,
            error,
            target,
        });
        self.release_clicks(at, false);
    }

    /// Writes the held clicks whose report is here, and (`all`, or past their wait) the others
    /// as not replayable.
    pub(super) fn release_clicks(&mut self, now: SystemTime, all: bool) {
        let mut waiting = VecDeque::new();
        while let Some(mut c) = self.targets.held.pop_front() {
            let found = self.targets.claim(&c.page, Moment::Hit, c.lo, c.hi);
            if found.is_none() && !all && now < c.deadline {
                waiting.push_back(c);
                continue;
            }
            c.action.target = Some(match found {
                Some(l) => l.locator.sanitized(&self.sanitizer),
                None => Locator::not_replayable(SafeText::literal(NOT_SEEN_CLICK)),
            });
            let r = action_record(c.action, c.started, c.duration, c.status, c.error, c.target);
            self.emit(r);
        }
        self.targets.held = waiting;
    }

    /// The name that stands for the burst's typed text: a registered secret it equals (compared
    /// here, in memory, where the text is), else its `TYPED_<n>`. Call before the text is handed
    /// on for verification.
    pub(super) fn name_input(&self, burst: &mut Burst) {
        if burst.variable.is_some() {
            return;
        }
        let secret = if burst.cut {
            None
        } else {
            self.sanitizer.secret_name(&burst.typed)
        };
        burst.variable = secret.or_else(|| burst.echo.variable());
    }

    /// The burst's record, with where its text went: the agent's report of the element its
    /// first character reached in the burst's time window.
    pub(super) fn typing_record(
        &mut self,
        mut burst: Burst,
        at: SystemTime,
        interrupted: Option<&str>,
    ) -> Record {
        if self.verifier.is_some() {
            burst.locator = Some(self.typing_target(&burst));
        }
        burst.into_record(&self.sanitizer, at, interrupted)
    }

    fn typing_target(&mut self, burst: &Burst) -> Locator {
        let why = if burst.attribute {
            SET_BY_SCRIPT
        } else if burst.cut {
            TOO_LONG
        } else {
            let page = burst.target_id.as_deref().unwrap_or_default();
            let lo = earlier(burst.started, EARLY);
            let hi = burst.answered_at.max(burst.last) + LATE;
            // Typing that ran on, within a tenth of a second, from a step before into the same
            // element is reported once, for that step: this one is not replayable.
            if let Some(l) = self.targets.claim(page, Moment::Typed, lo, hi) {
                return l.locator.sanitized(&self.sanitizer);
            }
            NOT_SEEN_TYPING
        };
        Locator::not_replayable(SafeText::literal(why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::direct::locate::RawLocator;

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms)
    }

    fn report(page: &str, moment: Moment, ms: u64, css: &str) -> Located {
        Located {
            target_id: page.into(),
            at: at(ms),
            moment,
            locator: serde_json::from_value::<RawLocator>(serde_json::json!({ "css": css }))
                .unwrap(),
        }
    }

    #[test]
    fn a_report_is_claimed_once_in_its_window_on_its_page() {
        let mut t = Targets::default();
        t.keep(report("P", Moment::Hit, 100, "#a"));
        t.keep(report("P", Moment::Typed, 110, "#t"));
        t.keep(report("P", Moment::Hit, 120, "#b"));
        t.keep(report("Q", Moment::Hit, 105, "#q"));
        let first = t.claim("P", Moment::Hit, at(50), at(200)).unwrap();
        assert_eq!(first.at, at(100));
        let second = t.claim("P", Moment::Hit, at(50), at(200)).unwrap();
        assert_eq!(second.at, at(120));
        assert!(t.claim("P", Moment::Hit, at(50), at(200)).is_none());
        assert!(t.claim("P", Moment::Typed, at(111), at(200)).is_none());
        assert!(t.claim("P", Moment::Typed, at(0), at(110)).is_some());
        assert!(t.claim("Q", Moment::Hit, at(50), at(200)).is_some());
        assert!(t.claim("R", Moment::Hit, at(0), at(1000)).is_none());
    }

    #[test]
    fn reports_are_bounded() {
        let mut t = Targets::default();
        for i in 0..(PER_PAGE as u64 + 10) {
            t.keep(report("P", Moment::Hit, i, "#a"));
        }
        assert_eq!(t.recent["P"].len(), PER_PAGE);
        assert_eq!(t.recent["P"][0].at, at(10));
        for i in 0..(MAX_PAGES + 5) {
            t.keep(report(&format!("page{i}"), Moment::Hit, 1, "#a"));
        }
        assert!(t.recent.len() <= MAX_PAGES);
    }
}
