//! A [`Recording`]: the proxy serving in the background with its evidence pipeline, started and
//! stopped the same way by `serve`, `launch`, `demo`, the MCP gateway, the uploader and the
//! tests.
//!
//! Start binds first (a relay that cannot listen leaves no evidence run behind), then opens the
//! run, then serves, then starts the relay's own observer once the browser is known. Stop closes
//! open sessions (1001), then finishes the pipeline: drain → stop the observer → finalize →
//! render → prune.

use crate::api::RelayApi;
use crate::config::{Config, EvidenceSettings, LaunchConfig};
use crate::launch::Browser;
use crate::pipeline::{Pipeline, PipelineHandle, PipelineSummary};
use crate::Error;
use cdp_relay_proxy::{Relay, Stats, Upstream};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Whether a relay may run without the evidence it was asked to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvidenceNeed {
    /// `serve` and `launch`: an evidence directory that cannot be used turns evidence off with
    /// one warning; forwarding matters more.
    BestEffort,
    /// `demo`, the MCP gateway: the run is the point; no evidence is an error.
    Required,
}

/// A relay serving in the background, with its evidence pipeline when evidence is on.
#[derive(Debug)]
pub struct Recording {
    endpoint: String,
    local: SocketAddr,
    upstream: Upstream,
    stats: Arc<Stats>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    pipeline: Option<Pipeline>,
}

impl Recording {
    /// Binds, opens the evidence run (if evidence is on), serves in the background and starts
    /// the relay's own observer when the settings ask for it. `config.proxy.upstream` must be
    /// set. Call within a tokio runtime.
    pub async fn start(config: Config, need: EvidenceNeed) -> Result<Recording, Error> {
        let Config { proxy, evidence } = config;
        let upstream = proxy
            .upstream
            .clone()
            .ok_or_else(|| Error::Usage("no upstream configured; pass --upstream".into()))?;
        let relay = Relay::bind(proxy).await?;
        let mut pipeline = start_pipeline(&evidence, need)?;
        let relay = match pipeline.as_mut() {
            Some(p) => {
                p.observe(&upstream);
                if p.observing() {
                    tracing::info!("observer: the relay opens its own CDP connection to the browser (--no-observe turns it off)");
                }
                relay.with_tap(p.handle().tap().clone())
            }
            None => relay,
        };
        let api = RelayApi::new(pipeline.as_ref().map(|p| p.handle().clone()));
        let relay = relay.with_api(Arc::new(api));
        let (endpoint, local, stats) = (relay.endpoint(), relay.local_addr(), relay.stats());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(relay.run_until(async {
            let _ = stopped.await;
        }));
        Ok(Recording {
            endpoint,
            local,
            upstream,
            stats,
            stop: Some(stop),
            task: Some(task),
            pipeline,
        })
    }

    /// Starts the browser `launch` describes (found on `path`, usually `$PATH`), then a
    /// recording in front of it. A recording that cannot start takes the browser down with it.
    ///
    /// Call this on the thread that runs the command (not in a spawned task): the browser is told
    /// to die with the thread that started it.
    pub async fn launch(
        mut config: Config,
        launch: &LaunchConfig,
        path: Option<std::ffi::OsString>,
        need: EvidenceNeed,
    ) -> Result<(Browser, Recording), Error> {
        let exe = crate::launch::find_browser(launch, path)?;
        let browser = Browser::launch(&exe, launch).await?;
        config.proxy.upstream = Some(browser.upstream().clone());
        match Recording::start(config, need).await {
            Ok(recording) => Ok((browser, recording)),
            Err(e) => {
                browser.shutdown().await;
                Err(e)
            }
        }
    }

    /// The relay's HTTP endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The browser behind the relay.
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    /// The relay's counters.
    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// The evidence pipeline's handle (secrets, status, other producers), when recording.
    pub fn evidence(&self) -> Option<&PipelineHandle> {
        self.pipeline.as_ref().map(Pipeline::handle)
    }

    /// Stops serving (open sessions get 1001), then finishes the pipeline: drain, finalize,
    /// render, prune. Returns the finished run, if evidence was recorded.
    pub async fn stop(mut self) -> Option<PipelineSummary> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let summary = self.pipeline.take()?.finish().await?;
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

impl Drop for Recording {
    fn drop(&mut self) {
        // Not stopped explicitly (an error path): stop serving; the pipeline's own drop lets its
        // threads drain and finalize without anyone waiting for them.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Starts evidence recording as configured. A bad secret is the user's to fix: refused. A
/// directory that cannot be used is a warning or an error, as `need` says.
fn start_pipeline(
    settings: &EvidenceSettings,
    need: EvidenceNeed,
) -> Result<Option<Pipeline>, Error> {
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
        Ok(None) if need == EvidenceNeed::Required => Err(Error::EvidenceRequired {
            reason: "evidence recording is off, but this command needs it".into(),
        }),
        Ok(None) => Ok(None),
        Err(e) if e.is_usage() => Err(e),
        Err(Error::Evidence { reason }) if need == EvidenceNeed::Required => {
            Err(Error::EvidenceRequired { reason })
        }
        Err(e) if need == EvidenceNeed::Required => Err(e),
        Err(e) => {
            tracing::warn!("{e}");
            Ok(None)
        }
    }
}
