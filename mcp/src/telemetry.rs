//! OpenTelemetry spans of the gateway, over OTLP/HTTP (protobuf), configured off.
//!
//! One SERVER span per MCP request that passes through the gateway (`initialize`, `tools/list`,
//! `tools/call`, `resources/read`), named and attributed as the OpenTelemetry semantic
//! convention for MCP says (`{mcp.method.name} {gen_ai.tool.name}`, `mcp.method.name`,
//! `gen_ai.tool.name`, `gen_ai.operation.name`, `jsonrpc.request.id`, `error.type`, …), plus the
//! run's id and its report's URI, so a tracing backend links to the evidence. The agent's
//! `params._meta.traceparent` is the parent; the span's own context goes on to the wrapped
//! server in the forwarded request's `_meta`.
//!
//! A tool call's browser effects become span events: read from what the run linked to the call
//! (`cdp_capture::facts`), which are copies of sanitized records — navigations and clicks,
//! typing with its verdict and length, failed requests with the sanitized URL, console errors.
//! Never the call's arguments or its result.
//!
//! Export never slows a call: spans end into a bounded queue that a thread of the SDK's batch
//! processor empties; a span that finds the queue full, or whose batch the receiver refused or
//! did not take in time, is dropped and counted ([`Telemetry::dropped`]), with one warning.

use cdp_capture::facts::{CallFacts, Linked};
use cdp_capture::PipelineHandle;
use cdp_evidence::{ActionId, RecordKind, Verified};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
    SpanProcessor,
};
use rmcp::model::{ErrorData, NumberOrString, RequestMetaObject};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Spans waiting for export; one that finds the queue full is dropped and counted.
const MAX_QUEUE: usize = 2048;
/// How long one export may take before its spans are dropped and counted.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long stopping waits for the last spans to leave.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);
/// Longest console text in an event, in characters (as the agent's note quotes it).
const MAX_TEXT: usize = 200;

/// The standard variables (the OTLP exporter's specification).
pub const ENV_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The traces endpoint, used as it is (no path added).
pub const ENV_TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The `service.name` of the spans; by default `cdp-relay`.
pub const ENV_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";

/// Where spans go: `--otlp-endpoint` (a base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`: `/v1/traces`
/// is added unless the path already ends with it), else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as
/// it is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces`. `None`: nothing is sent.
pub fn traces_endpoint(
    flag: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<url::Url>, String> {
    let nonempty = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
    let (raw, whence, add_path) = match (
        flag.filter(|f| !f.trim().is_empty()),
        nonempty(env(ENV_TRACES_ENDPOINT)),
        nonempty(env(ENV_ENDPOINT)),
    ) {
        (Some(f), _, _) => (f.to_owned(), "--otlp-endpoint", true),
        (None, Some(t), _) => (t, ENV_TRACES_ENDPOINT, false),
        (None, None, Some(b)) => (b, ENV_ENDPOINT, true),
        (None, None, None) => return Ok(None),
    };
    let mut url = url::Url::parse(raw.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .ok_or_else(|| {
            format!("{whence}: not an http:// or https:// URL; give the OTLP/HTTP receiver's address, e.g. http://127.0.0.1:4318")
        })?;
    if add_path && !url.path().trim_end_matches('/').ends_with("/v1/traces") {
        let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    Ok(Some(url))
}

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
                "otlp: spans for {} are dropped ({why}); tool calls go on; the count is in /relay/v1/status (otlp) and the gateway's last line",
                self.endpoint
            );
        }
    }
}

/// The OTLP exporter, counting what it sends and what it drops.
#[derive(Debug)]
struct CountingExporter {
    inner: opentelemetry_otlp::SpanExporter,
    counts: Arc<Counts>,
}

impl SpanExporter for CountingExporter {
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
                "the export queue is full: the receiver is slower than the calls",
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

/// The gateway's exporter of spans: cheap to clone. Over HTTP each MCP session holds its own
/// handle ([`Telemetry::for_session`]): one exporter, each session's calls ended with it.
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Inner>,
    calls: Arc<Calls>,
}

struct Inner {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    counts: Arc<Counts>,
}

/// One gateway's calls whose spans still wait for late effects.
#[derive(Default)]
struct Calls {
    /// Set when the gateway stops: its calls' spans end at once.
    stopping: tokio::sync::watch::Sender<bool>,
    pending: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("endpoint", &self.inner.counts.endpoint)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Starts the exporter for `endpoint` (see [`traces_endpoint`]); `service` is the spans'
    /// `service.name`. Nothing is sent until a span ends.
    pub fn start(endpoint: &url::Url, service: &str) -> Result<Telemetry, String> {
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
        let counts = Arc::new(Counts {
            endpoint: origin(endpoint),
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
        Ok(Telemetry {
            inner: Arc::new(Inner {
                provider,
                tracer,
                counts,
            }),
            calls: Arc::default(),
        })
    }

    /// The spans' `service.name`: `OTEL_SERVICE_NAME`, else `cdp-relay`.
    pub fn service_name(env: impl Fn(&str) -> Option<String>) -> String {
        env(ENV_SERVICE_NAME)
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "cdp-relay".to_owned())
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

    /// A handle on the same exporter for one more gateway (an HTTP session): its
    /// [`stop`](Self::stop) ends its own calls' spans, not the others'.
    pub fn for_session(&self) -> Telemetry {
        Telemetry {
            inner: self.inner.clone(),
            calls: Arc::default(),
        }
    }

    /// Ends this handle's spans still waiting for effects (a gateway stopping).
    pub async fn stop(&self) {
        let _ = self.calls.stopping.send(true);
        let pending = std::mem::take(
            &mut *self
                .calls
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for task in pending {
            let _ = task.await;
        }
    }

    /// Stops this handle's calls, sends what is queued (for at most a few seconds) and stops
    /// the exporter's thread, for every handle. Says on stderr what was sent and dropped.
    pub async fn shutdown(&self) {
        self.stop().await;
        let provider = self.inner.provider.clone();
        // The SDK's shutdown blocks on its exporter thread.
        let _ =
            tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT))
                .await;
        tracing::info!(
            "otlp: {} spans sent to {}, {} dropped, {} unsent at exit",
            self.exported(),
            self.inner.counts.endpoint,
            self.dropped(),
            self.inner.counts.queued.load(Ordering::Relaxed)
        );
    }

    fn keep(&self, task: tokio::task::JoinHandle<()>) {
        let mut pending = self
            .calls
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pending.retain(|t| !t.is_finished());
        pending.push(task);
    }
}

/// What identifies one MCP request, for its span.
pub(crate) struct Request<'a> {
    pub method: &'static str,
    pub tool: Option<&'a str>,
    pub id: &'a NumberOrString,
    /// The request's `_meta`, for the agent's trace context.
    pub meta: &'a RequestMetaObject,
    pub session: Option<&'a str>,
    pub protocol: Option<&'a str>,
    pub resource: Option<&'a str>,
}

/// The span name the convention asks for: `{mcp.method.name} {gen_ai.tool.name}`, or the
/// method alone.
fn span_name(method: &str, tool: Option<&str>) -> String {
    match tool {
        Some(t) => format!("{method} {t}"),
        None => method.to_owned(),
    }
}

fn request_attributes(r: &Request<'_>) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("mcp.method.name", r.method),
        KeyValue::new("jsonrpc.request.id", r.id.to_string()),
        // A session id is Streamable HTTP's; stdio has none.
        KeyValue::new(
            "network.transport",
            if r.session.is_some() { "tcp" } else { "pipe" },
        ),
    ];
    if let Some(t) = r.tool {
        a.push(KeyValue::new("gen_ai.tool.name", t.to_owned()));
        a.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
    }
    if let Some(s) = r.session {
        a.push(KeyValue::new("mcp.session.id", s.to_owned()));
    }
    if let Some(p) = r.protocol {
        a.push(KeyValue::new("mcp.protocol.version", p.to_owned()));
    }
    if let Some(u) = r.resource {
        a.push(KeyValue::new("mcp.resource.uri", u.to_owned()));
    }
    a
}

/// The `error.type` of an answer: the JSON-RPC error's code, `tool_error` for an `isError`
/// result (as the convention says), none for a success.
pub(crate) fn error_type<T>(
    answer: &Result<T, ErrorData>,
    is_error: impl Fn(&T) -> bool,
) -> Option<String> {
    match answer {
        Err(e) => Some(e.code.0.to_string()),
        Ok(r) if is_error(r) => Some("tool_error".to_owned()),
        Ok(_) => None,
    }
}

/// `traceparent` and `tracestate` of a request's `_meta`.
struct MetaCarrier<'a>(&'a RequestMetaObject);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.0.get_traceparent(),
            "tracestate" => self.0.get_tracestate(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// The W3C trace context of `cx`, as `(traceparent, tracestate)`.
#[derive(Default)]
struct Carried(Vec<(String, String)>);

impl Injector for Carried {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}

/// The agent's trace context (`params._meta.traceparent`, `tracestate`) as a parent; an empty
/// context when there is none or it is not a valid W3C `traceparent`.
fn parent_of(meta: &RequestMetaObject) -> Context {
    TraceContextPropagator::new().extract(&MetaCarrier(meta))
}

/// Puts `cx`'s trace context into a forwarded request's `_meta`.
fn inject(cx: &Context, meta: &mut Option<RequestMetaObject>) {
    let mut carried = Carried::default();
    TraceContextPropagator::new().inject_context(cx, &mut carried);
    for (key, value) in carried.0 {
        let m = meta.get_or_insert_with(RequestMetaObject::new);
        match key.as_str() {
            "traceparent" => m.set_traceparent(&value),
            "tracestate" if !value.is_empty() => m.set_tracestate(&value),
            _ => {}
        }
    }
}

/// The span of one request; with telemetry off, only the agent's own trace context, passed on
/// to the wrapped server unchanged.
pub(crate) struct RequestSpan {
    span: Option<(opentelemetry_sdk::trace::Span, Telemetry)>,
    /// The context to pass on: the span's, or the agent's when there is no span.
    cx: Context,
}

impl RequestSpan {
    pub(crate) fn begin(telemetry: Option<&Telemetry>, r: &Request<'_>) -> RequestSpan {
        let parent = parent_of(r.meta);
        let Some(t) = telemetry else {
            return RequestSpan {
                span: None,
                cx: parent,
            };
        };
        let span = t
            .inner
            .tracer
            .span_builder(span_name(r.method, r.tool))
            .with_kind(SpanKind::Server)
            .with_attributes(request_attributes(r))
            .start_with_context(&t.inner.tracer, &parent);
        let cx = Context::new().with_remote_span_context(span.span_context().clone());
        RequestSpan {
            span: Some((span, t.clone())),
            cx,
        }
    }

    /// The run's id and its report's URI, so a backend links to the evidence.
    pub(crate) fn run(&mut self, h: Option<&PipelineHandle>) {
        if let (Some((span, _)), Some(h)) = (self.span.as_mut(), h) {
            let id = h.status().run_id;
            span.set_attribute(KeyValue::new(
                "cdp_relay.report.uri",
                format!("evidence://runs/{id}/report.html"),
            ));
            span.set_attribute(KeyValue::new("cdp_relay.run.id", id));
        }
    }

    /// Puts the span's trace context (or the agent's) into a request forwarded to the wrapped
    /// server.
    pub(crate) fn propagate(&self, meta: &mut Option<RequestMetaObject>) {
        if self.cx.span().span_context().is_valid() {
            inject(&self.cx, meta);
        }
    }

    /// Ends the span with the answer's `error.type`.
    pub(crate) fn end(self, error: Option<String>) {
        if let Some((mut span, _)) = self.span {
            finish(&mut span, error);
            span.end();
        }
    }

    /// Ends a tool call's span: its `error.type` now, its browser effects as events once the
    /// run has linked the late ones (a request failing just after the answer), or at once when
    /// the gateway stops. The span's end time is the answer's.
    pub(crate) fn end_call(
        self,
        error: Option<String>,
        h: Option<&PipelineHandle>,
        call: &ActionId,
    ) {
        let Some((mut span, t)) = self.span else {
            return;
        };
        finish(&mut span, error);
        let answered = SystemTime::now();
        let Some(h) = h.cloned() else {
            span.end_with_timestamp(answered);
            return;
        };
        let call = call.clone();
        let mut stopping = t.calls.stopping.subscribe();
        let task = tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(cdp_capture::calls::AFTERMATH) => {}
                _ = stopping.wait_for(|s| *s) => {}
            }
            // What the relay has read by now is written, so linked to its call (bounded).
            super::resources::settle(&h).await;
            if let Some(facts) = h.calls().facts(&call) {
                add_effects(&mut span, &facts);
            }
            span.end_with_timestamp(answered);
        });
        t.keep(task);
    }
}

fn finish(span: &mut opentelemetry_sdk::trace::Span, error: Option<String>) {
    if let Some(e) = error {
        // The code or `tool_error` only: a message may carry a server's text.
        span.set_status(Status::error(e.clone()));
        span.set_attribute(KeyValue::new("error.type", e));
    }
}

/// One event per effect the run linked to the call; counts for those it did not keep.
fn add_effects(span: &mut opentelemetry_sdk::trace::Span, facts: &CallFacts) {
    let mut effects: Vec<&Linked> = facts
        .actions
        .iter()
        .chain(&facts.typing)
        .chain(&facts.failures)
        .collect();
    effects.sort_by_key(|l| l.record.start_time());
    for l in effects {
        if let Some((name, attributes)) = effect_event(l) {
            let at = l.record.start_time().unwrap_or_else(SystemTime::now);
            span.add_event_with_timestamp(name, at, attributes);
        }
    }
    let more = [
        ("cdp_relay.effects.more_actions", facts.more_actions),
        ("cdp_relay.effects.more_typing", facts.more_typing),
        ("cdp_relay.effects.more_failures", facts.more_failures),
        ("cdp_relay.typing.not_landed", facts.not_landed),
    ];
    for (key, n) in more {
        if n > 0 {
            span.set_attribute(KeyValue::new(key, n as i64));
        }
    }
}

fn capped(s: &str) -> String {
    let out: String = s.chars().take(MAX_TEXT).collect();
    out.replace(['\n', '\r'], " ")
}

/// A linked record as a span event: its name and attributes, from the sanitized record's own
/// types only (the same words the journal and the agent's note use).
fn effect_event(l: &Linked) -> Option<(&'static str, Vec<KeyValue>)> {
    let mut attrs = Vec::new();
    if l.shared {
        attrs.push(KeyValue::new("cdp_relay.shared", true));
    }
    let name = match l.record.kind() {
        RecordKind::Action(a) => {
            attrs.push(KeyValue::new(
                "cdp_relay.action",
                a.method.as_str().to_owned(),
            ));
            if let Some(url) = &a.url {
                attrs.push(KeyValue::new("url.full", url.as_str().to_owned()));
            }
            if let Some(i) = &a.input {
                attrs.push(KeyValue::new("cdp_relay.input.chars", i.chars() as i64));
                attrs.push(KeyValue::new(
                    "cdp_relay.input.type",
                    i.input_type().as_str().to_owned(),
                ));
            }
            if let Some(v) = &a.verification {
                let verified = match v.verified {
                    Verified::True => "true",
                    Verified::False => "false",
                    Verified::Indeterminate => "indeterminate",
                };
                attrs.push(KeyValue::new("cdp_relay.typing.verified", verified));
                attrs.push(KeyValue::new(
                    "cdp_relay.typing.reason",
                    v.reason.as_str().to_owned(),
                ));
            }
            match a.method.known() {
                Some(cdp_evidence::ActionMethod::Type) => "cdp_relay.typing",
                Some(
                    cdp_evidence::ActionMethod::PageNavigate
                    | cdp_evidence::ActionMethod::PageReload
                    | cdp_evidence::ActionMethod::PageNavigateToHistoryEntry,
                ) => "cdp_relay.navigation",
                _ => "cdp_relay.action",
            }
        }
        RecordKind::Network(n) => {
            attrs.push(KeyValue::new(
                "http.request.method",
                n.method().as_str().to_owned(),
            ));
            attrs.push(KeyValue::new("url.full", n.url().as_str().to_owned()));
            if let Some(s) = n.status() {
                attrs.push(KeyValue::new("http.response.status_code", i64::from(s)));
            }
            if let Some(e) = n.error_text() {
                attrs.push(KeyValue::new("error.type", e.as_str().to_owned()));
            }
            "cdp_relay.request_failed"
        }
        RecordKind::Console(c) => {
            attrs.push(KeyValue::new("cdp_relay.console.level", c.level.as_str()));
            attrs.push(KeyValue::new(
                "cdp_relay.console.text",
                capped(c.text.as_str()),
            ));
            "cdp_relay.console_error"
        }
        _ => return None,
    };
    Some((name, attrs))
}

#[cfg(test)]
mod tests;
