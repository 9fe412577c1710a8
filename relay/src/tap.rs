//! The taps: copies of frames handed to the evidence pipeline after forwarding.
//!
//! A tap never blocks and never mutates: it clones refcounted payloads and `try_send`s them on a
//! bounded queue. A full or closed queue drops the copy and counts it. Without an observer the tap
//! is a no-op.

use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Utf8Bytes;

/// Which way a frame travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client → browser (the before-forward tap).
    ToBrowser,
    /// Browser → client (the after-response tap).
    ToClient,
}

/// A copy of one forwarded message's payload.
#[derive(Debug, Clone)]
pub enum Payload {
    /// A text frame.
    Text(Utf8Bytes),
    /// A binary frame.
    Binary(Bytes),
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
        /// The payload, shared with the forwarded message.
        payload: Payload,
    },
    /// Sent once by the recorder when the relay stops: the observer ends every open connection
    /// (pending commands become interrupted) and stops reading.
    Finish {
        /// When the relay stopped.
        at: SystemTime,
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
    /// The relay is shutting down.
    Shutdown,
}

/// Handle given to each splice. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Tap {
    tx: Option<mpsc::Sender<TapEvent>>,
    dropped: Arc<AtomicU64>,
}

impl Tap {
    /// A tap that records nothing (evidence off).
    pub fn disabled() -> Tap {
        Tap::default()
    }

    /// A tap feeding `tx`; copies that do not fit are counted in [`Tap::dropped`].
    pub fn new(tx: mpsc::Sender<TapEvent>) -> Tap {
        Tap {
            tx: Some(tx),
            dropped: Arc::default(),
        }
    }

    /// True when something is listening.
    pub fn is_enabled(&self) -> bool {
        self.tx.is_some()
    }

    /// Offers an event without waiting. Dropped (and counted) when the queue is full.
    pub fn offer(&self, event: TapEvent) {
        if let Some(tx) = &self.tx {
            if tx.try_send(event).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
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

    #[test]
    fn full_queue_drops_and_counts() {
        let (tx, mut rx) = mpsc::channel(1);
        let tap = Tap::new(tx);
        let ev = |conn| TapEvent::Closed {
            conn,
            how: SessionEnd::ClientClosed,
            at: SystemTime::now(),
        };
        tap.offer(ev(1));
        tap.offer(ev(2));
        tap.offer(ev(3));
        assert_eq!(tap.dropped(), 2);
        assert!(matches!(
            rx.try_recv(),
            Ok(TapEvent::Closed { conn: 1, .. })
        ));
        drop(rx);
        tap.offer(ev(4));
        assert_eq!(tap.dropped(), 3);
        assert_eq!(Tap::disabled().dropped(), 0);
    }
}
