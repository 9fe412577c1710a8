//! Arbitrary bytes from either end, cut at arbitrary points, through the websocket frame scanner
//! the hot path trusts: it must never panic, never consume more than it was given, never report
//! a range outside the chunk, and stop only at a frame boundary it has not consumed past.
#![no_main]

use cdp_relay_proxy::frames::{Event, From, Scanner};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, bytes)) = data.split_first() else {
        return;
    };
    let from = if ctl & 1 == 0 { From::Client } else { From::Browser };
    let max = 1usize << (8 + (ctl >> 1) % 16);
    let step = 1 + usize::from(ctl >> 5) * 7;
    let mut scanner = Scanner::new(from, max);
    // Like the pump: unconsumed bytes (a cut header) are offered again with more.
    let mut pending: Vec<u8> = Vec::new();
    for piece in bytes.chunks(step) {
        pending.extend_from_slice(piece);
        let mut in_message = false;
        let result = scanner.scan(&pending, &mut |e| match e {
            Event::Data { range, mask } => {
                assert!(range.start < range.end && range.end <= pending.len());
                if let Some((_, phase)) = mask {
                    assert!(phase < 4);
                }
            }
            Event::MessageStart { .. } => in_message = true,
            Event::MessageEnd { len } => {
                assert!(len <= max as u64);
                in_message = false;
            }
            Event::Close { .. } | Event::Ping | Event::Pong => {}
        });
        let _ = in_message;
        match result {
            Ok(consumed) => {
                assert!(consumed <= pending.len());
                pending.drain(..consumed);
                // What is left is the start of a header, never payload.
                assert!(pending.len() < 14);
            }
            Err(stop) => {
                assert!(stop.at() <= pending.len());
                assert!(scanner.at_boundary());
                return;
            }
        }
    }
});
