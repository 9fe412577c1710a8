//! cdp-relay: a transparent Chrome DevTools Protocol relay that records a privacy-safe evidence
//! timeline from a copy of the traffic.
//!
//! The relay serves Chrome's discovery endpoints (rewriting capability URLs to itself), enforces
//! Chrome's own access policy, and splices websockets byte-for-byte. See `docs/architecture.md`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), cdp_relay::Error> {
//! use cdp_relay::{Config, ListenPolicy, Relay};
//! let policy = ListenPolicy::loopback("127.0.0.1:0".parse().unwrap());
//! let config = Config::new(Some("http://127.0.0.1:9222"), policy, cdp_relay::DEFAULT_MAX_MESSAGE_SIZE)?;
//! let relay = Relay::bind(config).await?;
//! println!("{}", relay.endpoint());
//! relay.run_until(std::future::pending()).await;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

pub mod cli;
mod commands;
mod config;
mod discovery;
mod error;
pub mod launcher;
mod logging;
pub mod observer;
mod policy;
pub mod recorder;
mod serve;
mod signals;
mod splice;
mod stats;
pub mod tap;
mod upstream;

pub use config::{
    Config, EvidenceSettings, LaunchConfig, ListenPolicy, OriginPolicy, SecretValue, Token,
    Upstream, DEFAULT_MAX_MESSAGE_SIZE,
};
pub use error::Error;
pub use serve::Relay;
pub use stats::{Stats, StatsSnapshot};

/// A multi-threaded tokio runtime for the CLI.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|source| Error::Io {
            context: "cannot start the async runtime",
            path: std::path::PathBuf::new(),
            source,
        })
}
