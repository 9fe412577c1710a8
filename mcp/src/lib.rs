//! `cdp-relay mcp`: an MCP server (on stdio) that gives an agent its usual browser tools —
//! those of a wrapped MCP server such as chrome-devtools-mcp or @playwright/mcp, passed through
//! unchanged — and records what each tool call did in the browser.
//!
//! ```text
//! agent ⇄ (stdio) gateway ⇄ (pipes) wrapped server ⇄ (CDP) relay ⇄ browser
//!                 │ each call, reduced                          │ tap copies
//!                 ▼                                             ▼
//!             journal.rs ──▶ run writer ◀── observers: CDP actions, failures, frames
//!                 │ begin/end       │ links each record to the call in flight
//!                 └──────▶ cdp_capture::calls
//! ```
//!
//! - `gateway.rs`: the [`Gateway`] its caller starts, serves and stops; `shared.rs`: the state
//!   every part of it reads (the recorder, the wrapped server, the inputs).
//! - `server.rs`: the agent's side ([`rmcp::ServerHandler`], written out by hand so everything
//!   the wrapped server offers passes through: tools with their schemas, results as returned,
//!   resources, prompts, completions, log levels).
//! - `child.rs`: the wrapped server's process and our client session with it; its
//!   notifications (progress, log messages, `list_changed`) go to the agent unchanged, its
//!   stderr only sanitized.
//! - `note.rs`: what the evidence learned during a call (typing verdicts, failures), appended
//!   to the call's result for the agent; `pages.rs`: the wrapped server's own page ids.
//! - `journal.rs`: the gateway's records (one per tool call, lifecycle events), the one place
//!   that writes them; `args.rs` reduces arguments (typed text to length and input type).
//! - `tools.rs`: the gateway's own tools; `resources.rs`: `evidence://` resources, confined to
//!   the evidence root; `summary.rs`: `evidence_summary`.
//! - `transport.rs`: the two pipes (agent, wrapped server) as the gateway reads them: the
//!   server's notifications forwarded in order with backpressure, lines bounded and an
//!   over-long one answered with an error, duplicate request ids of the agent refused; where
//!   the agent is once it has connected; [`transport()`] for other MCP clients.
//! - `telemetry.rs`: OpenTelemetry spans of the agent's requests (`--otlp-endpoint`), a tool
//!   call's browser effects as their events; the trace context passed on to the server.
//! - `inputs.rs`: recorded inputs — `${NAME}` variables (`vars.rs`) resolved just before a call
//!   is forwarded, `recordAs` names (`record_as.rs`), the values rewritten to `${NAME}` in
//!   everything the agent reads (`rewrite.rs`, `spellings.rs`), pictures that may show one
//!   withheld.
//!
//! - `http.rs`: `mcp --listen`, Streamable HTTP: one session (its own browser, wrapped
//!   server, run, secrets and variables) per MCP session, each served by its own [`Gateway`].
//!
//! The gateway depends on the recording machinery through a [`cdp_capture::PipelineHandle`]
//! and the relay's endpoint only: starting and stopping the browser, relay and pipeline is the caller's (the
//! `mcp` command). Results pass through without being copied into evidence: a call's record
//! keeps its counts, never its content. Nothing here writes to stdout but the MCP session.
//!
//! The only crate of the workspace that depends on `rmcp`.

#![forbid(unsafe_code)]

mod args;
mod child;
mod error;
mod gateway;
mod http;
mod inputs;
mod journal;
mod note;
mod pages;
mod record_as;
mod resources;
mod rewrite;
mod server;
mod shared;
mod spellings;
mod summary;
mod telemetry;
mod tools;
mod transport;
mod vars;

pub use child::{browser_ws_url, ChildCommand, Endpoints};
pub use error::Error;
pub use gateway::{
    Gateway, GatewayConfig, Session, StopReason, DEFAULT_CALL_TIMEOUT, DEFAULT_INIT_TIMEOUT,
};
pub use http::{
    default_max_sessions, BoxFuture, HttpConfig, HttpGateway, SessionBrowser, StartBrowser,
    DEFAULT_SESSION_IDLE, SESSIONS_PER_CORE, SESSION_MEMORY_BYTES,
};
pub use note::{Feedback, DEFAULT_FEEDBACK_WAIT};
pub use telemetry::Telemetry;
pub use transport::{transport, MAX_MESSAGE_BYTES};
pub use vars::{VarError, VarSource, Variables, ENV_PREFIX as VAR_ENV_PREFIX};

/// The argument reduction, for the fuzz targets (`fuzz/fuzz_targets/mcp_args.rs`); the result
/// rewriter, for them and the benchmark (`relay-bench mcp-inputs`). The `fuzzing` feature only.
#[cfg(feature = "fuzzing")]
pub mod fuzzing {
    pub use super::args::{key_press, reduce, typed_key, typed_literals, KeyPress};
    pub use super::rewrite::{Added, Rewriter};
}
