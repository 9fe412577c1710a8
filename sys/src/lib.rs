//! The system calls cdp-relay makes that neither the standard library nor `nix` wraps safely:
//! a thread's share of the CPU, returning freed memory to the kernel, and a child that dies with
//! its parent. This is the workspace's one module that allows `unsafe`; every other crate root
//! forbids it, so a new `unsafe` block has to come here and be reviewed with these.

#![allow(unsafe_code)]

/// Lowers the calling thread to nice 19, the lowest share of the CPU in the normal class: any
/// thread may lower itself, without a capability or an `RLIMIT_NICE`, and it is never starved.
/// False when the OS refused (the thread keeps its share).
#[cfg(target_os = "linux")]
pub fn lower_current_thread() -> bool {
    use nix::libc;
    // SAFETY: gettid has no preconditions; setpriority only reads its integer arguments. On
    // Linux, PRIO_PROCESS with a thread's id names that thread alone.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) };
    rc == 0
}

/// Per-thread nice values exist only on Linux here: always refused.
#[cfg(not(target_os = "linux"))]
pub fn lower_current_thread() -> bool {
    false
}

/// Returns the allocator's free pages to the kernel (glibc keeps them after a burst, and the
/// relay's resident size would stay at its peak).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn release_freed_memory() {
    // SAFETY: malloc_trim only reads and updates the allocator's own state, under its locks; 0
    // keeps no padding at the top of the heap.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

/// Nothing to return with other allocators.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_freed_memory() {}

/// Asks the kernel to kill the child `command` starts when the thread that starts it dies, so
/// even a relay killed with SIGKILL takes its browser (or wrapped server) along. The signal
/// fires when the *spawning thread* exits, not the process: start children from a thread that
/// lives as long as they should.
pub fn die_with_parent(command: &mut tokio::process::Command) {
    use nix::sys::signal::Signal;
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // calls are allowed: prctl(2) and getppid(2) are plain system calls; nothing allocates
    // (the error is built from a raw OS error code) and no lock is taken.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
                .map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
            // The parent may have died between fork and prctl: then nobody would signal us.
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nice value of the calling thread, from `/proc` (field 19 of its stat).
    #[cfg(target_os = "linux")]
    fn own_nice() -> i64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
        after_comm.split(' ').nth(19 - 3).unwrap().parse().unwrap()
    }

    /// As root, unprivileged, without capabilities: a thread always lowers itself, and only
    /// itself.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_lowers_itself_to_nice_19_and_no_other() {
        let before = own_nice();
        let lowered = std::thread::spawn(|| (lower_current_thread(), own_nice()))
            .join()
            .unwrap();
        assert_eq!(lowered, (true, 19));
        assert_eq!(own_nice(), before);
    }
}
