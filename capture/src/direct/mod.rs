//! The direct reader: the relay's own eyes on the browser.
//!
//! Owns a CDP connection of the relay's own, dialled upstream to the browser endpoint (never
//! through the relay's listener): it auto-attaches (flattened) to every page, enables on its own
//! sessions what evidence needs (`Page`, `Runtime`, `Network`, `Log`), installs a page agent in an
//! isolated world (`agent.js`), and then
//!
//! - records what pages report — console errors, exceptions, `Log` errors, failed requests — once
//!   per page: for the pages it covers, the traffic reader leaves them out;
//! - takes frames after navigations, clicks and failures (debounced, scaled down, within the
//!   capture policy) and links failure records to the frame taken after them;
//! - keeps the capture policy's "which field has focus" current;
//! - verifies, inside the page, whether a typing burst's text landed (`verify.rs`);
//! - reads, for a tool call whose text no key carried, which fields were set by script and
//!   whether they hold it (`fields.rs`).
//!
//! What it reads on its connection is a synchronous state machine (`sessions.rs`) feeding the
//! page model both observers share ([`Pages`]), through the same handler as the passive
//! observer; the page model decides what is recorded and which failures wait for a frame. It is
//! a second producer of the run: it writes through the pipeline's [`RunWriter`].
//!
//! It must never touch a client's connection or frames (it has its own socket and ids), never
//! make the browser wait for it (`waitForDebuggerOnStart: false`, no `runIfWaitingForDebugger`,
//! no dialog handling), never retype or change a page, never let typed text leave the relay
//! except as an argument back into the page it was typed into, and never hang: every command has
//! a timeout, every table a bound. A lost browser (closed, crashed, restarted on the same port)
//! is reconnected with backoff; meanwhile the traffic reader records page events again.

mod browser;
mod conn;
pub(crate) mod fields;
mod frames;
mod left;
pub(crate) mod locate;
pub(crate) mod sessions;
pub(crate) mod verify;

use crate::pages::Pages;
use crate::{Emit, RunWriter};
use cdp_sanitize::Sanitizer;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use verify::{VerifyReply, VerifyRequest};

/// Where the browser the direct reader watches is: the owner knows (the relay asks the
/// browser's `/json/version` with its proxy's client). Asked again at every reconnect.
pub trait BrowserEndpoint: Send + Sync + 'static {
    /// `host:port` to dial.
    fn dial(&self) -> String;
    /// The Host header the browser accepts (Chrome: an IP literal or localhost).
    fn host(&self) -> String;
    /// The browser websocket's path (`/devtools/browser/<id>`), or why it is not known.
    fn websocket_path(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send + '_>>;
}

/// The tool name on the direct reader's records.
const TOOL: &str = "observer";
/// The isolated world the page agent runs in.
const WORLD: &str = "cdp-relay-observer";
/// The binding the agent reports through; it exists only in [`WORLD`].
const BINDING: &str = "__cdpRelayObserve";
/// The page agent.
const AGENT_SOURCE: &str = include_str!("agent.js");

/// Direct reader knobs. Tests build it directly.
#[derive(Debug, Clone)]
pub struct DirectOptions {
    /// Every command the observer sends gets an answer within this, or is given up. By
    /// default, 5 s.
    pub command_timeout: Duration,
    /// A reading of a typed field gets this long. By default, 3 s.
    pub verify_timeout: Duration,
    /// Failures within this window share one frame. By default, 250 ms.
    pub failure_debounce: Duration,
    /// A frame after a click waits this long for the page to react. By default, 300 ms.
    pub after_click: Duration,
    /// A frame after a navigation is taken this long after its load event. By default, 100 ms.
    pub after_load: Duration,
    /// A navigation whose load never fires gets its frame after this. By default, 3 s.
    pub load_wait: Duration,
    /// At most one frame per page per this interval. By default, 1 s.
    pub frame_cooldown: Duration,
    /// Frame size and quality. By default, at most 640 CSS pixels wide, JPEG quality 60.
    pub max_frame_width: u32,
    /// JPEG quality of frames, 1–100. By default, 60.
    pub jpeg_quality: u8,
    /// Pages watched at once. By default, 256.
    pub max_pages: usize,
    /// At stop, how long frames in flight may still take. By default, 2 s.
    pub stop_grace: Duration,
    /// Reconnection backoff ceiling. By default, 5 s.
    pub max_backoff: Duration,
}

impl Default for DirectOptions {
    fn default() -> Self {
        DirectOptions {
            command_timeout: Duration::from_secs(5),
            verify_timeout: Duration::from_secs(3),
            failure_debounce: Duration::from_millis(250),
            after_click: Duration::from_millis(300),
            after_load: Duration::from_millis(100),
            load_wait: Duration::from_secs(3),
            frame_cooldown: Duration::from_secs(1),
            max_frame_width: 640,
            jpeg_quality: 60,
            max_pages: 256,
            stop_grace: Duration::from_secs(2),
            max_backoff: Duration::from_secs(5),
        }
    }
}

impl DirectOptions {
    fn frame_size(&self) -> frames::FrameSize {
        frames::FrameSize {
            max_width: self.max_frame_width.max(16),
            quality: self.jpeg_quality.clamp(1, 100),
        }
    }
}

/// What the observer shares with the rest of the pipeline.
pub(crate) struct Ctx {
    pub(crate) sanitizer: Arc<Sanitizer>,
    pub(crate) writer: RunWriter,
    /// The page model both observers feed.
    pub(crate) pages: Arc<Pages>,
    /// The run's agent tool calls, told of each failure as it is read.
    pub(crate) calls: crate::calls::ToolCalls,
    pub(crate) verify_rx: mpsc::Receiver<VerifyRequest>,
    pub(crate) verify_tx: mpsc::Sender<VerifyReply>,
    /// Field readings a producer of tool calls asks for.
    pub(crate) fields_rx: mpsc::Receiver<fields::FieldRequest>,
    pub(crate) dropped: Arc<AtomicU64>,
    /// Events are handled only once the typing forwarded before them is registered.
    pub(crate) order: Arc<cdp_relay_tap::order::Order>,
}

impl Ctx {
    fn dropped_one(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// Nothing is covered any more (the connection is gone): failures still waiting for a
    /// frame are written without one.
    async fn let_go_of_all(&self) {
        let batch: Vec<Emit> = self
            .pages
            .unobserve_all()
            .into_iter()
            .flat_map(|w| w.group)
            .map(Emit::Record)
            .collect();
        if !batch.is_empty() {
            self.writer.send(batch).await;
        }
    }
}

/// A running direct reader. Stop it with [`Direct::stop`].
pub(crate) struct Direct {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    dropped: Arc<AtomicU64>,
}

impl Direct {
    /// Starts observing the browser at `browser` (needs a tokio runtime).
    pub(crate) fn spawn(
        ctx: Ctx,
        browser: Arc<dyn BrowserEndpoint>,
        opts: DirectOptions,
    ) -> Direct {
        let (stop, stopped) = watch::channel(false);
        let dropped = ctx.dropped.clone();
        let task = tokio::spawn(supervise(ctx, browser, opts, stopped));
        Direct {
            stop,
            task,
            dropped,
        }
    }

    /// Stops: frames in flight get a short grace, held failures are written. Returns the
    /// evidence the observer had to drop.
    pub(crate) async fn stop(self) -> u64 {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Connects, observes until the connection ends, reconnects with backoff — until stopped.
async fn supervise(
    mut ctx: Ctx,
    browser: Arc<dyn BrowserEndpoint>,
    opts: DirectOptions,
    mut stop: watch::Receiver<bool>,
) {
    let first = Duration::from_millis(250);
    let mut backoff = first;
    let mut warned = false;
    loop {
        if *stop.borrow() {
            return;
        }
        let connected = conn::Cdp::connect(browser.as_ref(), ctx.dropped.clone()).await;
        match connected {
            Ok((cdp, events)) => {
                backoff = first;
                warned = false;
                let ended = browser::Browser::new(&mut ctx, &opts, cdp, events)
                    .run(&mut stop)
                    .await;
                ctx.let_go_of_all().await;
                if ended == browser::Ended::Stopped {
                    return;
                }
                tracing::info!("observer: lost the browser connection; reconnecting");
            }
            Err(e) => {
                if !warned {
                    warned = true;
                    tracing::warn!(
                        "observer: cannot connect to the browser ({}); retrying",
                        ctx.sanitizer.error(&e)
                    );
                }
            }
        }
        // Wait before the next try; readings asked for meanwhile are answered at once.
        let until = tokio::time::Instant::now() + backoff;
        loop {
            tokio::select! {
                _ = stop.changed() => return,
                _ = tokio::time::sleep_until(until) => break,
                Some(req) = ctx.verify_rx.recv() => {
                    let _ = ctx.verify_tx.try_send(VerifyReply::unread(
                        req.burst,
                        req.chars,
                        "the observer is not connected to the browser",
                    ));
                }
                // Nothing read: no page answered.
                Some(req) = ctx.fields_rx.recv() => {
                    let _ = req.reply.send(fields::FieldReading::default());
                }
            }
        }
        backoff = (backoff * 2).min(opts.max_backoff);
    }
}
