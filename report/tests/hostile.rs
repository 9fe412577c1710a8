//! Hostile strings in every field a producer can set stay inert: checked on the token stream of
//! a WHATWG tokenizer (what a browser would see), not by searching for substrings, and on the
//! Markdown structure of `summary.md`.

mod support;

use base64::Engine as _;
use html5gum::{DefaultEmitter, Token, Tokenizer};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use support::*;

/// Elements the report is made of; anything else is injected markup.
const TAGS: &[&str] = &[
    "html", "head", "meta", "title", "link", "style", "body", "header", "main", "section", "nav",
    "div", "p", "span", "h1", "h2", "h3", "code", "pre", "b", "strong", "dl", "dt", "dd", "ol",
    "ul", "li", "a", "details", "summary", "img", "table", "thead", "tbody", "tr", "th", "td",
    "footer",
];
const ATTRS: &[&str] = &[
    "lang",
    "charset",
    "http-equiv",
    "content",
    "name",
    "rel",
    "href",
    "id",
    "class",
    "src",
    "alt",
    "decoding",
    "data-label",
    "colspan",
    "aria-label",
];

#[derive(Debug, Default)]
struct Parsed {
    text: String,
    style: Vec<String>,
    csp: Vec<String>,
    tags: BTreeSet<String>,
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Tokenizes `html` as a browser would (switching to raw text inside `<style>`/`<title>`) and
/// asserts the structural rules on every token.
fn parse_and_check(html: &str) -> Parsed {
    let mut emitter = DefaultEmitter::default();
    emitter.naively_switch_states(true);
    let mut p = Parsed::default();
    let mut in_style = false;
    for token in Tokenizer::new_with_emitter(html, emitter).flatten() {
        match token {
            Token::StartTag(tag) => {
                let name = s(&tag.name);
                assert!(TAGS.contains(&name.as_str()), "injected element <{name}>");
                in_style = name == "style";
                for (k, v) in &tag.attributes {
                    let (k, v) = (s(k), s(v));
                    assert!(
                        ATTRS.contains(&k.as_str()),
                        "unexpected attribute {k}={v:.80} on <{name}>"
                    );
                    match k.as_str() {
                        "href" => assert!(
                            v.starts_with('#')
                                && v[1..]
                                    .bytes()
                                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                                || (name == "link" && v == "data:,"),
                            "href {v:.80}"
                        ),
                        "src" => {
                            let (prefix, data) = v.split_once(";base64,").expect("data URI");
                            assert!(
                                ["data:image/png", "data:image/jpeg", "data:image/webp"]
                                    .contains(&prefix),
                                "src {prefix:.80}"
                            );
                            base64::engine::general_purpose::STANDARD
                                .decode(data)
                                .expect("base64 payload");
                        }
                        "id" => assert!(
                            v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'),
                            "id {v:.80}"
                        ),
                        "class" => assert!(
                            v.bytes().all(|b| b.is_ascii_lowercase()
                                || b.is_ascii_digit()
                                || b == b'-'
                                || b == b' '),
                            "class {v:.80}"
                        ),
                        "http-equiv" => {
                            assert_eq!(v, "Content-Security-Policy");
                            let content: &[u8] = b"content";
                            let csp = tag
                                .attributes
                                .get(content)
                                .map(|c| s(c))
                                .unwrap_or_default();
                            p.csp.push(csp);
                        }
                        _ => {}
                    }
                }
                p.tags.insert(name);
            }
            Token::EndTag(tag) => {
                if s(&tag.name) == "style" {
                    in_style = false;
                }
            }
            Token::String(text) => {
                if in_style {
                    p.style.push(s(&text));
                } else {
                    p.text.push_str(&s(&text));
                }
            }
            Token::Comment(c) => panic!("comment in the report: {:.80}", s(&c)),
            Token::Doctype(_) => {}
            Token::Error(e) => panic!("HTML parse error: {e:?}"),
        }
    }
    assert_eq!(p.style.len(), 1, "exactly one style element");
    assert_eq!(p.csp.len(), 1, "exactly one CSP");
    let digest = Sha256::digest(p.style[0].as_bytes());
    let hash = base64::engine::general_purpose::STANDARD.encode(digest);
    assert_eq!(
        p.csp[0],
        format!("default-src 'none'; img-src data:; style-src 'sha256-{hash}'; base-uri 'none'; form-action 'none'"),
        "the CSP pins the exact style text"
    );
    p
}

/// Removes fenced blocks and code spans (CommonMark rules for backtick runs) from Markdown,
/// leaving what a renderer would interpret.
fn markdown_outside_code(md: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<usize> = None;
    for line in md.lines() {
        let ticks = line.chars().take_while(|&c| c == '`').count();
        match fence {
            Some(n) if ticks >= n && line[ticks..].trim().is_empty() => fence = None,
            Some(_) => {}
            None if ticks >= 3 => fence = Some(ticks),
            None => {
                let b = line.as_bytes();
                let mut i = 0;
                while i < b.len() {
                    if b[i] == b'`' {
                        let n = b[i..].iter().take_while(|&&c| c == b'`').count();
                        // Find the closing run of exactly n backticks.
                        let mut j = i + n;
                        let mut closed = None;
                        while j < b.len() {
                            if b[j] == b'`' {
                                let m = b[j..].iter().take_while(|&&c| c == b'`').count();
                                if m == n {
                                    closed = Some(j + m);
                                    break;
                                }
                                j += m;
                            } else {
                                j += 1;
                            }
                        }
                        match closed {
                            Some(end) => i = end,
                            None => panic!("unclosed code span in: {line:.120}"),
                        }
                    } else {
                        let next = line[i..].find('`').map_or(line.len(), |k| i + k);
                        out.push_str(&line[i..next]);
                        i = next;
                    }
                }
                out.push('\n');
            }
        }
    }
    assert!(fence.is_none(), "unclosed fence");
    out
}

fn check_markdown(md: &str) {
    let outside = markdown_outside_code(md);
    for bad in ["<", "](", "javascript:", "**bold**", "\u{202E}", "\0"] {
        let hit = outside.lines().find(|l| l.contains(bad));
        assert!(
            hit.is_none(),
            "{bad:?} outside code in summary.md: {hit:.300?}"
        );
    }
    for c in md.chars() {
        assert!(
            c == '\n' || !c.is_control(),
            "control character U+{:04X} in summary.md",
            c as u32
        );
    }
}

#[test]
fn hostile_strings_written_into_the_journal_are_inert() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    hostile_run(&dir);
    let out = cdp_report::render_to_memory(&dir, &cdp_report::Options::default()).unwrap();
    let p = parse_and_check(&out.html);
    // The strings are shown — as text.
    assert!(p.text.contains("<script>alert(1)</script>"));
    assert!(p.text.contains("\"><img src=x onerror=alert(1)>"));
    assert!(
        p.text.contains("&lt;script&gt;alert(8)"),
        "already-escaped text stays literal"
    );
    // Invisible and control characters are escaped visibly.
    for c in [
        '\u{202E}', '\u{2066}', '\u{200B}', '\0', '\u{1}', '\u{9b}', '\u{2028}',
    ] {
        assert!(!p.text.contains(c), "U+{:04X} reached the page", c as u32);
    }
    assert!(p.text.contains("\\u{202e}"));
    // 20 kB strings are cut.
    assert!(p.text.contains("chars]"));
    assert!(
        out.html.len() < 3 << 20,
        "bounded: {} bytes",
        out.html.len()
    );
    assert!(
        !p.tags.contains("img"),
        "no artifact of the hostile run is an image"
    );
    check_markdown(&out.summary);
}

#[test]
fn hostile_strings_through_the_writer_api_are_inert() {
    use cdp_evidence::{
        Action, Console, ConsoleLevel, CustomKind, EvidenceConfig, Lifecycle, LifecycleEvent,
        Record, RecordKind, Store, Totals,
    };
    use cdp_sanitize::{RawNetworkFailure, SafeText, Sanitizer};
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(EvidenceConfig::at(tmp.path())).unwrap();
    let run = store.join_session("hostile", "relay").unwrap();
    let s = Sanitizer::new();
    let mut records = Vec::new();
    for h in hostile_all() {
        let target = s
            .target_info(&serde_json::json!({"targetId": h, "type": "page", "title": h, "url": h}));
        let mut a = Action::new(s.text(&h));
        a.url = Some(s.url(&h));
        a.detail = Some(s.json(&serde_json::json!({ "key": h, (h.as_str()): h })));
        records.push(
            Record::new(s.text(&h), RecordKind::Action(a))
                .target(target.clone())
                .error(s.text(&h)),
        );
        let mut press = Action::new(SafeText::literal("press"));
        press.detail = Some(s.json(&serde_json::json!({ "key": h })));
        records.push(Record::new(
            SafeText::literal("cdp"),
            RecordKind::Action(press),
        ));
        records.push(Record::new(
            SafeText::literal("cdp"),
            RecordKind::Network(s.network_failure(RawNetworkFailure {
                method: &h,
                url: &h,
                status: Some(503),
                resource_type: Some(&h),
                error_text: Some(&h),
                ..Default::default()
            })),
        ));
        let mut c = Console::new(ConsoleLevel::Exception, s.text(&h));
        c.url = Some(s.url(&h));
        records.push(Record::new(SafeText::literal("cdp"), RecordKind::Console(c)).target(target));
        let mut l = Lifecycle::new(LifecycleEvent::UpstreamLost, 1);
        l.detail = Some(s.text(&h));
        records.push(Record::new(
            SafeText::literal("cdp"),
            RecordKind::Lifecycle(l),
        ));
        records.push(Record::new(
            s.text(&h),
            RecordKind::Custom(
                CustomKind::new("gesture", s.json(&serde_json::json!({ (h.as_str()): [h] })))
                    .unwrap(),
            ),
        ));
    }
    run.append_all(&records).unwrap();
    run.finalize(Totals::default()).unwrap();
    let out = cdp_report::render_to_memory(run.dir(), &cdp_report::Options::default()).unwrap();
    let p = parse_and_check(&out.html);
    assert!(
        p.text.contains("alert("),
        "sanitized hostile text is still shown as text"
    );
    check_markdown(&out.summary);
}

#[test]
fn the_checks_catch_injected_markup() {
    // Controls for the checks above: each must fail on a report with a real injection.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let a = fake_screenshot(8, 8, 1);
    login_flow(&dir, [&a, &a]);
    let html = cdp_report::render_to_memory(&dir, &cdp_report::Options::default())
        .unwrap()
        .html;
    parse_and_check(&html);
    for injection in [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<a href=\"javascript:alert(1)\">x</a>",
        "<div style=\"color:red\">x</div>",
        "<!-- hidden -->",
    ] {
        let broken = html.replacen("<main", &format!("{injection}<main"), 1);
        let caught = std::panic::catch_unwind(|| parse_and_check(&broken)).is_err();
        assert!(caught, "not caught: {injection}");
    }
    let broken = html.replacen("</style>", "body{color:red}</style>", 1);
    assert!(
        std::panic::catch_unwind(|| parse_and_check(&broken)).is_err(),
        "style drift"
    );
    let md = "ok `code` and [link](javascript:x)";
    assert!(std::panic::catch_unwind(|| check_markdown(md)).is_err());
    check_markdown("ok `[link](javascript:x)` and ``a ` b``");
}
