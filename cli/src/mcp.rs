//! `cdp-relay mcp [RELAY FLAGS] [-- COMMAND [ARGS...]]`: an MCP server on stdio for an agent;
//! with `--listen ADDR`, on Streamable HTTP for many agents, each MCP session with its own
//! browser, wrapped server and run (`serve_http`).
//!
//! Starts a browser behind the relay exactly like `launch` (or relays `--upstream`), with the
//! evidence pipeline and the observer on, then the MCP gateway (`cdp_relay::mcp`) wrapping
//! COMMAND, and serves the agent until it closes stdin or a signal arrives. On the way out:
//! the gateway stops the wrapped server, the run is finalized and rendered, the browser stops.
//!
//! Starting and stopping the browser, relay and pipeline happens here and only here
//! ([`Relayed`]), through the library's [`Recording`], as `launch` and `serve` do.
//!
//! stdout is the MCP session: nothing else is ever written to it. Logs go to stderr.

use super::signals::Shutdown;
use crate::args::{RelayArgs, Usage};
use cdp_relay::{Browser, EvidenceNeed, LaunchConfig, Recording};
use cdp_relay_mcp::{
    ChildCommand, Endpoints, Gateway, GatewayConfig, StopReason, Telemetry, Variables,
};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Where `mcp` listens by default: any free port (each agent gets its own relay).
const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// Flags of `cdp-relay mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Relay this running Chromium's DevTools endpoint instead of launching one
    /// (e.g. http://127.0.0.1:9222).
    #[arg(long, value_name = "URL", conflicts_with_all = ["browser", "headed", "browser_arg"])]
    pub upstream: Option<String>,

    /// Chromium executable. Default: $CDP_RELAY_BROWSER, then chromium, chromium-browser,
    /// google-chrome, google-chrome-stable on PATH.
    #[arg(long, value_name = "PATH")]
    pub browser: Option<PathBuf>,

    /// Show the browser window instead of running headless.
    #[arg(long)]
    pub headed: bool,

    /// An extra argument for Chromium (repeatable; `--browser-arg=--lang=fr`).
    #[arg(long = "browser-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub browser_arg: Vec<String>,

    /// Seconds the wrapped MCP server gets to answer `initialize`.
    #[arg(long, value_name = "SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    pub init_timeout: u64,

    /// Leave tool results exactly as the MCP server sent them. By default a call that typed,
    /// or during which a request failed or the page logged an error, gets one text item of
    /// cdp-relay's own appended (typing verdicts and failures, value-free) and the same facts
    /// under `_meta["cdp-relay/evidence"]`.
    #[arg(long)]
    pub no_feedback: bool,

    /// Milliseconds a call that typed waits, once the server answered, for its typing verdicts
    /// before the agent gets the result (a step without one is reported "not verified yet").
    #[arg(long, value_name = "MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub feedback_wait: u64,

    /// What a typing step whose text did not land does to the call's result: `note` appends the
    /// verdict and leaves `isError` as the server set it; `error` also sets `isError: true`
    /// (every step of the call is judged, and an earlier call's told in this result).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = UnverifiedTyping::Note)]
    pub unverified_typing: UnverifiedTyping,

    /// A dotenv file of variables the agent can type without seeing them: `NAME=value` lines
    /// (quotes optional, nothing expanded). The agent writes `${NAME}` as a typing argument;
    /// results show `${NAME}`, never the value. `CDP_RELAY_VAR_<NAME>` in the environment
    /// defines one too and wins for the same name. Repeatable; a later file wins.
    #[arg(long = "var-file", value_name = "FILE")]
    pub var_file: Vec<PathBuf>,

    /// Seconds the wrapped MCP server gets to answer a tool call; past it the call is cancelled
    /// at the server, the agent gets an error result and the call is recorded as interrupted.
    /// 0: no limit.
    #[arg(long, value_name = "SECS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub call_timeout: u64,

    /// Over HTTP (`--listen`): sessions open at once; an `initialize` over the limit is answered
    /// with HTTP 503 and a JSON-RPC error, running sessions are untouched. Default: the smaller
    /// of (memory ÷ 768 MiB; a container's cgroup limit counts) and (4 × CPU cores), at least 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_sessions: Option<u32>,

    /// Over HTTP (`--listen`): seconds a session may go without a request or message before it
    /// is ended (a client that vanished is noticed this way).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub session_idle: Option<u64>,

    // `--listen ADDR` (a relay flag) serves MCP over Streamable HTTP at http://ADDR/mcp instead
    // of stdio; the token, --allow-host and --allow-origin rules then apply to that endpoint.
    #[command(flatten)]
    pub relay: RelayArgs,

    /// The MCP server to wrap and its arguments, after `--`. `{cdp_url}` (the relay's
    /// http endpoint) and `{ws_url}` (the browser's websocket URL through the relay) are
    /// substituted; CDP_RELAY_URL is set in its environment. Without it, only the evidence
    /// tools, relay_endpoint and the evidence resources are served.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `--unverified-typing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UnverifiedTyping {
    /// Append the verdict to the result.
    Note,
    /// Append it and mark the result as an error.
    Error,
}

/// Runs the command: stdio is the agent's MCP session.
pub(crate) fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    // Read before anything starts: a bad variable is a usage error, not a half-started browser.
    let variables = variables(&args.var_file)?;
    let otlp = crate::otlp::endpoint(args.relay.otlp_endpoint.as_deref())?;
    let rt = crate::args::runtime(args.relay.threads)?;
    let out = if args.relay.listen.is_some() {
        rt.block_on(serve_http(args, variables, otlp))
    } else if args.max_sessions.is_some() || args.session_idle.is_some() {
        Err(
            Usage("--max-sessions and --session-idle apply to HTTP only: add --listen ADDR".into())
                .into(),
        )
    } else {
        rt.block_on(serve(args, variables, otlp))
    };
    // A read of stdin may still be parked in a blocking thread: do not wait for it.
    rt.shutdown_timeout(Duration::from_millis(200));
    out
}

/// The variables of the `--var-file`s and of `CDP_RELAY_VAR_*` (which wins). The environment
/// is read, not changed: the launcher and the gateway keep these variables from the browser
/// and the wrapped server.
fn variables(files: &[PathBuf]) -> anyhow::Result<Variables> {
    let mut vars = Variables::new();
    for file in files {
        let more = Variables::read_file(file).map_err(|e| Usage(format!("--var-file: {e}")))?;
        vars = vars.merged(more).map_err(|e| Usage(e.to_string()))?;
    }
    let env = Variables::from_environment(std::env::vars_os()).map_err(|e| Usage(e.to_string()))?;
    let vars = vars.merged(env).map_err(|e| Usage(e.to_string()))?;
    if !vars.is_empty() {
        let names: Vec<&str> = vars.names().collect();
        tracing::info!(
            "mcp: variables the agent can type as ${{NAME}}: {}",
            names.join(", ")
        );
    }
    Ok(vars)
}

/// The browser (when launched) and the [`Recording`] in front of it: started and stopped here.
struct Relayed {
    browser: Option<Browser>,
    recording: Recording,
    /// The evidence root, when evidence is on.
    evidence_root: Option<PathBuf>,
}

impl Relayed {
    /// Starts them as `launch` does (or as `serve` does, with `--upstream`). Call on the
    /// command's own thread: the browser is told to die with it.
    async fn start(
        relay: RelayArgs,
        upstream: Option<String>,
        launch: LaunchConfig,
        telemetry: Option<&Telemetry>,
    ) -> anyhow::Result<Relayed> {
        // As `launch`: the observer is on by default for a browser we start; as `serve`, off
        // for a browser someone else runs.
        let observe = upstream.is_none();
        let mut config = relay.into_config_listening(upstream, observe, DEFAULT_LISTEN)?;
        if let Some(t) = telemetry {
            config
                .status_fields
                .push(crate::otlp::status_field(t.exporter()));
        }
        let evidence_root = config
            .evidence
            .enabled
            .then(|| config.evidence.root.clone());
        let (browser, recording) = match config.proxy.upstream.clone() {
            Some(up) => {
                cdp_relay_proxy::upstream::probe(&up).await?;
                (
                    None,
                    Recording::start(config, EvidenceNeed::BestEffort).await?,
                )
            }
            None => {
                let path = std::env::var_os("PATH");
                let (browser, recording) =
                    Recording::launch(config, &launch, path, EvidenceNeed::BestEffort).await?;
                (Some(browser), recording)
            }
        };
        Ok(Relayed {
            browser,
            recording,
            evidence_root,
        })
    }

    /// Hands the browser and recording to a task that watches the browser until asked to stop:
    /// the stop (which waits until all is stopped), and what resolves with how the browser
    /// exited when it did so unasked (as `serve` notices it on stdio).
    fn watched(
        mut self,
    ) -> (
        Box<dyn FnOnce() -> cdp_relay_mcp::BoxFuture<()> + Send>,
        cdp_relay_mcp::BoxFuture<String>,
    ) {
        let (stop_tx, mut stop_rx) =
            tokio::sync::oneshot::channel::<tokio::sync::oneshot::Sender<()>>();
        let (exit_tx, exit_rx) = tokio::sync::oneshot::channel::<String>();
        tokio::spawn(async move {
            let mut exit_tx = Some(exit_tx);
            let done = loop {
                tokio::select! {
                    done = &mut stop_rx => break done.ok(),
                    status = async {
                        match self.browser.as_mut() {
                            Some(b) => b.wait().await,
                            None => std::future::pending().await,
                        }
                    } => {
                        let how = exit_words(status);
                        if let Some(tx) = exit_tx.take() {
                            let _ = tx.send(how);
                        }
                        if let Some(b) = self.browser.take() {
                            b.shutdown().await;
                        }
                    }
                }
            };
            self.stop().await;
            if let Some(done) = done {
                let _ = done.send(());
            }
        });
        let stop: Box<dyn FnOnce() -> cdp_relay_mcp::BoxFuture<()> + Send> = Box::new(move || {
            Box::pin(async move {
                let (done_tx, done_rx) = tokio::sync::oneshot::channel();
                if stop_tx.send(done_tx).is_ok() {
                    let _ = done_rx.await;
                }
            })
        });
        let exited: cdp_relay_mcp::BoxFuture<String> = Box::pin(async move {
            match exit_rx.await {
                Ok(how) => how,
                // Stopped as asked: never "exited".
                Err(_) => std::future::pending().await,
            }
        });
        (stop, exited)
    }

    /// Where the wrapped server finds the browser: the relay's endpoint and its websocket URL.
    async fn endpoints(&self) -> Endpoints {
        let cdp_url = self.recording.endpoint().to_owned();
        Endpoints {
            ws_url: cdp_relay_mcp::browser_ws_url(&cdp_url).await,
            cdp_url,
        }
    }

    /// Finalizes the run (render, prune, upload), stops the relay and the browser.
    async fn stop(self) {
        let stopped = self.recording.stop_recording().await;
        let browser = async {
            if let Some(browser) = self.browser {
                browser.shutdown().await;
            }
        };
        let (summary, ()) = tokio::join!(stopped.finish_uploads(), browser);
        if let Some(summary) = summary {
            tracing::info!(
                "mcp: report {}",
                summary.run_dir.join(cdp_report::HTML_FILE).display()
            );
        }
    }
}

/// The browser `mcp` launches, from its flags (stdio's one, or each HTTP session's).
fn launch_config(args: &McpArgs) -> LaunchConfig {
    LaunchConfig {
        browser: args.browser.clone(),
        headed: args.headed,
        extra_args: args.browser_arg.clone(),
        browser_env: std::env::var_os("CDP_RELAY_BROWSER").map(PathBuf::from),
    }
}

/// How the browser exited, for the log and the lifecycle record.
fn exit_words(status: std::io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("lost track of it: {e}"),
    }
}

/// The gateway's spans for `--otlp-endpoint` (or the standard variables).
fn start_telemetry(url: &url::Url) -> anyhow::Result<Telemetry> {
    Ok(Telemetry::new(crate::otlp::start(url, "mcp")?))
}

async fn serve(
    args: McpArgs,
    variables: Variables,
    otlp: Option<url::Url>,
) -> anyhow::Result<ExitCode> {
    let mut shutdown = Shutdown::listen();
    let mut config = gateway_config(&args, variables);
    let telemetry = otlp.as_ref().map(start_telemetry).transpose()?;
    let launch = launch_config(&args);
    let McpArgs {
        upstream, relay, ..
    } = args;
    let mut relayed = Relayed::start(relay, upstream, launch, telemetry.as_ref()).await?;
    let endpoints = relayed.endpoints().await;
    let handle = relayed.recording.evidence().cloned();
    config.evidence_root = handle.as_ref().and(relayed.evidence_root.clone());
    config.telemetry = telemetry.clone();
    let gateway = match Gateway::start(config, endpoints, handle).await {
        Ok(g) => g,
        Err(e) => {
            relayed.stop().await;
            return Err(e.into());
        }
    };
    let mut session = match gateway.serve_stdio().await {
        Ok(s) => s,
        Err(e) => {
            gateway.stop(StopReason::AgentLeft).await;
            relayed.stop().await;
            return Err(e.into());
        }
    };
    tracing::info!(
        "mcp: serving on stdio; relay {} (evidence: {})",
        relayed.recording.endpoint(),
        if relayed.recording.evidence().is_some() {
            "on"
        } else {
            "off"
        }
    );
    let why = loop {
        tokio::select! {
            () = session.closed() => break StopReason::AgentLeft,
            name = shutdown.recv() => {
                tracing::info!("{name} received; shutting down");
                break StopReason::Signal(name);
            }
            status = async {
                match relayed.browser.as_mut() {
                    Some(b) => b.wait().await,
                    None => std::future::pending().await,
                }
            } => {
                let how = exit_words(status);
                tracing::warn!("mcp: the browser exited ({how}); the evidence tools still work");
                gateway.browser_exited(&how, false);
                // Keep serving: the agent can still read and finalize the evidence.
                if let Some(b) = relayed.browser.take() {
                    b.shutdown().await;
                }
            }
        }
    };
    gateway.stop(why).await;
    session.close().await;
    relayed.stop().await;
    if let Some(t) = telemetry {
        t.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}

/// The gateway's flags common to both transports.
fn gateway_config(args: &McpArgs, variables: Variables) -> GatewayConfig {
    GatewayConfig {
        command: args
            .command
            .split_first()
            .map(|(program, rest)| ChildCommand {
                program: program.into(),
                args: rest.to_vec(),
            }),
        init_timeout: Duration::from_secs(args.init_timeout),
        evidence_root: None,
        // The relay's limit bounds MCP messages too (a full-page screenshot is one).
        max_message_bytes: args.relay.max_message_size,
        feedback: cdp_relay_mcp::Feedback {
            enabled: !args.no_feedback,
            wait: Duration::from_millis(args.feedback_wait),
            strict: args.unverified_typing == UnverifiedTyping::Error,
        },
        variables,
        call_timeout: (args.call_timeout > 0).then(|| Duration::from_secs(args.call_timeout)),
        session: None,
        telemetry: None,
    }
}

/// `mcp --listen`: MCP over Streamable HTTP, a browser, relay, wrapped server and run per
/// session, started on its `initialize` with the same flags as stdio's one.
async fn serve_http(
    args: McpArgs,
    variables: Variables,
    otlp: Option<url::Url>,
) -> anyhow::Result<ExitCode> {
    let mut shutdown = Shutdown::listen();
    if args.upstream.is_some() {
        return Err(Usage("--upstream cannot be shared by HTTP sessions (each gets its own browser); drop --upstream or --listen".into()).into());
    }
    if args.relay.evidence.session.is_some() {
        return Err(Usage("--session names one run; over HTTP each MCP session's run is named by its session id: drop --session".into()).into());
    }
    // The endpoint's access rules: the relay's flags, validated as the relay validates them.
    let policy = args
        .relay
        .clone()
        .into_config_listening(None, true, DEFAULT_LISTEN)?
        .proxy
        .policy;
    // Each session's relay: a free loopback port, reached only by its own wrapped server.
    let mut session_relay = args.relay.clone();
    session_relay.listen = None;
    session_relay.token = None;
    session_relay.token_file = None;
    session_relay.allow_host.clear();
    session_relay.allow_origin.clear();
    let launch = launch_config(&args);
    let start: cdp_relay_mcp::StartBrowser = std::sync::Arc::new(move |session: String| {
        let (mut relay, launch) = (session_relay.clone(), launch.clone());
        Box::pin(async move {
            relay.evidence.session = Some(session);
            let relayed = Relayed::start(relay, None, launch, None)
                .await
                .map_err(|e| format!("{e:#}"))?;
            let endpoints = relayed.endpoints().await;
            let evidence = relayed.recording.evidence().cloned();
            let evidence_root = relayed.evidence_root.clone();
            let (stop, exited) = relayed.watched();
            Ok(cdp_relay_mcp::SessionBrowser {
                endpoints,
                evidence,
                evidence_root,
                stop,
                exited: Some(exited),
            })
        })
    });
    // One exporter; each session's gateway gets its own handle on it.
    let telemetry = otlp.as_ref().map(start_telemetry).transpose()?;
    let mut gateway_config = gateway_config(&args, variables);
    gateway_config.telemetry = telemetry.clone();
    let config = cdp_relay_mcp::HttpConfig {
        gateway: gateway_config,
        policy,
        max_sessions: args
            .max_sessions
            .map_or_else(cdp_relay_mcp::default_max_sessions, |n| n as usize),
        session_idle: args
            .session_idle
            .map_or(cdp_relay_mcp::DEFAULT_SESSION_IDLE, Duration::from_secs),
    };
    let (max, idle) = (config.max_sessions, config.session_idle);
    let gateway = cdp_relay_mcp::HttpGateway::bind(config, start).await?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", gateway.endpoint());
        let _ = out.flush();
    }
    tracing::info!(
        "mcp: serving MCP over Streamable HTTP at {} (--max-sessions {max}, --session-idle {}s)",
        gateway.endpoint(),
        idle.as_secs()
    );
    gateway.serve(shutdown.recv()).await;
    if let Some(t) = telemetry {
        t.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use crate::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<super::McpArgs, String> {
        match Cli::try_parse_from(args)
            .map_err(|e| e.to_string())?
            .command
        {
            Command::Mcp(a) => Ok(a),
            _ => unreachable!("mcp"),
        }
    }

    #[test]
    fn the_wrapped_command_follows_the_double_dash_with_its_own_flags() {
        let a = parse(&[
            "cdp-relay",
            "mcp",
            "--no-screenshots",
            "--browser-arg=--lang=fr",
            "--",
            "npx",
            "chrome-devtools-mcp@latest",
            "--browserUrl",
            "{cdp_url}",
        ])
        .unwrap();
        assert_eq!(
            a.command,
            [
                "npx",
                "chrome-devtools-mcp@latest",
                "--browserUrl",
                "{cdp_url}"
            ]
        );
        assert!(a.relay.evidence.no_screenshots);
        assert_eq!(a.browser_arg, ["--lang=fr"]);
        assert_eq!(a.relay.listen, None, "mcp picks a free port unless told");
        let bare = parse(&["cdp-relay", "mcp"]).unwrap();
        assert!(bare.command.is_empty());
        assert!(parse(&[
            "cdp-relay",
            "mcp",
            "--upstream",
            "http://127.0.0.1:9222",
            "--headed"
        ])
        .is_err());
        assert!(parse(&["cdp-relay", "mcp", "--init-timeout", "0"]).is_err());
    }

    #[test]
    fn http_flags_need_listen_and_http_refuses_a_shared_browser_or_run() {
        for args in [
            &["cdp-relay", "mcp", "--max-sessions", "2"][..],
            &["cdp-relay", "mcp", "--session-idle", "60"],
            &[
                "cdp-relay",
                "mcp",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "http://127.0.0.1:9",
            ],
            &[
                "cdp-relay",
                "mcp",
                "--listen",
                "127.0.0.1:0",
                "--session",
                "shared",
            ],
        ] {
            let e = super::run(parse(args).unwrap()).unwrap_err();
            assert!(
                e.downcast_ref::<crate::args::Usage>().is_some(),
                "{args:?}: {e}"
            );
        }
        assert!(parse(&[
            "cdp-relay",
            "mcp",
            "--listen",
            "127.0.0.1:0",
            "--max-sessions",
            "0"
        ])
        .is_err());
    }

    #[test]
    fn var_files_are_read_in_order_and_a_bad_one_is_a_usage_error() {
        let a = parse(&[
            "cdp-relay",
            "mcp",
            "--var-file",
            "a.env",
            "--var-file=b.env",
        ])
        .unwrap();
        assert_eq!(
            a.var_file,
            [std::path::PathBuf::from("a.env"), "b.env".into()]
        );
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.env"), dir.path().join("b.env"));
        std::fs::write(&a, "PASSWORD=first-Value\nPIN=1234\n").unwrap();
        std::fs::write(&b, "PASSWORD='second Value'\n").unwrap();
        let vars = super::variables(&[a.clone(), b]).unwrap();
        assert_eq!(vars.names().collect::<Vec<_>>(), ["PASSWORD", "PIN"]);
        let bad = dir.path().join("bad.env");
        std::fs::write(&bad, "Sekr1t-Only-Line\n").unwrap();
        let e = super::variables(&[bad]).unwrap_err();
        assert!(e.downcast_ref::<crate::args::Usage>().is_some(), "{e}");
        assert!(
            e.to_string().contains("line 1") && !e.to_string().contains("Sekr1t"),
            "{e}"
        );
        assert!(super::variables(&[dir.path().join("missing.env")]).is_err());
    }
}
