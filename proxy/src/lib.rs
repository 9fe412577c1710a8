//! cdp-relay-proxy: the forwarding half of cdp-relay, client ⇄ relay ⇄ browser.
//!
//! - HTTP discovery as Chrome serves it, with every capability URL rewritten to the relay
//!   (`discovery.rs`, `upstream.rs`);
//! - Chrome's access rules, enforced by the relay itself: Host, Origin, a token off loopback
//!   (`policy.rs`, docs/security.md);
//! - websocket upgrades with the browser dialled first (`upgrade.rs`) and the splice that moves
//!   frames byte for byte (`splice.rs`, `frames.rs`): the hot path;
//! - the [`tap`]: the proxy's output port. After a frame is written to its peer, a copy is offered
//!   with a non-blocking send; whoever holds the [`TapReceiver`](tap::TapReceiver) (the evidence
//!   pipeline) reads them. A full queue drops the copy, never the frame.
//! - `/relay/v1/status`, and the rest of `/relay/v1/` handed to an [`Api`] the embedder provides.
//!
//! This crate depends on no evidence, sanitize or report crate: the hot path cannot wait on
//! evidence because it cannot name it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), cdp_relay_proxy::Error> {
//! use cdp_relay_proxy::{ListenPolicy, ProxyConfig, Relay, DEFAULT_MAX_MESSAGE_SIZE};
//! let policy = ListenPolicy::loopback("127.0.0.1:0".parse().unwrap());
//! let config = ProxyConfig::new(Some("http://127.0.0.1:9222"), policy, DEFAULT_MAX_MESSAGE_SIZE)?;
//! let relay = Relay::bind(config).await?;
//! println!("{}", relay.endpoint());
//! relay.run_until(async { let _ = tokio::signal::ctrl_c().await; }).await;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod admission;
mod api;
mod config;
mod discovery;
mod error;
pub mod frames;
mod health;
mod http;
mod policy;
mod relay;
mod splice;
mod stats;
mod upgrade;
pub mod upstream;

/// The tap and the evidence order (their own crate, `cdp-relay-tap`, which the pipeline names
/// instead of this one).
pub use cdp_relay_tap::{order, tap};

pub use api::{Api, ApiFuture, ApiRequest, ProxyView, DEFAULT_MAX_BODY};
pub use config::{
    ListenPolicy, OriginPolicy, ProxyConfig, Token, Upstream, DEFAULT_MAX_MESSAGE_SIZE,
};
pub use error::Error;
pub use health::HealthView;
pub use policy::{admit, Refusal};
pub use relay::Relay;
pub use stats::{Stats, StatsSnapshot};
