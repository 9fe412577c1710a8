//! The `cdp-relay` binary: flags (clap derive) turned into a validated [`Config`], then
//! dispatched to the libraries. Everything the relay does lives in them.
//!
//! Exit codes: 0 success (also when a reader closes stdout early, e.g. `| head`), 64 usage error
//! (`EX_USAGE`), 1 anything else. Errors print as one line on stderr.

#![forbid(unsafe_code)]

mod demo;
mod evidence;
mod export;
mod logging;
mod mcp;
mod relay;
mod report;
mod sanitize;
mod secrets;
mod signals;
mod upload;

use cdp_relay::{Config, EvidenceSettings, LaunchConfig, ListenPolicy};
use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// `EX_USAGE` from sysexits.h: the command was used incorrectly.
pub const EXIT_USAGE: u8 = 64;

/// A usage error raised by the command line itself (exit 64).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

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

/// Flags shared by `serve` and `launch`: where to listen and who may connect.
#[derive(Debug, Args)]
pub struct RelayArgs {
    /// Address to listen on. Port 0 picks a free port; the endpoint is printed on stdout.
    /// Default: 127.0.0.1:9223 (`mcp`: 127.0.0.1:0, any free port).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,

    /// Also accept this Host name (besides IP literals, localhost and *.localhost). Repeatable.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,

    /// Accept websocket upgrades carrying this Origin (`*` for any). Repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,

    /// Require this bearer token (Authorization: Bearer, or ?token=). Required off loopback.
    #[arg(
        long,
        env = "CDP_RELAY_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,

    /// Read the bearer token from this file (e.g. a mounted Kubernetes Secret); surrounding
    /// whitespace is ignored.
    #[arg(long, env = "CDP_RELAY_TOKEN_FILE", value_name = "PATH")]
    pub token_file: Option<PathBuf>,

    /// Allow listening on a non-loopback address without a token.
    #[arg(long)]
    pub insecure_no_auth: bool,

    /// Largest websocket message accepted in each direction, in bytes.
    #[arg(long, default_value_t = cdp_relay::DEFAULT_MAX_MESSAGE_SIZE, value_name = "BYTES")]
    pub max_message_size: usize,

    /// Worker threads. Default: one per CPU core. 1 runs the relay on a single thread: the
    /// lowest latency when one client drives one browser, but no parallelism across sessions.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,

    /// Seconds a stopping relay (SIGTERM, Ctrl-C) may take to close sessions, finalize the run
    /// and finish uploading it; what is left is uploaded at the next start. Keep it below the
    /// pod's terminationGracePeriodSeconds.
    #[arg(long, default_value_t = 25, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub shutdown_grace: u64,

    #[command(flatten)]
    pub evidence: EvidenceArgs,
}

/// Evidence flags shared by `serve` and `launch`.
#[derive(Debug, Args)]
pub struct EvidenceArgs {
    /// Where evidence runs go.
    #[arg(long, env = "CDP_RELAY_EVIDENCE_DIR", default_value = cdp_evidence::DEFAULT_ROOT, value_name = "DIR")]
    pub evidence_dir: PathBuf,

    /// Record nothing; only forward.
    #[arg(long, conflicts_with_all = ["session", "no_screenshots", "secret_env", "observe"])]
    pub no_evidence: bool,

    /// Keep no screenshots (client captures, screencast frames, the observer's own frames).
    #[arg(long)]
    pub no_screenshots: bool,

    /// Open the relay's own CDP connection to the browser: page events even for clients that
    /// enable nothing, frames around failures, input types and typed-text verification.
    /// Default: on for `launch`, off for `serve` (the browser may not expect a second client).
    #[arg(long, overrides_with = "no_observe")]
    pub observe: bool,

    /// Do not open the relay's own CDP connection; record only what clients' traffic shows.
    #[arg(long, overrides_with = "observe")]
    pub no_observe: bool,

    /// Join this session's active run, shared with other producers (e.g. a device layer).
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,

    /// Treat the value of environment variable NAME as a secret, shown as ${NAME}. Repeatable.
    #[arg(long = "secret-env", value_name = "NAME")]
    pub secret_env: Vec<String>,

    #[command(flatten)]
    pub upload: upload::UploadArgs,
    /// Cap on a new run's journal (e.g. 32MiB, 500KiB, 1GiB): past it only markers and
    /// connection events are recorded, the rest is counted, and the run is marked truncated.
    #[arg(
        long,
        env = "CDP_RELAY_JOURNAL_BUDGET",
        default_value = "32MiB",
        value_name = "SIZE",
        value_parser = parse_size
    )]
    pub journal_budget: u64,
}

/// A size in bytes: a number, optionally followed by KiB, MiB or GiB (K, M, G, KB, MB, GB
/// mean the same binary units).
fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(digits);
    let n: u64 = n
        .parse()
        .map_err(|_| "expected a number of bytes, e.g. 32MiB".to_owned())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err("the unit must be KiB, MiB or GiB".to_owned()),
    };
    let bytes = n
        .checked_mul(1 << shift)
        .ok_or_else(|| "too large".to_owned())?;
    if bytes < cdp_evidence::MIN_JOURNAL_BUDGET_BYTES {
        return Err(format!(
            "must be at least {} KiB",
            cdp_evidence::MIN_JOURNAL_BUDGET_BYTES / 1024
        ));
    }
    Ok(bytes)
}

impl EvidenceArgs {
    /// The settings; `observe_by_default` is the command's default for `--observe`.
    pub(crate) fn into_settings(
        self,
        observe_by_default: bool,
    ) -> anyhow::Result<EvidenceSettings> {
        if self.no_evidence {
            if self.upload.url.is_some() {
                return Err(Usage(
                    "--no-evidence records nothing to upload; leave out --evidence-upload \
                     (and CDP_RELAY_EVIDENCE_UPLOAD)"
                        .into(),
                )
                .into());
            }
            return Ok(EvidenceSettings::disabled());
        }
        let observe = match (self.observe, self.no_observe) {
            (true, _) => true,
            (_, true) => false,
            _ => observe_by_default,
        };
        let mut settings = EvidenceSettings {
            enabled: true,
            root: self.evidence_dir,
            session: self.session,
            screenshots: !self.no_screenshots,
            observe,
            secrets: Vec::new(),
            upload: self.upload.settings()?,
            journal_budget_bytes: self.journal_budget,
        };
        for (name, value) in secrets::from_env(&self.secret_env)? {
            settings.add_secret(&name, value)?;
        }
        Ok(settings)
    }
}

/// Flags of `cdp-relay serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The browser's DevTools HTTP endpoint, e.g. http://127.0.0.1:9222.
    #[arg(long, value_name = "URL")]
    pub upstream: String,

    #[command(flatten)]
    pub relay: RelayArgs,
}

/// Flags of `cdp-relay launch`.
#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// Chromium executable. Default: $CDP_RELAY_BROWSER, then chromium, chromium-browser,
    /// google-chrome, google-chrome-stable on PATH.
    #[arg(long, value_name = "PATH")]
    pub browser: Option<PathBuf>,

    /// Show the browser window instead of running headless.
    #[arg(long)]
    pub headed: bool,

    /// Run Chromium without its sandbox (--no-sandbox), for containers that refuse the user
    /// namespaces it needs (a runtime's default seccomp profile): the container is then the
    /// boundary. As root it is always off (Chromium refuses it there).
    #[arg(long, env = "CDP_RELAY_BROWSER_NO_SANDBOX")]
    pub browser_no_sandbox: bool,

    #[command(flatten)]
    pub relay: RelayArgs,

    /// Extra arguments passed to Chromium after `--`.
    #[arg(last = true, value_name = "CHROMIUM_ARGS")]
    pub extra_args: Vec<String>,
}

/// Where `serve` and `launch` listen unless `--listen` says otherwise.
const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9223);

impl RelayArgs {
    fn into_config(
        self,
        upstream: Option<String>,
        observe_by_default: bool,
    ) -> anyhow::Result<Config> {
        self.into_config_listening(upstream, observe_by_default, DEFAULT_LISTEN)
    }

    /// [`RelayArgs::into_config`] with the command's own default listen address.
    fn into_config_listening(
        self,
        upstream: Option<String>,
        observe_by_default: bool,
        default_listen: SocketAddr,
    ) -> anyhow::Result<Config> {
        let token = match (self.token, &self.token_file) {
            (Some(_), Some(_)) => {
                return Err(Usage(
                    "give the token once: --token (or CDP_RELAY_TOKEN) or --token-file (or \
                     CDP_RELAY_TOKEN_FILE), not both"
                        .into(),
                )
                .into())
            }
            (None, Some(path)) => Some(read_token_file(path)?),
            (token, None) => token,
        };
        let policy = ListenPolicy::new(
            self.listen.unwrap_or(default_listen),
            self.allow_host,
            self.allow_origin,
            token,
            self.insecure_no_auth,
        )?;
        let mut config = Config::new(upstream.as_deref(), policy, self.max_message_size)?;
        config.evidence = self.evidence.into_settings(observe_by_default)?;
        config.shutdown_grace = std::time::Duration::from_secs(self.shutdown_grace);
        Ok(config)
    }
}

/// The token in a file (a mounted Secret ends with a newline); never echoed.
fn read_token_file(path: &std::path::Path) -> anyhow::Result<String> {
    use std::io::Read;
    let mut token = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64 * 1024).read_to_string(&mut token))
        .map_err(|e| Usage(format!("cannot read --token-file {}: {e}", path.display())))?;
    let token = token.trim();
    if token.is_empty() {
        return Err(Usage(format!(
            "--token-file {} is empty; put the token in it",
            path.display()
        ))
        .into());
    }
    Ok(token.to_owned())
}

/// Parses the process arguments, runs the command, returns the exit code.
fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    logging::init(cli.verbose, cli.log_format);
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
            let config = args.relay.into_config(Some(args.upstream), false)?;
            runtime(threads)?.block_on(relay::serve(config))
        }
        Command::Launch(args) => {
            let threads = args.relay.threads;
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
            runtime(threads)?.block_on(relay::launch(config, launch))
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

/// The one tokio runtime of a command: every command that needs async builds it here, once.
/// `--threads 1` is a current-thread runtime (no cross-thread wake-ups on the forwarding path;
/// the short-lived store commands ask for it too), anything else a multi-threaded one.
pub(crate) fn runtime(threads: Option<u16>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut b = match threads {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        Some(n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(usize::from(n));
            b
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    b.enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))
}

fn is_usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<Usage>().is_some()
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
