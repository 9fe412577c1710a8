//! `cdp-relay evidence append`, `cdp-relay runs`, `cdp-relay prune` (owned by the evidence work).

use std::process::ExitCode;

/// Flags of `cdp-relay evidence`.
#[derive(Debug, clap::Args)]
pub struct EvidenceArgs {}

/// Flags of `cdp-relay runs`.
#[derive(Debug, clap::Args)]
pub struct RunsArgs {}

/// Flags of `cdp-relay prune`.
#[derive(Debug, clap::Args)]
pub struct PruneArgs {}

/// Runs `cdp-relay evidence ...`.
pub fn run_evidence(_args: EvidenceArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("evidence is not built yet")
}

/// Runs `cdp-relay runs`.
pub fn run_runs(_args: RunsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("runs is not built yet")
}

/// Runs `cdp-relay prune`.
pub fn run_prune(_args: PruneArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("prune is not built yet")
}
