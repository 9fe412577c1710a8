//! `GET /relay/v1/metrics`: counters in the Prometheus text format (0.0.4), encoded by
//! `prometheus-client` from a snapshot taken at scrape time. The hot path keeps its own relaxed
//! atomics (`stats.rs`); nothing here adds a cost to forwarding.
//!
//! Every metric is `cdp_relay_*`. Values only: no run ids, paths or hosts as labels.

use super::Reply;
use crate::upload::UploadStatus;
use crate::StatsSnapshot;
use cdp_capture::EvidenceStatus;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

/// The metrics path.
pub const PATH: &str = "/relay/v1/metrics";

/// What a scrape reports.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The relay's forwarding counters.
    pub stats: StatsSnapshot,
    /// HTTP connections open now.
    pub connections_open: usize,
    /// Whether the browser answered the last probe (`None`: not probed yet).
    pub upstream_up: Option<bool>,
    /// The evidence run, when recording.
    pub evidence: Option<EvidenceStatus>,
    /// Uploads, when configured.
    pub uploads: Option<UploadStatus>,
}

/// Encodes `snapshot` as the answer to a scrape.
pub fn answer(method: &str, snapshot: Snapshot) -> Reply {
    if method != "GET" && method != "HEAD" {
        return Reply::method_not_allowed("GET, HEAD", "/relay/v1/metrics supports GET only");
    }
    let mut registry = Registry::with_prefix("cdp_relay");
    registry.register_collector(Box::new(snapshot));
    let mut body = String::new();
    if prometheus_client::encoding::prometheus_text::encode(&mut body, &registry).is_err() {
        return Reply::text(500, "cdp-relay: metrics could not be encoded");
    }
    Reply {
        status: 200,
        content_type: prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        body,
        allow: None,
    }
}

fn counter(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: u64,
) -> Result<(), std::fmt::Error> {
    let c = ConstCounter::new(v);
    c.encode(e.encode_descriptor(name, help, None, c.metric_type())?)
}

fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, v: i64) -> Result<(), std::fmt::Error> {
    let g = ConstGauge::new(v);
    g.encode(e.encode_descriptor(name, help, None, g.metric_type())?)
}

/// A counter with one `direction` label (`to_browser`, `to_client`).
fn by_direction(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    to_browser: u64,
    to_client: u64,
) -> Result<(), std::fmt::Error> {
    let kind = ConstCounter::new(0u64).metric_type();
    let mut family = e.encode_descriptor(name, help, None, kind)?;
    for (dir, v) in [("to_browser", to_browser), ("to_client", to_client)] {
        let labels = [("direction", dir)];
        ConstCounter::new(v).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Collector for Snapshot {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.stats;
        gauge(&mut e, "up", "Always 1: the relay answers.", 1)?;
        gauge(
            &mut e,
            "upstream_up",
            "1 when the browser answered the last probe, 0 when not (or not probed yet).",
            i64::from(self.upstream_up == Some(true)),
        )?;
        counter(
            &mut e,
            "sessions",
            "Websocket sessions spliced since start.",
            s.sessions_total,
        )?;
        gauge(
            &mut e,
            "sessions_active",
            "Websocket sessions open now.",
            s.sessions_active as i64,
        )?;
        gauge(
            &mut e,
            "connections_open",
            "HTTP connections open now (sessions included).",
            to_i64(self.connections_open),
        )?;
        counter(
            &mut e,
            "http_requests",
            "Discovery and API requests answered.",
            s.http_requests,
        )?;
        counter(
            &mut e,
            "upgrades_refused",
            "Websocket upgrades refused (access policy or browser).",
            s.upgrades_refused,
        )?;
        by_direction(
            &mut e,
            "messages",
            "Websocket messages forwarded.",
            s.messages_to_browser,
            s.messages_to_client,
        )?;
        by_direction(
            &mut e,
            "bytes",
            "Websocket payload bytes forwarded.",
            s.bytes_to_browser,
            s.bytes_to_client,
        )?;
        gauge(
            &mut e,
            "evidence_recording",
            "1 while an evidence run is being recorded.",
            i64::from(self.evidence.is_some()),
        )?;
        counter(
            &mut e,
            "evidence_dropped",
            "Evidence dropped (queue full, failed writes); never traffic.",
            self.evidence.as_ref().map_or(0, |ev| ev.dropped),
        )?;
        if let Some(u) = &self.uploads {
            gauge(
                &mut e,
                "uploads_pending",
                "Finalized runs not uploaded yet (queued, uploading, or waiting to retry).",
                to_i64(u.pending),
            )?;
            gauge(
                &mut e,
                "uploads_failing",
                "Pending runs whose last attempt failed.",
                to_i64(u.failing),
            )?;
            counter(
                &mut e,
                "uploaded_runs",
                "Runs uploaded by this process.",
                u.uploaded_runs,
            )?;
            counter(
                &mut e,
                "uploaded_bytes",
                "Bytes uploaded by this process.",
                u.uploaded_bytes,
            )?;
            counter(
                &mut e,
                "upload_skipped_runs",
                "Runs not uploaded because they recorded no failure (--upload-only-failed).",
                u.skipped_runs,
            )?;
            counter(
                &mut e,
                "upload_failed_attempts",
                "Upload attempts that failed.",
                u.failed_attempts,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrape_is_prometheus_text_with_every_family() {
        let snap = Snapshot {
            stats: StatsSnapshot {
                sessions_total: 3,
                sessions_active: 1,
                messages_to_browser: 10,
                messages_to_client: 12,
                bytes_to_browser: 1000,
                bytes_to_client: 2000,
                ..StatsSnapshot::default()
            },
            connections_open: 2,
            upstream_up: Some(true),
            evidence: None,
            uploads: Some(UploadStatus {
                pending: 2,
                failing: 1,
                uploaded_runs: 5,
                ..UploadStatus::default()
            }),
        };
        let r = answer("GET", snap);
        assert_eq!(r.status, 200);
        assert!(r.content_type.starts_with("text/plain; version=0.0.4"));
        for line in [
            "# TYPE cdp_relay_sessions_total counter",
            "cdp_relay_sessions_total 3",
            "cdp_relay_sessions_active 1",
            "cdp_relay_messages_total{direction=\"to_browser\"} 10",
            "cdp_relay_messages_total{direction=\"to_client\"} 12",
            "cdp_relay_bytes_total{direction=\"to_client\"} 2000",
            "cdp_relay_upstream_up 1",
            "cdp_relay_evidence_recording 0",
            "cdp_relay_evidence_dropped_total 0",
            "cdp_relay_uploads_pending 2",
            "cdp_relay_uploads_failing 1",
            "cdp_relay_uploaded_runs_total 5",
        ] {
            assert!(
                r.body.lines().any(|l| l == line),
                "missing {line:?} in\n{}",
                r.body
            );
        }
        // Without uploads configured, no upload families.
        let r = answer("GET", Snapshot::default());
        assert!(!r.body.contains("uploads_pending"), "{}", r.body);
        assert!(r.body.contains("cdp_relay_upstream_up 0"));
        assert_eq!(answer("POST", Snapshot::default()).status, 405);
    }
}
