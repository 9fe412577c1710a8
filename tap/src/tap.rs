//! The tap: the proxy's output port. Copies of forwarded messages, for whoever consumes them
//! (the evidence pipeline).
//!
//! A tap never blocks and never mutates. Message copies (refcounted [`Payload`]s) go to bounded
//! queues with `try_send` — client → browser copies to one of their own, so a flood of browser
//! events cannot crowd out the keystrokes typed meanwhile; a full or closed queue drops the copy
//! and counts it. Connection lifecycle events go to a separate, unbounded but tiny control
//! channel and are never dropped, so the observer always learns that a connection ended. Every
//! event carries a stamp that says where it stands in the evidence order (`order.rs`): the splice
//! takes a [`Chunk`] before writing and offers that chunk's copies under it. Without a pipeline
//! the tap is a no-op.

use crate::order::{Chunk, Order};
use bytes::Bytes;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::mpsc;

/// Which way a message travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client → browser (the before-forward tap).
    ToBrowser,
    /// Browser → client (the after-response tap).
    ToClient,
}

impl Direction {
    /// The opposite way.
    pub fn other(self) -> Direction {
        match self {
            Direction::ToBrowser => Direction::ToClient,
            Direction::ToClient => Direction::ToBrowser,
        }
    }
}

/// A websocket masking key and where in its 4-byte cycle a slice starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mask {
    /// The frame's masking key.
    pub key: [u8; 4],
    /// Offset of the slice's first byte within the frame payload, modulo 4.
    pub phase: u8,
}

impl Mask {
    /// XORs `bytes` in place with the key, starting at this mask's phase.
    pub fn apply(&self, bytes: &mut [u8]) {
        let mut i = usize::from(self.phase & 3);
        for b in bytes {
            *b ^= self.key[i];
            i = (i + 1) & 3;
        }
    }
}

/// A copy of one forwarded message: the slices of the read buffers that carried it, still masked
/// when they came from a client. Joining and unmasking happen off the hot path ([`Payload::bytes`]).
#[derive(Debug, Clone)]
pub struct Payload {
    text: bool,
    parts: Parts,
    len: usize,
}

/// A payload's slices: almost every message is one, kept inline so a copy costs no `Vec`.
#[derive(Debug, Clone)]
enum Parts {
    One((Bytes, Option<Mask>)),
    Many(Vec<(Bytes, Option<Mask>)>),
}

impl Parts {
    fn as_slice(&self) -> &[(Bytes, Option<Mask>)] {
        match self {
            Parts::One(p) => std::slice::from_ref(p),
            Parts::Many(v) => v,
        }
    }
}

impl Payload {
    /// A text message held in one unmasked buffer (tests, the fuzzer, small copies).
    pub fn text(s: impl Into<Bytes>) -> Payload {
        Payload::one(true, s.into(), None)
    }

    /// A binary message held in one unmasked buffer.
    pub fn binary(b: impl Into<Bytes>) -> Payload {
        Payload::one(false, b.into(), None)
    }

    /// A message held in one buffer, unmasked with `mask` if it has one.
    pub fn one(text: bool, bytes: Bytes, mask: Option<Mask>) -> Payload {
        let len = bytes.len();
        Payload {
            text,
            parts: Parts::One((bytes, mask)),
            len,
        }
    }

    /// A message made of `parts` in order, each unmasked with its mask if it has one.
    pub fn from_parts(text: bool, mut parts: Vec<(Bytes, Option<Mask>)>) -> Payload {
        if parts.len() == 1 {
            if let Some((bytes, mask)) = parts.pop() {
                return Payload::one(text, bytes, mask);
            }
        }
        let len = parts.iter().map(|(b, _)| b.len()).sum();
        Payload {
            text,
            parts: Parts::Many(parts),
            len,
        }
    }

    /// True for a text message.
    pub fn is_text(&self) -> bool {
        self.text
    }

    /// Payload length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the message is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The message bytes, joined and unmasked (borrowed when it is one unmasked slice).
    pub fn bytes(&self) -> Cow<'_, [u8]> {
        self.head(self.len)
    }

    /// The first `n` bytes of the message (fewer if it is shorter), unmasked; borrowed when they
    /// lie in one unmasked slice. Lets the observer judge a large message by its head without
    /// joining it.
    pub fn head(&self, n: usize) -> Cow<'_, [u8]> {
        let parts = self.parts.as_slice();
        if let Some((b, None)) = parts.first() {
            if b.len() >= n.min(self.len) {
                return Cow::Borrowed(&b[..n.min(b.len())]);
            }
        }
        let mut out = Vec::with_capacity(n.min(self.len));
        for (b, mask) in parts {
            if out.len() == n {
                break;
            }
            let start = out.len();
            let take = (n - start).min(b.len());
            out.extend_from_slice(&b[..take]);
            if let Some(m) = mask {
                m.apply(&mut out[start..]);
            }
        }
        Cow::Owned(out)
    }

    /// The message as text: `None` for binary messages and invalid UTF-8 (which the browser
    /// answers with a parse error; there is nothing for the observer to read).
    pub fn as_text(&self) -> Option<Cow<'_, str>> {
        if !self.text {
            return None;
        }
        match self.bytes() {
            Cow::Borrowed(b) => std::str::from_utf8(b).ok().map(Cow::Borrowed),
            Cow::Owned(v) => String::from_utf8(v).ok().map(Cow::Owned),
        }
    }
}

/// How a websocket session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// The client closed (close frame or dropped connection).
    ClientClosed,
    /// The browser closed with a close frame.
    BrowserClosed,
    /// The browser vanished without a close frame.
    BrowserLost,
    /// A message exceeded the size limit.
    TooBig,
    /// The client broke the websocket protocol (unmasked frame, reserved bits or opcode).
    ProtocolError,
    /// The client kept pinging without reading the answers.
    ClientNotReading,
    /// The relay is shutting down.
    Shutdown,
}

/// Something the observer should know about.
#[derive(Debug, Clone)]
pub enum TapEvent {
    /// A websocket session began.
    Opened {
        /// Relay-local connection number.
        conn: u64,
        /// The `/devtools/<kind>/<id>` path (a capability: sanitize before persisting).
        path: String,
        /// When.
        at: SystemTime,
    },
    /// A message was handed to its peer socket.
    Frame {
        /// Relay-local connection number.
        conn: u64,
        /// Which way it went.
        dir: Direction,
        /// When it was forwarded.
        at: SystemTime,
        /// The payload, shared with the forwarded bytes.
        payload: Payload,
    },
    /// The pipeline is stopping: the observer ends every open connection (pending commands
    /// become interrupted).
    Finish {
        /// When the relay stopped.
        at: SystemTime,
    },
    /// An agent's tool call that typed has been answered: the typing it caused is over, so
    /// the open typing bursts tagged with it end now rather than after their gap (their
    /// verdicts come sooner); other bursts go on. Without a call, every open burst ends.
    TypingOver {
        /// When the call was answered.
        at: SystemTime,
        /// The call, as its consumer names it (an opaque key: the evidence's action id).
        call: Option<String>,
    },
    /// A websocket session ended.
    Closed {
        /// Relay-local connection number.
        conn: u64,
        /// How it ended.
        how: SessionEnd,
        /// When.
        at: SystemTime,
    },
}

/// A tap event and its place in the evidence order.
#[derive(Debug)]
pub struct Stamped {
    /// Its place in the order.
    pub stamp: u64,
    /// The event.
    pub event: TapEvent,
}

/// The receiving ends of a tap, owned by whoever consumes the copies (the evidence pipeline's
/// observer thread).
#[derive(Debug)]
pub struct TapReceiver {
    /// Client → browser copies: bounded, lossy.
    pub commands: mpsc::Receiver<Stamped>,
    /// Browser → client copies: bounded, lossy.
    pub frames: mpsc::Receiver<Stamped>,
    /// Session opened/closed and finish: unbounded, never dropped.
    pub control: mpsc::UnboundedReceiver<Stamped>,
    /// The order every event was stamped in.
    pub order: Arc<Order>,
}

/// Handle given to each splice. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Tap {
    senders: Option<Senders>,
    dropped: Arc<AtomicU64>,
}

#[derive(Debug, Clone)]
struct Senders {
    commands: mpsc::Sender<Stamped>,
    frames: mpsc::Sender<Stamped>,
    control: mpsc::UnboundedSender<Stamped>,
    order: Arc<Order>,
}

impl Tap {
    /// A tap that records nothing (evidence off).
    pub fn disabled() -> Tap {
        Tap::default()
    }

    /// A tap with queues of `capacity` events each way, and the receivers for the consumer.
    pub fn channel(capacity: usize) -> (Tap, TapReceiver) {
        let (commands_tx, commands) = mpsc::channel(capacity);
        let (frames_tx, frames) = mpsc::channel(capacity);
        let (control_tx, control) = mpsc::unbounded_channel();
        let order = Arc::new(Order::new());
        let tap = Tap {
            senders: Some(Senders {
                commands: commands_tx,
                frames: frames_tx,
                control: control_tx,
                order: order.clone(),
            }),
            dropped: Arc::default(),
        };
        let rx = TapReceiver {
            commands,
            frames,
            control,
            order,
        };
        (tap, rx)
    }

    /// The evidence order the tap stamps into, when something is listening.
    pub fn order(&self) -> Option<&Arc<Order>> {
        self.senders.as_ref().map(|s| &s.order)
    }

    /// A chunk about to be written in direction `dir`: take it *before* the write, offer the
    /// chunk's messages under it, drop it after the last offer. Never waits.
    pub fn chunk(&self, dir: Direction) -> Chunk<'_> {
        match (&self.senders, dir) {
            (None, _) => Chunk::unordered(),
            (Some(s), Direction::ToBrowser) => s.order.guarded(),
            (Some(s), Direction::ToClient) => Chunk::stamped(s.order.stamp()),
        }
    }

    /// True when something is listening.
    pub fn is_enabled(&self) -> bool {
        self.senders.is_some()
    }

    /// Offers a copy of a message of `chunk` without waiting. Dropped (and counted) when the
    /// queue is full; a lost client → browser copy is also marked in the order, since it may
    /// have been typing.
    pub fn offer(&self, chunk: &Chunk<'_>, conn: u64, dir: Direction, payload: Payload) {
        if let Some(s) = &self.senders {
            let event = Stamped {
                stamp: chunk.stamp(),
                event: TapEvent::Frame {
                    conn,
                    dir,
                    at: SystemTime::now(),
                    payload,
                },
            };
            let queue = match dir {
                Direction::ToBrowser => &s.commands,
                Direction::ToClient => &s.frames,
            };
            if queue.try_send(event).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                if dir == Direction::ToBrowser {
                    s.order.lost(chunk.stamp());
                }
            }
        }
    }

    /// A session opened. Never dropped while the pipeline runs.
    pub fn opened(&self, conn: u64, path: String) {
        self.control(TapEvent::Opened {
            conn,
            path,
            at: SystemTime::now(),
        });
    }

    /// A session ended. Never dropped while the pipeline runs.
    pub fn closed(&self, conn: u64, how: SessionEnd) {
        self.control(TapEvent::Closed {
            conn,
            how,
            at: SystemTime::now(),
        });
    }

    /// Tells the consumer that no more sessions will come (it drains, then stops).
    pub fn finish(&self) {
        self.control(TapEvent::Finish {
            at: SystemTime::now(),
        });
    }

    /// Agent tool call `call` that typed was answered, or (`None`) all typing so far is over
    /// (see [`TapEvent::TypingOver`]). Never dropped while the pipeline runs; in the evidence
    /// order after every copy offered before.
    pub fn typing_over(&self, call: Option<&str>) {
        self.control(TapEvent::TypingOver {
            at: SystemTime::now(),
            call: call.map(str::to_owned),
        });
    }

    fn control(&self, event: TapEvent) {
        if let Some(s) = &self.senders {
            let stamp = s.order.stamp();
            // Fails only once the observer is gone, when nothing is left to tell.
            let _ = s.control.send(Stamped { stamp, event });
        }
    }

    /// Number of copies dropped because the evidence queue was full or gone.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(tap: &Tap, dir: Direction, text: &'static str) -> u64 {
        let chunk = tap.chunk(dir);
        tap.offer(&chunk, 1, dir, Payload::text(text));
        chunk.stamp()
    }

    #[test]
    fn full_queue_drops_frames_but_never_lifecycle() {
        let (tap, mut rx) = Tap::channel(1);
        tap.opened(1, "/devtools/page/x".into());
        offer(&tap, Direction::ToClient, "a");
        offer(&tap, Direction::ToClient, "b");
        offer(&tap, Direction::ToClient, "c");
        // Client → browser copies have a queue of their own: the flood above leaves room.
        offer(&tap, Direction::ToBrowser, "typed");
        tap.closed(1, SessionEnd::ClientClosed);
        assert_eq!(tap.dropped(), 2);
        assert_eq!(rx.order.first_lost(), None, "no client → browser copy lost");
        let first = rx.frames.try_recv().expect("a frame");
        assert!(matches!(first.event, TapEvent::Frame { conn: 1, .. }));
        let typed = rx.commands.try_recv().expect("the command");
        assert!(
            typed.stamp > first.stamp,
            "stamped in the order of the chunks"
        );
        let opened = rx.control.try_recv().expect("opened");
        assert!(matches!(opened.event, TapEvent::Opened { conn: 1, .. }));
        assert!(opened.stamp < first.stamp);
        let closed = rx.control.try_recv().expect("closed");
        assert!(matches!(closed.event, TapEvent::Closed { conn: 1, .. }));
        assert!(closed.stamp > typed.stamp);
        offer(&tap, Direction::ToBrowser, "x");
        let lost = offer(&tap, Direction::ToBrowser, "y");
        assert_eq!(
            rx.order.first_lost(),
            Some(lost),
            "a lost command is marked"
        );
        drop(rx);
        offer(&tap, Direction::ToClient, "d");
        assert_eq!(tap.dropped(), 4);
        assert_eq!(Tap::disabled().dropped(), 0);
        assert_eq!(Tap::disabled().chunk(Direction::ToBrowser).stamp(), 0);
    }

    #[test]
    fn payload_joins_and_unmasks_parts() {
        let key = [0x12, 0x34, 0x56, 0x78];
        let plain = b"{\"id\":1,\"method\":\"Page.navigate\"}";
        let mut masked = plain.to_vec();
        Mask { key, phase: 0 }.apply(&mut masked);
        // Split at an odd offset: the second slice starts mid-cycle.
        let (a, b) = masked.split_at(7);
        let p = Payload::from_parts(
            true,
            vec![
                (Bytes::copy_from_slice(a), Some(Mask { key, phase: 0 })),
                (Bytes::copy_from_slice(b), Some(Mask { key, phase: 3 })),
            ],
        );
        assert_eq!(p.len(), plain.len());
        assert_eq!(&*p.bytes(), plain);
        assert_eq!(p.as_text().as_deref(), std::str::from_utf8(plain).ok());
        assert!(Payload::binary(&b"x"[..]).as_text().is_none());
        assert!(
            Payload::from_parts(true, vec![(Bytes::from_static(b"\xff"), None)])
                .as_text()
                .is_none()
        );
    }

    #[test]
    fn a_single_part_is_unmasked_and_borrowed_only_when_plain() {
        let key = [0x0f, 0xf0, 0x55, 0xaa];
        let plain = b"{\"method\":\"Page.loadEventFired\"}";
        let masked = masked_bytes(plain, key);
        let p = Payload::from_parts(
            true,
            vec![(Bytes::from(masked), Some(Mask { key, phase: 0 }))],
        );
        assert_eq!((&*p.bytes(), p.len()), (&plain[..], plain.len()));
        assert!(matches!(p.bytes(), Cow::Owned(_)));
        let q = Payload::one(true, Bytes::from_static(plain), None);
        assert!(matches!(q.head(8), Cow::Borrowed(b) if b == &plain[..8]));
        assert_eq!(q.as_text().as_deref(), std::str::from_utf8(plain).ok());
        assert!(Payload::from_parts(true, Vec::new()).is_empty());
    }

    #[test]
    fn head_is_the_joined_prefix_across_masked_parts() {
        let key = [0x9a, 0x01, 0xfe, 0x42];
        let plain: Vec<u8> = (0..64u8).map(|i| b'a' + i % 26).collect();
        let mut masked = plain.clone();
        Mask { key, phase: 0 }.apply(&mut masked);
        let parts = |masked: bool| {
            let src = if masked {
                &masked_bytes(&plain, key)
            } else {
                &plain
            };
            let cuts = [0, 5, 6, 30, 64];
            cuts.windows(2)
                .map(|w| {
                    let mask = masked.then_some(Mask {
                        key,
                        phase: (w[0] % 4) as u8,
                    });
                    (Bytes::copy_from_slice(&src[w[0]..w[1]]), mask)
                })
                .collect::<Vec<_>>()
        };
        for masked in [false, true] {
            let p = Payload::from_parts(true, parts(masked));
            for n in [0, 1, 5, 6, 7, 29, 30, 31, 64, 1000] {
                assert_eq!(&*p.head(n), &plain[..n.min(64)], "masked {masked}, n {n}");
            }
        }
        assert_eq!(masked, masked_bytes(&plain, key));
    }

    fn masked_bytes(plain: &[u8], key: [u8; 4]) -> Vec<u8> {
        let mut v = plain.to_vec();
        Mask { key, phase: 0 }.apply(&mut v);
        v
    }
}
