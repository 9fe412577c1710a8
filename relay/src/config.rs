//! Validated configuration. Built from flags by `cli`, or directly by tests and embedders.

use crate::Error;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use url::Url;

/// Default websocket message limit each way: Chrome's own send buffer. 256 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 256 * 1024 * 1024;

/// Everything the relay needs to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The browser's DevTools HTTP endpoint. `None` for `launch`, which learns it from the browser.
    pub upstream: Option<Upstream>,
    /// Listen address and access policy.
    pub policy: ListenPolicy,
    /// Largest websocket message accepted in each direction. By default, 256 MiB.
    pub max_message_size: usize,
    /// Evidence recording. By default, on, under `./cdp-evidence`.
    pub evidence: EvidenceSettings,
}

impl Config {
    /// Validates the pieces a user supplied.
    pub fn new(
        upstream: Option<&str>,
        policy: ListenPolicy,
        max_message_size: usize,
    ) -> Result<Config, Error> {
        if max_message_size < 1024 {
            return Err(Error::Usage(format!(
                "--max-message-size {max_message_size} is too small; use at least 1024 bytes (default {DEFAULT_MAX_MESSAGE_SIZE})"
            )));
        }
        let upstream = upstream.map(Upstream::parse).transpose()?;
        Ok(Config {
            upstream,
            policy,
            max_message_size,
            evidence: EvidenceSettings::default(),
        })
    }
}

/// Where the browser's DevTools server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Host to connect to (IP literal or name).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Upstream {
    /// Accepts `http://host:port`, `ws://host:port/...` (a copied webSocketDebuggerUrl) or `host:port`.
    pub fn parse(s: &str) -> Result<Upstream, Error> {
        let bad = |why: &str| {
            Error::Usage(format!(
                "--upstream {:?} {why}; expected something like http://127.0.0.1:9222",
                without_capability_path(s)
            ))
        };
        let with_scheme = if s.contains("://") {
            s.to_owned()
        } else {
            format!("http://{s}")
        };
        let url = Url::parse(&with_scheme).map_err(|_| bad("is not a URL"))?;
        if !matches!(url.scheme(), "http" | "ws") {
            return Err(bad(
                "must use http:// or ws:// (TLS upstreams are not supported)",
            ));
        }
        let host = match url.host() {
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            Some(h) => h.to_string(),
            None => return Err(bad("has no host")),
        };
        let port = url.port().ok_or_else(|| bad("has no port"))?;
        Ok(Upstream { host, port })
    }

    /// `host:port` for connecting (IPv6 bracketed).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The Host header Chrome accepts: `127.0.0.1:<port>` (Chrome answers other names with 500).
    pub fn host_header(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// Drops a `/devtools/...` path (it carries a capability id) before echoing user input.
fn without_capability_path(s: &str) -> &str {
    s.find("/devtools/").map_or(s, |i| &s[..i])
}

/// A bearer token. Its `Debug` never prints the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Compares in constant time (for a given length).
    pub fn matches(&self, presented: &str) -> bool {
        use subtle::ConstantTimeEq;
        self.0.as_bytes().ct_eq(presented.as_bytes()).into()
    }

    /// The secret itself, for building URLs handed back to an already-authenticated client.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Which websocket Origins may connect.
#[derive(Debug, Clone, Default)]
pub struct OriginPolicy {
    /// `--allow-origin '*'` was given.
    pub any: bool,
    /// Exact origins (scheme://host[:port]), lowercased, no trailing slash.
    pub allowed: Vec<String>,
}

impl OriginPolicy {
    /// True if a present Origin header value is allowed: listed exactly (letter case aside),
    /// as Chromium compares `--remote-allow-origins`.
    pub fn allows(&self, origin: &str) -> bool {
        self.any || self.allowed.contains(&origin.to_ascii_lowercase())
    }
}

/// Listen address and the access policy of DESIGN §3.2.
#[derive(Debug, Clone)]
pub struct ListenPolicy {
    /// Address to bind. By default, 127.0.0.1:9223.
    pub listen: SocketAddr,
    /// Extra Host names accepted besides IP literals, localhost and *.localhost (lowercased).
    pub allow_hosts: Vec<String>,
    /// Websocket Origin policy. By default, only requests without an Origin are accepted.
    pub origins: OriginPolicy,
    /// Required bearer token, if any.
    pub token: Option<Token>,
}

impl ListenPolicy {
    /// Validates flags: a non-loopback listen address needs a token or `--insecure-no-auth`.
    pub fn new(
        listen: SocketAddr,
        allow_hosts: Vec<String>,
        allow_origins: Vec<String>,
        token: Option<String>,
        insecure_no_auth: bool,
    ) -> Result<ListenPolicy, Error> {
        let token = match token {
            Some(t) if t.trim().is_empty() => {
                return Err(Error::Usage(
                    "--token is empty; pass a non-empty token or leave it out".into(),
                ))
            }
            Some(t) if t.chars().any(|c| c.is_whitespace() || c.is_control()) => {
                return Err(Error::Usage(
                    "--token must not contain whitespace or control characters".into(),
                ))
            }
            Some(t) => Some(Token(t)),
            None => None,
        };
        if !listen.ip().is_loopback() && token.is_none() && !insecure_no_auth {
            return Err(Error::Usage(format!(
                "refusing to listen on non-loopback address {listen} without authentication; pass --token (or set CDP_RELAY_TOKEN), or --insecure-no-auth if the network is trusted"
            )));
        }
        let mut hosts = Vec::new();
        for h in allow_hosts {
            let h = h.trim().trim_end_matches('.').to_ascii_lowercase();
            if h.is_empty() || h.contains(['/', ' ', '@', ':']) {
                return Err(Error::Usage(format!(
                    "--allow-host {h:?} is not a host name; give a bare name like devbox.internal"
                )));
            }
            hosts.push(h);
        }
        let mut origins = OriginPolicy::default();
        for o in allow_origins {
            let o = o.trim().trim_end_matches('/').to_ascii_lowercase();
            if o == "*" {
                origins.any = true;
            } else if o.contains("://") {
                origins.allowed.push(o);
            } else {
                return Err(Error::Usage(format!(
                    "--allow-origin {o:?} is not an origin; give scheme://host[:port] or '*'"
                )));
            }
        }
        Ok(ListenPolicy {
            listen,
            allow_hosts: hosts,
            origins,
            token,
        })
    }

    /// Loopback-only, no token, no extra hosts or origins: the default.
    pub fn loopback(listen: SocketAddr) -> ListenPolicy {
        ListenPolicy {
            listen,
            allow_hosts: Vec::new(),
            origins: OriginPolicy::default(),
            token: None,
        }
    }
}

/// A secret literal. Its `Debug` never prints the value.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    /// Wraps a literal.
    pub fn new(literal: String) -> SecretValue {
        SecretValue(literal)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(..)")
    }
}

/// Evidence recording settings (DESIGN §4).
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
    /// Run the active observer: the relay's own CDP connection to the browser (page events for
    /// clients that enable nothing, frames around failures, input types, typed-text
    /// verification). By default, false here; the CLI turns it on for `launch` and `demo`
    /// (`--no-observe` turns it off) and leaves it off for `serve` (`--observe` turns it on).
    pub observe: bool,
    /// Explicit secrets, by name, registered before anything is recorded.
    pub secrets: Vec<(String, SecretValue)>,
    /// Journal bytes a new run may hold (fixed in its manifest): past it only markers and
    /// lifecycle records are appended, and the run is marked truncated. By default, 32 MiB;
    /// `--journal-budget` sets it.
    pub journal_budget_bytes: u64,
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
            journal_budget_bytes: cdp_evidence::DEFAULT_JOURNAL_BUDGET_BYTES,
        }
    }
}

impl EvidenceSettings {
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
        self.secrets.push((name.to_owned(), SecretValue(literal)));
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
    fn upstream_forms() {
        let u = Upstream::parse("http://127.0.0.1:9222").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("127.0.0.1", 9222));
        let u = Upstream::parse("localhost:9333").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("localhost", 9333));
        let u = Upstream::parse("ws://[::1]:9222/devtools/browser/abc").unwrap();
        assert_eq!(u.authority(), "[::1]:9222");
        assert_eq!(u.host_header(), "127.0.0.1:9222");
        for bad in [
            "",
            "http://",
            "https://127.0.0.1:9222",
            "http://127.0.0.1",
            "::::",
        ] {
            let e = Upstream::parse(bad).unwrap_err();
            assert!(e.is_usage(), "{bad}: {e}");
        }
    }

    #[test]
    fn upstream_error_hides_capability_id() {
        let e = Upstream::parse("wss://h:1/devtools/browser/0123456789abcdef0123456789abcdef")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("0123456789abcdef"), "{e}");
    }

    #[test]
    fn non_loopback_needs_token() {
        let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let e = ListenPolicy::new(any, vec![], vec![], None, false).unwrap_err();
        assert!(e.to_string().contains("--token"), "{e}");
        assert!(ListenPolicy::new(any, vec![], vec![], Some("s3cret".into()), false).is_ok());
        assert!(ListenPolicy::new(any, vec![], vec![], None, true).is_ok());
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert!(ListenPolicy::new(lo, vec![], vec![], None, false).is_ok());
        assert!(ListenPolicy::new(lo, vec![], vec![], Some(" ".into()), false).is_err());
    }

    #[test]
    fn token_compare_and_debug() {
        let t = Token("abc123".into());
        assert!(t.matches("abc123"));
        assert!(!t.matches("abc12"));
        assert!(!t.matches("abc1234"));
        assert!(!t.matches(""));
        assert_eq!(format!("{t:?}"), "Token(..)");
    }

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

    #[test]
    fn origins() {
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let p = ListenPolicy::new(
            lo,
            vec!["DevBox.Internal.".into()],
            vec!["http://Example.com/".into()],
            None,
            false,
        )
        .unwrap();
        assert_eq!(p.allow_hosts, vec!["devbox.internal"]);
        assert!(p.origins.allows("http://example.com"));
        assert!(!p.origins.allows("http://example.com:8080"));
        assert!(!p.origins.allows("http://evil.com"));
        assert!(ListenPolicy::new(lo, vec![], vec!["example.com".into()], None, false).is_err());
    }
}
