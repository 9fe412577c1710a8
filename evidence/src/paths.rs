//! Where things live under the evidence root, and the filesystem primitives that keep every
//! access confined to it: no symlink is followed below the root, every name is a validated id,
//! and whole-file writes are atomic (same-directory temp, write, fsync, rename, fsync directory).
//!
//! This module never decides policy (who owns a run, what to keep); it only builds and checks
//! paths and moves bytes.

use crate::error::Error;
use crate::ids::{random_u64, validate_id};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Directory of runs below the root.
pub(crate) const RUNS_DIR: &str = "runs";
/// Directory of session pointers below the root.
pub(crate) const SESSIONS_DIR: &str = "sessions";
/// The manifest inside a run directory.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The journal inside a run directory.
pub const JOURNAL_FILE: &str = "actions.jsonl";
/// The journal's sidecar lock file: every writer of the run holds it exclusively.
pub const LOCK_FILE: &str = "actions.jsonl.lock";
/// Budget accounting (artifact bytes, truncation flag), rewritten atomically under the run lock.
pub const BUDGET_FILE: &str = "budget.json";
/// A long-lived producer's space reserve in a run directory: freed first thing at finalize, so
/// a run recorded until the disk was full can still be finalized.
pub const RESERVE_FILE: &str = ".space-reserve";
/// Artifacts directory inside a run directory.
pub const ARTIFACTS_DIR: &str = "artifacts";
/// Suffix of a session pointer.
pub const POINTER_SUFFIX: &str = ".active";
/// Suffix of a session's lock file.
pub const SESSION_LOCK_SUFFIX: &str = ".lock";
/// Confinement reason for a symlink where a real file or directory must be.
pub(crate) const IS_SYMLINK: &str = "is a symlink";
/// Confinement reason for a small file that is implausibly large.
pub(crate) const TOO_LARGE: &str = "is larger than any file the format writes";
/// Prefix of run directories being deleted by retention.
pub(crate) const TRASH_PREFIX: &str = ".trash-";

/// Paths of one evidence root. The root is made absolute once; it may itself be a symlink
/// (the user chose it), but nothing below it may be.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    root: PathBuf,
}

impl Layout {
    pub(crate) fn new(root: &Path) -> Result<Layout, Error> {
        let root = if root.is_absolute() {
            root.to_path_buf()
        } else {
            let mut abs = std::env::current_dir()
                .map_err(|e| Error::io("cannot resolve the current directory for", root, e))?;
            // `./cdp-evidence` → `<cwd>/cdp-evidence`, not `<cwd>/./cdp-evidence` in messages.
            abs.extend(
                root.components()
                    .filter(|c| !matches!(c, std::path::Component::CurDir)),
            );
            abs
        };
        Ok(Layout { root })
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn runs_dir(&self) -> PathBuf {
        self.root.join(RUNS_DIR)
    }

    pub(crate) fn sessions_dir(&self) -> PathBuf {
        self.root.join(SESSIONS_DIR)
    }

    /// `runs/<runId>`; the id is validated.
    pub(crate) fn run_dir(&self, run_id: &str) -> Result<PathBuf, Error> {
        validate_id("run id", run_id)?;
        Ok(self.runs_dir().join(run_id))
    }

    pub(crate) fn pointer(&self, session: &str) -> Result<PathBuf, Error> {
        validate_id("session id", session)?;
        Ok(self
            .sessions_dir()
            .join(format!("{session}{POINTER_SUFFIX}")))
    }

    pub(crate) fn session_lock(&self, session: &str) -> Result<PathBuf, Error> {
        validate_id("session id", session)?;
        Ok(self
            .sessions_dir()
            .join(format!("{session}{SESSION_LOCK_SUFFIX}")))
    }

    /// Creates the root, `runs/` and `sessions/` as needed, refusing symlinked subdirectories.
    pub(crate) fn ensure(&self) -> Result<(), Error> {
        if let Err(e) = fs::create_dir_all(&self.root) {
            // create_dir_all reports "File exists" for a regular file; say what is wrong.
            if self.root.exists() && !self.root.is_dir() {
                return Err(Error::confinement(&self.root, "is not a directory"));
            }
            return Err(Error::io("cannot create evidence directory", &self.root, e));
        }
        ensure_dir(&self.runs_dir())?;
        ensure_dir(&self.sessions_dir())
    }
}

/// Creates `path` (one level) if missing; refuses anything that is not a real directory.
pub(crate) fn ensure_dir(path: &Path) -> Result<(), Error> {
    match fs::create_dir(path) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io("cannot create directory", path, e)),
    }
    check_real_dir(path)
}

/// Ok when `path` is a directory and not a symlink.
pub(crate) fn check_real_dir(path: &Path) -> Result<(), Error> {
    let meta =
        fs::symlink_metadata(path).map_err(|e| Error::io("cannot inspect directory", path, e))?;
    if meta.file_type().is_symlink() {
        return Err(Error::confinement(path, IS_SYMLINK));
    }
    if !meta.is_dir() {
        return Err(Error::confinement(path, "is not a directory"));
    }
    Ok(())
}

/// Like [`check_real_dir`], but `Ok(false)` when it does not exist.
pub(crate) fn real_dir_exists(path: &Path) -> Result<bool, Error> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("cannot inspect directory", path, e)),
        Ok(_) => check_real_dir(path).map(|()| true),
    }
}

/// Open options that refuse to follow a symlink in the last component (where supported).
pub(crate) fn no_follow(opts: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC);
    }
    opts
}

/// Maps an open error, naming a symlink refusal as a confinement error.
pub(crate) fn open_error(context: &'static str, path: &Path, e: io::Error) -> Error {
    // O_NOFOLLOW on a symlink fails with ELOOP.
    #[cfg(unix)]
    if e.raw_os_error() == Some(nix::libc::ELOOP) {
        return Error::confinement(path, IS_SYMLINK);
    }
    Error::io(context, path, e)
}

/// Opens an existing file for reading without following a final symlink.
pub(crate) fn open_read(path: &Path) -> Result<File, Error> {
    no_follow(OpenOptions::new().read(true))
        .open(path)
        .map_err(|e| open_error("cannot open", path, e))
}

/// Reads a whole small file (manifest, pointer, budget) without following symlinks,
/// refusing files over `limit` bytes. `Ok(None)` when it does not exist.
pub(crate) fn read_small(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, Error> {
    let file = match no_follow(OpenOptions::new().read(true)).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(open_error("cannot open", path, e)),
    };
    let mut buf = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io("cannot read", path, e))?;
    if buf.len() as u64 > limit {
        return Err(Error::confinement(path, TOO_LARGE));
    }
    Ok(Some(buf))
}

/// fsyncs a directory so a rename or create inside it is durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), Error> {
    #[cfg(unix)]
    {
        let d = File::open(dir).map_err(|e| Error::io("cannot open directory", dir, e))?;
        d.sync_all()
            .map_err(|e| Error::io("cannot sync directory", dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// A same-directory temporary name for `path`: hidden, unique per call.
fn temp_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(
        ".{name}.tmp-{}-{:016x}",
        std::process::id(),
        random_u64()
    ))
}

/// Writes `bytes` to a fresh same-directory temp file and fsyncs it; returns the temp path.
fn write_temp(path: &Path, bytes: &[u8]) -> Result<PathBuf, Error> {
    let tmp = temp_name(path);
    let result = (|| {
        let mut f = no_follow(OpenOptions::new().write(true).create_new(true))
            .open(&tmp)
            .map_err(|e| open_error("cannot create", &tmp, e))?;
        crate::hooks::check_write(path)
            .and_then(|()| f.write_all(bytes))
            .map_err(|e| Error::io("cannot write", &tmp, e))?;
        f.sync_all().map_err(|e| Error::io("cannot sync", &tmp, e))
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(tmp)
}

/// Atomically replaces `path` with `bytes`: temp file in the same directory, write, fsync,
/// rename over, fsync the directory. Readers see the old or the new content, never a mix.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let tmp = write_temp(path, bytes)?;
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io("cannot replace", path, e));
    }
    sync_dir(parent(path))
}

/// Atomically creates `path` with `bytes` only if it does not exist yet (create-exclusive with
/// its content already in place: temp file, fsync, `link` — which fails if the name exists —,
/// unlink the temp, fsync the directory). `Ok(false)` when someone else's file is there.
pub(crate) fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<bool, Error> {
    let tmp = write_temp(path, bytes)?;
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            sync_dir(parent(path))?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        // Filesystems without hard links (FAT, some FUSE mounts): plain O_EXCL create. The content
        // is then briefly partial, which is why joiners also hold the session lock.
        Err(_) => create_new_direct(path, bytes),
    }
}

fn create_new_direct(path: &Path, bytes: &[u8]) -> Result<bool, Error> {
    let mut f = match no_follow(OpenOptions::new().write(true).create_new(true)).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(open_error("cannot create", path, e)),
    };
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    if let Err(e) = written {
        let _ = fs::remove_file(path);
        return Err(Error::io("cannot write", path, e));
    }
    sync_dir(parent(path))?;
    Ok(true)
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

/// Total size of regular files below `dir`, not following symlinks; 0 if it does not exist.
pub(crate) fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => dir_size(&entry.path()),
            Ok(t) if t.is_file() => entry.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_root_is_made_absolute_without_dot_segments() {
        let cwd = std::env::current_dir().unwrap();
        let l = Layout::new(Path::new("./cdp-evidence")).unwrap();
        assert_eq!(l.root(), cwd.join("cdp-evidence"));
        let l = Layout::new(Path::new("a/./b/../c")).unwrap();
        assert_eq!(l.root(), cwd.join("a").join("b").join("..").join("c"));
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn create_exclusive_refuses_second_claim() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.active");
        assert!(create_exclusive(&p, b"first").unwrap());
        assert!(!create_exclusive(&p, b"second").unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"first");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), b"x").unwrap();
        let link = dir.path().join("manifest.json");
        std::os::unix::fs::symlink(outside.path().join("secret"), &link).unwrap();
        assert!(matches!(
            read_small(&link, 100),
            Err(Error::Confinement { .. })
        ));
        let dlink = dir.path().join("runs");
        std::os::unix::fs::symlink(outside.path(), &dlink).unwrap();
        assert!(matches!(ensure_dir(&dlink), Err(Error::Confinement { .. })));
        assert!(matches!(
            real_dir_exists(&dlink),
            Err(Error::Confinement { .. })
        ));
    }

    #[test]
    fn read_small_limits_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        fs::write(&p, vec![b'a'; 11]).unwrap();
        assert!(read_small(&p, 10).is_err());
        assert_eq!(read_small(&p, 11).unwrap().unwrap().len(), 11);
        assert!(read_small(&dir.path().join("none"), 10).unwrap().is_none());
    }
}
