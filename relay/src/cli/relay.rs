//! `cdp-relay serve` and `cdp-relay launch`: the same relay and the same evidence pipeline,
//! started and stopped the same way; `launch` also owns a browser.

use cdp_relay::proxy::probe_upstream;
use cdp_relay::{Browser, Config, LaunchConfig, Pipeline, Relay};
use std::process::ExitCode;

/// `cdp-relay serve`: probe the upstream, bind, print the endpoint, serve until a signal.
pub(crate) async fn serve(config: Config) -> anyhow::Result<ExitCode> {
    let upstream = config
        .upstream
        .clone()
        .ok_or_else(|| super::Usage("serve needs --upstream".into()))?;
    probe_upstream(&upstream).await?;
    let shutdown = super::signals::Shutdown::listen();
    let running = Running::start(config).await?;
    let name = shutdown.wait().await;
    tracing::info!("{name} received; shutting down");
    running.stop().await;
    Ok(ExitCode::SUCCESS)
}

/// `cdp-relay launch`: start the browser, relay it, print the endpoint, and tear everything
/// down on Ctrl-C, SIGTERM or browser exit.
pub(crate) async fn launch(mut config: Config, launch: LaunchConfig) -> anyhow::Result<ExitCode> {
    let exe = cdp_relay::launch::find_browser(&launch, std::env::var_os("PATH"))?;
    let mut browser = Browser::launch(&exe, &launch).await?;
    config.upstream = Some(browser.upstream().clone());
    let shutdown = super::signals::Shutdown::listen();
    let running = match Running::start(config).await {
        Ok(r) => r,
        Err(e) => {
            browser.shutdown().await;
            return Err(e);
        }
    };
    let outcome = tokio::select! {
        name = shutdown.wait() => {
            tracing::info!("{name} received; shutting down");
            None
        }
        status = browser.wait() => Some(status),
    };
    running.stop().await;
    browser.shutdown().await;
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

/// A relay serving in the background with its evidence pipeline.
struct Running {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
    pipeline: Option<Pipeline>,
}

impl Running {
    /// Binds first (a relay that cannot listen leaves no evidence run behind), then starts the
    /// pipeline, prints the endpoint and serves.
    async fn start(config: Config) -> anyhow::Result<Running> {
        let upstream = config.upstream.clone();
        let evidence = config.evidence.clone();
        let mut relay = Relay::bind(config).await?;
        let mut pipeline = start_pipeline(&evidence)?;
        if let Some(p) = pipeline.as_mut() {
            relay = relay.with_evidence(p.handle().clone());
            if let Some(up) = upstream.as_ref() {
                p.observe(up);
                if p.observing() {
                    tracing::info!("observer: the relay opens its own CDP connection to the browser (--no-observe turns it off)");
                }
            }
        }
        announce(&relay, upstream.as_ref());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(relay.run_until(async {
            let _ = stopped.await;
        }));
        Ok(Running {
            stop,
            task,
            pipeline,
        })
    }

    /// Stops serving (open sessions get 1001), then finishes the pipeline: drain, finalize,
    /// render, prune.
    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
        let Some(pipeline) = self.pipeline else {
            return;
        };
        if let Some(summary) = pipeline.finish().await {
            if summary.dropped > 0 {
                tracing::warn!(
                    "evidence: {} pieces of evidence were dropped (queue full or write failures)",
                    summary.dropped
                );
            }
            tracing::info!("evidence: run finalized in {}", summary.run_dir.display());
        }
    }
}

/// Starts evidence recording as configured. A directory that cannot be used turns evidence off
/// with one warning: forwarding matters more. A bad secret is the user's to fix: refused.
fn start_pipeline(settings: &cdp_relay::EvidenceSettings) -> anyhow::Result<Option<Pipeline>> {
    match Pipeline::start(settings) {
        Ok(Some(p)) => {
            let status = p.handle().status();
            tracing::info!(
                "evidence: recording run {} in {}",
                status.run_id,
                status.run_dir.display()
            );
            Ok(Some(p))
        }
        Ok(None) => Ok(None),
        Err(e) if e.is_usage() => Err(e.into()),
        Err(e) => {
            tracing::warn!("{e}");
            Ok(None)
        }
    }
}

/// Prints the endpoint as the only stdout line, and a human note on stderr.
fn announce(relay: &Relay, upstream: Option<&cdp_relay::Upstream>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // A closed stdout (e.g. `| head -1` already exited) is not a reason to stop relaying.
    let _ = writeln!(out, "{}", relay.endpoint());
    let _ = out.flush();
    if let Some(up) = upstream {
        tracing::info!(
            "relaying {} -> browser at {}",
            relay.endpoint(),
            up.authority()
        );
    }
}
