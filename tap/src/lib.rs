//! cdp-relay-tap: the proxy's output port, the one thing the forwarding half and the evidence
//! pipeline both name.
//!
//! - [`tap`]: after a frame is written to its peer, the proxy offers a copy with a non-blocking
//!   send; whoever holds the [`TapReceiver`](tap::TapReceiver) (the evidence pipeline) reads
//!   them. A full queue drops the copy, never the frame.
//! - [`order`]: the evidence order of the copies across connections, so a producer that reads
//!   the browser on a connection of its own can wait until what was forwarded before is seen.
//!
//! Its own crate so that the pipeline depends on the port and not on the proxy's HTTP server,
//! and the proxy on no evidence crate.

#![forbid(unsafe_code)]

pub mod order;
pub mod tap;
