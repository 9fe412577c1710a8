//! The `cdp-relay` binary: flags (clap derive) turned into a validated [`Config`], then
//! dispatched to the libraries. Everything the relay does lives in them.
//!
//! Exit codes: 0 success (also when a reader closes stdout early, e.g. `| head`), 64 usage error
//! (`EX_USAGE`), 1 anything else. Errors print as one line on stderr.

#![forbid(unsafe_code)]

mod args;
mod demo;
mod evidence;
mod export;
mod logging;
mod mcp;
mod otlp;
mod relay;
mod report;
mod sanitize;
mod secrets;
mod signals;
mod upload;

use args::{runtime, LaunchArgs, ServeArgs};
use cdp_relay::LaunchConfig;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// `EX_USAGE` from sysexits.h: the command was used incorrectly.
pub const EXIT_USAGE: u8 = 64;

/// A transparent Chrome DevTools Protocol relay that records a privacy-safe evidence timeline.
#[derive(Debug, Parser)]
#[command(name = "cdp-relay", version, about, propagate_version = true)]
pub struct Cli {
    /// More log output on stderr (-v debug, -vv trace). `RUST_LOG` overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// Log format on stderr: text for people, json (one object per line) for log collectors.
    #[arg(long, value_enum, default_value_t = logging::LogFormat::Text, env = "CDP_RELAY_LOG_FORMAT", global = true)]
    pub log_format: logging::LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// See what it records: an agent drives a built-in web app through the relay in Chromium;
    /// prints the path of the report.
    Demo(demo::DemoArgs),
    /// Relay an already running Chromium (started with --remote-debugging-port).
    Serve(ServeArgs),
    /// Start a headless Chromium with a fresh profile and relay it.
    Launch(LaunchArgs),
    /// An MCP server on stdio for AI agents: a browser behind the relay, the browser tools of
    /// the MCP server given after `--` (chrome-devtools-mcp, @playwright/mcp) passed through,
    /// and evidence of what each tool call did.
    Mcp(mcp::McpArgs),
    /// Sanitize text (or JSON) from stdin to stdout, removing secrets and CDP ids.
    Sanitize(sanitize::SanitizeArgs),
    /// Evidence journal tools for other producers.
    Evidence(evidence::EvidenceArgs),
    /// List evidence runs.
    Runs(evidence::RunsArgs),
    /// Delete old finalized evidence runs.
    Prune(evidence::PruneArgs),
    /// Render (or re-render) a run's report.html and summary.md; prints the report's path.
    Report(report::ReportArgs),
    /// Write a run as a test that replays it (a Playwright spec; typed text read from
    /// environment variables).
    Export(export::ExportArgs),
    /// Upload finalized runs that are not in object storage yet (--evidence-upload URL).
    Upload(upload::UploadCmdArgs),
}

/// Parses the process arguments, runs the command, returns the exit code.
fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    logging::init(cli.verbose, cli.log_format);
    logging::hide_panic_messages();
    match run(cli.command) {
        Ok(code) => code,
        // A reader that closed stdout early (`| head`) got what it wanted.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            logging::fatal(&one_line(&e));
            ExitCode::from(if is_usage(&e) { EXIT_USAGE } else { 1 })
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve(args) => {
            let threads = args.relay.threads;
            let otlp = otlp::endpoint(args.relay.otlp_endpoint.as_deref())?;
            let config = args.relay.into_config(Some(args.upstream), false)?;
            runtime(threads)?.block_on(relay::serve(config, otlp))
        }
        Command::Launch(args) => {
            let threads = args.relay.threads;
            let otlp = otlp::endpoint(args.relay.otlp_endpoint.as_deref())?;
            let config = args.relay.into_config(None, true)?;
            let mut extra_args = args.extra_args;
            if args.browser_no_sandbox {
                extra_args.insert(0, "--no-sandbox".into());
            }
            let launch = LaunchConfig {
                browser: args.browser,
                headed: args.headed,
                extra_args,
                browser_env: std::env::var_os("CDP_RELAY_BROWSER").map(PathBuf::from),
            };
            runtime(threads)?.block_on(relay::launch(config, launch, otlp))
        }
        Command::Mcp(args) => mcp::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Sanitize(args) => sanitize::run(args),
        Command::Evidence(args) => evidence::run_evidence(args),
        Command::Runs(args) => evidence::run_runs(args),
        Command::Prune(args) => evidence::run_prune(args),
        Command::Report(args) => report::run(args),
        Command::Export(args) => export::run(args),
        Command::Upload(args) => upload::run_upload(args),
    }
}

fn is_usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<args::Usage>().is_some()
            || c.downcast_ref::<cdp_relay::Error>()
                .is_some_and(cdp_relay::Error::is_usage)
            || c.downcast_ref::<cdp_relay_proxy::Error>()
                .is_some_and(cdp_relay_proxy::Error::is_usage)
    })
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Help and version go to stdout in full; a usage error is one line on stderr, exit 64.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                EXIT_USAGE
            } else {
                0
            },
        );
    }
    // clap's first paragraph is the message; the rest is usage and tips.
    let rendered = e.render().to_string();
    let first = rendered
        .split("\n\n")
        .next()
        .unwrap_or("invalid arguments")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let first = first.trim_start_matches("error: ");
    // clap quotes whatever was typed; a pasted capability URL or token must not be echoed as is.
    let first = cdp_sanitize::Sanitizer::new().text(first);
    logging::fatal(&format!("{first} (see cdp-relay --help)"));
    ExitCode::from(EXIT_USAGE)
}

/// The error chain on one line: `outer: cause: root cause`.
fn one_line(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for (i, cause) in e.chain().enumerate() {
        let s = cause.to_string();
        if i > 0 {
            if out.contains(&s) {
                continue;
            }
            out.push_str(": ");
        }
        out.push_str(s.trim());
    }
    out.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdp_relay::EvidenceSettings;

    fn settings(args: &[&str]) -> Result<EvidenceSettings, String> {
        let cli = Cli::try_parse_from(args).map_err(|e| e.to_string())?;
        match cli.command {
            Command::Serve(a) => a.relay.evidence.into_settings(false),
            Command::Launch(a) => a.relay.evidence.into_settings(true),
            _ => unreachable!("a relay command"),
        }
        .map_err(|e| e.to_string())
    }

    #[test]
    fn observe_defaults_per_command_and_flags_override() {
        let serve = ["cdp-relay", "serve", "--upstream", "127.0.0.1:9222"];
        assert!(!settings(&serve).unwrap().observe, "off for serve");
        assert!(
            settings(&[&serve[..], &["--observe"]].concat())
                .unwrap()
                .observe
        );
        assert!(
            settings(&["cdp-relay", "launch"]).unwrap().observe,
            "on for launch"
        );
        assert!(
            !settings(&["cdp-relay", "launch", "--no-observe"])
                .unwrap()
                .observe
        );
        // The last of the two wins, as with other on/off pairs.
        assert!(
            settings(&["cdp-relay", "launch", "--no-observe", "--observe"])
                .unwrap()
                .observe
        );
        // --no-screenshots still wins over frames: the observer runs, pictures are off.
        let s = settings(&["cdp-relay", "launch", "--no-screenshots"]).unwrap();
        assert!(s.observe && !s.screenshots);
        assert!(settings(&["cdp-relay", "launch", "--no-evidence", "--observe"]).is_err());
    }

    #[test]
    fn the_journal_budget_takes_binary_units() {
        let budget = |extra: &[&str]| {
            settings(&[&["cdp-relay", "launch"], extra].concat()).map(|s| s.journal_budget_bytes)
        };
        assert_eq!(budget(&[]), Ok(32 << 20));
        assert_eq!(budget(&["--journal-budget", "500KiB"]), Ok(500 << 10));
        assert_eq!(budget(&["--journal-budget", "2g"]), Ok(2 << 30));
        assert_eq!(budget(&["--journal-budget", "1048576"]), Ok(1 << 20));
        for bad in ["12KiB", "lots", "5TiB", "-1"] {
            assert!(budget(&["--journal-budget", bad]).is_err(), "{bad}");
        }
    }
}
