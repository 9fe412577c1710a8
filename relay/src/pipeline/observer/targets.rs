//! Which page a record is about: the endpoint a connection is, which target each flattened
//! session drives, and what each target currently shows (title and URL).
//!
//! Target metadata is shared across connections and kept current from `Target.attachedToTarget`,
//! `Target.targetInfoChanged` and main-frame `Page.frameNavigated`, so a record written after a
//! navigation names the page it happened on, not the `about:blank` the target was created with.
//! Raw target ids and URLs live here in memory only; records get the sanitized summary.

use super::cdp;
use super::{Key, Observer};
use cdp_sanitize::SafeJson;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::time::SystemTime;

/// What a websocket path points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `/devtools/browser/<id>`.
    Browser,
    /// `/devtools/page/<id>` (pages, workers and other targets share this form).
    Target(String),
    /// Anything else under `/devtools/`.
    Other,
}

impl Endpoint {
    pub(crate) fn from_path(path: &str) -> Endpoint {
        let path = path.split('?').next().unwrap_or(path);
        let mut parts = path.trim_start_matches('/').split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("devtools"), Some("browser"), _) => Endpoint::Browser,
            (Some("devtools"), Some(_), Some(id)) if !id.is_empty() => {
                Endpoint::Target(id.to_owned())
            }
            _ => Endpoint::Other,
        }
    }

    /// The target id a page-level connection drives (memory only).
    pub(crate) fn target_id(&self) -> Option<&str> {
        match self {
            Endpoint::Target(id) => Some(id),
            _ => None,
        }
    }

    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Endpoint::Browser => "browser endpoint",
            Endpoint::Target(_) => "target endpoint",
            Endpoint::Other => "devtools endpoint",
        }
    }
}

/// Allowlisted `TargetInfo` fields kept raw (memory only) so a later change can update them.
const KEPT: [&str; 5] = ["targetId", "type", "title", "url", "browserContextId"];

/// One target's current metadata and its sanitized form, rebuilt only when it or what the
/// sanitizer knows (its generation) changes: a secret registered after a title was first
/// sanitized is masked in every record after it.
pub(crate) struct TargetMeta {
    raw: Map<String, Value>,
    safe: Option<(u64, SafeJson)>,
}

impl TargetMeta {
    fn new(id: &str) -> TargetMeta {
        let mut raw = Map::new();
        raw.insert("targetId".into(), Value::String(id.to_owned()));
        TargetMeta { raw, safe: None }
    }

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
}

/// Targets tracked at once; beyond this, new targets get records without page metadata.
const MAX_TARGETS: usize = 4096;

/// Metadata of every target seen, keyed by raw target id (memory only).
#[derive(Default)]
pub(crate) struct Targets {
    map: HashMap<String, TargetMeta>,
}

impl Targets {
    fn entry(&mut self, id: &str) -> Option<&mut TargetMeta> {
        if !self.map.contains_key(id) && self.map.len() >= MAX_TARGETS {
            return None;
        }
        Some(
            self.map
                .entry(id.to_owned())
                .or_insert_with(|| TargetMeta::new(id)),
        )
    }

    /// Records what a `TargetInfo` says about its target.
    pub(crate) fn learn(&mut self, info: &Value) -> Option<String> {
        let id = info.get("targetId")?.as_str()?.to_owned();
        if let Some(meta) = self.entry(&id) {
            meta.merge(info);
        }
        Some(id)
    }

    pub(crate) fn navigated(&mut self, id: &str, url: &str) {
        if let Some(meta) = self.entry(id) {
            meta.set_url(url);
        }
    }

    pub(crate) fn forget(&mut self, id: &str) {
        self.map.remove(id);
    }
}

/// One CDP session on a connection (the root session has key `None`).
pub(crate) struct Session {
    /// The raw target id, when known. Memory only: records carry the sanitized `target`.
    pub(crate) target_id: Option<String>,
    pub(crate) typing: Option<super::typing::Burst>,
    pub(crate) last_frame: Option<std::time::SystemTime>,
}

impl Session {
    pub(crate) fn new(target_id: Option<String>) -> Session {
        Session {
            target_id,
            typing: None,
            last_frame: None,
        }
    }
}

impl Observer {
    /// The raw target id behind (connection, session), in memory only.
    pub(super) fn raw_target(&self, conn: u64, key: &Key) -> Option<String> {
        let c = self.conns.get(&conn)?;
        c.sessions
            .get(key)
            .and_then(|s| s.target_id.clone())
            .or_else(|| {
                key.is_none()
                    .then(|| c.endpoint.target_id().map(str::to_owned))
                    .flatten()
            })
    }

    /// What typing and screenshots are tracked under: the target when known (so every
    /// connection to that page withholds its screenshots), else the connection and session.
    /// Memory only.
    pub(super) fn typing_key(&self, conn: u64, key: &Key) -> String {
        self.raw_target(conn, key)
            .unwrap_or_else(|| format!("{conn}/{}", key.as_deref().unwrap_or("")))
    }

    /// Sanitized, current target metadata for records of (connection, session).
    pub(super) fn target_for(&mut self, conn: u64, key: &Key) -> Option<SafeJson> {
        let id = self.raw_target(conn, key)?;
        Some(self.target_of_id(&id))
    }

    pub(super) fn target_of_id(&mut self, id: &str) -> SafeJson {
        let sanitizer = &self.sanitizer;
        let generation = sanitizer.generation();
        match self.targets.map.get_mut(id) {
            Some(meta) => match &meta.safe {
                Some((g, safe)) if *g == generation => safe.clone(),
                _ => {
                    let safe = sanitizer.target_info(&Value::Object(meta.raw.clone()));
                    meta.safe = Some((generation, safe.clone()));
                    safe
                }
            },
            None => sanitizer.target_info(&json!({ "targetId": id })),
        }
    }

    pub(super) fn attached(&mut self, conn: u64, p: &cdp::AttachedToTarget<'_>) {
        let raw_id = self.targets.learn(&p.target_info);
        let max = self.opts.max_pending;
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if c.sessions.len() < max {
            c.sessions
                .insert(Some(Box::from(p.session_id.as_ref())), Session::new(raw_id));
        } else {
            self.dropped += 1;
        }
    }

    /// A main-frame navigation of the page behind (connection, session) committed: its URL
    /// changes, and the capture policy learns which document it shows now.
    pub(super) fn frame_navigated(
        &mut self,
        conn: u64,
        key: &Key,
        p: &cdp::FrameNavigated<'_>,
        at: SystemTime,
    ) {
        let Some((loader, commit)) = p.main_frame_commit() else {
            return;
        };
        let typed = self.typing_key(conn, key);
        self.capture.committed(&typed, loader, commit, at);
        if let Some(id) = self.raw_target(conn, key) {
            if !p.frame.url.is_empty() {
                self.targets.navigated(&id, &p.frame.url);
            }
        }
    }
}

impl Observer {
    /// A navigation of the page behind (connection, session) started: how (fresh, from
    /// history, within the document) decides what its commit does to the capture veto. Only
    /// the main frame's count; its frame id is the target id.
    pub(super) fn frame_started_navigating(
        &mut self,
        conn: u64,
        key: &Key,
        p: &cdp::FrameStartedNavigating<'_>,
    ) {
        let Some(target) = self.raw_target(conn, key) else {
            return;
        };
        if *p.frame_id != *target {
            return;
        }
        let kind = crate::pipeline::capture::NavigationKind::parse(&p.navigation_type);
        self.capture.navigation_started(&target, &p.loader_id, kind);
    }
}
