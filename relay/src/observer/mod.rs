//! The observer: turns copies of forwarded frames into evidence records.
//!
//! It runs off the hot path (on the recorder thread), parses only what it needs, and correlates
//! commands with responses by (connection, CDP `sessionId`, `id`), falling back to (connection,
//! `id`) for error replies that carry no `sessionId`. Every string it keeps goes through the
//! run's [`Sanitizer`]; typed text is reduced to its length before anything else sees it.
//! Pending state is bounded; commands left unanswered at close or after a timeout are recorded
//! as interrupted. It never panics on a frame: anything unexpected is ignored.

mod cdp;
mod commands;
mod frame;
mod network;
mod session;

use crate::tap::{Direction, Payload, SessionEnd, TapEvent};
use cdp_evidence::{
    Action, ArtifactRef, Console, ConsoleLevel, Lifecycle, LifecycleEvent, Record, RecordKind,
    Status,
};
use cdp_sanitize::{SafeJson, SafeText, Sanitizer};
use commands::Command;
use frame::Frame;
use network::Requests;
use serde_json::json;
use session::{Burst, Endpoint, Session};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Where records and artifacts go. The recorder implements it over an evidence run; tests and the
/// fuzzer use an in-memory one.
pub trait Sink {
    /// Appends a record. Failures are the sink's to count and report.
    fn record(&mut self, record: Record);
    /// Stores an artifact; `None` when it was not stored (budget, disabled, failure).
    fn artifact(
        &mut self,
        stem: &'static str,
        ext: &'static str,
        bytes: &[u8],
    ) -> Option<ArtifactRef>;
}

/// Observer knobs. Tests build it directly.
#[derive(Debug, Clone)]
pub struct ObserverOptions {
    /// Keep screenshots (client captures and sampled screencast frames). By default, true.
    pub screenshots: bool,
    /// At most one screencast frame per target per this interval. By default, 2 s.
    pub screencast_every: Duration,
    /// Key events closer together than this make one typing step. By default, 1.5 s.
    pub typing_gap: Duration,
    /// A command unanswered this long is recorded as interrupted. By default, 5 min.
    pub pending_timeout: Duration,
    /// Commands tracked per connection before new ones are dropped (and counted). By default, 4096.
    pub max_pending: usize,
    /// Requests tracked per connection for failure joining. By default, 8192.
    pub max_requests: usize,
}

impl Default for ObserverOptions {
    fn default() -> Self {
        ObserverOptions {
            screenshots: true,
            screencast_every: Duration::from_secs(2),
            typing_gap: Duration::from_millis(1500),
            pending_timeout: Duration::from_secs(300),
            max_pending: 4096,
            max_requests: 8192,
        }
    }
}

/// Events the observer reads; every other event is skipped unparsed.
const EVENTS: [&str; 12] = [
    "Network.requestWillBeSent",
    "Network.responseReceived",
    "Network.loadingFailed",
    "Network.loadingFinished",
    "Runtime.consoleAPICalled",
    "Runtime.exceptionThrown",
    "Log.entryAdded",
    "Page.frameNavigated",
    "Page.screencastFrame",
    "Target.attachedToTarget",
    "Target.detachedFromTarget",
    "Target.targetInfoChanged",
];

/// The tool name on every record the relay writes.
const TOOL: &str = "cdp";

/// A command waiting for its response.
struct Pending {
    started: SystemTime,
    what: Waiting,
}

enum Waiting {
    /// Record `action` when the response arrives.
    Action {
        action: Action,
        target: Option<SafeJson>,
    },
    /// A screenshot: keep the image unless `withheld`.
    Screenshot {
        action: Action,
        target: Option<SafeJson>,
        ext: &'static str,
        withheld: bool,
    },
    /// One keystroke or insertion of typing burst `seq`.
    Typing { seq: u64 },
}

/// Per-connection state. Keys hold raw CDP ids in memory only; nothing here is persisted as is.
struct Conn {
    endpoint: Endpoint,
    pending: HashMap<(Option<Box<str>>, u64), Pending>,
    sessions: HashMap<Option<Box<str>>, Session>,
    /// Typing bursts that ended but still wait for responses.
    closing: HashMap<u64, Burst>,
    requests: Requests,
}

/// Turns [`TapEvent`]s into records on a [`Sink`].
pub struct Observer<S: Sink> {
    sanitizer: Arc<Sanitizer>,
    sink: S,
    opts: ObserverOptions,
    conns: HashMap<u64, Conn>,
    /// Targets typed into since their last main-frame navigation: no screenshots of them.
    typed_targets: HashSet<String>,
    next_burst: u64,
    dropped: u64,
    last_sweep: Option<SystemTime>,
}

impl<S: Sink> Observer<S> {
    /// An observer writing to `sink`, sanitizing with `sanitizer`.
    pub fn new(sanitizer: Arc<Sanitizer>, sink: S, opts: ObserverOptions) -> Observer<S> {
        Observer {
            sanitizer,
            sink,
            opts,
            conns: HashMap::new(),
            typed_targets: HashSet::new(),
            next_burst: 1,
            dropped: 0,
            last_sweep: None,
        }
    }

    /// Evidence the observer itself had to drop (pending or request tables full).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The sink, e.g. to read what was recorded.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The sink, e.g. to flush it.
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// Consumes one tap event.
    pub fn handle(&mut self, event: TapEvent) {
        match event {
            TapEvent::Opened { conn, path, at } => self.opened(conn, &path, at),
            TapEvent::Frame {
                conn,
                dir,
                at,
                payload: Payload::Text(text),
            } => {
                self.sweep(at);
                if self.skippable(conn, dir, text.as_str()) {
                    return;
                }
                if let Some(frame) = Frame::parse(text.as_str()) {
                    match dir {
                        Direction::ToBrowser => self.command(conn, &frame, at),
                        Direction::ToClient => self.browser_message(conn, &frame, at),
                    }
                }
            }
            // CDP is text; binary frames carry nothing the observer reads.
            TapEvent::Frame { .. } => {}
            TapEvent::Closed { conn, how, at } => self.closed(conn, how, at),
            TapEvent::Finish { at } => self.finish(at),
        }
    }

    /// Decides from the first bytes alone that a frame cannot matter, so the common case (events
    /// nobody records, replies nobody waits for) costs no parse. Chromium and the usual clients
    /// put `"method"` or `"id"` first; any other shape is parsed in full.
    fn skippable(&self, conn: u64, dir: Direction, text: &str) -> bool {
        match (dir, frame::leading(text)) {
            (Direction::ToClient, frame::Leading::Method(m)) => !EVENTS.contains(&m),
            (Direction::ToClient, frame::Leading::Id(id)) => self
                .conns
                .get(&conn)
                .is_none_or(|c| c.pending.len() <= 64 && !c.pending.keys().any(|(_, i)| *i == id)),
            (Direction::ToBrowser, frame::Leading::IdMethod(m)) => !commands::is_evidence(m),
            _ => false,
        }
    }

    /// Ends every open connection (relay shutdown): pending commands become interrupted.
    pub fn finish(&mut self, at: SystemTime) {
        let conns: Vec<u64> = self.conns.keys().copied().collect();
        for conn in conns {
            self.close_conn(conn, at, "the relay stopped before the browser answered");
        }
    }

    fn emit(&mut self, record: Record) {
        self.sink.record(record);
    }

    fn opened(&mut self, conn: u64, path: &str, at: SystemTime) {
        let endpoint = Endpoint::from_path(path);
        let target = endpoint.target_id().map(|id| self.target_of_id(id, None));
        let mut lifecycle = Lifecycle::new(LifecycleEvent::ClientConnected, conn);
        lifecycle.detail = Some(SafeText::literal(endpoint.kind_name()));
        let mut record = Record::new(SafeText::literal(TOOL), RecordKind::Lifecycle(lifecycle))
            .started_at(at)
            .status(Status::Info);
        if let Some(t) = target {
            record = record.target(t);
        }
        self.emit(record);
        let mut sessions = HashMap::new();
        sessions.insert(
            None,
            Session::new(endpoint.target_id().map(str::to_owned), None),
        );
        self.conns.insert(
            conn,
            Conn {
                endpoint,
                pending: HashMap::new(),
                sessions,
                closing: HashMap::new(),
                requests: Requests::new(self.opts.max_requests),
            },
        );
    }

    fn closed(&mut self, conn: u64, how: SessionEnd, at: SystemTime) {
        let why = match how {
            SessionEnd::BrowserLost => "the browser connection was lost",
            SessionEnd::Shutdown => "the relay stopped before the browser answered",
            _ => "the connection closed before the browser answered",
        };
        self.close_conn(conn, at, why);
        let (event, detail) = match how {
            SessionEnd::ClientClosed => {
                (LifecycleEvent::ClientDisconnected, "closed by the client")
            }
            SessionEnd::BrowserClosed => {
                (LifecycleEvent::ClientDisconnected, "closed by the browser")
            }
            SessionEnd::BrowserLost => (
                LifecycleEvent::UpstreamLost,
                "browser vanished without a close frame",
            ),
            SessionEnd::TooBig => (
                LifecycleEvent::ClientDisconnected,
                "a message exceeded --max-message-size",
            ),
            SessionEnd::Shutdown => (LifecycleEvent::ClientDisconnected, "relay shutdown"),
        };
        let mut lifecycle = Lifecycle::new(event, conn);
        lifecycle.detail = Some(SafeText::literal(detail));
        let status = if how == SessionEnd::BrowserLost {
            Status::Error
        } else {
            Status::Info
        };
        self.emit(
            Record::new(SafeText::literal(TOOL), RecordKind::Lifecycle(lifecycle))
                .started_at(at)
                .status(status),
        );
    }

    /// Flushes typing and interrupts everything pending on `conn`, then forgets it.
    fn close_conn(&mut self, conn: u64, at: SystemTime, why: &'static str) {
        let Some(mut c) = self.conns.remove(&conn) else {
            return;
        };
        let mut bursts: Vec<Burst> = c.closing.drain().map(|(_, b)| b).collect();
        for s in c.sessions.values_mut() {
            bursts.extend(s.typing.take());
        }
        let pending: Vec<Pending> = c.pending.drain().map(|(_, p)| p).collect();
        for p in pending {
            self.interrupt(p, at, why);
        }
        for b in bursts {
            self.emit_burst(b, at, Some(why));
        }
    }

    fn interrupt(&mut self, p: Pending, at: SystemTime, why: &'static str) {
        let (action, target) = match p.what {
            Waiting::Action { action, target } | Waiting::Screenshot { action, target, .. } => {
                (action, target)
            }
            // The burst itself is flushed (as interrupted) by the caller.
            Waiting::Typing { .. } => return,
        };
        let mut r = Record::new(SafeText::literal(TOOL), RecordKind::Action(action))
            .started_at(p.started)
            .duration(at.duration_since(p.started).unwrap_or_default())
            .status(Status::Interrupted)
            .error(SafeText::literal(why));
        if let Some(t) = target {
            r = r.target(t);
        }
        self.emit(r);
    }

    /// Interrupts commands older than the timeout. Runs at most every 10 s of frame time.
    fn sweep(&mut self, now: SystemTime) {
        let due = self.last_sweep.is_none_or(|last| {
            now.duration_since(last).unwrap_or_default() >= Duration::from_secs(10)
        });
        if !due {
            return;
        }
        self.last_sweep = Some(now);
        let timeout = self.opts.pending_timeout;
        let mut expired = Vec::new();
        for c in self.conns.values_mut() {
            let old: Vec<_> = c
                .pending
                .iter()
                .filter(|(_, p)| now.duration_since(p.started).unwrap_or_default() >= timeout)
                .map(|(k, _)| k.clone())
                .collect();
            for k in old {
                if let Some(p) = c.pending.remove(&k) {
                    expired.push(p);
                }
            }
        }
        for p in expired {
            self.interrupt(
                p,
                now,
                "no response from the browser within the pending timeout",
            );
        }
    }

    /// A client → browser message.
    fn command(&mut self, conn: u64, frame: &Frame<'_>, at: SystemTime) {
        let (Some(id), Some(method)) = (frame.id, frame.method()) else {
            return;
        };
        let Some(cmd) = commands::classify(method, frame, &self.sanitizer) else {
            return;
        };
        let key = frame.session().map(Box::from);
        self.close_stale_typing(conn, &key, at);
        let waiting = match cmd {
            Command::Typing { text } => {
                let seq = self.add_typing(conn, &key, &text, at);
                Waiting::Typing { seq }
            }
            other => {
                self.end_typing(conn, &key, at);
                let target = self.target_for(conn, &key);
                match other {
                    Command::Action(action) => Waiting::Action { action, target },
                    Command::Navigate(action) => {
                        let typed = self.typing_key(conn, &key);
                        self.typed_targets.remove(&typed);
                        Waiting::Action { action, target }
                    }
                    Command::Screenshot { action, ext } => {
                        let withheld = !self.opts.screenshots
                            || self.typed_targets.contains(&self.typing_key(conn, &key));
                        Waiting::Screenshot {
                            action,
                            target,
                            ext,
                            withheld,
                        }
                    }
                    Command::Typing { .. } => return,
                }
            }
        };
        let max = self.opts.max_pending;
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if c.pending.len() >= max {
            self.dropped += 1;
            return;
        }
        c.pending.insert(
            (key, id),
            Pending {
                started: at,
                what: waiting,
            },
        );
    }

    /// A browser → client message: a response (has `id`) or an event (has `method`).
    fn browser_message(&mut self, conn: u64, frame: &Frame<'_>, at: SystemTime) {
        if let Some(id) = frame.id {
            self.response(conn, id, frame, at);
        } else if let Some(method) = frame.method() {
            self.event(conn, method, frame, at);
        }
    }

    fn response(&mut self, conn: u64, id: u64, frame: &Frame<'_>, at: SystemTime) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let key = frame.session().map(Box::from);
        let pending = match c.pending.remove(&(key.clone(), id)) {
            Some(p) => Some(p),
            // Some error replies lack the sessionId of their command: match on the id alone.
            None if key.is_none() => {
                let found = c.pending.keys().find(|(_, i)| *i == id).cloned();
                found.and_then(|k| c.pending.remove(&k))
            }
            None => None,
        };
        let Some(p) = pending else {
            return;
        };
        let error = frame.error_message().map(|m| self.sanitizer.error(&m));
        let status = if error.is_some() {
            Status::Error
        } else {
            Status::Ok
        };
        let duration = at.duration_since(p.started).unwrap_or_default();
        match p.what {
            Waiting::Typing { seq } => self.typing_answered(conn, seq, error, at),
            Waiting::Action { action, target } => {
                let r = finish(
                    Record::new(SafeText::literal(TOOL), RecordKind::Action(action)),
                    p.started,
                    duration,
                    status,
                    error,
                    target,
                );
                self.emit(r);
            }
            Waiting::Screenshot {
                mut action,
                target,
                ext,
                withheld,
            } => {
                let mut r = None;
                if error.is_none() {
                    let data = frame
                        .result::<cdp::Data>()
                        .map(|d| d.data)
                        .unwrap_or_default();
                    let bytes = decode_base64(&data);
                    action.bytes = bytes.as_ref().map(|b| b.len() as u64);
                    if withheld {
                        action.detail =
                            Some(withheld_detail(&self.sanitizer, self.opts.screenshots));
                    } else if let Some(b) = bytes {
                        r = self.sink.artifact("screenshot", ext, &b);
                    }
                }
                let mut record = finish(
                    Record::new(SafeText::literal(TOOL), RecordKind::Action(action)),
                    p.started,
                    duration,
                    status,
                    error,
                    target,
                );
                if let Some(a) = r {
                    record = record.artifact(a);
                }
                self.emit(record);
            }
        }
    }

    fn event(&mut self, conn: u64, method: &str, frame: &Frame<'_>, at: SystemTime) {
        let key = frame.session().map(Box::from);
        match method {
            "Network.requestWillBeSent" => {
                if let Some(p) = frame.params::<cdp::RequestWillBeSent>() {
                    if let Some(c) = self.conns.get_mut(&conn) {
                        if !c.requests.sent(&key, &p, at) {
                            self.dropped += 1;
                        }
                    }
                }
            }
            "Network.responseReceived" => {
                let failure = match (
                    frame.params::<cdp::ResponseReceived>(),
                    self.conns.get_mut(&conn),
                ) {
                    (Some(p), Some(c)) => c.requests.response(&key, &p, &self.sanitizer),
                    _ => None,
                };
                self.emit_network(conn, &key, failure, at);
            }
            "Network.loadingFailed" => {
                let failure = match (
                    frame.params::<cdp::LoadingFailed>(),
                    self.conns.get_mut(&conn),
                ) {
                    (Some(p), Some(c)) => c.requests.failed(&key, &p, &self.sanitizer),
                    _ => None,
                };
                self.emit_network(conn, &key, failure, at);
            }
            "Network.loadingFinished" => {
                if let (Some(p), Some(c)) =
                    (frame.params::<cdp::RequestId>(), self.conns.get_mut(&conn))
                {
                    c.requests.finished(&key, &p.request_id);
                }
            }
            "Runtime.consoleAPICalled" => {
                if let Some(p) = frame.params::<cdp::ConsoleApiCalled>() {
                    self.console_api(conn, &key, &p, at);
                }
            }
            "Runtime.exceptionThrown" => {
                if let Some(p) = frame.params::<cdp::ExceptionThrown>() {
                    self.exception(conn, &key, &p.exception_details, at);
                }
            }
            "Log.entryAdded" => {
                if let Some(p) = frame.params::<cdp::EntryAdded>() {
                    if p.entry.level == "error" {
                        let mut console =
                            Console::new(ConsoleLevel::Error, self.sanitizer.text(&p.entry.text));
                        console.url = p
                            .entry
                            .url
                            .as_deref()
                            .filter(|u| !u.is_empty())
                            .map(|u| self.sanitizer.url(u));
                        console.line = p.entry.line_number.map(|l| l.saturating_add(1));
                        self.emit_console(conn, &key, console, at);
                    }
                }
            }
            "Page.frameNavigated" => {
                if let Some(p) = frame.params::<cdp::FrameNavigated>() {
                    if p.frame.parent_id.is_none() {
                        let typed = self.typing_key(conn, &key);
                        self.typed_targets.remove(&typed);
                    }
                }
            }
            "Page.screencastFrame" => self.screencast(conn, &key, frame, at),
            "Target.attachedToTarget" => {
                if let Some(p) = frame.params::<cdp::AttachedToTarget>() {
                    let raw_id = p
                        .target_info
                        .get("targetId")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned);
                    let summary = self.sanitizer.target_info(&p.target_info);
                    if let Some(c) = self.conns.get_mut(&conn) {
                        if c.sessions.len() < self.opts.max_pending {
                            c.sessions.insert(
                                Some(Box::from(p.session_id.as_ref())),
                                Session::new(raw_id, Some(summary)),
                            );
                        } else {
                            self.dropped += 1;
                        }
                    }
                }
            }
            "Target.detachedFromTarget" => {
                if let Some(p) = frame.params::<cdp::SessionRef>() {
                    self.detach(conn, Some(Box::from(p.session_id.as_ref())), at);
                }
            }
            "Target.targetInfoChanged" => {
                if let Some(p) = frame.params::<cdp::TargetInfoChanged>() {
                    let raw_id = p
                        .target_info
                        .get("targetId")
                        .and_then(|v| v.as_str())
                        .unwrap_or_default()
                        .to_owned();
                    let summary = self.sanitizer.target_info(&p.target_info);
                    if let Some(c) = self.conns.get_mut(&conn) {
                        for s in c.sessions.values_mut() {
                            if s.target_id.as_deref() == Some(raw_id.as_str()) {
                                s.target = Some(summary.clone());
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn detach(&mut self, conn: u64, key: Option<Box<str>>, at: SystemTime) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let burst = c.sessions.remove(&key).and_then(|mut s| s.typing.take());
        let keys: Vec<_> = c
            .pending
            .keys()
            .filter(|(s, _)| *s == key)
            .cloned()
            .collect();
        let pending: Vec<Pending> = keys.iter().filter_map(|k| c.pending.remove(k)).collect();
        for p in pending {
            self.interrupt(p, at, "the target detached before the browser answered");
        }
        if let Some(b) = burst {
            self.emit_burst(
                b,
                at,
                Some("the target detached before the browser answered"),
            );
        }
    }

    fn console_api(
        &mut self,
        conn: u64,
        key: &Option<Box<str>>,
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

    fn exception(
        &mut self,
        conn: u64,
        key: &Option<Box<str>>,
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

    /// CDP lines and columns are 0-based; the journal's are 1-based.
    fn locate(&self, console: &mut Console, url: &str, line: u32, column: u32) {
        if !url.is_empty() {
            console.url = Some(self.sanitizer.url(url));
        }
        console.line = Some(line.saturating_add(1));
        console.column = Some(column.saturating_add(1));
    }

    fn emit_console(
        &mut self,
        conn: u64,
        key: &Option<Box<str>>,
        console: Console,
        at: SystemTime,
    ) {
        let status = match console.level {
            ConsoleLevel::Warning => Status::Info,
            _ => Status::Error,
        };
        let target = self.target_for(conn, key);
        let mut r = Record::new(SafeText::literal(TOOL), RecordKind::Console(console))
            .started_at(at)
            .status(status);
        if let Some(t) = target {
            r = r.target(t);
        }
        self.emit(r);
    }

    fn emit_network(
        &mut self,
        conn: u64,
        key: &Option<Box<str>>,
        failure: Option<network::Failure>,
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
        self.emit(r);
    }

    fn screencast(&mut self, conn: u64, key: &Option<Box<str>>, frame: &Frame<'_>, at: SystemTime) {
        if !self.opts.screenshots {
            return;
        }
        if self.typed_targets.contains(&self.typing_key(conn, key)) {
            return;
        }
        let every = self.opts.screencast_every;
        let Some(session) = self
            .conns
            .get_mut(&conn)
            .and_then(|c| c.sessions.get_mut(key))
        else {
            return;
        };
        if session
            .last_frame
            .is_some_and(|last| at.duration_since(last).unwrap_or_default() < every)
        {
            return;
        }
        session.last_frame = Some(at);
        let Some(bytes) = frame
            .params::<cdp::Data>()
            .and_then(|d| decode_base64(&d.data))
        else {
            return;
        };
        let mut action = Action::new(SafeText::literal("Page.screencastFrame"));
        action.bytes = Some(bytes.len() as u64);
        let stored = self.sink.artifact("screencast", "jpeg", &bytes);
        let target = self.target_for(conn, key);
        let mut r = Record::new(SafeText::literal(TOOL), RecordKind::Action(action))
            .started_at(at)
            .status(Status::Info);
        if let Some(a) = stored {
            r = r.artifact(a);
        }
        if let Some(t) = target {
            r = r.target(t);
        }
        self.emit(r);
    }

    // --- typing bursts ---------------------------------------------------------------------

    fn add_typing(&mut self, conn: u64, key: &Option<Box<str>>, text: &str, at: SystemTime) -> u64 {
        let typed = self.typing_key(conn, key);
        self.typed_targets.insert(typed);
        let next = self.next_burst;
        let target = self.target_for(conn, key);
        let Some(session) = self
            .conns
            .get_mut(&conn)
            .and_then(|c| c.sessions.get_mut(key))
        else {
            return 0;
        };
        let burst = session
            .typing
            .get_or_insert_with(|| Burst::new(next, at, target));
        if burst.seq == next {
            self.next_burst += 1;
        }
        burst.add(text, at);
        burst.seq
    }

    /// Ends the session's burst if the gap since its last key is long enough.
    fn close_stale_typing(&mut self, conn: u64, key: &Option<Box<str>>, at: SystemTime) {
        let gap = self.opts.typing_gap;
        let stale = self
            .conns
            .get(&conn)
            .and_then(|c| c.sessions.get(key))
            .and_then(|s| s.typing.as_ref())
            .is_some_and(|b| at.duration_since(b.last).unwrap_or_default() > gap);
        if stale {
            self.end_typing(conn, key, at);
        }
    }

    /// Ends the session's burst: registers the typed literal for echo protection, then emits it
    /// now or, if keystrokes are still unanswered, when their responses arrive.
    fn end_typing(&mut self, conn: u64, key: &Option<Box<str>>, at: SystemTime) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let Some(burst) = c.sessions.get_mut(key).and_then(|s| s.typing.take()) else {
            return;
        };
        if burst.outstanding == 0 {
            self.emit_burst(burst, at, None);
        } else {
            c.closing.insert(burst.seq, burst);
        }
    }

    fn typing_answered(&mut self, conn: u64, seq: u64, error: Option<SafeText>, at: SystemTime) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if let Some(b) = c
            .sessions
            .values_mut()
            .filter_map(|s| s.typing.as_mut())
            .find(|b| b.seq == seq)
        {
            b.answered(error, at);
            return;
        }
        let done = match c.closing.get_mut(&seq) {
            Some(b) => {
                b.answered(error, at);
                b.outstanding == 0
            }
            None => false,
        };
        if done {
            if let Some(b) = c.closing.remove(&seq) {
                self.emit_burst(b, at, None);
            }
        }
    }

    fn emit_burst(&mut self, burst: Burst, at: SystemTime, interrupted: Option<&'static str>) {
        burst.register_echo(&self.sanitizer);
        let (action, started, ended, error, target) = burst.into_parts(&self.sanitizer);
        let (status, error) = match (interrupted, error) {
            (_, Some(e)) => (Status::Error, Some(e)),
            (Some(why), None) => (Status::Interrupted, Some(SafeText::literal(why))),
            (None, None) => (Status::Ok, None),
        };
        let end = if interrupted.is_some() { at } else { ended };
        let duration = end.duration_since(started).unwrap_or_default();
        let r = finish(
            Record::new(SafeText::literal(TOOL), RecordKind::Action(action)),
            started,
            duration,
            status,
            error,
            target,
        );
        self.emit(r);
    }

    // --- targets ---------------------------------------------------------------------------

    /// The raw target id behind (connection, session), in memory only.
    fn raw_target(&self, conn: u64, key: &Option<Box<str>>) -> Option<String> {
        let c = self.conns.get(&conn)?;
        c.sessions
            .get(key)
            .and_then(|s| s.target_id.clone())
            .or_else(|| {
                key.is_none()
                    .then(|| c.endpoint.target_id().map(str::to_owned))
                    .flatten()
            })
    }

    /// What typing is tracked under: the target when known (so every connection to that page
    /// withholds its screenshots), else the connection and session. Memory only.
    fn typing_key(&self, conn: u64, key: &Option<Box<str>>) -> String {
        self.raw_target(conn, key)
            .unwrap_or_else(|| format!("{conn}/{}", key.as_deref().unwrap_or("")))
    }

    /// Sanitized target metadata for records of (connection, session).
    fn target_for(&self, conn: u64, key: &Option<Box<str>>) -> Option<SafeJson> {
        let c = self.conns.get(&conn)?;
        if let Some(t) = c.sessions.get(key).and_then(|s| s.target.clone()) {
            return Some(t);
        }
        let id = self.raw_target(conn, key)?;
        Some(self.target_of_id(&id, None))
    }

    fn target_of_id(&self, id: &str, kind: Option<&str>) -> SafeJson {
        let mut info = json!({ "targetId": id });
        if let Some(k) = kind {
            info["type"] = json!(k);
        }
        self.sanitizer.target_info(&info)
    }
}

fn finish(
    record: Record,
    started: SystemTime,
    duration: Duration,
    status: Status,
    error: Option<SafeText>,
    target: Option<SafeJson>,
) -> Record {
    let mut r = record.started_at(started).duration(duration).status(status);
    if let Some(e) = error {
        r = r.error(e);
    }
    if let Some(t) = target {
        r = r.target(t);
    }
    r
}

fn withheld_detail(sanitizer: &Sanitizer, screenshots_on: bool) -> SafeJson {
    let why = if screenshots_on {
        "typing since the last navigation"
    } else {
        "screenshots are off"
    };
    sanitizer.json(&json!({ "screenshotWithheld": why }))
}

/// Decodes CDP's base64 image data; `None` for anything malformed or empty.
fn decode_base64(data: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.as_bytes())
        .ok()?;
    (!bytes.is_empty()).then_some(bytes)
}

#[cfg(test)]
mod tests;
