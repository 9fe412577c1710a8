//! Fixtures for the end-to-end tests: a real headless Chromium, an in-process relay, the relay
//! binary, a raw HTTP helper (so tests can send any Host), a small CDP client, the npm clients,
//! a real S3-protocol server for the upload tests, and a scripted fake upstream for fault
//! injection only.
//!
//! Every child process is killed on drop; every port is chosen by the OS.

#![forbid(unsafe_code)]

pub mod cdp;
pub mod fake;
pub mod feedback_pages;
pub mod files;
mod fixtures;
pub mod har;
pub mod http;
pub mod mcp;
pub mod mcp_http;
pub mod otlp;
pub mod pages;
pub mod pixels;
pub mod planted;
pub mod raw;
pub mod s3;
pub mod site;
pub mod target_pages;
pub mod typing_pages;

pub use fixtures::*;
