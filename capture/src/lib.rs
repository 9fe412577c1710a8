//! cdp-capture: the evidence pipeline. Everything the relay does with copies of the traffic,
//! off the hot path: it never touches a socket a client uses, never delays or alters a frame,
//! and persists only what went through the run's sanitizer.
//!
//! ```text
//! proxy tap ─▶ traffic/ (the traffic reader and its thread) ─┐
//!                                                            ├─▶ pages/ ─▶ writer/ ─▶ journal
//! browser  ◀─▶ direct/  (the direct reader: a CDP connection ┘    (the page model, with
//!              of the relay's own, `--observe`)                    veto.rs and dedup.rs)
//! ```
//!
//! - `traffic/`: reads the tap's copies of what clients and the browser said (commands, typing,
//!   failures, screenshots); `traffic/thread.rs` is its thread, in the idle scheduling class.
//! - `direct/`: the relay's own connection, a second producer of the same run: page events for
//!   clients that enable nothing, frames around failures, input types, typed-text verdicts.
//! - `cdp/`: the one table of CDP methods and shapes both readers read, and the one CDP client
//!   (the direct reader's, the demo's and the tests').
//! - `pages/`: the one page model both readers feed, and the decisions made there for both:
//!   the screenshot veto (`pages/veto.rs`), each page event once (`pages/dedup.rs`), a
//!   failure's way to a frame.
//! - `writer/`: the one thread that writes the run; `calls.rs`: agent tool calls records link to.
//!
//! The owner (the `cdp-relay` crate) starts it ([`Pipeline::start`] with [`Settings`] and
//! [`Hooks`], then [`Pipeline::observe`] with a [`BrowserEndpoint`] once the browser is known) and stops it
//! ([`Pipeline::finish`]: drain the traffic reader → stop the direct one → finalize → the
//! owner's step, rendering the report → prune). This crate names no uploader, report renderer,
//! HTTP server or MCP type, nor the proxy: what happens around a run's end is the owner's,
//! through [`Hooks`], and where the browser is, through [`BrowserEndpoint`].

#![forbid(unsafe_code)]

pub mod calls;
pub(crate) mod cdp;
pub use cdp::client;
pub(crate) mod direct;
pub mod facts;
pub(crate) mod pages;
pub(crate) mod traffic;
mod trim;
pub mod writer;

/// What the fuzz targets drive (`fuzz/fuzz_targets/observer_frames.rs`): the traffic reader
/// on a page model, and the target's reading of its input. The `fuzzing` feature only.
#[cfg(feature = "fuzzing")]
pub mod fuzzing {
    pub use crate::pages::Pages;
    pub use crate::traffic::fuzz::feed;
    pub use crate::traffic::{TrafficOptions, TrafficReader};
}

use direct::{Direct, DirectOptions};

use calls::ToolCalls;
use cdp_evidence::{EvidenceConfig, RetentionHold, Store};
use cdp_relay_tap::order::Order;
use cdp_relay_tap::tap::Tap;
use cdp_sanitize::{Sanitizer, SecretError};
pub use direct::fields::{Control, FieldQuery, FieldReading, ScriptedField};
pub use direct::BrowserEndpoint;
pub use direct::DirectOptions as ObserveOptions;
use pages::Pages;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
pub use traffic::typed::NAMED_KEYS;
use traffic::{TrafficOptions, TrafficReader};
pub use writer::{Emit, Finalized, NewArtifact, RunRef, RunWriter, WriteObserver, WriterSummary};

/// What a pipeline records and where (the relay's evidence settings, less what only the relay
/// does with them).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The evidence root.
    pub root: PathBuf,
    /// Join this session's active run (shared with other producers); `None`: a new session.
    pub session: Option<String>,
    /// Keep screenshots as artifacts (the direct reader's own frames too).
    pub screenshots: bool,
    /// Run the direct reader: the relay's own CDP connection to the browser.
    pub observe: bool,
    /// Explicit secrets, by name, registered before anything is recorded.
    pub secrets: Vec<(String, SecretValue)>,
    /// Journal bytes a new run may hold (fixed in its manifest).
    pub journal_budget_bytes: u64,
}

impl Settings {
    /// Defaults under `root`: a new session, screenshots kept, no direct reader, no explicit
    /// secrets, the default journal budget.
    pub fn at(root: impl Into<PathBuf>) -> Settings {
        Settings {
            root: root.into(),
            session: None,
            screenshots: true,
            observe: false,
            secrets: Vec::new(),
            journal_budget_bytes: cdp_evidence::DEFAULT_JOURNAL_BUDGET_BYTES,
        }
    }
}

/// A secret literal. Its `Debug` never prints the value.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    /// Wraps a literal.
    pub fn new(literal: String) -> SecretValue {
        SecretValue(literal)
    }

    /// The literal, for the sanitizer that registers it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretValue(..)")
    }
}

/// What the pipeline's owner decides about a run's end, which the pipeline cannot know: which
/// runs retention must keep (an uploader that has not dealt with them) and what follows a
/// finalized run (its report rendered). Called on the writer thread, after everything was
/// written.
#[derive(Clone, Default)]
pub struct Hooks {
    /// Runs retention must not prune.
    pub hold: Option<Arc<dyn RetentionHold>>,
    /// Called with a run's directory once it is finalized, before retention prunes.
    pub finalized: Option<Finalized>,
    /// Told every batch once it is in the journal, and every run's end (spans of the run).
    pub written: Option<Arc<dyn WriteObserver>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("hold", &self.hold)
            .field("finalized", &self.finalized.is_some())
            .field("written", &self.written.is_some())
            .finish()
    }
}

/// Why a pipeline could not start. One line each; the relay forwards without evidence.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An explicit secret was refused (its name is said, never its value).
    #[error("--secret-env {name}: {source}")]
    Secret {
        /// The secret's name.
        name: String,
        /// Why.
        source: SecretError,
    },
    /// The evidence directory cannot be used or a thread cannot start.
    #[error("{0}")]
    Evidence(String),
}

/// Tap events buffered between the hot path and the observer thread. Beyond this, evidence is
/// dropped (and counted), never traffic.
pub const QUEUE_CAPACITY: usize = 16 * 1024;

/// What the relay's HTTP side and producers inside the relay use while the pipeline runs.
/// Cheap to clone.
#[derive(Clone, Debug)]
pub struct PipelineHandle {
    tap: Tap,
    sanitizer: Arc<Sanitizer>,
    writer: RunWriter,
    /// The page model both observers feed (the screenshot veto among its decisions).
    pages: Arc<Pages>,
    session: String,
    /// The evidence root, for producers that append through the journal protocol (remote
    /// producers over HTTP).
    root: PathBuf,
    /// The direct reader is configured.
    observing: bool,
    /// The evidence order typed text is registered in.
    order: Arc<Order>,
    /// Agent tool calls in flight, for linking records to them.
    calls: ToolCalls,
    /// Field readings for the direct reader, when it is configured.
    fields: Option<mpsc::Sender<direct::fields::FieldRequest>>,
}

/// The evidence run as `/relay/v1/status` shows it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceStatus {
    /// The run being written (changes if another producer finalizes it).
    pub run_id: String,
    /// Its directory.
    pub run_dir: PathBuf,
    /// The session it belongs to.
    pub session: String,
    /// Evidence lost so far: queue overflow plus failed writes.
    pub dropped: u64,
    /// Set while evidence cannot be written (a full disk, an unwritable or deleted directory):
    /// what the last write failed with. Forwarding is not affected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing: Option<String>,
    /// One line about the last evidence lost (writes that failed, a run deleted while
    /// recording), once it is known; the run's journal says it too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_loss: Option<String>,
    /// With the direct reader on: the pages it is attached to and records events of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_pages: Option<usize>,
}

impl PipelineHandle {
    /// The tap the splices offer copies to.
    pub fn tap(&self) -> &Tap {
        &self.tap
    }

    /// The run's sanitizer (secrets registered here are masked in all of the run's evidence).
    pub fn sanitizer(&self) -> &Arc<Sanitizer> {
        &self.sanitizer
    }

    /// Registers an explicit secret for the rest of the run: everything sanitized after this
    /// returns is masked. A producer that types on a client's behalf (an MCP tool call)
    /// registers before it forwards the call.
    pub fn register_secret(&self, name: &str, literal: &str) -> Result<bool, SecretError> {
        self.sanitizer.register_secret(name, literal)
    }

    /// The evidence order: a producer inside the relay that records page text it received
    /// from the browser on a connection of its own awaits [`Order::caught_up`] before
    /// sanitizing it, so typing forwarded before it is registered first.
    pub fn order(&self) -> &Arc<Order> {
        &self.order
    }

    /// Appends records from another producer inside the relay.
    pub fn writer(&self) -> &RunWriter {
        &self.writer
    }

    /// The page model both observers feed: what each page is, and the decisions about it (the
    /// screenshot veto among them).
    pub fn pages(&self) -> &Arc<Pages> {
        &self.pages
    }

    /// The agent tool calls records are linked to (`payload.toolCall`): a producer of tool calls
    /// says when each begins and ends, and reads what each learned, its typing steps among it
    /// ([`calls::ToolCalls::typing_settled`], [`facts`]).
    pub fn calls(&self) -> &ToolCalls {
        &self.calls
    }

    /// Reads, on the pages a tool call acted on, which fields were set by script during the
    /// call and whether they hold the texts it meant to type (for text no key carried: see
    /// [`FieldQuery`]). `None` when the direct reader is not configured or the reading did not
    /// come by `deadline`; a reading of no page is an empty one.
    pub async fn read_fields(
        &self,
        query: FieldQuery,
        deadline: tokio::time::Instant,
    ) -> Option<FieldReading> {
        let fields = self.fields.as_ref()?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        fields
            .try_send(direct::fields::FieldRequest::new(query, reply))
            .ok()?;
        tokio::time::timeout_at(deadline, answer).await.ok()?.ok()
    }

    /// The evidence root the run lives under.
    pub fn evidence_root(&self) -> &std::path::Path {
        &self.root
    }

    /// The session whose run this pipeline writes.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Whether the direct reader (the relay's own observer) is configured: typed-text verdicts
    /// and field readings need it.
    pub fn observes(&self) -> bool {
        self.observing
    }

    /// Resolves once the relay's own observer records the events of at least `n` pages (field
    /// types, typed-text verdicts and frames need it there before the typing); at once when it
    /// is not configured.
    pub async fn observing(&self, n: usize) {
        if self.observing {
            self.pages.covering(n).await;
        }
    }

    /// Where evidence goes now, and what was lost.
    pub fn status(&self) -> EvidenceStatus {
        let current = self.writer.current();
        EvidenceStatus {
            run_id: current.id,
            run_dir: current.dir,
            session: self.session.clone(),
            dropped: self.tap.dropped() + self.writer.failures(),
            failing: self.writer.failing(),
            last_loss: self.writer.last_loss(),
            observed_pages: self.observing.then(|| self.pages.covered_count()),
        }
    }
}

/// What [`Pipeline::finish`] reports.
#[derive(Debug, Clone)]
pub struct PipelineSummary {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Evidence dropped (queue overflow, observer limits, failed writes).
    pub dropped: u64,
    /// The run was finalized; false when it could not be (it stays `running`, and the log says
    /// how to finalize it later) or its directory was deleted.
    pub finalized: bool,
}

/// How long a typing step waits for its verdict before it is written without one.
const VERIFY_WAIT: Duration = Duration::from_secs(4);

/// The parts the direct reader is started with, once the browser is known.
struct DirectParts {
    verify_rx: mpsc::Receiver<direct::verify::VerifyRequest>,
    verify_tx: mpsc::Sender<direct::verify::VerifyReply>,
    fields_rx: mpsc::Receiver<direct::fields::FieldRequest>,
}

/// A running pipeline. Stop it with [`Pipeline::finish`].
pub struct Pipeline {
    handle: PipelineHandle,
    observer: Option<std::thread::JoinHandle<u64>>,
    writer: Option<std::thread::JoinHandle<()>>,
    /// Set when observing is on, until [`Pipeline::observe`] starts the direct reader.
    parts: Option<DirectParts>,
    direct: Option<Direct>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("observing", &self.direct.is_some())
            .finish_non_exhaustive()
    }
}

impl Pipeline {
    /// Opens (or joins) the session's run and starts the reader and writer threads. An evidence
    /// directory that cannot be written is an [`Error::Evidence`]; the caller keeps forwarding
    /// without evidence.
    pub fn start(settings: &Settings, hooks: Hooks) -> Result<Pipeline, Error> {
        let off = |e: &dyn std::fmt::Display| Error::Evidence(e.to_string());
        let sanitizer = Arc::new(Sanitizer::new());
        for (name, secret) in &settings.secrets {
            sanitizer
                .register_secret(name, secret.expose())
                .map_err(|source| Error::Secret {
                    name: name.clone(),
                    source,
                })?;
        }
        let config = EvidenceConfig {
            journal_budget_bytes: settings.journal_budget_bytes,
            ..EvidenceConfig::at(&settings.root)
        };
        let mut store = Store::open(config).map_err(|e| off(&e))?;
        if let Some(hold) = hooks.hold {
            store = store.with_retention_hold(hold);
        }
        let session = settings
            .session
            .clone()
            .unwrap_or_else(default_session_name);
        let run = store.join_session(&session, "relay").map_err(|e| off(&e))?;
        let pages = Arc::new(Pages::new(sanitizer.clone(), settings.screenshots));
        let calls = ToolCalls::default();
        let (writer, writer_thread) = writer::start(
            store,
            session.clone(),
            run,
            sanitizer.clone(),
            pages.clone(),
            calls.clone(),
            (hooks.finalized, hooks.written),
        )
        .map_err(|e| off(&format!("cannot start the evidence writer thread: {e}")))?;
        let (tap, rx) = Tap::channel(QUEUE_CAPACITY);
        let mut observer =
            TrafficReader::new(pages.clone(), TrafficOptions::default()).with_calls(calls.clone());
        let (parts, fields) = if settings.observe {
            let (requests, verify_rx) = mpsc::channel(256);
            let (verify_tx, replies) = mpsc::channel(256);
            let (fields, fields_rx) = mpsc::channel(64);
            observer = observer.with_verifier(traffic::Verifier {
                requests,
                replies,
                wait: VERIFY_WAIT,
            });
            let parts = DirectParts {
                verify_rx,
                verify_tx,
                fields_rx,
            };
            (Some(parts), Some(fields))
        } else {
            (None, None)
        };
        let order = rx.order.clone();
        let thread = {
            let writer = writer.clone();
            let sanitizer = sanitizer.clone();
            std::thread::Builder::new()
                .name("cdp-relay-observer".into())
                .spawn(move || traffic::thread::run(rx, observer, writer, sanitizer))
                .map_err(|e| off(&format!("cannot start the observer thread: {e}")))?
        };
        Ok(Pipeline {
            handle: PipelineHandle {
                tap,
                sanitizer,
                writer,
                pages,
                session,
                root: settings.root.clone(),
                observing: settings.observe,
                order,
                calls,
                fields,
            },
            observer: Some(thread),
            writer: Some(writer_thread),
            parts,
            direct: None,
        })
    }

    /// Starts the direct reader on `browser`, if observing is on (call from
    /// within a tokio runtime, once). It connects in the background: an unreachable browser is
    /// retried, never an error here.
    pub fn observe(&mut self, browser: Arc<dyn BrowserEndpoint>) {
        self.observe_with(browser, DirectOptions::default());
    }

    /// [`Pipeline::observe`] with other knobs.
    pub fn observe_with(&mut self, browser: Arc<dyn BrowserEndpoint>, opts: DirectOptions) {
        let Some(parts) = self.parts.take() else {
            return;
        };
        let ctx = direct::Ctx {
            sanitizer: self.handle.sanitizer.clone(),
            writer: self.handle.writer.clone(),
            pages: self.handle.pages.clone(),
            calls: self.handle.calls.clone(),
            verify_rx: parts.verify_rx,
            verify_tx: parts.verify_tx,
            fields_rx: parts.fields_rx,
            dropped: Arc::new(AtomicU64::new(0)),
            order: self.handle.order.clone(),
        };
        self.direct = Some(Direct::spawn(ctx, browser, opts));
    }

    /// True when the direct reader runs.
    pub fn observing(&self) -> bool {
        self.direct.is_some()
    }

    /// The handle the relay serves the status and secrets API with, and producers append
    /// through.
    pub fn handle(&self) -> &PipelineHandle {
        &self.handle
    }

    /// Stops recording: the observer drains the tap (pending commands become interrupted), the
    /// writer writes everything, finalizes the run with its totals, renders and prunes.
    pub async fn finish(mut self) -> Option<PipelineSummary> {
        let observer = self.observer.take()?;
        let writer_thread = self.writer.take();
        let direct = self.direct.take();
        let handle = self.handle.clone();
        // The traffic reader drains first: its last typing steps still get their verdicts
        // from the direct reader, which stops after it.
        let passive = {
            let handle = handle.clone();
            tokio::task::spawn_blocking(move || {
                handle.tap.finish();
                observer.join().unwrap_or(0)
            })
            .await
            .unwrap_or(0)
        };
        let direct_dropped = match direct {
            Some(a) => a.stop().await,
            None => 0,
        };
        tokio::task::spawn_blocking(move || {
            let dropped = handle.tap.dropped() + passive + direct_dropped;
            let summary = handle.writer.finish_blocking(dropped);
            if let Some(t) = writer_thread {
                let _ = t.join();
            }
            summary.map(|s| PipelineSummary {
                run_dir: s.run_dir,
                dropped: dropped + s.failed_writes,
                finalized: s.finalized,
            })
        })
        .await
        .ok()
        .flatten()
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        // Not finished explicitly (an error path): the threads still drain and finalize on their
        // own, without anyone waiting for them.
        if self.observer.is_some() {
            self.handle.tap.finish();
        }
    }
}

/// `relay-<unix ms>-<pid>`: unique per relay start, sortable, a valid session id.
fn default_session_name() -> String {
    let ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("relay-{ms}-{}", std::process::id())
}
