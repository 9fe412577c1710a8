//! Arbitrary frames (valid and invalid JSON, huge numbers, deep nesting, wrong types) fed to the
//! observer in both directions, across connection open/close: it must never panic. How the
//! input becomes events is `cdp_capture::fuzzing::feed` (the seeds' test reads them the same way).
#![no_main]

use cdp_capture::fuzzing::{feed, Pages, TrafficOptions, TrafficReader};
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
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let records = feed(&mut obs, data, t0);
    let _ = (obs.dropped(), records);
});
