//! What a page reports — console errors, warnings and failed assertions, uncaught exceptions,
//! `Log` errors, and failed requests (joined in `requests.rs`) — read the same way whichever
//! observer reads it, and recorded once: by the relay's own observer when it covers the page
//! (the traffic reader then leaves it out), each event the first time only, repeats counted
//! rather than recorded (`dedup.rs`). An error or a failed request is a failure: it waits for the
//! relay's own observer's next frame of the page when the observer is on it (`frames.rs`).
//!
//! Every string is sanitized on its way into the record.

use super::requests::Failure;
use super::Pages;
use crate::cdp::params as cdp;
use crate::pages::dedup::{EventKey, FoldKey};
use cdp_evidence::{Console, ConsoleLevel, Record, RecordKind, Status};
use cdp_sanitize::{SafeText, Sanitizer};
use std::time::{Duration, SystemTime};

/// Which reader read an event; its records name it (`tool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum By {
    /// The traffic reader, from the tap's copies of a client's traffic.
    Traffic,
    /// The direct reader, from the relay's own connection to the browser.
    Direct,
}

impl By {
    /// The tool name on the records it writes.
    pub(crate) fn tool(self) -> &'static str {
        match self {
            By::Traffic => "cdp",
            By::Direct => "observer",
        }
    }
}

/// What [`Pages::report`] decided.
pub(crate) struct Told {
    /// The record to write now: `None` for a repeat, or a failure that waits for a frame.
    pub(crate) now: Option<Record>,
    /// A failure's record, a repeat's too, for the reader to tell the tool call it happened
    /// during: an agent retrying a failing save must not be told nothing once the journal only
    /// counts it.
    pub(crate) failure: Option<Record>,
}

/// What a page reported, read, with its once-per-page key.
pub(crate) enum Reported {
    Console(Console, EventKey),
    Request(Failure, EventKey),
}

impl Pages {
    /// Does `by` record `page`'s events? The traffic reader leaves a page the relay's own
    /// observer covers to it.
    pub(crate) fn records(&self, by: By, page: &str) -> bool {
        by == By::Direct || !self.covered(page)
    }

    /// What `page` (target `target`, when known) reported, read by `by` at `at`: recorded the
    /// first time only, repeats folded; a failure waits for the relay's own observer's next
    /// frame of the page when it is on it.
    pub(crate) fn report(
        &self,
        by: By,
        page: &str,
        target: Option<&str>,
        what: Reported,
        at: SystemTime,
    ) -> Told {
        let mut t = self.table();
        let (record, fold, failure) = match what {
            Reported::Console(console, key) => {
                if !t.once.first(key) {
                    return Told::nothing();
                }
                let failure = console_status(&console) == Status::Error;
                let fold = FoldKey::console(page, &console);
                (console_record(by.tool(), console, at), fold, failure)
            }
            Reported::Request(f, key) => {
                if !t.once.first(key) {
                    return Told::nothing();
                }
                let fold = FoldKey::network(page, &f.0);
                (network_record(by.tool(), f, at), fold, true)
            }
        };
        let record = match target {
            Some(id) => record.target(t.target(id, &self.sanitizer)),
            None => record,
        };
        let failure = failure.then(|| record.clone());
        // A repeat is counted, not recorded, and takes no frame.
        let first = t.once.fold(fold, &record, at);
        let now = match (first, &failure) {
            (false, _) => None,
            (true, None) => {
                return Told {
                    now: Some(record),
                    failure,
                }
            }
            (true, Some(_)) => t.failure(target, record),
        };
        drop(t);
        if !first {
            return Told { now: None, failure };
        }
        tracing::trace!(
            "{}: a failure; it waits for a frame: {}",
            by.tool(),
            now.is_none()
        );
        if now.is_none() && by == By::Traffic {
            self.wanted.notify_one();
        }
        Told { now, failure }
    }
}

impl Told {
    /// Nothing to write, no one to tell.
    pub(crate) fn nothing() -> Told {
        Told {
            now: None,
            failure: None,
        }
    }
}

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
