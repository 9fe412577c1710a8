//! `cdp-relay report RUN_DIR|RUN_ID`: render (or re-render) a run's `report.html` and
//! `summary.md`, and print the path of `report.html`.

use super::evidence::EvidenceDir;
use crate::args::Usage;
use anyhow::Context as _;
use cdp_evidence::{EvidenceConfig, Store};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags of `cdp-relay report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A run directory, or the id of a run under the evidence root (or in the bucket, with
    /// --remote).
    #[arg(value_name = "RUN_DIR|RUN_ID")]
    pub run: String,

    #[command(flatten)]
    pub dir: EvidenceDir,

    /// Fetch the run from object storage first (s3://bucket/prefix; AWS_* environment).
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,

    /// With --remote: where fetched runs go (as <DIR>/<runId>/).
    #[arg(
        long,
        default_value = "cdp-evidence-remote",
        value_name = "DIR",
        requires = "remote"
    )]
    pub out: PathBuf,
}

/// Runs `cdp-relay report`.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if let Some(url) = &args.remote {
        let html = super::upload::report_remote(url, &args.run, &args.out)?;
        writeln!(std::io::stdout().lock(), "{}", html.display())
            .context("cannot write to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
    let run_dir = resolve(&args.run, &args.dir)?;
    let rendered = cdp_report::render(&run_dir)
        .with_context(|| format!("cannot render the report of {}", run_dir.display()))?;
    let f = &rendered.figures;
    eprintln!(
        "cdp-relay: {} steps, {} failures, {} frames embedded{}",
        f.steps,
        f.failures,
        f.frames_embedded,
        if f.records_unreadable > 0 {
            format!(", {} records could not be shown", f.records_unreadable)
        } else {
            String::new()
        }
    );
    writeln!(std::io::stdout().lock(), "{}", rendered.html_path.display())
        .context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// A path that is a directory wins; otherwise a run id under the evidence root.
pub(crate) fn resolve(run: &str, dir: &EvidenceDir) -> anyhow::Result<PathBuf> {
    let as_path = PathBuf::from(run);
    if as_path.is_dir() {
        return Ok(as_path);
    }
    cdp_evidence::validate_id("RUN_ID", run).map_err(|_| {
        Usage(format!(
            "{:?} is neither a run directory nor a run id; `cdp-relay runs` lists the runs",
            run
        ))
    })?;
    let store = Store::open(EvidenceConfig::at(&dir.evidence_dir)).with_context(|| {
        format!(
            "cannot open the evidence root {}",
            dir.evidence_dir.display()
        )
    })?;
    let run_dir = store.run_dir(run).with_context(|| {
        format!(
            "no run {} under {} (pass the run directory, or --evidence-dir)",
            run,
            dir.evidence_dir.display()
        )
    })?;
    if !run_dir.is_dir() {
        return Err(Usage(format!(
            "no run {} under {}; `cdp-relay runs --evidence-dir DIR` lists the runs",
            run,
            dir.evidence_dir.display()
        ))
        .into());
    }
    Ok(run_dir)
}
