//! The run writer: one thread that alone owns the evidence [`Run`]. Every producer inside the
//! relay (the passive observer, the relay's own capture) appends through a cloneable
//! [`RunWriter`]; the thread writes in batches, stores artifacts, writes the repeats folded in
//! the page model as their folds close, follows the session into its next run when
//! another producer finalizes this one (or its directory is deleted), and at the end
//! finalizes, renders and prunes.
//!
//! Losses are said, not only counted. A failing write (a full disk, permissions) is counted,
//! logged once per outage and shown by the status API while it lasts; forwarding never notices.
//! The first write that succeeds afterwards carries an `evidenceDropped` marker saying how much
//! was lost, and the run keeps a small space reserve so it can still be finalized on a full
//! disk. A run whose directory is deleted while recording is left for the session's next run,
//! with one clear line on stderr and a marker there. Nothing here logs a record's contents.

use super::calls::ToolCalls;
use super::pages::Pages;
use cdp_evidence::{
    ArtifactOutcome, DropReason, JoinAs, Marker, Record, RecordKind, Run, RunEnded, Store, Totals,
};
use cdp_sanitize::{SafeText, Sanitizer};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;

/// Disk space each run keeps for its own finalize (markers and manifest), freed at finalize.
const RESERVE_BYTES: usize = 64 * 1024;

/// At the end, how often and how long apart a failing finalize is tried again.
const FINALIZE_TRIES: u32 = 3;
const FINALIZE_PAUSE: Duration = Duration::from_millis(250);

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

/// What the status API says about writing: whether it fails now, and the last loss.
#[derive(Debug, Default)]
struct Health {
    /// Why writes fail, while they do.
    failing: Mutex<Option<String>>,
    /// One line about the last loss, once it is known.
    last_loss: Mutex<Option<String>>,
}

impl Health {
    fn set(slot: &Mutex<Option<String>>, value: Option<String>) {
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = value;
    }

    fn get(slot: &Mutex<Option<String>>) -> Option<String> {
        slot.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// A cloneable way in to the run writer.
#[derive(Clone)]
pub struct RunWriter {
    tx: mpsc::Sender<Msg>,
    current: Arc<Mutex<CurrentRun>>,
    failures: Arc<AtomicU64>,
    health: Arc<Health>,
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
    /// The run was finalized (false: it could not be, and stays `running`).
    pub finalized: bool,
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

    /// Why evidence cannot be written now (`None` while writes succeed).
    pub fn failing(&self) -> Option<String> {
        Health::get(&self.health.failing)
    }

    /// One line about the last evidence lost (a failed write, a deleted run), if any.
    pub fn last_loss(&self) -> Option<String> {
        Health::get(&self.health.last_loss)
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
/// handle is gone. `pages` is the page model whose folded repeats the writer writes.
pub(crate) fn start(
    store: Store,
    session: String,
    run: Run,
    sanitizer: Arc<Sanitizer>,
    pages: Arc<Pages>,
    calls: ToolCalls,
) -> std::io::Result<(RunWriter, std::thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel(QUEUE);
    let current = Arc::new(Mutex::new(CurrentRun {
        id: run.id().to_owned(),
        dir: run.dir().to_path_buf(),
    }));
    let failures = Arc::new(AtomicU64::new(0));
    let health = Arc::new(Health::default());
    let writer = RunWriter {
        tx,
        current: current.clone(),
        failures: failures.clone(),
        health: health.clone(),
    };
    reserve(&run);
    let state = Writer {
        store,
        session,
        run,
        current,
        failures,
        health,
        sanitizer,
        pages,
        calls,
        unsaid: Vec::new(),
        said: 0,
        appended: 0,
        outage: false,
    };
    let thread = std::thread::Builder::new()
        .name("cdp-relay-writer".into())
        .spawn(move || state.run(rx))?;
    Ok((writer, thread))
}

/// Keeps the run's finalize space (best effort: without it, finalize needs free space).
fn reserve(run: &Run) {
    if let Err(e) = run.reserve_space(RESERVE_BYTES) {
        tracing::debug!("evidence: no space reserve for run {}: {e}", run.id());
    }
}

struct Writer {
    store: Store,
    session: String,
    run: Run,
    current: Arc<Mutex<CurrentRun>>,
    failures: Arc<AtomicU64>,
    health: Arc<Health>,
    sanitizer: Arc<Sanitizer>,
    pages: Arc<Pages>,
    /// Agent tool calls, for linking records to the call they happened during.
    calls: ToolCalls,
    /// Losses not yet said in the journal: (pieces, why).
    unsaid: Vec<(u64, DropReason)>,
    /// Pieces said in `evidenceDropped` markers so far.
    said: u64,
    /// Records appended to the current run (what its deletion would cost).
    appended: u64,
    /// Writes are failing now.
    outage: bool,
}

/// How an append attempt ended.
enum Outcome {
    Written,
    Retry,
    Failed(cdp_evidence::Error),
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

    /// Appends records in order; consecutive plain records share one journal lock. Repeats
    /// whose fold closed go along.
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
        plain.extend(self.pages.take_closed(SystemTime::now()));
        self.append(&mut plain);
    }

    /// Appends `records` (and, first, any loss not yet said); on failure counts them as lost.
    fn append(&mut self, records: &mut Vec<Record>) {
        if records.is_empty() {
            return;
        }
        let mut attempts = 0;
        loop {
            attempts += 1;
            let markers = self.unsaid_markers();
            let said: u64 = self.unsaid.iter().map(|(n, _)| n).sum();
            let mut batch = markers;
            let n_markers = batch.len();
            batch.append(records);
            let outcome = match self.run.append_all(&batch) {
                Ok(n) => {
                    self.appended += n as u64;
                    Outcome::Written
                }
                Err(e) => match e.run_ended() {
                    Some(ended) if attempts == 1 && self.rejoin(ended) => Outcome::Retry,
                    _ => Outcome::Failed(e),
                },
            };
            // Give the records back (the markers are rebuilt from `unsaid` on a retry).
            records.extend(batch.drain(n_markers..));
            match outcome {
                Outcome::Retry => continue,
                Outcome::Written => {
                    if n_markers > 0 {
                        self.said += said;
                        self.unsaid.clear();
                    }
                    self.recovered(said);
                }
                Outcome::Failed(e) => {
                    self.failed("append to the journal", &e, records.len() as u64)
                }
            }
            records.clear();
            return;
        }
    }

    /// `evidenceDropped` markers for the losses not said yet.
    fn unsaid_markers(&self) -> Vec<Record> {
        self.unsaid
            .iter()
            .map(|&(n, why)| {
                Record::new(
                    SafeText::literal("cdp-evidence"),
                    RecordKind::Marker(Marker::evidence_lost(n, why)),
                )
            })
            .collect()
    }

    fn store_artifact(&mut self, a: &NewArtifact) -> Option<cdp_evidence::ArtifactRef> {
        let mut outcome = self.run.store_artifact(a.stem, a.ext, &a.bytes);
        let retry = match &outcome {
            Err(e) => e.run_ended().is_some_and(|ended| self.rejoin(ended)),
            _ => false,
        };
        if retry {
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

    /// `lost` pieces could not be written: counted, said in the journal at the next write that
    /// succeeds, shown by the status API meanwhile, logged once per outage.
    fn failed(&mut self, what: &str, e: &cdp_evidence::Error, lost: u64) {
        self.failures.fetch_add(lost, Ordering::Relaxed);
        match self
            .unsaid
            .iter_mut()
            .find(|(_, r)| *r == DropReason::WriteFailed)
        {
            Some((n, _)) => *n += lost,
            None if lost > 0 => self.unsaid.push((lost, DropReason::WriteFailed)),
            None => {}
        }
        // Evidence errors name paths and OS errors, never record contents.
        Health::set(&self.health.failing, Some(format!("cannot {what}: {e}")));
        if !self.outage {
            self.outage = true;
            tracing::warn!(
                "evidence: cannot {what} ({e}); the relay keeps forwarding; what cannot be written is counted and the run will say so"
            );
        }
    }

    /// A write succeeded: an outage, if there was one, is over; `said` pieces it lost were
    /// just said in the journal.
    fn recovered(&mut self, said: u64) {
        if !self.outage {
            return;
        }
        self.outage = false;
        Health::set(&self.health.failing, None);
        let line = format!(
            "{said} pieces of evidence could not be written; the journal of run {} says so",
            self.run.id()
        );
        tracing::info!("evidence: writing again; {line}");
        Health::set(&self.health.last_loss, Some(line));
    }

    /// The run ended under the writer (docs/evidence-format.md, *When writing fails*):
    /// continue in the session's next run. A deleted run took its records with it: say so once,
    /// and let the next run's journal record the loss.
    fn rejoin(&mut self, ended: RunEnded) -> bool {
        let (old_id, old_dir, lost) = (
            self.run.id().to_owned(),
            self.run.dir().to_path_buf(),
            self.appended,
        );
        let Some(run) = self.join_next() else {
            return false;
        };
        match ended {
            RunEnded::Finalized => tracing::info!(
                "evidence: run {old_id} was finalized by another producer; continuing in run {}",
                run.id()
            ),
            RunEnded::Deleted => {
                let line = format!(
                    "cannot write to run {old_id}: its directory {} was deleted while recording, with its {lost} records; continuing in run {}",
                    old_dir.display(),
                    run.id()
                );
                tracing::warn!("evidence: {line}");
                Health::set(&self.health.last_loss, Some(line));
                if lost > 0 {
                    self.failures.fetch_add(lost, Ordering::Relaxed);
                    self.unsaid.push((lost, DropReason::RunDeleted));
                }
            }
        }
        self.switch_to(run);
        true
    }

    /// The session's next run; a failure is counted and said like any failed write.
    fn join_next(&mut self) -> Option<Run> {
        match self.store.join_as(&self.session, "relay", JoinAs::Owner) {
            Ok(run) => Some(run),
            Err(e) => {
                self.failed("join the session's next run", &e, 0);
                None
            }
        }
    }

    fn switch_to(&mut self, run: Run) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = CurrentRun {
            id: run.id().to_owned(),
            dir: run.dir().to_path_buf(),
        };
        reserve(&run);
        self.run = run;
        self.appended = 0;
    }

    /// Finalize → render → prune, then join the session's next run for what comes after.
    fn rotate(&mut self) -> Option<WriterSummary> {
        let summary = self.finish(0);
        let run = self.join_next()?;
        self.switch_to(run);
        Some(summary)
    }

    /// Writes the last folds, then finalize → render → prune.
    fn finish(&mut self, dropped_elsewhere: u64) -> WriterSummary {
        let mut folds = self.pages.take_all();
        self.append(&mut folds);
        let failed = self.failures.load(Ordering::Relaxed);
        let totals = Totals {
            dropped_evidence: dropped_elsewhere + failed,
            dropped_recorded: self.said,
            redactions: Some(self.sanitizer.summary()),
        };
        let finalized = self.finalize(&totals);
        if finalized {
            render(self.run.dir());
        }
        // Retention: keep the newest finalized runs; running and legacy runs are never touched.
        match self.store.prune() {
            Ok(report) => tracing::debug!("evidence: retention: {report:?}"),
            Err(e) => tracing::warn!("evidence: retention could not prune old runs: {e}"),
        }
        WriterSummary {
            run_dir: self.run.dir().to_path_buf(),
            failed_writes: failed,
            finalized,
        }
    }

    /// Finalizes, trying again briefly when the disk is full; says in one line what to do when
    /// it cannot.
    fn finalize(&mut self, totals: &Totals) -> bool {
        let mut last = None;
        for attempt in 0..FINALIZE_TRIES {
            if attempt > 0 {
                std::thread::sleep(FINALIZE_PAUSE * attempt);
            }
            match self.run.finalize(totals.clone()) {
                Ok(()) => return true,
                Err(e) if e.run_ended() == Some(RunEnded::Deleted) => {
                    tracing::warn!(
                        "evidence: run {} was deleted while recording ({} is gone); there is nothing to finalize",
                        self.run.id(),
                        self.run.dir().display()
                    );
                    Health::set(
                        &self.health.last_loss,
                        Some(format!("run {} was deleted while recording", self.run.id())),
                    );
                    return false;
                }
                Err(e) => last = Some(e),
            }
        }
        if let Some(e) = last {
            Health::set(&self.health.failing, Some(format!("cannot finalize: {e}")));
            tracing::warn!(
                "evidence: could not finalize run {} ({e}); it stays running: once there is space, \
                 `cdp-relay evidence finalize --session {} --dropped {}` finalizes it",
                self.run.id(),
                self.session,
                totals.dropped_evidence.saturating_sub(totals.dropped_recorded),
            );
        }
        false
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
