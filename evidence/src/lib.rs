//! cdp-evidence: the on-disk evidence run format shared by cdp-relay and other producers.
//!
//! ```text
//! <root>/runs/<runId>/manifest.json        written atomically at create and at finalize only
//! <root>/runs/<runId>/actions.jsonl        append-only journal, one JSON record per line
//! <root>/runs/<runId>/actions.jsonl.lock   sidecar lock every writer holds (flock, exclusive)
//! <root>/runs/<runId>/budget.json          artifact accounting, rewritten under the lock
//! <root>/runs/<runId>/artifacts/           screenshots and other generated evidence
//! <root>/sessions/<sessionId>.active       the session's active-run pointer
//! <root>/sessions/<sessionId>.lock         lock held while joining or clearing the pointer
//! ```
//!
//! The journal is the redaction boundary: a [`Record`] can only be built from `cdp_sanitize`
//! types, so nothing unsanitized can be appended. Reading back gives plain [`StoredRecord`]s,
//! whose payloads parse ([`StoredRecord::typed_payload`]) into the same payload types in their
//! read-only [`Stored`] form. [`RunDir`] reads one run confined to its directory (every file
//! opened with `openat(O_NOFOLLOW)`), for the report renderer.
//! The full contract for producers in other languages is `docs/evidence-format.md`.
//!
//! ```
//! use cdp_evidence::{Action, EvidenceConfig, Record, RecordKind, Store, Totals};
//! use cdp_sanitize::SafeText;
//! # let tmp = tempfile::tempdir().unwrap();
//! let store = Store::open(EvidenceConfig::at(tmp.path()))?;
//! let run = store.join_session("demo", "relay")?;
//! run.append(Record::new(
//!     SafeText::literal("cdp"),
//!     RecordKind::Action(Action::new(SafeText::literal("Page.reload"))),
//! ))?;
//! run.finalize(Totals::default())?;
//! let journal = store.read_journal(run.id())?;
//! assert_eq!(journal.records.len(), 3); // runStarted, the action, runFinalized
//! # Ok::<(), cdp_evidence::Error>(())
//! ```

#![forbid(unsafe_code)]

mod bound;
mod budget;
mod config;
mod error;
mod hooks;
mod ids;
mod journal;
mod manifest;
mod paths;
mod pointer;
pub mod producer;
mod reader;
mod record;
mod rejoin;
mod retention;
mod run;
mod rundir;
mod store;
pub mod time;
mod vocab;

pub use cdp_sanitize::{InputType, Word, Words};
pub use config::{
    EvidenceConfig, DEFAULT_ARTIFACT_BUDGET_BYTES, DEFAULT_JOURNAL_BUDGET_BYTES,
    DEFAULT_KEEP_FINALIZED_RUNS, DEFAULT_MAX_RECORD_BYTES, DEFAULT_ROOT, MIN_JOURNAL_BUDGET_BYTES,
    MIN_MAX_RECORD_BYTES,
};
pub use error::Error;
/// Fault injection for tests: the `test-hooks` feature only.
#[cfg(feature = "test-hooks")]
pub use hooks::fail_writes_under;
pub use ids::{validate_id, ActionId, Source, MAX_ID_LEN};
/// The torn-append hook's variable and its signal: the `test-hooks` feature only.
#[cfg(feature = "test-hooks")]
pub use journal::{TEST_HOOK_TORN_APPEND_ENV, TEST_HOOK_TORN_APPEND_READY};
pub use manifest::{Manifest, ManifestTotals, Redactions, Truncation, EVIDENCE_VERSION};
pub use paths::{
    ARTIFACTS_DIR, BUDGET_FILE, JOURNAL_FILE, LOCK_FILE, MANIFEST_FILE, POINTER_SUFFIX,
    RESERVE_FILE, SESSION_LOCK_SUFFIX,
};
pub use reader::{
    parse_journal, read_bounded_line, read_journal_from, read_line_prefix, scan_journal,
    BoundedLine, CorruptLine, JournalLine, JournalRead, StoredPage, StoredPayload, StoredRecord,
    TornTail, MAX_LINE_BYTES,
};
pub use record::tool::{JsonType, StoredToolArgument, ToolArgument, ToolArgumentOf, ToolResult};
pub use record::{
    Action, ActionOf, ArtifactRef, Console, ConsoleOf, CustomKind, DropReason, Form, Lifecycle,
    LifecycleOf, Locator, LocatorKind, LocatorOf, Marker, MarkerKind, Point, Record, RecordKind,
    Repeat, Sanitized, Stored, StoredAction, StoredConsole, StoredInput, StoredLifecycle,
    StoredLocator, StoredNetwork, StoredRepeat, StoredVerification, Verification, VerificationOf,
    Verified, TARGET_FIELDS, TOOL_CALL_CANDIDATES_FIELD, TOOL_CALL_FIELD,
};
pub use rejoin::{JoinAs, Rejoined, RunEnded};
pub use retention::{PruneReport, RetentionHold, RunInfo};
pub use run::{ArtifactOutcome, Run, Totals, METADATA_ALLOWANCE};
pub use rundir::{check_artifact_path, ArtifactFile, ArtifactRefusal, RunDir};
pub use store::Store;
/// The vocabulary: the format's words, each spelled once (see `docs/evidence-format.md`).
pub use vocab::{
    ActionDetail, ActionMethod, ConsoleLevel, FrameAfter, Kind, LifecycleEvent, MarkerName,
    MouseButton, RunStatus, Status, VerdictReason, GATEWAY_TOOL,
};
