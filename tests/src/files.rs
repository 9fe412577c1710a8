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

/// The first line of a log (a relay's stderr) that holds `needle`, as [`leaks`] counts it, with
/// each line's leading timestamp left out: its microseconds (`…:41.739418Z`) are six digits
/// that a one-digit-per-box code matches one line in a few hundred thousand.
pub fn log_leak<'a>(log: &'a str, needle: &str) -> Option<&'a str> {
    log.lines().find(|line| {
        let rest = match line.split_once(char::is_whitespace) {
            Some((first, rest)) if is_timestamp(first) => rest,
            _ => line,
        };
        leaks(rest.as_bytes(), needle)
    })
}

/// An RFC 3339 time as tracing writes it to a pipe (`2026-12-06T04:11:41.739418Z`).
fn is_timestamp(word: &str) -> bool {
    let b = word.as_bytes();
    b.len() >= 20 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && word.ends_with('Z')
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
    use super::{leaks, log_leak};

    #[test]
    fn a_code_inside_a_longer_number_is_not_a_leak() {
        assert!(leaks(b"otp=824913&x", "824913"));
        assert!(leaks(b"824913", "824913"));
        assert!(!leaks(b"1796091824913042", "824913"));
        assert!(leaks(b"x demo-Passw0rd! y", "demo-Passw0rd!"));
        assert!(!leaks(b"", "demo-Passw0rd!"));
        assert!(!leaks(b"abc", ""));
    }

    #[test]
    fn a_code_in_a_log_line_counts_and_a_timestamps_microseconds_do_not() {
        let log = "2026-12-06T04:11:41.739418Z  INFO run finalized\n\
                   2026-12-06T04:11:42.000001Z DEBUG typed 739418 into #o1\n";
        assert_eq!(log_leak(log, "739418"), Some(log.lines().nth(1).unwrap()));
        assert_eq!(log_leak(log.lines().next().unwrap(), "739418"), None);
        assert_eq!(log_leak("no time 739418", "739418"), Some("no time 739418"));
    }
}

/// How a planted value can be spelled in an export: as it is, JSON-escaped, percent-encoded
/// (as a form and as a URL component), and in base64 (standard and URL-safe) at each of the
/// three alignments it can have inside a longer base64 text. A sweep searches every byte of
/// every file for each of them.
pub fn spellings(v: &str) -> Vec<String> {
    use base64::Engine as _;
    let pct = |keep: &dyn Fn(u8) -> bool, space_plus: bool| -> String {
        v.bytes()
            .map(|b| match b {
                b' ' if space_plus => "+".to_owned(),
                b if keep(b) => (b as char).to_string(),
                b => format!("%{b:02X}"),
            })
            .collect()
    };
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    let mut all = vec![
        v.to_owned(),
        serde_json::to_string(v).expect("a string")[1..]
            .trim_end_matches('"')
            .to_owned(),
        pct(&|b| alnum(b) || b"*-._".contains(&b), true),
        pct(&|b| alnum(b) || b"-_.!~*'()".contains(&b), false),
    ];
    for engine in [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::URL_SAFE,
    ] {
        for shift in 0..3usize {
            let mut bytes = vec![0u8; shift];
            bytes.extend_from_slice(v.as_bytes());
            let enc = engine.encode(&bytes);
            // The characters that depend only on the value: past the shift's bytes, before
            // the last (partial) group.
            let skip = (shift * 4).div_ceil(3);
            let keep = (bytes.len() / 3) * 4;
            if keep > skip + 4 {
                all.push(enc[skip..keep].to_owned());
            }
        }
    }
    all.sort();
    all.dedup();
    all
}

#[cfg(test)]
mod spelling_tests {
    use super::{leaks, spellings};
    use base64::Engine as _;

    #[test]
    fn a_value_inside_base64_at_any_alignment_is_found() {
        let secret = "demo-Passw0rd!";
        for prefix in ["", "x", "xy", "xyz"] {
            let blob =
                base64::engine::general_purpose::STANDARD.encode(format!("{prefix}{secret}tail"));
            assert!(
                spellings(secret).iter().any(|s| leaks(blob.as_bytes(), s)),
                "{prefix:?}: {blob}"
            );
        }
        let quoted = format!("a\"{secret}");
        let json = serde_json::to_string(&serde_json::json!({ "k": quoted })).unwrap();
        assert!(!json.contains(quoted.as_str()));
        assert!(spellings(&quoted).iter().any(|s| json.contains(s.as_str())));
        assert!(spellings("a b&c").contains(&"a+b%26c".to_owned()));
    }
}
