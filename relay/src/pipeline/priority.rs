//! The run writer's CPU class: below the hot path while it keeps up, equal when it falls behind.
//!
//! On a machine with two cores shared by the client, the browser and the relay, an evidence
//! thread that wakes to work through a batch can hold the core a forwarding thread is about to
//! be woken on for a scheduler slice: that showed as +90…+190 µs at p99 of a round trip with
//! evidence on, against +30…+40 µs forwarding only. In Linux's `SCHED_IDLE` class any runnable
//! normal thread preempts the writer at once. But a fully busy machine would then starve it for
//! as long as it stays busy, so once its queue backs up past a quarter it returns to the normal
//! class to catch up, and goes back to idle when its queue is seen empty.
//!
//! Only the writer: the observer thread decides what a frame may show and what a typing step
//! was typed into, and those decisions must not lag the page.
//!
//! Leaving `SCHED_IDLE` needs `CAP_SYS_NICE` or an `RLIMIT_NICE` of 20 (`ulimit -e 20`); without
//! either a thread could never catch up, so the threads then stay in the normal class.

/// Tracks one thread's class; call [`Priority::adapt`] with its queue's backlog.
pub(super) struct Priority {
    capacity: usize,
    idle: bool,
}

impl Priority {
    /// Moves the calling thread to the idle class, if it could later leave it again.
    pub(super) fn start(capacity: usize) -> Priority {
        let idle = reversible() && set_idle(true);
        Priority { capacity, idle }
    }

    /// `backlog` is how many items wait in the thread's queue right now.
    pub(super) fn adapt(&mut self, backlog: usize) {
        if !reversible() {
            return;
        }
        if let Some(idle) = next_class(self.idle, backlog, self.capacity) {
            if set_idle(idle) {
                self.idle = idle;
            }
        }
    }
}

/// The class to switch to, if any: normal when the backlog passes a quarter of the queue, idle
/// again once it is empty.
fn next_class(idle: bool, backlog: usize, capacity: usize) -> Option<bool> {
    if idle && backlog > capacity / 4 {
        Some(false)
    } else if !idle && backlog == 0 {
        Some(true)
    } else {
        None
    }
}

/// Whether this process may return a thread from the idle class, found out once on a
/// throwaway thread (a thread that tried and failed would be stuck idle).
fn reversible() -> bool {
    static REVERSIBLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REVERSIBLE.get_or_init(|| {
        std::thread::Builder::new()
            .name("cdp-relay-probe".into())
            .spawn(|| set_idle(true) && set_idle(false))
            .ok()
            .and_then(|t| t.join().ok())
            .unwrap_or(false)
    })
}

/// Sets the calling thread's class; false when the OS refused (the thread keeps its class).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn set_idle(idle: bool) -> bool {
    use nix::libc;
    let policy = if idle {
        libc::SCHED_IDLE
    } else {
        libc::SCHED_OTHER
    };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 names the calling thread; `param` is a valid, initialised struct that
    // outlives the call, which only reads it.
    let rc = unsafe { libc::sched_setscheduler(0, policy, &param) };
    rc == 0
}

#[cfg(not(target_os = "linux"))]
fn set_idle(_idle: bool) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backlog_past_a_quarter_lifts_the_thread_and_an_empty_queue_lowers_it() {
        assert_eq!(next_class(true, 0, 16), None);
        assert_eq!(next_class(true, 4, 16), None);
        assert_eq!(next_class(true, 5, 16), Some(false));
        assert_eq!(next_class(false, 5, 16), None);
        assert_eq!(next_class(false, 1, 16), None);
        assert_eq!(next_class(false, 0, 16), Some(true));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_thread_really_changes_class_and_back() {
        fn policy() -> i32 {
            // Field 41 of /proc/thread-self/stat is the scheduling policy (5 = SCHED_IDLE).
            let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
            let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
            after_comm.split(' ').nth(41 - 3).unwrap().parse().unwrap()
        }
        std::thread::spawn(|| {
            let mut p = Priority::start(8);
            if !reversible() {
                // Unprivileged with RLIMIT_NICE 0: the thread must stay where it can catch up.
                assert!(!p.idle);
                p.adapt(0);
                assert_eq!(policy(), nix::libc::SCHED_OTHER);
                return;
            }
            assert!(p.idle);
            assert_eq!(policy(), nix::libc::SCHED_IDLE);
            p.adapt(3);
            assert_eq!(policy(), nix::libc::SCHED_OTHER);
            assert!(!p.idle);
            p.adapt(0);
            assert_eq!(policy(), nix::libc::SCHED_IDLE);
        })
        .join()
        .unwrap();
    }
}
