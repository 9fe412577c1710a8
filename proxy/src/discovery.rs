//! HTTP discovery (docs/architecture.md, *The proxy at work*): which paths are Chrome's `/json`
//! endpoints, and rewriting the capability URLs in their answers so clients connect through the
//! relay, never around it.

use serde_json::Value;

/// Chrome's discovery endpoints whose JSON answers carry capability URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `/json/version`: the browser websocket.
    Version,
    /// `/json` and `/json/list`: every target.
    List,
    /// `/json/new`: the created target.
    New,
    /// `/json/protocol`, `/json/activate/<id>`, `/json/close/<id>`: passed through untouched.
    Passthrough,
}

/// Normalizes a request path: one trailing slash is dropped from `/json...` paths, as Playwright
/// asks for `/json/version/`. Returns the path to send upstream and the endpoint kind, or `None`
/// for paths outside `/json`.
pub(crate) fn classify(path: &str) -> Option<(String, Endpoint)> {
    if path != "/json" && !path.starts_with("/json/") {
        return None;
    }
    let trimmed = match path.strip_suffix('/') {
        Some(p) if p.len() >= "/json".len() => p,
        _ => path,
    };
    let kind = match trimmed {
        "/json" | "/json/list" => Endpoint::List,
        "/json/version" => Endpoint::Version,
        "/json/new" => Endpoint::New,
        _ => Endpoint::Passthrough,
    };
    Some((trimmed.to_owned(), kind))
}

/// What to put into rewritten URLs.
#[derive(Debug, Clone)]
pub(crate) struct Rewrite<'a> {
    /// `host[:port]` the client used to reach the relay.
    pub(crate) authority: &'a str,
    /// Appended as `?token=` to websocket URLs when the client authenticated that way.
    pub(crate) token: Option<&'a str>,
}

/// Rewrites the capability URLs in a discovery answer. Returns `None` when the body is not JSON
/// of the expected shape, in which case it is passed through unchanged.
pub(crate) fn rewrite_body(kind: Endpoint, body: &[u8], rw: &Rewrite<'_>) -> Option<Vec<u8>> {
    if matches!(kind, Endpoint::Passthrough) {
        return None;
    }
    let mut value: Value = serde_json::from_slice(body).ok()?;
    match &mut value {
        Value::Array(items) => items.iter_mut().for_each(|t| rewrite_target(t, rw)),
        Value::Object(_) => rewrite_target(&mut value, rw),
        _ => return None,
    }
    // Chrome pretty-prints with three spaces; keep its look so diffs against it stay small.
    let mut out = Vec::with_capacity(body.len() + 64);
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"   ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    serde::Serialize::serialize(&value, &mut ser).ok()?;
    Some(out)
}

fn rewrite_target(target: &mut Value, rw: &Rewrite<'_>) {
    let Some(obj) = target.as_object_mut() else {
        return;
    };
    if let Some(Value::String(s)) = obj.get_mut("webSocketDebuggerUrl") {
        if let Some(new) = rewrite_ws_url(s, rw) {
            *s = new;
        }
    }
    for key in ["devtoolsFrontendUrl", "devtoolsFrontendUrlCompat"] {
        if let Some(Value::String(s)) = obj.get_mut(key) {
            if let Some(new) = rewrite_frontend_url(s, rw.authority) {
                *s = new;
            }
        }
    }
}

/// `ws://127.0.0.1:9222/devtools/page/ID` → `ws://<relay>/devtools/page/ID[?token=..]`.
pub(crate) fn rewrite_ws_url(url: &str, rw: &Rewrite<'_>) -> Option<String> {
    let rest = url
        .strip_prefix("ws://")
        .or_else(|| url.strip_prefix("wss://"))?;
    let path = &rest[rest.find('/')?..];
    let mut out = format!("ws://{}{}", rw.authority, path);
    if let Some(token) = rw.token {
        out.push(if path.contains('?') { '&' } else { '?' });
        out.push_str("token=");
        out.extend(url::form_urlencoded::byte_serialize(token.as_bytes()));
    }
    Some(out)
}

/// Rewrites the authority inside the `ws=`/`wss=` query parameter of a DevTools frontend URL
/// (`/devtools/inspector.html?ws=127.0.0.1:9222/devtools/page/ID`). The relay speaks plain `ws`.
pub(crate) fn rewrite_frontend_url(url: &str, authority: &str) -> Option<String> {
    let q = url.find('?')?;
    let (head, query) = url.split_at(q + 1);
    let mut changed = false;
    let parts: Vec<String> = query
        .split('&')
        .map(|kv| {
            let value = kv.strip_prefix("ws=").or_else(|| kv.strip_prefix("wss="));
            match value.and_then(|v| v.find('/').map(|i| &v[i..])) {
                Some(path) => {
                    changed = true;
                    format!("ws={authority}{path}")
                }
                None => kv.to_owned(),
            }
        })
        .collect();
    changed.then(|| format!("{head}{}", parts.join("&")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";

    fn rw(authority: &str) -> Rewrite<'_> {
        Rewrite {
            authority,
            token: None,
        }
    }

    #[test]
    fn classify_with_and_without_slash() {
        for (path, want, kind) in [
            ("/json", "/json", Endpoint::List),
            ("/json/", "/json", Endpoint::List),
            ("/json/list", "/json/list", Endpoint::List),
            ("/json/list/", "/json/list", Endpoint::List),
            ("/json/version/", "/json/version", Endpoint::Version),
            ("/json/new", "/json/new", Endpoint::New),
            ("/json/new/", "/json/new", Endpoint::New),
            ("/json/protocol/", "/json/protocol", Endpoint::Passthrough),
            (
                "/json/activate/ABC/",
                "/json/activate/ABC",
                Endpoint::Passthrough,
            ),
            ("/json/close/ABC", "/json/close/ABC", Endpoint::Passthrough),
        ] {
            assert_eq!(classify(path), Some((want.to_owned(), kind)), "{path}");
        }
        assert_eq!(classify("/jsonx"), None);
        assert_eq!(classify("/devtools/page/x"), None);
    }

    #[test]
    fn ws_url() {
        let u = format!("ws://127.0.0.1:9222/devtools/page/{ID}");
        assert_eq!(
            rewrite_ws_url(&u, &rw("localhost:9300")).unwrap(),
            format!("ws://localhost:9300/devtools/page/{ID}")
        );
        let with_token = Rewrite {
            authority: "[::1]:1",
            token: Some("a b&c"),
        };
        assert_eq!(
            rewrite_ws_url(&u, &with_token).unwrap(),
            format!("ws://[::1]:1/devtools/page/{ID}?token=a+b%26c")
        );
        assert_eq!(rewrite_ws_url("http://x/y", &rw("a:1")), None);
        assert_eq!(rewrite_ws_url("ws://no-path", &rw("a:1")), None);
    }

    #[test]
    fn frontend_url() {
        let local = format!("/devtools/inspector.html?ws=127.0.0.1:9222/devtools/page/{ID}");
        assert_eq!(
            rewrite_frontend_url(&local, "127.0.0.1:9300").unwrap(),
            format!("/devtools/inspector.html?ws=127.0.0.1:9300/devtools/page/{ID}")
        );
        let hosted = format!("https://chrome-devtools-frontend.appspot.com/serve_rev/@abc/inspector.html?experiments=true&wss=127.0.0.1:9222/devtools/page/{ID}&x=1");
        assert_eq!(
            rewrite_frontend_url(&hosted, "localhost:1").unwrap(),
            format!("https://chrome-devtools-frontend.appspot.com/serve_rev/@abc/inspector.html?experiments=true&ws=localhost:1/devtools/page/{ID}&x=1")
        );
        assert_eq!(
            rewrite_frontend_url("/devtools/inspector.html", "a:1"),
            None
        );
    }

    #[test]
    fn list_body_keeps_other_fields_and_order() {
        let body = format!(
            r#"[ {{
   "description": "",
   "devtoolsFrontendUrl": "/devtools/inspector.html?ws=127.0.0.1:9222/devtools/page/{ID}",
   "id": "{ID}",
   "title": "about:blank",
   "type": "page",
   "url": "about:blank",
   "webSocketDebuggerUrl": "ws://127.0.0.1:9222/devtools/page/{ID}"
}} ]"#
        );
        let out = rewrite_body(Endpoint::List, body.as_bytes(), &rw("127.0.0.1:9300")).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(!out.contains("9222"), "{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v[0]["id"], ID);
        assert_eq!(
            v[0]["webSocketDebuggerUrl"],
            format!("ws://127.0.0.1:9300/devtools/page/{ID}")
        );
        let keys: Vec<&String> = v[0].as_object().unwrap().keys().collect();
        assert_eq!(keys.first().map(|k| k.as_str()), Some("description"));
        assert_eq!(
            keys.last().map(|k| k.as_str()),
            Some("webSocketDebuggerUrl")
        );
    }

    #[test]
    fn non_json_passes_through() {
        assert_eq!(
            rewrite_body(Endpoint::Version, b"not json", &rw("a:1")),
            None
        );
        assert_eq!(rewrite_body(Endpoint::List, b"42", &rw("a:1")), None);
        assert_eq!(rewrite_body(Endpoint::Passthrough, b"{}", &rw("a:1")), None);
    }
}
