//! Browser launcher (being written).
use crate::{Config, LaunchConfig};
use std::process::ExitCode;

pub(crate) async fn run_launch(_config: Config, _launch: LaunchConfig) -> anyhow::Result<ExitCode> {
    anyhow::bail!("launch is being written")
}
