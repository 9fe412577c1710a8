//! One connection's life: auto-attach to pages, enable what evidence needs on the observer's own
//! sessions, record what pages report (once per page), schedule and take frames, answer
//! verifications. A single task owns this state; the slow parts (setup, frames, readings) run in
//! tasks of their own and report back on a channel, so a page that hangs never stalls the
//! others.

mod readings;
mod shots;

use super::conn::{CallError, Cdp};
use super::frames::{After, NoFrame, Shot, Want};
use super::page::{Meta, Page};
use super::verify::{self, VerifyReply};
use super::{ActiveOptions, Ctx, AGENT_SOURCE, BINDING, TOOL, WORLD};
use crate::pipeline::observer::console::{
    console_record, console_status, from_api, from_exception, from_log, network_record,
};
use crate::pipeline::observer::{cdp, frame::Frame};
use crate::pipeline::once::EventKey;
use crate::pipeline::Emit;
use cdp_evidence::{Console, ConsoleLevel, Status};
use cdp_sanitize::SafeText;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{broadcast, mpsc, watch};

/// How a connection ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Ended {
    /// The pipeline stopped.
    Stopped,
    /// The browser went away (closed, crashed, restarted).
    Lost,
}

/// Slow work finished.
pub(super) enum Done {
    Setup {
        session: String,
        outcome: Result<(), CallError>,
    },
    Frame {
        session: String,
        want: Want,
        outcome: Result<Shot, NoFrame>,
        started: SystemTime,
    },
    Verified {
        session: String,
        reply: VerifyReply,
    },
}

pub(super) struct Browser<'a> {
    ctx: &'a mut Ctx,
    opts: &'a ActiveOptions,
    cdp: Cdp,
    events: mpsc::Receiver<String>,
    pages: HashMap<String, Page>,
    by_target: HashMap<String, String>,
    meta: Meta,
    done_tx: mpsc::Sender<Done>,
    done_rx: mpsc::Receiver<Done>,
    in_flight: usize,
    draining: bool,
}

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

impl<'a> Browser<'a> {
    pub(super) fn new(
        ctx: &'a mut Ctx,
        opts: &'a ActiveOptions,
        cdp: Cdp,
        events: mpsc::Receiver<String>,
    ) -> Browser<'a> {
        let (done_tx, done_rx) = mpsc::channel(256);
        Browser {
            ctx,
            opts,
            cdp,
            events,
            pages: HashMap::new(),
            by_target: HashMap::new(),
            meta: Meta::default(),
            done_tx,
            done_rx,
            in_flight: 0,
            draining: false,
        }
    }

    /// Runs until the pipeline stops or the browser goes away.
    pub(super) async fn run(mut self, stop: &mut watch::Receiver<bool>) -> Ended {
        let t = self.opts.command_timeout;
        let discover = self
            .cdp
            .call(
                "Target.setDiscoverTargets",
                json!({ "discover": true }),
                None,
                t,
            )
            .await;
        let attach = self
            .cdp
            .call(
                "Target.setAutoAttach",
                json!({
                    "autoAttach": true,
                    "waitForDebuggerOnStart": false,
                    "flatten": true,
                    "filter": [{ "type": "page", "exclude": false }],
                }),
                None,
                t,
            )
            .await;
        if let Err(e) = discover.and(attach) {
            tracing::debug!(
                "observer: cannot auto-attach: {}",
                self.ctx.sanitizer.error(&e.reason())
            );
            return Ended::Lost;
        }
        tracing::debug!("observer: attached to the browser");
        loop {
            let next = self.next_due();
            tokio::select! {
                _ = stop.changed() => {
                    self.drain().await;
                    return Ended::Stopped;
                }
                event = self.events.recv() => match event {
                    Some(text) => self.event(&text).await,
                    None => {
                        self.lost().await;
                        return Ended::Lost;
                    }
                },
                trigger = self.ctx.triggers.recv() => match trigger {
                    Ok(t) => self.trigger(t),
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => {}
                },
                Some(req) = self.ctx.verify_rx.recv() => self.verify(req),
                Some((target, record)) = self.ctx.failures_rx.recv() => {
                    self.passive_failure(&target, record).await;
                }
                Some(done) = self.done_rx.recv() => self.done(done).await,
                _ = tokio::time::sleep_until(next.into()) => self.due().await,
            }
        }
    }

    async fn write(&self, batch: Vec<Emit>) {
        if !batch.is_empty() {
            self.ctx.writer.send(batch).await;
        }
    }

    // ---- events ------------------------------------------------------------------------

    async fn event(&mut self, text: &str) {
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

    async fn detached(&mut self, session: &str) {
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
                        .focused(&target, verify::field_kind(&m.kind));
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
            "Page.frameNavigated" => {
                let Some(p) = frame.params::<cdp::FrameNavigated>() else {
                    return;
                };
                if p.frame.parent_id.is_some() {
                    return;
                }
                page.loading_since = Some(Instant::now());
                if !p.frame.url.is_empty() {
                    self.meta.navigated(&target, &p.frame.url);
                }
                self.ctx.capture.navigated(&target);
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
        let r = console_record(TOOL, console, at)
            .target(self.meta.target(&target, &self.ctx.sanitizer));
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
        let r = network_record(TOOL, failure, at)
            .target(self.meta.target(&target, &self.ctx.sanitizer));
        let delay = self.opts.failure_debounce;
        self.want(session, After::Failure, delay, Some(r)).await;
    }

    // ---- completions, draining ---------------------------------------------------------

    async fn done(&mut self, done: Done) {
        self.in_flight = self.in_flight.saturating_sub(1);
        match done {
            Done::Setup { session, outcome } => {
                let Some(page) = self.pages.get_mut(&session) else {
                    return;
                };
                match outcome {
                    Ok(()) => {
                        page.ready = true;
                        self.ctx.once.cover(&page.target_id);
                    }
                    Err(e) => {
                        tracing::debug!(
                            "observer: could not set up a page session: {}",
                            self.ctx.sanitizer.error(&e.reason())
                        );
                    }
                }
            }
            Done::Frame {
                session,
                want,
                outcome,
                started,
            } => self.frame_done(&session, want, outcome, started).await,
            Done::Verified { session, reply } => {
                if let Some(page) = self.pages.get_mut(&session) {
                    page.verifying = false;
                }
                self.reply(reply);
                self.next_verify(&session);
            }
        }
    }

    /// The pipeline stops: frames wanted now are taken at once (the grace period bounds it);
    /// failures still waiting are written without one.
    async fn drain(&mut self) {
        self.draining = true;
        self.catch_up().await;
        while let Ok((target, record)) = self.ctx.failures_rx.try_recv() {
            self.passive_failure(&target, record).await;
        }
        let now = Instant::now();
        for page in self.pages.values_mut() {
            if let Some(w) = page.want.as_mut() {
                w.due = now;
            }
        }
        self.due().await;
        let deadline = tokio::time::Instant::now() + self.opts.stop_grace;
        while self.in_flight > 0 {
            match tokio::time::timeout_at(deadline, self.done_rx.recv()).await {
                Ok(Some(done)) => self.done(done).await,
                _ => break,
            }
        }
        self.lost().await;
    }

    /// What pages reported just before the stop may still be on the wire: a round trip on every
    /// page session (its answer comes after the events sent before it) brings it in, bounded by
    /// the grace period. Events keep being handled meanwhile so the queue never fills.
    async fn catch_up(&mut self) {
        let cdp = self.cdp.clone();
        let t = self.opts.stop_grace.min(self.opts.command_timeout);
        let sessions: Vec<String> = self
            .pages
            .iter()
            .filter(|(_, p)| p.ready)
            .map(|(s, _)| s.clone())
            .collect();
        let sync = async move {
            let calls = sessions
                .iter()
                .map(|s| cdp.call("Runtime.getIsolateId", json!({}), Some(s), t));
            futures_util::future::join_all(calls).await;
        };
        tokio::pin!(sync);
        loop {
            tokio::select! {
                biased;
                event = self.events.recv() => match event {
                    Some(text) => self.event(&text).await,
                    None => break,
                },
                _ = &mut sync => break,
            }
        }
        while let Ok(text) = self.events.try_recv() {
            self.event(&text).await;
        }
    }

    /// The connection is gone: nothing is covered any more; held failures are written.
    async fn lost(&mut self) {
        self.ctx.once.uncover_all();
        let sessions: Vec<String> = self.pages.keys().cloned().collect();
        for s in sessions {
            self.detached(&s).await;
        }
    }
}

/// Enables on the observer's own session what evidence needs, agent first so its world exists
/// when `Runtime.enable` reports contexts.
async fn setup(cdp: &Cdp, session: &str, t: Duration) -> Result<(), CallError> {
    let s = Some(session);
    // Sent back to back (a session answers in order): one round trip, so a new page is covered
    // before its first request in all but the tightest races.
    let (binding, page, agent, runtime, network, log) = tokio::join!(
        cdp.call(
            "Runtime.addBinding",
            json!({ "name": BINDING, "executionContextName": WORLD }),
            s,
            t,
        ),
        cdp.call("Page.enable", json!({}), s, t),
        cdp.call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": AGENT_SOURCE, "worldName": WORLD, "runImmediately": true }),
            s,
            t,
        ),
        cdp.call("Runtime.enable", json!({}), s, t),
        cdp.call("Network.enable", json!({}), s, t),
        cdp.call("Log.enable", json!({}), s, t),
    );
    binding?;
    page?;
    agent?;
    runtime?;
    network?;
    log?;
    Ok(())
}
