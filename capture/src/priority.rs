//! The evidence threads' CPU class: below the hot path while they keep up, equal when they fall
//! behind or when someone waits for them.
//!
//! On a machine with two cores shared by the client, the browser and the relay, an evidence
//! thread that wakes to work through a batch can hold the core a forwarding thread is about to
//! be woken on for a scheduler slice. For the run writer that showed as +90…+190 µs at p99 of a
//! round trip, against +30…+40 µs forwarding only; for the observer, during a flood of
//! `Network.*` events, as a probe's p99 at ~4× nginx's against ~1× in the idle class
//! (BENCHMARKS.md, issue 19 round 6). In Linux's `SCHED_IDLE` class any runnable normal thread
//! preempts the thread at once. But a fully busy machine would then starve it for as long as it
//! stays busy, so a thread returns to the normal class:
//!
//! - when its queue backs up past a quarter (the thread itself, on its next round);
//! - while someone waits for it: a producer blocked on the writer's full queue, a reader asking
//!   the writer to sync or finalize, the relay stopping ([`Lifter`], lifted at once by the
//!   waiting thread, and kept normal while the thread works on what was asked);
//! - for the observer, when a reader waits for it (`Order::caught_up`: the relay's own observer
//!   and screenshots must not wait behind other work) — lifted at once by the reader's thread;
//! - for the observer, when it has not handled within [`MAX_LAG`] what was stamped before
//!   ([`watch`]: the typing and screenshot decisions it makes are about moments in the past, but
//!   a verdict asked of the page long after the typing is worth less);
//!
//! and goes back to idle when it finds its queue empty and nobody waiting.
//!
//! Leaving `SCHED_IDLE` needs `CAP_SYS_NICE` or an `RLIMIT_NICE` of 20 (`ulimit -e 20`); without
//! either a thread could never catch up, so the threads then stay in the normal class.

use cdp_relay_sys::{current_tid, set_idle};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

/// How far behind the observer may fall, in the idle class, before it is lifted.
pub(super) const MAX_LAG: Duration = Duration::from_millis(25);

/// One thread's class, changed by the thread itself or lifted by another.
#[derive(Debug)]
pub(super) struct Class {
    /// The thread's id (`gettid`); 0 where classes are not used.
    tid: i32,
    /// Held across the change, so a lift and a return to idle happen one after the other.
    idle: Mutex<bool>,
}

impl Class {
    fn set(&self, idle: bool) -> bool {
        let mut now = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if *now == idle {
            return true;
        }
        let changed = set_idle(self.tid, idle);
        if changed {
            *now = idle;
        }
        changed
    }

    /// Back to the normal class now (from any thread).
    pub(super) fn lift(&self) {
        self.set(false);
    }

    pub(super) fn is_idle(&self) -> bool {
        *self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Lifts an evidence thread from wherever something waits for it (a full queue, a sync, the
/// end of the run); it knows the thread once the thread has started.
#[derive(Debug, Default)]
pub(crate) struct Lifter(OnceLock<Weak<Class>>);

impl Lifter {
    /// The thread, if it is in the idle class, moves to the normal class now.
    pub(crate) fn lift(&self) {
        if let Some(class) = self.0.get().and_then(Weak::upgrade) {
            class.lift();
        }
    }

    /// From now on, [`Lifter::lift`] lifts the thread `priority` tracks.
    pub(super) fn know(&self, priority: &Priority) {
        if let Some(class) = priority.class() {
            let _ = self.0.set(class);
        }
    }
}

/// Tracks the calling thread's class; call [`Priority::adapt`] with its queue's backlog.
pub(super) struct Priority {
    capacity: usize,
    /// `None` where the thread stays in the normal class.
    class: Option<Arc<Class>>,
}

impl Priority {
    /// Moves the calling thread to the idle class, if it could later leave it again.
    pub(super) fn start(capacity: usize) -> Priority {
        let class = reversible().then(|| {
            Arc::new(Class {
                tid: current_tid(),
                idle: Mutex::new(false),
            })
        });
        let class = class.filter(|c| c.set(true));
        Priority { capacity, class }
    }

    /// The thread's class, for another thread to lift it while this thread runs; `None` when
    /// it never leaves the normal class.
    pub(super) fn class(&self) -> Option<Weak<Class>> {
        self.class.as_ref().map(Arc::downgrade)
    }

    /// `backlog` is how many items wait in the thread's queue right now; `awaited` says whether
    /// someone waits for the thread right now (it then stays in the normal class).
    pub(super) fn adapt(&mut self, backlog: usize, awaited: impl Fn() -> bool) {
        let Some(class) = &self.class else {
            return;
        };
        let Some(idle) = next_class(class.is_idle(), backlog, self.capacity, awaited()) else {
            return;
        };
        if class.set(idle) && idle && awaited() {
            // A reader began waiting as the thread went idle; its lift may have come first.
            class.set(false);
        }
    }

    /// The normal class from now on (the thread is finishing).
    pub(super) fn stay_normal(&mut self) {
        if let Some(class) = self.class.take() {
            class.set(false);
        }
    }
}

/// The class to switch to, if any: normal when the backlog passes a quarter of the queue or
/// someone waits, idle again once the queue is empty and nobody does.
fn next_class(idle: bool, backlog: usize, capacity: usize, awaited: bool) -> Option<bool> {
    if idle && (backlog > capacity / 4 || awaited) {
        Some(false)
    } else if !idle && backlog == 0 && !awaited {
        Some(true)
    } else {
        None
    }
}

/// Lifts `class` whenever its thread has not handled, [`MAX_LAG`] later, everything stamped
/// before; ends with the [`Priority`] that owns `class`. `issued()`: the next stamp;
/// `handled(stamp)`: whether everything stamped below `stamp` was handled.
pub(super) fn watch(
    class: Weak<Class>,
    issued: impl Fn() -> u64 + Send + 'static,
    handled: impl Fn(u64) -> bool + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("cdp-relay-lag".into())
        .spawn(move || loop {
            let below = issued();
            std::thread::sleep(MAX_LAG);
            let Some(class) = class.upgrade() else {
                return;
            };
            if class.is_idle() && !handled(below) {
                class.lift();
            }
        })
}

/// Whether this process may return a thread from the idle class, found out once on a
/// throwaway thread (a thread that tried and failed would be stuck idle).
fn reversible() -> bool {
    static REVERSIBLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REVERSIBLE.get_or_init(|| {
        std::thread::Builder::new()
            .name("cdp-relay-probe".into())
            .spawn(|| {
                let tid = current_tid();
                set_idle(tid, true) && set_idle(tid, false)
            })
            .ok()
            .and_then(|t| t.join().ok())
            .unwrap_or(false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backlog_past_a_quarter_or_a_reader_lifts_the_thread_and_an_empty_queue_lowers_it() {
        assert_eq!(next_class(true, 0, 16, false), None);
        assert_eq!(next_class(true, 4, 16, false), None);
        assert_eq!(next_class(true, 5, 16, false), Some(false));
        assert_eq!(next_class(true, 0, 16, true), Some(false));
        assert_eq!(next_class(false, 5, 16, false), None);
        assert_eq!(next_class(false, 1, 16, false), None);
        assert_eq!(next_class(false, 0, 16, true), None);
        assert_eq!(next_class(false, 0, 16, false), Some(true));
    }

    /// The scheduling policy of thread `tid` of this process (5 = `SCHED_IDLE`).
    #[cfg(target_os = "linux")]
    fn policy(tid: i32) -> i32 {
        // Field 41 of a task's stat is its scheduling policy.
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
        after_comm.split(' ').nth(41 - 3).unwrap().parse().unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_thread_really_changes_class_and_back() {
        std::thread::spawn(|| {
            let tid = current_tid();
            let mut p = Priority::start(8);
            if !reversible() {
                // Unprivileged with RLIMIT_NICE 0: the thread must stay where it can catch up.
                assert!(p.class().is_none());
                p.adapt(0, || false);
                assert_eq!(policy(tid), nix::libc::SCHED_OTHER);
                return;
            }
            assert_eq!(policy(tid), nix::libc::SCHED_IDLE);
            p.adapt(3, || false);
            assert_eq!(policy(tid), nix::libc::SCHED_OTHER);
            p.adapt(0, || false);
            assert_eq!(policy(tid), nix::libc::SCHED_IDLE);
            // Nothing queued, but a reader waits: normal until it stops waiting.
            p.adapt(0, || true);
            assert_eq!(policy(tid), nix::libc::SCHED_OTHER);
            p.adapt(0, || false);
            assert_eq!(policy(tid), nix::libc::SCHED_IDLE);
            p.stay_normal();
            p.adapt(0, || false);
            assert_eq!(policy(tid), nix::libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }

    /// Another thread lifts an idle thread at once (through a [`Lifter`]), and the lag watch
    /// lifts one that does not keep up; the thread goes back to idle on its own next round.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_waiter_or_the_lag_watch_lifts_the_thread_from_outside() {
        if !reversible() {
            return;
        }
        let lifter = Arc::new(Lifter::default());
        // Before the thread started: nothing to lift, no harm.
        lifter.lift();
        let (to_main, from_thread) = std::sync::mpsc::channel();
        let (to_thread, from_main) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn({
            let lifter = lifter.clone();
            move || {
                let mut p = Priority::start(8);
                lifter.know(&p);
                to_main.send((current_tid(), p.class().unwrap())).unwrap();
                // Each message from the main thread: one round with an empty queue.
                while from_main.recv().is_ok() {
                    p.adapt(0, || false);
                    to_main.send((current_tid(), p.class().unwrap())).unwrap();
                }
            }
        });
        let (tid, class) = from_thread.recv().unwrap();
        assert_eq!(policy(tid), nix::libc::SCHED_IDLE);
        lifter.lift();
        assert_eq!(policy(tid), nix::libc::SCHED_OTHER);
        to_thread.send(()).unwrap();
        from_thread.recv().unwrap();
        assert_eq!(policy(tid), nix::libc::SCHED_IDLE);
        // Stamp 1 was issued and is never handled: the watch lifts the thread.
        let watch = watch(class.clone(), || 1, |below| below == 0).unwrap();
        let lifted = (0..2_000).any(|_| {
            std::thread::sleep(Duration::from_millis(5));
            policy(tid) == nix::libc::SCHED_OTHER
        });
        assert!(lifted, "the watch never lifted the thread");
        drop(to_thread);
        thread.join().unwrap();
        // The thread and its class are gone: the watch ends, a lift does nothing.
        watch.join().unwrap();
        assert!(class.upgrade().is_none());
        lifter.lift();
    }
}
