//! Fault injection for tests (`test-hooks` feature only; in any other build every check passes
//! and compiles to nothing). [`fail_writes_under`] makes every evidence write below a directory
//! fail as a full disk does (`ENOSPC`): journal appends, artifacts, the manifest, `budget.json`,
//! the space reserve. Deterministic where a real full disk is not available to a test.

use std::io;
use std::path::Path;

#[cfg(feature = "test-hooks")]
mod imp {
    use std::io;
    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, PoisonError};

    static FAILING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

    pub fn fail_writes_under(dir: &Path, failing: bool) {
        let mut dirs = FAILING.lock().unwrap_or_else(PoisonError::into_inner);
        dirs.retain(|d| d != dir);
        if failing {
            dirs.push(dir.to_path_buf());
        }
    }

    pub fn check_write(path: &Path) -> io::Result<()> {
        let dirs = FAILING.lock().unwrap_or_else(PoisonError::into_inner);
        if dirs.iter().any(|d| path.starts_with(d)) {
            // ENOSPC, as write(2) reports a full disk.
            return Err(io::Error::from_raw_os_error(28));
        }
        Ok(())
    }
}

/// While `failing`, every evidence write below `dir` fails with "No space left on device".
/// `test-hooks` feature only.
#[cfg(feature = "test-hooks")]
pub fn fail_writes_under(dir: &Path, failing: bool) {
    imp::fail_writes_under(dir, failing);
}

/// `Err` when a test made writes to `path` fail.
#[inline]
pub(crate) fn check_write(path: &Path) -> io::Result<()> {
    #[cfg(feature = "test-hooks")]
    return imp::check_write(path);
    #[cfg(not(feature = "test-hooks"))]
    {
        let _ = path;
        Ok(())
    }
}
