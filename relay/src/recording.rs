//! A [`Recording`]: the proxy serving in the background with its evidence pipeline, started and
//! stopped the same way by `serve`, `launch`, `demo`, the MCP gateway, the uploader and the
//! tests.
//!
//! Start checks the bucket when uploads are configured (a relay that could not upload refuses to
//! start), binds (a relay that cannot listen leaves no evidence run behind), then opens the run,
//! serves, and starts the relay's own observer once the browser is known. Stop closes open
//! sessions (1001), finishes the pipeline (drain → stop the observer → finalize → render →
//! prune), hands the run to the uploader and waits for it within the shutdown grace.

use crate::api::RelayApi;
use crate::config::{Config, EvidenceSettings, LaunchConfig};
use crate::launch::Browser;
use crate::upload::Uploader;
use crate::Error;
use cdp_capture::{Hooks, Pipeline, PipelineHandle, PipelineSummary};
use cdp_relay_proxy::{Relay, Stats, Upstream};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
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
    uploader: Option<Uploader>,
    grace: Duration,
}

/// A recording that stopped serving and recording; its run is with the uploader.
#[derive(Debug)]
pub struct Stopped {
    summary: Option<PipelineSummary>,
    uploader: Option<Uploader>,
    deadline: Instant,
}

impl Recording {
    /// Binds, opens the evidence run (if evidence is on), serves in the background and starts
    /// the relay's own observer when the settings ask for it. `config.proxy.upstream` must be
    /// set. Call within a tokio runtime.
    pub async fn start(config: Config, need: EvidenceNeed) -> Result<Recording, Error> {
        let Config {
            proxy,
            evidence,
            shutdown_grace,
            status_fields,
        } = config;
        let upstream = proxy
            .upstream
            .clone()
            .ok_or_else(|| Error::Usage("no upstream configured; pass --upstream".into()))?;
        let uploader = start_uploads(&evidence).await?;
        let relay = Relay::bind(proxy).await?;
        let mut pipeline = start_pipeline(&evidence, need)?;
        let relay = match pipeline.as_mut() {
            Some(p) => {
                p.observe(Arc::new(UpstreamBrowser(upstream.clone())));
                if p.observing() {
                    tracing::info!("observer: the relay opens its own CDP connection to the browser (--no-observe turns it off)");
                }
                relay.with_tap(p.handle().tap().clone())
            }
            None => relay,
        };
        let mut api = RelayApi::new(
            pipeline.as_ref().map(|p| p.handle().clone()),
            evidence.enabled,
        );
        if let Some(u) = &uploader {
            api = api.with_uploads(u.handle());
        }
        api = api.with_status_fields(status_fields);
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
            uploader,
            grace: shutdown_grace,
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
        let secret_names: Vec<String> = config
            .evidence
            .secrets
            .iter()
            .map(|(n, _)| n.clone())
            .collect();
        let browser = Browser::launch_without(&exe, launch, &secret_names).await?;
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

    /// Stops serving (open sessions get 1001), finishes the pipeline (drain, finalize, render,
    /// prune) and uploads the run when uploads are on, all within the shutdown grace. Returns
    /// the finished run, if evidence was recorded.
    pub async fn stop(self) -> Option<PipelineSummary> {
        self.stop_recording().await.finish_uploads().await
    }

    /// The first half of [`Recording::stop`]: serving and recording stop, the run is finalized
    /// and handed to the uploader (a caller may stop its browser while the upload runs).
    pub async fn stop_recording(mut self) -> Stopped {
        let deadline = Instant::now() + self.grace;
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let summary = match self.pipeline.take() {
            Some(p) => p.finish().await,
            None => None,
        };
        if let Some(summary) = &summary {
            if summary.dropped > 0 {
                tracing::warn!(
                    "evidence: {} pieces of evidence were dropped (queue full or write failures)",
                    summary.dropped
                );
            }
            if summary.finalized {
                tracing::info!("evidence: run finalized in {}", summary.run_dir.display());
            }
            // Otherwise the writer already said in one line why not, and what to do.
        }
        let uploader = self.uploader.take();
        if let Some(u) = &uploader {
            if let Some(summary) = &summary {
                u.finalized(&summary.run_dir);
            }
            // Runs other producers finalized meanwhile go too.
            u.scan();
        }
        Stopped {
            summary,
            uploader,
            deadline,
        }
    }
}

impl Stopped {
    /// Waits for the uploads until the shutdown grace runs out; what is left stays pending for
    /// the next start. Returns the finished run, if evidence was recorded.
    pub async fn finish_uploads(self) -> Option<PipelineSummary> {
        if let Some(u) = self.uploader {
            let report = u.finish(self.deadline).await;
            if !report.left.is_empty() {
                tracing::warn!(
                    "upload: {} run(s) not uploaded before the shutdown grace ran out ({}); they \
                     stay local and are uploaded at the next start (or by `cdp-relay upload`)",
                    report.left.len(),
                    report.left.join(", ")
                );
            }
        }
        self.summary
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

/// Starts the uploader when uploads are configured: the bucket must take a write (else the
/// relay refuses to start), and runs left pending by an earlier process are queued.
async fn start_uploads(settings: &EvidenceSettings) -> Result<Option<Uploader>, Error> {
    let Some(upload) = settings.upload.as_ref().filter(|_| settings.enabled) else {
        return Ok(None);
    };
    let uploader = Uploader::start(upload, &settings.root)?;
    uploader.check().await?;
    tracing::info!(
        "upload: finalized runs go to {}{}",
        upload.url,
        if upload.only_failed {
            " (only runs that recorded a failure)"
        } else {
            ""
        }
    );
    uploader.scan();
    Ok(Some(uploader))
}

/// Starts evidence recording as configured. A bad secret is the user's to fix: refused. A
/// directory that cannot be used is a warning or an error, as `need` says.
fn start_pipeline(
    settings: &EvidenceSettings,
    need: EvidenceNeed,
) -> Result<Option<Pipeline>, Error> {
    if !settings.enabled {
        return match need {
            EvidenceNeed::Required => Err(Error::EvidenceRequired {
                reason: "evidence recording is off, but this command needs it".into(),
            }),
            EvidenceNeed::BestEffort => Ok(None),
        };
    }
    let hooks = Hooks {
        // Retention never prunes a run an uploader has not dealt with.
        hold: Some(Arc::new(crate::upload::UploadHold {
            uploads_on: settings.upload.is_some(),
        })),
        finalized: Some(Arc::new(render_report)),
        written: settings.written.clone(),
    };
    match Pipeline::start(&settings.capture(), hooks) {
        Ok(p) => {
            let status = p.handle().status();
            tracing::info!(
                "evidence: recording run {} in {}",
                status.run_id,
                status.run_dir.display()
            );
            Ok(Some(p))
        }
        Err(e @ cdp_capture::Error::Secret { .. }) => Err(Error::Usage(e.to_string())),
        Err(e) => {
            let reason = e.to_string();
            if need == EvidenceNeed::Required {
                return Err(Error::EvidenceRequired { reason });
            }
            tracing::warn!("{}", Error::Evidence { reason });
            Ok(None)
        }
    }
}

/// The browser behind the proxy, as the direct reader dials it: its websocket path asked with
/// the proxy's own `/json/version` reader.
struct UpstreamBrowser(Upstream);

impl cdp_capture::BrowserEndpoint for UpstreamBrowser {
    fn dial(&self) -> String {
        self.0.authority()
    }

    fn host(&self) -> String {
        self.0.host_header()
    }

    fn websocket_path(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send + '_>>
    {
        Box::pin(async move {
            let version = cdp_relay_proxy::upstream::version(&self.0)
                .await
                .map_err(|e| e.to_string())?;
            version.websocket_path().map(str::to_owned).ok_or_else(|| {
                "the browser's webSocketDebuggerUrl has no /devtools/ path".to_string()
            })
        })
    }
}

/// Renders `report.html` and `summary.md` once a run's journal is complete. A report that
/// cannot be written costs nothing but itself: the run stays finalized.
fn render_report(run_dir: &std::path::Path) {
    match cdp_report::render(run_dir) {
        Ok(r) => tracing::info!(
            "evidence: report {} ({} steps, {} failures)",
            r.html_path.display(),
            r.figures.steps,
            r.figures.failures
        ),
        Err(e) => tracing::warn!("evidence: could not render the report: {e}"),
    }
}
