//! The element a click, a typing step, a `<select>` choice or a file choice went to
//! (`payload.target`), and the name standing for a step's typed text (`payload.input.variable`).
//!
//! The relay's page agent reports a locator whenever an element receives a trusted
//! `pointerdown`, typing starts in one, or a `<select>` or file input changes
//! (`direct/locate.rs`); the reports reach this reader, raw and in memory only, with the
//! verdicts. A click's or file choice's record waits — bounded, like a typing step waits for its
//! verdict — for the report in its time window; a typing step takes the report of where its
//! first character went when it is written. A `<select>` choice has no command of its own (a
//! client sets it by script): its report becomes a `select` step when a client's command to the
//! page was sent at most [`CHOICE_AFTER`] before it, so a page's own script changing a select
//! is not taken for a step. Each is sanitized only then, after every keystroke forwarded before
//! the step was registered with the sanitizer. The hot path never waits: only records do.

use super::burst::Burst;
use super::correlate::action_record;
use super::{Key, TrafficReader};
use crate::cdp::IdMap;
use crate::direct::locate::{Located, Moment};
use cdp_evidence::{Action, ActionDetail, ActionMethod, Locator, Record, Status};
use cdp_sanitize::{SafeJson, SafeText};
use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

/// Reports kept per page, newest last.
const PER_PAGE: usize = 64;
/// Pages reports are kept for; past it the table starts again.
const MAX_PAGES: usize = 256;
/// Steps waiting for their report at once; past it, they are written at once.
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
/// How much earlier than the stamp of a typing step's first key a report of typing going on
/// in a field may be its own (a second step into the same field); the wider [`EARLY`] would take
/// the step before, going on after a pause, for it.
const GOING_ON_EARLY: Duration = Duration::from_millis(50);
/// How long after a client's command to a page a `<select>` change there is that command's
/// doing (Playwright's `selectOption`, a browser MCP server's fill: one script call each).
pub(super) const CHOICE_AFTER: Duration = Duration::from_secs(2);

const NOT_SEEN_CLICK: &str = "the relay's page agent saw no element receive the click";
const NOT_SEEN_FILES: &str = "the relay's page agent saw no file input change";
const NOT_SEEN_TYPING: &str = "the relay's page agent did not see where the text went";
const SET_BY_SCRIPT: &str = "the text was set as a value attribute, not typed";
const TOO_LONG: &str = "more text was typed than the relay keeps";
const UNKNOWN_PAGE: &str = "the page is not known";

/// The agent's reports, the steps waiting for theirs, and when clients last acted on each page.
#[derive(Default)]
pub(super) struct Targets {
    recent: IdMap<String, VecDeque<Located>>,
    held: VecDeque<HeldStep>,
    acted: IdMap<String, VecDeque<Acted>>,
}

/// A client's command to a page that can change it.
struct Acted {
    at: SystemTime,
    files: bool,
}

impl Targets {
    /// Steps waiting for their report.
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

    /// Where a typing step whose first key was stamped at `started` sent its text: the unclaimed
    /// report of typing that started in an element in [`lo`, `hi`] nearest to `started`, claimed; when
    /// there is none, one of typing that went on in the element typed into just before, from
    /// [`GOING_ON_EARLY`] before `started` (earlier, it is the step before going on after a
    /// pause). Reports of the same element going on in the window belong to the step and leave
    /// with it.
    fn claim_typed(
        &mut self,
        page: &str,
        started: SystemTime,
        lo: SystemTime,
        hi: SystemTime,
    ) -> Option<Located> {
        let q = self.recent.get_mut(page)?;
        let in_window = |l: &Located| l.moment == Moment::Typed && l.at >= lo && l.at <= hi;
        let going_on_from = earlier(started, GOING_ON_EARLY);
        // The nearest to the step's start: typing steps are written when their verdicts come,
        // not in the order they were typed (a `landed` one waits for its field to be read
        // again), and the step typed just before, into another field, is in the window too.
        let distance = |t: SystemTime| match t.duration_since(started) {
            Ok(d) => d,
            Err(e) => e.duration(),
        };
        let nearest = |pick: &dyn Fn(&Located) -> bool| {
            q.iter()
                .enumerate()
                .filter(|(_, l)| pick(l))
                .min_by_key(|(_, l)| distance(l.at))
                .map(|(i, _)| i)
        };
        let i = nearest(&|l| in_window(l) && !l.continued)
            .or_else(|| nearest(&|l| in_window(l) && l.at >= going_on_from))?;
        let found = q.remove(i)?;
        q.retain(|l| !(in_window(l) && l.continued && l.locator == found.locator));
        Some(found)
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

    /// A client's command that can change the page was sent to `page` at `at`; `files` when it
    /// was a `DOM.setFileInputFiles` (its own record takes the agent's report of the input).
    pub(super) fn acted(&mut self, page: String, at: SystemTime, files: bool) {
        if self.acted.len() >= MAX_PAGES && !self.acted.contains_key(&page) {
            self.acted.clear();
        }
        let q = self.acted.entry(page).or_default();
        if q.len() >= PER_PAGE {
            q.pop_front();
        }
        q.push_back(Acted { at, files });
    }

    /// True when a client's command (`files`: a `DOM.setFileInputFiles`) was sent to `page` at
    /// most [`CHOICE_AFTER`] before `at` (or up to [`EARLY`] after: the stamp of a forwarded
    /// command is taken late).
    fn acted_before(&self, page: &str, at: SystemTime, files: bool) -> bool {
        self.acted.get(page).is_some_and(|q| {
            q.iter().any(|a| {
                (a.files || !files) && a.at <= at + EARLY && earlier(at, CHOICE_AFTER) <= a.at
            })
        })
    }
}

/// A click or a file choice answered by the browser whose record waits for the agent's report.
pub(super) struct HeldStep {
    page: String,
    moment: Moment,
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

/// What a held step's record is written with.
pub(super) struct Answered {
    pub(super) action: Action,
    pub(super) started: SystemTime,
    pub(super) duration: Duration,
    pub(super) status: Status,
    pub(super) error: Option<SafeText>,
    pub(super) target: Option<SafeJson>,
    /// When the browser answered.
    pub(super) at: SystemTime,
}

fn earlier(t: SystemTime, by: Duration) -> SystemTime {
    t.checked_sub(by).unwrap_or(SystemTime::UNIX_EPOCH)
}

impl TrafficReader {
    /// A report from the page agent: a `<select>` choice is a step now (or nothing, when no
    /// client acted on the page just before); the others are kept for the step they belong to.
    pub(super) fn located(&mut self, l: Located) {
        match l.moment {
            Moment::Chose => self.chose(l),
            // Set with `DOM.setFileInputFiles`: that command's record takes the report.
            Moment::Files if self.targets.acted_before(&l.target_id, l.at, true) => {
                self.targets.keep(l)
            }
            Moment::Files => self.files_by_script(l),
            Moment::Hit | Moment::Typed => self.targets.keep(l),
        }
    }

    /// A `select` step from the agent's report of a `<select>` that changed.
    fn chose(&mut self, l: Located) {
        if !self.targets.acted_before(&l.target_id, l.at, false) {
            tracing::debug!("a select changed with no client command just before: not a step");
            return;
        }
        let mut action = Action::new(ActionMethod::Select);
        let (target, options) = l.choice(&self.sanitizer);
        action.target = Some(target);
        action.options = options;
        let page = Some(self.pages.target(&l.target_id));
        let r = action_record(action, l.at, Duration::ZERO, Status::Ok, None, page);
        self.emit(r);
    }

    /// A `files` step from the agent's report of a file input a client's script set.
    fn files_by_script(&mut self, l: Located) {
        if !self.targets.acted_before(&l.target_id, l.at, false) {
            tracing::debug!("a file input changed with no client command just before: not a step");
            return;
        }
        let mut action = Action::new(ActionMethod::Files);
        action.target = Some(l.locator.sanitized(&self.sanitizer));
        let detail = ActionDetail {
            files: l.count,
            ..ActionDetail::default()
        };
        action.detail = Some(detail.sanitized(&self.sanitizer));
        let page = Some(self.pages.target(&l.target_id));
        let r = action_record(action, l.at, Duration::ZERO, Status::Ok, None, page);
        self.emit(r);
    }

    /// A click or file choice on (connection, session), answered: written once the agent's
    /// report of what it hit (`moment`) is here (or its wait is over). Without the relay's own
    /// observer there is no report to wait for.
    pub(super) fn held_answered(&mut self, conn: u64, key: &Key, moment: Moment, step: Answered) {
        let Answered {
            mut action,
            started,
            duration,
            status,
            error,
            target,
            at,
        } = step;
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
                        not_seen(moment)
                    },
                )));
                let r = action_record(action, started, duration, status, error, target);
                return self.emit(r);
            }
        };
        self.targets.held.push_back(HeldStep {
            page,
            moment,
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
        self.release_held(at, false);
    }

    /// Writes the held steps whose report is here, and (`all`, or past their wait) the others
    /// as not replayable.
    pub(super) fn release_held(&mut self, now: SystemTime, all: bool) {
        let mut waiting = VecDeque::new();
        while let Some(mut c) = self.targets.held.pop_front() {
            let found = self.targets.claim(&c.page, c.moment, c.lo, c.hi);
            if found.is_none() && !all && now < c.deadline {
                waiting.push_back(c);
                continue;
            }
            match found {
                Some(l) => {
                    c.action.target = Some(l.locator.sanitized(&self.sanitizer));
                    c.action.hover = l.hover.map(|h| h.sanitized(&self.sanitizer));
                    c.action.received = l.blocked.then_some(false);
                }
                None => {
                    let why = not_seen(c.moment);
                    c.action.target = Some(Locator::not_replayable(SafeText::literal(why)));
                }
            }
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
        if let (Some(_), Some(page)) = (&secret, burst.page.as_deref()) {
            // A picture of a field showing a registered value would show the value.
            self.pages.burst_named(page, burst.seq);
        }
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
            if let Some(l) = self.targets.claim_typed(page, burst.started, lo, hi) {
                return l.locator.sanitized(&self.sanitizer);
            }
            NOT_SEEN_TYPING
        };
        Locator::not_replayable(SafeText::literal(why))
    }
}

/// Why a held step is not replayable when its report never came.
fn not_seen(moment: Moment) -> &'static str {
    match moment {
        Moment::Files => NOT_SEEN_FILES,
        Moment::Hit | Moment::Typed | Moment::Chose => NOT_SEEN_CLICK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::direct::locate::AgentLocator;

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms)
    }

    fn report(page: &str, moment: Moment, ms: u64, css: &str) -> Located {
        Located {
            target_id: page.into(),
            at: at(ms),
            moment,
            locator: serde_json::from_value::<AgentLocator>(serde_json::json!({ "css": css }))
                .unwrap(),
            hover: None,
            options: None,
            blocked: false,
            count: None,
            continued: false,
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
    fn a_choice_is_a_step_only_just_after_a_clients_command_to_its_page() {
        let mut t = Targets::default();
        t.acted("P".into(), at(1_000), false);
        assert!(t.acted_before("P", at(1_000), false));
        assert!(t.acted_before("P", at(2_900), false));
        // The command's stamp may come a little after the page saw it.
        assert!(t.acted_before("P", at(900), false));
        assert!(!t.acted_before("P", at(3_100), false), "too long after");
        assert!(!t.acted_before("P", at(500), false), "before the command");
        assert!(!t.acted_before("Q", at(1_000), false), "another page");
        // Only a `DOM.setFileInputFiles` counts as one.
        assert!(!t.acted_before("P", at(1_000), true));
        t.acted("P".into(), at(1_100), true);
        assert!(t.acted_before("P", at(1_200), true));
        for i in 0..(PER_PAGE as u64 + 5) {
            t.acted("P".into(), at(10_000 + i), false);
        }
        assert_eq!(t.acted["P"].len(), PER_PAGE);
    }

    #[test]
    fn typing_takes_a_fresh_report_over_one_that_went_on_in_the_field_before() {
        let mut t = Targets::default();
        let typed = |ms: u64, css: &str, continued: bool| Located {
            continued,
            ..report("P", Moment::Typed, ms, css)
        };
        // The password step: its start, then (after a pause) more of it; then the code step.
        t.keep(typed(100, "#pw", false));
        t.keep(typed(400, "#pw", true));
        t.keep(typed(520, "#otp", false));
        // The code step's window reaches back before its start: its own report is taken.
        let otp = t.claim_typed("P", at(510), at(260), at(700)).unwrap();
        assert_eq!(otp.at, at(520));
        // The password step takes its start, and what went on in its window leaves with it.
        let pw = t.claim_typed("P", at(100), at(0), at(450)).unwrap();
        assert_eq!(pw.at, at(100));
        assert!(t.claim_typed("P", at(0), at(0), at(1000)).is_none());
        // With no fresh report, typing that went on from just before the step is its (a second
        // step into one field); from well before, it is the step before going on: not its.
        t.keep(typed(2_000, "#pw", true));
        assert!(t
            .claim_typed("P", at(2_200), at(1_950), at(2_300))
            .is_none());
        assert_eq!(
            t.claim_typed("P", at(2_010), at(1_760), at(2_100))
                .unwrap()
                .at,
            at(2_000)
        );
    }

    #[test]
    fn a_typing_step_written_out_of_order_takes_its_own_report() {
        let mut t = Targets::default();
        t.keep(report("P", Moment::Typed, 100, "#email"));
        t.keep(report("P", Moment::Typed, 121, "#password"));
        // The second step (started at 120) is written first; its window reaches the first's.
        let second = t.claim_typed("P", at(120), at(0), at(200)).unwrap();
        assert_eq!(second.at, at(121));
        let first = t.claim_typed("P", at(99), at(0), at(150)).unwrap();
        assert_eq!(first.at, at(100));
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
