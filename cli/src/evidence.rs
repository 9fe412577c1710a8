//! `cdp-relay evidence append|finalize`, `cdp-relay runs`, `cdp-relay prune`: the evidence
//! journal for producers in other languages, and run housekeeping.
//!
//! `evidence append` reads one JSON record per line from stdin, sanitizes every string through
//! `cdp_sanitize::Sanitizer` and appends through `cdp_evidence` (lock, torn-tail repair, bounded
//! single write), so a Node or Swift producer never reimplements the lock. A bad line is reported
//! on stderr by line number only — never its content, which may hold the very secrets this
//! boundary exists to keep out — and skipped; the exit status is then 1. A record the journal
//! cannot take (a full disk) is reported the same way and costs nothing but itself: the next
//! lines are still appended.
//! The input schema is in `docs/evidence-format.md` and in [`producer`] (shared with remote
//! producers: `POST /relay/v1/evidence`).

use anyhow::Context as _;
use cdp_evidence::{producer, EvidenceConfig, JoinAs, Run, RunInfo, Store, Totals};
use cdp_sanitize::Sanitizer;
use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Longest stdin line `evidence append` accepts; records are cut far below this anyway.
const MAX_INPUT_LINE: usize = 16 * 1024 * 1024;

/// Lines that could not be appended (an I/O error, a full disk) reported one by one; the rest
/// are counted, so a long outage does not flood stderr.
const MAX_REPORTED_FAILURES: u64 = 10;

/// Where the evidence root is.
#[derive(Debug, clap::Args)]
pub struct EvidenceDir {
    /// Evidence root directory.
    #[arg(
        long = "evidence-dir",
        env = "CDP_RELAY_EVIDENCE_DIR",
        default_value = cdp_evidence::DEFAULT_ROOT,
        value_name = "DIR"
    )]
    pub evidence_dir: PathBuf,
}

/// Flags of `cdp-relay evidence`.
#[derive(Debug, clap::Args)]
pub struct EvidenceArgs {
    #[command(subcommand)]
    pub command: EvidenceCommand,
}

/// `cdp-relay evidence` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum EvidenceCommand {
    /// Append JSON records (one per line on stdin) to the session's active run, creating it if
    /// needed. Prints the run id on stdout.
    Append(AppendArgs),
    /// Finalize the session's active run (another producer may still be using it).
    Finalize(FinalizeArgs),
}

/// Flags of `cdp-relay evidence append`.
#[derive(Debug, clap::Args)]
pub struct AppendArgs {
    #[command(flatten)]
    pub dir: EvidenceDir,

    /// Session whose active run receives the records (`[A-Za-z0-9._-]`, up to 128).
    #[arg(long, value_name = "NAME")]
    pub session: String,

    /// Producer name recorded in each record's `source` unless the record names its own.
    #[arg(long, default_value = "cli", value_name = "NAME")]
    pub source: String,

    /// Redact the value of this environment variable as `${NAME}` everywhere. Repeatable.
    #[arg(long = "secret-env", value_name = "NAME")]
    pub secret_env: Vec<String>,
}

/// Flags of `cdp-relay evidence finalize`.
#[derive(Debug, clap::Args)]
pub struct FinalizeArgs {
    #[command(flatten)]
    pub dir: EvidenceDir,

    /// Session whose active run to finalize.
    #[arg(long, value_name = "NAME")]
    pub session: String,

    /// Producer name recorded as the finalizer.
    #[arg(long, default_value = "cli", value_name = "NAME")]
    pub source: String,

    /// Evidence the producer dropped, recorded in the manifest totals.
    #[arg(long, default_value_t = 0, value_name = "COUNT")]
    pub dropped: u64,

    #[command(flatten)]
    pub upload: super::upload::UploadArgs,
}

/// Flags of `cdp-relay runs`.
#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    #[command(flatten)]
    pub dir: EvidenceDir,

    /// Print a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub remote: super::upload::RemoteListArgs,
}

/// Flags of `cdp-relay prune`.
#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub dir: EvidenceDir,

    /// Finalized runs to keep (newest by start time). Running, active and legacy runs are
    /// never deleted.
    #[arg(long, default_value_t = cdp_evidence::DEFAULT_KEEP_FINALIZED_RUNS, value_name = "N")]
    pub keep: usize,

    /// With uploads configured, runs not uploaded yet are kept too.
    #[arg(
        long = "evidence-upload",
        env = "CDP_RELAY_EVIDENCE_UPLOAD",
        value_name = "URL"
    )]
    pub upload: Option<String>,
}

/// Runs `cdp-relay evidence ...`.
pub fn run_evidence(args: EvidenceArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        EvidenceCommand::Append(a) => append(a),
        EvidenceCommand::Finalize(a) => finalize(a),
    }
}

fn usage(msg: String) -> anyhow::Error {
    crate::args::Usage(msg).into()
}

fn open_store(dir: &EvidenceDir) -> anyhow::Result<Store> {
    Store::open(EvidenceConfig::at(&dir.evidence_dir)).map_err(|e| usage(e.to_string()))
}

fn check_ids(session: &str, source: &str) -> anyhow::Result<()> {
    cdp_evidence::validate_id("--session", session).map_err(|e| usage(e.to_string()))?;
    cdp_evidence::validate_id("--source", source).map_err(|e| usage(e.to_string()))
}

fn dir_hint(dir: &EvidenceDir) -> String {
    format!(
        "evidence directory {} (set with --evidence-dir or CDP_RELAY_EVIDENCE_DIR)",
        dir.evidence_dir.display()
    )
}

fn append(args: AppendArgs) -> anyhow::Result<ExitCode> {
    check_ids(&args.session, &args.source)?;
    let sanitizer = Sanitizer::new();
    for (name, value) in super::secrets::from_env(&args.secret_env)? {
        sanitizer
            .register_secret(&name, &value)
            .map_err(|e| usage(format!("--secret-env {name}: {e}")))?;
    }
    let store = open_store(&args.dir)?;
    let mut appender = Appender {
        store: &store,
        session: &args.session,
        source: &args.source,
        run: None,
    };
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    let (mut good, mut bad, mut failed) = (0u64, 0u64, 0u64);
    for number in 1u64.. {
        let Some(overflow) = read_line(&mut input, &mut line).context("cannot read stdin")? else {
            break;
        };
        if overflow {
            bad += 1;
            eprintln!(
                "cdp-relay: stdin line {number}: longer than {MAX_INPUT_LINE} bytes; skipped"
            );
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let record = match producer::parse_line(&line, &sanitizer) {
            Ok(record) => record,
            Err(reason) => {
                bad += 1;
                eprintln!("cdp-relay: stdin line {number}: {reason}; skipped");
                continue;
            }
        };
        // A record the journal refuses costs itself only: the next lines are still appended.
        match appender.append(record) {
            Ok(()) => good += 1,
            Err(e) => {
                failed += 1;
                if failed <= MAX_REPORTED_FAILURES {
                    eprintln!(
                        "cdp-relay: stdin line {number}: not appended: {e} ({})",
                        dir_hint(&args.dir)
                    );
                } else if failed == MAX_REPORTED_FAILURES + 1 {
                    eprintln!("cdp-relay: further lines that cannot be appended are only counted");
                }
            }
        }
    }
    if let Some(run) = &appender.run {
        let mut out = io::stdout().lock();
        writeln!(out, "{}", run.id()).context("cannot write to stdout")?;
    }
    // One input line that could not be appended already said everything on its own line.
    let alone = good == 0 && bad == 0 && failed == 1;
    if bad + failed > 0 && !alone {
        eprintln!(
            "cdp-relay: appended {good} record(s), skipped {bad} bad line(s), could not append \
             {failed}; fix the producer (see docs/evidence-format.md) or the evidence directory"
        );
    }
    if bad + failed > 0 {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Joins lazily (no run is created for empty input) and re-joins once if another producer
/// finalized the run mid-stream (or its directory was removed), so those records land in the
/// session's next run. A failed join is retried with the next record.
struct Appender<'a> {
    store: &'a Store,
    session: &'a str,
    source: &'a str,
    run: Option<Run>,
}

impl Appender<'_> {
    fn append(&mut self, record: cdp_evidence::Record) -> Result<(), cdp_evidence::Error> {
        let run = match &mut self.run {
            Some(run) => run,
            none => none.insert(
                self.store
                    .join_session_transient(self.session, self.source)?,
            ),
        };
        self.store
            .write_or_rejoin(run, self.session, self.source, JoinAs::Transient, |run| {
                run.append(record.clone())
            })
            .map(|_| ())
    }
}

/// Reads one line (without its `\n`) into `buf`, keeping at most [`MAX_INPUT_LINE`] bytes.
/// `None` at end of input; `Some(true)` when the line was longer than the limit.
fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
    buf.clear();
    let line = cdp_evidence::read_bounded_line(input, buf, MAX_INPUT_LINE)?;
    Ok((!line.at_end()).then_some(line.overflow))
}

fn finalize(args: FinalizeArgs) -> anyhow::Result<ExitCode> {
    check_ids(&args.session, &args.source)?;
    let store = open_store(&args.dir)?;
    let run = store
        .active_run(&args.session, &args.source)
        .with_context(|| dir_hint(&args.dir))?;
    let Some(run) = run else {
        eprintln!(
            "cdp-relay: session {} has no active run in {}; nothing to finalize",
            args.session,
            store.root().display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    run.finalize(Totals {
        dropped_evidence: args.dropped,
        dropped_recorded: 0,
        redactions: None,
    })
    .with_context(|| dir_hint(&args.dir))?;
    // The journal is complete: render it. A report that cannot be written is not a failed
    // finalize.
    match cdp_report::render(run.dir()) {
        Ok(r) => eprintln!("cdp-relay: report {}", r.html_path.display()),
        Err(e) => eprintln!("cdp-relay: warning: could not render the report: {e}"),
    }
    super::upload::after_finalize(&args.upload, run.dir())?;
    writeln!(io::stdout().lock(), "{}", run.id()).context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `cdp-relay runs`.
pub fn run_runs(args: RunsArgs) -> anyhow::Result<ExitCode> {
    if let Some(url) = &args.remote.remote {
        return super::upload::runs_remote(&args.remote, url, args.json);
    }
    let store = open_store(&args.dir)?;
    let runs = store.list_runs().with_context(|| dir_hint(&args.dir))?;
    let mut out = io::stdout().lock();
    if args.json {
        let mut json = serde_json::to_value(&runs).context("cannot encode the run list")?;
        if let Some(list) = json.as_array_mut() {
            for (value, run) in list.iter_mut().zip(&runs) {
                value["report"] = report_path(&store, run)
                    .map(|p| serde_json::Value::String(p.display().to_string()))
                    .unwrap_or(serde_json::Value::Null);
                value["upload"] = upload_state(&store, run)
                    .and_then(|u| serde_json::to_value(u).ok())
                    .unwrap_or(serde_json::Value::Null);
            }
        }
        let json = json.to_string();
        writeln!(out, "{json}").context("cannot write to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        eprintln!(
            "cdp-relay: no runs in {}",
            cell(&store.root().display().to_string())
        );
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "{}", table(&store, &runs)).context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// The run's `report.html`, when it has one.
fn report_path(store: &Store, run: &RunInfo) -> Option<PathBuf> {
    let path = store.run_dir(&run.id).ok()?.join(cdp_report::HTML_FILE);
    path.is_file().then_some(path)
}

/// The run's upload state sidecar, when an uploader has dealt with it.
fn upload_state(store: &Store, run: &RunInfo) -> Option<cdp_relay::upload::RunUpload> {
    cdp_relay::upload::read_state(&store.run_dir(&run.id).ok()?)
        .ok()
        .flatten()
}

fn status_word(store: &Store, r: &RunInfo) -> String {
    let mut s = if r.legacy {
        format!("legacy:{}", r.status)
    } else {
        r.status.to_string()
    };
    if r.active {
        s.push_str(",active");
    }
    if r.truncated {
        s.push_str(",truncated");
    }
    if let Some(u) = upload_state(store, r) {
        s.push_str(",upload-");
        s.push_str(u.state.as_str());
    }
    s
}

/// A manifest word or path as a table cell: control characters (a planted ESC or BEL would
/// drive the terminal) and invisible ones become visible escapes, as in the report.
fn cell(s: &str) -> String {
    cdp_report::visible(s, 200)
}

/// The `runs` table: fixed columns, space-aligned, oldest first.
fn table(store: &Store, runs: &[RunInfo]) -> String {
    let rows: Vec<[String; 7]> = runs
        .iter()
        .map(|r| {
            [
                cell(&r.id),
                cell(&status_word(store, r)),
                r.started_at.as_deref().map_or_else(|| "-".to_owned(), cell),
                r.records.to_string(),
                human_bytes(r.size_bytes),
                r.session_id.as_deref().map_or_else(|| "-".to_owned(), cell),
                report_path(store, r)
                    .map_or_else(|| "-".to_owned(), |p| cell(&p.display().to_string())),
            ]
        })
        .collect();
    let header = [
        "RUN", "STATUS", "STARTED", "RECORDS", "SIZE", "SESSION", "REPORT",
    ];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 7]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            // Numbers right-aligned, text left-aligned; no trailing spaces.
            let padded = match i {
                3 | 4 => format!("{cell:>w$}"),
                6 => (*cell).to_owned(),
                _ => format!("{cell:<w$}"),
            };
            if i > 0 {
                s.push_str("  ");
            }
            s.push_str(&padded);
        }
        s
    };
    let mut out = vec![line(header)];
    out.extend(
        rows.iter()
            .map(|r| line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]])),
    );
    out.join("\n")
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Runs `cdp-relay prune`.
pub fn run_prune(args: PruneArgs) -> anyhow::Result<ExitCode> {
    let hold = cdp_relay::upload::UploadHold {
        uploads_on: args.upload.as_deref().is_some_and(|u| !u.trim().is_empty()),
    };
    let store = open_store(&args.dir)?.with_retention_hold(std::sync::Arc::new(hold));
    let report = store
        .prune_keeping(args.keep)
        .with_context(|| dir_hint(&args.dir))?;
    let mut out = io::stdout().lock();
    for id in &report.removed {
        writeln!(out, "removed {id}").context("cannot write to stdout")?;
    }
    writeln!(
        out,
        "pruned {} run(s), freed {}; kept {} finalized; left {} running/active, {} not uploaded and {} legacy run(s) alone",
        report.removed.len(),
        human_bytes(report.freed_bytes),
        report.kept.len(),
        report.skipped_active,
        report.skipped_held,
        report.skipped_legacy,
    )
    .context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bounded_lines() {
        let mut input = io::Cursor::new(b"a\n\nbc".to_vec());
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut input, &mut buf).unwrap(), Some(false));
        assert_eq!(buf, b"a");
        assert_eq!(read_line(&mut input, &mut buf).unwrap(), Some(false));
        assert_eq!(buf, b"");
        assert_eq!(read_line(&mut input, &mut buf).unwrap(), Some(false));
        assert_eq!(buf, b"bc");
        assert_eq!(read_line(&mut input, &mut buf).unwrap(), None);
    }

    #[test]
    fn sizes_read_like_humans_write_them() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(100 * 1024 * 1024), "100.0 MiB");
    }
}
