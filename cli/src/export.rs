//! `cdp-relay export RUN_DIR|RUN_ID [--format playwright] [--out FILE]`: a run written back as a
//! test that replays it (see `cdp_report::replay`), on stdout or into FILE.

use super::evidence::EvidenceDir;
use anyhow::Context as _;
use cdp_report::replay::{self, Format};
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
}

/// Runs `cdp-relay export`.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let run_dir = super::report::resolve(&args.run, &args.dir)?;
    let format = match args.format {
        ExportFormat::Playwright => Format::Playwright,
    };
    let export = replay::export(&run_dir, format)
        .with_context(|| format!("cannot export {}", run_dir.display()))?;
    match &args.out {
        Some(path) => std::fs::write(path, export.text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(export.text.as_bytes())
            .context("cannot write to stdout")?,
    }
    let f = &export.figures;
    eprintln!(
        "cdp-relay: {} steps exported, {} of them as comments (not replayable); {} variables{}",
        f.steps,
        f.not_replayable,
        f.variables,
        if f.records_unreadable > 0 {
            format!("; {} journal lines could not be read", f.records_unreadable)
        } else {
            String::new()
        }
    );
    Ok(ExitCode::SUCCESS)
}
