//! Process signals that end a run: Ctrl-C (SIGINT) and SIGTERM.

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

/// Resolves once the relay's stop flag is set (or its sender is gone).
pub(crate) async fn stopped(flag: &mut tokio::sync::watch::Receiver<bool>) {
    // The guard `wait_for` returns is not `Send`; drop it before the caller's next await.
    let _ = flag.wait_for(|stop| *stop).await.map(|_| ());
}
