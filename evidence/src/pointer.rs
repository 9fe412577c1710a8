//! `sessions/<sessionId>.active`: which run a session is currently writing to, and who owns it.
//!
//! The pointer is a small JSON object (`runId`, `ownerPid`, `ownerSource`, `claimedAt`). It is
//! claimed create-exclusive (the name appears atomically with its content in place), replaced
//! atomically when ownership moves, and removed at finalize. All three happen while holding the
//! session lock `sessions/<sessionId>.lock`; see [`crate::Store::join_session`] for the protocol.
//! A pointer holding only a bare run id (older producers) is accepted as an unowned pointer.
//! This module decides nothing about runs; it reads, writes and interprets the pointer.

use crate::error::Error;
use crate::ids::validate_id;
use crate::paths::{
    create_exclusive, no_follow, open_error, read_small, real_dir_exists, sync_dir, write_atomic,
    Layout, TOO_LARGE,
};
use serde::Serialize;
use serde_json::Value;
use std::fs;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::time::SystemTime;

/// Pointers are tiny; anything bigger is not one.
const POINTER_LIMIT: u64 = 4096;

/// A parsed pointer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pointer {
    pub(crate) run_id: String,
    /// The long-lived process responsible for the run; `None` when only short-lived producers
    /// (such as `cdp-relay evidence append`) have joined it.
    pub(crate) owner_pid: Option<u32>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PointerOut<'a> {
    run_id: &'a str,
    owner_pid: Option<u32>,
    owner_source: &'a str,
    claimed_at: String,
}

/// What reading a pointer found.
#[derive(Debug)]
pub(crate) enum PointerState {
    Missing,
    Valid(Pointer),
    /// Present but unusable (empty, garbage, unsafe run id); safe to replace under the lock.
    Garbage,
}

pub(crate) fn encode(run_id: &str, owner_pid: Option<u32>, owner_source: &str) -> Vec<u8> {
    let out = PointerOut {
        run_id,
        owner_pid,
        owner_source,
        claimed_at: crate::time::format_rfc3339_millis(SystemTime::now()),
    };
    let mut bytes = serde_json::to_vec(&out).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Parses pointer bytes: the JSON form, or a bare run id.
pub(crate) fn parse(bytes: &[u8]) -> Option<Pointer> {
    let text = std::str::from_utf8(bytes).ok()?.trim();
    if validate_id("run id", text).is_ok() {
        return Some(Pointer {
            run_id: text.to_owned(),
            owner_pid: None,
        });
    }
    let value: Value = serde_json::from_str(text).ok()?;
    let run_id = value.get("runId")?.as_str()?;
    validate_id("run id", run_id).ok()?;
    let owner_pid = value
        .get("ownerPid")
        .and_then(Value::as_u64)
        .and_then(|p| u32::try_from(p).ok())
        .filter(|&p| p > 0);
    Some(Pointer {
        run_id: run_id.to_owned(),
        owner_pid,
    })
}

pub(crate) fn read(path: &Path) -> Result<PointerState, Error> {
    let bytes = match read_small(path, POINTER_LIMIT) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(PointerState::Missing),
        // Oversized: garbage. A symlink or an I/O error stays an error.
        Err(Error::Confinement { reason, .. }) if reason == TOO_LARGE => {
            return Ok(PointerState::Garbage)
        }
        Err(e) => return Err(e),
    };
    Ok(parse(&bytes).map_or(PointerState::Garbage, PointerState::Valid))
}

/// Claims `path` for `run_id` if nobody has. `Ok(false)` when a pointer already exists.
pub(crate) fn claim(
    path: &Path,
    run_id: &str,
    owner_pid: Option<u32>,
    source: &str,
) -> Result<bool, Error> {
    create_exclusive(path, &encode(run_id, owner_pid, source))
}

/// Atomically replaces the pointer (ownership moving to a new process).
pub(crate) fn replace(
    path: &Path,
    run_id: &str,
    owner_pid: Option<u32>,
    source: &str,
) -> Result<(), Error> {
    write_atomic(path, &encode(run_id, owner_pid, source))
}

/// Removes the pointer; missing is fine.
pub(crate) fn remove(path: &Path) -> Result<(), Error> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("cannot remove session pointer", path, e)),
    }
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Whether a process with this pid exists on this host. `kill(pid, 0)`: success or `EPERM`
/// means it exists. Pid reuse can make a dead owner look alive; that only delays recovery.
/// Processes in another PID namespace sharing the evidence directory look dead; recovery then
/// adopts their run, which loses nothing.
pub(crate) fn pid_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        use nix::errno::Errno;
        use nix::sys::signal::kill;
        use nix::unistd::Pid;
        let Ok(raw) = i32::try_from(pid) else {
            return false;
        };
        if raw <= 0 {
            return false;
        }
        !matches!(kill(Pid::from_raw(raw), None), Err(Errno::ESRCH))
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Session-level locking and pointer paths, shared by the store and its runs.
#[derive(Clone, Debug)]
pub(crate) struct SessionLock {
    pub(crate) layout: Layout,
}

impl SessionLock {
    pub(crate) fn new(layout: Layout) -> SessionLock {
        SessionLock { layout }
    }

    /// Takes `sessions/<session>.lock` exclusively; released when the file is dropped.
    pub(crate) fn lock(&self, session: &str) -> Result<File, Error> {
        let path = self.layout.session_lock(session)?;
        let file = no_follow(OpenOptions::new().read(true).write(true).create(true))
            .open(&path)
            .map_err(|e| open_error("cannot open session lock", &path, e))?;
        file.lock()
            .map_err(|e| Error::io("cannot lock", &path, e))?;
        Ok(file)
    }

    /// Removes the session pointer if it still names `run_id` (finalize).
    pub(crate) fn clear_pointer_if(&self, session: &str, run_id: &str) -> Result<(), Error> {
        // No sessions directory (removed by hand): there is no pointer to clear.
        if !real_dir_exists(&self.layout.sessions_dir())? {
            return Ok(());
        }
        let _lock = self.lock(session)?;
        let path = self.layout.pointer(session)?;
        match read(&path)? {
            PointerState::Valid(p) if p.run_id == run_id => remove(&path),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_accepts_bare_ids() {
        let p = parse(&encode("run-1", Some(42), "relay")).unwrap();
        assert_eq!(
            p,
            Pointer {
                run_id: "run-1".into(),
                owner_pid: Some(42)
            }
        );
        let p = parse(&encode("run-1", None, "cli")).unwrap();
        assert_eq!(p.owner_pid, None);
        let p = parse(b"run-2\n").unwrap();
        assert_eq!(p.run_id, "run-2");
        assert_eq!(p.owner_pid, None);
    }

    #[test]
    fn refuses_unsafe_or_garbage_pointers() {
        for bad in [
            &b""[..],
            b"{}",
            b"{\"runId\":\"../../etc\"}",
            b"{\"runId\":7}",
            b"../x",
            b"\xff\xfe",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        let p = parse(b"{\"runId\":\"r\",\"ownerPid\":-1}").unwrap();
        assert_eq!(p.owner_pid, None);
    }

    #[test]
    fn liveness() {
        assert!(pid_alive(std::process::id()));
        // A child that has exited and been reaped no longer exists.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!pid_alive(pid));
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
    }

    #[test]
    fn claim_is_exclusive_and_remove_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.active");
        assert!(claim(&p, "r1", Some(1), "relay").unwrap());
        assert!(!claim(&p, "r2", Some(2), "relay").unwrap());
        assert!(matches!(read(&p).unwrap(), PointerState::Valid(ptr) if ptr.run_id == "r1"));
        replace(&p, "r1", Some(3), "relay").unwrap();
        assert!(matches!(read(&p).unwrap(), PointerState::Valid(ptr) if ptr.owner_pid == Some(3)));
        remove(&p).unwrap();
        remove(&p).unwrap();
        assert!(matches!(read(&p).unwrap(), PointerState::Missing));
        fs::write(&p, b"junk junk").unwrap();
        assert!(matches!(read(&p).unwrap(), PointerState::Garbage));
    }
}
