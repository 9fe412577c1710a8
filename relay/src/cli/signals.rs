//! Process signals that end a relay command: Ctrl-C (SIGINT) and SIGTERM.

/// Resolves with the signal's name when the process is asked to stop.
pub(crate) async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => tokio::select! {
            _ = tokio::signal::ctrl_c() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        },
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch SIGTERM; only Ctrl-C will stop the relay");
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}
