//! Relay counters, served at `/relay/v1/status`. Relaxed atomics: they cost the hot path one
//! uncontended add per message and need no ordering with anything else.

use crate::tap::Direction;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Live counters of one relay.
#[derive(Debug, Default)]
pub struct Stats {
    http_requests: AtomicU64,
    sessions_total: AtomicU64,
    sessions_active: AtomicU64,
    messages_to_browser: AtomicU64,
    messages_to_client: AtomicU64,
    bytes_to_browser: AtomicU64,
    bytes_to_client: AtomicU64,
    upgrades_refused: AtomicU64,
}

/// A point-in-time copy of [`Stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsSnapshot {
    /// Discovery and other HTTP requests answered.
    pub http_requests: u64,
    /// Websocket sessions spliced since start.
    pub sessions_total: u64,
    /// Websocket sessions open now.
    pub sessions_active: u64,
    /// Messages forwarded client → browser.
    pub messages_to_browser: u64,
    /// Messages forwarded browser → client.
    pub messages_to_client: u64,
    /// Payload bytes forwarded client → browser.
    pub bytes_to_browser: u64,
    /// Payload bytes forwarded browser → client.
    pub bytes_to_client: u64,
    /// Websocket upgrades refused (policy or upstream failure).
    pub upgrades_refused: u64,
}

impl Stats {
    pub(crate) fn http_request(&self) {
        self.http_requests.fetch_add(1, Relaxed);
    }

    pub(crate) fn upgrade_refused(&self) {
        self.upgrades_refused.fetch_add(1, Relaxed);
    }

    pub(crate) fn session_opened(&self) {
        self.sessions_total.fetch_add(1, Relaxed);
        self.sessions_active.fetch_add(1, Relaxed);
    }

    pub(crate) fn session_closed(&self) {
        self.sessions_active.fetch_sub(1, Relaxed);
    }

    pub(crate) fn message(&self, dir: Direction, len: usize) {
        let (n, b) = match dir {
            Direction::ToBrowser => (&self.messages_to_browser, &self.bytes_to_browser),
            Direction::ToClient => (&self.messages_to_client, &self.bytes_to_client),
        };
        n.fetch_add(1, Relaxed);
        b.fetch_add(len as u64, Relaxed);
    }

    /// Current values.
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            http_requests: self.http_requests.load(Relaxed),
            sessions_total: self.sessions_total.load(Relaxed),
            sessions_active: self.sessions_active.load(Relaxed),
            messages_to_browser: self.messages_to_browser.load(Relaxed),
            messages_to_client: self.messages_to_client.load(Relaxed),
            bytes_to_browser: self.bytes_to_browser.load(Relaxed),
            bytes_to_client: self.bytes_to_client.load(Relaxed),
            upgrades_refused: self.upgrades_refused.load(Relaxed),
        }
    }
}
