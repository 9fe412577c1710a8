//! Is what the agent hears about its typing true? The real chrome-devtools-mcp and
//! @playwright/mcp, each behind one `cdp-relay mcp` (feedback on, its defaults), make typing
//! calls of six kinds in turn on a local page, each with a text the field has not held before:
//!
//! * 20 characters into a plain field (typed with keys by both servers);
//! * 20 characters into a field with `maxlength=8` (cut: it must not be "landed");
//! * 150 characters into a textarea (chrome-devtools-mcp sets 100+ by script, no key);
//! * 150 characters into a textarea whose page keeps 100 (by script or by keys: cut);
//! * a date into a date input (set by script by both);
//! * an option of a `<select>` (`fill` / `browser_select_option`: set by script).
//!
//! After each, the page says whether the field holds exactly the text (compared in the page).
//! Every verdict told about a call — in its own result or, owed, in a later one — is checked
//! against that: a `landed` for a field that does not hold the text is a false "landed"; a
//! call whose result carries no line about its typing is silent. Run it beside `stress -c 2`
//! for the loaded figure; the table says the load average before and after.

use crate::mcp_feedback::{load_average, Server};
use cdp_relay_tests::mcp::{text_of, McpGateway};
use cdp_relay_tests::site::{Route, Site};
use rmcp::model::CallToolResult;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Instant;

/// The `_meta` key of the gateway's facts.
const META_KEY: &str = "cdp-relay/evidence";

const PAGE: &str = r#"<!doctype html><meta charset="utf-8"><title>Typing truth</title>
<label for="name">Name</label><input id="name">
<label for="nick">Nickname</label><input id="nick" maxlength="8">
<label for="bio">Biography</label><textarea id="bio"></textarea>
<label for="note">Short note</label><textarea id="note"></textarea>
<label for="day">Start date</label><input id="day" type="date">
<label for="colour">Colour</label><select id="colour"><option value="red">Red</option><option value="blue">Blue</option><option value="green">Green</option></select>
<script>
  const note = document.getElementById('note');
  note.addEventListener('input', () => { if (note.value.length > 100) note.value = note.value.slice(0, 100); });
</script>"#;

/// The kinds of typing call, in turn: (name, field id, label).
const KINDS: [(&str, &str, &str); 6] = [
    ("plain 20", "name", "Name"),
    ("maxlength 8", "nick", "Nickname"),
    ("150 chars", "bio", "Biography"),
    ("150 chars, page keeps 100", "note", "Short note"),
    ("date", "day", "Start date"),
    ("select", "colour", "Colour"),
];

const OPTIONS: [&str; 3] = ["Red", "Blue", "Green"];

/// The text of call `n` of kind `kind`: new to its field each time.
fn text_of_call(kind: usize, n: usize) -> String {
    match kind {
        // A first letter of its own: chrome-devtools-mcp types only the rest of a text that
        // begins with what the field holds.
        0 | 1 => {
            let first = char::from(b'a' + (n % 26) as u8);
            format!("{first}typed{n:06}-truthZq")
        }
        2 | 3 => {
            let filler = "-abcdefghijklmnopqrstuvwxyz0123456789".repeat(5);
            format!("{n:07}{filler}")[..150].to_owned()
        }
        // A date a day further each time (28 days a month, twelve months, then the next year).
        4 => format!(
            "{}-{:02}-{:02}",
            2027 + n / 336,
            (n / 28) % 12 + 1,
            n % 28 + 1
        ),
        _ => OPTIONS[n % OPTIONS.len()].to_owned(),
    }
}

/// One typing call: what it was, what the field held after it, and every verdict told of it.
#[derive(Debug)]
struct Typed {
    kind: usize,
    held: bool,
    /// Its own result said nothing of its typing.
    silent: bool,
    /// Every verdict told of it, with its reason.
    verdicts: Vec<(Value, String)>,
    /// Its own result's verdicts were `null` ("not verified yet").
    owed: bool,
}

/// What the calls of one kind heard, summed.
#[derive(Default, Clone)]
struct Tally {
    calls: usize,
    silent: usize,
    landed: usize,
    false_landed: usize,
    not_landed: usize,
    false_not_landed: usize,
    indeterminate: usize,
    owed: usize,
    owed_never_told: usize,
    /// Reasons of the verdicts that were neither `true` nor `false`.
    unsure: HashMap<String, usize>,
}

/// The uid or ref of the field labelled `label` (the line with a role before the name).
fn field(snapshot: &str, label: &str) -> Option<String> {
    let quoted = format!("\"{label}\"");
    let line = snapshot.lines().find(|l| {
        let Some(at) = l.find(&quoted) else {
            return false;
        };
        l[..at].split_whitespace().last().is_some_and(|w| {
            w.chars().all(|c| c.is_ascii_alphabetic()) && !["StaticText", "text"].contains(&w)
        })
    })?;
    if let Some(rest) = line.trim_start().strip_prefix("uid=") {
        return rest.split_whitespace().next().map(str::to_owned);
    }
    let start = line.find("[ref=")? + 5;
    line[start..].split(']').next().map(str::to_owned)
}

fn fill(
    server: Server,
    target: &str,
    label: &str,
    text: &str,
    select: bool,
) -> (&'static str, Value) {
    match server {
        Server::DevTools => ("fill", json!({"uid": target, "value": text})),
        Server::Playwright if select => (
            "browser_select_option",
            json!({"element": format!("{label} select"), "target": target, "values": [text]}),
        ),
        Server::Playwright => (
            "browser_type",
            json!({"element": format!("{label} field"), "target": target, "text": text}),
        ),
    }
}

/// The answer of [`holds`] when the field holds the text, as the servers print a string result.
const HOLDS: &str = "\"field-holds-it\"";

/// Whether field `id` holds `text` exactly (a select: its chosen option's label), asked in the
/// page. The answer is built in the page, so the function's source (which @playwright/mcp
/// echoes) never contains it.
fn holds(server: Server, id: &str, text: &str) -> (&'static str, Value) {
    let t = serde_json::to_string(text).unwrap_or_default();
    let f = format!(
        "() => {{ const el = document.getElementById('{id}'); const o = el.selectedOptions && el.selectedOptions[0]; return (el.value === {t} || (!!o && o.label === {t})) ? ['field', 'holds', 'it'].join('-') : 'no'; }}"
    );
    match server {
        Server::DevTools => ("evaluate_script", json!({"function": f})),
        Server::Playwright => ("browser_evaluate", json!({"function": f})),
    }
}

/// A verdict and its reason.
type Verdict = (Value, String);

/// The typing entries of a result's `_meta`: (the call they are about, verdict).
fn told(r: &CallToolResult) -> (Option<String>, Vec<(Option<String>, Verdict)>) {
    let v = serde_json::to_value(r).unwrap_or(Value::Null);
    let meta = &v["_meta"][META_KEY];
    let own = meta["call"].as_str().map(str::to_owned);
    let entries = meta["typing"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| {
                    let about = if t["earlier"] == true {
                        t["call"].as_str().map(str::to_owned)
                    } else {
                        own.clone()
                    };
                    let mut reason = t["reason"].as_str().unwrap_or("?").to_owned();
                    if let Some(note) = t["note"].as_str().filter(|_| reason == "no-keys") {
                        reason = format!("{reason} ({note})");
                    }
                    (about, (t["verified"].clone(), reason))
                })
                .collect()
        })
        .unwrap_or_default();
    (own, entries)
}

/// Makes `calls` typing calls through `server`; returns a tally per kind.
async fn measure(server: Server, calls: usize) -> Vec<Tally> {
    let mut routes = HashMap::new();
    routes.insert("/", Route::ok("text/html", PAGE));
    let site = Site::start(routes).await;
    let scratch = tempfile::tempdir().expect("scratch dir");
    let mut args: Vec<String> = vec!["--".into()];
    args.extend(server.command(scratch.path()));
    let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;
    let (tool, nav) = server.navigate(&format!("{}/", site.origin));
    gw.call(tool, nav).await;
    let snapshot = text_of(&gw.call(server.snapshot(), json!({})).await);
    let targets: Vec<String> = KINDS
        .iter()
        .map(|(_, _, label)| {
            field(&snapshot, label).unwrap_or_else(|| panic!("no {label} in:\n{snapshot}"))
        })
        .collect();
    let mut typed: Vec<(Option<String>, Typed)> = Vec::new();
    let mut later: Vec<(Option<String>, Verdict)> = Vec::new();
    for n in 0..calls {
        let kind = n % KINDS.len();
        let (_, id, label) = KINDS[kind];
        let text = text_of_call(kind, n / KINDS.len());
        let (tool, a) = fill(server, &targets[kind], label, &text, kind == 5);
        let r = gw.call(tool, a).await;
        let (call, entries) = told(&r);
        let own: Vec<Verdict> = entries
            .iter()
            .filter(|(about, _)| *about == call)
            .map(|(_, v)| v.clone())
            .collect();
        later.extend(entries.into_iter().filter(|(about, _)| *about != call));
        let (tool, a) = holds(server, id, &text);
        let check = gw.call(tool, a).await;
        later.extend(told(&check).1);
        typed.push((
            call,
            Typed {
                kind,
                held: text_of(&check).contains(HOLDS),
                silent: own.is_empty(),
                owed: own.iter().any(|(v, _)| v.is_null()),
                verdicts: own,
            },
        ));
        if (n + 1) % 100 == 0 {
            eprintln!("mcp-truth: {} {}/{calls}", server.name(), n + 1);
        }
    }
    let _ = gw.close().await;
    for (about, v) in later {
        if let Some(t) = typed
            .iter_mut()
            .find(|(c, _)| about.is_some() && *c == about)
        {
            t.1.verdicts.push(v);
        }
    }
    let mut tally = vec![Tally::default(); KINDS.len()];
    for (_, t) in &typed {
        let k = &mut tally[t.kind];
        k.calls += 1;
        k.silent += usize::from(t.silent);
        k.owed += usize::from(t.owed);
        let judged: Vec<&Verdict> = t.verdicts.iter().filter(|(v, _)| !v.is_null()).collect();
        if t.owed && judged.is_empty() {
            k.owed_never_told += 1;
        }
        for (v, reason) in judged {
            match v {
                Value::Bool(true) if t.held => k.landed += 1,
                Value::Bool(true) => k.false_landed += 1,
                Value::Bool(false) if !t.held => k.not_landed += 1,
                Value::Bool(false) => k.false_not_landed += 1,
                _ => {
                    k.indeterminate += 1;
                    *k.unsure.entry(reason.clone()).or_default() += 1;
                }
            }
        }
    }
    tally
}

/// Runs `calls` typing calls per server; returns the table as Markdown.
pub async fn run(calls: usize) -> String {
    let started = Instant::now();
    let before = load_average();
    let mut results = Vec::new();
    for server in [Server::DevTools, Server::Playwright] {
        results.push((server, measure(server, calls).await));
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{calls} typing calls per server, six kinds in turn ({} s in all; load average {before} before, {} after). Verdicts are checked against what the field holds, read in the page after each call; \"told later\" verdicts are an earlier call's, in a later result.\n",
        started.elapsed().as_secs(),
        load_average()
    );
    let _ = writeln!(
        out,
        "| server | call | calls | silent | `landed` (true) | **`landed` (false)** | did NOT land (true) | did NOT land (false) | not verified | not verified yet | …never told |"
    );
    let _ = writeln!(
        out,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (server, tally) in &results {
        let mut all = Tally::default();
        for (k, t) in tally.iter().enumerate() {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | **{}** | {} | {} | {} | {} | {} |",
                server.name(),
                KINDS[k].0,
                t.calls,
                t.silent,
                t.landed,
                t.false_landed,
                t.not_landed,
                t.false_not_landed,
                t.indeterminate,
                t.owed,
                t.owed_never_told
            );
            all.calls += t.calls;
            all.silent += t.silent;
            all.false_landed += t.false_landed;
            all.false_not_landed += t.false_not_landed;
        }
        let _ = writeln!(
            out,
            "| {} | **all** | {} | **{}** | | **{}** | | {} | | | |",
            server.name(),
            all.calls,
            all.silent,
            all.false_landed,
            all.false_not_landed
        );
    }
    let _ = writeln!(out, "\nWhy \"not verified\", by kind and reason:\n");
    if results
        .iter()
        .all(|(_, t)| t.iter().all(|k| k.unsure.is_empty()))
    {
        let _ = writeln!(out, "- no verdict was \"not verified\".");
    }
    for (server, tally) in &results {
        for (k, t) in tally.iter().enumerate() {
            if t.unsure.is_empty() {
                continue;
            }
            let mut reasons: Vec<(&String, &usize)> = t.unsure.iter().collect();
            reasons.sort();
            let said: Vec<String> = reasons.iter().map(|(r, n)| format!("`{r}` {n}")).collect();
            let _ = writeln!(
                out,
                "- {} {}: {}",
                server.name(),
                KINDS[k].0,
                said.join(", ")
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_call_types_a_text_new_to_its_field() {
        for kind in 0..KINDS.len() {
            let a = text_of_call(kind, 7);
            let b = text_of_call(kind, 8);
            assert_ne!(a, b, "{kind}");
        }
        assert_eq!(text_of_call(0, 3).len(), 20);
        assert_eq!(text_of_call(2, 3).len(), 150);
        assert_eq!(text_of_call(4, 0), "2027-01-01");
        assert_eq!(text_of_call(4, 28), "2027-02-01");
        assert_eq!(text_of_call(4, 336), "2028-01-01");
    }

    #[test]
    fn fields_are_found_by_role_not_by_their_labels_text() {
        let cdm = "uid=2_1 \"Name\"\nuid=2_2 textbox \"Name\"\nuid=2_3 combobox \"Colour\"";
        assert_eq!(field(cdm, "Name").as_deref(), Some("2_2"));
        assert_eq!(field(cdm, "Colour").as_deref(), Some("2_3"));
        let pw = "- text: Name\n- textbox \"Name\" [ref=e5]";
        assert_eq!(field(pw, "Name").as_deref(), Some("e5"));
    }

    #[test]
    fn verdicts_are_read_for_the_call_they_are_about() {
        let r: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "ok"}],
            "_meta": {META_KEY: {"call": "c2", "typing": [
                {"verified": true},
                {"verified": false, "earlier": true, "call": "c1"}
            ]}}
        }))
        .unwrap();
        let (own, entries) = told(&r);
        assert_eq!(own.as_deref(), Some("c2"));
        assert_eq!(entries[0].0.as_deref(), Some("c2"));
        assert_eq!(entries[0].1 .0, json!(true));
        assert_eq!(entries[1].0.as_deref(), Some("c1"));
        assert_eq!(entries[1].1 .0, json!(false));
    }
}
