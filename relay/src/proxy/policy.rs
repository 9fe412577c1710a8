//! Access policy of DESIGN §3.2: Chrome's own Host and Origin rules plus the relay's bearer token.
//!
//! Pure decisions over request headers; the server turns a [`Rejection`] into a response.

use crate::config::ListenPolicy;
use hyper::header::{HeaderMap, AUTHORIZATION, HOST, ORIGIN};
use hyper::StatusCode;
use std::net::IpAddr;

/// Why a request was refused, with the status and the one-line body to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub(crate) status: StatusCode,
    pub(crate) body: String,
}

/// The authority (`host[:port]`) a client used, checked against the Host rules.
/// `None` when the request carried no Host header (HTTP/1.0), which Chrome also accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientAuthority(pub(crate) Option<String>);

/// Chrome's wording, so clients that match on it keep working.
const BAD_HOST: &str = "Host header is specified and is not an IP address or localhost.";

/// Accepts an IP literal, `localhost`, `*.localhost` (any port) or an allowed name. Stops DNS rebinding.
pub(crate) fn check_host(
    headers: &HeaderMap,
    policy: &ListenPolicy,
) -> Result<ClientAuthority, Rejection> {
    let Some(raw) = headers.get(HOST) else {
        return Ok(ClientAuthority(None));
    };
    let reject = || Rejection {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        body: BAD_HOST.to_owned(),
    };
    let value = raw.to_str().map_err(|_| reject())?.trim();
    let host = host_of_authority(value).ok_or_else(reject)?;
    if host_is_allowed(host, &policy.allow_hosts) {
        Ok(ClientAuthority(Some(value.to_owned())))
    } else {
        Err(reject())
    }
}

/// Splits `host[:port]` / `[v6][:port]`, returning the host; `None` if malformed.
fn host_of_authority(authority: &str) -> Option<&str> {
    if authority.is_empty() || authority.contains(['/', '@', ' ', '?', '#', '\\']) {
        return None;
    }
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest.find(']')?;
        let after = &rest[end + 1..];
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (&rest[..end], port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if let Some(p) = port {
        p.parse::<u16>().ok()?;
    }
    (!host.is_empty()).then_some(host)
}

fn host_is_allowed(host: &str, extra: &[String]) -> bool {
    if host.parse::<IpAddr>().is_ok() {
        return true;
    }
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost") || extra.contains(&name)
}

/// Requires the configured token as `Authorization: Bearer <t>` or `?token=<t>`.
/// Returns whether the client presented it in the query (so rewritten URLs can carry it on).
pub(crate) fn check_token(
    headers: &HeaderMap,
    query: Option<&str>,
    policy: &ListenPolicy,
) -> Result<TokenVia, Rejection> {
    let Some(token) = &policy.token else {
        return Ok(TokenVia::NotRequired);
    };
    if let Some(auth) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let mut parts = auth.trim().splitn(2, ' ');
        let scheme = parts.next().unwrap_or_default();
        let cred = parts.next().unwrap_or_default().trim();
        if scheme.eq_ignore_ascii_case("bearer") && token.matches(cred) {
            return Ok(TokenVia::Header);
        }
    }
    if query_token(query).is_some_and(|t| token.matches(&t)) {
        return Ok(TokenVia::Query);
    }
    Err(Rejection {
        status: StatusCode::UNAUTHORIZED,
        body: "cdp-relay requires a token: send Authorization: Bearer <token> or add ?token=<token> to the URL".into(),
    })
}

/// How the client authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenVia {
    /// No token is configured.
    NotRequired,
    /// `Authorization: Bearer`.
    Header,
    /// `?token=` in the URL.
    Query,
}

fn query_token(query: Option<&str>) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
}

/// Removes our `token` parameter so the credential never travels upstream. `None` if nothing is left.
pub(crate) fn strip_token_param(query: Option<&str>) -> Option<String> {
    let query = query?;
    if !query
        .split('&')
        .any(|kv| kv == "token" || kv.starts_with("token="))
    {
        return Some(query.to_owned());
    }
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| !(kv.is_empty() || *kv == "token" || kv.starts_with("token=")))
        .collect();
    (!kept.is_empty()).then(|| kept.join("&"))
}

/// Websocket Origin rule: absent is fine; present must be allowed by `--allow-origin`.
pub(crate) fn check_origin(headers: &HeaderMap, policy: &ListenPolicy) -> Result<(), Rejection> {
    let Some(origin) = headers.get(ORIGIN) else {
        return Ok(());
    };
    let origin = String::from_utf8_lossy(origin.as_bytes());
    if policy.origins.allows(&origin) {
        return Ok(());
    }
    // The origin is echoed like Chrome does, minus anything that is not printable.
    let shown: String = origin
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    Err(Rejection {
        status: StatusCode::FORBIDDEN,
        body: format!(
            "Rejected an incoming WebSocket connection from the {shown} origin. Use the command line flag --allow-origin={shown} to allow connections from this origin or --allow-origin='*' to allow all origins."
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn policy(hosts: &[&str], origins: &[&str], token: Option<&str>) -> ListenPolicy {
        ListenPolicy::new(
            "127.0.0.1:0".parse().unwrap(),
            hosts.iter().map(|s| s.to_string()).collect(),
            origins.iter().map(|s| s.to_string()).collect(),
            token.map(str::to_owned),
            false,
        )
        .unwrap()
    }

    fn headers(pairs: &[(hyper::header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn host_rules_follow_chrome() {
        let p = policy(&["devbox.internal"], &[], None);
        for ok in [
            "127.0.0.1:9223",
            "127.0.0.1",
            "10.1.2.3:80",
            "[::1]:9223",
            "[::1]",
            "localhost:9223",
            "LOCALHOST",
            "relay.localhost:1",
            "a.b.localhost.",
            "devbox.internal:9223",
        ] {
            let got = check_host(&headers(&[(HOST, ok)]), &p);
            assert_eq!(got, Ok(ClientAuthority(Some(ok.to_owned()))), "{ok}");
        }
        for bad in [
            "evil.com",
            "evil.com:9223",
            "localhost.evil.com",
            "127.0.0.1.nip.io",
            "notlocalhost",
            "127.0.0.1:99999",
            "127.0.0.1:x",
            "[::1",
            "user@127.0.0.1",
            "",
        ] {
            let e = check_host(&headers(&[(HOST, bad)]), &p).unwrap_err();
            assert_eq!(e.status, StatusCode::INTERNAL_SERVER_ERROR, "{bad}");
            assert_eq!(e.body, BAD_HOST);
        }
        assert_eq!(check_host(&HeaderMap::new(), &p), Ok(ClientAuthority(None)));
    }

    #[test]
    fn token_header_or_query() {
        let p = policy(&[], &[], Some("s3cret"));
        assert_eq!(
            check_token(&headers(&[(AUTHORIZATION, "Bearer s3cret")]), None, &p),
            Ok(TokenVia::Header)
        );
        assert_eq!(
            check_token(&headers(&[(AUTHORIZATION, "bearer  s3cret ")]), None, &p),
            Ok(TokenVia::Header)
        );
        assert_eq!(
            check_token(&HeaderMap::new(), Some("a=1&token=s3cret"), &p),
            Ok(TokenVia::Query)
        );
        for (h, q) in [
            (None, None),
            (Some("Bearer wrong"), None),
            (Some("Basic s3cret"), None),
            (None, Some("token=s3cre")),
            (None, Some("xtoken=s3cret")),
        ] {
            let hm = h.map_or_else(HeaderMap::new, |v| headers(&[(AUTHORIZATION, v)]));
            let e = check_token(&hm, q, &p).unwrap_err();
            assert_eq!(e.status, StatusCode::UNAUTHORIZED);
            assert!(!e.body.contains("s3cret"));
        }
        let open = policy(&[], &[], None);
        assert_eq!(
            check_token(&HeaderMap::new(), None, &open),
            Ok(TokenVia::NotRequired)
        );
    }

    #[test]
    fn token_param_is_stripped() {
        assert_eq!(strip_token_param(None), None);
        assert_eq!(strip_token_param(Some("token=x")), None);
        assert_eq!(
            strip_token_param(Some("a=1&token=x&b=2")).as_deref(),
            Some("a=1&b=2")
        );
        assert_eq!(
            strip_token_param(Some("url=about:blank")).as_deref(),
            Some("url=about:blank")
        );
        assert_eq!(
            strip_token_param(Some("tokens=1")).as_deref(),
            Some("tokens=1")
        );
    }

    #[test]
    fn origin_rules() {
        let p = policy(&[], &["http://allowed.test"], None);
        assert!(check_origin(&HeaderMap::new(), &p).is_ok());
        assert!(check_origin(&headers(&[(ORIGIN, "http://allowed.test")]), &p).is_ok());
        let e = check_origin(&headers(&[(ORIGIN, "http://evil.test")]), &p).unwrap_err();
        assert_eq!(e.status, StatusCode::FORBIDDEN);
        assert!(e.body.contains("--allow-origin"), "{}", e.body);
        assert!(e.body.contains("http://evil.test"));
        let any = policy(&[], &["*"], None);
        assert!(check_origin(&headers(&[(ORIGIN, "http://evil.test")]), &any).is_ok());
    }
}
