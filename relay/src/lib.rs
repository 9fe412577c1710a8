//! cdp-relay: a transparent Chrome DevTools Protocol relay that records a privacy-safe evidence
//! timeline from a copy of the traffic.
//!
//! The data path, one folder each:
//!
//! - [`proxy`]: client ⇄ relay ⇄ browser, its own crate (`cdp-relay-proxy`). Discovery
//!   (capability URLs rewritten to the relay), Chrome's access policy, websocket splicing byte
//!   for byte, and the tap: copies for the pipeline. It knows nothing of evidence.
//! - [`pipeline`]: tap → observer → run writer → journal, off the hot path.
//! - [`launch`]: the Chromium the relay starts and owns (`cdp-relay launch`).
//! - [`Recording`]: the proxy and the pipeline started and stopped as one, the way every
//!   command (and the tests) runs them; [`api`]: the relay's part of `/relay/v1/`.
//! - [`upload`]: finalized runs to object storage, whole, manifest last, in the background.
//! - [`remote`]: remote producers' records (`POST /relay/v1/evidence`), through the run's writer.
//! - [`ops`]: readiness and liveness probes, Prometheus metrics.
//! - `mcp` (feature `mcp`): the MCP gateway of `cdp-relay mcp`, which wraps an agent's browser
//!   MCP server and records what each tool call did.
//!
//! The `cdp-relay` command line lives in the binary (`src/main.rs`, `src/cli/`), not here.
//!
//! ```no_run
//! # async fn demo() -> Result<(), cdp_relay::Error> {
//! use cdp_relay::{Config, EvidenceNeed, ListenPolicy, Recording};
//! let policy = ListenPolicy::loopback("127.0.0.1:0".parse().unwrap());
//! let config = Config::new(Some("http://127.0.0.1:9222"), policy, cdp_relay::DEFAULT_MAX_MESSAGE_SIZE)?;
//! let recording = Recording::start(config, EvidenceNeed::BestEffort).await?;
//! println!("{}", recording.endpoint());
//! let _ = tokio::signal::ctrl_c().await;
//! if let Some(run) = recording.stop().await {
//!     println!("report: {}", run.run_dir.join("report.html").display());
//! }
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

pub mod api;
mod config;
mod error;
pub mod launch;
pub mod ops;
mod recording;
pub mod remote;
pub mod upload;

// The types of the pipeline and the proxy this crate's own API hands out; a user of the rest of
// `cdp-capture` or `cdp-relay-proxy` declares that crate.
pub use cdp_capture::{Pipeline, PipelineHandle, PipelineSummary};
pub use cdp_relay_proxy::{
    ListenPolicy, OriginPolicy, ProxyConfig, Relay, Stats, StatsSnapshot, Token, Upstream,
    DEFAULT_MAX_MESSAGE_SIZE,
};
pub use config::{
    Config, EvidenceSettings, LaunchConfig, SecretValue, StatusField, UploadSettings,
    DEFAULT_SHUTDOWN_GRACE,
};
pub use error::Error;
pub use launch::Browser;
pub use recording::{EvidenceNeed, Recording, Stopped};
