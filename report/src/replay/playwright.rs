//! The events of a run written as a Playwright Test file.
//!
//! Two passes: [`Plan`] decides what needs a name (each page, each origin, each input) and where
//! a page came from or a click navigated; [`render`] then writes each event, in the run's order,
//! through one function per kind of step (as Playwright's code generator has one per action):
//! a step's statements, a comment, or a gap — a step that cannot be replayed, which fails the
//! test there saying why (or, with `--allow-gaps`, marks it `fixme` there). Nothing depends on
//! the clock or on hash order: the same run gives the same bytes.

use super::guard::refused_navigation;
use super::js::{comment, string};
use super::plan::{replayable_url, InputFacts, Plan};
use super::read::{Event, Events, Target, What};
use cdp_evidence::{LocatorKind, MouseButton, StoredLocator, Word};
use std::fmt::Write as _;

/// Longest journal text put into a comment.
const MAX_COMMENT: usize = 200;
/// The environment variable that makes the spec replay over CDP (through a relay).
pub(crate) const ENDPOINT_VARIABLE: &str = "CDP_RELAY_ENDPOINT";
/// The namespace of input variables: `CDP_RELAY_VAR_<NAME>`, the variables the MCP gateway
/// resolves `${NAME}` from too. An input never reads a variable outside it.
pub(crate) const INPUT_PREFIX: &str = "CDP_RELAY_VAR_";

/// What the run says about the spec as a whole, and how to write it.
pub(crate) struct Header<'a> {
    pub run_id: &'a str,
    pub session: Option<&'a str>,
    /// The run was still being recorded when it was read.
    pub still_recording: bool,
    /// A step that cannot be replayed marks the test `fixme` there instead of failing it.
    pub allow_gaps: bool,
}

/// Counts of one export.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub steps: usize,
    pub not_replayable: usize,
    pub variables: usize,
    /// The number of the first step that cannot be replayed.
    pub first_gap: Option<usize>,
}

/// What one event becomes in the spec.
enum Written {
    Nothing,
    /// A comment (an agent's tool call, a failure the run saw).
    Comment(String),
    /// A step: its title and its statements.
    Step {
        title: String,
        lines: Vec<String>,
    },
    /// A step that cannot be replayed: its title, why, and what it would have been.
    Gap {
        title: String,
        why: String,
        code: Option<String>,
    },
}

fn gap(title: impl Into<String>, why: impl Into<String>, code: Option<String>) -> Written {
    Written::Gap {
        title: title.into(),
        why: why.into(),
        code,
    }
}

/// The event being written: where it is and what the plan says of it.
struct Step<'a> {
    plan: &'a Plan,
    /// The variable of its page.
    page: &'a str,
    index: usize,
    number: Option<usize>,
}

impl Step<'_> {
    fn number(&self) -> usize {
        self.number.unwrap_or(0)
    }

    fn input(&self) -> &str {
        self.plan
            .input_names
            .get(&self.index)
            .map_or("", String::as_str)
    }
}

/// The spec for `events`.
pub(crate) fn render(header: &Header<'_>, events: &Events) -> (String, Counts) {
    let plan = Plan::new(&events.events);
    let mut body = Body {
        allow_gaps: header.allow_gaps,
        ..Body::default()
    };
    let mut current = "page".to_owned();
    for (index, event) in events.events.iter().enumerate() {
        let page = plan.page_var(event, &current);
        body.unannounced(&plan, index);
        let step = Step {
            plan: &plan,
            page: &page,
            index,
            number: plan.numbers.get(&index).copied(),
        };
        if body.put(&step, write(&step, event)) {
            current = page;
        }
    }
    let counts = Counts {
        steps: plan.numbers.len(),
        not_replayable: body.gaps,
        variables: plan.origins.len() + plan.inputs.len(),
        first_gap: body.first_gap,
    };
    (assemble(header, events, &plan, &body, counts), counts)
}

/// What one event becomes: one function per kind of step.
fn write(step: &Step<'_>, event: &Event) -> Written {
    match &event.what {
        What::PageLocation => Written::Nothing,
        What::ToolCall { tool, name, label } => tool_call(tool.as_deref(), name, label.as_deref()),
        What::Failure { text } => Written::Comment(format!(
            "the original run saw: {}",
            comment(text, MAX_COMMENT)
        )),
        What::Navigate { url, error } => navigate(step, url.as_deref(), error.as_deref()),
        What::Reload => Written::Step {
            title: "reload".into(),
            lines: vec![format!("await {}.reload();", step.page)],
        },
        What::History => gap(
            "back or forward in history",
            "the run does not say which entry",
            None,
        ),
        What::Click {
            target,
            point,
            button,
            count,
        } => click(step, target, *point, button.as_ref(), *count),
        What::Type {
            target,
            chars,
            input_type,
            ..
        } => fill(step, target, *chars, input_type.as_deref()),
        What::Press { key } => press(step, key.as_deref()),
        What::Select { target, options } => select(step, target, options),
        What::Files { target, count } => choose_files(step, target, *count),
        What::OpenPage { url } => open_page(step, url.as_deref()),
        What::ClosePage { handle } => close_page(step, handle.as_deref()),
        What::Scroll => Written::Comment(
            "the run scrolled here: Playwright scrolls each element into view before acting on it"
                .into(),
        ),
        What::UnreceivedClick => Written::Comment(
            "a press the page never received (its client stopped it and clicked again): not \
             replayed"
                .into(),
        ),
        What::NotExported { method, why } => gap(comment(method, 80), *why, None),
    }
}

fn tool_call(tool: Option<&str>, name: &str, label: Option<&str>) -> Written {
    let tool = tool
        .map(|t| format!(" ({})", comment(t, 40)))
        .unwrap_or_default();
    let label = label
        .map(|l| format!(": \"{}\"", comment(l, MAX_COMMENT)))
        .unwrap_or_default();
    Written::Comment(format!("agent: {}{tool}{label}", comment(name, 80)))
}

fn navigate(step: &Step<'_>, url: Option<&str>, error: Option<&str>) -> Written {
    let Some(url) = url else {
        return gap("navigate", "no URL recorded", None);
    };
    let title = || format!("navigate to {}", comment(url, MAX_COMMENT));
    if let Some(why) = refused_navigation(url) {
        return gap(title(), why, None);
    }
    if url.contains("[redacted") || url.contains("${") {
        return gap(
            title(),
            "the recorded URL is not one to go to (a part of it is redacted)",
            None,
        );
    }
    let mut lines = vec![format!(
        "await {}.goto({});",
        step.page,
        step.plan.url_expr(url)
    )];
    if let Some(err) = error {
        lines.push(format!(
            "// the original navigation failed: {}",
            comment(err, MAX_COMMENT)
        ));
    }
    Written::Step {
        title: "navigate".into(),
        lines,
    }
}

fn click(
    step: &Step<'_>,
    target: &Target,
    point: Option<(f64, f64)>,
    button: Option<&Word<MouseButton>>,
    count: u64,
) -> Written {
    let button = match button {
        Some(Word::Known(b @ (MouseButton::Right | MouseButton::Middle))) => {
            format!("button: '{}'", b.as_str())
        }
        _ => String::new(),
    };
    let title = match count {
        2 => "double click".to_owned(),
        n if n > 2 => format!("click {n} times"),
        _ => "click".to_owned(),
    };
    let (locator, hover) = match element(step.page, target) {
        Ok(found) => found,
        Err(why) => {
            let at = point
                .map(|(x, y)| format!(" at ({}, {})", number(x), number(y)))
                .unwrap_or_default();
            let code = point.map(|(x, y)| {
                format!(
                    "await {}.mouse.click({}, {});",
                    step.page,
                    number(x),
                    number(y)
                )
            });
            return gap(format!("{title}{at}"), why, code);
        }
    };
    let call = match (count, button.is_empty()) {
        (2, true) => "dblclick()".to_owned(),
        (2, false) => format!("dblclick({{ {button} }})"),
        (n, _) if n > 2 => {
            let sep = if button.is_empty() { "" } else { ", " };
            format!("click({{ {button}{sep}clickCount: {n} }})")
        }
        (_, true) => "click()".to_owned(),
        (_, false) => format!("click({{ {button} }})"),
    };
    let mut lines = Vec::new();
    if let Some(hovered) = hover {
        lines.push(format!("await {hovered}.hover();"));
    }
    lines.push(format!("await {locator}.{call};"));
    Written::Step { title, lines }
}

fn fill(step: &Step<'_>, target: &Target, chars: u64, input_type: Option<&str>) -> Written {
    let what = format!(
        "{} typed at step {}",
        input_words(input_type),
        step.number()
    );
    let value = format!("await typed({}, {})", string(step.input()), string(&what));
    let title = format!(
        "type {chars} characters ({})",
        comment(input_type.unwrap_or("unknown"), 40)
    );
    match element(step.page, target) {
        Ok((locator, _)) => Written::Step {
            title,
            lines: vec![format!("await {locator}.fill({value});")],
        },
        Err(why) => {
            let code = format!("await {}.keyboard.insertText({value});", step.page);
            gap(title, why, Some(code))
        }
    }
}

fn press(step: &Step<'_>, key: Option<&str>) -> Written {
    match key {
        Some(k) => Written::Step {
            title: format!("press {}", comment(k, 40)),
            lines: vec![format!(
                "await {}.keyboard.press({});",
                step.page,
                string(k)
            )],
        },
        None => gap("press a key", "no key recorded", None),
    }
}

fn select(step: &Step<'_>, target: &Target, options: &[String]) -> Written {
    let labels: Vec<String> = options
        .iter()
        .map(|o| format!("{{ label: {} }}", string(o)))
        .collect();
    let title = format!("choose {}", comment(&options.join(", "), MAX_COMMENT));
    let (locator, _) = match element(step.page, target) {
        Ok(found) if !labels.is_empty() => found,
        Ok(_) => return gap("choose an option", "the run does not say which", None),
        Err(why) => return gap("choose an option", why, None),
    };
    let choice = match labels.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    Written::Step {
        title,
        lines: vec![format!("await {locator}.selectOption({choice});")],
    }
}

fn choose_files(step: &Step<'_>, target: &Target, count: Option<u64>) -> Written {
    let chosen = match count {
        Some(1) => "the file".to_owned(),
        Some(n) => format!("the {n} files"),
        None => "the files".to_owned(),
    };
    let what = format!("{chosen} chosen at step {}", step.number());
    let title = format!("choose {chosen}");
    match element(step.page, target) {
        Ok((locator, _)) => Written::Step {
            title,
            lines: vec![format!(
                "await {locator}.setInputFiles(files({}, {}));",
                string(step.input()),
                string(&what)
            )],
        },
        Err(why) => gap(title, why, None),
    }
}

fn open_page(step: &Step<'_>, url: Option<&str>) -> Written {
    let var = step
        .plan
        .opened
        .get(&step.index)
        .map(String::as_str)
        .unwrap_or("");
    let url = url.filter(|u| *u != "about:blank");
    if let Some(u) = url {
        if let Some(why) = refused_navigation(u) {
            return gap(
                format!("open a page at {}", comment(u, MAX_COMMENT)),
                why,
                None,
            );
        }
        if !replayable_url(u) {
            return gap(
                format!("open a page at {}", comment(u, MAX_COMMENT)),
                "the recorded URL is not one to go to (a part of it is redacted, or it is not \
                 absolute)",
                None,
            );
        }
    }
    let goto = |var: &str| url.map(|to| format!("await {var}.goto({});", step.plan.url_expr(to)));
    match var {
        "page" => Written::Step {
            title: "open a page: the test's own `page`".into(),
            lines: goto("page").into_iter().collect(),
        },
        "" => Written::Step {
            title: "open a page (the run did not use it)".into(),
            lines: vec!["await context.newPage();".into()],
        },
        var => Written::Step {
            title: "open a page".into(),
            lines: std::iter::once(format!("const {var} = await context.newPage();"))
                .chain(goto(var))
                .collect(),
        },
    }
}

fn close_page(step: &Step<'_>, handle: Option<&str>) -> Written {
    match handle.and_then(|h| step.plan.pages.get(h)) {
        Some(var) => Written::Step {
            title: format!("close {var}"),
            lines: vec![format!("await {var}.close();")],
        },
        None => gap(
            "close a page",
            "the run does not say which of the test's pages",
            None,
        ),
    }
}

/// The locator expression of a target on `page`, and of the element to hover first; or why
/// there is none.
fn element(page: &str, target: &Target) -> Result<(String, Option<String>), String> {
    match target {
        Target::Element { locator, hover } => {
            let found = locator_expr(page, locator).ok_or_else(unknown)?;
            let hover = match hover {
                Some(hovered) => Some(locator_expr(page, hovered).ok_or_else(unknown)?),
                None => None,
            };
            Ok((found, hover))
        }
        Target::NotReplayable(why) => Err(comment(why, MAX_COMMENT)),
        Target::Missing => Err("no target recorded".to_owned()),
        Target::Unknown => Err(unknown()),
    }
}

fn unknown() -> String {
    "its recorded target is not one this version reads".to_owned()
}

/// A Playwright locator expression on `page`: a `contentFrame()` per frame level, then the
/// locator, `exact: true` when the recorded name matches as a whole.
pub(crate) fn locator_expr(page: &str, locator: &StoredLocator) -> Option<String> {
    let mut base = page.to_owned();
    for frame in locator.frame_path() {
        let _ = write!(base, ".locator({}).contentFrame()", string(frame));
    }
    let exact = locator.is_exact();
    let options = |inside: &str| match (inside.is_empty(), exact) {
        (true, false) => String::new(),
        (true, true) => ", { exact: true }".to_owned(),
        (false, false) => format!(", {{ {inside} }}"),
        (false, true) => format!(", {{ {inside}, exact: true }}"),
    };
    Some(match locator.kind()? {
        LocatorKind::TestId(id) => format!("{base}.getByTestId({})", string(id)),
        LocatorKind::Role { role, name } => format!(
            "{base}.getByRole({}{})",
            string(role),
            options(&format!("name: {}", string(name)))
        ),
        LocatorKind::Label(l) => format!("{base}.getByLabel({}{})", string(l), options("")),
        LocatorKind::Placeholder(p) => {
            format!("{base}.getByPlaceholder({}{})", string(p), options(""))
        }
        LocatorKind::Text(t) => format!("{base}.getByText({}{})", string(t), options("")),
        LocatorKind::Css(c) => format!("{base}.locator({})", string(c)),
        LocatorKind::NotReplayable(_) => return None,
    })
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
    let rounded = (x * 100.0).round() / 100.0;
    if rounded.is_finite() {
        format!("{rounded}")
    } else {
        "0".to_owned()
    }
}

/// The test's body as it is written, and what it needs from the prelude.
#[derive(Default)]
struct Body {
    text: String,
    allow_gaps: bool,
    gaps: usize,
    first_gap: Option<usize>,
    /// The spec waits for a URL (`at`).
    waits_for_url: bool,
    /// The spec reads typed inputs (`typed`, `input`).
    typed: bool,
    /// The spec reads file inputs (`files`, `input`).
    files: bool,
}

impl Body {
    /// A page that shows up at event `index` without the run saying where it came from.
    fn unannounced(&mut self, plan: &Plan, index: usize) {
        let Some((var, url)) = plan.unannounced.get(&index) else {
            return;
        };
        let out = &mut self.text;
        let _ = writeln!(out, "  // A page the run did not see being opened.");
        let _ = writeln!(out, "  const {var} = await context.newPage();");
        if let Some(url) = url {
            let _ = writeln!(out, "  await {var}.goto({});", plan.url_expr(url));
        }
    }

    /// Writes one event; true when it was a step the test takes.
    fn put(&mut self, step: &Step<'_>, written: Written) -> bool {
        let numbered = step.number.map_or(String::new(), |n| format!("{n}. "));
        match written {
            Written::Nothing => false,
            Written::Comment(text) => {
                let _ = writeln!(self.text, "  // {text}");
                false
            }
            Written::Gap { title, why, code } => {
                self.gap(step.number(), &numbered, &title, &why, code);
                false
            }
            Written::Step { title, lines } => {
                self.step(step, &numbered, &title, &lines);
                !lines.is_empty()
            }
        }
    }

    fn gap(&mut self, number: usize, numbered: &str, title: &str, why: &str, code: Option<String>) {
        self.gaps += 1;
        self.first_gap.get_or_insert(number);
        let out = &mut self.text;
        let _ = writeln!(out, "  // {numbered}{title}: not replayable: {why}");
        if let Some(code) = code {
            let _ = writeln!(out, "  // {code}");
        }
        let what = format!("step {number}, {title}");
        if self.allow_gaps {
            let message = format!("{what}, cannot be replayed: {why}");
            let _ = writeln!(out, "  test.fixme(true, {});", string(&message));
        } else {
            let _ = writeln!(out, "  gap({});", string(&format!("{what}: {why}")));
        }
    }

    fn step(&mut self, step: &Step<'_>, numbered: &str, title: &str, lines: &[String]) {
        let page = step.page;
        let plan = step.plan;
        self.typed |= lines.iter().any(|line| line.contains("await typed("));
        self.files |= lines
            .iter()
            .any(|line| line.contains("setInputFiles(files("));
        let out = &mut self.text;
        let _ = writeln!(out, "  // {numbered}{title}");
        if lines.is_empty() {
            return;
        }
        let popup = plan.popups.get(&step.index);
        if let Some(var) = popup {
            let _ = writeln!(out, "  const {var}Promise = {page}.waitForEvent('popup');");
        }
        for line in lines {
            let _ = writeln!(out, "  {line}");
        }
        if let Some(var) = popup {
            let _ = writeln!(out, "  const {var} = await {var}Promise;");
        }
        if let Some(url) = plan.navigations.get(&step.index) {
            self.waits_for_url = true;
            let _ = writeln!(
                out,
                "  await {page}.waitForURL(at({}));",
                plan.url_expr(url)
            );
        }
    }
}

fn assemble(
    header: &Header<'_>,
    events: &Events,
    plan: &Plan,
    body: &Body,
    counts: Counts,
) -> String {
    let mut out = String::new();
    header_comment(&mut out, header, events, counts);
    variables_comment(&mut out, plan);
    prelude(&mut out, plan, body);
    let fixtures = if plan.uses_context {
        "{ page, context }"
    } else {
        "{ page }"
    };
    let _ = writeln!(
        out,
        "test({}, async ({fixtures}) => {{",
        string(&format!("replay of run {}", header.run_id))
    );
    if body.text.is_empty() {
        let _ = writeln!(out, "  // The run has no steps to replay.");
    }
    out.push_str(&body.text);
    let _ = writeln!(out, "}});");
    out
}

fn header_comment(out: &mut String, header: &Header<'_>, events: &Events, counts: Counts) {
    let run = comment(header.run_id, 140);
    let _ = writeln!(out, "// Replay of the cdp-relay evidence run {run}.");
    if let Some(s) = header.session {
        let _ = writeln!(out, "// Session: {}.", comment(s, 140));
    }
    let gaps = match (counts.first_gap, header.allow_gaps) {
        (None, _) => "every one of them is replayed".to_owned(),
        (Some(first), false) => format!(
            "{} of them cannot be replayed: the test fails at the first (step {first}), saying \
             why (`cdp-relay export --allow-gaps` marks it fixme there instead)",
            counts.not_replayable
        ),
        (Some(first), true) => format!(
            "{} of them cannot be replayed: the test stops at the first (step {first}) as fixme, \
             saying why (--allow-gaps)",
            counts.not_replayable
        ),
    };
    let _ = writeln!(
        out,
        "// Written by `cdp-relay export`: {} steps; {gaps}.",
        counts.steps
    );
    if header.still_recording {
        let _ = writeln!(out,
            "// The run was still being recorded when it was exported: what was written after that \
             moment is not here (a typing step waits up to 4 s for its verdict, a click 1 s for \
             its element, a failure for its frame). Export it again once the run is finalized."
        );
    }
    if events.left_out > 0 {
        let _ = writeln!(
            out,
            "// The run is longer than one export reads: its last {} records are not here.",
            events.left_out
        );
    }
    let _ = writeln!(out, "//");
}

fn variables_comment(out: &mut String, plan: &Plan) {
    if plan.origins.is_empty() && plan.inputs.is_empty() {
        let _ = writeln!(out, "// Variables: none.");
    } else {
        let _ = writeln!(out, "// Variables (environment):");
        let width = plan
            .origins
            .iter()
            .map(|(_, v)| v.len())
            .chain(plan.inputs.keys().map(|n| INPUT_PREFIX.len() + n.len()))
            .max()
            .unwrap_or(0);
        for (origin, var) in &plan.origins {
            let _ = writeln!(
                out,
                "//   {var:width$}  an origin the run visited; default {}",
                comment(origin, MAX_COMMENT)
            );
        }
        let mut inputs: Vec<(&String, &InputFacts)> = plan.inputs.iter().collect();
        inputs.sort_by_key(|(_, facts)| facts.steps.first().copied());
        for (name, facts) in inputs {
            let var = format!("{INPUT_PREFIX}{name}");
            let _ = writeln!(out, "//   {var:width$}  {}", input_line(facts));
        }
    }
    if !plan.inputs.is_empty() {
        let _ =
            writeln!(out,
            "// Each input is read from its variable just before its step; the test fails there, \
             naming it, when it is not set. Inputs are CDP_RELAY_VAR_<NAME>, NAME the run's own \
             name for it (a registered secret's, else TYPED_<n>; FILE_<n> for a file input), the \
             variables the MCP gateway resolves ${{NAME}} from: no other variable is ever read as \
             an input."
        );
        let _ =
            writeln!(out,
            "// Through a relay, each named input is registered as the relay's secret NAME before \
             its step (PUT /relay/v1/secrets/NAME), so the replay's own run names it too and never \
             holds its value."
        );
    }
    let _ = writeln!(out, "//");
    let _ = writeln!(
        out,
        "// To record the replay too, run it through a relay: set {ENDPOINT_VARIABLE} to the \
         endpoint `cdp-relay launch` prints."
    );
    let _ = writeln!(out);
}

/// One input's line in the header: what the run knows of it.
fn input_line(facts: &InputFacts) -> String {
    let left = if facts.replayable {
        ""
    } else {
        " (not replayable)"
    };
    let at = list(&facts.steps);
    if facts.is_file {
        let counts: Vec<String> = facts.files.iter().map(u64::to_string).collect();
        return match counts.as_slice() {
            [one] if one == "1" => format!("the path of the file chosen at {at}{left}"),
            [] => format!("the paths of the files chosen at {at}, separated by ':'{left}"),
            _ => format!(
                "the paths of the {} files chosen at {at}, separated by ':'{left}",
                counts.join(" or ")
            ),
        };
    }
    let chars: Vec<String> = facts.chars.iter().map(u64::to_string).collect();
    let types: Vec<String> = facts.input_types.iter().map(|t| comment(t, 40)).collect();
    let types = types.join(" or ");
    let vowel = types.starts_with(['a', 'e', 'i', 'o']) && !types.starts_with("one")
        || types.starts_with("un");
    let article = if vowel { "an" } else { "a" };
    format!(
        "{} characters typed into {article} {types} field at {at}{left}",
        chars.join(" or ")
    )
}

fn list(steps: &[usize]) -> String {
    let words: Vec<String> = steps.iter().map(usize::to_string).collect();
    match words.len() {
        1 => format!("step {}", words[0]),
        _ => format!("steps {}", words.join(", ")),
    }
}

/// The imports, the fixture that connects through a relay, and the helpers the body uses.
fn prelude(out: &mut String, plan: &Plan, body: &Body) {
    let _ = writeln!(
        out,
        "import {{ test as base, chromium, type Browser, type Page }} from '@playwright/test';"
    );
    if body.files {
        let _ = writeln!(out, "import {{ delimiter }} from 'node:path';");
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "const endpoint = process.env.{ENDPOINT_VARIABLE};
const test = endpoint
  ? base.extend<{{ observed: void }}, {{ browser: Browser }}>({{
      browser: [
        async ({{}}, use) => {{
          const browser = await chromium.connectOverCDP(endpoint);
          await use(browser);
          await browser.close();
        }},
        {{ scope: 'worker' }},
      ],
      // The relay records the replay too: its observer must be on the test's page before the
      // first step, or fields typed at once are recorded as of unknown kind.
      observed: [
        async ({{ page }}, use) => {{
          await observedBy(endpoint, page);
          await use();
        }},
        {{ auto: true }},
      ],
    }})
  : base;

/** Waits, at most 5 s, until the relay's observer is on every page of the browser (the relay's
 * GET /relay/v1/status, with its token if it has one); at once when the relay observes nothing. */
async function observedBy(endpoint: string, page: Page): Promise<void> {{
  const relay = new URL(endpoint.replace(/^ws/, 'http'));
  const url = new URL('/relay/v1/status', relay);
  const token = relay.searchParams.get('token');
  if (token) url.searchParams.set('token', token);
  const contexts = page.context().browser()?.contexts() ?? [page.context()];
  const pages = contexts.reduce((n, c) => n + c.pages().length, 0);
  for (const until = Date.now() + 5000; Date.now() < until; ) {{
    const status = await fetch(url).then((r) => r.json()).catch(() => null);
    const observed = status?.evidence?.observedPages;
    if (typeof observed !== 'number' || observed >= pages) return;
    await new Promise((r) => setTimeout(r, 50));
  }}
  console.warn(`the relay's observer is not on the test's page after 5 s: the first fields may be recorded as of unknown kind`);
}}"
    );
    if !plan.origins.is_empty() {
        let _ = writeln!(out);
        for (origin, var) in &plan.origins {
            let _ = writeln!(
                out,
                "const {var} = origin({}, {});",
                string(var),
                string(origin)
            );
        }
        let _ = writeln!(
            out,
            "
/** The origin in environment variable `name`, else the one the run visited. */
function origin(name: string, recorded: string): string {{
  return (process.env[name] || recorded).replace(/\\/+$/, '');
}}"
        );
    }
    if body.typed || body.files {
        let _ = writeln!(out,
            "
/** The value of input `name` (environment variable {INPUT_PREFIX}<name>); throws, naming the
 * variable, when it is not set. */
function input(name: string, what: string): string {{
  const variable = `{INPUT_PREFIX}${{name}}`;
  const value = process.env[variable];
  if (value === undefined) throw new Error(`missing environment variable ${{variable}} (${{what}})`);
  return value;
}}"
        );
    }
    if body.typed {
        typed_helpers(out);
    }
    if body.files {
        let _ = writeln!(
            out,
            "
/** The paths in input `name` (several separated by the path list separator, ':'). */
function files(name: string, what: string): string[] {{
  return input(name, what).split(delimiter).filter((p) => p !== '');
}}"
        );
    }
    if body.waits_for_url {
        let _ = writeln!(
            out,
            "
/** Matches a page URL by origin and path (the run kept no query or fragment). */
function at(expected: string): (url: URL) => boolean {{
  return (url) => url.origin + url.pathname === expected;
}}"
        );
    }
    if body.gaps > 0 && !body.allow_gaps {
        let _ = writeln!(
            out,
            "
/** A step the export could not write: the test stops there, saying why. */
function gap(step: string): never {{
  throw new Error(`not replayable: ${{step}}`);
}}"
        );
    }
    let _ = writeln!(out);
}

/// `typed` (an input, registered with the relay first) and `register`.
fn typed_helpers(out: &mut String) {
    let min = cdp_sanitize::MIN_SECRET_CHARS;
    let _ = writeln!(out,
        "
/** The value of typed input `name`. Through a relay, a named one is registered first as the
 * relay's secret `name`, so the replay's run names it and never holds it (a TYPED_<n> is the
 * relay's own name for typed text; fewer than {min} characters are not masked). */
async function typed(name: string, what: string): Promise<string> {{
  const value = input(name, what);
  if (endpoint && !name.startsWith('TYPED_') && value.replace(/\\s/g, '').length >= {min}) {{
    await register(name, value);
  }}
  return value;
}}

/** PUT /relay/v1/secrets/<name> on the relay at {ENDPOINT_VARIABLE}, with its token if it has one. */
async function register(name: string, value: string): Promise<void> {{
  const relay = new URL(endpoint!.replace(/^ws/, 'http'));
  const url = new URL(`/relay/v1/secrets/${{name}}`, relay);
  const token = relay.searchParams.get('token');
  if (token) url.searchParams.set('token', token);
  const answer = await fetch(url, {{ method: 'PUT', body: value }});
  if (!answer.ok) {{
    const why = (await answer.text()).slice(0, 200);
    throw new Error(`the relay at {ENDPOINT_VARIABLE} did not register ${{name}} (${{answer.status}}): ${{why}}`);
  }}
}}"
    );
}
