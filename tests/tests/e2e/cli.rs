//! The `cdp-relay` binary's contract: exactly one stdout line (the endpoint), logs on stderr,
//! and errors a user can hit as one line with a non-zero exit (64 for usage errors).

use cdp_relay_tests::fake::{FakeUpstream, HttpMode, Script};
use cdp_relay_tests::http::get;
use cdp_relay_tests::{relay_binary, within, Chromium, RelayProcess};
use nix::sys::signal::Signal;

async fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = within(
        "cdp-relay",
        tokio::process::Command::new(relay_binary())
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run cdp-relay");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_one_line_error(stderr: &str, needle: &str) {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got:\n{stderr}");
    assert!(lines[0].starts_with("cdp-relay: "), "{stderr}");
    assert!(lines[0].contains(needle), "{needle:?} not in {stderr}");
}

#[tokio::test]
async fn usage_errors_exit_64_with_one_line() {
    for (args, needle) in [
        (vec!["serve", "--bogus"], "--bogus"),
        (vec!["serve"], "--upstream"),
        (vec!["serve", "--upstream", "x::"], "--upstream"),
        (
            vec!["serve", "--upstream", "https://127.0.0.1:9222"],
            "http://",
        ),
        (
            vec![
                "serve",
                "--upstream",
                "http://127.0.0.1:1",
                "--listen",
                "nope",
            ],
            "--listen",
        ),
        (
            vec![
                "serve",
                "--upstream",
                "http://127.0.0.1:1",
                "--listen",
                "0.0.0.0:0",
            ],
            "--token",
        ),
        (
            vec![
                "serve",
                "--upstream",
                "http://127.0.0.1:1",
                "--allow-origin",
                "example.com",
            ],
            "--allow-origin",
        ),
        (
            vec![
                "serve",
                "--upstream",
                "http://127.0.0.1:1",
                "--max-message-size",
                "10",
            ],
            "--max-message-size",
        ),
        (vec!["launch", "--listen", "::"], "--listen"),
        (vec!["frobnicate"], "frobnicate"),
    ] {
        let (code, stdout, stderr) = run(&args).await;
        assert_eq!(code, Some(64), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?} wrote to stdout: {stdout}");
        assert_one_line_error(&stderr, needle);
    }
    // A capability URL pasted in the wrong place is not echoed back with its id.
    let id = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";
    let pasted = format!("ws://127.0.0.1:9222/devtools/page/{id}");
    let (code, _, stderr) = run(&["serve", &pasted]).await;
    assert_eq!(code, Some(64), "{stderr}");
    assert_one_line_error(&stderr, "unexpected argument");
    assert!(!stderr.contains(id), "{stderr}");

    let (code, stdout, _) = run(&["--help"]).await;
    assert_eq!(code, Some(0));
    assert!(stdout.contains("launch") && stdout.contains("serve"));
    let (code, stdout, _) = run(&["--version"]).await;
    assert_eq!(code, Some(0));
    assert!(stdout.starts_with("cdp-relay "));
}

#[tokio::test]
async fn upstream_problems_are_one_line() {
    // Nothing listening.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let up = format!("http://127.0.0.1:{port}");
    let (code, stdout, stderr) =
        run(&["serve", "--upstream", &up, "--listen", "127.0.0.1:0"]).await;
    assert_eq!(code, Some(1));
    assert!(stdout.is_empty());
    assert_one_line_error(&stderr, "cannot reach the browser");

    // Something that is not a DevTools endpoint.
    for mode in [HttpMode::NotDevTools, HttpMode::Garbage] {
        let fake = FakeUpstream::start(mode, Script::Echo).await;
        let (code, stdout, stderr) = run(&[
            "serve",
            "--upstream",
            &fake.http(),
            "--listen",
            "127.0.0.1:0",
        ])
        .await;
        assert_eq!(code, Some(1), "{mode:?}: {stderr}");
        assert!(stdout.is_empty());
        assert_one_line_error(&stderr, "not a usable DevTools endpoint");
    }
}

#[tokio::test]
async fn port_in_use_is_one_line() {
    let fake = FakeUpstream::start(HttpMode::DevTools, Script::Echo).await;
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = busy.local_addr().expect("addr").to_string();
    let (code, stdout, stderr) =
        run(&["serve", "--upstream", &fake.http(), "--listen", &addr]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.is_empty());
    assert_one_line_error(&stderr, "cannot listen on");
}

#[tokio::test]
async fn serve_prints_exactly_the_endpoint_and_stops_on_signals() {
    let chrome = Chromium::start().await;
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let relay = RelayProcess::serve(&chrome.http(), &[]).await;
        assert!(
            relay.endpoint.starts_with("http://127.0.0.1:"),
            "{}",
            relay.endpoint
        );
        assert_ne!(relay.endpoint, "http://127.0.0.1:0");
        let v = get(&relay.authority(), "/json/version").await.json();
        assert!(v["webSocketDebuggerUrl"]
            .as_str()
            .is_some_and(|u| u.starts_with(&format!("ws://{}/", relay.authority()))));
        relay.signal(signal);
        let (code, rest, stderr) = relay.finish().await;
        assert_eq!(code, Some(0), "{signal:?}: {stderr}");
        assert!(
            rest.is_empty(),
            "stdout must hold only the endpoint, also got: {rest}"
        );
        // Logs never carry capability ids.
        let browser_id = v["webSocketDebuggerUrl"]
            .as_str()
            .and_then(|u| u.rsplit('/').next())
            .unwrap_or("?")
            .to_owned();
        assert!(!stderr.contains(&browser_id), "{stderr}");
    }
}
