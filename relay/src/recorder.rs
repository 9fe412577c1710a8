//! The evidence pipeline behind the taps: a bounded queue, and one dedicated thread that runs the
//! observer and writes its records into an evidence run.
//!
//! Everything here is off the hot path. The queue is filled with `try_send` (a full queue drops
//! and counts); the thread does the parsing, sanitizing and file I/O. A failing writer (disk full,
//! permissions) is logged once and counted; forwarding never notices.

use crate::config::EvidenceSettings;
use crate::observer::{Observer, ObserverOptions, Sink};
use crate::tap::{Tap, TapEvent};
use cdp_evidence::{ArtifactOutcome, ArtifactRef, EvidenceConfig, Record, Run, Store, Totals};
use cdp_sanitize::Sanitizer;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;
use tokio::sync::mpsc;

/// Tap events buffered between the hot path and the recorder thread. Beyond this, evidence is
/// dropped (and counted), never traffic.
pub const QUEUE_CAPACITY: usize = 16 * 1024;

/// How long the recorder sleeps when its queue is empty. Evidence is written at most this much
/// later; at 16k events of queue, floods up to ~1.6M events/s fit between two looks.
const IDLE_POLL: std::time::Duration = std::time::Duration::from_millis(10);

/// What the relay's HTTP side needs from a running recorder.
#[derive(Clone)]
pub struct EvidenceHandle {
    pub(crate) tap: Tap,
    pub(crate) sanitizer: Arc<Sanitizer>,
    /// The run being written; changes if another producer finalizes it under us.
    current: Arc<Mutex<CurrentRun>>,
    pub(crate) session: String,
    pub(crate) failures: Arc<AtomicU64>,
}

#[derive(Debug, Clone)]
struct CurrentRun {
    id: String,
    dir: PathBuf,
}

impl std::fmt::Debug for EvidenceHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvidenceHandle")
            .field("run", &self.current())
            .finish_non_exhaustive()
    }
}

impl EvidenceHandle {
    fn current(&self) -> CurrentRun {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The id of the run being written.
    pub fn run_id(&self) -> String {
        self.current().id
    }

    /// The directory of the run being written.
    pub fn run_dir(&self) -> PathBuf {
        self.current().dir
    }

    /// Evidence lost so far: queue overflow plus failed writes.
    pub fn dropped(&self) -> u64 {
        self.tap.dropped() + self.failures.load(Ordering::Relaxed)
    }
}

/// What the recorder thread reports when it stops.
#[derive(Debug, Clone)]
pub struct RecorderSummary {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Evidence dropped (queue overflow, observer limits, failed writes).
    pub dropped: u64,
    /// Records the sink failed to write.
    pub failed_writes: u64,
}

/// A running recorder. Stop it with [`Recorder::finish`] to finalize the run.
pub struct Recorder {
    handle: EvidenceHandle,
    tx: mpsc::Sender<TapEvent>,
    thread: Option<std::thread::JoinHandle<RecorderSummary>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Opens (or joins) the session's run and starts the recorder thread. `Ok(None)` when
    /// evidence is disabled. An evidence directory that cannot be written is reported by the
    /// caller, which keeps forwarding without evidence.
    pub fn start(settings: &EvidenceSettings) -> Result<Option<Recorder>, crate::Error> {
        if !settings.enabled {
            return Ok(None);
        }
        let sanitizer = Arc::new(Sanitizer::new());
        for (name, secret) in &settings.secrets {
            // Names were validated when the settings were built.
            let _ = sanitizer.register_secret(name, secret.expose());
        }
        let off = |e: &dyn std::fmt::Display| crate::Error::Evidence {
            reason: e.to_string(),
        };
        let store = Store::open(EvidenceConfig::at(&settings.root)).map_err(|e| off(&e))?;
        let session = settings
            .session
            .clone()
            .unwrap_or_else(default_session_name);
        let run = store.join_session(&session, "relay").map_err(|e| off(&e))?;
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let tap = Tap::new(tx.clone());
        let failures = Arc::new(AtomicU64::new(0));
        let current = Arc::new(Mutex::new(CurrentRun {
            id: run.id().to_owned(),
            dir: run.dir().to_path_buf(),
        }));
        let handle = EvidenceHandle {
            tap: tap.clone(),
            sanitizer: sanitizer.clone(),
            current: current.clone(),
            session: session.clone(),
            failures: failures.clone(),
        };
        let sink = RunSink {
            store,
            session,
            run,
            current,
            failures,
            warned: false,
            buffer: Vec::with_capacity(BATCH),
        };
        let opts = ObserverOptions {
            screenshots: settings.screenshots,
            ..ObserverOptions::default()
        };
        let thread = std::thread::Builder::new()
            .name("cdp-relay-recorder".into())
            .spawn(move || record(rx, sink, sanitizer, opts, tap))
            .map_err(|e| off(&format!("cannot start the recorder thread: {e}")))?;
        Ok(Some(Recorder {
            handle,
            tx,
            thread: Some(thread),
        }))
    }

    /// The handle the relay serves the status and secrets API with.
    pub fn handle(&self) -> &EvidenceHandle {
        &self.handle
    }

    /// Stops recording: open connections' pending commands become interrupted, the run is
    /// finalized with its totals. Waits for the queue to drain.
    pub async fn finish(mut self) -> Option<RecorderSummary> {
        let _ = self
            .tx
            .send(TapEvent::Finish {
                at: SystemTime::now(),
            })
            .await;
        let thread = self.thread.take()?;
        tokio::task::spawn_blocking(move || thread.join().ok())
            .await
            .ok()
            .flatten()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // Not finished explicitly (an error path): still finalize, without waiting.
        if self.thread.is_some() {
            let _ = self.tx.try_send(TapEvent::Finish {
                at: SystemTime::now(),
            });
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

/// The recorder thread.
fn record(
    mut rx: mpsc::Receiver<TapEvent>,
    sink: RunSink,
    sanitizer: Arc<Sanitizer>,
    opts: ObserverOptions,
    tap: Tap,
) -> RecorderSummary {
    let mut observer = Observer::new(sanitizer.clone(), sink, opts);
    let mut finished_at = None;
    loop {
        let event = match rx.try_recv() {
            Ok(event) => event,
            // Caught up: write what is buffered, then look again a little later. Polling rather
            // than blocking means the hot path's `try_send` never has a sleeping thread to wake.
            Err(mpsc::error::TryRecvError::Empty) => {
                observer.sink_mut().flush();
                std::thread::sleep(IDLE_POLL);
                continue;
            }
            Err(mpsc::error::TryRecvError::Disconnected) => break,
        };
        if let TapEvent::Finish { at } = event {
            finished_at = Some(at);
            break;
        }
        observer.handle(event);
    }
    observer.finish(finished_at.unwrap_or_else(SystemTime::now));
    observer.sink_mut().flush();
    let sink = observer.sink();
    let failed = sink.failures.load(Ordering::Relaxed);
    let dropped = tap.dropped() + observer.dropped() + failed;
    let totals = Totals {
        dropped_evidence: dropped,
        redactions: Some(sanitizer.summary()),
    };
    if let Err(e) = sink.run.finalize(totals) {
        tracing::warn!("evidence: could not finalize run {}: {e}", sink.run.id());
    }
    // Retention: keep the newest finalized runs; running and legacy runs are never touched.
    match sink.store.prune() {
        Ok(report) => tracing::debug!("evidence: retention: {report:?}"),
        Err(e) => tracing::warn!("evidence: retention could not prune old runs: {e}"),
    }
    RecorderSummary {
        run_dir: sink.run.dir().to_path_buf(),
        dropped,
        failed_writes: failed,
    }
}

/// Records written per journal lock when the recorder is busy.
const BATCH: usize = 256;

/// Writes observer output into an evidence run, in batches: one lock per batch when busy, and
/// everything written as soon as the queue is drained.
struct RunSink {
    store: Store,
    session: String,
    run: Run,
    current: Arc<Mutex<CurrentRun>>,
    failures: Arc<AtomicU64>,
    warned: bool,
    buffer: Vec<Record>,
}

impl RunSink {
    /// Appends the buffered records.
    fn flush(&mut self) {
        if self.buffer.is_empty() {
            return;
        }
        let mut outcome = self.run.append_all(&self.buffer);
        if matches!(&outcome, Err(e) if finalized(e)) && self.rejoin() {
            outcome = self.run.append_all(&self.buffer);
        }
        if let Err(e) = outcome {
            let lost = self.buffer.len() as u64;
            self.failed("append to the journal", &e, lost);
        }
        self.buffer.clear();
    }

    fn failed(&mut self, what: &str, e: &cdp_evidence::Error, lost: u64) {
        self.failures.fetch_add(lost, Ordering::Relaxed);
        if !self.warned {
            self.warned = true;
            // Evidence errors name paths and OS errors, never record contents.
            tracing::warn!(
                "evidence: cannot {what} ({e}); the relay keeps forwarding, evidence for this run is incomplete"
            );
        }
    }

    /// Another producer finalized the run: continue in the session's next run.
    fn rejoin(&mut self) -> bool {
        match self.store.join_session(&self.session, "relay") {
            Ok(run) => {
                tracing::info!(
                    "evidence: run {} was finalized by another producer; continuing in run {}",
                    self.run.id(),
                    run.id()
                );
                *self.current.lock().unwrap_or_else(PoisonError::into_inner) = CurrentRun {
                    id: run.id().to_owned(),
                    dir: run.dir().to_path_buf(),
                };
                self.run = run;
                true
            }
            Err(e) => {
                self.failed("join the session's next run", &e, 0);
                false
            }
        }
    }
}

fn finalized(e: &cdp_evidence::Error) -> bool {
    matches!(e, cdp_evidence::Error::RunFinalized { .. })
}

impl Sink for RunSink {
    fn record(&mut self, record: Record) {
        self.buffer.push(record);
        if self.buffer.len() >= BATCH {
            self.flush();
        }
    }

    fn artifact(
        &mut self,
        stem: &'static str,
        ext: &'static str,
        bytes: &[u8],
    ) -> Option<ArtifactRef> {
        // Keep the journal in order: earlier records before anything the artifact store writes.
        self.flush();
        let mut outcome = self.run.store_artifact(stem, ext, bytes);
        if matches!(&outcome, Err(e) if finalized(e)) && self.rejoin() {
            outcome = self.run.store_artifact(stem, ext, bytes);
        }
        match outcome {
            Ok(ArtifactOutcome::Stored(a)) => Some(a),
            Ok(_) => None,
            Err(e) => {
                self.failed("store an artifact", &e, 1);
                None
            }
        }
    }
}
