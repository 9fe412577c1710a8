//! `cdp-relay mcp --listen ADDR`: the gateway over MCP's Streamable HTTP transport (rmcp's own,
//! a tower service run on hyper), one isolated gateway per MCP session.
//!
//! ```text
//! agent A ─┐                   ┌─ session A: Gateway ⇄ wrapped server A ⇄ relay A ⇄ browser A → run A
//!          ├─ POST/GET/DELETE ─┤
//! agent B ─┘   /mcp (front.rs) └─ session B: Gateway ⇄ wrapped server B ⇄ relay B ⇄ browser B → run B
//! ```
//!
//! - `front.rs`: the HTTP side: the relay's access rules (Host, Bearer token, Origin) on every
//!   request, a session's requests held to the credential that created it, the session limit
//!   (`503` and a JSON-RPC error), `/relay/v1/{status,metrics,ready,live}`.
//! - `sessions.rs`: the sessions (`Hub`): rmcp's session manager with our ids (128 bits from the
//!   OS), each session's browser and gateway started on `initialize` and ended once, for one
//!   recorded reason: DELETE, idle, its server exited, shutdown.
//! - `handler.rs`: the agent's side of one session: rmcp's handler that starts the session on
//!   `initialize` and hands every request to that session's [`Gateway`] — the same handler as
//!   stdio's, so both transports serve one session type. Its transport rewrites what the agent
//!   reads exactly as stdio's does.
//!
//! Starting a browser is the caller's ([`StartBrowser`]): this crate does not depend on the
//! relay's composition root.

mod front;
mod handler;
mod sessions;

use super::child::Endpoints;
use super::error::Error;
use super::gateway::GatewayConfig;
use cdp_capture::PipelineHandle;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

pub use front::HttpGateway;

/// A boxed future, as the caller's browser starter returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What one session runs on, started by the caller for it: its own browser behind its own
/// relay, recording its own run (`session` = the MCP session id).
pub struct SessionBrowser {
    /// Where the wrapped server connects (`{cdp_url}`, `{ws_url}`).
    pub endpoints: Endpoints,
    /// The run's pipeline, when evidence is on.
    pub evidence: Option<PipelineHandle>,
    /// The evidence root, when evidence is on.
    pub evidence_root: Option<PathBuf>,
    /// Finalizes the run (render, upload when configured) and stops the relay and browser.
    pub stop: Box<dyn FnOnce() -> BoxFuture<()> + Send>,
    /// Resolves with how the browser exited when it did so without being stopped (recorded
    /// as `browserExited`, an error; the session goes on, its evidence tools still work).
    pub exited: Option<BoxFuture<String>>,
}

impl std::fmt::Debug for SessionBrowser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionBrowser")
            .field("cdp_url", &self.endpoints.cdp_url)
            .finish_non_exhaustive()
    }
}

/// Starts a session's browser, relay and run, given the MCP session id; the error is one line
/// for the agent.
pub type StartBrowser =
    Arc<dyn Fn(String) -> BoxFuture<Result<SessionBrowser, String>> + Send + Sync>;

/// By default, how long a session may go without a request or a message before it is ended.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(15 * 60);

/// Memory one session is counted at for the default `--max-sessions`: a headless Chromium
/// with one page and a wrapped Node server, measured (BENCHMARKS.md) and rounded up.
pub const SESSION_MEMORY_BYTES: u64 = 768 * 1024 * 1024;

/// Sessions per core for the default `--max-sessions`: an agent's session mostly waits.
pub const SESSIONS_PER_CORE: usize = 4;

/// What the HTTP gateway starts with.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// Each session's gateway (its `evidence_root` and `session` are set per session).
    pub gateway: GatewayConfig,
    /// Where to listen and who may connect: the relay's own rules and flags.
    pub policy: cdp_relay_proxy::ListenPolicy,
    /// Sessions open at once; an `initialize` over it is answered 503.
    pub max_sessions: usize,
    /// A session idle this long is ended (a vanished client is noticed this way).
    pub session_idle: Duration,
}

/// The default `--max-sessions`: the smaller of (memory available to the process ÷
/// [`SESSION_MEMORY_BYTES`]) and (cores × [`SESSIONS_PER_CORE`]), at least 1. Memory is the
/// cgroup's limit when there is one (a Kubernetes pod's), else the machine's.
pub fn default_max_sessions() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let by_memory = memory_limit().map_or(usize::MAX, |m| {
        usize::try_from(m / SESSION_MEMORY_BYTES).unwrap_or(usize::MAX)
    });
    by_memory
        .min(cores.saturating_mul(SESSIONS_PER_CORE))
        .max(1)
}

/// The memory this process may use: the cgroup v2 limit when set, else MemTotal.
fn memory_limit() -> Option<u64> {
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    match (cgroup, total) {
        (Some(c), Some(t)) => Some(c.min(t)),
        (c, t) => c.or(t),
    }
}

impl HttpGateway {
    /// Binds `config.policy.listen` and gets ready to serve; nothing starts before an
    /// `initialize`.
    pub async fn bind(config: HttpConfig, start: StartBrowser) -> Result<HttpGateway, Error> {
        front::bind(config, start).await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_session_limit_is_at_least_one_and_bounded_by_cores() {
        let n = super::default_max_sessions();
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        assert!(n >= 1 && n <= cores * super::SESSIONS_PER_CORE, "{n}");
    }
}
