//! The capture policy: when a picture of a page may be kept (docs/security.md, *Screenshots:
//! pixels cannot be redacted*).
//!
//! One policy per pipeline, part of the page model ([`Pages`]) and asked by every producer that
//! can keep a frame (the traffic reader keeping a client's screenshot, the direct reader's
//! own frames). Both observers feed it through the same handler (`pages/events.rs`). Per page
//! ([`Veto`]) it knows:
//!
//! - which typing bursts in the current main-frame document went into a sensitive field
//!   (password, one-time code, payment, page-marked) or into a field nobody could identify —
//!   their pixels may show what was typed, so no frame until a new document replaces it. Once a
//!   burst is taken for sensitive, no later reading makes it less so;
//! - which document the main frame shows (its loader id) and how it got there. Only a *fresh*
//!   document ends "typed since the last navigation": a navigation within the document (`#hash`,
//!   `pushState`), one that commits nothing (a 204, a download) or one the relay cannot classify
//!   keeps the page withheld, and a document that comes back from history (the back/forward
//!   cache, or a history navigation whose form fields the browser refills) comes back with what
//!   was typed into it;
//! - when the page was last typed into — never a frame right after typing;
//! - which typing bursts in the current document typed a registered secret's whole value (an
//!   MCP gateway's `${NAME}` variable or `recordAs` name, `--secret-env`): unless the field
//!   masks it (a sensitive field: already withheld), a picture of the page shows the value, so
//!   none until a new document replaces it. Asked per page by the relay's frames, and for any
//!   page by the gateway before it hands a screenshot to an agent;
//! - which kind of field had focus when (reported by the direct reader's page agent) — never a
//!   frame while a sensitive field has focus. Focus is kept as a short history because the
//!   traffic reader decides about a client's screenshot or typing some milliseconds after the
//!   fact, by when focus may have moved on: it asks about the moment of the command.
//!
//! and the switch `--no-screenshots`. Target keys are raw CDP target ids (or a connection/session
//! key when the target is unknown) held in memory only; nothing here is persisted.

pub use crate::cdp::params::Commit;
use crate::pages::Pages;
use cdp_sanitize::InputType;
use std::collections::{HashMap, HashSet, VecDeque};
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
    /// A registered secret's whole value was typed into a field that shows it (not a password,
    /// one-time-code or payment field) since the last navigation.
    NamedValueShown,
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
            Withheld::NamedValueShown => {
                "a registered value was typed into a field that shows it, since the last navigation"
            }
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
        self.is_sensitive() || self.is_unidentified()
    }

    /// Nobody could tell what the field is: no type read, or nothing editable seemed focused.
    pub fn is_unidentified(self) -> bool {
        matches!(
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

/// Which field has focus, as the page agent tells it: opaque numbers per document, never
/// anything the page wrote. 0 is "none".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FieldFacts {
    /// The field.
    pub field: u64,
    /// The group of fields it belongs to (its form, or its row of short boxes).
    pub group: u64,
    /// The field the page handed focus on from (a code box moving on as a digit lands).
    pub from: u64,
}

/// How a main-frame navigation started, as `Page.frameStartedNavigating` words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NavigationKind {
    /// A new document from the network (`differentDocument`, `reload`,
    /// `reloadBypassingCache`): nothing typed before is in it.
    Fresh,
    /// A history traversal or a session restore to another document
    /// (`historyDifferentDocument`, `restore`, `restoreWithPost`): the browser may refill its
    /// form fields with what was typed into them.
    History,
    /// Within the document (`sameDocument`, `historySameDocument`): nothing is replaced.
    SameDocument,
}

impl NavigationKind {
    /// The kind of a `navigationType` word; `None` for words this relay does not know (which
    /// then count as unclassified: the page stays withheld).
    pub fn parse(word: &str) -> Option<NavigationKind> {
        Some(match word {
            "differentDocument" | "reload" | "reloadBypassingCache" => NavigationKind::Fresh,
            "historyDifferentDocument" | "restore" | "restoreWithPost" => NavigationKind::History,
            "sameDocument" | "historySameDocument" => NavigationKind::SameDocument,
            _ => return None,
        })
    }
}

/// Bursts remembered per page between navigations; past it, the page stays withheld.
const MAX_BURSTS: usize = 1024;
/// Documents remembered per page after it left them (for a return from history).
const MAX_LEFT: usize = 16;
/// Navigation starts remembered per page until their commit.
const MAX_STARTED: usize = 16;

/// Focus reports kept per page (the traffic reader lags by milliseconds, not by dozens of
/// focus changes).
const FOCUS_HISTORY: usize = 32;
/// A focus report arrives a moment after the focus moved (the agent's binding call crosses the
/// renderer and the socket): it also counts for a question about this much earlier.
const FOCUS_SLACK: Duration = Duration::from_millis(10);

/// The main frame's current document.
struct Doc {
    loader: String,
    /// A fresh document (confirmed), as opposed to one out of history or unclassified.
    fresh: bool,
    /// The earliest report of its commit.
    at: SystemTime,
}

/// A document the page left, kept in case history brings it back.
struct Left {
    /// Its loader id, when the commit that showed it was reported.
    loader: Option<String>,
    /// When the page left it.
    until: SystemTime,
    /// Frames of it must be withheld (what was typed into it is still in it).
    withheld: bool,
    /// Bursts typed into it, so a kind read back late still reaches it.
    bursts: HashSet<u64>,
}

/// The veto's state of one page.
#[derive(Default)]
pub(crate) struct Veto {
    /// Bursts in the current document that went to a sensitive or unidentified field.
    withholding: HashSet<u64>,
    /// Bursts once taken for sensitive: no later reading lets them go.
    sensitive: HashSet<u64>,
    /// More bursts than [`MAX_BURSTS`] were withholding: until navigation, always withhold.
    overflowed: bool,
    /// Bursts in the current document that typed a registered secret's whole value.
    named: HashSet<u64>,
    /// More named bursts than [`MAX_BURSTS`]: until navigation, a value is taken as shown.
    named_overflowed: bool,
    last_typed: Option<SystemTime>,
    /// Bursts typed into the current document, with their last keystroke: a kind read back
    /// later for a burst of an earlier document changes nothing here.
    typed: HashMap<u64, SystemTime>,
    /// More bursts than [`MAX_BURSTS`]: which document a burst went to is no longer known.
    typed_overflowed: bool,
    /// The latest main-frame commit reported. Producers report it at different moments (the
    /// traffic reader from the client's traffic, the active one from its own session):
    /// typing stamped before it went to the document it replaced.
    navigated_at: Option<SystemTime>,
    doc: Option<Doc>,
    /// The current document came back from history (or could not be classified) while a
    /// document of this page was withheld: withheld until a fresh document replaces it.
    restored: bool,
    /// Documents left, oldest first.
    left: VecDeque<Left>,
    /// A withheld document was forgotten from `left`.
    left_forgot_withheld: bool,
    /// Recent navigation starts: (loader id, kind).
    started: VecDeque<(String, Option<NavigationKind>)>,
    /// (reported at, what had focus, which field), oldest first.
    focus: VecDeque<(SystemTime, Option<FieldKind>, FieldFacts)>,
    /// Older reports were forgotten: before the first kept one, focus is that one's.
    focus_truncated: bool,
}

impl Veto {
    /// What a page that is gone still answers: which field had focus when (a step the traffic
    /// reader decides after the page closed was typed while it was open); nothing else.
    pub(crate) fn after_the_page_went(&mut self) {
        let focus = std::mem::take(&mut self.focus);
        let truncated = self.focus_truncated;
        *self = Veto::default();
        self.focus = focus;
        self.focus_truncated = truncated;
    }

    fn withheld(&self) -> bool {
        self.overflowed || self.restored || !self.withholding.is_empty()
    }

    /// A named burst of the current document went to a field that shows its text (one taken
    /// for sensitive masks it, and withholds on its own).
    fn shows_named(&self) -> bool {
        self.named_overflowed || self.named.iter().any(|b| !self.sensitive.contains(b))
    }

    /// The main frame committed document `loader` at `at`, fresh or not.
    fn committed(&mut self, loader: &str, fresh: Option<bool>, at: SystemTime) {
        if let Some(doc) = self.doc.as_mut().filter(|d| d.loader == loader) {
            // Another report of the current document (a second producer, the reply after
            // the event): it may confirm a fresh document the first could not classify.
            let first = doc.at.min(at);
            doc.at = first;
            let confirmed = fresh == Some(true) && !doc.fresh;
            doc.fresh |= confirmed;
            if confirmed {
                self.restored = false;
                self.clear_before(first);
            }
            return;
        }
        let fresh = fresh.unwrap_or(false);
        self.leave(at);
        let back = if fresh {
            false
        } else {
            // Out of history, or unclassified: it holds what it held when the page left it; an
            // unknown document may be any of them.
            match self
                .left
                .iter()
                .rev()
                .find(|l| l.loader.as_deref() == Some(loader))
            {
                Some(l) => l.withheld,
                None => self.left_forgot_withheld || self.left.iter().any(|l| l.withheld),
            }
        };
        self.restored = back;
        self.doc = Some(Doc {
            loader: loader.to_owned(),
            fresh,
            at,
        });
        self.navigated_at = Some(self.navigated_at.map_or(at, |n| n.max(at)));
        self.clear_before(at);
    }

    /// Remembers the document being left at `at`, with what was typed into it before then.
    fn leave(&mut self, at: SystemTime) {
        let before = |t: &SystemTime| *t < at;
        let bursts: HashSet<u64> = self
            .typed
            .iter()
            .filter(|(_, t)| before(t))
            .map(|(b, _)| *b)
            .collect();
        let withheld = self.overflowed
            || self.restored
            || self
                .withholding
                .iter()
                .chain(self.named.iter().filter(|b| !self.sensitive.contains(b)))
                .any(|b| self.typed_overflowed || bursts.contains(b))
            || self.named_overflowed;
        if self.left.len() == MAX_LEFT {
            if let Some(old) = self.left.pop_front() {
                self.left_forgot_withheld |= old.withheld;
            }
        }
        self.left.push_back(Left {
            loader: self.doc.as_ref().map(|d| d.loader.clone()),
            until: at,
            withheld,
            bursts,
        });
    }

    /// Forgets what was typed before `at`: it went to the document the page left. Typing after
    /// `at` stays (a second producer may report the same commit late).
    fn clear_before(&mut self, at: SystemTime) {
        if self.last_typed.is_none_or(|t| t < at) {
            self.withholding.clear();
            self.sensitive.clear();
            self.overflowed = false;
            self.named.clear();
            self.named_overflowed = false;
            self.typed.clear();
            self.typed_overflowed = false;
            self.last_typed = None;
            return;
        }
        self.typed.retain(|_, t| *t >= at);
        if !self.typed_overflowed {
            // Without an overflow every burst is in `typed`: keep those typed after `at`.
            let Veto {
                typed,
                withholding,
                sensitive,
                named,
                ..
            } = self;
            withholding.retain(|b| typed.contains_key(b));
            sensitive.retain(|b| typed.contains_key(b));
            named.retain(|b| typed.contains_key(b));
        }
    }

    fn withhold(&mut self, burst: u64, kind: FieldKind) {
        if kind.is_sensitive() && self.sensitive.len() < MAX_BURSTS {
            self.sensitive.insert(burst);
        }
        if self.withholding.len() < MAX_BURSTS {
            self.withholding.insert(burst);
        } else {
            self.overflowed = true;
        }
    }

    /// A document the page has left, into which `burst` (or typing at `at`) went.
    fn left_with(&mut self, burst: u64, at: Option<SystemTime>) -> Option<&mut Left> {
        let by_burst = self.left.iter().rposition(|l| l.bursts.contains(&burst));
        let i = by_burst.or_else(|| {
            let at = at?;
            self.left.iter().position(|l| at < l.until)
        })?;
        self.left.get_mut(i)
    }

    /// Until when the page counts as just typed into, if it does at `at`.
    pub(crate) fn quiet_until(&self, quiet: Duration, at: SystemTime) -> Option<SystemTime> {
        let until = self.last_typed? + quiet;
        (until > at).then_some(until)
    }

    /// What had focus at `at`, as reported.
    fn focus_at(&self, at: SystemTime) -> Option<FieldKind> {
        self.focus_report_at(at).and_then(|(kind, _)| kind)
    }

    /// The focus report in force at `at`.
    fn focus_report_at(&self, at: SystemTime) -> Option<(Option<FieldKind>, FieldFacts)> {
        match self.focus.iter().rev().find(|(t, _, _)| *t <= at) {
            Some((_, kind, facts)) => Some((*kind, *facts)),
            None if self.focus_truncated => self.focus.front().map(|(_, k, f)| (*k, *f)),
            None => None,
        }
    }
}

impl std::fmt::Debug for Veto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Veto").finish_non_exhaustive()
    }
}

/// The screenshot veto, asked and fed through the page model.
impl Pages {
    fn with_page_veto(&self, target: &str, f: impl FnOnce(&mut Veto)) {
        self.with_page(target, |p| f(&mut p.veto));
    }

    /// Text of burst `burst` was typed into `target`, into a field of `kind`, at `at`.
    pub fn typed_into(&self, target: &str, burst: u64, kind: FieldKind, at: SystemTime) {
        self.with_page_veto(target, |p| {
            if p.navigated_at.is_some_and(|n| at < n) {
                // Typed into the document a commit already replaced: that document keeps it,
                // should history bring it back.
                if let Some(l) = p.left_with(burst, Some(at)) {
                    l.bursts.insert(burst);
                    l.withheld |= kind.withholds_until_navigation();
                }
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
                p.withhold(burst, kind);
            }
        });
    }

    /// The browser answered a keystroke of burst `burst` at `at`: the text is on screen from
    /// then at the latest, so the quiet after typing also counts from the answer (a busy
    /// browser answers hundreds of milliseconds after the command).
    pub fn typing_answered(&self, target: &str, burst: u64, at: SystemTime) {
        self.with_page_veto(target, |p| {
            if p.typed.contains_key(&burst) {
                p.last_typed = Some(p.last_typed.map_or(at, |t| t.max(at)));
            }
        });
    }

    /// The field burst `burst` went to is now known to be `kind` (read back by the page agent).
    /// A burst taken for sensitive stays so, whatever the reading says; a burst of a document
    /// the page has left changes that document only.
    pub fn burst_kind(&self, target: &str, burst: u64, kind: FieldKind) {
        self.with_page_veto(target, |p| {
            if !p.typed.contains_key(&burst) && !p.typed_overflowed {
                if kind.withholds_until_navigation() {
                    if let Some(l) = p.left_with(burst, None) {
                        l.withheld = true;
                    }
                }
                return;
            }
            if kind.withholds_until_navigation() {
                p.withhold(burst, kind);
            } else if !p.sensitive.contains(&burst) {
                p.withholding.remove(&burst);
            }
        });
    }

    /// The text of burst `burst` is the whole value of a registered secret (compared in memory
    /// where the text is, when the burst ended). Unless its field masks it, no picture of the
    /// document it went to is kept ([`Withheld::NamedValueShown`]); a document the page has left
    /// keeps it, should history bring it back.
    pub fn burst_named(&self, target: &str, burst: u64) {
        self.with_page_veto(target, |p| {
            if !p.typed.contains_key(&burst) && !p.typed_overflowed {
                if let Some(l) = p.left_with(burst, None) {
                    l.withheld = true;
                }
                return;
            }
            if p.named.len() < MAX_BURSTS {
                p.named.insert(burst);
            } else {
                p.named_overflowed = true;
            }
        });
    }

    /// True when any page tracked shows a registered secret's value typed into a field that
    /// does not mask it, since its last navigation: what a producer asks before it hands out a
    /// picture it cannot tell the page of (the MCP gateway's screenshot results).
    pub fn named_value_shown(&self) -> bool {
        let t = self.table();
        t.pages.values().any(|p| p.veto.shows_named())
    }

    /// A main-frame navigation of `target` started that will commit document `loader` (from
    /// `Page.frameStartedNavigating`; `kind` is `None` for a word this relay does not know).
    pub fn navigation_started(&self, target: &str, loader: &str, kind: Option<NavigationKind>) {
        if loader.is_empty() {
            return;
        }
        self.with_page_veto(target, |p| {
            if p.started.iter().any(|(l, _)| l == loader) {
                return;
            }
            if p.started.len() == MAX_STARTED {
                p.started.pop_front();
            }
            p.started.push_back((loader.to_owned(), kind));
        });
    }

    /// `target`'s main frame committed document `loader` at `at`. Only a fresh document ends
    /// what was typed before `at`; typing after `at` stays (a second producer may report the
    /// same commit late), and another report of the current document changes nothing unless it
    /// confirms a document the first report could not classify as fresh.
    pub fn committed(&self, target: &str, loader: &str, commit: Commit, at: SystemTime) {
        if loader.is_empty() {
            return;
        }
        self.with_page_veto(target, |p| {
            let fresh = match commit {
                Commit::NavigateReply => Some(true),
                Commit::FrameNavigated { bfcache: true } => Some(false),
                Commit::FrameNavigated { bfcache: false } => {
                    match p.started.iter().find(|(l, _)| l == loader).map(|(_, k)| *k) {
                        Some(Some(NavigationKind::Fresh)) => Some(true),
                        Some(Some(NavigationKind::History)) => Some(false),
                        // Unclassified: keep withholding, unless a reply confirms it later.
                        Some(Some(NavigationKind::SameDocument) | None) | None => None,
                    }
                }
            };
            p.committed(loader, fresh, at);
        });
    }

    /// What has focus in `target` since `at` (`None`: unknown).
    pub fn focused_at(&self, target: &str, kind: Option<FieldKind>, at: SystemTime) {
        self.focused_field_at(target, kind, FieldFacts::default(), at);
    }

    /// What has focus in `target` since `at`, and which field it is.
    pub fn focused_field_at(
        &self,
        target: &str,
        kind: Option<FieldKind>,
        facts: FieldFacts,
        at: SystemTime,
    ) {
        self.with_page_veto(target, |p| {
            if p.focus.len() == FOCUS_HISTORY {
                p.focus.pop_front();
                p.focus_truncated = true;
            }
            p.focus.push_back((at, kind, facts));
        });
    }

    /// What had focus in `target` at `at` (a report arriving just after counts).
    pub fn focused_kind_at(&self, target: &str, at: SystemTime) -> Option<FieldKind> {
        self.read_page(target, |p| p.veto.focus_at(at + FOCUS_SLACK))
            .flatten()
    }

    /// Which field had focus in `target` at `at`, as the page agent reported it (`None`: no
    /// report).
    pub fn focused_field(&self, target: &str, at: SystemTime) -> Option<FieldFacts> {
        self.read_page(target, |p| {
            p.veto.focus_report_at(at + FOCUS_SLACK).map(|(_, f)| f)
        })
        .flatten()
    }

    /// Whether `target`'s main frame committed a document after `at`.
    pub fn navigated_since(&self, target: &str, at: SystemTime) -> bool {
        self.read_page(target, |p| p.veto.navigated_at.is_some_and(|n| n > at))
            .unwrap_or(false)
    }

    /// May a frame of `target` taken now be kept?
    pub fn verdict(&self, target: &str) -> Result<(), Withheld> {
        self.verdict_at(target, SystemTime::now())
    }

    /// May a frame of `target` taken at `at` be kept?
    pub fn verdict_at(&self, target: &str, at: SystemTime) -> Result<(), Withheld> {
        if !self.screenshots_on() {
            return Err(Withheld::ScreenshotsOff);
        }
        let quiet = self.quiet_after_typing();
        self.veto_view(target, |p, full| {
            let Some(p) = p else {
                // Not tracked: typing into it may have gone unrecorded when the table was full.
                return if full {
                    Err(Withheld::TypedSinceNavigation)
                } else {
                    Ok(())
                };
            };
            if p.withheld() {
                return Err(Withheld::TypedSinceNavigation);
            }
            if p.shows_named() {
                return Err(Withheld::NamedValueShown);
            }
            let sensitive = |t| p.focus_at(t).is_some_and(FieldKind::is_sensitive);
            if sensitive(at) || sensitive(at + FOCUS_SLACK) {
                return Err(Withheld::SensitiveFocus);
            }
            if p.last_typed.is_some_and(|t| at < t + quiet) {
                return Err(Withheld::JustTyped);
            }
            Ok(())
        })
    }

    /// Until when `target` counts as just typed into, if it does at `at`.
    pub fn quiet_until(&self, target: &str, at: SystemTime) -> Option<SystemTime> {
        let quiet = self.quiet_after_typing();
        self.read_page(target, |p| p.veto.quiet_until(quiet, at))
            .flatten()
    }

    /// The document the main frame of `target` shows (its loader id) and whether it is known to
    /// be fresh.
    #[cfg(test)]
    pub(crate) fn document(&self, target: &str) -> Option<(String, bool)> {
        self.read_page(target, |p| {
            p.veto.doc.as_ref().map(|d| (d.loader.clone(), d.fresh))
        })
        .flatten()
    }
}

#[cfg(test)]
mod tests;
