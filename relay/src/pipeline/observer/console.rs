//! What the page reported: console errors, warnings and failed assertions, uncaught exceptions,
//! `Log` errors, and failed requests (joined in `network.rs`). Every string is sanitized on its
//! way into the record; an error or a failed request is also a trigger for the relay's own
//! capture.
//!
//! The record builders are free functions, shared with the active observer, which records these
//! events itself for the pages it covers; then the passive observer leaves them out. Either way
//! each event is recorded once per page, and repeats of the same message or failure are counted
//! rather than recorded ([`OncePerPage`](crate::pipeline::once::OncePerPage)).

use super::cdp;
use super::network::Failure;
use super::{Key, Observer, TOOL};
use crate::pipeline::once::{EventKey, FoldKey};
use crate::pipeline::Trigger;
use cdp_evidence::{Console, ConsoleLevel, Record, RecordKind, Status};
use cdp_sanitize::{SafeText, Sanitizer};
use std::time::{Duration, SystemTime};

/// A `Runtime.consoleAPICalled` worth recording, with its once-per-page key on `page`.
pub(crate) fn from_api(
    s: &Sanitizer,
    page: &str,
    p: &cdp::ConsoleApiCalled<'_>,
) -> Option<(Console, EventKey)> {
    let level = match p.kind.as_ref() {
        "error" => ConsoleLevel::Error,
        "warning" => ConsoleLevel::Warning,
        "assert" => ConsoleLevel::Assert,
        _ => return None,
    };
    let text: Vec<String> = p.args.iter().map(cdp::RemoteObject::display).collect();
    let text = text.join(" ");
    let key = EventKey::console(page, &p.kind, p.timestamp, &text);
    let mut console = Console::new(level, s.text(&text));
    if let Some(f) = p.stack_trace.as_ref().and_then(|st| st.call_frames.first()) {
        locate(s, &mut console, &f.url, f.line_number, f.column_number);
    }
    Some((console, key))
}

/// A `Runtime.exceptionThrown`, with its key on `page`.
pub(crate) fn from_exception(
    s: &Sanitizer,
    page: &str,
    p: &cdp::ExceptionThrown<'_>,
) -> (Console, EventKey) {
    let d = &p.exception_details;
    let description = d.exception.as_ref().and_then(|e| e.description.as_deref());
    let text = match description {
        Some(desc) if !desc.is_empty() => desc,
        _ => &d.text,
    };
    let key = EventKey::console(page, "exception", p.timestamp, text);
    let mut console = Console::new(ConsoleLevel::Exception, s.text(text));
    let frame = d.stack_trace.as_ref().and_then(|st| st.call_frames.first());
    match (frame, d.url.as_deref()) {
        (Some(f), _) => locate(s, &mut console, &f.url, f.line_number, f.column_number),
        (None, Some(url)) => locate(s, &mut console, url, d.line_number, d.column_number),
        (None, None) => {}
    }
    (console, key)
}

/// A `Log.entryAdded` error, with its key on `page`.
/// `network_seen`: the reader also sees this page's `Network` events. Chromium then restates
/// each failed request as a `Log` error ("Failed to load resource…") that adds nothing to the
/// network record but a second failure line, so it is left out.
pub(crate) fn from_log(
    s: &Sanitizer,
    page: &str,
    p: &cdp::EntryAdded<'_>,
    network_seen: bool,
) -> Option<(Console, EventKey)> {
    if p.entry.level != "error" || (network_seen && p.entry.source == "network") {
        return None;
    }
    let key = EventKey::console(page, "log", p.entry.timestamp, &p.entry.text);
    let mut console = Console::new(ConsoleLevel::Error, s.text(&p.entry.text));
    console.url = p
        .entry
        .url
        .as_deref()
        .filter(|u| !u.is_empty())
        .map(|u| s.url(u));
    console.line = p.entry.line_number.map(|l| l.saturating_add(1));
    Some((console, key))
}

/// CDP lines and columns are 0-based; the journal's are 1-based.
fn locate(s: &Sanitizer, console: &mut Console, url: &str, line: u32, column: u32) {
    if !url.is_empty() {
        console.url = Some(s.url(url));
    }
    console.line = Some(line.saturating_add(1));
    console.column = Some(column.saturating_add(1));
}

/// The record of a console entry: `error` for errors, exceptions and assertions.
pub(crate) fn console_record(tool: &'static str, console: Console, at: SystemTime) -> Record {
    let status = console_status(&console);
    Record::new(SafeText::literal(tool), RecordKind::Console(console))
        .started_at(at)
        .status(status)
}

/// `info` for warnings, `error` for the rest.
pub(crate) fn console_status(console: &Console) -> Status {
    match console.level {
        ConsoleLevel::Warning => Status::Info,
        _ => Status::Error,
    }
}

/// The record of a failed request.
pub(crate) fn network_record(tool: &'static str, failure: Failure, at: SystemTime) -> Record {
    let (failure, started) = failure;
    let duration = failure
        .duration_ms()
        .map(Duration::from_millis)
        .unwrap_or_default();
    Record::new(SafeText::literal(tool), RecordKind::Network(failure))
        .started_at(started.unwrap_or(at))
        .duration(duration)
        .status(Status::Error)
}

impl Observer {
    /// The page key page events of (connection, session) are deduplicated under, and whether the
    /// active observer records them instead.
    fn page_of(&self, conn: u64, key: &Key) -> (String, bool) {
        let page = self.typing_key(conn, key);
        let covered = self.once.covered(&page);
        (page, covered)
    }

    pub(super) fn console_api(
        &mut self,
        conn: u64,
        key: &Key,
        p: &cdp::ConsoleApiCalled<'_>,
        at: SystemTime,
    ) {
        let (page, covered) = self.page_of(conn, key);
        if covered {
            return;
        }
        if let Some((console, k)) = from_api(&self.sanitizer, &page, p) {
            self.emit_console(conn, key, &page, console, k, at);
        }
    }

    pub(super) fn exception(
        &mut self,
        conn: u64,
        key: &Key,
        p: &cdp::ExceptionThrown<'_>,
        at: SystemTime,
    ) {
        let (page, covered) = self.page_of(conn, key);
        if covered {
            return;
        }
        let (console, k) = from_exception(&self.sanitizer, &page, p);
        self.emit_console(conn, key, &page, console, k, at);
    }

    pub(super) fn log_entry(
        &mut self,
        conn: u64,
        key: &Key,
        p: &cdp::EntryAdded<'_>,
        at: SystemTime,
    ) {
        let (page, covered) = self.page_of(conn, key);
        if covered {
            return;
        }
        let network_seen = self.conns.get(&conn).is_some_and(|c| c.requests.seen_any());
        if let Some((console, k)) = from_log(&self.sanitizer, &page, p, network_seen) {
            self.emit_console(conn, key, &page, console, k, at);
        }
    }

    fn emit_console(
        &mut self,
        conn: u64,
        key: &Key,
        page: &str,
        console: Console,
        event: EventKey,
        at: SystemTime,
    ) {
        if !self.once.first(event) {
            return;
        }
        let is_error = console_status(&console) == Status::Error;
        let fold = FoldKey::console(page, &console);
        let mut r = console_record(TOOL, console, at);
        if let Some(t) = self.target_for(conn, key) {
            r = r.target(t);
        }
        if !self.once.fold(fold, &r, at) {
            return;
        }
        if is_error {
            self.failure(conn, key, r, at);
        } else {
            self.emit(r);
        }
    }

    /// Records a failed request of (connection, session) unless the active observer covers the
    /// page or it was recorded already.
    pub(super) fn emit_network(
        &mut self,
        conn: u64,
        key: &Key,
        request_id: &str,
        failure: Option<Failure>,
        at: SystemTime,
    ) {
        let Some(failure) = failure else {
            return;
        };
        let (page, covered) = self.page_of(conn, key);
        tracing::trace!(
            "passive observer: a failed request (the active observer covers the page: {covered})"
        );
        if covered || !self.once.first(EventKey::request(&page, request_id)) {
            return;
        }
        let fold = FoldKey::network(&page, &failure.0);
        let mut r = network_record(TOOL, failure, at);
        if let Some(t) = self.target_for(conn, key) {
            r = r.target(t);
        }
        if !self.once.fold(fold, &r, at) {
            return;
        }
        self.failure(conn, key, r, at);
    }

    /// A failure record: handed to the active observer (it writes it with the frame it takes
    /// after it) when it runs, else written now with a trigger for whoever takes frames.
    fn failure(&mut self, conn: u64, key: &Key, record: Record, at: SystemTime) {
        let target_id = self.raw_target(conn, key);
        let record = match (self.verifier.as_ref(), target_id.as_ref()) {
            (Some(v), Some(t)) => match v.failures.try_send((t.clone(), record)) {
                Ok(()) => return,
                Err(e) => e.into_inner().1,
            },
            _ => record,
        };
        self.out
            .triggers
            .push(Trigger::FailureSeen { target_id, at });
        self.emit(record);
    }
}
