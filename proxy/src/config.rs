//! Validated proxy configuration: where the browser is, where to listen, who may connect.
//! Built from flags by the command line, or directly by tests and embedders.

use crate::Error;
use std::fmt;
use std::net::SocketAddr;
use url::Url;

/// Default websocket message limit each way: Chrome's own send buffer. 256 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 256 * 1024 * 1024;

/// Everything the proxy needs to run.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The browser's DevTools HTTP endpoint. `None` until known (`launch` learns it from the
    /// browser); [`crate::Relay::bind`] needs it set.
    pub upstream: Option<Upstream>,
    /// Listen address and access policy.
    pub policy: ListenPolicy,
    /// Largest websocket message accepted in each direction. By default, 256 MiB.
    pub max_message_size: usize,
}

impl ProxyConfig {
    /// Validates the pieces a user supplied.
    pub fn new(
        upstream: Option<&str>,
        policy: ListenPolicy,
        max_message_size: usize,
    ) -> Result<ProxyConfig, Error> {
        if max_message_size < 1024 {
            return Err(Error::Usage(format!(
                "--max-message-size {max_message_size} is too small; use at least 1024 bytes (default {DEFAULT_MAX_MESSAGE_SIZE})"
            )));
        }
        let upstream = upstream.map(Upstream::parse).transpose()?;
        Ok(ProxyConfig {
            upstream,
            policy,
            max_message_size,
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
    /// A credential to compare later with [`Token::matches`] (the MCP gateway keeps the one
    /// that created each session). Not validated: [`ListenPolicy::new`] checks a configured one.
    pub fn of(value: &str) -> Token {
        Token(value.to_owned())
    }

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

/// Listen address and the access policy (docs/security.md, "Access to the browser").
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
