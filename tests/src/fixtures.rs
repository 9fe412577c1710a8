//! The fixtures every suite starts from: Chromium, the relay in process and as a binary, the
//! npm clients, and bounds on what a test waits for.

use crate::http;
use cdp_relay::{
    Browser, Config, EvidenceNeed, LaunchConfig, ListenPolicy, PipelineSummary, ProxyConfig,
    Recording, Stats, DEFAULT_MAX_MESSAGE_SIZE,
};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// Upper bound for anything a test waits on; a hang becomes a failure, not a stuck CI job. A
/// hang detector, not a timing: a real client's whole scenario against a real Chromium takes up
/// to ~60 s on a two-core machine running four tests at once, and a bound stays at ten times
/// what it guards on a loaded machine. Only a hang ever waits this long.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(600);

/// Awaits `fut` or panics after [`TEST_TIMEOUT`] naming `what`.
pub async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    // Boxed: debug-build test futures are large enough to overflow a test thread's stack.
    match tokio::time::timeout(TEST_TIMEOUT, Box::pin(fut)).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {TEST_TIMEOUT:?} waiting for {what}"),
    }
}

/// A headless Chromium on a fresh profile (the product's own launcher), killed on drop.
pub struct Chromium {
    browser: Option<Browser>,
    port: u16,
}

impl Chromium {
    /// Starts Debian's `chromium` (or `$CDP_RELAY_BROWSER`).
    pub async fn start() -> Chromium {
        Chromium::start_with(Vec::new()).await
    }

    /// Starts Chromium with extra command-line arguments.
    pub async fn start_with(extra_args: Vec<String>) -> Chromium {
        let launch = LaunchConfig {
            browser_env: std::env::var_os("CDP_RELAY_BROWSER").map(PathBuf::from),
            extra_args,
            ..LaunchConfig::default()
        };
        let exe = cdp_relay::launch::find_browser(&launch, std::env::var_os("PATH"))
            .unwrap_or_else(|e| panic!("{e} (the end-to-end tests need a real Chromium)"));
        let browser = Browser::launch(&exe, &launch)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let port = browser.upstream().port;
        Chromium {
            browser: Some(browser),
            port,
        }
    }

    /// The DevTools HTTP endpoint, `http://127.0.0.1:PORT`.
    pub fn http(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The DevTools port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The browser's main pid (also its process group).
    pub fn pid(&self) -> u32 {
        self.browser.as_ref().map_or(0, |b| b.pid())
    }

    /// Kills the whole browser abruptly (SIGKILL to its process group) and waits for it.
    pub async fn kill(&mut self) {
        if let Some(mut b) = self.browser.take() {
            let pgid = nix::unistd::Pid::from_raw(b.pid() as i32);
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            let _ = b.wait().await;
            b.shutdown().await;
        }
    }
}

/// An in-process relay in front of `upstream` (the product's own [`Recording`]), stopped on drop.
pub struct RelayFixture {
    recording: Option<Recording>,
    endpoint: String,
    addr: std::net::SocketAddr,
    stats: Arc<Stats>,
}

impl RelayFixture {
    /// A relay recording evidence with `settings` (its pipeline is finished by
    /// [`RelayFixture::stop`]); the relay's own observer starts when the settings ask for it.
    pub async fn start_recording(
        upstream: &str,
        settings: cdp_relay::EvidenceSettings,
    ) -> RelayFixture {
        assert!(settings.enabled, "start_recording needs evidence on");
        RelayFixture::start_recording_with(upstream, settings, |_| {}).await
    }

    /// The pipeline's run directory, when recording.
    pub fn run_dir(&self) -> Option<PathBuf> {
        let recording = self.recording.as_ref()?;
        recording.evidence().map(|e| e.status().run_dir)
    }

    /// Default policy (loopback, no token) on an OS-chosen port, evidence off.
    pub async fn start(upstream: &str) -> RelayFixture {
        RelayFixture::start_with(upstream, |_| {}).await
    }

    /// Lets the test adjust the policy and limits before binding; evidence off.
    pub async fn start_with(upstream: &str, adjust: impl FnOnce(&mut ProxyConfig)) -> RelayFixture {
        RelayFixture::start_recording_with(
            upstream,
            cdp_relay::EvidenceSettings::disabled(),
            adjust,
        )
        .await
    }

    /// A relay with these evidence settings and an adjusted policy and limits.
    pub async fn start_recording_with(
        upstream: &str,
        evidence: cdp_relay::EvidenceSettings,
        adjust: impl FnOnce(&mut ProxyConfig),
    ) -> RelayFixture {
        let policy = ListenPolicy::loopback("127.0.0.1:0".parse().expect("addr"));
        let mut config =
            Config::new(Some(upstream), policy, DEFAULT_MAX_MESSAGE_SIZE).expect("config");
        adjust(&mut config.proxy);
        // A fixture asked to record must record: a broken evidence directory fails the test.
        let need = if evidence.enabled {
            EvidenceNeed::Required
        } else {
            EvidenceNeed::BestEffort
        };
        config.evidence = evidence;
        let recording = Recording::start(config, need)
            .await
            .unwrap_or_else(|e| panic!("start the relay: {e}"));
        RelayFixture {
            endpoint: recording.endpoint().to_owned(),
            addr: recording.local_addr(),
            stats: recording.stats(),
            recording: Some(recording),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// `127.0.0.1:PORT`.
    pub fn authority(&self) -> String {
        self.addr.to_string()
    }

    /// The relay's counters.
    pub fn stats(&self) -> cdp_relay::StatsSnapshot {
        self.stats.snapshot()
    }

    /// Asks the relay to stop and waits until it has; a pipeline then finalizes its run.
    pub async fn stop(mut self) -> Option<PipelineSummary> {
        let recording = self.recording.take()?;
        within("relay shutdown and pipeline finish", recording.stop()).await
    }
}

/// `cdp-relay export RUN_DIR ARGS…`: the spec it prints (the export must succeed).
pub fn export_spec(run_dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(relay_binary())
        .arg("export")
        .arg(run_dir)
        .args(args)
        .output()
        .expect("run cdp-relay export");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The one run under the evidence root `evidence` (hidden entries and plain files are not runs).
pub fn only_run(evidence: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(evidence.join("runs"))
        .expect("runs")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.is_dir()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// Waits until the observer of the relay at `authority` covers at least `pages` pages (its
/// status's `evidence.observedPages`): typing into a tab it is not attached to yet is recorded as
/// typing into a field of unknown kind.
pub async fn observing(authority: &str, pages: u64) {
    within("the observer to attach", async {
        loop {
            let status = http::get(authority, "/relay/v1/status").await.json();
            if status["evidence"]["observedPages"].as_u64().unwrap_or(0) >= pages {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

/// Runs `cdp-relay demo` into the evidence root `evidence` (it must succeed); its one run.
pub async fn demo_run(evidence: &Path) -> PathBuf {
    let out = within(
        "cdp-relay demo",
        tokio::process::Command::new(relay_binary())
            .args(["demo", "--evidence-dir"])
            .arg(evidence)
            .env_remove("RUST_LOG")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run cdp-relay demo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed:\n{stderr}");
    only_run(evidence)
}

/// The `cdp-relay` binary of the same build profile: beside a test's `deps/` directory, or beside
/// a binary such as `relay-bench`. `cargo test --workspace` and `scripts/test.sh` build it.
/// `CDP_RELAY_TEST_BINARY` names another one (a release build, for a measurement).
pub fn relay_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("CDP_RELAY_TEST_BINARY") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("current_exe");
    let candidates: Vec<PathBuf> = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join("cdp-relay"))
        .collect();
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "cdp-relay binary not found at {candidates:?}: build it first (`cargo build --bin cdp-relay`, with --release for the benchmark)"
            )
        })
}

/// Directory of the npm client scripts, with `node_modules` installed.
pub fn clients_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients");
    assert!(
        dir.join("node_modules").join("playwright-core").is_dir()
            && dir.join("node_modules").join("puppeteer-core").is_dir(),
        "npm clients are not installed: run `npm ci --prefix {}`",
        dir.display()
    );
    dir
}

/// Output of a finished client script.
#[derive(Debug)]
pub struct ClientRun {
    /// Exit status success.
    pub ok: bool,
    /// Parsed last stdout line, when it was JSON.
    pub report: Option<serde_json::Value>,
    /// Captured stderr, for failure messages.
    pub stderr: String,
}

/// Runs `node <script> <endpoint>` from `tests/clients` (killed if the test ends first).
pub async fn run_node_client(script: &str, endpoint: &str) -> ClientRun {
    let dir = clients_dir();
    let child = tokio::process::Command::new("node")
        .arg(script)
        .arg(endpoint)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn node (is Node.js installed?)");
    let out = within(script, child.wait_with_output())
        .await
        .expect("node output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str(l).ok());
    ClientRun {
        ok: out.status.success(),
        report,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Reads a child's stderr into `sink` as it comes (so a failing test can print it), waking
/// `seen`'s waiters after each read; ends with the pipe.
pub fn collect_stderr(
    mut pipe: tokio::process::ChildStderr,
    sink: Arc<std::sync::Mutex<String>>,
    seen: Option<Arc<tokio::sync::Notify>>,
) -> JoinHandle<()> {
    use tokio::io::AsyncReadExt;
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push_str(&String::from_utf8_lossy(&buf[..n]));
            if let Some(seen) = &seen {
                seen.notify_waiters();
            }
        }
    })
}

/// The `webSocketDebuggerUrl` of the first page target listed at `authority`.
pub async fn page_ws(authority: &str) -> String {
    let list = http::get(authority, "/json/list").await.json();
    list.as_array()
        .and_then(|l| l.iter().find(|t| t["type"] == "page"))
        .and_then(|t| t["webSocketDebuggerUrl"].as_str())
        .unwrap_or_else(|| panic!("no page target at {authority}: {list}"))
        .to_owned()
}

/// The browser `webSocketDebuggerUrl` from `/json/version` at `authority`.
pub async fn browser_ws(authority: &str) -> String {
    let v = http::get(authority, "/json/version").await.json();
    v["webSocketDebuggerUrl"]
        .as_str()
        .unwrap_or_else(|| panic!("no browser websocket at {authority}: {v}"))
        .to_owned()
}

/// Processes (not zombies) whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(needle) {
            continue;
        }
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
            .unwrap_or(false);
        if !zombie {
            found.push(pid);
        }
    }
    found
}

/// A `cdp-relay` child process with piped stdout/stderr, killed on drop. Its stderr is read
/// as it comes (a chatty `-vv` relay never blocks on a full pipe) and kept for the test.
pub struct RelayProcess {
    /// The child.
    pub child: tokio::process::Child,
    /// The first stdout line (the endpoint), once read.
    pub endpoint: String,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    stderr: Arc<std::sync::Mutex<String>>,
    stderr_task: Option<JoinHandle<()>>,
    /// Default evidence root, so no test writes into the source tree.
    _evidence: tempfile::TempDir,
}

impl RelayProcess {
    /// Spawns `cdp-relay <args>` with `env` added, and waits for the endpoint line.
    /// Panics with the process's stderr if it exits first.
    pub async fn spawn(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> RelayProcess {
        RelayProcess::spawn_limited(None, args, env).await
    }

    /// Like [`RelayProcess::spawn`], with the soft file-descriptor limit set to `nofile`.
    pub async fn spawn_with_fd_limit(nofile: u32, args: &[&str]) -> RelayProcess {
        RelayProcess::spawn_limited(Some(nofile), args, &[]).await
    }

    async fn spawn_limited(
        nofile: Option<u32>,
        args: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
    ) -> RelayProcess {
        use tokio::io::AsyncBufReadExt;
        let evidence = tempfile::tempdir().expect("evidence tempdir");
        let mut cmd = match nofile {
            // The shell lowers its own limit, then becomes the relay.
            Some(n) => {
                let mut c = tokio::process::Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(relay_binary());
                c
            }
            None => tokio::process::Command::new(relay_binary()),
        };
        cmd.env("CDP_RELAY_EVIDENCE_DIR", evidence.path());
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn cdp-relay");
        let stdout = child.stdout.take().expect("stdout");
        let stdout = tokio::io::BufReader::new(stdout).lines();
        let stderr = Arc::new(std::sync::Mutex::new(String::new()));
        let stderr_task = child
            .stderr
            .take()
            .map(|pipe| collect_stderr(pipe, stderr.clone(), None));
        let mut relay = RelayProcess {
            child,
            endpoint: String::new(),
            stdout,
            stderr,
            stderr_task,
            _evidence: evidence,
        };
        match within("the endpoint line", relay.stdout.next_line()).await {
            Ok(Some(endpoint)) => {
                relay.endpoint = endpoint;
                relay
            }
            _ => {
                let (_, _, err) = relay.finish().await;
                panic!("cdp-relay {args:?} printed no endpoint; stderr:\n{err}");
            }
        }
    }

    /// `cdp-relay serve --upstream <upstream> --listen 127.0.0.1:0 <extra...>`.
    pub async fn serve(upstream: &str, extra: &[&str]) -> RelayProcess {
        let mut args = vec!["serve", "--upstream", upstream, "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        RelayProcess::spawn(&args, &[]).await
    }

    /// SIGTERM, then waits for a clean exit (code 0); returns stderr.
    pub async fn stop(self) -> String {
        self.signal(nix::sys::signal::Signal::SIGTERM);
        let (code, _, stderr) = self.finish().await;
        assert_eq!(code, Some(0), "relay did not exit cleanly:\n{stderr}");
        stderr
    }

    /// `127.0.0.1:PORT` of the endpoint.
    pub fn authority(&self) -> String {
        self.endpoint.trim_start_matches("http://").to_owned()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// Stderr so far.
    pub fn stderr_so_far(&self) -> String {
        self.stderr.lock().expect("stderr lock").clone()
    }

    /// Sends `signal` to the relay process.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = self.pid() as i32;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).expect("kill");
    }

    /// Waits for exit; returns (exit code, remaining stdout, all stderr).
    pub async fn finish(mut self) -> (Option<i32>, String, String) {
        let mut rest = String::new();
        while let Ok(Some(l)) = within("relay stdout", self.stdout.next_line()).await {
            rest.push_str(&l);
            rest.push('\n');
        }
        let status = within("relay exit", self.child.wait()).await.expect("wait");
        if let Some(task) = self.stderr_task.take() {
            let _ = within("relay stderr", task).await;
        }
        let err = self.stderr_so_far();
        (status.code(), rest, err)
    }
}

/// Resident memory of process `pid` in KiB (`VmRSS`).
pub fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS")
}

/// A KiB field of `/proc/PID/status` (`VmRSS`, `VmHWM`, …); 0 when unreadable.
pub fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
