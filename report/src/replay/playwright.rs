//! The events of a run written as a Playwright Test file.
//!
//! Two passes: [`Plan`] decides what needs a name (each page, each origin, each typed input)
//! and where a page came from or a click navigated; [`render`] then writes one statement or
//! comment per event, in the run's order. Nothing depends on the clock or on hash order: the
//! same run gives the same bytes.

use super::js::{comment, is_variable_name, string};
use super::read::{origin, Aim, Event, Events, Locator, What};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Longest journal text put into a comment.
const MAX_COMMENT: usize = 200;
/// How far past a click the export looks for the navigation it caused.
const NAVIGATION_LOOKAHEAD: usize = 2_000;
/// The environment variable that makes the spec replay over CDP (through a relay).
pub(crate) const ENDPOINT_VARIABLE: &str = "CDP_RELAY_ENDPOINT";

/// What the run says about the spec as a whole.
pub(crate) struct Header<'a> {
    pub run_id: &'a str,
    pub session: Option<&'a str>,
}

/// Counts of one export.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub steps: usize,
    pub not_replayable: usize,
    pub variables: usize,
}

/// A typed input's environment variable and what the run knows of it.
struct Input {
    steps: Vec<usize>,
    chars: BTreeSet<u64>,
    input_types: BTreeSet<String>,
    replayable: bool,
}

#[derive(Default)]
struct Plan {
    /// Page handle → variable.
    pages: BTreeMap<String, String>,
    /// Event index of a `Target.createTarget` → the variable of the page it opened.
    opened: BTreeMap<usize, String>,
    /// Event index of a step → the variable of the popup it opened.
    popups: BTreeMap<usize, String>,
    /// Event index → a page that shows up there unannounced (variable, its URL).
    unannounced: BTreeMap<usize, (String, Option<String>)>,
    /// Event index of a click or key press → the URL (origin + path) it navigated to.
    waits: BTreeMap<usize, String>,
    /// Event index → step number.
    numbers: BTreeMap<usize, usize>,
    /// Event index of a typing step → its variable.
    input_names: BTreeMap<usize, String>,
    inputs: BTreeMap<String, Input>,
    /// Origins in order of first use, with their variables.
    origins: Vec<(String, String)>,
    uses_context: bool,
}

fn is_step(w: &What) -> bool {
    !matches!(w, What::ToolCall { .. } | What::Failure { .. } | What::Seen)
}

/// Origin and path of a URL (the run keeps no query or fragment of page URLs).
fn origin_path(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

/// A URL the spec can go to or wait for: `http(s)` with nothing redacted in it.
fn replayable_url(url: &str) -> bool {
    origin(url).is_some() && !url.contains("[redacted") && !url.contains("${")
}

impl Plan {
    fn new(events: &[Event]) -> Plan {
        let mut plan = Plan::default();
        let mut unclaimed_opens: Vec<usize> = Vec::new();
        let mut last_step_on: BTreeMap<String, usize> = BTreeMap::new();
        let mut current: Option<String> = None;
        let recorded: BTreeSet<String> = events
            .iter()
            .filter_map(|e| match &e.what {
                What::Type {
                    variable: Some(v), ..
                } if is_variable_name(v) => Some(v.clone()),
                _ => None,
            })
            .collect();
        let mut typed = 0;
        for (i, e) in events.iter().enumerate() {
            if !is_step(&e.what) {
                continue;
            }
            plan.numbers.insert(i, plan.numbers.len() + 1);
            if let What::OpenPage { .. } = e.what {
                unclaimed_opens.push(i);
                continue;
            }
            let handle = e.page.clone().or_else(|| current.clone());
            if let Some(h) = &handle {
                if !plan.pages.contains_key(h) {
                    let first = plan.pages.is_empty();
                    let var = if first {
                        "page".to_owned()
                    } else {
                        format!("page{}", plan.pages.len())
                    };
                    plan.pages.insert(h.clone(), var.clone());
                    let opener_step = e.opener.as_ref().and_then(|o| last_step_on.get(o)).copied();
                    if !unclaimed_opens.is_empty() {
                        let j = unclaimed_opens.remove(0);
                        plan.opened.insert(j, var);
                    } else if first {
                    } else if let Some(k) = opener_step {
                        plan.popups.insert(k, var);
                    } else {
                        plan.uses_context = true;
                        let url = e.page_url.clone().filter(|u| replayable_url(u));
                        plan.unannounced.insert(i, (var, url));
                    }
                }
                last_step_on.insert(h.clone(), i);
                current = handle.clone();
            }
            match &e.what {
                What::Click { .. } | What::Press { .. } => {
                    if let Some(url) = navigated(events, i) {
                        plan.waits.insert(i, url);
                    }
                }
                What::Type {
                    variable,
                    chars,
                    input_type,
                    aim,
                } => {
                    let name = match variable {
                        Some(v) if is_variable_name(v) => v.clone(),
                        _ => loop {
                            typed += 1;
                            let n = format!("TYPED_{typed}");
                            if !recorded.contains(&n) {
                                break n;
                            }
                        },
                    };
                    let input = plan.inputs.entry(name.clone()).or_insert(Input {
                        steps: Vec::new(),
                        chars: BTreeSet::new(),
                        input_types: BTreeSet::new(),
                        replayable: false,
                    });
                    input.steps.push(plan.numbers[&i]);
                    input.chars.insert(*chars);
                    input
                        .input_types
                        .insert(input_type.clone().unwrap_or_else(|| "unknown".to_owned()));
                    input.replayable |= matches!(aim, Aim::At { .. });
                    plan.input_names.insert(i, name);
                }
                _ => {}
            }
        }
        for &j in &unclaimed_opens {
            plan.opened.insert(j, String::new());
        }
        plan.uses_context |= plan.opened.values().any(|v| v != "page");
        // Origins, in order of first use.
        let taken: BTreeSet<&str> = plan.inputs.keys().map(String::as_str).collect();
        let mut origins: Vec<String> = Vec::new();
        let mut see = |url: &str| {
            if let Some(o) = origin(url).filter(|_| replayable_url(url)) {
                if !origins.iter().any(|x| x == o) {
                    origins.push(o.to_owned());
                }
            }
        };
        for (i, e) in events.iter().enumerate() {
            match &e.what {
                What::Navigate { url: Some(u), .. } | What::OpenPage { url: Some(u) } => see(u),
                _ => {}
            }
            if let Some((_, Some(u))) = plan.unannounced.get(&i) {
                see(u);
            }
            if let Some(u) = plan.waits.get(&i) {
                see(u);
            }
        }
        let mut n = 1;
        for o in origins {
            let var = loop {
                let v = if n == 1 {
                    "BASE_URL".to_owned()
                } else {
                    format!("BASE_URL_{n}")
                };
                n += 1;
                if !taken.contains(v.as_str()) && v != ENDPOINT_VARIABLE {
                    break v;
                }
            };
            plan.origins.push((o, var));
        }
        plan
    }

    fn page_var(&self, e: &Event, current: &str) -> String {
        e.page
            .as_ref()
            .and_then(|h| self.pages.get(h))
            .cloned()
            .unwrap_or_else(|| current.to_owned())
    }

    /// `url` as an expression: its origin's variable plus the path, or a literal.
    fn url_expr(&self, url: &str) -> String {
        if let Some(o) = origin(url) {
            if let Some((_, var)) = self.origins.iter().find(|(x, _)| x == o) {
                let rest = &url[o.len()..];
                return if rest.is_empty() {
                    var.clone()
                } else {
                    format!("{var} + {}", string(rest))
                };
            }
        }
        string(url)
    }
}

/// The URL (origin + path) the page of the click or key press at `i` went to before its next
/// step, when that differs from where it was.
fn navigated(events: &[Event], i: usize) -> Option<String> {
    let step = &events[i];
    let page = step.page.as_ref()?;
    let before = origin_path(step.page_url.as_deref()?);
    let mut last = None;
    for e in events.iter().skip(i + 1).take(NAVIGATION_LOOKAHEAD) {
        if e.page.as_ref() != Some(page) {
            continue;
        }
        if let Some(u) = &e.page_url {
            last = Some(u.as_str());
        }
        if is_step(&e.what) {
            break;
        }
    }
    let after = origin_path(last?);
    (after != before && replayable_url(after)).then(|| after.to_owned())
}

/// A Playwright locator expression on `page`.
fn locator(page: &str, locator: &Locator, frame: Option<&str>) -> String {
    let base = match frame {
        Some(f) => format!("{page}.locator({}).contentFrame()", string(f)),
        None => page.to_owned(),
    };
    match locator {
        Locator::TestId(id) => format!("{base}.getByTestId({})", string(id)),
        Locator::Role {
            role,
            name: Some(name),
        } => format!(
            "{base}.getByRole({}, {{ name: {} }})",
            string(role),
            string(name)
        ),
        Locator::Role { role, name: None } => format!("{base}.getByRole({})", string(role)),
        Locator::Label(l) => format!("{base}.getByLabel({})", string(l)),
        Locator::Placeholder(p) => format!("{base}.getByPlaceholder({})", string(p)),
        Locator::Css(c) => format!("{base}.locator({})", string(c)),
    }
}

/// Why a step cannot be replayed, for its comment.
fn unaimed(aim: &Aim) -> Option<String> {
    match aim {
        Aim::At { .. } => None,
        Aim::NotReplayable(why) => Some(comment(why, MAX_COMMENT)),
        Aim::Missing => Some("no target recorded".to_owned()),
        Aim::Unknown => Some("its recorded target is not one this version reads".to_owned()),
    }
}

/// What typed text was, in words: "the password", "the one-time code", ...
fn input_words(input_type: Option<&str>) -> &'static str {
    match input_type {
        Some("password") => "the password",
        Some("one-time-code") => "the one-time code",
        Some("email") => "the email address",
        Some("tel") => "the phone number",
        Some("number") => "the number",
        Some("search") => "the search text",
        Some("url") => "the URL",
        Some("payment") => "the payment detail",
        _ => "the text",
    }
}

fn number(x: f64) -> String {
    let r = (x * 100.0).round() / 100.0;
    if r.is_finite() {
        format!("{r}")
    } else {
        "0".to_owned()
    }
}

fn list(steps: &[usize]) -> String {
    let words: Vec<String> = steps.iter().map(usize::to_string).collect();
    match words.len() {
        1 => format!("step {}", words[0]),
        _ => format!("steps {}", words.join(", ")),
    }
}

/// The spec for `events`.
pub(crate) fn render(header: &Header<'_>, events: &Events) -> (String, Counts) {
    let ev = &events.events;
    let plan = Plan::new(ev);
    let mut body = String::new();
    let mut counts = Counts {
        variables: plan.origins.len() + plan.inputs.len(),
        ..Counts::default()
    };
    let mut uses_at = false;
    let mut current = "page".to_owned();
    let w = &mut body;
    for (i, e) in ev.iter().enumerate() {
        let page = plan.page_var(e, &current);
        if let Some((var, url)) = plan.unannounced.get(&i) {
            let _ = writeln!(w, "  // A page the run did not see being opened.");
            let _ = writeln!(w, "  const {var} = await context.newPage();");
            if let Some(u) = url {
                let _ = writeln!(w, "  await {var}.goto({});", plan.url_expr(u));
            }
        }
        let n = plan.numbers.get(&i).copied();
        let num = n.map_or(String::new(), |n| format!("{n}. "));
        let mut step_lines: Vec<String> = Vec::new();
        let mut not_replayable = |w: &mut String, what: String, why: &str, code: Option<String>| {
            let _ = writeln!(w, "  // {num}{what}: not replayable: {why}");
            if let Some(c) = code {
                let _ = writeln!(w, "  // {c}");
            }
            counts.not_replayable += 1;
        };
        match &e.what {
            What::Seen => continue,
            What::ToolCall { tool, name, label } => {
                let tool = tool
                    .as_deref()
                    .map(|t| format!(" ({})", comment(t, 40)))
                    .unwrap_or_default();
                let label = label
                    .as_deref()
                    .map(|l| format!(": \"{}\"", comment(l, MAX_COMMENT)))
                    .unwrap_or_default();
                let _ = writeln!(w, "  // agent: {}{tool}{label}", comment(name, 80));
                continue;
            }
            What::Failure { text } => {
                let _ = writeln!(
                    w,
                    "  // the original run saw: {}",
                    comment(text, MAX_COMMENT)
                );
                continue;
            }
            What::Navigate { url, error } => match url {
                Some(u) if replayable_url(u) || !u.contains("://") && !u.contains("[redacted") => {
                    let _ = writeln!(w, "  // {num}navigate");
                    step_lines.push(format!("await {page}.goto({});", plan.url_expr(u)));
                    if let Some(err) = error {
                        step_lines.push(format!(
                            "// the original navigation failed: {}",
                            comment(err, MAX_COMMENT)
                        ));
                    }
                }
                Some(u) => not_replayable(
                    w,
                    format!("navigate to {}", comment(u, MAX_COMMENT)),
                    "the recorded URL is not one to go to (a part of it is redacted)",
                    None,
                ),
                None => not_replayable(w, "navigate".into(), "no URL recorded", None),
            },
            What::Reload => {
                let _ = writeln!(w, "  // {num}reload");
                step_lines.push(format!("await {page}.reload();"));
            }
            What::History => not_replayable(
                w,
                "back or forward in history".into(),
                "the run does not say which entry",
                None,
            ),
            What::Click {
                aim,
                point,
                button,
                count,
            } => {
                let opts = match button.as_deref() {
                    Some(b @ ("right" | "middle")) => format!("button: '{b}'"),
                    _ => String::new(),
                };
                let at_point = point
                    .map(|(x, y)| format!(" at ({}, {})", number(x), number(y)))
                    .unwrap_or_default();
                match aim {
                    Aim::At { locator: l, frame } => {
                        let _ = writeln!(w, "  // {num}click");
                        let loc = locator(&page, l, frame.as_deref());
                        let call = match (count, opts.is_empty()) {
                            (2, true) => "dblclick()".to_owned(),
                            (2, false) => format!("dblclick({{ {opts} }})"),
                            (c, _) if *c > 2 => {
                                let sep = if opts.is_empty() { "" } else { ", " };
                                format!("click({{ {opts}{sep}clickCount: {c} }})")
                            }
                            (_, true) => "click()".to_owned(),
                            (_, false) => format!("click({{ {opts} }})"),
                        };
                        step_lines.push(format!("await {loc}.{call};"));
                    }
                    other => {
                        let code = point.map(|(x, y)| {
                            format!("await {page}.mouse.click({}, {});", number(x), number(y))
                        });
                        let why = unaimed(other).unwrap_or_default();
                        not_replayable(w, format!("click{at_point}"), &why, code);
                    }
                }
            }
            What::Type {
                aim,
                chars,
                input_type,
                ..
            } => {
                let name = &plan.input_names[&i];
                let what = format!(
                    "{} typed at step {}",
                    input_words(input_type.as_deref()),
                    n.unwrap_or(0)
                );
                let value = format!("input({}, {})", string(name), string(&what));
                let shape = format!(
                    "type {chars} characters ({})",
                    comment(input_type.as_deref().unwrap_or("unknown"), 40)
                );
                match aim {
                    Aim::At { locator: l, frame } => {
                        let _ = writeln!(w, "  // {num}{shape}");
                        let loc = locator(&page, l, frame.as_deref());
                        step_lines.push(format!("await {loc}.fill({value});"));
                    }
                    other => {
                        let why = unaimed(other).unwrap_or_default();
                        let code = format!("await {page}.keyboard.insertText({value});");
                        not_replayable(w, shape, &why, Some(code));
                    }
                }
            }
            What::Press { key } => match key {
                Some(k) => {
                    let _ = writeln!(w, "  // {num}press {}", comment(k, 40));
                    step_lines.push(format!("await {page}.keyboard.press({});", string(k)));
                }
                None => not_replayable(w, "press a key".into(), "no key recorded", None),
            },
            What::OpenPage { url } => {
                let var = plan.opened.get(&i).map(String::as_str).unwrap_or("");
                let url = url
                    .as_deref()
                    .filter(|u| *u != "about:blank" && replayable_url(u));
                match var {
                    "page" => {
                        let _ = writeln!(w, "  // {num}open a page: the test's own `page`");
                        if let Some(u) = url {
                            step_lines.push(format!("await page.goto({});", plan.url_expr(u)));
                        }
                    }
                    "" => {
                        let _ = writeln!(w, "  // {num}open a page (the run did not use it)");
                        step_lines.push("await context.newPage();".into());
                    }
                    var => {
                        let _ = writeln!(w, "  // {num}open a page");
                        step_lines.push(format!("const {var} = await context.newPage();"));
                        if let Some(u) = url {
                            step_lines.push(format!("await {var}.goto({});", plan.url_expr(u)));
                        }
                    }
                }
            }
            What::ClosePage { handle } => match handle.as_ref().and_then(|h| plan.pages.get(h)) {
                Some(var) => {
                    let _ = writeln!(w, "  // {num}close {var}");
                    step_lines.push(format!("await {var}.close();"));
                }
                None => not_replayable(
                    w,
                    "close a page".into(),
                    "the run does not say which of the test's pages",
                    None,
                ),
            },
            What::NotExported { method, why } => {
                not_replayable(w, comment(method, 80), why, None);
            }
        }
        if step_lines.is_empty() {
            continue;
        }
        counts.steps += 1;
        let popup = plan.popups.get(&i);
        if let Some(var) = popup {
            let _ = writeln!(w, "  const {var}Promise = {page}.waitForEvent('popup');");
        }
        for l in &step_lines {
            let _ = writeln!(w, "  {l}");
        }
        if let Some(var) = popup {
            let _ = writeln!(w, "  const {var} = await {var}Promise;");
        }
        if let Some(url) = plan.waits.get(&i) {
            uses_at = true;
            let _ = writeln!(w, "  await {page}.waitForURL(at({}));", plan.url_expr(url));
        }
        current = page;
    }
    let total_steps = plan.numbers.len();
    (
        assemble(header, events, &plan, &body, uses_at, total_steps, counts),
        Counts {
            steps: total_steps,
            ..counts
        },
    )
}

fn assemble(
    header: &Header<'_>,
    events: &Events,
    plan: &Plan,
    body: &str,
    uses_at: bool,
    total_steps: usize,
    counts: Counts,
) -> String {
    let mut out = String::new();
    let o = &mut out;
    let run = comment(header.run_id, 140);
    let _ = writeln!(o, "// Replay of the cdp-relay evidence run {run}.");
    if let Some(s) = header.session {
        let _ = writeln!(o, "// Session: {}.", comment(s, 140));
    }
    let _ = writeln!(
        o,
        "// Written by `cdp-relay export`: {total_steps} steps, {} of them left as comments that say \
         why they cannot be replayed.",
        counts.not_replayable
    );
    if events.left_out > 0 {
        let _ = writeln!(
            o,
            "// The run is longer than one export reads: its last {} records are not here.",
            events.left_out
        );
    }
    let _ = writeln!(o, "//");
    if plan.origins.is_empty() && plan.inputs.is_empty() {
        let _ = writeln!(o, "// Variables: none.");
    } else {
        let _ = writeln!(o, "// Variables (environment):");
        let width = plan
            .origins
            .iter()
            .map(|(_, v)| v.len())
            .chain(plan.inputs.keys().map(String::len))
            .max()
            .unwrap_or(0);
        for (origin, var) in &plan.origins {
            let _ = writeln!(
                o,
                "//   {var:width$}  an origin the run visited; default {}",
                comment(origin, MAX_COMMENT)
            );
        }
        let mut inputs: Vec<(&String, &Input)> = plan.inputs.iter().collect();
        inputs.sort_by_key(|(_, input)| input.steps.first().copied());
        for (name, input) in inputs {
            let chars: Vec<String> = input.chars.iter().map(u64::to_string).collect();
            let types: Vec<String> = input.input_types.iter().map(|t| comment(t, 40)).collect();
            let left = if input.replayable {
                ""
            } else {
                " (not replayable)"
            };
            let types = types.join(" or ");
            let vowel = types.starts_with(['a', 'e', 'i', 'o']) && !types.starts_with("one")
                || types.starts_with("un");
            let article = if vowel { "an" } else { "a" };
            let _ = writeln!(
                o,
                "//   {:width$}  {} characters typed into {article} {types} field at {}{left}",
                name,
                chars.join(" or "),
                list(&input.steps),
            );
        }
        if !plan.inputs.is_empty() {
            let _ = writeln!(
                o,
                "// A typed value is read from its variable just before its step; the test fails \
                 there, naming it, when it is not set."
            );
        }
    }
    let _ = writeln!(o, "//");
    let _ = writeln!(
        o,
        "// To record the replay too, run it through a relay: set {ENDPOINT_VARIABLE} to the \
         endpoint `cdp-relay launch` prints."
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "import {{ test as base, chromium, type Browser }} from '@playwright/test';"
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "const endpoint = process.env.{ENDPOINT_VARIABLE};
const test = endpoint
  ? base.extend<{{}}, {{ browser: Browser }}>({{
      browser: [
        async ({{}}, use) => {{
          const browser = await chromium.connectOverCDP(endpoint);
          await use(browser);
          await browser.close();
        }},
        {{ scope: 'worker' }},
      ],
    }})
  : base;"
    );
    if !plan.origins.is_empty() {
        let _ = writeln!(o);
        for (origin, var) in &plan.origins {
            let _ = writeln!(
                o,
                "const {var} = origin({}, {});",
                string(var),
                string(origin)
            );
        }
        let _ = writeln!(
            o,
            "
/** The origin in environment variable `name`, else the one the run visited. */
function origin(name: string, recorded: string): string {{
  return (process.env[name] || recorded).replace(/\\/+$/, '');
}}"
        );
    }
    if !plan.inputs.is_empty() {
        let _ = writeln!(
            o,
            "
/** The value of environment variable `name`; throws, naming it, when it is not set. */
function input(name: string, what: string): string {{
  const value = process.env[name];
  if (value === undefined) throw new Error(`missing environment variable ${{name}} (${{what}})`);
  return value;
}}"
        );
    }
    if uses_at {
        let _ = writeln!(
            o,
            "
/** Matches a page URL by origin and path (the run kept no query or fragment). */
function at(expected: string): (url: URL) => boolean {{
  return (url) => url.origin + url.pathname === expected;
}}"
        );
    }
    let _ = writeln!(o);
    let fixtures = if plan.uses_context {
        "{ page, context }"
    } else {
        "{ page }"
    };
    let _ = writeln!(
        o,
        "test({}, async ({fixtures}) => {{",
        string(&format!("replay of run {}", header.run_id))
    );
    if body.is_empty() {
        let _ = writeln!(o, "  // The run has no steps to replay.");
    }
    o.push_str(body);
    let _ = writeln!(o, "}});");
    out
}
