//! `cdp-relay sanitize` as users run it: a child process with pipes.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_cdp-relay");
const PAGE_ID: &str = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";

/// A running `cdp-relay sanitize`, killed on drop so a failing test leaves nothing behind.
struct Sanitize {
    child: Child,
}

impl Sanitize {
    fn spawn(args: &[&str], env: &[(&str, &str)]) -> Sanitize {
        let mut cmd = Command::new(BIN);
        cmd.arg("sanitize")
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        Sanitize {
            child: cmd.spawn().expect("spawn cdp-relay sanitize"),
        }
    }

    /// Feeds `input`, closes stdin, returns (status code, stdout, stderr).
    fn run(mut self, input: &[u8]) -> (i32, String, String) {
        let mut stdin = self.child.stdin.take().expect("stdin");
        let input = input.to_vec();
        let writer = thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let mut stdout = String::new();
        let mut stderr = String::new();
        self.child
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut stdout)
            .expect("read stdout");
        self.child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut stderr)
            .expect("read stderr");
        let _ = writer.join();
        let status = self.child.wait().expect("wait");
        (status.code().unwrap_or(-1), stdout, stderr)
    }
}

impl Drop for Sanitize {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads lines on a thread so a test can wait for one with a timeout instead of hanging.
fn line_reader(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[test]
fn text_is_sanitized_line_by_line_while_stdin_stays_open() {
    let mut p = Sanitize::spawn(&[], &[]);
    let mut stdin = p.child.stdin.take().expect("stdin");
    let lines = line_reader(p.child.stdout.take().expect("stdout"));
    let wait = Duration::from_secs(10);

    writeln!(stdin, "Cookie: sessionid=q7k2m9x4; theme=dark").expect("write");
    stdin.flush().expect("flush");
    assert_eq!(
        lines
            .recv_timeout(wait)
            .expect("first line before input ends"),
        "Cookie: [redacted:cookie]"
    );

    writeln!(stdin, "ws://127.0.0.1:9222/devtools/page/{PAGE_ID} opened").expect("write");
    stdin.flush().expect("flush");
    let second = lines.recv_timeout(wait).expect("second line");
    assert!(
        second.starts_with("ws://127.0.0.1:9222/devtools/page/target:")
            && second.ends_with(" opened"),
        "{second}"
    );
    assert!(!second.contains(PAGE_ID));

    write!(stdin, "password=hunter2 (no newline at the end)").expect("write");
    drop(stdin);
    assert_eq!(
        lines.recv_timeout(wait).expect("last line"),
        "password=[redacted:password] (no newline at the end)"
    );
    assert!(p.child.wait().expect("wait").success());
}

#[test]
fn private_key_blocks_spanning_lines_are_swallowed() {
    let input = "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn\nWwM1BWc8Oi8bL7kQ2CPHQnqzRGBVnB5hC\n-----END RSA PRIVATE KEY-----\nafter\n";
    let (code, out, err) = Sanitize::spawn(&[], &[]).run(input.as_bytes());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "before\n[redacted:private-key]\nafter\n");
}

#[test]
fn secret_env_replaces_values_by_name() {
    let (code, out, err) = Sanitize::spawn(
        &["--secret-env", "DB_PASSWORD", "--secret-env", "API_TOKEN"],
        &[
            ("DB_PASSWORD", "Tr0ub4dor&3"),
            ("API_TOKEN", "tok_3f9a1c77"),
        ],
    )
    .run(b"connect failed: Tr0ub4dor&3\nGET /api?key=x with tok_3f9a1c77\n");
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "connect failed: ${DB_PASSWORD}\nGET /api?key=[redacted:query-token] with ${API_TOKEN}\n"
    );
}

#[test]
fn secret_env_errors_are_usage_errors_on_one_line() {
    let (code, out, err) =
        Sanitize::spawn(&["--secret-env", "CDP_RELAY_TEST_UNSET_VAR"], &[]).run(b"x\n");
    assert_eq!(code, 64, "{err}");
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("CDP_RELAY_TEST_UNSET_VAR is not set"), "{err}");

    let (code, _, err) =
        Sanitize::spawn(&["--secret-env", "lower_case"], &[("lower_case", "v")]).run(b"");
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("[A-Z_][A-Z0-9_]*"), "{err}");
}

#[test]
fn json_mode_walks_one_big_document() {
    let har = serde_json::json!({"log": {"version": "1.2", "entries": [{
        "request": {
            "method": "GET",
            "url": "https://app.example.com/cb?code=SplxlOBeZQQYbYS6WxSbIA&state=xyz",
            "headers": [
                {"name": "Cookie", "value": "sessionid=q7k2m9x4"},
                {"name": "Accept", "value": "text/html"}
            ],
            "cookies": [{"name": "sessionid", "value": "q7k2m9x4", "path": "/"}]
        },
        "response": {"status": 302, "headers": [{"name": "Location", "value": format!("ws://127.0.0.1:9222/devtools/page/{PAGE_ID}")}]},
        "time": 12.5
    }]}});
    let pretty = serde_json::to_string_pretty(&har).expect("serializes");
    let (code, out, err) = Sanitize::spawn(&["--json"], &[]).run(pretty.as_bytes());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 1, "one document, one line: {out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON out");
    for secret in ["q7k2m9x4", "SplxlOBeZQQYbYS6WxSbIA", PAGE_ID] {
        assert!(!out.contains(secret), "{secret} survived: {out}");
    }
    let request = &v["log"]["entries"][0]["request"];
    assert_eq!(request["headers"][0]["value"], "[redacted:cookie]");
    assert_eq!(request["headers"][1]["value"], "text/html");
    assert_eq!(request["cookies"][0]["path"], "/");
    assert_eq!(v["log"]["entries"][0]["time"], 12.5);
    assert_eq!(v["log"]["entries"][0]["response"]["status"], 302);
}

#[test]
fn json_mode_reads_json_lines_and_pretty_prints_on_request() {
    let input = "{\"password\":\"hunter2\",\"n\":1}\n{\"token\":\"abc\"}\n\n[1,2]\n";
    let (code, out, err) = Sanitize::spawn(&["--json"], &[]).run(input.as_bytes());
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "{\"password\":\"[redacted:password]\",\"n\":1}\n{\"token\":\"[redacted:token]\"}\n[1,2]\n",
        "one line per document, keys in input order"
    );
    let (code, out, _) = Sanitize::spawn(&["--json", "--pretty"], &[]).run(b"{\"a\":[1]}");
    assert_eq!(code, 0);
    assert_eq!(out, "{\n  \"a\": [\n    1\n  ]\n}\n");
}

#[test]
fn invalid_json_is_one_line_without_echoing_input() {
    let (code, out, err) =
        Sanitize::spawn(&["--json"], &[]).run(b"{\"ok\":1}\n{\"password\": \"hunter2\" oops}\n");
    assert_eq!(code, 1, "{err}");
    // Documents are streamed: the one that turns out invalid is cut where the error was found.
    assert!(
        out.starts_with("{\"ok\":1}\n"),
        "documents before the error are kept: {out}"
    );
    assert!(!out.contains("hunter2"), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("invalid JSON on stdin") && err.contains("line 2"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn over_long_lines_are_cut_with_a_marker_and_no_half_secret() {
    let mut line = String::from("start Authorization: Bearer abcdef123456 ");
    while line.len() < 10_000 {
        line.push_str("filler words ");
    }
    line.push_str("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl end\nnext line\n");
    let (code, out, err) = Sanitize::spawn(&["--max-line-bytes", "5000"], &[]).run(line.as_bytes());
    assert_eq!(code, 0, "{err}");
    let mut lines = out.lines();
    let first = lines.next().expect("first line");
    assert!(
        first.starts_with("start Authorization: Bearer [redacted:authorization]"),
        "{first}"
    );
    assert!(first.contains("…[truncated "), "{first}");
    assert!(first.len() < 5_100, "cut near the cap: {}", first.len());
    assert!(!first.contains("eyJ"));
    assert_eq!(lines.next(), Some("next line"));
    let (code, _, err) = Sanitize::spawn(&["--max-line-bytes", "0"], &[]).run(b"x");
    assert_eq!(code, 64, "{err}");
}

#[test]
fn a_closed_stdout_ends_quietly_with_success() {
    let mut p = Sanitize::spawn(&[], &[]);
    let mut stdin = p.child.stdin.take().expect("stdin");
    let writer = thread::spawn(move || {
        let line = b"password=hunter2 and some more text to fill the pipe quickly\n";
        for _ in 0..200_000 {
            if stdin.write_all(line).is_err() {
                break;
            }
        }
    });
    let mut stdout = p.child.stdout.take().expect("stdout");
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).expect("some output");
    drop(stdout); // like `| head -c 64`
    let status = p.child.wait().expect("wait");
    let _ = writer.join();
    let mut err = String::new();
    p.child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "quiet: {err}");
}

/// 50 MB through the pipe, streamed: output arrives while input is still being written, no
/// planted secret survives, and the process's peak memory stays far below the input size.
#[test]
fn fifty_megabytes_stream_with_bounded_memory() {
    const TOTAL: usize = 50 * 1024 * 1024;
    let mut p = Sanitize::spawn(&[], &[]);
    let pid = p.child.id();
    let mut stdin = p.child.stdin.take().expect("stdin");
    let (progress_tx, progress_rx) = mpsc::channel::<usize>();
    let writer = thread::spawn(move || {
        let lines: [&[u8]; 4] = [
            b"GET https://shop.example.com/static/js/main.4f9a1c2e.js 200 (OK) in 12ms\n",
            b"Cookie: sessionid=q7k2m9x4; theme=dark\n",
            b"Uncaught TypeError: Cannot read properties of undefined (reading 'map')\n",
            b"ws://127.0.0.1:9222/devtools/page/8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1\n",
        ];
        let mut written = 0;
        let mut i = 0;
        while written < TOTAL {
            let line = lines[i % lines.len()];
            if stdin.write_all(line).is_err() {
                break;
            }
            written += line.len();
            i += 1;
            if i.is_multiple_of(10_000) {
                let _ = progress_tx.send(written);
            }
        }
        let _ = progress_tx.send(usize::MAX);
    });

    let stdout = p.child.stdout.take().expect("stdout");
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    let mut line = String::new();
    let mut lines = 0usize;
    let mut saw_output_before_input_ended = false;
    let mut peak_kib = 0u64;
    loop {
        line.clear();
        if reader.read_line(&mut line).expect("read") == 0 {
            break;
        }
        lines += 1;
        assert!(
            !line.contains("q7k2m9x4") && !line.contains(PAGE_ID),
            "secret survived: {line}"
        );
        if lines.is_multiple_of(50_000) {
            let input_done = progress_rx.try_iter().any(|w| w == usize::MAX);
            saw_output_before_input_ended |= !input_done;
            peak_kib = peak_kib.max(peak_rss_kib(pid).unwrap_or(0));
        }
    }
    writer.join().expect("writer");
    let status = p.child.wait().expect("wait");
    assert!(status.success());
    assert!(lines > 600_000, "{lines} lines");
    assert!(
        saw_output_before_input_ended,
        "output must stream, not wait for EOF"
    );
    if cfg!(target_os = "linux") {
        assert!(peak_kib > 0, "could not read the child's memory");
        assert!(
            peak_kib < 64 * 1024,
            "peak RSS {peak_kib} KiB for 50 MB of input"
        );
    }
}

/// A 30 MB HAR file is one JSON document: it is streamed, not loaded, so memory stays far below
/// its size; and a reader that goes away ends the command quietly in JSON mode too.
#[test]
fn a_big_har_document_streams_with_bounded_memory() {
    const ENTRIES: usize = 90_000;
    let entry = serde_json::json!({
        "request": {
            "method": "POST",
            "url": "https://api.example.com/login?token=abc123",
            "headers": [{"name": "Cookie", "value": "sessionid=q7k2m9x4"}, {"name": "Accept", "value": "*/*"}],
            "postData": {"text": "{\"password\":\"hunter2\"}"}
        },
        "response": {"status": 401, "content": {"text": "invalid credentials, please retry later"}},
        "time": 87.5
    })
    .to_string();
    let mut p = Sanitize::spawn(&["--json"], &[]);
    let pid = p.child.id();
    let mut stdin = p.child.stdin.take().expect("stdin");
    let writer = thread::spawn(move || {
        let mut doc = Vec::with_capacity(1 << 20);
        doc.extend_from_slice(b"{\"log\":{\"version\":\"1.2\",\"entries\":[");
        for i in 0..ENTRIES {
            if i > 0 {
                doc.push(b',');
            }
            doc.extend_from_slice(entry.as_bytes());
            if doc.len() > 1 << 20 {
                if stdin.write_all(&doc).is_err() {
                    return;
                }
                doc.clear();
            }
        }
        doc.extend_from_slice(b"]}}");
        let _ = stdin.write_all(&doc);
    });
    let mut stdout = p.child.stdout.take().expect("stdout");
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    let mut peak_kib = 0;
    loop {
        let n = stdout.read(&mut chunk).expect("read");
        if n == 0 {
            break;
        }
        out.extend_from_slice(&chunk[..n]);
        peak_kib = peak_kib.max(peak_rss_kib(pid).unwrap_or(0));
    }
    writer.join().expect("writer");
    assert!(p.child.wait().expect("wait").success());
    let text = String::from_utf8(out).expect("UTF-8");
    assert!(text.len() > 25_000_000, "{} bytes", text.len());
    for secret in ["q7k2m9x4", "abc123", "hunter2"] {
        assert!(!text.contains(secret), "{secret} survived");
    }
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(v["log"]["entries"].as_array().map(Vec::len), Some(ENTRIES));
    if cfg!(target_os = "linux") {
        assert!(peak_kib > 0, "could not read the child's memory");
        assert!(
            peak_kib < 64 * 1024,
            "peak RSS {peak_kib} KiB for a 30 MB document"
        );
    }

    // Closing the output early: quiet success, as in text mode.
    let mut p = Sanitize::spawn(&["--json"], &[]);
    let mut stdin = p.child.stdin.take().expect("stdin");
    let feeder = thread::spawn(move || {
        let _ = stdin.write_all(b"[");
        for _ in 0..200_000 {
            if stdin.write_all(b"{\"token\":\"abc\"},").is_err() {
                return;
            }
        }
        let _ = stdin.write_all(b"1]");
    });
    let mut stdout = p.child.stdout.take().expect("stdout");
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).expect("some output");
    drop(stdout);
    let status = p.child.wait().expect("wait");
    let _ = feeder.join();
    let mut err = String::new();
    let _ = p
        .child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err);
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "quiet: {err}");
}

/// Peak resident set size of a process (Linux `VmHWM`), in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
