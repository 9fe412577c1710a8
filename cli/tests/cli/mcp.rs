//! `cdp-relay mcp`'s variables as a user gives them: a bad `--var-file` or `CDP_RELAY_VAR_*` is
//! a one-line usage error (exit 64) before any browser starts, and never repeats a value.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_cdp-relay");

/// Arguments, an environment variable to set, and what the error must say.
type Case<'a> = (&'a [&'a str], Option<(&'a str, &'a str)>, &'a str);

#[test]
fn bad_variables_are_one_line_usage_errors_that_never_repeat_a_value() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.env");
    std::fs::write(&bad, "PASSWORD=fine-Value\nPl4nted-Bare-Secret\n").unwrap();
    let missing = tmp.path().join("missing.env");
    let cases: [Case; 3] = [
        (
            &["mcp", "--var-file", bad.to_str().unwrap()],
            None,
            "line 2",
        ),
        (
            &["mcp", "--var-file", missing.to_str().unwrap()],
            None,
            "cannot read",
        ),
        (
            &["mcp"],
            Some(("CDP_RELAY_VAR_lower", "Pl4nted-Env-Value")),
            "CDP_RELAY_VAR_lower",
        ),
    ];
    for (args, env, words) in cases {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("CDP_RELAY_EVIDENCE_DIR", tmp.path())
            .env("CDP_RELAY_BROWSER", "/nonexistent/no-browser-needed")
            .env_remove("RUST_LOG");
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(words), "{words}: {err}");
        assert!(!err.contains("Pl4nted"), "{err}");
        assert!(out.stdout.is_empty(), "stdout is the MCP session only");
    }
}
