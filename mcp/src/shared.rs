//! The gateway's state, shared by the agent's session, each call in flight and the gateway's
//! caller: the recorder, the wrapped server, the agent's link and transport state, the inputs,
//! the page ids. Everything here is read by the modules above it (`server.rs`, `tools.rs`,
//! `gateway.rs`); it names none of them.

use super::child::{self, Child, Endpoints};
use super::journal::Recorder;
use super::note::{Feedback, PendingVerdicts};
use super::transport::{AgentLink, AgentState};
use super::{inputs, pages};
use cdp_evidence::{LifecycleEvent, Status};
use rmcp::model::Tool;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What every part of the gateway shares.
pub(crate) struct Shared {
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) child: Option<Arc<Child>>,
    pub(crate) endpoints: Endpoints,
    pub(crate) store: Option<Arc<cdp_evidence::Store>>,
    pub(crate) link: AgentLink,
    /// What the agent's transport knows: cancelled requests, a closed connection.
    pub(crate) agent: AgentState,
    pub(crate) max_message_bytes: usize,
    pub(crate) feedback: Feedback,
    /// How long a tool call may go unanswered (`None`: no limit).
    pub(crate) call_timeout: Option<Duration>,
    /// Calls whose typing verdicts a later result tells.
    pub(crate) pending_verdicts: PendingVerdicts,
    /// Variables, `recordAs` names, and the rewriting of what the agent reads.
    pub(crate) inputs: inputs::Inputs,
    /// The wrapped server's own page ids, as its answers name them.
    pub(crate) page_ids: pages::PageIds,
    /// Tool names of the server already recorded as hidden for borrowing one of ours.
    pub(crate) hidden: std::sync::Mutex<std::collections::HashSet<String>>,
    pub(crate) own_tools: Vec<Tool>,
    pub(crate) stopping: AtomicBool,
    /// The wrapped server's exit is recorded once, by whoever sees it first.
    pub(crate) exit_recorded: AtomicBool,
    /// The MCP session served (HTTP): only its runs are shown. `None`: every run (stdio).
    pub(crate) session: Option<String>,
    /// Spans of the agent's requests (`--otlp-endpoint`); `None`: none are made.
    pub(crate) telemetry: Option<super::telemetry::Telemetry>,
}

impl Shared {
    /// Records how the wrapped server ended, once: an error unless it exited cleanly or was
    /// stopped by us.
    pub(crate) fn record_exit(&self, exit: &child::Exit) {
        if self.exit_recorded.swap(true, Ordering::Relaxed) {
            return;
        }
        let status = if exit.clean {
            Status::Info
        } else {
            Status::Error
        };
        self.recorder
            .lifecycle(LifecycleEvent::ServerExited, status, Some(&exit.how));
    }

    /// Whether run `id` may be shown to this agent: over HTTP, only its own session's runs.
    pub(crate) fn run_visible(&self, store: &cdp_evidence::Store, id: &str) -> bool {
        let Some(session) = &self.session else {
            return true;
        };
        store.list_runs().is_ok_and(|runs| {
            runs.iter()
                .any(|r| r.id == id && r.session_id.as_deref() == Some(session.as_str()))
        })
    }

    /// Text from the wrapped server or the agent, made safe for a log line or an error.
    pub(crate) fn clean(&self, s: &str) -> String {
        let s = self.inputs.rewriter().text(s);
        match self.recorder.handle() {
            Some(h) => h.sanitizer().text_capped(&s, 300).into_string(),
            None => cdp_sanitize::Sanitizer::new()
                .text_capped(&s, 300)
                .into_string(),
        }
    }
}
