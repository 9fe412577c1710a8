//! The agent's side of the gateway: an [`rmcp::ServerHandler`] written out method by method, so
//! that everything the wrapped server offers reaches the agent as the server gave it — tools
//! (names, descriptions, schemas), results (text, images, structured content, `isError`),
//! resources, resource templates, prompts, completions, log levels — with the gateway's own
//! tools and `evidence://` resources added. JSON-RPC errors of the server pass through as errors.
//!
//! A tool call of the server is recorded around the forwarding (`journal.rs`): begun before the
//! request leaves (its typed text registered as secrets first, the page it names bound to it),
//! ended with the result's shape. A call the server leaves unanswered past `--call-timeout` is
//! cancelled at the server and ends with an error result, recorded as interrupted.

// Logging (`logging/setLevel`, log messages) is deprecated by SEP-2577 but still what servers
// use; it passes through like everything else.
#![allow(deprecated)]

use super::gateway::Gateway;
use super::journal::{Call, Outcome};
use super::note::{self, Intent, Sources};
use super::telemetry::{self, RequestSpan};
use super::{resources, tools};
use cdp_evidence::{LifecycleEvent, Status};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest,
    CompleteRequestParams, CompleteResult, ContentBlock, GetPromptRequestParams, GetPromptResponse,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, ServerResult, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RequestContext};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceError};
use std::borrow::Cow;

/// The server-side error for a failure of our session with the wrapped server.
fn child_error(gw: &Gateway, e: ServiceError) -> ErrorData {
    match e {
        // The server's own JSON-RPC error: passed through.
        ServiceError::McpError(e) => e,
        other => ErrorData::internal_error(
            format!(
                "the MCP server did not answer: {}",
                gw.shared.clean(&other.to_string())
            ),
            None,
        ),
    }
}

/// Whether the wrapped server offers what a request needs.
type Needs = fn(&ServerCapabilities) -> bool;

fn has_resources(c: &ServerCapabilities) -> bool {
    c.resources.is_some()
}

fn not_running_resource() -> ErrorData {
    ErrorData::resource_not_found("the MCP server is not running", None)
}

impl Gateway {
    fn child_alive(&self) -> Option<&super::child::Child> {
        self.shared
            .child
            .as_deref()
            .filter(|c| c.exited().is_none())
    }

    /// Sends one request to the wrapped server when it runs and, if the request needs a
    /// capability, said in `initialize` that it offers it; `None` otherwise, for the caller's
    /// default answer. The server's own errors pass through ([`child_error`]).
    async fn ask<T, F, Fut>(&self, needs: Option<Needs>, request: F) -> Option<Result<T, ErrorData>>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut,
        Fut: std::future::Future<Output = Result<T, ServiceError>>,
    {
        let child = self.child_alive().filter(|c| match needs {
            None => true,
            Some(offers) => c.info().is_some_and(|i| offers(&i.capabilities)),
        })?;
        Some(
            request(child.peer().clone())
                .await
                .map_err(|e| child_error(self, e)),
        )
    }

    fn dead_server_result(&self) -> CallToolResult {
        let (name, how) = self
            .shared
            .child
            .as_deref()
            .map(|c| {
                (
                    c.name.clone(),
                    c.exited()
                        .map(|e| e.how)
                        .unwrap_or_else(|| "stopped".into()),
                )
            })
            .unwrap_or_default();
        CallToolResult::error(vec![ContentBlock::text(format!(
            "The MCP server `{}` is not running ({how}); its tools are unavailable. The evidence tools (evidence_summary, evidence_finalize) still work.",
            self.shared.clean(&name)
        ))])
    }

    /// Forwards a call to the wrapped server, mapping its progress to the agent's token and
    /// cancelling it if the agent cancels.
    async fn forward_call(
        &self,
        params: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ServiceError> {
        let Some(child) = self.child_alive() else {
            return Ok(self.dead_server_result());
        };
        let peer = child.peer();
        let agent_token = context.meta.get_progress_token();
        let handle = peer
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await?;
        let (id, ours) = (handle.id.clone(), handle.progress_token.clone());
        if let Some(theirs) = agent_token {
            self.shared.link.map_progress(ours.clone(), theirs);
        }
        let limit = self.shared.call_timeout;
        let expired = async move {
            match limit {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let answer = tokio::select! {
            r = handle.await_response() => Some(r),
            () = context.ct.cancelled() => None,
            () = expired => Some(Err(ServiceError::Timeout {
                timeout: limit.unwrap_or_default(),
            })),
        };
        self.shared.link.unmap_progress(&ours);
        match answer {
            Some(Ok(ServerResult::CallToolResult(r))) => Ok(r),
            Some(Ok(_)) => Err(ServiceError::UnexpectedResponse),
            Some(Err(ServiceError::Timeout { timeout })) => {
                // The server may still be working on it: it is told to stop.
                let why = format!(
                    "cdp-relay: no answer within {} s (--call-timeout)",
                    timeout.as_secs()
                );
                let _ = peer
                    .notify_cancelled(rmcp::model::CancelledNotificationParam::new(
                        Some(id),
                        Some(why),
                    ))
                    .await;
                Err(ServiceError::Timeout { timeout })
            }
            Some(Err(e)) => Err(e),
            None => {
                let why = self.interruption(&context.id);
                let _ = peer
                    .notify_cancelled(rmcp::model::CancelledNotificationParam::new(
                        Some(id),
                        Some(why.clone()),
                    ))
                    .await;
                Err(ServiceError::Cancelled { reason: Some(why) })
            }
        }
    }
}

impl Gateway {
    /// The span of one request of the agent (a no-op one when telemetry is off).
    fn span(
        &self,
        method: &'static str,
        tool: Option<&str>,
        resource: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> RequestSpan {
        let tool = tool.map(|t| self.shared.clean(t));
        let resource = resource.map(|u| self.shared.clean(u));
        let protocol = context
            .peer
            .peer_info()
            .map(|i| i.protocol_version.to_string());
        let mut span = RequestSpan::begin(
            self.shared.telemetry.as_ref(),
            &telemetry::Request {
                method,
                tool: tool.as_deref(),
                id: &context.id,
                meta: &context.meta,
                session: self.shared.session.as_deref(),
                protocol: protocol.as_deref(),
                resource: resource.as_deref(),
            },
        );
        span.run(self.shared.recorder.handle());
        span
    }

    /// Why a call's context was cancelled, in words: the agent cancelled it, or its session
    /// ended under it (the agent left, the gateway stopped).
    fn interruption(&self, id: &rmcp::model::RequestId) -> String {
        let agent = &self.shared.agent;
        if agent.cancelled(id) {
            "cancelled by the agent"
        } else if agent.closed() {
            "the agent disconnected during the call"
        } else if self
            .shared
            .stopping
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            "the gateway stopped during the call"
        } else {
            "the agent's session ended during the call"
        }
        .to_owned()
    }

    /// A call that names the server's own page (`pageId`) acts on the page the relay knows by
    /// the URL the server last listed it with (`pages.rs`).
    fn bind_page(
        &self,
        call: &Call,
        arguments: Option<&serde_json::Map<String, serde_json::Value>>,
    ) {
        let Some(h) = self.shared.recorder.handle() else {
            return;
        };
        let Some(url) = self.shared.page_ids.url_of(arguments) else {
            return;
        };
        if let Some(page) = h.pages().handle_showing(&url) {
            h.calls().acts_on(call.id(), page.as_str());
        }
    }

    /// Ends `call` as the server's answer (or its absence) says, and answers the agent.
    fn ended(
        &self,
        call: Call,
        tool: &str,
        answer: Result<(CallToolResult, Outcome), ServiceError>,
    ) -> Result<CallToolResponse, ErrorData> {
        match answer {
            Ok((result, outcome)) => {
                call.end(outcome);
                Ok(result.into())
            }
            Err(ServiceError::Cancelled { reason }) => {
                let why = reason.unwrap_or_else(|| "cancelled".into());
                call.end(Outcome::interrupted(why.clone()));
                Err(ErrorData::internal_error(why, None))
            }
            Err(ServiceError::Timeout { timeout }) => {
                let secs = timeout.as_secs();
                call.end(Outcome::interrupted(format!(
                    "the MCP server did not answer within {secs} s (--call-timeout)"
                )));
                Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "The MCP server did not answer `{}` within {secs} s (cdp-relay's --call-timeout); the call was cancelled at the server. Check the page's state before you retry.",
                    self.shared.clean(tool)
                ))])
                .into())
            }
            Err(ServiceError::McpError(e)) => {
                call.end(Outcome::error(e.message.to_string()));
                Err(e)
            }
            Err(ServiceError::TransportClosed) | Err(ServiceError::TransportSend(_)) => {
                call.end(Outcome::interrupted(
                    "the MCP server exited during the call",
                ));
                Ok(self.dead_server_result().into())
            }
            Err(other) => {
                let e = child_error(self, other);
                call.end(Outcome::error(e.message.to_string()));
                Err(e)
            }
        }
    }

    /// Removes the server's tools named like one of ours (a server may change its list after
    /// start, with `tools/list_changed`): ours answer to those names. Each is recorded once.
    fn hide_borrowed(&self, tools: &mut Vec<rmcp::model::Tool>) {
        tools.retain(|t| {
            let name = t.name.as_ref();
            if !tools::NAMES.contains(&name) {
                return true;
            }
            let first = self
                .shared
                .hidden
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(name.to_owned());
            if first {
                let server = self
                    .shared
                    .child
                    .as_deref()
                    .map(|c| self.shared.clean(&c.name))
                    .unwrap_or_default();
                let why = format!(
                    "the MCP server `{server}` now offers a tool named `{name}`, one of cdp-relay's own evidence tools; it is hidden from the agent"
                );
                tracing::warn!("mcp: {why}");
                self.shared
                    .recorder
                    .begin(super::journal::GATEWAY_TOOL, "tools/list", None)
                    .end(Outcome::error(why));
            }
            false
        });
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let child_info = self.shared.child.as_deref().and_then(|c| c.info());
        let theirs = child_info.as_ref().map(|i| &i.capabilities);
        let mut caps = ServerCapabilities::default();
        let mut tools = rmcp::model::ToolsCapability::default();
        tools.list_changed = Some(true);
        caps.tools = Some(tools);
        let mut resources = rmcp::model::ResourcesCapability::default();
        resources.list_changed = Some(true);
        resources.subscribe = theirs
            .and_then(|c| c.resources.as_ref())
            .and_then(|r| r.subscribe);
        caps.resources = Some(resources);
        if let Some(c) = theirs {
            caps.prompts = c.prompts.clone();
            caps.logging = c.logging.clone();
            caps.completions = c.completions.clone();
        }
        let mut info = InitializeResult::new(caps);
        info.server_info = Implementation::new("cdp-relay", env!("CARGO_PKG_VERSION"));
        let ours = "Browser evidence by cdp-relay: every tool call is recorded with what it did in the browser (typed text only as its length). A call that typed, or during which a request failed or the page logged an error, gets a \"cdp-relay evidence for this call\" note appended to its result: whether the typed text landed in the field, and what failed. evidence_summary lists unverified typing and the failures so far; evidence://runs/current/summary.md and report.html render the record.";
        let ours = format!("{ours} {}", self.shared.inputs.instructions());
        info.instructions = Some(
            match child_info.as_ref().and_then(|i| i.instructions.clone()) {
                Some(theirs) => format!("{theirs}\n\n{ours}"),
                None => ours,
            },
        );
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        // No newer than the wrapped server speaks, and only versions with `initialize`.
        let ceiling = self
            .shared
            .child
            .as_deref()
            .and_then(|c| c.info())
            .map(|i| i.protocol_version.clone())
            .filter(|v| v.as_str() < ProtocolVersion::LATEST_WITH_INITIALIZE.as_str())
            .unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE);
        Cow::Borrowed(ProtocolVersion::known_up_to(&ceiling))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let span = self.span("initialize", None, None, &context);
        let _ = self.shared.link.peer.set(context.peer.clone());
        let answer = self.negotiate_initialize(&request);
        span.end(telemetry::error_type(&answer, |_| false));
        answer
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let name = context
            .peer
            .peer_info()
            .map(|i| i.client_info.name.clone())
            .unwrap_or_default();
        self.shared
            .recorder
            .lifecycle(LifecycleEvent::AgentConnected, Status::Info, Some(&name));
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let first_page = request.as_ref().is_none_or(|r| r.cursor.is_none());
        let span = self.span("tools/list", None, None, &context);
        let asked = self
            .ask(None, |peer| async move { peer.list_tools(request).await })
            .await
            .transpose();
        span.end(telemetry::error_type(&asked, |_| false));
        let mut result = asked?.unwrap_or_default();
        self.hide_borrowed(&mut result.tools);
        self.shared.inputs.augment(&mut result.tools);
        if first_page {
            result.tools.extend(self.shared.own_tools.iter().cloned());
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let span = self.span("tools/call", Some(&request.name), None, &context);
        let mut call = None;
        let answer = self
            .call_tool_traced(request, context, &span, &mut call)
            .await;
        let error = telemetry::error_type(
            &answer,
            |r| matches!(r, CallToolResponse::Complete(c) if c.is_error == Some(true)),
        );
        match call {
            Some(id) => span.end_call(error, self.shared.recorder.handle(), &id),
            None => span.end(error),
        }
        answer
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let first_page = request.as_ref().is_none_or(|r| r.cursor.is_none());
        let mut result = self
            .ask(Some(has_resources), |peer| async move {
                peer.list_resources(request).await
            })
            .await
            .transpose()?
            .unwrap_or_default();
        if first_page {
            let ours = resources::list(self.shared.recorder.handle().is_some());
            result.resources.extend(ours.resources);
        }
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let first_page = request.as_ref().is_none_or(|r| r.cursor.is_none());
        let mut result = self
            .ask(Some(has_resources), |peer| async move {
                peer.list_resource_templates(request).await
            })
            .await
            .transpose()?
            .unwrap_or_default();
        if first_page {
            result
                .resource_templates
                .extend(resources::templates().resource_templates);
        }
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let span = self.span("resources/read", None, Some(&request.uri), &context);
        let answer = self.read_resource_traced(request).await;
        span.end(telemetry::error_type(&answer, |_| false));
        answer
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if resources::is_ours(&request.uri) {
            return Err(ErrorData::invalid_params(
                "evidence resources do not send updates; read them again",
                None,
            ));
        }
        self.ask(None, |peer| async move { peer.subscribe(request).await })
            .await
            .unwrap_or_else(|| Err(not_running_resource()))
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if resources::is_ours(&request.uri) {
            return Ok(());
        }
        self.ask(None, |peer| async move { peer.unsubscribe(request).await })
            .await
            .unwrap_or_else(|| Err(not_running_resource()))
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.ask(Some(|c| c.prompts.is_some()), |peer| async move {
            peer.list_prompts(request).await
        })
        .await
        .unwrap_or_else(|| Ok(ListPromptsResult::default()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.ask(
            None,
            |peer| async move { peer.get_prompt_once(request).await },
        )
        .await
        .unwrap_or_else(|| {
            Err(ErrorData::invalid_params(
                "the MCP server is not running",
                None,
            ))
        })
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.ask(Some(|c| c.completions.is_some()), |peer| async move {
            peer.complete(request).await
        })
        .await
        .unwrap_or_else(|| Ok(CompleteResult::default()))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.ask(Some(|c| c.logging.is_some()), |peer| async move {
            peer.set_level(request).await
        })
        .await
        .unwrap_or(Ok(()))
    }
}

impl Gateway {
    /// A tool call of the agent: the gateway's own tools answered here, the server's recorded
    /// around the forwarding. `call_id`: the call's record, for its span's effects.
    async fn call_tool_traced(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        span: &RequestSpan,
        call_id: &mut Option<cdp_evidence::ActionId>,
    ) -> Result<CallToolResponse, ErrorData> {
        if tools::NAMES.contains(&request.name.as_ref()) {
            return Ok(tools::call(&self.shared, request).await.into());
        }
        let Some(server) = self.shared.child.as_deref().map(|c| c.name.clone()) else {
            // No wrapped server: only the gateway's own tools exist.
            let call = self.shared.recorder.begin(
                super::journal::GATEWAY_TOOL,
                &request.name,
                request.arguments.as_ref(),
            );
            let e = format!("no tool named {}", self.shared.clean(&request.name));
            call.end(Outcome::error(e.clone()));
            return Err(ErrorData::invalid_params(e, None));
        };
        // `${NAME}` resolved and `recordAs` taken out (inputs.rs); a refusal is recorded there.
        let request = match super::inputs::before_call(
            &self.shared.inputs,
            &self.shared.recorder,
            &server,
            request,
        ) {
            Ok(request) => request,
            Err(refused) => return Ok((*refused).into()),
        };
        // A call that names a path inside the evidence root is refused, and recorded.
        if let Some(refused) = tools::refuse_evidence_paths(&self.shared, &server, &request) {
            return Ok(refused.into());
        }
        let mut request = request;
        let call = self
            .shared
            .recorder
            .begin(&server, &request.name, request.arguments.as_ref());
        *call_id = Some(call.id().clone());
        self.bind_page(&call, request.arguments.as_ref());
        let feedback = self.shared.feedback;
        let intent = (feedback.enabled && self.shared.recorder.handle().is_some())
            .then(|| Intent::of(&request.name, request.arguments.as_ref()));
        let request_name = request.name.to_string();
        span.propagate(&mut request.meta);
        let answer = self.forward_call(request, &context).await;
        call.answered();
        let answer = match answer {
            Ok(mut result) => {
                self.shared.page_ids.learn(&result);
                // The call's record keeps the server's result, not what the gateway adds.
                let mut outcome = match super::journal::result_error_text(&result) {
                    Some(text) => Outcome::error(text),
                    None if result.is_error == Some(true) => Outcome::error("the tool failed"),
                    None => Outcome::ok(None),
                };
                outcome.result = Some(super::journal::result_shape(&result));
                super::inputs::after_answer(
                    &self.shared.inputs,
                    &self.shared.recorder,
                    &mut result,
                )
                .await;
                if let (Some(intent), Some(h)) = (intent, self.shared.recorder.handle()) {
                    let learned = note::wait_for_evidence(
                        &Sources::of(h),
                        &self.shared.pending_verdicts,
                        (call.id(), &request_name),
                        &intent,
                        call.started(),
                        feedback.wait,
                    )
                    .await;
                    if note::append(&mut result, call.id(), &learned) && feedback.strict {
                        result.is_error = Some(true);
                    }
                }
                Ok((result, outcome))
            }
            Err(e) => Err(e),
        };
        self.shared.agent.done(&context.id);
        self.ended(call, &request_name, answer)
    }

    async fn read_resource_traced(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if resources::is_ours(&request.uri) {
            let (Some(store), Some(h)) = (&self.shared.store, self.shared.recorder.handle()) else {
                return Err(ErrorData::resource_not_found(
                    "evidence is off for this gateway",
                    None,
                ));
            };
            // What is queued for the journal is part of what the agent asks for.
            self.shared.recorder.flush().await;
            resources::settle(h).await;
            let current = Some(h.status().run_id);
            let uri = request.uri.clone();
            // File reads and rendering block: keep them off the runtime's workers.
            let store = store.clone();
            let session = self.shared.session.clone();
            return tokio::task::spawn_blocking(move || {
                resources::Evidence {
                    store: &store,
                    current,
                    session,
                }
                .read(&uri)
            })
            .await
            .map_err(|_| ErrorData::internal_error("the evidence reader failed", None))?
            .map(Into::into);
        }
        self.ask(None, |peer| async move {
            peer.read_resource_once(request).await
        })
        .await
        .unwrap_or_else(|| Err(not_running_resource()))
    }
}
