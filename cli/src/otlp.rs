//! `--otlp-endpoint` (or the standard `OTEL_*` variables): the spans' exporter, shared by
//! `launch`/`serve` (a span per run and per client connection) and `mcp` (a span per request).

use crate::args::Usage;
use cdp_relay::{Config, StatusField};
use cdp_relay_otel::{Exporter, RunSpans};
use std::sync::Arc;

/// Where spans go, from the flag or the variables; `None`: nothing is sent. A bad URL is a
/// usage error, said before anything starts.
pub(crate) fn endpoint(flag: Option<&str>) -> anyhow::Result<Option<url::Url>> {
    Ok(cdp_relay_otel::traces_endpoint(flag, |k| std::env::var(k).ok()).map_err(Usage)?)
}

/// Starts the exporter for `url`; `what` (`relay`, `mcp`) begins its one line on stderr.
pub(crate) fn start(url: &url::Url, what: &str) -> anyhow::Result<Exporter> {
    let service = cdp_relay_otel::service_name(|k| std::env::var(k).ok());
    let exporter = Exporter::start(url, &service).map_err(Usage)?;
    tracing::info!(
        "{what}: spans go to {} (OTLP/HTTP) as service {service}",
        url.origin().ascii_serialization()
    );
    Ok(exporter)
}

/// `/relay/v1/status`'s `otlp`: what was sent and dropped.
pub(crate) fn status_field(exporter: &Exporter) -> StatusField {
    let e = exporter.clone();
    StatusField {
        name: "otlp",
        read: Arc::new(move || e.status()),
    }
}

/// `launch` and `serve`: the spans of each run and client connection, from what the run writer
/// writes; the exporter is returned for [`shutdown`] once the relay has stopped.
pub(crate) fn run_spans(
    config: &mut Config,
    url: Option<&url::Url>,
) -> anyhow::Result<Option<Exporter>> {
    let Some(url) = url else {
        return Ok(None);
    };
    if !config.evidence.enabled {
        tracing::warn!("relay: --otlp-endpoint sends nothing with evidence off (--no-evidence): the spans are built from the run");
        return Ok(None);
    }
    let exporter = start(url, "relay")?;
    config.evidence.written = Some(Arc::new(RunSpans::new(exporter.clone())));
    config.status_fields.push(status_field(&exporter));
    Ok(Some(exporter))
}

/// Sends what is queued (a few seconds at most) and says what was sent and dropped.
pub(crate) async fn shutdown(exporter: Option<Exporter>) {
    if let Some(e) = exporter {
        let _ = tokio::task::spawn_blocking(move || e.shutdown_blocking()).await;
    }
}
