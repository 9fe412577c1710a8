//! The relay's error type. Every message is one line that says what happened and what to do.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Errors the relay library reports to its caller.
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

    /// No Chromium executable was found.
    #[error("no Chromium found (looked for {looked_for}); install one (Debian/Ubuntu: apt-get install chromium) or pass --browser /path/to/chrome or set CDP_RELAY_BROWSER")]
    BrowserNotFound {
        /// The names and paths that were tried.
        looked_for: String,
    },

    /// The browser could not be started or exited before it was ready.
    #[error("browser {path} failed to start: {reason}")]
    BrowserStart {
        /// The executable.
        path: PathBuf,
        /// What happened.
        reason: String,
    },

    /// The evidence directory cannot be used; the relay forwards without evidence.
    #[error("evidence is off: {reason} (fix the directory or pass --evidence-dir DIR; --no-evidence silences this)")]
    Evidence {
        /// What went wrong, naming the path.
        reason: String,
    },

    /// The MCP gateway could not start: the wrapped server failed, or the agent's session.
    #[error("{reason}")]
    Mcp {
        /// What happened, already sanitized.
        reason: String,
    },

    /// A filesystem or process error with the path it concerns.
    #[error("{context} {path}: {source}")]
    Io {
        /// What we were doing.
        context: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl Error {
    /// True when the user invoked the command incorrectly (exit code 64).
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }
}
