//! The gateway as its caller sees it: started with a [`GatewayConfig`] (the wrapped server
//! started and its tools checked against ours), serving the agent on pipes until it leaves,
//! stopped once with a [`StopReason`] (calls in flight written as interrupted).

use super::child::{Child, ChildCommand, Endpoints};
use super::error::Error;
use super::journal::{self, Recorder};
use super::note::Feedback;
use super::shared::Shared;
use super::telemetry::Telemetry;
use super::transport::{self, AgentLink, MAX_MESSAGE_BYTES};
use super::vars::Variables;
use super::{inputs, tools};
use cdp_capture::PipelineHandle;
use cdp_evidence::{LifecycleEvent, Status};
use rmcp::service::RunningService;
use rmcp::RoleServer;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// By default, how long the wrapped server gets to answer a tool call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// By default, how long the wrapped server gets to answer `initialize`.
pub const DEFAULT_INIT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long in-flight calls get to end once the wrapped server is gone, before they are
/// written as interrupted.
const CALLS_GRACE: Duration = Duration::from_secs(2);

/// What the gateway starts with.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// The server to wrap; `None` serves only the gateway's own tools and resources.
    pub command: Option<ChildCommand>,
    /// How long the server gets to answer `initialize`. By default, 30 s.
    pub init_timeout: Duration,
    /// The evidence root, for the `evidence://` resources (`None` without evidence).
    pub evidence_root: Option<PathBuf>,
    /// The longest MCP message read from the agent or the wrapped server; a longer one is
    /// answered with a JSON-RPC error. By default, [`MAX_MESSAGE_BYTES`].
    pub max_message_bytes: usize,
    /// What the evidence learned during a call, told in its result (`note.rs`).
    pub feedback: Feedback,
    /// The values `${NAME}` stands for in the agent's typing arguments (`CDP_RELAY_VAR_*`,
    /// `--var-file`). By default, none.
    pub variables: Variables,
    /// A call the wrapped server has not answered after this long is ended: the server is told
    /// to cancel it, the agent gets an error result, the record says `interrupted`. `None`:
    /// wait as long as the agent does. By default, [`DEFAULT_CALL_TIMEOUT`].
    pub call_timeout: Option<Duration>,
    /// The MCP session this gateway serves (Streamable HTTP; its run's `session`): the
    /// evidence tools and resources then show this session's runs only. `None` on stdio.
    pub session: Option<String>,
    /// Spans of the agent's requests over OTLP (`--otlp-endpoint`). By default, none.
    pub telemetry: Option<Telemetry>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            command: None,
            init_timeout: DEFAULT_INIT_TIMEOUT,
            evidence_root: None,
            max_message_bytes: MAX_MESSAGE_BYTES,
            feedback: Feedback::default(),
            variables: Variables::default(),
            call_timeout: Some(DEFAULT_CALL_TIMEOUT),
            session: None,
            telemetry: None,
        }
    }
}

/// Why the gateway stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The agent closed its connection.
    AgentLeft,
    /// SIGINT or SIGTERM (the name).
    Signal(&'static str),
    /// Streamable HTTP: the agent ended its session (`DELETE`).
    Deleted,
    /// Streamable HTTP: no request or message either way for this long (`--session-idle`);
    /// how a client that vanished is noticed.
    Idle(Duration),
    /// The wrapped server exited; over HTTP that ends its session.
    ServerExited,
}

impl StopReason {
    /// The reason's name in metrics, logs and the status page.
    pub fn name(&self) -> &'static str {
        match self {
            StopReason::AgentLeft => "agent_left",
            StopReason::Signal(_) => "shutdown",
            StopReason::Deleted => "deleted",
            StopReason::Idle(_) => "idle",
            StopReason::ServerExited => "server_exited",
        }
    }
}

/// The gateway: cheap to clone, shared by the agent's session and its caller.
#[derive(Clone)]
pub struct Gateway {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").finish_non_exhaustive()
    }
}

/// The agent's session with the gateway.
pub struct Session {
    cancel: Option<rmcp::service::RunningServiceCancellationToken>,
    task: tokio::task::JoinHandle<()>,
    ended: tokio::sync::watch::Receiver<bool>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

impl Session {
    fn new(service: RunningService<RoleServer, Gateway>) -> Session {
        let cancel = Some(service.cancellation_token());
        let (tx, ended) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let _ = service.waiting().await;
            let _ = tx.send(true);
        });
        Session {
            cancel,
            task,
            ended,
        }
    }

    /// Resolves when the agent has closed the connection (or the session ended otherwise).
    pub async fn closed(&mut self) {
        let _ = self.ended.wait_for(|ended| *ended).await;
    }

    /// Ends the session from our side.
    pub async fn close(mut self) {
        if let Some(c) = self.cancel.take() {
            c.cancel();
        }
        let _ = (&mut self.task).await;
    }
}

impl Gateway {
    /// Starts the wrapped server (if any) and completes its `initialize`; refuses a server that
    /// offers a tool named like one of the gateway's. Records go through `evidence`. Call on a
    /// thread that lives as long as the server should: it is told to die with that thread.
    pub async fn start(
        config: GatewayConfig,
        endpoints: Endpoints,
        evidence: Option<PipelineHandle>,
    ) -> Result<Gateway, Error> {
        let recorder = Recorder::new(evidence.clone());
        let inputs = inputs::Inputs::new(config.variables);
        if let Some(h) = &evidence {
            // Before anything can be typed, or echoed.
            inputs.register_all(h);
        }
        let link = AgentLink::default();
        let store = match (&evidence, &config.evidence_root) {
            (Some(_), Some(root)) => {
                cdp_evidence::Store::open(cdp_evidence::EvidenceConfig::at(root))
                    .ok()
                    .map(Arc::new)
            }
            _ => None,
        };
        let child = match &config.command {
            None => None,
            Some(command) => {
                let sanitizer = evidence
                    .as_ref()
                    .map(|h| h.sanitizer().clone())
                    .unwrap_or_else(|| Arc::new(cdp_sanitize::Sanitizer::new()));
                let rewriter = inputs.rewriter().clone();
                let clean: Arc<dyn Fn(&str) -> String + Send + Sync> =
                    Arc::new(move |s: &str| sanitizer.text(&rewriter.text(s)).into_string());
                let child = Child::start(
                    command,
                    &endpoints,
                    link.clone(),
                    config.init_timeout,
                    config.max_message_bytes,
                    clean,
                )
                .await
                .map_err(|e| Error::Server { reason: e.0 })?;
                Some(Arc::new(child))
            }
        };
        let gateway = Gateway {
            shared: Arc::new(Shared {
                recorder,
                child,
                endpoints,
                store,
                link,
                agent: transport::AgentState::default(),
                max_message_bytes: config.max_message_bytes,
                feedback: config.feedback,
                call_timeout: config.call_timeout,
                pending_verdicts: Default::default(),
                inputs,
                page_ids: Default::default(),
                hidden: Default::default(),
                own_tools: tools::definitions(),
                stopping: AtomicBool::new(false),
                exit_recorded: AtomicBool::new(false),
                session: config.session,
                telemetry: config.telemetry,
            }),
        };
        if let Some(child) = &gateway.shared.child {
            if let Err(e) = gateway.refuse_collisions(child, config.init_timeout).await {
                child.stop().await;
                return Err(e);
            }
            gateway.shared.recorder.lifecycle(
                LifecycleEvent::ServerStarted,
                Status::Info,
                Some(&child.name),
            );
            tracing::info!(
                "mcp: wrapping the MCP server `{}`",
                gateway.shared.clean(&child.name)
            );
            gateway.watch_child(child.clone());
        }
        Ok(gateway)
    }

    async fn refuse_collisions(&self, child: &Child, within: Duration) -> Result<(), Error> {
        let name = self.shared.clean(&child.name);
        let tools = tokio::time::timeout(within, child.peer().list_all_tools())
            .await
            .map_err(|_| Error::Server {
                reason: format!(
                    "the MCP server `{name}` did not list its tools within {}s",
                    within.as_secs()
                ),
            })?
            .map_err(|e| Error::Server {
                reason: format!(
                    "the MCP server `{name}` did not list its tools: {}",
                    self.shared.clean(&e.to_string())
                ),
            })?;
        if let Some(t) = tools
            .iter()
            .find(|t| tools::NAMES.contains(&t.name.as_ref()))
        {
            return Err(Error::Server {
                reason: format!(
                    "the MCP server `{name}` offers a tool named `{}`, which is one of cdp-relay's own evidence tools; wrap a server without it",
                    self.shared.clean(&t.name)
                ),
            });
        }
        Ok(())
    }

    /// Records the server's exit when it was not asked to stop: its tools then answer with a
    /// clean error while the evidence tools keep working.
    fn watch_child(&self, child: Arc<Child>) {
        let shared = self.shared.clone();
        tokio::spawn(async move {
            let exit = child.wait().await;
            if exit.requested {
                return;
            }
            if !shared.stopping.load(Ordering::Relaxed) {
                tracing::warn!(
                    "mcp: the MCP server `{}` exited ({}); its tools now answer with an error, the evidence tools still work",
                    shared.clean(&child.name),
                    exit.how
                );
            }
            shared.record_exit(&exit);
        }
        .in_current_span());
    }

    /// Resolves when the wrapped server exits without being asked to; never without one.
    pub async fn server_gone(&self) {
        match &self.shared.child {
            Some(child) => {
                if child.wait().await.requested {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending().await,
        }
    }

    /// The wrapped server's name, when there is one.
    pub fn server_name(&self) -> Option<String> {
        self.shared
            .child
            .as_deref()
            .map(|c| self.shared.clean(&c.name))
    }

    /// Whether the wrapped server is running.
    pub fn server_alive(&self) -> bool {
        self.shared
            .child
            .as_deref()
            .is_some_and(|c| c.exited().is_none())
    }

    /// The run being recorded, when evidence is on.
    pub fn run_id(&self) -> Option<String> {
        self.shared.recorder.handle().map(|h| h.status().run_id)
    }

    /// A message to the agent with every known value rewritten to `${NAME}`, as the stdio
    /// transport writes it (`transport.rs`); unchanged when it holds none.
    pub(crate) fn rewritten(
        &self,
        item: rmcp::model::ServerJsonRpcMessage,
    ) -> rmcp::model::ServerJsonRpcMessage {
        let Ok(bytes) = serde_json::to_vec(&item) else {
            return item;
        };
        match self.shared.inputs.rewriter().json_line(&bytes) {
            Some(line) => serde_json::from_slice(&line).unwrap_or(item),
            None => item,
        }
    }

    /// The agent cancelled request `id` (the HTTP transport saw it).
    pub(crate) fn agent_cancelled(&self, id: &rmcp::model::RequestId) {
        self.shared.agent.cancel(id);
    }

    /// The agent's session closed (the HTTP transport ended).
    pub(crate) fn agent_closed(&self) {
        self.shared.agent.close();
    }

    /// Serves the agent on this process's stdin/stdout.
    pub async fn serve_stdio(&self) -> Result<Session, Error> {
        let (read, write) = rmcp::transport::stdio_pipes();
        self.serve_pipes(read, write).await
    }

    /// Serves the agent on a reader and a writer with the gateway's own transport: messages
    /// up to the size limit (a longer request is answered with an error and recorded), a
    /// request reusing the id of one in flight refused, what the wrapped server sends on its
    /// own forwarded in order.
    pub async fn serve_pipes<R, W>(&self, read: R, write: W) -> Result<Session, Error>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let shared = self.shared.clone();
        let on_refused: transport::OnRefused = Arc::new(move |r| record_refused(&shared, r));
        let transport = transport::AgentTransport::start(
            read,
            write,
            self.shared.max_message_bytes,
            self.shared.agent.clone(),
            on_refused,
            self.shared.inputs.rewriter().clone(),
        );
        self.serve(transport).await
    }

    /// Serves the agent on `transport` until it leaves. Private: only the gateway's own
    /// transport rewrites what the agent reads (`inputs.rs`).
    async fn serve<T, E, A>(&self, transport: T) -> Result<Session, Error>
    where
        T: rmcp::transport::IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let service = rmcp::serve_server(self.clone(), transport)
            .await
            .map_err(|e| Error::Session {
                reason: format!(
                    "the agent's MCP session did not start: {}",
                    self.shared.clean(&e.to_string())
                ),
            })?;
        Ok(Session::new(service))
    }

    /// Records why the gateway stops, stops the wrapped server (closing its stdin, then
    /// signals), and writes every call still in flight as interrupted. Call once, before the
    /// pipeline is finished.
    pub async fn stop(&self, why: StopReason) {
        let shared = &self.shared;
        if shared.stopping.swap(true, Ordering::Relaxed) {
            return;
        }
        let idle;
        let (event, detail) = match why {
            StopReason::AgentLeft => (LifecycleEvent::AgentDisconnected, None),
            StopReason::Signal(name) => (LifecycleEvent::StopRequested, Some(name)),
            StopReason::Deleted => (LifecycleEvent::AgentDisconnected, Some("DELETE")),
            StopReason::Idle(d) => {
                idle = format!("idle for {}s (--session-idle)", d.as_secs());
                (LifecycleEvent::AgentDisconnected, Some(idle.as_str()))
            }
            StopReason::ServerExited => (
                LifecycleEvent::StopRequested,
                Some("the wrapped server exited"),
            ),
        };
        shared.recorder.lifecycle(event, Status::Info, detail);
        if let Some(child) = &shared.child {
            let exit = child.stop().await;
            shared.record_exit(&exit);
        }
        // Calls waiting on the server end now (its session is gone); give them a moment.
        let deadline = tokio::time::Instant::now() + CALLS_GRACE;
        if !shared.recorder.settled(deadline).await {
            shared
                .recorder
                .abandon_all("the gateway stopped during the call");
        }
        // Everything recorded is in the journal before the pipeline finishes.
        shared.recorder.flush().await;
        if let Some(t) = &shared.telemetry {
            t.stop().await;
        }
    }

    /// Records that the browser the gateway's relay launched exited.
    pub fn browser_exited(&self, how: &str, expected: bool) {
        let status = if expected {
            Status::Info
        } else {
            Status::Error
        };
        self.shared
            .recorder
            .lifecycle(LifecycleEvent::BrowserExited, status, Some(how));
    }
}

/// Records a request of the agent the transport answered itself: a tool call as a call
/// record that says why it did not run, anything else as a log line.
fn record_refused(shared: &Shared, refused: transport::Refused) {
    let (why, method, tool) = match refused {
        transport::Refused::DuplicateId { method, tool } => (
            "refused: its request id is already in use by a request in flight".to_owned(),
            method,
            tool,
        ),
        transport::Refused::TooLarge {
            bytes,
            max,
            method,
            tool,
        } => (
            format!("refused: the request was {bytes} bytes, over the limit of {max} bytes (--max-message-size)"),
            method,
            tool,
        ),
    };
    let is_call = method.as_deref().is_none_or(|m| m == "tools/call");
    match tool.filter(|_| is_call) {
        Some(name) => {
            let server = if tools::NAMES.contains(&name.as_str()) {
                journal::GATEWAY_TOOL.to_owned()
            } else {
                shared
                    .child
                    .as_deref()
                    .map(|c| c.name.clone())
                    .unwrap_or_else(|| journal::GATEWAY_TOOL.to_owned())
            };
            shared
                .recorder
                .begin(&server, &name, None)
                .end(journal::Outcome::error(why));
        }
        None => tracing::warn!(
            "mcp: a request of the agent ({}) was {why}",
            shared.clean(method.as_deref().unwrap_or("unknown method"))
        ),
    }
}
