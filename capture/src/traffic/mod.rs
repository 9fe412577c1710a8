//! The traffic reader: turns copies of forwarded messages into evidence records.
//!
//! A synchronous state machine (no sockets, no files), run on the pipeline's observer thread,
//! tested with scripted frames and fuzzed. It parses only what it needs, correlates commands
//! with responses (`correlate.rs`), reads typing in whatever spelling a client sends it
//! (`typed.rs`), groups it into bursts (`typing.rs`) and short bursts into one group of fields'
//! literal (`groups.rs`), knows which page each connection and
//! session drives (`sessions.rs`) and keeps a client's own screenshots (`screenshots.rs`). The
//! events the relay's own observer reads too — target info, navigations, what a page reports —
//! go to the page model's one handler (`pages/events.rs`), which decides for both. Every string
//! it keeps goes through the run's [`Sanitizer`]; typed text is registered with it when its
//! command is handled — before any later copy is (the pipeline hands copies over in the
//! evidence order, `order.rs`) — and is reduced to its length before anything else sees it.
//!
//! It never writes: [`TrafficReader::take`] hands its records to the run writer. It never panics on
//! a frame: anything unexpected is ignored.

mod burst;
pub(crate) mod commands;
mod correlate;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod fuzz;
mod groups;
mod screenshots;
mod sessions;
mod targets;
pub(crate) mod thread;
pub(crate) mod typed;
mod typing;
mod wrapped;

use crate::calls::ToolCalls;
use crate::cdp::frame::{self, Frame};
use crate::cdp::methods::{self, Event, TrafficEvent};
use crate::pages::events::{self, Effect, Source};
use crate::pages::reports::By;
use crate::pages::requests::Requests;
use crate::pages::Pages;
use crate::{cdp::IdMap, Emit};
use burst::Burst;
use cdp_evidence::{Lifecycle, LifecycleEvent, Record, RecordKind, Status};
use cdp_relay_tap::tap::{Direction, Payload, SessionEnd, TapEvent};
use cdp_sanitize::{SafeText, Sanitizer};
use correlate::{Pending, PendingTable};
use sessions::{Endpoint, Session};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use typing::Held;
pub(crate) use typing::Verifier;

/// TrafficReader knobs. Tests build it directly.
#[derive(Debug, Clone)]
pub struct TrafficOptions {
    /// At most one screencast frame per session per this interval. By default, 2 s.
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

impl Default for TrafficOptions {
    fn default() -> Self {
        TrafficOptions {
            screencast_every: Duration::from_secs(2),
            typing_gap: Duration::from_millis(1500),
            pending_timeout: Duration::from_secs(300),
            max_pending: 4096,
            max_requests: 8192,
        }
    }
}

/// What the observer produced since the last [`TrafficReader::take`].
#[derive(Debug, Default)]
pub struct Output {
    /// Records (with artifacts to store) for the run writer, in order.
    pub emits: Vec<Emit>,
}

/// The tool name on every record the traffic reader writes.
const TOOL: &str = "cdp";

/// A CDP session key on a connection: its `sessionId`, `None` for the root session. Shared
/// ([`SessionKeys`]): nearly every message names its session, and a table lookup or a pending
/// entry then costs a reference count, not an allocation.
type Key = Option<Arc<str>>;

/// The session keys seen lately, one shared copy each.
#[derive(Default)]
struct SessionKeys(std::collections::HashSet<Arc<str>, foldhash::fast::RandomState>);

/// Session keys kept for sharing; past this the set starts again (keys already handed out stay
/// valid: this only bounds what a client inventing session ids can make it hold).
const MAX_SESSION_KEYS: usize = 4096;

impl SessionKeys {
    fn key(&mut self, session: Option<&str>) -> Key {
        let session = session?;
        if let Some(k) = self.0.get(session) {
            return Some(k.clone());
        }
        if self.0.len() >= MAX_SESSION_KEYS {
            self.0.clear();
        }
        let k: Arc<str> = Arc::from(session);
        self.0.insert(k.clone());
        Some(k)
    }
}

/// Per-connection state. Keys hold raw CDP ids in memory only; nothing here is persisted as is.
struct Conn {
    endpoint: Endpoint,
    pending: PendingTable,
    sessions: IdMap<Key, Session>,
    /// Typing bursts that ended but still wait for responses.
    closing: IdMap<u64, Burst>,
    requests: Requests,
}

/// Turns [`TapEvent`]s into records.
pub struct TrafficReader {
    sanitizer: Arc<Sanitizer>,
    opts: TrafficOptions,
    /// The page model, shared with the relay's own observer.
    pages: Arc<Pages>,
    /// The run's agent tool calls: told of the failures and commands it reads.
    calls: Option<ToolCalls>,
    conns: IdMap<u64, Conn>,
    next_burst: u64,
    dropped: u64,
    last_sweep: Option<SystemTime>,
    out: Output,
    /// The direct reader's verification, when it runs.
    verifier: Option<Verifier>,
    /// Typing steps waiting for their verdict, by burst number.
    held: IdMap<u64, Held>,
    /// The page agent's reports of where steps went, and clicks waiting for theirs.
    targets: targets::Targets,
    keys: SessionKeys,
    /// Where a typing burst may be open: every burst's (connection, session) is here from its
    /// first key, and an entry whose burst has ended goes at the next look. The commands that
    /// end bursts look here instead of at every session of every connection (a cost that grew
    /// with the connections).
    typing_in: Vec<(u64, Key)>,
    /// Non-flat messages being read inside one another (`wrapped.rs`), bounded.
    depth: u8,
    /// Groups of short typing steps, one literal each (`groups.rs`).
    groups: groups::Groups,
}

/// Bytes of a large message read to decide whether it matters ([`frame::leading`] needs the
/// leading `"id"` and `"method"` whole, else it answers `Unknown` and the message is read in full).
const HEAD: usize = 512;

impl TrafficReader {
    /// An observer feeding `pages` (and sanitizing with its sanitizer).
    pub fn new(pages: Arc<Pages>, opts: TrafficOptions) -> TrafficReader {
        TrafficReader {
            sanitizer: pages.sanitizer().clone(),
            opts,
            pages,
            calls: None,
            conns: IdMap::default(),
            next_burst: 1,
            dropped: 0,
            last_sweep: None,
            out: Output::default(),
            verifier: None,
            held: IdMap::default(),
            targets: targets::Targets::default(),
            keys: SessionKeys::default(),
            typing_in: Vec::new(),
            depth: 0,
            groups: groups::Groups::default(),
        }
    }

    /// Tells `calls` of each failure as it is read (before it waits for a frame), and of the
    /// commands and typing it reads.
    pub(crate) fn with_calls(mut self, calls: ToolCalls) -> TrafficReader {
        self.calls = Some(calls);
        self
    }

    /// Hands typing bursts to the direct reader for verification.
    pub(crate) fn with_verifier(mut self, verifier: Verifier) -> TrafficReader {
        self.verifier = Some(verifier);
        self
    }

    /// Evidence the observer itself had to drop (pending or request tables full).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Everything produced since the last call.
    pub fn take(&mut self) -> Output {
        // The next batch is likely the size of this one: growing a vector of records by
        // doubling moved each record several times.
        let next = Output {
            emits: Vec::with_capacity(self.out.emits.len()),
        };
        std::mem::replace(&mut self.out, next)
    }

    /// Records waiting to be taken.
    pub fn pending_records(&self) -> usize {
        self.out.emits.len()
    }

    /// Consumes one tap event.
    pub fn handle(&mut self, event: TapEvent) {
        match event {
            TapEvent::Opened { conn, path, at } => self.opened(conn, &path, at),
            TapEvent::Frame {
                conn,
                dir,
                at,
                payload,
            } => {
                self.sweep(at);
                if dir == Direction::ToBrowser {
                    self.client_message(conn, &payload, at);
                    return;
                }
                if payload.len() > HEAD && payload.is_text() {
                    // Judge a large message by its head before paying to join and validate it
                    // (a 64 MiB reply nobody waits for costs nothing more).
                    let head = payload.head(HEAD);
                    let valid = match std::str::from_utf8(&head) {
                        Ok(s) => s,
                        // A head cut inside a character: its valid prefix.
                        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""),
                    };
                    if self.skippable(conn, dir, valid) {
                        return;
                    }
                }
                let Some(text) = payload.as_text() else {
                    // CDP is text; binary frames and invalid UTF-8 carry nothing to read.
                    return;
                };
                if self.skippable(conn, dir, &text) {
                    return;
                }
                if let Some(frame) = Frame::parse(&text) {
                    self.browser_message(conn, &frame, at);
                }
            }
            TapEvent::Closed { conn, how, at } => self.closed(conn, how, at),
            TapEvent::Finish { at } => self.finish(at),
            TapEvent::TypingOver { at, call } => self.typing_over(at, call.as_deref()),
        }
    }

    /// A client → browser message. Typing is looked for first and in full — in any key order,
    /// any escaping, in nested messages — and registered before anything after it is handled;
    /// only then may the message be judged by its leading bytes.
    fn client_message(&mut self, conn: u64, payload: &Payload, at: SystemTime) {
        let Some(text) = payload.as_text() else {
            // CDP is text; binary frames and invalid UTF-8 carry nothing to read.
            return;
        };
        if text.len() <= frame::MAX_PARSED_BYTES && typed::may_type(&text) {
            if let Some(typing) = typed::read(&text) {
                self.typing_command(conn, typing, at);
                return;
            }
        }
        if self.skippable(conn, Direction::ToBrowser, &text) {
            return;
        }
        if let Some(frame) = Frame::parse(&text) {
            self.command(conn, &frame, at);
        }
    }

    /// Decides from the first bytes alone that a frame cannot matter, so the common case (events
    /// nobody records, replies nobody waits for) costs no parse. Chromium and the usual clients
    /// put `"method"` or `"id"` first; any other shape is parsed in full. Typing never reaches
    /// here unread (`client_message`).
    fn skippable(&self, conn: u64, dir: Direction, text: &str) -> bool {
        match (dir, frame::leading(text)) {
            (Direction::ToClient, frame::Leading::Method(m)) => match Event::parse(m) {
                // A non-flat session's message: judged by the message it wraps.
                Some(Event::Passive(TrafficEvent::TargetReceivedMessageFromTarget)) => {
                    match frame::wrapped_leading(text) {
                        frame::Leading::Method(m) => Event::parse(m).is_none_or(|e| !e.passive()),
                        frame::Leading::Id(id) => !self.may_await(conn, id),
                        _ => false,
                    }
                }
                e => e.is_none_or(|e| !e.passive()),
            },
            (Direction::ToClient, frame::Leading::Id(id)) => !self.may_await(conn, id),
            (Direction::ToBrowser, frame::Leading::IdMethod(m)) => {
                methods::CommandMethod::parse(m).is_none()
            }
            _ => false,
        }
    }

    /// Ends every open connection (the pipeline stops): pending commands become interrupted,
    /// typing steps still waiting for a verdict are written without one.
    pub fn finish(&mut self, at: SystemTime) {
        let conns: Vec<u64> = self.conns.keys().copied().collect();
        for conn in conns {
            self.close_conn(conn, at, "the relay stopped before the browser answered");
        }
        self.tick(at);
        self.release_all();
    }

    fn emit(&mut self, record: Record) {
        self.out.emits.push(Emit::Record(record));
    }

    fn opened(&mut self, conn: u64, path: &str, at: SystemTime) {
        let endpoint = Endpoint::from_path(path);
        let target = endpoint.target_id().map(|id| self.pages.target(id));
        let mut lifecycle = Lifecycle::new(LifecycleEvent::ClientConnected, conn);
        lifecycle.detail = Some(SafeText::literal(endpoint.kind_name()));
        let mut record = Record::new(SafeText::literal(TOOL), RecordKind::Lifecycle(lifecycle))
            .started_at(at)
            .status(Status::Info);
        if let Some(t) = target {
            record = record.target(t);
        }
        self.emit(record);
        let mut sessions = IdMap::default();
        sessions.insert(None, Session::new(endpoint.target_id().map(str::to_owned)));
        self.conns.insert(
            conn,
            Conn {
                endpoint,
                pending: PendingTable::default(),
                sessions,
                closing: IdMap::default(),
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
            SessionEnd::ProtocolError => (
                LifecycleEvent::ClientDisconnected,
                "the client broke the websocket protocol",
            ),
            SessionEnd::ClientNotReading => (
                LifecycleEvent::ClientDisconnected,
                "the client kept pinging without reading the answers",
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
        let pending: Vec<Pending> = c.pending.take_where(|_, _| true);
        for p in pending {
            self.interrupt(p, at, why);
        }
        for b in bursts {
            // A burst whose every keystroke was answered is complete, however the connection
            // ended afterwards.
            let interrupted = (b.outstanding > 0).then_some(why);
            self.emit_burst(b, at, interrupted);
        }
    }

    /// A browser → client message: a response (has `id`) or an event (has `method`).
    fn browser_message(&mut self, conn: u64, frame: &Frame<'_>, at: SystemTime) {
        if let Some(id) = frame.id {
            self.response(conn, id, frame, at);
        } else if let Some(event) = frame.method().and_then(Event::parse) {
            self.event(conn, event, frame, at);
        }
    }

    fn event(&mut self, conn: u64, event: Event, frame: &Frame<'_>, at: SystemTime) {
        let key = self.keys.key(frame.session());
        let effect = match event {
            Event::Target(e) => events::target_event(&self.pages, e, frame),
            Event::Page(e) => {
                let Some(Conn {
                    endpoint,
                    sessions,
                    requests,
                    ..
                }) = self.conns.get_mut(&conn)
                else {
                    return;
                };
                let target = sessions::target_of(endpoint, sessions, &key);
                let page = match target {
                    Some(t) => Cow::Borrowed(t),
                    None => Cow::Owned(sessions::unknown_page(conn, &key)),
                };
                let src = Source {
                    by: By::Traffic,
                    page: &page,
                    target,
                    requests,
                    session: key.as_deref(),
                };
                events::page_event(&self.pages, src, e, frame, at)
            }
            Event::Passive(TrafficEvent::PageScreencastFrame) => {
                self.screencast(conn, &key, frame, at);
                return;
            }
            Event::Passive(TrafficEvent::TargetReceivedMessageFromTarget) => {
                self.wrapped_message(conn, frame, at);
                return;
            }
            // The relay's own observer reads these on its own sessions.
            Event::TrafficReader(_) => return,
        };
        match effect {
            Effect::None | Effect::Committed => {}
            Effect::Record(r) => self.emit(r),
            Effect::Failure { now, failure } => {
                if let Some(calls) = &self.calls {
                    calls.note_failure(&failure);
                }
                if let Some(r) = now {
                    self.emit(r);
                }
            }
            Effect::Dropped => self.dropped += 1,
            Effect::Attached {
                session, target, ..
            } => self.attached(conn, session, target),
            Effect::Detached { session } => {
                let key = self.keys.key(Some(&session));
                self.detach(conn, key, at);
            }
        }
    }

    fn detach(&mut self, conn: u64, key: Key, at: SystemTime) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let burst = c.sessions.remove(&key).and_then(|mut s| s.typing.take());
        let pending: Vec<Pending> = c.pending.take_where(|(s, _), _| *s == key);
        let why = "the target detached before the browser answered";
        for p in pending {
            self.interrupt(p, at, why);
        }
        if let Some(b) = burst {
            let interrupted = (b.outstanding > 0).then_some(why);
            self.emit_burst(b, at, interrupted);
        }
    }
}

#[cfg(test)]
mod tests;
