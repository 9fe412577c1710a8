//! `cdp-relay mcp` as an agent sees it: the binary as a child process with an MCP client (rmcp)
//! on its stdin/stdout, what the gateway sends on its own (progress, log messages,
//! `list_changed`) collected, every byte it writes to the agent kept (a tap on the client's
//! transport) and its stderr, for the sweeps. Killed on drop.
//!
//! Also the command lines of the real browser MCP servers from `tests/clients` and of the fake
//! server (`src/bin/mcp-fake.rs`, fault injection only).

#![allow(deprecated)]

use crate::fixtures::{clients_dir, relay_binary, within};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, LoggingMessageNotificationParam,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResult,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::Notify;

/// The sign-in form the MCP tests' agents fill through a wrapped server (email, password,
/// one-time code; `#f` submits): each test adds the script that decides where it leads.
pub const SIGN_IN_FORM: &str = r#"<form id="f">
  <label for="user">Email</label><input id="user" name="user" type="email" autocomplete="username">
  <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password">
  <label for="otp">One-time code</label><input id="otp" name="otp" autocomplete="one-time-code" inputmode="numeric">
  <button type="submit">Sign in</button>
</form>"#;

/// The sign-in page whose submit posts the three fields to `/api/login?token={query_token}` with
/// `Authorization: Bearer {bearer}`, then logs an error naming them and `also`, then runs `then`
/// (JavaScript): planted values in a query, a header, a body and a console message at once.
pub fn sign_in_page(query_token: &str, bearer: &str, also: &str, then: &str) -> String {
    format!(
        r#"<!doctype html><title>Sign in</title>
{SIGN_IN_FORM}
<script>
document.getElementById('f').addEventListener('submit', async (e) => {{
  e.preventDefault();
  const user = document.getElementById('user').value;
  const pw = document.getElementById('password').value;
  const otp = document.getElementById('otp').value;
  try {{
    await fetch('/api/login?token={query_token}', {{
      method: 'POST',
      headers: {{'Authorization': 'Bearer {bearer}', 'Content-Type': 'application/json'}},
      body: JSON.stringify({{user, pw, otp}})
    }});
  }} catch (_) {{}}
  console.error('login failed for ' + user + ' with ' + pw + ' and ' + otp{also});
  {then}
}});
</script>"#
    )
}

/// Through chrome-devtools-mcp behind `gw`: opens `url` (a [`sign_in_page`]), fills the three
/// fields in one `fill_form` and clicks Sign in; each call must succeed.
pub async fn sign_in_with_chrome_devtools_mcp(gw: &McpGateway, url: &str, values: [&str; 3]) {
    let nav = gw
        .call("navigate_page", json!({"type": "url", "url": url}))
        .await;
    assert_ne!(nav.is_error, Some(true), "{}", text_of(&nav));
    let snapshot = text_of(&gw.call("take_snapshot", json!({})).await);
    let fields = [
        "textbox \"Email\"",
        "textbox \"Password\"",
        "textbox \"One-time code\"",
    ];
    let elements: Vec<Value> = fields
        .iter()
        .zip(values)
        .map(|(field, value)| json!({"uid": element(&snapshot, field), "value": value}))
        .collect();
    let filled = gw.call("fill_form", json!({ "elements": elements })).await;
    assert_ne!(filled.is_error, Some(true), "{}", text_of(&filled));
    let sign_in = element(&snapshot, "button \"Sign in\"");
    let clicked = gw.call("click", json!({"uid": sign_in})).await;
    assert_ne!(clicked.is_error, Some(true), "{}", text_of(&clicked));
}

/// A reader that keeps a copy of every byte read through it.
struct Tapped<R> {
    inner: R,
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Tapped<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            self.bytes
                .lock()
                .expect("tap lock")
                .extend_from_slice(&buf.filled()[before..]);
        }
        polled
    }
}

/// What the gateway sent the agent on its own.
#[derive(Clone, Default)]
pub struct Agent {
    /// Progress notifications, in arrival order.
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    /// Log message notifications.
    pub logs: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
    /// `tools/list_changed` notifications seen.
    pub tools_changed: Arc<Mutex<usize>>,
    /// Wakes a test waiting for any notification.
    pub seen: Arc<Notify>,
}

impl ClientHandler for Agent {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().expect("lock").push(params);
        self.seen.notify_waiters();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().expect("lock").push(params);
        self.seen.notify_waiters();
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        *self.tools_changed.lock().expect("lock") += 1;
        self.seen.notify_waiters();
    }
}

/// A running `cdp-relay mcp` with an agent's session on its stdio.
pub struct McpGateway {
    /// The agent's session (`None` once closed).
    pub client: Option<RunningService<RoleClient, Agent>>,
    /// What the gateway sent on its own.
    pub agent: Agent,
    child: tokio::process::Child,
    stderr: Arc<Mutex<String>>,
    /// Woken for every chunk of stderr.
    stderr_seen: Arc<Notify>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
    /// Every byte the gateway wrote to the agent (its stdout), as the agent's client read it.
    received: Arc<Mutex<Vec<u8>>>,
    /// The evidence root.
    pub evidence: tempfile::TempDir,
}

impl McpGateway {
    /// Spawns `cdp-relay mcp <args>` (evidence in a fresh directory, `env` added) and completes
    /// the MCP handshake as an agent. Panics with the gateway's stderr if it fails.
    pub async fn spawn(args: &[String], env: &[(&str, &std::ffi::OsStr)]) -> McpGateway {
        let evidence = tempfile::tempdir().expect("evidence tempdir");
        let mut cmd = tokio::process::Command::new(relay_binary());
        cmd.arg("mcp")
            .args(args)
            .env("CDP_RELAY_EVIDENCE_DIR", evidence.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn cdp-relay mcp");
        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_seen = Arc::new(Notify::new());
        let stderr_task = child.stderr.take().map(|pipe| {
            crate::fixtures::collect_stderr(pipe, stderr.clone(), Some(stderr_seen.clone()))
        });
        let received = Arc::new(Mutex::new(Vec::new()));
        let stdout = Tapped {
            inner: child.stdout.take().expect("stdout"),
            bytes: received.clone(),
        };
        let stdin = child.stdin.take().expect("stdin");
        let agent = Agent::default();
        let mut gw = McpGateway {
            client: None,
            agent: agent.clone(),
            child,
            stderr,
            stderr_seen,
            stderr_task,
            received,
            evidence,
        };
        match within(
            "the MCP handshake",
            agent.serve(cdp_relay_mcp::transport(stdout, stdin)),
        )
        .await
        {
            Ok(client) => gw.client = Some(client),
            Err(e) => {
                let closed = gw.close().await;
                panic!(
                    "cdp-relay mcp did not complete the handshake ({e}); stderr:\n{}",
                    closed.stderr
                );
            }
        }
        gw
    }

    /// Spawns `cdp-relay mcp <args>` expecting it to fail before it serves: no handshake,
    /// just its exit.
    pub async fn spawn_failing(args: &[String], env: &[(&str, &std::ffi::OsStr)]) -> Closed {
        let evidence = tempfile::tempdir().expect("evidence tempdir");
        let mut cmd = tokio::process::Command::new(relay_binary());
        cmd.arg("mcp")
            .args(args)
            .env("CDP_RELAY_EVIDENCE_DIR", evidence.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn cdp-relay mcp");
        let out = within("the gateway's exit", child.wait_with_output())
            .await
            .expect("output");
        assert!(out.stdout.is_empty(), "nothing but MCP on stdout");
        Closed {
            code: out.status.code(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            received: out.stdout,
            evidence,
        }
    }

    /// The agent's session.
    pub fn client(&self) -> &RunningService<RoleClient, Agent> {
        self.client.as_ref().expect("the session is open")
    }

    /// Calls a tool; `args` must be a JSON object (or null).
    pub async fn try_call(&self, name: &str, args: Value) -> Result<CallToolResult, ServiceError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(m) = args {
            params = params.with_arguments(m);
        }
        within(name, self.client().call_tool(params)).await
    }

    /// Calls a tool and panics (with the gateway's stderr) on a protocol error.
    pub async fn call(&self, name: &str, args: Value) -> CallToolResult {
        match self.try_call(name, args).await {
            Ok(r) => r,
            Err(e) => panic!("{name} failed: {e}\nstderr:\n{}", self.stderr()),
        }
    }

    /// Reads a resource.
    pub async fn read(&self, uri: &str) -> Result<ReadResourceResult, ServiceError> {
        within(
            uri,
            self.client()
                .read_resource(ReadResourceRequestParams::new(uri.to_owned())),
        )
        .await
    }

    /// Every byte the gateway has written to the agent so far (JSON-RPC lines).
    pub fn received(&self) -> Vec<u8> {
        self.received.lock().expect("tap lock").clone()
    }

    /// The gateway's stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr lock").clone()
    }

    /// Waits until the gateway's stderr contains `needle`.
    pub async fn wait_for_stderr(&self, needle: &str) {
        within(needle, async {
            loop {
                let more = self.stderr_seen.notified();
                if self.stderr().contains(needle) {
                    return;
                }
                more.await;
            }
        })
        .await;
    }

    /// Waits until the current run's journal satisfies `done` (polled every 50 ms, as the
    /// observer's own tests wait for the journal); returns its records.
    pub async fn journal_until(
        &self,
        what: &str,
        done: impl Fn(&[cdp_evidence::StoredRecord]) -> bool,
    ) -> Vec<cdp_evidence::StoredRecord> {
        within(what, async {
            loop {
                if let Some(run) = self.runs().pop() {
                    if let Ok(bytes) = std::fs::read(run.join("actions.jsonl")) {
                        let records = cdp_evidence::parse_journal(&bytes).records;
                        if done(&records) {
                            return records;
                        }
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        })
        .await
    }

    /// The gateway's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// Sends `signal` to the gateway.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.pid() as i32);
        nix::sys::signal::kill(pid, signal).expect("kill");
    }

    /// Closes the agent's side (stdin) and waits for the gateway to exit.
    pub async fn close(mut self) -> Closed {
        if let Some(client) = self.client.take() {
            let _ = within("closing the session", client.cancel()).await;
        }
        self.wait().await
    }

    /// Waits for the gateway to exit on its own (after a signal, or a failed start).
    pub async fn wait(mut self) -> Closed {
        let status = within("the gateway's exit", self.child.wait())
            .await
            .expect("wait");
        if let Some(task) = self.stderr_task.take() {
            let _ = within("the gateway's stderr", task).await;
        }
        let stderr = self.stderr();
        Closed {
            code: status.code(),
            stderr,
            received: self.received(),
            evidence: self.evidence,
        }
    }

    /// The run directories in the evidence root, oldest first.
    pub fn runs(&self) -> Vec<PathBuf> {
        runs_in(self.evidence.path())
    }
}

/// A gateway that has exited, and what it left.
pub struct Closed {
    /// Its exit code.
    pub code: Option<i32>,
    /// All of its stderr.
    pub stderr: String,
    /// Every byte it wrote to the agent.
    pub received: Vec<u8>,
    /// The evidence root (removed when this is dropped).
    pub evidence: tempfile::TempDir,
}

impl Closed {
    /// The run directories, oldest first.
    pub fn runs(&self) -> Vec<PathBuf> {
        runs_in(self.evidence.path())
    }
}

/// The run directories under an evidence root, oldest first (run ids sort by time).
pub fn runs_in(root: &Path) -> Vec<PathBuf> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(root.join("runs"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    runs.sort();
    runs
}

/// The text of a tool result's content, joined.
pub fn text_of(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `node <chrome-devtools-mcp> --browserUrl {cdp_url}`, without telemetry.
pub fn chrome_devtools_mcp() -> Vec<String> {
    let script =
        clients_dir().join("node_modules/chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js");
    assert!(
        script.is_file(),
        "chrome-devtools-mcp is not installed: run npm ci in tests/clients"
    );
    vec![
        "node".into(),
        script.display().to_string(),
        "--browserUrl".into(),
        "{cdp_url}".into(),
        "--no-usage-statistics".into(),
        "--no-performance-crux".into(),
        "--no-page-id-routing".into(),
    ]
}

/// `node <@playwright/mcp> --cdp-endpoint {cdp_url}`, writing its files into `output_dir`
/// (its temporary files too: it leaves a socket directory behind in `$TMPDIR`).
pub fn playwright_mcp(output_dir: &Path) -> Vec<String> {
    let script = clients_dir().join("node_modules/@playwright/mcp/cli.js");
    assert!(
        script.is_file(),
        "@playwright/mcp is not installed: run npm ci in tests/clients"
    );
    vec![
        "env".into(),
        format!("TMPDIR={}", output_dir.display()),
        "node".into(),
        script.display().to_string(),
        "--cdp-endpoint".into(),
        "{cdp_url}".into(),
        "--output-dir".into(),
        output_dir.display().to_string(),
    ]
}

/// An MCP server on its own, as an agent would start it: `command` (its `{cdp_url}` replaced by
/// `cdp_url`) as a child killed on drop, and an rmcp client session on its stdio.
pub async fn serve_directly(
    command: &[String],
    cdp_url: &str,
) -> (tokio::process::Child, RunningService<RoleClient, ()>) {
    let mut args: Vec<String> = command
        .iter()
        .map(|a| a.replace("{cdp_url}", cdp_url))
        .collect();
    let program = args.remove(0);
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(&args)
        .kill_on_drop(true)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn the MCP server");
    let session = ()
        .serve(cdp_relay_mcp::transport(
            child.stdout.take().expect("stdout"),
            child.stdin.take().expect("stdin"),
        ))
        .await
        .expect("a session with the MCP server alone");
    (child, session)
}

/// The records of the run in `run` (its `actions.jsonl`).
pub fn journal(run: &Path) -> Vec<cdp_evidence::StoredRecord> {
    let bytes = std::fs::read(run.join("actions.jsonl")).expect("journal");
    cdp_evidence::parse_journal(&bytes).records
}

/// The gateway's records of tool calls (`source: "mcp"` actions).
pub fn mcp_calls(records: &[cdp_evidence::StoredRecord]) -> Vec<&cdp_evidence::StoredRecord> {
    records
        .iter()
        .filter(|r| r.source.as_deref() == Some("mcp") && r.kind == "action")
        .collect()
}

/// The gateway's records of calls of `method`.
pub fn calls<'a>(
    records: &'a [cdp_evidence::StoredRecord],
    method: &str,
) -> Vec<&'a cdp_evidence::StoredRecord> {
    mcp_calls(records)
        .into_iter()
        .filter(|r| r.payload["method"] == method)
        .collect()
}

/// The text of a resource's first contents.
pub fn resource_text(r: &rmcp::model::ReadResourceResult) -> String {
    match &r.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not a text resource: {other:?}"),
    }
}

/// The uid (chrome-devtools-mcp: `uid=1_3 textbox "Email"`) or ref (@playwright/mcp:
/// `textbox "Email" [ref=e3]`) of the element named `role "name"` in a snapshot.
pub fn element(snapshot: &str, role_and_name: &str) -> String {
    let line = snapshot
        .lines()
        .find(|l| l.contains(role_and_name))
        .unwrap_or_else(|| panic!("no {role_and_name} in the snapshot:\n{snapshot}"));
    if let Some(rest) = line.trim_start().strip_prefix("uid=") {
        return rest
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
    }
    let start = line.find("[ref=").expect("a ref") + 5;
    line[start..]
        .split(']')
        .next()
        .unwrap_or_default()
        .to_owned()
}
