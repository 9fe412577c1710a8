//! What `cdp-relay export --format trace` and `--format har` cost (the release binary, a fresh
//! process per export, under `/usr/bin/time`): wall and CPU time, peak RSS and the size of what
//! they write, on the demo's run (`cdp-relay demo`, a real Chromium) and on a generated run of
//! 147,000 distinct console errors (`report.rs`'s console storm, nothing folded).

use crate::report::{console_storm, timed};
use cdp_relay_tests::relay_binary;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `cdp-relay export <dir> --format <format> --out <out>` under `/usr/bin/time`: (wall seconds,
/// CPU seconds, peak RSS KiB, bytes written).
fn export(dir: &Path, format: &str, out: &Path) -> Result<(f64, f64, u64, u64), String> {
    let mut cmd = std::process::Command::new(relay_binary());
    cmd.arg("export")
        .arg(dir)
        .args(["--format", format, "--out"])
        .arg(out);
    let (wall, cpu, rss) = timed(cmd, "cdp-relay export")?;
    let bytes = std::fs::metadata(out).map_or(0, |m| m.len());
    Ok((wall, cpu, rss, bytes))
}

/// `cdp-relay demo` into `evidence`; its run directory.
fn demo(evidence: &Path) -> Result<PathBuf, String> {
    let o = std::process::Command::new(relay_binary())
        .args(["demo", "--evidence-dir"])
        .arg(evidence)
        .env_remove("RUST_LOG")
        .output()
        .map_err(|e| format!("cannot run cdp-relay demo: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "cdp-relay demo failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let runs = evidence.join("runs");
    std::fs::read_dir(&runs)
        .map_err(|e| format!("{}: {e}", runs.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .ok_or_else(|| "the demo left no run".to_owned())
}

fn size(bytes: u64) -> String {
    if bytes < 1_000_000 {
        format!("{:.1} KB", bytes as f64 / 1e3)
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

/// Both runs, both formats; the table as Markdown.
pub fn run(smoke: bool) -> String {
    let tmp = tempfile::tempdir().expect("tempdir");
    let errors = if smoke { 2_000 } else { 147_000 };
    let storm = tmp.path().join("console-storm");
    let records = console_storm(&storm, errors);
    let mut runs = vec![(
        format!("{errors} distinct console errors ({records} records)"),
        storm,
    )];
    match demo(&tmp.path().join("demo")) {
        Ok(dir) => runs.insert(0, ("the demo's run".to_owned(), dir)),
        Err(e) => eprintln!("exports: {e}"),
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| run | journal | format | wall | CPU | peak RSS | written |"
    );
    let _ = writeln!(out, "|---|---:|---|---:|---:|---:|---:|");
    for (name, dir) in runs {
        let journal = std::fs::metadata(dir.join("actions.jsonl")).map_or(0, |m| m.len());
        for (format, file) in [("trace", "run.zip"), ("har", "run.har")] {
            eprintln!("exports: {name} as {format}");
            let cell = match export(&dir, format, &tmp.path().join(file)) {
                Ok((wall, cpu, rss, bytes)) => format!(
                    "{wall:.2} s | {cpu:.2} s | {:.0} MiB | {}",
                    rss as f64 / 1024.0,
                    size(bytes)
                ),
                Err(e) => format!("{e} | | |"),
            };
            let _ = writeln!(out, "| {name} | {} | {format} | {cell} |", size(journal));
        }
    }
    out
}
