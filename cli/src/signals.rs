//! Process signals that end a relay command: Ctrl-C (SIGINT) and SIGTERM.
//!
//! Listen before anything is printed: a supervisor may send SIGTERM the moment it reads the
//! endpoint line, and a signal that arrives before its handler is registered kills the process
//! without finalizing the run.

use tokio::signal::unix::{signal, Signal, SignalKind};

/// Registered handlers for SIGINT and SIGTERM.
pub(crate) struct Shutdown {
    interrupt: Option<Signal>,
    terminate: Option<Signal>,
}

impl Shutdown {
    /// Registers the handlers now. Call from inside the runtime, before serving.
    pub(crate) fn listen() -> Shutdown {
        let register = |kind: SignalKind, name: &str| match signal(kind) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch {name}; it will not stop the relay cleanly");
                None
            }
        };
        Shutdown {
            interrupt: register(SignalKind::interrupt(), "SIGINT"),
            terminate: register(SignalKind::terminate(), "SIGTERM"),
        }
    }

    /// Resolves with the signal's name when the process is asked to stop.
    pub(crate) async fn recv(&mut self) -> &'static str {
        async fn next(s: &mut Option<Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = next(&mut self.interrupt) => "SIGINT",
            _ = next(&mut self.terminate) => "SIGTERM",
        }
    }
}
