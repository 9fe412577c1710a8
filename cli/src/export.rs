//! `cdp-relay export RUN_DIR|RUN_ID [--format playwright|trace|har] [--allow-gaps] [--out FILE]`:
//! a run written back as a test that replays it (`playwright`, see `cdp_report::replay`), as a
//! Playwright trace archive (`trace`, see `cdp_report::trace`; needs `--out`) or as a HAR 1.2
//! log of its requests (`har`, see `cdp_report::har`), on stdout or into FILE.
//! A run still being recorded is exported as far as it is written: the spec's header and
//! stderr say so (only the gateway, in the recording process, can wait for its writer).

use super::evidence::EvidenceDir;
use anyhow::Context as _;
use cdp_report::replay::{self, ExportOptions, Format};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What `--format` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// A Playwright Test file (TypeScript).
    Playwright,
    /// A Playwright trace archive (a zip: `npx playwright show-trace FILE`); needs --out.
    Trace,
    /// A HAR 1.2 log of the run's requests (Chrome DevTools' Network panel imports it).
    Har,
}

/// Flags of `cdp-relay export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// A run directory, or the id of a run under the evidence root.
    #[arg(value_name = "RUN_DIR|RUN_ID")]
    pub run: String,

    #[command(flatten)]
    pub dir: EvidenceDir,

    /// What to write.
    #[arg(long, value_enum, default_value_t = ExportFormat::Playwright)]
    pub format: ExportFormat,

    /// Write to FILE instead of stdout (e.g. replay.spec.ts, run.zip, run.har); a trace is
    /// only written to a file.
    #[arg(long, short, value_name = "FILE", required_if_eq("format", "trace"))]
    pub out: Option<PathBuf>,

    /// A step that cannot be replayed marks the test fixme there (it stops, reported as skipped)
    /// instead of failing it.
    #[arg(long)]
    pub allow_gaps: bool,
}

/// Runs `cdp-relay export`.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let run_dir = super::report::resolve(&args.run, &args.dir)?;
    let still_recording = match args.format {
        ExportFormat::Playwright => {
            let mut options = ExportOptions::allowing_gaps(args.allow_gaps);
            options.format = Format::Playwright;
            let export = replay::export_with(&run_dir, options)
                .with_context(|| format!("cannot export {}", run_dir.display()))?;
            write_out(args.out.as_deref(), export.text.as_bytes())?;
            eprintln!("{}", figures_line(&export.figures, args.allow_gaps));
            export.figures.still_recording
        }
        ExportFormat::Trace => trace(&run_dir, args.out.as_deref())?,
        ExportFormat::Har => {
            let export = cdp_report::har::export(&run_dir)
                .with_context(|| format!("cannot export {}", run_dir.display()))?;
            write_out(args.out.as_deref(), export.text.as_bytes())?;
            let f = &export.figures;
            eprintln!(
                "cdp-relay: {} requests exported as HAR 1.2 ({} pages){}",
                f.entries,
                f.pages,
                unreadable(f.records_unreadable)
            );
            f.still_recording
        }
    };
    if still_recording {
        eprintln!(
            "cdp-relay: the run is still being recorded: steps, verdicts and failures written after this export are not in it; export it again once the run is finalized"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `--format trace`: the archive written to a temporary file beside `out`, renamed over it
/// once whole (a zip is never half-written where a viewer would open it).
fn trace(run_dir: &Path, out: Option<&Path>) -> anyhow::Result<bool> {
    let Some(out) = out else {
        anyhow::bail!(
            "--format trace writes a zip archive: give --out FILE (e.g. --out run.zip), then open it with npx playwright show-trace FILE"
        );
    };
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write {}", out.display()))?;
    let f = cdp_report::trace::write(run_dir, tmp.as_file_mut())
        .with_context(|| format!("cannot export {}", run_dir.display()))?;
    tmp.as_file()
        .sync_all()
        .with_context(|| format!("cannot write {}", out.display()))?;
    tmp.persist(out)
        .with_context(|| format!("cannot write {}", out.display()))?;
    let left_out = if f.frames_left_out > 0 {
        format!(" ({} left out)", f.frames_left_out)
    } else {
        String::new()
    };
    eprintln!(
        "cdp-relay: trace written to {} ({} actions, {} failed; {} requests; {} console messages; {} frames{left_out}; {} bytes){}; open it with: npx playwright show-trace {}",
        out.display(),
        f.actions,
        f.failed_actions,
        f.requests,
        f.console,
        f.frames,
        f.bytes,
        unreadable(f.records_unreadable),
        out.display()
    );
    Ok(f.still_recording)
}

fn write_out(out: Option<&Path>, bytes: &[u8]) -> anyhow::Result<()> {
    match out {
        Some(path) => {
            std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
        }
        None => std::io::stdout()
            .lock()
            .write_all(bytes)
            .context("cannot write to stdout"),
    }
}

fn unreadable(n: usize) -> String {
    if n > 0 {
        format!("; {n} journal lines could not be read")
    } else {
        String::new()
    }
}

/// What went into the export, in one line for stderr.
fn figures_line(f: &replay::ExportFigures, allow_gaps: bool) -> String {
    let gaps = match f.first_gap {
        None => String::new(),
        Some(first) if allow_gaps => format!(
            ", {} of them not replayable (the test stops as fixme at step {first})",
            f.not_replayable
        ),
        Some(first) => format!(
            ", {} of them not replayable (the test fails at step {first}; --allow-gaps marks it \
             fixme there)",
            f.not_replayable
        ),
    };
    format!(
        "cdp-relay: {} steps exported{gaps}; {} variables{}",
        f.steps,
        f.variables,
        unreadable(f.records_unreadable)
    )
}
