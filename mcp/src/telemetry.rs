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
//! Export never slows a call: the spans go through `cdp-relay-otel`'s [`Exporter`] (a bounded
//! queue; what cannot be sent is dropped and counted, with one warning).

use cdp_capture::facts::{CallFacts, Linked};
use cdp_capture::PipelineHandle;
use cdp_evidence::ActionId;
use cdp_relay_otel::Exporter;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use rmcp::model::{ErrorData, NumberOrString, RequestMetaObject};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The gateway's exporter of spans: cheap to clone. Over HTTP each MCP session holds its own
/// handle ([`Telemetry::for_session`]): one exporter, each session's calls ended with it.
#[derive(Clone)]
pub struct Telemetry {
    exporter: Exporter,
    calls: Arc<Calls>,
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
            .field("exporter", &self.exporter)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// The gateway's spans through `exporter`.
    pub fn new(exporter: Exporter) -> Telemetry {
        Telemetry {
            exporter,
            calls: Arc::default(),
        }
    }

    /// The exporter the spans go through.
    pub fn exporter(&self) -> &Exporter {
        &self.exporter
    }

    /// A handle on the same exporter for one more gateway (an HTTP session): its
    /// [`stop`](Self::stop) ends its own calls' spans, not the others'.
    pub fn for_session(&self) -> Telemetry {
        Telemetry::new(self.exporter.clone())
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
        let exporter = self.exporter.clone();
        // The SDK's shutdown blocks on its exporter thread.
        let _ = tokio::task::spawn_blocking(move || exporter.shutdown_blocking()).await;
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
        let tracer = t.exporter.tracer();
        let span = tracer
            .span_builder(span_name(r.method, r.tool))
            .with_kind(SpanKind::Server)
            .with_attributes(request_attributes(r))
            .start_with_context(tracer, &parent);
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

/// A linked record as a span event (`cdp_relay_otel::record_event`), marked when another call
/// could have caused it too.
fn effect_event(l: &Linked) -> Option<(&'static str, Vec<KeyValue>)> {
    let (name, mut attrs) = cdp_relay_otel::record_event(&l.record)?;
    if l.shared {
        attrs.insert(0, KeyValue::new("cdp_relay.shared", true));
    }
    Some((name, attrs))
}

#[cfg(test)]
mod tests;
