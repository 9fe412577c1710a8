//! The order evidence is read in: typed text is registered with the run's sanitizer before any
//! record that could echo it is sanitized, whatever path the record takes and however threads
//! are scheduled (a page echoing its field into the console on every `input` event had
//! the echo recorded in clear, because the echo reached a sanitizer before the keystroke that
//! caused it reached the registry).
//!
//! The argument, end to end (docs/architecture.md, *Evidence order*, says it in prose):
//!
//! 1. Every chunk the splice forwards gets a **stamp** from one counter, taken *before* its bytes
//!    are written. A keystroke's stamp is therefore taken before the browser can have read it,
//!    so before any echo of it exists; an echo's stamp (a browser → client chunk) is taken after
//!    it was read from the browser. Causes get smaller stamps than their effects.
//! 2. A client → browser chunk also holds a [`Chunk`] guard from before its write until its
//!    copies are offered to the tap. The passive observer's thread runs **gates**: read the
//!    counter (`w`), flip an epoch, wait until every guard taken under the old epoch is dropped.
//!    Then every client → browser chunk stamped below `w` has been offered — queued, or dropped
//!    and marked [`lost`](Order::lost) — and the thread pulls the queues and handles every copy
//!    stamped below `w` in stamp order. A guard taken as the epoch flips re-reads it and tries
//!    again (a retry's stamp is above `w`), so no chunk slips between the two.
//! 3. The passive observer registers typed text when it *handles* a keystroke, and it handles
//!    a browser → client copy (an echo on the client's own connection) only once every copy
//!    stamped below it was handled: the keystroke first.
//! 4. Every other reader of page text (the relay's own observer connection) calls
//!    [`Order::caught_up`] after receiving an event and before sanitizing anything: it reads the
//!    counter and waits until the passive observer has handled everything stamped below. The
//!    keystroke that caused the event was stamped before the browser had it, so below.
//! 5. A client → browser copy the queue had no room for may have been typing no one will ever
//!    register: from the first such loss on, the sanitizer withholds free text for the rest of
//!    the run (`Sanitizer::withhold_free_text`), before anything stamped after the loss is
//!    handled or any waiter is let through.
//!
//! The splice's cost: one `fetch_add` per chunk each way, and for client → browser chunks an
//! epoch read and a counter increment and decrement. Nothing waits, nothing locks. The waiting is
//! done by the passive thread (which polls) and by readers off the hot path.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::thread::Thread;
use tokio::sync::Notify;

/// Shared by the tap (stamps and guards), the passive observer's thread (gates, handling) and
/// readers that must wait for it.
pub struct Order {
    /// The next stamp.
    next: AtomicU64,
    /// Gate epoch: its low bit says which counter new guards increment.
    epoch: AtomicU64,
    /// Client → browser chunks between "stamped" and "offered", per epoch parity.
    writing: [AtomicU64; 2],
    /// Every client → browser copy stamped below this has been handled by the passive observer
    /// (browser → client copies may arrive later than their stamp says; they are handled in
    /// order with what is still waiting, never before a keystroke stamped below them).
    handled: AtomicU64,
    /// The smallest stamp of a lost client → browser copy (`u64::MAX`: none).
    lost: AtomicU64,
    /// Wakes readers waiting in [`Order::caught_up`].
    progress: Notify,
    /// The passive observer's thread, woken when a reader waits (it polls otherwise).
    passive: OnceLock<Thread>,
    /// Readers in [`Order::caught_up`] that found the passive thread behind.
    waiting: AtomicU64,
    /// A gate the passive thread started and has not seen through.
    gate: Mutex<Option<Gate>>,
    /// Gates tried: a test can tell that the consumer went round.
    tries: AtomicU64,
}

impl Default for Order {
    fn default() -> Order {
        Order::new()
    }
}

impl std::fmt::Debug for Order {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Order")
            .field("next", &self.next.load(SeqCst))
            .field("handled", &self.handled.load(SeqCst))
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy)]
struct Gate {
    /// Stamps below this are covered once the gate passes.
    below: u64,
    /// The parity whose guards must all be dropped.
    parity: usize,
}

/// A forwarded chunk's place in the order; for a client → browser chunk, also the promise that
/// its copies are offered before the guard is dropped. Drop it after the last offer.
#[derive(Debug)]
pub struct Chunk<'a> {
    stamp: u64,
    guard: Option<(&'a Order, usize)>,
}

impl Chunk<'_> {
    /// A chunk outside any order (evidence off, tests).
    pub fn unordered() -> Chunk<'static> {
        Chunk {
            stamp: 0,
            guard: None,
        }
    }

    /// A browser → client chunk: a place in the order, nothing to wait for.
    pub fn stamped(stamp: u64) -> Chunk<'static> {
        Chunk { stamp, guard: None }
    }

    /// The chunk's stamp.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }
}

impl Drop for Chunk<'_> {
    fn drop(&mut self) {
        if let Some((order, parity)) = self.guard.take() {
            order.writing[parity].fetch_sub(1, SeqCst);
        }
    }
}

impl Order {
    /// A fresh order with nothing lost.
    pub fn new() -> Order {
        Order {
            next: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            writing: [AtomicU64::new(0), AtomicU64::new(0)],
            handled: AtomicU64::new(0),
            lost: AtomicU64::new(u64::MAX),
            progress: Notify::new(),
            passive: OnceLock::new(),
            waiting: AtomicU64::new(0),
            gate: Mutex::new(None),
            tries: AtomicU64::new(0),
        }
    }

    /// A stamp for something that needs no guard: a browser → client chunk (taken before its
    /// write, after it was read from the browser), a session opening or closing.
    pub fn stamp(&self) -> u64 {
        self.next.fetch_add(1, SeqCst)
    }

    /// A stamp and a guard for a client → browser chunk, taken before its bytes are written.
    /// Never waits: a retry happens only if a gate flips the epoch between two reads.
    pub fn guarded(&self) -> Chunk<'_> {
        loop {
            let epoch = self.epoch.load(SeqCst);
            let parity = (epoch & 1) as usize;
            self.writing[parity].fetch_add(1, SeqCst);
            let stamp = self.next.fetch_add(1, SeqCst);
            if self.epoch.load(SeqCst) == epoch {
                return Chunk {
                    stamp,
                    guard: Some((self, parity)),
                };
            }
            self.writing[parity].fetch_sub(1, SeqCst);
        }
    }

    /// A client → browser copy stamped `stamp` could not be queued.
    pub fn lost(&self, stamp: u64) {
        self.lost.fetch_min(stamp, SeqCst);
    }

    /// The smallest stamp of a lost client → browser copy, if any.
    pub fn first_lost(&self) -> Option<u64> {
        let lost = self.lost.load(SeqCst);
        (lost != u64::MAX).then_some(lost)
    }

    /// Passive thread: starts a gate if none is running and says whether it has passed. `Some(w)`:
    /// every client → browser chunk stamped below `w` has offered its copies (or lost them).
    pub fn try_gate(&self) -> Option<u64> {
        self.tries.fetch_add(1, SeqCst);
        let mut gate = self.gate.lock().unwrap_or_else(PoisonError::into_inner);
        let g = *gate.get_or_insert_with(|| {
            // The counter first: a guard stamped below `below` re-checks the epoch after its
            // stamp, so it either counts under the parity flipped away from, or retries with a
            // stamp at or above `below`.
            let below = self.next.load(SeqCst);
            let parity = (self.epoch.fetch_add(1, SeqCst) & 1) as usize;
            Gate { below, parity }
        });
        if self.writing[g.parity].load(SeqCst) == 0 {
            *gate = None;
            Some(g.below)
        } else {
            None
        }
    }

    /// How many gates the consumer has tried (tests wait on it instead of sleeping).
    pub fn gates_tried(&self) -> u64 {
        self.tries.load(SeqCst)
    }

    /// Passive thread: everything stamped below `below` has been handled.
    pub fn handled_below(&self, below: u64) {
        if self.handled.fetch_max(below, SeqCst) < below {
            self.progress.notify_waiters();
        }
    }

    /// Passive thread: it stops; no one should wait for it any more.
    pub fn close(&self) {
        self.handled_below(u64::MAX);
    }

    /// Passive thread: this is the thread readers wake.
    pub fn set_passive(&self, thread: Thread) {
        let _ = self.passive.set(thread);
    }

    /// Passive thread: a reader is waiting for it right now.
    pub fn awaited(&self) -> bool {
        self.waiting.load(SeqCst) > 0
    }

    /// The stamp the next chunk will get: everything forwarded so far is stamped below it.
    pub fn issued(&self) -> u64 {
        self.next.load(SeqCst)
    }

    /// True once everything stamped below `below` was handled.
    pub fn handled(&self, below: u64) -> bool {
        self.handled.load(SeqCst) >= below
    }

    /// Waits until the passive observer has handled every copy stamped before now — so every
    /// keystroke that could have caused what the caller received before calling is registered
    /// with the sanitizer. Call after receiving page text, before sanitizing it. Returns at once
    /// when there is nothing to wait for, or once the passive observer has stopped.
    pub async fn caught_up(&self) {
        let below = self.next.load(SeqCst);
        let mut waiting = None;
        loop {
            let progressed = self.progress.notified();
            tokio::pin!(progressed);
            progressed.as_mut().enable();
            if self.handled(below) {
                return;
            }
            if waiting.is_none() {
                // The count drops with the future, however it ends.
                waiting = Some(Waiting::new(self));
            }
            if let Some(t) = self.passive.get() {
                // It polls every few milliseconds; a reader waiting need not.
                t.unpark();
            }
            progressed.await;
        }
    }
}

/// A caller waiting for work the passive thread does after it caught up (a typing step's
/// verdict, which it takes on its own time): counted in [`Order::awaited`] while it lives, so the
/// thread does not go to sleep on its queues meanwhile. From [`Order::attend`].
#[derive(Debug)]
pub struct Attending<'a> {
    _waiting: Waiting<'a>,
}

impl Order {
    /// The caller waits for the passive thread's work beyond the order until the guard is
    /// dropped: the thread is woken now, and polls while the guard lives.
    pub fn attend(&self) -> Attending<'_> {
        let waiting = Waiting::new(self);
        if let Some(t) = self.passive.get() {
            t.unpark();
        }
        Attending { _waiting: waiting }
    }
}

/// One reader counted in [`Order::awaited`] while it exists.
#[derive(Debug)]
struct Waiting<'a>(&'a Order);

impl<'a> Waiting<'a> {
    fn new(order: &'a Order) -> Waiting<'a> {
        order.waiting.fetch_add(1, SeqCst);
        Waiting(order)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    /// A reader waiting in [`Order::caught_up`], as a task of the current runtime.
    fn reader(order: &Arc<Order>) -> tokio::task::JoinHandle<()> {
        let order = order.clone();
        tokio::spawn(async move { order.caught_up().await })
    }

    #[test]
    fn a_gate_waits_for_guards_stamped_before_it_and_only_those() {
        let order = Order::new();
        let early = order.guarded();
        let before = order.stamp();
        assert!(early.stamp() < before);
        // The guard is held: the gate cannot pass, however often it is tried.
        for _ in 0..3 {
            assert_eq!(order.try_gate(), None);
        }
        // A guard taken after the gate started counts under the new parity: not waited for.
        let late = order.guarded();
        drop(early);
        let below = order.try_gate().expect("the early guard is gone");
        assert!(below > before && below <= late.stamp());
        // The next gate waits for the late guard.
        assert_eq!(order.try_gate(), None);
        drop(late);
        assert!(order.try_gate().is_some());
    }

    #[test]
    fn waiters_return_once_handled_and_when_the_observer_stops() {
        let order = Arc::new(Order::new());
        runtime().block_on(async {
            // Nothing stamped yet: nothing to wait for.
            order.caught_up().await;
            order.stamp();
            let waiting = reader(&order);
            tokio::task::yield_now().await;
            assert!(!waiting.is_finished());
            order.handled_below(1);
            waiting.await.expect("returns once handled");
            order.stamp();
            let waiting = reader(&order);
            order.close();
            waiting.await.expect("returns when the observer stops");
        });
    }

    #[test]
    fn a_reader_that_must_wait_is_counted_while_it_waits() {
        let order = Arc::new(Order::new());
        runtime().block_on(async {
            // Nothing to wait for: nobody counted.
            order.caught_up().await;
            assert!(!order.awaited());
            order.stamp();
            assert_eq!(order.issued(), 1);
            let waiting = reader(&order);
            tokio::task::yield_now().await;
            assert!(order.awaited());
            // Woken without progress (another reader's notification): still counted once.
            order.progress.notify_waiters();
            tokio::task::yield_now().await;
            assert_eq!(order.waiting.load(SeqCst), 1);
            order.handled_below(1);
            waiting.await.expect("returns once handled");
            assert!(!order.awaited());
            // A reader given up on (its future dropped) is no longer counted.
            order.stamp();
            let given_up = reader(&order);
            tokio::task::yield_now().await;
            assert!(order.awaited());
            given_up.abort();
            let _ = given_up.await;
            assert!(!order.awaited());
        });
    }

    #[test]
    fn an_attending_caller_is_counted_while_it_lives() {
        let order = Order::new();
        assert!(!order.awaited());
        let attending = order.attend();
        assert!(order.awaited());
        drop(attending);
        assert!(!order.awaited());
    }

    #[test]
    fn the_first_loss_is_kept() {
        let order = Order::new();
        assert_eq!(order.first_lost(), None);
        order.lost(9);
        order.lost(4);
        order.lost(7);
        assert_eq!(order.first_lost(), Some(4));
    }
}
