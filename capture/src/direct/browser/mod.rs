//! One connection's life: auto-attach to pages, enable what evidence needs on the observer's own
//! sessions, record what pages report (once per page), schedule and take frames, answer
//! verifications. A single task owns this state; the slow parts (setup, frames, readings) run in
//! tasks of their own and report back on a channel, so a page that hangs never stalls the
//! others.

mod fields;
mod readings;
mod shots;

use super::conn::{CallError, Cdp, Events, Incoming};
use super::frames::{NoFrame, Shot};
use super::sessions::Sessions;
use super::verify::Reading;
use super::{Ctx, DirectOptions, AGENT_SOURCE, BINDING, WORLD};
use crate::cdp::methods::{Call, CommandMethod};
use crate::pages::{FrameTiming, Want};
use crate::Emit;
use serde_json::json;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// Events handled per wait for the evidence order.
const EVENT_BATCH: usize = 256;

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
        reading: Reading,
    },
    /// A `landed` verdict whose field was read again.
    Rechecked(super::verify::VerifyReply),
}

pub(super) struct Browser<'a> {
    ctx: &'a mut Ctx,
    opts: &'a DirectOptions,
    cdp: Cdp,
    events: Events,
    /// The observer's pages, by session: events in, work out.
    sessions: Sessions,
    done_tx: mpsc::Sender<Done>,
    done_rx: mpsc::Receiver<Done>,
    in_flight: usize,
    draining: bool,
    /// Cancels frames still in flight when the stop's grace runs out (a hidden page may never
    /// deliver one), so the failures waiting for them are written without.
    give_up: CancellationToken,
}

impl<'a> Browser<'a> {
    pub(super) fn new(
        ctx: &'a mut Ctx,
        opts: &'a DirectOptions,
        cdp: Cdp,
        events: Events,
    ) -> Browser<'a> {
        let (done_tx, done_rx) = mpsc::channel(256);
        ctx.pages.start_observing(FrameTiming {
            failure_debounce: opts.failure_debounce,
            after_click: opts.after_click,
            cooldown: opts.frame_cooldown,
        });
        Browser {
            ctx,
            opts,
            cdp,
            events,
            sessions: Sessions::new(opts.max_pages, opts.after_load),
            done_tx,
            done_rx,
            in_flight: 0,
            draining: false,
            give_up: CancellationToken::new(),
        }
    }

    /// Runs until the pipeline stops or the browser goes away.
    pub(super) async fn run(mut self, stop: &mut watch::Receiver<bool>) -> Ended {
        let t = self.opts.command_timeout;
        let discover = self
            .cdp
            .call(
                Call::TargetSetDiscoverTargets.name(),
                json!({ "discover": true }),
                None,
                t,
            )
            .await;
        let attach = self
            .cdp
            .call(
                Call::TargetSetAutoAttach.name(),
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
                    Some(text) => self.received(text).await,
                    None => {
                        self.lost().await;
                        return Ended::Lost;
                    }
                },
                // The traffic reader wants a frame (a failure, a click): look again.
                _ = self.ctx.pages.wanted().notified() => {}
                Some(req) = self.ctx.verify_rx.recv() => {
                    self.verify(req);
                    self.flush().await;
                }
                Some(req) = self.ctx.fields_rx.recv() => self.read_fields(req),
                Some(done) = self.done_rx.recv() => self.done(done).await,
                _ = tokio::time::sleep_until(next.into()) => {
                    self.readings_due();
                    self.due().await;
                }
            }
        }
    }

    /// Events as they arrive, with those queued behind `first`: handled (and sanitized) only
    /// once every keystroke forwarded before they arrived is registered (`pipeline/order.rs`),
    /// since the page may be echoing it. What carries no page text — the page agent's world and
    /// its focus reports — is taken at once, also while waiting: the traffic reader types a
    /// keystroke's burst by the focus reported before it, and that report must not queue behind
    /// the very keystrokes it describes. Other events that arrive during the wait may echo
    /// keystrokes forwarded after it began: they wait for a turn of their own.
    async fn received(&mut self, first: Incoming) {
        let mut batch = Vec::with_capacity(EVENT_BATCH);
        self.arrived(first, &mut batch);
        while batch.len() < EVENT_BATCH {
            match self.events.try_recv() {
                Some(event) => self.arrived(event, &mut batch),
                None => break,
            }
        }
        while !batch.is_empty() {
            let mut next = Vec::new();
            let order = self.ctx.order.clone();
            // Its bound is taken when first polled: after every event in `batch` arrived.
            let caught_up = order.caught_up();
            tokio::pin!(caught_up);
            loop {
                tokio::select! {
                    biased;
                    () = &mut caught_up => break,
                    Some(event) = self.events.recv(), if next.len() < EVENT_BATCH => {
                        self.arrived(event, &mut next);
                    }
                }
            }
            for event in batch {
                self.sessions
                    .event(&self.ctx.pages, event.text(), event.at());
            }
            self.flush().await;
            batch = next;
        }
        // The agent's reports of where clicks and typing went are bookkeeping too: on their way.
        self.flush().await;
    }

    /// Takes `event` now if it is page-agent bookkeeping, else queues it in `batch`.
    fn arrived(&mut self, event: Incoming, batch: &mut Vec<Incoming>) {
        if !self
            .sessions
            .bookkeeping(&self.ctx.pages, event.text(), event.at())
        {
            batch.push(event);
        }
    }

    /// Does what the sessions asked for: set up pages, let others go, write records, answer
    /// readings.
    async fn flush(&mut self) {
        let work = self.sessions.take();
        for session in work.setup {
            let target = self
                .sessions
                .pages
                .get(&session)
                .map(|p| p.target_id.clone())
                .unwrap_or_default();
            let cdp = self.cdp.clone();
            let t = self.opts.command_timeout;
            let done = self.done_tx.clone();
            self.in_flight += 1;
            tokio::spawn(async move {
                let outcome = setup(&cdp, &session, &target, t).await;
                let _ = done.send(Done::Setup { session, outcome }).await;
            });
        }
        for session in work.let_go {
            let cdp = self.cdp.clone();
            let t = self.opts.command_timeout;
            tokio::spawn(async move {
                let _ = cdp
                    .call(
                        Call::TargetDetachFromTarget.name(),
                        json!({ "sessionId": session }),
                        None,
                        t,
                    )
                    .await;
            });
        }
        for reply in work.replies {
            self.reply(reply);
        }
        for session in work.kick {
            self.next_verify(&session);
        }
        for session in work.ensure {
            let Some(target) = self
                .sessions
                .pages
                .get(&session)
                .map(|p| p.target_id.clone())
            else {
                continue;
            };
            let cdp = self.cdp.clone();
            let t = self.opts.command_timeout;
            tokio::spawn(async move { ensure_agent(&cdp, &session, &target, t).await });
        }
        for _ in 0..work.dropped {
            self.ctx.dropped_one();
        }
        for failure in &work.failures {
            self.ctx.calls.note_failure(failure);
        }
        self.write(work.emits).await;
    }

    async fn write(&self, batch: Vec<Emit>) {
        if !batch.is_empty() {
            self.ctx.writer.send(batch).await;
        }
    }

    // ---- completions, draining ---------------------------------------------------------

    async fn done(&mut self, done: Done) {
        self.in_flight = self.in_flight.saturating_sub(1);
        match done {
            Done::Setup { session, outcome } => match outcome {
                Ok(()) => self.sessions.ready(&self.ctx.pages, &session),
                Err(e) => {
                    tracing::debug!(
                        "observer: could not set up a page session: {}",
                        self.ctx.sanitizer.error(&e.reason())
                    );
                }
            },
            Done::Frame {
                session,
                want,
                outcome,
                started,
            } => self.frame_done(&session, want, outcome, started).await,
            Done::Verified { session, reading } => {
                if let Some(page) = self.sessions.pages.get_mut(&session) {
                    page.verifying = false;
                }
                self.read(&session, reading);
                self.next_verify(&session);
                self.flush().await;
            }
            Done::Rechecked(reply) => self.reply(reply),
        }
    }

    /// The pipeline stops: frames wanted now are taken at once (the grace period bounds it);
    /// failures still waiting are written without one.
    async fn drain(&mut self) {
        self.draining = true;
        self.catch_up().await;
        self.ctx.pages.all_due(Instant::now());
        self.due().await;
        self.settle(self.opts.stop_grace).await;
        if self.in_flight > 0 {
            // Frames still out report back at once, with the failures that waited for them.
            self.give_up.cancel();
            self.settle(Duration::from_millis(500)).await;
        }
        self.lost().await;
    }

    /// Handles completions until nothing is in flight or `within` has passed.
    async fn settle(&mut self, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        while self.in_flight > 0 {
            match tokio::time::timeout_at(deadline, self.done_rx.recv()).await {
                Ok(Some(done)) => self.done(done).await,
                _ => break,
            }
        }
    }

    /// What pages reported just before the stop may still be on the wire: a round trip on every
    /// page session (its answer comes after the events sent before it) brings it in, bounded by
    /// the grace period. Events keep being handled meanwhile so the queue never fills.
    async fn catch_up(&mut self) {
        let cdp = self.cdp.clone();
        let t = self.opts.stop_grace.min(self.opts.command_timeout);
        let sessions: Vec<String> = self
            .sessions
            .pages
            .iter()
            .filter(|(_, p)| p.ready)
            .map(|(s, _)| s.clone())
            .collect();
        let sync = async move {
            let calls = sessions
                .iter()
                .map(|s| cdp.call(Call::RuntimeGetIsolateId.name(), json!({}), Some(s), t));
            futures_util::future::join_all(calls).await;
        };
        tokio::pin!(sync);
        loop {
            tokio::select! {
                biased;
                event = self.events.recv() => match event {
                    Some(text) => self.received(text).await,
                    None => break,
                },
                _ = &mut sync => break,
            }
        }
        while let Some(text) = self.events.try_recv() {
            self.received(text).await;
        }
    }

    /// The connection is gone: nothing is covered any more; held failures are written.
    async fn lost(&mut self) {
        self.sessions.lost(&self.ctx.pages);
        self.flush().await;
    }
}

/// Enables on the observer's own session what evidence needs, agent first so its world exists
/// when `Runtime.enable` reports contexts.
async fn setup(cdp: &Cdp, session: &str, target: &str, t: Duration) -> Result<(), CallError> {
    let s = Some(session);
    // Sent back to back (a session answers in order): one round trip, so a new page is covered
    // before its first request in all but the tightest races.
    let (binding, page, agent, runtime, network, log) = tokio::join!(
        cdp.call(
            Call::RuntimeAddBinding.name(),
            json!({ "name": BINDING, "executionContextName": WORLD }),
            s,
            t,
        ),
        cdp.call(Call::PageEnable.name(), json!({}), s, t),
        cdp.call(
            Call::PageAddScriptToEvaluateOnNewDocument.name(),
            json!({ "source": AGENT_SOURCE, "worldName": WORLD, "runImmediately": true }),
            s,
            t,
        ),
        cdp.call(Call::RuntimeEnable.name(), json!({}), s, t),
        cdp.call(Call::NetworkEnable.name(), json!({}), s, t),
        cdp.call(Call::LogEnable.name(), json!({}), s, t),
    );
    binding?;
    page?;
    agent?;
    runtime?;
    network?;
    log?;
    ensure_agent(cdp, session, target, t).await;
    Ok(())
}

/// Makes sure the agent runs in the current main-frame document of `target`. A navigation that
/// started before the agent's script was registered commits a document the script misses (a
/// page opened and sent to a site at once had no agent in 1 of 4 runs), so this runs after the
/// setup and after every main-frame commit: the agent is started in its world of the same name,
/// where it runs once (a second start only repeats its focus report).
async fn ensure_agent(cdp: &Cdp, session: &str, target: &str, t: Duration) {
    let s = Some(session);
    let world = cdp
        .call(
            Call::PageCreateIsolatedWorld.name(),
            json!({ "frameId": target, "worldName": WORLD }),
            s,
            t,
        )
        .await;
    if let Some(id) = world.ok().and_then(|w| {
        w.get("executionContextId")
            .and_then(serde_json::Value::as_i64)
    }) {
        let _ = cdp
            .call(
                CommandMethod::RuntimeEvaluate.name(),
                json!({ "expression": AGENT_SOURCE, "contextId": id, "silent": true }),
                s,
                t,
            )
            .await;
    }
}
