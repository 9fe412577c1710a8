//! The exporter: OTLP/HTTP behind a bounded queue, counting what it sends and what it drops.

use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
    SpanProcessor,
};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Spans waiting for export; one that finds the queue full is dropped and counted.
const MAX_QUEUE: usize = 2048;
/// How long one export may take before its spans are dropped and counted.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long stopping waits for the last spans to leave.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);

/// `scheme://host:port` of an endpoint, for messages: no credentials, no path.
fn origin(url: &url::Url) -> String {
    url.origin().ascii_serialization()
}

/// What was sent and what was lost.
#[derive(Debug, Default)]
struct Counts {
    exported: AtomicU64,
    dropped: AtomicU64,
    /// Spans handed to the batch processor whose export has not ended (sent or dropped).
    queued: AtomicUsize,
    warned: AtomicBool,
    endpoint: String,
}

impl Counts {
    fn drop_spans(&self, n: usize, why: &str) {
        self.dropped.fetch_add(n as u64, Ordering::Relaxed);
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "otlp: spans for {} are dropped ({why}); calls and frames go on; the count is in /relay/v1/status (otlp) and the last line at exit",
                self.endpoint
            );
        }
    }
}

/// An exporter, counting what it sends and what it drops.
#[derive(Debug)]
struct CountingExporter<E> {
    inner: E,
    counts: Arc<Counts>,
}

impl<E: SpanExporter> SpanExporter for CountingExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let result = self.inner.export(batch).await;
        self.counts.queued.fetch_sub(n, Ordering::Relaxed);
        match &result {
            Ok(()) => {
                self.counts.exported.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(_) => self
                .counts
                .drop_spans(n, "the receiver refused them or did not answer"),
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

/// The batch processor behind our own bound: a span that would overflow its queue is dropped
/// here, where it is counted (the SDK's own count is not readable).
#[derive(Debug)]
struct BoundedProcessor {
    inner: BatchSpanProcessor,
    counts: Arc<Counts>,
}

impl SpanProcessor for BoundedProcessor {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.counts.queued.fetch_add(1, Ordering::Relaxed) >= MAX_QUEUE {
            self.counts.queued.fetch_sub(1, Ordering::Relaxed);
            self.counts.drop_spans(
                1,
                "the export queue is full: the receiver is slower than the spans come",
            );
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

/// The process's exporter of spans: cheap to clone; clones share the queue and the counts.
#[derive(Clone)]
pub struct Exporter {
    inner: Arc<Inner>,
}

struct Inner {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    counts: Arc<Counts>,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter")
            .field("endpoint", &self.inner.counts.endpoint)
            .finish_non_exhaustive()
    }
}

impl Exporter {
    /// Starts the exporter for `endpoint` (see [`crate::traces_endpoint`]); `service` is the
    /// spans' `service.name`. Nothing is sent until a span ends.
    pub fn start(endpoint: &url::Url, service: &str) -> Result<Exporter, String> {
        // reqwest's rustls takes the process's default provider (as the uploads do); its client
        // is not built without one, even for http.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(endpoint.as_str())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| format!("--otlp-endpoint {}: {e}", origin(endpoint)))?;
        Ok(Exporter::with(exporter, &origin(endpoint), service))
    }

    /// The same queue and counts in front of any span exporter (`endpoint` names it in messages).
    pub fn with(exporter: impl SpanExporter + 'static, endpoint: &str, service: &str) -> Exporter {
        let counts = Arc::new(Counts {
            endpoint: endpoint.to_owned(),
            ..Counts::default()
        });
        let batch = BatchSpanProcessor::builder(CountingExporter {
            inner: exporter,
            counts: counts.clone(),
        })
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(MAX_QUEUE)
                .with_scheduled_delay(Duration::from_millis(500))
                .build(),
        )
        .build();
        let resource = opentelemetry_sdk::Resource::builder_empty()
            .with_service_name(service.to_owned())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(BoundedProcessor {
                inner: batch,
                counts: counts.clone(),
            })
            .with_resource(resource)
            .build();
        let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "cdp-relay");
        Exporter {
            inner: Arc::new(Inner {
                provider,
                tracer,
                counts,
            }),
        }
    }

    /// The tracer spans are started with.
    pub fn tracer(&self) -> &SdkTracer {
        &self.inner.tracer
    }

    /// Spans dropped so far (queue full, receiver down or too slow).
    pub fn dropped(&self) -> u64 {
        self.inner.counts.dropped.load(Ordering::Relaxed)
    }

    /// Spans the receiver took so far.
    pub fn exported(&self) -> u64 {
        self.inner.counts.exported.load(Ordering::Relaxed)
    }

    /// The counts for `/relay/v1/status` (`otlp`): where spans go (its origin), how many were
    /// sent, dropped, and are queued or being sent now.
    pub fn status(&self) -> serde_json::Value {
        let c = &self.inner.counts;
        serde_json::json!({
            "endpoint": c.endpoint,
            "sent": c.exported.load(Ordering::Relaxed),
            "dropped": c.dropped.load(Ordering::Relaxed),
            "queued": c.queued.load(Ordering::Relaxed),
        })
    }

    /// Sends what is queued (for at most a few seconds) and stops the exporter's thread, for
    /// every clone; says on stderr what was sent and dropped. Blocks: from async code, call it
    /// on a blocking thread.
    pub fn shutdown_blocking(&self) {
        let _ = self.inner.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
        tracing::info!(
            "otlp: {} spans sent to {}, {} dropped, {} unsent at exit",
            self.exported(),
            self.inner.counts.endpoint,
            self.dropped(),
            self.inner.counts.queued.load(Ordering::Relaxed)
        );
    }
}
