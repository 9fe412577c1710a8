//! The evidence threads' share of the CPU: below the hot path, never starved.
//!
//! On a machine whose cores the client, the browser and the relay share, an evidence thread
//! that wakes to work through a batch can hold the core a forwarding thread is about to be woken
//! on, which shows at p99 of a round trip. The writer and the traffic reader therefore lower
//! themselves to nice 19: the scheduler then gives a runnable forwarding thread (nice 0) about 70
//! times their share, and still runs them on a busy machine, so nobody who waits for them (a
//! lock they hold, a sync, the end of the run) waits on a thread it cannot reach. Any thread may
//! lower itself, as the pod runs too (non-root, every capability dropped). Measured against the
//! alternatives (`SCHED_IDLE` with lifts, the normal class, a work budget): BENCHMARKS.md,
//! "Scheduling the evidence threads".

/// Lowers the calling evidence thread (see the module docs).
pub(crate) fn below_the_hot_path(thread: &str) {
    if !cdp_relay_sys::lower_current_thread() {
        tracing::debug!("{thread}: could not lower its CPU share; it competes with forwarding");
    }
}

/// The nice value of each thread of this process whose name starts with `prefix` (the kernel
/// keeps 15 bytes of a name).
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn nice_of_threads(prefix: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.trim_end().starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        if let Some(nice) = stat[close + 2..].split(' ').nth(19 - 3) {
            out.push(nice.parse().unwrap());
        }
    }
    out
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn a_thread_that_calls_it_runs_at_nice_19() {
        let nice = std::thread::Builder::new()
            .name("cpu-test-low".into())
            .spawn(|| {
                super::below_the_hot_path("test");
                super::nice_of_threads("cpu-test-low")
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(nice, vec![19]);
    }
}
