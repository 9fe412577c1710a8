//! `cdp-relay serve` and `cdp-relay launch`: the same relay and the same evidence pipeline,
//! started and stopped the same way; `launch` also owns a browser. `demo` starts a browser behind
//! the relay through the same functions ([`start_behind_relay`], [`Running::stop`]).

use cdp_relay::proxy::probe_upstream;
use cdp_relay::{Browser, Config, LaunchConfig, Pipeline, PipelineSummary, Relay};
use std::process::ExitCode;

/// `cdp-relay serve`: probe the upstream, bind, print the endpoint, serve until a signal.
pub(crate) async fn serve(config: Config) -> anyhow::Result<ExitCode> {
    let upstream = config
        .upstream
        .clone()
        .ok_or_else(|| super::Usage("serve needs --upstream".into()))?;
    let mut shutdown = super::signals::Shutdown::listen();
    probe_upstream(&upstream).await?;
    let running = Running::start(config, Evidence::BestEffort).await?;
    announce(&running, &upstream);
    let name = shutdown.recv().await;
    tracing::info!("{name} received; shutting down");
    running.stop().await;
    Ok(ExitCode::SUCCESS)
}

/// `cdp-relay launch`: start the browser, relay it, print the endpoint, and tear everything
/// down on Ctrl-C, SIGTERM or browser exit.
pub(crate) async fn launch(config: Config, launch: LaunchConfig) -> anyhow::Result<ExitCode> {
    let mut shutdown = super::signals::Shutdown::listen();
    let (mut browser, running) = start_behind_relay(config, &launch, Evidence::BestEffort).await?;
    announce(&running, browser.upstream());
    let outcome = tokio::select! {
        name = shutdown.recv() => {
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

/// Finds and starts the browser `launch` describes, then the relay (and its evidence pipeline)
/// in front of it. A relay that cannot start takes the browser down with it.
///
/// Call this on the thread that runs the command (not in a spawned task): the browser is told to
/// die with the thread that started it.
pub(crate) async fn start_behind_relay(
    mut config: Config,
    launch: &LaunchConfig,
    evidence: Evidence,
) -> anyhow::Result<(Browser, Running)> {
    let exe = cdp_relay::launch::find_browser(launch, std::env::var_os("PATH"))?;
    let browser = Browser::launch(&exe, launch).await?;
    config.upstream = Some(browser.upstream().clone());
    match Running::start(config, evidence).await {
        Ok(running) => Ok((browser, running)),
        Err(e) => {
            browser.shutdown().await;
            Err(e)
        }
    }
}

/// Whether a relay may run without the evidence it was asked to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Evidence {
    /// `serve` and `launch`: an evidence directory that cannot be used turns evidence off with
    /// one warning; forwarding matters more.
    BestEffort,
    /// `demo`: the run is the point; no evidence is an error.
    Required,
}

/// A relay serving in the background with its evidence pipeline.
pub(crate) struct Running {
    endpoint: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
    pipeline: Option<Pipeline>,
}

impl Running {
    /// Binds first (a relay that cannot listen leaves no evidence run behind), then starts the
    /// pipeline and serves.
    pub(crate) async fn start(config: Config, evidence: Evidence) -> anyhow::Result<Running> {
        let settings = config.evidence.clone();
        let upstream = config.upstream.clone();
        let mut relay = Relay::bind(config).await?;
        let mut pipeline = start_pipeline(&settings, evidence)?;
        if let Some(p) = pipeline.as_mut() {
            relay = relay.with_evidence(p.handle().clone());
            if let Some(up) = upstream.as_ref() {
                p.observe(up);
                if p.observing() {
                    tracing::info!("observer: the relay opens its own CDP connection to the browser (--no-observe turns it off)");
                }
            }
        }
        let endpoint = relay.endpoint();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(relay.run_until(async {
            let _ = stopped.await;
        }));
        Ok(Running {
            endpoint,
            stop,
            task,
            pipeline,
        })
    }

    /// The evidence pipeline's handle, when evidence is recorded.
    pub(crate) fn handle(&self) -> Option<&cdp_relay::PipelineHandle> {
        self.pipeline.as_ref().map(Pipeline::handle)
    }

    /// The relay's endpoint, `http://127.0.0.1:PORT`.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Stops serving (open sessions get 1001), then finishes the pipeline: drain, finalize,
    /// render, prune. Returns the finished run, if evidence was recorded.
    pub(crate) async fn stop(self) -> Option<PipelineSummary> {
        let _ = self.stop.send(());
        let _ = self.task.await;
        let summary = self.pipeline?.finish().await?;
        if summary.dropped > 0 {
            tracing::warn!(
                "evidence: {} pieces of evidence were dropped (queue full or write failures)",
                summary.dropped
            );
        }
        tracing::info!("evidence: run finalized in {}", summary.run_dir.display());
        Some(summary)
    }
}

/// Starts evidence recording as configured. A bad secret is the user's to fix: refused. A
/// directory that cannot be used is a warning or an error, as `evidence` says.
fn start_pipeline(
    settings: &cdp_relay::EvidenceSettings,
    evidence: Evidence,
) -> anyhow::Result<Option<Pipeline>> {
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
        Ok(None) if evidence == Evidence::Required => {
            anyhow::bail!("evidence recording is off, but this command needs it")
        }
        Ok(None) => Ok(None),
        Err(e) if e.is_usage() => Err(e.into()),
        Err(cdp_relay::Error::Evidence { reason }) if evidence == Evidence::Required => {
            anyhow::bail!("cannot record evidence: {reason} (pass --evidence-dir DIR)")
        }
        Err(e) if evidence == Evidence::Required => Err(e.into()),
        Err(e) => {
            tracing::warn!("{e}");
            Ok(None)
        }
    }
}

/// Prints the endpoint as the only stdout line, and a human note on stderr.
fn announce(running: &Running, upstream: &cdp_relay::Upstream) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // A closed stdout (e.g. `| head -1` already exited) is not a reason to stop relaying.
    let _ = writeln!(out, "{}", running.endpoint());
    let _ = out.flush();
    tracing::info!(
        "relaying {} -> browser at {}",
        running.endpoint(),
        upstream.authority()
    );
}
