//! The capture policy: when a picture of a page may be kept (DESIGN §5).
//!
//! One policy per pipeline, shared by every producer that can keep a frame (the passive observer
//! keeping a client's screenshot, the active observer's own frames). Per page it knows:
//!
//! - which typing bursts since the last main-frame navigation went into a sensitive field
//!   (password, one-time code, payment, page-marked) or into a field nobody could identify —
//!   their pixels may show what was typed, so no frame until the page navigates;
//! - when the page was last typed into — never a frame right after typing;
//! - which kind of field had focus when (reported by the active observer's page agent) — never a
//!   frame while a sensitive field has focus. Focus is kept as a short history because the
//!   passive observer decides about a client's screenshot or typing some milliseconds after the
//!   fact, by when focus may have moved on: it asks about the moment of the command.
//!
//! and the switch `--no-screenshots`. Target keys are raw CDP target ids (or a connection/session
//! key when the target is unknown) held in memory only; nothing here is persisted.

use cdp_sanitize::InputType;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// Why a frame was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withheld {
    /// `--no-screenshots`.
    ScreenshotsOff,
    /// The page was typed into since its last navigation, into a sensitive field or one the
    /// relay could not identify: its pixels may show what was typed.
    TypedSinceNavigation,
    /// A password, one-time-code, payment or page-marked field (or an unreadable frame) has
    /// focus.
    SensitiveFocus,
    /// The page was typed into moments ago.
    JustTyped,
}

impl Withheld {
    /// The reason as written into a record's detail.
    pub fn reason(self) -> &'static str {
        match self {
            Withheld::ScreenshotsOff => "screenshots are off",
            Withheld::TypedSinceNavigation => {
                "typing into a sensitive or unidentified field since the last navigation"
            }
            Withheld::SensitiveFocus => "a sensitive field has focus",
            Withheld::JustTyped => "typing moments ago",
        }
    }
}

/// What kind of element has focus in a page, as the page agent reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// An editable field of this input type (`Unknown` when nobody could tell).
    Input(InputType),
    /// A field (or an ancestor) the page marks sensitive (`data-sensitive`, `data-private`, …).
    Marked,
    /// Focus is inside a frame the agent cannot read (e.g. a cross-origin payment iframe).
    Unreadable,
    /// Nothing editable has focus.
    NotEditable,
}

impl FieldKind {
    /// Frames must not show it, and typed text must not be read back from it.
    pub fn is_sensitive(self) -> bool {
        match self {
            FieldKind::Input(t) => t.is_sensitive(),
            FieldKind::Marked | FieldKind::Unreadable => true,
            FieldKind::NotEditable => false,
        }
    }

    /// Typing into it withholds frames until the next navigation: sensitive, or unidentified
    /// (typing while nothing editable seems focused means the report is stale: unidentified too).
    fn withholds_until_navigation(self) -> bool {
        self.is_sensitive()
            || matches!(
                self,
                FieldKind::Input(InputType::Unknown) | FieldKind::NotEditable
            )
    }

    /// The input type a typing step records.
    pub fn input_type(self) -> InputType {
        match self {
            FieldKind::Input(t) => t,
            FieldKind::Marked | FieldKind::Unreadable | FieldKind::NotEditable => {
                InputType::Unknown
            }
        }
    }
}

/// Bound on pages tracked; past it, an untracked page is withheld (more, never less).
const MAX_TRACKED: usize = 16 * 1024;
/// Bursts remembered per page between navigations; past it, the page stays withheld.
const MAX_BURSTS: usize = 1024;

/// How long after the last keystroke a page counts as "just typed into". By default, 1 s.
pub const DEFAULT_QUIET_AFTER_TYPING: Duration = Duration::from_secs(1);

/// Focus reports kept per page (the passive observer lags by milliseconds, not by dozens of
/// focus changes).
const FOCUS_HISTORY: usize = 32;
/// A focus report arrives a moment after the focus moved (the agent's binding call crosses the
/// renderer and the socket): it also counts for a question about this much earlier.
const FOCUS_SLACK: Duration = Duration::from_millis(10);

#[derive(Default)]
struct Page {
    /// Bursts since the last navigation that went to a sensitive or unidentified field.
    withholding: HashSet<u64>,
    /// More bursts than [`MAX_BURSTS`] were withholding: until navigation, always withhold.
    overflowed: bool,
    last_typed: Option<SystemTime>,
    /// Bursts typed into the current document, with their last keystroke: a kind read back
    /// later for a burst of an earlier document changes nothing here.
    typed: HashMap<u64, SystemTime>,
    /// More bursts than [`MAX_BURSTS`]: which document a burst went to is no longer known.
    typed_overflowed: bool,
    /// The latest main-frame navigation reported. Producers report it at different moments
    /// (the passive observer from the client's traffic, the active one from its own session):
    /// typing stamped before it went to the document it replaced.
    navigated_at: Option<SystemTime>,
    /// (reported at, what had focus), oldest first.
    focus: VecDeque<(SystemTime, Option<FieldKind>)>,
    /// Older reports were forgotten: before the first kept one, focus is that one's.
    focus_truncated: bool,
}

impl Page {
    /// See [`CapturePolicy::navigated`].
    fn navigated(&mut self, at: SystemTime) {
        self.navigated_at = Some(self.navigated_at.map_or(at, |n| n.max(at)));
        if self.last_typed.is_none_or(|t| t < at) {
            // Everything typed was before: the page starts clean.
            self.withholding.clear();
            self.overflowed = false;
            self.typed.clear();
            self.typed_overflowed = false;
            self.last_typed = None;
            return;
        }
        self.typed.retain(|_, t| *t >= at);
        if !self.typed_overflowed {
            // Without an overflow every burst is in `typed`: keep those typed after `at`.
            let Page {
                typed, withholding, ..
            } = self;
            withholding.retain(|b| typed.contains_key(b));
        }
    }

    fn withhold(&mut self, burst: u64) {
        if self.withholding.len() < MAX_BURSTS {
            self.withholding.insert(burst);
        } else {
            self.overflowed = true;
        }
    }

    /// What had focus at `at`, as reported.
    fn focus_at(&self, at: SystemTime) -> Option<FieldKind> {
        match self.focus.iter().rev().find(|(t, _)| *t <= at) {
            Some((_, kind)) => *kind,
            None if self.focus_truncated => self.focus.front().and_then(|(_, k)| *k),
            None => None,
        }
    }
}

/// Shared screenshot veto.
#[derive(Debug)]
pub struct CapturePolicy {
    screenshots: bool,
    quiet: Duration,
    pages: Mutex<HashMap<String, Page>>,
}

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page").finish_non_exhaustive()
    }
}

impl CapturePolicy {
    /// A policy; `screenshots: false` withholds every frame.
    pub fn new(screenshots: bool) -> CapturePolicy {
        CapturePolicy {
            screenshots,
            quiet: DEFAULT_QUIET_AFTER_TYPING,
            pages: Mutex::new(HashMap::new()),
        }
    }

    /// Sets how long after typing no frame is kept.
    pub fn with_quiet_after_typing(mut self, quiet: Duration) -> CapturePolicy {
        self.quiet = quiet;
        self
    }

    fn pages(&self) -> std::sync::MutexGuard<'_, HashMap<String, Page>> {
        self.pages.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn with_page(&self, target: &str, f: impl FnOnce(&mut Page)) {
        let mut pages = self.pages();
        if let Some(p) = pages.get_mut(target) {
            f(p);
        } else if pages.len() < MAX_TRACKED {
            f(pages.entry(target.to_owned()).or_default());
        }
    }

    /// Text of burst `burst` was typed into `target`, into a field of `kind`, at `at`.
    pub fn typed_into(&self, target: &str, burst: u64, kind: FieldKind, at: SystemTime) {
        self.with_page(target, |p| {
            if p.navigated_at.is_some_and(|n| at < n) {
                // Typed into the document a navigation already replaced.
                return;
            }
            if p.typed.len() < MAX_BURSTS || p.typed.contains_key(&burst) {
                let last = p.typed.entry(burst).or_insert(at);
                *last = (*last).max(at);
            } else {
                p.typed_overflowed = true;
            }
            p.last_typed = Some(p.last_typed.map_or(at, |t| t.max(at)));
            if kind.withholds_until_navigation() {
                p.withhold(burst);
            }
        });
    }

    /// The field burst `burst` went to is now known to be `kind` (read back by the page agent).
    /// A burst of a document the page has since navigated away from changes nothing.
    pub fn burst_kind(&self, target: &str, burst: u64, kind: FieldKind) {
        self.with_page(target, |p| {
            if !p.typed.contains_key(&burst) && !p.typed_overflowed {
                return;
            }
            if kind.withholds_until_navigation() {
                p.withhold(burst);
            } else {
                p.withholding.remove(&burst);
            }
        });
    }

    /// `target`'s main frame navigated at `at`: what was typed before it is gone from its
    /// pixels. Typing after `at` stays (a second producer may report the same navigation late).
    pub fn navigated(&self, target: &str, at: SystemTime) {
        self.with_page(target, |p| p.navigated(at));
    }

    /// What has focus in `target` since `at` (`None`: unknown).
    pub fn focused_at(&self, target: &str, kind: Option<FieldKind>, at: SystemTime) {
        self.with_page(target, |p| {
            if p.focus.len() == FOCUS_HISTORY {
                p.focus.pop_front();
                p.focus_truncated = true;
            }
            p.focus.push_back((at, kind));
        });
    }

    /// What had focus in `target` at `at` (a report arriving just after counts).
    pub fn focused_kind_at(&self, target: &str, at: SystemTime) -> Option<FieldKind> {
        self.pages()
            .get(target)
            .and_then(|p| p.focus_at(at + FOCUS_SLACK))
    }

    /// The page is gone.
    pub fn forget(&self, target: &str) {
        self.pages().remove(target);
    }

    /// May a frame of `target` taken now be kept?
    pub fn verdict(&self, target: &str) -> Result<(), Withheld> {
        self.verdict_at(target, SystemTime::now())
    }

    /// May a frame of `target` taken at `at` be kept?
    pub fn verdict_at(&self, target: &str, at: SystemTime) -> Result<(), Withheld> {
        if !self.screenshots {
            return Err(Withheld::ScreenshotsOff);
        }
        let pages = self.pages();
        let Some(p) = pages.get(target) else {
            return if pages.len() >= MAX_TRACKED {
                Err(Withheld::TypedSinceNavigation)
            } else {
                Ok(())
            };
        };
        if p.overflowed || !p.withholding.is_empty() {
            return Err(Withheld::TypedSinceNavigation);
        }
        let sensitive = |t| p.focus_at(t).is_some_and(FieldKind::is_sensitive);
        if sensitive(at) || sensitive(at + FOCUS_SLACK) {
            return Err(Withheld::SensitiveFocus);
        }
        if p.last_typed.is_some_and(|t| at < t + self.quiet) {
            return Err(Withheld::JustTyped);
        }
        Ok(())
    }

    /// Until when `target` counts as just typed into, if it does at `at`.
    pub fn quiet_until(&self, target: &str, at: SystemTime) -> Option<SystemTime> {
        let until = self.pages().get(target)?.last_typed? + self.quiet;
        (until > at).then_some(until)
    }

    /// True when screenshots are on at all.
    pub fn screenshots_on(&self) -> bool {
        self.screenshots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: FieldKind = FieldKind::Input(InputType::Text);
    const UNKNOWN: FieldKind = FieldKind::Input(InputType::Unknown);
    const PASSWORD: FieldKind = FieldKind::Input(InputType::Password);

    fn t(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms)
    }

    #[test]
    fn sensitive_or_unidentified_typing_withholds_until_navigation() {
        let p = CapturePolicy::new(true);
        assert_eq!(p.verdict_at("T1", t(0)), Ok(()));
        p.typed_into("T1", 1, UNKNOWN, t(0));
        assert_eq!(
            p.verdict_at("T1", t(60_000)),
            Err(Withheld::TypedSinceNavigation)
        );
        assert_eq!(p.verdict_at("T2", t(0)), Ok(()));
        p.navigated("T1", t(1));
        assert_eq!(p.verdict_at("T1", t(60_000)), Ok(()));
        p.typed_into("T1", 2, PASSWORD, t(70_000));
        assert_eq!(
            p.verdict_at("T1", t(99_000)),
            Err(Withheld::TypedSinceNavigation)
        );
        let off = CapturePolicy::new(false);
        assert_eq!(off.verdict("T1"), Err(Withheld::ScreenshotsOff));
    }

    #[test]
    fn ordinary_typing_withholds_only_right_after() {
        let p = CapturePolicy::new(true);
        p.typed_into("T1", 1, TEXT, t(0));
        assert_eq!(p.verdict_at("T1", t(500)), Err(Withheld::JustTyped));
        assert_eq!(p.quiet_until("T1", t(500)), Some(t(1000)));
        assert_eq!(p.verdict_at("T1", t(1000)), Ok(()));
        assert_eq!(p.quiet_until("T1", t(1000)), None);
        // An unidentified burst later found to be a text field stops withholding.
        p.typed_into("T1", 2, UNKNOWN, t(2000));
        assert_eq!(
            p.verdict_at("T1", t(9000)),
            Err(Withheld::TypedSinceNavigation)
        );
        p.burst_kind("T1", 2, TEXT);
        assert_eq!(p.verdict_at("T1", t(9000)), Ok(()));
    }

    #[test]
    fn a_kind_read_back_after_a_navigation_leaves_the_new_document_alone() {
        let p = CapturePolicy::new(true);
        p.typed_into("T1", 1, TEXT, t(0));
        p.navigated("T1", t(100));
        // The page agent's reading arrives after the page moved on: it was a password field.
        p.burst_kind("T1", 1, PASSWORD);
        assert_eq!(p.verdict_at("T1", t(5000)), Ok(()));
        // Read back before the navigation, it withholds until then.
        p.typed_into("T1", 2, TEXT, t(6000));
        p.burst_kind("T1", 2, PASSWORD);
        assert_eq!(
            p.verdict_at("T1", t(9000)),
            Err(Withheld::TypedSinceNavigation)
        );
    }

    #[test]
    fn navigations_and_typing_reported_out_of_order_keep_each_to_its_document() {
        // Typing stamped before a navigation that was reported first: the old document's.
        let p = CapturePolicy::new(true);
        p.navigated("T1", t(100));
        p.typed_into("T1", 1, PASSWORD, t(50));
        assert_eq!(p.verdict_at("T1", t(5000)), Ok(()));
        assert_eq!(p.quiet_until("T1", t(60)), None);
        // A second producer reporting the same navigation late keeps the typing after it.
        p.typed_into("T1", 2, PASSWORD, t(200));
        p.navigated("T1", t(100));
        assert_eq!(
            p.verdict_at("T1", t(5000)),
            Err(Withheld::TypedSinceNavigation)
        );
        assert_eq!(p.quiet_until("T1", t(300)), Some(t(1200)));
        // The next navigation clears it.
        p.navigated("T1", t(6000));
        assert_eq!(p.verdict_at("T1", t(7000)), Ok(()));
    }

    #[test]
    fn sensitive_focus_withholds_while_it_lasts() {
        let p = CapturePolicy::new(true);
        p.focused_at("T1", Some(FieldKind::Input(InputType::OneTimeCode)), t(0));
        assert_eq!(p.verdict_at("T1", t(0)), Err(Withheld::SensitiveFocus));
        p.focused_at("T1", Some(FieldKind::Marked), t(100));
        assert_eq!(p.verdict_at("T1", t(100)), Err(Withheld::SensitiveFocus));
        p.focused_at("T1", Some(FieldKind::NotEditable), t(200));
        assert_eq!(p.verdict_at("T1", t(200)), Ok(()));
        assert_eq!(
            p.focused_kind_at("T1", t(200)),
            Some(FieldKind::NotEditable)
        );
    }

    #[test]
    fn a_late_question_gets_the_focus_of_its_moment_and_a_report_just_after_counts() {
        // The passive observer asks about a screenshot at t(0) after focus moved on at t(50).
        let p = CapturePolicy::new(true);
        p.focused_at("T1", Some(FieldKind::NotEditable), t(0));
        p.focused_at("T1", Some(PASSWORD), t(50));
        p.focused_at("T1", None, t(90));
        assert_eq!(p.verdict_at("T1", t(0)), Ok(()));
        assert_eq!(p.verdict_at("T1", t(60)), Err(Withheld::SensitiveFocus));
        assert_eq!(p.focused_kind_at("T1", t(60)), Some(PASSWORD));
        assert_eq!(p.verdict_at("T1", t(95)), Ok(()));
        // A report arriving within the slack after the question still withholds.
        assert_eq!(p.verdict_at("T1", t(45)), Err(Withheld::SensitiveFocus));
        assert_eq!(p.focused_kind_at("T1", t(45)), Some(PASSWORD));
        // Before any report: unknown.
        assert_eq!(p.focused_kind_at("T1", t(0) - Duration::from_secs(1)), None);
    }

    #[test]
    fn a_forgotten_history_answers_with_its_oldest_kept_report() {
        let p = CapturePolicy::new(true);
        p.focused_at("T1", Some(PASSWORD), t(0));
        for i in 1..=FOCUS_HISTORY as u64 {
            p.focused_at("T1", Some(TEXT), t(1000 + i));
        }
        // The password report is gone; a question about t(10) gets the oldest kept one, not
        // "unknown".
        assert_eq!(p.focused_kind_at("T1", t(10)), Some(TEXT));
        assert_eq!(p.verdict_at("T1", t(5000)), Ok(()));
    }
}
