//! Searching what a run left on disk for what must not be there.

use std::path::Path;

/// Every file under `dir`, recursively, as (path, bytes).
pub fn all_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).expect("read");
                out.push((p.display().to_string(), bytes));
            }
        }
    }
    out
}

/// Where `needle` occurs in `hay`. An all-digit needle (a one-time code) counts only where it is
/// not part of a longer number: journals are full of millisecond timestamps and ids, and a
/// six-digit code inside one of them is a coincidence, not a leak.
pub fn leaks(hay: &[u8], needle: &str) -> bool {
    let n = needle.as_bytes();
    if n.is_empty() {
        return false;
    }
    let digits = n.iter().all(u8::is_ascii_digit);
    hay.windows(n.len()).enumerate().any(|(i, w)| {
        if w != n {
            return false;
        }
        if !digits {
            return true;
        }
        let before = i.checked_sub(1).map(|j| hay[j]);
        let after = hay.get(i + n.len()).copied();
        !before.is_some_and(|b| b.is_ascii_digit()) && !after.is_some_and(|b| b.is_ascii_digit())
    })
}

/// A private TMPDIR for a relay that launches its browser: the launcher creates its profile
/// there, so leftovers are easy to find.
pub struct Scratch(tempfile::TempDir);

impl Default for Scratch {
    fn default() -> Scratch {
        Scratch::new()
    }
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch(tempfile::tempdir().expect("tempdir"))
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    pub fn profiles(&self) -> Vec<String> {
        std::fs::read_dir(self.path())
            .expect("read scratch")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("cdp-relay-profile-"))
            .collect()
    }

    pub fn assert_clean(&self) {
        assert!(
            self.profiles().is_empty(),
            "profile left behind: {:?}",
            self.profiles()
        );
        // Nothing else either (Chromium's own org.chromium.Chromium.* temporary files).
        let left: Vec<String> = std::fs::read_dir(self.path())
            .expect("read scratch")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(left.is_empty(), "left in TMPDIR: {left:?}");
        let needle = self.path().to_string_lossy().into_owned();
        let procs = crate::fixtures::processes_mentioning(&needle);
        assert!(procs.is_empty(), "orphan browser processes: {procs:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::leaks;

    #[test]
    fn a_code_inside_a_longer_number_is_not_a_leak() {
        assert!(leaks(b"otp=824913&x", "824913"));
        assert!(leaks(b"824913", "824913"));
        assert!(!leaks(b"1796091824913042", "824913"));
        assert!(leaks(b"x demo-Passw0rd! y", "demo-Passw0rd!"));
        assert!(!leaks(b"", "demo-Passw0rd!"));
        assert!(!leaks(b"abc", ""));
    }
}
