//! The end-to-end suite, one test binary: every module drives the real `cdp-relay` binary or the
//! library against a real headless Chromium and real clients, through the harness in `tests/src`
//! (and `layering` reads the workspace's sources).
//! One binary instead of one per file: the harness and its dependencies are linked once.
//!
//! Run one part with a module path: `cargo test -p cdp-relay-tests --test e2e mcp_privacy::`.

mod backpressure;
mod cli;
mod clients;
mod clients_nonflat;
mod demo;
mod discovery;
mod echo_leaks;
mod echo_race;
mod evidence_bounds;
mod evidence_producers;
mod evidence_relay;
mod evidence_sweep;
mod export;
mod faults;
mod fleet;
mod fleet_deploy;
mod fleet_ops;
mod fleet_remote;
mod fleet_sizing;
mod hostile;
mod hostile_pages;
mod launch;
mod mcp;
mod mcp_faults;
mod mcp_feedback;
mod mcp_http;
mod mcp_inputs;
mod mcp_linking;
mod mcp_privacy;
mod mcp_transport;
mod network_outcomes;
mod observer;
mod otlp;
mod otp_boxes;
mod report_browser;
mod secrets_bounds;
mod targets;
mod trace_export;
mod upload;
mod url_spellings;
mod verdict_truth;
mod websocket;
