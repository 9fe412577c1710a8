//! Arbitrary frames (valid and invalid JSON, huge numbers, deep nesting, wrong types) fed to the
//! observer in both directions, across connection open/close: it must never panic.
#![no_main]

use cdp_relay::observer::{Observer, ObserverOptions, Sink};
use cdp_relay::tap::{Direction, Payload, SessionEnd, TapEvent};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio_tungstenite::tungstenite::Utf8Bytes;

#[derive(Default)]
struct Count(u64);

impl Sink for Count {
    fn record(&mut self, _record: cdp_evidence::Record) {
        self.0 += 1;
    }
    fn artifact(
        &mut self,
        _: &'static str,
        _: &'static str,
        _: &[u8],
    ) -> Option<cdp_evidence::ArtifactRef> {
        None
    }
}

fuzz_target!(|data: &[u8]| {
    let sanitizer = Arc::new(cdp_sanitize::Sanitizer::new());
    let opts = ObserverOptions {
        max_pending: 64,
        max_requests: 64,
        ..ObserverOptions::default()
    };
    let mut obs = Observer::new(sanitizer, Count::default(), opts);
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
                let payload = match std::str::from_utf8(body) {
                    Ok(s) => Payload::Text(Utf8Bytes::from(s.to_owned())),
                    Err(_) => Payload::Binary(body.to_vec().into()),
                };
                obs.handle(TapEvent::Frame {
                    conn,
                    dir,
                    at,
                    payload,
                });
            }
        }
    }
    obs.handle(TapEvent::Finish {
        at: t0 + Duration::from_secs(3600),
    });
    let _ = (obs.dropped(), obs.sink().0);
});
