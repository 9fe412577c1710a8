//! What the browser and its pages report on the observer's sessions: pages to attach and let
//! go, the page agent's world and messages, console entries and failed requests (recorded once
//! per page, repeats counted; failures wait for their frame), navigations and crashes.

use super::{setup, Browser, Done, Page};
use crate::pipeline::active::frames::After;
use crate::pipeline::active::verify::{self, VerifyReply};
use crate::pipeline::active::{BINDING, TOOL, WORLD};
use crate::pipeline::capture::NavigationKind;
use crate::pipeline::observer::console::{
    console_record, console_status, from_api, from_exception, from_log, network_record,
};
use crate::pipeline::observer::{cdp, frame::Frame};
use crate::pipeline::once::{EventKey, FoldKey};
use crate::pipeline::Emit;
use cdp_evidence::{Console, ConsoleLevel, Status};
use cdp_sanitize::SafeText;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::{Instant, SystemTime};

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Attached {
    session_id: String,
    target_info: Value,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ContextAux {
    frame_id: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ContextDescription {
    id: i64,
    name: String,
    aux_data: ContextAux,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ContextCreated {
    context: ContextDescription,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ContextDestroyed {
    execution_context_id: i64,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct BindingCalled {
    name: String,
    payload: String,
    execution_context_id: i64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct AgentMessage {
    t: String,
    kind: String,
}

impl Browser<'_> {
    pub(super) async fn event(&mut self, text: &str) {
        let Some(frame) = Frame::parse(text) else {
            return;
        };
        let Some(method) = frame.method() else {
            return;
        };
        match frame.session() {
            None => self.browser_event(method, &frame).await,
            Some(s) => {
                let s = s.to_owned();
                self.page_event(&s, method, &frame).await;
            }
        }
    }

    async fn browser_event(&mut self, method: &str, frame: &Frame<'_>) {
        match method {
            "Target.attachedToTarget" => {
                let Some(p) = frame.params::<Attached>() else {
                    return;
                };
                self.meta.learn(&p.target_info);
                let kind = p.target_info.get("type").and_then(Value::as_str);
                let target = p.target_info.get("targetId").and_then(Value::as_str);
                match (kind, target) {
                    (Some("page"), Some(target)) if self.pages.len() < self.opts.max_pages => {
                        self.attach(p.session_id, target.to_owned());
                    }
                    _ => {
                        // Not ours to watch (or too many pages): let it go.
                        let cdp = self.cdp.clone();
                        let t = self.opts.command_timeout;
                        tokio::spawn(async move {
                            let _ = cdp
                                .call(
                                    "Target.detachFromTarget",
                                    json!({ "sessionId": p.session_id }),
                                    None,
                                    t,
                                )
                                .await;
                        });
                    }
                }
            }
            "Target.detachedFromTarget" => {
                if let Some(p) = frame.params::<cdp::SessionRef>() {
                    self.detached(&p.session_id).await;
                }
            }
            "Target.targetCreated" | "Target.targetInfoChanged" => {
                if let Some(p) = frame.params::<cdp::TargetInfoChanged>() {
                    self.meta.learn(&p.target_info);
                }
            }
            "Target.targetDestroyed" => {
                if let Some(p) = frame.params::<cdp::TargetId>() {
                    self.meta.forget(&p.target_id);
                    self.ctx.capture.forget(&p.target_id);
                }
            }
            _ => {}
        }
    }

    fn attach(&mut self, session: String, target: String) {
        self.by_target.insert(target.clone(), session.clone());
        self.pages.insert(session.clone(), Page::new(target));
        let cdp = self.cdp.clone();
        let t = self.opts.command_timeout;
        let done = self.done_tx.clone();
        self.in_flight += 1;
        tokio::spawn(async move {
            let outcome = setup(&cdp, &session, t).await;
            let _ = done.send(Done::Setup { session, outcome }).await;
        });
    }

    pub(super) async fn detached(&mut self, session: &str) {
        let Some(mut page) = self.pages.remove(session) else {
            return;
        };
        self.by_target.remove(&page.target_id);
        self.ctx.once.uncover(&page.target_id);
        for req in page.verify_queue.drain(..) {
            let chars = req.chars;
            self.reply(VerifyReply {
                burst: req.burst,
                verification: verify::unread(chars, "the page closed before the reading"),
                kind: None,
                needs_literal: false,
            });
        }
        if let Some(want) = page.want.take() {
            let batch = want.group.into_iter().map(Emit::Record).collect();
            self.write(batch).await;
        }
    }

    async fn page_event(&mut self, session: &str, method: &str, frame: &Frame<'_>) {
        let at = SystemTime::now();
        let Some(page) = self.pages.get_mut(session) else {
            return;
        };
        let target = page.target_id.clone();
        match method {
            "Runtime.executionContextCreated" => {
                if let Some(p) = frame.params::<ContextCreated>() {
                    if p.context.name == WORLD && p.context.aux_data.frame_id == target {
                        tracing::trace!("observer: page agent world {}", p.context.id);
                        page.world = Some(p.context.id);
                    }
                }
            }
            "Runtime.executionContextDestroyed" => {
                if let Some(p) = frame.params::<ContextDestroyed>() {
                    if page.world == Some(p.execution_context_id) {
                        page.world = None;
                    }
                }
            }
            "Runtime.executionContextsCleared" => page.world = None,
            "Runtime.bindingCalled" => {
                let Some(p) = frame.params::<BindingCalled>() else {
                    return;
                };
                if p.name != BINDING || page.world != Some(p.execution_context_id) {
                    return;
                }
                let Ok(m) = serde_json::from_str::<AgentMessage>(&p.payload) else {
                    return;
                };
                if m.t == "focus" {
                    tracing::trace!(
                        "observer: focus {}",
                        verify::field_kind(&m.kind).map_or("?", |_| m.kind.as_str())
                    );
                    self.ctx
                        .capture
                        .focused_at(&target, verify::field_kind(&m.kind), at);
                }
            }
            "Runtime.consoleAPICalled" => {
                if let Some(p) = frame.params::<cdp::ConsoleApiCalled>() {
                    if let Some((console, key)) = from_api(&self.ctx.sanitizer, &target, &p) {
                        self.console(session, console, key, at).await;
                    }
                }
            }
            "Runtime.exceptionThrown" => {
                if let Some(p) = frame.params::<cdp::ExceptionThrown>() {
                    let (console, key) = from_exception(&self.ctx.sanitizer, &target, &p);
                    self.console(session, console, key, at).await;
                }
            }
            "Log.entryAdded" => {
                if let Some(p) = frame.params::<cdp::EntryAdded>() {
                    // The observer always has Network on: a failed request's Log line is a
                    // restatement of its network record.
                    if let Some((console, key)) = from_log(&self.ctx.sanitizer, &target, &p, true) {
                        self.console(session, console, key, at).await;
                    }
                }
            }
            "Network.requestWillBeSent" => {
                if let Some(p) = frame.params::<cdp::RequestWillBeSent>() {
                    if !page.requests.sent(&None, &p, at) {
                        self.ctx.dropped_one();
                    }
                }
            }
            "Network.responseReceived" => {
                if let Some(p) = frame.params::<cdp::ResponseReceived>() {
                    let failure = page.requests.response(&None, &p, &self.ctx.sanitizer);
                    if let Some(f) = failure {
                        self.network(session, &p.request_id, f, at).await;
                    }
                }
            }
            "Network.loadingFailed" => {
                if let Some(p) = frame.params::<cdp::LoadingFailed>() {
                    let failure = page.requests.failed(&None, &p, &self.ctx.sanitizer);
                    if let Some(f) = failure {
                        self.network(session, &p.request_id, f, at).await;
                    }
                }
            }
            "Network.loadingFinished" => {
                if let Some(p) = frame.params::<cdp::RequestId>() {
                    page.requests.finished(&None, &p.request_id);
                }
            }
            "Page.frameStartedNavigating" => {
                // How a main-frame navigation began decides what its commit does to the veto
                // (the main frame's id is the target id).
                if let Some(p) = frame.params::<cdp::FrameStartedNavigating>() {
                    if *p.frame_id == *target {
                        let kind = NavigationKind::parse(&p.navigation_type);
                        self.ctx
                            .capture
                            .navigation_started(&target, &p.loader_id, kind);
                    }
                }
            }
            "Page.frameNavigated" => {
                let Some(p) = frame.params::<cdp::FrameNavigated>() else {
                    return;
                };
                let Some((loader, commit)) = p.main_frame_commit() else {
                    return;
                };
                page.loading_since = Some(Instant::now());
                if !p.frame.url.is_empty() {
                    self.meta.navigated(&target, &p.frame.url);
                }
                self.ctx.capture.committed(&target, loader, commit, at);
            }
            "Page.loadEventFired" => {
                let was_loading = page.loading_since.take().is_some();
                if was_loading {
                    let delay = self.opts.after_load;
                    self.want(session, After::Navigation, delay, None).await;
                }
            }
            "Page.javascriptDialogOpening" => page.dialog = true,
            "Page.javascriptDialogClosed" => page.dialog = false,
            "Inspector.targetCrashed" => {
                page.crashed = true;
                page.world = None;
                let console = Console::new(
                    ConsoleLevel::Error,
                    SafeText::literal("the page crashed (its renderer process is gone)"),
                );
                let r = console_record(TOOL, console, at)
                    .target(self.meta.target(&target, &self.ctx.sanitizer));
                self.write(vec![Emit::Record(r)]).await;
            }
            "Inspector.targetReloadedAfterCrash" => page.crashed = false,
            _ => {}
        }
    }

    /// A console entry of the page behind `session`: recorded once per page; errors wait for
    /// their frame.
    async fn console(&mut self, session: &str, console: Console, key: EventKey, at: SystemTime) {
        if !self.ctx.once.first(key) {
            return;
        }
        let Some(target) = self.pages.get(session).map(|p| p.target_id.clone()) else {
            return;
        };
        let is_error = console_status(&console) == Status::Error;
        let fold = FoldKey::console(&target, &console);
        let r = console_record(TOOL, console, at)
            .target(self.meta.target(&target, &self.ctx.sanitizer));
        // A repeat is counted, not recorded, and takes no frame.
        if !self.ctx.once.fold(fold, &r, at) {
            return;
        }
        if is_error {
            let delay = self.opts.failure_debounce;
            self.want(session, After::Failure, delay, Some(r)).await;
        } else {
            self.write(vec![Emit::Record(r)]).await;
        }
    }

    async fn network(
        &mut self,
        session: &str,
        request_id: &str,
        failure: crate::pipeline::observer::network::Failure,
        at: SystemTime,
    ) {
        let Some(target) = self.pages.get(session).map(|p| p.target_id.clone()) else {
            return;
        };
        if !self.ctx.once.first(EventKey::request(&target, request_id)) {
            return;
        }
        let fold = FoldKey::network(&target, &failure.0);
        let r = network_record(TOOL, failure, at)
            .target(self.meta.target(&target, &self.ctx.sanitizer));
        if !self.ctx.once.fold(fold, &r, at) {
            return;
        }
        tracing::trace!("observer: a failed request; it waits for a frame");
        let delay = self.opts.failure_debounce;
        self.want(session, After::Failure, delay, Some(r)).await;
    }
}
