//! Hands the heap a burst of evidence work freed back to the OS once the relay is quiet.
//!
//! glibc keeps what a burst freed: each thread's arena stays at its peak. After an event flood a
//! recording relay's RSS stayed ~20 MiB above what it needed for the next workload, memory a
//! fleet pays per pod. Once the observer's queues have stayed empty for [`QUIET`] after at least
//! [`BURST`] copies, `malloc_trim` returns the whole free pages of every arena. It runs on the
//! observer's thread, never on the forwarding path. It holds one arena's lock at a time while it
//! trims it (0.6–2.5 ms in all, measured after a flood), so a forwarding thread that allocates
//! meanwhile waits: at most once per burst, at the first message after a quiet second.

use std::time::{Duration, Instant};

/// Copies handled since the last trim before a quiet spell is worth a trim.
const BURST: usize = 1024;

/// How long the queues must stay empty.
const QUIET: Duration = Duration::from_secs(1);

/// Tracks the observer's rounds; see the module docs.
#[derive(Default)]
pub(super) struct Trim {
    handled: usize,
    quiet_since: Option<Instant>,
}

impl Trim {
    /// A round handled `handled` copies (more than none): the quiet spell starts again.
    pub(super) fn busy(&mut self, handled: usize) {
        self.handled = self.handled.saturating_add(handled);
        self.quiet_since = None;
    }

    /// A round found the queues empty; trims when one is due.
    pub(super) fn quiet(&mut self) {
        if self.due(Instant::now()) {
            cdp_relay_sys::release_freed_memory();
        }
    }

    /// Whether a trim is due at `now`, in a quiet round.
    fn due(&mut self, now: Instant) -> bool {
        let since = *self.quiet_since.get_or_insert(now);
        if self.handled < BURST || now.duration_since(since) < QUIET {
            return false;
        }
        self.handled = 0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trim_follows_a_burst_and_a_quiet_second_once() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut trim = Trim::default();
        // A small trickle never trims, however quiet it gets after.
        trim.busy(BURST - 1);
        assert!(!trim.due(at(10)));
        assert!(!trim.due(at(5_000)));
        // The burst is complete; the quiet spell restarts with it.
        trim.busy(1);
        assert!(!trim.due(at(5_020)));
        assert!(!trim.due(at(6_019)), "not yet a second quiet");
        assert!(trim.due(at(6_020)));
        // Once per burst.
        assert!(!trim.due(at(9_000)));
        // Work inside the quiet second restarts it.
        trim.busy(BURST);
        assert!(!trim.due(at(9_020)));
        trim.busy(5);
        assert!(!trim.due(at(9_510)));
        assert!(!trim.due(at(10_400)));
        assert!(trim.due(at(10_510)));
    }
}
