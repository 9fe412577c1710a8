//! The gateway's error type. Every message is one line that says what happened and what to do;
//! what it quotes of a server or an agent went through the run's sanitizer first.

/// Errors the gateway reports to the command that runs it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The wrapped MCP server did not start, did not answer `initialize` or `tools/list` in
    /// time, or offers a tool named like one of the gateway's own.
    #[error("{reason}")]
    Server {
        /// What happened, already sanitized.
        reason: String,
    },

    /// The agent's MCP session did not start.
    #[error("{reason}")]
    Session {
        /// What happened, already sanitized.
        reason: String,
    },
}
