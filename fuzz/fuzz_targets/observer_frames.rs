//! Arbitrary frames (valid and invalid JSON, huge numbers, deep nesting, wrong types) fed to the
//! observer in both directions, across connection open/close: it must never panic.
#![no_main]

use cdp_capture::traffic::{TrafficReader, TrafficOptions};
use cdp_capture::pages::Pages;
use cdp_relay_proxy::tap::{Direction, Payload, SessionEnd, TapEvent};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

fuzz_target!(|data: &[u8]| {
    let sanitizer = Arc::new(cdp_sanitize::Sanitizer::new());
    let opts = TrafficOptions {
        max_pending: 64,
        max_requests: 64,
        ..TrafficOptions::default()
    };
    let mut obs = TrafficReader::new(Arc::new(Pages::new(sanitizer, true)), opts);
    let mut records = 0usize;
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    // A sequence of events separated by 0xFF; the first byte of each picks the connection,
    // the direction, and open/close/frame.
    for (i, chunk) in data.split(|b| *b == 0xFF).enumerate() {
        let Some((&ctl, body)) = chunk.split_first() else {
            continue;
        };
        let conn = u64::from(ctl & 0x03);
        let at = t0 + Duration::from_millis(i as u64 * 37);
        match ctl >> 5 {
            0 => obs.handle(TapEvent::Opened {
                conn,
                path: String::from_utf8_lossy(body).into_owned(),
                at,
            }),
            1 => obs.handle(TapEvent::Closed {
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
                obs.handle(TapEvent::Frame {
                    conn,
                    dir,
                    at,
                    payload,
                });
                records += obs.take().emits.len();
            }
        }
    }
    obs.handle(TapEvent::Finish {
        at: t0 + Duration::from_secs(3600),
    });
    records += obs.take().emits.len();
    let _ = (obs.dropped(), records);
});
