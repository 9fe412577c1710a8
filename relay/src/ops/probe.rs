//! `GET /relay/v1/ready` and `GET /relay/v1/live`: what a kubelet probes, without the token.
//!
//! They say one word and nothing else — no versions, paths, run ids or reasons — because they
//! answer anyone who can reach the port (the reason is in the token-protected status, see
//! [`evidence_problem`]). Ready means the browser answers and, when evidence was asked for, the
//! run directory can be written: it is a writable directory on a disk with at least
//! [`MIN_FREE_BYTES`] and an inode free (a full disk drops evidence); live means the relay serves HTTP at all (a
//! dead browser is not a reason to restart the relay: `launch` exits by itself when its browser
//! does).

use super::Reply;
use std::path::Path;

/// The probe paths; the proxy answers them before the token check.
pub const READY_PATH: &str = "/relay/v1/ready";
/// See [`READY_PATH`].
pub const LIVE_PATH: &str = "/relay/v1/live";

/// What readiness depends on.
#[derive(Debug, Clone, Copy)]
pub enum EvidenceReadiness<'a> {
    /// `--no-evidence`: nothing to write, nothing to check.
    Off,
    /// Evidence was asked for but could not start (the relay forwards without it).
    Unavailable,
    /// Recording into this run directory.
    Recording(&'a Path),
}

/// True for the probe paths (with or without a trailing slash).
pub fn is_probe(path: &str) -> bool {
    let p = path.strip_suffix('/').unwrap_or(path);
    p == READY_PATH || p == LIVE_PATH
}

/// Answers a probe request for `path` (one of [`is_probe`]'s).
pub fn answer(
    path: &str,
    method: &str,
    upstream_reachable: Option<bool>,
    evidence: EvidenceReadiness<'_>,
) -> Reply {
    if method != "GET" && method != "HEAD" {
        return Reply::method_not_allowed("GET, HEAD", "probes support GET and HEAD only");
    }
    let p = path.strip_suffix('/').unwrap_or(path);
    if p == LIVE_PATH {
        return Reply::text(200, "live");
    }
    if ready(upstream_reachable, evidence) {
        Reply::text(200, "ready")
    } else {
        Reply::text(503, "not ready")
    }
}

fn ready(upstream_reachable: Option<bool>, evidence: EvidenceReadiness<'_>) -> bool {
    // Not probed yet counts as not ready: a pod gets traffic once the browser answered.
    if upstream_reachable != Some(true) {
        return false;
    }
    match evidence {
        EvidenceReadiness::Off => true,
        EvidenceReadiness::Unavailable => false,
        EvidenceReadiness::Recording(dir) => writable(dir),
    }
}

fn writable(dir: &Path) -> bool {
    evidence_problem(dir).is_none()
}

/// Free space below which evidence counts as unwritable: room for a frame and the finalize.
pub const MIN_FREE_BYTES: u64 = 1 << 20;

/// Why evidence cannot be written into `dir`, or `None` when it can.
pub fn evidence_problem(dir: &Path) -> Option<&'static str> {
    use nix::unistd::{access, AccessFlags};
    if !(access(dir, AccessFlags::W_OK | AccessFlags::X_OK).is_ok()
        && dir.symlink_metadata().is_ok_and(|m| m.is_dir()))
    {
        return Some("the run directory cannot be written");
    }
    let Ok(fs) = nix::sys::statvfs::statvfs(dir) else {
        return Some("the evidence disk cannot be inspected");
    };
    let free = fs.blocks_available().saturating_mul(fs.fragment_size());
    if free < MIN_FREE_BYTES {
        return Some("the evidence disk is full (less than 1 MiB free)");
    }
    // Filesystems without an inode count (files() == 0) never run out of them.
    if fs.files() > 0 && fs.files_available() == 0 {
        return Some("the evidence disk has no free inodes");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_needs_the_browser_and_writable_evidence() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let rec = EvidenceReadiness::Recording(dir);
        assert_eq!(answer(READY_PATH, "GET", Some(true), rec).status, 200);
        assert_eq!(
            answer(READY_PATH, "GET", Some(true), EvidenceReadiness::Off).body,
            "ready\n"
        );
        assert_eq!(answer(READY_PATH, "GET", Some(false), rec).status, 503);
        assert_eq!(answer(READY_PATH, "GET", None, rec).body, "not ready\n");
        assert_eq!(
            answer(
                "/relay/v1/ready/",
                "HEAD",
                Some(true),
                EvidenceReadiness::Unavailable
            )
            .status,
            503
        );
        let gone = dir.join("missing");
        assert_eq!(
            answer(
                READY_PATH,
                "GET",
                Some(true),
                EvidenceReadiness::Recording(&gone)
            )
            .status,
            503
        );
        // Live says live whatever the browser does.
        assert_eq!(
            answer(
                LIVE_PATH,
                "GET",
                Some(false),
                EvidenceReadiness::Unavailable
            )
            .status,
            200
        );
        assert_eq!(answer(LIVE_PATH, "POST", Some(true), rec).status, 405);
        assert!(is_probe("/relay/v1/live/") && !is_probe("/relay/v1/status"));
    }

    /// A full disk is not ready (evidence would be dropped), though the directory is writable.
    #[test]
    fn a_full_evidence_disk_is_not_ready() {
        struct Mount(tempfile::TempDir);
        impl Drop for Mount {
            fn drop(&mut self) {
                let _ = std::process::Command::new("umount")
                    .arg("-l")
                    .arg(self.0.path())
                    .status();
            }
        }
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: mounting a small tmpfs needs root");
            return;
        }
        let m = Mount(tempfile::tempdir().unwrap());
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
            .arg(m.0.path())
            .status()
            .unwrap();
        assert!(mounted.success());
        let dir = m.0.path();
        let rec = EvidenceReadiness::Recording(dir);
        assert_eq!(answer(READY_PATH, "GET", Some(true), rec).status, 200);
        assert_eq!(evidence_problem(dir), None);
        {
            use std::io::Write;
            let mut f = std::fs::File::create(dir.join("filler")).unwrap();
            while f.write_all(&[0u8; 4096]).is_ok() {}
        }
        let reply = answer(READY_PATH, "GET", Some(true), rec);
        assert_eq!((reply.status, reply.body.as_str()), (503, "not ready\n"));
        assert!(evidence_problem(dir).is_some_and(|p| p.contains("full")));
    }
}
