//! `cdp-relay export RUN_DIR|RUN_ID [--format playwright] [--allow-gaps] [--out FILE]`: a run
//! written back as a test that replays it (see `cdp_report::replay`), on stdout or into FILE.
//! A run still being recorded is exported as far as it is written: the spec's header and
//! stderr say so (only the gateway, in the recording process, can wait for its writer).

use super::evidence::EvidenceDir;
use anyhow::Context as _;
use cdp_report::replay::{self, ExportOptions, Format};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// What `--format` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// A Playwright Test file (TypeScript).
    Playwright,
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

    /// Write the test to FILE instead of stdout (e.g. replay.spec.ts).
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// A step that cannot be replayed marks the test fixme there (it stops, reported as skipped)
    /// instead of failing it.
    #[arg(long)]
    pub allow_gaps: bool,
}

/// Runs `cdp-relay export`.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let run_dir = super::report::resolve(&args.run, &args.dir)?;
    let format = match args.format {
        ExportFormat::Playwright => Format::Playwright,
    };
    let mut options = ExportOptions::allowing_gaps(args.allow_gaps);
    options.format = format;
    let export = replay::export_with(&run_dir, options)
        .with_context(|| format!("cannot export {}", run_dir.display()))?;
    match &args.out {
        Some(path) => std::fs::write(path, export.text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(export.text.as_bytes())
            .context("cannot write to stdout")?,
    }
    eprintln!("{}", figures_line(&export.figures, args.allow_gaps));
    if export.figures.still_recording {
        eprintln!(
            "cdp-relay: the run is still being recorded: steps, verdicts and failures written after this export are not in it; export it again once the run is finalized"
        );
    }
    Ok(ExitCode::SUCCESS)
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
    let unreadable = if f.records_unreadable > 0 {
        format!("; {} journal lines could not be read", f.records_unreadable)
    } else {
        String::new()
    };
    format!(
        "cdp-relay: {} steps exported{gaps}; {} variables{unreadable}",
        f.steps, f.variables
    )
}
