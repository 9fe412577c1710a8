//! `cdp-relay launch` end to end: it starts a real Chromium on a fresh profile, relays it, and on
//! every exit path (SIGTERM, Ctrl-C, the browser closing, the browser being killed, the browser
//! failing to start) leaves no Chromium process and no profile directory behind.

use cdp_relay_tests::cdp::Cdp;
use cdp_relay_tests::files::Scratch;
use cdp_relay_tests::http::get;
use cdp_relay_tests::{processes_mentioning, relay_binary, within, RelayProcess};
use nix::sys::signal::Signal;
use serde_json::json;

async fn launch(scratch: &Scratch) -> RelayProcess {
    RelayProcess::spawn(
        &["launch", "--listen", "127.0.0.1:0"],
        &[("TMPDIR", scratch.path().as_os_str())],
    )
    .await
}

#[tokio::test]
async fn launch_serves_and_shuts_down_cleanly_on_signals() {
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let scratch = Scratch::new();
        let relay = launch(&scratch).await;
        assert_eq!(
            scratch.profiles().len(),
            1,
            "one fresh profile while running"
        );
        assert!(!processes_mentioning(&scratch.path().to_string_lossy()).is_empty());

        let v = get(&relay.authority(), "/json/version").await.json();
        let ws = v["webSocketDebuggerUrl"].as_str().expect("ws").to_owned();
        assert!(
            ws.starts_with(&format!("ws://{}/", relay.authority())),
            "{ws}"
        );
        let list = get(&relay.authority(), "/json/list").await.json();
        let page_ws = list
            .as_array()
            .and_then(|l| l.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            .expect("launch opens a page")
            .to_owned();
        let mut page = Cdp::connect(&page_ws).await;
        let r = page
            .call("Runtime.evaluate", json!({"expression": "2 + 2"}))
            .await;
        assert_eq!(r["result"]["value"], 4);

        relay.signal(signal);
        let closed = within("client close on shutdown", page.wait_close()).await;
        let (code, rest, stderr) = relay.finish().await;
        assert_eq!(code, Some(0), "{signal:?}: {stderr}");
        assert!(
            rest.is_empty(),
            "stdout must hold only the endpoint: {rest}"
        );
        let f = closed.expect("the client gets a close frame, not a dropped socket");
        assert_eq!(u16::from(f.code), 1001, "{signal:?}: {f:?}");
        scratch.assert_clean();
    }
}

#[tokio::test]
async fn browser_closing_itself_ends_the_relay_with_success() {
    let scratch = Scratch::new();
    let relay = launch(&scratch).await;
    let v = get(&relay.authority(), "/json/version").await.json();
    let mut browser = Cdp::connect(v["webSocketDebuggerUrl"].as_str().expect("ws")).await;
    browser.call("Browser.close", json!({})).await;
    let (code, _, stderr) = relay.finish().await;
    assert_eq!(code, Some(0), "{stderr}");
    scratch.assert_clean();
}

#[tokio::test]
async fn browser_killed_ends_the_relay_with_failure() {
    let scratch = Scratch::new();
    let relay = launch(&scratch).await;
    for pid in processes_mentioning(&scratch.path().to_string_lossy()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
    let (code, _, stderr) = relay.finish().await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("the browser exited unexpectedly"),
        "{stderr}"
    );
    scratch.assert_clean();
}

#[tokio::test]
async fn browser_that_fails_to_start_is_one_line_and_leaves_nothing() {
    let scratch = Scratch::new();
    let out = within(
        "launch /bin/false",
        tokio::process::Command::new(relay_binary())
            .args([
                "launch",
                "--listen",
                "127.0.0.1:0",
                "--browser",
                "/bin/false",
            ])
            .env("TMPDIR", scratch.path())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("failed to start"), "{stderr}");
    scratch.assert_clean();
}

#[tokio::test]
async fn missing_browser_says_how_to_get_one() {
    let empty = tempfile::tempdir().expect("tempdir");
    let out = within(
        "launch without a browser",
        tokio::process::Command::new(relay_binary())
            .args(["launch", "--listen", "127.0.0.1:0"])
            .env("PATH", empty.path())
            .env_remove("CDP_RELAY_BROWSER")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("apt-get install chromium"), "{stderr}");
    assert!(stderr.contains("--browser"), "{stderr}");
}

/// `kill -9` of the relay takes its browser along (no orphan with an open DevTools port and no
/// policy in front of it), and the next launch removes the profile it left behind.
#[tokio::test]
async fn sigkill_of_launch_takes_the_browser_along() {
    let scratch = Scratch::new();
    let relay = launch(&scratch).await;
    let needle = scratch.path().to_string_lossy().into_owned();
    assert!(!processes_mentioning(&needle).is_empty());
    let devtools_port = {
        let profile = scratch.path().join(&scratch.profiles()[0]);
        let text = std::fs::read_to_string(profile.join("DevToolsActivePort")).expect("port file");
        text.lines().next().expect("port").trim().to_owned()
    };
    relay.signal(Signal::SIGKILL);
    let (code, _, _) = relay.finish().await;
    assert_eq!(code, None, "killed by a signal");
    within("the browser to die with the relay", async {
        while !processes_mentioning(&needle).is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        tokio::net::TcpStream::connect(format!("127.0.0.1:{devtools_port}"))
            .await
            .is_err(),
        "the browser's DevTools port still answers"
    );
    assert_eq!(scratch.profiles().len(), 1, "SIGKILL leaves the profile");
    // The next launch in the same temporary directory cleans up after the dead one.
    let next = launch(&scratch).await;
    assert_eq!(
        scratch.profiles().len(),
        1,
        "only the new relay's profile remains"
    );
    next.stop().await;
    scratch.assert_clean();
}

/// The browser runs untrusted pages: the relay's token, the object store's credentials and the
/// `--secret-env` values are in the relay's environment, never in any browser process's.
#[tokio::test]
async fn the_browser_inherits_no_credentials() {
    let scratch = Scratch::new();
    let planted = [
        ("AWS_SECRET_ACCESS_KEY", "planted-aws-secret-7Qx9"),
        ("AWS_ACCESS_KEY_ID", "AKIAPLANTED7QX9ZZZZ"),
        ("AWS_SESSION_TOKEN", "planted-session-token-7Qx9"),
        ("CDP_RELAY_TOKEN", "planted-relay-token-7Qx9"),
        ("MY_PIN_CODE", "planted-pin-7Qx9"),
    ];
    let mut env: Vec<(&str, &std::ffi::OsStr)> = planted
        .iter()
        .map(|(k, v)| (*k, std::ffi::OsStr::new(v)))
        .collect();
    env.push(("TMPDIR", scratch.path().as_os_str()));
    let relay = RelayProcess::spawn(
        &[
            "launch",
            "--listen",
            "127.0.0.1:0",
            "--secret-env",
            "MY_PIN_CODE",
        ],
        &env,
    )
    .await;
    let environ = |pid: u32| {
        String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default())
            .into_owned()
    };
    // The plant reached the relay, so a browser that inherited it would show it.
    let own = environ(relay.pid());
    assert!(
        own.contains("planted-aws-secret-7Qx9"),
        "the plant did not take"
    );
    let browsers = processes_mentioning(&scratch.path().to_string_lossy());
    assert!(!browsers.is_empty());
    // Helpers overwrite their environment block with their title, so only some show one.
    let mut with_path = 0;
    for pid in browsers {
        let env = environ(pid);
        for (name, value) in planted {
            assert!(!env.contains(value), "browser process {pid} holds {name}");
        }
        with_path += usize::from(env.contains("PATH="));
    }
    assert!(with_path > 0, "the browser keeps what it needs (PATH)");
    relay.stop().await;
    scratch.assert_clean();
}

/// The README's fixed-port example: Chromium writes no `DevToolsActivePort` for a fixed
/// `--remote-debugging-port`, and the launcher still finds the port at once (a free port picked
/// here rather than 9222, so the test does not depend on what else runs).
#[tokio::test]
async fn a_fixed_remote_debugging_port_after_the_double_dash_works() {
    let scratch = Scratch::new();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let switch = format!("--remote-debugging-port={port}");
    let started = std::time::Instant::now();
    let relay = RelayProcess::spawn(
        &["launch", "--listen", "127.0.0.1:0", "--", &switch],
        &[("TMPDIR", scratch.path().as_os_str())],
    )
    .await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the port was found by the timeout, not by the launcher: {:?}",
        started.elapsed()
    );
    // The browser listens on the port asked for, and the relay relays it.
    let direct = get(&format!("127.0.0.1:{port}"), "/json/version")
        .await
        .json();
    assert!(direct["webSocketDebuggerUrl"].is_string(), "{direct}");
    let page_ws = cdp_relay_tests::page_ws(&relay.authority()).await;
    let mut page = Cdp::connect(&page_ws).await;
    let r = page
        .call("Runtime.evaluate", json!({"expression": "6 * 7"}))
        .await;
    assert_eq!(r["result"]["value"], 42);
    relay.stop().await;
    scratch.assert_clean();
}

/// A stand-in browser: a shell script `body` in a directory anyone may use.
fn fake_browser(body: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let exe = dir.path().join("chromium");
    std::fs::write(&exe, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, exe)
}

/// Chromium's "No usable sandbox!" (a container refusing user namespaces) is one line saying
/// what to do, not a bare exit status.
#[tokio::test]
async fn no_usable_sandbox_says_what_to_do_in_one_line() {
    let (_dir, exe) = fake_browser(
        "echo '[1:1:1203/101010.000:FATAL:zygote_host_impl_linux.cc(128)] No usable sandbox! If you are running on Ubuntu 23.10+ ...' >&2\nexit 1",
    );
    let scratch = Scratch::new();
    let out = within(
        "launch a browser without a sandbox",
        tokio::process::Command::new(relay_binary())
            .args(["launch", "--listen", "127.0.0.1:0", "--browser"])
            .arg(&exe)
            .env("TMPDIR", scratch.path())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("sandbox cannot start here"), "{stderr}");
    assert!(stderr.contains("--browser-no-sandbox"), "{stderr}");
    scratch.assert_clean();
}

/// As the image's non-root user, `--browser-no-sandbox` (or its variable, which the image sets)
/// is what turns the sandbox off; without it the browser keeps its sandbox.
#[tokio::test]
async fn the_no_sandbox_switch_reaches_the_browser_as_a_non_root_user() {
    let (dir, exe) = fake_browser("printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args\"\nexit 1");
    let args_file = dir.path().join("args");
    for (env, want) in [(None, false), (Some("true"), true)] {
        let _ = std::fs::remove_file(&args_file);
        let mut cmd = tokio::process::Command::new("setpriv");
        cmd.args(["--reuid=10001", "--regid=10001", "--clear-groups"])
            .arg(relay_binary())
            .args([
                "launch",
                "--no-evidence",
                "--listen",
                "127.0.0.1:0",
                "--browser",
            ])
            .arg(&exe)
            .env("TMPDIR", dir.path())
            .env_remove("CDP_RELAY_BROWSER_NO_SANDBOX")
            .kill_on_drop(true);
        if let Some(v) = env {
            cmd.env("CDP_RELAY_BROWSER_NO_SANDBOX", v);
        }
        let out = within("launch as uid 10001", cmd.output())
            .await
            .expect("run");
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let args = std::fs::read_to_string(&args_file).expect("the browser ran");
        assert_eq!(
            args.lines().any(|a| a == "--no-sandbox"),
            want,
            "{env:?}: {args}"
        );
    }
}
