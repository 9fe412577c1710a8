//! The browser the relay launches: find a Chromium, start it on a fresh temporary profile with
//! `--remote-debugging-port=0`, learn its port, and own its lifetime.
//!
//! The browser runs in its own process group so that shutdown reaches every helper process it
//! spawned; the profile directory is removed only after the whole group is gone. Nothing here
//! touches the traffic, and nothing here logs Chromium's output unsanitized (its stderr carries
//! capability URLs).

mod procfs;
mod profiles;

use crate::config::LaunchConfig;
use crate::Error;
use cdp_relay_proxy::Upstream;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};

/// Names tried on PATH, in order, after `--browser` and `$CDP_RELAY_BROWSER`.
pub const BROWSER_NAMES: [&str; 4] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];
/// How long a browser may take to open its DevTools port.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a browser gets to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// What to do when Chromium says "No usable sandbox!": it needs unprivileged user namespaces
/// (or a setuid helper), which containers under a default seccomp profile refuse.
const NO_SANDBOX_ADVICE: &str = "Chromium's sandbox cannot start here (it needs user namespaces, \
which this container's seccomp profile or kernel refuses); allow them, or run the browser \
without its sandbox with --browser-no-sandbox (or CDP_RELAY_BROWSER_NO_SANDBOX=true; `cdp-relay \
mcp`: --browser-arg=--no-sandbox) and let the container be the boundary";
/// Stderr lines kept to explain a failed start.
const STDERR_TAIL: usize = 8;

/// Resolves the executable: `--browser`, then `$CDP_RELAY_BROWSER`, then [`BROWSER_NAMES`] on `path`.
pub fn find_browser(launch: &LaunchConfig, path: Option<OsString>) -> Result<PathBuf, Error> {
    if let Some(explicit) = launch.browser.as_ref().or(launch.browser_env.as_ref()) {
        if explicit.components().count() > 1 {
            return if is_executable(explicit) {
                Ok(explicit.clone())
            } else {
                Err(Error::BrowserNotFound {
                    looked_for: format!("{} (not an executable file)", explicit.display()),
                })
            };
        }
        // A bare name is looked up on PATH like the defaults.
        return search_path(explicit.as_os_str(), path.as_ref()).ok_or_else(|| {
            Error::BrowserNotFound {
                looked_for: format!("{} on PATH", explicit.display()),
            }
        });
    }
    BROWSER_NAMES
        .iter()
        .find_map(|name| search_path(name.as_ref(), path.as_ref()))
        .ok_or_else(|| Error::BrowserNotFound {
            looked_for: format!("{} on PATH", BROWSER_NAMES.join(", ")),
        })
}

fn search_path(name: &std::ffi::OsStr, path: Option<&OsString>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The full argument list: the relay's defaults, minus any switch the user's extra arguments set
/// themselves (theirs win, e.g. a fixed `--remote-debugging-port`), then the extra arguments.
pub fn browser_args(
    profile: &Path,
    headed: bool,
    as_root: bool,
    extra: &[String],
) -> Vec<OsString> {
    let mut defaults: Vec<OsString> = vec![
        "--remote-debugging-port=0".into(),
        "--remote-debugging-address=127.0.0.1".into(),
        {
            let mut a = OsString::from("--user-data-dir=");
            a.push(profile);
            a
        },
        "--no-first-run".into(),
        "--no-default-browser-check".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-dev-shm-usage".into(),
    ];
    if !headed {
        defaults.extend(["--headless".into(), "--disable-gpu".into()]);
    }
    if as_root {
        // Chromium refuses to start as root with its sandbox on.
        defaults.push("--no-sandbox".into());
    }
    let overridden: Vec<&str> = extra.iter().filter_map(|a| switch_name(a)).collect();
    let mut args: Vec<OsString> = defaults
        .into_iter()
        .filter(|d| {
            !d.to_str()
                .and_then(switch_name)
                .is_some_and(|n| overridden.contains(&n))
        })
        .collect();
    args.extend(extra.iter().map(OsString::from));
    if !extra.iter().any(|a| !a.starts_with('-')) {
        args.push("about:blank".into());
    }
    args
}

/// `--name` of `--name=value` / `--name`; `None` for positional arguments.
fn switch_name(arg: &str) -> Option<&str> {
    arg.starts_with("--")
        .then(|| arg.split('=').next().unwrap_or(arg))
}

/// The profile Chromium will use: the user's `--user-data-dir` if they gave one, else ours.
fn effective_profile(extra: &[String], ours: &Path) -> PathBuf {
    extra
        .iter()
        .rev()
        .find_map(|a| a.strip_prefix("--user-data-dir="))
        .map_or_else(|| ours.to_path_buf(), PathBuf::from)
}

/// A running browser on a temporary profile. Dropping it kills the process group and removes
/// the profile; [`Browser::shutdown`] does the same gracefully.
#[derive(Debug)]
pub struct Browser {
    child: Child,
    pgid: Pid,
    profile: Option<tempfile::TempDir>,
    upstream: Upstream,
    exe: PathBuf,
}

impl Browser {
    /// Starts `exe` and waits until its DevTools port is open.
    pub async fn launch(exe: &Path, launch: &LaunchConfig) -> Result<Browser, Error> {
        Browser::launch_without(exe, launch, &[]).await
    }

    /// [`Browser::launch`], also keeping the environment variables named in `secret_names`
    /// (the `--secret-env` names) from the browser, besides what [`scrubbed`] always removes.
    pub async fn launch_without(
        exe: &Path,
        launch: &LaunchConfig,
        secret_names: &[String],
    ) -> Result<Browser, Error> {
        let start_err = |reason: String| Error::BrowserStart {
            path: exe.to_path_buf(),
            reason,
        };
        profiles::sweep(&std::env::temp_dir());
        let profile = tempfile::Builder::new()
            .prefix(profiles::PREFIX)
            .tempdir()
            .map_err(|e| start_err(format!("cannot create a temporary profile directory: {e}")))?;
        profiles::claim(profile.path())
            .map_err(|e| start_err(format!("cannot write into the temporary profile: {e}")))?;
        let as_root = nix::unistd::geteuid().is_root();
        let started = SystemTime::now();
        // Chromium's own temporary files (shared memory with --disable-dev-shm-usage, crash
        // handler scratch) go inside the profile, so they are removed with it even after a kill.
        let scratch = profile.path().join("tmp");
        std::fs::create_dir(&scratch)
            .map_err(|e| start_err(format!("cannot write into the temporary profile: {e}")))?;
        let mut command = Command::new(exe);
        // The browser runs untrusted pages: it gets no credential of the relay's.
        for name in scrubbed(std::env::vars_os().map(|(k, _)| k), secret_names) {
            command.env_remove(name);
        }
        command
            .env("TMPDIR", &scratch)
            .args(browser_args(
                profile.path(),
                launch.headed,
                as_root,
                &launch.extra_args,
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // The browser dies with the thread that starts it: `launch` runs on the main thread of
        // the CLI, and a test's browser belongs to the test's thread.
        cdp_relay_sys::die_with_parent(&mut command);
        let child = command.spawn().map_err(|e| start_err(e.to_string()))?;
        let pgid = match child.id() {
            Some(id) => Pid::from_raw(id as i32),
            None => return Err(start_err("exited immediately".into())),
        };
        let mut browser = Browser {
            child,
            pgid,
            profile: Some(profile),
            upstream: Upstream {
                host: "127.0.0.1".into(),
                port: 0,
            },
            exe: exe.to_path_buf(),
        };
        let stderr = browser.child.stderr.take();
        let watched = effective_profile(
            &launch.extra_args,
            browser.profile_dir().unwrap_or(Path::new("")),
        );
        match browser.wait_for_port(stderr, &watched, started).await {
            Ok(port) => {
                browser.upstream.port = port;
                Ok(browser)
            }
            Err(reason) => {
                browser.stop().await;
                Err(start_err(reason))
            }
        }
    }

    /// Where the browser's DevTools server listens.
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    /// The temporary profile directory (removed at shutdown).
    pub fn profile_dir(&self) -> Option<&Path> {
        self.profile.as_ref().map(|p| p.path())
    }

    /// The process group id (the browser's pid).
    pub fn pid(&self) -> u32 {
        self.pgid.as_raw() as u32
    }

    /// Resolves when the browser's main process exits.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// SIGTERM to the group, SIGKILL after a grace period, then remove the profile.
    pub async fn shutdown(mut self) {
        self.stop().await;
    }

    async fn stop(&mut self) {
        let _ = killpg(self.pgid, Signal::SIGTERM);
        if tokio::time::timeout(STOP_GRACE, self.child.wait())
            .await
            .is_err()
        {
            tracing::warn!("browser ignored SIGTERM for {STOP_GRACE:?}; killing it");
        }
        let _ = killpg(self.pgid, Signal::SIGKILL);
        let _ = self.child.wait().await;
        // Helpers (renderers, zygote) may outlive the main process by a moment.
        let deadline = Instant::now() + Duration::from_secs(2);
        while group_alive(self.pgid) && Instant::now() < deadline {
            let _ = killpg(self.pgid, Signal::SIGKILL);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.remove_profile();
    }

    fn remove_profile(&mut self) {
        if let Some(dir) = self.profile.take() {
            let path = dir.path().to_path_buf();
            if let Err(e) = dir.close() {
                // A late writer can race the first attempt; one retry covers it.
                if std::fs::remove_dir_all(&path).is_err() && path.exists() {
                    tracing::warn!(path = %path.display(), error = %e, "could not remove the temporary profile");
                }
            }
        }
    }

    /// Learns the port from the "DevTools listening on" stderr line, confirmed by a fresh
    /// `DevToolsActivePort` file in the profile (a stale one survives a killed browser; ours is
    /// new). Chromium writes no such file for a fixed `--remote-debugging-port=N`: then the port
    /// is the one the line announces, confirmed by `/json/version` naming the same browser.
    async fn wait_for_port(
        &mut self,
        stderr: Option<ChildStderr>,
        profile: &Path,
        started: SystemTime,
    ) -> Result<u16, String> {
        let mut lines = stderr.map(|s| BufReader::new(s).lines());
        let mut tail: Vec<String> = Vec::new();
        let mut no_usable_sandbox = false;
        // (port, browser websocket path) from our child's own announcement.
        let mut announced: Option<(u16, String)> = None;
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        let mut poll = tokio::time::interval(Duration::from_millis(50));
        loop {
            tokio::select! {
                line = async {
                    match lines.as_mut() {
                        Some(l) => l.next_line().await,
                        None => std::future::pending().await,
                    }
                } => match line {
                    Ok(Some(line)) => {
                        if line.contains("Cannot start http server for devtools") {
                            return Err("could not open its DevTools port (is the port given with --remote-debugging-port in use?)".into());
                        }
                        if let Some(rest) = line.strip_prefix("DevTools listening on ") {
                            if let Some(port) = read_active_port(profile, started) {
                                self.drain_stderr(lines.take());
                                return Ok(port);
                            }
                            announced = parse_announcement(rest);
                            if let Some(port) = confirm(announced.as_ref()).await {
                                self.drain_stderr(lines.take());
                                return Ok(port);
                            }
                        } else {
                            no_usable_sandbox |= line.contains("No usable sandbox");
                            if tail.len() == STDERR_TAIL {
                                tail.remove(0);
                            }
                            tail.push(describe_line(&line));
                        }
                    }
                    // stderr closed: the process is exiting; the exit arm reports it.
                    Ok(None) | Err(_) => lines = None,
                },
                status = self.child.wait() => {
                    let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    // What it said last may still be in the pipe: read it (briefly: a helper
                    // that outlived it could hold the pipe open).
                    if let Some(mut rest) = lines.take() {
                        let drain = async {
                            while let Ok(Some(line)) = rest.next_line().await {
                                no_usable_sandbox |= line.contains("No usable sandbox");
                                if tail.len() == STDERR_TAIL {
                                    tail.remove(0);
                                }
                                tail.push(describe_line(&line));
                            }
                        };
                        let _ = tokio::time::timeout(Duration::from_millis(500), drain).await;
                    }
                    if no_usable_sandbox {
                        return Err(format!("exited ({status}): {NO_SANDBOX_ADVICE}"));
                    }
                    let why = if tail.is_empty() {
                        String::new()
                    } else {
                        format!("; its last output: {}", tail.join(" | "))
                    };
                    return Err(format!("exited ({status}) before opening its DevTools port{why}"));
                }
                _ = poll.tick() => {
                    if let Some(port) = read_active_port(profile, started) {
                        self.drain_stderr(lines.take());
                        return Ok(port);
                    }
                    if let Some(port) = confirm(announced.as_ref()).await {
                        self.drain_stderr(lines.take());
                        return Ok(port);
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(format!(
                            "did not open its DevTools port within {}s (extra arguments may conflict: check the ones after --)",
                            START_TIMEOUT.as_secs()
                        ));
                    }
                }
            }
        }
    }

    /// Keeps reading stderr so the browser never blocks on a full pipe. Lines are logged at
    /// trace level (Chromium is chatty) only after dropping anything that could hold a
    /// capability URL.
    fn drain_stderr(&self, lines: Option<tokio::io::Lines<BufReader<ChildStderr>>>) {
        if let Some(mut lines) = lines {
            tokio::spawn(async move {
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::trace!(target: "cdp_relay::browser", "{}", describe_line(&line));
                }
            });
        }
    }

    /// The executable this browser was started from.
    pub fn exe(&self) -> &Path {
        &self.exe
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if self.profile.is_some() {
            let _ = killpg(self.pgid, Signal::SIGKILL);
            let _ = self.child.start_kill();
            // Give the kernel a moment to tear the group down before removing its files.
            let deadline = Instant::now() + Duration::from_millis(500);
            while group_alive(self.pgid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            self.remove_profile();
        }
    }
}

/// True while a process of the group runs (zombies waiting to be reaped do not count).
fn group_alive(pgid: Pid) -> bool {
    procfs::group_running(pgid.as_raw() as u32)
}

/// Environment variables the browser must not inherit, out of `names`: the relay's own settings
/// (`CDP_RELAY_*`, its token among them), the object store's (`AWS_*`: keys, session tokens, web
/// identity, endpoints; other clouds' `AZURE_*`, `GOOGLE_*` and `GCP_*` alike), anything whose
/// name says it holds a credential, and the variables `--secret-env` named. What Chromium needs
/// (`HOME`, `PATH`, `DISPLAY`, `XDG_*`, `LANG`, `TZ`, `FONTCONFIG_*`, proxies…) is left alone.
pub fn scrubbed(names: impl Iterator<Item = OsString>, secret_names: &[String]) -> Vec<OsString> {
    const PREFIXES: [&str; 5] = ["CDP_RELAY_", "AWS_", "AZURE_", "GOOGLE_", "GCP_"];
    const WORDS: [&str; 9] = [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "API_KEY",
        "APIKEY",
        "ACCESS_KEY",
        "PRIVATE_KEY",
    ];
    names
        .filter(|name| {
            // A name that is not UTF-8 is nobody's setting; it is dropped rather than guessed at.
            let Some(n) = name.to_str() else {
                return true;
            };
            let upper = n.to_ascii_uppercase();
            PREFIXES.iter().any(|p| upper.starts_with(p))
                || WORDS.iter().any(|w| upper.contains(w))
                || secret_names.iter().any(|s| s == n)
        })
        .collect()
}

/// Chromium's stderr made safe to log: capability URLs become handles, secrets are redacted.
fn describe_line(line: &str) -> String {
    static SANITIZER: std::sync::LazyLock<cdp_sanitize::Sanitizer> =
        std::sync::LazyLock::new(cdp_sanitize::Sanitizer::new);
    SANITIZER.text_capped(line.trim(), 300).into_string()
}

/// `ws://127.0.0.1:9222/devtools/browser/<id>` (what follows "DevTools listening on ") as
/// (port, `/devtools/browser/<id>`).
fn parse_announcement(url: &str) -> Option<(u16, String)> {
    let rest = url.trim().strip_prefix("ws://")?;
    let (authority, path) = rest.split_at(rest.find('/')?);
    let port: u16 = authority.rsplit_once(':')?.1.parse().ok()?;
    (port != 0 && path.starts_with("/devtools/browser/")).then(|| (port, path.to_owned()))
}

/// The announced port once `/json/version` answers there with the same browser (another
/// process holding the port would name another browser id).
async fn confirm(announced: Option<&(u16, String)>) -> Option<u16> {
    let (port, path) = announced?;
    let up = Upstream {
        host: "127.0.0.1".into(),
        port: *port,
    };
    let v = tokio::time::timeout(
        Duration::from_secs(2),
        cdp_relay_proxy::upstream::version(&up),
    )
    .await
    .ok()?
    .ok()?;
    v.websocket_url.ends_with(path.as_str()).then_some(*port)
}

/// Reads `DevToolsActivePort` (`<port>\n/devtools/browser/<id>`) if it was written after `since`.
fn read_active_port(profile: &Path, since: SystemTime) -> Option<u16> {
    let file = profile.join("DevToolsActivePort");
    let modified = std::fs::metadata(&file).ok()?.modified().ok()?;
    // Coarse filesystem timestamps can round down; allow a little slack.
    if modified + Duration::from_secs(2) < since {
        return None;
    }
    let text = std::fs::read_to_string(&file).ok()?;
    let port: u16 = text.lines().next()?.trim().parse().ok()?;
    (port != 0).then_some(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exe_in(dir: &Path, name: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn finds_browsers_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = Some(dir.path().as_os_str().to_owned());
        let none = LaunchConfig::default();
        let e = find_browser(&none, path.clone()).unwrap_err();
        assert!(e.to_string().contains("apt-get install chromium"), "{e}");
        assert!(e.to_string().contains("--browser"), "{e}");

        let chrome = exe_in(dir.path(), "google-chrome");
        assert_eq!(find_browser(&none, path.clone()).unwrap(), chrome);
        let chromium = exe_in(dir.path(), "chromium");
        assert_eq!(find_browser(&none, path.clone()).unwrap(), chromium);

        let env = LaunchConfig {
            browser_env: Some("google-chrome".into()),
            ..LaunchConfig::default()
        };
        assert_eq!(find_browser(&env, path.clone()).unwrap(), chrome);
        let flag = LaunchConfig {
            browser: Some(chromium.clone()),
            browser_env: Some("google-chrome".into()),
            ..LaunchConfig::default()
        };
        assert_eq!(find_browser(&flag, path.clone()).unwrap(), chromium);
        let missing = LaunchConfig {
            browser: Some(dir.path().join("nope")),
            ..LaunchConfig::default()
        };
        assert!(find_browser(&missing, path).is_err());
    }

    #[test]
    fn not_executable_is_not_a_browser() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("chromium"), "").unwrap();
        let path = Some(dir.path().as_os_str().to_owned());
        assert!(find_browser(&LaunchConfig::default(), path).is_err());
    }

    #[test]
    fn args_are_headless_and_fresh() {
        let args = browser_args(Path::new("/tmp/p"), false, true, &[]);
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.contains(&"--remote-debugging-port=0".to_string()));
        assert!(args.contains(&"--user-data-dir=/tmp/p".to_string()));
        assert!(args.contains(&"--headless".to_string()));
        assert!(args.contains(&"--no-sandbox".to_string()));
        assert_eq!(args.last().map(String::as_str), Some("about:blank"));
        let headed = browser_args(Path::new("/tmp/p"), true, false, &[]);
        assert!(!headed
            .iter()
            .any(|a| a == "--headless" || a == "--no-sandbox"));
    }

    #[test]
    fn credentials_stay_out_of_the_browser_environment() {
        let names = [
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SESSION_TOKEN",
            "AWS_ENDPOINT_URL",
            "CDP_RELAY_TOKEN",
            "CDP_RELAY_EVIDENCE_UPLOAD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_STORAGE_ACCOUNT_KEY",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "MY_OTP",
            "HOME",
            "PATH",
            "DISPLAY",
            "XDG_RUNTIME_DIR",
            "LANG",
            "TZ",
            "FONTCONFIG_PATH",
            "HTTPS_PROXY",
        ];
        let gone = scrubbed(names.iter().map(OsString::from), &["MY_OTP".into()]);
        let gone: Vec<&str> = gone.iter().filter_map(|n| n.to_str()).collect();
        assert_eq!(gone, &names[..11]);
    }

    #[test]
    fn stale_active_port_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("DevToolsActivePort");
        std::fs::write(&file, "45678\n/devtools/browser/abc\n").unwrap();
        let now = SystemTime::now();
        assert_eq!(read_active_port(dir.path(), now), Some(45678));
        let later = now + Duration::from_secs(60);
        assert_eq!(read_active_port(dir.path(), later), None);
        std::fs::write(&file, "garbage").unwrap();
        assert_eq!(read_active_port(dir.path(), now), None);
    }

    #[test]
    fn the_announcement_names_port_and_browser() {
        assert_eq!(
            parse_announcement("ws://127.0.0.1:9222/devtools/browser/3c8f-9c3e\n"),
            Some((9222, "/devtools/browser/3c8f-9c3e".into()))
        );
        assert_eq!(
            parse_announcement("ws://[::1]:41000/devtools/browser/x"),
            Some((41000, "/devtools/browser/x".into()))
        );
        for bad in [
            "ws://127.0.0.1:0/devtools/browser/x",
            "ws://127.0.0.1/devtools/browser/x",
            "ws://127.0.0.1:9222/devtools/page/x",
            "http://127.0.0.1:9222/devtools/browser/x",
            "ws://127.0.0.1:99999/devtools/browser/x",
        ] {
            assert_eq!(parse_announcement(bad), None, "{bad}");
        }
    }

    #[test]
    fn stderr_lines_lose_capability_urls() {
        let id = "3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44";
        let l = describe_line(&format!(
            "DevTools listening on ws://127.0.0.1:1/devtools/browser/{id}"
        ));
        assert!(!l.contains(id), "{l}");
        assert!(
            l.starts_with("DevTools listening on ws://127.0.0.1:1/devtools/browser/"),
            "{l}"
        );
        let l = describe_line("CONSOLE: Authorization: Bearer abcdefghijklmnop1234");
        assert!(!l.contains("abcdefghijklmnop1234"), "{l}");
    }
}
