//! The agent's side of one HTTP session: rmcp creates a [`SessionHandler`] per session before
//! the session exists (its factory cannot wait), so the handler starts the session's browser and
//! [`Gateway`] in `initialize` and then hands every request to that gateway's own handler, the
//! one stdio uses. Requests before `initialize` cannot reach it: rmcp refuses them.

// Logging (`logging/setLevel`) is deprecated by SEP-2577 but still passed through.
#![allow(deprecated)]

use super::super::gateway::Gateway;
use super::sessions::{Hub, SlotTag};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use tracing::Instrument;

/// One session's handler (see the module docs).
pub(crate) struct SessionHandler {
    hub: Arc<Hub>,
    gateway: OnceLock<(Gateway, tracing::Span)>,
}

impl SessionHandler {
    pub(crate) fn new(hub: Arc<Hub>) -> SessionHandler {
        SessionHandler {
            hub,
            gateway: OnceLock::new(),
        }
    }

    fn gw(&self) -> Result<&Gateway, ErrorData> {
        self.gateway.get().map(|(g, _)| g).ok_or_else(|| {
            ErrorData::invalid_request(
                "the session has not been initialized; send initialize first",
                None,
            )
        })
    }

    /// The span every log line of this session's requests is under (names the session).
    fn span(&self) -> tracing::Span {
        self.gateway
            .get()
            .map_or_else(tracing::Span::none, |(_, s)| s.clone())
    }
}

impl ServerHandler for SessionHandler {
    fn get_info(&self) -> ServerConfig {
        match self.gateway.get() {
            Some((g, _)) => g.get_info(),
            None => ServerConfig::default(),
        }
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        match self.gateway.get() {
            Some((g, _)) => g.supported_protocol_versions(),
            None => Cow::Borrowed(ProtocolVersion::known_up_to(
                &ProtocolVersion::LATEST_WITH_INITIALIZE,
            )),
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let Some(SlotTag(slot)) = context.extensions.get::<SlotTag>().cloned() else {
            return Err(ErrorData::internal_error(
                "cdp-relay: initialize reached no session; retry it",
                None,
            ));
        };
        let span = tracing::info_span!("mcp_session", session = %slot.id);
        let gateway = self
            .hub
            .start(&slot)
            .instrument(span.clone())
            .await
            .map_err(|e| {
                tracing::warn!(session = %slot.id, "mcp: session {} did not start: {e}", slot.id);
                ErrorData::internal_error(
                    format!("cdp-relay could not start this session's browser and MCP server: {e}"),
                    None,
                )
            })?;
        let _ = self.gateway.set((gateway.clone(), span.clone()));
        gateway.initialize(request, context).instrument(span).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if let Ok(g) = self.gw() {
            g.on_initialized(context).instrument(self.span()).await;
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.gw()?
            .list_tools(request, context)
            .instrument(self.span())
            .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.gw()?
            .call_tool(request, context)
            .instrument(self.span())
            .await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.gw()?
            .list_resources(request, context)
            .instrument(self.span())
            .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.gw()?
            .list_resource_templates(request, context)
            .instrument(self.span())
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.gw()?
            .read_resource(request, context)
            .instrument(self.span())
            .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.gw()?
            .subscribe(request, context)
            .instrument(self.span())
            .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.gw()?
            .unsubscribe(request, context)
            .instrument(self.span())
            .await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.gw()?
            .list_prompts(request, context)
            .instrument(self.span())
            .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.gw()?
            .get_prompt(request, context)
            .instrument(self.span())
            .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.gw()?
            .complete(request, context)
            .instrument(self.span())
            .await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.gw()?
            .set_level(request, context)
            .instrument(self.span())
            .await
    }
}
