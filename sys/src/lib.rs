//! The system calls cdp-relay makes that neither the standard library nor `nix` wraps safely:
//! a thread's scheduling class, returning freed memory to the kernel, and a child that dies with
//! its parent. This is the workspace's one module that allows `unsafe`; every other crate root
//! forbids it, so a new `unsafe` block has to come here and be reviewed with these.

#![allow(unsafe_code)]

/// The kernel's id of the calling thread (what `/proc/self/task/TID` and `sched_setscheduler`
/// name); 0 off Linux.
#[cfg(target_os = "linux")]
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { nix::libc::gettid() }
}

/// The kernel's id of the calling thread; 0 off Linux.
#[cfg(not(target_os = "linux"))]
pub fn current_tid() -> i32 {
    0
}

/// Puts thread `tid` of this process in the idle scheduling class (`SCHED_IDLE`) or back in the
/// normal one; false when the OS refused (the thread keeps its class).
#[cfg(target_os = "linux")]
pub fn set_idle(tid: i32, idle: bool) -> bool {
    use nix::libc;
    let policy = if idle {
        libc::SCHED_IDLE
    } else {
        libc::SCHED_OTHER
    };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid, initialised struct that outlives the call, which only reads it;
    // a `tid` that is not ours or no longer exists makes the call fail, nothing worse.
    let rc = unsafe { libc::sched_setscheduler(tid, policy, &param) };
    rc == 0
}

/// Scheduling classes exist only on Linux here: always refused.
#[cfg(not(target_os = "linux"))]
pub fn set_idle(_tid: i32, _idle: bool) -> bool {
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

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_knows_its_id_and_an_unknown_thread_cannot_be_rescheduled() {
        let main = current_tid();
        assert!(main > 0);
        let other = std::thread::spawn(current_tid).join().unwrap();
        assert_ne!(main, other);
        // A thread id that no longer exists: refused, not a crash.
        assert!(!set_idle(i32::MAX, true));
    }
}
