//! The one page model both observers feed.
//!
//! What a page is — its target info (title, URL, type: `info.rs`), the main frame's documents
//! and what was typed into them (the screenshot veto, `veto.rs`), the relay's own observer on
//! it (`frames.rs`) — and the decisions about it that must not depend on which observer saw an
//! event, each made in one place:
//!
//! - may a picture of the page be kept (`veto.rs`);
//! - is a page event recorded, and by whom: once per page, by the relay's own observer when it
//!   covers the page, repeats folded into a count (`reports.rs`, `dedup.rs`);
//! - does a failure wait for a frame: when the relay's own observer is on the page, the failure
//!   joins the frame it will take next; else it is written at once (`frames.rs`).
//!
//! Both observers hand the events they both read to one handler (`events.rs`): the passive
//! observer as it takes the tap's copies in the evidence order, the relay's own observer as it
//! reads its connection, once the typing forwarded before is registered.
//!
//! Pages are keyed by raw CDP target id (or, for the traffic reader, by a connection and
//! session key when it cannot tell the target), in memory only: records get the sanitized
//! summary. One lock, held for one decision at a time; nothing here waits, does I/O or touches
//! a socket. The run writer and the traffic reader's thread hold it, and runtime workers take
//! it too (the direct reader, the status API); all run in the normal CPU class.

pub(crate) mod dedup;
pub(crate) mod events;
mod frames;
mod info;
pub(crate) mod reports;
pub(crate) mod requests;
pub(crate) mod veto;

use crate::cdp::IdMap;
use crate::pages::dedup::Dedup;
use crate::pages::veto::Veto;
use cdp_sanitize::{SafeJson, Sanitizer};
pub(crate) use frames::{instant_of, After, Due, FrameTiming, Want};
use info::Info;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Pages tracked at once. Past it, a page not tracked yet gets records without its target info
/// and its pictures are withheld (more, never less).
const MAX_PAGES: usize = 16 * 1024;

/// How long after the last keystroke a page counts as "just typed into". By default, 1 s.
pub const DEFAULT_QUIET_AFTER_TYPING: Duration = Duration::from_secs(1);

/// The page model. One per pipeline, shared by both observers and the run writer.
pub struct Pages {
    sanitizer: Arc<Sanitizer>,
    /// `--no-screenshots` when false: every picture is withheld.
    screenshots: bool,
    /// No picture this long after typing.
    quiet: Duration,
    table: Mutex<Table>,
    /// Wakes the relay's own observer when the traffic reader wants one of its frames.
    wanted: tokio::sync::Notify,
    /// Wakes whoever waits for the relay's own observer to cover a page.
    covering: tokio::sync::Notify,
}

impl std::fmt::Debug for Pages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pages")
            .field("screenshots", &self.screenshots)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
pub(crate) struct Table {
    pages: IdMap<String, Page>,
    /// Page events already recorded, and repeats being counted.
    pub(crate) once: Dedup,
    /// How the relay's own observer times its frames, once it runs.
    timing: Option<FrameTiming>,
    /// The summaries of pages nothing is known of, by target, with the sanitizer generation
    /// they were made in: a client on a page's own endpoint may never see its target info, and
    /// sanitizing its handle again for every record cost a fifth of the observer.
    unknown: IdMap<String, (u64, SafeJson)>,
}

/// One page.
#[derive(Default)]
pub(crate) struct Page {
    /// Its target info, once any was seen.
    info: Option<Info>,
    /// The screenshot veto's view of it.
    pub(crate) veto: Veto,
    /// The relay's own observer, while it has a session on the page.
    observed: Option<frames::Observed>,
    /// The target is gone (since then): kept for [`GONE_KEPT`] for what was typed before, and
    /// while the relay's own observer has yet to let go of it.
    gone: Option<Instant>,
}

/// How long a page that is gone still says which field had focus when: the traffic reader
/// decides a typing step up to its typing gap (1.5 s) after the last key, and later still
/// under load.
const GONE_KEPT: Duration = Duration::from_secs(30);

impl Pages {
    /// The model of a run sanitized with `sanitizer`; `screenshots: false` withholds every
    /// picture.
    pub fn new(sanitizer: Arc<Sanitizer>, screenshots: bool) -> Pages {
        Pages {
            sanitizer,
            screenshots,
            quiet: DEFAULT_QUIET_AFTER_TYPING,
            table: Mutex::new(Table::default()),
            wanted: tokio::sync::Notify::new(),
            covering: tokio::sync::Notify::new(),
        }
    }

    /// The run's sanitizer.
    pub fn sanitizer(&self) -> &Arc<Sanitizer> {
        &self.sanitizer
    }

    pub(crate) fn table(&self) -> MutexGuard<'_, Table> {
        // A panic elsewhere must not stop the evidence: the table is consistent between calls.
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` on the page kept under `key`, tracking it first if there is room; `None` when
    /// there is none.
    pub(crate) fn with_page<R>(&self, key: &str, f: impl FnOnce(&mut Page) -> R) -> Option<R> {
        self.table().page_mut(key).map(f)
    }

    /// Runs `f` on the page kept under `key`, if it is tracked.
    pub(crate) fn read_page<R>(&self, key: &str, f: impl FnOnce(&Page) -> R) -> Option<R> {
        self.table().pages.get(key).map(f)
    }

    /// Runs `f` on the veto of the page kept under `key` (`None`: not tracked) and whether the
    /// table is full (a page not tracked may then have lost what was typed into it).
    pub(crate) fn veto_view<R>(&self, key: &str, f: impl FnOnce(Option<&Veto>, bool) -> R) -> R {
        let t = self.table();
        f(
            t.pages.get(key).map(|p| &p.veto),
            t.pages.len() >= MAX_PAGES,
        )
    }

    /// The veto's knobs.
    pub(crate) fn screenshots_on(&self) -> bool {
        self.screenshots
    }

    pub(crate) fn quiet_after_typing(&self) -> Duration {
        self.quiet
    }

    /// The sanitized summary of page `target` for a record: its current target info, sanitized
    /// again whenever the sanitizer learned something since (a secret may be in the title).
    pub(crate) fn target(&self, target: &str) -> SafeJson {
        self.table().target(target, &self.sanitizer)
    }

    /// Target `target` is gone: what is known of it goes, except which field had focus when
    /// (for [`GONE_KEPT`]) and the relay's own observer's session on it (the failures waiting
    /// for its frame are written when the session goes). Pages gone longer go now.
    pub(crate) fn destroyed(&self, target: &str) {
        let mut t = self.table();
        let now = Instant::now();
        if let Some(page) = t.pages.get_mut(target) {
            page.info = None;
            page.veto.after_the_page_went();
            page.gone = Some(now);
        }
        t.pages.retain(|_, p| {
            p.observed.is_some() || p.gone.is_none_or(|at| now.duration_since(at) < GONE_KEPT)
        });
    }
}

impl Table {
    fn page_mut(&mut self, key: &str) -> Option<&mut Page> {
        if !self.pages.contains_key(key) && self.pages.len() >= MAX_PAGES {
            return None;
        }
        Some(self.pages.entry(key.to_owned()).or_default())
    }

    fn observed_mut(&mut self, target: &str) -> Option<&mut frames::Observed> {
        self.pages.get_mut(target)?.observed.as_mut()
    }

    pub(crate) fn target(&mut self, target: &str, sanitizer: &Sanitizer) -> SafeJson {
        if let Some(info) = self.pages.get_mut(target).and_then(|p| p.info.as_mut()) {
            return info.safe(target, sanitizer);
        }
        let generation = sanitizer.generation();
        if let Some((g, safe)) = self.unknown.get(target) {
            if *g == generation {
                return safe.clone();
            }
        }
        let safe = Info::unknown(target, sanitizer);
        if self.unknown.len() >= MAX_PAGES {
            self.unknown.clear();
        }
        self.unknown
            .insert(target.to_owned(), (generation, safe.clone()));
        safe
    }
}

/// What the model says of a page, for tests comparing what two observers made of the same
/// events.
#[cfg(test)]
#[derive(Debug, PartialEq)]
pub(crate) struct PageState {
    pub(crate) title: Option<String>,
    pub(crate) url: Option<String>,
    /// The main frame's document (loader id) and whether it is known to be fresh.
    pub(crate) document: Option<(String, bool)>,
    /// The veto on a frame taken at the moment asked about.
    pub(crate) veto: Result<(), crate::pages::veto::Withheld>,
}

#[cfg(test)]
impl Pages {
    pub(crate) fn state(&self, target: &str, at: std::time::SystemTime) -> PageState {
        let field = |key: &str| {
            self.read_page(target, |p| {
                p.info
                    .as_ref()
                    .and_then(|i| i.field(key))
                    .map(str::to_owned)
            })
            .flatten()
        };
        PageState {
            title: field("title"),
            url: field("url"),
            document: self.document(target),
            veto: self.verdict_at(target, at),
        }
    }
}

#[cfg(test)]
mod tests;
