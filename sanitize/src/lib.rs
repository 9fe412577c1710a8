//! cdp-sanitize: pure privacy functions for cdp-relay (issue 3 fills in the engine).
//!
//! Pure: never does I/O, never logs its input.

#![forbid(unsafe_code)]

mod safe;

pub use safe::{InputSummary, InputType, SafeJson, SafeText, SafeUrl};
