//! The relay's error type. Every message is one line that says what happened and what to do.

use std::path::PathBuf;

/// Errors the relay library reports to its caller.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A flag or configuration value is invalid; the message names the flag.
    #[error("{0}")]
    Usage(String),

    /// The proxy could not start: a bad listen/upstream/policy setting, a port in use, or an
    /// upstream that is not a DevTools endpoint.
    #[error(transparent)]
    Proxy(#[from] cdp_relay_proxy::Error),

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

    /// A command that exists to record evidence (`demo`, `mcp`) cannot record it.
    #[error("cannot record evidence: {reason} (pass --evidence-dir DIR)")]
    EvidenceRequired {
        /// What went wrong, naming the path.
        reason: String,
    },

    /// Object storage cannot take the evidence uploads (bad credentials, no such bucket, no
    /// answer); `reason` is one line saying what to fix, free of credentials.
    #[error("evidence upload to {target}: {reason}")]
    Upload {
        /// `s3://bucket/prefix`.
        target: String,
        /// What went wrong and what to do.
        reason: String,
    },

    /// Object storage cannot be read (`runs --remote`, `report --remote`); `reason` is one line
    /// saying what to fix, free of credentials.
    #[error("reading evidence from {target}: {reason}")]
    Remote {
        /// `s3://bucket/prefix`.
        target: String,
        /// What went wrong and what to do.
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
        match self {
            Error::Usage(_) => true,
            Error::Proxy(e) => e.is_usage(),
            _ => false,
        }
    }
}
