//! Which page a record is about: the endpoint a connection is, and which target each flattened
//! session on it drives. What a page is (its title and URL) is the page model's
//! (`pages/info.rs`), shared with the relay's own observer. Raw target ids live here in memory
//! only; records get the sanitized summary.

use super::{Key, TrafficReader};
use crate::cdp::IdMap;
use cdp_sanitize::SafeJson;

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

/// One CDP session on a connection (the root session has key `None`).
pub(crate) struct Session {
    /// The raw target id, when known. Memory only: records carry the sanitized `target`.
    pub(crate) target_id: Option<String>,
    pub(crate) typing: Option<super::burst::Burst>,
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

/// The raw target id session `key` of a connection drives, from the sessions it saw attach
/// and the endpoint it is (memory only).
pub(super) fn target_of<'a>(
    endpoint: &'a Endpoint,
    sessions: &'a IdMap<Key, Session>,
    key: &Key,
) -> Option<&'a str> {
    match sessions.get(key).and_then(|s| s.target_id.as_deref()) {
        Some(id) => Some(id),
        None if key.is_none() => endpoint.target_id(),
        None => None,
    }
}

/// What a session whose target is unknown is tracked under: the connection and the session.
/// Built for every event of such a session, so without the formatting machinery.
pub(super) fn unknown_page(conn: u64, key: &Key) -> String {
    let session = key.as_deref().unwrap_or("");
    let mut digits = itoa::Buffer::new();
    let conn = digits.format(conn);
    let mut page = String::with_capacity(conn.len() + 1 + session.len());
    page.push_str(conn);
    page.push('/');
    page.push_str(session);
    page
}

impl TrafficReader {
    /// The raw target id behind (connection, session), in memory only.
    pub(super) fn raw_target(&self, conn: u64, key: &Key) -> Option<String> {
        let c = self.conns.get(&conn)?;
        target_of(&c.endpoint, &c.sessions, key).map(str::to_owned)
    }

    /// What typing and screenshots are tracked under: the target when known (so every
    /// connection to that page withholds its screenshots), else the connection and session.
    /// Memory only.
    pub(super) fn typing_key(&self, conn: u64, key: &Key) -> String {
        self.raw_target(conn, key)
            .unwrap_or_else(|| unknown_page(conn, key))
    }

    /// Sanitized, current target metadata for records of (connection, session).
    pub(super) fn target_for(&self, conn: u64, key: &Key) -> Option<SafeJson> {
        let id = self.raw_target(conn, key)?;
        Some(self.pages.target(&id))
    }

    /// A flattened session on `conn` attached to `target` (learned by the page model).
    pub(super) fn attached(&mut self, conn: u64, session: String, target: Option<String>) {
        let max = self.opts.max_pending;
        let key = self.keys.key(Some(&session));
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if c.sessions.len() < max {
            c.sessions.insert(key, Session::new(target));
        } else {
            self.dropped += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_page_is_named_by_connection_and_session() {
        for (conn, session) in [
            (0, None),
            (7, Some("S1")),
            (1203, Some("")),
            (u64::MAX, Some("8E5B")),
        ] {
            let key: Key = session.map(std::sync::Arc::from);
            let expected = format!("{conn}/{}", session.unwrap_or(""));
            assert_eq!(unknown_page(conn, &key), expected);
        }
    }
}
