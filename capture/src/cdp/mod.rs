//! CDP as both observers read it: the one table of method names (`methods.rs`), a message parsed
//! just enough to route it (`frame.rs`; its usual shapes read by `skim.rs`), and the few shapes of
//! params and results read (`params.rs`), borrowed from the message text.
//!
//! Pure: no state, no I/O. Nothing here keeps a string past the message it came from. The one
//! exception is `client.rs`: the CDP client the direct reader, the demo and the tests share.

pub mod client;
pub(crate) mod frame;
pub(crate) mod methods;
pub(crate) mod params;
mod skim;

/// A table keyed by ids no outsider picks: connection numbers, CDP command ids and session ids,
/// target ids and request ids (chosen by the relay, the client or the browser, never by a web
/// page). Hashed with foldhash, seeded per process: SipHash's cost is for keys an attacker picks.
/// Tables keyed by what a page writes (`pages/dedup.rs`: hashes of console text) keep std's
/// SipHash.
pub(crate) type IdMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
