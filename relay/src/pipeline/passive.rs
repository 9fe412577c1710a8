//! The passive observer's thread: drains the tap, runs the [`Observer`], hands records to the
//! run writer in batches and triggers to subscribers.
//!
//! It polls rather than blocks when the queue is empty, so a `try_send` on the hot path never
//! has a parked thread to wake. Lifecycle events come on their own channel: an `Opened` is read
//! before the frames that follow it, and a `Closed` is applied once the frame queue has been seen
//! empty after it arrived — by then every frame of that connection has been read.

use super::observer::Observer;
use super::writer::RunWriter;
use super::Trigger;
use cdp_relay_proxy::tap::{TapEvent, TapReceiver};
use std::time::{Duration, SystemTime};
use tokio::sync::broadcast;
use tokio::sync::mpsc::error::TryRecvError;

/// How long the thread sleeps when its queue is empty. Evidence is written at most this much
/// later; at 16k events of queue, floods up to ~1.6M events/s fit between two looks.
const IDLE_POLL: Duration = Duration::from_millis(10);

/// Records handed to the writer at once when the queue is busy.
const BATCH: usize = 256;

/// At the end, how long typing steps may still wait for their verdicts.
const FINISH_WAIT: Duration = Duration::from_secs(4);

/// Runs until a `Finish` event (or until every tap is gone); returns the observer's own drops.
pub(super) fn run(
    mut rx: TapReceiver,
    mut observer: Observer,
    writer: RunWriter,
    triggers: broadcast::Sender<Trigger>,
) -> u64 {
    let mut deferred: Vec<TapEvent> = Vec::new();
    let mut finish_at: Option<SystemTime> = None;
    let hand_over = |observer: &mut Observer| {
        let out = observer.take();
        writer.send_blocking(out.emits);
        for t in out.triggers {
            // Nobody subscribed is fine: triggers are hints.
            let _ = triggers.send(t);
        }
    };
    loop {
        loop {
            match rx.control.try_recv() {
                Ok(TapEvent::Finish { at }) => finish_at = Some(at),
                Ok(closed @ TapEvent::Closed { .. }) => deferred.push(closed),
                Ok(other) => observer.handle(other),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        match rx.frames.try_recv() {
            Ok(event) => {
                observer.handle(event);
                if observer.pending_records() >= BATCH {
                    hand_over(&mut observer);
                }
            }
            Err(empty_or_gone) => {
                for closed in deferred.drain(..) {
                    observer.handle(closed);
                }
                let gone = empty_or_gone == TryRecvError::Disconnected;
                if gone || finish_at.is_some() {
                    let at = finish_at.unwrap_or_else(SystemTime::now);
                    observer.finish_typing(at);
                    // Typing steps waiting for a verdict get a little longer.
                    let deadline = std::time::Instant::now() + FINISH_WAIT;
                    while observer.holding() > 0 && std::time::Instant::now() < deadline {
                        observer.tick(SystemTime::now());
                        hand_over(&mut observer);
                        std::thread::sleep(IDLE_POLL);
                    }
                    observer.finish(at);
                    hand_over(&mut observer);
                    return observer.dropped();
                }
                observer.tick(SystemTime::now());
                hand_over(&mut observer);
                std::thread::sleep(IDLE_POLL);
            }
        }
    }
}
