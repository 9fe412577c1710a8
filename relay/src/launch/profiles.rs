//! Temporary browser profiles: each one names its owner, and profiles whose owner died without
//! cleaning up (a relay killed with SIGKILL) are removed at the next launch.
//!
//! A profile is stale only when its owning relay is gone (pid and start time no longer match a
//! live process) and no live process has it as `--user-data-dir`. Profiles without an owner
//! file (from older relays) must also have no user and be over a minute old, so a relay that is
//! just creating one is never raced.

use super::procfs::{self, start_time};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Prefix of every profile directory the relay creates in the temporary directory.
pub(crate) const PREFIX: &str = "cdp-relay-profile-";

/// The owner file inside a profile: `<pid> <start time in clock ticks since boot>`.
const OWNER_FILE: &str = "cdp-relay-owner";

/// How old an ownerless profile must be before it counts as abandoned.
const OWNERLESS_GRACE: Duration = Duration::from_secs(60);

/// Writes this process as the owner of `profile`.
pub(crate) fn claim(profile: &Path) -> std::io::Result<()> {
    let me = std::process::id();
    let start = start_time(me).unwrap_or(0);
    std::fs::write(profile.join(OWNER_FILE), format!("{me} {start}\n"))
}

/// Removes stale profiles in `tmp`; returns how many were removed.
pub(crate) fn sweep(tmp: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return 0;
    };
    let candidates: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
        // Never follow a symlink someone planted in /tmp.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    if candidates.is_empty() {
        return 0;
    }
    let in_use = profiles_in_use();
    let mut removed = 0;
    for dir in candidates {
        if in_use.iter().any(|p| p == &dir) || !owner_gone(&dir) {
            continue;
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => removed += 1,
            Err(e) => {
                tracing::debug!(path = %dir.display(), error = %e, "could not remove a stale profile")
            }
        }
    }
    if removed > 0 {
        tracing::info!("removed {removed} temporary browser profile(s) left behind by relays that did not exit cleanly");
    }
    removed
}

/// True when the profile's owner is gone (or it has none and is old enough).
fn owner_gone(dir: &Path) -> bool {
    match std::fs::read_to_string(dir.join(OWNER_FILE)) {
        Ok(text) => {
            let mut parts = text.split_whitespace();
            let pid = parts.next().and_then(|p| p.parse::<u32>().ok());
            let start = parts.next().and_then(|s| s.parse::<u64>().ok());
            match (pid, start) {
                (Some(pid), Some(start)) => start_time(pid) != Some(start),
                _ => old_enough(dir),
            }
        }
        Err(_) => old_enough(dir),
    }
}

fn old_enough(dir: &Path) -> bool {
    std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age >= OWNERLESS_GRACE)
}

/// Every `--user-data-dir` that a live process was started with.
fn profiles_in_use() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for pid in procfs::pids() {
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        for arg in cmdline.split(|b| *b == 0) {
            if let Some(dir) = arg.strip_prefix(b"--user-data-dir=") {
                out.push(PathBuf::from(String::from_utf8_lossy(dir).into_owned()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_profiles_of_dead_owners_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let mine = tmp.path().join(format!("{PREFIX}mine"));
        std::fs::create_dir(&mine).unwrap();
        claim(&mine).unwrap();
        let dead = tmp.path().join(format!("{PREFIX}dead"));
        std::fs::create_dir(&dead).unwrap();
        // pid 1's start time is never this.
        std::fs::write(dead.join(OWNER_FILE), "1 123456789012\n").unwrap();
        let fresh = tmp.path().join(format!("{PREFIX}fresh"));
        std::fs::create_dir(&fresh).unwrap();
        let unrelated = tmp.path().join("other-dir");
        std::fs::create_dir(&unrelated).unwrap();
        assert_eq!(sweep(tmp.path()), 1);
        assert!(mine.exists(), "a live owner keeps its profile");
        assert!(!dead.exists(), "a dead owner's profile is removed");
        assert!(fresh.exists(), "an ownerless profile gets a grace period");
        assert!(unrelated.exists());
    }
}
