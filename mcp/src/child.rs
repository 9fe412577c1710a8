//! The wrapped MCP server: its process, our client session with it, and everything it sends
//! that the agent must see.
//!
//! The process is started in its own process group, told to die with the gateway
//! (`PR_SET_PDEATHSIG`), with `{cdp_url}` and `{ws_url}` substituted in its arguments and
//! `CDP_RELAY_URL` in its environment, and without the gateway's variables
//! (`CDP_RELAY_VAR_*`: only the gateway resolves them, `inputs.rs`). Its stdout/stdin carry MCP (rmcp's client over the
//! gateway's own transport, `transport.rs`); its stderr is read line by line, 8 KiB of a line at
//! most, and written to the gateway's stderr only after the run's sanitizer (its logs and
//! snapshots carry page text). Stopping it follows the MCP stdio shutdown: close its stdin,
//! wait, SIGTERM the group, wait, SIGKILL the group.
//!
//! What the server sends on its own passes to the agent unchanged, in order, before the answer
//! it preceded: progress (under the agent's own token), log messages, `list_changed` and
//! resource updates — forwarded by the transport, not by rmcp's handler.

// Log messages are deprecated by SEP-2577 but still what servers send; they pass through.
#![allow(deprecated)]

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use std::ffi::OsString;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::process::Command;
use tokio::sync::watch;
use tracing::Instrument;

use super::transport::AgentLink;

/// Where the relay is: substituted into the wrapped server's arguments and returned by
/// `relay_endpoint`.
#[derive(Clone, Debug)]
pub struct Endpoints {
    /// The relay's CDP HTTP endpoint, `http://127.0.0.1:PORT` (`{cdp_url}`).
    pub cdp_url: String,
    /// The browser's websocket URL through the relay (`{ws_url}`), when known.
    pub ws_url: Option<String>,
}

/// The browser's websocket URL as the relay at `cdp_url` gives it out (`/json/version`).
pub async fn browser_ws_url(cdp_url: &str) -> Option<String> {
    let up = cdp_relay_proxy::Upstream::parse(cdp_url).ok()?;
    let version = cdp_relay_proxy::upstream::version(&up).await.ok()?;
    Some(version.websocket_url)
}

/// How long the server gets to exit after its stdin closes, and again after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// Lines of the server's stderr kept for an error message when it fails to start.
const STDERR_TAIL: usize = 5;
/// Longest line of the server's stderr passed on.
const STDERR_LINE: usize = 8 * 1024;

/// The command line of the server to wrap (after `--`).
#[derive(Clone, Debug)]
pub struct ChildCommand {
    /// The program.
    pub program: OsString,
    /// Its arguments; `{cdp_url}` and `{ws_url}` are substituted.
    pub args: Vec<String>,
}

impl ChildCommand {
    /// The arguments with the endpoints substituted; an error names a placeholder that cannot
    /// be filled.
    pub(crate) fn substituted(&self, endpoints: &Endpoints) -> Result<Vec<String>, String> {
        self.args
            .iter()
            .map(|a| {
                let mut a = a.replace("{cdp_url}", &endpoints.cdp_url);
                if a.contains("{ws_url}") {
                    let ws = endpoints
                        .ws_url
                        .as_deref()
                        .ok_or("{ws_url} is used but the browser's websocket URL is not known")?;
                    a = a.replace("{ws_url}", ws);
                }
                Ok(a)
            })
            .collect()
    }
}

/// Our client side of the session with the server. What the server sends on its own never
/// reaches it: the transport forwards that to the agent in order (`transport.rs`).
#[derive(Clone)]
pub(crate) struct ChildHandler;

impl ClientHandler for ChildHandler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("cdp-relay", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// How the server process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Exit {
    /// `exit status 1`, `killed by signal 9 (SIGKILL)`.
    pub(crate) how: String,
    /// Exited with status 0, or ended by our own stop.
    pub(crate) clean: bool,
    /// We asked it to stop.
    pub(crate) requested: bool,
}

/// The running server.
pub(crate) struct Child {
    service: Mutex<Option<RunningService<RoleClient, ChildHandler>>>,
    peer: Peer<RoleClient>,
    /// `Some` once the process has exited.
    exit: watch::Receiver<Option<Exit>>,
    stop: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    pub(crate) name: String,
}

/// Why the server could not be started.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct StartError(pub(crate) String);

impl Child {
    /// Starts the server and completes `initialize` within `init_timeout`. Its stderr lines go
    /// through `clean` (the run's sanitizer) to our stderr.
    pub(crate) async fn start(
        command: &ChildCommand,
        endpoints: &Endpoints,
        link: AgentLink,
        init_timeout: Duration,
        max_message: usize,
        clean: Arc<dyn Fn(&str) -> String + Send + Sync>,
    ) -> Result<Child, StartError> {
        let program = command.program.to_string_lossy().into_owned();
        let args = command.substituted(endpoints).map_err(StartError)?;
        let mut cmd = Command::new(&command.program);
        for name in scrubbed(std::env::vars_os().map(|(k, _)| k)) {
            cmd.env_remove(name);
        }
        cmd.args(&args)
            .env("CDP_RELAY_URL", &endpoints.cdp_url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        cdp_relay_sys::die_with_parent(&mut cmd);
        let mut process = cmd.spawn().map_err(|e| {
            StartError(format!(
                "cannot start the MCP server `{}`: {e}",
                clean(&program)
            ))
        })?;
        let pgid = process
            .id()
            .map(|id| Pid::from_raw(id as i32))
            .ok_or_else(|| StartError("the MCP server exited immediately".into()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (
            process.stdin.take(),
            process.stdout.take(),
            process.stderr.take(),
        ) else {
            return Err(StartError("the MCP server's pipes are missing".into()));
        };
        let tail = Arc::new(Mutex::new(Vec::<String>::new()));
        drain_stderr(stderr, clean.clone(), tail.clone());

        let (exit_tx, exit) = watch::channel(None);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(supervise(process, pgid, stop_rx, exit_tx));

        let handler = ChildHandler;
        let transport = super::transport::ChildTransport::start(stdout, stdin, link, max_message);
        let exited = {
            let mut exit = exit.clone();
            async move {
                let _ = exit.wait_for(Option::is_some).await;
            }
        };
        let serving = tokio::select! {
            r = tokio::time::timeout(init_timeout, handler.serve(transport)) => r,
            () = exited => {
                let how = exit.borrow().as_ref().map(|e| e.how.clone()).unwrap_or_default();
                let _ = stop_tx.send(());
                return Err(StartError(format!(
                    "the MCP server `{}` exited ({how}) before answering initialize{}",
                    clean(&program),
                    tail_words(&tail)
                )));
            }
        };
        let service = match serving {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                stop_now(stop_tx, exit).await;
                return Err(StartError(format!(
                    "the MCP server `{}` failed to initialize: {}{}",
                    clean(&program),
                    clean(&e.to_string()),
                    tail_words(&tail)
                )));
            }
            Err(_) => {
                stop_now(stop_tx, exit).await;
                return Err(StartError(format!(
                    "the MCP server `{}` did not answer initialize within {}s (raise --init-timeout if it is slow to start){}",
                    clean(&program),
                    init_timeout.as_secs(),
                    tail_words(&tail)
                )));
            }
        };
        let name = service
            .peer_info()
            .and_then(|i| i.server_info.as_ref().map(|s| s.name.clone()))
            .filter(|n| !n.trim().is_empty())
            .unwrap_or(program);
        Ok(Child {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            exit,
            stop: Mutex::new(Some(stop_tx)),
            name,
        })
    }

    /// Our session with the server.
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// What the server said about itself in `initialize`.
    pub(crate) fn info(&self) -> Option<Arc<rmcp::model::ServerPeerInfo>> {
        self.peer.peer_info()
    }

    /// How the process ended, once it has.
    pub(crate) fn exited(&self) -> Option<Exit> {
        self.exit.borrow().clone()
    }

    /// Resolves when the process has exited.
    pub(crate) async fn wait(&self) -> Exit {
        let mut exit = self.exit.clone();
        let seen = exit.wait_for(Option::is_some).await.map(|e| e.clone());
        seen.ok().flatten().unwrap_or_else(lost)
    }

    /// Stops the server: closes its stdin (the MCP stdio shutdown), then SIGTERM and SIGKILL to
    /// its process group if it lingers. Returns how it ended.
    pub(crate) async fn stop(&self) -> Exit {
        let service = self
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let stop = self
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(tx) = stop {
            let _ = tx.send(());
        }
        if let Some(service) = service {
            // Ends our session: the transport is dropped, so the server reads EOF on stdin.
            let _ = service.cancel().await;
        }
        self.wait().await
    }
}

/// The variables of `names` the wrapped server must not inherit: the gateway's `${NAME}`
/// values (`CDP_RELAY_VAR_*`). A name that is not UTF-8 is compared by its bytes.
fn scrubbed(names: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let prefix = super::vars::ENV_PREFIX.as_bytes();
    names
        .filter(|n| n.as_encoded_bytes().starts_with(prefix))
        .collect()
}

fn lost() -> Exit {
    Exit {
        how: "lost track of the process".into(),
        clean: false,
        requested: false,
    }
}

async fn stop_now(stop: tokio::sync::oneshot::Sender<()>, mut exit: watch::Receiver<Option<Exit>>) {
    let _ = stop.send(());
    let _ = exit.wait_for(Option::is_some).await;
}

fn tail_words(tail: &Mutex<Vec<String>>) -> String {
    let tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its last output: {}", tail.join(" | "))
    }
}

/// Reads the server's stderr line by line; each line reaches our stderr only sanitized, and
/// at most [`STDERR_LINE`] bytes of it: the rest of a longer line is dropped and counted, so a
/// server writing without newlines costs no memory.
fn drain_stderr(
    stderr: tokio::process::ChildStderr,
    clean: Arc<dyn Fn(&str) -> String + Send + Sync>,
    tail: Arc<Mutex<Vec<String>>>,
) {
    tokio::spawn(
        async move {
            let mut lines = super::transport::Lines::new(stderr, STDERR_LINE, true);
            loop {
                let line = match lines.next().await {
                    Ok(super::transport::Next::Eof) | Err(_) => return,
                    Ok(super::transport::Next::Line) => {
                        clean(&String::from_utf8_lossy(lines.line()))
                    }
                    Ok(super::transport::Next::Over { bytes, .. }) => {
                        over_long_stderr(lines.line(), bytes, &*clean)
                    }
                };
                {
                    let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    if tail.len() == STDERR_TAIL {
                        tail.remove(0);
                    }
                    tail.push(line.chars().take(200).collect());
                }
                tracing::info!(target: "cdp_relay_mcp::server", "{line}");
            }
        }
        // Over HTTP, the session's span: each line names its session.
        .in_current_span(),
    );
}

/// The head of an over-long stderr line, cut back to a whitespace so that no secret is cut in
/// half where the sanitizer would no longer recognise it, and how much was dropped.
fn over_long_stderr(
    head: &[u8],
    bytes: u64,
    clean: &(dyn Fn(&str) -> String + Send + Sync),
) -> String {
    let cut = head.iter().rposition(u8::is_ascii_whitespace).unwrap_or(0);
    let kept = &head[..cut];
    let dropped = bytes.saturating_sub(kept.len() as u64);
    format!(
        "{} … ({dropped} more bytes of this line dropped)",
        clean(&String::from_utf8_lossy(kept))
    )
}

/// Owns the process: reports its exit, and on a stop request runs the shutdown sequence.
async fn supervise(
    mut process: tokio::process::Child,
    pgid: Pid,
    stop: tokio::sync::oneshot::Receiver<()>,
    exit: watch::Sender<Option<Exit>>,
) {
    let status = tokio::select! {
        status = process.wait() => {
            // Whatever it left behind in its group goes with it.
            let _ = killpg(pgid, Signal::SIGKILL);
            let status = status.ok();
            let _ = exit.send(Some(describe(status, false)));
            return;
        }
        _ = stop => None::<ExitStatus>,
    };
    let _ = status;
    // Its stdin closes when our session ends (the caller cancels it): give it time to leave.
    let status = match tokio::time::timeout(STOP_GRACE, process.wait()).await {
        Ok(s) => s.ok(),
        Err(_) => {
            let _ = killpg(pgid, Signal::SIGTERM);
            match tokio::time::timeout(STOP_GRACE, process.wait()).await {
                Ok(s) => s.ok(),
                Err(_) => {
                    tracing::warn!(
                        "the MCP server ignored its closed stdin and SIGTERM; killing it"
                    );
                    let _ = killpg(pgid, Signal::SIGKILL);
                    process.wait().await.ok()
                }
            }
        }
    };
    // Helpers it started (npx → node) share its group.
    let _ = killpg(pgid, Signal::SIGKILL);
    let _ = exit.send(Some(describe(status, true)));
}

fn describe(status: Option<ExitStatus>, requested: bool) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    let Some(status) = status else {
        return Exit {
            requested,
            ..lost()
        };
    };
    if let Some(code) = status.code() {
        return Exit {
            how: format!("exit status {code}"),
            clean: code == 0 || requested,
            requested,
        };
    }
    let signal = status.signal().unwrap_or(0);
    let name = Signal::try_from(signal)
        .map(|s| format!(" ({})", s.as_str()))
        .unwrap_or_default();
    Exit {
        how: format!("killed by signal {signal}{name}"),
        clean: requested,
        requested,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_substituted_anywhere_in_an_argument() {
        let cmd = ChildCommand {
            program: "npx".into(),
            args: vec![
                "--browserUrl".into(),
                "{cdp_url}".into(),
                "--wsEndpoint={ws_url}".into(),
                "plain".into(),
            ],
        };
        let e = Endpoints {
            cdp_url: "http://127.0.0.1:9".into(),
            ws_url: Some("ws://127.0.0.1:9/devtools/browser/x".into()),
        };
        assert_eq!(
            cmd.substituted(&e).unwrap(),
            [
                "--browserUrl",
                "http://127.0.0.1:9",
                "--wsEndpoint=ws://127.0.0.1:9/devtools/browser/x",
                "plain"
            ]
        );
        let no_ws = Endpoints { ws_url: None, ..e };
        assert!(cmd.substituted(&no_ws).is_err());
    }

    /// A secret cut in half at the line limit would no longer be the literal the sanitizer
    /// masks (a typed password registered for the run): the head is cut back to a whitespace.
    /// (Today's sanitizer also keeps only the first 4 KiB of a text, so the cut is not shown
    /// anyway; this does not depend on that.)
    #[tokio::test]
    async fn an_over_long_stderr_line_never_shows_half_a_secret() {
        const TYPED: &str = "Pl4nted-Stderr-Passw0rd-8KiB";
        // The run's sanitizer masks the literal, and only whole.
        let clean = |s: &str| s.replace(TYPED, "${TYPED_1}");
        // The password straddles the limit: its first characters inside it.
        let mut line = "word ".repeat((STDERR_LINE - 10) / 5);
        line.push_str(TYPED);
        line.push_str(" tail\n");
        let mut lines = super::super::transport::Lines::new(line.as_bytes(), STDERR_LINE, true);
        let bytes = match lines.next().await.unwrap() {
            super::super::transport::Next::Over { bytes, .. } => bytes,
            other => panic!("{other:?}"),
        };
        let head = lines.line().to_vec();
        assert_eq!(head.len(), STDERR_LINE);
        assert_eq!(bytes as usize, line.len() - 1);
        // Masking the head as it is would show part of the password.
        assert!(clean(&String::from_utf8_lossy(&head)).contains("Pl4nted"));
        let out = over_long_stderr(&head, bytes, &clean);
        assert!(!out.contains("Pl4n"), "{}", &out[out.len() - 100..]);
        assert!(out.ends_with("more bytes of this line dropped)"), "{out}");
        assert!(out.starts_with("word word"));
    }

    #[test]
    fn the_gateways_variables_are_kept_from_the_server() {
        let names = [
            "PATH",
            "CDP_RELAY_VAR_PASSWORD",
            "CDP_RELAY_URL",
            "CDP_RELAY_VAR_X",
        ];
        assert_eq!(
            scrubbed(names.iter().map(OsString::from)),
            ["CDP_RELAY_VAR_PASSWORD", "CDP_RELAY_VAR_X"]
        );
        // As the server is started: the variable set, then removed.
        let mut cmd = std::process::Command::new("env");
        cmd.env("CDP_RELAY_VAR_PLANTED", "Pl4nted-Env-Value")
            .env("KEPT_PLANTED", "1");
        for name in scrubbed(cmd.get_envs().map(|(k, _)| k.to_owned())) {
            cmd.env_remove(name);
        }
        let out = String::from_utf8(cmd.output().expect("env").stdout).unwrap();
        assert!(out.contains("KEPT_PLANTED=1"), "{out}");
        assert!(
            !out.contains("CDP_RELAY_VAR_") && !out.contains("Pl4nted"),
            "{out}"
        );
    }

    #[test]
    fn exits_are_described_in_words() {
        use std::os::unix::process::ExitStatusExt;
        let e = describe(Some(ExitStatus::from_raw(1 << 8)), false);
        assert_eq!((e.how.as_str(), e.clean), ("exit status 1", false));
        let e = describe(Some(ExitStatus::from_raw(9)), false);
        assert_eq!(
            (e.how.as_str(), e.clean),
            ("killed by signal 9 (SIGKILL)", false)
        );
        assert!(describe(Some(ExitStatus::from_raw(15)), true).clean);
        assert!(describe(Some(ExitStatus::from_raw(0)), false).clean);
    }
}
