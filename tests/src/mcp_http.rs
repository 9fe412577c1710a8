//! `cdp-relay mcp --listen` as agents see it: the binary as a child process serving Streamable
//! HTTP, agents connected with rmcp's Streamable HTTP client (an official MCP SDK), raw HTTP for
//! what a client library will not send (a wrong Origin, another session's id), and `/proc` for
//! what a session leaves behind. Killed on drop.

use crate::fixtures::{within, RelayProcess};
use crate::http::{request, request_with_body, Answer};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A running `cdp-relay mcp --listen 127.0.0.1:0` with its evidence root and temporary
/// directory (browser profiles, the wrapped servers' files) of its own.
pub struct HttpGateway {
    /// The process; its `endpoint` is `http://127.0.0.1:PORT/mcp`.
    pub process: RelayProcess,
    /// The evidence root.
    pub evidence: tempfile::TempDir,
    /// The gateway's `TMPDIR`: every browser profile goes here.
    pub tmp: tempfile::TempDir,
}

/// An agent's MCP session over HTTP.
pub type Agent = RunningService<RoleClient, ()>;

impl HttpGateway {
    /// Spawns `cdp-relay mcp --listen 127.0.0.1:0 <flags> [-- server]`.
    pub async fn spawn(flags: &[&str], server: &[String]) -> HttpGateway {
        HttpGateway::spawn_at("127.0.0.1:0", flags, server).await
    }

    /// Spawns it listening on `listen`.
    pub async fn spawn_at(listen: &str, flags: &[&str], server: &[String]) -> HttpGateway {
        let evidence = tempfile::tempdir().expect("evidence tempdir");
        let tmp = tempfile::tempdir().expect("tmp tempdir");
        let evidence_dir = evidence.path().display().to_string();
        let mut args = vec!["mcp", "--listen", listen, "--evidence-dir", &evidence_dir];
        args.extend_from_slice(flags);
        if !server.is_empty() {
            args.push("--");
            args.extend(server.iter().map(String::as_str));
        }
        let process = RelayProcess::spawn(&args, &[("TMPDIR", tmp.path().as_os_str())]).await;
        HttpGateway {
            process,
            evidence,
            tmp,
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn authority(&self) -> String {
        self.process
            .endpoint
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned()
    }

    /// An agent's session (`initialize` done), with `token` as its Bearer credential.
    pub async fn connect(&self, token: Option<&str>) -> Agent {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut config =
            StreamableHttpClientTransportConfig::with_uri(self.process.endpoint.clone());
        // A session the gateway ended must stay ended: no silent new session.
        config.reinit_on_expired_session = false;
        if let Some(t) = token {
            config = config.auth_header(t.to_owned());
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        match within("the MCP handshake over HTTP", ().serve(transport)).await {
            Ok(agent) => agent,
            Err(e) => panic!(
                "no MCP session over HTTP: {e}; stderr:\n{}",
                self.process.stderr_so_far()
            ),
        }
    }

    /// `/relay/v1/status` (with `headers`, e.g. the token).
    pub async fn status(&self, headers: &[(&str, &str)]) -> Value {
        let a = request(&self.authority(), "GET", "/relay/v1/status", headers).await;
        assert_eq!(a.status, 200, "status: {}", a.text());
        a.json()
    }

    /// The HTTP status `/relay/v1/status` answers with `headers`.
    pub async fn status_answer(&self, headers: &[(&str, &str)]) -> u16 {
        request(&self.authority(), "GET", "/relay/v1/status", headers)
            .await
            .status
    }

    /// Waits until `/relay/v1/status` satisfies `done`; returns it.
    pub async fn status_until(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        within(what, async {
            loop {
                let s = self.status(&[]).await;
                if done(&s) {
                    return s;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        })
        .await
    }

    /// A raw `initialize` POST with `headers` added (the body's id is 1).
    pub async fn raw_initialize(&self, headers: &[(&str, &str)]) -> Answer {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
        self.raw_post(headers, body).await
    }

    /// A raw POST to `/mcp` with the headers an MCP client sends, and `headers`.
    pub async fn raw_post(&self, headers: &[(&str, &str)], body: &[u8]) -> Answer {
        let mut all = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        request_with_body(&self.authority(), "POST", "/mcp", &all, body).await
    }

    /// Every process below the gateway (its children, theirs, …), not zombies.
    pub fn descendants(&self) -> Vec<(u32, String)> {
        descendants(self.process.pid())
    }

    /// The gateway's open files under `dirs` (`/proc/PID/fd` links).
    pub fn open_files_under(&self, dirs: &[&Path]) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", self.process.pid())) else {
            return found;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                if dirs.iter().any(|d| target.starts_with(d)) {
                    found.push(target);
                }
            }
        }
        found
    }

    /// How many file descriptors the gateway has open.
    pub fn fd_count(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.process.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// What is left in the gateway's `TMPDIR` (browser profiles would be here).
    pub fn tmp_entries(&self) -> Vec<String> {
        std::fs::read_dir(self.tmp.path())
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The evidence root's runs: (run directory, the manifest's `sessionId`).
    pub fn runs(&self) -> Vec<(PathBuf, Option<String>)> {
        let mut runs = Vec::new();
        let Ok(dirs) = std::fs::read_dir(self.evidence.path().join("runs")) else {
            return runs;
        };
        for d in dirs.flatten() {
            let manifest = std::fs::read(d.path().join("manifest.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
            let session = manifest
                .as_ref()
                .and_then(|m| m["sessionId"].as_str().map(str::to_owned));
            runs.push((d.path(), session));
        }
        runs.sort();
        runs
    }
}

/// The processes below `pid` (not zombies), with their command lines.
pub fn descendants(pid: u32) -> Vec<(u32, String)> {
    let mut parents: Vec<(u32, u32, String)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next().unwrap_or("");
            let ppid = fields.next().and_then(|s| s.parse().ok()).unwrap_or(0);
            if state == "Z" {
                continue;
            }
            let cmd = std::fs::read(e.path().join("cmdline"))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .unwrap_or_default();
            parents.push((p, ppid, cmd));
        }
    }
    let mut found: Vec<(u32, String)> = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for (p, pp, cmd) in &parents {
            if *pp == parent {
                found.push((*p, cmd.clone()));
                frontier.push(*p);
            }
        }
    }
    found
}
