//! The journal's writer side: the run lock, torn-tail repair and the single-write append.
//!
//! Protocol (the same for every producer, in any language — see `docs/evidence-format.md`):
//! open `actions.jsonl.lock` and take an exclusive `flock(2)`; repair a torn tail (if the last
//! byte of `actions.jsonl` is not `\n`, truncate back to just after the last `\n`); write the
//! whole record line with one `write(2)` on an `O_APPEND` descriptor; unlock.
//!
//! This module never builds records and never decides what may be written; it moves finished
//! lines under the lock. Within one process a mutex serializes threads, because `flock` is
//! per open file description and would not exclude two threads sharing this one.

use crate::budget::JournalFacts;
use crate::error::Error;
use crate::paths::{no_follow, open_error, LOCK_FILE};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Backwards scan step when looking for the last complete line.
const SCAN_CHUNK: u64 = 64 * 1024;

struct Handles {
    lock: File,
    journal: File,
}

/// Lazily opened handles to one run's lock file and journal.
pub(crate) struct Journal {
    lock_path: PathBuf,
    journal_path: PathBuf,
    handles: Mutex<Option<Handles>>,
}

impl Journal {
    pub(crate) fn new(run_dir: &Path, journal_file: &str) -> Journal {
        Journal {
            lock_path: run_dir.join(LOCK_FILE),
            journal_path: run_dir.join(journal_file),
            handles: Mutex::new(None),
        }
    }

    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.journal_path
    }

    /// Takes the run lock (in-process mutex, then the cross-process `flock`).
    pub(crate) fn lock(&self) -> Result<Locked<'_>, Error> {
        // A panic while holding the guard cannot leave the files inconsistent beyond what a
        // crash could, and the next lock repairs that; so a poisoned mutex is still usable.
        let mut guard = self.handles.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let lock = no_follow(OpenOptions::new().read(true).write(true).create(true))
                .open(&self.lock_path)
                .map_err(|e| open_error("cannot open lock file", &self.lock_path, e))?;
            let journal = no_follow(OpenOptions::new().read(true).append(true).create(true))
                .open(&self.journal_path)
                .map_err(|e| open_error("cannot open journal", &self.journal_path, e))?;
            *guard = Some(Handles { lock, journal });
        }
        let Some(handles) = guard.as_ref() else {
            unreachable!("handles were just opened");
        };
        handles
            .lock
            .lock()
            .map_err(|e| Error::io("cannot lock", &self.lock_path, e))?;
        Ok(Locked {
            guard,
            journal_path: &self.journal_path,
        })
    }
}

/// Proof that this thread holds the run lock; unlocks on drop.
pub(crate) struct Locked<'a> {
    guard: MutexGuard<'a, Option<Handles>>,
    journal_path: &'a Path,
}

impl Locked<'_> {
    fn journal(&self) -> &File {
        match self.guard.as_ref() {
            Some(h) => &h.journal,
            None => unreachable!("a Locked always holds open handles"),
        }
    }

    fn io(&self, context: &'static str, e: io::Error) -> Error {
        Error::io(context, self.journal_path, e)
    }

    /// Current journal length in bytes.
    pub(crate) fn len(&self) -> Result<u64, Error> {
        self.journal()
            .metadata()
            .map(|m| m.len())
            .map_err(|e| self.io("cannot inspect journal", e))
    }

    /// If the journal does not end with `\n` (a writer died mid-record), truncates it back to
    /// just after its last `\n`. Returns the number of bytes discarded (0 if none).
    pub(crate) fn repair_tail(&self) -> Result<u64, Error> {
        let len = self.len()?;
        if len == 0 {
            return Ok(0);
        }
        let mut f = self.journal();
        let mut end = len;
        let mut last = [0u8; 1];
        f.seek(SeekFrom::Start(len - 1))
            .and_then(|_| f.read_exact(&mut last))
            .map_err(|e| self.io("cannot read journal", e))?;
        if last[0] == b'\n' {
            return Ok(0);
        }
        let mut keep = 0;
        let mut buf = Vec::new();
        while end > 0 {
            let start = end.saturating_sub(SCAN_CHUNK);
            buf.resize((end - start) as usize, 0);
            f.seek(SeekFrom::Start(start))
                .and_then(|_| f.read_exact(&mut buf))
                .map_err(|e| self.io("cannot read journal", e))?;
            if let Some(i) = buf.iter().rposition(|&b| b == b'\n') {
                keep = start + i as u64 + 1;
                break;
            }
            end = start;
        }
        f.set_len(keep)
            .map_err(|e| self.io("cannot repair journal tail", e))?;
        Ok(len - keep)
    }

    /// Appends one complete line (ending in `\n`) with a single `write`. On a short or failed
    /// write the journal is truncated back, so a live writer never leaves a torn tail.
    pub(crate) fn write_line(&self, line: &[u8]) -> Result<(), Error> {
        self.write_lines(line)
    }

    /// Appends complete lines (each `\n`-terminated) in one write: under the lock, so no other
    /// writer interleaves, and all or nothing (a short write is rolled back).
    pub(crate) fn write_lines(&self, lines: &[u8]) -> Result<(), Error> {
        debug_assert_eq!(lines.last(), Some(&b'\n'));
        let before = self.len()?;
        #[cfg(feature = "test-hooks")]
        test_hook::maybe_tear(self.journal(), lines);
        let mut f = self.journal();
        let written = crate::hooks::check_write(self.journal_path).and_then(|()| f.write(lines));
        match written {
            Ok(n) if n == lines.len() => Ok(()),
            Ok(n) => {
                // A full disk often takes part of a write; the rest then says why (ENOSPC).
                let why = match f.write(&lines[n..]) {
                    Err(e) => e,
                    Ok(_) => io::Error::from(io::ErrorKind::WriteZero),
                };
                let _ = f.set_len(before);
                Err(self.io("short write (disk full?) to", why))
            }
            Err(e) => {
                let _ = f.set_len(before);
                Err(self.io("cannot append to", e))
            }
        }
    }

    /// One streaming pass over the journal (for counting at finalize, rebuilding the budget):
    /// memory bounded by a line, whatever its size.
    pub(crate) fn facts(&self) -> Result<JournalFacts, Error> {
        let mut f = self.journal();
        f.seek(SeekFrom::Start(0))
            .map_err(|e| self.io("cannot read journal", e))?;
        JournalFacts::scan(io::BufReader::with_capacity(64 * 1024, f))
            .map_err(|e| self.io("cannot read journal", e))
    }

    /// fsyncs the journal.
    pub(crate) fn sync(&self) -> Result<(), Error> {
        self.journal()
            .sync_all()
            .map_err(|e| self.io("cannot sync journal", e))
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let unlocked = self.guard.as_ref().is_some_and(|h| h.lock.unlock().is_ok());
        if !unlocked {
            // Closing the descriptor releases the lock as well; the next lock() reopens.
            *self.guard = None;
        }
    }
}

/// With the `test-hooks` feature only (never in a normal build): makes a chosen append write half
/// its line and then block, so a test can SIGKILL a writer in the middle of a record. Armed by
/// `CDP_EVIDENCE_TEST_TORN_APPEND=<n>`: the n-th line this process writes (1-based) is torn. The
/// process then prints `cdp-evidence test hook: torn write in place` on stderr, reads stdin until
/// EOF and aborts.
#[cfg(feature = "test-hooks")]
mod test_hook {
    use std::fs::File;
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    use super::{TEST_HOOK_TORN_APPEND_ENV as ENV, TEST_HOOK_TORN_APPEND_READY as READY};

    /// Counts the lines of `lines`; if the armed one is among them, writes everything before
    /// it and half of it, then blocks.
    pub(super) fn maybe_tear(mut journal: &File, lines: &[u8]) {
        static TARGET: OnceLock<Option<u64>> = OnceLock::new();
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let Some(target) = *TARGET.get_or_init(|| std::env::var(ENV).ok()?.parse().ok()) else {
            return;
        };
        let mut start = 0;
        for line in lines.split_inclusive(|b| *b == b'\n') {
            if WRITES.fetch_add(1, Ordering::SeqCst) + 1 == target {
                let _ = journal.write_all(&lines[..start + line.len() / 2]);
                eprintln!("{READY}");
                let _ = std::io::stderr().flush();
                let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
                std::process::abort();
            }
            start += line.len();
        }
    }
}

/// Test hook variable (`test-hooks` feature only; see `test_hook`).
#[cfg(feature = "test-hooks")]
pub const TEST_HOOK_TORN_APPEND_ENV: &str = "CDP_EVIDENCE_TEST_TORN_APPEND";
/// Line the test hook prints on stderr once the torn write is in place.
#[cfg(feature = "test-hooks")]
pub const TEST_HOOK_TORN_APPEND_READY: &str = "cdp-evidence test hook: torn write in place";

#[cfg(test)]
mod tests {
    use super::*;

    fn journal() -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path(), "actions.jsonl");
        (dir, j)
    }

    #[test]
    fn appends_whole_lines() {
        let (_d, j) = journal();
        let l = j.lock().unwrap();
        l.write_line(b"{\"a\":1}\n").unwrap();
        l.write_line(b"{\"a\":2}\n").unwrap();
        drop(l);
        assert_eq!(std::fs::read(j.path()).unwrap(), b"{\"a\":1}\n{\"a\":2}\n");
    }

    #[test]
    fn repairs_a_torn_tail_and_nothing_else() {
        let (_d, j) = journal();
        std::fs::write(j.path(), b"{\"a\":1}\n{\"a\":2}\n{\"a\":").unwrap();
        let l = j.lock().unwrap();
        assert_eq!(l.repair_tail().unwrap(), 5);
        assert_eq!(l.repair_tail().unwrap(), 0);
        l.write_line(b"{\"a\":3}\n").unwrap();
        drop(l);
        assert_eq!(
            std::fs::read(j.path()).unwrap(),
            b"{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"
        );
    }

    #[test]
    fn repairs_a_torn_tail_longer_than_a_scan_chunk() {
        let (_d, j) = journal();
        let mut content = b"{\"first\":true}\n".to_vec();
        content.extend(std::iter::repeat_n(b'x', 3 * SCAN_CHUNK as usize + 17));
        std::fs::write(j.path(), &content).unwrap();
        let l = j.lock().unwrap();
        assert_eq!(l.repair_tail().unwrap(), 3 * SCAN_CHUNK + 17);
        drop(l);
        assert_eq!(std::fs::read(j.path()).unwrap(), b"{\"first\":true}\n");
    }

    #[test]
    fn a_journal_with_no_newline_at_all_is_emptied() {
        let (_d, j) = journal();
        std::fs::write(j.path(), b"garbage without newline").unwrap();
        let l = j.lock().unwrap();
        assert_eq!(l.repair_tail().unwrap(), 23);
        assert_eq!(l.len().unwrap(), 0);
    }

    #[test]
    fn lock_is_exclusive_across_open_file_descriptions() {
        let (d, j) = journal();
        let held = j.lock().unwrap();
        // A second description of the same lock file (as another process would have) cannot
        // take the lock while it is held.
        let other = File::open(d.path().join(LOCK_FILE)).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(held);
        other.try_lock().unwrap();
    }
}
