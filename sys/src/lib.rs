//! The system calls cdp-relay makes that neither the standard library nor `nix` wraps safely:
//! returning freed memory to the kernel, and a child that dies with
//! its parent. This is the workspace's one module that allows `unsafe`; every other crate root
//! forbids it, so a new `unsafe` block has to come here and be reviewed with these.

#![allow(unsafe_code)]

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
