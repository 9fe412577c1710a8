//! Process signals that end a relay command: Ctrl-C (SIGINT) and SIGTERM.
//!
//! Listeners are installed when [`Shutdown::listen`] is called — before the endpoint is printed —
//! so a signal sent right after the endpoint line is never the default "terminate at once".

use tokio::signal::unix::{signal, Signal, SignalKind};

/// Installed signal listeners.
pub(crate) struct Shutdown {
    int: Option<Signal>,
    term: Option<Signal>,
}

impl Shutdown {
    /// Installs the listeners now (call from within the runtime).
    pub(crate) fn listen() -> Shutdown {
        let install = |kind: SignalKind, name: &str| match signal(kind) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch {name}");
                None
            }
        };
        Shutdown {
            int: install(SignalKind::interrupt(), "SIGINT"),
            term: install(SignalKind::terminate(), "SIGTERM"),
        }
    }

    /// Resolves with the signal's name when the process is asked to stop.
    pub(crate) async fn wait(mut self) -> &'static str {
        async fn next(s: &mut Option<Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            _ = next(&mut self.int) => "SIGINT",
            _ = next(&mut self.term) => "SIGTERM",
        }
    }
}

/// Listens and waits in one go (listeners are installed only when first polled).
#[allow(dead_code)] // Kept for commands that call it (the demo's driver); prefer `Shutdown`.
pub(crate) async fn shutdown_signal() -> &'static str {
    Shutdown::listen().wait().await
}
