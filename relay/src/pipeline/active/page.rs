//! What the active observer keeps per page: its own flattened session, the page agent's world,
//! requests in flight (for failure joining), dialog and crash state, the frame it is waiting for,
//! and verifications queued for it. Target ids and URLs are raw here, in memory only; records
//! get the sanitized page summary.

use super::frames::{self, After, Want};
use super::verify::VerifyRequest;
use crate::pipeline::observer::network::Requests;
use cdp_sanitize::{SafeJson, Sanitizer};
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Requests tracked per page for failure joining.
const MAX_REQUESTS: usize = 8192;
/// Target metadata entries kept; beyond this, records carry only the target handle.
const MAX_META: usize = 4096;

/// One page the observer is attached to.
pub(crate) struct Page {
    /// Raw target id (memory only).
    pub(crate) target_id: String,
    /// Domains enabled: the page's events are the observer's to record.
    pub(crate) ready: bool,
    /// The page agent's execution context in the main frame.
    pub(crate) world: Option<i64>,
    pub(crate) requests: Requests,
    pub(crate) dialog: bool,
    pub(crate) crashed: bool,
    /// A main-frame navigation committed and its load has not fired yet.
    pub(crate) loading_since: Option<Instant>,
    pub(crate) want: Option<Want>,
    pub(crate) capturing: bool,
    pub(crate) last_frame: Option<Instant>,
    pub(crate) verifying: bool,
    pub(crate) verify_queue: VecDeque<VerifyRequest>,
}

impl Page {
    pub(crate) fn new(target_id: String) -> Page {
        Page {
            target_id,
            ready: false,
            world: None,
            requests: Requests::new(MAX_REQUESTS),
            dialog: false,
            crashed: false,
            loading_since: None,
            want: None,
            capturing: false,
            last_frame: None,
            verifying: false,
            verify_queue: VecDeque::new(),
        }
    }

    /// Asks for a frame `delay` from now, never sooner than `cooldown` after the last one, for
    /// the reason `after`; joins the frame already wanted (which then comes no later).
    pub(crate) fn want_frame(
        &mut self,
        after: After,
        delay: Duration,
        cooldown: Duration,
    ) -> &mut Want {
        let due = frames::due_at(Instant::now(), delay, self.last_frame, cooldown);
        let want = self.want.get_or_insert_with(|| Want::new(due));
        // A navigation's or click's frame does not wait for a failure's debounce.
        want.due = want.due.min(due);
        want.add_after(after);
        want
    }
}

/// Allowlisted `TargetInfo` fields kept raw (memory only).
const KEPT: [&str; 4] = ["type", "title", "url", "browserContextId"];

/// Target metadata for records, kept current from `Target.*` events and navigations.
#[derive(Default)]
pub(crate) struct Meta {
    /// Raw fields, and their sanitized form with the sanitizer generation it was made under.
    map: HashMap<String, (Map<String, Value>, Option<Sanitized>)>,
}

/// A sanitized page summary and the sanitizer generation it was made under.
type Sanitized = (u64, SafeJson);

impl Meta {
    /// Takes the allowlisted fields of a `TargetInfo`.
    pub(crate) fn learn(&mut self, info: &Value) {
        let Some(id) = info.get("targetId").and_then(Value::as_str) else {
            return;
        };
        if !self.map.contains_key(id) && self.map.len() >= MAX_META {
            return;
        }
        let (raw, safe) = self.map.entry(id.to_owned()).or_default();
        for key in KEPT {
            if let Some(v @ Value::String(_)) = info.get(key) {
                if raw.get(key) != Some(v) {
                    raw.insert(key.to_owned(), v.clone());
                    *safe = None;
                }
            }
        }
    }

    /// The page now shows `url`.
    pub(crate) fn navigated(&mut self, id: &str, url: &str) {
        if let Some((raw, safe)) = self.map.get_mut(id) {
            if raw.get("url").and_then(Value::as_str) != Some(url) {
                raw.insert("url".into(), Value::String(url.to_owned()));
                *safe = None;
            }
        }
    }

    pub(crate) fn forget(&mut self, id: &str) {
        self.map.remove(id);
    }

    /// The sanitized page summary for a record.
    pub(crate) fn target(&mut self, id: &str, s: &Sanitizer) -> SafeJson {
        // Sanitized again when the sanitizer learned a secret since (it may be in the title).
        let generation = s.generation();
        match self.map.get_mut(id) {
            Some((_, Some((g, safe)))) if *g == generation => safe.clone(),
            Some((raw, cached)) => {
                let mut v = raw.clone();
                v.insert("targetId".into(), Value::String(id.to_owned()));
                let safe = s.target_info(&Value::Object(v));
                *cached = Some((generation, safe.clone()));
                safe
            }
            None => s.target_info(&serde_json::json!({ "targetId": id })),
        }
    }
}
