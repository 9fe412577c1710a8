//! The wrapped server's own page ids. chrome-devtools-mcp (page-id routing is its default)
//! names the page a call acts on in the call itself (`pageId`), and lists its pages with those
//! ids and their URLs in its answers (`## Pages`, then `1: Title (http://…) [selected]`). The
//! gateway keeps the URL each id was last listed with (memory only) and, when a call names a
//! page, finds the page the relay knows by that URL: the call acts on it
//! ([`cdp_capture::calls::ToolCalls::acts_on`]), so two calls sent at once on two pages each
//! get their own page's records.
//!
//! Only a page the call itself names counts. A page list's `[selected]` mark, or
//! @playwright/mcp's current tab, says where the server is after the call, not which page the
//! call acted on (it may have closed that page, or switched tabs), and a wrong page would keep
//! the call from its own records; those calls are told apart by time and by the pages their
//! commands carried, as before (`calls.rs`).

use rmcp::model::CallToolResult;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;

/// Page ids remembered at most.
const MAX_PAGES: usize = 256;

/// The argument a chrome-devtools-mcp call names its page in.
const PAGE_ID: &str = "pageId";

/// The server's page ids and the URLs its answers last listed them with.
#[derive(Debug, Default)]
pub(crate) struct PageIds {
    urls: Mutex<HashMap<u64, String>>,
}

impl PageIds {
    fn urls(&self) -> std::sync::MutexGuard<'_, HashMap<u64, String>> {
        self.urls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Learns the pages an answer lists (its text, and `structuredContent.pages` when the
    /// server sends structured content).
    pub(crate) fn learn(&self, result: &CallToolResult) {
        let mut listed = Vec::new();
        for text in result.content.iter().filter_map(|c| c.as_text()) {
            listed.extend(listed_pages(&text.text));
        }
        if let Some(pages) = result
            .structured_content
            .as_ref()
            .and_then(|s| s.get("pages"))
            .and_then(Value::as_array)
        {
            listed.extend(pages.iter().filter_map(|p| {
                Some((p.get("id")?.as_u64()?, p.get("url")?.as_str()?.to_owned()))
            }));
        }
        if listed.is_empty() {
            return;
        }
        let mut urls = self.urls();
        for (id, url) in listed {
            if urls.len() < MAX_PAGES || urls.contains_key(&id) {
                urls.insert(id, url);
            }
        }
    }

    /// The URL of the page a call's arguments name, if the server listed it.
    pub(crate) fn url_of(&self, arguments: Option<&Map<String, Value>>) -> Option<String> {
        let id = arguments?.get(PAGE_ID)?.as_u64()?;
        self.urls().get(&id).cloned()
    }
}

/// The `(id, url)` of each line of a `## Pages` section in `text`.
fn listed_pages(text: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "## Pages" {
            continue;
        }
        for line in lines.by_ref() {
            match page_line(line) {
                Some(page) => out.push(page),
                None => break,
            }
        }
    }
    out
}

/// `1: Title (http://…) [selected] isolatedContext=x` or `2: http://…` → `(1, "http://…")`.
fn page_line(line: &str) -> Option<(u64, String)> {
    let (id, rest) = line.trim().split_once(": ")?;
    let id = id.parse().ok()?;
    let rest = match rest.find(" isolatedContext=") {
        Some(i) => &rest[..i],
        None => rest,
    };
    let rest = rest.trim_end();
    let rest = rest.strip_suffix("[selected]").unwrap_or(rest).trim_end();
    let url = match (rest.strip_suffix(')'), rest.rfind(" (")) {
        (Some(inner), Some(open)) => &inner[open + 2..],
        _ => rest,
    };
    (!url.is_empty() && !url.contains(' ')).then(|| (id, url.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;
    use serde_json::json;

    #[test]
    fn page_lists_are_read_from_answers_and_calls_name_their_page() {
        let ids = PageIds::default();
        let list = CallToolResult::success(vec![ContentBlock::text(
            "# new_page response\n## Pages\n1: A (Title) (http://127.0.0.1:9/a)\n2: http://127.0.0.1:9/b [selected]\n3: about:blank isolatedContext=x\n## Other\n4: not a page",
        )]);
        ids.learn(&list);
        let named = |id: u64| ids.url_of(json!({ "pageId": id }).as_object());
        assert_eq!(named(1).as_deref(), Some("http://127.0.0.1:9/a"));
        assert_eq!(named(2).as_deref(), Some("http://127.0.0.1:9/b"));
        assert_eq!(named(3).as_deref(), Some("about:blank"));
        assert_eq!(named(4), None, "after the section");
        assert_eq!(ids.url_of(json!({"uid": "1_2"}).as_object()), None);
        // A later list wins; structured content counts too.
        let mut later = CallToolResult::success(vec![ContentBlock::text("done")]);
        later.structured_content =
            Some(json!({"pages": [{"id": 1, "url": "http://127.0.0.1:9/c"}]}));
        ids.learn(&later);
        assert_eq!(named(1).as_deref(), Some("http://127.0.0.1:9/c"));
        assert_eq!(page_line("x: y"), None);
        assert_eq!(page_line("5: A title with spaces"), None);
    }
}
