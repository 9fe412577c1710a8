//! The relay server (being written).
use crate::{Config, Error};
use std::process::ExitCode;

/// A bound relay.
pub struct Relay {
    endpoint: String,
}

impl Relay {
    /// Binds the listener.
    pub async fn bind(config: Config) -> Result<Relay, Error> {
        Ok(Relay { endpoint: format!("http://{}", config.policy.listen) })
    }
    /// The HTTP endpoint.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
    /// Serves until `shutdown` resolves.
    pub async fn run_until(self, shutdown: impl std::future::Future<Output = ()>) {
        shutdown.await
    }
}

pub(crate) async fn run_serve(config: Config) -> anyhow::Result<ExitCode> {
    let _ = Relay::bind(config).await?;
    anyhow::bail!("serve is being written")
}
