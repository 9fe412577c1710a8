//! Uploading one finalized run: its files to `<prefix>/<runId>/…`, streaming (multipart for
//! large files, never a whole large file in memory), and `manifest.json` last — so a run is in
//! the bucket only once it is whole. The run's state sidecar says how it went.
//!
//! Reads the run confined to its directory (every file opened relative to the directory with
//! `O_NOFOLLOW`, regular files only), never writes into it except the sidecar, and never
//! uploads the sidecar, lock files or temporary files.

use super::state::{self, RunUpload, UploadState, LOCK_FILE, STATE_FILE};
use super::target::{one_line, Target};
use crate::Error;
use cdp_evidence::{RunStatus, ARTIFACTS_DIR, MANIFEST_FILE};
use futures_util::StreamExt;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;
use object_store::{ObjectStoreExt, WriteMultipart};
use serde::Serialize;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::SystemTime;

/// Files up to this size go in one request; larger ones in parts. 8 MiB.
const SINGLE_PUT_MAX: u64 = 8 * 1024 * 1024;
/// Part size of a multipart upload: S3's minimum, so memory stays small. 5 MiB.
const PART_SIZE: usize = 5 * 1024 * 1024;
/// Parts in flight per large file: memory is about (this + 1) × [`PART_SIZE`].
const PARTS_IN_FLIGHT: usize = 2;
/// Small files uploaded at once.
const FILES_IN_FLIGHT: usize = 8;
/// The manifest is never larger than this (the evidence format's own limit).
const MANIFEST_LIMIT: u64 = 1 << 20;

/// What the uploader should do with a run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Upload only runs that recorded a failure.
    pub only_failed: bool,
    /// The host name recorded in the uploaded manifest (a pod's name in Kubernetes).
    pub host: String,
    /// Who uploads: `relay`, `cli`.
    pub source: &'static str,
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// Uploaded now (or skipped now by `only_failed`): the state says which.
    Done(RunUpload),
    /// Found done by an earlier attempt; nothing was sent.
    AlreadyDone(RunUpload),
    /// Another process is uploading it right now.
    Busy,
    /// Not a run an uploader takes: running, legacy, or without a manifest (the reason).
    NotFinalized(&'static str),
}

/// One file of the run, as uploaded.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FileEntry {
    path: String,
    bytes: u64,
}

/// Uploads the finalized run in `run_dir` (see the module docs). On failure the sidecar says
/// `failed` with the reason, and the error is returned; the run stays local.
pub async fn upload_run(
    target: &Target,
    run_dir: &Path,
    opts: &RunOptions,
) -> Result<Attempt, Error> {
    let run_id = run_id_of(run_dir)?;
    let Some(_lock) = try_lock(run_dir)? else {
        return Ok(Attempt::Busy);
    };
    let dir = open_dir(run_dir)?;
    let manifest_bytes = match read_manifest(&dir, run_dir)? {
        Some(b) => b,
        None => return Ok(Attempt::NotFinalized("it has no manifest")),
    };
    let manifest = cdp_evidence::Manifest::parse(&manifest_bytes)
        .map_err(|_| local(run_dir, "its manifest is not a JSON object"))?;
    if manifest.is_legacy() {
        return Ok(Attempt::NotFinalized("it is a legacy run"));
    }
    if manifest.run_status() != Some(RunStatus::Finalized) {
        return Ok(Attempt::NotFinalized("it is not finalized"));
    }
    let mut st = match state::read(run_dir) {
        Ok(Some(s)) if s.state.is_done() => return Ok(Attempt::AlreadyDone(s)),
        Ok(Some(s)) => s,
        // A foreign sidecar is replaced by ours: the run is uploaded like any other.
        Ok(None) | Err(_) => RunUpload::pending(target.run_url(&run_id)),
    };
    st.target = target.run_url(&run_id);
    st.attempts = st.attempts.saturating_add(1);
    st.last_attempt_at = Some(now());
    // The state is kept in memory; the sidecar is a record of it, written when the disk lets
    // it. An upload never waits for free disk: a full evidence disk is when uploads matter most
    // (a run that is not uploaded is never pruned, so nothing else frees space).
    let recorded = record_state(run_dir, &st, true);

    let failures = failures(run_dir);
    st.failures = failures;
    if opts.only_failed && failures == Some(0) {
        st.state = UploadState::Skipped;
        st.last_error = None;
        record_state(run_dir, &st, recorded);
        return Ok(Attempt::Done(st));
    }
    match upload_files(
        target,
        &dir,
        run_dir,
        &run_id,
        &manifest_bytes,
        failures,
        opts,
    )
    .await
    {
        Ok((files, bytes)) => {
            st.state = UploadState::Uploaded;
            st.last_error = None;
            st.uploaded_at = Some(now());
            st.files = Some(files);
            st.bytes = Some(bytes);
            // Unrecorded, the run is uploaded again (the same bytes, the manifest last) by a
            // later scan, and retention keeps it until then.
            record_state(run_dir, &st, recorded);
            Ok(Attempt::Done(st))
        }
        Err(e) => {
            st.state = UploadState::Failed;
            st.last_error = Some(reason_of(&e));
            // The failure is what the caller reports; a sidecar that cannot be written only
            // means the run is tried again from scratch.
            record_state(run_dir, &st, recorded);
            Err(e)
        }
    }
}

/// The run's files first (small ones several at a time, large ones in parts), then the
/// manifest with an `upload` member naming them. Returns (files, bytes) with the manifest.
async fn upload_files(
    target: &Target,
    dir: &File,
    run_dir: &Path,
    run_id: &str,
    manifest_bytes: &[u8],
    failures: Option<u64>,
    opts: &RunOptions,
) -> Result<(u64, u64), Error> {
    let files = list_files(dir, run_dir)?;
    let (large, small): (Vec<_>, Vec<_>) = files.iter().partition(|(_, len)| *len > SINGLE_PUT_MAX);
    let mut puts =
        futures_util::stream::iter(small.into_iter().map(|(rel, len)| async move {
            put_small(target, dir, run_dir, run_id, rel, *len).await
        }))
        .buffer_unordered(FILES_IN_FLIGHT);
    while let Some(r) = puts.next().await {
        r?;
    }
    drop(puts);
    for (rel, len) in large {
        put_large(target, dir, run_dir, run_id, rel, *len).await?;
    }
    let mut entries: Vec<FileEntry> = files
        .iter()
        .map(|(path, bytes)| FileEntry {
            path: path.clone(),
            bytes: *bytes,
        })
        .collect();
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    let mut manifest: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(manifest_bytes)
            .map_err(|_| local(run_dir, "its manifest is not a JSON object"))?;
    manifest.insert(
        "upload".into(),
        serde_json::json!({
            "host": opts.host,
            "uploadedAt": now(),
            "uploadedBy": {"source": opts.source, "pid": std::process::id()},
            "failures": failures,
            "files": entries,
        }),
    );
    let mut body = serde_json::to_vec_pretty(&manifest)
        .map_err(|_| local(run_dir, "its manifest cannot be encoded"))?;
    body.push(b'\n');
    let manifest_len = body.len() as u64;
    target
        .store()
        .put(&target.object(run_id, MANIFEST_FILE), body.into())
        .await
        .map_err(|e| target.error(&e))?;
    let bytes = files.iter().map(|(_, n)| n).sum::<u64>() + manifest_len;
    Ok((files.len() as u64 + 1, bytes))
}

async fn put_small(
    target: &Target,
    dir: &File,
    run_dir: &Path,
    run_id: &str,
    rel: &str,
    len: u64,
) -> Result<(), Error> {
    let file = open_relative(dir, run_dir, rel)?;
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(SINGLE_PUT_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| local(run_dir, &format!("cannot read {rel}: {e}")))?;
    if bytes.len() as u64 != len {
        return Err(local(
            run_dir,
            &format!("{rel} changed while it was uploaded"),
        ));
    }
    target
        .store()
        .put(&target.object(run_id, rel), bytes.into())
        .await
        .map_err(|e| target.error(&e))?;
    Ok(())
}

/// A large file in parts, read a chunk at a time: at most [`PARTS_IN_FLIGHT`] parts are
/// uploading while the next one fills.
async fn put_large(
    target: &Target,
    dir: &File,
    run_dir: &Path,
    run_id: &str,
    rel: &str,
    len: u64,
) -> Result<(), Error> {
    let mut file = open_relative(dir, run_dir, rel)?;
    let upload = target
        .store()
        .put_multipart(&target.object(run_id, rel))
        .await
        .map_err(|e| target.error(&e))?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
    let mut buf = vec![0u8; 1024 * 1024];
    let mut sent = 0u64;
    let outcome: Result<(), Error> = async {
        loop {
            let n = file
                .read(&mut buf)
                .map_err(|e| local(run_dir, &format!("cannot read {rel}: {e}")))?;
            if n == 0 {
                break;
            }
            sent += n as u64;
            if sent > len {
                return Err(local(run_dir, &format!("{rel} grew while it was uploaded")));
            }
            writer
                .wait_for_capacity(PARTS_IN_FLIGHT)
                .await
                .map_err(|e| target.error(&e))?;
            writer.write(&buf[..n]);
        }
        if sent != len {
            return Err(local(
                run_dir,
                &format!("{rel} shrank while it was uploaded"),
            ));
        }
        Ok(())
    }
    .await;
    match outcome {
        Ok(()) => {
            writer.finish().await.map_err(|e| target.error(&e))?;
            Ok(())
        }
        Err(e) => {
            // Best effort: the parts already sent are dropped (a bucket lifecycle rule aborts
            // what a killed process leaves behind).
            let _ = writer.abort().await;
            Err(e)
        }
    }
}

/// Regular files of the run to upload, as (relative path, size): top-level files and
/// `artifacts/*`, except the manifest (sent last), lock files, the upload sidecar and hidden
/// (temporary) names. A symlink anywhere is refused: the format never makes one.
fn list_files(dir: &File, run_dir: &Path) -> Result<Vec<(String, u64)>, Error> {
    let mut out = Vec::new();
    for (rel, is_dir) in entries(run_dir, "")? {
        if rel == ARTIFACTS_DIR && is_dir {
            for (name, sub_dir) in entries(&run_dir.join(ARTIFACTS_DIR), "artifacts/")? {
                if !sub_dir {
                    out.push(name);
                }
            }
        } else if !is_dir && !skipped(&rel) {
            out.push(rel);
        }
    }
    out.sort();
    out.into_iter()
        .map(|rel| {
            let len = open_relative(dir, run_dir, &rel)?
                .metadata()
                .map_err(|e| local(run_dir, &format!("cannot inspect {rel}: {e}")))?
                .len();
            Ok((rel, len))
        })
        .collect()
}

fn skipped(name: &str) -> bool {
    name == MANIFEST_FILE
        || name == STATE_FILE
        || name == LOCK_FILE
        || name.ends_with(".lock")
        || name.starts_with('.')
}

/// Names in a directory as (`prefix` + name, is a directory); names that fail the id rule
/// (hidden, temporary, odd bytes) are left out, symlinks refused.
fn entries(path: &Path, prefix: &str) -> Result<Vec<(String, bool)>, Error> {
    let read = std::fs::read_dir(path).map_err(|e| local(path, &format!("cannot list it: {e}")))?;
    let mut out = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| local(path, &format!("cannot list it: {e}")))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if cdp_evidence::validate_id("file name", &name).is_err() {
            continue;
        }
        let kind = entry
            .file_type()
            .map_err(|e| local(path, &format!("cannot inspect {name}: {e}")))?;
        if kind.is_symlink() {
            return Err(local(path, &format!("{prefix}{name} is a symlink")));
        }
        out.push((format!("{prefix}{name}"), kind.is_dir()));
    }
    Ok(out)
}

fn open_dir(run_dir: &Path) -> Result<File, Error> {
    let fd = nix::fcntl::open(
        run_dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| local(run_dir, &format!("cannot open it: {e}")))?;
    Ok(File::from(fd))
}

/// Opens `name` or `artifacts/name` below the run directory without following a symlink at
/// any step; only a regular file is returned.
fn open_relative(dir: &File, run_dir: &Path, rel: &str) -> Result<File, Error> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    let refuse = |e: nix::errno::Errno| local(run_dir, &format!("cannot open {rel}: {e}"));
    let file = match rel.split_once('/') {
        None => openat(dir, rel, flags, Mode::empty()).map_err(refuse)?,
        Some((sub, name)) => {
            let sub =
                openat(dir, sub, flags | OFlag::O_DIRECTORY, Mode::empty()).map_err(refuse)?;
            openat(&sub, name, flags, Mode::empty()).map_err(refuse)?
        }
    };
    let file = File::from(file);
    let meta = file
        .metadata()
        .map_err(|e| local(run_dir, &format!("cannot inspect {rel}: {e}")))?;
    if !meta.is_file() {
        return Err(local(run_dir, &format!("{rel} is not a regular file")));
    }
    Ok(file)
}

fn read_manifest(dir: &File, run_dir: &Path) -> Result<Option<Vec<u8>>, Error> {
    let file = match open_relative(dir, run_dir, MANIFEST_FILE) {
        Ok(f) => f,
        Err(_) if !run_dir.join(MANIFEST_FILE).exists() => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(MANIFEST_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| local(run_dir, &format!("cannot read its manifest: {e}")))?;
    if bytes.len() as u64 > MANIFEST_LIMIT {
        return Err(local(
            run_dir,
            "its manifest is larger than the format allows",
        ));
    }
    Ok(Some(bytes))
}

/// Holds the run's upload lock, or `None` when another uploader holds it (`Some(None)`: no
/// lock could be made for want of disk).
fn try_lock(run_dir: &Path) -> Result<Option<Option<File>>, Error> {
    let path = run_dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC)
        .open(&path);
    let file = match file {
        Ok(f) => f,
        // No room for an empty lock file: upload unlocked rather than not at all (two
        // uploaders at once send the same bytes, the manifest last, so the bucket stays whole).
        Err(e)
            if e.raw_os_error() == Some(nix::libc::ENOSPC)
                || e.raw_os_error() == Some(nix::libc::EDQUOT) =>
        {
            return Ok(Some(None));
        }
        Err(e) => return Err(local(run_dir, &format!("cannot open {LOCK_FILE}: {e}"))),
    };
    match file.try_lock() {
        Ok(()) => Ok(Some(Some(file))),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(local(run_dir, &format!("cannot lock {LOCK_FILE}: {e}")))
        }
    }
}

/// The run id is the directory's name, checked by the id rule.
pub(crate) fn run_id_of(run_dir: &Path) -> Result<String, Error> {
    let name = run_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    cdp_evidence::validate_id("run id", name).map_err(|e| local(run_dir, &e.to_string()))?;
    Ok(name.to_owned())
}

/// Failures the run recorded, as its report counts them; `None` when the run cannot be read.
fn failures(run_dir: &Path) -> Option<u64> {
    let mut options = cdp_report::Options::default();
    // Counting needs the timeline, not the pictures.
    options.max_frames = 0;
    options.max_embedded_bytes = 0;
    cdp_report::render_to_memory(run_dir, &options)
        .ok()
        .map(|o| o.figures.failures as u64)
}

/// Writes the sidecar if the disk lets it; says so once per attempt (`warn`) when it does not.
/// Returns whether it was written.
fn record_state(run_dir: &Path, st: &RunUpload, warn: bool) -> bool {
    match state::write(run_dir, st) {
        Ok(()) => true,
        Err(e) => {
            if warn {
                tracing::warn!(
                    "upload: cannot record the upload state of {} ({e}); uploading it anyway",
                    run_dir.display()
                );
            }
            false
        }
    }
}

fn local(path: &Path, what: &str) -> Error {
    Error::Upload {
        target: path.display().to_string(),
        reason: what.to_owned(),
    }
}

/// The one line a sidecar and the status API keep for a failure.
pub(crate) fn reason_of(e: &Error) -> String {
    match e {
        Error::Upload { reason, .. } | Error::Remote { reason, .. } => reason.clone(),
        other => one_line(other),
    }
}

pub(crate) fn now() -> String {
    cdp_evidence::time::format_rfc3339_millis(SystemTime::now())
}
