//! The spans of `launch` and `serve`: one per run, and one per client connection as its child,
//! each with the browser effects that happened in it as span events.
//!
//! Built from what the run writer wrote, on the writer thread ([`WriteObserver`]): every input
//! is a record the journal holds, sanitized. A run's span starts with its first record and ends
//! when the writer is done with it; a connection's span runs from its `clientConnected` to its
//! `clientDisconnected` (or `upstreamLost`, an error). The journal does not say which connection
//! a failure or an action came through, so an effect is an event of a connection's span only
//! when one open connection alone could have caused it (the only one open, or the only one
//! bound to the page the record names among page connections, with no browser-wide one open);
//! otherwise of the run's span. Never of two spans: a backend counting events counts each once.

use crate::{record_event, Exporter};
use cdp_capture::{RunRef, WriteObserver};
use cdp_evidence::{ConsoleLevel, LifecycleEvent, Record, RecordKind, Status as RecordStatus};
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::Span;
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

/// Events kept per span; beyond, counted (`cdp_relay.events.more`).
pub const MAX_EVENTS: usize = 128;

/// The spans of the runs a writer writes; hand it to the pipeline as its `Hooks::written`.
#[derive(Debug)]
pub struct RunSpans {
    exporter: Exporter,
    run: Mutex<Option<RunSpan>>,
}

struct RunSpan {
    id: String,
    span: Counted,
    cx: Context,
    conns: BTreeMap<u64, Conn>,
    connections: i64,
    failures: i64,
    not_landed: i64,
}

impl std::fmt::Debug for RunSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunSpan")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

struct Conn {
    span: Counted,
    /// The page a page connection is bound to; `None`: the browser endpoint (any page).
    page: Option<String>,
}

/// A span with its events counted.
struct Counted {
    span: Span,
    events: usize,
    more: i64,
}

impl Counted {
    fn event(&mut self, record: &Record) {
        let Some((name, attrs)) = record_event(record) else {
            return;
        };
        if self.events >= MAX_EVENTS {
            self.more += 1;
            return;
        }
        self.events += 1;
        let at = record.start_time().unwrap_or_else(SystemTime::now);
        self.span.add_event_with_timestamp(name, at, attrs);
    }

    fn end(mut self, at: SystemTime) {
        if self.more > 0 {
            self.span
                .set_attribute(KeyValue::new("cdp_relay.events.more", self.more));
        }
        self.span.end_with_timestamp(at);
    }
}

impl RunSpans {
    /// Spans through `exporter`.
    pub fn new(exporter: Exporter) -> RunSpans {
        RunSpans {
            exporter,
            run: Mutex::new(None),
        }
    }

    fn begin(&self, run: RunRef<'_>, at: SystemTime) -> RunSpan {
        let tracer = self.exporter.tracer();
        let mut attrs = vec![KeyValue::new("cdp_relay.run.id", run.id.to_owned())];
        if let Ok(report) = url::Url::from_file_path(run.dir.join("report.html")) {
            attrs.push(KeyValue::new("cdp_relay.report.uri", report.to_string()));
        }
        let span = tracer
            .span_builder("cdp_relay.run")
            .with_kind(SpanKind::Internal)
            .with_start_time(at)
            .with_attributes(attrs)
            .start_with_context(tracer, &Context::new());
        let cx = Context::new().with_remote_span_context(span.span_context().clone());
        RunSpan {
            id: run.id.to_owned(),
            span: Counted {
                span,
                events: 0,
                more: 0,
            },
            cx,
            conns: BTreeMap::new(),
            connections: 0,
            failures: 0,
            not_landed: 0,
        }
    }
}

impl RunSpan {
    fn record(&mut self, exporter: &Exporter, record: &Record) {
        let at = record.start_time().unwrap_or_else(SystemTime::now);
        match record.kind() {
            RecordKind::Lifecycle(l) => match l.event {
                LifecycleEvent::ClientConnected => {
                    let tracer = exporter.tracer();
                    let mut attrs = vec![
                        KeyValue::new("cdp_relay.connection.id", l.connection as i64),
                        KeyValue::new("cdp_relay.run.id", self.id.clone()),
                        KeyValue::new("network.transport", "tcp"),
                    ];
                    if let Some(d) = &l.detail {
                        attrs.push(KeyValue::new(
                            "cdp_relay.connection.endpoint",
                            d.as_str().to_owned(),
                        ));
                    }
                    let span = tracer
                        .span_builder("cdp_relay.connection")
                        .with_kind(SpanKind::Server)
                        .with_start_time(at)
                        .with_attributes(attrs)
                        .start_with_context(tracer, &self.cx);
                    self.connections += 1;
                    // A connection id seen again (a producer restarted): the old span ends.
                    if let Some(old) = self.conns.insert(
                        l.connection,
                        Conn {
                            span: Counted {
                                span,
                                events: 0,
                                more: 0,
                            },
                            page: record.target_handle().map(str::to_owned),
                        },
                    ) {
                        old.span.end(at);
                    }
                }
                LifecycleEvent::ClientDisconnected | LifecycleEvent::UpstreamLost => {
                    let Some(mut conn) = self.conns.remove(&l.connection) else {
                        return;
                    };
                    let span = &mut conn.span.span;
                    if let Some(d) = &l.detail {
                        span.set_attribute(KeyValue::new(
                            "cdp_relay.connection.end",
                            d.as_str().to_owned(),
                        ));
                    }
                    if let Some(code) = l.close_code {
                        span.set_attribute(KeyValue::new(
                            "cdp_relay.connection.close_code",
                            i64::from(code),
                        ));
                    }
                    if l.event == LifecycleEvent::UpstreamLost
                        || record.recorded_status() == RecordStatus::Error
                    {
                        span.set_status(Status::error(l.event.as_str()));
                        span.set_attribute(KeyValue::new("error.type", l.event.as_str()));
                    }
                    conn.span.end(at);
                }
                _ => {}
            },
            RecordKind::Network(_) => {
                self.failures += 1;
                self.effect(record);
            }
            RecordKind::Console(c) => {
                if c.level != ConsoleLevel::Warning {
                    self.failures += 1;
                }
                self.effect(record);
            }
            RecordKind::Action(a) => {
                if a.verification
                    .as_ref()
                    .is_some_and(|v| v.verified == cdp_evidence::Verified::False)
                {
                    self.not_landed += 1;
                }
                self.effect(record);
            }
            _ => {}
        }
    }

    /// `record`'s event, on the one span that alone can have caused it.
    fn effect(&mut self, record: &Record) {
        match self.only_conn(record.target_handle()) {
            Some(c) => c.span.event(record),
            None => self.span.event(record),
        }
    }

    /// The one open connection that could have caused a record on `page`, if only one could.
    fn only_conn(&mut self, page: Option<&str>) -> Option<&mut Conn> {
        let mut could = self.conns.values_mut().filter(|c| match (&c.page, page) {
            (None, _) => true,
            (Some(bound), Some(page)) => bound == page,
            (Some(_), None) => false,
        });
        let first = could.next()?;
        could.next().is_none().then_some(first)
    }

    fn end(mut self, finalized: bool, at: SystemTime) {
        for (_, conn) in std::mem::take(&mut self.conns) {
            let mut span = conn.span;
            span.span.set_attribute(KeyValue::new(
                "cdp_relay.connection.end",
                "open when the run ended",
            ));
            span.end(at);
        }
        let span = &mut self.span.span;
        span.set_attribute(KeyValue::new("cdp_relay.run.finalized", finalized));
        span.set_attribute(KeyValue::new("cdp_relay.connections", self.connections));
        span.set_attribute(KeyValue::new("cdp_relay.failures", self.failures));
        if self.not_landed > 0 {
            span.set_attribute(KeyValue::new(
                "cdp_relay.typing.not_landed",
                self.not_landed,
            ));
        }
        if self.failures > 0 || self.not_landed > 0 {
            span.set_status(Status::error("the run recorded failures"));
        }
        self.span.end(at);
    }
}

impl WriteObserver for RunSpans {
    fn written(&self, run: RunRef<'_>, records: &[Record]) {
        let mut current = self.run.lock().unwrap_or_else(PoisonError::into_inner);
        if current.as_ref().is_some_and(|r| r.id != run.id) {
            // Another run without an end said first: the old one ends here.
            if let Some(old) = current.take() {
                old.end(false, SystemTime::now());
            }
        }
        let span = current.get_or_insert_with(|| {
            let first = records
                .iter()
                .filter_map(Record::start_time)
                .min()
                .unwrap_or_else(SystemTime::now);
            self.begin(run, first)
        });
        for r in records {
            span.record(&self.exporter, r);
        }
    }

    fn ended(&self, run: RunRef<'_>, finalized: bool) {
        let mut current = self.run.lock().unwrap_or_else(PoisonError::into_inner);
        if current.as_ref().is_some_and(|r| r.id == run.id) {
            if let Some(span) = current.take() {
                span.end(finalized, SystemTime::now());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdp_evidence::{Action, Console, Lifecycle, VerdictReason, Verification, Verified};
    use cdp_sanitize::SafeText;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::trace::{SpanData, SpanExporter};
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    #[derive(Clone, Debug, Default)]
    struct Collected(Arc<Mutex<Vec<SpanData>>>);

    impl SpanExporter for Collected {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            self.0.lock().unwrap().extend(batch);
            Ok(())
        }
    }

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000) + Duration::from_millis(ms)
    }

    fn lifecycle(event: LifecycleEvent, conn: u64, ms: u64) -> Record {
        let mut l = Lifecycle::new(event, conn);
        l.detail = Some(SafeText::literal("browser"));
        Record::new(SafeText::literal("cdp"), RecordKind::Lifecycle(l)).started_at(at(ms))
    }

    fn console(text: &'static str, ms: u64) -> Record {
        let c = Console::new(cdp_evidence::ConsoleLevel::Error, SafeText::literal(text));
        Record::new(SafeText::literal("cdp"), RecordKind::Console(c)).started_at(at(ms))
    }

    fn typing(verified: Verified, ms: u64) -> Record {
        let mut a = Action::new(cdp_evidence::ActionMethod::Type);
        a.verification = Some(Verification::new(
            verified,
            VerdictReason::DroppedCharacters,
            SafeText::literal("expected 3 characters; the field grew by 1"),
        ));
        Record::new(SafeText::literal("cdp"), RecordKind::Action(a)).started_at(at(ms))
    }

    fn attr(span: &SpanData, key: &str) -> Option<opentelemetry::Value> {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.clone())
    }

    fn event_names(span: &SpanData) -> Vec<String> {
        span.events.iter().map(|e| e.name.to_string()).collect()
    }

    fn run_spans(records: &[Vec<Record>]) -> Vec<SpanData> {
        let got = Collected::default();
        let exporter = Exporter::with(got.clone(), "test", "cdp-relay");
        let spans = RunSpans::new(exporter.clone());
        let dir = Path::new("/evidence/runs/r1");
        let run = RunRef { id: "r1", dir };
        for batch in records {
            spans.written(run, batch);
        }
        spans.ended(run, true);
        exporter.shutdown_blocking();
        let out = got.0.lock().unwrap().clone();
        out
    }

    #[test]
    fn a_run_and_its_connections_are_spans_and_each_effect_is_an_event_of_one_of_them() {
        let spans = run_spans(&[
            vec![
                console("before any client", 0),
                lifecycle(LifecycleEvent::ClientConnected, 1, 10),
                typing(Verified::False, 20),
            ],
            vec![
                lifecycle(LifecycleEvent::ClientConnected, 2, 30),
                // Two connections could have caused it: the run's.
                console("while two are open", 40),
                lifecycle(LifecycleEvent::ClientDisconnected, 2, 50),
                typing(Verified::True, 60),
                lifecycle(LifecycleEvent::UpstreamLost, 1, 70),
            ],
        ]);
        let by = |name: &str, conn: Option<i64>| -> &SpanData {
            spans
                .iter()
                .find(|s| {
                    s.name == name
                        && conn.is_none_or(|c| attr(s, "cdp_relay.connection.id") == Some(c.into()))
                })
                .unwrap_or_else(|| panic!("{name} {conn:?} in {spans:#?}"))
        };
        assert_eq!(spans.len(), 3, "{spans:#?}");
        let run = by("cdp_relay.run", None);
        let (one, two) = (
            by("cdp_relay.connection", Some(1)),
            by("cdp_relay.connection", Some(2)),
        );
        for conn in [one, two] {
            assert_eq!(conn.parent_span_id, run.span_context.span_id());
            assert_eq!(conn.span_context.trace_id(), run.span_context.trace_id());
            assert_eq!(attr(conn, "cdp_relay.run.id"), Some("r1".into()));
        }
        assert_eq!(
            event_names(run),
            ["cdp_relay.console_error", "cdp_relay.console_error"]
        );
        assert_eq!(event_names(one), ["cdp_relay.typing", "cdp_relay.typing"]);
        assert!(event_names(two).is_empty());
        assert_eq!(
            one.events.events[0].attributes[1..],
            [
                KeyValue::new("cdp_relay.typing.verified", "false"),
                KeyValue::new("cdp_relay.typing.reason", "dropped-characters"),
            ]
        );
        // Times are the records': the connection from its connect to its loss.
        assert_eq!((one.start_time, one.end_time), (at(10), at(70)));
        assert_eq!((run.start_time, two.end_time), (at(0), at(50)));
        assert_eq!(one.status, Status::error("upstreamLost"));
        assert_eq!(two.status, Status::Unset);
        assert_eq!(attr(run, "cdp_relay.failures"), Some(2.into()));
        assert_eq!(attr(run, "cdp_relay.typing.not_landed"), Some(1.into()));
        assert_eq!(attr(run, "cdp_relay.connections"), Some(2.into()));
        assert_eq!(attr(run, "cdp_relay.run.finalized"), Some(true.into()));
        assert_eq!(
            attr(run, "cdp_relay.report.uri"),
            Some("file:///evidence/runs/r1/report.html".into())
        );
        assert!(matches!(run.status, Status::Error { .. }));
    }

    #[test]
    fn events_beyond_the_bound_are_counted_and_open_connections_end_with_the_run() {
        let mut batch = vec![lifecycle(LifecycleEvent::ClientConnected, 7, 0)];
        batch.extend((0..MAX_EVENTS as u64 + 5).map(|i| console("again", i + 1)));
        let spans = run_spans(&[batch]);
        let conn = spans
            .iter()
            .find(|s| s.name == "cdp_relay.connection")
            .expect("the connection's span");
        assert_eq!(conn.events.len(), MAX_EVENTS);
        assert_eq!(attr(conn, "cdp_relay.events.more"), Some(5.into()));
        assert_eq!(
            attr(conn, "cdp_relay.connection.end"),
            Some("open when the run ended".into())
        );
    }

    #[test]
    fn a_run_without_an_end_said_ends_when_the_next_run_is_written() {
        let got = Collected::default();
        let exporter = Exporter::with(got.clone(), "test", "cdp-relay");
        let spans = RunSpans::new(exporter.clone());
        let dir = Path::new("/e");
        spans.written(RunRef { id: "a", dir }, &[console("x", 0)]);
        spans.written(RunRef { id: "b", dir }, &[console("y", 1)]);
        // A late end of a run that is not the current one changes nothing.
        spans.ended(RunRef { id: "a", dir }, true);
        spans.ended(RunRef { id: "b", dir }, true);
        exporter.shutdown_blocking();
        let runs: Vec<(Option<opentelemetry::Value>, Option<opentelemetry::Value>)> = got
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    attr(s, "cdp_relay.run.id"),
                    attr(s, "cdp_relay.run.finalized"),
                )
            })
            .collect();
        assert_eq!(
            runs,
            [
                (Some("a".into()), Some(false.into())),
                (Some("b".into()), Some(true.into()))
            ]
        );
    }
}
