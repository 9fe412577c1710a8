//! The URL sanitizer: origin and path only (docs/security.md, *What evidence may contain*).
//!
//! Userinfo, query and fragment are dropped, not masked: they are where credentials, OAuth codes
//! and signed-URL signatures live. The path still goes through the text rules (capability paths
//! `/devtools/page/<id>` become handles, a JWT or `;jsessionid=` in a path is redacted).
//! `data:` URLs keep their media type and size; opaque URLs (`javascript:`, `mailto:`) keep only
//! their scheme and size; unparseable input is cut at `?`/`#` and stripped of `user@`. A
//! registered literal that runs from the path into the query or fragment (a value written with
//! `encodeURI`, which leaves `?` and `#` raw) would leave its head at the end of the path: the
//! URL is cut where it starts and ends with its `${NAME}`. The result always goes through the
//! text rules and the length cap. Never panics.

use crate::Sanitizer;
use url::Url;

/// Longest sanitized URL, in characters (before the truncation marker).
pub const URL_MAX_CHARS: usize = 2048;

/// Longest media type kept from a `data:` URL.
const MEDIA_TYPE_MAX: usize = 100;

/// Sanitizes one URL to `scheme://host[:port]/path`.
pub(crate) fn sanitize_url(s: &Sanitizer, raw: &str) -> String {
    let raw = raw.trim();
    if s.withholds_free_text() {
        return origin_only(s, raw);
    }
    let out = if let Some(rest) = strip_prefix_ignore_case(raw, "data:") {
        data_url(rest)
    } else {
        let across = raw
            .find(['?', '#'])
            .and_then(|end| s.literal_across(raw, end));
        let (raw, placeholder) = match across {
            Some((start, placeholder)) => (&raw[..start], placeholder),
            None => (raw, String::new()),
        };
        let mut out = match Url::parse(raw) {
            Ok(url) => parsed(s, &url),
            Err(_) => unparsed(raw),
        };
        out.push_str(&placeholder);
        out
    };
    s.text_capped(&out, URL_MAX_CHARS).into_string()
}

/// `scheme://host:port`, or `scheme:…` for a URL without a host: what a URL keeps while free
/// text is withheld (its path may hold what was typed).
fn origin_only(s: &Sanitizer, raw: &str) -> String {
    let out = match Url::parse(raw) {
        Ok(url) => match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{}://{host}:{port}", url.scheme()),
            (Some(host), None) => format!("{}://{host}", url.scheme()),
            (None, _) => format!("{}:…", url.scheme()),
        },
        Err(_) => "…".to_owned(),
    };
    s.structural(&out, URL_MAX_CHARS).into_string()
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// `data:image/png;base64,…` → `data:image/png;base64,…[1234 bytes]`.
fn data_url(rest: &str) -> String {
    let (meta, payload) = rest.split_once(',').unwrap_or((rest, ""));
    let mut parts = meta.split(';');
    let media_type = parts.next().unwrap_or("").trim();
    let base64 = parts.any(|p| p.trim().eq_ignore_ascii_case("base64"));
    let media_ok = media_type.len() <= MEDIA_TYPE_MAX
        && media_type
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'+' | b'-' | b'.'));
    let media_type = if media_ok {
        media_type.to_ascii_lowercase()
    } else {
        "unknown".to_owned()
    };
    let encoding = if base64 { ";base64" } else { "" };
    format!("data:{media_type}{encoding},…[{} bytes]", payload.len())
}

fn parsed(s: &Sanitizer, url: &Url) -> String {
    let scheme = url.scheme();
    if url.cannot_be_a_base() {
        let body = url.path();
        return match scheme {
            // about:blank, about:srcdoc: the path is the whole meaning and carries no data.
            "about" => format!("about:{body}"),
            // blob:https://origin/<uuid>: the inner URL is sanitized like any other.
            "blob" => format!("blob:{}", sanitize_url(s, body)),
            _ => format!(
                "{scheme}:…[{} bytes]",
                url.as_str().len() - scheme.len() - 1
            ),
        };
    }
    let mut out = format!("{scheme}://");
    if let Some(host) = url.host_str() {
        out.push_str(host);
    }
    if let Some(port) = url.port() {
        out.push(':');
        out.push_str(&port.to_string());
    }
    out.push_str(url.path());
    out
}

/// Best effort for text that is not an absolute URL (`/path?x`, `//host/p`, garbage): cut at
/// the first `?` or `#`, and after every `//` drop everything up to the last `@` of what reads
/// as an authority there.
fn unparsed(raw: &str) -> String {
    let cut = raw.find(['?', '#']).unwrap_or(raw.len());
    let mut rest = &raw[..cut];
    let mut out = String::with_capacity(rest.len());
    while let Some(i) = rest.find("//") {
        let (head, tail) = rest.split_at(i + 2);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c.is_whitespace())
            .unwrap_or(tail.len());
        rest = match tail[..end].rfind('@') {
            Some(at) => &tail[at + 1..],
            None => tail,
        };
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use crate::Sanitizer;

    #[test]
    fn keeps_origin_and_path_only() {
        let s = Sanitizer::new();
        let cases = [
            (
                "https://example.com/a/b?q=1#frag",
                "https://example.com/a/b",
            ),
            (
                "https://bob:hunter2@example.com:8443/x",
                "https://example.com:8443/x",
            ),
            ("HTTP://EXAMPLE.com", "http://example.com/"),
            ("about:blank", "about:blank"),
            ("/relative/path?token=abc", "/relative/path"),
            ("//bob:pw@cdn.example.com/x?y", "//cdn.example.com/x"),
            ("", ""),
            (
                "data:image/png;base64,iVBORw0KGgo=",
                "data:image/png;base64,…[12 bytes]",
            ),
            ("data:,hello", "data:,…[5 bytes]"),
            (
                "javascript:alert(document.cookie)",
                "javascript:…[22 bytes]",
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(s.url(raw).as_str(), want, "{raw}");
        }
    }

    /// A fuzzing campaign's finding (4 December 2026): a handle's last characters and the path
    /// after it spelled a registered literal that the input held nowhere. The literal takes the
    /// handle with it.
    #[test]
    fn a_handle_never_completes_a_registered_literal() {
        let s = Sanitizer::new();
        let url = "http://127.0.0.1:9222/devtools/page/8E/devtools/";
        let handle = s.handle("8E");
        let handle = handle.as_str();
        assert_eq!(
            s.url(url).as_str(),
            format!("http://127.0.0.1:9222/devtools/page/{handle}/devtools/")
        );
        let literal = format!("{}/devtools", &handle[handle.len() - 2..]);
        assert!(!url.contains(&literal));
        s.register_secret("SECRET", &literal).expect("a valid name");
        let out = s.url(url);
        assert_eq!(
            out.as_str(),
            "http://127.0.0.1:9222/devtools/page/${SECRET}/"
        );
        assert_eq!(s.text(out.as_str()).as_str(), out.as_str(), "a fixed point");
    }

    /// Issue 38, item 2: a value next to an encoded character, with characters a URL writer
    /// left raw (`!` by `encodeURIComponent`, `@:,;=&+$` in a path), was matched by no fixed
    /// spelling: a registered secret leaked whole, typed text from that character on.
    #[test]
    fn the_issue_s_url_spellings_are_masked_whole() {
        let s = Sanitizer::new();
        s.register_secret("API_KEY", "Zq7!Mk@gevbFp")
            .expect("valid");
        s.register_secret("PATHY", "p@th:1,2;x=y&z+$")
            .expect("valid");
        let mut typed = s.typed_echo();
        typed.extend("12 Main Street 42");
        assert_eq!(
            s.url("https://app.test/api/use/Zq7!Mk%40gevbFp?x=1")
                .as_str(),
            "https://app.test/api/use/${API_KEY}"
        );
        assert_eq!(
            s.text("GET https://app.test/api/use/Zq7!Mk%40gevbFp 404 (Not Found)")
                .as_str(),
            "GET https://app.test/api/use/${API_KEY} 404 (Not Found)"
        );
        for (raw, want) in [
            // `encodeURIComponent`, a form (`+`), a mix, mixed-case hex.
            (
                "https://app.test/find?q=12%20Main%20Street%2042&n=1",
                "https://app.test/find?q=${TYPED_1}&n=1",
            ),
            (
                "https://app.test/find?q=12+Main+Street+42&n=1",
                "https://app.test/find?q=${TYPED_1}&n=1",
            ),
            (
                "https://app.test/find?q=12+Main%20Street+42",
                "https://app.test/find?q=${TYPED_1}",
            ),
            (
                "https://app.test/find?q=%31%32+M%61in+Str%65et%2042",
                "https://app.test/find?q=${TYPED_1}",
            ),
            (
                "/k/Zq7%21Mk%40gevbFp /k/Zq7%21Mk%40gevb%46p /k/%5aq7!Mk@gevbFp",
                "/k/${API_KEY} /k/${API_KEY} /k/${API_KEY}",
            ),
            // The typed prefix protected, in any spelling: `…reet%2042` leaked `%2042`.
            ("q=12%20Main%20St", "q=${TYPED_1}"),
        ] {
            assert_eq!(s.text(raw).as_str(), want, "{raw}");
        }
        // `encodeURIComponent` leaves `(`, `!`, `)` raw: the fixed spellings stopped there and
        // left the rest (`!)%2042`).
        let mut apt = s.typed_echo();
        apt.extend("12 Main Street (Apt 7!) 42");
        assert_eq!(
            s.text("GET /find?q=12%20Main%20Street%20(Apt%207!)%2042 404")
                .as_str(),
            "GET /find?q=${TYPED_2} 404"
        );
        // In a path, as a browser sends it.
        assert_eq!(
            s.url("https://app.test/addr/12%20Main%20Street%2042/map")
                .as_str(),
            "https://app.test/addr/${TYPED_1}/map"
        );
        assert_eq!(
            s.url("https://app.test/addr/12 Main Street 42/map")
                .as_str(),
            "https://app.test/addr/${TYPED_1}/map"
        );
        assert_eq!(
            s.url("https://app.test/p/p@th:1,2;x=y&z+$/next").as_str(),
            "https://app.test/p/${PATHY}/next"
        );
        assert_eq!(
            s.url("https://app.test/p/p%40th%3a1%2C2%3bx%3Dy%26z%2b%24")
                .as_str(),
            "https://app.test/p/${PATHY}"
        );
    }

    /// `encodeURI` leaves `?` and `#` raw: a value that holds one starts the query or the
    /// fragment halfway. The path keeps none of it.
    #[test]
    fn a_literal_running_into_the_query_takes_the_path_s_end_with_it() {
        let s = Sanitizer::new();
        s.register_secret("SECRET", "abc?def#ghi").expect("valid");
        assert_eq!(
            s.url("https://app.test/x/abc?def#ghi").as_str(),
            "https://app.test/x/${SECRET}"
        );
        assert_eq!(
            s.url("https://app.test/x/abc?def%23ghi&y=1").as_str(),
            "https://app.test/x/${SECRET}"
        );
        assert_eq!(s.url("/rel/abc?def#ghi").as_str(), "/rel/${SECRET}");
        // Only where the literal is there whole: a head alone is no literal.
        assert_eq!(
            s.url("https://app.test/x/abc?def").as_str(),
            "https://app.test/x/abc"
        );
        let mut typed = s.typed_echo();
        typed.extend("wxyz?12");
        assert_eq!(
            s.url("https://app.test/q/wxy?z=1").as_str(),
            "https://app.test/q/wxy"
        );
        assert_eq!(
            s.url("https://app.test/q/wxyz?1").as_str(),
            "https://app.test/q/${TYPED_1}"
        );
        assert_eq!(s.summary().secrets.get("SECRET"), Some(&3));
    }

    #[test]
    fn capability_paths_become_handles() {
        let s = Sanitizer::new();
        let id = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";
        let out = s.url(&format!("ws://127.0.0.1:9222/devtools/page/{id}"));
        let handle = s.handle(id);
        assert_eq!(
            out.as_str(),
            format!("ws://127.0.0.1:9222/devtools/page/{}", handle.as_str())
        );
        let blob = s.url("blob:https://example.com/3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44");
        assert!(
            blob.as_str()
                .starts_with("blob:https://example.com/target:"),
            "{blob}"
        );
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let s = Sanitizer::new();
        for (raw, want) in [
            ("http://[::1", "http://[::1"),
            ("data:", "data:,…[0 bytes]"),
            ("://", "://"),
            ("é://ü", "é://ü"),
            // Every `@` before the host is userinfo: none of it may survive.
            ("http://a@b@c/", "http://c/"),
            ("\u{0}:\u{0}", "\u{0}:\u{0}"),
            // Unparseable, yet still cut at `?`/`#` and stripped of `user@`.
            ("http://user:pw@[::1/x?token=t#f", "http://[::1/x"),
        ] {
            assert_eq!(s.url(raw).as_str(), want, "{raw:?}");
        }
        let long = format!("https://example.com/{}", "a/".repeat(5000));
        assert!(s.url(&long).as_str().contains("…[truncated"));
    }
}
