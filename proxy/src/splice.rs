//! The hot path: moves websocket bytes between a client and the browser.
//!
//! Each direction reads what the socket has (one `read`), writes exactly those bytes to the peer
//! (one `write`), and only then hands copies of the messages in them to the tap. Frames pass
//! through unmodified, masks included: a ping reaches the browser and its pong the client, a
//! close crosses with its own code, invalid UTF-8 reaches the browser as Chromium would see it.
//! The frame scanner (`frames.rs`) only says where messages start and end, and where the
//! relay must step in: a message over `--max-message-size` (1009 both ways), a client breaking
//! the protocol (1002), a browser that vanished (1011), shutdown (1001). The relay's own frames
//! are written only between two frames.
//!
//! Never parses a payload, never waits on evidence. One buffer per direction: a slow reader
//! slows its writer through TCP, memory stays bounded.

use crate::frames::{close_frame, Event, From, Scanner, Stop};
use crate::order::Chunk;
use crate::stats::Stats;
#[cfg(test)]
use crate::tap::TapEvent;
use crate::tap::{Direction, Mask, Payload, SessionEnd, Tap};
use bytes::{Buf, Bytes, BytesMut};
use futures_util::task::AtomicWaker;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

/// After one side has ended, how long the other gets to finish (a close handshake, a drain).
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Bytes read per syscall at most; also the most a direction holds while its peer is slow.
const READ_SIZE: usize = 64 * 1024;

/// Messages up to this size are copied for the tap (cheaper than keeping the read buffer
/// alive); bigger ones are handed over as slices of the read buffers, copied off the hot path.
const COPY_BELOW: u64 = 16 * 1024;

/// The largest message the observer reads; bigger ones are forwarded and counted only.
const TAP_MAX: u64 = 64 * 1024 * 1024;

/// Pings a client may have in flight without reading their pongs. A client that floods pings
/// and never reads would make the browser queue pongs without bound; past this it is closed.
const MAX_UNANSWERED_PINGS: u64 = 1024;

/// Close codes the relay sends itself.
const GOING_AWAY: u16 = 1001;
const PROTOCOL_ERROR: u16 = 1002;
const POLICY: u16 = 1008;
const TOO_BIG: u16 = 1009;
const BROWSER_LOST: u16 = 1011;

/// Identity of one spliced session, for the tap and the log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionId(pub(crate) u64);

/// What the splice needs besides the two sockets.
pub(crate) struct Context {
    pub(crate) tap: Tap,
    pub(crate) stats: Arc<Stats>,
    pub(crate) stop: CancellationToken,
    pub(crate) max_message: usize,
}

/// One side of a session: a socket split in two, and bytes already read past the handshake.
pub(crate) struct Side<R, W> {
    pub(crate) read: R,
    pub(crate) write: W,
    pub(crate) leftover: Bytes,
}

/// Why one direction stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PumpEnd {
    /// The source sent a close frame (forwarded), then ended.
    Closed,
    /// The source ended without a close frame.
    Lost,
    /// The source sent a message over the size limit.
    TooBig,
    /// The client broke the protocol.
    Violation,
    /// The client kept pinging without reading the pongs.
    Flood,
    /// Writing to the destination failed: it is gone.
    PeerGone,
    /// The relay is stopping (1001 sent where possible).
    Stopped,
    /// The other direction asked this one to close its destination (and it did, if it could).
    Told,
}

/// Splices `client` and `browser` until either side ends or the relay stops.
pub(crate) async fn splice<CR, CW, BR, BW>(
    id: SessionId,
    client: Side<CR, CW>,
    browser: Side<BR, BW>,
    cx: Arc<Context>,
) -> SessionEnd
where
    CR: AsyncRead + Unpin + Send + 'static,
    CW: AsyncWrite + Unpin + Send + 'static,
    BR: AsyncRead + Unpin + Send + 'static,
    BW: AsyncWrite + Unpin + Send + 'static,
{
    let shared = Arc::new(Shared::default());
    // Each direction is a task of its own, woken only by its own socket: a combinator that
    // polled both whenever either was woken made every message pay for the idle direction.
    let pump = |dir: Direction, leftover: &[u8]| Pump::new(id.0, dir, cx.max_message, leftover);
    let mut up = spawn(
        pump(Direction::ToBrowser, &client.leftover),
        client.read,
        browser.write,
        &shared,
        &cx,
    );
    let mut down = spawn(
        pump(Direction::ToClient, &browser.leftover),
        browser.read,
        client.write,
        &shared,
        &cx,
    );
    // Relay shutdown asks both directions for a 1001.
    let stop_watch = AbortOnDropHandle::new(tokio::spawn({
        let (stop, shared) = (cx.stop.clone(), shared.clone());
        async move {
            stop.cancelled().await;
            for dir in [Direction::ToBrowser, Direction::ToClient] {
                shared.signal(dir).stop();
            }
        }
    }));
    // A pump that panicked is a side gone.
    let ended = |r: Result<PumpEnd, tokio::task::JoinError>| r.unwrap_or(PumpEnd::Lost);
    let end = tokio::select! {
        e = &mut up => {
            let end = match ended(e) {
                PumpEnd::TooBig => SessionEnd::TooBig,
                PumpEnd::Violation => SessionEnd::ProtocolError,
                PumpEnd::Flood => SessionEnd::ClientNotReading,
                PumpEnd::PeerGone => SessionEnd::BrowserLost,
                PumpEnd::Stopped => SessionEnd::Shutdown,
                PumpEnd::Closed if shared.browser_first.load(Ordering::Relaxed) => {
                    SessionEnd::BrowserClosed
                }
                PumpEnd::Closed | PumpEnd::Lost | PumpEnd::Told => SessionEnd::ClientClosed,
            };
            // The browser answers a close, and the client must hear what ended the session.
            if !shared.handshake_done() {
                let _ = tokio::time::timeout(CLOSE_GRACE, &mut down).await;
            }
            end
        }
        e = &mut down => {
            let end = match ended(e) {
                PumpEnd::TooBig => SessionEnd::TooBig,
                PumpEnd::PeerGone | PumpEnd::Told => SessionEnd::ClientClosed,
                PumpEnd::Closed if !shared.browser_first.load(Ordering::Relaxed) => {
                    SessionEnd::ClientClosed
                }
                PumpEnd::Closed => SessionEnd::BrowserClosed,
                PumpEnd::Lost | PumpEnd::Violation | PumpEnd::Flood => SessionEnd::BrowserLost,
                PumpEnd::Stopped => SessionEnd::Shutdown,
            };
            if !shared.handshake_done() {
                let _ = tokio::time::timeout(CLOSE_GRACE, &mut up).await;
            }
            end
        }
    };
    drop(stop_watch);
    end
}

/// Runs a pump as a task of its own, aborted if the session is dropped.
fn spawn<R, W>(
    pump: Pump,
    src: R,
    dst: W,
    shared: &Arc<Shared>,
    cx: &Arc<Context>,
) -> AbortOnDropHandle<PumpEnd>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (shared, cx) = (shared.clone(), cx.clone());
    AbortOnDropHandle::new(tokio::spawn(async move {
        pump.run(src, dst, &shared, &cx).await
    }))
}

/// One direction: source → destination.
struct Pump {
    conn: u64,
    dir: Direction,
    scanner: Scanner,
    buf: BytesMut,
    /// The evidence copy of the text message in progress, when there is a tap.
    message: Option<TapCopy>,
    close_seen: bool,
}

impl Pump {
    fn new(conn: u64, dir: Direction, max_message: usize, leftover: &[u8]) -> Pump {
        let from = match dir {
            Direction::ToBrowser => From::Client,
            Direction::ToClient => From::Browser,
        };
        Pump {
            conn,
            dir,
            scanner: Scanner::new(from, max_message),
            buf: BytesMut::from(leftover),
            message: None,
            close_seen: false,
        }
    }

    async fn run<R, W>(mut self, mut src: R, mut dst: W, shared: &Shared, cx: &Context) -> PumpEnd
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let signal = shared.signal(self.dir);
        let mut asked: Option<u16> = None;
        let mut events: Vec<Event> = Vec::new();
        let mut need_more = false;
        loop {
            // One atomic load per chunk: a source that is always readable still hears it.
            if let Some(ask) = signal.take() {
                match ask {
                    Ask::Stop => {
                        if self.scanner.at_boundary() {
                            self.write_close(&mut dst, GOING_AWAY).await;
                        }
                        return PumpEnd::Stopped;
                    }
                    Ask::Close(code) => asked = Some(code),
                }
            }
            if let Some(code) = asked {
                if self.scanner.at_boundary() {
                    self.write_close(&mut dst, code).await;
                    return PumpEnd::Told;
                }
            }
            // Read when nothing is buffered, or only the start of a header that needs more.
            if self.buf.is_empty() || need_more {
                self.buf.reserve(READ_SIZE);
                // The read first: the signal is polled (and its waker registered) only when
                // there is nothing to read.
                let read = tokio::select! {
                    biased;
                    r = src.read_buf(&mut self.buf) => r,
                    () = signal.wait() => continue,
                };
                match read {
                    // The other direction may have asked for a close as the source went: its
                    // ending is what the destination must hear (a violation's 1002, not 1011).
                    Ok(0) | Err(_) if signal.pending() => continue,
                    Ok(0) | Err(_) => return self.source_ended(&mut dst).await,
                    Ok(_) => {}
                }
            }
            events.clear();
            let was_at_boundary = self.scanner.at_boundary();
            let scanned = self.scanner.scan(&self.buf, &mut |e| events.push(e));
            let forward = match scanned {
                Ok(consumed) => consumed,
                Err(stop) => stop.at(),
            };
            need_more = forward < self.buf.len();
            // The relay's stop and the source's close can arrive in one wake-up (the browser
            // answering the 1001 the other direction just sent it), and the read wins the
            // select: the destination is owed the relay's 1001, not the source's answer.
            if was_at_boundary
                && !need_more
                && matches!(events.as_slice(), [Event::Close { .. }])
                && signal.stopping()
            {
                self.write_close(&mut dst, GOING_AWAY).await;
                return PumpEnd::Stopped;
            }
            // Taken before the write, dropped after the copies are offered: the evidence order
            // (order.rs). Counters only; nothing here waits.
            let at = cx.tap.chunk(self.dir);
            if forward > 0 && dst.write_all(&self.buf[..forward]).await.is_err() {
                return PumpEnd::PeerGone;
            }
            self.after_write(&events, forward, cx, &at);
            drop(at);
            if let Err(stop) = scanned {
                return self.stop_at(stop, &mut dst, shared).await;
            }
            if self.close_seen && shared.closed(self.dir) {
                // Both closes have crossed: the session is over, nobody waits for the other
                // side to drop its TCP connection.
                return PumpEnd::Closed;
            }
            if shared.count_pings(self.dir, &events) > MAX_UNANSWERED_PINGS {
                tracing::info!(
                    session = self.conn,
                    "the client sent {MAX_UNANSWERED_PINGS} pings without reading the answers; closing it"
                );
                // Asked before the shutdown: the browser's reaction to it must not outrun the
                // code the client is owed.
                shared.signal(self.dir.other()).close(POLICY);
                let _ = dst.shutdown().await;
                return PumpEnd::Flood;
            }
        }
    }

    /// Counts and copies the messages of the chunk just forwarded, then frees the buffer.
    fn after_write(&mut self, events: &[Event], forward: usize, cx: &Context, at: &Chunk<'_>) {
        let tap = cx.tap.is_enabled();
        // Slices keep the read buffer alive: take them only for big pieces of messages copied.
        let slices = tap && self.needs_slices(events);
        let chunk: Option<Bytes> = slices.then(|| self.buf.split_to(forward).freeze());
        let bytes: &[u8] = match &chunk {
            Some(c) => c,
            None => &self.buf[..forward],
        };
        for e in events {
            match e {
                Event::MessageStart { text, first_frame } => {
                    self.message = (tap && wanted(*text, *first_frame)).then(TapCopy::default);
                }
                Event::Data { range, mask } => {
                    let Some(m) = &mut self.message else {
                        continue;
                    };
                    if m.len + range.len() as u64 > TAP_MAX {
                        self.message = None;
                        continue;
                    }
                    let mask = mask.map(|(key, phase)| Mask { key, phase });
                    match &chunk {
                        Some(c) if range.len() as u64 >= COPY_BELOW || m.is_sliced() => {
                            m.slice(c.slice(range.clone()), mask);
                        }
                        _ => m.copy(&bytes[range.clone()], mask),
                    }
                }
                Event::MessageEnd { len } => {
                    cx.stats
                        .message(self.dir, usize::try_from(*len).unwrap_or(usize::MAX));
                    if let Some(m) = self.message.take() {
                        cx.tap.offer(at, self.conn, self.dir, m.into_payload());
                    }
                }
                Event::Close { .. } => self.close_seen = true,
                Event::Ping | Event::Pong => {}
            }
        }
        if chunk.is_none() {
            self.buf.advance(forward);
        }
        if self.buf.is_empty() {
            // Keeps the allocation when nothing else holds it: no allocation per read.
            self.buf.clear();
        }
    }

    /// True when a piece of a message being copied is big enough to be kept as a slice of
    /// the read buffer rather than copied.
    fn needs_slices(&self, events: &[Event]) -> bool {
        if self.message.as_ref().is_some_and(TapCopy::is_sliced) {
            return true;
        }
        let mut copying = self.message.is_some();
        for e in events {
            match e {
                Event::MessageStart { text, first_frame } => copying = wanted(*text, *first_frame),
                Event::Data { range, .. } if copying && range.len() as u64 >= COPY_BELOW => {
                    return true
                }
                _ => {}
            }
        }
        false
    }

    /// The source ended. A client whose browser vanished gets 1011 promptly; a browser whose
    /// client vanished just sees its socket close, as it would without the relay.
    async fn source_ended<W: AsyncWrite + Unpin>(&mut self, dst: &mut W) -> PumpEnd {
        if self.close_seen {
            return PumpEnd::Closed;
        }
        match self.dir {
            Direction::ToClient if self.scanner.at_boundary() => {
                self.write_close(dst, BROWSER_LOST).await;
            }
            Direction::ToClient => {}
            Direction::ToBrowser => {
                let _ = dst.shutdown().await;
            }
        }
        PumpEnd::Lost
    }

    /// The scanner stopped the stream before a frame it must not forward.
    async fn stop_at<W: AsyncWrite + Unpin>(
        &mut self,
        stop: Stop,
        dst: &mut W,
        shared: &Shared,
    ) -> PumpEnd {
        match stop {
            Stop::TooBig { .. } => {
                tracing::warn!(
                    session = self.conn,
                    dir = ?self.dir,
                    "a websocket message exceeded --max-message-size; closing the session with 1009"
                );
                // The other side is asked first: its close must not wait on this one's write.
                shared.signal(self.dir.other()).close(TOO_BIG);
                self.write_close(dst, TOO_BIG).await;
                PumpEnd::TooBig
            }
            Stop::Violation { why, .. } => {
                tracing::info!(
                    session = self.conn,
                    "the client broke the websocket protocol ({why}); closing it with 1002"
                );
                // Asked first, then the browser sees its client go, as it would without the
                // relay: the EOF it answers with must find the 1002 already asked.
                shared.signal(self.dir.other()).close(PROTOCOL_ERROR);
                let _ = dst.shutdown().await;
                PumpEnd::Violation
            }
        }
    }

    /// Writes one of the relay's own close frames (the caller checked the boundary).
    async fn write_close<W: AsyncWrite + Unpin>(&self, dst: &mut W, code: u16) {
        let reason = match code {
            BROWSER_LOST => "cdp-relay: the browser connection was lost",
            TOO_BIG => "cdp-relay: message exceeds --max-message-size",
            PROTOCOL_ERROR => "cdp-relay: websocket protocol error",
            POLICY => "cdp-relay: too many pings without reading the answers",
            _ => "cdp-relay is shutting down",
        };
        let frame = close_frame(code, reason, self.dir == Direction::ToBrowser);
        let _ = tokio::time::timeout(CLOSE_GRACE, async {
            let _ = dst.write_all(&frame).await;
            let _ = dst.flush().await;
        })
        .await;
    }
}

/// Whether the tap copies a message that starts so. CDP is text; the observer reads nothing in
/// binary messages. A message whose header already shows it too big for the observer is never
/// held: holding its read buffers to its end made every read fault in fresh memory.
fn wanted(text: bool, first_frame: u64) -> bool {
    text && first_frame <= TAP_MAX
}

/// What the two directions of a session share: what each is asked to do, pings forwarded to
/// the browser and pongs forwarded back, and which side has sent its close frame.
#[derive(Default)]
struct Shared {
    /// Client → browser, browser → client.
    signals: [Signal; 2],
    pings_sent: AtomicU64,
    pings_answered: AtomicU64,
    client_closed: AtomicBool,
    browser_closed: AtomicBool,
    /// The browser sent its close before the client did.
    browser_first: AtomicBool,
}

impl Shared {
    /// What the direction `dir` is asked to do.
    fn signal(&self, dir: Direction) -> &Signal {
        match dir {
            Direction::ToBrowser => &self.signals[0],
            Direction::ToClient => &self.signals[1],
        }
    }

    /// Counts the pings (client → browser) or pongs (browser → client) of a forwarded chunk;
    /// returns how many pings are unanswered.
    fn count_pings(&self, dir: Direction, events: &[Event]) -> u64 {
        let (counter, wanted) = match dir {
            Direction::ToBrowser => (&self.pings_sent, Event::Ping),
            Direction::ToClient => (&self.pings_answered, Event::Pong),
        };
        let n = events.iter().filter(|e| **e == wanted).count() as u64;
        if n == 0 {
            return 0;
        }
        counter.fetch_add(n, Ordering::Relaxed);
        let sent = self.pings_sent.load(Ordering::Relaxed);
        sent.saturating_sub(self.pings_answered.load(Ordering::Relaxed))
    }

    /// Notes that the source of `dir` sent its close frame; true once both sides have (the close
    /// handshake is complete: nothing more will come).
    fn closed(&self, dir: Direction) -> bool {
        let (mine, theirs) = match dir {
            Direction::ToBrowser => (&self.client_closed, &self.browser_closed),
            Direction::ToClient => (&self.browser_closed, &self.client_closed),
        };
        let other_first = theirs.load(Ordering::Relaxed);
        if dir == Direction::ToClient && !mine.load(Ordering::Relaxed) && !other_first {
            self.browser_first.store(true, Ordering::Relaxed);
        }
        mine.store(true, Ordering::Relaxed);
        other_first
    }

    fn handshake_done(&self) -> bool {
        self.client_closed.load(Ordering::Relaxed) && self.browser_closed.load(Ordering::Relaxed)
    }
}

/// What a direction is asked: the other direction asks it to close its destination with a code
/// (1009, 1002, 1008; the first asked stands), the relay's shutdown to stop (1001). A pump
/// looks with one atomic load per chunk and is woken when it waits to read.
#[derive(Default)]
struct Signal {
    /// The close code asked (0: none), and [`STOP`].
    state: AtomicU32,
    waker: AtomicWaker,
}

/// [`Signal::state`]'s bit for the relay's shutdown.
const STOP: u32 = 1 << 16;

/// What a [`Signal`] asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    Stop,
    Close(u16),
}

impl Signal {
    /// Asks for a close with `code`, unless a code was asked already.
    fn close(&self, code: u16) {
        let code = u32::from(code);
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s & 0xffff == 0).then_some(s | code)
            });
        self.waker.wake();
    }

    /// Asks the direction to stop.
    fn stop(&self) {
        self.state.fetch_or(STOP, Ordering::AcqRel);
        self.waker.wake();
    }

    /// What was asked since the last look: a stop stays asked, a close code is taken.
    fn take(&self) -> Option<Ask> {
        let s = self.state.load(Ordering::Acquire);
        if s == 0 {
            return None;
        }
        if s & STOP != 0 {
            return Some(Ask::Stop);
        }
        let code = self.state.fetch_and(STOP, Ordering::AcqRel) & 0xffff;
        // The low bits were set and only a take clears them.
        Some(Ask::Close(code as u16))
    }

    /// True once the relay's shutdown asked the direction to stop.
    fn stopping(&self) -> bool {
        self.state.load(Ordering::Acquire) & STOP != 0
    }

    /// True when something is asked that no [`Signal::take`] has taken.
    fn pending(&self) -> bool {
        self.state.load(Ordering::Acquire) != 0
    }

    /// Resolves once something is asked that the last [`Signal::take`] did not take.
    fn wait(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            if self.pending() {
                return Poll::Ready(());
            }
            self.waker.register(cx.waker());
            if self.pending() {
                return Poll::Ready(());
            }
            Poll::Pending
        })
    }
}

/// The evidence copy of one text message: small pieces copied (and unmasked) here, big ones
/// kept as slices of the read buffers and unmasked off the hot path.
#[derive(Default)]
struct TapCopy {
    small: Vec<u8>,
    parts: Vec<(Bytes, Option<Mask>)>,
    len: u64,
}

impl TapCopy {
    fn is_sliced(&self) -> bool {
        !self.parts.is_empty()
    }

    fn copy(&mut self, bytes: &[u8], mask: Option<Mask>) {
        self.len += bytes.len() as u64;
        if self.is_sliced() {
            let mut owned = bytes.to_vec();
            if let Some(m) = mask {
                m.apply(&mut owned);
            }
            self.parts.push((Bytes::from(owned), None));
            return;
        }
        let start = self.small.len();
        self.small.extend_from_slice(bytes);
        if let Some(m) = mask {
            m.apply(&mut self.small[start..]);
        }
    }

    fn slice(&mut self, bytes: Bytes, mask: Option<Mask>) {
        self.len += bytes.len() as u64;
        if !self.small.is_empty() {
            self.parts
                .push((Bytes::from(std::mem::take(&mut self.small)), None));
        }
        self.parts.push((bytes, mask));
    }

    fn into_payload(mut self) -> Payload {
        if self.parts.is_empty() {
            return Payload::one(true, Bytes::from(self.small), None);
        }
        if !self.small.is_empty() {
            self.parts.push((Bytes::from(self.small), None));
        }
        Payload::from_parts(true, self.parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A browser's unmasked, final text frame header announcing `len` payload bytes.
    fn text_header(len: u64) -> Vec<u8> {
        let mut h = vec![0x81, 127];
        h.extend_from_slice(&len.to_be_bytes());
        h
    }

    /// Passes `bytes` through the pump as one read, as `run` does after it.
    fn feed(pump: &mut Pump, cx: &Context, bytes: &[u8]) {
        pump.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let forward = pump
            .scanner
            .scan(&pump.buf, &mut |e| events.push(e))
            .expect("a valid frame");
        let at = cx.tap.chunk(pump.dir);
        pump.after_write(&events, forward, cx, &at);
    }

    #[tokio::test]
    async fn a_signal_wakes_a_waiting_pump_and_keeps_the_first_close_asked() {
        let signal = std::sync::Arc::new(Signal::default());
        assert_eq!(signal.take(), None);
        let waiting = tokio::spawn({
            let signal = signal.clone();
            async move { signal.wait().await }
        });
        tokio::task::yield_now().await;
        signal.close(TOO_BIG);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .expect("joined");
        signal.close(POLICY);
        assert_eq!(
            signal.take(),
            Some(Ask::Close(TOO_BIG)),
            "the first code stands"
        );
        assert_eq!(signal.take(), None, "a close is taken once");
        signal.stop();
        signal.close(PROTOCOL_ERROR);
        assert_eq!(signal.take(), Some(Ask::Stop), "a stop outranks a close");
        assert_eq!(signal.take(), Some(Ask::Stop), "and stays asked");
        tokio::time::timeout(Duration::from_secs(5), signal.wait())
            .await
            .expect("a stop asked is ready at once");
    }

    /// A client-bound pump with its context (the tap's copies go nowhere) and shared state.
    fn to_client() -> (Context, Arc<Shared>, Pump) {
        let (tap, _rx) = Tap::channel(8);
        let cx = Context {
            tap,
            stats: Arc::new(Stats::default()),
            stop: CancellationToken::new(),
            max_message: usize::MAX,
        };
        let pump = Pump::new(1, Direction::ToClient, usize::MAX, &[]);
        (cx, Arc::new(Shared::default()), pump)
    }

    /// A browser socket whose end arrives together with the other direction's ask for a close,
    /// as when the relay shut the browser's side after a client's violation.
    struct EndsAsAsked(Arc<Shared>);

    impl AsyncRead for EndsAsAsked {
        fn poll_read(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            _: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            self.0.signal(Direction::ToClient).close(PROTOCOL_ERROR);
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_close_asked_as_the_browser_goes_is_the_code_the_client_hears() {
        let (cx, shared, pump) = to_client();
        let mut client = Vec::new();
        let end = pump
            .run(EndsAsAsked(shared.clone()), &mut client, &shared, &cx)
            .await;
        assert_eq!(end, PumpEnd::Told);
        assert_eq!(client.first(), Some(&0x88), "a close frame: {client:?}");
        assert_eq!(
            client.get(2..4),
            Some(&PROTOCOL_ERROR.to_be_bytes()[..]),
            "the code asked, not 1011"
        );
    }

    /// A browser socket whose close (its answer to the relay's 1001, code 1000) is read in the
    /// same wake-up as the relay's stop.
    struct ClosesAsStopped(Arc<Shared>, bool);

    impl AsyncRead for ClosesAsStopped {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if !self.1 {
                self.1 = true;
                self.0.signal(Direction::ToClient).stop();
                buf.put_slice(&[0x88, 0x02, 0x03, 0xe8]);
            }
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn the_client_hears_the_relays_1001_when_the_browsers_close_comes_with_the_stop() {
        let (cx, shared, pump) = to_client();
        let mut client = Vec::new();
        let end = pump
            .run(
                ClosesAsStopped(shared.clone(), false),
                &mut client,
                &shared,
                &cx,
            )
            .await;
        assert_eq!(end, PumpEnd::Stopped);
        assert_eq!(client.first(), Some(&0x88), "a close frame: {client:?}");
        assert_eq!(
            client.get(2..4),
            Some(&GOING_AWAY.to_be_bytes()[..]),
            "the relay's 1001, not the browser's 1000: {client:?}"
        );
        assert_eq!(
            client.iter().filter(|b| **b == 0x88).count(),
            1,
            "one close only: {client:?}"
        );
    }

    #[test]
    fn a_message_announced_over_the_tap_limit_holds_no_read_buffer() {
        let (tap, mut rx) = Tap::channel(8);
        let (stats, stop) = (Stats::default(), CancellationToken::new());
        let cx = Context {
            tap: tap.clone(),
            stats: Arc::new(stats),
            stop,
            max_message: usize::MAX,
        };
        let body = vec![b'x'; READ_SIZE];
        for (len, held) in [(TAP_MAX, true), (TAP_MAX + 1, false)] {
            let mut pump = Pump::new(1, Direction::ToClient, usize::MAX, &[]);
            let mut read = text_header(len);
            read.extend_from_slice(&body);
            pump.buf.reserve(read.len());
            let own = pump.buf.as_ptr();
            feed(&mut pump, &cx, &read);
            assert_eq!(
                pump.message.as_ref().is_some_and(TapCopy::is_sliced),
                held,
                "a {len}-byte message"
            );
            // Not held: the next read reuses the pump's own buffer instead of fresh memory.
            pump.buf.reserve(read.len());
            assert_eq!(pump.buf.as_ptr() == own, !held, "a {len}-byte message");
        }
        assert!(rx.frames.try_recv().is_err(), "nothing offered yet");
        // A message that ends is offered whole, as before.
        let mut pump = Pump::new(1, Direction::ToClient, usize::MAX, &[]);
        let mut read = text_header(COPY_BELOW * 2);
        read.extend(std::iter::repeat_n(b'y', (COPY_BELOW * 2) as usize));
        feed(&mut pump, &cx, &read);
        let offered = rx.frames.try_recv().expect("the message");
        let TapEvent::Frame { payload, .. } = offered.event else {
            panic!("not a frame: {offered:?}");
        };
        assert_eq!(payload.len() as u64, COPY_BELOW * 2);
    }
}
