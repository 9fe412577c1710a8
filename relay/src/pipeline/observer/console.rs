//! What the page reported: console errors, warnings and failed assertions, uncaught exceptions,
//! `Log` errors, and failed requests (joined in `network.rs`). Every string is sanitized on its
//! way into the record; an error or a failed request is also a trigger for the relay's own
//! capture.

use super::cdp;
use super::network::Failure;
use super::{Key, Observer, TOOL};
use crate::pipeline::Trigger;
use cdp_evidence::{Console, ConsoleLevel, Record, RecordKind, Status};
use cdp_sanitize::SafeText;
use std::time::{Duration, SystemTime};

impl Observer {
    pub(super) fn console_api(
        &mut self,
        conn: u64,
        key: &Key,
        p: &cdp::ConsoleApiCalled<'_>,
        at: SystemTime,
    ) {
        let level = match p.kind.as_ref() {
            "error" => ConsoleLevel::Error,
            "warning" => ConsoleLevel::Warning,
            "assert" => ConsoleLevel::Assert,
            _ => return,
        };
        let text: Vec<String> = p.args.iter().map(cdp::RemoteObject::display).collect();
        let mut console = Console::new(level, self.sanitizer.text(&text.join(" ")));
        if let Some(f) = p.stack_trace.as_ref().and_then(|s| s.call_frames.first()) {
            self.locate(&mut console, &f.url, f.line_number, f.column_number);
        }
        self.emit_console(conn, key, console, at);
    }

    pub(super) fn exception(
        &mut self,
        conn: u64,
        key: &Key,
        d: &cdp::ExceptionDetails<'_>,
        at: SystemTime,
    ) {
        let description = d.exception.as_ref().and_then(|e| e.description.as_deref());
        let text = match description {
            Some(desc) if !desc.is_empty() => desc,
            _ => &d.text,
        };
        let mut console = Console::new(ConsoleLevel::Exception, self.sanitizer.text(text));
        let frame = d.stack_trace.as_ref().and_then(|s| s.call_frames.first());
        match (frame, d.url.as_deref()) {
            (Some(f), _) => self.locate(&mut console, &f.url, f.line_number, f.column_number),
            (None, Some(url)) => self.locate(&mut console, url, d.line_number, d.column_number),
            (None, None) => {}
        }
        self.emit_console(conn, key, console, at);
    }

    pub(super) fn log_entry(
        &mut self,
        conn: u64,
        key: &Key,
        p: &cdp::EntryAdded<'_>,
        at: SystemTime,
    ) {
        if p.entry.level != "error" {
            return;
        }
        let mut console = Console::new(ConsoleLevel::Error, self.sanitizer.text(&p.entry.text));
        console.url = p
            .entry
            .url
            .as_deref()
            .filter(|u| !u.is_empty())
            .map(|u| self.sanitizer.url(u));
        console.line = p.entry.line_number.map(|l| l.saturating_add(1));
        self.emit_console(conn, key, console, at);
    }

    /// CDP lines and columns are 0-based; the journal's are 1-based.
    fn locate(&self, console: &mut Console, url: &str, line: u32, column: u32) {
        if !url.is_empty() {
            console.url = Some(self.sanitizer.url(url));
        }
        console.line = Some(line.saturating_add(1));
        console.column = Some(column.saturating_add(1));
    }

    fn emit_console(&mut self, conn: u64, key: &Key, console: Console, at: SystemTime) {
        let status = match console.level {
            ConsoleLevel::Warning => Status::Info,
            _ => Status::Error,
        };
        let mut r = Record::new(SafeText::literal(TOOL), RecordKind::Console(console))
            .started_at(at)
            .status(status);
        if let Some(t) = self.target_for(conn, key) {
            r = r.target(t);
        }
        if status == Status::Error {
            self.failure_seen(conn, key, at);
        }
        self.emit(r);
    }

    pub(super) fn emit_network(
        &mut self,
        conn: u64,
        key: &Key,
        failure: Option<Failure>,
        at: SystemTime,
    ) {
        let Some((failure, started)) = failure else {
            return;
        };
        let duration = failure
            .duration_ms()
            .map(Duration::from_millis)
            .unwrap_or_default();
        let mut r = Record::new(SafeText::literal(TOOL), RecordKind::Network(failure))
            .started_at(started.unwrap_or(at))
            .duration(duration)
            .status(Status::Error);
        if let Some(t) = self.target_for(conn, key) {
            r = r.target(t);
        }
        self.failure_seen(conn, key, at);
        self.emit(r);
    }

    fn failure_seen(&mut self, conn: u64, key: &Key, at: SystemTime) {
        let target_id = self.raw_target(conn, key);
        self.out
            .triggers
            .push(Trigger::FailureSeen { target_id, at });
    }
}
