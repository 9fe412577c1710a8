//! One run directory, opened for reading and confined to it: the report renderer's door into a
//! run.
//!
//! The directory is opened once (the caller chose that path; like the evidence root it may be a
//! symlink) and every file below it is opened *relative to that descriptor* with
//! `openat(O_NOFOLLOW)`: no symlink is followed below the run directory, nothing is checked first
//! and opened later, and a directory renamed or swapped under a running reader cannot redirect
//! it. FIFOs and devices are opened non-blocking and refused before a byte is read.
//!
//! Never writes the journal, the manifest, the budget or artifacts. The one write is
//! [`RunDir::write_output`], for rendered files (`report.html`, `summary.md`) beside them,
//! atomically (temp, write, fsync, rename, fsync the directory).

use crate::error::Error;
use crate::ids::{random_u64, validate_id};
use crate::manifest::{Manifest, MANIFEST_LIMIT};
use crate::paths::{
    ARTIFACTS_DIR, BUDGET_FILE, IS_SYMLINK, JOURNAL_FILE, LOCK_FILE, MANIFEST_FILE,
};
use crate::reader::{read_journal_from, scan_journal, JournalLine, JournalRead};
use nix::fcntl::{openat, renameat, OFlag};
use nix::sys::stat::Mode;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// Flags for every read below the run directory.
fn read_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK
}

/// A run directory opened for reading (see the module docs).
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    dir: File,
}

/// Why an `artifacts` entry of a record was not opened. Shown to users as is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ArtifactRefusal {
    /// The path is not `artifacts/<name>` (absolute, `..`, another directory).
    NotUnderArtifacts,
    /// The file name is not a plain, visible name of `[A-Za-z0-9._-]`.
    InvalidName,
    /// `artifacts/` is missing, a symlink or not a directory.
    ArtifactsDirRefused,
    /// No such file.
    Missing,
    /// The file is a symlink (never followed).
    Symlink,
    /// The file is not a regular file (directory, FIFO, socket, device).
    NotRegularFile,
    /// The file has more than one name: a hard link planted here may be any file of the same
    /// filesystem (`O_NOFOLLOW` does not see hard links). Writers create artifacts with one.
    HardLinked,
    /// The file exists but could not be opened or read.
    Unreadable,
}

impl ArtifactRefusal {
    /// A short reason, e.g. `is a symlink`.
    pub fn reason(self) -> &'static str {
        match self {
            ArtifactRefusal::NotUnderArtifacts => "is not a path under artifacts/",
            ArtifactRefusal::InvalidName => "is not a plain file name",
            ArtifactRefusal::ArtifactsDirRefused => "artifacts/ is not a real directory",
            ArtifactRefusal::Missing => "is missing",
            ArtifactRefusal::Symlink => "is a symlink",
            ArtifactRefusal::NotRegularFile => "is not a regular file",
            ArtifactRefusal::HardLinked => "has other hard links",
            ArtifactRefusal::Unreadable => "cannot be read",
        }
    }
}

impl fmt::Display for ArtifactRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

impl std::error::Error for ArtifactRefusal {}

/// Checks the syntax of a record's `artifacts` entry without touching the filesystem: it must be
/// `artifacts/<name>` with `<name>` passing the id rule. Returns the name.
pub fn check_artifact_path(relative: &str) -> Result<&str, ArtifactRefusal> {
    let name = relative
        .strip_prefix(ARTIFACTS_DIR)
        .and_then(|rest| rest.strip_prefix('/'))
        .ok_or(ArtifactRefusal::NotUnderArtifacts)?;
    validate_id("artifact name", name).map_err(|_| ArtifactRefusal::InvalidName)?;
    Ok(name)
}

/// An artifact opened inside its run: a regular file, not a symlink.
#[derive(Debug)]
pub struct ArtifactFile {
    file: File,
    len: u64,
}

impl ArtifactFile {
    /// Its size when it was opened.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads the whole file if it holds at most `max` bytes; `Ok(None)` if it holds more (it
    /// may have grown since it was opened). Never reads more than `max + 1` bytes.
    pub fn read_capped(self, max: u64) -> io::Result<Option<Vec<u8>>> {
        let mut buf = Vec::with_capacity(self.len.min(max) as usize);
        self.file
            .take(max.saturating_add(1))
            .read_to_end(&mut buf)?;
        Ok((buf.len() as u64 <= max).then_some(buf))
    }
}

/// Reads from the confined file (e.g. a few bytes to check a file signature).
impl Read for ArtifactFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf)
    }
}

fn refusal(e: nix::errno::Errno) -> ArtifactRefusal {
    use nix::errno::Errno;
    match e {
        Errno::ENOENT => ArtifactRefusal::Missing,
        Errno::ELOOP => ArtifactRefusal::Symlink,
        Errno::ENOTDIR | Errno::EISDIR => ArtifactRefusal::NotRegularFile,
        _ => ArtifactRefusal::Unreadable,
    }
}

fn regular(file: File) -> Result<(File, u64), ArtifactRefusal> {
    let meta = file.metadata().map_err(|_| ArtifactRefusal::Unreadable)?;
    if !meta.is_file() {
        return Err(ArtifactRefusal::NotRegularFile);
    }
    if std::os::unix::fs::MetadataExt::nlink(&meta) > 1 {
        return Err(ArtifactRefusal::HardLinked);
    }
    Ok((file, meta.len()))
}

impl RunDir {
    /// Opens `path` as a run directory. The path itself may be a symlink (the caller chose it);
    /// nothing below it is ever followed.
    pub fn open(path: &Path) -> Result<RunDir, Error> {
        let fd = nix::fcntl::open(
            path,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io("cannot open run directory", path, io::Error::from(e)))?;
        Ok(RunDir {
            path: path.to_path_buf(),
            dir: File::from(fd),
        })
    }

    /// The path the directory was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens a regular file directly in the run directory; `Ok(None)` when it does not exist.
    fn open_file(&self, name: &str, limit_context: &'static str) -> Result<Option<File>, Error> {
        let path = self.path.join(name);
        let file = match openat(&self.dir, name, read_flags(), Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(nix::errno::Errno::ENOENT) => return Ok(None),
            Err(nix::errno::Errno::ELOOP) => return Err(Error::confinement(path, IS_SYMLINK)),
            Err(e) => return Err(Error::io(limit_context, path, io::Error::from(e))),
        };
        let meta = file
            .metadata()
            .map_err(|e| Error::io("cannot inspect", &path, e))?;
        if !meta.is_file() {
            return Err(Error::confinement(path, "is not a regular file"));
        }
        Ok(Some(file))
    }

    /// Reads `manifest.json`; `Ok(None)` for a run without one (a legacy or half-created run).
    /// Any JSON object is accepted (see [`Manifest`]); other content is [`Error::Manifest`].
    pub fn manifest(&self) -> Result<Option<Manifest>, Error> {
        let Some(file) = self.open_file(MANIFEST_FILE, "cannot open")? else {
            return Ok(None);
        };
        let path = self.path.join(MANIFEST_FILE);
        let mut bytes = Vec::new();
        file.take(MANIFEST_LIMIT + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("cannot read", &path, e))?;
        if bytes.len() as u64 > MANIFEST_LIMIT {
            return Err(Error::confinement(
                path,
                "is larger than any file the format writes",
            ));
        }
        Manifest::parse(&bytes)
            .map(Some)
            .map_err(|reason| Error::Manifest { path, reason })
    }

    /// Reads the journal the manifest names (`actions.jsonl` without a manifest or when its
    /// `actionLog` is not a plain name); `Ok(None)` when there is no journal file. A torn final
    /// line is skipped and reported, bad lines are counted (see [`read_journal_from`]).
    pub fn journal(&self, manifest: Option<&Manifest>) -> Result<Option<JournalRead>, Error> {
        let name = manifest.map_or(JOURNAL_FILE, Manifest::journal_file);
        let Some(file) = self.open_file(name, "cannot open journal")? else {
            return Ok(None);
        };
        read_journal_from(BufReader::new(file))
            .map(Some)
            .map_err(|e| Error::io("cannot read", self.path.join(name), e))
    }

    /// Streams the journal the manifest names (as [`RunDir::journal`] finds it) line by line
    /// into `f`, reading at most `limit` bytes (so a second pass over a journal that is still
    /// growing reads what the first one read); memory stays bounded by a line. Returns the
    /// bytes read, `Ok(None)` when there is no journal file.
    pub fn scan_journal(
        &self,
        manifest: Option<&Manifest>,
        limit: Option<u64>,
        f: impl FnMut(JournalLine),
    ) -> Result<Option<u64>, Error> {
        let name = manifest.map_or(JOURNAL_FILE, Manifest::journal_file);
        let Some(file) = self.open_file(name, "cannot open journal")? else {
            return Ok(None);
        };
        let input = BufReader::with_capacity(256 * 1024, file.take(limit.unwrap_or(u64::MAX)));
        scan_journal(input, f)
            .map(Some)
            .map_err(|e| Error::io("cannot read", self.path.join(name), e))
    }

    /// Reads a file directly in the run directory (`summary.md`, `report.html`, the journal, the
    /// manifest), confined like every read here: `name` must be a plain id, the file is opened
    /// without following a symlink and must be a regular file. `Ok(None)` when it does not
    /// exist; an error when it holds more than `max` bytes.
    pub fn read_file(&self, name: &str, max: u64) -> Result<Option<Vec<u8>>, Error> {
        validate_id("file name", name)?;
        let Some(file) = self.open_file(name, "cannot open")? else {
            return Ok(None);
        };
        let path = self.path.join(name);
        let mut bytes = Vec::new();
        file.take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("cannot read", &path, e))?;
        if bytes.len() as u64 > max {
            return Err(Error::confinement(
                path,
                "is larger than this reader accepts",
            ));
        }
        Ok(Some(bytes))
    }

    /// Opens a record's `artifacts` entry inside the run: `artifacts/<name>` only, neither
    /// `artifacts/` nor the file may be a symlink, and only a regular file is returned. Nothing
    /// is read yet.
    pub fn artifact(&self, relative: &str) -> Result<ArtifactFile, ArtifactRefusal> {
        let name = check_artifact_path(relative)?;
        let dir_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let artifacts = openat(&self.dir, ARTIFACTS_DIR, dir_flags, Mode::empty())
            .map(File::from)
            .map_err(|_| ArtifactRefusal::ArtifactsDirRefused)?;
        let file = openat(&artifacts, name, read_flags(), Mode::empty())
            .map(File::from)
            .map_err(refusal)?;
        let (file, len) = regular(file)?;
        Ok(ArtifactFile { file, len })
    }

    /// Atomically writes a rendered output file (`report.html`, `summary.md`) into the run
    /// directory and returns its path: a hidden temp file created exclusively without following
    /// symlinks, written and fsynced, renamed over `name`, then the directory fsynced. `name`
    /// must be a plain id and cannot be one of the format's own files.
    pub fn write_output(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, Error> {
        validate_id("output file name", name)?;
        let reserved = [
            MANIFEST_FILE,
            JOURNAL_FILE,
            LOCK_FILE,
            BUDGET_FILE,
            ARTIFACTS_DIR,
        ];
        if reserved.contains(&name) || name.ends_with(".jsonl") || name.ends_with(".lock") {
            return Err(Error::InvalidId {
                what: "output file name",
                reason: "is a file of the evidence format",
            });
        }
        let path = self.path.join(name);
        let tmp = format!(".{name}.tmp-{}-{:016x}", std::process::id(), random_u64());
        let tmp_path = self.path.join(&tmp);
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mode = Mode::from_bits_truncate(0o644);
        let mut file = openat(&self.dir, tmp.as_str(), flags, mode)
            .map(File::from)
            .map_err(|e| Error::io("cannot create", &tmp_path, io::Error::from(e)))?;
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| Error::io("cannot write", &tmp_path, e))
            .and_then(|()| {
                renameat(&self.dir, tmp.as_str(), &self.dir, name)
                    .map_err(|e| Error::io("cannot replace", &path, io::Error::from(e)))
            });
        if let Err(e) = written {
            let _ = nix::unistd::unlinkat(
                &self.dir,
                tmp.as_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
            return Err(e);
        }
        self.dir
            .sync_all()
            .map_err(|e| Error::io("cannot sync directory", &self.path, e))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn run() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        fs::create_dir_all(dir.join("artifacts")).unwrap();
        (tmp, dir)
    }

    #[test]
    fn artifact_paths_are_checked_before_any_open() {
        for (p, why) in [
            ("/etc/passwd", ArtifactRefusal::NotUnderArtifacts),
            ("../x.png", ArtifactRefusal::NotUnderArtifacts),
            ("artifacts", ArtifactRefusal::NotUnderArtifacts),
            ("artifactsx/a.png", ArtifactRefusal::NotUnderArtifacts),
            ("other/a.png", ArtifactRefusal::NotUnderArtifacts),
            ("artifacts/../manifest.json", ArtifactRefusal::InvalidName),
            ("artifacts/a/b.png", ArtifactRefusal::InvalidName),
            ("artifacts/.hidden.png", ArtifactRefusal::InvalidName),
            ("artifacts/", ArtifactRefusal::InvalidName),
            ("artifacts/a\0.png", ArtifactRefusal::InvalidName),
        ] {
            assert_eq!(check_artifact_path(p), Err(why), "{p:?}");
        }
        assert_eq!(
            check_artifact_path("artifacts/000001-s.png"),
            Ok("000001-s.png")
        );
    }

    #[test]
    fn artifacts_open_only_as_regular_files_inside_the_run() {
        let (tmp, dir) = run();
        let outside = tmp.path().join("secret.png");
        fs::write(&outside, b"outside").unwrap();
        fs::write(dir.join("artifacts/ok.png"), b"inside").unwrap();
        symlink(&outside, dir.join("artifacts/out.png")).unwrap();
        symlink("ok.png", dir.join("artifacts/in.png")).unwrap();
        fs::create_dir(dir.join("artifacts/sub.png")).unwrap();
        // A hard link to a file outside the run: no symlink to see.
        fs::hard_link(&outside, dir.join("artifacts/hard.png")).unwrap();
        nix::unistd::mkfifo(
            &dir.join("artifacts/fifo.png"),
            Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        let run = RunDir::open(&dir).unwrap();
        let ok = run.artifact("artifacts/ok.png").unwrap();
        assert_eq!(ok.len(), 6);
        assert_eq!(ok.read_capped(6).unwrap().unwrap(), b"inside");
        assert!(run
            .artifact("artifacts/ok.png")
            .unwrap()
            .read_capped(5)
            .unwrap()
            .is_none());
        for (p, why) in [
            ("artifacts/out.png", ArtifactRefusal::Symlink),
            ("artifacts/in.png", ArtifactRefusal::Symlink),
            ("artifacts/sub.png", ArtifactRefusal::NotRegularFile),
            ("artifacts/fifo.png", ArtifactRefusal::NotRegularFile),
            ("artifacts/hard.png", ArtifactRefusal::HardLinked),
            ("artifacts/none.png", ArtifactRefusal::Missing),
        ] {
            assert_eq!(run.artifact(p).unwrap_err(), why, "{p}");
        }
    }

    #[test]
    fn a_symlinked_artifacts_dir_is_refused() {
        let (tmp, dir) = run();
        let elsewhere = tmp.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join("a.png"), b"x").unwrap();
        fs::remove_dir(dir.join("artifacts")).unwrap();
        symlink(&elsewhere, dir.join("artifacts")).unwrap();
        let run = RunDir::open(&dir).unwrap();
        assert_eq!(
            run.artifact("artifacts/a.png").unwrap_err(),
            ArtifactRefusal::ArtifactsDirRefused
        );
    }

    #[test]
    fn manifest_and_journal_refuse_symlinks_and_tolerate_absence() {
        let (tmp, dir) = run();
        let run = RunDir::open(&dir).unwrap();
        assert!(run.manifest().unwrap().is_none());
        assert!(run.journal(None).unwrap().is_none());
        let outside = tmp.path().join("m.json");
        fs::write(&outside, br#"{"runId":"x"}"#).unwrap();
        symlink(&outside, dir.join("manifest.json")).unwrap();
        symlink(&outside, dir.join("actions.jsonl")).unwrap();
        assert!(matches!(run.manifest(), Err(Error::Confinement { .. })));
        assert!(matches!(run.journal(None), Err(Error::Confinement { .. })));
    }

    #[test]
    fn files_are_read_by_plain_name_only_and_never_through_a_symlink() {
        let (tmp, dir) = run();
        let outside = tmp.path().join("secret.md");
        fs::write(&outside, b"outside").unwrap();
        fs::write(dir.join("summary.md"), b"inside").unwrap();
        symlink(&outside, dir.join("report.html")).unwrap();
        fs::create_dir(dir.join("sub.md")).unwrap();
        let run = RunDir::open(&dir).unwrap();
        assert_eq!(run.read_file("summary.md", 6).unwrap().unwrap(), b"inside");
        assert!(matches!(
            run.read_file("summary.md", 5),
            Err(Error::Confinement { .. })
        ));
        assert!(run.read_file("none.md", 10).unwrap().is_none());
        assert!(matches!(
            run.read_file("report.html", 100),
            Err(Error::Confinement { .. })
        ));
        assert!(run.read_file("sub.md", 100).is_err());
        for bad in [
            "../secret.md",
            "artifacts/x.png",
            "/etc/passwd",
            "..",
            ".lock",
        ] {
            assert!(
                matches!(run.read_file(bad, 100), Err(Error::InvalidId { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn journal_named_by_the_manifest_is_read_with_a_torn_tail() {
        let (_tmp, dir) = run();
        fs::write(
            dir.join("manifest.json"),
            br#"{"evidenceVersion":1,"actionLog":"log.jsonl"}"#,
        )
        .unwrap();
        fs::write(
            dir.join("log.jsonl"),
            b"{\"actionId\":\"1\",\"kind\":\"action\"}\n[1]\n{\"actionId\":\"2\",\"ki",
        )
        .unwrap();
        let run = RunDir::open(&dir).unwrap();
        let m = run.manifest().unwrap().unwrap();
        let j = run.journal(Some(&m)).unwrap().unwrap();
        assert_eq!(j.records.len(), 1);
        assert_eq!(j.corrupt.len(), 1);
        assert!(j.torn_tail.is_some());
    }

    #[test]
    fn outputs_are_written_atomically_and_never_over_format_files() {
        let (tmp, dir) = run();
        let run = RunDir::open(&dir).unwrap();
        let p = run.write_output("report.html", b"one").unwrap();
        run.write_output("report.html", b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        // A symlink planted at the output name is replaced, not followed.
        let outside = tmp.path().join("victim");
        fs::write(&outside, b"keep").unwrap();
        symlink(&outside, dir.join("summary.md")).unwrap();
        run.write_output("summary.md", b"sum").unwrap();
        assert_eq!(fs::read(&outside).unwrap(), b"keep");
        assert_eq!(fs::read(dir.join("summary.md")).unwrap(), b"sum");
        for bad in [
            "actions.jsonl",
            "manifest.json",
            "x.lock",
            "../x",
            ".hidden",
            "a/b",
        ] {
            assert!(run.write_output(bad, b"x").is_err(), "{bad}");
        }
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.contains(".tmp-")), "{names:?}");
    }
}
