//! The fuzz target's reading of its input (`fuzz/fuzz_targets/observer_frames.rs`), kept here so
//! the test that replays the target's seeds reads them the same way.
//!
//! The input is events separated by `0xFF`. Each event's first byte says what it is: bits 0–1
//! the connection, bits 5–7 open (0), close (1) or a frame (anything else); for a frame, bit 2
//! the direction and bit 3 text or binary. The rest is the path opened or the frame's payload.

use super::TrafficReader;
use cdp_relay_tap::tap::{Direction, Payload, SessionEnd, TapEvent};
use std::time::{Duration, SystemTime};

/// Feeds `data` to `reader`, the n-th event at `t0` + n × 37 ms, then finishes the run an hour
/// after `t0`; returns how many records came out.
pub fn feed(reader: &mut TrafficReader, data: &[u8], t0: SystemTime) -> usize {
    let mut records = 0usize;
    for (i, chunk) in data.split(|b| *b == 0xFF).enumerate() {
        let Some((&ctl, body)) = chunk.split_first() else {
            continue;
        };
        let conn = u64::from(ctl & 0x03);
        let at = t0 + Duration::from_millis(i as u64 * 37);
        match ctl >> 5 {
            0 => reader.handle(TapEvent::Opened {
                conn,
                path: String::from_utf8_lossy(body).into_owned(),
                at,
            }),
            1 => reader.handle(TapEvent::Closed {
                conn,
                how: SessionEnd::BrowserLost,
                at,
            }),
            _ => {
                let dir = if ctl & 0x04 == 0 {
                    Direction::ToBrowser
                } else {
                    Direction::ToClient
                };
                // Text frames may hold invalid UTF-8: the relay forwards them as they are.
                let payload = if ctl & 0x08 == 0 {
                    Payload::text(body.to_vec())
                } else {
                    Payload::binary(body.to_vec())
                };
                reader.handle(TapEvent::Frame {
                    conn,
                    dir,
                    at,
                    payload,
                });
                records += reader.take().emits.len();
            }
        }
    }
    reader.handle(TapEvent::Finish {
        at: t0 + Duration::from_secs(3600),
    });
    records + reader.take().emits.len()
}
