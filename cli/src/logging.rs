//! Logging to stderr through `tracing`. stdout is reserved for what the CLI promises.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event (colored on a terminal).
    Text,
    /// One JSON object per line (`timestamp`, `level`, `fields.message`, …) for log collectors.
    Json,
}

/// The format [`init`] installed, for lines written outside `tracing` ([`fatal`]).
static FORMAT: std::sync::OnceLock<LogFormat> = std::sync::OnceLock::new();

/// Writes the one line a failed command ends with (`line` is already one sanitized line):
/// plain `cdp-relay: …` text, or under `--log-format json` one JSON object shaped like every
/// other log line, so a log collector sees the fatal error as an error.
pub fn fatal(line: &str) {
    let json = match FORMAT.get() {
        Some(f) => *f == LogFormat::Json,
        // A usage error comes before logging is set up: the flag or variable may still say so.
        None => json_requested(std::env::args(), std::env::var("CDP_RELAY_LOG_FORMAT").ok()),
    };
    eprintln!("{}", render_fatal(line, json));
}

fn render_fatal(line: &str, json: bool) -> String {
    if !json {
        return format!("cdp-relay: {line}");
    }
    serde_json::json!({
        "timestamp": cdp_evidence::time::format_rfc3339_millis(std::time::SystemTime::now()),
        "level": "ERROR",
        "fields": {"message": format!("cdp-relay: {line}")},
    })
    .to_string()
}

/// `--log-format json` / `--log-format=json` among the arguments (the last one wins), else
/// `CDP_RELAY_LOG_FORMAT=json`.
fn json_requested(args: impl Iterator<Item = String>, env: Option<String>) -> bool {
    let mut found: Option<bool> = None;
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        if a == "--" {
            break;
        }
        if let Some(v) = a.strip_prefix("--log-format=") {
            found = Some(v == "json");
        } else if a == "--log-format" {
            found = args.peek().map(|v| v == "json");
        }
    }
    found.unwrap_or_else(|| env.as_deref() == Some("json"))
}

/// Replaces the default panic message: a panic's message can quote whatever the code held
/// (a string sliced at a bad index is printed whole: page text, typed input), and stderr must
/// never carry those (docs/security.md, *Logs*). The thread and the place are enough to find
/// the bug; with `RUST_BACKTRACE=1` the stack follows (function names only).
pub fn hide_panic_messages() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()));
        let thread = std::thread::current();
        fatal(&panic_line(thread.name(), at.as_deref()));
        let trace = std::backtrace::Backtrace::capture();
        if trace.status() == std::backtrace::BacktraceStatus::Captured {
            eprintln!("{trace}");
        }
    }));
}

fn panic_line(thread: Option<&str>, at: Option<&str>) -> String {
    format!(
        "internal error: thread '{}' panicked at {}; its message is not shown (it may quote page text or typed input). Please report this line.",
        thread.unwrap_or("unnamed"),
        at.unwrap_or("an unknown place")
    )
}

/// Installs the stderr subscriber. `RUST_LOG` wins over `-v`.
pub fn init(verbose: u8, format: LogFormat) {
    let _ = FORMAT.set(format);
    // rmcp is silent: its own logs print whole MCP messages (tool arguments, page text).
    let default = match verbose {
        0 => "cdp_relay=info,cdp_evidence=info,rmcp=off,warn",
        1 => "cdp_relay=debug,cdp_evidence=debug,rmcp=off,info",
        // Dependencies stay at info: at trace, websocket libraries print whole frames.
        _ => "cdp_relay=trace,cdp_evidence=trace,rmcp=off,info",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_told_by_thread_and_place_never_by_message() {
        let line = panic_line(Some("cdp-relay-observer"), Some("capture/src/x.rs:12"));
        assert_eq!(
            line,
            "internal error: thread 'cdp-relay-observer' panicked at capture/src/x.rs:12; its message is not shown (it may quote page text or typed input). Please report this line."
        );
        assert!(panic_line(None, None).contains("'unnamed' panicked at an unknown place"));
    }

    #[test]
    fn fatal_lines_follow_the_log_format() {
        assert_eq!(render_fatal("no browser", false), "cdp-relay: no browser");
        let line = render_fatal("no \"browser\"\nfound", true);
        assert_eq!(line.lines().count(), 1, "{line}");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["level"], "ERROR");
        assert_eq!(v["fields"]["message"], "cdp-relay: no \"browser\"\nfound");
        assert!(v["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
        let args = |a: &[&str]| {
            a.iter()
                .map(|s| (*s).to_owned())
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert!(json_requested(
            args(&["cdp-relay", "--log-format", "json", "x"]),
            None
        ));
        assert!(json_requested(
            args(&["cdp-relay", "--log-format=json"]),
            None
        ));
        assert!(!json_requested(
            args(&["cdp-relay", "--log-format=text"]),
            Some("json".into())
        ));
        assert!(json_requested(
            args(&["cdp-relay", "serve"]),
            Some("json".into())
        ));
        assert!(!json_requested(
            args(&["cdp-relay", "launch", "--", "--log-format=json"]),
            None
        ));
    }
}
