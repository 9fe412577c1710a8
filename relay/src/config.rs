//! Validated configuration. Built from flags by the binary, or directly by tests and embedders.

use crate::Error;
pub use cdp_capture::SecretValue;
use cdp_relay_proxy::{ListenPolicy, ProxyConfig};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Everything the relay needs to run: the proxy and the evidence it records.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the browser is, where to listen, who may connect.
    pub proxy: ProxyConfig,
    /// Evidence recording. By default, on, under `./cdp-evidence`.
    pub evidence: EvidenceSettings,
    /// How long a stopping relay may take to close sessions, finalize its run and finish
    /// uploading before it exits (what is left is uploaded at the next start). By default,
    /// 25 s: inside Kubernetes' default 30 s termination grace.
    pub shutdown_grace: Duration,
    /// Fields the relay's owner adds to `/relay/v1/status` (the MCP gateway's span counts).
    /// By default, none.
    pub status_fields: Vec<StatusField>,
}

/// A field of `/relay/v1/status` that the relay's owner keeps, read at each request.
#[derive(Clone)]
pub struct StatusField {
    /// The field's name (a camelCase word, not one of the relay's own).
    pub name: &'static str,
    /// Its value now.
    pub read: std::sync::Arc<dyn Fn() -> serde_json::Value + Send + Sync>,
}

impl fmt::Debug for StatusField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StatusField")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Default of [`Config::shutdown_grace`].
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(25);

impl Config {
    /// Validates the pieces a user supplied; evidence settings start at their defaults.
    pub fn new(
        upstream: Option<&str>,
        policy: ListenPolicy,
        max_message_size: usize,
    ) -> Result<Config, Error> {
        Ok(Config {
            proxy: ProxyConfig::new(upstream, policy, max_message_size)?,
            evidence: EvidenceSettings::default(),
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            status_fields: Vec::new(),
        })
    }
}

/// Evidence recording settings (docs/evidence-format.md).
#[derive(Debug, Clone)]
pub struct EvidenceSettings {
    /// Record evidence at all. By default, true; `--no-evidence` turns it off.
    pub enabled: bool,
    /// The evidence root. By default, `./cdp-evidence`.
    pub root: PathBuf,
    /// Join this session's active run (shared with other producers). By default, a new session.
    pub session: Option<String>,
    /// Keep screenshots as artifacts. By default, true; `--no-screenshots` turns them off (the
    /// observer's own frames too).
    pub screenshots: bool,
    /// Run the direct reader: the relay's own CDP connection to the browser (page events for
    /// clients that enable nothing, frames around failures, input types, typed-text
    /// verification). By default, false here; the CLI turns it on for `launch` and `demo`
    /// (`--no-observe` turns it off) and leaves it off for `serve` (`--observe` turns it on).
    pub observe: bool,
    /// Explicit secrets, by name, registered before anything is recorded.
    pub secrets: Vec<(String, SecretValue)>,
    /// Upload finalized runs to object storage. By default, none: runs stay local.
    pub upload: Option<UploadSettings>,
    /// Journal bytes a new run may hold (fixed in its manifest): past it only markers and
    /// lifecycle records are appended, and the run is marked truncated. By default, 32 MiB;
    /// `--journal-budget` sets it.
    pub journal_budget_bytes: u64,
    /// Told every batch the run writer writes and every run's end (the spans of `launch` and
    /// `serve` with `--otlp-endpoint`). By default, none.
    pub written: Option<std::sync::Arc<dyn cdp_capture::WriteObserver>>,
}

/// Uploading finalized runs to object storage (`--evidence-upload`; see `docs/deploy.md`).
#[derive(Clone)]
pub struct UploadSettings {
    /// Where runs go: `s3://bucket` or `s3://bucket/prefix`.
    pub url: String,
    /// Store settings by their `AWS_*` names (endpoint, region, credentials, web identity…);
    /// the CLI passes every `AWS_*` environment variable. Values never appear in `Debug`.
    pub options: Vec<(String, SecretValue)>,
    /// Upload only runs that recorded a failure; the others stay local (and are pruned as
    /// usual). By default, false.
    pub only_failed: bool,
    /// Timeout of one request to the store. By default, 30 s.
    pub request_timeout: Duration,
    /// How long the write check a relay makes at start may take. By default, 10 s.
    pub check_timeout: Duration,
    /// How long the uploader stays idle before it looks again for finalized runs not uploaded
    /// yet (finalized by another producer, or whose last attempt failed). By default, 60 s.
    pub scan_interval: Duration,
}

impl UploadSettings {
    /// Defaults for `url`, with no store settings.
    pub fn new(url: impl Into<String>) -> UploadSettings {
        UploadSettings {
            url: url.into(),
            options: Vec::new(),
            only_failed: false,
            request_timeout: Duration::from_secs(30),
            check_timeout: Duration::from_secs(10),
            scan_interval: Duration::from_secs(60),
        }
    }
}

impl fmt::Debug for UploadSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.options.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("UploadSettings")
            .field("url", &self.url)
            .field("options", &names)
            .field("only_failed", &self.only_failed)
            .field("request_timeout", &self.request_timeout)
            .field("check_timeout", &self.check_timeout)
            .field("scan_interval", &self.scan_interval)
            .finish()
    }
}

impl Default for EvidenceSettings {
    fn default() -> Self {
        EvidenceSettings {
            enabled: true,
            root: PathBuf::from(cdp_evidence::DEFAULT_ROOT),
            session: None,
            screenshots: true,
            observe: false,
            secrets: Vec::new(),
            upload: None,
            journal_budget_bytes: cdp_evidence::DEFAULT_JOURNAL_BUDGET_BYTES,
            written: None,
        }
    }
}

impl EvidenceSettings {
    /// What the capture pipeline is started with.
    pub fn capture(&self) -> cdp_capture::Settings {
        cdp_capture::Settings {
            root: self.root.clone(),
            session: self.session.clone(),
            screenshots: self.screenshots,
            observe: self.observe,
            secrets: self.secrets.clone(),
            journal_budget_bytes: self.journal_budget_bytes,
        }
    }

    /// Evidence off: the relay only forwards.
    pub fn disabled() -> EvidenceSettings {
        EvidenceSettings {
            enabled: false,
            ..EvidenceSettings::default()
        }
    }

    /// Adds an explicit secret after checking its name (`[A-Z_][A-Z0-9_]*`) and that it is not
    /// empty.
    pub fn add_secret(&mut self, name: &str, literal: String) -> Result<(), Error> {
        let valid = name
            .chars()
            .enumerate()
            .all(|(i, c)| c == '_' || c.is_ascii_uppercase() || (i > 0 && c.is_ascii_digit()));
        if name.is_empty() || !valid {
            return Err(Error::Usage(format!(
                "--secret-env {name:?}: secret names must match [A-Z_][A-Z0-9_]*"
            )));
        }
        match cdp_sanitize::Sanitizer::check_secret(name, &literal) {
            Ok(true) => {}
            Ok(false) => {
                return Err(Error::Usage(format!(
                    "--secret-env {name} names an environment variable that is unset or empty; export {name} first"
                )))
            }
            Err(e) => return Err(Error::Usage(format!("--secret-env {name}: {e}"))),
        }
        self.secrets
            .push((name.to_owned(), SecretValue::new(literal)));
        Ok(())
    }
}

/// What `launch` adds to [`Config`].
#[derive(Debug, Clone, Default)]
pub struct LaunchConfig {
    /// `--browser`, if given.
    pub browser: Option<PathBuf>,
    /// Value of `$CDP_RELAY_BROWSER`, if set (passed in, not read here, so tests stay hermetic).
    pub browser_env: Option<PathBuf>,
    /// Run with a visible window.
    pub headed: bool,
    /// Extra Chromium arguments after `--`.
    pub extra_args: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_settings() {
        let mut e = EvidenceSettings::default();
        assert!(e.add_secret("PASSWORD", "hunter2".into()).is_ok());
        assert!(e.add_secret("_X1", "v4lue".into()).is_ok());
        let short = e.add_secret("PIN", "123".into()).unwrap_err().to_string();
        assert!(
            short.contains("too short") && !short.contains("123"),
            "{short}"
        );
        for bad in ["", "password", "1X", "A-B"] {
            assert!(e.add_secret(bad, "v".into()).is_err(), "{bad}");
        }
        let err = e.add_secret("EMPTY", "  ".into()).unwrap_err().to_string();
        assert!(err.contains("unset or empty"), "{err}");
        assert!(
            !err.contains(": "),
            "reads as a name: value pair to the sanitizer: {err}"
        );
        assert_eq!(format!("{:?}", e.secrets[0].1), "SecretValue(..)");
        assert!(!format!("{e:?}").contains("hunter2"));
    }
}
