//! The run writer: one thread that alone owns the evidence [`Run`]. Every producer in the
//! relay's process (the traffic reader, the relay's own capture, remote producers posting to
//! the relay's API) appends through a cloneable [`RunWriter`]; the thread writes in batches, stores artifacts, writes the repeats folded in
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

mod thread;

use super::calls::ToolCalls;
use super::pages::Pages;
use cdp_evidence::{Record, Run, RunEnded, Store};
use cdp_sanitize::Sanitizer;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use thread::{reserve, Writer};
use tokio::sync::mpsc::{self, error::TrySendError};

/// The owner's step after a run is finalized, with the run's directory.
pub type Finalized = Arc<dyn Fn(&Path) + Send + Sync>;

/// The run records are written to, as an observer is told it.
#[derive(Clone, Copy, Debug)]
pub struct RunRef<'a> {
    /// The run's id.
    pub id: &'a str,
    /// Its directory.
    pub dir: &'a Path,
}

/// Sees what the writer wrote, on the writer thread: each batch once it is in the journal, and
/// each run's end. It is called between writes, so it must return at once (hand the records
/// to a bounded queue, never to a socket). What it sees is what the journal holds: sanitized.
pub trait WriteObserver: Send + Sync + std::fmt::Debug {
    /// `records` are in `run`'s journal now, in this order.
    fn written(&self, run: RunRef<'_>, records: &[Record]);
    /// The writer is done with `run`: finalized (`true`), or left for the session's next run
    /// or unfinalizable (`false`).
    fn ended(&self, run: RunRef<'_>, finalized: bool);
}

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
    /// A producer's records from outside the pipeline, written as one batch; where they went
    /// goes back.
    External {
        records: Vec<Record>,
        reply: tokio::sync::oneshot::Sender<Result<Appended, cdp_evidence::Error>>,
    },
    /// Everything sent before is written: reply (after finalizing, rendering and moving on to
    /// the session's next run, when `rotate`).
    Sync {
        rotate: bool,
        reply: tokio::sync::oneshot::Sender<Option<WriterSummary>>,
    },
}

/// Where a producer's records went ([`RunWriter::append_records_blocking`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The run that holds them (the writer's run from then on).
    pub run_id: String,
    /// `Some` when the run they were sent to had ended under the writer (finalized by another
    /// producer, or deleted): they are in the session's next run.
    pub rejoined: Option<RunEnded>,
}

/// Why a producer's records were not written (none of them was).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// The writer has stopped: the pipeline is finishing.
    #[error("the run writer has stopped")]
    Stopped,
    /// The journal refused the write (a full disk, permissions), or the run ended under the
    /// writer twice in a row. Names paths and OS errors, never a record.
    #[error(transparent)]
    Write(#[from] cdp_evidence::Error),
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
        let sent = match self.tx.try_send(Msg::Batch(batch)) {
            Ok(()) => true,
            Err(TrySendError::Full(msg)) => self.tx.blocking_send(msg).is_ok(),
            Err(TrySendError::Closed(_)) => false,
        };
        if !sent {
            self.failures.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Appends a batch from async code, waiting for room in the queue (never on the hot path).
    pub async fn send(&self, batch: Vec<Emit>) {
        if batch.is_empty() {
            return;
        }
        let n = batch.len() as u64;
        let sent = match self.tx.try_send(Msg::Batch(batch)) {
            Ok(()) => true,
            Err(TrySendError::Full(msg)) => self.tx.send(msg).await.is_ok(),
            Err(TrySendError::Closed(_)) => false,
        };
        if !sent {
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

    /// Appends a producer's records from outside the pipeline (a remote producer's request) as
    /// one write, all or nothing: never interleaved with other records, never half-written, in
    /// order with what was sent before. If the run ended under the writer (another producer
    /// finalized it, or its directory was deleted), they go to the session's next run, where
    /// the writer continues too: the policy of `evidence/src/rejoin.rs`, so a run that ends
    /// again at once is an error. A failure is the caller's to report; the writer does not
    /// count it as the relay's loss. Records that name no source are the relay's: set the
    /// producer's first. Blocks; call from a blocking context.
    pub fn append_records_blocking(&self, records: Vec<Record>) -> Result<Appended, AppendError> {
        let (reply, done) = tokio::sync::oneshot::channel();
        self.tx
            .blocking_send(Msg::External { records, reply })
            .map_err(|_| AppendError::Stopped)?;
        done.blocking_recv()
            .map_err(|_| AppendError::Stopped)?
            .map_err(AppendError::Write)
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
    (finalized, observer): (Option<Finalized>, Option<Arc<dyn WriteObserver>>),
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
        finalized,
        observer,
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

#[cfg(test)]
mod tests;
