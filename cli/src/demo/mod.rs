//! `cdp-relay demo`: the whole product in one command. Launches Chromium behind the relay exactly
//! as `launch` does, serves a small built-in web app with the failures a real app has
//! (`site.rs`), drives it with a built-in CDP client the way an agent would (`client.rs`,
//! `script.rs`), then finalizes the evidence run, renders it and prints the path of
//! `report.html` as its only stdout line.
//!
//! Everything listens on loopback, on ports the OS picks. The browser, the relay and the site
//! stop on every path out of here (success, error, Ctrl-C, the browser dying), and the run is
//! finalized and rendered even when the script fails, so a failed demo still leaves a report.

mod client;
mod script;
mod site;

use anyhow::Context as _;
use cdp_relay::{Config, EvidenceNeed, EvidenceSettings, LaunchConfig, ListenPolicy, Recording};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

// What the demo's agent types and the demo site holds. They are planted secrets: the demo test
// (`tests/tests/demo.rs`) searches every byte of the run and of stderr for them, and must find
// none. Change them there too.
/// The username typed into the sign-in form.
const USERNAME: &str = "alex.morgan@ledgerly.test";
/// The password typed into the sign-in form.
const PASSWORD: &str = "demo-Passw0rd!";
/// The one-time code typed into the sign-in form.
const OTP: &str = "824913";
/// The token in the query of the dashboard's (refused) live-updates request.
const LIVE_TOKEN: &str = "lvt_4Qm9Zr7TxK2pWb8N";
/// The session cookie the site sets after sign-in.
const SESSION_COOKIE: &str = "sess_7fH3kQ9vLm2XpR5w";
/// What the agent searches for (not a secret; shown on the results page).
const SEARCH: &str = "overdue invoices";

/// The browser window the demo asks for, unless `-- --window-size=…` says otherwise: wide enough
/// for the site's desktop layout, short enough for a readable filmstrip.
const WINDOW_SIZE: &str = "--window-size=1024,768";
/// How long the demo waits for the relay's observer to be on the browser's first page.
const OBSERVER_READY: Duration = Duration::from_secs(10);

/// Flags of `cdp-relay demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Chromium executable. Default: $CDP_RELAY_BROWSER, then chromium, chromium-browser,
    /// google-chrome, google-chrome-stable on PATH.
    #[arg(long, value_name = "PATH")]
    pub browser: Option<PathBuf>,

    /// Show the browser window instead of running headless.
    #[arg(long)]
    pub headed: bool,

    /// After the script, keep the browser open behind the relay (its endpoint is logged) until
    /// Ctrl-C or the browser closes; then write the report.
    #[arg(long)]
    pub keep_open: bool,

    /// Where the run goes.
    #[arg(long, env = "CDP_RELAY_EVIDENCE_DIR", default_value = cdp_evidence::DEFAULT_ROOT, value_name = "DIR")]
    pub evidence_dir: PathBuf,

    /// Keep no screenshots (the report then has no frames).
    #[arg(long)]
    pub no_screenshots: bool,

    /// Do not open the relay's own CDP connection (no frames around failures, no input types
    /// or typed-text verdicts).
    #[arg(long)]
    pub no_observe: bool,

    /// Extra arguments passed to Chromium after `--`.
    #[arg(last = true, value_name = "CHROMIUM_ARGS")]
    pub extra_args: Vec<String>,
}

/// Runs `cdp-relay demo`.
pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    crate::args::runtime(None)?.block_on(demo(args))
}

async fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let site = site::Site::start()
        .await
        .context("cannot serve the demo site on 127.0.0.1")?;
    let mut config = Config::new(
        None,
        ListenPolicy::loopback(([127, 0, 0, 1], 0).into()),
        cdp_relay::DEFAULT_MAX_MESSAGE_SIZE,
    )?;
    config.evidence = EvidenceSettings {
        root: args.evidence_dir,
        screenshots: !args.no_screenshots,
        // The relay's own eyes: frames around failures, input types, typed-text verdicts.
        observe: !args.no_observe,
        ..EvidenceSettings::default()
    };
    let mut extra_args = args.extra_args;
    if !extra_args.iter().any(|a| a.starts_with("--window-size")) {
        extra_args.insert(0, WINDOW_SIZE.into());
    }
    let launch = LaunchConfig {
        browser: args.browser,
        headed: args.headed,
        extra_args,
        browser_env: std::env::var_os("CDP_RELAY_BROWSER").map(PathBuf::from),
    };
    let mut shutdown = super::signals::Shutdown::listen();
    let path = std::env::var_os("PATH");
    let (mut browser, running) =
        Recording::launch(config, &launch, path, EvidenceNeed::Required).await?;
    tracing::info!(
        "demo: Chromium is running behind the relay at {}",
        running.endpoint()
    );
    // The agent starts typing at once; the relay's observer must be on the page first, or the
    // first fields are recorded as unidentified (a real client's first page can lose that race).
    let mut outcome = tokio::select! {
        done = async {
            observer_on(running.evidence(), 1).await;
            script::run(running.endpoint(), &site, running.evidence()).await
        } => done,
        status = browser.wait() => Err(browser_gone(status)),
        name = shutdown.recv() => Err(anyhow::anyhow!("interrupted by {name}")),
    };
    if outcome.is_ok() && args.keep_open {
        tracing::info!(
            "demo: done; the browser stays open behind the relay at {} for any CDP client; \
             press Ctrl-C to finish and write the report",
            running.endpoint()
        );
        outcome = tokio::select! {
            name = shutdown.recv() => {
                tracing::info!("{name} received; finishing");
                Ok(())
            }
            status = browser.wait() => match status {
                Ok(s) if s.success() => Ok(()),
                other => Err(browser_gone(other)),
            },
        };
    }
    let summary = running.stop().await;
    browser.shutdown().await;
    drop(site);
    let report = summary.map(|s| absolute(&s.run_dir.join(cdp_report::HTML_FILE)));
    let report = report.filter(|r| r.is_file());
    if let Err(e) = outcome {
        return Err(match report {
            Some(r) => e.context(format!(
                "the demo stopped early; its partial report is {}",
                r.display()
            )),
            None => e.context("the demo stopped early"),
        });
    }
    let report = report.context("the run was recorded but its report could not be written")?;
    tracing::info!(
        "demo: finished in {:.1} s; open the report in a browser",
        started.elapsed().as_secs_f64()
    );
    use std::io::Write;
    writeln!(std::io::stdout().lock(), "{}", report.display()).context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// Waits (at most [`OBSERVER_READY`]) until the relay's observer is on `pages` pages: the agent
/// types and fails at once, and a page the observer is not on yet has its fields recorded as
/// unidentified and its failures without a frame (a real client's new page can lose that race).
async fn observer_on(evidence: Option<&cdp_capture::PipelineHandle>, pages: usize) {
    let Some(evidence) = evidence else {
        return;
    };
    if tokio::time::timeout(OBSERVER_READY, evidence.observing(pages))
        .await
        .is_err()
    {
        tracing::warn!(
            "demo: the relay's observer is not on page {pages} after {} s; going on without it \
             (input types may be unknown, failures without a frame)",
            OBSERVER_READY.as_secs()
        );
    }
}

fn browser_gone(status: std::io::Result<std::process::ExitStatus>) -> anyhow::Error {
    match status {
        Ok(s) => anyhow::anyhow!("the browser exited during the demo ({s})"),
        Err(e) => anyhow::anyhow!("lost track of the browser process: {e}"),
    }
}

/// `path` made absolute (to paste into a browser), or as is if that fails.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
