//! The proxy's error type. Every message is one line that says what happened and what to do.

use std::net::SocketAddr;

/// Errors the proxy reports to its caller.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A flag or configuration value is invalid; the message names the flag.
    #[error("{0}")]
    Usage(String),

    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source} (is another process using the port? pick another with --listen, or port 0 for any free port)")]
    Bind {
        /// The address we tried.
        addr: SocketAddr,
        /// Why the bind failed.
        source: std::io::Error,
    },

    /// The upstream did not answer like a Chrome DevTools endpoint.
    #[error("upstream {upstream} is not a usable DevTools endpoint: {reason} (start Chromium with --remote-debugging-port=PORT and pass --upstream http://127.0.0.1:PORT)")]
    Upstream {
        /// The upstream authority (`host:port`).
        upstream: String,
        /// What went wrong, already free of capability ids.
        reason: String,
    },
}

impl Error {
    /// True when the user invoked the command incorrectly (exit code 64).
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }
}
