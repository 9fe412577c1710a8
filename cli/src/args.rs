//! The flags `serve`, `launch` and `mcp` share (where to listen, who may connect, evidence),
//! the usage error every command raises, and the one async runtime each command builds. The
//! command modules use these; this module uses none of them but `upload`'s flags.

use crate::{secrets, upload};
use cdp_relay::{Config, EvidenceSettings, ListenPolicy};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

/// A usage error raised by the command line itself (exit 64).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// Flags shared by `serve` and `launch`: where to listen and who may connect.
#[derive(Debug, Clone, Args)]
pub struct RelayArgs {
    /// Address to listen on. Port 0 picks a free port; the endpoint is printed on stdout.
    /// Default: 127.0.0.1:9223. `mcp --listen ADDR` serves MCP over Streamable HTTP at
    /// http://ADDR/mcp instead of stdio (each session's relay takes a free loopback port).
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

    /// Send OpenTelemetry spans to this OTLP/HTTP receiver, e.g. http://127.0.0.1:4318
    /// (`/v1/traces` is added): `launch` and `serve` a span per run and per client connection,
    /// `mcp` a span per MCP request; browser effects are their events. Default:
    /// $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then $OTEL_EXPORTER_OTLP_ENDPOINT; unset, nothing is
    /// sent. $OTEL_SERVICE_NAME names the service (default cdp-relay).
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,

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
#[derive(Debug, Clone, Args)]
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
            written: None,
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
    pub(crate) fn into_config(
        self,
        upstream: Option<String>,
        observe_by_default: bool,
    ) -> anyhow::Result<Config> {
        self.into_config_listening(upstream, observe_by_default, DEFAULT_LISTEN)
    }

    /// [`RelayArgs::into_config`] with the command's own default listen address.
    pub(crate) fn into_config_listening(
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
