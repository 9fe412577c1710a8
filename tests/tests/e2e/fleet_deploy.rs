//! The recipe in `deploy/` says what the binary accepts: the Containerfile's ENTRYPOINT and CMD,
//! and the StatefulSet's args on top of them, are parsed and handed to the `cdp-relay` under
//! test (with `--help`, which clap answers only once every flag before it parsed); every
//! `CDP_RELAY_*` variable they set is one the binary reads; the probes and the health check name
//! the relay's probe paths; and the image's command refuses to start without a token.
//! (The manifests are validated against the Kubernetes schemas by `scripts/test.sh`.)

use cdp_relay_tests::relay_binary;
use std::path::PathBuf;
use std::process::Command;

fn deploy(path: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The JSON array after `INSTRUCTION ` (exec form), with line continuations joined.
fn exec_form(containerfile: &str, instruction: &str) -> Vec<String> {
    let joined = containerfile.replace("\\\n", " ");
    let line = joined
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{instruction} ")))
        .unwrap_or_else(|| panic!("no {instruction} in the Containerfile"));
    let rest = line.trim_start()[instruction.len()..].trim();
    serde_json::from_str(rest)
        .unwrap_or_else(|e| panic!("{instruction} is not exec form ({e}): {rest}"))
}

fn help(args: &[String]) -> (bool, String) {
    let out = Command::new(relay_binary())
        .args(args)
        .arg("--help")
        .output()
        .expect("run cdp-relay");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `CDP_RELAY_*` names in a text.
fn relay_env_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .split(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
        .filter(|w| w.starts_with("CDP_RELAY_") && w.len() > "CDP_RELAY_".len())
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `launch --help` names the variable: as a flag's `[env: NAME=]`, or as `$NAME` in a default.
fn reads(help: &str, name: &str) -> bool {
    help.contains(&format!("[env: {name}")) || help.contains(&format!("${name}"))
}

/// The relay's command line in the image, after the init that runs it as PID 1.
fn image_command() -> Vec<String> {
    let cf = deploy("Containerfile");
    let mut cmd = exec_form(&cf, "ENTRYPOINT");
    cmd.extend(exec_form(&cf, "CMD"));
    let relay = cmd
        .iter()
        .position(|a| a == "cdp-relay")
        .expect("cdp-relay in the entrypoint");
    cmd.split_off(relay)
}

/// PID 1 is an init that reaps orphans (Chromium's crashpad handlers end up reparented to it),
/// not the relay.
#[test]
fn the_image_runs_the_relay_under_an_init() {
    let cf = deploy("Containerfile");
    let entry = exec_form(&cf, "ENTRYPOINT");
    assert_eq!(entry[..2], ["/usr/bin/tini", "--"], "{entry:?}");
    assert!(cf.contains(" tini"), "the init is installed");
}

/// The evidence volume holds what retention keeps at full budgets: 20 finalized runs and the
/// one recording, each a full journal, full artifacts and a report with its frames embedded.
#[test]
fn the_evidence_volume_is_sized_from_the_budgets() {
    let sts = deploy("kubernetes/statefulset.yaml");
    let lines: Vec<&str> = sts.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == "- name: evidence" && !l.contains("mountPath"))
        .and_then(|i| {
            lines[i..]
                .iter()
                .find(|l| l.trim().starts_with("sizeLimit:"))
                .copied()
        })
        .expect("the evidence volume's sizeLimit");
    let limit = at.trim().trim_start_matches("sizeLimit:").trim();
    let gib: u64 = limit
        .strip_suffix("Gi")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("sizeLimit in Gi: {limit}"));
    let report = cdp_report::Options::default().max_embedded_bytes * 4 / 3 + (4 << 20);
    let run = cdp_evidence::DEFAULT_JOURNAL_BUDGET_BYTES
        + cdp_evidence::DEFAULT_ARTIFACT_BUDGET_BYTES
        + report;
    let need = (cdp_evidence::DEFAULT_KEEP_FINALIZED_RUNS as u64 + 1) * run;
    assert!(
        gib << 30 >= need,
        "{gib} GiB < {} MiB needed at full budgets",
        need >> 20
    );
}

#[test]
fn the_containerfile_runs_launch_with_flags_the_binary_accepts() {
    let cf = deploy("Containerfile");
    let cmd = image_command();
    assert_eq!(cmd[0], "cdp-relay", "{cmd:?}");
    assert_eq!(cmd[1], "launch", "{cmd:?}");
    let listen = cmd.iter().position(|a| a == "--listen").expect("--listen");
    assert!(cmd[listen + 1].starts_with("0.0.0.0:"), "{cmd:?}");
    assert!(!cmd.iter().any(|a| a == "--insecure-no-auth"), "{cmd:?}");
    let (ok, text) = help(&cmd[1..]);
    assert!(ok, "the image's command is refused: {text}");
    assert!(text.contains("Usage: cdp-relay launch"), "{text}");
    // Every variable the image sets is one `launch` reads.
    for name in relay_env_names(&cf) {
        assert!(reads(&text, &name), "{name} is not read by launch:\n{text}");
    }
    assert!(
        cf.contains("/relay/v1/ready"),
        "the health check asks the readiness probe"
    );
    assert!(cf.contains(&format!(
        "EXPOSE {}",
        cmd[listen + 1].rsplit(':').next().unwrap()
    )));
}

#[test]
fn the_image_command_refuses_to_start_without_a_token() {
    let cmd = image_command();
    let out = Command::new(relay_binary())
        .args(&cmd[1..])
        .env_remove("CDP_RELAY_TOKEN")
        .env_remove("CDP_RELAY_TOKEN_FILE")
        .env_remove("CDP_RELAY_EVIDENCE_UPLOAD")
        .output()
        .expect("run cdp-relay");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{stderr}");
    assert!(
        stderr.contains("without authentication") && stderr.contains("--token"),
        "{stderr}"
    );
}

#[test]
fn the_statefulset_adds_flags_and_variables_the_binary_accepts() {
    let sts = deploy("kubernetes/statefulset.yaml");
    let secrets = deploy("kubernetes/secrets.example.yaml");
    let args_line = sts
        .lines()
        .find_map(|l| l.trim().strip_prefix("args:"))
        .expect("container args");
    let args: Vec<String> =
        serde_json::from_str(args_line.trim()).expect("args as a flow sequence");
    let mut cmd = image_command();
    // Kubernetes expands $(POD_NAME) from the pod's name.
    cmd.extend(args.iter().map(|a| a.replace("$(POD_NAME)", "cdp-relay-0")));
    let (ok, text) = help(&cmd[1..]);
    assert!(ok, "the pod's command is refused: {text}");
    for name in relay_env_names(&sts)
        .into_iter()
        .chain(relay_env_names(&secrets))
    {
        assert!(reads(&text, &name), "{name} is not read by launch:\n{text}");
    }
    for path in ["/relay/v1/ready", "/relay/v1/live"] {
        assert!(sts.contains(&format!("path: {path}")), "{path} probe");
    }
    // The pod's grace outlasts the relay's own.
    let grace: u64 = sts
        .lines()
        .find_map(|l| l.trim().strip_prefix("terminationGracePeriodSeconds:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("terminationGracePeriodSeconds");
    let relay_grace: u64 = cmd
        .iter()
        .position(|a| a == "--shutdown-grace")
        .and_then(|i| cmd[i + 1].parse().ok())
        .expect("--shutdown-grace");
    assert!(grace > relay_grace, "{grace} <= {relay_grace}");
    // The token comes from a file the Secret mounts.
    assert!(sts.contains("CDP_RELAY_TOKEN_FILE") && sts.contains("secretName: cdp-relay-token"));
}
