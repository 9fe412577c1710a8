//! The journal reader on arbitrary bytes: never panics, accounts for every byte, and agrees
//! with itself whatever the read buffer size.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::BufReader;

fuzz_target!(|data: &[u8]| {
    let read = cdp_evidence::parse_journal(data);
    // Line accounting: complete lines are records or corrupt; only the tail may be torn.
    let complete_lines = data.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(read.records.len() + read.corrupt.len(), complete_lines);
    match read.torn_tail {
        Some(t) => {
            assert_eq!(t.offset + t.len, data.len() as u64);
            assert!(data.last() != Some(&b'\n'));
        }
        None => assert!(data.is_empty() || data.last() == Some(&b'\n')),
    }
    for r in &read.records {
        // Whatever was read back serializes again.
        serde_json::to_vec(&r.raw).expect("a stored record is valid JSON");
        let _ = r.marker();
    }
    // A tiny buffer splits lines at every byte; the result must not change.
    let small = cdp_evidence::read_journal_from(BufReader::with_capacity(7, data))
        .expect("reading from memory cannot fail");
    assert_eq!(small, read);
});
