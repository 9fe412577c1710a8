//! The evidence pipeline: tap → observer → run writer → journal.
//!
//! Owns everything the relay does with copies of the traffic, off the hot path: the tap's queues
//! (`tap.rs`), the passive observer and its thread (`observer/`, `passive.rs`), the shared
//! capture policy (`capture.rs`) and the one thread that writes the evidence run (`writer.rs`).
//! It never touches a socket the client or browser uses, never delays or alters a frame, and
//! persists only what went through the run's sanitizer.
//!
//! `serve` and `launch` start it the same way ([`Pipeline::start`]) and stop it the same way
//! ([`Pipeline::finish`]: drain → finalize → render → prune).

pub mod capture;
pub mod observer;
mod passive;
pub mod tap;
pub mod writer;

use crate::config::EvidenceSettings;
use crate::Error;
use capture::CapturePolicy;
use cdp_evidence::{EvidenceConfig, Store};
use cdp_sanitize::{Sanitizer, SecretError};
use observer::{Observer, ObserverOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;
use tap::Tap;
use tokio::sync::broadcast;
pub use writer::{Emit, NewArtifact, RunWriter, WriterSummary};

/// Tap events buffered between the hot path and the observer thread. Beyond this, evidence is
/// dropped (and counted), never traffic.
pub const QUEUE_CAPACITY: usize = 16 * 1024;

/// Moments the passive observer saw that the relay's own capture may act on. Target ids are raw
/// (memory only, never persisted).
#[derive(Debug, Clone)]
pub enum Trigger {
    /// A failed request or a console error on `target_id`'s page.
    FailureSeen {
        /// The page, when known.
        target_id: Option<String>,
        /// When it was seen.
        at: SystemTime,
    },
    /// A typing burst ended.
    TypingEnded {
        /// The page typed into, when known.
        target_id: Option<String>,
        /// When the burst was recorded.
        at: SystemTime,
    },
    /// A navigation command succeeded.
    Navigated {
        /// The page, when known.
        target_id: Option<String>,
        /// When the browser answered.
        at: SystemTime,
    },
    /// A click was dispatched.
    Clicked {
        /// The page, when known.
        target_id: Option<String>,
        /// When the browser answered.
        at: SystemTime,
    },
}

/// What the relay's HTTP side and producers inside the relay use while the pipeline runs.
/// Cheap to clone.
#[derive(Clone, Debug)]
pub struct PipelineHandle {
    tap: Tap,
    sanitizer: Arc<Sanitizer>,
    writer: RunWriter,
    capture: Arc<CapturePolicy>,
    triggers: broadcast::Sender<Trigger>,
    session: String,
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

    /// Registers an explicit secret for the rest of the run.
    pub fn register_secret(&self, name: &str, literal: &str) -> Result<bool, SecretError> {
        self.sanitizer.register_secret(name, literal)
    }

    /// Appends records from another producer inside the relay.
    pub fn writer(&self) -> &RunWriter {
        &self.writer
    }

    /// The shared screenshot veto.
    pub fn capture(&self) -> &Arc<CapturePolicy> {
        &self.capture
    }

    /// Triggers from the passive observer, from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Trigger> {
        self.triggers.subscribe()
    }

    /// Where evidence goes now, and what was lost.
    pub fn status(&self) -> EvidenceStatus {
        let current = self.writer.current();
        EvidenceStatus {
            run_id: current.id,
            run_dir: current.dir,
            session: self.session.clone(),
            dropped: self.tap.dropped() + self.writer.failures(),
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
}

/// A running pipeline. Stop it with [`Pipeline::finish`].
#[derive(Debug)]
pub struct Pipeline {
    handle: PipelineHandle,
    observer: Option<std::thread::JoinHandle<u64>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Pipeline {
    /// Opens (or joins) the session's run and starts the observer and writer threads. `Ok(None)`
    /// when evidence is disabled. An evidence directory that cannot be written is an
    /// [`Error::Evidence`]; the caller keeps forwarding without evidence.
    pub fn start(settings: &EvidenceSettings) -> Result<Option<Pipeline>, Error> {
        if !settings.enabled {
            return Ok(None);
        }
        let off = |e: &dyn std::fmt::Display| Error::Evidence {
            reason: e.to_string(),
        };
        let sanitizer = Arc::new(Sanitizer::new());
        for (name, secret) in &settings.secrets {
            sanitizer
                .register_secret(name, secret.expose())
                .map_err(|e| Error::Usage(format!("--secret-env {name}: {e}")))?;
        }
        let store = Store::open(EvidenceConfig::at(&settings.root)).map_err(|e| off(&e))?;
        let session = settings
            .session
            .clone()
            .unwrap_or_else(default_session_name);
        let run = store.join_session(&session, "relay").map_err(|e| off(&e))?;
        let (writer, writer_thread) = writer::start(store, session.clone(), run, sanitizer.clone())
            .map_err(|e| off(&format!("cannot start the evidence writer thread: {e}")))?;
        let (tap, rx) = Tap::channel(QUEUE_CAPACITY);
        let capture = Arc::new(CapturePolicy::new(settings.screenshots));
        let (triggers, _) = broadcast::channel(256);
        let observer = Observer::new(
            sanitizer.clone(),
            ObserverOptions::default(),
            capture.clone(),
        );
        let thread = {
            let writer = writer.clone();
            let triggers = triggers.clone();
            std::thread::Builder::new()
                .name("cdp-relay-observer".into())
                .spawn(move || passive::run(rx, observer, writer, triggers))
                .map_err(|e| off(&format!("cannot start the observer thread: {e}")))?
        };
        Ok(Some(Pipeline {
            handle: PipelineHandle {
                tap,
                sanitizer,
                writer,
                capture,
                triggers,
                session,
            },
            observer: Some(thread),
            writer: Some(writer_thread),
        }))
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
        let handle = self.handle.clone();
        tokio::task::spawn_blocking(move || {
            handle.tap.finish();
            let observer_dropped = observer.join().unwrap_or(0);
            let dropped = handle.tap.dropped() + observer_dropped;
            let summary = handle.writer.finish_blocking(dropped);
            if let Some(t) = writer_thread {
                let _ = t.join();
            }
            summary.map(|s| PipelineSummary {
                run_dir: s.run_dir,
                dropped: dropped + s.failed_writes,
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
