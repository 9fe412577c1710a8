//! `cdp-relay sanitize`: stream stdin through cdp-sanitize to stdout (owned by the sanitize work).

use std::process::ExitCode;

/// Flags of `cdp-relay sanitize`.
#[derive(Debug, clap::Args)]
pub struct SanitizeArgs {
    /// Treat the input as JSON (one document, or one per line) and walk it structurally.
    #[arg(long)]
    pub json: bool,
}

/// Runs `cdp-relay sanitize`.
pub fn run(_args: SanitizeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("sanitize is not built yet")
}
