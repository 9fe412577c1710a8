//! Who gets a connection: a cap on open connections, and no room for clients that connect and
//! never finish a request (slowloris).
//!
//! Every accepted connection counts until it closes. Until its first request's headers are in,
//! it is also *pending*; pending connections are closed after the header timeout, and when the
//! relay is full (or out of file descriptors) the oldest pending one makes room for the
//! newcomer. Established websocket sessions are never evicted. Log lines about this are
//! rate-limited: a flood of connections does not become a flood of log.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long a client may take to send a request's headers. By default, 10 s.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// File descriptors kept for everything but client connections (upstream sockets of discovery
/// requests, evidence files, the runtime).
const RESERVED_FDS: u64 = 64;

/// At most one line per this interval for each kind of admission event.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// The connection cap for this process: each websocket session needs two descriptors (client
/// and browser), so half of what the soft `RLIMIT_NOFILE` leaves after a reserve, at least 16.
pub(crate) fn default_max_connections() -> usize {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map(|(soft, _)| soft)
        .unwrap_or(1024);
    max_connections_for(soft)
}

/// The cap for a soft descriptor limit of `soft`.
fn max_connections_for(soft: u64) -> usize {
    (soft.saturating_sub(RESERVED_FDS) / 2).clamp(16, 1 << 20) as usize
}

/// Admission state shared by the accept loop and the connection tasks.
#[derive(Debug)]
pub(crate) struct Admission {
    max: usize,
    inner: Mutex<Inner>,
    next_id: AtomicU64,
    evictions: RateLimited,
    refusals: RateLimited,
}

#[derive(Debug, Default)]
struct Inner {
    open: usize,
    /// Connections that have not sent a complete request yet, oldest first.
    pending: VecDeque<(u64, CancellationToken)>,
}

/// A connection's place, released on drop.
#[derive(Debug)]
pub(crate) struct Ticket {
    admission: Arc<Admission>,
    id: u64,
    /// Cancelled when the connection is evicted to make room.
    pub(crate) evicted: CancellationToken,
}

impl Admission {
    pub(crate) fn new(max: usize) -> Arc<Admission> {
        Arc::new(Admission {
            max: max.max(1),
            inner: Mutex::new(Inner::default()),
            next_id: AtomicU64::new(1),
            evictions: RateLimited::default(),
            refusals: RateLimited::default(),
        })
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a new connection, evicting the oldest pending one if the relay is full. `None`
    /// when it is full of connections that all sent their requests: the newcomer is closed.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Ticket> {
        let mut inner = self.inner();
        if inner.open >= self.max && !self.evict_oldest(&mut inner) {
            drop(inner);
            self.refusals.note(|n| {
                tracing::warn!(
                    "{n} connection(s) refused: {} connections are open (the limit follows the file-descriptor limit; raise `ulimit -n`)",
                    self.max
                )
            });
            return None;
        }
        inner.open += 1;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let evicted = CancellationToken::new();
        inner.pending.push_back((id, evicted.clone()));
        Some(Ticket {
            admission: self.clone(),
            id,
            evicted,
        })
    }

    /// Out of file descriptors: make room by closing the oldest pending connection. True if one
    /// was closed.
    pub(crate) fn relieve(&self) -> bool {
        let mut inner = self.inner();
        self.evict_oldest(&mut inner)
    }

    /// Closes the oldest pending connection and frees its place at once: its task may run only
    /// later (a busy machine), and a place held until then would refuse the very clients the
    /// eviction made room for.
    fn evict_oldest(&self, inner: &mut Inner) -> bool {
        let Some((_, token)) = inner.pending.pop_front() else {
            return false;
        };
        token.cancel();
        inner.open = inner.open.saturating_sub(1);
        self.evictions.note(|n| {
            tracing::warn!(
                "closed {n} connection(s) that had not sent a request, to make room for new ones (slow or idle clients)"
            )
        });
        true
    }

    /// Connections open now.
    pub(crate) fn open(&self) -> usize {
        self.inner().open
    }
}

impl Ticket {
    /// The client sent a complete request: it is no longer evictable.
    pub(crate) fn admitted(&self) {
        let mut inner = self.admission.inner();
        if let Some(i) = inner.pending.iter().position(|(id, _)| *id == self.id) {
            inner.pending.remove(i);
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut inner = self.admission.inner();
        // An evicted connection's place was freed when it was evicted.
        if !self.evicted.is_cancelled() {
            inner.open = inner.open.saturating_sub(1);
        }
        if let Some(i) = inner.pending.iter().position(|(id, _)| *id == self.id) {
            inner.pending.remove(i);
        }
    }
}

/// Counts events and reports them at most once per [`LOG_EVERY`].
#[derive(Debug, Default)]
pub(crate) struct RateLimited {
    state: Mutex<(u64, Option<Instant>)>,
}

impl RateLimited {
    pub(crate) fn note(&self, report: impl FnOnce(u64)) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.0 += 1;
        let due = s.1.is_none_or(|last| last.elapsed() >= LOG_EVERY);
        if due {
            let n = std::mem::take(&mut s.0);
            s.1 = Some(Instant::now());
            drop(s);
            report(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_relay_evicts_the_oldest_pending_connection() {
        let a = Admission::new(2);
        let first = a.admit().expect("room");
        let second = a.admit().expect("room");
        second.admitted();
        let third = a.admit().expect("the pending first one makes room");
        assert!(first.evicted.is_cancelled());
        assert!(!second.evicted.is_cancelled());
        drop(first);
        assert_eq!(a.open(), 2);
        third.admitted();
        // Both open connections sent requests: nobody is evicted, the newcomer is refused.
        assert!(a.admit().is_none());
        drop(second);
        assert!(a.admit().is_some());
    }

    /// Evicted connections whose tasks have not run yet (a busy machine) do not hold their
    /// places: the clients the evictions made room for get in, and the count stays exact when
    /// the evicted tickets are finally dropped.
    #[test]
    fn an_eviction_frees_its_place_before_its_task_runs() {
        let a = Admission::new(2);
        let mut lagging = Vec::new();
        let mut last = None;
        for _ in 0..10 {
            // Idle clients that never send a request, arriving faster than evicted tasks end.
            let t = a
                .admit()
                .expect("an idle client evicts the oldest pending one");
            lagging.extend(last.replace(t));
        }
        assert_eq!(a.open(), 2);
        let real = a.admit().expect("a real client still gets in");
        real.admitted();
        assert_eq!(a.open(), 2);
        drop(lagging);
        assert_eq!(a.open(), 2, "evicted tickets dropped late change nothing");
        drop(last);
        assert_eq!(a.open(), 1);
        drop(real);
        assert_eq!(a.open(), 0);
    }

    #[test]
    fn relieving_closes_only_pending_connections() {
        let a = Admission::new(10);
        let t = a.admit().expect("room");
        t.admitted();
        assert!(!a.relieve());
        let p = a.admit().expect("room");
        assert!(a.relieve());
        assert!(p.evicted.is_cancelled());
    }

    #[test]
    fn the_cap_is_half_of_what_the_descriptor_limit_leaves() {
        // Debian's default soft limit: (1024 - 64) / 2.
        assert_eq!(max_connections_for(1024), 480);
        assert_eq!(max_connections_for(65_536), 32_736);
        // A tiny limit still lets a few clients in; an unlimited one is bounded.
        assert_eq!(max_connections_for(0), 16);
        assert_eq!(max_connections_for(80), 16);
        assert_eq!(max_connections_for(u64::MAX), 1 << 20);
    }
}
