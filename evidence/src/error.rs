//! The crate's one error type. Variants carry the path or id they are about; none carries
//! record content (it may be sensitive even after sanitizing a neighbour field).

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong reading or writing an evidence root.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A filesystem operation failed.
    #[error("{context} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. "cannot create run directory".
        context: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: io::Error,
    },
    /// An id (session, run, source, artifact name) is not a safe path component.
    /// The value itself is not repeated: it may have come from untrusted input.
    #[error("invalid {what}: {reason} (allowed: 1-{max} characters of A-Z a-z 0-9 . _ -, not starting with '.')", max = crate::ids::MAX_ID_LEN)]
    InvalidId {
        /// Which kind of id.
        what: &'static str,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A path would leave the evidence root (symlink, `..`, absolute path or non-directory).
    #[error("refusing {}: {reason}", path.display())]
    Confinement {
        /// The path that was refused.
        path: PathBuf,
        /// Why, e.g. "is a symlink".
        reason: &'static str,
    },
    /// The configuration cannot work.
    #[error("invalid evidence configuration: {reason}")]
    Config {
        /// What is wrong and what to change.
        reason: String,
    },
    /// A manifest exists but is not a usable JSON object.
    #[error("invalid manifest {}: {reason}", path.display())]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong (never the file's content).
        reason: String,
    },
    /// A session pointer could not be parsed.
    #[error("invalid session pointer {}: {reason}", path.display())]
    Pointer {
        /// The pointer file.
        path: PathBuf,
        /// What is wrong (never the file's content).
        reason: String,
    },
    /// No run with this id exists under the evidence root.
    #[error("no evidence run {run_id:?} in {}", path.display())]
    RunNotFound {
        /// The requested run id.
        run_id: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The run was finalized (by this or another producer); nothing more can be added.
    #[error("evidence run {run_id:?} is finalized; join the session again to start a new run")]
    RunFinalized {
        /// The finalized run.
        run_id: String,
    },
    /// A record stays over the size limit even after cutting every field.
    #[error("record of {bytes} bytes exceeds the {max}-byte limit even after cutting its fields")]
    RecordTooLarge {
        /// Size after cutting.
        bytes: usize,
        /// The configured limit.
        max: usize,
    },
    /// A record could not be serialized (a bug, not an input problem).
    #[error("cannot serialize evidence record: {0}")]
    Serialize(#[source] serde_json::Error),
    /// The operation needs evidence but the store was opened with `enabled = false`.
    #[error("evidence is disabled")]
    Disabled,
}

impl Error {
    pub(crate) fn io(context: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            context,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn confinement(path: impl Into<PathBuf>, reason: &'static str) -> Self {
        Error::Confinement {
            path: path.into(),
            reason,
        }
    }
}
