//! The run writer: one thread that alone owns the evidence [`Run`]. Every producer inside the
//! relay (the passive observer, the relay's own capture) appends through a cloneable
//! [`RunWriter`]; the thread writes in batches, stores artifacts, follows the session into its
//! next run when another producer finalizes this one, and at the end finalizes, renders and
//! prunes.
//!
//! A failing write (disk full, permissions) is counted and logged once, never retried forever;
//! forwarding never notices. Nothing here logs a record's contents.

use super::calls::ToolCalls;
use cdp_evidence::{ArtifactOutcome, Record, Run, Store, Totals};
use cdp_sanitize::Sanitizer;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::mpsc;

/// A record for the journal, possibly with an artifact to store first and attach.
#[derive(Debug)]
pub enum Emit {
    /// Append as is.
    Record(Record),
    /// Store `artifact` (within the run's budget) and append `record` naming it; the record is
    /// appended without it when the artifact is refused.
    WithArtifact {
        /// The record.
        record: Record,
        /// The artifact's bytes.
        artifact: NewArtifact,
    },
    /// Store `artifact` once and append every record naming it (one frame illustrating several
    /// failures); the records are appended without it when it is refused.
    Shared {
        /// The records.
        records: Vec<Record>,
        /// The artifact's bytes.
        artifact: NewArtifact,
    },
}

/// Artifact bytes to store as `artifacts/<seq>-<stem>.<ext>`.
#[derive(Debug)]
pub struct NewArtifact {
    /// File name stem (`screenshot`, `screencast`, `frame`).
    pub stem: &'static str,
    /// File extension (`png`, `jpeg`, `webp`).
    pub ext: &'static str,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// Batches queued between producers and the writer thread; a full queue makes the passive
/// observer wait (its own queue then fills and drops, counted) and the relay's capture skip.
const QUEUE: usize = 64;

enum Msg {
    Batch(Vec<Emit>),
    Finish {
        dropped: u64,
        reply: std::sync::mpsc::Sender<WriterSummary>,
    },
    /// Everything sent before is written: reply (after finalizing, rendering and moving on to
    /// the session's next run, when `rotate`).
    Sync {
        rotate: bool,
        reply: tokio::sync::oneshot::Sender<Option<WriterSummary>>,
    },
}

/// The run being written, as the status API shows it.
#[derive(Debug, Clone)]
pub(crate) struct CurrentRun {
    pub(crate) id: String,
    pub(crate) dir: PathBuf,
}

/// A cloneable way in to the run writer.
#[derive(Clone)]
pub struct RunWriter {
    tx: mpsc::Sender<Msg>,
    current: Arc<Mutex<CurrentRun>>,
    failures: Arc<AtomicU64>,
}

impl std::fmt::Debug for RunWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunWriter").finish_non_exhaustive()
    }
}

/// What the writer reports when it stops.
#[derive(Debug, Clone)]
pub struct WriterSummary {
    /// The run directory (the last one, if the session moved on).
    pub run_dir: PathBuf,
    /// Records and artifacts that could not be written.
    pub failed_writes: u64,
}

impl RunWriter {
    /// Appends a batch from a plain thread, waiting for room in the queue.
    pub fn send_blocking(&self, batch: Vec<Emit>) {
        if batch.is_empty() {
            return;
        }
        let n = batch.len() as u64;
        if self.tx.blocking_send(Msg::Batch(batch)).is_err() {
            self.failures.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Appends a batch from async code, waiting for room in the queue (never on the hot path).
    pub async fn send(&self, batch: Vec<Emit>) {
        if batch.is_empty() {
            return;
        }
        let n = batch.len() as u64;
        if self.tx.send(Msg::Batch(batch)).await.is_err() {
            self.failures.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Appends a batch from async code without waiting: `false` (and counted) when the queue is
    /// full.
    pub fn try_send(&self, batch: Vec<Emit>) -> bool {
        let n = batch.len() as u64;
        let ok = self.tx.try_send(Msg::Batch(batch)).is_ok();
        if !ok {
            self.failures.fetch_add(n, Ordering::Relaxed);
        }
        ok
    }

    pub(crate) fn current(&self) -> CurrentRun {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Evidence that could not be written so far.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Waits until everything sent before has been written (for a reader of the journal).
    pub async fn sync(&self) {
        let (reply, done) = tokio::sync::oneshot::channel();
        if self
            .tx
            .send(Msg::Sync {
                rotate: false,
                reply,
            })
            .await
            .is_ok()
        {
            let _ = done.await;
        }
    }

    /// Finalizes and renders the run now, once everything sent before is written, and goes on
    /// recording in the session's next run. Returns the finalized run's summary (`None` when the
    /// writer is gone or the next run could not be joined).
    pub async fn rotate(&self) -> Option<WriterSummary> {
        let (reply, done) = tokio::sync::oneshot::channel();
        self.tx
            .send(Msg::Sync {
                rotate: true,
                reply,
            })
            .await
            .ok()?;
        done.await.ok().flatten()
    }

    /// Finalizes the run with `dropped` evidence counted elsewhere, once everything sent before
    /// has been written. Blocks; call from a blocking context.
    pub(crate) fn finish_blocking(&self, dropped: u64) -> Option<WriterSummary> {
        let (reply, rx) = std::sync::mpsc::channel();
        self.tx.blocking_send(Msg::Finish { dropped, reply }).ok()?;
        rx.recv().ok()
    }
}

/// Starts the writer thread for `run`; the thread ends after a finish request or when every
/// handle is gone.
pub(crate) fn start(
    store: Store,
    session: String,
    run: Run,
    sanitizer: Arc<Sanitizer>,
    calls: ToolCalls,
) -> std::io::Result<(RunWriter, std::thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel(QUEUE);
    let current = Arc::new(Mutex::new(CurrentRun {
        id: run.id().to_owned(),
        dir: run.dir().to_path_buf(),
    }));
    let failures = Arc::new(AtomicU64::new(0));
    let writer = RunWriter {
        tx,
        current: current.clone(),
        failures: failures.clone(),
    };
    let state = Writer {
        store,
        session,
        run,
        current,
        failures,
        warned: false,
        sanitizer,
        calls,
    };
    let thread = std::thread::Builder::new()
        .name("cdp-relay-writer".into())
        .spawn(move || state.run(rx))?;
    Ok((writer, thread))
}

struct Writer {
    store: Store,
    session: String,
    run: Run,
    current: Arc<Mutex<CurrentRun>>,
    failures: Arc<AtomicU64>,
    warned: bool,
    sanitizer: Arc<Sanitizer>,
    /// Agent tool calls, for linking records to the call they happened during.
    calls: ToolCalls,
}

impl Writer {
    fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        let mut priority = super::priority::Priority::start(rx.max_capacity());
        while let Some(msg) = rx.blocking_recv() {
            priority.adapt(rx.len());
            match msg {
                Msg::Batch(batch) => self.write(batch),
                Msg::Finish { dropped, reply } => {
                    // Producers finished before asking; anything still queued is theirs too.
                    while let Ok(Msg::Batch(batch)) = rx.try_recv() {
                        self.write(batch);
                    }
                    let _ = reply.send(self.finish(dropped));
                    return;
                }
                Msg::Sync { rotate, reply } => {
                    let done = if rotate { self.rotate() } else { None };
                    let _ = reply.send(done);
                }
            }
        }
        // Every handle is gone without a finish request (an error path): still finalize.
        self.finish(0);
    }

    /// Appends records in order; consecutive plain records share one journal lock.
    fn write(&mut self, mut batch: Vec<Emit>) {
        for emit in &mut batch {
            match emit {
                Emit::Record(r) | Emit::WithArtifact { record: r, .. } => self.calls.link(r),
                Emit::Shared { records, .. } => records.iter_mut().for_each(|r| self.calls.link(r)),
            }
        }
        let mut plain: Vec<Record> = Vec::with_capacity(batch.len());
        for emit in batch {
            match emit {
                Emit::Record(r) => plain.push(r),
                Emit::WithArtifact { record, artifact } => {
                    // Keep the journal in order: earlier records before the artifact's record.
                    self.append(&mut plain);
                    let record = match self.store_artifact(&artifact) {
                        Some(a) => record.artifact(a),
                        None => record,
                    };
                    plain.push(record);
                }
                Emit::Shared { records, artifact } => {
                    self.append(&mut plain);
                    let stored = self.store_artifact(&artifact);
                    plain.extend(records.into_iter().map(|r| match &stored {
                        Some(a) => r.artifact(a.clone()),
                        None => r,
                    }));
                }
            }
        }
        self.append(&mut plain);
    }

    fn append(&mut self, records: &mut Vec<Record>) {
        if records.is_empty() {
            return;
        }
        let mut outcome = self.run.append_all(records);
        if matches!(&outcome, Err(e) if finalized(e)) && self.rejoin() {
            outcome = self.run.append_all(records);
        }
        if let Err(e) = outcome {
            self.failed("append to the journal", &e, records.len() as u64);
        }
        records.clear();
    }

    fn store_artifact(&mut self, a: &NewArtifact) -> Option<cdp_evidence::ArtifactRef> {
        let mut outcome = self.run.store_artifact(a.stem, a.ext, &a.bytes);
        if matches!(&outcome, Err(e) if finalized(e)) && self.rejoin() {
            outcome = self.run.store_artifact(a.stem, a.ext, &a.bytes);
        }
        match outcome {
            Ok(ArtifactOutcome::Stored(r)) => Some(r),
            Ok(_) => None,
            Err(e) => {
                self.failed("store an artifact", &e, 1);
                None
            }
        }
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

    /// Finalize → render → prune, then join the session's next run for what comes after.
    fn rotate(&mut self) -> Option<WriterSummary> {
        let summary = self.finish(0);
        self.rejoin().then_some(summary)
    }

    /// Finalize → render → prune.
    fn finish(&mut self, dropped_elsewhere: u64) -> WriterSummary {
        let failed = self.failures.load(Ordering::Relaxed);
        let totals = Totals {
            dropped_evidence: dropped_elsewhere + failed,
            redactions: Some(self.sanitizer.summary()),
        };
        if let Err(e) = self.run.finalize(totals) {
            tracing::warn!("evidence: could not finalize run {}: {e}", self.run.id());
        }
        render(self.run.dir());
        // Retention: keep the newest finalized runs; running and legacy runs are never touched.
        match self.store.prune() {
            Ok(report) => tracing::debug!("evidence: retention: {report:?}"),
            Err(e) => tracing::warn!("evidence: retention could not prune old runs: {e}"),
        }
        WriterSummary {
            run_dir: self.run.dir().to_path_buf(),
            failed_writes: failed,
        }
    }
}

/// Renders `report.html` and `summary.md` once the journal is complete. A report that cannot
/// be written costs nothing but itself: the run stays finalized.
fn render(run_dir: &std::path::Path) {
    match cdp_report::render(run_dir) {
        Ok(r) => tracing::info!(
            "evidence: report {} ({} steps, {} failures)",
            r.html_path.display(),
            r.figures.steps,
            r.figures.failures
        ),
        Err(e) => tracing::warn!("evidence: could not render the report: {e}"),
    }
}

fn finalized(e: &cdp_evidence::Error) -> bool {
    matches!(e, cdp_evidence::Error::RunFinalized { .. })
}
