//! The manifest parser and RFC 3339 parser on arbitrary bytes: never panic, and whatever they
//! accept is usable (a safe journal name, a consistent status).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = cdp_evidence::Manifest::parse(data) {
        // The journal name is always a plain file name, never a path.
        let name = m.journal_file();
        assert!(cdp_evidence::validate_id("journal", name).is_ok());
        let _ = m.is_legacy();
        let _ = m.run_status();
        if let Some(started) = &m.started_at {
            if let Some(ms) = cdp_evidence::time::parse_rfc3339_millis(started) {
                // Formatting and parsing again is stable to the millisecond.
                let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
                let again = cdp_evidence::time::format_rfc3339_millis(t);
                assert_eq!(cdp_evidence::time::parse_rfc3339_millis(&again), Some(ms));
            }
        }
    }
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = cdp_evidence::time::parse_rfc3339_millis(s);
    }
});
