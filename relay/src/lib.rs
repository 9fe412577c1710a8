//! cdp-relay: a transparent Chrome DevTools Protocol relay that records a privacy-safe evidence
//! timeline from a copy of the traffic.
//!
//! The data path, one folder each:
//!
//! - [`proxy`]: client ⇄ relay ⇄ browser. Discovery (capability URLs rewritten to the relay),
//!   Chrome's access policy, websocket splicing byte for byte.
//! - [`pipeline`]: tap → observer → run writer → journal, off the hot path.
//! - [`launch`]: the Chromium the relay starts and owns (`cdp-relay launch`).
//! - `mcp` (feature `mcp`): the MCP gateway of `cdp-relay mcp`, which wraps an agent's browser
//!   MCP server and records what each tool call did.
//!
//! The `cdp-relay` command line lives in the binary (`src/main.rs`, `src/cli/`), not here.
//!
//! ```no_run
//! # async fn demo() -> Result<(), cdp_relay::Error> {
//! use cdp_relay::{Config, ListenPolicy, Pipeline, Relay};
//! let policy = ListenPolicy::loopback("127.0.0.1:0".parse().unwrap());
//! let config = Config::new(Some("http://127.0.0.1:9222"), policy, cdp_relay::DEFAULT_MAX_MESSAGE_SIZE)?;
//! let pipeline = Pipeline::start(&config.evidence)?;
//! let mut relay = Relay::bind(config).await?;
//! if let Some(p) = &pipeline {
//!     relay = relay.with_evidence(p.handle().clone());
//! }
//! println!("{}", relay.endpoint());
//! relay.run_until(async { let _ = tokio::signal::ctrl_c().await; }).await;
//! if let Some(p) = pipeline {
//!     p.finish().await;
//! }
//! # Ok(()) }
//! ```

#![deny(unsafe_code)]

mod config;
mod error;
pub mod launch;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod pipeline;
pub mod proxy;
mod stats;

pub use config::{
    Config, EvidenceSettings, LaunchConfig, ListenPolicy, OriginPolicy, SecretValue, Token,
    Upstream, DEFAULT_MAX_MESSAGE_SIZE,
};
pub use error::Error;
pub use launch::Browser;
pub use pipeline::{Pipeline, PipelineHandle, PipelineSummary};
pub use proxy::Relay;
pub use stats::{Stats, StatsSnapshot};
