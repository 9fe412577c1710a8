//! Object storage on the command line: the `--evidence-upload` flags every command that
//! finalizes runs shares, `cdp-relay upload` (pending runs, by hand), and the `--remote` side of
//! `runs` and `report`.
//!
//! Store settings come from the `AWS_*` environment (endpoint, region, credentials, web
//! identity), read here and handed to the library as data: the library never reads the
//! environment itself.
//!
//! Nothing here retries: the store client retries each request (`cdp_relay::upload`'s one
//! policy), and a run that still fails stays local and pending for the next try.

use super::evidence::EvidenceDir;
use crate::args::Usage;
use anyhow::Context as _;
use cdp_relay::upload::{self, Attempt, RunOptions, Target, UploadState};
use cdp_relay::{SecretValue, UploadSettings};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Upload flags of the commands that finalize runs.
#[derive(Debug, Clone, clap::Args)]
pub struct UploadArgs {
    /// Upload each finalized run to object storage, e.g. s3://bucket/prefix (endpoint, region
    /// and credentials from the AWS_* environment). Runs go to <prefix>/<runId>/, manifest last.
    #[arg(
        long = "evidence-upload",
        env = "CDP_RELAY_EVIDENCE_UPLOAD",
        value_name = "URL"
    )]
    pub url: Option<String>,

    /// Upload only runs that recorded a failure (failed requests, console errors, lost
    /// connections); the others stay local and are pruned as usual.
    #[arg(long = "upload-only-failed", env = "CDP_RELAY_UPLOAD_ONLY_FAILED")]
    pub only_failed: bool,
}

impl UploadArgs {
    /// The settings, with every `AWS_*` variable of the environment; `None` without a URL.
    pub(crate) fn settings(&self) -> anyhow::Result<Option<UploadSettings>> {
        let Some(url) = self.url.as_deref().filter(|u| !u.trim().is_empty()) else {
            if self.only_failed {
                return Err(Usage(
                    "--upload-only-failed needs --evidence-upload URL (or CDP_RELAY_EVIDENCE_UPLOAD)"
                        .into(),
                )
                .into());
            }
            return Ok(None);
        };
        let mut s = settings_for(url, false)?;
        s.only_failed = self.only_failed;
        Ok(Some(s))
    }
}

/// Settings for `url` with the `AWS_*` environment; the URL is checked here (naming `--remote`
/// when `reading`).
fn settings_for(url: &str, reading: bool) -> anyhow::Result<UploadSettings> {
    let mut s = UploadSettings::new(url);
    s.options = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| k.starts_with("AWS_"))
        .map(|(k, v)| (k, SecretValue::new(v)))
        .collect();
    // Fails early, with the flag's name, on a URL that is not s3://bucket[/prefix].
    if reading {
        Target::for_reading(&s)?;
    } else {
        Target::new(&s)?;
    }
    Ok(s)
}

/// Flags of `cdp-relay upload`.
#[derive(Debug, clap::Args)]
pub struct UploadCmdArgs {
    #[command(flatten)]
    pub dir: EvidenceDir,

    #[command(flatten)]
    pub upload: UploadArgs,

    /// Ignored, accepted so that scripts keep working: each request to the store is retried
    /// (see docs/deploy.md), and a run that fails stays pending for the next try.
    #[arg(long, hide = true, value_name = "N")]
    pub attempts: Option<u32>,

    /// Only these runs (ids under the evidence root). Default: every finalized run not
    /// uploaded yet.
    #[arg(value_name = "RUN_ID")]
    pub runs: Vec<String>,
}

/// `cdp-relay upload`: uploads finalized runs that are not in the bucket yet, one line each.
pub fn run_upload(args: UploadCmdArgs) -> anyhow::Result<ExitCode> {
    let Some(settings) = args.upload.settings()? else {
        return Err(Usage(
            "cdp-relay upload needs --evidence-upload URL (or CDP_RELAY_EVIDENCE_UPLOAD)".into(),
        )
        .into());
    };
    let store = cdp_evidence::Store::open(cdp_evidence::EvidenceConfig::at(&args.dir.evidence_dir))
        .map_err(|e| Usage(e.to_string()))?;
    let dirs: Vec<PathBuf> = if args.runs.is_empty() {
        store
            .list_runs()
            .context("cannot list the runs")?
            .into_iter()
            .filter(|r| !r.legacy && r.status == cdp_evidence::RunStatus::Finalized)
            .filter_map(|r| store.run_dir(&r.id).ok())
            .filter(|d| !matches!(upload::read_state(d), Ok(Some(s)) if s.state.is_done()))
            .collect()
    } else {
        args.runs
            .iter()
            .map(|id| {
                let dir = store.run_dir(id).map_err(|e| Usage(e.to_string()))?;
                if !dir.is_dir() {
                    return Err(Usage(format!(
                        "no run {id} under {}",
                        store.root().display()
                    )));
                }
                Ok(dir)
            })
            .collect::<Result<_, Usage>>()?
    };
    if args.attempts.is_some() {
        eprintln!(
            "cdp-relay: warning: --attempts is ignored: each request to the store is retried up \
             to {} times, and a run that fails stays pending",
            upload::MAX_RETRIES
        );
    }
    let failed = crate::args::runtime(Some(1))?.block_on(async {
        let target = Target::new(&settings)?;
        let opts = RunOptions {
            only_failed: settings.only_failed,
            host: upload::host_name(),
            source: "cli",
        };
        let mut failed = 0usize;
        let mut out = std::io::stdout().lock();
        if dirs.is_empty() {
            eprintln!("cdp-relay: nothing to upload in {}", store.root().display());
        }
        for dir in &dirs {
            let id = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            match upload_one(&target, dir, &opts).await {
                Ok(line) => writeln!(out, "{line}").context("cannot write to stdout")?,
                Err(e) => {
                    failed += 1;
                    eprintln!("cdp-relay: run {id} not uploaded: {e}; it stays local and pending");
                }
            }
        }
        anyhow::Ok(failed)
    })?;
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// One attempt (the store client retries each request); the line to print for the run.
async fn upload_one(target: &Target, dir: &Path, opts: &RunOptions) -> Result<String, String> {
    let id = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    match upload::upload_run(target, dir, opts).await {
        Ok(Attempt::Done(st)) if st.state == UploadState::Skipped => Ok(format!(
            "skipped {id} (no failure recorded; --upload-only-failed)"
        )),
        Ok(Attempt::Done(st)) => Ok(format!(
            "uploaded {id} to {} ({} files, {} bytes)",
            st.target,
            st.files.unwrap_or(0),
            st.bytes.unwrap_or(0)
        )),
        Ok(Attempt::AlreadyDone(st)) => Ok(format!(
            "{id} is already {} ({})",
            st.state.as_str(),
            st.target
        )),
        Ok(Attempt::Busy) => Err("another process is uploading it right now".into()),
        Ok(Attempt::NotFinalized(why)) => Err(why.into()),
        Err(e) => Err(e.to_string()),
    }
}

/// `evidence finalize` with uploads configured: upload the run just finalized. A failure is a
/// warning: the run is finalized and stays local, pending, for the relay's next scan or start,
/// or `cdp-relay upload`.
pub(crate) fn after_finalize(args: &UploadArgs, run_dir: &Path) -> anyhow::Result<()> {
    let Some(settings) = args.settings()? else {
        return Ok(());
    };
    let line = crate::args::runtime(Some(1))?.block_on(async {
        let target = Target::new(&settings)?;
        let opts = RunOptions {
            only_failed: settings.only_failed,
            host: upload::host_name(),
            source: "cli",
        };
        anyhow::Ok(upload_one(&target, run_dir, &opts).await)
    })?;
    match line {
        Ok(line) => eprintln!("cdp-relay: {line}"),
        Err(e) => eprintln!(
            "cdp-relay: warning: the run was finalized but not uploaded ({e}); it stays local and \
             pending: `cdp-relay upload` or the relay's next start uploads it"
        ),
    }
    Ok(())
}

/// `--remote` flags of `cdp-relay runs`.
#[derive(Debug, clap::Args)]
pub struct RemoteListArgs {
    /// List the runs in object storage instead (s3://bucket/prefix; AWS_* environment),
    /// newest first, from their manifests.
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,

    /// With --remote: at most this many runs.
    #[arg(long, default_value_t = 50, value_name = "N", requires = "remote")]
    pub limit: usize,

    /// With --remote: only this session's runs.
    #[arg(long, value_name = "NAME", requires = "remote")]
    pub session: Option<String>,
}

/// `cdp-relay runs --remote URL`.
pub(crate) fn runs_remote(
    args: &RemoteListArgs,
    url: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let settings = settings_for(url, true)?;
    let listing = crate::args::runtime(Some(1))?.block_on(async {
        let target = Target::for_reading(&settings)?;
        anyhow::Ok(upload::list_runs(&target, args.limit, args.session.as_deref()).await?)
    })?;
    let mut out = std::io::stdout().lock();
    if json {
        let json = serde_json::to_string(&listing.runs).context("cannot encode the run list")?;
        writeln!(out, "{json}").context("cannot write to stdout")?;
    } else if listing.runs.is_empty() {
        eprintln!("cdp-relay: no runs in {url}");
    } else {
        writeln!(out, "{}", remote_table(&listing.runs)).context("cannot write to stdout")?;
    }
    if listing.incomplete > 0 {
        eprintln!(
            "cdp-relay: {} run(s) without a manifest not shown (an upload in progress, or one \
             a stopped relay finishes at its next start)",
            listing.incomplete
        );
    }
    if listing.unreadable > 0 {
        eprintln!(
            "cdp-relay: {} run(s) whose manifest could not be read not shown (first: {})",
            listing.unreadable,
            listing.unreadable_reason.as_deref().unwrap_or("unknown")
        );
    }
    if listing.not_shown > 0 {
        eprintln!(
            "cdp-relay: {} older run(s) not shown (--limit)",
            listing.not_shown
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A bucket's text made safe for a terminal: control characters (ANSI escapes among them) and
/// the invisible ones that reorder or hide text are shown as `\u{…}`, as `--json` escapes them.
fn printable(s: &str) -> String {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
    };
    if !s.chars().any(hidden) {
        return s.to_owned();
    }
    s.chars()
        .map(|c| {
            if hidden(c) {
                format!("\\u{{{:04x}}}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn remote_table(runs: &[upload::RemoteRun]) -> String {
    let dash = |v: Option<String>| v.map_or_else(|| "-".to_owned(), |s| printable(&s));
    let rows: Vec<[String; 8]> = runs
        .iter()
        .map(|r| {
            [
                r.id.clone(),
                dash(r.status.as_ref().map(ToString::to_string)),
                dash(r.started_at.clone()),
                dash(r.failures.map(|n| n.to_string())),
                dash(r.records.map(|n| n.to_string())),
                dash(r.size_bytes.map(|n| n.to_string())),
                dash(r.session_id.clone()),
                dash(r.host.clone()),
            ]
        })
        .collect();
    let header = [
        "RUN", "STATUS", "STARTED", "FAILURES", "RECORDS", "BYTES", "SESSION", "HOST",
    ];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (c, w))| match i {
                3..=5 => format!("{c:>w$}"),
                7 => (*c).to_owned(),
                _ => format!("{c:<w$}"),
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = vec![line(header.to_vec())];
    out.extend(
        rows.iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    out.join("\n")
}

/// `cdp-relay report --remote URL RUN`: fetches the run whole into `out` and returns the path
/// of its `report.html`, always rendered here from the fetched journal: the bucket's own copy
/// is not fetched (any pod can write the bucket; a planted page could carry a script).
pub(crate) fn report_remote(url: &str, run_id: &str, out: &Path) -> anyhow::Result<PathBuf> {
    let settings = settings_for(url, true)?;
    let dir = crate::args::runtime(Some(1))?.block_on(async {
        let target = Target::for_reading(&settings)?;
        anyhow::Ok(upload::fetch_run(&target, run_id, out).await?)
    })?;
    let rendered = cdp_report::render(&dir)
        .with_context(|| format!("cannot render the report of {}", dir.display()))?;
    Ok(rendered.html_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_failed_needs_a_url() {
        let a = UploadArgs {
            url: None,
            only_failed: true,
        };
        assert!(a
            .settings()
            .unwrap_err()
            .to_string()
            .contains("--evidence-upload"));
        let none = UploadArgs {
            url: Some("  ".into()),
            only_failed: false,
        };
        assert!(none.settings().unwrap().is_none());
        let bad = UploadArgs {
            url: Some("https://example.com/x".into()),
            only_failed: false,
        };
        let e = bad.settings().unwrap_err();
        assert!(e.to_string().contains("s3://"), "{e}");
    }

    #[test]
    fn the_table_shows_a_buckets_escapes_escaped() {
        assert_eq!(printable("pod-1"), "pod-1");
        let shown = printable("\u{1b}[2J\u{1b}]0;owned\u{7}evil\u{202e}txt.exe\n");
        assert!(
            !shown.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{shown:?}"
        );
        assert_eq!(
            shown,
            "\\u{001b}[2J\\u{001b}]0;owned\\u{0007}evil\\u{202e}txt.exe\\u{000a}"
        );
        let run = upload::RemoteRun {
            id: "r1".into(),
            session_id: Some("s\u{1b}[31m".into()),
            status: Some(cdp_evidence::RunStatus::Finalized.into()),
            started_at: None,
            finalized_at: None,
            failures: None,
            host: Some("\u{1b}[2Jhost".into()),
            records: None,
            size_bytes: None,
            truncated: false,
            uploaded_at: None,
            url: "s3://b/r1/".into(),
        };
        let table = remote_table(&[run]);
        assert!(!table.contains('\u{1b}'), "{table:?}");
        assert!(table.contains("\\u{001b}[2Jhost"), "{table}");
    }
}
