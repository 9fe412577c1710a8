//! Overlapping tool calls and the records they caused, with the real
//! chrome-devtools-mcp and a real Chromium: two `evaluate_script` calls on pages A and B sent in
//! the same tick, twenty rounds. Each script logs a console error and makes a failed request
//! naming its page. Every record the relay links to a call must be that call's page's; and
//! since each call names its page by the server's own page id (`pageId`, which the server's
//! page list maps to a URL), every effect is linked to its own call — none is left to
//! candidates (issue 38 item 13).

use cdp_evidence::StoredRecord;
use cdp_relay_tests::files::Scratch;
use cdp_relay_tests::mcp::{chrome_devtools_mcp, text_of, McpGateway};
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::within;
use serde_json::{json, Value};
use std::collections::HashMap;

const ROUNDS: usize = 20;

/// The page id (`1: http://…/a`) of the page whose URL ends with `path` in list_pages' text.
fn page_id(pages: &str, path: &str) -> u64 {
    pages
        .lines()
        .filter_map(|l| {
            // `1: about:blank [selected]`, `2: Title (http://…/b)`
            let (n, rest) = l.trim_start().split_once(':')?;
            let n = n.trim().parse().ok()?;
            let url = rest.trim_end().trim_end_matches("[selected]").trim_end();
            url.trim_end_matches(')').ends_with(path).then_some(n)
        })
        .next()
        .unwrap_or_else(|| panic!("no page {path} in:\n{pages}"))
}

/// Which page (`'a'` or `'b'`) a record is about, by the marker its script put in it.
fn page_of(r: &StoredRecord) -> Option<char> {
    let text = match r.kind.as_str() {
        "console" => r.payload["text"].as_str()?,
        "network" => r.payload["url"].as_str()?,
        _ => return None,
    };
    if text.contains("err-a-") || text.contains("/missing-a-") {
        Some('a')
    } else if text.contains("err-b-") || text.contains("/missing-b-") {
        Some('b')
    } else {
        None
    }
}

fn argument(call: &StoredRecord, name: &str) -> Value {
    call.payload["arguments"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == name))
        .map(|x| x["value"].clone())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn calls_on_two_pages_sent_in_the_same_tick_are_never_linked_to_the_other_page() {
    within("two pages, same tick", async {
        let mut routes = HashMap::new();
        routes.insert("/a", Route::ok("text/html", "<!doctype html><title>A</title>page A"));
        routes.insert("/b", Route::ok("text/html", "<!doctype html><title>B</title>page B"));
        let site = Site::start(routes).await;
        let scratch = Scratch::new();
        // Page id routing on (the server's default): each call names its page.
        let mut args = vec!["--".to_owned()];
        args.extend(
            chrome_devtools_mcp()
                .into_iter()
                .filter(|a| a != "--no-page-id-routing"),
        );
        let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;

        let first = page_id(&text_of(&gw.call("list_pages", json!({})).await), "");
        let nav = gw
            .call(
                "navigate_page",
                json!({"type": "url", "url": format!("{}/a", site.origin), "pageId": first}),
            )
            .await;
        assert_ne!(nav.is_error, Some(true), "{}", text_of(&nav));
        let opened = gw
            .call("new_page", json!({"url": format!("{}/b", site.origin)}))
            .await;
        assert_ne!(opened.is_error, Some(true), "{}", text_of(&opened));
        let pages = text_of(&gw.call("list_pages", json!({})).await);
        let (a, b) = (page_id(&pages, "/a"), page_id(&pages, "/b"));
        assert_ne!(a, b, "{pages}");

        let script = |page: char, round: usize| {
            format!(
                "async () => {{ console.error('err-{page}-{round}'); \
                 await fetch('/missing-{page}-{round}').catch(() => {{}}); return '{page}{round}'; }}"
            )
        };
        for round in 0..ROUNDS {
            // Both requests leave before either is answered.
            let (ra, rb) = tokio::join!(
                gw.call(
                    "evaluate_script",
                    json!({"function": script('a', round), "pageId": a})
                ),
                gw.call(
                    "evaluate_script",
                    json!({"function": script('b', round), "pageId": b})
                ),
            );
            assert!(text_of(&ra).contains(&format!("a{round}")), "{}", text_of(&ra));
            assert!(text_of(&rb).contains(&format!("b{round}")), "{}", text_of(&rb));
        }
        let closed = gw.close().await;
        let bytes = std::fs::read(closed.runs()[0].join("actions.jsonl")).expect("journal");
        let records = cdp_evidence::parse_journal(&bytes).records;

        // Each evaluate_script call record, by the page its pageId names.
        let calls: HashMap<&str, char> = records
            .iter()
            .filter(|r| r.source.as_deref() == Some("mcp") && r.payload["method"] == "evaluate_script")
            .map(|r| {
                let page = match argument(r, "pageId").as_u64() {
                    Some(p) if p == a => 'a',
                    Some(p) if p == b => 'b',
                    other => panic!("evaluate_script without a known pageId ({other:?}): {r:?}"),
                };
                (r.action_id.as_str(), page)
            })
            .collect();
        assert_eq!(calls.len(), 2 * ROUNDS, "one record per call");

        // The page handle each page's records carry, to judge the relay's commands too.
        let mut handles: HashMap<String, char> = HashMap::new();
        for r in &records {
            if let (Some(page), Some(h)) = (
                page_of(r),
                r.target.as_ref().and_then(|t| t["targetId"].as_str()),
            ) {
                handles.insert(h.to_owned(), page);
            }
        }
        let (mut right, mut wrong, mut both, mut effects, mut own) = (0, 0, 0, 0, 0);
        for r in &records {
            let page = page_of(r).or_else(|| {
                let h = r.target.as_ref()?["targetId"].as_str()?;
                handles.get(h).copied()
            });
            let Some(page) = page else { continue };
            if page_of(r).is_some() {
                effects += 1;
            }
            if let Some(call) = r.tool_call() {
                match calls.get(call) {
                    Some(&p) if p == page => {
                        right += 1;
                        if page_of(r).is_some() {
                            own += 1;
                        }
                    }
                    Some(_) => {
                        wrong += 1;
                        eprintln!("wrong link: {r:?}");
                    }
                    None => {}
                }
            }
            let candidates = r.tool_call_candidates();
            if !candidates.is_empty() {
                both += 1;
                assert!(
                    candidates
                        .iter()
                        .any(|c| calls.get(c) == Some(&page)),
                    "the right call is among the candidates: {r:?}"
                );
            }
        }
        eprintln!(
            "{ROUNDS} rounds: {effects} console/network records of the two pages, {own} linked to their own call; links to the right call {right}, to the wrong call {wrong}, to both as candidates {both}"
        );
        assert!(effects >= 2 * ROUNDS, "each script's console error was recorded");
        assert_eq!(wrong, 0, "no record is linked to the other page's call");
        assert_eq!(own, effects, "every effect is linked to its own call, by its page id");
        assert_eq!(both, 0, "no record of a page is left to candidates");
        scratch.assert_clean();
    })
    .await;
}
