//! The access policy (docs/security.md, *Access to the browser*): Chrome's own Host and Origin
//! rules plus the relay's bearer token.
//!
//! Pure decisions over request headers; the server turns a [`Rejection`] into a response.

use crate::ListenPolicy;
use hyper::header::{HeaderMap, AUTHORIZATION, HOST, ORIGIN};
use hyper::http::uri::Authority;
use hyper::StatusCode;
use std::net::{IpAddr, SocketAddr};

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

/// Accepts an IP literal, `localhost`, `*.localhost` (any port) or an allowed name. Stops DNS
/// rebinding. Like Chromium, two Host headers are refused (Chromium joins them into one value
/// that is no host) and an empty one counts as absent.
pub(crate) fn check_host(
    headers: &HeaderMap,
    policy: &ListenPolicy,
) -> Result<ClientAuthority, Rejection> {
    let reject = || Rejection {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        body: BAD_HOST.to_owned(),
    };
    let mut values = headers.get_all(HOST).iter();
    let Some(raw) = values.next() else {
        return Ok(ClientAuthority(None));
    };
    if values.next().is_some() {
        return Err(reject());
    }
    let value = raw.to_str().map_err(|_| reject())?.trim();
    if value.is_empty() {
        return Ok(ClientAuthority(None));
    }
    let host = host_of_authority(value).ok_or_else(reject)?;
    if host_is_allowed(&host, &policy.allow_hosts) {
        Ok(ClientAuthority(Some(value.to_owned())))
    } else {
        Err(reject())
    }
}

/// The host of `host[:port]` / `[v6][:port]` (brackets removed); `None` if malformed or
/// carrying userinfo.
fn host_of_authority(authority: &str) -> Option<String> {
    let parsed: Authority = authority.parse().ok()?;
    let host = parsed.host();
    // `Authority` takes userinfo and lets any port text through; a Host header has neither.
    let after_host = authority.strip_prefix(host)?;
    if !after_host.is_empty() {
        after_host.strip_prefix(':')?.parse::<u16>().ok()?;
    }
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    (!host.is_empty()).then(|| host.to_owned())
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

/// A query parameter's name, decoded exactly as the token lookup decodes it, so what was
/// accepted as `token` is what gets stripped, however it was spelled (`%74oken`, `t%6Fken`).
fn param_name(piece: &str) -> Option<std::borrow::Cow<'_, str>> {
    url::form_urlencoded::parse(piece.as_bytes())
        .next()
        .map(|(name, _)| name)
}

fn query_token(query: Option<&str>) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
}

/// Removes every `token` parameter, in any spelling of its name, so the credential never
/// travels upstream. Other parameters pass byte for byte. `None` if nothing is left.
pub(crate) fn strip_token_param(query: Option<&str>) -> Option<String> {
    let query = query?;
    let is_token = |piece: &&str| param_name(piece).is_some_and(|n| n == "token");
    if !query.split('&').any(|p| is_token(&p)) {
        return Some(query.to_owned());
    }
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !is_token(p))
        .collect();
    (!kept.is_empty()).then(|| kept.join("&"))
}

/// Websocket Origin rule, as Chromium applies it: absent is fine; present must be listed with
/// `--allow-origin` (compared exactly, letter case aside: no trimming, no trailing `/`), or be
/// the relay's own origin (`http://<address the client connected to>`, as Chromium allows its own
/// bundled DevTools frontend). Two Origin headers are one value no list contains.
pub(crate) fn check_origin(
    headers: &HeaderMap,
    policy: &ListenPolicy,
    local: SocketAddr,
) -> Result<(), Rejection> {
    let mut values = headers.get_all(ORIGIN).iter();
    let Some(first) = values.next() else {
        return Ok(());
    };
    let mut origin = String::from_utf8_lossy(first.as_bytes()).into_owned();
    let single = values.next().is_none();
    for more in headers.get_all(ORIGIN).iter().skip(1) {
        origin.push(',');
        origin.push_str(&String::from_utf8_lossy(more.as_bytes()));
    }
    if policy.origins.allows(&origin) || (single && is_own_origin(&origin, local)) {
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

/// Why [`admit`] refused a request: the status and one-line body to answer with, and which
/// rule refused it (`host`, `token` or `origin`), for the caller's log and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP status to answer with.
    pub status: StatusCode,
    /// The one-line body (never the token).
    pub body: String,
    /// `host`, `token` or `origin`.
    pub rule: &'static str,
}

/// The relay's access rules for another HTTP endpoint of the same process (the MCP gateway's
/// `/mcp`): the Host rule, the token as `Authorization: Bearer` only (no `?token=`), and the
/// Origin rule (absent, listed with `--allow-origin`, or the endpoint's own). The same code as
/// the relay's own endpoints, so there is one implementation of each rule.
pub fn admit(headers: &HeaderMap, policy: &ListenPolicy, local: SocketAddr) -> Result<(), Refusal> {
    let refuse = |rule| {
        move |r: Rejection| Refusal {
            status: r.status,
            body: r.body,
            rule,
        }
    };
    check_host(headers, policy).map_err(refuse("host"))?;
    check_token(headers, None, policy).map_err(refuse("token"))?;
    check_origin(headers, policy, local).map_err(refuse("origin"))?;
    Ok(())
}

/// True when `origin` is `http://` + the address the client reached the relay on (parsed like a
/// browser parses it: `http://0x7f.1:9223/` is `http://127.0.0.1:9223`).
fn is_own_origin(origin: &str, local: SocketAddr) -> bool {
    let Ok(url) = url::Url::parse(origin.trim()) else {
        return false;
    };
    let host_matches = match (url.host(), local.ip()) {
        (Some(url::Host::Ipv4(a)), IpAddr::V4(b)) => a == b,
        (Some(url::Host::Ipv6(a)), IpAddr::V6(b)) => a == b,
        _ => false,
    };
    url.scheme() == "http" && host_matches && url.port_or_known_default() == Some(local.port())
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
            "127.0.0.1,evil.com",
        ] {
            let e = check_host(&headers(&[(HOST, bad)]), &p).unwrap_err();
            assert_eq!(e.status, StatusCode::INTERNAL_SERVER_ERROR, "{bad}");
            assert_eq!(e.body, BAD_HOST);
        }
        assert_eq!(check_host(&HeaderMap::new(), &p), Ok(ClientAuthority(None)));
        // Chromium reads an empty Host as none, and refuses two (it joins them).
        assert_eq!(
            check_host(&headers(&[(HOST, "")]), &p),
            Ok(ClientAuthority(None))
        );
        let mut two = headers(&[(HOST, "127.0.0.1")]);
        two.append(HOST, HeaderValue::from_static("evil.com"));
        assert_eq!(
            check_host(&two, &p).unwrap_err().status,
            StatusCode::INTERNAL_SERVER_ERROR
        );
        let mut same = headers(&[(HOST, "127.0.0.1")]);
        same.append(HOST, HeaderValue::from_static("127.0.0.1"));
        assert!(check_host(&same, &p).is_err());
    }

    #[test]
    fn admit_applies_host_then_bearer_only_then_origin() {
        let local: SocketAddr = "10.0.0.5:8080".parse().unwrap();
        let p = policy(&[], &[], Some("s3cret"));
        let mut h = HeaderMap::new();
        h.insert(HOST, HeaderValue::from_static("10.0.0.5:8080"));
        assert_eq!(admit(&h, &p, local).unwrap_err().rule, "token", "no token");
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer wrong"));
        assert_eq!(
            admit(&h, &p, local).unwrap_err().rule,
            "token",
            "wrong token"
        );
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer s3cret"));
        assert!(admit(&h, &p, local).is_ok());
        h.insert(ORIGIN, HeaderValue::from_static("http://evil.example"));
        let r = admit(&h, &p, local).unwrap_err();
        assert_eq!((r.rule, r.status), ("origin", StatusCode::FORBIDDEN));
        h.insert(ORIGIN, HeaderValue::from_static("http://10.0.0.5:8080"));
        assert!(admit(&h, &p, local).is_ok(), "its own origin");
        h.insert(HOST, HeaderValue::from_static("rebound.example"));
        assert_eq!(
            admit(&h, &p, local).unwrap_err().rule,
            "host",
            "DNS rebinding"
        );
        assert!(!admit(&h, &p, local).unwrap_err().body.contains("s3cret"));
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

    /// Every spelling of the name that the token lookup accepts is stripped.
    #[test]
    fn every_accepted_spelling_of_token_is_stripped() {
        let p = policy(&[], &[], Some("s3cret"));
        let names = [
            "token",
            "%74oken",
            "t%6Fken",
            "to%6Ben",
            "toke%6E",
            "%74%6F%6B%65%6E",
            "%74%6f%6b%65%6e",
        ];
        for name in names {
            let q = format!("a=1&{name}=s3cret&b=%2F");
            assert_eq!(
                check_token(&HeaderMap::new(), Some(&q), &p),
                Ok(TokenVia::Query),
                "{name} is accepted"
            );
            let stripped = strip_token_param(Some(&q)).unwrap_or_default();
            assert!(!stripped.contains("s3cret"), "{name}: {stripped}");
            assert_eq!(stripped, "a=1&b=%2F", "others pass as they were");
        }
        // Names that do not decode to `token` are not accepted, and so not ours to strip.
        for other in ["%2574oken", "Token", "token%00", "+token"] {
            let q = format!("{other}=s3cret");
            assert!(
                check_token(&HeaderMap::new(), Some(&q), &p).is_err(),
                "{other}"
            );
            assert_eq!(strip_token_param(Some(&q)).as_deref(), Some(q.as_str()));
        }
    }

    #[test]
    fn origin_rules() {
        let local: SocketAddr = "127.0.0.1:9223".parse().unwrap();
        let p = policy(&[], &["http://allowed.test"], None);
        let check = |values: &[&str]| {
            let mut h = HeaderMap::new();
            for v in values {
                h.append(ORIGIN, HeaderValue::from_str(v).unwrap());
            }
            check_origin(&h, &p, local)
        };
        assert!(check(&[]).is_ok());
        assert!(check(&["http://allowed.test"]).is_ok());
        assert!(
            check(&["HTTP://ALLOWED.TEST"]).is_ok(),
            "letter case aside, as Chromium"
        );
        // Chromium compares exactly: these get 403 there, so here too.
        for bad in [
            &["http://allowed.test/"][..],
            &["http://allowed.test///"],
            &["http://allowed.test", "http://evil.test"],
            &["http://allowed.test", "http://allowed.test"],
            &["http://evil.test"],
            &["null"],
        ] {
            let e = check(bad).unwrap_err();
            assert_eq!(e.status, StatusCode::FORBIDDEN, "{bad:?}");
            assert!(e.body.contains("--allow-origin"), "{}", e.body);
        }
        // The relay's own origin, as Chromium allows its bundled frontend.
        for own in [
            "http://127.0.0.1:9223",
            "http://127.0.0.1:9223/",
            "http://127.0.0.1:9223/devtools/inspector.html",
            "http://0x7f.1:9223",
        ] {
            assert!(check(&[own]).is_ok(), "{own}");
        }
        for other in [
            "https://127.0.0.1:9223",
            "http://127.0.0.1:9224",
            "http://127.0.0.1",
            "http://localhost:9223",
            "ws://127.0.0.1:9223",
        ] {
            assert!(check(&[other]).is_err(), "{other}");
        }
        let any = policy(&[], &["*"], None);
        let mut h = HeaderMap::new();
        h.insert(ORIGIN, HeaderValue::from_static("http://evil.test"));
        assert!(check_origin(&h, &any, local).is_ok());
    }
}
