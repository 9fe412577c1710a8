//! `cdp-relay serve` and `cdp-relay launch`: the same [`Recording`] (relay + evidence pipeline),
//! started and stopped the same way; `launch` also owns a browser.

use cdp_relay::{Config, EvidenceNeed, LaunchConfig, Recording};
use cdp_relay_proxy::upstream::probe;
use std::process::ExitCode;

/// `cdp-relay serve`: probe the upstream, bind, print the endpoint, serve until a signal.
pub(crate) async fn serve(mut config: Config, otlp: Option<url::Url>) -> anyhow::Result<ExitCode> {
    let upstream = config
        .proxy
        .upstream
        .clone()
        .ok_or_else(|| crate::args::Usage("serve needs --upstream".into()))?;
    let mut shutdown = super::signals::Shutdown::listen();
    probe(&upstream).await?;
    let spans = crate::otlp::run_spans(&mut config, otlp.as_ref())?;
    let recording = Recording::start(config, EvidenceNeed::BestEffort).await?;
    announce(&recording);
    let name = shutdown.recv().await;
    tracing::info!("{name} received; shutting down");
    recording.stop().await;
    // After the run's end: its span is ended and queued.
    crate::otlp::shutdown(spans).await;
    Ok(ExitCode::SUCCESS)
}

/// `cdp-relay launch`: start the browser, relay it, print the endpoint, and tear everything
/// down on Ctrl-C, SIGTERM or browser exit.
pub(crate) async fn launch(
    mut config: Config,
    launch: LaunchConfig,
    otlp: Option<url::Url>,
) -> anyhow::Result<ExitCode> {
    let mut shutdown = super::signals::Shutdown::listen();
    let spans = crate::otlp::run_spans(&mut config, otlp.as_ref())?;
    let path = std::env::var_os("PATH");
    let (mut browser, recording) =
        Recording::launch(config, &launch, path, EvidenceNeed::BestEffort).await?;
    announce(&recording);
    let outcome = tokio::select! {
        name = shutdown.recv() => {
            tracing::info!("{name} received; shutting down");
            None
        }
        status = browser.wait() => Some(status),
    };
    // The browser goes while the run uploads: both fit in the shutdown grace.
    let stopped = recording.stop_recording().await;
    tokio::join!(browser.shutdown(), stopped.finish_uploads());
    crate::otlp::shutdown(spans).await;
    match outcome {
        None => Ok(ExitCode::SUCCESS),
        Some(Ok(status)) if status.success() => {
            tracing::info!("the browser exited; relay stopped");
            Ok(ExitCode::SUCCESS)
        }
        Some(Ok(status)) => {
            anyhow::bail!("the browser exited unexpectedly ({status}); the relay stopped")
        }
        Some(Err(e)) => anyhow::bail!("lost track of the browser process: {e}"),
    }
}

/// Prints the endpoint as the only stdout line, and a human note on stderr.
fn announce(recording: &Recording) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // A closed stdout (e.g. `| head -1` already exited) is not a reason to stop relaying.
    let _ = writeln!(out, "{}", recording.endpoint());
    let _ = out.flush();
    tracing::info!(
        "relaying {} -> browser at {}",
        recording.endpoint(),
        recording.upstream().authority()
    );
}
