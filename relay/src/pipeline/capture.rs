//! The capture policy: when a picture of a page may be kept (DESIGN §5).
//!
//! One policy per pipeline, shared by every producer that can keep a frame (the passive observer
//! keeping a client's screenshot, the relay's own capture). It knows which targets were typed into
//! since their last main-frame navigation, and the switch `--no-screenshots`. Target keys are raw
//! CDP target ids (or a connection/session key when the target is unknown) held in memory only;
//! nothing here is persisted.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

/// Why a frame was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withheld {
    /// `--no-screenshots`.
    ScreenshotsOff,
    /// The page was typed into since its last navigation: its pixels may show what was typed.
    TypedSinceNavigation,
}

impl Withheld {
    /// The reason as written into a record's detail.
    pub fn reason(self) -> &'static str {
        match self {
            Withheld::ScreenshotsOff => "screenshots are off",
            Withheld::TypedSinceNavigation => "typing since the last navigation",
        }
    }
}

/// Bound on remembered typed-into targets; past it the oldest entries are not evicted but new
/// targets are treated as typed into (withholding more, never less).
const MAX_TRACKED: usize = 16 * 1024;

/// Shared screenshot veto.
#[derive(Debug)]
pub struct CapturePolicy {
    screenshots: bool,
    typed: Mutex<HashSet<String>>,
}

impl CapturePolicy {
    /// A policy; `screenshots: false` withholds every frame.
    pub fn new(screenshots: bool) -> CapturePolicy {
        CapturePolicy {
            screenshots,
            typed: Mutex::new(HashSet::new()),
        }
    }

    fn typed(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.typed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Text was typed into `target`: no frames of it until it navigates.
    pub fn typed_into(&self, target: &str) {
        let mut typed = self.typed();
        if typed.len() < MAX_TRACKED || typed.contains(target) {
            typed.insert(target.to_owned());
        }
    }

    /// `target`'s main frame navigated: what was typed is gone from its pixels.
    pub fn navigated(&self, target: &str) {
        self.typed().remove(target);
    }

    /// May a frame of `target` be kept?
    pub fn verdict(&self, target: &str) -> Result<(), Withheld> {
        if !self.screenshots {
            return Err(Withheld::ScreenshotsOff);
        }
        let typed = self.typed();
        if typed.contains(target) || typed.len() >= MAX_TRACKED {
            return Err(Withheld::TypedSinceNavigation);
        }
        Ok(())
    }

    /// True when screenshots are on at all.
    pub fn screenshots_on(&self) -> bool {
        self.screenshots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_withholds_until_navigation() {
        let p = CapturePolicy::new(true);
        assert_eq!(p.verdict("T1"), Ok(()));
        p.typed_into("T1");
        assert_eq!(p.verdict("T1"), Err(Withheld::TypedSinceNavigation));
        assert_eq!(p.verdict("T2"), Ok(()));
        p.navigated("T1");
        assert_eq!(p.verdict("T1"), Ok(()));
        let off = CapturePolicy::new(false);
        assert_eq!(off.verdict("T1"), Err(Withheld::ScreenshotsOff));
    }
}
