//! The evidence threads' CPU class: below the hot path while they keep up, equal when they fall
//! behind or when someone waits for them.
//!
//! On a machine with two cores shared by the client, the browser and the relay, an evidence
//! thread that wakes to work through a batch can hold the core a forwarding thread is about to
//! be woken on for a scheduler slice, which shows at p99 of a round trip (BENCHMARKS.md). In
//! Linux's `SCHED_IDLE` class any runnable normal thread preempts the thread at once. But a fully
//! busy machine would then starve it for as long as it stays busy, so a thread returns to the
//! normal class:
//!
//! - when its queue backs up past a quarter (the thread itself, on its next round);
//! - while someone waits for it: a producer blocked on the writer's full queue, a reader asking
//!   the writer to sync or finalize, the relay stopping ([`Lifter`], lifted at once by the
//!   waiting thread, and kept normal while the thread works on what was asked);
//! - while another thread waits for a lock it holds ([`Holders`]: the page table, the tool
//!   calls; a runtime worker must never wait on a holder the scheduler parked);
//! - for the observer, when a reader waits for it (`Order::caught_up`: the relay's own observer
//!   and screenshots must not wait behind other work) — lifted at once by the reader's thread;
//! - for the observer, when it has not handled within [`MAX_LAG`] what was stamped before
//!   ([`watch`]: the typing and screenshot decisions it makes are about moments in the past, but
//!   a verdict asked of the page long after the typing is worth less; the watch sleeps while the
//!   observer sleeps on empty queues, [`Dormant`]);
//!
//! and goes back to idle when it finds its queue empty and nobody waiting. A lift takes no lock:
//! it comes from threads that must not wait, and an idle thread can be parked anywhere.
//!
//! Leaving `SCHED_IDLE` needs `CAP_SYS_NICE` or an `RLIMIT_NICE` of 20 (`ulimit -e 20`); without
//! either a thread could never catch up, so the threads then stay in the normal class.

use cdp_relay_sys::{current_tid, set_idle};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError, Weak};
use std::thread::Thread;
use std::time::Duration;

/// How far behind the observer may fall, in the idle class, before it is lifted.
pub(super) const MAX_LAG: Duration = Duration::from_millis(25);

/// One thread's class, changed by the thread itself or lifted by another. Lock-free: a lift
/// comes from threads that must not wait (a runtime worker), and the thread itself may be
/// parked by the scheduler anywhere once it is idle.
#[derive(Debug)]
pub(super) struct Class {
    /// The thread's id (`gettid`); 0 where classes are not used.
    tid: i32,
    /// The class last set (true: idle).
    idle: AtomicBool,
    /// Lifts so far: a thread going idle checks after its change that none came meanwhile.
    lifts: AtomicU64,
}

impl Class {
    /// The thread itself goes idle (true) or normal (false); false if the change failed.
    fn set(&self, idle: bool) -> bool {
        if !idle {
            self.lift();
            return true;
        }
        if self.idle.load(SeqCst) {
            return true;
        }
        let seen = self.lifts.load(SeqCst);
        self.idle.store(true, SeqCst);
        if !set_idle(self.tid, true) {
            self.idle.store(false, SeqCst);
            return false;
        }
        if self.lifts.load(SeqCst) != seen {
            // Lifted while changing: the lift may have reached the kernel before this change.
            self.lift();
        }
        true
    }

    /// Back to the normal class now (from any thread).
    pub(super) fn lift(&self) {
        self.lifts.fetch_add(1, SeqCst);
        if self.idle.swap(false, SeqCst) {
            set_idle(self.tid, false);
        }
    }

    pub(super) fn is_idle(&self) -> bool {
        self.idle.load(SeqCst)
    }
}

thread_local! {
    /// The calling thread's class, when it is an evidence thread that uses one.
    static OWN: RefCell<Weak<Class>> = const { RefCell::new(Weak::new()) };
}

/// Whether the calling thread is in the idle class now.
fn caller_idle() -> bool {
    OWN.with(|own| own.borrow().upgrade().is_some_and(|c| c.is_idle()))
}

/// Lifts an evidence thread from wherever something waits for it (a full queue, a sync, the
/// end of the run, a lock it holds); it knows the thread once the thread has started.
#[derive(Debug, Default)]
pub(crate) struct Lifter(OnceLock<Weak<Class>>);

impl Lifter {
    /// The thread, if it is in the idle class, moves to the normal class now.
    pub(crate) fn lift(&self) {
        if let Some(class) = self.0.get().and_then(Weak::upgrade) {
            class.lift();
        }
    }

    /// From now on, [`Lifter::lift`] lifts the thread `priority` tracks; false if it already
    /// lifts another one (or `priority`'s thread never leaves the normal class).
    pub(super) fn know(&self, priority: &Priority) -> bool {
        match priority.class() {
            Some(class) => self.0.set(class).is_ok(),
            None => false,
        }
    }
}

/// The evidence threads that take a lock which other threads (runtime workers among them) take
/// too. Whoever finds the lock held lifts them before it waits, so a worker never waits on a
/// holder the scheduler parked in the idle class; an idle thread that takes the lock while
/// someone waits for it lifts itself (it may have taken it ahead of the waiter).
#[derive(Debug, Default)]
pub(crate) struct Holders {
    /// The run writer and the traffic reader's thread (and room for a spare).
    lifters: [Lifter; 3],
    /// Threads waiting for the lock now.
    waiting: AtomicUsize,
}

impl Holders {
    /// The thread `priority` tracks takes the lock from now on.
    pub(crate) fn held_by(&self, priority: &Priority) {
        if priority.class().is_some() && !self.lifters.iter().any(|l| l.know(priority)) {
            debug_assert!(false, "more evidence threads than Holders has room for");
        }
    }

    fn lift(&self) {
        self.lifters.iter().for_each(Lifter::lift);
    }

    /// How many threads are known to take the lock.
    #[cfg(test)]
    pub(crate) fn known(&self) -> usize {
        self.lifters.iter().filter(|l| l.0.get().is_some()).count()
    }

    /// Takes `mutex`, lifting its idle-class holders first when it is held.
    pub(crate) fn lock<'a, T>(&self, mutex: &'a Mutex<T>) -> MutexGuard<'a, T> {
        let guard = match mutex.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                self.waiting.fetch_add(1, SeqCst);
                if !caller_idle() {
                    self.lift();
                }
                let guard = mutex.lock().unwrap_or_else(PoisonError::into_inner);
                self.waiting.fetch_sub(1, SeqCst);
                guard
            }
        };
        if self.waiting.load(SeqCst) > 0 && caller_idle() {
            OWN.with(|own| own.borrow().upgrade().map(|c| c.lift()));
        }
        guard
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
                idle: AtomicBool::new(false),
                lifts: AtomicU64::new(0),
            })
        });
        let class = class.filter(|c| c.set(true));
        if let Some(c) = &class {
            OWN.with(|own| *own.borrow_mut() = Arc::downgrade(c));
        }
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

/// Whether the watched thread sleeps on its empty queues, with nothing it could lag behind:
/// its lag watch then sleeps too, until whatever wakes the thread wakes the watch.
#[derive(Debug, Default)]
pub(super) struct Dormant {
    asleep: AtomicBool,
    /// The thread is gone: the watch ends.
    ended: AtomicBool,
    watch: OnceLock<Thread>,
}

impl Dormant {
    /// The thread is about to sleep on its queues.
    pub(super) fn sleep(&self) {
        self.asleep.store(true, SeqCst);
    }

    /// The thread has work again (copies arrived): its watch looks again.
    pub(super) fn wake(&self) {
        if self.asleep.swap(false, SeqCst) {
            if let Some(watch) = self.watch.get() {
                watch.unpark();
            }
        }
    }

    /// The thread is gone (however it ended): the watch ends too.
    pub(super) fn end(&self) {
        self.ended.store(true, SeqCst);
        if let Some(watch) = self.watch.get() {
            watch.unpark();
        }
    }
}

/// Lifts `class` whenever its thread has not handled, [`MAX_LAG`] later, everything stamped
/// before; ends with the [`Priority`] that owns `class`. `issued()`: the next stamp;
/// `handled(stamp)`: whether everything stamped below `stamp` was handled. While `dormant`
/// says the thread sleeps on empty queues, the watch sleeps until [`Dormant::wake`] or
/// [`Dormant::end`].
pub(super) fn watch(
    class: Weak<Class>,
    dormant: Arc<Dormant>,
    issued: impl Fn() -> u64 + Send + 'static,
    handled: impl Fn(u64) -> bool + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let watch = std::thread::Builder::new()
        .name("cdp-relay-lag".into())
        .spawn({
            let dormant = dormant.clone();
            move || loop {
                if dormant.ended.load(SeqCst) || class.strong_count() == 0 {
                    return;
                }
                if dormant.asleep.load(SeqCst) {
                    std::thread::park();
                    continue;
                }
                let below = issued();
                std::thread::sleep(MAX_LAG);
                let Some(class) = class.upgrade() else {
                    return;
                };
                if class.is_idle() && !handled(below) {
                    class.lift();
                }
            }
        })?;
    let _ = dormant.watch.set(watch.thread().clone());
    Ok(watch)
}

/// Whether this process may return a thread from the idle class, found out once on a
/// throwaway thread (a thread that tried and failed would be stuck idle).
pub(super) fn reversible() -> bool {
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
        let dormant = Arc::new(Dormant::default());
        let watch = watch(class.clone(), dormant.clone(), || 1, |below| below == 0).unwrap();
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

    /// While its thread sleeps on empty queues the lag watch sleeps too (no lift, however long
    /// a stamp stays unhandled); woken, it watches again; ended, it ends.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_lag_watch_sleeps_while_its_thread_sleeps_on_its_queues() {
        if !reversible() {
            return;
        }
        let (to_main, from_thread) = std::sync::mpsc::channel();
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let p = Priority::start(8);
            to_main.send((current_tid(), p.class().unwrap())).unwrap();
            let _ = finished.recv();
        });
        let (tid, class) = from_thread.recv().unwrap();
        let dormant = Arc::new(Dormant::default());
        dormant.sleep();
        // Stamp 1 is never handled.
        let watch = watch(class, dormant.clone(), || 1, |below| below == 0).unwrap();
        std::thread::sleep(MAX_LAG * 8);
        assert_eq!(policy(tid), nix::libc::SCHED_IDLE, "lifted while asleep");
        dormant.wake();
        assert!(eventually(|| policy(tid) == nix::libc::SCHED_OTHER));
        dormant.end();
        watch.join().unwrap();
        drop(done);
        thread.join().unwrap();
    }

    /// Waits (polling, with a generous deadline) until `ready`; false if it never was.
    #[cfg(target_os = "linux")]
    fn eventually(ready: impl Fn() -> bool) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if ready() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    /// A normal thread that finds the page table held by an idle-class evidence thread lifts
    /// that thread before it waits: the holder, still holding the lock, sees its own class
    /// change (without the lift it would stay idle, however long the waiter waits).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_that_finds_the_table_held_lifts_the_idle_holder_before_it_waits() {
        use crate::pages::Pages;
        if !reversible() {
            return;
        }
        let pages = Arc::new(Pages::new(Arc::new(cdp_sanitize::Sanitizer::new()), true));
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn({
            let pages = pages.clone();
            move || {
                let mut p = Priority::start(8);
                pages.held_by(&p);
                let tid = current_tid();
                let table = pages.table();
                let idle_while_holding = policy(tid) == nix::libc::SCHED_IDLE;
                held_tx.send(()).unwrap();
                let lifted = eventually(|| policy(tid) == nix::libc::SCHED_OTHER);
                drop(table);
                // Its next round with nothing to do: idle again.
                p.adapt(0, || false);
                let idle_again = policy(tid) == nix::libc::SCHED_IDLE;
                (idle_while_holding, lifted, idle_again)
            }
        });
        held_rx.recv().unwrap();
        // This thread is in the normal class: it stands for a runtime worker.
        std::hint::black_box(pages.covered_count());
        let (idle_while_holding, lifted, idle_again) = holder.join().unwrap();
        assert!(idle_while_holding);
        assert!(
            lifted,
            "the holder stayed idle while a normal thread waited for it"
        );
        assert!(idle_again);
    }

    /// An idle-class thread that takes a lock someone is waiting for lifts itself (it may have
    /// taken it ahead of the waiter); nobody waiting, it stays idle. An idle-class thread that
    /// finds the lock held does not lift the holders (nobody in the normal class waits).
    #[cfg(target_os = "linux")]
    #[test]
    fn an_idle_thread_taking_a_lock_someone_waits_for_lifts_itself() {
        if !reversible() {
            return;
        }
        std::thread::spawn(|| {
            let holders = Holders::default();
            let lock = Mutex::new(());
            let p = Priority::start(8);
            holders.held_by(&p);
            let tid = current_tid();
            drop(holders.lock(&lock));
            assert_eq!(policy(tid), nix::libc::SCHED_IDLE);
            holders.waiting.fetch_add(1, SeqCst);
            drop(holders.lock(&lock));
            assert_eq!(policy(tid), nix::libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
        let holders = Arc::new(Holders::default());
        let lock = Arc::new(Mutex::new(()));
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn({
            let (holders, lock) = (holders.clone(), lock.clone());
            move || {
                let p = Priority::start(8);
                holders.held_by(&p);
                let _guard = holders.lock(&lock);
                held_tx.send(current_tid()).unwrap();
                go_rx.recv().unwrap();
                drop(p);
            }
        });
        let holder_tid = held_rx.recv().unwrap();
        let waiter = std::thread::spawn({
            let (holders, lock) = (holders.clone(), lock.clone());
            move || {
                let _p = Priority::start(8);
                drop(holders.lock(&lock));
            }
        });
        assert!(eventually(|| holders.waiting.load(SeqCst) == 1));
        assert_eq!(policy(holder_tid), nix::libc::SCHED_IDLE);
        go_tx.send(()).unwrap();
        holder.join().unwrap();
        waiter.join().unwrap();
    }
}

/// Priority inversion, measured (a benchmark, not a check: `cargo test -p cdp-capture --lib
/// priority::inversion -- --ignored --nocapture`). Two CPU hogs keep both cores busy; an
/// idle-class thread works on the page table the way the traffic reader does in a flood (about
/// half of its time under the table's lock); a normal-class thread, standing in for a runtime
/// worker reading the table (the direct reader, the status API), takes the lock every
/// millisecond and times the wait.
#[cfg(all(test, target_os = "linux"))]
mod inversion {
    use super::*;
    use crate::pages::Pages;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Instant, SystemTime};

    fn spin(d: Duration) {
        let t = Instant::now();
        while t.elapsed() < d {
            std::hint::spin_loop();
        }
    }

    /// Waits of the normal thread over `secs`, with the idle thread known to the table's
    /// [`Holders`] (`lifted`) or not (how it was before).
    fn measure(lifted: bool, secs: u64) -> Vec<Duration> {
        let pages = Arc::new(Pages::new(Arc::new(cdp_sanitize::Sanitizer::new()), true));
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for _ in 0..2 {
            let stop = stop.clone();
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    spin(Duration::from_micros(50));
                }
            }));
        }
        threads.push(std::thread::spawn({
            let (pages, stop) = (pages.clone(), stop.clone());
            move || {
                let mut p = Priority::start(16);
                if lifted {
                    pages.held_by(&p);
                }
                while !stop.load(Ordering::Relaxed) {
                    {
                        let _t = pages.table();
                        spin(Duration::from_micros(2));
                    }
                    drop(pages.take_closed(SystemTime::now()));
                    spin(Duration::from_micros(2));
                    // Back to idle after a lift, as the thread's next round would.
                    p.adapt(0, || false);
                }
                p.stay_normal();
            }
        }));
        let mut waits = Vec::new();
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
            let t = Instant::now();
            std::hint::black_box(pages.covered_count());
            waits.push(t.elapsed());
        }
        stop.store(true, Ordering::Relaxed);
        threads.into_iter().for_each(|t| t.join().unwrap());
        waits
    }

    fn report(what: &str, mut waits: Vec<Duration>) {
        waits.sort();
        let at = |q: f64| waits[((waits.len() - 1) as f64 * q) as usize];
        let over = |ms: u64| {
            waits
                .iter()
                .filter(|w| **w > Duration::from_millis(ms))
                .count()
        };
        let total: Duration = waits.iter().sum();
        eprintln!(
            "{what}: {} lock takes: p50 {:?} p99 {:?} p99.9 {:?} max {:?}; over 1 ms: {}, over 10 ms: {}; waited {:?} in all",
            waits.len(),
            at(0.5),
            at(0.99),
            at(0.999),
            at(1.0),
            over(1),
            over(10),
            total
        );
    }

    #[test]
    #[ignore = "a benchmark: run with --ignored --nocapture on an otherwise quiet machine"]
    fn inversion() {
        if !reversible() {
            eprintln!("no CAP_SYS_NICE / RLIMIT_NICE: the evidence threads never go idle here");
            return;
        }
        let secs: u64 = std::env::var("INVERSION_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(5);
        report("holder not lifted", measure(false, secs));
        report("holder lifted first", measure(true, secs));
    }
}
