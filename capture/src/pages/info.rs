//! What a page is, as its target info says: title, URL, type and browser context, kept raw (an
//! allowlist of fields, memory only) so a later change can update them, and sanitized for
//! records only when they change or the sanitizer learned something since (its generation): a
//! secret registered after a title was first sanitized is masked in every record after it.
//!
//! Kept current from `Target.attachedToTarget`, `Target.targetCreated`,
//! `Target.targetInfoChanged` and main-frame `Page.frameNavigated`, whichever observer reads
//! them, so a record names the page it happened on, not the `about:blank` the target was
//! created with.

use super::{Pages, Table};
use cdp_sanitize::{SafeJson, Sanitizer};
use serde_json::{json, Map, Value};

/// Allowlisted `TargetInfo` fields kept raw (memory only); `targetId` is the page's key.
const KEPT: [&str; 4] = ["type", "title", "url", "browserContextId"];

/// One page's target info and its sanitized form.
#[derive(Default)]
pub(super) struct Info {
    raw: Map<String, Value>,
    safe: Option<(u64, SafeJson)>,
}

impl Info {
    /// Takes the allowlisted fields of a `TargetInfo`.
    fn merge(&mut self, info: &Value) {
        for key in KEPT {
            if let Some(v @ Value::String(_)) = info.get(key) {
                if self.raw.get(key) != Some(v) {
                    self.raw.insert(key.to_owned(), v.clone());
                    self.safe = None;
                }
            }
        }
    }

    fn set_url(&mut self, url: &str) {
        if self.raw.get("url").and_then(Value::as_str) != Some(url) {
            self.raw.insert("url".into(), Value::String(url.to_owned()));
            self.safe = None;
        }
    }

    /// The sanitized summary of page `target`, made again when the sanitizer changed.
    pub(super) fn safe(&mut self, target: &str, s: &Sanitizer) -> SafeJson {
        let generation = s.generation();
        match &self.safe {
            Some((g, safe)) if *g == generation => safe.clone(),
            _ => {
                // The handle first, then the fields in the order they were learned.
                let mut v = Map::with_capacity(self.raw.len() + 1);
                v.insert("targetId".into(), Value::String(target.to_owned()));
                v.extend(self.raw.iter().map(|(k, v)| (k.clone(), v.clone())));
                let safe = s.target_info(&Value::Object(v));
                self.safe = Some((generation, safe.clone()));
                safe
            }
        }
    }

    /// The summary of a page nothing is known of: its handle.
    pub(super) fn unknown(target: &str, s: &Sanitizer) -> SafeJson {
        s.target_info(&json!({ "targetId": target }))
    }

    /// A raw field (memory only), for tests comparing what two observers learned.
    #[cfg(test)]
    pub(super) fn field(&self, key: &str) -> Option<&str> {
        self.raw.get(key).and_then(Value::as_str)
    }
}

impl Info {
    /// A page (or a target of no known type) whose main frame shows `url`.
    fn shows(&self, url: &str) -> bool {
        let field = |k: &str| self.raw.get(k).and_then(Value::as_str);
        field("url") == Some(url) && field("type").is_none_or(|t| t == "page")
    }
}

impl Pages {
    /// The handle of the one page whose main frame shows `url` now (what a tool's own answer
    /// names a page by); `None` when no page does, or more than one.
    pub fn handle_showing(&self, url: &str) -> Option<cdp_sanitize::SafeText> {
        let table = self.table();
        let mut showing = table
            .pages
            .iter()
            .filter(|(_, p)| p.gone.is_none() && p.info.as_ref().is_some_and(|i| i.shows(url)))
            .map(|(id, _)| id);
        let first = showing.next()?;
        if showing.next().is_some() {
            return None;
        }
        Some(self.sanitizer.handle(first))
    }

    /// Records what a `TargetInfo` says about its target; returns the target id.
    pub(crate) fn learn(&self, info: &Value) -> Option<String> {
        let id = info.get("targetId")?.as_str()?;
        self.table().learn(id, info);
        Some(id.to_owned())
    }

    /// The main frame of page `target` now shows `url`. A page nothing was known of yet is
    /// tracked from here on (a client connected to the page's own endpoint may never see its
    /// target info): its records name the URL it shows.
    pub(crate) fn navigated(&self, target: &str, url: &str) {
        if url.is_empty() {
            return;
        }
        if let Some(page) = self.table().page_mut(target) {
            page.info.get_or_insert_with(Info::default).set_url(url);
        }
    }
}

impl Table {
    fn learn(&mut self, id: &str, info: &Value) {
        if let Some(page) = self.page_mut(id) {
            page.info.get_or_insert_with(Info::default).merge(info);
        }
    }
}
