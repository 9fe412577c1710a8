//! Logging to stderr through `tracing`. stdout is reserved for what the CLI promises.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event (colored on a terminal).
    Text,
    /// One JSON object per line (`timestamp`, `level`, `fields.message`, …) for log collectors.
    Json,
}

/// Installs the stderr subscriber. `RUST_LOG` wins over `-v`.
pub fn init(verbose: u8, format: LogFormat) {
    // rmcp is silent: its own logs print whole MCP messages (tool arguments, page text).
    let default = match verbose {
        0 => "cdp_relay=info,cdp_evidence=info,rmcp=off,warn",
        1 => "cdp_relay=debug,cdp_evidence=debug,rmcp=off,info",
        // Dependencies stay at info: at trace, websocket libraries print whole frames.
        _ => "cdp_relay=trace,cdp_evidence=trace,rmcp=off,info",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
}
